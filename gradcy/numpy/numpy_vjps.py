"""Reverse-mode rules (VJPs) of gradcy.numpy, by family; importing this registers them all.

Conventions (every table follows them):
- one `defvjp(prim, maker_arg0, maker_arg1, ..., save=...)` per primitive; a maker is
  `maker(ans, *args, **kwargs) -> vjp(g)`;
- `save=` lists the least the makers read: 'ans' (the output) and argument positions; anything
  else reaches them as ArrayMeta (shape, dtype, type), so the tape never holds its buffer;
- rules are written with gradcy.numpy functions, so they are differentiable themselves;
- a cotangent has the dtype and shape of its argument (_util.unbroadcast / cast_like).
"""
from . import elementwise, products, reductions, manipulation, indexing, sorting  # noqa: F401
from . import fft, linalg  # noqa: F401
from . import calculus, statistics, polynomials  # noqa: F401


# autograd's names in this module (views of the rules above; gradcy._autograd_rules)
from .._autograd_rules import export as _export  # noqa: E402

_export(globals())
