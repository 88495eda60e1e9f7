"""Derivative checks of the elementwise VJPs and JVPs (gradcy/numpy/elementwise.py)."""

import inspect

import numpy as onp
import pytest

import gradcy.numpy as np
from gradcy import elementwise_grad, grad, make_jvp, make_vjp
from gradcy._core import ArrayMeta, Tape
from gradcy.test_util import check_grads
from op_records.elementwise import BINARY, ELEMENTWISE, UNARY, away_from_zero
from vjp_harness import check_deep, rand, raw_cotangent, raw_tangent

MODES = ("fwd", "rev")

COVERED = {f"gradcy.numpy.{n}" for n in ELEMENTWISE}


# =============================================================================
# Helpers
# =============================================================================
def fwd_diag(fun, x):
    """The tangent of elementwise fun along ones: its elementwise derivative in forward mode."""
    return make_jvp(fun)(x)(onp.ones_like(x) if isinstance(x, onp.ndarray) else 1.0)[1]


# =============================================================================
# Unary functions
# =============================================================================
def _domain(name, shape, seed=0):
    return ELEMENTWISE[name].draw(0, shape, seed)


@pytest.mark.parametrize("name", UNARY)
def test_unary(name):
    f = getattr(np, name)
    check_deep(f, _domain(name, (3, 4)))
    check_deep(f, _domain(name, (), seed=1))  # 0-d array
    check_deep(f, float(_domain(name, (), seed=2)))  # Python float


def test_aliases_share_rules():
    assert np.abs is np.absolute
    assert np.true_divide is np.divide
    assert np.conj is np.conjugate
    x = away_from_zero(5)
    assert onp.allclose(grad(lambda x: np.sum(np.abs(x)))(x), onp.sign(x))
    check_deep(lambda x, y: np.true_divide(x, y), rand(3, 1), away_from_zero(4))
    check_deep(lambda x: np.sum(abs(x) * x), away_from_zero(4))


# =============================================================================
# Binary functions: broadcasting, Python-float operands, 0-d arrays
# =============================================================================
def _binary_args(name, xshape, yshape, seed=0):
    r = ELEMENTWISE[name]
    x = r.draw(0, xshape, seed) if xshape is not None else None
    y = r.draw(1, yshape, seed + 3) if yshape is not None else None
    return x, y


@pytest.mark.parametrize("name", [n for n in BINARY if not ELEMENTWISE[n].integer])
def test_binary(name):
    f = getattr(np, name)
    x, y = _binary_args(name, (3, 1), (4,))
    check_deep(f, x, y)  # broadcasting both ways
    check_deep(f, *_binary_args(name, (2, 3), (2, 3), seed=1))  # same shape
    x0, y0 = _binary_args(name, (), (), seed=2)
    check_deep(f, x0, y0)  # 0-d arrays
    check_deep(f, x, y0)  # array with 0-d array
    c = 1.7 if name not in ("fmod", "remainder") else 0.7
    check_deep(lambda a: f(a, c), x)  # Python-float second operand
    check_deep(lambda b: f(c, b), y)  # Python-float first operand
    check_deep(lambda s: f(x, s), c)  # traced Python float


def test_ldexp():
    i = onp.array([[-1], [0], [3]])
    check_deep(lambda x: np.ldexp(x, i), rand(4))
    check_deep(lambda x: np.ldexp(x, 2), rand(2, 3))
    assert onp.allclose(
        elementwise_grad(lambda x: np.ldexp(x, onp.array([0, 1, 2])))(rand(3)), [1.0, 2.0, 4.0]
    )


def test_operators_with_python_floats():
    x = rand(3, 4)
    check_deep(lambda a: a * 2.5, x)
    check_deep(lambda a: 2.5 * a, x)
    check_deep(lambda a: a / 2.5 - 1.5, x)
    check_deep(lambda a: 2.5 / (a * a + 1.0), x)
    check_deep(lambda a: (a * a + 1.0) ** 1.5, x)
    check_deep(lambda a: a**2 + a**3 + a**0 + a**1, x)
    check_deep(lambda a: 2.0**a, x)
    check_deep(lambda a: -a + (+a), x)
    check_deep(lambda a: abs(a), away_from_zero(3, 4))


FLOAT32_FUNS = [
    lambda a: a * 2.5,
    lambda a: np.abs(a) ** 2.5,
    lambda a: np.exp2(a),
    lambda a: np.log2(np.abs(a) + 1.0),
    lambda a: np.maximum(a, 0.0),
    lambda a: np.deg2rad(a),
    lambda a: np.sinc(a),
    lambda a: np.clip(a, -0.5, 0.5),
    lambda a: np.where(a > 0, a, 0.0),
    lambda a: np.power(2.0, a),
    lambda a: np.logaddexp(a, 0.5),
    lambda a: np.arctan2(a, 2.0),
    lambda a: np.hypot(1.5, a),
    lambda a: np.copysign(a, -1.0),
    lambda a: np.heaviside(0.5, a),
    lambda a: np.divide(1.5, a),
    lambda a: np.fmod(a, 0.7),
]


def test_float32_with_python_scalars_stays_float32():
    x = rand(3, 4).astype(onp.float32)
    for fun in FLOAT32_FUNS + [lambda a: np.float_power(np.abs(a) + 1.0, 2.0)]:
        c = raw_cotangent(fun, (x,), 0)
        assert c.dtype == onp.float32 and c.shape == x.shape


@pytest.mark.parametrize("name", UNARY + BINARY)
def test_make_jvp_float32_tangents_are_float32(name):
    """make_jvp of float32 inputs gives float32 tangents, and no rule computes in float64 on
    the way (the engine's cast would hide it)."""
    f = getattr(np, name)
    x = ELEMENTWISE[name].draw(0, (3, 4), seed=0).astype(onp.float32)
    if name in BINARY:
        x = onp.abs(x)
    if name in UNARY:
        funs = [f]
    elif name == "ldexp":
        funs = [lambda a: f(a, onp.array([1, 2, 3, 4]))]
    else:
        y = onp.abs(away_from_zero(4, seed=1)).astype(onp.float32)
        funs = [
            lambda a: f(a, y),
            lambda b: f(y, b),
            lambda a: f(a, 1.5),
            lambda a: f(a, onp.float32(1.5)),
        ]
    for fun in funs:
        for arg in (x, x[0, 0]):  # an array and a float32 scalar
            out, t = raw_tangent(fun, (onp.asarray(arg),), 0)
            want = onp.result_type(fun(onp.asarray(arg)))  # the dtype NumPy gives
            if arg is x:  # (NumPy 1.x widens some float32 scalars, as for f(a, 1.5))
                assert want == (onp.float64 if name == "float_power" else onp.float32)
            assert onp.result_type(out) == want and onp.result_type(t) == want, (
                name,
                onp.result_type(out),
                onp.result_type(t),
            )
            assert onp.shape(t) == onp.shape(out)
    for fun in FLOAT32_FUNS:
        out, t = raw_tangent(fun, (rand(3, 4).astype(onp.float32),), 0)
        assert t.dtype == onp.float32 and t.shape == out.shape


# =============================================================================
# Specific behaviour
# =============================================================================
def test_power_guards_zero_base():
    x = onp.array([0.0, 2.0])
    # gradient wrt the exponent at base 0 is 0 (log(0) guarded), not nan
    gy = elementwise_grad(lambda y: np.power(x, y))(onp.array([1.5, 1.5]))
    assert onp.allclose(gy, [0.0, onp.log(2.0) * 2.0**1.5])
    # x ** 0 at x = 0: zero gradient, for a constant and for an array exponent
    assert onp.array_equal(elementwise_grad(lambda a: a**0)(x), [0.0, 0.0])
    assert onp.array_equal(elementwise_grad(lambda a: np.power(a, onp.zeros(2)))(x), [0.0, 0.0])
    assert onp.all(onp.isfinite(elementwise_grad(lambda y: np.float_power(x, y))(onp.ones(2))))
    assert onp.allclose(elementwise_grad(lambda a: np.power(a, 1.0))(x), [1.0, 1.0])
    assert onp.allclose(elementwise_grad(lambda a: a**3)(x), 3 * x**2)
    # forward mode has the same guards
    assert onp.allclose(
        fwd_diag(lambda y: np.power(x, y), onp.array([1.5, 1.5])), [0.0, onp.log(2.0) * 2.0**1.5]
    )
    assert onp.array_equal(fwd_diag(lambda a: a**0, x), [0.0, 0.0])
    assert onp.array_equal(fwd_diag(lambda a: np.power(a, onp.zeros(2)), x), [0.0, 0.0])
    assert onp.all(onp.isfinite(fwd_diag(lambda y: np.float_power(x, y), onp.ones(2))))
    assert onp.array_equal(fwd_diag(lambda a: np.float_power(a, 0.0), x), [0.0, 0.0])
    assert onp.allclose(fwd_diag(lambda a: a**3, x), 3 * x**2)


def test_power_higher_order():
    x = rand(4, low=0.5, high=2.0)
    g2 = elementwise_grad(elementwise_grad(lambda a: a**3.5))(x)
    assert onp.allclose(g2, 3.5 * 2.5 * x**1.5)
    g2 = elementwise_grad(elementwise_grad(lambda y: np.power(x, y)))(onp.ones(4))
    assert onp.allclose(g2, onp.log(x) ** 2 * x)


@pytest.mark.parametrize("name", ["maximum", "minimum", "fmax", "fmin"])
def test_extrema_ties_split_evenly(name):
    f = getattr(np, name)
    x = onp.array([1.0, 2.0, 3.0])
    y = onp.array([1.0, 0.0, 5.0])
    gx = grad(lambda a: np.sum(f(a, y)))(x)
    gy = grad(lambda b: np.sum(f(x, b)))(y)
    assert gx[0] == 0.5 and gy[0] == 0.5
    assert onp.allclose(gx + gy, 1.0)
    wins_x = (x > y) if name in ("maximum", "fmax") else (x < y)
    assert onp.array_equal(gx[1:], wins_x[1:].astype(float))
    # forward mode picks the same subgradient
    assert onp.array_equal(fwd_diag(lambda a: f(a, y), x), gx)
    assert onp.array_equal(fwd_diag(lambda b: f(x, b), y), gy)


def test_fmax_fmin_nan_goes_to_the_number():
    x = onp.array([onp.nan, 1.0])
    y = onp.array([2.0, onp.nan])
    for f in (np.fmax, np.fmin):
        assert onp.array_equal(grad(lambda a: np.sum(f(a, y)))(x), [0.0, 1.0])
        assert onp.array_equal(grad(lambda b: np.sum(f(x, b)))(y), [1.0, 0.0])


def test_relu_matches_autograd_convention():
    x = onp.array([-1.0, 0.0, 2.0])
    assert onp.array_equal(grad(lambda a: np.sum(np.maximum(a, 0.0)))(x), [0.0, 0.5, 1.0])
    assert onp.array_equal(fwd_diag(lambda a: np.maximum(a, 0.0), x), [0.0, 0.5, 1.0])


def test_clip():
    x = onp.array([-2.0, -0.3, 0.2, 0.9, 3.0])
    inside = onp.array([0.0, 1.0, 1.0, 0.0, 0.0])
    assert onp.array_equal(grad(lambda a: np.sum(np.clip(a, -0.5, 0.5)))(x), inside)
    assert onp.array_equal(fwd_diag(lambda a: np.clip(a, -0.5, 0.5), x), inside)
    assert onp.array_equal(fwd_diag(lambda a: np.clip(a, None, 0.5), x), [1, 1, 1, 0, 0])
    assert onp.array_equal(grad(lambda a: np.sum(np.clip(a, None, 0.5)))(x), [1, 1, 1, 0, 0])
    assert onp.array_equal(grad(lambda a: np.sum(np.clip(a, -0.5, None)))(x), [0, 1, 1, 1, 1])
    assert onp.array_equal(grad(lambda a: np.sum(a.clip(-0.5, 0.5)))(x), inside)
    if "min" in inspect.signature(onp.clip).parameters:  # min=, max=: NumPy >= 2.1
        assert onp.array_equal(fwd_diag(lambda a: np.clip(a, min=-0.5, max=0.5), x), inside)
        assert onp.array_equal(grad(lambda a: np.sum(np.clip(a, min=-0.5, max=0.5)))(x), inside)
    # array bounds, and gradients of the bounds themselves
    lo = onp.array([-1.0, 0.0, -1.0, 0.0, -1.0])
    hi = onp.array([1.0, 1.0, 0.1, 2.0, 1.0])
    assert onp.array_equal(grad(lambda a: np.sum(np.clip(a, lo, hi)))(x), [0, 0, 0, 1, 0])
    assert onp.array_equal(grad(lambda b: np.sum(np.clip(x, b, hi)))(lo), [1, 1, 0, 0, 0])
    assert onp.array_equal(grad(lambda b: np.sum(np.clip(x, lo, b)))(hi), [0, 0, 1, 0, 1])
    assert onp.array_equal(fwd_diag(lambda a: np.clip(a, lo, hi), x), [0, 0, 0, 1, 0])
    assert onp.array_equal(fwd_diag(lambda b: np.clip(x, b, hi), lo), [1, 1, 0, 0, 0])
    assert onp.array_equal(fwd_diag(lambda b: np.clip(x, lo, b), hi), [0, 0, 1, 0, 1])
    # broadcast bounds
    check_deep(lambda a: np.clip(a, onp.array([[-0.5], [0.0], [0.5]]), 0.8), rand(4))
    xa = rand(3, 4, seed=3)
    check_deep(
        lambda a, b, c: np.clip(a, b, c), xa, rand(4, seed=4) - 0.5, rand(3, 1, seed=5) + 0.5
    )
    check_deep(lambda a: np.clip(a, -0.5, 0.5), onp.array(0.25))


def test_where():
    c = onp.array([[True], [False], [True]])
    x, y = rand(3, 4), rand(4)
    gx = grad(lambda a: np.sum(np.where(c, a, y)))(x)
    gy = grad(lambda b: np.sum(np.where(c, x, b)))(y)
    assert onp.array_equal(gx, onp.broadcast_to(c, (3, 4)).astype(float))
    assert onp.array_equal(gy, onp.full(4, 1.0))
    check_deep(lambda a, b: np.where(c, a, b), x, y)
    check_deep(lambda a: np.where(a > 0, a, 0.1 * a), away_from_zero(3, 4))
    check_deep(lambda a: np.where(c, 1.5, a), x)


def test_traced_python_scalars_in_selections():
    """A traced Python float next to float32 arrays: weakly typed tangents in both modes."""
    c = onp.array([[True], [False], [True]])
    x = rand(3, 4)
    check_deep(lambda s: np.where(c, s, x), 0.7)
    check_deep(lambda s: np.where(c, x, s), 0.7)
    check_deep(lambda s: np.clip(x, s, 0.8), -0.3)
    check_deep(lambda s: np.clip(x, -0.8, s), 0.3)
    check_deep(lambda s: np.clip(s, x, x + 1.0), 0.3)
    check_deep(lambda s: np.copysign(s, x), 0.7)
    check_deep(lambda s: np.maximum(s, x), 0.1)
    check_deep(lambda s: np.heaviside(onp.array([0.0, 1.0, -1.0, 0.0]), s), 0.5)


def test_heaviside():
    x = onp.array([-1.0, 0.0, 2.0, 0.0])
    assert onp.array_equal(
        grad(lambda h: np.sum(np.heaviside(x, h)))(onp.full(4, 0.5)), [0.0, 1.0, 0.0, 1.0]
    )
    assert onp.array_equal(grad(lambda h: np.sum(np.heaviside(x, h)))(0.5), 2.0)
    assert onp.array_equal(grad(lambda a: np.sum(np.heaviside(a, 0.5)))(x), onp.zeros(4))
    assert onp.array_equal(
        fwd_diag(lambda h: np.heaviside(x, h), onp.full(4, 0.5)), [0.0, 1.0, 0.0, 1.0]
    )
    assert onp.array_equal(fwd_diag(lambda a: np.heaviside(a, 0.5), x), onp.zeros(4))


def test_zero_guards():
    z = onp.array([0.0, 1.0, -2.0])
    assert onp.array_equal(grad(lambda a: np.sum(np.abs(a)))(z), [0.0, 1.0, -1.0])
    assert onp.array_equal(grad(lambda a: np.sum(np.fabs(a)))(z), [0.0, 1.0, -1.0])
    gs = grad(lambda a: np.sum(np.sinc(a)))(z)
    assert gs[0] == 0.0
    assert onp.allclose(gs[1:], (onp.cos(onp.pi * z[1:]) - onp.sinc(z[1:])) / z[1:])
    zc = onp.array([0.0 + 0.0j, 3.0 + 4.0j])
    assert onp.allclose(grad(lambda a: np.sum(np.abs(a)))(zc), [0.0, (3.0 - 4.0j) / 5.0])
    assert onp.array_equal(fwd_diag(np.abs, z), [0.0, 1.0, -1.0])
    assert onp.array_equal(fwd_diag(np.fabs, z), [0.0, 1.0, -1.0])
    assert onp.array_equal(fwd_diag(np.sinc, z), gs)
    assert onp.allclose(
        make_jvp(np.abs)(zc)(onp.array([1.0 + 1.0j, 1.0 + 1.0j]))[1], [0.0, (3.0 + 4.0) / 5.0]
    )


def test_nan_to_num():
    x = onp.array([1.0, onp.nan, onp.inf, -onp.inf, -2.0])
    assert onp.array_equal(fwd_diag(np.nan_to_num, x), [1, 0, 0, 0, 1])
    assert onp.array_equal(grad(lambda a: np.sum(np.nan_to_num(a) * 3.0))(x), [3, 0, 0, 0, 3])
    assert onp.array_equal(
        grad(lambda a: np.sum(np.nan_to_num(a, nan=1.0, posinf=9.0, neginf=-9.0)))(x),
        [1, 0, 0, 0, 1],
    )


def test_copysign():
    x = onp.array([1.5, -1.5, 2.0, -2.0])
    y = onp.array([1.0, 1.0, -1.0, -1.0])
    assert onp.array_equal(fwd_diag(lambda a: np.copysign(a, y), x), [1, -1, -1, 1])
    assert onp.array_equal(fwd_diag(lambda b: np.copysign(x, b), y), onp.zeros(4))
    assert onp.array_equal(grad(lambda a: np.sum(np.copysign(a, y)))(x), [1, -1, -1, 1])
    assert onp.array_equal(grad(lambda b: np.sum(np.copysign(x, b)))(y), onp.zeros(4))


def test_fmod_remainder_negative_operands():
    x = onp.array([5.3, -5.3, 5.3, -5.3])
    y = onp.array([2.0, 2.0, -2.0, -2.0])
    assert onp.allclose(fwd_diag(lambda b: np.fmod(x, b), y), -onp.trunc(x / y))
    assert onp.allclose(fwd_diag(lambda b: np.remainder(x, b), y), -onp.floor(x / y))
    assert onp.allclose(grad(lambda b: np.sum(np.fmod(x, b)))(y), -onp.trunc(x / y))
    assert onp.allclose(grad(lambda b: np.sum(np.remainder(x, b)))(y), -onp.floor(x / y))
    assert onp.allclose(grad(lambda b: np.sum(x % b))(y), -onp.floor(x / y))
    assert onp.array_equal(grad(lambda a: np.sum(np.fmod(a, y)))(x), onp.ones(4))


def test_angle_degrees():
    z = onp.array([1.0 + 1.0j, -2.0 + 0.5j])
    g_rad = grad(lambda a: np.sum(np.angle(a)))(z)
    g_deg = grad(lambda a: np.sum(np.angle(a, deg=True)))(z)
    assert onp.allclose(g_deg, g_rad * 180.0 / onp.pi)
    v = onp.array([0.5 - 1.0j, 2.0 + 0.3j])
    t_rad = make_jvp(np.angle)(z)(v)[1]
    t_deg = make_jvp(lambda a: np.angle(a, deg=True))(z)(v)[1]
    assert onp.allclose(t_deg, t_rad * 180.0 / onp.pi) and not onp.allclose(t_rad, 0)
    check_grads(lambda a: np.angle(a, deg=True), modes=MODES, order=2)(z)
    assert onp.array_equal(make_jvp(np.angle)(onp.array([1.0, -1.0]))(onp.ones(2))[1], [0.0, 0.0])
    assert onp.array_equal(grad(lambda a: np.sum(np.angle(a)))(onp.array([1.0, -1.0])), [0.0, 0.0])


# =============================================================================
# Complex inputs: autograd's convention
# =============================================================================
def _autograd():
    ag = pytest.importorskip("autograd")
    import autograd.numpy as agnp

    return ag, agnp


def _crand(*shape, seed=0):
    rs = onp.random.RandomState(seed)
    return rs.randn(*shape) + 1j * rs.randn(*shape)


COMPLEX_CASES = [
    ("multiply", lambda m, z: m.multiply(z, onp.array([1.0 - 2.0j, 0.5j, 3.0]))),
    ("divide", lambda m, z: m.divide(1.5 + 0.5j, z)),
    ("add", lambda m, z: m.add(z, z * 2.0)),
    ("power", lambda m, z: m.power(z, 2.5)),
    ("power_y", lambda m, z: m.power(onp.array([1.0 + 1.0j, 2.0, 0.5j]), z)),
    ("sqrt", lambda m, z: m.sqrt(z)),
    ("square", lambda m, z: m.square(z)),
    ("reciprocal", lambda m, z: m.reciprocal(z)),
    ("exp", lambda m, z: m.exp(z)),
    ("log", lambda m, z: m.log(z)),
    ("sin", lambda m, z: m.sin(z)),
    ("tanh", lambda m, z: m.tanh(z)),
    ("tan", lambda m, z: m.tan(z)),
    ("absolute", lambda m, z: m.abs(z)),
    ("conjugate", lambda m, z: m.conjugate(z) * (1.0 + 2.0j)),
    ("real", lambda m, z: m.real(z)),
    ("imag", lambda m, z: m.imag(z)),
    ("angle", lambda m, z: m.angle(z)),
    ("where", lambda m, z: m.where(onp.array([True, False, True]), z, 2.0 * z)),
]


@pytest.mark.parametrize("name,fun", COMPLEX_CASES, ids=[c[0] for c in COMPLEX_CASES])
def test_complex_matches_autograd(name, fun):
    ag, agnp = _autograd()
    z = _crand(3)
    u = _crand(3, seed=1)
    if onp.isrealobj(fun(onp, z)):
        u = u.real
    vjp, _ = make_vjp(lambda a: fun(np, a))(z)
    ours = vjp(u)
    ag_vjp, _ = ag.make_vjp(lambda a: fun(agnp, a))(z)
    assert onp.allclose(ours, ag_vjp(u))


def test_real_input_complex_output_matches_autograd():
    ag, agnp = _autograd()
    x = rand(3)
    f = lambda m, a: m.real(m.exp(a * (1.0 + 2.0j)) * m.conjugate(a + 1j))
    ours = grad(lambda a: np.sum(f(np, a)))(x)
    assert ours.dtype == onp.float64
    assert onp.allclose(ours, ag.grad(lambda a: agnp.sum(f(agnp, a)))(x))


@pytest.mark.parametrize("name,fun", COMPLEX_CASES, ids=[c[0] for c in COMPLEX_CASES])
def test_complex_jvp_matches_autograd(name, fun):
    """Forward mode on complex inputs: g * f'(z) for holomorphic f, the real-linear
    derivative for abs/real/imag/angle/conj; the same as autograd's JVPs, and checked
    numerically to second order in both modes."""
    ag, agnp = _autograd()
    z = _crand(3)
    v = _crand(3, seed=2)
    _, ours = make_jvp(lambda a: fun(np, a))(z)(v)
    _, theirs = ag.make_jvp(lambda a: fun(agnp, a))(z)(v)
    assert onp.allclose(ours, theirs)
    assert onp.iscomplexobj(ours) == onp.iscomplexobj(fun(onp, z))
    check_grads(lambda a: fun(np, a), modes=MODES, order=2)(z)


def test_real_input_complex_output_jvp():
    x = rand(3)
    f = lambda a: np.real(np.exp(a * (1.0 + 2.0j)) * np.conjugate(a + 1j))
    check_grads(f, modes=MODES, order=2)(x)
    g = lambda a: np.exp(a * (1.0 + 2.0j)) * np.abs(a + 1j)
    y, t = make_jvp(g)(x)(onp.ones(3))
    assert onp.iscomplexobj(t) and t.shape == (3,)
    check_grads(g, modes=MODES, order=2)(x)


def test_complex64_tangents_keep_precision():
    z = _crand(3).astype(onp.complex64)
    for fun in [
        np.abs,
        np.real,
        np.imag,
        np.angle,
        np.conjugate,
        lambda a: np.sin(a) * 2.0,
        lambda a: np.where(onp.array([True, False, True]), a, 0.5),
    ]:
        y, t = raw_tangent(fun, (z,), 0, _crand(3, seed=3).astype(onp.complex64))
        assert onp.result_type(t) == onp.result_type(y), fun
        assert onp.result_type(y) in (onp.complex64, onp.float32), fun


def test_complex64_cotangents_keep_precision():
    z = _crand(3).astype(onp.complex64)
    for fun in [np.abs, np.real, np.imag, np.angle, lambda a: np.sin(a) * 2.0]:
        c = raw_cotangent(fun, (z,), 0)
        assert c.dtype == onp.complex64, fun


# =============================================================================
# What the tape keeps
# =============================================================================
SAVED = [(getattr(np, r.name), r) for r in ELEMENTWISE.values()]


def _saved_record(prim, record):
    args = [
        onp.array([1, 2, 3]) if k in record.integer else rand(3, seed=k, low=0.2, high=0.9)
        for k in range(record.nargs)
    ]
    t = Tape()
    try:
        boxes = [a if k in record.integer else t.new_leaf(a) for k, a in enumerate(args)]
        if prim is np.where:
            boxes[0] = args[0] > 0.5  # a plain bool condition, saved all the same
        if prim is np.clip:
            boxes[2] = t.new_leaf(args[2] + 1.0)
        y = prim(*boxes)
        return t.node_info(y._node)["saved"]
    finally:
        t.release()


@pytest.mark.parametrize("prim,record", SAVED, ids=[r.name for _, r in SAVED])
def test_saved(prim, record):
    expected = record.saved
    ans, args, kwargs = _saved_record(prim, record)
    assert isinstance(ans, onp.ndarray) is ("ans" in expected), f"ans: {type(ans).__name__}"
    if "ans" not in expected:
        assert type(ans) is ArrayMeta
    for i, a in enumerate(args):
        if i in expected:
            assert isinstance(a, onp.ndarray), f"argument {i} should be saved"
        else:
            assert type(a) is ArrayMeta, f"argument {i} should be ArrayMeta, is {type(a)}"


def test_every_name_has_a_rule():
    for n in ELEMENTWISE:
        assert getattr(np, n).vjpmakers, n
        assert getattr(np, n).jvpmakers, n


def test_jvp_rules_match_vjp_arguments():
    """Forward mode covers the same arguments as reverse mode: a rule (None meaning zero) for
    every argument that has a VJP maker."""
    for n in ELEMENTWISE:
        p = getattr(np, n)
        assert set(p.vjpmakers) == set(p.jvpmakers), (n, set(p.vjpmakers), set(p.jvpmakers))
        for k, m in p.vjpmakers.items():
            assert (m is None) == (p.jvpmakers[k] is None), (n, k)


# =============================================================================
# A ufunc's dtype= and casting= on traced values: the loop NumPy picks for them
# =============================================================================
_Y = onp.array([0.5, 2.0, 1.5])
_DTYPE_CALLS = {  # (x, c=cast of each array operand, **ufunc keywords)
    "exp": lambda x, c=None, **kw: np.exp(_c(c, x), **kw),
    "sin": lambda x, c=None, **kw: np.sin(_c(c, x), **kw),
    "sqrt": lambda x, c=None, **kw: np.sqrt(_c(c, x), **kw),
    "add a plain array": lambda x, c=None, **kw: np.add(_c(c, x), _c(c, _Y), **kw),
    "multiply traced by traced": lambda x, c=None, **kw: np.multiply(
        _c(c, x), _c(c, x[::-1]), **kw
    ),
    "power of an integer array": lambda x, c=None, **kw: np.power(
        _c(c, x), _c(c, onp.array([2, 3, 1])), **kw
    ),
    "arctan2 by a Python float": lambda x, c=None, **kw: np.arctan2(_c(c, x), 2.0, **kw),
    "plain numpy's maximum": lambda x, c=None, **kw: onp.maximum(_c(c, x), _c(c, _Y), **kw),
}


def _c(c, a):
    return a if c is None else a.astype(c)


_X = onp.array([0.3, 1.1, 2.5])


@pytest.mark.parametrize("name", list(_DTYPE_CALLS))
def test_ufunc_dtype_float64_and_complex128_derivatives(name):
    call = _DTYPE_CALLS[name]
    check_grads(lambda x: call(x, dtype=onp.float64), modes=("fwd", "rev"))(_X)
    if name != "arctan2 by a Python float":  # (no complex loop: NumPy refuses, as gradcy)
        check_grads(lambda x: np.real(call(x, dtype=onp.complex128)), modes=("fwd", "rev"))(_X)
    assert onp.array_equal(call(_X, dtype=onp.float64), call(_X))


@pytest.mark.parametrize("name", list(_DTYPE_CALLS))
@pytest.mark.parametrize("x_dtype, dtype", [("float64", "float32"), ("float32", "float64")])
def test_ufunc_dtype_is_the_cast_loop(name, x_dtype, dtype):
    # dtype= runs the loop of that dtype on the cast arguments, as NumPy does; the gradient
    # is the explicit cast program's, in the input's dtype
    call, x = _DTYPE_CALLS[name], _X.astype(x_dtype)
    y = call(x, dtype=dtype)
    want = onp.asarray(call(onp.asarray(x), dtype=dtype))
    assert y.dtype == onp.dtype(dtype) and onp.array_equal(y, want)

    def f(x):
        return np.sum(np.sin(call(x, dtype=dtype)))

    def explicit(x):
        return np.sum(np.sin(call(x, c=dtype)))

    g = grad(f)(x)
    assert type(g) is onp.ndarray and g.dtype == onp.dtype(x_dtype)
    assert onp.array_equal(g, grad(explicit)(x))
    (_, t) = make_jvp(lambda x: call(x, dtype=dtype))(x)(onp.ones_like(x))
    assert t.dtype == onp.dtype(dtype)
    assert onp.array_equal(t, make_jvp(lambda x: call(x, c=dtype))(x)(onp.ones_like(x))[1])


def test_ufunc_dtype_and_casting_refused_as_numpy_refuses():
    x = _X
    with pytest.raises(TypeError, match=r"gradcy\.numpy\.exp: dtype=int64 with casting="):
        grad(lambda x: np.sum(np.exp(x, dtype=onp.int64)))(x)
    with pytest.raises(TypeError, match=r"gradcy\.numpy\.exp: dtype=float32 with casting='safe'"):
        grad(lambda x: np.sum(np.exp(x, dtype=onp.float32, casting="safe")))(x)
    with pytest.raises(TypeError, match=r"gradcy\.numpy\.add: casting='no'.*x\.astype"):
        grad(lambda x: np.sum(np.add(x, _Y, casting="no")))(x.astype(onp.float32))
    x32 = x.astype(onp.float32)
    g = grad(lambda x: np.sum(np.add(x, x * x, casting="no")))(x32)
    assert g.dtype == onp.float32
    onp.testing.assert_allclose(g, 1 + 2 * x32, rtol=1e-6)
    # NumPy refuses these too
    with pytest.raises(TypeError):
        onp.exp(x, dtype=onp.float32, casting="safe")
    with pytest.raises(TypeError):
        onp.add(x.astype(onp.float32), _Y, casting="no")
    # an integer result with casting='unsafe' is a constant (derivative zero), as without dtype=
    g = grad(lambda x: np.sum(np.add(x, x, dtype=int, casting="unsafe")) + np.sum(x))(x)
    assert onp.array_equal(g, onp.ones(3))


@pytest.mark.parametrize(
    "keyword, value",
    [
        ("signature", "d->d"),
        ("order", "F"),
        ("subok", False),
        ("where", onp.array([True, False, True])),
    ],
)
def test_other_ufunc_keywords_on_traced_values_raise_naming_them(keyword, value):
    with pytest.raises(NotImplementedError, match=rf"gradcy\.numpy\.exp: .*{keyword}=.*;"):
        grad(lambda x: np.sum(np.exp(x, **{keyword: value})))(_X)
    assert onp.array_equal(grad(lambda x: np.sum(np.exp(x, where=True)))(_X), onp.exp(_X))


@pytest.mark.skipif(not hasattr(onp, "vecdot"), reason="numpy.vecdot: NumPy 2")
def test_gufunc_keywords_still_reach_their_rules():
    a = onp.arange(6.0).reshape(3, 2)
    g = grad(lambda a: np.sum(np.vecdot(a, a, axis=0)))(a)
    assert onp.array_equal(g, 2 * a)
