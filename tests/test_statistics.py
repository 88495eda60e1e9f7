"""Gradient checks of gradcy/numpy/statistics.py: quantiles, cov, corrcoef, histograms, bincount
(and the window constructors' counts)."""
import warnings

import numpy as onp
import pytest

import gradcy.numpy as np
from gradcy import grad
from vjp_harness import check, rand


# Quantiles
# =============================================================================
@pytest.mark.parametrize("method", ["linear", "lower", "higher", "nearest", "midpoint",
                                    "weibull", "hazen", "median_unbiased", "normal_unbiased",
                                    "inverted_cdf", "averaged_inverted_cdf",
                                    "closest_observation", "interpolated_inverted_cdf"])
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


# Histograms (traced bin edges), bincount's weights, window lengths
# =============================================================================
_HX, _HY = rand(7, seed=4), rand(7, seed=5)


def test_bincount_weights():
    idx = onp.array([0, 2, 2, 1, 0, 5, 2])
    check(lambda w: np.bincount(idx, w), _HX)
    check(lambda w: np.bincount(idx, w, 8), _HX)
    onp.testing.assert_array_equal(np.bincount(idx, _HX), onp.bincount(idx, _HX))
    # the indices carry no gradient; an unweighted count is an integer constant
    assert onp.array_equal(grad(lambda w: np.sum(w) + 1.0 * np.sum(np.bincount(idx)))(_HX),
                           onp.ones(7))


def test_histogram_edges_follow_the_data():
    check(lambda a: np.histogram(a, 4)[1], _HX)
    check(lambda a: np.histogram(a, "auto")[1], _HX)
    check(lambda a: np.histogram(a, 3, density=True)[0], _HX)
    check(lambda a: np.histogram_bin_edges(a, 5), _HX)
    check(lambda a: np.histogram(onp.array([0.2, 0.4]), a)[1], onp.array([0.0, 0.3, 1.0]))
    check(lambda lo: np.histogram(_HX, 3, range=(lo, 2.5))[1], -2.5)
    check(lambda a: np.histogram(a, 2)[1], onp.array([0.25]))      # min == max: widened
    check(lambda a: np.histogram2d(a, _HY, 3)[1], _HX)
    check(lambda a: np.histogram2d(a, _HY, [2, 3], density=True)[0], _HX)
    check(lambda a: np.histogramdd(np.stack([a, _HY], 1), (2, 3), density=True)[0], _HX)
    check(lambda a: np.histogramdd(a, 3)[1][0], _HX)


def test_histogram_values_match_numpy():
    def values(a):
        for got, want in [(np.histogram(a, 4, density=True), onp.histogram(_HX, 4, density=True)),
                          (np.histogram(a, "fd"), onp.histogram(_HX, "fd")),
                          (np.histogram2d(a, _HY, 3, density=True),
                           onp.histogram2d(_HX, _HY, 3, density=True))]:
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


@pytest.mark.parametrize("name", ["bartlett", "blackman", "hamming", "hanning"])
def test_window_length_is_a_count(name):
    onp.testing.assert_array_equal(getattr(np, name)(6), getattr(onp, name)(6))
    with pytest.raises(TypeError, match=f"{name}: M, the number of points, is traced"):
        grad(lambda m: np.sum(getattr(np, name)(m)))(6.0)
