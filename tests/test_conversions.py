"""Gradient checks of the conversions and ranges of gradcy/numpy/manipulation.py (asanyarray ...
require real_if_close unwrap full, linspace logspace geomspace) and of the tuple-valued ufuncs of
gradcy/numpy/elementwise.py (modf frexp divmod, i0)."""

import numpy as onp

import gradcy.numpy as np
from gradcy import grad, make_jvp, make_vjp
from gradcy.numpy import numpy_wrapper as W
from vjp_harness import check, rand, total


# Conversions and tuple-valued ufuncs
# =============================================================================
def test_conversions():
    x = rand(3, 4)
    check(lambda a: np.asanyarray(a), x)
    check(lambda a: np.ascontiguousarray(a), onp.asarray(0.3))  # 0-d in, 1-d out
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
    check(
        lambda a, b: np.geomspace(a, b, 4, endpoint=False, axis=-1),
        rand(2, positive=True),
        -rand(2, positive=True) * -1.0,
    )
    check(lambda a, b: np.geomspace(a, b, 3), -2.0, -0.5)


# =============================================================================
