"""Helpers shared by the rule files: shapes and dtypes of arguments as rules see them, reducing a
cotangent to an argument's shape and dtype, axis normalisation, signature binding."""

import inspect
import math as _math

import numpy as _onp

from .._core import ArrayMeta, Box, install_hooks, is_array_value
from ..backends import broadcast_like
from .._core import unbroadcast  # noqa: F401  (C fast path; the rules import it from here)
from . import _wrap as anp
from ._wrap import _contains_box, _plain, _plain_tree, _unwrap  # noqa: F401  (helpers of the rules, imported from here)

_FLOAT64 = _onp.dtype(_onp.float64)


def shape_dtype(x):
    """(shape, dtype) of an argument's cotangent: an array, a traced value, an ArrayMeta or a
    scalar; an integer or boolean one's is float64, as its gradient's (a rule's buffer of the
    argument's dtype would truncate the cotangent: 3 for 3.7)."""
    t = type(x)
    if t is ArrayMeta or t is _onp.ndarray:
        dtype = x.dtype
        return x.shape, (dtype if dtype.kind in "fc" else _FLOAT64)
    if t is float:
        return (), _onp.dtype(_onp.float64)
    if t is complex:
        return (), _onp.dtype(_onp.complex128)
    if t is int or t is bool:
        return (), _onp.dtype(_onp.float64)
    if t is tuple or t is list:
        # a traced container passed where an array is taken (autograd's SequenceBox as an
        # operand): the array NumPy made of it
        x = _onp.asarray(x)
    dtype = _onp.result_type(x.dtype if hasattr(x, "dtype") else x)
    return _onp.shape(x) if not hasattr(x, "shape") else x.shape, (
        dtype if dtype.kind in "fc" else _FLOAT64
    )


def _unbroadcast(g, target):
    """The cotangent g (of a broadcast result) summed down to the shape of `target` and cast to
    its dtype (real part only for a real target)."""
    if type(g) is _onp.ndarray and (type(target) is _onp.ndarray or type(target) is ArrayMeta):
        shape = target.shape  # plain arrays of one ndim and dtype: one reduction
        if g.ndim == len(shape) and g.dtype == target.dtype:
            axes = tuple([i for i, (n, m) in enumerate(zip(g.shape, shape)) if m == 1 and n != 1])
            return _onp.add.reduce(g, axes, None, None, True) if axes else g  # (= g.sum)
    shape, dtype = shape_dtype(target)
    gshape = _onp.shape(g) if type(g) is not _onp.ndarray else g.shape
    if len(gshape) > len(shape):
        g = anp.sum(g, axis=tuple(range(len(gshape) - len(shape))))
        gshape = gshape[len(gshape) - len(shape) :]
    axes = tuple(i for i, (n, m) in enumerate(zip(gshape, shape)) if m == 1 and n != 1)
    if axes:
        g = anp.sum(g, axis=axes, keepdims=True)
    return cast_like(g, dtype)


install_hooks(unbroadcast=_unbroadcast)


def cast_like(g, dtype):
    """g as `dtype`: the real part for a real dtype, and no copy when it already is."""
    gdtype = g.dtype if hasattr(g, "dtype") else _onp.result_type(g)
    if gdtype == dtype:
        return g
    if _onp.issubdtype(gdtype, _onp.complexfloating) and not _onp.issubdtype(
        dtype, _onp.complexfloating
    ):
        g = anp.real(g)
    if _onp.issubdtype(dtype, _onp.inexact):
        return (
            anp.astype(g, dtype, copy=False)
            if type(g) is not _onp.ndarray
            else g.astype(dtype, copy=False)
        )
    return g


def balanced_eq(x, z, y):
    """1 where x equals the extremum z, split evenly with y when both attain it."""
    return (x == z) / (1.0 + (x == y))


_SMALL = 4096  # elements: below this a materialised cotangent is cheaper than a view


def broadcast_cotangent(g, shape, like=None):
    """g broadcast to `shape`: a read-only view for large shapes (no memory), a fresh writable
    array for small ones (cheaper than building the view, and handed out without a copy);
    traced for a traced g. `like`: the array of that shape the cotangent is for, when saved
    (an array of another library: the result is of its type, Dask with its chunks)."""
    if type(g) is Box:
        return anp.broadcast_to(g, shape)
    if is_array_value(g) or is_array_value(like):
        return broadcast_like(g, shape, like)
    if _math.prod(shape) <= _SMALL:
        out = _onp.empty(shape, dtype=_onp.result_type(g))
        out[...] = g
        return out
    return _onp.broadcast_to(g, shape)


def _is_container(v):
    while type(v) is Box:
        v = v._value
    return isinstance(v, (tuple, list))


def match_tangent(t, ans):
    """A JVP's tangent t broadcast to the shape of the output `ans` and cast to its dtype
    (the real part for a real output); containers elementwise."""
    if isinstance(ans, (tuple, list)):
        return type(ans)(ti if ti is None else match_tangent(ti, ai) for ti, ai in zip(t, ans))
    if type(ans) is dict and type(t) is dict:  # (a dict output: its tangent is a dict too)
        return {k: t[k] if t.get(k) is None else match_tangent(t[k], a) for k, a in ans.items()}
    if type(ans) is Box or type(t) is Box:
        # nested forward mode: a traced container (split's output) has no single dtype; its
        # rule built the tangent with the right structure already
        if _is_container(ans) or _is_container(t):
            return t
    shape, dtype = shape_dtype(ans)
    tshape = _onp.shape(t) if not hasattr(t, "shape") else t.shape
    if tuple(tshape) != tuple(shape):
        t = (
            anp.broadcast_to(t, shape)
            if type(t) is not _onp.ndarray
            else _onp.broadcast_to(t, shape)
        )
    return cast_like(t, dtype)


install_hooks(tangent_fixer=match_tangent)


_ndarray = _onp.ndarray
_NoValue = _onp._NoValue
_intp = _onp.intp


# =============================================================================
# Helpers
# =============================================================================
def _shape(x):
    """Shape of an argument as a rule sees it (array, Box, ArrayMeta, scalar, (nested) list)."""
    t = type(x)
    if t is ArrayMeta or t is _ndarray or t is Box:
        return tuple(x.shape)
    if t is tuple or t is list:
        if x and any(type(e) in (ArrayMeta, Box, _ndarray) for e in x):
            return (len(x),) + _shape(x[0])
        return _onp.shape(x)
    return _onp.shape(x)


def _dtype(x):
    """dtype of an argument as a rule sees it (array, Box, ArrayMeta, scalar, (nested) list);
    a Python int or bool counts as float64, as for its gradient."""
    dt = getattr(x, "dtype", None)
    if dt is not None:
        return dt
    if type(x) is list or type(x) is tuple:
        return _onp.result_type(*[_dtype(e) for e in x]) if x else _onp.dtype(_onp.float64)
    return shape_dtype(x)[1]


def _size(shape):
    n = 1
    for d in shape:
        n *= d
    return n


def _is_complex(x):
    return _dtype(x).kind == "c"


def _at(ax, s):
    """The index selecting `s` along axis ax (a non-negative int)."""
    return (slice(None),) * ax + (s,)


def _norm_axis(axis, ndim):
    if not -ndim <= axis < max(ndim, 1):
        raise _onp.exceptions.AxisError(axis, ndim)
    return axis % ndim if ndim else 0


def _float_dtype(dtype):
    return dtype if dtype.kind in "fc" else _onp.dtype(_onp.float64)


def _binder(fun):
    """bind(args, kwargs) -> dict of every parameter of `fun` (defaults filled in); *args of a
    variadic signature come as a tuple under their name."""
    sig = inspect.signature(fun)

    def bind(args, kwargs):
        b = sig.bind(*args, **(kwargs or {}))
        b.apply_defaults()
        return b.arguments

    return bind


def _positions(fun):
    """name -> position of fun's positional parameters."""
    out = {}
    for i, p in enumerate(inspect.signature(fun).parameters.values()):
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD):
            out[p.name] = i
    return out


def _same(fn):
    """The JVP of a function linear in its first argument: fn applied to the tangent."""
    return lambda g, ans, x, *args, **kwargs: fn(g, *args, **kwargs)


def _zeros_of(a, dtype=None):
    """Zeros of the shape of argument a (an array, a traced value, an ArrayMeta or a scalar), of
    dtype `dtype` (default: a's)."""
    return _onp.zeros(_shape(a), _dtype(a) if dtype is None else dtype)


def values_of(x):
    """x's values as a rule reads them: a NumPy array, or the array of another library (Dask,
    CuPy) as it is, never converted."""
    v = _plain(x)
    return v if is_array_value(v) else _onp.asarray(v)


def none_set(mask):
    """No True in the NumPy mask `mask` (a shortcut to a simpler formula); False for a mask of
    another library, whose values are not looked at (Dask stays lazy: the general formula,
    equal where the mask is all False)."""
    return not is_array_value(mask) and not mask.any()


def by_groups(fn, x, axes, dtype, lead=(), sizes=None):
    """fn, a NumPy function of a block of whole groups (the block's `axes` complete), applied
    lazily to the Dask array x block by block (x rechunked to one chunk along `axes` and to
    Dask's automatic block size along the others, as Dask's median does): no value is
    computed. fn returns an array of `dtype` and of shape lead + the block's shape, except
    that axis a (of the block) has length sizes[a] for each a in `sizes`."""
    import dask.array as da

    xb = x.rechunk({a: -1 if a in axes else "auto" for a in range(x.ndim)})
    sizes = sizes or {}
    chunks = tuple((n,) for n in lead) + tuple(
        (sizes[a],) if a in sizes else c for a, c in enumerate(xb.chunks)
    )
    return da.map_blocks(
        fn,
        xb,
        new_axis=list(range(len(lead))) or None,
        chunks=chunks,
        dtype=dtype,
        meta=_onp.empty((0,) * len(chunks), dtype),
    )


def unpack_positions(packed, shape):
    """The bool mask of `shape` a Positions record (gradcy.numpy.saved_sets) stores packed."""
    n = 1
    for d in shape:
        n *= d
    # (a plain ndarray: arrays made from a Positions would be Positions, and leak into results)
    return _onp.unpackbits(packed.view(_onp.ndarray), count=n).reshape(shape).view(bool)
