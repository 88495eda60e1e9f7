"""VJPs of reductions: sum mean prod max min var std ptp average median, their nan* variants,
and the cumulative ops (cumsum cumprod nancumsum nancumprod).

Conventions of this table:
- the makers take NumPy's positional order (sum(a, axis, dtype, out, keepdims, ...)), since a
  call such as sum(x, 0, None, None, True) reaches them positionally;
- the small reduced cotangent is cast to the input's dtype first and only then expanded, so the
  full-size work is done once, in the input's dtype;
- which entries attain an extremum (ties, zeros, nans) is decided on the plain values: those
  masks are constants for differentiation, and the arithmetic on traced values is written with
  gradcy.numpy so the rules differentiate again.
"""
import operator

import numpy as _onp

from ..extend import ArrayMeta, Box, defvjp, primitive  # noqa: F401
from . import numpy_wrapper as anp
from .vjp_util import cast_like, unbroadcast, expand_reduced, shape_dtype  # noqa: F401

_NoValue = _onp._NoValue


# =============================================================================
# Helpers (plain Python on shapes, plain NumPy on masks)
# =============================================================================
def _plain(v):
    """The plain value under any number of traced layers."""
    while type(v) is Box:
        v = v._value
    return v


def _axes(ndim, axis):
    """The reduced axes as a tuple of non-negative ints (None: all of them)."""
    if axis is None:
        return tuple(range(ndim))
    if not ndim:                # NumPy lets 0-d arrays reduce over axis 0 / -1 too
        return ()
    if isinstance(axis, (tuple, list)):
        return tuple(operator.index(a) % ndim for a in axis)
    return (operator.index(axis) % ndim,)


def _kshape(shape, axes):
    """The shape of the reduction with keepdims=True."""
    return tuple(1 if i in axes else n for i, n in enumerate(shape))


def _count(shape, axes):
    n = 1
    for a in axes:
        n *= shape[a]
    return n


def _real_dtype(dtype):
    """The dtype a real cotangent (of var, std, abs-like outputs) should have for this input."""
    return _onp.finfo(dtype).dtype if dtype.kind == "c" else dtype


def _weight_dtype(dtype):
    return dtype if dtype.kind in "fc" else _onp.dtype(_onp.float64)


def _keep(g, shape, axes, keepdims):
    """The cotangent of a reduction reshaped to its keepdims shape (broadcastable to `shape`).
    A full reduction without keepdims is left as it is: a scalar broadcasts already."""
    if (keepdims and keepdims is not _NoValue) or len(axes) == len(shape) or not axes:
        return g
    return anp.reshape(g, _kshape(shape, axes))


def _no_where(name, where):
    if where is not None and where is not _NoValue:
        raise NotImplementedError(f"gradcy.numpy.{name}: the gradient with where= is not "
                                  f"supported; mask the input instead (gradcy.numpy.where)")


def _weights(mask, axes, dtype):
    """mask / (number of True per reduced group), as plain `dtype`; 0 for groups without any."""
    w = mask.astype(_weight_dtype(dtype))
    count = mask.sum(axis=axes, keepdims=True)
    if (count != 1).any():
        w /= _onp.maximum(count, 1)
    return w


def _chooser_weights(x, ans, axes, keepdims, where=None, nan_picks=True):
    """Where the extremum `ans` is attained in x, ties split evenly (plain array)."""
    xp = _onp.asarray(_plain(x))
    ap = _onp.asarray(_plain(ans))
    if (not keepdims or keepdims is _NoValue) and axes:
        ap = ap.reshape(_kshape(xp.shape, axes))
    mask = xp == ap
    if where is not None and where is not _NoValue:
        mask &= where
    if nan_picks and ap.dtype.kind in "fc":
        nans = _onp.isnan(ap)
        if nans.any():  # a nan maximum: the gradient goes to the nan entries
            mask |= _onp.isnan(xp) & nans
    return _weights(mask, axes, xp.dtype)


def _reverse(axis):
    return (slice(None),) * axis + (slice(None, None, -1),)


def _revcumsum(g, axis):
    """Sum of g over positions >= i along axis (the transpose of cumsum)."""
    rev = _reverse(axis)
    return anp.cumsum(g[rev], axis=axis)[rev]


# =============================================================================
# sum, mean
# =============================================================================
def _sum_vjp(ans, x, axis=None, dtype=None, out=None, keepdims=False, initial=None,
             where=None):
    shape, xdtype = shape_dtype(x)
    axes = _axes(len(shape), axis)

    def vjp(g):
        g = anp.broadcast_to(_keep(cast_like(g, xdtype), shape, axes, keepdims), shape)
        if where is not None and where is not _NoValue:
            g = g * where
        return g
    return vjp


defvjp(anp.sum, _sum_vjp, save=())


def _mean_vjp(ans, x, axis=None, dtype=None, out=None, keepdims=False, where=None):
    shape, xdtype = shape_dtype(x)
    axes = _axes(len(shape), axis)
    if where is not None and where is not _NoValue:
        mask = _onp.broadcast_to(where, shape)
        w = _weights(mask, axes, xdtype)
        return lambda g: _keep(cast_like(g, xdtype), shape, axes, keepdims) * w
    scale = 1.0 / (_count(shape, axes) or 1)     # a Python float: 1/n even in float16
    return lambda g: anp.broadcast_to(
        _keep(cast_like(g, xdtype) * scale, shape, axes, keepdims), shape)


defvjp(anp.mean, _mean_vjp, save=())


def _nansum_vjp(ans, x, axis=None, dtype=None, out=None, keepdims=False, initial=None,
                where=None):
    shape, xdtype = shape_dtype(x)
    axes = _axes(len(shape), axis)
    if where is not None and where is not _NoValue:
        where = _onp.broadcast_to(where, shape)

    def vjp(g):
        g = _keep(cast_like(g, xdtype), shape, axes, keepdims)
        keep = ~_onp.isnan(_plain(x))
        if where is not None and where is not _NoValue:
            keep &= where
        return g * keep
    return vjp


defvjp(anp.nansum, _nansum_vjp, save=(0,))


def _nanmean_vjp(ans, x, axis=None, dtype=None, out=None, keepdims=False, where=None):
    shape, xdtype = shape_dtype(x)
    axes = _axes(len(shape), axis)

    def vjp(g):
        keep = ~_onp.isnan(_plain(x))
        if where is not None and where is not _NoValue:
            keep &= where
        return _keep(cast_like(g, xdtype), shape, axes, keepdims) * _weights(keep, axes, xdtype)
    return vjp


defvjp(anp.nanmean, _nanmean_vjp, save=(0,))


# =============================================================================
# prod
# =============================================================================
def _prod_grad(gk, ansk, x, axes, initial):
    """The cotangent of x for prod(x) over `axes`, given the keepdims-shaped cotangent gk and
    output ansk: g * (product of the other entries of the group).

    Without zeros that is g * ans / x. A zero entry gets the product of the others (nonzero
    only when it is the group's single zero); the rule stays exact to second order with up to
    two zeros per group (one zero: the others' product, which does not depend on the zero
    entry; two zeros: the other zero's value times the nonzero product)."""
    xp = _onp.asarray(_plain(x))
    z = xp == 0
    if not z.any():
        return (gk * ansk) / x
    nz = z.sum(axis=axes, keepdims=True)
    nonzero = ~z
    x1 = x * nonzero + z                      # x with every zero replaced by a constant 1
    others = anp.prod(x1, axis=axes, keepdims=True)
    if initial is not None and initial is not _NoValue:
        others = others * initial
    zx = x * z                                # the zero entries, as functions of x
    other_zero = anp.sum(zx, axis=axes, keepdims=True) - zx
    at_zero = z * (others * ((nz == 1) + (nz == 2) * other_zero))
    return gk * ((ansk / x1) * nonzero + at_zero)


def _prod_vjp(ans, x, axis=None, dtype=None, out=None, keepdims=False, initial=None,
              where=None):
    _no_where("prod", where)
    shape, xdtype = shape_dtype(x)
    axes = _axes(len(shape), axis)

    def vjp(g):
        gk = _keep(cast_like(g, xdtype), shape, axes, keepdims)
        ansk = _keep(cast_like(ans, xdtype), shape, axes, keepdims)
        return _prod_grad(gk, ansk, x, axes, initial)
    return vjp


defvjp(anp.prod, _prod_vjp, save=(0, "ans"))


def _nanprod_vjp(ans, x, axis=None, dtype=None, out=None, keepdims=False, initial=None,
                 where=None):
    _no_where("nanprod", where)
    shape, xdtype = shape_dtype(x)
    axes = _axes(len(shape), axis)

    def vjp(g):
        gk = _keep(cast_like(g, xdtype), shape, axes, keepdims)
        ansk = _keep(cast_like(ans, xdtype), shape, axes, keepdims)
        nans = _onp.isnan(_plain(x))
        if not nans.any():
            return _prod_grad(gk, ansk, x, axes, initial)
        return _prod_grad(gk, ansk, anp.where(nans, 1, x), axes, initial) * ~nans
    return vjp


defvjp(anp.nanprod, _nanprod_vjp, save=(0, "ans"))


# =============================================================================
# max, min, ptp, median: the gradient goes to the entries that attain the value
# =============================================================================
def _max_vjp(ans, x, axis=None, out=None, keepdims=False, initial=None, where=None):
    shape, xdtype = shape_dtype(x)
    axes = _axes(len(shape), axis)
    return lambda g: (_keep(cast_like(g, xdtype), shape, axes, keepdims)
                      * _chooser_weights(x, ans, axes, keepdims, where))


def _nanmax_vjp(ans, x, axis=None, out=None, keepdims=False, initial=None, where=None):
    shape, xdtype = shape_dtype(x)
    axes = _axes(len(shape), axis)
    return lambda g: (_keep(cast_like(g, xdtype), shape, axes, keepdims)
                      * _chooser_weights(x, ans, axes, keepdims, where, nan_picks=False))


defvjp(anp.max, _max_vjp, save=(0, "ans"))
defvjp(anp.min, _max_vjp, save=(0, "ans"))
defvjp(anp.nanmax, _nanmax_vjp, save=(0, "ans"))
defvjp(anp.nanmin, _nanmax_vjp, save=(0, "ans"))


def _ptp_vjp(ans, x, axis=None, out=None, keepdims=False):
    shape, xdtype = shape_dtype(x)
    axes = _axes(len(shape), axis)

    def vjp(g):
        xp = _onp.asarray(_plain(x))
        hi = xp.max(axis=axes, keepdims=True)
        lo = xp.min(axis=axes, keepdims=True)
        w = _weights(xp == hi, axes, xdtype) - _weights(xp == lo, axes, xdtype)
        return _keep(cast_like(g, xdtype), shape, axes, keepdims) * w
    return vjp


defvjp(anp.ptp, _ptp_vjp, save=(0,))


def _median_weights(x, axes, nan):
    """Half of the weight to each of the two middle order statistics (all of it to the middle
    one for an odd count), split evenly among the entries equal to it."""
    xp = _onp.asarray(_plain(x))
    quantile = _onp.nanquantile if nan else _onp.quantile
    ax = None if len(axes) == xp.ndim else axes
    lo = quantile(xp, 0.5, axis=ax, keepdims=True, method="lower")
    hi = quantile(xp, 0.5, axis=ax, keepdims=True, method="higher")
    w_lo = _weights(xp == lo, axes, xp.dtype)
    if _onp.array_equal(lo, hi, equal_nan=True):
        return w_lo
    return (w_lo + _weights(xp == hi, axes, xp.dtype)) * w_lo.dtype.type(0.5)


def _median_vjp(ans, x, axis=None, out=None, overwrite_input=False, keepdims=False):
    shape, xdtype = shape_dtype(x)
    axes = _axes(len(shape), axis)
    return lambda g: (_keep(cast_like(g, xdtype), shape, axes, keepdims)
                      * _median_weights(x, axes, False))


def _nanmedian_vjp(ans, x, axis=None, out=None, overwrite_input=False, keepdims=False):
    shape, xdtype = shape_dtype(x)
    axes = _axes(len(shape), axis)
    return lambda g: (_keep(cast_like(g, xdtype), shape, axes, keepdims)
                      * _median_weights(x, axes, True))


defvjp(anp.median, _median_vjp, save=(0,))
defvjp(anp.nanmedian, _nanmedian_vjp, save=(0,))


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


def _var_vjp(ans, x, axis=None, dtype=None, out=None, ddof=0, keepdims=False, **kw):
    _no_where("var", kw.get("where"))
    shape, xdtype = shape_dtype(x)
    axes = _axes(len(shape), axis)
    scale = 2.0 * _inverse_count(shape, axes, _ddof(ddof, kw))

    def vjp(g):
        gk = _keep(cast_like(g, _real_dtype(xdtype)), shape, axes, keepdims)
        return (gk * scale) * _centered(x, axes, kw)
    return vjp


def _safe_inverse(gk, ansk):
    """gk / ansk, with 0 where ansk is 0 (a constant group: the subgradient 0, like torch) or
    nan (an all-nan group of nanstd)."""
    bad = ~(_onp.asarray(_plain(ansk)) > 0)
    if not bad.any():
        return gk / ansk
    return gk * ~bad / anp.where(bad, 1, ansk)


def _std_vjp(ans, x, axis=None, dtype=None, out=None, ddof=0, keepdims=False, **kw):
    _no_where("std", kw.get("where"))
    shape, xdtype = shape_dtype(x)
    axes = _axes(len(shape), axis)
    scale = _inverse_count(shape, axes, _ddof(ddof, kw))

    def vjp(g):
        rdtype = _real_dtype(xdtype)
        gk = _keep(cast_like(g, rdtype), shape, axes, keepdims)
        ansk = _keep(cast_like(ans, rdtype), shape, axes, keepdims)
        return (_safe_inverse(gk, ansk) * scale) * _centered(x, axes, kw)
    return vjp


defvjp(anp.var, _var_vjp, save=(0,))
defvjp(anp.std, _std_vjp, save=(0, "ans"))


def _nan_centered(x, axes, kw, nans):
    mean = kw.get("mean", _NoValue)
    mean = anp.nanmean(x, axis=axes, keepdims=True) if mean is _NoValue else _given_mean(mean, x)
    d = anp.where(nans, 0, x - mean)
    return anp.conj(d) if _onp.iscomplexobj(_plain(x)) else d


def _nan_denom(nans, axes, ddof, rdtype):
    """1 / (non-nan count - ddof) per group, as plain rdtype (0 where that is not positive)."""
    n = (~nans).sum(axis=axes, keepdims=True) - ddof
    return (1.0 / _onp.maximum(n, 1) * (n > 0)).astype(rdtype)


def _nanvar_vjp(ans, x, axis=None, dtype=None, out=None, ddof=0, keepdims=False, **kw):
    _no_where("nanvar", kw.get("where"))
    shape, xdtype = shape_dtype(x)
    axes = _axes(len(shape), axis)
    ddof = _ddof(ddof, kw)

    def vjp(g):
        nans = _onp.isnan(_plain(x))
        if not nans.any():
            return _var_vjp(ans, x, axes, None, None, ddof, keepdims)(g)
        rdtype = _real_dtype(xdtype)
        gk = _keep(cast_like(g, rdtype), shape, axes, keepdims)
        return (gk * (2 * _nan_denom(nans, axes, ddof, rdtype))) * _nan_centered(
            x, axes, kw, nans)
    return vjp


def _nanstd_vjp(ans, x, axis=None, dtype=None, out=None, ddof=0, keepdims=False, **kw):
    _no_where("nanstd", kw.get("where"))
    shape, xdtype = shape_dtype(x)
    axes = _axes(len(shape), axis)
    ddof = _ddof(ddof, kw)

    def vjp(g):
        nans = _onp.isnan(_plain(x))
        if not nans.any():
            return _std_vjp(ans, x, axes, None, None, ddof, keepdims)(g)
        rdtype = _real_dtype(xdtype)
        gk = _keep(cast_like(g, rdtype), shape, axes, keepdims)
        ansk = _keep(cast_like(ans, rdtype), shape, axes, keepdims)
        return (_safe_inverse(gk, ansk) * _nan_denom(nans, axes, ddof, rdtype)) * _nan_centered(
            x, axes, kw, nans)
    return vjp


defvjp(anp.nanvar, _nanvar_vjp, save=(0,))
defvjp(anp.nanstd, _nanstd_vjp, save=(0, "ans"))


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


def _average_vjp_a(ans, a, axis=None, weights=None, returned=False, keepdims=False):
    shape, adtype = shape_dtype(a)
    axes = _axes(len(shape), axis)

    def vjp(g):
        g_avg, _ = _average_cotangent(g, returned)
        if g_avg is None:
            return _onp.zeros(shape, adtype)
        gk = _keep(g_avg, shape, axes, keepdims)
        if weights is None:
            scale = 1.0 / (_count(shape, axes) or 1)
            return anp.broadcast_to(cast_like(gk, adtype) * scale, shape)
        wb = _average_weights(weights, shape, axes)
        return unbroadcast(gk * (wb / anp.sum(wb, axis=axes, keepdims=True)), a)
    return vjp


def _average_vjp_w(ans, a, axis=None, weights=None, returned=False, keepdims=False):
    shape, _ = shape_dtype(a)
    wshape, wdtype = shape_dtype(weights)
    axes = _axes(len(shape), axis)

    def vjp(g):
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
    return vjp


defvjp(anp.average, _average_vjp_a, None, _average_vjp_w, save=(0, 2))


# =============================================================================
# cumsum, cumprod, nancumsum, nancumprod
# =============================================================================
def _cumsum_vjp(ans, x, axis=None, dtype=None, out=None):
    shape, xdtype = shape_dtype(x)
    if axis is None or not shape:
        return lambda g: anp.reshape(_revcumsum(cast_like(g, xdtype), 0), shape)
    axis = operator.index(axis) % len(shape)
    return lambda g: _revcumsum(cast_like(g, xdtype), axis)


defvjp(anp.cumsum, _cumsum_vjp, save=())


def _nancumsum_vjp(ans, x, axis=None, dtype=None, out=None):
    shape, xdtype = shape_dtype(x)
    vjp_sum = _cumsum_vjp(ans, x, axis)
    return lambda g: vjp_sum(g) * ~_onp.isnan(_plain(x))


defvjp(anp.nancumsum, _nancumsum_vjp, save=(0,))


def _cumprod_grad(g, ans, x, axis):
    """The cotangent of x for y = cumprod(x, axis): x_j's cotangent is
    sum_{i >= j} g_i * prod_{l <= i, l != j} x_l.

    Without zeros that is revcumsum(g * y) / x. With zeros, entries before a slice's first zero
    keep that formula, the first zero gets revcumsum(g * y') with y' the cumprod of x with that
    zero replaced by a constant 1, and entries after it get 0 (as functions of x when the slice
    has a single zero: the zero's value times the same sum over x_j, exact to second order)."""
    xp = _onp.asarray(_plain(x))
    z = xp == 0
    if not z.any():
        return _revcumsum(g * ans, axis) / x
    zc = _onp.cumsum(z, axis=axis)
    before = zc == 0
    first = z & (zc == 1)
    single = (zc.max(axis=axis, keepdims=True) == 1)
    after = (zc >= 1) & ~first & single
    term = _revcumsum(g * ans, axis) / (x * before + ~before) * before
    y1 = anp.cumprod(x * ~first + first, axis=axis)
    r1 = _revcumsum(g * y1, axis)
    term = term + r1 * first
    if after.any():
        xk = anp.sum(x * first, axis=axis, keepdims=True)
        term = term + r1 * xk / (x * after + ~after) * after
    return term


def _cumprod_vjp(ans, x, axis=None, dtype=None, out=None):
    shape, xdtype = shape_dtype(x)

    def vjp(g):
        g = cast_like(g, xdtype)
        y = cast_like(ans, xdtype)
        if axis is None or not shape:
            return anp.reshape(_cumprod_grad(g, y, anp.reshape(x, (-1,)), 0), shape)
        return _cumprod_grad(g, y, x, operator.index(axis) % len(shape))
    return vjp


defvjp(anp.cumprod, _cumprod_vjp, save=(0, "ans"))


def _nancumprod_vjp(ans, x, axis=None, dtype=None, out=None):
    shape, xdtype = shape_dtype(x)

    def vjp(g):
        nans = _onp.isnan(_plain(x))
        if not nans.any():
            return _cumprod_vjp(ans, x, axis)(g)
        return _cumprod_vjp(ans, anp.where(nans, 1, x), axis)(g) * ~nans
    return vjp


defvjp(anp.nancumprod, _nancumprod_vjp, save=(0, "ans"))
