"""VJPs and JVPs of statistics: median, var, std, average (and their nan* variants), quantile,
percentile, nanquantile, nanpercentile, cov, corrcoef, and the histograms.

Conventions as in reductions.py. Piecewise-linear statistics (median, quantiles) weight the
order statistics on the plain values (ties split evenly, like max); the weights are constants
for differentiation, so the rules differentiate again.
"""

import numpy as _onp

from .._core import Box, meta_of, register_numpy_override
from ..backends import is_array_value, is_lazy, zeros as _zeros
from ..registry import defjvp, defjvp_argnums, defvjp_argnums_direct, defvjp_direct
from . import _wrap as anp
from .saved_sets import Positions, median_masks
from ._util import (
    _NoValue,
    _binder,
    _contains_box,
    _dtype,
    _float_dtype,
    _intp,
    _norm_axis,
    _plain,
    _plain_tree,
    _shape,
    _size,
    by_groups,
    cast_like,
    none_set,
    shape_dtype,
    unbroadcast,
    values_of,
)
from .reductions import (
    _axes,
    _count,
    _kd,
    _keep,
    _kshape,
    _no_where,
    _real_dtype,
    _sum_over,
    _weight_dtype,
    _weights,
)


def _median_weights(x, axes, nan):
    """Half of the weight to each of the two middle order statistics (all of it to the middle
    one for an odd count), split evenly among the entries equal to it. A Dask x: the same
    weights, lazily, group by group."""
    if is_lazy(_plain(x)):
        xd = _plain(x)
        return by_groups(lambda b: _median_weights(b, axes, nan), xd, axes, _weight_dtype(xd.dtype))
    if type(x) is Positions:  # the record keeps the two masks only (_median_saver)
        m_lo, m_hi = median_masks(x)
        w_lo = _weights(m_lo, axes, x.value_dtype)
        if _onp.array_equal(m_lo, m_hi):
            return w_lo
        return (w_lo + _weights(m_hi, axes, w_lo.dtype)) * w_lo.dtype.type(0.5)
    xp = _onp.asarray(_plain(x))
    quantile = _onp.nanquantile if nan else _onp.quantile
    ax = None if len(axes) == xp.ndim else axes
    lo = quantile(xp, 0.5, axis=ax, keepdims=True, method="lower")
    hi = quantile(xp, 0.5, axis=ax, keepdims=True, method="higher")
    w_lo = _weights(xp == lo, axes, xp.dtype)
    if _onp.array_equal(lo, hi, equal_nan=True):
        return w_lo
    return (w_lo + _weights(xp == hi, axes, xp.dtype)) * w_lo.dtype.type(0.5)


def _median_vjp(g, ans, x, axis=None, out=None, overwrite_input=False, keepdims=False):
    shape, xdtype = shape_dtype(x)
    axes = _axes(len(shape), axis)
    w = ans if type(ans) is Positions else x  # (the masks of _median_saver)
    return _keep(cast_like(g, xdtype), shape, axes, keepdims) * _median_weights(w, axes, False)


def _nanmedian_vjp(g, ans, x, axis=None, out=None, overwrite_input=False, keepdims=False):
    shape, xdtype = shape_dtype(x)
    axes = _axes(len(shape), axis)
    w = ans if type(ans) is Positions else x
    return _keep(cast_like(g, xdtype), shape, axes, keepdims) * _median_weights(w, axes, True)


_MEDIAN_ARGS = ("axis", "out", "overwrite_input", "keepdims")


def _median_saver(nan):
    """The saver of median/nanmedian: the bit masks of the entries equal to the lower and the
    upper middle order statistics (a Positions record of two masks of the input's shape) in
    place of the input."""

    def save(argnums, ans, args, kwargs):
        a = args[0]
        if type(a) is not _onp.ndarray or a.dtype.kind != "f":
            return ans, args
        opts = dict(zip(_MEDIAN_ARGS, args[1:]))
        opts.update(kwargs)
        axes = _axes(a.ndim, opts.get("axis"))
        ax = None if len(axes) == a.ndim else axes
        quantile = _onp.nanquantile if nan else _onp.quantile
        masks = _onp.empty((2,) + a.shape, dtype=bool)
        for k, method in enumerate(("lower", "higher")):
            _onp.equal(
                a, quantile(a, 0.5, axis=ax, keepdims=True, method=method), out=masks[k, ...]
            )
        packed = _onp.packbits(masks, axis=None).view(Positions)
        packed.out_shape, packed.value_dtype = a.shape, a.dtype
        return packed, (meta_of(a),) + args[1:]

    return save


defvjp_direct(anp.median, _median_vjp, save=_median_saver(False))
defvjp_direct(anp.nanmedian, _nanmedian_vjp, save=_median_saver(True))


def _median_jvp(g, ans, x, axis=None, out=None, overwrite_input=False, keepdims=False):
    axes = _axes(len(shape_dtype(x)[0]), axis)
    return _sum_over(g * _median_weights(x, axes, False), axes, keepdims)


def _nanmedian_jvp(g, ans, x, axis=None, out=None, overwrite_input=False, keepdims=False):
    axes = _axes(len(shape_dtype(x)[0]), axis)
    return _sum_over(g * _median_weights(x, axes, True), axes, keepdims)


defjvp(anp.median, _median_jvp)
defjvp(anp.nanmedian, _nanmedian_jvp)


# =============================================================================
# var, std (and the nan variants): d var / dx = 2 (x - mean) / (N - ddof)
# =============================================================================
def _ddof(ddof, kw):
    correction = kw.get("correction", _NoValue)
    return ddof if correction is _NoValue else correction


def _given_mean(mean, x):
    """A mean= passed by the caller (a constant), in x's dtype."""
    return cast_like(mean, shape_dtype(x)[1])


def _centered(x, axes, kw):
    mean = kw.get("mean", _NoValue)
    mean = anp.mean(x, axis=axes, keepdims=True) if mean is _NoValue else _given_mean(mean, x)
    d = x - mean
    return anp.conj(d) if _onp.iscomplexobj(_plain(x)) else d


def _inverse_count(shape, axes, ddof):
    """1 / (N - ddof) as a Python float (weak in NumPy promotion); inf when N <= ddof, where
    NumPy's var is inf too."""
    n = _count(shape, axes) - ddof
    return 1.0 / n if n > 0 else float("inf")


def _var_vjp(g, ans, x, axis=None, dtype=None, out=None, ddof=0, keepdims=False, **kw):
    _no_where("var", kw.get("where"))
    shape, xdtype = shape_dtype(x)
    axes = _axes(len(shape), axis)
    scale = 2.0 * _inverse_count(shape, axes, _ddof(ddof, kw))
    gk = _keep(cast_like(g, _real_dtype(xdtype)), shape, axes, keepdims)
    return (gk * scale) * _centered(x, axes, kw)


def _safe_inverse(gk, ansk):
    """gk / ansk, with 0 where ansk is 0 (a constant group: the subgradient 0, like torch) or
    nan (an all-nan group of nanstd)."""
    a = _plain(ansk)
    if is_array_value(a):  # Dask, CuPy: no test of the values (Dask stays lazy)
        good = a > 0
        return anp.where(good, gk / anp.where(good, ansk, 1), 0)
    bad = ~(_onp.asarray(a) > 0)
    if not bad.any():
        return gk / ansk
    return gk * ~bad / anp.where(bad, 1, ansk)


def _std_vjp(g, ans, x, axis=None, dtype=None, out=None, ddof=0, keepdims=False, **kw):
    _no_where("std", kw.get("where"))
    shape, xdtype = shape_dtype(x)
    axes = _axes(len(shape), axis)
    scale = _inverse_count(shape, axes, _ddof(ddof, kw))
    rdtype = _real_dtype(xdtype)
    gk = _keep(cast_like(g, rdtype), shape, axes, keepdims)
    ansk = _keep(cast_like(ans, rdtype), shape, axes, keepdims)
    return (_safe_inverse(gk, ansk) * scale) * _centered(x, axes, kw)


defvjp_direct(anp.var, _var_vjp, save=(0,))
defvjp_direct(anp.std, _std_vjp, save=(0, "ans"))


def _half_dvar(g, x, axes, keepdims, kw):
    """(N - ddof) / 2 times the tangent of var: Re(sum(conj(x - mean) * g)) over the group."""
    t = _sum_over(_centered(x, axes, kw) * g, axes, keepdims)
    return anp.real(t) if _onp.iscomplexobj(_plain(x)) else t


def _var_jvp(g, ans, x, axis=None, dtype=None, out=None, ddof=0, keepdims=False, **kw):
    _no_where("var", kw.get("where"))
    shape, _ = shape_dtype(x)
    axes = _axes(len(shape), axis)
    return _half_dvar(g, x, axes, keepdims, kw) * (
        2.0 * _inverse_count(shape, axes, _ddof(ddof, kw))
    )


def _std_jvp(g, ans, x, axis=None, dtype=None, out=None, ddof=0, keepdims=False, **kw):
    _no_where("std", kw.get("where"))
    shape, xdtype = shape_dtype(x)
    axes = _axes(len(shape), axis)
    t = _half_dvar(g, x, axes, keepdims, kw)
    return _safe_inverse(t, cast_like(ans, _real_dtype(xdtype))) * _inverse_count(
        shape, axes, _ddof(ddof, kw)
    )


defjvp(anp.var, _var_jvp)
defjvp(anp.std, _std_jvp)


def _nan_centered(x, axes, kw, nans):
    mean = kw.get("mean", _NoValue)
    mean = anp.nanmean(x, axis=axes, keepdims=True) if mean is _NoValue else _given_mean(mean, x)
    d = anp.where(nans, 0, x - mean)
    return anp.conj(d) if _onp.iscomplexobj(_plain(x)) else d


def _nan_denom(nans, axes, ddof, rdtype):
    """1 / (non-nan count - ddof) per group, as plain rdtype (0 where that is not positive)."""
    n = (~nans).sum(axis=axes, keepdims=True) - ddof
    return (1.0 / _onp.maximum(n, 1) * (n > 0)).astype(rdtype)


def _nan_moment_vjp(name, plain_vjp, std):
    """The VJP of nanvar (std False) or nanstd: plain_vjp's (var's, std's) where x has no
    nan, else the non-nan entries' share."""

    def rule(g, ans, x, axis=None, dtype=None, out=None, ddof=0, keepdims=False, **kw):
        _no_where(name, kw.get("where"))
        shape, xdtype = shape_dtype(x)
        axes = _axes(len(shape), axis)
        ddof = _ddof(ddof, kw)
        nans = _onp.isnan(x)
        if none_set(nans):
            return plain_vjp(g, ans, x, axes, None, None, ddof, keepdims, **kw)
        rdtype = _real_dtype(xdtype)
        gk = _keep(cast_like(g, rdtype), shape, axes, keepdims)
        if std:
            gk = _safe_inverse(gk, _keep(cast_like(ans, rdtype), shape, axes, keepdims))
        else:
            gk = gk * 2
        return (gk * _nan_denom(nans, axes, ddof, rdtype)) * _nan_centered(x, axes, kw, nans)

    return rule


_nanvar_vjp = _nan_moment_vjp("nanvar", _var_vjp, False)
_nanstd_vjp = _nan_moment_vjp("nanstd", _std_vjp, True)


defvjp_direct(anp.nanvar, _nanvar_vjp, save=(0,))
defvjp_direct(anp.nanstd, _nanstd_vjp, save=(0, "ans"))


def _nan_half_dvar(g, x, axes, keepdims, kw, ddof, nans):
    """(the tangent of nanvar) / 2: Re(sum(conj(x - nanmean) * g)) / (count - ddof) over the
    non-nan entries of each group."""
    rdtype = _real_dtype(shape_dtype(x)[1])
    d = _nan_centered(x, axes, kw, nans) * _nan_denom(nans, axes, ddof, rdtype)
    t = _sum_over(d * g, axes, keepdims)
    return anp.real(t) if _onp.iscomplexobj(_plain(x)) else t


def _nan_moment_jvp(name, plain_jvp, std):
    """The JVP of nanvar (std False) or nanstd."""

    def jvp(g, ans, x, axis=None, dtype=None, out=None, ddof=0, keepdims=False, **kw):
        _no_where(name, kw.get("where"))
        nans = _onp.isnan(x)
        if none_set(nans):
            return plain_jvp(g, ans, x, axis, None, None, ddof, keepdims, **kw)
        axes = _axes(nans.ndim, axis)
        t = _nan_half_dvar(g, x, axes, keepdims, kw, _ddof(ddof, kw), nans)
        if not std:
            return t * 2.0
        return _safe_inverse(t, cast_like(ans, _real_dtype(shape_dtype(x)[1])))

    return jvp


_nanvar_jvp = _nan_moment_jvp("nanvar", _var_jvp, False)
_nanstd_jvp = _nan_moment_jvp("nanstd", _std_jvp, True)


defjvp(anp.nanvar, _nanvar_jvp)
defjvp(anp.nanstd, _nanstd_jvp)


# =============================================================================
# average
# =============================================================================
def _average_weights(w, shape, axes):
    """The weights as numpy.average broadcasts them against an array of `shape`."""
    wshape = shape_dtype(w)[0]
    if wshape == shape:
        return w
    order = _onp.argsort(axes)
    if (order != _onp.arange(len(axes))).any():
        w = anp.transpose(w, tuple(int(i) for i in order))
    return anp.reshape(w, _kshape(shape, tuple(a for a in range(len(shape)) if a not in axes)))


def _unaverage_weights(gw, wshape, shape, axes):
    """The transpose of _average_weights: a cotangent of `shape` reduced to the weights'."""
    if wshape == shape:
        return gw
    others = tuple(a for a in range(len(shape)) if a not in axes)
    if others:
        gw = anp.sum(gw, axis=others)
    order = _onp.argsort(axes)
    if (order != _onp.arange(len(axes))).any():
        gw = anp.transpose(gw, tuple(int(i) for i in _onp.argsort(order)))
    return gw


def _average_cotangent(g, returned):
    """(cotangent of the average, cotangent of the sum of weights) of an average's output."""
    if returned:
        return g[0], g[1]
    return g, None


def _average_vjp_a(g, ans, a, axis=None, weights=None, returned=False, keepdims=False):
    shape, adtype = shape_dtype(a)
    axes = _axes(len(shape), axis)
    g_avg, _ = _average_cotangent(g, returned)
    if g_avg is None:
        return _zeros(shape, adtype, _plain(a))
    gk = _keep(g_avg, shape, axes, keepdims)
    if weights is None:
        scale = 1.0 / (_count(shape, axes) or 1)
        return anp.broadcast_to(cast_like(cast_like(gk, adtype) * scale, adtype), shape)
    wb = _average_weights(weights, shape, axes)
    return unbroadcast(gk * (wb / anp.sum(wb, axis=axes, keepdims=True)), a)


def _average_vjp_w(g, ans, a, axis=None, weights=None, returned=False, keepdims=False):
    shape, _ = shape_dtype(a)
    wshape, wdtype = shape_dtype(weights)
    axes = _axes(len(shape), axis)
    g_avg, g_sum = _average_cotangent(g, returned)
    wb = _average_weights(weights, shape, axes)
    total = anp.sum(wb, axis=axes, keepdims=True)
    gw = 0
    if g_avg is not None:
        avg = anp.sum(a * wb, axis=axes, keepdims=True) / total
        gw = _keep(g_avg, shape, axes, keepdims) * ((a - avg) / total)
    if g_sum is not None:
        gw = gw + _keep(g_sum, shape, axes, keepdims)
    gw = anp.broadcast_to(gw, _onp.broadcast_shapes(shape, shape_dtype(wb)[0]))
    return cast_like(_unaverage_weights(gw, wshape, shape, axes), wdtype)


defvjp_direct(anp.average, _average_vjp_a, None, _average_vjp_w, save=(0, 2))


def _average_bind(a, axis=None, weights=None, returned=False, keepdims=False):
    return a, axis, weights, returned, keepdims


def _average_jvp(argnums, gs, ans, args, kwargs):
    """Tangent of average(a, axis, weights, returned, keepdims) for tangents gs of the traced
    arguments among a (0) and weights (2); a pair (average, sum of weights) when returned."""
    a, axis, weights, returned, keepdims = _average_bind(*args, **kwargs)
    shape, _ = shape_dtype(a)
    axes = _axes(len(shape), axis)
    avg = ans[0] if returned else ans
    t_avg = t_sum = None
    if weights is not None:
        wb = _average_weights(weights, shape, axes)
        total = _sum_over(wb, axes, keepdims)
    for argnum, g in zip(argnums, gs):
        if argnum == 0:
            if weights is None:
                t = anp.mean(g, axis=axes, keepdims=_kd(keepdims)) if axes else g
            else:
                t = _sum_over(g * wb, axes, keepdims) / total
        elif argnum == 2:
            gwb = _average_weights(g, shape, axes)
            t = _sum_over((a - _keep(avg, shape, axes, keepdims)) * gwb, axes, keepdims) / total
            if returned:
                t_sum = _sum_over(
                    anp.broadcast_to(gwb, _onp.broadcast_shapes(shape, shape_dtype(gwb)[0])),
                    axes,
                    keepdims,
                )
        else:
            continue
        t_avg = t if t_avg is None else t_avg + t
    if not returned:
        return t_avg
    avg_shape, avg_dtype = shape_dtype(avg)
    t_avg = cast_like(anp.broadcast_to(t_avg, avg_shape), avg_dtype)
    sum_shape, sum_dtype = shape_dtype(ans[1])
    t_sum = (
        _zeros(sum_shape, sum_dtype, _plain(ans[1]))
        if t_sum is None
        else cast_like(anp.broadcast_to(t_sum, sum_shape), sum_dtype)
    )
    return (t_avg, t_sum)


defjvp_argnums(anp.average, _average_jvp)


# =============================================================================
# quantile, percentile, nanquantile, nanpercentile
# =============================================================================
# d(virtual index)/dq = n + _Q_SLOPE[method] and the unclipped virtual index is
# q * (n + slope) + _Q_ALPHA1[method] (alpha - 1 in NumPy's notation), for the methods that
# interpolate continuously in q; the others are piecewise constant in q.
_Q_SLOPE = {
    "linear": -1.0,
    "weibull": 1.0,
    "hazen": 0.0,
    "median_unbiased": 1.0 / 3.0,
    "normal_unbiased": 0.25,
    "interpolated_inverted_cdf": 0.0,
}
_Q_ALPHA1 = {
    "linear": 0.0,
    "weibull": -1.0,
    "hazen": -0.5,
    "median_unbiased": -2.0 / 3.0,
    "normal_unbiased": -0.625,
    "interpolated_inverted_cdf": -1.0,
}


def _q_axes(nd, axis):
    if axis is None:
        return tuple(range(nd))
    if isinstance(axis, (tuple, list)):
        return tuple(sorted(_norm_axis(a, nd) for a in axis))
    return (_norm_axis(axis, nd),)


def _quantile_plan(x, q, axis, method, nan, scale):
    """The weights of a quantile on the plain values.

    The input is viewed as xm (kept axes..., n) (perm: kept axes then reduced ones). Returns
    (perm, K, red, w_lo, dW, t, slope): with Wx = w_lo + t * dW (Q, *K, n), out[q, k] =
    sum_n Wx * xm, the two order statistics' weights (ties split evenly); the fraction t
    (Q, *K) moves with q at rate `slope` (0 where clamped; None when the method is piecewise
    constant in q), so d out/dq = slope * sum_n dW * xm. A Dask x: the same, lazily."""
    if is_lazy(_plain(x)):
        return _lazy_quantile_plan(_plain(x), q, axis, method, nan, scale)
    xp = _onp.asarray(_plain(x))
    perm, K, red = _q_layout(xp.shape, axis)
    n = _size(red)
    xm = xp.transpose(perm).reshape(K + (n,))
    qf = _onp.asarray(_plain(q), dtype=_onp.float64).reshape(-1) / scale
    Q = qf.size
    isn = _onp.isnan(xm)
    if nan:
        counts = (~isn).sum(-1)
    else:
        counts = _onp.where(isn.any(-1), 0, n)  # a nan anywhere: nan out, no gradient
    lo = _onp.zeros((Q,) + K, _intp)
    hi = _onp.zeros((Q,) + K, _intp)
    t = _onp.zeros((Q,) + K)
    slope = _onp.zeros((Q,) + K)
    has_slope = method in _Q_SLOPE
    for c in _onp.unique(counts):
        c = int(c)
        if c == 0:
            continue
        v = _onp.quantile(_onp.arange(c, dtype=_onp.float64), qf, method=method)
        lc = _onp.clip(_onp.floor(v).astype(_intp), 0, c - 1)
        tc = v - lc
        hc = _onp.minimum(lc + 1, c - 1)
        sel = (slice(None),) + (counts == c,) if K else (slice(None),)
        if K:
            k = int((counts == c).sum())
            lo[sel] = _onp.broadcast_to(lc[:, None], (Q, k))
            hi[sel] = _onp.broadcast_to(hc[:, None], (Q, k))
            t[sel] = _onp.broadcast_to(tc[:, None], (Q, k))
        else:
            lo[...], hi[...], t[...] = lc, hc, tc
        if has_slope:
            raw = qf * (c + _Q_SLOPE[method]) + _Q_ALPHA1[method]
            sc = _onp.where((raw > 0) & (raw < c - 1), (c + _Q_SLOPE[method]) / scale, 0.0)
            if K:
                slope[sel] = _onp.broadcast_to(sc[:, None], (Q, int((counts == c).sum())))
            else:
                slope[...] = sc
    s = _onp.sort(xm, axis=-1)
    sb = _onp.broadcast_to(s, (Q,) + s.shape)
    s_lo = _onp.take_along_axis(sb, lo[..., None], -1)
    s_hi = _onp.take_along_axis(sb, hi[..., None], -1)
    valid = (counts > 0)[None, ..., None]

    def split(eq):
        eq = eq & valid
        return eq / _onp.maximum(eq.sum(-1, keepdims=True), 1)

    w_lo = split(xm[None] == s_lo)
    w_hi = split(xm[None] == s_hi)
    wdt = _float_dtype(xp.dtype)
    return (
        perm,
        K,
        red,
        w_lo.astype(wdt),
        (w_hi - w_lo).astype(wdt),
        t,
        (slope if has_slope and slope.any() else None),
    )


def _q_layout(shape, axis):
    """(perm, K, red) of a quantile over `axis` of an array of `shape`: the transpose that moves
    the reduced axes last, the kept shape and the reduced shape."""
    axes = _q_axes(len(shape), axis)
    kept = [i for i in range(len(shape)) if i not in axes]
    return tuple(kept) + axes, tuple(shape[i] for i in kept), tuple(shape[i] for i in axes)


def _lazy_quantile_plan(x, q, axis, method, nan, scale):
    """_quantile_plan of the Dask array x: the plain plan of each block of whole groups of xm,
    its arrays packed along the last axis (w_lo, dW: n each; t, slope: 1 each), as one lazy
    array sliced apart."""
    perm, K, red = _q_layout(x.shape, axis)
    n = _size(red)
    xm = _onp.reshape(_onp.transpose(x, perm), K + (n,))
    qp = _plain(q)
    Q = _onp.size(qp)

    def block(b):
        _, _, _, w_lo, dW, t, slope = _quantile_plan(b, qp, -1, method, nan, scale)
        if slope is None:
            slope = _onp.zeros_like(t)
        return _onp.concatenate(
            [w_lo, dW, t[..., None], slope[..., None]], axis=-1, dtype=_onp.float64
        )

    packed = by_groups(block, xm, (len(K),), _onp.float64, lead=(Q,), sizes={len(K): 2 * n + 2})
    wdt = _float_dtype(x.dtype)
    return (
        perm,
        K,
        red,
        packed[..., :n].astype(wdt),
        packed[..., n : 2 * n].astype(wdt),
        packed[..., 2 * n],
        packed[..., 2 * n + 1] if method in _Q_SLOPE else None,
    )


def _q_moved(x, perm, K):
    """x traced, viewed as (kept..., n)."""
    xt = anp.transpose(x, perm) if perm != tuple(range(len(perm))) else x
    return anp.reshape(xt, K + (-1,))


def _quantile_rules(prim, nan, scale):
    bind = _binder(prim.fun)

    def plan(args, kwargs):
        kw = bind(args, kwargs)
        if kw.get("weights") is not None:
            raise NotImplementedError(f"{prim.name}: the gradient with weights= is not supported")
        method = kw.get("method", "linear")
        if kw.get("interpolation") is not None:
            method = kw["interpolation"]
        return kw, _quantile_plan(kw["a"], kw["q"], kw["axis"], method, nan, scale)

    def weights(q, K, w_lo, dW, t, slope):
        """Wx = w_lo + t * dW, with t traced in q (at higher order) through its slope."""
        Q = t.shape[0]
        if slope is not None and type(q) is Box:
            qb = anp.reshape(q, (Q,) + (1,) * len(K))
            qv = _onp.asarray(_plain(q), dtype=_onp.float64).reshape((Q,) + (1,) * len(K))
            tt = t + (qb - qv) * slope
            return w_lo + anp.expand_dims(tt, -1) * dW
        return w_lo + t[..., None].astype(w_lo.dtype) * dW

    def vjp_a(g, ans, a, *args, **kwargs):
        dtype = _dtype(a)
        args = (a,) + args
        kw, (perm, K, red, w_lo, dW, t, slope) = plan(args, kwargs)
        Wx = weights(kw["q"], K, w_lo, dW, t, slope)
        Q = t.shape[0]
        gm = anp.reshape(cast_like(g, dtype), (Q,) + K + (1,))
        gx = anp.sum(gm * Wx, axis=0)
        gx = anp.reshape(gx, K + red)
        inv = tuple(int(i) for i in _onp.argsort(perm))
        if inv != tuple(range(len(inv))):
            gx = anp.transpose(gx, inv)
        return cast_like(gx, dtype)

    def dout_dq(a, K, perm, dW, slope):
        xm = _q_moved(a, perm, K)
        nans = _onp.isnan(xm)
        if not none_set(nans):  # weight 0 there, but 0 * nan is nan
            xm = anp.where(nans, 0.0, xm)
        return slope * anp.sum(dW * xm, axis=-1)  # (Q, *K)

    def vjp_q(g, ans, a, q, *args, **kwargs):
        qshape, qdtype = _shape(q), _dtype(q)
        args = (a, q) + args
        kw, (perm, K, red, w_lo, dW, t, slope) = plan(args, kwargs)
        if slope is None:
            return None
        Q = t.shape[0]
        gq = anp.reshape(g, (Q,) + K) * dout_dq(a, K, perm, dW, slope)
        if K:
            gq = anp.sum(gq, axis=tuple(range(1, 1 + len(K))))
        return cast_like(anp.reshape(gq, qshape), qdtype)

    def jvp_a(g, ans, *args, **kwargs):
        kw, (perm, K, red, w_lo, dW, t, slope) = plan(args, kwargs)
        Wx = weights(kw["q"], K, w_lo, dW, t, slope)
        out = anp.sum(Wx * _q_moved(g, perm, K), axis=-1)
        return anp.reshape(out, _shape(ans))

    def jvp_q(g, ans, *args, **kwargs):
        kw, (perm, K, red, w_lo, dW, t, slope) = plan(args, kwargs)
        if slope is None:
            return None
        Q = t.shape[0]
        dd = dout_dq(kw["a"], K, perm, dW, slope)
        return anp.reshape(anp.reshape(g, (Q,) + (1,) * len(K)) * dd, _shape(ans))

    defvjp_direct(prim, vjp_a, vjp_q, save=(0, 1))
    defjvp(prim, jvp_a, jvp_q)


_quantile_rules(anp.quantile, False, 1.0)
_quantile_rules(anp.percentile, False, 100.0)
_quantile_rules(anp.nanquantile, True, 1.0)
_quantile_rules(anp.nanpercentile, True, 100.0)


# =============================================================================
# cov, corrcoef
# =============================================================================
_cov_bind = _binder(_onp.cov)
_corrcoef_bind = _binder(_onp.corrcoef)


def _cov_rows(a, rowvar, first, dtype):
    """a as the rows (variables) np.cov makes of it, traced, and the inverse map of a
    cotangent of those rows back to a's shape."""
    shape = _shape(a)
    if _dtype(a) != dtype:
        a = anp.astype(a, dtype)
    if len(shape) == 0:
        return anp.reshape(a, (1, 1)), lambda c: anp.reshape(c, ())
    if len(shape) == 1:
        return anp.reshape(a, (1, shape[0])), lambda c: anp.reshape(c, shape)
    transpose = (not rowvar) and (first or shape[0] != 1)
    if transpose:
        return anp.transpose(a), lambda c: anp.transpose(c)
    return a, lambda c: c


def _float_weights(w):
    """cov's fweights or aweights (constants) as float64, in their own array library."""
    w = _plain(w)
    return w.astype(_onp.float64) if is_array_value(w) else _onp.asarray(w, dtype=float)


class _CovSetup:
    """What cov computes, traced in m and y: the centred rows Xc, the weights w (plain or
    None), the normalisation fact, and the row blocks of m and y."""

    def __init__(self, m, y, rowvar, bias, ddof, fweights, aweights, dtype):
        if dtype is None:
            dtype = (
                _onp.result_type(_dtype(m), _onp.float64)
                if y is None
                else _onp.result_type(_dtype(m), _dtype(y), _onp.float64)
            )
        self.dtype = _onp.dtype(dtype)
        self._rowvar = rowvar
        Xm, self.back_m = _cov_rows(m, rowvar, True, self.dtype)
        self.nm = _shape(Xm)[0]
        if y is not None:
            Xy, self.back_y = _cov_rows(y, rowvar, False, self.dtype)
            X = anp.concatenate([Xm, Xy], axis=0)
        else:
            X, self.back_y = Xm, None
        self.d, N = _shape(X)
        if ddof is None:
            ddof = 0 if bias else 1
        w = None
        if fweights is not None:
            w = _float_weights(fweights)
        if aweights is not None:
            aw = _float_weights(aweights)
            w = aw if w is None else w * aw
        if w is None:
            fact = N - ddof
            avg = anp.mean(X, axis=1, keepdims=True)
        else:
            w_sum = w.sum()
            if ddof == 0:
                fact = w_sum
            elif aweights is None:
                fact = w_sum - ddof
            else:
                fact = w_sum - ddof * (w * aw).sum() / w_sum
            avg = anp.sum(X * w, axis=1, keepdims=True) / w_sum
        # numpy.cov's normalisation, 0 when not positive (a Dask fact stays lazy)
        self.fact = _onp.maximum(fact, 0.0) if is_array_value(fact) else max(float(fact), 0.0)
        self.w = w
        self.Xc = X - avg
        self.complex = self.dtype.kind == "c"

    def weighted(self, Z):
        return Z if self.w is None else Z * self.w

    def H(self, Z):
        Z = anp.transpose(Z)
        return anp.conjugate(Z) if self.complex else Z

    def C(self):
        return anp.matmul(self.Xc, self.H(self.weighted(self.Xc))) / self.fact

    def grad_rows(self, G):
        """Cotangent of the rows X for a cotangent G (d, d) of C."""
        Xc = anp.conjugate(self.Xc) if self.complex else self.Xc
        return anp.matmul(G + self.H(G), self.weighted(Xc)) / self.fact

    def tangent_C(self, dX):
        dXc = dX - (
            anp.mean(dX, axis=1, keepdims=True)
            if self.w is None
            else anp.sum(dX * self.w, axis=1, keepdims=True) / self.w.sum()
        )
        A = anp.matmul(dXc, self.H(self.weighted(self.Xc)))
        B = anp.matmul(self.Xc, self.H(self.weighted(dXc)))
        return (A + B) / self.fact

    def split(self, cX, argnums, m, y):
        out = []
        for k in argnums:
            if k == 0:
                c = self.back_m(anp.getitem(cX, slice(0, self.nm)))
                out.append(cast_like(c, _dtype(m)))
            elif k == 1 and self.back_y is not None:
                c = self.back_y(anp.getitem(cX, slice(self.nm, None)))
                out.append(cast_like(c, _dtype(y)))
            else:
                raise NotImplementedError("gradcy.numpy.cov: only m and y are differentiable")
        return tuple(out)

    def rows_tangent(self, argnum, g, m, y):
        """The tangent of the rows X for the tangent g of argument argnum (0: m, 1: y)."""
        if argnum == 0:
            Xm, _ = _cov_rows(g, self._rowvar, True, self.dtype)
            if self.back_y is None:
                return Xm
            Xy0 = _zeros((self.d - self.nm,) + _shape(Xm)[1:], self.dtype, _plain(Xm))
            return anp.concatenate([Xm, Xy0], axis=0)
        Xy, _ = _cov_rows(g, self._rowvar, False, self.dtype)
        Xm0 = _zeros((self.nm,) + _shape(Xy)[1:], self.dtype, _plain(Xy))
        return anp.concatenate([Xm0, Xy], axis=0)


def _cov_setup(args, kwargs):
    kw = _cov_bind(args, kwargs)
    s = _CovSetup(
        kw["m"],
        kw["y"],
        kw["rowvar"],
        kw["bias"],
        kw["ddof"],
        kw["fweights"],
        kw["aweights"],
        kw["dtype"],
    )
    return s, kw


def _cov_vjp(argnums, g, g_owned, ans, args, kwargs):
    s, kw = _cov_setup(args, kwargs)
    G = anp.reshape(g, (s.d, s.d))
    return s.split(s.grad_rows(G), argnums, kw["m"], kw["y"])


def _cov_jvp(argnums, gs, ans, args, kwargs):
    s, kw = _cov_setup(args, kwargs)
    total = None
    for k, g in zip(argnums, gs):
        if k > 1:
            raise NotImplementedError("gradcy.numpy.cov: only m and y are differentiable")
        dC = s.tangent_C(s.rows_tangent(k, g, kw["m"], kw["y"]))
        total = dC if total is None else total + dC
    return anp.reshape(total, _shape(ans))


defvjp_argnums_direct(anp.cov, _cov_vjp, save=(0, 1, 5, 6))
defjvp_argnums(anp.cov, _cov_jvp)


def _corr_setup(args, kwargs):
    kw = _corrcoef_bind(args, kwargs)
    s = _CovSetup(kw["x"], kw["y"], kw["rowvar"], False, None, None, None, kw["dtype"])
    if s.complex:
        raise NotImplementedError("gradcy.numpy.corrcoef: no gradient for complex inputs")
    C = s.C()
    d = anp.diagonal(C)
    sd = anp.sqrt(d)
    R = C / (anp.expand_dims(sd, 1) * anp.expand_dims(sd, 0))
    return s, kw, C, d, sd, R


def _corrcoef_vjp(argnums, g, g_owned, ans, args, kwargs):
    if not _shape(ans):
        return tuple(None for _ in argnums)  # a single variable: R = 1
    s, kw, C, d, sd, R = _corr_setup(args, kwargs)
    GR = anp.reshape(g, (s.d, s.d))
    GC = GR / (anp.expand_dims(sd, 1) * anp.expand_dims(sd, 0))
    GRR = GR * R
    diag = -(anp.sum(GRR, axis=1) + anp.sum(GRR, axis=0)) / (2.0 * d)
    GC = GC + anp.diag(diag)
    return s.split(s.grad_rows(GC), argnums, kw["x"], kw["y"])


def _corrcoef_jvp(argnums, gs, ans, args, kwargs):
    if not _shape(ans):
        return _zeros((), ans.dtype, ans)
    s, kw, C, d, sd, R = _corr_setup(args, kwargs)
    total = None
    for k, g in zip(argnums, gs):
        dC = s.tangent_C(s.rows_tangent(k, g, kw["x"], kw["y"]))
        r = anp.diagonal(dC) / (2.0 * d)
        dR = dC / (anp.expand_dims(sd, 1) * anp.expand_dims(sd, 0)) - R * (
            anp.expand_dims(r, 1) + anp.expand_dims(r, 0)
        )
        total = dR if total is None else total + dR
    return total


defvjp_argnums_direct(anp.corrcoef, _corrcoef_vjp, save=(0, 1))
defjvp_argnums(anp.corrcoef, _corrcoef_jvp)


# =============================================================================
# Histograms: the counts are integer constants; the bin edges computed from the data are
# linspace(min, max) of it (traced), edges given as arrays pass through; density divides by
# the traced bin widths. Traced weights have no rule here: bincount has one.
# =============================================================================
def _traced_edges(column, edges, bins, rng):
    """numpy's bin edges `edges` (plain) as a traced function of the data `column`, of `bins`
    given as an array, or of a traced `rng`; the plain edges when none of them is traced."""
    if _onp.ndim(_plain(bins)) == 1:
        return bins if type(bins) is Box else edges
    if rng is not None:
        lo, hi = rng
    elif type(column) is Box and _onp.size(_plain(column)):
        lo, hi = anp.min(column), anp.max(column)
    else:
        return edges
    if type(lo) is not Box and type(hi) is not Box:
        return edges
    if _plain(lo) == _plain(hi):
        lo, hi = lo - 0.5, hi + 0.5
    return anp.linspace(lo, hi, len(edges), dtype=edges.dtype)


def _no_traced_weights(name, weights):
    if type(weights) is Box:
        raise NotImplementedError(
            f"gradcy.numpy.{name}: no gradient with respect to weights; weighted counts are "
            f"gradcy.numpy.bincount(np.digitize(a, edges) - 1, weights), which has one"
        )


def histogram(a, bins=10, range=None, density=None, weights=None):
    """numpy.histogram; the bin edges are traced when they depend on traced values."""
    if not _contains_box([a, bins, range, weights]):
        return _onp.histogram(a, bins, range, density, weights)
    _no_traced_weights("histogram", weights)
    plain = [_plain(a), _plain(bins), _plain_tree(range), None, _plain(weights)]
    n, edges = _onp.histogram(*plain)
    edges_t = _traced_edges(anp.ravel(a) if type(a) is Box else a, edges, bins, range)
    if density and type(edges_t) is Box:
        n = n / anp.diff(edges_t) / n.sum()
    elif density:
        n = _onp.histogram(*plain[:3], True, plain[4])[0]
    return n, edges_t


def histogram_bin_edges(a, bins=10, range=None, weights=None):
    """numpy.histogram_bin_edges, traced like histogram's edges."""
    return histogram(a, bins, range, None, weights)[1]


def histogramdd(sample, bins=10, range=None, density=None, weights=None):
    """numpy.histogramdd; each dimension's bin edges are traced like histogram's."""
    if not _contains_box([sample, bins, range, weights]):
        return _onp.histogramdd(sample, bins, range, density, weights)
    _no_traced_weights("histogramdd", weights)
    plain = [_plain_tree(sample), _plain_tree(bins), _plain_tree(range), None, _plain(weights)]
    hist, edges = _onp.histogramdd(*plain)
    d = len(edges)
    if type(sample) is Box:
        columns = (
            [anp.getitem(sample, (slice(None), i)) for i in _builtins_range(d)]
            if sample.ndim == 2
            else [sample]
        )
    else:
        columns = list(sample) if isinstance(sample, (list, tuple)) else [None] * d
    try:  # numpy's reading: a sequence gives one entry per dimension
        per_dim_bins = list(bins)
    except TypeError:
        per_dim_bins = [bins] * d
    ranges = range if range is not None else [None] * d
    edges_t = [
        _traced_edges(c, e, b, r) for c, e, b, r in zip(columns, edges, per_dim_bins, ranges)
    ]
    if density and any(type(e) is Box for e in edges_t):
        total = hist.sum()
        for i, e in enumerate(edges_t):
            shape = [1] * d
            shape[i] = len(_plain(e)) - 1
            hist = hist / anp.reshape(anp.diff(e), tuple(shape))
        hist = hist / total
    elif density:
        hist = _onp.histogramdd(*plain[:3], True, plain[4])[0]
    return hist, edges_t


def histogram2d(x, y, bins=10, range=None, density=None, weights=None):
    """numpy.histogram2d, traced like histogramdd."""
    if not _contains_box([x, y, bins, range, weights]):
        return _onp.histogram2d(x, y, bins, range, density, weights)
    try:
        nb = len(bins)
    except TypeError:
        nb = 1
    if nb != 1 and nb != 2:
        bins = [bins, bins]  # numpy's reading: one array of edges for both dimensions
    hist, edges = histogramdd([x, y], bins, range, density, weights)
    return hist, edges[0], edges[1]


_builtins_range = range


register_numpy_override(_onp.histogram, histogram)
register_numpy_override(_onp.histogram_bin_edges, histogram_bin_edges)
register_numpy_override(_onp.histogramdd, histogramdd)
register_numpy_override(_onp.histogram2d, histogram2d)


# bincount(x, weights): a scatter-add of the weights (take is its transpose)
def _bincount_weights_vjp(g, ans, x, weights=None, minlength=0):
    dtype = _dtype(weights)
    return cast_like(anp.take(g, values_of(x)), dtype)


defvjp_direct(anp.bincount, None, _bincount_weights_vjp, save=(0,))
defjvp(
    anp.bincount,
    None,
    lambda g, ans, x, weights=None, minlength=0: anp.bincount(values_of(x), g, minlength),
)
