"""Gradient checks of gradcy/numpy/statistics.py: var, std, median, average and their nan
variants, quantiles, cov, corrcoef, histograms, bincount."""

import contextlib
import warnings

import numpy as onp
import pytest

import gradcy.numpy as np
import reduction_cases as cases
from gradcy import grad
from gradcy._core import install_hooks
from gradcy.numpy._util import match_tangent
from op_records.reductions import names
from reduction_cases import AXIS_KEEP, VAR_MEAN_CORRECTION, distinct, with_nans
from vjp_harness import check, check_deep, rand, raw_cotangent, raw_tangent

FAMILY = names("statistics")
COVERED = {f"gradcy.numpy.{n}" for n in FAMILY}


# =============================================================================
# Quantiles
# =============================================================================
@pytest.mark.parametrize(
    "method",
    [
        "linear",
        "lower",
        "higher",
        "nearest",
        "midpoint",
        "weibull",
        "hazen",
        "median_unbiased",
        "normal_unbiased",
        "inverted_cdf",
        "averaged_inverted_cdf",
        "closest_observation",
        "interpolated_inverted_cdf",
    ],
)
def test_quantile_methods(method):
    x = rand(3, 7)
    check(lambda a: np.quantile(a, 0.37, axis=1, method=method), x)
    check(lambda a: np.percentile(a, [10.0, 55.0], method=method), x)


def test_quantile_q_and_axes():
    x = rand(4, 3, 5)
    check(lambda a, q: np.quantile(a, q), x, 0.3)
    check(lambda a, q: np.quantile(a, q, axis=(0, 2)), x, onp.array([0.2, 0.7]))
    check(lambda a, q: np.quantile(a, q, 1, keepdims=True), x, onp.array([[0.1], [0.9]]))
    check(lambda a, q: np.percentile(a, q, -1), x, onp.asarray(42.0))
    check(lambda a, q: np.quantile(a, q, axis=0, method="hazen"), x, 0.25)
    check(lambda a: np.quantile(a, [0.0, 1.0], axis=0), x)
    check(lambda a: np.quantile(a, 0.5), rand(1))
    check(lambda a: np.quantile(a, q=0.6, axis=1), rand(3, 4))
    # ties share the weight evenly
    g = grad(lambda a: np.quantile(a, 0.5))(onp.array([1.0, 2.0, 2.0, 3.0, 5.0]))
    assert onp.allclose(g, [0, 0.5, 0.5, 0, 0])
    # the q gradient is the slope between the two order statistics
    gq = grad(lambda q: np.quantile(onp.array([0.0, 1.0, 3.0]), q), 0)(0.75)
    assert onp.isclose(gq, 2 * (3.0 - 1.0))


def test_nanquantile():
    x = rand(4, 6)
    x[1, 2] = x[3, 0] = x[3, 4] = onp.nan
    check(lambda a: np.nanquantile(a, 0.4, axis=1), x)
    check(lambda a, q: np.nanpercentile(a, q, axis=0), x, onp.array([20.0, 80.0]))
    check(lambda a: np.nanquantile(a, 0.3), x)
    allnan = x.copy()
    allnan[0] = onp.nan
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        g = grad(lambda a: np.nansum(np.nanquantile(a, 0.5, axis=1)))(allnan)
    assert onp.all(g[0] == 0) and onp.all(onp.isfinite(g))
    # a nan in a slice of plain quantile: nan output, no gradient into that slice
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        g = grad(lambda a: np.sum(np.quantile(a, 0.5, axis=1)[[0, 2]]))(x)
    assert onp.all(g[1] == 0) and onp.isclose(g[0].sum(), 1.0)


# =============================================================================
# cov, corrcoef
# =============================================================================
def test_cov():
    m = rand(3, 6)
    check(np.cov, m)
    check(lambda a: np.cov(a, rowvar=False), rand(6, 2))
    check(lambda a: np.cov(a, bias=True), m)
    check(lambda a: np.cov(a, ddof=2), m)
    check(lambda a, b: np.cov(a, b), m, rand(6, seed=1))
    check(lambda a, b: np.cov(a, b, False), rand(6, 2), rand(6, 1, seed=1))
    check(lambda a: np.cov(a), rand(6))
    fw, aw = onp.array([1, 2, 1, 3, 1, 1]), onp.array([0.5, 1.0, 2.0, 1.0, 0.3, 1.2])
    check(lambda a: np.cov(a, fweights=fw), m)
    check(lambda a: np.cov(a, aweights=aw), m)
    check(lambda a: np.cov(a, None, True, False, None, fw, aw), m)
    check(lambda a: np.cov(a, ddof=0, aweights=aw), m)
    z = m + 1j * rand(3, 6, seed=2)
    check(np.cov, z)


def test_corrcoef():
    m = rand(3, 6)
    check(np.corrcoef, m)
    check(lambda a: np.corrcoef(a, rowvar=False), rand(6, 3))
    check(lambda a, b: np.corrcoef(a, b), rand(2, 6), rand(6, seed=1))
    assert grad(lambda a: np.corrcoef(a))(rand(5)).tolist() == [0.0] * 5
    with pytest.raises(NotImplementedError):
        grad(lambda a: np.real(np.sum(np.corrcoef(a))))(m + 1j * m)


# =============================================================================


# Histograms (traced bin edges), bincount's weights
# =============================================================================
_HX, _HY = rand(7, seed=4), rand(7, seed=5)


def test_bincount_weights():
    idx = onp.array([0, 2, 2, 1, 0, 5, 2])
    check(lambda w: np.bincount(idx, w), _HX)
    check(lambda w: np.bincount(idx, w, 8), _HX)
    onp.testing.assert_array_equal(np.bincount(idx, _HX), onp.bincount(idx, _HX))
    # the indices carry no gradient; an unweighted count is an integer constant
    assert onp.array_equal(
        grad(lambda w: np.sum(w) + 1.0 * np.sum(np.bincount(idx)))(_HX), onp.ones(7)
    )


def test_histogram_edges_follow_the_data():
    check(lambda a: np.histogram(a, 4)[1], _HX)
    check(lambda a: np.histogram(a, "auto")[1], _HX)
    check(lambda a: np.histogram(a, 3, density=True)[0], _HX)
    check(lambda a: np.histogram_bin_edges(a, 5), _HX)
    check(lambda a: np.histogram(onp.array([0.2, 0.4]), a)[1], onp.array([0.0, 0.3, 1.0]))
    check(lambda lo: np.histogram(_HX, 3, range=(lo, 2.5))[1], -2.5)
    check(lambda a: np.histogram(a, 2)[1], onp.array([0.25]))  # min == max: widened
    check(lambda a: np.histogram2d(a, _HY, 3)[1], _HX)
    check(lambda a: np.histogram2d(a, _HY, [2, 3], density=True)[0], _HX)
    check(lambda a: np.histogramdd(np.stack([a, _HY], 1), (2, 3), density=True)[0], _HX)
    check(lambda a: np.histogramdd(a, 3)[1][0], _HX)


def test_histogram_values_match_numpy():
    def values(a):
        for got, want in [
            (np.histogram(a, 4, density=True), onp.histogram(_HX, 4, density=True)),
            (np.histogram(a, "fd"), onp.histogram(_HX, "fd")),
            (np.histogram2d(a, _HY, 3, density=True), onp.histogram2d(_HX, _HY, 3, density=True)),
        ]:
            assert len(got) == len(want)
            for u, v in zip(got, want):
                onp.testing.assert_array_equal(u._value if hasattr(u, "_value") else u, v)
        return np.sum(a)

    grad(values)(_HX)


def test_histogram_counts_are_constants_and_weights_raise():
    g = grad(lambda a: np.sum(a * a) + 1.0 * np.sum(np.histogram(a, 3, range=(-3.0, 3.0))[0]))
    assert onp.allclose(g(_HX), 2 * _HX)
    with pytest.raises(NotImplementedError, match="histogram: no gradient with respect to wei"):
        grad(lambda w: np.sum(np.histogram(_HY, 3, weights=w)[0]))(_HX)
    with pytest.raises(NotImplementedError, match="histogramdd: no gradient with respect to w"):
        grad(lambda w: np.sum(np.histogram2d(_HX, _HY, 3, weights=w)[0]))(_HX)


# =============================================================================
# var, std (the smooth statistics)
# =============================================================================
@pytest.mark.parametrize("axis,keepdims", AXIS_KEEP)
@pytest.mark.parametrize("name", names("statistics", picks=False, nan=False))
def test_smooth_reductions(name, axis, keepdims):
    cases.smooth(name, axis, keepdims)


@pytest.mark.parametrize("ddof", [0, 1, 2])
@pytest.mark.parametrize("name", ["var", "std"])
def test_var_std_ddof(name, ddof):
    f = getattr(np, name)
    x = rand(3, 5)
    check_deep(lambda x: f(x, axis=1, ddof=ddof), x)
    check_deep(lambda x: f(x, ddof=ddof), x)
    check_deep(lambda x: f(x, 0, None, None, ddof, True), x)  # positional keepdims
    if VAR_MEAN_CORRECTION:
        check_deep(lambda x: f(x, axis=0, correction=ddof), x)
        m = rand(3, 1, seed=9)  # a given mean= is a constant of the function
        check_deep(lambda x: f(x, axis=1, ddof=ddof, mean=m), x)


@pytest.mark.parametrize("name", FAMILY)
def test_zero_d_and_python_float(name):
    cases.zero_d_and_python_float(name)


@pytest.mark.parametrize("name", FAMILY)
def test_zero_d_with_axis_zero(name):
    cases.zero_d_with_axis_zero(name)


@pytest.mark.parametrize("name", FAMILY)
@pytest.mark.parametrize("dtype", [onp.float16, onp.float32])
def test_low_precision_dtypes(name, dtype):
    cases.low_precision_dtypes(name, dtype)


@pytest.mark.parametrize("name", FAMILY)
@pytest.mark.parametrize("dtype", [onp.float16, onp.float32])
def test_make_jvp_low_precision_tangents(name, dtype):
    cases.make_jvp_low_precision_tangents(name, dtype)


def test_std_of_constant_group_has_zero_gradient():
    x = onp.array([[1.0, 1.0, 1.0], [1.0, 2.0, 4.0]])
    g = grad(lambda x: np.sum(np.std(x, axis=1)))(x)
    assert onp.all(onp.isfinite(g)) and onp.all(g[0] == 0)
    assert onp.allclose(g[1], grad(lambda r: np.std(r))(x[1]))


# =============================================================================
# median: ties split evenly
# =============================================================================
@pytest.mark.parametrize("axis,keepdims", AXIS_KEEP)
@pytest.mark.parametrize("name", names("statistics", picks=True, nan=False))
def test_choosers(name, axis, keepdims):
    cases.chooser(name, axis, keepdims)


@pytest.mark.parametrize("n", [1, 2, 5, 6])
def test_median_middle_elements(n):
    x = distinct(3, n, seed=n)
    g = grad(lambda x: np.sum(np.median(x, axis=1)))(x)
    order = onp.argsort(x, axis=1)
    expect = onp.zeros_like(x)
    mids = [(n - 1) // 2, n // 2]
    for r in range(3):
        for k in mids:
            expect[r, order[r, k]] += 1.0 / len(mids)
    assert onp.allclose(g, expect)
    check_deep(lambda x: np.median(x, axis=1), x)


def test_median_ties():
    x = onp.array([1.0, 2.0, 2.0, 2.0, 7.0])
    assert onp.allclose(grad(np.median)(x), [0, 1 / 3, 1 / 3, 1 / 3, 0])
    x = onp.array([1.0, 2.0, 2.0, 7.0])
    assert onp.allclose(grad(np.median)(x), [0, 0.5, 0.5, 0])
    x = onp.array([1.0, 3.0, 9.0, 3.0, 8.0, 5.0])  # lower middle tied, upper alone
    assert onp.allclose(grad(np.median)(x), [0, 0.25, 0, 0.25, 0, 0.5])


# =============================================================================
# nan variants: nan entries get zero gradient
# =============================================================================
@pytest.mark.parametrize(
    "axis,keepdims", [(None, False), (0, False), (1, True), ((0, 1), False), (-1, False)]
)
@pytest.mark.parametrize("name", names("statistics", nan=True))
def test_nan_reductions(name, axis, keepdims):
    cases.nan_reduction(name, axis, keepdims)


@pytest.mark.parametrize("name", names("statistics", nan=True))
def test_nan_reductions_match_dropping_the_nans(name):
    cases.nan_matches_dropping_the_nans(name)


@pytest.mark.skipif(not VAR_MEAN_CORRECTION, reason="mean= is new in NumPy 2")
@pytest.mark.parametrize("name", ["nanvar", "nanstd"])
def test_nanvar_nanstd_given_mean(name):
    """mean= is honoured with and without nans (without nans the rule defers to var/std's)."""
    f, plain = getattr(np, name), getattr(np, name[3:])
    m = rand(3, 1, seed=9)
    xc = distinct(3, 4, seed=2)
    g1 = grad(lambda x: np.sum(f(x, axis=1, mean=m) ** 2))(xc)
    g2 = grad(lambda x: np.sum(plain(x, axis=1, mean=m) ** 2))(xc)
    assert onp.allclose(g1, g2)
    check_deep(lambda x: f(x, axis=1, ddof=1, mean=m), xc)
    check_deep(lambda x: f(x, axis=1, mean=m), with_nans(3, 4))


@pytest.mark.parametrize("case", cases.tricky_cases_of(FAMILY))
def test_jvp_agrees_with_vjp(case):
    cases.jvp_agrees_with_vjp(case)


# =============================================================================
# average
# =============================================================================
def test_average():
    a = rand(3, 4)
    w_full = rand(3, 4, positive=True)
    w_row = rand(4, positive=True)
    w_col = rand(3, positive=True)
    check_deep(lambda a: np.average(a), a)
    check_deep(lambda a: np.average(a, 1), a)
    check_deep(lambda a: np.average(a, (0, 1), None, False, keepdims=True), a)
    check_deep(lambda a, w: np.average(a, None, w), a, w_full)
    check_deep(lambda a, w: np.average(a, 0, w), a, w_full)
    check_deep(lambda a, w: np.average(a, 1, w, False, keepdims=True), a, w_row)
    check_deep(lambda a, w: np.average(a, 0, w), a, w_col)
    check_deep(lambda a, w: np.average(a, -1, w), a, w_row)
    a3 = rand(2, 3, 4)
    try:
        onp.average(a3, (2, 0), rand(4, 2, positive=True))
    except TypeError:  # weights over a tuple of axes: NumPy >= 2.0
        with pytest.raises(TypeError):
            np.average(a3, (2, 0), rand(4, 2, positive=True))
        return
    check_deep(lambda a, w: np.average(a, (2, 0), w), a3, rand(4, 2, positive=True))
    check_deep(lambda a, w: np.average(a, (0, 2), w), a3, rand(2, 4, positive=True))


@contextlib.contextmanager
def container_tangents():
    """The engine's tangent fixer applied leafwise to a tuple output (average's returned=True),
    for as long as gradcy.numpy._util.match_tangent handles arrays only."""

    def fixer(t, ans):
        if isinstance(ans, tuple):
            return tuple(None if ti is None else match_tangent(ti, ai) for ti, ai in zip(t, ans))
        return match_tangent(t, ans)

    install_hooks(tangent_fixer=fixer)
    try:
        yield
    finally:
        install_hooks(tangent_fixer=match_tangent)


@pytest.mark.parametrize("fwd", [False, True])
def test_average_returned(fwd):
    """returned=True: the sum of weights depends on the weights only. (Second order needs
    indexing a traced tuple one level up; forward mode needs the engine's tangent fixer to
    handle tuple outputs, which container_tangents stands in for.)"""
    a = rand(3, 4)
    w_row = rand(4, positive=True)
    w_full = rand(3, 4, positive=True)
    modes = ("fwd",) if fwd else ("rev",)
    with container_tangents() if fwd else contextlib.nullcontext():
        for w in (w_row, w_full):
            check(
                lambda a, w: np.sum(np.average(a, 1, w, True)[0] * np.average(a, 1, w, True)[1]),
                a,
                w,
                order=1,
                modes=modes,
            )
        check(lambda a: np.average(a, 1, None, True)[0], a, order=1, modes=modes)
        check(
            lambda a, w: np.average(a, 0, w, True, keepdims=True)[1] * 1.0,
            a,
            w_full,
            order=1,
            modes=modes,
        )
        if fwd:
            a32, w32 = a.astype(onp.float32), w_row.astype(onp.float32)
            for i in (0, 1):
                (avg, scl), (t_avg, t_sum) = raw_tangent(
                    lambda a, w: np.average(a, 1, w, True), (a32, w32), i
                )
                assert t_avg.dtype == avg.dtype == onp.float32 and t_avg.shape == avg.shape
                assert t_sum.dtype == scl.dtype and t_sum.shape == scl.shape
                if i == 0:
                    assert not t_sum.any()
                else:
                    assert onp.allclose(t_sum, 4.0)


def test_average_weights_dtype():
    a = rand(3, 4).astype(onp.float32)
    w = rand(4, positive=True)  # float64 weights: float64 output
    for i in (0, 1):
        c = raw_cotangent(lambda a, w: np.average(a, 1, w), (a, w), i)
        assert c.dtype == (a, w)[i].dtype and c.shape == (a, w)[i].shape


# =============================================================================
# what the tape keeps
# =============================================================================
@pytest.mark.parametrize("name", FAMILY)
def test_saved_set(name):
    cases.saved_set(name)
