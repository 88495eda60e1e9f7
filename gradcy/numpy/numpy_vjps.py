"""autograd.numpy.numpy_vjps's module path: autograd's names for the reverse-mode rules, which
gradcy registers by family (gradcy/numpy/elementwise.py, reductions.py, ...; see gradcy.numpy).

Conventions of the rule files:
- one `defvjp(prim, maker_arg0, maker_arg1, ..., save=...)` per primitive; a maker is
  `maker(ans, *args, **kwargs) -> vjp(g)`;
- `save=` lists the least the makers read: 'ans' (the output) and argument positions; anything
  else reaches them as ArrayMeta (shape, dtype, type), so the tape never holds its buffer;
- rules are written with gradcy.numpy functions, so they are differentiable themselves;
- a cotangent has the dtype and shape of its argument (_util.unbroadcast / cast_like).
"""
