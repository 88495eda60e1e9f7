"""Gradient checks of gradcy/numpy/calculus.py: cumsum, cumprod, nancumsum, nancumprod,
cumulative_sum, cumulative_prod, diff, ediff1d, gradient, trapezoid, interp."""

import numpy as onp
import pytest

import gradcy.numpy as np
import reduction_cases as cases
from gradcy import grad, make_vjp
from op_records.reductions import names
from reduction_cases import with_nans
from vjp_harness import check, check_deep, rand, total

FAMILY = names("calculus")
COVERED = {f"gradcy.numpy.{n}" for n in FAMILY}

# NumPy 1.26 names trapezoid trapz, and has no unstack, cumulative_sum, cumulative_prod
trapezoid = getattr(np, "trapezoid", None) or np.trapz
needs = pytest.mark.skipif


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


# =============================================================================
# cumsum, cumprod, nancumsum, nancumprod
# =============================================================================
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


def _cumprod_brute(x, u):
    """sum_i u_i d cumprod(x)_i / d x_j along the last axis, by brute force."""
    out = onp.zeros_like(x)
    n = x.shape[-1]
    for r in onp.ndindex(*x.shape[:-1]):
        for j in range(n):
            for i in range(j, n):
                others = onp.prod([x[r + (k,)] for k in range(i + 1) if k != j])
                out[r + (j,)] += u[r + (i,)] * others
    return out


@pytest.mark.parametrize(
    "zeros", [[], [(0, 2)], [(0, 0)], [(0, 4)], [(0, 1), (0, 3)], [(0, 1), (1, 1), (1, 2)]]
)
def test_cumprod_with_zeros(zeros):
    x = rand(2, 5, positive=True) * onp.array([1, -1, 1, 1, -1])
    for idx in zeros:
        x[idx] = 0.0
    u = rand(2, 5, seed=4)
    vjp, _ = make_vjp(lambda x: np.cumprod(x, axis=1))(x)
    g = vjp(u)
    vjp.release()
    assert onp.allclose(g, _cumprod_brute(x, u))
    vjp, _ = make_vjp(lambda x: np.cumprod(x.T, axis=0))(x)
    assert onp.allclose(vjp(u.T), _cumprod_brute(x, u))
    vjp.release()
    per_row = onp.array([sum(1 for r, _ in zeros if r == row) for row in range(2)])
    if per_row.max() <= 1:  # exact to second order with one zero per slice
        check_deep(lambda x: np.cumprod(x, axis=1), x)
    else:
        check_deep(lambda x: np.cumprod(x, axis=1), x, order=1)


@pytest.mark.parametrize("axis", [None, 0, 1, -1])
def test_cumsum_cumprod_axes(axis):
    x = rand(3, 4, positive=True)
    check_deep(lambda x: np.cumsum(x, axis=axis), x)
    check_deep(lambda x: np.cumprod(x, axis=axis), x)
    x3 = rand(2, 3, 2)
    check_deep(lambda x: np.cumsum(x, axis=axis), x3)


@pytest.mark.parametrize("axis", [None, 0, 1])
def test_nancumsum_nancumprod(axis):
    x = with_nans(3, 4)
    xp = onp.where(onp.isnan(x), x, onp.abs(x) * 0.3 + 0.5)
    check_deep(lambda x: np.nancumsum(x, axis=axis), x)
    check_deep(lambda x: np.nancumprod(x, axis=axis), xp)
    for f, v in [(np.nancumsum, x), (np.nancumprod, xp)]:
        g = grad(lambda x: np.sum(f(x, axis=axis)))(v)
        assert onp.all(g[onp.isnan(v)] == 0) and onp.all(onp.isfinite(g))


@pytest.mark.parametrize("case", cases.tricky_cases_of(FAMILY))
def test_jvp_agrees_with_vjp(case):
    cases.jvp_agrees_with_vjp(case)


@pytest.mark.parametrize("name", FAMILY)
def test_saved_set(name):
    cases.saved_set(name)
