"""autograd.numpy.numpy_vjps's module path: autograd's names for the reverse-mode rules, which
gradcy registers by family (gradcy/numpy/elementwise.py, reductions.py, ...; see gradcy.numpy).

Conventions of the rule files:
- one `defvjp_direct(prim, rule_arg0, rule_arg1, ..., save=...)` per primitive; a rule is
  `rule(g, ans, *args, **kwargs) -> cotangent`, called in the backward pass (no closure per
  recorded call; the public `defvjp` keeps autograd's maker form for users);
- `save=` lists the least the rules read: 'ans' (the output) and argument positions; anything
  else reaches them as ArrayMeta (shape, dtype, type), so the tape never holds its buffer;
- rules are written with gradcy.numpy functions, so they are differentiable themselves;
- a cotangent has the dtype and shape of its argument (_util.unbroadcast / cast_like).
"""
