"""VJPs of reductions: sum mean prod max min var std (axis, keepdims), cumulative ops."""
import numpy as _onp  # noqa: F401

from ..extend import ArrayMeta, defvjp, primitive  # noqa: F401
from . import numpy_wrapper as anp
from .vjp_util import cast_like, unbroadcast, expand_reduced, shape_dtype  # noqa: F401

# =============================================================================
# Reductions
# =============================================================================


def _sum_vjp(ans, x, axis=None, dtype=None, keepdims=False, **kw):
    shape, xdtype = shape_dtype(x)
    return lambda g: cast_like(expand_reduced(g, shape, axis, keepdims), xdtype)


defvjp(anp.sum, _sum_vjp, save=())

