"""One test record per operator, read by every test that needs a fact about it (as JAX's
LAX_GRAD_OPS is), one module per family: elementwise.py, reductions.py (the reduction-shaped
families: reductions, statistics, calculus's cumulative ones), products.py (products and
numpy.linalg), fft.py. A new operator is one record; a fact about an operator is written
once."""
