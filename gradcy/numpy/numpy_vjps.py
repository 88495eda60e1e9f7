"""Reverse-mode rules (VJPs) of gradcy.numpy, by family; importing this registers them all.

Conventions (every table follows them):
- one `defvjp(prim, maker_arg0, maker_arg1, ..., save=...)` per primitive; a maker is
  `maker(ans, *args, **kwargs) -> vjp(g)`;
- `save=` lists the least the makers read: 'ans' (the output) and argument positions; anything
  else reaches them as ArrayMeta (shape, dtype, type), so the tape never holds its buffer;
- rules are written with gradcy.numpy functions, so they are differentiable themselves;
- a cotangent has the dtype and shape of its argument (vjp_util.unbroadcast / cast_like).
"""
from . import vjps_elementwise, vjps_linalg, vjps_reductions, vjps_shape  # noqa: F401
from . import fft_vjps, linalg_vjps  # noqa: F401
from . import vjps_more  # noqa: F401
from . import saved_sets  # noqa: E402

saved_sets.register()      # per-call saved sets (after the tables: it overrides their save=)


# autograd's names in this module (views of the rules above; gradcy._autograd_rules)
from .._autograd_rules import export as _export  # noqa: E402

_export(globals())
