"""Gradient checks of gradcy/numpy/vjps_more.py (statistics, interpolation, signals,
polynomials, ranges, selections, conversions), plus a walk over the NumPy functions autograd
never differentiated and NumPy 2's new names."""
import inspect
import warnings

import numpy as onp
import pytest

import gradcy.numpy as np
from gradcy import grad, make_jvp, make_vjp
from gradcy._core import ArrayMeta, Tape
from gradcy.numpy import numpy_wrapper as W
from gradcy.numpy import calculus, indexing, polynomials, statistics
from gradcy.test_util import check_grads
from vjp_harness import check, rand

# NumPy 1.26 names trapezoid trapz, and has no unstack, cumulative_sum, cumulative_prod
trapezoid = getattr(np, "trapezoid", None) or np.trapz
needs = pytest.mark.skipif
_PRIMS = [W.append, W.insert, W.delete, W.resize, W.diagflat, W.extract, indexing._choose_p, indexing._select_p,
          W.meshgrid, W.broadcast_arrays, W.trim_zeros, W.sort_complex,
          W.asanyarray, W.ascontiguousarray, W.asfortranarray, W.asarray_chkfinite, W.require,
          W.unwrap, W.real_if_close, W.nextafter, W.modf, W.frexp, W.divmod, W.i0,
          W.diff, W.ediff1d, W.gradient, calculus._trapezoid,
          W.convolve, W.correlate, W.polyadd, W.polysub, W.polymul, W.polyder, W.polyint,
          W.polyval, W.vander, W.linspace, W.logspace, W.geomspace, W.quantile, W.percentile,
          W.nanquantile, W.nanpercentile, W.cov, W.corrcoef, W.interp, W.full, W.full_like,
          W.bincount] + [
    getattr(W, n) for n in ("unstack", "cumulative_sum", "cumulative_prod") if hasattr(W, n)]
COVERED = {p.name for p in _PRIMS}


def total(outs):
    """A scalar mixing every entry of a list of outputs with fixed random weights (the checks
    need a traced array output, not a list)."""
    s = 0.0
    for i, y in enumerate(outs):
        s = s + np.sum(y * rand(*onp.shape(y), seed=3 + i))
    return s


# =============================================================================
# Selections
# =============================================================================
def test_append():
    x, v = rand(3, 4), rand(2, 4)
    check(lambda a, b: np.append(a, b), x, v)
    check(lambda a, b: np.append(a, b, axis=0), x, v)
    check(lambda a, b: np.append(a, b, 1), x, rand(3, 2))
    check(lambda a: np.append(a, 2.0), rand(3))


def test_insert():
    x = rand(3, 4)
    check(lambda a, v: np.insert(a, 1, v, axis=0), x, rand(4))
    check(lambda a, v: np.insert(a, 2, v, axis=1), x, rand(3))
    check(lambda a, v: np.insert(a, [0, 2, 2], v), rand(5), rand(3))
    check(lambda a, v: np.insert(a, slice(0, 3), v, axis=1), x, rand(3, 1))
    # a broadcast value: its cotangent sums over every copy
    check(lambda a, v: np.insert(a, [1, 3], v, axis=1), x, onp.asarray(rand(1)[0]))
    check(lambda a: np.insert(a, 1, [5.0, 6.0]), rand(4))


def test_delete():
    x = rand(3, 5)
    check(lambda a: np.delete(a, [0, 2], axis=1), x)
    check(lambda a: np.delete(a, 4), x)
    check(lambda a: np.delete(a, slice(0, None, 2), 0), x)
    check(lambda a: np.delete(a, onp.array([True, False, True, False, False]), axis=1), x)


def test_resize_diagflat_extract():
    x = rand(2, 3)
    check(lambda a: np.resize(a, (4, 4)), x)
    check(lambda a: np.resize(a, (5,)), x)
    check(lambda a: np.diagflat(a), rand(3))
    check(lambda a: np.diagflat(a, -1), rand(2, 2))
    check(lambda a: np.extract(x > 0, a), x)


def test_choose():
    idx = onp.array([[0, 1, 2], [2, 1, 0]])
    c = rand(3, 2, 3)
    check(lambda ch: np.choose(idx, ch), c)
    check(lambda ch: np.choose(idx + 2, ch, mode="wrap"), c)
    check(lambda ch: np.choose(idx * 2, ch, mode="clip"), c)
    # a list of traced choices (with broadcasting): the front end stacks them
    check(lambda a, b: np.choose(idx % 2, [a, b]), rand(2, 3), rand(3))
    check(lambda a: onp.choose(idx % 2, [a, 2.0 * a]), rand(2, 3))
    # repeated picks of one element of a broadcast choice accumulate
    check(lambda ch: np.choose(onp.zeros((4, 3), int), ch), rand(1, 1, 3))


def test_select():
    x = rand(4, 3)
    conds = [x < -0.5, x > 0.5]
    check(lambda a, b: np.select(conds, [a, b]), rand(4, 3), rand(3))
    check(lambda a, b, d: np.select(conds, [a, b], d), rand(4, 3), rand(4, 3), rand(3))
    check(lambda ch: np.select(conds, ch, 1.5), rand(2, 4, 3))


def test_meshgrid_unstack_broadcast_arrays():
    a, b = rand(3), rand(4)
    check(lambda u, v: total(np.meshgrid(u, v)), a, b)
    check(lambda u, v: np.meshgrid(u, v, indexing="ij")[1] * 2.0, a, b)
    check(lambda u, v: np.meshgrid(u, v, sparse=True)[0], a, b)
    check(lambda u: np.meshgrid(u, onp.arange(2.0))[0], a)
    x = rand(2, 3, 2)
    if hasattr(np, "unstack"):              # NumPy >= 2.1
        check(lambda u: total(np.unstack(u, axis=1)), x)
        check(lambda u: np.unstack(u)[1], x)
    check(lambda u, v: total(np.broadcast_arrays(u, v)), rand(3, 1), rand(4))
    check(lambda u: np.broadcast_arrays(u, onp.ones((2, 3)))[0], rand(3))
    check(lambda u, v: np.broadcast_arrays(u, v)[1], rand(3, 1), rand(4))


def test_block():
    a, b = rand(2, 2), rand(2, 3)
    check(lambda u, v: np.block([[u, v], [v[:, :2], onp.ones((2, 3))]]), a, b)
    check(lambda u, v: np.block([u, 1.0, v]), rand(3), rand(2))
    check(lambda u: np.block([[u], [u]]), rand(3))
    check(lambda u: onp.block([[u, u]]), rand(2, 2))
    want = onp.block([[a, b], [b[:, :2], onp.ones((2, 3))]])
    assert onp.array_equal(np.block([[a, b], [b[:, :2], onp.ones((2, 3))]]), want)
    with pytest.raises(ValueError):
        grad(lambda u: np.sum(np.block([u, [u]])))(rand(2))


def test_trim_zeros_and_sort_complex():
    mask = onp.array([0, 0, 1, 1, 0, 1, 0.0])
    check(lambda a: np.trim_zeros(a * mask), rand(7))
    check(lambda a: np.trim_zeros(a * mask, "f"), rand(7))
    m2 = onp.zeros((4, 5))
    m2[1:3, 1:4] = 1.0
    if "axis" in inspect.signature(onp.trim_zeros).parameters:     # n-d: NumPy >= 2.2
        check(lambda a: np.trim_zeros(a * m2), rand(4, 5))
        check(lambda a: np.trim_zeros(a * m2, axis=1), rand(4, 5))
    check(lambda a: np.sort_complex(a), rand(5))
    z = rand(2, 4) + 1j * rand(2, 4, seed=1)
    check(lambda a: np.sort_complex(a), z)


# =============================================================================
# Conversions and tuple-valued ufuncs
# =============================================================================
def test_conversions():
    x = rand(3, 4)
    check(lambda a: np.asanyarray(a), x)
    check(lambda a: np.ascontiguousarray(a), onp.asarray(0.3))     # 0-d in, 1-d out
    check(lambda a: np.ascontiguousarray(a.T), x)
    check(lambda a: np.asfortranarray(a), x)
    check(lambda a: np.asarray_chkfinite(a), x)
    check(lambda a: np.require(a, requirements="F"), x)
    check(lambda a: np.require(a, onp.float64), x)
    jumps = onp.array([0.0, 3.0, 6.5, 0.2, 7.0])
    check(lambda a: np.unwrap(a + jumps), rand(5, seed=4))
    check(lambda a: np.unwrap(a, axis=0), rand(3, 2) * 4.0)
    check(lambda a: np.real_if_close(a), x)
    check(lambda a: np.nextafter(a, 10.0), x)
    check(lambda a: np.nextafter(a, onp.zeros(4)), x)


def test_full_primitives():
    """numpy_wrapper.full / full_like: the fill value's cotangent sums the broadcast copies."""
    check(lambda f: W.full((2, 3), f), 0.7)
    check(lambda f: W.full((2, 3), f), rand(3))
    check(lambda f: W.full_like(onp.zeros((4, 2)), f), rand(2))
    check(lambda f: W.full((2,), f, onp.float64), onp.asarray(0.2))
    assert grad(lambda f: 1.0 * np.sum(W.full((3,), f, dtype=int)))(0.5) == 0.0


def test_real_if_close_complex_to_real():
    z = rand(3) + 1e-20j
    vjp, ans = make_vjp(lambda a: np.real_if_close(a))(z)
    try:
        assert ans.dtype.kind == "f"
        g = vjp(onp.ones(3))
    finally:
        vjp.release()
    assert g.dtype == z.dtype and onp.allclose(g, 1.0)
    _, t = make_jvp(lambda a: np.real_if_close(a))(z)(onp.full(3, 1 + 2j))
    assert onp.allclose(t, 1.0) and onp.asarray(t).dtype.kind == "f"


def test_modf_frexp_divmod():
    x = rand(3, 4) * 3.0
    check(lambda a: np.modf(a)[0], x)
    check(lambda a: np.modf(a)[0] * np.modf(a)[1], x)
    check(lambda a: np.frexp(a)[0], x)
    check(lambda a, b: np.divmod(a, b)[1], x, rand(4, positive=True))
    check(lambda a, b: np.divmod(a, b)[0] + np.divmod(a, b)[1] ** 2, x, 1.3)
    m, e = np.frexp(x)
    assert onp.allclose(onp.ldexp(m, e), x)


def test_i0():
    check(np.i0, rand(3, 2))
    check(np.i0, rand(4) * 3.0)


# =============================================================================
# cumulative_sum, cumulative_prod, diff, ediff1d, gradient, trapezoid
# =============================================================================
@needs(not hasattr(onp, "cumulative_sum"), reason="NumPy >= 2.1")
def test_cumulative():
    x = rand(3, 4)
    check(lambda a: np.cumulative_sum(a, axis=1), x)
    check(lambda a: np.cumulative_sum(a, axis=0, include_initial=True), x)
    check(lambda a: np.cumulative_sum(a), rand(5))
    check(lambda a: np.cumulative_prod(a, axis=1), x)
    check(lambda a: np.cumulative_prod(a, axis=0, include_initial=True), x)
    check(lambda a: np.cumulative_prod(a, include_initial=True), rand(5))
    z = x.copy()
    z[1, 2] = 0.0
    check(lambda a: np.cumulative_prod(a * (z != 0), axis=1, include_initial=True), x)


def test_diff():
    x = rand(4, 5)
    check(lambda a: np.diff(a), x)
    check(lambda a: np.diff(a, 2, 0), x)
    check(lambda a: np.diff(a, 3), x)
    check(lambda a: np.diff(a, 0), x)
    check(lambda a, p: np.diff(a, 0, 1, p) * 2.0, x, rand(4, 1))
    check(lambda a, p, q: np.diff(a, 1, 1, p, q), x, rand(4, 2), rand(4, 1))
    check(lambda a, p: np.diff(a, 2, 0, p), x, rand(1, 5))
    check(lambda a, p: np.diff(a, 1, -1, p), x, onp.asarray(0.3))
    check(lambda a: np.diff(a, prepend=1.0, append=onp.zeros((4, 1))), x)


def test_ediff1d():
    check(lambda a: np.ediff1d(a), rand(3, 2))
    check(lambda a, e, b: np.ediff1d(a, e, b), rand(5), rand(2), rand(3))
    check(lambda a, e: np.ediff1d(a, e), rand(1), onp.asarray(0.5))
    check(lambda a: np.ediff1d(a, to_begin=[1.0, 2.0], to_end=3.0), rand(4))


def test_gradient():
    x2 = rand(5, 4)
    check(lambda a: np.gradient(a), rand(6))
    check(lambda a: np.gradient(a, 0.5, edge_order=2), rand(6))
    check(lambda a: total(np.gradient(a)), x2)
    coords = onp.array([0.0, 0.3, 1.0, 1.2, 2.0])
    check(lambda a: np.gradient(a, coords, axis=0), x2)
    check(lambda a: np.gradient(a, coords, axis=0, edge_order=2), x2)
    check(lambda a: np.gradient(a, 2.0, coords[:4], edge_order=2)[1], x2)
    check(lambda a: np.gradient(a, axis=-1), rand(2, 2))
    check(lambda a: np.gradient(a, axis=(0, 1))[0], rand(3, 3))


def test_trapezoid():
    y = rand(3, 5)
    check(lambda a: trapezoid(a), y)
    check(lambda a: trapezoid(a, axis=0), y)
    check(lambda a, x: trapezoid(a, x), y, onp.sort(rand(5)))
    check(lambda a, x: trapezoid(a, x, axis=0), y, onp.sort(rand(3, 5), axis=0))
    check(lambda a, dx: trapezoid(a, None, dx), y, 0.7)
    check(lambda a, dx: trapezoid(a, None, dx, 0), y, onp.asarray(0.7))
    check(lambda a, x: trapezoid(a, x), rand(5), onp.sort(rand(3, 5), axis=1))


# =============================================================================
# convolve, correlate, polynomials
# =============================================================================
@pytest.mark.parametrize("mode", ["full", "same", "valid"])
@pytest.mark.parametrize("nm", [(5, 3), (3, 5), (4, 4), (2, 6), (1, 3)])
def test_convolve_correlate(mode, nm):
    n, m = nm
    a, v = rand(n, seed=1), rand(m, seed=2)
    check(lambda p, q: np.convolve(p, q, mode), a, v)
    check(lambda p, q: np.correlate(p, q, mode), a, v)


def test_convolve_correlate_complex_and_defaults():
    a = rand(5) + 1j * rand(5, seed=1)
    v = rand(3, seed=2) + 1j * rand(3, seed=3)
    check(lambda p, q: np.convolve(p, q, "same"), a, v)
    check(lambda p, q: np.correlate(p, q, "full"), a, v)
    check(lambda p, q: np.correlate(p, q), rand(6), v)
    check(lambda p, q: np.convolve(p, q), rand(4), rand(4, seed=5))
    check(lambda p: np.convolve(p, 2.0), rand(3))


def test_polynomials():
    p, q = rand(4), rand(2)
    check(lambda a, b: np.polyadd(a, b), p, q)
    check(lambda a, b: np.polysub(a, b), q, p)
    check(lambda a, b: np.polymul(a, b), p, q)
    check(lambda a, b: np.polymul(a * onp.array([0.0, 1, 1, 1]), b), p, q)
    check(lambda a: np.polyder(a), p)
    check(lambda a: np.polyder(a, 2), p)
    check(lambda a: np.polyder(a, 0), p)
    check(lambda a: np.polyint(a), p)
    check(lambda a: np.polyint(a, 2), p)
    check(lambda a, x: np.polyval(a, x), p, rand(3, 2))
    check(lambda a, x: np.polyval(a, x), p, 0.4)
    check(lambda a, x: np.polyval(a, x), rand(1), rand(3))
    check(lambda x: np.vander(x), rand(4))
    check(lambda x: np.vander(x, 3, increasing=True), rand(5))
    check(lambda x: np.vander(x), rand(3) + 1j * rand(3, seed=1))
    assert grad(lambda a: np.sum(np.polyder(a, 5)))(p).tolist() == [0.0] * 4


# =============================================================================
# linspace, logspace, geomspace
# =============================================================================
def test_linspace():
    check(lambda a, b: np.linspace(a, b, 5), 0.3, 1.7)
    check(lambda a, b: np.linspace(a, b, 4, endpoint=False), rand(3), rand(3, seed=1))
    check(lambda a, b: np.linspace(a, b, 3, axis=1), rand(2), rand(2, 1, seed=1))
    check(lambda a, b: np.linspace(a, b, 3, axis=-1), rand(2, 2), 4.0)
    check(lambda a, b: np.linspace(a, b, 1), 0.2, 0.9)
    check(lambda a, b: np.linspace(a, b, 4, retstep=True)[1], 0.2, 0.9)
    check(lambda a, b: total(np.linspace(a, b, 4, retstep=True)), rand(2), rand(2, seed=1))
    assert grad(lambda a: 1.0 * np.sum(np.linspace(a, 5.0, 4, dtype=int)))(1.0) == 0.0


def test_logspace_geomspace():
    check(lambda a, b: np.logspace(a, b, 4), 0.2, 1.1)
    check(lambda a, b: np.logspace(a, b, 4, base=2.0, axis=1), rand(3), rand(3, seed=1))
    check(lambda a, b: np.logspace(a, b, 3, True, onp.array([2.0, 3.0])), 0.1, rand(2))
    check(lambda a, b: np.geomspace(a, b, 5), 0.5, 3.0)
    check(lambda a, b: np.geomspace(a, b, 4, endpoint=False, axis=-1),
          rand(2, positive=True), -rand(2, positive=True) * -1.0)
    check(lambda a, b: np.geomspace(a, b, 3), -2.0, -0.5)


# =============================================================================
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
# interp
# =============================================================================
def test_interp():
    xp = onp.array([0.0, 1.0, 2.5, 3.0, 4.5])
    fp = rand(5)
    x = onp.array([-0.5, 0.3, 1.0, 2.7, 4.5, 5.0, 3.9])
    check(lambda f: np.interp(x, xp, f), fp)
    check(lambda u: np.interp(u, xp, fp), x + 0.01)
    check(lambda u, f: np.interp(u, xp, f), x.reshape(7, 1) + 0.01, fp)
    check(lambda p: np.interp(x + 0.01, p, fp), xp)
    check(lambda f, l, r: np.interp(x, xp, f, l, r), fp, -1.0, 2.0)
    check(lambda f: np.interp(x, xp, f, period=4.0), fp)
    check(lambda u: np.interp(u, xp, fp, period=4.0), x + 0.01)
    check(lambda f: np.interp(x, xp, f), fp + 1j * rand(5, seed=2))
    check(lambda u: np.interp(u, xp, fp), 1.7)
    check(lambda f: np.interp(x, xp[:1], f), fp[:1])
    with pytest.raises(NotImplementedError):
        grad(lambda p: np.sum(np.interp(x, p, fp, period=4.0)))(xp)


# =============================================================================
# The functions autograd never differentiated, and NumPy 2's names: every one differentiates
# in both modes
# =============================================================================
_x = rand(4, 3)
_v = rand(5)
_w = rand(3)
_idx = onp.array([2, 0, 1])
NEVER_CLOSED = {
    "cumprod": (lambda a: np.cumprod(a, axis=0), _x),
    "flip": (lambda a: np.flip(a, 0), _x),
    "take": (lambda a: np.take(a, _idx), _x),
    "take_along_axis": (lambda a: np.take_along_axis(a, onp.zeros((1, 3), int), 0), _x),
    "ptp": (lambda a: np.ptp(a, axis=0), _x),
    "copy": (lambda a: np.copy(a), _x),
    "asarray": (lambda a: np.asarray(a), _x),
    "nansum": (lambda a: np.nansum(a, 0), _x),
    "nanmean": (lambda a: np.nanmean(a, 0), _x),
    "nanmax": (lambda a: np.nanmax(a, 0), _x),
    "nanmin": (lambda a: np.nanmin(a, 0), _x),
    "nanprod": (lambda a: np.nanprod(a, 0), _x),
    "nanstd": (lambda a: np.nanstd(a, 0), _x),
    "nanvar": (lambda a: np.nanvar(a, 0), _x),
    "median": (lambda a: np.median(a, 0), _x),
    "percentile": (lambda a: np.percentile(a, 30, axis=0), _x),
    "quantile": (lambda a: np.quantile(a, 0.3, axis=0), _x),
    "nanpercentile": (lambda a: np.nanpercentile(a, 30, axis=0), _x),
    "nanquantile": (lambda a: np.nanquantile(a, 0.3, axis=0), _x),
    "average": (lambda a: np.average(a, 0, weights=onp.arange(1.0, 5)), _x),
    "cov": (lambda a: np.cov(a), _x),
    "corrcoef": (lambda a: np.corrcoef(a), _x),
    "interp": (lambda a: np.interp(onp.array([0.5, 1.5]), onp.arange(5.0), a), _v),
    "convolve": (lambda a: np.convolve(a, _w), _v),
    "correlate": (lambda a: np.correlate(a, _w), _v),
    "trapezoid": (lambda a: trapezoid(a), _v),
    "vdot": (lambda a: np.vdot(a, a), _v),
    "cbrt": (lambda a: np.cbrt(a), _v),
    "fmod": (lambda a: np.fmod(a, 0.7), _v),
    "heaviside": (lambda a: np.heaviside(onp.array([0.0, 1.0, -1.0]), a), _w),
    "choose": (lambda a: np.choose(onp.array([0, 1, 0]), [a, 2 * a]), _w),
    "compress": (lambda a: np.compress([True, False, True], a), _w),
    "block": (lambda a: np.block([a, a]), _w),
    "broadcast_arrays": (lambda a: np.broadcast_arrays(a, _x)[0], _w),
    "x.dot": (lambda a: a.dot(a), _w),
    "x.take": (lambda a: a.take(_idx), _w),
    "x.copy": (lambda a: a.copy(), _w),
    "x.item": (lambda a: a[:1].item(), _w),
    "permute_dims": (lambda a: np.permute_dims(a, (1, 0)), _x),
    "matrix_transpose": (lambda a: np.matrix_transpose(a), _x),
    "vecdot": (lambda a: np.vecdot(a, a), _x),
    "matvec": (lambda a: np.matvec(a, _w), _x),
    "vecmat": (lambda a: np.vecmat(_w, a.T), _x),
    "concat": (lambda a: np.concat([a, a]), _x),
    "pow": (lambda a: np.pow(a, 3.0), _x),
    "acos": (lambda a: np.acos(a * 0.1), _x),
    "asin": (lambda a: np.asin(a * 0.1), _x),
    "atan": (lambda a: np.atan(a), _x),
    "atan2": (lambda a: np.atan2(a, 1.5), _x),
    "acosh": (lambda a: np.acosh(a * a + 1.5), _x),
    "asinh": (lambda a: np.asinh(a), _x),
    "atanh": (lambda a: np.atanh(a * 0.1), _x),
    "linspace": (lambda a: np.linspace(a, 2.0 * a, 4), _w),
    "diff": (lambda a: np.diff(a, 2), _v),
    "ediff1d": (lambda a: np.ediff1d(a), _v),
    "gradient": (lambda a: np.gradient(a), _v),
    "append": (lambda a: np.append(a, a), _w),
    "insert": (lambda a: np.insert(_v, 1, a), _w),
    "delete": (lambda a: np.delete(a, 1), _w),
    "real_if_close": (lambda a: np.real_if_close(a), _w),
    "cumulative_sum": (lambda a: np.cumulative_sum(a, axis=0), _x),
    "cumulative_prod": (lambda a: np.cumulative_prod(a, axis=1), _x),
    "kron": (lambda a: np.kron(a, _x), _w),
    "outer": (lambda a: np.outer(a, _w), _w),
    "nan_to_num": (lambda a: np.nan_to_num(a), _w),
}


@pytest.mark.parametrize("name", sorted(NEVER_CLOSED))
@pytest.mark.parametrize("mode", ["rev", "fwd"])
def test_never_closed(name, mode):
    if "." not in name and not hasattr(np, name):
        pytest.skip(f"numpy.{name} is new in NumPy 2")
    fun, x = NEVER_CLOSED[name]
    check_grads(fun, modes=(mode,), order=1)(x)


def test_ptp_method():
    """x.ptp() exists on traced values (NumPy 2 removed ndarray.ptp, so no numerical check of
    the plain function): its gradient is +1 at the max, -1 at the min."""
    x = onp.array([0.5, -1.0, 2.0, 0.1])
    assert onp.allclose(grad(lambda a: a.ptp())(x), [0, -1, 1, 0])
    _, t = make_jvp(lambda a: a.ptp())(x)(onp.array([1.0, 2.0, 3.0, 4.0]))
    assert onp.isclose(t, 1.0)


def test_where_one_argument_and_around_are_constants():
    x = rand(5)
    g = grad(lambda a: np.sum(a) + np.sum(np.where(a > 0)[0]) + np.sum(np.around(a)))(x)
    assert onp.allclose(g, 1.0)


@pytest.mark.parametrize("name", indexing._NONDIFFERENTIABLE)
def test_nondifferentiable(name):
    if not hasattr(onp, name):
        pytest.skip(f"numpy.{name} is new in NumPy 2")
    p = getattr(W, name)
    assert p.traced is False


def test_nondifferentiable_pass_through():
    x = rand(6)
    g = grad(lambda a: np.sum(a * a) + np.nanargmax(a))(x)
    assert onp.allclose(g, 2 * x)


# =============================================================================
# Saved sets
# =============================================================================
def _record(fun, *args):
    t = Tape()
    try:
        boxes = [t.new_leaf(a) for a in args]
        y = fun(*boxes)
        info = t.node_info(y._node)
        return info["primitive"], info["saved"]
    finally:
        t.release()


_SAVED = [
    # (function of traced args, args, positions whose arrays are kept, keeps the output)
    (lambda a, v: np.append(a, v), (rand(3), rand(2)), (), False),
    (lambda a, v: np.insert(a, onp.array([1, 2]), v), (rand(3), rand(2)), (1,), False),
    (lambda a: np.delete(a, onp.array([1])), (rand(3),), (1,), False),
    (lambda a: np.resize(a, (5,)), (rand(3),), (), False),
    (lambda a: np.diagflat(a), (rand(3),), (), False),
    (lambda a: np.extract(onp.array([True, False, True]), a), (rand(3),), (0,), False),
    (lambda a: indexing._choose_p(onp.array([0, 1]), a), (rand(2, 2),), (0,), False),
    (lambda a: indexing._select_p([onp.array([True, False])], a), (rand(1, 2),), (0,), False),
    (lambda a: np.trim_zeros(a), (rand(3),), (0,), False),
    (lambda a: np.sort_complex(a), (rand(3),), (0,), False),
    (lambda a: np.asanyarray(a), (rand(3),), (), False),
    (lambda f: W.full((2, 3), f), (rand(3),), (), False),
    (lambda a: np.unwrap(a), (rand(3),), (), False),
    (lambda a: np.real_if_close(a), (rand(3),), (), False),
    (lambda a: np.nextafter(a, 1.0), (rand(3),), (), False),
    (lambda a: np.i0(a), (rand(3),), (0,), False),
    *([(lambda a: np.cumulative_sum(a), (rand(3),), (), False),
       (lambda a: np.cumulative_prod(a), (rand(3),), (0,), True)]
      if hasattr(np, "cumulative_sum") else []),            # NumPy >= 2.1
    (lambda a: np.diff(a), (rand(3),), (), False),
    (lambda a: np.ediff1d(a), (rand(3),), (), False),
    (lambda a: np.gradient(a, onp.arange(3.0)), (rand(3),), (1,), False),
    (lambda a, x: trapezoid(a, x), (rand(3), rand(3)), (0, 1), False),
    (lambda a, v: np.convolve(a, v), (rand(3), rand(2)), (0, 1), False),
    (lambda a, v: np.polyadd(a, v), (rand(3), rand(2)), (), False),
    (lambda a, v: np.polymul(a, v), (rand(3), rand(2)), (0, 1), False),
    (lambda a: np.polyder(a), (rand(3),), (), False),
    (lambda a: np.polyint(a), (rand(3),), (), False),
    (lambda a, x: np.polyval(a, x), (rand(3), rand(2)), (0, 1), False),
    (lambda a: np.vander(a), (rand(3),), (0,), False),
    (lambda a, b: np.linspace(a, b, 3), (rand(2), rand(2)), (), False),
    (lambda a, b: np.logspace(a, b, 3), (rand(2), rand(2)), (), True),
    (lambda a, b: np.geomspace(a, b, 3), (rand(2, positive=True), rand(2, positive=True)),
     (0, 1), True),
    (lambda a, q: np.quantile(a, q), (rand(3), rand(2, low=0, high=1)), (0, 1), False),
    (lambda a: np.cov(a), (rand(2, 3),), (0,), False),
    (lambda a: np.corrcoef(a), (rand(2, 3),), (0,), False),
    (lambda f: np.interp(onp.array([0.5]), onp.arange(3.0), f), (rand(3),), (0, 1, 2), False),
]


@pytest.mark.parametrize("case", range(len(_SAVED)))
def test_saved_set(case):
    fun, args, kept, keeps_ans = _SAVED[case]
    name, (ans, sargs, kwargs) = _record(fun, *args)
    if keeps_ans:
        assert type(ans) is not ArrayMeta, f"{name} dropped its output"
    else:
        assert not isinstance(ans, onp.ndarray), f"{name} keeps its output"
    for i, a in enumerate(sargs):
        if i in kept:
            assert type(a) is not ArrayMeta, f"{name} dropped argument {i}"
        else:
            assert not isinstance(a, onp.ndarray), f"{name} keeps array argument {i}"


# the rule files that hold this table's rules, and the primitives of theirs that other tables test
_MODULES = {m.__name__ for m in (calculus, indexing, polynomials, statistics)}
_OTHER_TABLES = ["_wrap.getitem", "take", "take_along_axis", "compress", "cumsum", "cumprod",
                 "nancumsum", "nancumprod", "average", "median", "nanmedian", "var", "std",
                 "nanvar", "nanstd"]


def test_every_primitive_of_this_table_is_covered():
    """Every primitive whose rules are defined in this table's rule files is listed in COVERED."""
    mine = set()
    for p in list(vars(W).values()) + [indexing._choose_p, indexing._select_p]:
        if not hasattr(p, "vjpmakers"):
            continue
        rules = list(p.vjpmakers.values()) + [p.vjp_argnums]
        if any(getattr(r, "__module__", None) in _MODULES for r in rules if r is not None):
            mine.add(p.name)
    mine -= {f"gradcy.numpy.{n}" for n in _OTHER_TABLES}
    assert mine, "no rules found"
    assert mine <= COVERED, sorted(mine - COVERED)


def test_operator_counts_script():
    """benchmarks/operator_counts.py counts this table's primitives and the verified
    composites (block, choose, select...), and leaves out the non-differentiable ones."""
    import importlib.util
    import pathlib
    path = pathlib.Path(__file__).parent.parent / "benchmarks" / "operator_counts.py"
    spec = importlib.util.spec_from_file_location("operator_counts", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    counts = mod._by_module(mod.gradcy_counts())
    numpy_names = counts["numpy"]
    mine = {p.name.rsplit(".", 1)[-1] for p in _PRIMS} - {"choose", "select", "full",
                                                          "full_like"}
    assert mine <= numpy_names, sorted(mine - numpy_names)
    assert {"block", "choose", "select", "stack", "concatenate"} <= numpy_names
    assert not {"nanargmax", "unique_values", "spacing"} & numpy_names
    assert {"eig", "svd", "qr", "slogdet"} <= counts["numpy.linalg"]


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
