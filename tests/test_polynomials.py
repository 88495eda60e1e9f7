"""Gradient checks of gradcy/numpy/polynomials.py: convolve, correlate, the poly* functions."""

import numpy as onp
import pytest

import gradcy.numpy as np
from gradcy import grad
from vjp_harness import check, rand


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
