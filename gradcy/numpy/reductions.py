"""VJPs and JVPs of reductions: sum mean prod max min ptp and their nan* variants.

Conventions of this table:
- the rules take NumPy's positional order (sum(a, axis, dtype, out, keepdims, ...)), since a
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

from .._core import ArrayMeta, Box, is_array_value, meta_of
from ..registry import defjvp, defvjp_direct
from . import _wrap as anp
from ._util import (
    _NoValue,
    _SMALL,
    broadcast_cotangent,
    cast_like,
    none_set,
    shape_dtype,
    unpack_positions,
    values_of,
)


# =============================================================================
# Helpers (plain Python on shapes, plain NumPy on masks)
# =============================================================================
def _axes(ndim, axis):
    """The reduced axes as a tuple of non-negative ints (None: all of them)."""
    if axis is None:
        return tuple(range(ndim))
    if not ndim:  # NumPy lets 0-d arrays reduce over axis 0 / -1 too
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
    if _given(where):
        raise NotImplementedError(
            f"gradcy.numpy.{name}: the gradient with where= is not "
            f"supported; mask the input instead (gradcy.numpy.where)"
        )


def _weights(mask, axes, dtype):
    """mask / (number of True per reduced group), as plain `dtype`; 0 for groups without any."""
    w = mask.astype(_weight_dtype(dtype))
    count = mask.sum(axis=axes, keepdims=True)
    if is_array_value(count):  # (not looked at: Dask stays lazy)
        return w / _onp.maximum(count, 1)
    if (count != 1).any():
        w /= _onp.maximum(count, 1)
    return w


def _chooser_weights(x, ans, axes, keepdims, where=None, nan_picks=True):
    """Where the extremum `ans` is attained in x, ties split evenly (plain array)."""
    return _weights(
        _chooser_mask(x, ans, axes, keepdims, where, nan_picks), axes, shape_dtype(x)[1]
    )


def _chooser_mask(x, ans, axes, keepdims, where=None, nan_picks=True):
    """The positions of x that attain the extremum `ans` (a plain bool array; for traced x,
    computed with gradcy.numpy's comparisons, which a const_graph recording records, so its
    replays recompute the mask)."""
    xp = x if type(x) is Box else values_of(x)
    ap = ans if type(ans) is Box or type(x) is Box else values_of(ans)
    if (not keepdims or keepdims is _NoValue) and axes:
        ap = ap.reshape(_kshape(xp.shape, axes))
    mask = xp == ap
    if where is not None and where is not _NoValue:
        mask = mask & where
    if nan_picks and ap.dtype.kind in "fc":
        nans = _onp.isnan(ap)
        if not none_set(nans):  # a nan maximum: the gradient goes to the nan entries
            mask = mask | (_onp.isnan(xp) & nans)
    return mask


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


def _sum_rule(g, ans, x, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=None):
    if (
        axis is None
        and type(x) is ArrayMeta
        and type(g) in _REAL_SCALAR_TYPES
        and x.dtype.kind in "fc"  # (an integer or boolean x: its cotangent has g's dtype)
        and (x.size <= _SMALL and (where is None or where is _NoValue))
    ):
        # the common full sum of a small array: the scalar cotangent filled in, cast on store
        full = _onp.empty(x.shape, x.dtype)
        full[...] = g
        return full
    if (
        keepdims is True
        and type(x) is ArrayMeta
        and type(g) is _onp.ndarray
        and g.dtype == x.dtype
        and (where is None or where is _NoValue)
    ):
        # a softmax's sum: g has x's ndim; broadcast_cotangent of a plain g, inline
        if x.size > _SMALL:
            return _onp.broadcast_to(g, x.shape)
        full = _onp.empty(x.shape, g.dtype)
        full[...] = g
        return full
    shape, xdtype = shape_dtype(x)
    axes = _axes(len(shape), axis)
    g = broadcast_cotangent(_keep(cast_like(g, xdtype), shape, axes, keepdims), shape, x)
    if where is not None and where is not _NoValue:
        g = g * where
    return g


defvjp_direct(anp.sum, _sum_rule, save=())


def _sum_jvp(g, ans, x, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=None):
    if _given(where):
        return anp.sum(g, axis=axis, keepdims=_kd(keepdims), where=where)
    return anp.sum(g, axis=axis, keepdims=_kd(keepdims))


defjvp(anp.sum, _sum_jvp)


def _mean_vjp(g, ans, x, axis=None, dtype=None, out=None, keepdims=False, where=None):
    shape, xdtype = shape_dtype(x)
    axes = _axes(len(shape), axis)
    if where is not None and where is not _NoValue:
        mask = _onp.broadcast_to(where, shape)
        w = _weights(mask, axes, xdtype)
        return _keep(cast_like(g, xdtype), shape, axes, keepdims) * w
    scale = 1.0 / (_count(shape, axes) or 1)  # a Python float: 1/n even in float16
    # (NumPy 1.x widens a scalar g times a Python float: the outer cast_like undoes it)
    return anp.broadcast_to(
        _keep(cast_like(cast_like(g, xdtype) * scale, xdtype), shape, axes, keepdims), shape
    )


defvjp_direct(anp.mean, _mean_vjp, save=())


def _mean_jvp(g, ans, x, axis=None, dtype=None, out=None, keepdims=False, where=None):
    if _given(where):
        return anp.mean(g, axis=axis, keepdims=_kd(keepdims), where=where)
    return anp.mean(g, axis=axis, keepdims=_kd(keepdims))


defjvp(anp.mean, _mean_jvp)


def _counted(x, where):
    """The entries a nan-reduction counts (plain mask): not NaN, and in where= when given."""
    keep = ~_onp.isnan(x)
    if _given(where):
        keep &= where
    return keep


def _nansum_vjp(
    g, ans, x, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=None
):
    shape, xdtype = shape_dtype(x)
    axes = _axes(len(shape), axis)
    return _keep(cast_like(g, xdtype), shape, axes, keepdims) * _counted(x, where)


defvjp_direct(anp.nansum, _nansum_vjp, save=(0,))


def _nansum_jvp(
    g, ans, x, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=None
):
    keep = _counted(x, where)
    return _sum_over(g * keep, _axes(_onp.ndim(keep), axis), keepdims)


defjvp(anp.nansum, _nansum_jvp)


def _nanmean_vjp(g, ans, x, axis=None, dtype=None, out=None, keepdims=False, where=None):
    shape, xdtype = shape_dtype(x)
    axes = _axes(len(shape), axis)
    return _keep(cast_like(g, xdtype), shape, axes, keepdims) * _weights(
        _counted(x, where), axes, xdtype
    )


defvjp_direct(anp.nanmean, _nanmean_vjp, save=(0,))


def _nanmean_jvp(g, ans, x, axis=None, dtype=None, out=None, keepdims=False, where=None):
    shape, xdtype = shape_dtype(x)
    axes = _axes(len(shape), axis)
    return _sum_over(g * _weights(_counted(x, where), axes, xdtype), axes, keepdims)


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
    z = values_of(x) == 0
    if none_set(z):
        return (gk * ansk) / x
    nz = z.sum(axis=axes, keepdims=True)
    nonzero = ~z
    x1 = x * nonzero + z  # x with every zero replaced by a constant 1
    others = anp.prod(x1, axis=axes, keepdims=True)
    if initial is not None and initial is not _NoValue:
        others = others * initial
    zx = x * z  # the zero entries, as functions of x
    other_zero = anp.sum(zx, axis=axes, keepdims=True) - zx
    at_zero = z * (others * ((nz == 1) + (nz == 2) * other_zero))
    return gk * ((ansk / x1) * nonzero + at_zero)


def _nans_as_one(x):
    """(x with its NaNs replaced by 1, their plain mask), or (x, None) without NaNs: nanprod is
    the prod of the first, with no gradient at the NaNs."""
    nans = _onp.isnan(values_of(x))
    return (x, None) if none_set(nans) else (anp.where(nans, 1, x), nans)


def _prod_vjp(name):
    def rule(g, ans, x, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=None):
        _no_where(name, where)
        shape, xdtype = shape_dtype(x)
        axes = _axes(len(shape), axis)
        gk = _keep(cast_like(g, xdtype), shape, axes, keepdims)
        ansk = _keep(cast_like(ans, xdtype), shape, axes, keepdims)
        x1, nans = _nans_as_one(x) if name == "nanprod" else (x, None)
        c = _prod_grad(gk, ansk, x1, axes, initial)
        return c if nans is None else c * ~nans

    return rule


def _prod_jvp(name):
    """sum over the group of g * (product of the other entries): ans * sum(g / x) without
    zeros, the VJP's zero-safe factor otherwise."""

    def jvp(g, ans, x, axis=None, dtype=None, out=None, keepdims=False, initial=None, where=None):
        _no_where(name, where)
        x, nans = _nans_as_one(x) if name == "nanprod" else (x, None)
        if nans is not None:
            g = g * ~nans
        shape, xdtype = shape_dtype(x)
        axes = _axes(len(shape), axis)
        if none_set(values_of(x) == 0):
            return cast_like(ans, xdtype) * _sum_over(g / x, axes, keepdims)
        ansk = _keep(cast_like(ans, xdtype), shape, axes, keepdims)
        return _sum_over(g * _prod_grad(1.0, ansk, x, axes, initial), axes, keepdims)

    return jvp


for _p, _name in ((anp.prod, "prod"), (anp.nanprod, "nanprod")):
    defvjp_direct(_p, _prod_vjp(_name), save=(0, "ans"))
    defjvp(_p, _prod_jvp(_name))


# =============================================================================
# max, min, ptp, median: the gradient goes to the entries that attain the value
# =============================================================================
def _max_vjp(g, ans, x, axis=None, out=None, keepdims=False, initial=None, where=None):
    shape, xdtype = shape_dtype(x)
    axes = _axes(len(shape), axis)
    if type(x) is ArrayMeta:  # the record keeps only the chosen positions (_extremum_saver)
        return _keep(cast_like(g, xdtype), shape, axes, keepdims) * _weights(
            unpack_positions(ans, shape), axes, xdtype
        )
    return _keep(cast_like(g, xdtype), shape, axes, keepdims) * _chooser_weights(
        x, ans, axes, keepdims, where
    )


def _nanmax_vjp(g, ans, x, axis=None, out=None, keepdims=False, initial=None, where=None):
    shape, xdtype = shape_dtype(x)
    axes = _axes(len(shape), axis)
    if type(x) is ArrayMeta:  # the record keeps only the chosen positions (_extremum_saver)
        return _keep(cast_like(g, xdtype), shape, axes, keepdims) * _weights(
            unpack_positions(ans, shape), axes, xdtype
        )
    return _keep(cast_like(g, xdtype), shape, axes, keepdims) * _chooser_weights(
        x, ans, axes, keepdims, where, nan_picks=False
    )


_add_reduce, _all_reduce, _equal = _onp.add.reduce, _onp.logical_and.reduce, _onp.equal


def _max_rule(g, ans, x, axis=None, out=None, keepdims=False, initial=None, where=None):
    """max's (min's) rule as the sweep calls it. The common case first: x kept as the bit mask
    of the chosen positions (_extremum_saver), keepdims over one axis, one chosen position per
    group: the cotangent goes to it as it is (mask * g, no weights)."""
    if (
        type(x) is ArrayMeta
        and type(g) is _onp.ndarray
        and keepdims is True
        and type(axis) is int
        and g.dtype == x.dtype
    ):
        mask = unpack_positions(ans, x.shape)
        if _all_reduce(_equal(_add_reduce(mask, axis, None, None, True), 1), None):
            return _onp.multiply(mask, g)
    return _max_vjp(g, ans, x, axis, out, keepdims, initial, where)


_AXIS_KEEPDIMS = frozenset(("axis", "keepdims"))
_EXTREMUM_ARGS = ("axis", "out", "keepdims", "initial", "where")
_packbits = getattr(_onp.packbits, "_implementation", _onp.packbits)  # plain: no dispatch


def _extremum_saver(nan_picks):
    """The saver of max, min, nanmax, nanmin: the positions that attain the extremum, as a bit
    mask (one bit per element of the input, numpy.packbits) in place of the input and the
    output (1/64 of a float64 input); the rules read it back with unpack_positions."""

    def save(argnums, ans, args, kwargs):
        x = args[0]
        if type(x) is not _onp.ndarray or not (type(ans) is _onp.ndarray or _onp.isscalar(ans)):
            return ans, args  # a traced outer value (nested) or a scalar: everything
        if (
            len(args) == 1
            and type(ans) is _onp.ndarray
            and x.dtype.kind == "f"
            and kwargs.keys() <= _AXIS_KEEPDIMS
            and kwargs.get("keepdims") is True
            and type(kwargs.get("axis")) is int
        ):
            # the common case first (a softmax's max over one axis, keepdims): no nan maximum
            # (a nan, or +inf beside -inf, makes the sum nan: then the general path)
            total = _add_reduce(ans, None)
            if total == total:
                return _packbits(x == ans, None), (meta_of(x),)
        opts = dict(zip(_EXTREMUM_ARGS, args[1:]))
        opts.update(kwargs)
        axes = _axes(x.ndim, opts.get("axis"))
        where = opts.get("where")
        if type(where) is not _onp.ndarray and where is not None and where is not _NoValue:
            return ans, args
        mask = _chooser_mask(x, ans, axes, opts.get("keepdims", False), where, nan_picks)
        return _onp.packbits(mask, axis=None), (meta_of(x),) + args[1:]

    return save


defvjp_direct(anp.max, _max_rule, save=_extremum_saver(True))
defvjp_direct(anp.min, _max_rule, save=_extremum_saver(True))
defvjp_direct(anp.nanmax, _nanmax_vjp, save=_extremum_saver(False))
defvjp_direct(anp.nanmin, _nanmax_vjp, save=_extremum_saver(False))


def _max_jvp(g, ans, x, axis=None, out=None, keepdims=False, initial=None, where=None):
    axes = _axes(len(shape_dtype(x)[0]), axis)
    return _sum_over(g * _chooser_weights(x, ans, axes, keepdims, where), axes, keepdims)


def _nanmax_jvp(g, ans, x, axis=None, out=None, keepdims=False, initial=None, where=None):
    axes = _axes(len(shape_dtype(x)[0]), axis)
    return _sum_over(
        g * _chooser_weights(x, ans, axes, keepdims, where, nan_picks=False), axes, keepdims
    )


defjvp(anp.max, _max_jvp)
defjvp(anp.min, _max_jvp)
defjvp(anp.nanmax, _nanmax_jvp)
defjvp(anp.nanmin, _nanmax_jvp)


def _ptp_vjp(g, ans, x, axis=None, out=None, keepdims=False):
    shape, xdtype = shape_dtype(x)
    axes = _axes(len(shape), axis)
    xp = values_of(x)
    hi = xp.max(axis=axes, keepdims=True)
    lo = xp.min(axis=axes, keepdims=True)
    w = _weights(xp == hi, axes, xdtype) - _weights(xp == lo, axes, xdtype)
    return _keep(cast_like(g, xdtype), shape, axes, keepdims) * w


defvjp_direct(anp.ptp, _ptp_vjp, save=(0,))


def _ptp_jvp(g, ans, x, axis=None, out=None, keepdims=False):
    shape, xdtype = shape_dtype(x)
    axes = _axes(len(shape), axis)
    xp = values_of(x)
    hi = xp.max(axis=axes, keepdims=True)
    lo = xp.min(axis=axes, keepdims=True)
    w = _weights(xp == hi, axes, xdtype) - _weights(xp == lo, axes, xdtype)
    return _sum_over(g * w, axes, keepdims)


defjvp(anp.ptp, _ptp_jvp)
