"""Derivative checks of gradcy.scipy.linalg (sqrtm, solve_sylvester, solve_triangular,
solve_banded, cho_factor/cho_solve), gradcy.scipy.signal.convolve and
gradcy.scipy.integrate.odeint: numerical checks (forward and reverse mode), the float32
contract, autograd as an oracle on the same inputs, and the saved sets."""

import importlib
import sys

import numpy as onp
import pytest
import scipy.integrate
import scipy.linalg
import scipy.signal

import gradcy.numpy as np
from gradcy import grad, make_jvp, make_vjp
from gradcy._core import ArrayMeta, MissingVJPError
from gradcy.scipy import integrate as gsi
from gradcy.scipy import linalg as gsl
from gradcy.scipy import signal as gss
from gradcy.test_util import check_grads
from vjp_harness import check, check_dtype, saved_record

COVERED = {
    "gradcy.scipy.linalg.sqrtm",
    "gradcy.scipy.linalg.solve_sylvester",
    "gradcy.scipy.linalg.solve_triangular",
    "gradcy.scipy.linalg.solve_banded",
    "gradcy.scipy.linalg.cho_factor",
    "gradcy.scipy.signal.convolve",
    "gradcy.scipy.integrate.odeint",
}


def rs(seed):
    return onp.random.RandomState(seed)


def spd(n, seed=0):
    a = rs(seed).randn(n, n)
    return a @ a.T + n * onp.eye(n)


def well_conditioned(n, seed=0, complex_=False):
    a = rs(seed).randn(n, n) * 0.3 + 2.0 * onp.eye(n)
    if complex_:
        a = a + 0.3j * rs(seed + 1).randn(n, n)
    return a


def randn(*shape, seed=0, complex_=False):
    x = rs(seed).randn(*shape)
    return x + 1j * rs(seed + 7).randn(*shape) if complex_ else x


def grads_of(fun, args, G):
    """Gradients of sum(fun(*args) * G) wrt every argument (gradcy)."""
    return [grad(lambda *a: np.real(np.sum(fun(*a) * G)), i)(*args) for i in range(len(args))]


def autograd_grads(fun, args, G):
    ag = pytest.importorskip("autograd")
    import autograd.numpy as agnp

    return [
        ag.grad(lambda *a: agnp.real(agnp.sum(fun(*a) * G)), i)(*args) for i in range(len(args))
    ]


def assert_all_close(xs, ys, rtol=1e-8, atol=1e-10):
    for x, y in zip(xs, ys):
        onp.testing.assert_allclose(onp.asarray(x), onp.asarray(y), rtol=rtol, atol=atol)


# =============================================================================
# The optional extra: a clear ImportError without SciPy
# =============================================================================
@pytest.mark.parametrize("mod", ["linalg", "signal", "integrate"])
def test_import_error_without_scipy(monkeypatch, mod):
    for name in list(sys.modules):
        if name == "scipy" or name.startswith("scipy."):
            monkeypatch.setitem(sys.modules, name, None)
    monkeypatch.delitem(sys.modules, f"gradcy.scipy.{mod}")
    with pytest.raises(ImportError, match=r'pip install "gradcy\[scipy\]"'):
        importlib.import_module(f"gradcy.scipy.{mod}")


# =============================================================================
# sqrtm
# =============================================================================
SQRTM_INPUTS = [
    spd(3),
    well_conditioned(4, seed=2),
    well_conditioned(3, seed=3, complex_=True),
    onp.array([[2.0]]),
]


@pytest.mark.parametrize("A", SQRTM_INPUTS)
def test_sqrtm(A):
    if onp.iscomplexobj(A):
        check_grads(gsl.sqrtm, modes=("fwd", "rev"), order=2)(A)
    else:
        check(gsl.sqrtm, A)
    onp.testing.assert_allclose(gsl.sqrtm(A), scipy.linalg.sqrtm(A))


def test_sqrtm_complex_output_of_real_input():
    # negative eigenvalues: a real input with a complex square root; its cotangent is real
    A = onp.array([[1.0, 2.0], [3.0, -4.0]])
    assert onp.iscomplexobj(scipy.linalg.sqrtm(A))
    check_grads(gsl.sqrtm, modes=("fwd", "rev"), order=1)(A)
    vjp, _ = make_vjp(gsl.sqrtm)(A)
    g = vjp(onp.ones((2, 2), complex))
    assert g.dtype == onp.float64


def test_sqrtm_in_a_composition():
    A = spd(3, seed=4)
    check(lambda a: np.sum(gsl.sqrtm(a @ a.T) ** 2), A)


def test_sqrtm_matches_autograd():
    from autograd.scipy import linalg as agsl

    A, G = well_conditioned(3, seed=5), randn(3, 3, seed=6)
    assert_all_close(grads_of(gsl.sqrtm, (A,), G), autograd_grads(agsl.sqrtm, (A,), G))


# =============================================================================
# solve_sylvester
# =============================================================================
@pytest.mark.parametrize("n,m,cplx", [(3, 3, False), (2, 3, False), (1, 1, False), (2, 2, True)])
def test_solve_sylvester(n, m, cplx):
    a = well_conditioned(n, seed=1, complex_=cplx)
    b = well_conditioned(m, seed=2, complex_=cplx)
    q = randn(n, m, seed=3, complex_=cplx)
    if cplx:
        check_grads(gsl.solve_sylvester, (0, 1, 2), modes=("fwd", "rev"), order=2)(a, b, q)
    else:
        check(gsl.solve_sylvester, a, b, q)
    onp.testing.assert_allclose(gsl.solve_sylvester(a, b, q), scipy.linalg.solve_sylvester(a, b, q))


def test_solve_sylvester_matches_autograd():
    from autograd.scipy import linalg as agsl

    args = (well_conditioned(3, seed=1), well_conditioned(2, seed=2), randn(3, 2, seed=3))
    G = randn(3, 2, seed=4)
    assert_all_close(
        grads_of(gsl.solve_sylvester, args, G), autograd_grads(agsl.solve_sylvester, args, G)
    )


# =============================================================================
# solve_triangular
# =============================================================================
def tri(n, lower, seed=0, complex_=False):
    a = well_conditioned(n, seed=seed, complex_=complex_)
    return onp.tril(a) if lower else onp.triu(a)


TRI_CASES = [
    (trans, lower, unit, bshape)
    for trans in (0, 1, 2)
    for lower in (False, True)
    for unit in (False, True)
    for bshape in ((3,), (3, 2))
]


@pytest.mark.parametrize("trans,lower,unit,bshape", TRI_CASES)
def test_solve_triangular(trans, lower, unit, bshape):
    a, b = tri(3, lower, seed=1), randn(*bshape, seed=2)

    def f(a, b):
        return gsl.solve_triangular(a, b, trans=trans, lower=lower, unit_diagonal=unit)

    check(f, a, b)
    onp.testing.assert_allclose(
        f(a, b), scipy.linalg.solve_triangular(a, b, trans=trans, lower=lower, unit_diagonal=unit)
    )


@pytest.mark.parametrize("trans", ["N", "T", "C", 0, 2])
@pytest.mark.parametrize("lower", [False, True])
def test_solve_triangular_complex(trans, lower):
    a, b = tri(3, lower, seed=3, complex_=True), randn(3, 2, seed=4, complex_=True)
    check_grads(
        lambda a, b: gsl.solve_triangular(a, b, trans=trans, lower=lower),
        (0, 1),
        modes=("fwd", "rev"),
        order=2,
    )(a, b)


@pytest.mark.parametrize("trans", [0, 2])
def test_solve_triangular_mixed_real_complex(trans):
    a, b = tri(3, True, seed=5), randn(3, seed=6, complex_=True)
    check_grads(
        lambda a, b: gsl.solve_triangular(a, b, trans=trans, lower=True),
        (0, 1),
        modes=("fwd", "rev"),
        order=1,
    )(a, b)
    a, b = tri(3, True, seed=5, complex_=True), randn(3, seed=6)
    check_grads(
        lambda a, b: gsl.solve_triangular(a, b, trans=trans, lower=True),
        (0, 1),
        modes=("fwd", "rev"),
        order=1,
    )(a, b)


def test_solve_triangular_reads_one_triangle():
    # the other triangle is ignored by the solve, so its gradient is zero
    a, b = well_conditioned(3, seed=7), randn(3, seed=8)
    ga = grad(lambda a: np.sum(gsl.solve_triangular(a, b, lower=True)))(a)
    assert onp.all(onp.triu(ga, 1) == 0) and onp.any(onp.tril(ga) != 0)
    ga = grad(lambda a: np.sum(gsl.solve_triangular(a, b, unit_diagonal=True)))(a)
    assert onp.all(onp.tril(ga) == 0) and onp.any(onp.triu(ga, 1) != 0)


@pytest.mark.parametrize("trans,lower", [(0, False), (1, True), ("T", False), (0, True)])
def test_solve_triangular_matches_autograd(trans, lower):
    from autograd.scipy import linalg as agsl

    args, G = (tri(3, lower, seed=9), randn(3, 2, seed=10)), randn(3, 2, seed=11)
    kw = dict(trans=trans, lower=lower)
    assert_all_close(
        grads_of(lambda a, b: gsl.solve_triangular(a, b, **kw), args, G),
        autograd_grads(lambda a, b: agsl.solve_triangular(a, b, **kw), args, G),
    )


# =============================================================================
# solve_banded
# =============================================================================
def banded(l, u, n, seed=0, complex_=False):
    ab = randn(l + u + 1, n, seed=seed, complex_=complex_) * 0.3
    ab[u] += 3.0  # a dominant main diagonal
    return ab


BANDS = [(0, 0), (1, 0), (0, 2), (1, 1), (2, 1), (1, 3)]


@pytest.mark.parametrize("l,u", BANDS)
@pytest.mark.parametrize("bshape", [(5,), (5, 2)])
def test_solve_banded(l, u, bshape):
    ab, b = banded(l, u, 5, seed=l + 3 * u), randn(*bshape, seed=1)
    check(lambda ab, b: gsl.solve_banded((l, u), ab, b), ab, b)
    onp.testing.assert_allclose(
        gsl.solve_banded((l, u), ab, b), scipy.linalg.solve_banded((l, u), ab, b)
    )


def test_solve_banded_complex():
    ab, b = banded(1, 2, 4, seed=2, complex_=True), randn(4, seed=3, complex_=True)
    check_grads(
        lambda ab, b: gsl.solve_banded([1, 2], ab, b), (0, 1), modes=("fwd", "rev"), order=2
    )(ab, b)


def test_solve_banded_ignores_unused_corners():
    # scipy never reads the corners of the band storage: garbage there changes nothing and
    # gets a zero gradient
    l, u, n = 2, 1, 5
    ab, b = banded(l, u, n, seed=4), randn(n, seed=5)
    ab[0, 0] = onp.nan  # above the first row: unused
    ab[u + 1, n - 1] = ab[u + 2, n - 2] = ab[u + 2, n - 1] = onp.nan  # below the last row

    def f(ab):
        return np.sum(gsl.solve_banded((l, u), ab, b, check_finite=False) ** 2)

    ga = grad(f)(ab)
    ref = grad(f)(onp.nan_to_num(ab))
    assert onp.all(onp.isfinite(ga))
    onp.testing.assert_allclose(ga, ref)
    assert ga[0, 0] == 0 and ga[u + 2, n - 1] == 0


def test_solve_banded_matches_dense_and_autograd():
    from autograd.scipy import linalg as agsl

    l, u, n = 1, 2, 5
    ab, b, G = banded(l, u, n, seed=6), randn(n, seed=7), randn(n, seed=8)
    assert_all_close(
        grads_of(lambda ab, b: gsl.solve_banded((l, u), ab, b), (ab, b), G),
        autograd_grads(lambda ab, b: agsl.solve_banded((l, u), ab, b), (ab, b), G),
    )
    # the gradient wrt the band equals the dense solve's gradient read on the band
    dense = onp.zeros((n, n))
    for i in range(n):
        for j in range(max(0, i - l), min(n, i + u + 1)):
            dense[i, j] = ab[u + i - j, j]
    gd = (
        grad(lambda A: np.sum(np.linalg.solve(A, b) * G))(dense)
        if hasattr(np.linalg.solve, "vjpmakers")
        and (np.linalg.solve.vjpmakers or np.linalg.solve.vjp_argnums)
        else None
    )
    gab = grads_of(lambda ab: gsl.solve_banded((l, u), ab, b), (ab,), G)[0]
    if gd is None:  # gradcy.numpy.linalg.solve without a rule: the analytic form
        x = onp.linalg.solve(dense, b)
        gd = -onp.outer(onp.linalg.solve(dense.T, G), x)
    for i in range(n):
        for j in range(max(0, i - l), min(n, i + u + 1)):
            assert onp.isclose(gab[u + i - j, j], gd[i, j])


# =============================================================================
# cho_factor / cho_solve
# =============================================================================
@pytest.mark.parametrize("lower", [False, True])
@pytest.mark.parametrize("bshape", [(3,), (3, 2)])
def test_cho_solve(lower, bshape):
    def f(a, b):
        return gsl.cho_solve(gsl.cho_factor(0.5 * (a + a.T), lower=lower), b)

    a, b = spd(3, seed=1), randn(*bshape, seed=2)
    check(f, a, b)
    onp.testing.assert_allclose(
        f(a, b), scipy.linalg.cho_solve(scipy.linalg.cho_factor(a, lower=lower), b)
    )


@pytest.mark.parametrize("lower", [False, True])
def test_cho_factor(lower):
    a = spd(4, seed=3)
    c, low = gsl.cho_factor(a, lower=lower)
    assert low is lower
    ref = onp.linalg.cholesky(a)
    onp.testing.assert_allclose(c, ref if lower else ref.T)
    check(lambda a: gsl.cho_factor(0.5 * (a + a.T), lower=lower)[0], a)


def test_cho_solve_accepts_scipy_factor():
    a, b = spd(3, seed=4), randn(3, seed=5)
    cf = scipy.linalg.cho_factor(a)  # garbage in the other triangle
    onp.testing.assert_allclose(gsl.cho_solve(cf, b), onp.linalg.solve(a, b))
    check(lambda b: gsl.cho_solve(cf, b), b)


# =============================================================================
# convolve
# =============================================================================
CONV_SHAPES = [
    ((5,), (3,)),
    ((3,), (5,)),
    ((4,), (4,)),
    ((1,), (3,)),
    ((6,), (1,)),
    ((4, 5), (2, 3)),
    ((2, 3), (4, 5)),
    ((3, 3), (3, 3)),
    ((3, 2, 4), (2, 2, 3)),
]


def _valid_ok(s1, s2):
    return all(a >= b for a, b in zip(s1, s2)) or all(a <= b for a, b in zip(s1, s2))


@pytest.mark.parametrize("s1,s2", CONV_SHAPES)
@pytest.mark.parametrize("mode", ["full", "valid", "same"])
def test_convolve(s1, s2, mode):
    if mode == "valid" and not _valid_ok(s1, s2):
        pytest.skip("valid mode needs one input at least as large as the other")
    x, y = randn(*s1, seed=1), randn(*s2, seed=2)
    check(lambda a, b: gss.convolve(a, b, mode=mode), x, y)
    onp.testing.assert_allclose(gss.convolve(x, y, mode), scipy.signal.convolve(x, y, mode))


def test_convolve_same_with_a_longer_kernel():
    x, y = randn(3, seed=3), randn(9, seed=4)
    check(lambda a, b: gss.convolve(a, b, "same"), x, y)
    check(lambda a, b: gss.convolve(a, b, "same"), randn(2, 3, seed=5), randn(7, 2, seed=6))


@pytest.mark.parametrize("method", ["direct", "fft"])
def test_convolve_methods(method):
    x, y = randn(6, 5, seed=7), randn(3, 2, seed=8)
    for mode in ("full", "valid", "same"):
        check(lambda a, b: gss.convolve(a, b, mode=mode, method=method), x, y)


def test_convolve_0d_and_complex():
    check(gss.convolve, onp.array(1.5), onp.array(-0.5))
    x, y = randn(4, seed=9, complex_=True), randn(3, 2, seed=10, complex_=True)[:, 0]
    for mode in ("full", "valid", "same"):
        check_grads(lambda a, b: gss.convolve(a, b, mode), (0, 1), modes=("fwd", "rev"), order=2)(
            x, y
        )


def test_convolve_mixed_dtypes():
    x, y = randn(5, seed=11).astype(onp.float32), randn(3, seed=12)
    for i, a in enumerate((x, y)):

        def f(v, i=i):
            return gss.convolve(v, y) if i == 0 else gss.convolve(x, v)

        vjp, ans = make_vjp(f)(a)
        assert ans.dtype == onp.float64
        assert vjp(onp.ones_like(ans)).dtype == a.dtype
    check_dtype(gss.convolve, x, y.astype(onp.float32))


@pytest.mark.parametrize("mode", ["full", "valid", "same"])
@pytest.mark.parametrize("s1,s2", [((6,), (3,)), ((3,), (6,)), ((4, 5), (2, 3))])
def test_convolve_matches_autograd(mode, s1, s2):
    from autograd.scipy import signal as agsig

    x, y = randn(*s1, seed=13), randn(*s2, seed=14)
    out = scipy.signal.convolve(x, y, mode)
    G = randn(*out.shape, seed=15)
    ours = grads_of(lambda a, b: gss.convolve(a, b, mode=mode), (x, y), G)
    theirs = autograd_grads(lambda a, b: agsig.convolve(a, b, mode=mode), (x, y), G)
    assert_all_close(ours, theirs)


# =============================================================================
# odeint
# =============================================================================
TOL = dict(rtol=1e-11, atol=1e-11)


def dyn(y, t, A, c):
    return np.dot(A, y) * c + 0.1 * np.sin(t) * y**2


def dyn_autograd(y, t, A, c):
    import autograd.numpy as agnp

    return agnp.dot(A, y) * c + 0.1 * agnp.sin(t) * y**2


ODE_A = randn(2, 2, seed=1) * 0.5
ODE_Y0 = randn(2, seed=2)
ODE_T = onp.array([0.0, 0.3, 0.8, 1.0])


def test_odeint_values_match_scipy():
    ys = gsi.odeint(dyn, ODE_Y0, ODE_T, (ODE_A, 0.8), **TOL)
    ref = scipy.integrate.odeint(dyn, ODE_Y0, ODE_T, args=(ODE_A, 0.8), **TOL)
    onp.testing.assert_array_equal(ys, ref)


def test_odeint_grads():
    check(
        lambda y0, t, A, c: gsi.odeint(dyn, y0, t, (A, c), **TOL),
        ODE_Y0,
        ODE_T,
        ODE_A,
        0.8,
        order=1,
    )


def test_odeint_second_order():
    check_grads(
        lambda y0, A: gsi.odeint(dyn, y0, ODE_T[:3], args=(A, 0.8), **TOL),
        (0, 1),
        modes=("rev",),
        order=2,
    )(ODE_Y0, ODE_A)


def test_odeint_matches_autograd():
    ag = pytest.importorskip("autograd")
    from autograd.builtins import tuple as agtuple
    from autograd.scipy.integrate import odeint as ag_odeint
    import autograd.numpy as agnp

    G = randn(len(ODE_T), 2, seed=3)
    args = (ODE_Y0, ODE_T, ODE_A, 0.8)
    ours = [
        grad(lambda *a: np.sum(gsi.odeint(dyn, a[0], a[1], (a[2], a[3]), **TOL) * G), i)(*args)
        for i in range(4)
    ]
    theirs = [
        ag.grad(
            lambda *a: agnp.sum(
                ag_odeint(dyn_autograd, a[0], a[1], agtuple((a[2], a[3])), **TOL) * G
            ),
            i,
        )(*args)
        for i in range(4)
    ]
    assert_all_close(ours, theirs, rtol=1e-6, atol=1e-8)


def test_odeint_linear_system_analytic():
    # y' = A y: y(t) = expm(A t) y0, so d sum(y(T) * g)/d y0 = expm(A T).T g
    A, y0, g = ODE_A, ODE_Y0, randn(2, seed=4)
    t = onp.array([0.0, 1.5])
    gy0 = grad(
        lambda y0: np.sum(gsi.odeint(lambda y, t, A: np.dot(A, y), y0, t, (A,), **TOL)[1] * g)
    )(y0)
    onp.testing.assert_allclose(gy0, scipy.linalg.expm(A * 1.5).T @ g, rtol=1e-8)
    # and along t: d y(T)/dT = A y(T)
    _, jt = make_jvp(
        lambda t: gsi.odeint(lambda y, t, A: np.dot(A, y), y0, t, (A,), **TOL),
    )(t)(onp.array([0.0, 1.0]))
    yT = scipy.linalg.expm(A * 1.5) @ y0
    onp.testing.assert_allclose(jt[1], A @ yT, rtol=1e-8)
    onp.testing.assert_allclose(jt[0], 0.0)


def test_odeint_structured_and_constant_args():
    # nested args: a dict and a tuple, with an int and a string held constant
    def f(y, t, p, n, how):
        assert isinstance(n, int) and how == "neg"
        return -p["k"] * y * n + p["w"][0] * np.cos(t * p["w"][1])

    w = (0.7, 1.3)

    def fun(y0, k, w0):
        return gsi.odeint(f, y0, ODE_T, args=({"k": k, "w": (w0, w[1])}, 2, "neg"), **TOL)

    check(fun, ODE_Y0, onp.array([0.5, 0.2]), 0.7, order=1)


def test_odeint_tfirst_scalar_state_and_single_time():
    def f(t, y, k):
        return -k * y + t

    check(
        lambda y0, k: gsi.odeint(f, y0, ODE_T, (k,), tfirst=True, **TOL),
        onp.array([1.0]),
        0.5,
        order=1,
    )
    # a Python-float initial value and a single output time
    g = grad(lambda y0: np.sum(gsi.odeint(f, y0, ODE_T, (0.5,), tfirst=True, **TOL)))(1.0)
    assert type(g) is float
    vjp, ys = make_vjp(lambda y0, t: gsi.odeint(f, y0, t, (0.5,), tfirst=True), argnum=(0, 1))(
        ODE_Y0, ODE_T[:1]
    )
    gy0, gt = vjp(onp.array([[2.0, 3.0]]))
    onp.testing.assert_array_equal(gy0, [2.0, 3.0])
    onp.testing.assert_array_equal(gt, [0.0])


def test_odeint_full_output():
    ys, info = gsi.odeint(dyn, ODE_Y0, ODE_T, (ODE_A, 0.8), full_output=True)
    assert "nfe" in info and ys.shape == (4, 2)
    with pytest.raises(NotImplementedError, match="full_output"):
        grad(lambda y0: np.sum(gsi.odeint(dyn, y0, ODE_T, (ODE_A, 0.8), full_output=True)[0]))(
            ODE_Y0
        )


# =============================================================================
# Mixed float32/float64 arguments: each cotangent has its own argument's dtype
# =============================================================================
MIXED = [
    (
        "solve_sylvester",
        gsl.solve_sylvester,
        (well_conditioned(3, seed=1), well_conditioned(2, seed=2), randn(3, 2, seed=3)),
    ),
    (
        "solve_triangular",
        lambda a, b: gsl.solve_triangular(a, b, trans=1, lower=True),
        (tri(3, True, seed=4), randn(3, 2, seed=5)),
    ),
    (
        "solve_banded",
        lambda ab, b: gsl.solve_banded((1, 2), ab, b),
        (banded(1, 2, 4, seed=6), randn(4, 2, seed=7)),
    ),
    ("convolve", lambda a, b: gss.convolve(a, b, "same"), (randn(5, seed=8), randn(3, seed=9))),
    ("odeint", lambda y0, t, A: gsi.odeint(dyn, y0, t, (A, 0.8)), (ODE_Y0, ODE_T, ODE_A)),
]


@pytest.mark.parametrize("name,fun,args", MIXED, ids=[m[0] for m in MIXED])
def test_mixed_dtypes(name, fun, args):
    for i in range(len(args)):
        mixed = [a.astype(onp.float32) if j == i else a for j, a in enumerate(args)]
        check_dtype(fun, *mixed)
        mixed = [a if j == i else a.astype(onp.float32) for j, a in enumerate(args)]
        check_dtype(fun, *mixed)


def test_odeint_autograd_style_args():
    from gradcy.builtins import tuple as gtuple

    def loss(A):
        return np.sum(gsi.odeint(dyn, ODE_Y0, ODE_T, gtuple((A, 0.8)), **TOL) ** 2)

    def loss_ref(A):
        return np.sum(gsi.odeint(dyn, ODE_Y0, ODE_T, args=(A, 0.8), **TOL) ** 2)

    onp.testing.assert_array_equal(grad(loss)(ODE_A), grad(loss_ref)(ODE_A))


# =============================================================================
# Saved sets and names
# =============================================================================
def test_primitive_names():
    assert gsl.sqrtm.name == "gradcy.scipy.linalg.sqrtm"
    assert gsl.solve_triangular.name == "gradcy.scipy.linalg.solve_triangular"
    assert gsl.solve_banded.name == "gradcy.scipy.linalg.solve_banded"
    assert gsl.solve_sylvester.name == "gradcy.scipy.linalg.solve_sylvester"
    assert gss._conv.name == "gradcy.scipy.signal.convolve"  # gss.convolve: autograd's front
    assert gsl.inv.name == "gradcy.scipy.linalg.inv"  # the rest of the namespace
    assert gsl.sqrtm.__doc__ == scipy.linalg.sqrtm.__doc__


def test_function_without_rule_says_so():
    with pytest.raises(MissingVJPError):
        grad(lambda a: np.sum(gsl.expm_frechet(a, a)[0]))(spd(2))


def test_saved_sets():
    a, b = well_conditioned(3, seed=1), randn(3, 2, seed=2)
    ans, args, _ = saved_record(gsl.sqrtm, spd(3))
    assert type(ans) is onp.ndarray and type(args[0]) is ArrayMeta

    ans, args, _ = saved_record(gsl.solve_sylvester, a, a, randn(3, 3))
    assert type(ans) is onp.ndarray
    assert [type(x) for x in args] == [onp.ndarray, onp.ndarray, ArrayMeta]

    ans, args, _ = saved_record(lambda a, b: gsl.solve_triangular(a, b, lower=True), onp.tril(a), b)
    assert type(ans) is onp.ndarray
    assert [type(x) for x in args] == [onp.ndarray, ArrayMeta]

    ans, args, _ = saved_record(lambda ab, b: gsl.solve_banded((1, 0), ab, b), banded(1, 0, 3), b)
    assert type(ans) is onp.ndarray and args[0] == (1, 0)
    assert [type(x) for x in args[1:]] == [onp.ndarray, ArrayMeta]

    ans, args, _ = saved_record(lambda a: gsl.cho_factor(a)[0], spd(3))
    assert type(ans) is onp.ndarray and type(args[0]) is ArrayMeta

    ans, args, _ = saved_record(gss.convolve, randn(4), randn(2))
    assert type(ans) is ArrayMeta
    assert [type(x) for x in args] == [onp.ndarray, onp.ndarray]

    ans, args, kw = saved_record(
        lambda y0, t, A: gsi.odeint(dyn, y0, t, (A, 0.8)), ODE_Y0, ODE_T, ODE_A
    )
    assert type(ans) is onp.ndarray and args[0] is dyn
    assert type(args[1]) is ArrayMeta  # y0: the output's first row
    assert type(args[2]) is onp.ndarray and type(args[3]) is onp.ndarray and args[4] == 0.8


def test_overwrite_flags_never_overwrite_traced_buffers():
    a, b = tri(3, True, seed=3), randn(3, seed=4)
    b0 = b.copy()
    gsl.solve_triangular(a, b, lower=True, overwrite_b=True)
    ab = banded(1, 1, 3)
    ab0 = ab.copy()
    gsl.solve_banded((1, 1), ab, b, overwrite_ab=True, overwrite_b=True)
    onp.testing.assert_array_equal(b, b0)
    onp.testing.assert_array_equal(ab, ab0)
