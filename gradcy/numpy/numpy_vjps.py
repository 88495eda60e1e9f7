"""Reverse-mode rules (VJPs) of gradcy.numpy, one `defvjp` per primitive.

Every rule declares with `save=` the least it reads: 'ans' (the output), argument positions, or
nothing (then arguments reach the rule as ArrayMeta: shape, dtype and type only). Rules are
written with gradcy.numpy functions so that they are differentiable themselves (grad of grad).
"""
import numpy as _onp

from ..extend import ArrayMeta, def_linear, defvjp, primitive
from . import numpy_wrapper as anp

# =============================================================================
# Shared helpers
# =============================================================================


def _shape_dtype(x):
    """(shape, dtype) of an argument: an array, a traced value, an ArrayMeta or a scalar."""
    t = type(x)
    if t is ArrayMeta or t is _onp.ndarray:
        return x.shape, x.dtype
    if t is float:
        return (), _onp.dtype(_onp.float64)
    if t is complex:
        return (), _onp.dtype(_onp.complex128)
    if t is int or t is bool:
        return (), _onp.dtype(_onp.float64)
    return _onp.shape(x) if not hasattr(x, "shape") else x.shape, _onp.result_type(
        x.dtype if hasattr(x, "dtype") else x)


def unbroadcast(g, target):
    """The cotangent g (of a broadcast result) summed down to the shape of `target` and cast to
    its dtype (real part only for a real target)."""
    shape, dtype = _shape_dtype(target)
    if type(g) is _onp.ndarray and g.shape == shape and g.dtype == dtype:
        return g
    gshape = _onp.shape(g) if type(g) is not _onp.ndarray else g.shape
    if len(gshape) > len(shape):
        g = anp.sum(g, axis=tuple(range(len(gshape) - len(shape))))
        gshape = gshape[len(gshape) - len(shape):]
    axes = tuple(i for i, (n, m) in enumerate(zip(gshape, shape)) if m == 1 and n != 1)
    if axes:
        g = anp.sum(g, axis=axes, keepdims=True)
    return cast_like(g, dtype)


def cast_like(g, dtype):
    """g as `dtype`: the real part for a real dtype, and no copy when it already is."""
    gdtype = g.dtype if hasattr(g, "dtype") else _onp.result_type(g)
    if gdtype == dtype:
        return g
    if _onp.issubdtype(gdtype, _onp.complexfloating) and not _onp.issubdtype(
            dtype, _onp.complexfloating):
        g = anp.real(g)
    if _onp.issubdtype(dtype, _onp.inexact):
        return anp.astype(g, dtype, copy=False) if type(g) is not _onp.ndarray else g.astype(
            dtype, copy=False)
    return g


def balanced_eq(x, z, y):
    """1 where x equals the extremum z, split evenly with y when both attain it."""
    return (x == z) / (1.0 + (x == y))


# =============================================================================
# Binary ufuncs
# =============================================================================
defvjp(anp.add,
       lambda ans, x, y: lambda g: unbroadcast(g, x),
       lambda ans, x, y: lambda g: unbroadcast(g, y), save=())
defvjp(anp.subtract,
       lambda ans, x, y: lambda g: unbroadcast(g, x),
       lambda ans, x, y: lambda g: unbroadcast(-g, y), save=())
defvjp(anp.multiply,
       lambda ans, x, y: lambda g: unbroadcast(g * y, x),
       lambda ans, x, y: lambda g: unbroadcast(x * g, y), save=(0, 1))
defvjp(anp.divide,
       lambda ans, x, y: lambda g: unbroadcast(g / y, x),
       lambda ans, x, y: lambda g: unbroadcast(-g * x / (y * y), y), save=(0, 1))

# =============================================================================
# Unary ufuncs
# =============================================================================
defvjp(anp.negative, lambda ans, x: lambda g: -g, save=())
defvjp(anp.sin, lambda ans, x: lambda g: g * anp.cos(x), save=(0,))
defvjp(anp.cos, lambda ans, x: lambda g: -g * anp.sin(x), save=(0,))
defvjp(anp.tanh, lambda ans, x: lambda g: g * (1.0 - ans * ans), save=("ans",))
defvjp(anp.exp, lambda ans, x: lambda g: g * ans, save=("ans",))
defvjp(anp.log, lambda ans, x: lambda g: g / x, save=(0,))

# =============================================================================
# Reductions
# =============================================================================


def _expand_reduced(g, shape, axis, keepdims):
    """Broadcast the cotangent of a reduction over `axis` back to `shape`."""
    if axis is None or keepdims:
        return anp.broadcast_to(g if keepdims or axis is not None else anp.reshape(
            g, (1,) * len(shape)) if len(shape) else g, shape)
    axes = (axis,) if isinstance(axis, int) else tuple(axis)
    axes = tuple(a % len(shape) for a in axes)
    g = anp.reshape(g, tuple(1 if i in axes else n for i, n in enumerate(shape)))
    return anp.broadcast_to(g, shape)


def _sum_vjp(ans, x, axis=None, dtype=None, keepdims=False, **kw):
    shape, xdtype = _shape_dtype(x)
    return lambda g: cast_like(_expand_reduced(g, shape, axis, keepdims), xdtype)


defvjp(anp.sum, _sum_vjp, save=())

# =============================================================================
# Linear algebra
# =============================================================================


def _dot_A(g, A, B):
    # g has shape A.shape[:-1] + B.shape[:-2] + B.shape[-1:]
    nA, nB = anp.ndim(A), anp.ndim(B)
    if nA == 0 or nB == 0:
        return unbroadcast(g * B, A)
    if nB == 1:
        return cast_like(anp.multiply(anp.expand_dims(g, -1), B), _shape_dtype(A)[1])
    # contract the B.shape[:-2] and last axes of g with B
    g_axes = tuple(range(nA - 1, nA - 1 + nB - 2)) + (anp.ndim(g) - 1,)
    b_axes = tuple(range(nB - 2)) + (nB - 1,)
    return cast_like(anp.tensordot(g, B, (g_axes, b_axes)), _shape_dtype(A)[1])


def _dot_B(g, A, B):
    nA, nB = anp.ndim(A), anp.ndim(B)
    if nA == 0 or nB == 0:
        return unbroadcast(g * A, B)
    if nA == 1:
        # g has shape B.shape[:-2] + B.shape[-1:]; result B.shape
        if nB == 1:
            return cast_like(A * g, _shape_dtype(B)[1])
        return cast_like(anp.moveaxis(anp.tensordot(A, g, 0), 0, -2), _shape_dtype(B)[1])
    g_axes = tuple(range(nA - 1))
    a_axes = tuple(range(nA - 1))
    res = anp.tensordot(A, g, (a_axes, g_axes))  # A.shape[-1:] + B.shape[:-2] + B.shape[-1:]
    if nB == 1:
        return cast_like(res, _shape_dtype(B)[1])
    return cast_like(anp.moveaxis(res, 0, -2), _shape_dtype(B)[1])


defvjp(anp.dot,
       lambda ans, A, B: lambda g: _dot_A(g, A, B),
       lambda ans, A, B: lambda g: _dot_B(g, A, B), save=(0, 1))

# =============================================================================
# Shape and indexing
# =============================================================================
defvjp(anp.reshape, lambda ans, x, *a, **k: lambda g: anp.reshape(g, _shape_dtype(x)[0]),
       save=())


@primitive
def untake(g, idx, shape, dtype):
    """A zero array of `shape` with g added at idx (repeated indices accumulate): the
    transpose of x[idx]."""
    out = _onp.zeros(shape, dtype=dtype)
    _onp.add.at(out, idx, g)
    return out


defvjp(untake, lambda ans, g, idx, shape, dtype: lambda h: anp.getitem(h, idx), save=())
defvjp(anp.getitem, lambda ans, A, idx: lambda g: untake(g, idx, *_shape_dtype(A)), save=())
