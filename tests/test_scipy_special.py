"""Derivative checks of gradcy.scipy.special: numerical checks in forward and reverse mode to
second order, the float32 dtype contract of both modes, agreement with autograd's values and
gradients, the saved records, the non-differentiable parameters, the primitives without rules and
the ImportError without SciPy."""

import importlib
import sys

import numpy as onp
import pytest
import scipy.special as ss

import gradcy.numpy as np
import gradcy.scipy.special as sp
from gradcy import elementwise_grad, grad, make_jvp
from gradcy._core import ArrayMeta, Box, MissingJVPError, MissingVJPError, Primitive, Tape
from gradcy._core import install_hooks
from gradcy.numpy._util import match_tangent
from vjp_harness import assert_missing_rules_raise, check, rand, saved_record

autograd = pytest.importorskip("autograd")
import autograd.numpy as anp_ag
import autograd.scipy.special as asp

DIFFERENTIABLE = [
    "beta",
    "betainc",
    "betaln",
    "gamma",
    "gammaln",
    "gammainc",
    "gammaincc",
    "rgamma",
    "multigammaln",
    "psi",
    "digamma",
    "polygamma",
    "erf",
    "erfc",
    "erfinv",
    "erfcinv",
    "expit",
    "logit",
    "logsumexp",
    "i0",
    "i1",
    "iv",
    "ive",
    "j0",
    "j1",
    "jn",
    "jv",
    "y0",
    "y1",
    "yn",
    "softmax",
    "log_softmax",
]
COVERED = {f"gradcy.scipy.special.{n}" for n in DIFFERENTIABLE}


def pos(*shape, seed=0):
    return rand(*shape, seed=seed, low=0.6, high=3.0)


def unit(*shape, seed=0):
    return rand(*shape, seed=seed, low=0.1, high=0.9)


# =============================================================================
# Cases: (id, function of the differentiated arguments, arguments)
# =============================================================================
_A, _B = pos(4, seed=1), pos(4, seed=2)

CASES = [
    ("beta", sp.beta, (pos(4), pos(4, seed=1))),
    ("beta-broadcast", sp.beta, (pos(3), pos(2, 1, seed=1))),
    ("betaln", sp.betaln, (pos(4), pos(4, seed=1))),
    ("betaln-broadcast", sp.betaln, (pos(2, 1), pos(3, seed=1))),
    ("betainc", lambda x: sp.betainc(_A, _B, x), (unit(4),)),
    ("betainc-scalar-params", lambda x: sp.betainc(1.5, 2.5, x), (unit(2, 3),)),
    ("gamma", sp.gamma, (pos(5),)),
    ("gamma-negative", sp.gamma, (rand(4, low=-2.8, high=-2.2),)),
    ("gamma-float", sp.gamma, (1.7,)),
    ("gammaln", sp.gammaln, (pos(5),)),
    ("gammainc", lambda x: sp.gammainc(_A, x), (pos(4, seed=3),)),
    ("gammainc-broadcast", lambda x: sp.gammainc(pos(2, 1, seed=4), x), (pos(3, seed=3),)),
    ("gammaincc", lambda x: sp.gammaincc(_A, x), (pos(4, seed=3),)),
    ("rgamma", sp.rgamma, (pos(5),)),
    ("multigammaln", lambda a: sp.multigammaln(a, 3), (pos(4) + 1.5,)),
    ("multigammaln-float", lambda a: sp.multigammaln(a, 2), (2.3,)),
    ("psi", sp.psi, (pos(5),)),
    ("digamma", sp.digamma, (pos(5),)),
    ("polygamma", lambda x: sp.polygamma(2, x), (pos(4),)),
    ("polygamma-orders", lambda x: sp.polygamma(onp.array([0, 1, 3]), x), (pos(2, 1),)),
    ("erf", sp.erf, (rand(5),)),
    ("erf-0d", sp.erf, (onp.array(0.3),)),
    ("erfc", sp.erfc, (rand(5),)),
    ("erfinv", sp.erfinv, (rand(5, low=-0.8, high=0.8),)),
    ("erfcinv", sp.erfcinv, (rand(5, low=0.2, high=1.8),)),
    ("expit", sp.expit, (rand(5),)),
    ("expit-float", sp.expit, (0.4,)),
    ("logit", sp.logit, (unit(5),)),
    ("i0", sp.i0, (rand(5),)),
    ("i1", sp.i1, (rand(5),)),
    ("iv", lambda x: sp.iv(1.5, x), (pos(4),)),
    ("iv-orders", lambda x: sp.iv(onp.array([0.0, 1.0, 2.5]), x), (pos(2, 1),)),
    ("ive", lambda x: sp.ive(2, x), (rand(5),)),
    ("ive-float-order", lambda x: sp.ive(0.5, x), (pos(4),)),
    ("j0", sp.j0, (rand(5) * 3,)),
    ("j1", sp.j1, (rand(5) * 3,)),
    ("jn", lambda x: sp.jn(3, x), (rand(5) * 3,)),
    ("jv", lambda x: sp.jv(1.5, x), (pos(4),)),
    ("y0", sp.y0, (pos(5),)),
    ("y1", sp.y1, (pos(5),)),
    ("yn", lambda x: sp.yn(2, x), (pos(5),)),
    ("yn-orders", lambda x: sp.yn(onp.array([0, 1, 4]), x), (pos(2, 1),)),
]

LSE_CASES = [
    ("all", lambda a: sp.logsumexp(a), (rand(3, 4),)),
    ("axis0", lambda a: sp.logsumexp(a, axis=0), (rand(3, 4),)),
    ("axis-positional", lambda a: sp.logsumexp(a, 1), (rand(3, 4),)),
    ("axis-neg-keepdims", lambda a: sp.logsumexp(a, axis=-1, keepdims=True), (rand(2, 3, 4),)),
    ("axis-tuple", lambda a: sp.logsumexp(a, axis=(0, 2)), (rand(2, 3, 4),)),
    ("all-keepdims", lambda a: sp.logsumexp(a, keepdims=True), (rand(2, 3),)),
    ("b-keyword", lambda a: sp.logsumexp(a, axis=1, b=pos(3, 4, seed=5)), (rand(3, 4),)),
    ("b-broadcast", lambda a: sp.logsumexp(a, axis=0, b=pos(4, seed=5)), (rand(3, 4),)),
    ("b-traced", lambda a, b: sp.logsumexp(a, 0, b), (rand(3, 4), pos(3, 4, seed=5))),
    ("b-traced-broadcast", lambda a, b: sp.logsumexp(a, 1, b), (rand(3, 4), pos(3, 1, seed=5))),
    ("1d", lambda a: sp.logsumexp(a), (rand(5),)),
]


SOFTMAX_CASES = [
    (f"{name}-{label}", fun, args)
    for name, prim in (("softmax", sp.softmax), ("log_softmax", sp.log_softmax))
    for label, fun, args in [
        ("all", lambda x, p=prim: p(x), (rand(3, 4),)),
        ("axis0", lambda x, p=prim: p(x, axis=0), (rand(3, 4),)),
        ("axis1-positional", lambda x, p=prim: p(x, 1), (rand(3, 4),)),
        ("axis-neg-3d", lambda x, p=prim: p(x, axis=-1), (rand(2, 3, 4),)),
        ("axis-tuple", lambda x, p=prim: p(x, axis=(0, 2)), (rand(2, 3, 4),)),
        ("1d", lambda x, p=prim: p(x), (rand(5),)),
        ("length-1-axis", lambda x, p=prim: p(x, axis=1), (rand(3, 1),)),
        ("0d", lambda x, p=prim: p(x), (onp.array(0.3),)),
        ("float", lambda x, p=prim: p(x), (0.7,)),
        # a nonlinear use of the output, so that second derivatives see the Jacobian twice
        ("squared", lambda x, p=prim: p(x, axis=1) ** 2 * onp.arange(4.0), (rand(3, 4),)),
        ("large-values", lambda x, p=prim: p(x, axis=0), (rand(4, 2) * 30 + 500,)),
    ]
]


@pytest.mark.parametrize("fun,args", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_grads(fun, args):
    check(fun, *args)


@pytest.mark.parametrize("fun,args", [c[1:] for c in LSE_CASES], ids=[c[0] for c in LSE_CASES])
def test_logsumexp_grads(fun, args):
    check(fun, *args)


@pytest.mark.parametrize(
    "fun,args", [c[1:] for c in SOFTMAX_CASES], ids=[c[0] for c in SOFTMAX_CASES]
)
def test_softmax_grads(fun, args):
    check(fun, *args)


def _manual_softmax(x, axis):
    """softmax written with gradcy.numpy primitives: an independent derivative path."""
    e = np.exp(x - np.max(x, axis=axis, keepdims=True))
    return e / np.sum(e, axis=axis, keepdims=True)


@pytest.mark.parametrize("axis", [None, 0, 1, (0, 1)])
def test_softmax_matches_scipy_and_manual_derivatives(axis):
    x = rand(3, 4, seed=3)
    u = rand(3, 4, seed=4)  # a fixed linear functional of the output
    onp.testing.assert_allclose(sp.softmax(x, axis), ss.softmax(x, axis), rtol=1e-15)
    onp.testing.assert_allclose(
        sp.log_softmax(x, axis), ss.log_softmax(x, axis), rtol=1e-15, atol=1e-15
    )
    for mine, ref in [
        (lambda x: sp.softmax(x, axis), lambda x: _manual_softmax(x, axis)),
        (lambda x: sp.log_softmax(x, axis=axis), lambda x: np.log(_manual_softmax(x, axis))),
    ]:

        def fm(x):
            return np.sum(mine(x) ** 2 * u)

        def fr(x):
            return np.sum(ref(x) ** 2 * u)

        onp.testing.assert_allclose(grad(fm)(x), grad(fr)(x), rtol=1e-10, atol=1e-13)
        # Hessian-vector products (reverse over reverse) and a forward-mode tangent
        v = rand(3, 4, seed=5)
        onp.testing.assert_allclose(
            grad(lambda x: np.sum(grad(fm)(x) * v))(x),
            grad(lambda x: np.sum(grad(fr)(x) * v))(x),
            rtol=1e-9,
            atol=1e-12,
        )
        onp.testing.assert_allclose(
            make_jvp(mine)(x)(v)[1], make_jvp(ref)(x)(v)[1], rtol=1e-10, atol=1e-13
        )


def test_softmax_values_and_dtypes_match_scipy():
    x = rand(2, 5, seed=6)
    for prim, ref in [(sp.softmax, ss.softmax), (sp.log_softmax, ss.log_softmax)]:
        x0 = x.copy()
        for arg in (
            x,
            x.astype(onp.float32),
            onp.arange(6).reshape(2, 3),
            onp.array(0.5),
            onp.float32(0.5),
            0.5,
            [[1.0, 2.0], [0.5, -1.0]],
            onp.array([[1.0, -onp.inf], [0.0, 3.0]]),
        ):
            with onp.errstate(invalid="ignore"):
                mine, theirs = (
                    prim(arg, 1 if onp.ndim(arg) == 2 else None),
                    ref(arg, 1 if onp.ndim(arg) == 2 else None),
                )
            assert onp.result_type(mine) == onp.result_type(theirs), (prim.name, arg)
            assert onp.shape(mine) == onp.shape(theirs)
            onp.testing.assert_allclose(
                mine, theirs, rtol=1e-6 if onp.result_type(mine) == onp.float32 else 1e-15
            )
        onp.testing.assert_array_equal(x, x0)  # the input is never written


def test_softmax_float32_stays_float32():
    x = rand(3, 4).astype(onp.float32)
    for prim in (sp.softmax, sp.log_softmax):
        f = lambda x: np.sum(prim(x, axis=1) ** 2)
        assert prim(x, axis=1).dtype == onp.float32
        assert grad(f)(x).dtype == onp.float32
        y, t = make_jvp(lambda x: prim(x, axis=0))(x)(onp.ones_like(x))
        assert y.dtype == t.dtype == onp.float32
        assert grad(lambda x: np.sum(grad(f)(x)))(x).dtype == onp.float32


def test_softmax_gradient_of_a_sum_is_zero():
    # every softmax row sums to 1: the gradient of the sum over the normalised axis vanishes
    x = rand(3, 4)
    onp.testing.assert_allclose(grad(lambda x: np.sum(sp.softmax(x, axis=1)))(x), 0, atol=1e-15)
    # d/dx sum(exp(log_softmax)) is the same statement
    onp.testing.assert_allclose(
        grad(lambda x: np.sum(np.exp(sp.log_softmax(x, axis=0))))(x), 0, atol=1e-15
    )


# =============================================================================
# Forward-mode dtype contract: float32 tangents stay float32 inside the rules
# =============================================================================
def _widenings(fun, args):
    """The (tangent, output) dtype pairs where a JVP rule handed the engine a wider tangent than
    the output's float32."""
    seen = []

    def fixer(t, ans):
        seen.append((onp.result_type(t), onp.result_type(ans)))
        return match_tangent(t, ans)

    install_hooks(tangent_fixer=fixer)
    try:
        for i, a in enumerate(args):
            y, t = make_jvp(fun, argnum=i)(*args)(onp.ones_like(a))
            assert onp.result_type(t) == onp.result_type(y), f"argument {i}"
            assert onp.shape(t) == onp.shape(y), f"argument {i}"
    finally:
        install_hooks(tangent_fixer=match_tangent)
    return [(t, a) for t, a in seen if t.itemsize > a.itemsize and a.kind == "f"]


F32_CASES = [
    c
    for c in CASES + LSE_CASES + SOFTMAX_CASES
    if all(isinstance(a, onp.ndarray) and a.ndim > 0 for a in c[2])
]


@pytest.mark.parametrize("fun,args", [c[1:] for c in F32_CASES], ids=[c[0] for c in F32_CASES])
def test_float32_forward(fun, args):
    args32 = tuple(a.astype(onp.float32) for a in args)
    out = onp.asarray(fun(*args32))
    if out.dtype != onp.float32:  # SciPy itself computes in float64 (polygamma, yn...)
        assert out.dtype == onp.float64
        return
    assert not _widenings(fun, args32)


def test_float32_values_stay_float32():
    x = unit(4).astype(onp.float32)
    for f in (sp.gamma, sp.gammaln, sp.psi, sp.erf, sp.expit, sp.logit, sp.i0, sp.j1, sp.y1):
        g = elementwise_grad(f)(x)
        assert g.dtype == onp.float32, f.name


# =============================================================================
# Agreement with autograd (values and gradients on the same inputs)
# =============================================================================
AG_CASES = [
    ("beta", lambda m: m.beta, (pos(4), pos(4, seed=1))),
    ("betaln", lambda m: m.betaln, (pos(4), pos(4, seed=1))),
    ("betainc", lambda m: lambda x: m.betainc(_A, _B, x), (unit(4),)),
    ("gamma", lambda m: m.gamma, (pos(4),)),
    ("gammaln", lambda m: m.gammaln, (pos(4),)),
    ("gammainc", lambda m: lambda x: m.gammainc(_A, x), (pos(4),)),
    ("gammaincc", lambda m: lambda x: m.gammaincc(_A, x), (pos(4),)),
    ("rgamma", lambda m: m.rgamma, (pos(4),)),
    ("multigammaln", lambda m: lambda a: m.multigammaln(a, 3), (pos(4) + 1.5,)),
    ("psi", lambda m: m.psi, (pos(4),)),
    ("digamma", lambda m: m.digamma, (pos(4),)),
    ("polygamma", lambda m: lambda x: m.polygamma(1, x), (pos(4),)),
    ("erf", lambda m: m.erf, (rand(4),)),
    ("erfc", lambda m: m.erfc, (rand(4),)),
    ("erfinv", lambda m: m.erfinv, (unit(4),)),
    ("erfcinv", lambda m: m.erfcinv, (pos(4) * 0.5,)),
    ("expit", lambda m: m.expit, (rand(4),)),
    ("logit", lambda m: m.logit, (unit(4),)),
    ("logsumexp", lambda m: lambda a: m.logsumexp(a, axis=1), (rand(3, 4),)),
    (
        "logsumexp-keepdims",
        lambda m: lambda a: m.logsumexp(a, axis=0, keepdims=True),
        (rand(3, 4),),
    ),
    ("logsumexp-b", lambda m: lambda a: m.logsumexp(a, axis=1, b=pos(3, 4)), (rand(3, 4),)),
    ("i0", lambda m: m.i0, (rand(4),)),
    ("i1", lambda m: m.i1, (rand(4),)),
    ("iv", lambda m: lambda x: m.iv(2, x), (pos(4),)),
    ("ive", lambda m: lambda x: m.ive(1, x), (rand(4),)),
    ("j0", lambda m: m.j0, (rand(4),)),
    ("j1", lambda m: m.j1, (rand(4),)),
    ("jn", lambda m: lambda x: m.jn(2, x), (rand(4),)),
    ("y0", lambda m: m.y0, (pos(4),)),
    ("y1", lambda m: m.y1, (pos(4),)),
    ("yn", lambda m: lambda x: m.yn(2, x), (pos(4),)),
]


def _sum_out(fun, numpy):
    return lambda *a: numpy.sum(fun(*a))


@pytest.mark.parametrize("getf,args", [c[1:] for c in AG_CASES], ids=[c[0] for c in AG_CASES])
def test_matches_autograd(getf, args):
    fg, fa = getf(sp), getf(asp)
    onp.testing.assert_allclose(fg(*args), fa(*args), rtol=1e-12)
    for i in range(len(args)):
        gg = grad(_sum_out(fg, np), i)(*args)
        ga = autograd.grad(_sum_out(fa, anp_ag), i)(*args)
        onp.testing.assert_allclose(gg, ga, rtol=1e-9, atol=1e-12, err_msg=f"argument {i}")


def test_second_derivatives_match_autograd():
    x = pos(4)
    for name in ("gamma", "psi", "erf", "expit", "j1", "i1"):
        fg = getattr(sp, name)
        fa = getattr(asp, name)
        d2g = elementwise_grad(elementwise_grad(fg))(x)
        d2a = autograd.elementwise_grad(autograd.elementwise_grad(fa))(x)
        onp.testing.assert_allclose(d2g, d2a, rtol=1e-9, err_msg=name)


# =============================================================================
# Derivatives that are not there
# =============================================================================
@pytest.mark.parametrize(
    "fun,args,argnum",
    [
        (sp.betainc, (pos(3), pos(3, seed=1), unit(3)), 0),
        (sp.betainc, (pos(3), pos(3, seed=1), unit(3)), 1),
        (sp.gammainc, (pos(3), pos(3, seed=1)), 0),
        (sp.gammaincc, (pos(3), pos(3, seed=1)), 0),
    ],
    ids=["betainc-a", "betainc-b", "gammainc-a", "gammaincc-a"],
)
def test_parameters_without_rules_raise(fun, args, argnum):
    assert_missing_rules_raise(fun, args, argnum)


def test_integer_orders_get_no_gradient():
    x = pos(3)
    for f in (sp.polygamma, sp.iv, sp.ive, sp.jn, sp.jv, sp.yn):
        n = onp.array([1.0, 2.0, 3.0])
        g = grad(lambda n, x: np.sum(f(n, x)))(n, x)
        assert onp.all(g == 0), f.name


def test_logsumexp_return_sign_has_no_derivative():
    a = rand(3)
    with pytest.raises(NotImplementedError, match="return_sign"):
        grad(lambda a: sp.logsumexp(a, return_sign=True)[0])(a)


def test_gammasgn_is_not_recorded():
    x = rand(4, low=-3.0, high=3.0)
    g = grad(lambda x: np.sum(sp.gammasgn(x) * x))(x)
    onp.testing.assert_array_equal(g, ss.gammasgn(x))
    t = Tape()
    try:
        y = sp.gammasgn(t.new_leaf(x))
        assert type(y) is not Box
    finally:
        t.release()


# =============================================================================
# The rest of scipy.special: primitives without rules
# =============================================================================
def test_every_public_function_is_wrapped():
    for name in dir(ss):
        if name.startswith("_") or name == "test":
            continue
        obj = getattr(ss, name)
        if type(obj).__name__ == "module":
            continue
        mine = getattr(sp, name)
        if callable(obj) and not isinstance(obj, type) and name not in sp._NOT_WRAPPED:
            assert isinstance(mine, Primitive), name
            if obj is not onp.sinc:
                assert mine.name == f"gradcy.scipy.special.{name}", name
        else:
            assert mine is obj, name


def test_untraced_calls_are_scipy():
    x = pos(4)
    onp.testing.assert_array_equal(sp.gamma(x), ss.gamma(x))
    onp.testing.assert_array_equal(sp.ndtr(x), ss.ndtr(x))
    for a, b in zip(sp.airy(x), ss.airy(x)):
        onp.testing.assert_array_equal(a, b)
    assert sp.comb(5, 2, exact=True) == ss.comb(5, 2, exact=True)
    onp.testing.assert_array_equal(sp.roots_legendre(3)[0], ss.roots_legendre(3)[0])
    assert sp.sinc is np.sinc


def test_functions_without_rules_raise_when_differentiated():
    x = pos(3)
    for f in (sp.ndtr, sp.xlogy, sp.kv):
        args = (x,) if f is sp.ndtr else (1.5, x)
        i = len(args) - 1
        with pytest.raises(MissingVJPError, match=f.name):
            grad(lambda *a: np.sum(f(*a)), i)(*args)
        with pytest.raises(MissingJVPError, match=f.name):
            make_jvp(f, i)(*args)(onp.ones_like(x))
    with pytest.raises(MissingVJPError, match="airy"):
        grad(lambda x: np.sum(sp.airy(x)[0]))(x)


def test_scipy_ufuncs_on_traced_values_route_to_the_primitives():
    x = pos(4)
    onp.testing.assert_allclose(grad(lambda x: np.sum(ss.gamma(x)))(x), ss.gamma(x) * ss.psi(x))
    onp.testing.assert_allclose(grad(lambda x: np.sum(ss.psi(x)))(x), ss.polygamma(1, x))
    onp.testing.assert_allclose(
        grad(lambda x: np.sum(ss.jv(2, x)))(x), (ss.jv(1, x) - ss.jv(3, x)) / 2
    )


# =============================================================================
# Saved records
# =============================================================================
SAVED = [
    # (primitive, arguments (traced where float arrays), saved set)
    (sp.beta, (pos(3), pos(3)), {"ans", 0, 1}),
    (sp.betaln, (pos(3), pos(3)), {0, 1}),
    (sp.betainc, (pos(3), pos(3), unit(3)), {0, 1, 2}),
    (sp.gamma, (pos(3),), {"ans", 0}),
    (sp.gammaln, (pos(3),), {0}),
    (sp.gammainc, (pos(3), pos(3)), {0, 1}),
    (sp.gammaincc, (pos(3), pos(3)), {0, 1}),
    (sp.rgamma, (pos(3),), {"ans", 0}),
    (sp.multigammaln, (pos(3) + 2, 2), {0}),
    (sp.psi, (pos(3),), {0}),
    (sp.digamma, (pos(3),), {0}),
    (sp.polygamma, (onp.array([1, 2, 3]), pos(3)), {0, 1}),
    (sp.erf, (rand(3),), {0}),
    (sp.erfc, (rand(3),), {0}),
    (sp.erfinv, (unit(3),), {"ans"}),
    (sp.erfcinv, (unit(3),), {"ans"}),
    (sp.expit, (rand(3),), {"ans"}),
    (sp.logit, (unit(3),), {0}),
    (sp.logsumexp, (rand(3), None, pos(3)), {"ans", 0, 2}),
    (sp.i0, (rand(3),), {0}),
    (sp.i1, (rand(3),), {0}),
    (sp.iv, (onp.array([1.0, 2.0, 3.0]), pos(3)), {0, 1}),
    (sp.ive, (onp.array([1.0, 2.0, 3.0]), pos(3)), {"ans", 0, 1}),
    (sp.j0, (rand(3),), {0}),
    (sp.j1, (rand(3),), {0}),
    (sp.jn, (onp.array([1, 2, 3]), rand(3)), {0, 1}),
    (sp.jv, (onp.array([1.0, 2.0, 3.0]), rand(3)), {0, 1}),
    (sp.y0, (pos(3),), {0}),
    (sp.y1, (pos(3),), {0}),
    (sp.yn, (onp.array([1, 2, 3]), pos(3)), {0, 1}),
    (sp.softmax, (rand(2, 3), 1), {"ans"}),
    (sp.log_softmax, (rand(2, 3), None), {"ans"}),
]


def test_saved_table_covers_every_rule():
    assert {p.name for p, _, _ in SAVED} == COVERED


@pytest.mark.parametrize("prim,args,expected", SAVED, ids=[s[0].name for s in SAVED])
def test_saved(prim, args, expected):
    arrays = [i for i, a in enumerate(args) if isinstance(a, onp.ndarray)]
    ans, saved_args, _ = saved_record(prim, *args, traced=arrays)
    assert (type(ans) is not ArrayMeta) is ("ans" in expected), f"ans: {type(ans).__name__}"
    for i, (a, s) in enumerate(zip(args, saved_args)):
        if not isinstance(a, onp.ndarray):
            continue
        if i in expected:
            assert isinstance(s, onp.ndarray), f"argument {i} should be saved"
        else:
            assert type(s) is ArrayMeta, f"argument {i} should be ArrayMeta, is {type(s)}"


# =============================================================================
# Without SciPy
# =============================================================================
def test_import_error_without_scipy(monkeypatch):
    for name in list(sys.modules):
        if name == "scipy" or name.startswith("scipy.") or name.startswith("gradcy.scipy."):
            monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "scipy", None)  # makes `import scipy...` fail
    for mod in ("gradcy.scipy.special", "gradcy.scipy.stats", "gradcy.scipy.stats.norm"):
        with pytest.raises(ImportError, match=r'pip install "gradcy\[scipy\]"'):
            importlib.import_module(mod)
    import gradcy.scipy  # the package itself does not need SciPy

    assert gradcy.scipy.__doc__


@pytest.mark.parametrize("name", ["erf", "erfc", "gamma", "rgamma"])
def test_complex_matches_autograd(name):
    # autograd's convention for holomorphic functions: the VJP is g * f'(z)
    z = onp.array([0.3 + 0.4j, -0.2 + 0.1j, 1.2 - 0.7j])
    fg, fa = getattr(sp, name), getattr(asp, name)
    for red_g, red_a in [(np.real, anp_ag.real), (np.abs, anp_ag.abs)]:
        gg = grad(lambda z: np.sum(red_g(fg(z))))(z)
        ga = autograd.grad(lambda z: anp_ag.sum(red_a(fa(z))))(z)
        onp.testing.assert_allclose(gg, ga, rtol=1e-10)
    check(lambda z: np.abs(fg(z)), z, order=1, dtypes=False)


def test_submodules_load_on_attribute_access():
    import gradcy.scipy as gs

    assert gs.special is sp
    with pytest.raises(AttributeError):
        _ = gs.nonexistent
