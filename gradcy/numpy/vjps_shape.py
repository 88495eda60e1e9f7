"""VJPs of shape functions, joining/splitting, indexing, array construction and casting.

Every rule here is linear in the cotangent and reads only metadata (shapes, dtypes, axes,
index arrays), except sort/partition, which keep their input to recover the permutation
(the input is no larger than the permutation would be).
"""
import numpy as _onp

from .._core import SparseCotangent, is_array_value
from ..extend import (ArrayMeta, Box, defjvp, defjvp_argnums, defvjp, defvjp_argnums,
                      defvjp_direct, primitive)
from . import numpy_wrapper as anp
from .vjp_util import cast_like, shape_dtype, unbroadcast

_ndarray = _onp.ndarray


def _shape(x):
    """Shape of an argument as the maker sees it (ArrayMeta, array, Python/NumPy scalar)."""
    return x.shape if type(x) is ArrayMeta or type(x) is _ndarray else _onp.shape(x)


def _norm_axis(axis, ndim):
    if not -ndim <= axis < max(ndim, 1):
        raise _onp.exceptions.AxisError(axis, ndim)
    return axis % ndim if ndim else 0


# =============================================================================
# Linear helper primitives: scatter-add (transpose of indexing) and un-repeat
# =============================================================================
_BASIC_INDEX = (int, bool, slice, type(None), type(Ellipsis), _onp.integer, _onp.bool_)


def _no_repeats(idx):
    """True when idx selects each element at most once (plain assignment is then a
    scatter-add): ints, slices, None, Ellipsis and boolean masks, alone or in a tuple."""
    if isinstance(idx, _BASIC_INDEX):
        return True
    if type(idx) is _ndarray:
        return idx.dtype.kind == "b"
    if type(idx) is tuple:
        for e in idx:
            if not (isinstance(e, _BASIC_INDEX) or (type(e) is _ndarray and e.dtype.kind == "b")):
                return False
        return True
    return False


@primitive
def untake(g, idx, shape, dtype):
    """A zero array of `shape` with g added at idx (repeated indices accumulate): the
    transpose of x[idx]."""
    if type(g) is Box:      # traced one level up (higher-order differentiation)
        return untake(g, idx, shape, dtype)
    out = _onp.zeros(shape, dtype=dtype)
    if type(g) is _ndarray and g.dtype.kind == "c" and out.dtype.kind != "c":
        g = g.real
    if _no_repeats(idx):
        out[idx] = g
    else:
        _onp.add.at(out, idx, g)
    return out


defvjp(untake, lambda ans, g, idx, shape, dtype: lambda h: anp.getitem(h, idx), save=(1,))


@primitive
def unrepeat(g, repeats, axis, shape):
    """The transpose of repeat(x, repeats, axis) for x of `shape`: the copies of each element
    of g summed back into one."""
    if type(g) is Box:      # traced one level up (higher-order differentiation)
        return unrepeat(g, repeats, axis, shape)
    g = _onp.asarray(g)
    if axis is None:
        n = 1
        for d in shape:
            n *= d
        g = g.reshape(-1)
        ax, tshape = 0, (n,)
    else:
        ax, tshape = _norm_axis(axis, len(shape)), tuple(shape)
    r = _onp.asarray(repeats)
    if r.size == 1:
        out = g.reshape(tshape[:ax] + (tshape[ax], int(r.reshape(()))) + tshape[ax + 1:])
        out = out.sum(axis=ax + 1)
    else:
        pos = _onp.repeat(_onp.arange(tshape[ax]), r)
        out = _onp.zeros(tshape, g.dtype)
        _onp.add.at(out, (slice(None),) * ax + (pos,), g)
    return out.reshape(shape)


defvjp(unrepeat, lambda ans, g, repeats, axis, shape:
       lambda h: anp.repeat(h, repeats, axis), save=(1,))


# =============================================================================
# Reshaping and axis permutations
# =============================================================================
def _order_of(args, kwargs, pos, name):
    order = kwargs.get("order", args[pos] if len(args) > pos else "C")
    if order not in ("C", "F"):
        raise NotImplementedError(
            f"gradcy: the gradient of {name} with order={order!r} depends on the input's memory "
            f"layout, which is not recorded; use order='C' or 'F'")
    return order


def _reshape_g(shape):
    # ndarray.reshape skips numpy's dispatch layer (this rule is hot); a traced or scalar g
    # goes through the primitive
    return lambda g: g.reshape(shape) if type(g) is _ndarray else anp.reshape(g, shape)


def _reshape_vjp(ans, x, *args, **kwargs):
    shape = _shape(x)
    if len(args) < 2 and "order" not in kwargs:
        return _reshape_g(shape)
    order = _order_of(args, kwargs, 1, "reshape")
    return lambda g: anp.reshape(g, shape, order=order)


def _ravel_vjp(ans, x, *args, **kwargs):
    shape = _shape(x)
    order = _order_of(args, kwargs, 0, "ravel") if args or kwargs else "C"
    if order == "C":
        return _reshape_g(shape)
    return lambda g: anp.reshape(g, shape, order=order)


def _reshape_to(ans, x, *args, **kwargs):
    return _reshape_g(_shape(x))


def _transpose_vjp(ans, x, axes=None):
    if axes is None:
        return lambda g: g.T if type(g) is _ndarray else anp.transpose(g)
    n = len(axes)
    inv = [0] * n
    for i, a in enumerate(axes):
        inv[a % n] = i
    inv = tuple(inv)
    return lambda g: g.transpose(inv) if type(g) is _ndarray else anp.transpose(g, inv)


def _rollaxis_vjp(ans, x, axis, start=0):
    n = len(_shape(x))
    axis = _norm_axis(axis, n)
    if start < 0:
        start += n
    if axis < start:
        start -= 1
    if axis == start:
        return lambda g: g
    perm = list(range(n))
    perm.remove(axis)
    perm.insert(start, axis)
    return _transpose_vjp(ans, x, tuple(perm))


defvjp(anp.reshape, _reshape_vjp, save=())
defvjp(anp.ravel, _ravel_vjp, save=())
# axes (a tuple, or rarely an array) are kept: they are metadata, not a buffer of the input
defvjp(anp.transpose, _transpose_vjp, save=(1,))
if getattr(anp, "permute_dims", anp.transpose) is not anp.transpose:
    defvjp(anp.permute_dims, _transpose_vjp, save=(1,))
defvjp(anp.swapaxes, lambda ans, x, axis1, axis2: lambda g: anp.swapaxes(g, axis1, axis2), save=())
defvjp(anp.moveaxis, lambda ans, x, source, destination:
       lambda g: anp.moveaxis(g, destination, source), save=())
defvjp(anp.rollaxis, _rollaxis_vjp, save=())
if hasattr(anp, "matrix_transpose"):
    defvjp(anp.matrix_transpose, lambda ans, x: lambda g: anp.swapaxes(g, -1, -2), save=())
defvjp(anp.expand_dims, _reshape_to, save=())
defvjp(anp.squeeze, _reshape_to, save=())
defvjp(anp.broadcast_to, lambda ans, x, *a, **k: lambda g: unbroadcast(g, x), save=())


def _atleast_vjp(argnums, ans, args, kwargs):
    if len(args) == 1:
        shape = _shape(args[0])
        return lambda g: (anp.reshape(g, shape),)
    shapes = [_shape(a) for a in args]

    def vjp(g):
        return tuple(None if g[k] is None else anp.reshape(g[k], shapes[k]) for k in argnums)
    return vjp


for _f in (anp.atleast_1d, anp.atleast_2d, anp.atleast_3d):
    defvjp_argnums(_f, _atleast_vjp, save=())


# =============================================================================
# Joining and splitting
# =============================================================================
def _concatenate_vjp(argnums, ans, args, kwargs):
    axis, arrays = args[0], args[1:]
    metas = [shape_dtype(a) for a in arrays]
    if axis is None:
        sizes = [int(_onp.prod(s)) for s, _ in metas]
        ax = 0
    else:
        ax = _norm_axis(axis, len(metas[0][0]))
        sizes = [s[ax] for s, _ in metas]
    starts = [0]
    for n in sizes:
        starts.append(starts[-1] + n)
    lead = (slice(None),) * ax

    def piece(g, i):
        shape, dtype = metas[i]
        gi = anp.getitem(g, lead + (slice(starts[i], starts[i + 1]),))
        if axis is None:
            gi = anp.reshape(gi, shape)
        return cast_like(gi, dtype)

    def vjp(g):
        return tuple(None if k == 0 else piece(g, k - 1) for k in argnums)
    return vjp


defvjp_argnums(anp.concatenate_args, _concatenate_vjp, save=())


def _array_from_args_vjp(argnums, ans, args, kwargs):
    dtypes = {k: shape_dtype(args[k])[1] for k in argnums}
    return lambda g: tuple(cast_like(anp.getitem(g, k), dtypes[k]) for k in argnums)


defvjp_argnums(anp.array_from_args, _array_from_args_vjp, save=())


def _unsplit(x, ios, ax):
    """vjp(g) for array_split(x, ios, ax): the pieces' cotangents (None = zero) rejoined."""
    shape, dtype = shape_dtype(x)
    # the pieces' shapes, from a zero-strided stand-in for x (no memory)
    dummy = _onp.broadcast_to(_onp.empty((), dtype=bool), shape)
    shapes = [p.shape for p in _onp.array_split(dummy, ios, ax)]

    def vjp(g):
        parts = [_onp.zeros(s, dtype) if gi is None else cast_like(gi, dtype)
                 for gi, s in zip(g, shapes)]
        return anp.concatenate(parts, axis=ax)
    return vjp


def _split_vjp(ans, x, ios, axis=0):
    return _unsplit(x, ios, _norm_axis(axis, len(_shape(x))))


# indices_or_sections is kept (it may be an index array)
defvjp(anp.split, _split_vjp, None, save=(1,))
defvjp(anp.array_split, _split_vjp, None, save=(1,))
defvjp(anp.hsplit, lambda ans, x, ios: _unsplit(x, ios, 1 if len(_shape(x)) > 1 else 0), None,
       save=(1,))
defvjp(anp.vsplit, lambda ans, x, ios: _unsplit(x, ios, 0), None, save=(1,))
defvjp(anp.dsplit, lambda ans, x, ios: _unsplit(x, ios, 2), None, save=(1,))


def _container_take_vjp(ans, A, idx):
    # A is a tuple of ArrayMeta, or (when A was itself traced one level up) an ArrayMeta of
    # shape (len(A),)
    n = A.shape[0] if type(A) is ArrayMeta else len(A)

    def vjp(g):
        out = [None] * n
        out[idx] = g
        return out
    return vjp


defvjp(anp.container_take, _container_take_vjp, None, save=())


# =============================================================================
# Indexing
# =============================================================================
def _getitem_vjp(g, ans, A, idx):
    """A sparse cotangent for a plain g: the slot's cotangent is added into the array's
    cotangent in place (O(size of the read)); untake (dense, traced) at higher order."""
    shape, dtype = shape_dtype(A)
    if type(g) is _ndarray or isinstance(g, _onp.generic):
        if g.dtype.kind == "c" and dtype.kind != "c":
            g = g.real
        return SparseCotangent(idx, g, shape, dtype, not _no_repeats(idx))
    if type(g) is not Box and (is_array_value(g) or is_array_value(A)):
        return _untake_like(g, idx, A, shape, dtype)
    return untake(g, idx, shape, dtype)


def _untake_like(g, idx, A, shape, dtype):
    """untake for a Dask / CuPy cotangent or array A (saved as it is): zeros made like A (or
    like g when A is a NumPy array's metadata), g written in by the library's own item
    assignment (lazy for Dask)."""
    if not _no_repeats(idx):
        raise NotImplementedError(
            f"gradcy.numpy.getitem: the VJP of a read with repeated indices of a "
            f"{type(g).__name__} adds at repeated positions (numpy.add.at), which "
            f"{type(g).__module__.split('.')[0]} arrays do not support; read with a basic index "
            f"or an index without repeats")
    out = (_onp.zeros_like(A, dtype=dtype) if is_array_value(A)
           else _onp.zeros_like(g, dtype=dtype, shape=shape))
    if _onp.iscomplexobj(g) and out.dtype.kind != "c":
        g = g.real
    out[idx] = g
    return out


defvjp_direct(anp.getitem, _getitem_vjp, None, save=(1,))
anp.getitem.basic_view = True    # with a basic index, its cotangent may go into A's slot


def _take_vjp(ans, a, indices, axis=None, out=None, mode="raise"):
    shape, dtype = shape_dtype(a)
    if axis is None:
        n = int(_onp.prod(shape))
    else:
        ax = _norm_axis(axis, len(shape))
        n = shape[ax]
    idx = indices
    if mode == "wrap":
        idx = _onp.mod(idx, n)
    elif mode == "clip":
        idx = _onp.clip(idx, 0, n - 1)
    if axis is None:
        return lambda g: anp.reshape(untake(g, idx, (n,), dtype), shape)
    full = (slice(None),) * ax + (idx,)
    return lambda g: untake(g, full, shape, dtype)


defvjp(anp.take, _take_vjp, None, save=(1,))


def _along_axis_index(shape, indices, ax):
    """The fancy index equivalent to take_along_axis(x, indices, ax) for x of `shape`."""
    nd = len(shape)
    idx = []
    for d in range(nd):
        if d == ax:
            idx.append(indices)
        else:
            idx.append(_onp.arange(shape[d]).reshape((1,) * d + (-1,) + (1,) * (nd - d - 1)))
    return tuple(idx)


def _take_along_axis_vjp(ans, arr, indices, axis=-1):
    shape, dtype = shape_dtype(arr)
    if axis is None:
        n = int(_onp.prod(shape))
        return lambda g: anp.reshape(untake(g, indices, (n,), dtype), shape)
    full = _along_axis_index(shape, _onp.asarray(indices), _norm_axis(axis, len(shape)))
    return lambda g: untake(g, full, shape, dtype)


defvjp(anp.take_along_axis, _take_along_axis_vjp, None, save=(1,))


def _compress_vjp(ans, condition, a, axis=None, out=None):
    shape, dtype = shape_dtype(a)
    pos = _onp.flatnonzero(_onp.asarray(condition))
    if axis is None:
        n = int(_onp.prod(shape))
        return lambda g: anp.reshape(untake(g, pos, (n,), dtype), shape)
    full = (slice(None),) * _norm_axis(axis, len(shape)) + (pos,)
    return lambda g: untake(g, full, shape, dtype)


defvjp(anp.compress, None, _compress_vjp, save=(0,))


def _permutation_vjp(a, perm, axis):
    """vjp(g) of y = take_along_axis(a, perm, axis) for a permutation perm along axis."""
    shape = _shape(a)
    if axis is None:
        inv = _onp.empty_like(perm)
        inv[perm] = _onp.arange(perm.size)
        return lambda g: anp.reshape(anp.take(g, inv), shape)
    ax = _norm_axis(axis, len(shape))
    inv = _onp.empty_like(perm)
    ramp = _onp.arange(shape[ax]).reshape((-1,) + (1,) * (len(shape) - ax - 1))
    _onp.put_along_axis(inv, perm, _onp.broadcast_to(ramp, perm.shape), ax)
    return lambda g: anp.take_along_axis(g, inv, ax)


def _sort_vjp(ans, a, axis=-1, kind=None, order=None, stable=None):
    if order is not None:
        raise NotImplementedError("gradcy: sort with order= (structured arrays) has no gradient")
    perm = anp.argsort(a, axis=axis, kind="stable")
    return _permutation_vjp(a, perm, axis)


def _partition_vjp(ans, a, kth, axis=-1, kind="introselect", order=None):
    if order is not None:
        raise NotImplementedError("gradcy: partition with order= has no gradient")
    perm = anp.argpartition(a, kth, axis=axis, kind=kind)
    return _permutation_vjp(a, perm, axis)


defvjp(anp.sort, _sort_vjp, save=(0,))
defvjp(anp.partition, _partition_vjp, None, save=(0,))


# =============================================================================
# Casting and copies
# =============================================================================
def _astype_vjp(ans, x, *args, **kwargs):
    dtype = shape_dtype(x)[1]
    return lambda g: cast_like(g, dtype)


defvjp(anp.astype, _astype_vjp, None, save=())
# anp.copy_ is the primitive (gradcy.numpy.copy may be a wrapper that dispatches to it)
defvjp(anp.copy_, lambda ans, x, *a, **k: lambda g: g, save=())


# =============================================================================
# Rearrangements: flips, rolls, rotations, tiling, repetition, padding, triangles, diagonals
# =============================================================================
defvjp(anp.flip, lambda ans, m, axis=None: lambda g: anp.flip(g, axis), save=())
defvjp(anp.fliplr, lambda ans, m: lambda g: anp.fliplr(g), save=())
defvjp(anp.flipud, lambda ans, m: lambda g: anp.flipud(g), save=())


def _roll_vjp(ans, a, shift, axis=None):
    back = -shift if isinstance(shift, (int, _onp.integer)) else tuple(-int(s) for s in
                                                                       _onp.ravel(shift))
    return lambda g: anp.roll(g, back, axis)


defvjp(anp.roll, _roll_vjp, None, save=(1,))
defvjp(anp.rot90, lambda ans, m, k=1, axes=(0, 1): lambda g: anp.rot90(g, -k, axes), save=())


def _tile_vjp(ans, A, reps):
    shape = _shape(A)
    reps = (int(reps),) if _onp.ndim(reps) == 0 else tuple(int(r) for r in reps)
    d = max(len(shape), len(reps))
    s = (1,) * (d - len(shape)) + tuple(shape)
    r = (1,) * (d - len(reps)) + reps
    inter = tuple(v for pair in zip(r, s) for v in pair)
    axes = tuple(range(0, 2 * d, 2))
    return lambda g: anp.reshape(anp.sum(anp.reshape(g, inter), axis=axes), shape)


defvjp(anp.tile, _tile_vjp, save=(1,))
defvjp(anp.repeat, lambda ans, a, repeats, axis=None:
       lambda g: unrepeat(g, repeats, axis, _shape(a)), None, save=(1,))

_GATHER_PAD_MODES = ("edge", "reflect", "symmetric", "wrap")


def _pad_pairs(pad_width, nd):
    """pad_width as an (ndim, 2) array of (before, after), as numpy.pad reads it."""
    p = _onp.asarray(pad_width, dtype=_onp.intp)
    if p.size == 1:
        return _onp.full((nd, 2), p.reshape(-1)[0])
    if p.size == 2 and p.shape != (2, 1):
        return _onp.broadcast_to(p.reshape(-1), (nd, 2))
    return _onp.broadcast_to(p, (nd, 2))


def _pad_vjp(ans, x, pad_width, mode="constant", **kwargs):
    shape, dtype = shape_dtype(x)
    nd = len(shape)
    pw = _pad_pairs(pad_width, nd)
    if mode in ("constant", "empty"):
        idx = tuple(slice(int(b), int(b) + n) for (b, _), n in zip(pw, shape))
        return lambda g: anp.getitem(g, idx)
    if mode in _GATHER_PAD_MODES and kwargs.get("reflect_type", "even") == "even":
        # padding in these modes copies elements: pad the positions, then scatter-add back
        n = int(_onp.prod(shape))
        src = _onp.pad(_onp.arange(n).reshape(shape), pw, mode)
        return lambda g: anp.reshape(untake(g, src, (n,), dtype), shape)
    raise NotImplementedError(f"gradcy: no gradient for pad with mode={mode!r} {kwargs}")


defvjp(anp.pad, _pad_vjp, None, save=(1,))


def _tri_vjp(fn):
    def maker(ans, m, k=0):
        shape = _shape(m)
        if len(shape) >= 2:
            return lambda g: fn(g, k)
        # a 1-D m is broadcast along the rows of the output
        return lambda g: anp.reshape(anp.sum(fn(g, k), axis=0), shape)
    return maker


defvjp(anp.tril, _tri_vjp(anp.tril), save=())
defvjp(anp.triu, _tri_vjp(anp.triu), save=())


def _diag_vjp(ans, v, k=0):
    shape, dtype = shape_dtype(v)
    if len(shape) == 1:
        return lambda g: anp.diag(g, k)
    n = _shape(ans)[0]
    pos = (_onp.arange(n) + max(-k, 0), _onp.arange(n) + max(k, 0))
    return lambda g: untake(g, pos, shape, dtype)


defvjp(anp.diag, _diag_vjp, save=())


# =============================================================================
# JVPs (forward mode)
# =============================================================================
# Every function here is linear in its array argument (sort and partition are linear for a
# fixed permutation), so the JVP applies the same function, with the same non-array
# arguments, to the tangent. The engine sums the rules over traced arguments and casts the
# sum to the output's shape and dtype.
def _same(fn):
    """The JVP of a function linear in its first argument: fn applied to the tangent."""
    return lambda g, ans, x, *args, **kwargs: fn(g, *args, **kwargs)


def _zeros_of(a, dtype):
    """Zeros of the shape of argument a (an array, a traced value or a scalar)."""
    return _onp.zeros(a.shape if hasattr(a, "shape") else _onp.shape(a), dtype)


defjvp(untake, lambda t, ans, g, idx, shape, dtype: untake(t, idx, shape, dtype), None)
defjvp(unrepeat, lambda t, ans, g, repeats, axis, shape: unrepeat(t, repeats, axis, shape), None)


def _reshape_jvp(g, ans, x, *args, **kwargs):
    if len(args) < 2 and not kwargs:
        # the tangent has x's shape: only the output's shape matters (order 'C')
        return g.reshape(ans.shape) if type(g) is _ndarray else anp.reshape(g, _shape(ans))
    return anp.reshape(g, *args, **kwargs)


defjvp(anp.reshape, _reshape_jvp)
defjvp(anp.ravel, _same(anp.ravel))
defjvp(anp.transpose, _same(anp.transpose))
if getattr(anp, "permute_dims", anp.transpose) is not anp.transpose:
    defjvp(anp.permute_dims, _same(anp.permute_dims))
for _f in (anp.swapaxes, anp.moveaxis, anp.rollaxis, anp.expand_dims, anp.squeeze,
           anp.broadcast_to):
    defjvp(_f, _same(_f))
if hasattr(anp, "matrix_transpose"):
    defjvp(anp.matrix_transpose, _same(anp.matrix_transpose))


def _atleast_jvp(fn):
    def jvp(argnums, gs, ans, args, kwargs):
        if len(args) == 1:
            return fn(gs[0])
        ts = dict(zip(argnums, gs))
        dtype = _onp.result_type(*[shape_dtype(g)[1] for g in gs])
        return fn(*[ts[k] if k in ts else _zeros_of(a, dtype) for k, a in enumerate(args)])
    return jvp


for _f in (anp.atleast_1d, anp.atleast_2d, anp.atleast_3d):
    defjvp_argnums(_f, _atleast_jvp(_f))


def _concatenate_jvp(argnums, gs, ans, args, kwargs):
    ts = dict(zip(argnums, gs))
    dtype = ans.dtype
    return anp.concatenate_args(args[0], *[ts[k] if k in ts else _zeros_of(a, dtype)
                                           for k, a in enumerate(args[1:], 1)])


def _array_from_args_jvp(argnums, gs, ans, args, kwargs):
    ts = dict(zip(argnums, gs))
    dtype = ans.dtype
    return anp.array_from_args(*[ts[k] if k in ts else _zeros_of(a, dtype)
                                 for k, a in enumerate(args)])


defjvp_argnums(anp.concatenate_args, _concatenate_jvp)
defjvp_argnums(anp.array_from_args, _array_from_args_jvp)

for _f in (anp.split, anp.array_split, anp.hsplit, anp.vsplit, anp.dsplit):
    defjvp(_f, _same(_f), None)
defjvp(anp.container_take, lambda g, ans, A, idx: anp.container_take(g, idx), None)

defjvp(anp.getitem,
       lambda g, ans, A, idx: anp.getitem(_onp.asarray(g) if type(g) in (float, complex) else g,
                                          idx), None)
defjvp(anp.take, _same(anp.take), None)
defjvp(anp.take_along_axis, _same(anp.take_along_axis), None)
defjvp(anp.compress, None, lambda g, ans, condition, a, *args, **kwargs:
       anp.compress(condition, g, *args, **kwargs))


def _permuted(g, perm, axis):
    """g rearranged by the permutation perm along axis (of the flattened g for None)."""
    if axis is None:
        return anp.take(g, perm)
    return anp.take_along_axis(g, perm, axis)


def _sort_jvp(g, ans, a, axis=-1, kind=None, order=None, stable=None):
    if order is not None:
        raise NotImplementedError("gradcy: sort with order= (structured arrays) has no gradient")
    return _permuted(g, anp.argsort(a, axis=axis, kind="stable"), axis)


def _partition_jvp(g, ans, a, kth, axis=-1, kind="introselect", order=None):
    if order is not None:
        raise NotImplementedError("gradcy: partition with order= has no gradient")
    return _permuted(g, anp.argpartition(a, kth, axis=axis, kind=kind), axis)


defjvp(anp.sort, _sort_jvp)
defjvp(anp.partition, _partition_jvp, None)


def _astype_jvp(g, ans, x, *args, **kwargs):
    dtype = ans.dtype
    if dtype.kind not in "fc":      # an integer or boolean result is a constant
        return None
    return cast_like(g, dtype)


defjvp(anp.astype, _astype_jvp, None)
defjvp(anp.copy_, lambda g, ans, x, *a, **k: g)

for _f in (anp.flip, anp.fliplr, anp.flipud, anp.rot90, anp.tile, anp.tril, anp.triu, anp.diag):
    defjvp(_f, _same(_f))
defjvp(anp.roll, _same(anp.roll), None)
defjvp(anp.repeat, _same(anp.repeat), None)


def _pad_jvp(g, ans, x, pad_width, mode="constant", **kwargs):
    if mode in ("constant", "empty"):
        # the fill is a constant: its tangent is zero
        return anp.pad(g, pad_width, mode="constant")
    if mode in _GATHER_PAD_MODES or mode == "mean":
        # copies of elements (odd reflections: 2 * edge - element), or means: linear in x
        return anp.pad(g, pad_width, mode, **kwargs)
    if mode == "linear_ramp":
        return anp.pad(g, pad_width, mode, end_values=0)
    raise NotImplementedError(f"gradcy: no forward-mode derivative for pad with mode={mode!r}")


defjvp(anp.pad, _pad_jvp, None)
del _f
