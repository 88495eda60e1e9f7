"""VJPs and JVPs of cumulative sums and products (cumsum cumprod nancumsum nancumprod, NumPy 2's
cumulative_sum and cumulative_prod), differences (diff, ediff1d), gradient, trapezoid/trapz and
interp."""

import operator

import numpy as _onp

from ..registry import defjvp, defjvp_argnums, defvjp_argnums_direct, defvjp_direct
from . import _wrap as anp
from ._util import (
    _NoValue,
    _at,
    _binder,
    _dtype,
    _float_dtype,
    _norm_axis,
    _plain,
    _shape,
    _size,
    cast_like,
    none_set,
    shape_dtype,
    unbroadcast,
    values_of,
)
from .indexing import _scatter, untake
from .reductions import _revcumsum


# =============================================================================
# cumsum, cumprod, nancumsum, nancumprod
# =============================================================================
def _cumsum_vjp(g, ans, x, axis=None, dtype=None, out=None):
    shape, xdtype = shape_dtype(x)
    if axis is None or not shape:
        return anp.reshape(_revcumsum(cast_like(g, xdtype), 0), shape)
    return _revcumsum(cast_like(g, xdtype), operator.index(axis) % len(shape))


defvjp_direct(anp.cumsum, _cumsum_vjp, save=())
defjvp(anp.cumsum, lambda g, ans, x, axis=None, dtype=None, out=None: anp.cumsum(g, axis))


def _nancumsum_vjp(g, ans, x, axis=None, dtype=None, out=None):
    return _cumsum_vjp(g, ans, x, axis) * ~_onp.isnan(x)


defvjp_direct(anp.nancumsum, _nancumsum_vjp, save=(0,))
defjvp(
    anp.nancumsum,
    lambda g, ans, x, axis=None, dtype=None, out=None: anp.cumsum(g * ~_onp.isnan(x), axis),
)


def _zeros_mask(x):
    """x == 0 on the plain values, in x's array library (Dask: lazy)."""
    return values_of(x) == 0


def _cumprod_grad(g, ans, x, axis):
    """The cotangent of x for y = cumprod(x, axis): x_j's cotangent is
    sum_{i >= j} g_i * prod_{l <= i, l != j} x_l.

    Without zeros that is revcumsum(g * y) / x. With zeros, entries before a slice's first zero
    keep that formula, the first zero gets revcumsum(g * y') with y' the cumprod of x with that
    zero replaced by a constant 1, and entries after it get 0 (as functions of x when the slice
    has a single zero: the zero's value times the same sum over x_j, exact to second order)."""
    z = _zeros_mask(x)
    if none_set(z):
        return _revcumsum(g * ans, axis) / x
    zc = _onp.cumsum(z, axis=axis)
    before = zc == 0
    first = z & (zc == 1)
    single = zc.max(axis=axis, keepdims=True) == 1
    after = (zc >= 1) & ~first & single
    term = _revcumsum(g * ans, axis) / (x * before + ~before) * before
    y1 = anp.cumprod(x * ~first + first, axis=axis)
    r1 = _revcumsum(g * y1, axis)
    term = term + r1 * first
    if not none_set(after):
        xk = anp.sum(x * first, axis=axis, keepdims=True)
        term = term + r1 * xk / (x * after + ~after) * after
    return term


def _cumprod_vjp(g, ans, x, axis=None, dtype=None, out=None):
    shape, xdtype = shape_dtype(x)
    g = cast_like(g, xdtype)
    y = cast_like(ans, xdtype)
    if axis is None or not shape:
        return anp.reshape(_cumprod_grad(g, y, anp.reshape(x, (-1,)), 0), shape)
    return _cumprod_grad(g, y, x, operator.index(axis) % len(shape))


defvjp_direct(anp.cumprod, _cumprod_vjp, save=(0, "ans"))


def _cumprod_tangent(g, ans, x, axis):
    """The tangent of y = cumprod(x, axis): dy_i = sum_{j <= i} g_j prod_{l <= i, l != j} x_l.

    Without zeros that is y * cumsum(g / x). With zeros, let `first` mark each slice's first
    zero and y1 = cumprod of x with that zero replaced by a constant 1: then
    dy = y * cumsum(g / x') + y1 * cumsum(g * first), with x' = x where x is nonzero, 1
    elsewhere, and the first zero's own term left out of the first sum. Up to the first zero
    this is y * cumsum(g / x); after it, y1 * g_first plus y (zero, but a function of x) times
    the others' terms, which keeps the rule exact to second order with one zero per slice."""
    z = _zeros_mask(x)
    if none_set(z):
        return ans * anp.cumsum(g / x, axis)
    first = z & (_onp.cumsum(z, axis=axis) == 1)
    y1 = anp.cumprod(x * ~first + first, axis)
    return ans * anp.cumsum(g * ~first / (x * ~z + z), axis) + y1 * anp.cumsum(g * first, axis)


def _cumprod_jvp(g, ans, x, axis=None, dtype=None, out=None):
    shape, xdtype = shape_dtype(x)
    y = cast_like(ans, xdtype)
    if axis is None or not shape:
        return _cumprod_tangent(anp.reshape(g, (-1,)), y, anp.reshape(x, (-1,)), 0)
    return _cumprod_tangent(g, y, x, operator.index(axis) % len(shape))


defjvp(anp.cumprod, _cumprod_jvp)


def _nancumprod_vjp(g, ans, x, axis=None, dtype=None, out=None):
    nans = _onp.isnan(x)
    if none_set(nans):
        return _cumprod_vjp(g, ans, x, axis)
    return _cumprod_vjp(g, ans, anp.where(nans, 1, x), axis) * ~nans


defvjp_direct(anp.nancumprod, _nancumprod_vjp, save=(0, "ans"))


def _nancumprod_jvp(g, ans, x, axis=None, dtype=None, out=None):
    nans = _onp.isnan(x)
    if none_set(nans):
        return _cumprod_jvp(g, ans, x, axis)
    return _cumprod_jvp(g * ~nans, ans, anp.where(nans, 1, x), axis)


defjvp(anp.nancumprod, _nancumprod_jvp)


# =============================================================================
# cumulative_sum, cumulative_prod (NumPy 2.1+)
# =============================================================================
def _cum_axis(x, axis):
    nd = len(_shape(x))
    return 0 if axis is None or nd == 0 else _norm_axis(axis, nd)


def _drop_initial(g, ax, include_initial):
    return anp.getitem(g, _at(ax, slice(1, None))) if include_initial else g


def _cumulative_vjp(grad):
    """The VJP of cumulative_sum / cumulative_prod from grad(g, y, x, ax) for an x of
    ndim >= 1: g (in x's dtype) and y() (the output, read only when called) without the
    initial entry."""

    def rule(g, ans, x, axis=None, dtype=None, out=None, include_initial=False):
        xdtype = _dtype(x)
        ax = _cum_axis(x, axis)
        g = _drop_initial(cast_like(g, xdtype), ax, include_initial)
        if not _shape(x):
            return anp.reshape(g, ())
        return grad(g, lambda: _drop_initial(cast_like(ans, xdtype), ax, include_initial), x, ax)

    return rule


if hasattr(anp, "cumulative_sum"):

    def _cumulative_sum_jvp(g, ans, x, axis=None, dtype=None, out=None, include_initial=False):
        return anp.cumulative_sum(g, axis=axis, include_initial=include_initial)

    defvjp_direct(
        anp.cumulative_sum, _cumulative_vjp(lambda g, y, x, ax: _revcumsum(g, ax)), save=()
    )
    defjvp(anp.cumulative_sum, _cumulative_sum_jvp)

if hasattr(anp, "cumulative_prod"):

    def _cumulative_prod_jvp(g, ans, x, axis=None, dtype=None, out=None, include_initial=False):
        ax = _cum_axis(x, axis)
        if not _shape(x):
            t = anp.reshape(g, (1,))
        else:
            y = _drop_initial(ans, ax, include_initial)
            t = _cumprod_tangent(g, y, x, ax)
        if include_initial:
            zshape = list(_shape(t))
            zshape[ax] = 1
            t = anp.concatenate([_onp.zeros(zshape, _dtype(t)), t], axis=ax)
        return t

    defvjp_direct(
        anp.cumulative_prod,
        _cumulative_vjp(lambda g, y, x, ax: _cumprod_grad(g, y(), x, ax)),
        save=(0, "ans"),
    )
    defjvp(anp.cumulative_prod, _cumulative_prod_jvp)


# =============================================================================
# diff, ediff1d
# =============================================================================
def _diff_parts(a, axis, prepend, append):
    """(axis, the shapes of prepend, a, append as concatenated by diff; None = absent)."""
    shape = _shape(a)
    ax = _norm_axis(axis, len(shape))

    def piece(v):
        if v is _NoValue:
            return None
        s = _shape(v)
        if len(s) == 0:
            s = tuple(1 if i == ax else n for i, n in enumerate(shape))
        return s

    return ax, piece(prepend), shape, piece(append)


def _diff_transpose(g, n, ax):
    """The transpose of diff(., n, ax): (-1)^n diff(pad(g, n on both sides), n)."""
    pad = [(0, 0)] * len(_shape(g))
    pad[ax] = (n, n)
    out = anp.diff(anp.pad(g, pad), n, ax)
    return -out if n % 2 else out


def _diff_vjp_for(which):
    def rule(g, ans, a, n=1, axis=-1, prepend=_NoValue, append=_NoValue):
        ax, ps, shape, qs = _diff_parts(a, axis, prepend, append)
        target = {0: a, 3: prepend, 4: append}[which]
        dtype = _dtype(target)
        if n == 0:  # diff(a, 0) is a itself (prepend, append unused)
            return cast_like(g, dtype) if which == 0 else None
        start = 0 if which != 0 else (ps[ax] if ps is not None else 0)
        if which == 4:
            start = (ps[ax] if ps is not None else 0) + shape[ax]
        length = {0: shape[ax], 3: ps[ax] if ps else 0, 4: qs[ax] if qs else 0}[which]
        g = cast_like(g, dtype) if dtype.kind in "fc" else g
        ge = _diff_transpose(g, n, ax)
        part = anp.getitem(ge, _at(ax, slice(start, start + length)))
        return cast_like(unbroadcast(part, target) if which else part, dtype)

    return rule


def _diff_jvp_for(which):
    def jvp(g, ans, a, n=1, axis=-1, prepend=_NoValue, append=_NoValue):
        if n == 0:
            return g if which == 0 else None
        ax, ps, shape, qs = _diff_parts(a, axis, prepend, append)
        dtype = _dtype(g)
        pieces = []
        for k, s in ((3, ps), (0, shape), (4, qs)):
            if s is None:
                continue
            pieces.append(anp.broadcast_to(g, s) if k == which else _onp.zeros(s, dtype))
        ext = pieces[0] if len(pieces) == 1 else anp.concatenate(pieces, axis=ax)
        return anp.diff(ext, n, ax)

    return jvp


defvjp_direct(anp.diff, _diff_vjp_for(0), None, None, _diff_vjp_for(3), _diff_vjp_for(4), save=())
defjvp(anp.diff, _diff_jvp_for(0), None, None, _diff_jvp_for(3), _diff_jvp_for(4))


def _ediff1d_sizes(ary, to_end, to_begin):
    nb = 0 if to_begin is None else _size(_shape(to_begin))
    ne = 0 if to_end is None else _size(_shape(to_end))
    return nb, max(_size(_shape(ary)) - 1, 0), ne


def _ediff1d_vjp(which):
    def rule(g, ans, ary, to_end=None, to_begin=None):
        nb, nd, ne = _ediff1d_sizes(ary, to_end, to_begin)
        target = {0: ary, 1: to_end, 2: to_begin}[which]
        shape, dtype = _shape(target), _dtype(target)
        if which == 2:
            return cast_like(anp.reshape(anp.getitem(g, slice(0, nb)), shape), dtype)
        if which == 1:
            return cast_like(anp.reshape(anp.getitem(g, slice(nb + nd, None)), shape), dtype)
        gd = anp.getitem(g, slice(nb, nb + nd))
        return cast_like(anp.reshape(_diff_transpose(gd, 1, 0), shape), dtype)

    return rule


def _ediff1d_jvp(which):
    def jvp(g, ans, ary, to_end=None, to_begin=None):
        nb, nd, ne = _ediff1d_sizes(ary, to_end, to_begin)
        dtype = ans.dtype
        parts = []
        if nb:
            parts.append(anp.reshape(g, (-1,)) if which == 2 else _onp.zeros(nb, dtype))
        if which == 0:
            parts.append(anp.diff(anp.reshape(g, (-1,))))
        else:
            parts.append(_onp.zeros(nd, dtype))
        if ne:
            parts.append(anp.reshape(g, (-1,)) if which == 1 else _onp.zeros(ne, dtype))
        return parts[0] if len(parts) == 1 else anp.concatenate(parts)

    return jvp


defvjp_direct(anp.ediff1d, _ediff1d_vjp(0), _ediff1d_vjp(1), _ediff1d_vjp(2), save=())
defjvp(anp.ediff1d, _ediff1d_jvp(0), _ediff1d_jvp(1), _ediff1d_jvp(2))


# =============================================================================
# gradient: a banded linear map along each axis (coefficients read off numpy itself)
# =============================================================================
_gradient_bind = _binder(_onp.gradient)


def _gradient_axes(f, kw):
    nd = len(_shape(f))
    axis = kw["axis"]
    if axis is None:
        return tuple(range(nd))
    if isinstance(axis, (tuple, list)):
        return tuple(_norm_axis(a, nd) for a in axis)
    return (_norm_axis(axis, nd),)


def _gradient_band(L, spacing, edge_order):
    """(cols, C): row i of gradient's matrix along an axis of length L holds C[i, k] at column
    cols[i, k] (k < 3, a window of consecutive columns; every other entry of the row is 0).
    A window's columns have distinct residues mod 3, so applying numpy.gradient to the three
    combs (column % 3 == r) reads every coefficient."""
    w = min(3, L)
    start = _onp.clip(_onp.arange(L) - 1, 0, L - w)
    cols = start[:, None] + _onp.arange(w)[None, :]
    probes = [
        _onp.gradient((_onp.arange(L) % 3 == r).astype(float), spacing, edge_order=edge_order)
        for r in range(3)
    ]
    P = _onp.stack(probes)  # (3, L)
    C = P[cols % 3, _onp.arange(L)[:, None]]  # (L, w)
    return cols, C


def _gradient_transpose(g, ax, cols, C, dtype):
    """The transpose of gradient along axis ax applied to g."""
    gm = anp.moveaxis(g, ax, -1)
    mshape = _shape(gm)
    total = None
    for k in range(cols.shape[1]):
        contrib = gm * C[:, k].astype(_float_dtype(dtype) if dtype.kind == "f" else C.dtype)
        part = untake(contrib, (Ellipsis, cols[:, k]), mshape, dtype)
        total = part if total is None else total + part
    return anp.moveaxis(total, -1, ax)


def _gradient_spacings(f, kw, axes):
    varargs = kw["varargs"]
    n = len(axes)
    if len(varargs) == 0:
        return [1.0] * n
    if len(varargs) == 1 and _onp.ndim(_plain(varargs[0])) == 0:
        return [_plain(varargs[0])] * n
    return [_onp.asarray(_plain(v)) if _onp.ndim(_plain(v)) else _plain(v) for v in varargs]


def _gradient_vjp(g, ans, f, *args, **kwargs):
    kw = _gradient_bind((f,) + args, kwargs)
    shape, dtype = _shape(f), _dtype(f)
    axes = _gradient_axes(f, kw)
    edge = kw["edge_order"]
    spacings = _gradient_spacings(f, kw, axes)
    gs = (g,) if len(axes) == 1 else g
    total = None
    for ax, sp, gi in zip(axes, spacings, gs):
        if gi is None:
            continue
        cols, C = _gradient_band(shape[ax], sp, edge)
        part = _gradient_transpose(gi, ax, cols, C, _float_dtype(dtype))
        total = part if total is None else total + part
    return None if total is None else cast_like(total, dtype)


def _gradient_jvp(g, ans, f, *args, **kwargs):
    return anp.gradient(g, *[_plain(a) for a in args], **kwargs)


# the spacings (positions 1...) are read; f itself is not
defvjp_direct(anp.gradient, _gradient_vjp, save=tuple(range(1, 64)))
defjvp(anp.gradient, _gradient_jvp)


# =============================================================================
# trapezoid and interp: joint rules from one plan of the call
# =============================================================================
def _planned_rules(prim, plan, vjps, jvps, missing, save):
    """Joint rules of prim from one plan of the call, plan(args, kwargs) -> (p, kw) (kw: the
    arguments, bound), made once per call, and parts per argument k: vjps[k](g, p, kw) is its
    cotangent, jvps[k](g, p, kw) the output tangent its tangent g causes (summed over the
    arguments). An argument without a part raises NotImplementedError(missing)."""

    def part(parts, k):
        if k not in parts:
            raise NotImplementedError(missing)
        return parts[k]

    def vjp(argnums, g, g_owned, ans, args, kwargs):
        p, kw = plan(args, kwargs)
        return tuple([part(vjps, k)(g, p, kw) for k in argnums])

    def jvp(argnums, gs, ans, args, kwargs):
        p, kw = plan(args, kwargs)
        total = None
        for k, g in zip(argnums, gs):
            t = part(jvps, k)(g, p, kw)
            total = t if total is None else total + t
        return total

    defvjp_argnums_direct(prim, vjp, save=save)
    defjvp_argnums(prim, jvp)


# =============================================================================
# trapezoid: sum(d * (y[1:] + y[:-1]) / 2, axis) with d = diff(x) (or dx)
# =============================================================================
class _Trap:
    """trapezoid's axes: ay on y, ap on the product d * (pair sums of y) (whose ndim is that
    of a multi-dimensional x when it has more), ax on a multi-dimensional x."""

    def __init__(self, y, x, axis):
        self.yshape = _shape(y)
        ny = len(self.yshape)
        self.xshape = None if x is None else _shape(x)
        nx = 0 if x is None else len(self.xshape)
        self.np = max(ny, nx if nx > 1 else 0)
        self.ay = _norm_axis(axis, ny)
        self.ap = _norm_axis(axis, self.np)
        self.ax = _norm_axis(axis, nx) if nx > 1 else 0
        self.x1d = nx == 1
        self.lo = _at(self.ay, slice(None, -1))
        self.hi = _at(self.ay, slice(1, None))

    def d(self, x, dx):
        """The interval widths (traced if x is), broadcastable against the pair sums."""
        if x is None:
            return dx
        if self.x1d:
            d = anp.diff(x)
            s = [1] * len(self.yshape)
            s[self.ay] = _shape(d)[0]
            return anp.reshape(d, tuple(s))
        return anp.diff(x, axis=self.ax)

    def pair_mean(self, y):
        return (anp.getitem(y, self.hi) + anp.getitem(y, self.lo)) * 0.5

    def expand(self, g):
        """The output's cotangent with the reduced axis back (size 1) where it was dropped."""
        return anp.expand_dims(g, self.ap) if len(_shape(g)) < self.np else g


def _trap_bind(args, kwargs):
    kw = _trap_binder(args, kwargs)
    return _Trap(kw["y"], kw["x"], kw["axis"]), kw


# NumPy 1.26 has only trapz, the same function under its old name
_trapezoid = getattr(anp, "trapezoid", None) or anp.trapz
_trap_binder = _binder(getattr(_onp, "trapezoid", None) or _onp.trapz)


def _trap_vjp_y(g, tr, kw):
    h = tr.expand(g) * tr.d(kw["x"], kw["dx"]) * 0.5
    full = list(_shape(h))
    full[tr.ap] = tr.yshape[tr.ay] - 1
    h = anp.broadcast_to(h, tuple(_onp.broadcast_shapes(tuple(full), _shape(h))))
    pad_hi = [(0, 0)] * len(_shape(h))
    pad_lo = [(0, 0)] * len(_shape(h))
    pad_hi[tr.ap] = (1, 0)
    pad_lo[tr.ap] = (0, 1)
    return unbroadcast(anp.pad(h, pad_hi) + anp.pad(h, pad_lo), kw["y"])


def _trap_vjp_x(g, tr, kw):
    x = kw["x"]
    gd = tr.expand(g) * tr.pair_mean(kw["y"])
    if tr.x1d:
        gd = anp.sum(gd, axis=tuple(i for i in range(len(_shape(gd))) if i != tr.ap))
        c = _diff_transpose(gd, 1, 0)
    else:
        dshape = list(tr.xshape)
        dshape[tr.ax] -= 1
        gd = unbroadcast(gd, _onp.broadcast_to(_onp.empty((), _dtype(x)), tuple(dshape)))
        c = _diff_transpose(gd, 1, tr.ax)
    return cast_like(c, _dtype(x))


_planned_rules(
    _trapezoid,
    _trap_bind,
    {
        0: _trap_vjp_y,
        1: _trap_vjp_x,
        2: lambda g, tr, kw: unbroadcast(g * anp.sum(tr.pair_mean(kw["y"]), axis=tr.ay), kw["dx"]),
    },
    {
        0: lambda g, tr, kw: _trapezoid(g, kw["x"], kw["dx"], kw["axis"]),
        1: lambda g, tr, kw: anp.sum(tr.d(g, None) * tr.pair_mean(kw["y"]), axis=tr.ap),
        2: lambda g, tr, kw: g * anp.sum(tr.pair_mean(kw["y"]), axis=tr.ay),
    },
    "gradcy.numpy.trapezoid: axis has no gradient",
    save=(0, 1, 2),
)


# =============================================================================
# interp
# =============================================================================
class _InterpPlan:
    """Where each x falls in the table (plain indices and masks), for interp(x, xp, fp, left,
    right, period): out = wlo * fp[lo] + whi * fp[hi] inside, fp[0] / left below, fp[-1] /
    right above."""

    def __init__(self, x, xp, left, right, period):
        xv = _onp.asarray(_plain(x), dtype=float)
        xpv = _onp.asarray(_plain(xp), dtype=float)
        n = xpv.shape[0]
        self.period = period
        if period is not None:
            period = abs(float(_plain(period)))
            xv = xv % period
            xm = xpv % period
            order = _onp.argsort(xm, kind="stable")
            xm = xm[order]
            self.fp_index = _onp.concatenate([order[-1:], order, order[:1]])
            table = _onp.concatenate([xm[-1:] - period, xm, xm[:1] + period])
            left = right = None
        else:
            self.fp_index = None
            table = xpv
        self.table = table
        nt = table.shape[0]
        self.n = n
        j = _onp.searchsorted(table, xv, side="right") - 1
        self.lo = _onp.clip(j, 0, max(nt - 2, 0))
        self.hi = _onp.minimum(self.lo + 1, nt - 1)
        nanx = _onp.isnan(xv)
        self.below = (xv < table[0]) & ~nanx
        self.above = (xv > table[-1]) & ~nanx
        self.inside = ~(self.below | self.above | nanx)
        if nt == 1:
            self.inside_interp = _onp.zeros_like(self.inside)
            self.at_single = self.inside
        else:
            self.inside_interp = self.inside
            self.at_single = _onp.zeros_like(self.inside)
        self.left_given = left is not None
        self.right_given = right is not None

    def fp_idx(self, idx):
        return idx if self.fp_index is None else self.fp_index[idx]

    def check_xp(self):
        if self.period is not None:
            raise NotImplementedError(
                "gradcy.numpy.interp: no gradient with respect to xp with period="
            )

    def t(self, x, xp):
        """The interpolation fractions, traced in x and xp (0 outside)."""
        if self.period is not None:
            x = anp.remainder(x, abs(float(_plain(self.period))))
            a = self.table[self.lo]
            b = self.table[self.hi]
        else:
            a = anp.take(xp, self.lo)
            b = anp.take(xp, self.hi)
        den = anp.where(self.inside_interp, b - a, 1.0)
        return anp.where(self.inside_interp, (x - a) / den, 0.0), den

    def weights(self, x, xp):
        t, _ = self.t(x, xp)
        wlo = anp.where(self.inside_interp, 1.0 - t, 0.0)
        whi = t
        extra_lo = self.at_single | (self.below & (not self.left_given))
        extra_hi = self.above & (not self.right_given)
        if extra_lo.any():
            wlo = wlo + extra_lo
        if extra_hi.any():
            whi = whi + extra_hi
        lo = _onp.where(self.below, 0, self.lo)
        hi = _onp.where(self.above, self.table.shape[0] - 1, self.hi)
        return wlo, whi, self.fp_idx(lo), self.fp_idx(hi)

    def slope(self, x, xp, fp):
        """d out / dx inside the table, traced."""
        t, den = self.t(x, xp)
        flo = anp.take(fp, self.fp_idx(self.lo))
        fhi = anp.take(fp, self.fp_idx(self.hi))
        return anp.where(self.inside_interp, (fhi - flo) / den, 0.0)


_interp_bind = _binder(_onp.interp)


def _interp_plan(args, kwargs):
    kw = _interp_bind(args, kwargs)
    return _InterpPlan(kw["x"], kw["xp"], kw["left"], kw["right"], kw["period"]), kw


def _interp_vjp_xp(g, plan, kw):
    x, xp, fp = kw["x"], kw["xp"], kw["fp"]
    plan.check_xp()
    t, _ = plan.t(x, xp)
    s = -g * plan.slope(x, xp, fp)
    c = _scatter(s * (1.0 - t), plan.lo, (plan.n,), _dtype(s)) + _scatter(
        s * t, plan.hi, (plan.n,), _dtype(s)
    )
    return cast_like(c, _dtype(xp))


def _interp_vjp_fp(g, plan, kw):
    wlo, whi, lo, hi = plan.weights(kw["x"], kw["xp"])
    gd = _dtype(g)
    c = _scatter(g * wlo, lo, (plan.n,), gd) + _scatter(g * whi, hi, (plan.n,), gd)
    return cast_like(c, _dtype(kw["fp"]))


def _interp_jvp_xp(g, plan, kw):
    x, xp, fp = kw["x"], kw["xp"], kw["fp"]
    plan.check_xp()
    tt, _ = plan.t(x, xp)
    s = plan.slope(x, xp, fp)
    return -s * ((1.0 - tt) * anp.take(g, plan.lo) + tt * anp.take(g, plan.hi))


def _interp_jvp_fp(g, plan, kw):
    wlo, whi, lo, hi = plan.weights(kw["x"], kw["xp"])
    return wlo * anp.take(g, lo) + whi * anp.take(g, hi)


_planned_rules(
    anp.interp,
    _interp_plan,
    {
        0: lambda g, plan, kw: unbroadcast(g * plan.slope(kw["x"], kw["xp"], kw["fp"]), kw["x"]),
        1: _interp_vjp_xp,
        2: _interp_vjp_fp,
        3: lambda g, plan, kw: unbroadcast(anp.sum(g * plan.below), kw["left"]),
        4: lambda g, plan, kw: unbroadcast(anp.sum(g * plan.above), kw["right"]),
    },
    {
        0: lambda g, plan, kw: g * plan.slope(kw["x"], kw["xp"], kw["fp"]),
        1: _interp_jvp_xp,
        2: _interp_jvp_fp,
        3: lambda g, plan, kw: g * plan.below,
        4: lambda g, plan, kw: g * plan.above,
    },
    "gradcy.numpy.interp: period has no gradient",
    save=(0, 1, 2, 5),
)
