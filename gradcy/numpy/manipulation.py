"""VJPs and JVPs of shape functions: reshaping and axis permutations, joining and splitting,
casting and copies, rearrangements (flips, rolls, rotations, tiling, repetition, padding,
triangles, diagonals), identity-like conversions (asanyarray ascontiguousarray asfortranarray
asarray_chkfinite require real_if_close unwrap), ranges (linspace logspace geomspace) and the
window constructors.

Every rule here is linear in the cotangent and reads only metadata (shapes, dtypes, axes).
A JVP applies the same function, with the same non-array arguments, to the tangent.
"""

import numpy as _onp

from .._core import ArrayMeta, Box, register_numpy_override
from ..registry import defjvp, defjvp_argnums, defvjp_argnums_direct, defvjp_direct
from . import _wrap as anp
from ._util import (
    _binder,
    _dtype,
    _float_dtype,
    _is_complex,
    _ndarray,
    _norm_axis,
    _plain,
    _same,
    _shape,
    _zeros_of,
    cast_like,
    shape_dtype,
    unbroadcast,
)
from .indexing import unrepeat, untake


# =============================================================================
# Reshaping and axis permutations
# =============================================================================
def _order_of(args, kwargs, pos, name):
    order = kwargs.get("order", args[pos] if len(args) > pos else "C")
    if order not in ("C", "F"):
        raise NotImplementedError(
            f"gradcy: the gradient of {name} with order={order!r} depends on the input's memory "
            f"layout, which is not recorded; use order='C' or 'F'"
        )
    return order


def _reshape_g(g, shape):
    # ndarray.reshape skips numpy's dispatch layer (this rule is hot); a traced or scalar g
    # goes through the primitive
    return g.reshape(shape) if type(g) is _ndarray else anp.reshape(g, shape)


def _reshape_vjp(g, ans, x, *args, **kwargs):
    if len(args) < 2 and "order" not in kwargs:
        return _reshape_g(g, _shape(x))
    return anp.reshape(g, _shape(x), order=_order_of(args, kwargs, 1, "reshape"))


def _ravel_vjp(g, ans, x, *args, **kwargs):
    order = _order_of(args, kwargs, 0, "ravel") if args or kwargs else "C"
    if order == "C":
        return _reshape_g(g, _shape(x))
    return anp.reshape(g, _shape(x), order=order)


def _reshape_to(g, ans, x, *args, **kwargs):
    return _reshape_g(g, _shape(x))


def _transpose_vjp(g, ans, x, axes=None):
    if axes is None:
        return g.T if type(g) is _ndarray else anp.transpose(g)
    n = len(axes)
    inv = [0] * n
    for i, a in enumerate(axes):
        inv[a % n] = i
    inv = tuple(inv)
    return g.transpose(inv) if type(g) is _ndarray else anp.transpose(g, inv)


def _rollaxis_vjp(g, ans, x, axis, start=0):
    n = len(_shape(x))
    axis = _norm_axis(axis, n)
    if start < 0:
        start += n
    if axis < start:
        start -= 1
    if axis == start:
        return g
    perm = list(range(n))
    perm.remove(axis)
    perm.insert(start, axis)
    return _transpose_vjp(g, ans, x, tuple(perm))


def _reshape_jvp(g, ans, x, *args, **kwargs):
    if len(args) < 2 and not kwargs:
        # the tangent has x's shape: only the output's shape matters (order 'C')
        return g.reshape(ans.shape) if type(g) is _ndarray else anp.reshape(g, _shape(ans))
    return anp.reshape(g, *args, **kwargs)


defvjp_direct(anp.reshape, _reshape_vjp, save=())
defjvp(anp.reshape, _reshape_jvp)
defvjp_direct(anp.ravel, _ravel_vjp, save=())
# axes (a tuple, or rarely an array) are kept: they are metadata, not a buffer of the input
defvjp_direct(anp.transpose, _transpose_vjp, save=(1,))
if getattr(anp, "permute_dims", anp.transpose) is not anp.transpose:
    defvjp_direct(anp.permute_dims, _transpose_vjp, save=(1,))
    defjvp(anp.permute_dims, _same(anp.permute_dims))
defvjp_direct(anp.swapaxes, lambda g, ans, x, axis1, axis2: anp.swapaxes(g, axis1, axis2), save=())
defvjp_direct(
    anp.moveaxis,
    lambda g, ans, x, source, destination: anp.moveaxis(g, destination, source),
    save=(),
)
defvjp_direct(anp.rollaxis, _rollaxis_vjp, save=())
if hasattr(anp, "matrix_transpose"):
    defvjp_direct(anp.matrix_transpose, lambda g, ans, x: anp.swapaxes(g, -1, -2), save=())
    defjvp(anp.matrix_transpose, _same(anp.matrix_transpose))
defvjp_direct(anp.expand_dims, _reshape_to, save=())
defvjp_direct(anp.squeeze, _reshape_to, save=())
defvjp_direct(anp.broadcast_to, lambda g, ans, x, *a, **k: unbroadcast(g, x), save=())
for _f in (
    anp.ravel,
    anp.transpose,
    anp.swapaxes,
    anp.moveaxis,
    anp.rollaxis,
    anp.expand_dims,
    anp.squeeze,
    anp.broadcast_to,
):
    defjvp(_f, _same(_f))


def _atleast_vjp(argnums, g, g_owned, ans, args, kwargs):
    if len(args) == 1:
        return (anp.reshape(g, _shape(args[0])),)
    return tuple(None if g[k] is None else anp.reshape(g[k], _shape(args[k])) for k in argnums)


def _atleast_jvp(fn):
    def jvp(argnums, gs, ans, args, kwargs):
        if len(args) == 1:
            return fn(gs[0])
        ts = dict(zip(argnums, gs))
        dtype = _onp.result_type(*[shape_dtype(g)[1] for g in gs])
        return fn(*[ts[k] if k in ts else _zeros_of(a, dtype) for k, a in enumerate(args)])

    return jvp


for _f in (anp.atleast_1d, anp.atleast_2d, anp.atleast_3d):
    defvjp_argnums_direct(_f, _atleast_vjp, save=())
    defjvp_argnums(_f, _atleast_jvp(_f))


# =============================================================================
# Joining and splitting
# =============================================================================
def _concatenate_vjp(argnums, g, g_owned, ans, args, kwargs):
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

    return tuple(None if k == 0 else piece(g, k - 1) for k in argnums)


defvjp_argnums_direct(anp.concatenate_args, _concatenate_vjp, save=())


def _concatenate_jvp(argnums, gs, ans, args, kwargs):
    ts = dict(zip(argnums, gs))
    dtype = ans.dtype
    return anp.concatenate_args(
        args[0], *[ts[k] if k in ts else _zeros_of(a, dtype) for k, a in enumerate(args[1:], 1)]
    )


defjvp_argnums(anp.concatenate_args, _concatenate_jvp)


def _array_from_args_vjp(argnums, g, g_owned, ans, args, kwargs):
    return tuple(cast_like(anp.getitem(g, k), shape_dtype(args[k])[1]) for k in argnums)


defvjp_argnums_direct(anp.array_from_args, _array_from_args_vjp, save=())


def _array_from_args_jvp(argnums, gs, ans, args, kwargs):
    ts = dict(zip(argnums, gs))
    dtype = ans.dtype
    return anp.array_from_args(
        *[ts[k] if k in ts else _zeros_of(a, dtype) for k, a in enumerate(args)]
    )


defjvp_argnums(anp.array_from_args, _array_from_args_jvp)


def _unsplit(g, x, ios, ax):
    """The cotangent of x in array_split(x, ios, ax): the pieces' cotangents g (None = zero)
    rejoined."""
    shape, dtype = shape_dtype(x)
    # the pieces' shapes, from a zero-strided stand-in for x (no memory)
    dummy = _onp.broadcast_to(_onp.empty((), dtype=bool), shape)
    shapes = [p.shape for p in _onp.array_split(dummy, ios, ax)]
    parts = [
        _onp.zeros(s, dtype) if gi is None else cast_like(gi, dtype) for gi, s in zip(g, shapes)
    ]
    return anp.concatenate(parts, axis=ax)


def _split_vjp(g, ans, x, ios, axis=0):
    return _unsplit(g, x, ios, _norm_axis(axis, len(_shape(x))))


# indices_or_sections is kept (it may be an index array)
defvjp_direct(anp.split, _split_vjp, None, save=(1,))
defvjp_direct(anp.array_split, _split_vjp, None, save=(1,))
defvjp_direct(
    anp.hsplit,
    lambda g, ans, x, ios: _unsplit(g, x, ios, 1 if len(_shape(x)) > 1 else 0),
    None,
    save=(1,),
)
defvjp_direct(anp.vsplit, lambda g, ans, x, ios: _unsplit(g, x, ios, 0), None, save=(1,))
defvjp_direct(anp.dsplit, lambda g, ans, x, ios: _unsplit(g, x, ios, 2), None, save=(1,))
for _f in (anp.split, anp.array_split, anp.hsplit, anp.vsplit, anp.dsplit):
    defjvp(_f, _same(_f), None)


def _container_take_vjp(g, ans, A, idx):
    # A is a tuple of ArrayMeta, or (when A was itself traced one level up) an ArrayMeta of
    # shape (len(A),)
    out = [None] * (A.shape[0] if type(A) is ArrayMeta else len(A))
    out[idx] = g
    return out


defvjp_direct(anp.container_take, _container_take_vjp, None, save=())
defjvp(anp.container_take, lambda g, ans, A, idx: anp.container_take(g, idx), None)


# =============================================================================
# Casting and copies
# =============================================================================
def _astype_vjp(g, ans, x, *args, **kwargs):
    return cast_like(g, shape_dtype(x)[1])


defvjp_direct(anp._astype_traced, _astype_vjp, None, save=())


def _astype_jvp(g, ans, x, *args, **kwargs):
    dtype = ans.dtype
    if dtype.kind not in "fcO":  # an integer or boolean result is a constant
        return None
    return cast_like(g, dtype)


defjvp(anp._astype_traced, _astype_jvp, None)
# anp.copy_ is the primitive (gradcy.numpy.copy may be a wrapper that dispatches to it)
defvjp_direct(anp.copy_, lambda g, ans, x, *a, **k: g, save=())
defjvp(anp.copy_, lambda g, ans, x, *a, **k: g)


# =============================================================================
# Rearrangements: flips, rolls, rotations, tiling, repetition, padding, triangles, diagonals
# =============================================================================
defvjp_direct(anp.flip, lambda g, ans, m, axis=None: anp.flip(g, axis), save=())
defvjp_direct(anp.fliplr, lambda g, ans, m: anp.fliplr(g), save=())
defvjp_direct(anp.flipud, lambda g, ans, m: anp.flipud(g), save=())
for _f in (anp.flip, anp.fliplr, anp.flipud):
    defjvp(_f, _same(_f))


def _roll_vjp(g, ans, a, shift, axis=None):
    back = (
        -shift
        if isinstance(shift, (int, _onp.integer))
        else tuple(-int(s) for s in _onp.ravel(shift))
    )
    return anp.roll(g, back, axis)


defvjp_direct(anp.roll, _roll_vjp, None, save=(1,))
defjvp(anp.roll, _same(anp.roll), None)
defvjp_direct(anp.rot90, lambda g, ans, m, k=1, axes=(0, 1): anp.rot90(g, -k, axes), save=())
defjvp(anp.rot90, _same(anp.rot90))


def _tile_vjp(g, ans, A, reps):
    shape = _shape(A)
    reps = (int(reps),) if _onp.ndim(reps) == 0 else tuple(int(r) for r in reps)
    d = max(len(shape), len(reps))
    s = (1,) * (d - len(shape)) + tuple(shape)
    r = (1,) * (d - len(reps)) + reps
    inter = tuple(v for pair in zip(r, s) for v in pair)
    axes = tuple(range(0, 2 * d, 2))
    return anp.reshape(anp.sum(anp.reshape(g, inter), axis=axes), shape)


defvjp_direct(anp.tile, _tile_vjp, save=(1,))
defjvp(anp.tile, _same(anp.tile))
defvjp_direct(
    anp.repeat,
    lambda g, ans, a, repeats, axis=None: unrepeat(g, repeats, axis, _shape(a)),
    None,
    save=(1,),
)
defjvp(anp.repeat, _same(anp.repeat), None)

_GATHER_PAD_MODES = ("edge", "reflect", "symmetric", "wrap")


def _pad_pairs(pad_width, nd):
    """pad_width as an (ndim, 2) array of (before, after), as numpy.pad reads it."""
    p = _onp.asarray(pad_width, dtype=_onp.intp)
    if p.size == 1:
        return _onp.full((nd, 2), p.reshape(-1)[0])
    if p.size == 2 and p.shape != (2, 1):
        return _onp.broadcast_to(p.reshape(-1), (nd, 2))
    return _onp.broadcast_to(p, (nd, 2))


def _pad_vjp(g, ans, x, pad_width, mode="constant", **kwargs):
    shape, dtype = shape_dtype(x)
    nd = len(shape)
    pw = _pad_pairs(pad_width, nd)
    if mode in ("constant", "empty"):
        idx = tuple(slice(int(b), int(b) + n) for (b, _), n in zip(pw, shape))
        return anp.getitem(g, idx)
    if mode in _GATHER_PAD_MODES and kwargs.get("reflect_type", "even") == "even":
        # padding in these modes copies elements: pad the positions, then scatter-add back
        n = int(_onp.prod(shape))
        src = _onp.pad(_onp.arange(n).reshape(shape), pw, mode)
        return anp.reshape(untake(g, src, (n,), dtype), shape)
    raise NotImplementedError(f"gradcy: no gradient for pad with mode={mode!r} {kwargs}")


defvjp_direct(anp.pad, _pad_vjp, None, save=(1,))


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


def _tri_vjp(fn):
    def rule(g, ans, m, k=0):
        shape = _shape(m)
        if len(shape) >= 2:
            return fn(g, k)
        # a 1-D m is broadcast along the rows of the output
        return anp.reshape(anp.sum(fn(g, k), axis=0), shape)

    return rule


for _f in (anp.tril, anp.triu):
    defvjp_direct(_f, _tri_vjp(_f), save=())
    defjvp(_f, _same(_f))


def _diag_vjp(g, ans, v, k=0):
    shape, dtype = shape_dtype(v)
    if len(shape) == 1:
        return anp.diag(g, k)
    n = _shape(ans)[0]
    pos = (_onp.arange(n) + max(-k, 0), _onp.arange(n) + max(k, 0))
    return untake(g, pos, shape, dtype)


defvjp_direct(anp.diag, _diag_vjp, save=())
defjvp(anp.diag, _same(anp.diag))
del _f


# =============================================================================
# Identity-like conversions
# =============================================================================
def _identity_vjp(g, ans, x, *args, **kwargs):
    shape = _shape(x)
    if _shape(ans) != shape:  # ascontiguousarray & co. make 0-d inputs 1-d
        g = anp.reshape(g, shape)
    return cast_like(g, _dtype(x))


def _identity_jvp(g, ans, x, *args, **kwargs):
    return g


for _name in (
    "asanyarray",
    "ascontiguousarray",
    "asfortranarray",
    "asarray_chkfinite",
    "require",
    "unwrap",
):
    _p = getattr(anp, _name, None)
    if _p is not None and hasattr(_p, "vjpmakers"):
        defvjp_direct(_p, _identity_vjp, save=())
        defjvp(_p, _identity_jvp)


def _real_if_close_vjp(g, ans, a, *args, **kwargs):
    return cast_like(g, _dtype(a))  # complex input, real output: g as complex


def _real_if_close_jvp(g, ans, a, *args, **kwargs):
    if _is_complex(a) and not _is_complex(ans):
        return anp.real(g)
    return g


defvjp_direct(anp.real_if_close, _real_if_close_vjp, save=())
defjvp(anp.real_if_close, _real_if_close_jvp)


# full(shape, fill_value) and full_like(a, fill_value): the fill broadcast (its VJP sums).
# gradcy.numpy.full / full_like are constructors.py's owning constructors, which take plain values;
# these rules serve the primitives numpy_wrapper.full / full_like.
def _fill_vjp(g, ans, *args, **kwargs):
    fill = args[1] if len(args) > 1 else kwargs.get("fill_value")
    if _dtype(ans).kind not in "fc":
        return None
    return cast_like(unbroadcast(g, fill), _dtype(fill))


def _fill_jvp(g, ans, *args, **kwargs):
    if _dtype(ans).kind not in "fc":
        return None
    return anp.broadcast_to(g, _shape(ans))


for _p in (anp.full, anp.full_like):
    defvjp_direct(_p, None, _fill_vjp, save=())
    defjvp(_p, None, _fill_jvp)


# nextafter(x, y) moves x by one ulp: slope 1 in x, piecewise constant in y
defvjp_direct(anp.nextafter, lambda g, ans, x, y, **kw: unbroadcast(g, x), None, save=())
defjvp(anp.nextafter, lambda g, ans, x, y, **kw: g, None)


# =============================================================================
# linspace, logspace, geomspace (with respect to start and stop)
# =============================================================================
def _space_frame(ans, num, endpoint, axis):
    """(ax, t, bshape): the output axis of the samples, their fractions t (shaped to broadcast
    against the samples) and the broadcast shape of start and stop."""
    v = _plain(ans)
    samples = v[0] if isinstance(v, (tuple, list)) else v
    sshape = _shape(samples)
    nd = len(sshape)
    ax = _norm_axis(axis, nd)
    t = _onp.linspace(0.0, 1.0, num, endpoint=endpoint)
    tshape = [1] * nd
    tshape[ax] = num
    bshape = tuple(n for i, n in enumerate(sshape) if i != ax)
    return ax, t.reshape(tshape), bshape


def _expand_at(v, ax, bshape):
    """A start/stop/base value (or its tangent) broadcast to bshape, with the sample axis ax
    inserted."""
    if not _shape(v):
        return v
    if _shape(v) != bshape:
        v = anp.broadcast_to(v, bshape)
    return anp.expand_dims(v, ax)


def _space_dtype(dtype):
    return dtype is None or _onp.dtype(dtype).kind in "fc"


def _linspace_vjp(which):
    def rule(g, ans, start, stop, num=50, endpoint=True, retstep=False, dtype=None, axis=0, **kw):
        if not _space_dtype(dtype):
            return None
        target = start if which == 0 else stop
        tdtype = _dtype(target)
        ax, t, bshape = _space_frame(ans, num, endpoint, axis)
        w = (1.0 - t) if which == 0 else t
        div = (num - 1) if endpoint else num
        gs = g[0] if retstep else g
        total = None
        if gs is not None:
            total = anp.sum(gs * w.astype(_float_dtype(tdtype)), axis=ax)
        if retstep and g[1] is not None and div > 0:
            step_c = g[1] * ((-1.0 if which == 0 else 1.0) / div)
            total = step_c if total is None else total + step_c
        return None if total is None else cast_like(unbroadcast(total, target), tdtype)

    return rule


def _linspace_jvp(which):
    def jvp(g, ans, start, stop, num=50, endpoint=True, retstep=False, dtype=None, axis=0, **kw):
        ax, t, bshape = _space_frame(ans, num, endpoint, axis)
        w = (1.0 - t) if which == 0 else t
        ts = _expand_at(g, ax, bshape) * w
        if retstep:
            div = (num - 1) if endpoint else num
            step = g * ((-1.0 if which == 0 else 1.0) / div) if div > 0 else g * 0.0
            return (ts, step)
        return ts

    return jvp


defvjp_direct(anp.linspace, _linspace_vjp(0), _linspace_vjp(1), save=())
defjvp(anp.linspace, _linspace_jvp(0), _linspace_jvp(1))


def _geometric_rules(prim, np_fn, rate, save):
    """Rules of logspace and geomspace: samples exp((1 - t) a + t b), so d out / d start =
    out (1 - t) rate and d out / d stop = out t rate, with rate(end, kw, ax, bshape) (end:
    start or stop; kw: the call's arguments, bound) broadcast against the samples."""
    bind = _binder(np_fn)

    def frame(which, ans, args, kwargs):
        kw = bind(args, kwargs)
        end = kw["start"] if which == 0 else kw["stop"]
        ax, t, bshape = _space_frame(ans, kw["num"], kw["endpoint"], kw["axis"])
        return kw, end, ax, (1.0 - t) if which == 0 else t, bshape

    def vjp(which):
        def rule(g, ans, *args, **kwargs):
            kw, end, ax, w, bshape = frame(which, ans, args, kwargs)
            if not _space_dtype(kw["dtype"]):
                return None
            tdtype = _dtype(end)
            c = anp.sum(
                g * ans * w.astype(_float_dtype(tdtype)) * rate(end, kw, ax, bshape), axis=ax
            )
            return cast_like(unbroadcast(c, end), tdtype)

        return rule

    def jvp(which):
        def rule(g, ans, *args, **kwargs):
            kw, end, ax, w, bshape = frame(which, ans, args, kwargs)
            return _expand_at(g, ax, bshape) * w * ans * rate(end, kw, ax, bshape)

        return rule

    defvjp_direct(prim, vjp(0), vjp(1), save=save)
    defjvp(prim, jvp(0), jvp(1))


# logspace: base ** (...), rate ln(base); geomspace: exp of a log-linear mix, rate 1 / end
_geometric_rules(
    anp.logspace,
    _onp.logspace,
    lambda end, kw, ax, bshape: anp.log(_expand_at(kw["base"], ax, bshape)),
    save=("ans", 4),
)
_geometric_rules(
    anp.geomspace,
    _onp.geomspace,
    lambda end, kw, ax, bshape: 1.0 / _expand_at(end, ax, bshape),
    save=("ans", 0, 1),
)


# Window constructors: M is a count of points, not a value to differentiate
def _window(name):
    np_fn = getattr(_onp, name)

    def window(M, *args, **kwargs):
        if type(M) is Box:
            raise TypeError(
                f"gradcy.numpy.{name}: M, the number of points, is traced; it is a "
                f"count with no gradient. Pass a plain int (e.g. len(x))."
            )
        return np_fn(M, *args, **kwargs)

    window.__name__ = window.__qualname__ = name
    window.__doc__ = np_fn.__doc__
    register_numpy_override(np_fn, window)
    return window


bartlett = _window("bartlett")
blackman = _window("blackman")
hamming = _window("hamming")
hanning = _window("hanning")
