"""VJPs of products: dot matmul tensordot einsum outer inner (numpy.linalg lives in linalg_vjps)."""
import numpy as _onp  # noqa: F401

from ..extend import ArrayMeta, defvjp, primitive  # noqa: F401
from . import numpy_wrapper as anp
from .vjp_util import cast_like, unbroadcast, expand_reduced, shape_dtype  # noqa: F401

# =============================================================================
# Linear algebra
# =============================================================================


def _dot_A(g, A, B):
    # g has shape A.shape[:-1] + B.shape[:-2] + B.shape[-1:]
    nA, nB = anp.ndim(A), anp.ndim(B)
    if nA == 0 or nB == 0:
        return unbroadcast(g * B, A)
    if nB == 1:
        return cast_like(anp.multiply(anp.expand_dims(g, -1), B), shape_dtype(A)[1])
    # contract the B.shape[:-2] and last axes of g with B
    g_axes = tuple(range(nA - 1, nA - 1 + nB - 2)) + (anp.ndim(g) - 1,)
    b_axes = tuple(range(nB - 2)) + (nB - 1,)
    return cast_like(anp.tensordot(g, B, (g_axes, b_axes)), shape_dtype(A)[1])


def _dot_B(g, A, B):
    nA, nB = anp.ndim(A), anp.ndim(B)
    if nA == 0 or nB == 0:
        return unbroadcast(g * A, B)
    if nA == 1:
        # g has shape B.shape[:-2] + B.shape[-1:]; result B.shape
        if nB == 1:
            return cast_like(A * g, shape_dtype(B)[1])
        return cast_like(anp.moveaxis(anp.tensordot(A, g, 0), 0, -2), shape_dtype(B)[1])
    g_axes = tuple(range(nA - 1))
    a_axes = tuple(range(nA - 1))
    res = anp.tensordot(A, g, (a_axes, g_axes))  # A.shape[-1:] + B.shape[:-2] + B.shape[-1:]
    if nB == 1:
        return cast_like(res, shape_dtype(B)[1])
    return cast_like(anp.moveaxis(res, 0, -2), shape_dtype(B)[1])


defvjp(anp.dot,
       lambda ans, A, B: lambda g: _dot_A(g, A, B),
       lambda ans, A, B: lambda g: _dot_B(g, A, B), save=(0, 1))

