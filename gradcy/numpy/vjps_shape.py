"""VJPs of shape functions, joining/splitting, indexing, array construction and casting."""
import numpy as _onp  # noqa: F401

from ..extend import ArrayMeta, defvjp, primitive  # noqa: F401
from . import numpy_wrapper as anp
from .vjp_util import cast_like, unbroadcast, expand_reduced, shape_dtype  # noqa: F401

# =============================================================================
# Shape and indexing
# =============================================================================
defvjp(anp.reshape, lambda ans, x, *a, **k: lambda g: anp.reshape(g, shape_dtype(x)[0]),
       save=())


@primitive
def untake(g, idx, shape, dtype):
    """A zero array of `shape` with g added at idx (repeated indices accumulate): the
    transpose of x[idx]."""
    out = _onp.zeros(shape, dtype=dtype)
    _onp.add.at(out, idx, g)
    return out


defvjp(untake, lambda ans, g, idx, shape, dtype: lambda h: anp.getitem(h, idx), save=())
defvjp(anp.getitem, lambda ans, A, idx: lambda g: untake(g, idx, *shape_dtype(A)), save=())
