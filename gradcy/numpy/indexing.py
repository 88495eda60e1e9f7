"""VJPs and JVPs of indexing and selection: getitem, take, take_along_axis, compress, the
scatter-add (untake) and un-repeat primitives that transpose them, and the "selection"
functions whose outputs are copies of their inputs' elements (append insert delete resize
diagflat extract choose select meshgrid unstack broadcast_arrays trim_zeros ...), with the
front ends of choose, select and block for lists of traced arrays; and the functions whose
results are integer, boolean or index values (non-differentiable).

Selection functions share one rule: the function is re-run at backward time on integer
*markers* (1..N in place of the differentiated argument, 0 in the other differentiable ones),
which says where each input element went; the cotangent is gathered back with a scatter-add
(untake, differentiable). Only the non-differentiable array arguments (indices, conditions) are
saved; the differentiated arrays are kept as metadata.
"""

import inspect

import numpy as _onp

from .._core import Box, SparseCotangent, is_array_value, register_numpy_override
from ..backends import is_lazy
from ..registry import (
    defjvp,
    defjvp_argnums,
    defvjp_argnums_direct,
    defvjp_direct,
    nondifferentiable,
    primitive,
)
from . import _wrap as anp
from ._util import (
    _contains_box,
    _dtype,
    _intp,
    _ndarray,
    _norm_axis,
    _plain,
    _positions,
    _same,
    _shape,
    _size,
    by_groups,
    cast_like,
    shape_dtype,
    unbroadcast,
)

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
    if type(g) is Box:  # traced one level up (higher-order differentiation)
        return untake(g, idx, shape, dtype)
    if is_array_value(g):  # Dask, CuPy: in g's library, or a clear error
        return _untake_like(
            g,
            idx,
            None,
            shape,
            dtype,
            "untake (the VJP of take, take_along_axis, compress, gradient)",
        )
    out = _onp.zeros(shape, dtype=dtype)
    if type(g) is _ndarray and g.dtype.kind == "c" and out.dtype.kind != "c":
        g = g.real
    if _no_repeats(idx):
        out[idx] = g
    else:
        _onp.add.at(out, idx, g)
    return out


defvjp_direct(untake, lambda h, ans, g, idx, shape, dtype: anp.getitem(h, idx), save=(1,))
defjvp(untake, lambda t, ans, g, idx, shape, dtype: untake(t, idx, shape, dtype), None)


@primitive
def unrepeat(g, repeats, axis, shape):
    """The transpose of repeat(x, repeats, axis) for x of `shape`: the copies of each element
    of g summed back into one."""
    if type(g) is Box:  # traced one level up (higher-order differentiation)
        return unrepeat(g, repeats, axis, shape)
    if not is_array_value(g):  # Dask, CuPy: g as it is (Dask stays lazy)
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
        out = g.reshape(tshape[:ax] + (tshape[ax], int(r.reshape(()))) + tshape[ax + 1 :])
        out = out.sum(axis=ax + 1)
    else:
        pos = _onp.repeat(_onp.arange(tshape[ax]), r)
        out = (
            by_groups(
                lambda b: _scatter_rows(b, pos, ax, tshape[ax]),
                g,
                (ax,),
                g.dtype,
                sizes={ax: tshape[ax]},
            )
            if is_lazy(g)
            else _scatter_rows(g, pos, ax, tshape[ax])
        )
    return out.reshape(shape)


def _scatter_rows(g, pos, ax, n):
    """Zeros with n rows along axis ax, g's rows added at positions pos (a 1-D integer array;
    repeats accumulate): in g's library, by numpy.add.at."""
    out = _onp.zeros_like(g, shape=g.shape[:ax] + (n,) + g.shape[ax + 1 :])
    _onp.add.at(out, (slice(None),) * ax + (pos,), g)
    return out


def _untake_rows(g, pos, ax, shape, dtype):
    """untake of the Dask g read by the 1-D integer array pos along axis ax: the rows of
    repeated positions summed first (per block of g's whole rows), then written into zeros of
    Dask's automatic chunks by item assignment (no block of `shape`'s whole axis)."""
    n = shape[ax]
    pos = pos % n if n else pos
    if _onp.unique(pos).size < pos.size:
        pos, inv = _onp.unique(pos, return_inverse=True)
        g = by_groups(
            lambda b: _scatter_rows(b, inv.reshape(-1), ax, pos.size),
            g,
            (ax,),
            dtype,
            sizes={ax: pos.size},
        )
    out = _onp.zeros_like(g, dtype=dtype, shape=shape)
    out[(slice(None),) * ax + (pos,)] = g
    return out


def _along_one_axis(idx, ndim):
    """(ax, pos) when the index idx of an ndim-d array reads the positions pos (a 1-D integer
    NumPy array) along axis ax and every other axis whole; else None."""
    idx = idx if type(idx) is tuple else (idx,)
    if idx and idx[0] is Ellipsis:
        idx = (slice(None),) * (ndim - len(idx) + 1) + idx[1:]
    whole = slice(None)
    arrays = [k for k, e in enumerate(idx) if not (type(e) is slice and e == whole)]
    if len(idx) > ndim or len(arrays) != 1:
        return None
    pos = idx[arrays[0]]
    pos = _onp.asarray(pos) if isinstance(pos, (list, _ndarray)) else None
    if pos is None or pos.ndim != 1 or pos.dtype.kind not in "iu":
        return None
    return arrays[0], pos


defvjp_direct(
    unrepeat, lambda h, ans, g, repeats, axis, shape: anp.repeat(h, repeats, axis), save=(1,)
)
defjvp(unrepeat, lambda t, ans, g, repeats, axis, shape: unrepeat(t, repeats, axis, shape), None)


# =============================================================================
# Indexing
# =============================================================================
def _getitem_vjp(g, ans, A, idx):
    """A sparse cotangent for a plain g: the slot's cotangent is added into the array's
    cotangent in place (O(size of the read)); untake (dense, traced) at higher order. A read of
    a traced container (a tuple, list or dict: autograd's SequenceBox / DictBox) sends g to
    its element."""
    if isinstance(A, (tuple, list, dict)):
        from ..builtins import container_untake
        from ..vspace import vspace

        return container_untake(g, idx, vspace(A))
    shape, dtype = shape_dtype(A)
    if dtype.kind not in "fc":
        # an integer or boolean array differentiated as float64 values: a float cotangent
        dtype = _onp.dtype(_onp.float64)
    if type(g) is _ndarray or isinstance(g, _onp.generic):
        if g.dtype.kind == "c" and dtype.kind != "c":
            g = g.real
        return SparseCotangent(idx, g, shape, dtype, not _no_repeats(idx))
    if type(g) is not Box and (is_array_value(g) or is_array_value(A)):
        return _untake_like(g, idx, A, shape, dtype)
    return untake(g, idx, shape, dtype)


def _untake_like(g, idx, A, shape, dtype, name="getitem"):
    """untake for a Dask / CuPy cotangent or array A (saved as it is): zeros made like A (or
    like g when A is a NumPy array's metadata or None), g written in by the library's own item
    assignment (lazy for Dask); a Dask g read by one integer array along one axis: its rows
    added in per block of whole rows along that axis."""
    key = idx if type(idx) is tuple else (idx,)
    if any(is_lazy(e) for e in key) or (
        (is_lazy(g) or is_lazy(A))
        and any(type(e) is _ndarray and e.dtype.kind == "b" and e.ndim > 1 for e in key)
    ):
        raise NotImplementedError(
            f"gradcy.numpy.{name}: the VJP of a read of a Dask array by a lazy index or by a "
            f"boolean mask of several dimensions (x[x > 0]) places the cotangent at positions "
            f"Dask knows only once computed (the read has chunks of unknown length), which "
            f"Dask's item assignment cannot do; write the masked computation with where "
            f"(np.sum(np.where(x > 0, f(x), 0.0)) for np.sum(f(x[x > 0]))), or read along one "
            f"axis by a computed 1-D mask (x[(x[:, 0] > 0).compute()])"
        )
    along = None if _no_repeats(idx) or not is_lazy(g) else _along_one_axis(idx, len(shape))
    if along is not None:
        return _untake_rows(cast_like(g, dtype), along[1], along[0], shape, dtype)
    if not _no_repeats(idx):
        raise NotImplementedError(
            f"gradcy.numpy.{name}: the VJP of a read by integer arrays (whose positions may "
            f"repeat) of a {type(g).__module__.split('.')[0]} {type(g).__name__} adds at those "
            f"positions (numpy.add.at), which {type(g).__module__.split('.')[0]} arrays do not "
            f"support beyond one 1-D integer array along one axis; read with a basic index "
            f"(slices), a boolean mask, or one such integer array"
        )
    out = (
        _onp.zeros_like(A, dtype=dtype)
        if is_array_value(A)
        else _onp.zeros_like(g, dtype=dtype, shape=shape)
    )
    if _onp.iscomplexobj(g) and out.dtype.kind != "c":
        g = g.real
    idx, g = _without_new_axes(idx, g, len(shape))
    out[idx] = g
    return out


def _without_new_axes(idx, g, ndim):
    """(idx, g) with idx's new axes (None) dropped from both, for a basic index (ints,
    slices, None, Ellipsis) of an array of `ndim` dimensions: Dask's item assignment takes no
    None (``out[None, :] = g`` raises where NumPy's assigns)."""
    key = idx if type(idx) is tuple else (idx,)
    if not any(e is None for e in key) or not all(
        e is None
        or e is Ellipsis
        or type(e) is slice
        or (isinstance(e, (int, _onp.integer)) and type(e) is not bool)
        for e in key
    ):
        return idx, g
    real = sum(1 for e in key if e is not None and e is not Ellipsis)
    expanded = []
    for e in key:
        expanded += [slice(None)] * (ndim - real) if e is Ellipsis else [e]
    if Ellipsis not in key:
        expanded += [slice(None)] * (ndim - real)
    kept, read = [], []  # the entries of idx without None; g's index dropping the new axes
    for e in expanded:
        if e is None:
            read.append(0)
        else:
            kept.append(e)
            if type(e) is slice:
                read.append(slice(None))
    return tuple(kept), g[tuple(read)]


defvjp_direct(anp.getitem, _getitem_vjp, None, save=(1,))
defjvp(
    anp.getitem,
    lambda g, ans, A, idx: anp.getitem(_onp.asarray(g) if type(g) in (float, complex) else g, idx),
    None,
)
anp.getitem.basic_view = True  # with a basic index, its cotangent may go into A's slot


def _untake_vjp(g, shape, dtype, idx, ax):
    """The cotangent of the selection idx along axis ax of an array of `shape` and `dtype`
    (ax None: of its flattened form), from the selection's cotangent g."""
    if ax is None:
        return anp.reshape(untake(g, idx, (_size(shape),), dtype), shape)
    return untake(g, (slice(None),) * ax + (idx,), shape, dtype)


def _take_vjp(g, ans, a, indices, axis=None, out=None, mode="raise"):
    shape, dtype = shape_dtype(a)
    ax = None if axis is None else _norm_axis(axis, len(shape))
    n = _size(shape) if ax is None else shape[ax]
    idx = indices
    if mode == "wrap":
        idx = _onp.mod(idx, n)
    elif mode == "clip":
        idx = _onp.clip(idx, 0, n - 1)
    return _untake_vjp(g, shape, dtype, idx, ax)


defvjp_direct(anp.take, _take_vjp, None, save=(1,))
defjvp(anp.take, _same(anp.take), None)


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


def _take_along_axis_vjp(g, ans, arr, indices, axis=-1):
    shape, dtype = shape_dtype(arr)
    if axis is None:
        return _untake_vjp(g, shape, dtype, indices, None)
    full = _along_axis_index(shape, _onp.asarray(indices), _norm_axis(axis, len(shape)))
    return untake(g, full, shape, dtype)


defvjp_direct(anp.take_along_axis, _take_along_axis_vjp, None, save=(1,))
defjvp(anp.take_along_axis, _same(anp.take_along_axis), None)


def _compress_vjp(g, ans, condition, a, axis=None, out=None):
    shape, dtype = shape_dtype(a)
    pos = _onp.flatnonzero(_onp.asarray(condition))
    return _untake_vjp(g, shape, dtype, pos, None if axis is None else _norm_axis(axis, len(shape)))


defvjp_direct(anp.compress, None, _compress_vjp, save=(0,))
defjvp(
    anp.compress,
    None,
    lambda g, ans, condition, a, *args, **kwargs: anp.compress(condition, g, *args, **kwargs),
)


# =============================================================================
# Selection functions: outputs are copies of input elements (a scatter-add transposes them)
# =============================================================================
def _scatter(g, m, shape, dtype):
    """The transpose of `take(ravel(x), m)` (m: int markers into x, -1 = not from x), applied
    to g: a `shape` array with g's entries added at their markers."""
    n = _size(shape)
    m = _onp.asarray(m, dtype=_intp).reshape(-1)
    gf = anp.reshape(g, (-1,))
    keep = m >= 0
    if not keep.all():
        pos = _onp.flatnonzero(keep)
        gf = anp.take(gf, pos)
        m = m[pos]
    if m.size == 0:
        return _onp.zeros(shape, dtype)
    if m.size == n and (m.size < 2 or (_onp.diff(m) > 0).all()):
        out = anp.reshape(gf, (n,))  # a permutation-free copy: every slot once
    elif m.size < 2 or (_onp.diff(m) > 0).all():
        mask = _onp.zeros(n, bool)
        mask[m] = True  # increasing unique markers: a bool-mask scatter
        out = untake(gf, mask, (n,), dtype)
    else:
        out = untake(gf, m, (n,), dtype)
    return cast_like(anp.reshape(out, shape), dtype)


def _gathered(t, m):
    """take(ravel(t), m) with 0 where m < 0: the tangent of a selection."""
    m = _onp.asarray(m, dtype=_intp)
    tf = anp.reshape(t, (-1,))
    keep = m >= 0
    if keep.all():
        return anp.take(tf, m)
    return anp.where(keep, anp.take(tf, _onp.where(keep, m, 0)), 0.0)


def _selection(prim, diff, save=()):
    """Register the rules of a selection primitive whose differentiable array arguments are
    `diff` (positions); `save` lists the other array arguments the function needs (indices,
    conditions)."""
    fun = prim.fun
    names = {pos: name for name, pos in _positions(fun).items()}
    varargs = any(p.kind == p.VAR_POSITIONAL for p in inspect.signature(fun).parameters.values())

    def markers(k, args, kwargs):
        new = list(args)
        kw = dict(kwargs or {})
        targets = range(len(args)) if varargs else diff
        for j in targets:
            if j < len(new):
                shape = _shape(new[j])
                m = (
                    _onp.arange(1, _size(shape) + 1, dtype=_intp).reshape(shape)
                    if j == k
                    else _onp.zeros(shape, _intp)
                )
                # a NumPy scalar stays one (NumPy 1.x's diagflat of a scalar is a scalar)
                new[j] = m[()] if isinstance(new[j], _onp.generic) else m
            elif names.get(j) in kw and kw[names[j]] is not None:
                kw[names[j]] = _onp.zeros(_onp.shape(kw[names[j]]), _intp)
        out = fun(*new, **kw)
        if any(is_lazy(o) for o in (out if isinstance(out, (tuple, list)) else (out,))):
            raise NotImplementedError(
                f"{prim.name}: the positions its derivative moves values to depend on Dask "
                f"values (its indices or conditions), which Dask cannot scatter to before "
                f"computing them; pass those as NumPy arrays (.compute()), or write the "
                f"selection with gradcy.numpy.where, which stays lazy"
            )
        if isinstance(out, (tuple, list)):
            return [_onp.asarray(o) - 1 for o in out]
        return _onp.asarray(out) - 1

    def vjp_rule(k):
        def vjp(g, ans, *args, **kwargs):
            # (the cotangent's dtype: float64 for an integer or boolean argument)
            shape, dtype = _shape(args[k]), shape_dtype(args[k])[1]
            m = markers(k, args, kwargs)
            if type(m) is list:
                total = None
                for gi, mi in zip(g, m):
                    if gi is None:
                        continue
                    c = _scatter(gi, mi, shape, dtype)
                    total = c if total is None else total + c
                return total
            return _scatter(g, m, shape, dtype)

        return vjp

    def jvp_rule(k):
        def jvp(g, ans, *args, **kwargs):
            m = markers(k, args, kwargs)
            if type(m) is list:
                return tuple(_gathered(g, mi) for mi in m)
            return _gathered(g, m)

        return jvp

    nmax = max(diff) + 1 if diff else 0
    if varargs:
        nmax = 32
    vjps = [vjp_rule(k) if (varargs or k in diff) else None for k in range(nmax)]
    jvps = [jvp_rule(k) if (varargs or k in diff) else None for k in range(nmax)]
    defvjp_direct(prim, *vjps, save=save)
    defjvp(prim, *jvps)


_selection(anp.append, (0, 1))
_selection(anp.insert, (0, 2), save=(1,))
_selection(anp.delete, (0,), save=(1,))
_selection(anp.resize, (0,))
_selection(anp.diagflat, (0,))
_selection(anp.extract, (1,), save=(0,))
_selection(anp.choose, (1,), save=(0,))
_selection(anp.select, (1, 2), save=(0,))
_selection(anp.meshgrid, ())  # variadic: every positional argument
if hasattr(anp, "unstack"):
    _selection(anp.unstack, (0,))


# broadcast_arrays: each output is its argument broadcast (unbroadcast is the transpose)
def _broadcast_arrays_vjp(argnums, g, g_owned, ans, args, kwargs):
    return tuple(None if g[k] is None else unbroadcast(g[k], args[k]) for k in argnums)


def _broadcast_arrays_jvp(argnums, gs, ans, args, kwargs):
    ts = dict(zip(argnums, gs))
    outs = _plain(ans)
    return tuple(
        anp.broadcast_to(ts[k], _shape(a)) if k in ts else _onp.zeros(_shape(a), _dtype(a))
        for k, a in enumerate(outs)
    )


defvjp_argnums_direct(anp.broadcast_arrays, _broadcast_arrays_vjp, save=())
defjvp_argnums(anp.broadcast_arrays, _broadcast_arrays_jvp)


# trim_zeros: a slice decided by where the input's nonzeros are
def _trim_slices(filt, trim="fb", axis=None):
    f = _onp.asarray(_plain(filt))
    axes = (
        tuple(range(f.ndim))
        if axis is None
        else tuple(
            _norm_axis(a, f.ndim) for a in (axis if isinstance(axis, (tuple, list)) else (axis,))
        )
    )
    nz = _onp.argwhere(f != 0)
    if nz.size == 0:
        start = stop = _onp.zeros(f.ndim, _intp)
    else:
        start = nz.min(axis=0) if "f" in trim else [None] * f.ndim
        stop = nz.max(axis=0) + 1 if "b" in trim else [None] * f.ndim
    return tuple(slice(start[a], stop[a]) if a in axes else slice(None) for a in range(f.ndim))


def _trim_zeros_vjp(g, ans, filt, trim="fb", axis=None):
    shape, dtype = _shape(filt), _dtype(filt)
    return cast_like(untake(g, _trim_slices(filt, trim, axis), shape, dtype), dtype)


defvjp_direct(anp.trim_zeros, _trim_zeros_vjp, save=(0,))
defjvp(
    anp.trim_zeros,
    lambda g, ans, filt, trim="fb", axis=None: anp.getitem(g, _trim_slices(filt, trim, axis)),
)


# sort_complex: a permutation along the last axis (lexicographic on real, imaginary parts)
def _sort_complex_perm(a):
    return _onp.argsort(_onp.asarray(_plain(a)), axis=-1, kind="stable")


def _sort_complex_vjp(g, ans, a):
    perm = _sort_complex_perm(a)
    if perm.ndim == 0:
        return cast_like(g, _dtype(a))
    inv = _onp.argsort(perm, axis=-1)
    return cast_like(anp.take_along_axis(g, inv, -1), _dtype(a))


def _sort_complex_jvp(g, ans, a):
    perm = _sort_complex_perm(a)
    return g if perm.ndim == 0 else anp.take_along_axis(g, perm, -1)


defvjp_direct(anp.sort_complex, _sort_complex_vjp, save=(0,))
defjvp(anp.sort_complex, _sort_complex_jvp)


# =============================================================================
# Front ends for lists of traced arrays: choose, select, block
# =============================================================================
_choose_p, _select_p = anp.choose, anp.select


def _stacked(arrays):
    """A list of arrays (some traced) as one traced array: broadcast together, then stacked."""
    arrays = [anp.asarray(a) for a in arrays]
    return anp.stack(list(anp.broadcast_arrays(*arrays)))


def choose(a, choices, out=None, mode="raise"):
    """numpy.choose; `choices` may be a list holding traced arrays."""
    if isinstance(choices, (list, tuple)) and _contains_box(choices):
        choices = _stacked(choices)
    if out is not None:
        return _choose_p(a, choices, out=out, mode=mode)
    return _choose_p(a, choices, mode=mode) if mode != "raise" else _choose_p(a, choices)


def select(condlist, choicelist, default=0):
    """numpy.select; `choicelist` may be a list holding traced arrays, `default` traced."""
    if (
        isinstance(condlist, (list, tuple))
        and _contains_box(condlist)
        and isinstance(choicelist, (list, tuple))
        and len(condlist) == len(choicelist)
        and all(_dtype(c) == _onp.bool_ for c in condlist)  # (else NumPy's error below)
    ):
        # traced conditions (const_graph records comparisons): the first condition that
        # holds picks, as nested where calls, whose masks a replay computes again (in a
        # list, NumPy's dispatch sent them back here, endlessly)
        out = default
        for c, v in zip(condlist[::-1], choicelist[::-1]):
            out = anp.where(c, v, out)
        return out
    if isinstance(choicelist, (list, tuple)) and _contains_box(choicelist):
        choicelist = _stacked(choicelist)
    if isinstance(condlist, (list, tuple)) and _contains_box(condlist):
        condlist = _stacked(condlist)  # (a condition per choice: NumPy raises as it does)
    return _select_p(condlist, choicelist, default)


def _block_depth(obj):
    """The list nesting depth of block's argument, checked to be the same for every leaf."""
    if not isinstance(obj, list):
        return 0
    if not obj:
        raise ValueError("gradcy.numpy.block: lists cannot be empty")
    depths = {_block_depth(e) for e in obj}
    if len(depths) != 1:
        raise ValueError("gradcy.numpy.block: list depths are mismatched")
    return depths.pop() + 1


def _block_leaves(obj):
    if isinstance(obj, list):
        for e in obj:
            yield from _block_leaves(e)
    else:
        yield obj


def block(arrays):
    """numpy.block; traced arrays anywhere in the nested lists are traced parents (a composite
    of concatenate)."""
    if not _contains_box(arrays):
        return _onp.block(arrays)
    if isinstance(arrays, tuple):
        raise TypeError(
            "gradcy.numpy.block: arrays is a tuple; only lists can be used to arrange blocks"
        )
    depth = _block_depth(arrays)
    ndim = max([depth] + [len(_shape(e)) for e in _block_leaves(arrays)])

    def build(obj, level):
        if isinstance(obj, list):
            return anp.concatenate([build(e, level + 1) for e in obj], axis=level - depth)
        shape = _shape(obj)
        target = (1,) * (ndim - len(shape)) + tuple(shape)
        if type(obj) is Box:
            return anp.reshape(obj, target) if target != tuple(shape) else obj
        return _onp.reshape(_onp.asarray(obj), target)

    return build(arrays, 0)


register_numpy_override(_onp.choose, choose)
register_numpy_override(_onp.select, select)
register_numpy_override(_onp.block, block)


# =============================================================================
# Non-differentiable: integer, boolean or index results
# =============================================================================
_NONDIFFERENTIABLE = [
    "nanargmax",
    "nanargmin",
    "lexsort",
    "bitwise_count",
    "isnat",
    "isdtype",
    "issubdtype",
    "tril_indices",
    "triu_indices",
    "diag_indices",
    "broadcast_shapes",
    "common_type",
    "mintypecode",
    "packbits",
    "unpackbits",
    "spacing",
    "einsum_path",
    "ix_",
    "show_runtime",
]
nondifferentiable(
    *[getattr(anp, _n) for _n in _NONDIFFERENTIABLE if hasattr(getattr(anp, _n, None), "traced")]
)
