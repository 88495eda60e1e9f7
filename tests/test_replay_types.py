"""A replayed gradient has the type, dtype and shape eager grad gives it (the type of the input):
the same function's gradient run eagerly, through const_graph (its recording call and a replay at
other values) and through gradcy.jit, compared leaf by leaf: type, dtype, shape and value."""

import numpy as onp
import pytest

import gradcy
import gradcy.numpy as gnp
from gradcy import grad
from gradcy.misc import const_graph


def _loss(x):
    # scalar-valued, nonlinear in every leaf of x (a 0-d input makes NumPy scalars on the way)
    leaves = list(x.values()) if isinstance(x, dict) else list(x) if isinstance(x, tuple) else [x]
    total = 0.0
    for k, v in enumerate(leaves):
        total = total + gnp.sum(gnp.sin(v) * v) * (k + 1.0) + gnp.sum(v * v * v)
    return total


# argument kinds: (name, the first argument, a second one of the same signature)
_KINDS = [
    ("0-d float64 ndarray", onp.array(0.5), onp.array(-1.25)),
    ("1-d float64 ndarray", onp.array([0.5, 1.5, -2.0]), onp.array([1.0, -0.5, 0.25])),
    ("2-d float64 ndarray", onp.arange(6.0).reshape(2, 3) / 7, onp.ones((2, 3)) / 3),
    ("python float", 0.5, -1.25),
    ("0-d float32 ndarray", onp.array(0.5, onp.float32), onp.array(-1.25, onp.float32)),
    ("1-d float32 ndarray", onp.array([0.5, 1.5], onp.float32), onp.array([2.0, -1], onp.float32)),
    ("numpy float64 scalar", onp.float64(0.5), onp.float64(-1.25)),
    ("numpy float32 scalar", onp.float32(0.5), onp.float32(-1.25)),
    (
        "tuple of arrays (0-d, 1-d)",
        (onp.array(0.5), onp.array([1.0, 2.0])),
        (onp.array(-0.5), onp.array([0.25, -1.0])),
    ),
    (
        "dict of arrays (0-d float32, 1-d)",
        {"a": onp.array(0.5, onp.float32), "b": onp.array([1.0, 2.0])},
        {"a": onp.array(-0.5, onp.float32), "b": onp.array([0.25, -1.0])},
    ),
    ("tuple of floats", (0.5, 1.5), (-0.5, 2.0)),
]


def _leaves(g):
    if isinstance(g, dict):
        return [(k, g[k]) for k in sorted(g)]
    if isinstance(g, tuple):
        return list(enumerate(g))
    return [(None, g)]


def _assert_same_kind(got, want, what):
    assert type(got) is type(want), f"{what}: {type(got).__name__}, eager {type(want).__name__}"
    gl, wl = _leaves(got), _leaves(want)
    assert [k for k, _ in gl] == [k for k, _ in wl], what
    for (k, g), (_, w) in zip(gl, wl):
        assert type(g) is type(w), f"{what}[{k}]: {type(g).__name__}, eager {type(w).__name__}"
        assert onp.shape(g) == onp.shape(w), f"{what}[{k}]: shape {onp.shape(g)}"
        assert getattr(g, "dtype", None) == getattr(w, "dtype", None), f"{what}[{k}]: dtype"
        onp.testing.assert_allclose(g, w, rtol=1e-6 if onp.result_type(w) == onp.float32 else 1e-13)


@pytest.mark.parametrize("replay", ["const_graph", "jit"])
@pytest.mark.parametrize("name, x0, x1", _KINDS, ids=[k[0] for k in _KINDS])
def test_replayed_gradient_has_eager_type_dtype_shape(replay, name, x0, x1):
    if replay == "jit":
        pytest.importorskip("numba")
        fast = gradcy.jit(grad(_loss))
    else:
        fast = const_graph(grad(_loss))
    for x in (x0, x1, x0):  # the recording call, then replays
        _assert_same_kind(fast(x), grad(_loss)(x), f"{replay}, {name}")


def test_a_gradient_inside_a_differentiation_has_its_input_type():
    # the inner gradient (computed on the outer tape) has the type of the inner input
    seen = []

    def outer(x):
        g = grad(lambda t: gnp.sin(t) * t)(x)
        seen.append(type(g._value))
        return g * g

    x = onp.array(0.5)
    d = grad(outer)(x)
    assert seen == [onp.ndarray]
    assert type(d) is onp.ndarray and d.shape == () and d.dtype == onp.float64
    c, s = onp.cos(0.5), onp.sin(0.5)
    gx, dgx = s + 0.5 * c, 2 * c - 0.5 * s
    assert d == pytest.approx(2 * gx * dgx, rel=1e-14)


@pytest.mark.parametrize("x", [onp.array(0.7), 0.7, onp.array(0.7, onp.float32)], ids=repr)
def test_higher_order_gradients_of_a_0d_input(x):
    # the recorded conversion (match_input) is differentiated at second and third order
    f = lambda t: gnp.sin(t) * t
    d1, d2, d3 = grad(f), grad(grad(f)), grad(grad(grad(f)))
    v = float(x)
    c, s = onp.cos(v), onp.sin(v)
    for fun, want in ((d1, s + v * c), (d2, 2 * c - v * s), (d3, -3 * s - v * c)):
        got = fun(x)
        assert type(got) is type(x)
        rtol = 1e-6 if onp.result_type(x) == onp.float32 else 1e-13
        onp.testing.assert_allclose(got, want, rtol=rtol)
        replayed = const_graph(fun)
        for _ in range(2):
            r = replayed(x)
            assert type(r) is type(x) and onp.shape(r) == onp.shape(x)
            onp.testing.assert_allclose(r, want, rtol=rtol)


COVERED = {"gradcy.grad.match_input"}


@pytest.mark.parametrize(
    "g_shape, x",
    [
        ((), onp.zeros((2, 3))),  # a scalar gradient broadcast to the input's shape
        ((3,), onp.zeros((2, 3))),  # a row broadcast
        ((), 0.0),  # a Python float's gradient
    ],
)
def test_match_input_gradient(g_shape, x):
    """match_input's rules (the sum back to the gradient's shape, the cast back to its dtype)
    checked numerically to second order, in both modes."""
    from gradcy._arguments import match_input
    from gradcy.test_util import check_grads

    g = onp.random.default_rng(0).standard_normal(g_shape)
    check_grads(lambda g: gnp.sum(gnp.sin(match_input(g, x)) ** 2), modes=["fwd", "rev"], order=2)(
        g
    )


def test_match_input_cast_gradient_is_cast_back():
    """The cast to a float32 input's dtype: the cotangent comes back as the float64 gradient's
    dtype, equal to the float32 cotangent's values (exact; rounding defeats central
    differences here)."""
    from gradcy._arguments import match_input

    w = onp.linspace(-1.0, 1.0, 6, dtype=onp.float32).reshape(2, 3)
    x = onp.zeros((2, 3), onp.float32)
    g = grad(lambda g: gnp.sum(match_input(g, x) * w))(onp.ones((2, 3)))
    assert g.dtype == onp.float64
    assert onp.array_equal(g, w.astype(onp.float64))
