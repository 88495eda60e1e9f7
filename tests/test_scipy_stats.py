"""Derivative checks of gradcy.scipy.stats: numerical checks in forward and reverse mode (second
order where the rules allow it), the float32 dtype contract, agreement with autograd's values and
gradients, the saved records and the parameters without rules."""

import numpy as onp
import pytest
import scipy.stats as ss

import gradcy.numpy as np
import gradcy.numpy.linalg as la
import gradcy.scipy.stats as st
from gradcy import grad
from gradcy.test_util import check_grads
from gradcy._core import ArrayMeta, Primitive
from vjp_harness import assert_missing_rules_raise, check, rand, saved_record

autograd = pytest.importorskip("autograd")
import autograd.numpy as anp_ag
import autograd.scipy.stats as ast

FUNCTIONS = {
    "norm": ["pdf", "cdf", "sf", "logpdf", "logcdf", "logsf"],
    "t": ["pdf", "cdf", "logpdf", "logcdf"],
    "beta": ["pdf", "cdf", "logpdf"],
    "chi2": ["pdf", "cdf", "logpdf"],
    "gamma": ["pdf", "cdf", "logpdf"],
    "poisson": ["pmf", "cdf", "logpmf"],
    "dirichlet": ["pdf", "logpdf"],
    "multivariate_normal": ["pdf", "logpdf", "entropy"],
}
COVERED = {f"gradcy.scipy.stats.{d}.{f}" for d, fs in FUNCTIONS.items() for f in fs}

mvn = st.multivariate_normal
INV_HAS_RULES = bool(la.inv.vjpmakers) and bool(la.inv.jvpmakers)
needs_inv_rules = pytest.mark.skipif(
    not INV_HAS_RULES, reason="second derivatives in cov need gradcy.numpy.linalg.inv's rules"
)


def pos(*shape, seed=0):
    return rand(*shape, seed=seed, low=0.6, high=3.0)


def unit(*shape, seed=0):
    return rand(*shape, seed=seed, low=0.1, high=0.9)


def sym(c):
    """SciPy reads one triangle of cov: differentiate through a symmetric parametrization."""
    return 0.5 * (c + np.transpose(c))


_X, _LOC, _SCALE = rand(2, 3), rand(3, seed=1), pos(2, 1, seed=2)
_K = onp.array([0, 1, 3, 5])
_ALPHA = pos(3, seed=4)
_A = rand(3, 3, seed=5)
_COV = _A @ _A.T + onp.eye(3)


def _on_simplex(z):
    """Points on the simplex (components along axis 0) as a smooth function of free z."""
    e = np.exp(z)
    return e / np.sum(e, axis=0)


# =============================================================================
# Cases: (id, function of the differentiated arguments, arguments, order)
# =============================================================================
CASES = []
for _n in FUNCTIONS["norm"]:
    _f = getattr(st.norm, _n)
    CASES += [
        (f"norm.{_n}", _f, (_X, _LOC, _SCALE), 2),
        (f"norm.{_n}-x", _f, (rand(4),), 2),
        (f"norm.{_n}-keywords", lambda x, _f=_f: _f(x, loc=0.5, scale=2.0), (rand(4),), 2),
        (f"norm.{_n}-float", _f, (0.3, -0.2, 1.5), 2),
        (f"norm.{_n}-0d", _f, (onp.array(0.3), onp.array(0.1), onp.array(2.0)), 2),
    ]
for _n in ("pdf", "logpdf"):
    _f = getattr(st.t, _n)
    CASES += [
        (f"t.{_n}", _f, (_X, pos(3, seed=3) + 1.0, _LOC, _SCALE), 2),
        (f"t.{_n}-float", _f, (0.4, 3.5), 2),
    ]
for _n in ("cdf", "logcdf"):
    _f = getattr(st.t, _n)
    CASES += [
        (f"t.{_n}", lambda x, loc, scale, _f=_f: _f(x, 3.5, loc, scale), (_X, _LOC, _SCALE), 2),
        (f"t.{_n}-array-df", lambda x, _f=_f: _f(x, pos(3, seed=3)), (_X,), 2),
    ]
for _n in ("pdf", "logpdf"):
    CASES += [
        (f"beta.{_n}", getattr(st.beta, _n), (unit(2, 3), pos(3, seed=1), pos(2, 1, seed=2)), 2),
        (f"gamma.{_n}", getattr(st.gamma, _n), (pos(2, 3), pos(3, seed=1) + 1.0), 2),
        (f"chi2.{_n}", getattr(st.chi2, _n), (pos(2, 3), pos(3, seed=1) + 2.0), 2),
        (f"chi2.{_n}-float", getattr(st.chi2, _n), (1.3, 3.5), 2),
    ]
CASES += [
    ("beta.cdf", lambda x: st.beta.cdf(x, 2.0, 3.5), (unit(4),), 2),
    ("beta.cdf-broadcast", lambda x: st.beta.cdf(x, pos(2, 1), pos(3)), (unit(3),), 2),
    ("gamma.cdf", lambda x: st.gamma.cdf(x, 2.5), (pos(4),), 2),
    ("chi2.cdf", lambda x: st.chi2.cdf(x, 2.5), (pos(4),), 2),
    ("chi2.cdf-float", lambda x: st.chi2.cdf(x, 4.0), (1.7,), 2),
]
for _n in FUNCTIONS["poisson"]:
    _f = getattr(st.poisson, _n)
    CASES += [
        (f"poisson.{_n}", lambda mu, _f=_f: _f(_K, mu), (pos(4),), 2),
        (f"poisson.{_n}-broadcast", lambda mu, _f=_f: _f(_K, mu), (pos(2, 1),), 2),
        (f"poisson.{_n}-float", lambda mu, _f=_f: _f(2, mu), (1.7,), 2),
    ]
CASES += [
    (
        "poisson.cdf-noninteger-k",
        lambda mu: st.poisson.cdf(onp.array([0.5, 2.7]), mu),
        (pos(2),),
        2,
    ),
    (
        "poisson.logpmf-off-support",
        lambda mu: st.poisson.pmf(onp.array([1.0, 2.5]), mu),
        (pos(2),),
        2,
    ),
]
for _n in FUNCTIONS["dirichlet"]:
    _f = getattr(st.dirichlet, _n)
    CASES += [
        (f"dirichlet.{_n}-alpha", lambda a, _f=_f: _f(onp.array([0.2, 0.3, 0.5]), a), (_ALPHA,), 2),
        (f"dirichlet.{_n}-implied", _f, (onp.array([0.2, 0.3]), _ALPHA), 2),
        (f"dirichlet.{_n}-implied-points", _f, (onp.array([[0.2, 0.3], [0.3, 0.1]]), _ALPHA), 2),
        (
            f"dirichlet.{_n}-simplex",
            lambda z, a, _f=_f: _f(_on_simplex(z), a),
            (rand(3), _ALPHA),
            2,
        ),
        (
            f"dirichlet.{_n}-simplex-points",
            lambda z, a, _f=_f: _f(_on_simplex(z), a),
            (rand(3, 2), _ALPHA),
            2,
        ),
    ]
for _n in ("pdf", "logpdf"):
    _f = getattr(mvn, _n)
    CASES += [
        (f"mvn.{_n}", lambda x, m, _f=_f: _f(x, m, _COV), (rand(4, 3) * 0.3, rand(3) * 0.3), 2),
        (f"mvn.{_n}-one-point", lambda x, m, _f=_f: _f(x, m, _COV), (rand(3), rand(3, seed=1)), 2),
        (f"mvn.{_n}-points-3d", lambda x, m, _f=_f: _f(x, m, _COV), (rand(2, 1, 3), rand(3)), 2),
        (
            f"mvn.{_n}-cov",
            lambda x, m, c, _f=_f: _f(x, m, sym(c)),
            (rand(4, 3) * 0.3, rand(3) * 0.3, _COV),
            1,
        ),
        (
            f"mvn.{_n}-cov-no-mean",
            lambda x, c, _f=_f: _f(x, None, sym(c)),
            (rand(4, 3) * 0.3, _COV),
            1,
        ),
        (f"mvn.{_n}-cov-scalar", _f, (rand(4, 3) * 0.3, rand(3), 1.7), 1),
        (f"mvn.{_n}-cov-diagonal", _f, (rand(4, 3) * 0.3, rand(3), pos(3)), 1),
        (f"mvn.{_n}-1d", _f, (rand(4), 0.3, 1.5), 1),
        (f"mvn.{_n}-1d-arrays", _f, (rand(4), onp.array([0.3]), onp.array([[1.5]])), 1),
    ]
CASES += [
    ("mvn.entropy", lambda c: mvn.entropy(None, sym(c)), (_COV,), 1),
    ("mvn.entropy-scalar", lambda c: mvn.entropy(onp.zeros(3), c), (1.3,), 1),
    ("mvn.entropy-diagonal", lambda c: mvn.entropy(onp.zeros(3), c), (pos(3),), 1),
]
SECOND_ORDER_COV = [c[:3] + (2,) for c in CASES if c[0].startswith("mvn") and c[3] == 1]


@pytest.mark.parametrize("fun,args,order", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_grads(fun, args, order):
    check(fun, *args, order=order, dtypes=_scipy_takes_float32(fun, args))


def _scipy_takes_float32(fun, args):
    """SciPy's own call accepts the arguments as float32 (SciPy 1.10's dirichlet rejects a
    float32 point whose implied last coordinate leaves the sum 1 + 1.5e-8)."""
    try:
        fun(*[a.astype(onp.float32) if isinstance(a, onp.ndarray) else a for a in args])
    except ValueError:
        return False
    return True


@needs_inv_rules
@pytest.mark.parametrize(
    "fun,args,order", [c[1:] for c in SECOND_ORDER_COV], ids=[c[0] for c in SECOND_ORDER_COV]
)
def test_grads_cov_second_order(fun, args, order):
    check(fun, *args, order=order)


def test_values_are_scipy():
    x = unit(5)
    assert onp.array_equal(st.norm.logcdf(x, 0.2, 1.5), ss.norm.logcdf(x, 0.2, 1.5))
    assert onp.array_equal(st.t.pdf(x, 3.0, scale=2.0), ss.t.pdf(x, 3.0, scale=2.0))
    assert onp.array_equal(st.beta.cdf(x, 2.0, 3.0), ss.beta.cdf(x, 2.0, 3.0))
    assert onp.array_equal(st.poisson.logpmf(_K, 2.0), ss.poisson.logpmf(_K, 2.0))
    assert onp.array_equal(
        mvn.logpdf(rand(4, 3), None, _COV), ss.multivariate_normal.logpdf(rand(4, 3), None, _COV)
    )
    for d, fs in FUNCTIONS.items():
        for f in fs:
            p = getattr(getattr(st, d), f)
            assert isinstance(p, Primitive) and p.name == f"gradcy.scipy.stats.{d}.{f}"


# =============================================================================
# Agreement with autograd (values and gradients on the same inputs)
# =============================================================================
AG_CASES = [
    *[
        (f"norm.{n}", (lambda m, n=n: getattr(m.norm, n)), (_X, _LOC, _SCALE), (0, 1, 2))
        for n in FUNCTIONS["norm"]
    ],
    *[
        (
            f"t.{n}",
            (lambda m, n=n: getattr(m.t, n)),
            (_X, pos(3, seed=3) + 1.0, _LOC, _SCALE),
            (0, 1, 2, 3),
        )
        for n in ("pdf", "logpdf")
    ],
    *[
        (
            f"t.{n}",
            (lambda m, n=n: getattr(m.t, n)),
            (_X, pos(3, seed=3) + 1.0, _LOC, _SCALE),
            (0, 2),
        )
        for n in ("cdf", "logcdf")
    ],
    *[
        (
            f"beta.{n}",
            (lambda m, n=n: getattr(m.beta, n)),
            (unit(2, 3), pos(3), pos(2, 1)),
            (0, 1, 2),
        )
        for n in ("pdf", "logpdf")
    ],
    ("beta.cdf", lambda m: m.beta.cdf, (unit(2, 3), pos(3), pos(2, 1)), (0,)),
    *[
        (f"gamma.{n}", (lambda m, n=n: getattr(m.gamma, n)), (pos(2, 3), pos(3) + 1.0), (0, 1))
        for n in ("pdf", "logpdf")
    ],
    ("gamma.cdf", lambda m: m.gamma.cdf, (pos(2, 3), pos(3) + 1.0), (0,)),
    # autograd's chi2 x-derivative is right for integer df only
    *[
        (
            f"chi2.{n}",
            (lambda m, n=n: getattr(m.chi2, n)),
            (pos(2, 3), onp.array([1.0, 3.0, 4.0])),
            (0,),
        )
        for n in ("pdf", "cdf", "logpdf")
    ],
    *[
        (f"poisson.{n}", (lambda m, n=n: getattr(m.poisson, n)), (_K, pos(4)), (1,))
        for n in FUNCTIONS["poisson"]
    ],
    *[
        (
            f"dirichlet.{n}",
            (lambda m, n=n: getattr(m.dirichlet, n)),
            (onp.array([0.2, 0.3, 0.5]), _ALPHA),
            (0, 1),
        )
        for n in FUNCTIONS["dirichlet"]
    ],
    *[
        (
            f"mvn.{n}",
            (lambda m, n=n: getattr(m.multivariate_normal, n)),
            (rand(4, 3) * 0.3, rand(3) * 0.3, _COV),
            (0, 1, 2),
        )
        for n in ("pdf", "logpdf")
    ],
    *[
        (
            f"mvn.{n}-one-point",
            (lambda m, n=n: getattr(m.multivariate_normal, n)),
            (rand(3) * 0.3, rand(3, seed=1) * 0.3, _COV),
            (0, 1, 2),
        )
        for n in ("pdf", "logpdf")
    ],
    ("mvn.entropy", lambda m: m.multivariate_normal.entropy, (rand(3), _COV), (1,)),
]


def _sum_out(fun, numpy):
    return lambda *a: numpy.sum(fun(*a))


@pytest.mark.parametrize(
    "getf,args,argnums", [c[1:] for c in AG_CASES], ids=[c[0] for c in AG_CASES]
)
def test_matches_autograd(getf, args, argnums):
    fg, fa = getf(st), getf(ast)
    onp.testing.assert_allclose(fg(*args), fa(*args), rtol=1e-12)
    for i in argnums:
        gg = grad(_sum_out(fg, np), i)(*args)
        ga = autograd.grad(_sum_out(fa, anp_ag), i)(*args)
        onp.testing.assert_allclose(gg, ga, rtol=1e-9, atol=1e-12, err_msg=f"argument {i}")


def test_chi2_noninteger_df_has_the_true_derivative():
    # autograd returns 0 here; d/dx log p = (df/2 - 1)/x - 1/2
    x, df = pos(4), 2.5
    g = grad(lambda x: np.sum(st.chi2.logpdf(x, df)))(x)
    onp.testing.assert_allclose(g, (df / 2 - 1) / x - 0.5, rtol=1e-12)


def test_scale_derivative_of_t_cdf():
    # autograd has no scale rule for t.cdf; d/dscale F((x - loc)/scale) = -pdf * (x - loc)/scale
    x, df, loc, scale = rand(4), 3.0, 0.2, 1.7
    g = grad(lambda s: np.sum(st.t.cdf(x, df, loc, s)))(scale)
    expected = onp.sum(-ss.t.pdf(x, df, loc, scale) * (x - loc) / scale)
    onp.testing.assert_allclose(g, expected, rtol=1e-10)


# =============================================================================
# Parameters without rules
# =============================================================================
@pytest.mark.parametrize(
    "fun,args,argnum",
    [
        (st.t.cdf, (rand(3), pos(3)), 1),
        (st.t.logcdf, (rand(3), pos(3)), 1),
        (st.beta.cdf, (unit(3), pos(3), pos(3)), 1),
        (st.beta.cdf, (unit(3), pos(3), pos(3)), 2),
        (st.gamma.cdf, (pos(3), pos(3)), 1),
        (st.chi2.cdf, (pos(3), pos(3)), 1),
        (st.poisson.pmf, (onp.array([1.0, 2.0]), pos(2)), 0),
        (st.poisson.logpmf, (onp.array([1.0, 2.0]), pos(2)), 0),
        (st.poisson.cdf, (onp.array([1.0, 2.0]), pos(2)), 0),
    ],
    ids=[
        "t.cdf-df",
        "t.logcdf-df",
        "beta.cdf-a",
        "beta.cdf-b",
        "gamma.cdf-a",
        "chi2.cdf-df",
        "poisson.pmf-k",
        "poisson.logpmf-k",
        "poisson.cdf-k",
    ],
)
def test_parameters_without_rules_raise(fun, args, argnum):
    assert_missing_rules_raise(fun, args, argnum)


def test_mvn_allow_singular():
    # a singular covariance: the density lives on its range, and is constant along its null
    # space; the derivatives in x and mean use the pseudo-inverse, the one in cov is undefined
    cov = onp.diag([1.0, 2.0, 0.0])
    x, m = onp.array([0.3, -0.2, 0.0]), onp.array([0.1, 0.4, 0.0])
    zero = onp.zeros(1)  # x and m vary along the range only (off it the density is 0)
    check_grads(
        lambda x2, m2: mvn.logpdf(
            np.concatenate([x2, zero]), np.concatenate([m2, zero]), cov, True
        ),
        (0, 1),
        modes=["rev", "fwd"],
        order=1,
    )(x[:2], m[:2])
    expected = -onp.linalg.pinv(cov) @ (x - m)
    onp.testing.assert_allclose(grad(lambda x: mvn.logpdf(x, m, cov, True))(x), expected)
    with pytest.raises(NotImplementedError, match="allow_singular"):
        grad(lambda c: mvn.logpdf(x, m, c, True))(cov + onp.eye(3))


def test_mvn_entropy_does_not_depend_on_the_mean():
    g = grad(lambda m: mvn.entropy(m, _COV))(rand(3))
    onp.testing.assert_array_equal(g, onp.zeros(3))


# =============================================================================
# Saved records
# =============================================================================
SAVED = [
    *[
        (
            getattr(st.norm, n),
            (_X, _LOC, _SCALE),
            {0, 1, 2} | ({"ans"} if n in ("pdf", "logcdf", "logsf") else set()),
        )
        for n in FUNCTIONS["norm"]
    ],
    (st.t.pdf, (_X, pos(3), _LOC, _SCALE), {"ans", 0, 1, 2, 3}),
    (st.t.logpdf, (_X, pos(3), _LOC, _SCALE), {0, 1, 2, 3}),
    (st.t.cdf, (_X, pos(3), _LOC, _SCALE), {0, 1, 2, 3}),
    (st.t.logcdf, (_X, pos(3), _LOC, _SCALE), {"ans", 0, 1, 2, 3}),
    (st.beta.pdf, (unit(3), pos(3), pos(3)), {"ans", 0, 1, 2}),
    (st.beta.logpdf, (unit(3), pos(3), pos(3)), {0, 1, 2}),
    (st.beta.cdf, (unit(3), pos(3), pos(3)), {0, 1, 2}),
    (st.gamma.pdf, (pos(3), pos(3)), {"ans", 0, 1}),
    (st.gamma.logpdf, (pos(3), pos(3)), {0, 1}),
    (st.gamma.cdf, (pos(3), pos(3)), {0, 1}),
    (st.chi2.pdf, (pos(3), pos(3)), {"ans", 0, 1}),
    (st.chi2.logpdf, (pos(3), pos(3)), {0, 1}),
    (st.chi2.cdf, (pos(3), pos(3)), {0, 1}),
    (st.poisson.pmf, (_K, pos(4)), {"ans", 0, 1}),
    (st.poisson.logpmf, (_K, pos(4)), {0, 1}),
    (st.poisson.cdf, (_K, pos(4)), {0, 1}),
    (st.dirichlet.pdf, (onp.array([[0.2, 0.3], [0.3, 0.1]]), _ALPHA), {"ans", 0, 1}),
    (st.dirichlet.logpdf, (onp.array([[0.2, 0.3], [0.3, 0.1]]), _ALPHA), {0, 1}),
    (mvn.pdf, (rand(4, 3), rand(3), _COV), {"ans", 0, 1, 2}),
    (mvn.logpdf, (rand(4, 3), rand(3), _COV), {0, 1, 2}),
    (mvn.entropy, (rand(3), _COV), {1}),
]


def test_saved_table_covers_every_rule():
    assert {p.name for p, _, _ in SAVED} == COVERED


@pytest.mark.parametrize("prim,args,expected", SAVED, ids=[s[0].name for s in SAVED])
def test_saved(prim, args, expected):
    floats = [i for i, a in enumerate(args) if a.dtype.kind == "f"]
    ans, saved_args, _ = saved_record(prim, *args, traced=floats)
    if "ans" in expected:
        assert type(ans) is not ArrayMeta
    else:  # a numpy scalar output holds no buffer: the record keeps it as it is
        assert type(ans) is ArrayMeta or isinstance(ans, onp.generic), type(ans).__name__
    for i, s in enumerate(saved_args):
        if i in expected:
            assert type(s) is not ArrayMeta, f"argument {i} should be saved"
        else:
            assert type(s) is ArrayMeta, f"argument {i} should be ArrayMeta, is {type(s)}"


# =============================================================================
# The wrappers (gradcy.scipy.stats._dist.scipy_functions): plain functions of SciPy's signature
# =============================================================================
_PARAMS = {
    "norm": "x, loc=0.0, scale=1.0",
    "t": "x, df, loc=0.0, scale=1.0",
    "beta": "x, a, b",
    "chi2": "x, df",
    "gamma": "x, a",
    "poisson": "k, mu",
    "dirichlet": "x, alpha",
}


@pytest.mark.parametrize("dist", sorted(_PARAMS))
def test_wrapper_signature_name_and_doc(dist):
    import inspect

    for name in FUNCTIONS[dist]:
        prim = getattr(getattr(st, dist), name)
        assert prim.name == f"gradcy.scipy.stats.{dist}.{name}"
        assert str(inspect.signature(prim)) == f"({_PARAMS[dist]})"
        call = ", ".join(p.split("=")[0] for p in _PARAMS[dist].split(", "))
        assert prim.__doc__ == f"scipy.stats.{dist}.{name}({call})"
        assert prim.fun.__module__ == f"gradcy.scipy.stats.{dist}"
        with pytest.raises(TypeError, match=rf"^{name}\(\) takes"):
            prim(*range(len(_PARAMS[dist].split(", ")) + 1))


def test_wrappers_pass_keywords_to_scipy():
    x = onp.array([0.3, -0.5, 1.2])
    onp.testing.assert_array_equal(st.norm.logcdf(x, scale=2.0), ss.norm.logcdf(x, 0.0, 2.0))
    onp.testing.assert_array_equal(st.t.pdf(x, 3.0, scale=1.5, loc=0.1), ss.t.pdf(x, 3.0, 0.1, 1.5))
    onp.testing.assert_array_equal(st.gamma.cdf(x + 1.0, a=2.5), ss.gamma.cdf(x + 1.0, 2.5))
    # the rules get the keyword arguments too: d/dx log p = -(x - loc) / scale**2
    g = grad(lambda x: np.sum(st.norm.logpdf(x, scale=1.5)))(x)
    onp.testing.assert_allclose(g, -x / 1.5**2, rtol=1e-14)
    g = grad(lambda x: np.sum(st.t.logcdf(x, 3.0, loc=0.2)))(x)
    onp.testing.assert_allclose(g, ss.t.pdf(x, 3.0, 0.2) / ss.t.cdf(x, 3.0, 0.2), rtol=1e-12)
