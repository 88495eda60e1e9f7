"""Inputs and checks shared by the reduction-shaped families, which take the same axis=,
keepdims=, dtype= arguments: gradcy/numpy/reductions.py (sum, mean, prod, max, min, ptp and
their nan variants), statistics.py (var, std, median, average, their nan variants) and
calculus.py (cumsum, cumprod, nancumsum, nancumprod). test_reductions.py, test_statistics.py and
test_calculus.py each run these checks over the names of their own family; what a check needs
to know of an operator (its data, its kinks, its saved set) it reads from the operator's record
(op_records/reductions.py)."""

import inspect
import warnings

import numpy as onp
import pytest

import gradcy.numpy as np
from gradcy import grad, make_jvp, make_vjp
from op_records.reductions import REDUCTION
from vjp_harness import check_deep, dtype_ok, rand, raw_cotangent, raw_tangent, saved_record

# var/std/nanvar/nanstd take mean= and correction= from NumPy 2.0 on
VAR_MEAN_CORRECTION = "correction" in inspect.signature(onp.var).parameters


def distinct(*shape, seed=0):
    """Random data without ties (so max/min/median are differentiable)."""
    rs = onp.random.RandomState(seed + 11 * len(shape))
    n = int(onp.prod(shape))
    return (rs.permutation(n) * 0.37 + rs.uniform(0, 0.1, n)).reshape(shape) - n * 0.15


X3 = distinct(2, 3, 4)
AXES = [None, 0, -1, (0, 2), (-1, -3), ()]
AXIS_KEEP = [(a, k) for a in AXES for k in (False, True)]


def with_nans(*shape, seed=0):
    x = distinct(*shape, seed=seed)
    flat = x.reshape(-1)
    flat[[1, 5, 6]] = onp.nan
    return x


def smooth(name, axis, keepdims):
    f, r = getattr(np, name), REDUCTION[name]
    x = rand(2, 3, 4, positive=r.positive)
    if r.kink == "constant" and axis == ():
        return  # std over no axes is 0 everywhere: each group is constant
    check_deep(lambda x: f(x, axis=axis, keepdims=keepdims), x)


def chooser(name, axis, keepdims):
    f = getattr(np, name)
    if name == "ptp" and axis == ():
        return  # ptp over no axes is constant 0
    check_deep(lambda x: f(x, axis=axis, keepdims=keepdims), X3)


def zero_d_and_python_float(name):
    f = getattr(np, name)
    x0 = onp.array(1.3)
    check_deep(f, x0)
    check_deep(f, 1.3)
    check_deep(lambda x: f(x) * x, x0)
    c = raw_cotangent(f, (x0,), 0)
    assert onp.shape(c) == () and onp.result_type(c) == onp.float64
    c = raw_cotangent(f, (x0.astype(onp.float32),), 0)
    assert onp.shape(c) == () and dtype_ok(c, onp.float32)


def zero_d_with_axis_zero(name):
    """NumPy reduces 0-d arrays over axis 0 or -1 as well (some of the functions: where NumPy
    raises, so does gradcy, with NumPy's error)."""
    f = getattr(np, name)
    x0 = onp.array(0.7)
    for axis in (0, -1):
        try:
            getattr(onp, name)(x0, axis=axis)
        except onp.exceptions.AxisError:
            with pytest.raises(onp.exceptions.AxisError):
                grad(lambda x: f(x, axis=axis))(x0)
            continue
        check_deep(lambda x: f(x, axis=axis), x0)


def low_precision_dtypes(name, dtype):
    """NumPy may compute in higher precision (or return it); the cotangent never does."""
    f = getattr(np, name)
    x = distinct(3, 4).astype(dtype) / 10
    for axis in (None, 0, (0, 1)):
        if REDUCTION[name].cumulative and isinstance(axis, tuple):
            continue
        c = raw_cotangent(lambda x: f(x, axis=axis), (x,), 0)
        assert c.dtype == dtype and c.shape == x.shape, (name, axis, c.dtype)


def make_jvp_low_precision_tangents(name, dtype):
    """make_jvp of float32 (float16) inputs gives tangents of the output's dtype, and no rule
    computes in a wider dtype on the way (the engine's cast would hide it)."""
    f, r = getattr(np, name), REDUCTION[name]
    x = distinct(3, 4).astype(dtype) / 10
    if r.positive:
        x = onp.abs(x) + dtype(0.5)
    for axis in (None, 0, (0, 1), -1):
        if r.cumulative and isinstance(axis, tuple):
            continue
        for keepdims in (False,) if r.cumulative else (False, True):
            kw = {"keepdims": True} if keepdims else {}
            y, t = raw_tangent(lambda x: f(x, axis=axis, **kw), (x,), 0)
            assert t.dtype == y.dtype == dtype and t.shape == y.shape, (name, axis, t.dtype)
    w = onp.abs(distinct(4)).astype(dtype) + dtype(1)
    y, t = raw_tangent(lambda w: np.average(x, 1, w), (w,), 0)
    assert t.dtype == y.dtype == dtype and t.shape == y.shape


def nan_reduction(name, axis, keepdims):
    f, r = getattr(np, name), REDUCTION[name]
    x = with_nans(3, 4)
    if r.positive:
        x = onp.where(onp.isnan(x), x, onp.abs(x) + 0.5)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        check_deep(lambda x: f(x, axis=axis, keepdims=keepdims), x)
        g = grad(lambda x: np.sum(f(x, axis=axis, keepdims=keepdims) ** 2))(x)
    assert onp.all(onp.isfinite(g)) and onp.all(g[onp.isnan(x)] == 0)
    # without nans the gradient is that of the plain reduction
    xc = distinct(3, 4, seed=2)
    plain = getattr(np, r.plain)
    g1 = grad(lambda x: np.sum(f(x, axis=axis) ** 2))(xc)
    g2 = grad(lambda x: np.sum(plain(x, axis=axis) ** 2))(xc)
    assert onp.allclose(g1, g2)


def nan_matches_dropping_the_nans(name):
    """On a row with nans, the gradient is the plain reduction's gradient over the rest."""
    x = onp.array([1.0, onp.nan, -2.0, 0.5, onp.nan, 3.0])
    keep = ~onp.isnan(x)
    g = grad(getattr(np, name))(x)
    g_ref = grad(getattr(np, REDUCTION[name].plain))(x[keep])
    assert onp.allclose(g[keep], g_ref) and onp.all(g[~keep] == 0)


def _jacobian_by_vjp(fun, x):
    """The Jacobian of fun at x, (output size, input size), one VJP per output entry."""
    vjp, y = make_vjp(fun)(x)
    try:
        y = onp.asarray(y)
        rows = []
        for k in range(y.size):
            e = onp.zeros(y.size, y.dtype)
            e[k] = 1
            rows.append(onp.asarray(vjp(e.reshape(y.shape))).ravel())
        return onp.array(rows).reshape(y.size, -1)
    finally:
        vjp.release()


def _tricky_cases():
    ties = onp.array([[1.0, 5.0, 5.0, -2.0], [5.0, -2.0, 0.5, -2.0], [3.0, 3.0, 3.0, 3.0]])
    nans = with_nans(3, 4)
    zeros = rand(3, 4, positive=True)
    zeros[0, 1] = zeros[2, 1] = zeros[2, 3] = zeros[1, 0] = 0.0
    w = onp.array(
        [[True, False, True, True], [False, True, True, False], [True, True, False, True]]
    )
    mask_max = ties.copy()
    mask_max[0, 1] = 9.0  # the maximum of row 0, masked out by `w`
    return [
        ("max ties", lambda x: np.max(x, axis=1), ties),
        ("min ties", lambda x: np.min(x), ties),
        ("max where", lambda x: np.max(x, axis=1, where=w, initial=-10.0), mask_max),
        ("min initial", lambda x: np.min(x, axis=0, initial=-1.0, keepdims=True), ties),
        ("ptp ties", lambda x: np.ptp(x, axis=1), ties),
        ("median ties", lambda x: np.median(x, axis=1), ties),
        ("median even", lambda x: np.median(x, axis=0, keepdims=True), ties),
        ("nanmax", lambda x: np.nanmax(x, axis=0), nans),
        ("nanmedian", lambda x: np.nanmedian(x, axis=1), nans),
        ("nansum where", lambda x: np.nansum(x, axis=1, where=w), nans),
        ("nanmean", lambda x: np.nanmean(x, axis=(0, 1), keepdims=True), nans),
        ("nanvar", lambda x: np.nanvar(x, axis=1, ddof=1), nans),
        ("nanstd", lambda x: np.nanstd(x, axis=0), nans),
        ("nanprod", lambda x: np.nanprod(x, axis=1), onp.abs(nans) + 0.5),
        ("nancumsum", lambda x: np.nancumsum(x, axis=1), nans),
        ("nancumprod", lambda x: np.nancumprod(x), onp.abs(nans) + 0.5),
        ("sum where", lambda x: np.sum(x, axis=0, where=w), ties),
        ("mean where", lambda x: np.mean(x, axis=1, where=w, keepdims=True), ties),
        ("prod zeros", lambda x: np.prod(x, axis=1), zeros),
        ("prod zeros all", lambda x: np.prod(x, initial=2.0), zeros),
        ("cumprod zeros", lambda x: np.cumprod(x, axis=1), zeros),
        ("cumprod zeros T", lambda x: np.cumprod(x, axis=0), zeros),
        ("std const row", lambda x: np.std(x, axis=1), ties),
        ("average w", lambda x: np.average(x, 1, onp.arange(1.0, 5.0)), ties),
    ] + (
        [
            ("var mean=", lambda x: np.var(x, axis=1, mean=onp.ones((3, 1))), ties),
            ("std correction", lambda x: np.std(x, axis=0, correction=1), ties),
        ]
        if VAR_MEAN_CORRECTION
        else []
    )


def tricky_cases_of(names):
    """The names of the tricky cases of functions in `names`."""
    return [case for case, _, _ in _tricky_cases() if case.split()[0] in names]


def jvp_agrees_with_vjp(case):
    """On ties, nans, zeros and where= masks (where numerical checks do not reach), forward
    mode picks the same (sub)gradient as reverse mode: J v from the JVP equals the Jacobian
    built from VJPs, times v."""
    name, fun, x = next(c for c in _tricky_cases() if c[0] == case)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        J = _jacobian_by_vjp(fun, x)
        for seed in (0, 1):
            v = rand(*x.shape, seed=seed)
            y, t = make_jvp(fun)(x)(v)
            assert onp.shape(t) == onp.shape(y), name
            assert onp.allclose(onp.ravel(t), J @ v.ravel()), name


def _kept(record):
    """Which of the output and the array arguments the record holds (not as ArrayMeta)."""
    ans, args, _ = record
    return ("ans",) * isinstance(ans, (onp.ndarray, onp.generic)) + tuple(
        i for i, a in enumerate(args) if isinstance(a, onp.ndarray)
    )


def saved_set(name):
    """The record keeps what the operator's record says (and, where an array is not kept,
    ArrayMeta in its place)."""
    x = rand(3, 4, positive=REDUCTION[name].positive)
    assert _kept(saved_record(lambda x: getattr(np, name)(x, 1), x)) == REDUCTION[name].saved
    # the spec is what the rules read: they still run on the reduced record
    check_deep(lambda x: getattr(np, name)(x, 1), distinct(3, 4), order=1, dtypes=False)
