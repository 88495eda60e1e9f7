"""Gradient checks of gradcy/numpy/calculus.py: cumulative_sum, cumulative_prod, diff, ediff1d,
gradient, trapezoid, interp."""
import numpy as onp
import pytest

import gradcy.numpy as np
from gradcy import grad
from vjp_harness import check, rand, total

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
