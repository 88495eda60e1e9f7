"""One test record per operator, read by every test that needs a fact about it (as JAX's
LAX_GRAD_OPS is), one module per family of rules:

  elementwise.py   ufuncs and friends (gradcy/numpy/elementwise.py)
  reductions.py    the axis=-taking reductions, statistics and cumulative functions, and the
                   quantiles (reductions.py, statistics.py, calculus.py)
  products.py      products and the diagonal/transpose views (products.py)
  linalg.py        numpy.linalg (linalg.py), with the matrices its checks draw
  manipulation.py  reshapes, permutations, splits, pads and gathers (manipulation.py,
                   indexing.py)
  sorting.py       sort, partition (sorting.py)
  fft.py           numpy.fft (fft.py)

A new operator is one record; a fact about an operator is written once. Each module's docstring
says which tests read it and what each field means."""
