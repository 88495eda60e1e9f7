"""VJPs and JVPs of reductions: sum mean prod max min var std ptp average median, their nan*
variants, and the cumulative ops (cumsum cumprod nancumsum nancumprod).

Conventions of this table:
- the makers take NumPy's positional order (sum(a, axis, dtype, out, keepdims, ...)), since a
  call such as sum(x, 0, None, None, True) reaches them positionally;
- the small reduced cotangent is cast to the input's dtype first and only then expanded, so the
  full-size work is done once, in the input's dtype;
- which entries attain an extremum (ties, zeros, nans) is decided on the plain values: those
  masks are constants for differentiation, and the arithmetic on traced values is written with
  gradcy.numpy so the rules differentiate again;
- a JVP reduces the tangent over the same axes (with the same keepdims) as the primitive; the
  engine casts its result to the output's dtype (the real part for a real output).
"""
import operator

import numpy as _onp

from ..extend import (ArrayMeta, Box, defjvp, defjvp_argnums, defvjp,  # noqa: F401
                      defvjp_direct, primitive)
from . import numpy_wrapper as anp
from .vjp_util import (_SMALL, cast_like, unbroadcast, broadcast_cotangent,  # noqa: F401
                       shape_dtype)

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


def _kd(keepdims):
    """keepdims as a bool (NumPy's _NoValue default means False)."""
    return bool(keepdims) and keepdims is not _NoValue


def _given(where):
    return where is not None and where is not _NoValue


def _sum_over(t, axes, keepdims):
    """t summed over `axes` (a tuple of non-negative ints) like a reduction with keepdims; the
    empty tuple sums nothing."""
    if not axes:
        return t
    return anp.sum(t, axis=axes, keepdims=_kd(keepdims))


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
_REAL_SCALAR_TYPES = (float, _onp.float64, _onp.float32, _onp.float16)


def _sum_rule(g, ans, x, axis=None, dtype=None, out=None, keepdims=False, initial=None,
              where=None):
    if axis is None and type(x) is ArrayMeta and type(g) in _REAL_SCALAR_TYPES and (
            x.size <= _SMALL and (where is None or where is _NoValue)):
        # the common full sum of a small array: the scalar cotangent filled in, cast on store
        full = _onp.empty(x.shape, x.dtype)
        full[...] = g
        return full
    shape, xdtype = shape_dtype(x)
    axes = _axes(len(shape), axis)
    g = broadcast_cotangent(_keep(cast_like(g, xdtype), shape, axes, keepdims), shape, x)
    if where is not None and where is not _NoValue:
        g = g * where
    return g


defvjp_direct(anp.sum, _sum_rule, save=())


def _sum_jvp(g, ans, x, axis=None, dtype=None, out=None, keepdims=False, initial=None,
             where=None):
    if _given(where):
        return anp.sum(g, axis=axis, keepdims=_kd(keepdims), where=where)
    return anp.sum(g, axis=axis, keepdims=_kd(keepdims))


defjvp(anp.sum, _sum_jvp)


def _mean_vjp(ans, x, axis=None, dtype=None, out=None, keepdims=False, where=None):
    shape, xdtype = shape_dtype(x)
    axes = _axes(len(shape), axis)
    if where is not None and where is not _NoValue:
        mask = _onp.broadcast_to(where, shape)
        w = _weights(mask, axes, xdtype)
        return lambda g: _keep(cast_like(g, xdtype), shape, axes, keepdims) * w
    scale = 1.0 / (_count(shape, axes) or 1)     # a Python float: 1/n even in float16
    # (NumPy 1.x widens a scalar g times a Python float: the outer cast_like undoes it)
    return lambda g: anp.broadcast_to(
        _keep(cast_like(cast_like(g, xdtype) * scale, xdtype), shape, axes, keepdims), shape)


defvjp(anp.mean, _mean_vjp, save=())


def _mean_jvp(g, ans, x, axis=None, dtype=None, out=None, keepdims=False, where=None):
    if _given(where):
        return anp.mean(g, axis=axis, keepdims=_kd(keepdims), where=where)
    return anp.mean(g, axis=axis, keepdims=_kd(keepdims))


defjvp(anp.mean, _mean_jvp)


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


def _nansum_jvp(g, ans, x, axis=None, dtype=None, out=None, keepdims=False, initial=None,
                where=None):
    keep = ~_onp.isnan(_plain(x))
    if _given(where):
        keep &= where
    return _sum_over(g * keep, _axes(_onp.ndim(keep), axis), keepdims)


defjvp(anp.nansum, _nansum_jvp)


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


def _nanmean_jvp(g, ans, x, axis=None, dtype=None, out=None, keepdims=False, where=None):
    shape, xdtype = shape_dtype(x)
    axes = _axes(len(shape), axis)
    keep = ~_onp.isnan(_plain(x))
    if _given(where):
        keep &= where
    return _sum_over(g * _weights(keep, axes, xdtype), axes, keepdims)


defjvp(anp.nanmean, _nanmean_jvp)


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


def _prod_jvp_of(g, ans, x, axis, keepdims, initial):
    """sum over the group of g * (product of the other entries): ans * sum(g / x) without
    zeros, the VJP's zero-safe factor otherwise."""
    shape, xdtype = shape_dtype(x)
    axes = _axes(len(shape), axis)
    if not (_onp.asarray(_plain(x)) == 0).any():
        return cast_like(ans, xdtype) * _sum_over(g / x, axes, keepdims)
    ansk = _keep(cast_like(ans, xdtype), shape, axes, keepdims)
    return _sum_over(g * _prod_grad(1.0, ansk, x, axes, initial), axes, keepdims)


def _prod_jvp(g, ans, x, axis=None, dtype=None, out=None, keepdims=False, initial=None,
              where=None):
    _no_where("prod", where)
    return _prod_jvp_of(g, ans, x, axis, keepdims, initial)


defjvp(anp.prod, _prod_jvp)


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


def _nanprod_jvp(g, ans, x, axis=None, dtype=None, out=None, keepdims=False, initial=None,
                 where=None):
    _no_where("nanprod", where)
    nans = _onp.isnan(_plain(x))
    if not nans.any():
        return _prod_jvp_of(g, ans, x, axis, keepdims, initial)
    return _prod_jvp_of(g * ~nans, ans, anp.where(nans, 1, x), axis, keepdims, initial)


defjvp(anp.nanprod, _nanprod_jvp)


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


def _max_jvp(g, ans, x, axis=None, out=None, keepdims=False, initial=None, where=None):
    axes = _axes(len(shape_dtype(x)[0]), axis)
    return _sum_over(g * _chooser_weights(x, ans, axes, keepdims, where), axes, keepdims)


def _nanmax_jvp(g, ans, x, axis=None, out=None, keepdims=False, initial=None, where=None):
    axes = _axes(len(shape_dtype(x)[0]), axis)
    return _sum_over(g * _chooser_weights(x, ans, axes, keepdims, where, nan_picks=False),
                     axes, keepdims)


defjvp(anp.max, _max_jvp)
defjvp(anp.min, _max_jvp)
defjvp(anp.nanmax, _nanmax_jvp)
defjvp(anp.nanmin, _nanmax_jvp)


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


def _ptp_jvp(g, ans, x, axis=None, out=None, keepdims=False):
    shape, xdtype = shape_dtype(x)
    axes = _axes(len(shape), axis)
    xp = _onp.asarray(_plain(x))
    hi = xp.max(axis=axes, keepdims=True)
    lo = xp.min(axis=axes, keepdims=True)
    w = _weights(xp == hi, axes, xdtype) - _weights(xp == lo, axes, xdtype)
    return _sum_over(g * w, axes, keepdims)


defjvp(anp.ptp, _ptp_jvp)


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


def _half_dvar(g, x, axes, keepdims, kw):
    """(N - ddof) / 2 times the tangent of var: Re(sum(conj(x - mean) * g)) over the group."""
    t = _sum_over(_centered(x, axes, kw) * g, axes, keepdims)
    return anp.real(t) if _onp.iscomplexobj(_plain(x)) else t


def _var_jvp(g, ans, x, axis=None, dtype=None, out=None, ddof=0, keepdims=False, **kw):
    _no_where("var", kw.get("where"))
    shape, _ = shape_dtype(x)
    axes = _axes(len(shape), axis)
    return _half_dvar(g, x, axes, keepdims, kw) * (
        2.0 * _inverse_count(shape, axes, _ddof(ddof, kw)))


def _std_jvp(g, ans, x, axis=None, dtype=None, out=None, ddof=0, keepdims=False, **kw):
    _no_where("std", kw.get("where"))
    shape, xdtype = shape_dtype(x)
    axes = _axes(len(shape), axis)
    t = _half_dvar(g, x, axes, keepdims, kw)
    return _safe_inverse(t, cast_like(ans, _real_dtype(xdtype))) * _inverse_count(
        shape, axes, _ddof(ddof, kw))


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


def _nanvar_vjp(ans, x, axis=None, dtype=None, out=None, ddof=0, keepdims=False, **kw):
    _no_where("nanvar", kw.get("where"))
    shape, xdtype = shape_dtype(x)
    axes = _axes(len(shape), axis)
    ddof = _ddof(ddof, kw)

    def vjp(g):
        nans = _onp.isnan(_plain(x))
        if not nans.any():
            return _var_vjp(ans, x, axes, None, None, ddof, keepdims, **kw)(g)
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
            return _std_vjp(ans, x, axes, None, None, ddof, keepdims, **kw)(g)
        rdtype = _real_dtype(xdtype)
        gk = _keep(cast_like(g, rdtype), shape, axes, keepdims)
        ansk = _keep(cast_like(ans, rdtype), shape, axes, keepdims)
        return (_safe_inverse(gk, ansk) * _nan_denom(nans, axes, ddof, rdtype)) * _nan_centered(
            x, axes, kw, nans)
    return vjp


defvjp(anp.nanvar, _nanvar_vjp, save=(0,))
defvjp(anp.nanstd, _nanstd_vjp, save=(0, "ans"))


def _nan_half_dvar(g, x, axes, keepdims, kw, ddof, nans):
    """(the tangent of nanvar) / 2: Re(sum(conj(x - nanmean) * g)) / (count - ddof) over the
    non-nan entries of each group."""
    rdtype = _real_dtype(shape_dtype(x)[1])
    d = _nan_centered(x, axes, kw, nans) * _nan_denom(nans, axes, ddof, rdtype)
    t = _sum_over(d * g, axes, keepdims)
    return anp.real(t) if _onp.iscomplexobj(_plain(x)) else t


def _nanvar_jvp(g, ans, x, axis=None, dtype=None, out=None, ddof=0, keepdims=False, **kw):
    _no_where("nanvar", kw.get("where"))
    nans = _onp.isnan(_plain(x))
    if not nans.any():
        return _var_jvp(g, ans, x, axis, None, None, ddof, keepdims, **kw)
    axes = _axes(nans.ndim, axis)
    return _nan_half_dvar(g, x, axes, keepdims, kw, _ddof(ddof, kw), nans) * 2.0


def _nanstd_jvp(g, ans, x, axis=None, dtype=None, out=None, ddof=0, keepdims=False, **kw):
    _no_where("nanstd", kw.get("where"))
    nans = _onp.isnan(_plain(x))
    if not nans.any():
        return _std_jvp(g, ans, x, axis, None, None, ddof, keepdims, **kw)
    axes = _axes(nans.ndim, axis)
    t = _nan_half_dvar(g, x, axes, keepdims, kw, _ddof(ddof, kw), nans)
    return _safe_inverse(t, cast_like(ans, _real_dtype(shape_dtype(x)[1])))


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
            return anp.broadcast_to(cast_like(cast_like(gk, adtype) * scale, adtype), shape)
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
                t_sum = _sum_over(anp.broadcast_to(gwb, _onp.broadcast_shapes(
                    shape, shape_dtype(gwb)[0])), axes, keepdims)
        else:
            continue
        t_avg = t if t_avg is None else t_avg + t
    if not returned:
        return t_avg
    avg_shape, avg_dtype = shape_dtype(avg)
    t_avg = cast_like(anp.broadcast_to(t_avg, avg_shape), avg_dtype)
    sum_shape, sum_dtype = shape_dtype(ans[1])
    t_sum = (_onp.zeros(sum_shape, sum_dtype) if t_sum is None
             else cast_like(anp.broadcast_to(t_sum, sum_shape), sum_dtype))
    return (t_avg, t_sum)


defjvp_argnums(anp.average, _average_jvp)


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
defjvp(anp.cumsum, lambda g, ans, x, axis=None, dtype=None, out=None: anp.cumsum(g, axis))


def _nancumsum_vjp(ans, x, axis=None, dtype=None, out=None):
    shape, xdtype = shape_dtype(x)
    vjp_sum = _cumsum_vjp(ans, x, axis)
    return lambda g: vjp_sum(g) * ~_onp.isnan(_plain(x))


defvjp(anp.nancumsum, _nancumsum_vjp, save=(0,))
defjvp(anp.nancumsum, lambda g, ans, x, axis=None, dtype=None, out=None:
       anp.cumsum(g * ~_onp.isnan(_plain(x)), axis))


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


def _cumprod_tangent(g, ans, x, axis):
    """The tangent of y = cumprod(x, axis): dy_i = sum_{j <= i} g_j prod_{l <= i, l != j} x_l.

    Without zeros that is y * cumsum(g / x). With zeros, let `first` mark each slice's first
    zero and y1 = cumprod of x with that zero replaced by a constant 1: then
    dy = y * cumsum(g / x') + y1 * cumsum(g * first), with x' = x where x is nonzero, 1
    elsewhere, and the first zero's own term left out of the first sum. Up to the first zero
    this is y * cumsum(g / x); after it, y1 * g_first plus y (zero, but a function of x) times
    the others' terms, which keeps the rule exact to second order with one zero per slice."""
    xp = _onp.asarray(_plain(x))
    z = xp == 0
    if not z.any():
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


def _nancumprod_vjp(ans, x, axis=None, dtype=None, out=None):
    shape, xdtype = shape_dtype(x)

    def vjp(g):
        nans = _onp.isnan(_plain(x))
        if not nans.any():
            return _cumprod_vjp(ans, x, axis)(g)
        return _cumprod_vjp(ans, anp.where(nans, 1, x), axis)(g) * ~nans
    return vjp


defvjp(anp.nancumprod, _nancumprod_vjp, save=(0, "ans"))


def _nancumprod_jvp(g, ans, x, axis=None, dtype=None, out=None):
    nans = _onp.isnan(_plain(x))
    if not nans.any():
        return _cumprod_jvp(g, ans, x, axis)
    return _cumprod_jvp(g * ~nans, ans, anp.where(nans, 1, x), axis)


defjvp(anp.nancumprod, _nancumprod_jvp)
