"""The differentiation operators (gradcy/differential_operators.py) against analytic and
central-difference references: argnums, input types and containers, higher order, errors,
counters, custom primitives, NumPy protocols and threads."""

import gc
import threading

import numpy as onp
import pytest

import gradcy.numpy as anp
from gradcy import (
    EscapedValueError,
    MissingVJPError,
    _core,
    elementwise_grad,
    grad,
    grad_and_aux,
    grad_named,
    hessian,
    hessian_vector_product,
    holomorphic_grad,
    jacobian,
    make_vjp,
    multigrad_dict,
    tensor_jacobian_product,
    value_and_grad,
    vector_jacobian_product,
)
from gradcy.extend import defvjp, primitive


# =============================================================================
# Helpers
# =============================================================================
from counters import assert_counters_zero, opened


def num_grad(f, x, eps=1e-6):
    """Central-difference gradient of a real scalar function of a float64 array."""
    x = onp.array(x, dtype=float)
    g = onp.zeros_like(x)
    for i in onp.ndindex(x.shape):
        e = onp.zeros_like(x)
        e[i] = eps
        g[i] = (f(x + e) - f(x - e)) / (2 * eps)
    return g


def num_jac(f, x, eps=1e-6):
    x = onp.array(x, dtype=float)
    out_shape = onp.shape(f(x))
    J = onp.zeros(out_shape + x.shape)
    for i in onp.ndindex(x.shape):
        e = onp.zeros_like(x)
        e[i] = eps
        J[(Ellipsis,) + i] = (onp.asarray(f(x + e)) - onp.asarray(f(x - e))) / (2 * eps)
    return J


X3 = onp.array([0.3, -0.8, 1.4])


def f_scalar(x):
    return anp.sum(anp.sin(x) * x + anp.exp(0.5 * x))


def df_scalar(x):
    return onp.cos(x) * x + onp.sin(x) + 0.5 * onp.exp(0.5 * x)


# =============================================================================
# Operators against references
# =============================================================================
def test_grad_matches_analytic_and_central_differences():
    g = grad(f_scalar)(X3)
    onp.testing.assert_allclose(g, df_scalar(X3), rtol=1e-12)
    onp.testing.assert_allclose(g, num_grad(lambda x: f_scalar(x), X3), rtol=1e-7)
    assert type(g) is onp.ndarray and g.dtype == onp.float64 and g.shape == (3,)


def test_value_and_grad():
    v, g = value_and_grad(f_scalar)(X3)
    assert v == pytest.approx(float(onp.sum(onp.sin(X3) * X3 + onp.exp(0.5 * X3))))
    assert not isinstance(v, _core.Box)
    onp.testing.assert_allclose(g, df_scalar(X3), rtol=1e-12)


def test_grad_and_aux_returns_plain_aux():
    def f(x):
        y = anp.tanh(x)
        return anp.sum(y * y), {"y": y, "n": 3}

    g, aux = grad_and_aux(f)(X3)
    t = onp.tanh(X3)
    onp.testing.assert_allclose(g, 2 * t * (1 - t * t), rtol=1e-12)
    assert not isinstance(aux["y"], _core.Box)
    onp.testing.assert_allclose(aux["y"], t)
    assert aux["n"] == 3


def test_elementwise_grad():
    g = elementwise_grad(anp.tanh)(X3)
    onp.testing.assert_allclose(g, 1 - onp.tanh(X3) ** 2, rtol=1e-12)
    g = elementwise_grad(lambda x: x * x * x)(onp.array([[1.0, 2.0], [3.0, -1.0]]))
    onp.testing.assert_allclose(g, 3 * onp.array([[1.0, 2.0], [3.0, -1.0]]) ** 2)


def test_make_vjp_matches_jacobian_transpose():
    def f(x):
        return anp.sin(x) * anp.sum(x)

    vjp, ans = make_vjp(f)(X3)
    opened(vjp)
    onp.testing.assert_allclose(ans, onp.sin(X3) * X3.sum())
    v = onp.array([1.0, -2.0, 0.5])
    J = num_jac(lambda x: onp.sin(x) * x.sum(), X3)
    onp.testing.assert_allclose(vjp(v), v @ J, rtol=1e-7)
    vjp.release()


def test_jacobian():
    A = onp.array([[1.0, 2.0, -1.0], [0.5, 0.0, 3.0]])

    def f(x):
        return anp.tanh(anp.dot(A, x)) * 2.0

    J = jacobian(f)(X3)
    assert J.shape == (2, 3)
    ref = num_jac(lambda x: onp.tanh(A @ x) * 2.0, X3)
    onp.testing.assert_allclose(J, ref, rtol=1e-7, atol=1e-10)

    # matrix input, matrix output: out.shape + in.shape
    M = onp.array([[0.1, 0.2], [0.3, 0.4]])
    J = jacobian(lambda m: anp.sin(m) * 3.0)(M)
    assert J.shape == (2, 2, 2, 2)
    onp.testing.assert_allclose(J, num_jac(lambda m: onp.sin(m) * 3.0, M), rtol=1e-7, atol=1e-10)

    # scalar output
    J = jacobian(f_scalar)(X3)
    onp.testing.assert_allclose(J, df_scalar(X3), rtol=1e-10)


def test_hessian_of_quadratic_form_is_the_matrix():
    A = onp.array([[2.0, 0.5, -1.0], [0.5, 3.0, 0.25], [-1.0, 0.25, 1.5]])

    def q(x):
        return 0.5 * anp.dot(x, anp.dot(A, x))

    H = hessian(q)(X3)
    assert H.shape == (3, 3)
    onp.testing.assert_allclose(H, A, rtol=1e-12, atol=1e-14)

    # a non-quadratic function against central differences of the analytic gradient
    H = hessian(f_scalar)(X3)
    onp.testing.assert_allclose(H, num_jac(df_scalar, X3), rtol=1e-6, atol=1e-9)


def test_hessian_vector_product():
    A = onp.array([[2.0, 0.5, -1.0], [0.5, 3.0, 0.25], [-1.0, 0.25, 1.5]])
    v = onp.array([1.0, -1.0, 2.0])
    hvp = hessian_vector_product(lambda x: 0.5 * anp.dot(x, anp.dot(A, x)) + anp.sum(anp.sin(x)))
    r = hvp(X3, v)
    onp.testing.assert_allclose(r, A @ v - onp.sin(X3) * v, rtol=1e-12)


def test_holomorphic_grad():
    def f(z):
        return anp.sin(z) * z

    for z in [1.0 + 2.0j, onp.complex128(0.5 - 0.3j)]:
        g = holomorphic_grad(f)(z)
        ref = onp.cos(z) * z + onp.sin(z)
        assert g == pytest.approx(ref, rel=1e-12)
        # the complex derivative is the limit along the real axis
        h = 1e-6
        num = (onp.sin(z + h) * (z + h) - onp.sin(z - h) * (z - h)) / (2 * h)
        assert g == pytest.approx(num, rel=1e-7)
    with pytest.raises(TypeError, match="complex"):
        holomorphic_grad(f)(1.0)


def test_vector_jacobian_product():
    v = onp.array([2.0, -1.0, 0.5])

    def f(x):
        return anp.exp(x) * x[0]

    r = vector_jacobian_product(f)(X3, v)
    J = num_jac(lambda x: onp.exp(x) * x[0], X3)
    onp.testing.assert_allclose(r, v @ J, rtol=1e-7)


def test_tensor_jacobian_product():
    M = onp.array([[0.1, 0.2, 0.3], [-0.4, 0.5, 0.6]])
    V = onp.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])

    def f(x):
        return anp.sin(x) * 2.0

    r = tensor_jacobian_product(f)(M, V)
    J = num_jac(lambda x: onp.sin(x) * 2.0, M)
    onp.testing.assert_allclose(r, onp.tensordot(V, J, 2), rtol=1e-7)


def test_multigrad_dict_and_grad_named():
    def f(a, b, c=2.0):
        return anp.sum(a * b) * c + anp.sum(anp.sin(b))

    a = onp.array([1.0, 2.0])
    b = onp.array([0.5, -0.5])
    d = multigrad_dict(f)(a, b, c=3.0)
    assert set(d) == {"a", "b", "c"}
    onp.testing.assert_allclose(d["a"], 3.0 * b)
    onp.testing.assert_allclose(d["b"], 3.0 * a + onp.cos(b))
    assert d["c"] == pytest.approx(float(onp.sum(a * b)))
    assert type(d["c"]) is float

    g = grad_named(f, "b")(a, b)
    onp.testing.assert_allclose(g, 2.0 * a + onp.cos(b))
    g = grad_named(f, "c")(a, b, 3.0)
    assert g == pytest.approx(float(onp.sum(a * b)))


# =============================================================================
# argnum
# =============================================================================
def test_argnum_int_and_tuple():
    def f(x, y, z):
        return anp.sum(x * y * anp.sin(z))

    x, y, z = onp.array([1.0, 2.0]), onp.array([3.0, -1.0]), onp.array([0.2, 0.4])
    onp.testing.assert_allclose(grad(f, 1)(x, y, z), x * onp.sin(z))
    onp.testing.assert_allclose(grad(f, 2)(x, y, z), x * y * onp.cos(z))
    gs = grad(f, (0, 2))(x, y, z)
    assert type(gs) is tuple and len(gs) == 2
    onp.testing.assert_allclose(gs[0], y * onp.sin(z))
    onp.testing.assert_allclose(gs[1], x * y * onp.cos(z))
    v, gs = value_and_grad(f, (1, 0))(x, y, z)
    assert v == pytest.approx(float(onp.sum(x * y * onp.sin(z))))
    onp.testing.assert_allclose(gs[0], x * onp.sin(z))
    onp.testing.assert_allclose(gs[1], y * onp.sin(z))


# =============================================================================
# Input types and containers
# =============================================================================
def test_python_float_input_gives_float():
    g = grad(lambda x: anp.sin(x) * x)(0.7)
    assert type(g) is float
    assert g == pytest.approx(onp.cos(0.7) * 0.7 + onp.sin(0.7))
    g = grad(lambda x: x * x)(3.0)
    assert type(g) is float and g == 6.0


@pytest.mark.parametrize("scalar_type", [onp.float64, onp.float32])
def test_numpy_scalar_input_gives_same_scalar_type(scalar_type):
    x = scalar_type(0.7)
    g = grad(lambda x: anp.sin(x) * x)(x)
    assert type(g) is scalar_type
    ref = onp.cos(0.7) * 0.7 + onp.sin(0.7)
    assert float(g) == pytest.approx(ref, rel=1e-6 if scalar_type is onp.float32 else 1e-12)


def test_zero_d_array_input_gives_zero_d_array():
    x = onp.array(0.7)
    g = grad(lambda x: anp.sin(x) * x)(x)
    assert type(g) is onp.ndarray and g.shape == () and g.dtype == onp.float64
    assert float(g) == pytest.approx(onp.cos(0.7) * 0.7 + onp.sin(0.7))
    x32 = onp.array(0.7, dtype=onp.float32)
    g = grad(lambda x: anp.sum(x * x))(x32)
    assert type(g) is onp.ndarray and g.shape == () and g.dtype == onp.float32


def test_float32_array_gives_float32_gradient():
    x = onp.array([0.3, -0.8, 1.4], dtype=onp.float32)

    def f(x):
        return anp.sum(anp.tanh(x) * 2.0 + x * 0.1)  # Python scalars must not promote

    g = grad(f)(x)
    assert g.dtype == onp.float32 and g.shape == (3,)
    onp.testing.assert_allclose(g, 2 * (1 - onp.tanh(x.astype(float)) ** 2) + 0.1, rtol=1e-5)
    J = jacobian(lambda x: anp.sin(x))(x)
    assert J.dtype == onp.float32


def test_complex_input_follows_autograd_convention():
    # for a real-valued f of z = a + ib the gradient is df/da - i df/db
    def f(z):
        return anp.real(z * z) + anp.imag(z) * 3.0

    z = 1.0 + 2.0j
    g = grad(f)(z)
    assert type(g) is complex
    fr = lambda a, b: ((a + 1j * b) ** 2).real + 3.0 * b
    h = 1e-6
    da = (fr(1 + h, 2) - fr(1 - h, 2)) / (2 * h)
    db = (fr(1, 2 + h) - fr(1, 2 - h)) / (2 * h)
    assert g == pytest.approx(da - 1j * db, rel=1e-7)

    zs = onp.array([1.0 + 2.0j, -0.5 + 0.25j])
    g = grad(lambda z: anp.sum(anp.real(z * anp.conj(z))))(zs)
    assert g.dtype == onp.complex128
    onp.testing.assert_allclose(g, 2 * onp.conj(zs))


def test_containers_of_inputs_keep_their_structure():
    def f(p):
        return (
            anp.sum(p["w"] * p["w"])
            + p["b"] * 3.0
            + anp.sum(anp.sin(p["pair"][0]))
            + p["pair"][1] * p["lst"][0]
            + p["lst"][1] * 2.0
        )

    p = {
        "w": onp.array([1.0, 2.0]),
        "b": 0.5,
        "pair": (onp.array([0.1, 0.2], dtype=onp.float32), onp.float64(2.0)),
        "lst": [onp.array(3.0), 4.0],
    }
    g = grad(f)(p)
    assert type(g) is dict and set(g) == set(p)
    onp.testing.assert_allclose(g["w"], 2 * p["w"])
    assert type(g["b"]) is float and g["b"] == 3.0
    assert type(g["pair"]) is tuple and len(g["pair"]) == 2
    assert g["pair"][0].dtype == onp.float32
    onp.testing.assert_allclose(g["pair"][0], onp.cos(p["pair"][0]), rtol=1e-6)
    assert type(g["pair"][1]) is onp.float64 and g["pair"][1] == 3.0
    assert type(g["lst"]) is list and len(g["lst"]) == 2
    assert type(g["lst"][0]) is onp.ndarray and g["lst"][0].shape == () and g["lst"][0] == 2.0
    assert type(g["lst"][1]) is float and g["lst"][1] == 2.0

    g = grad(lambda t: t[0] * t[1])((2.0, 5.0))
    assert g == (5.0, 2.0) and type(g) is tuple
    g = grad(lambda t: t[0] * t[1])([2.0, 5.0])
    assert g == [5.0, 2.0] and type(g) is list


def test_unused_inputs_get_zero_gradients_of_their_type():
    g = grad(lambda x, y: anp.sum(x * 2.0), (0, 1))(onp.ones(2), 3.0)
    onp.testing.assert_array_equal(g[0], [2.0, 2.0])
    assert type(g[1]) is float and g[1] == 0.0
    g = grad(lambda x: 3.0)(onp.ones((2, 2), dtype=onp.float32))
    assert g.dtype == onp.float32 and g.shape == (2, 2) and not g.any()


# =============================================================================
# Higher order
# =============================================================================
def test_grad_of_grad_of_grad():
    d3 = grad(grad(grad(anp.sin)))
    for x in [0.3, 1.7]:
        assert d3(x) == pytest.approx(-onp.cos(x), rel=1e-12)
    d3 = grad(grad(grad(lambda x: x * x * x * x)))
    assert d3(1.5) == pytest.approx(24 * 1.5)
    d3 = grad(grad(grad(lambda x: anp.exp(anp.sin(x)))))
    x = 0.4
    # third derivative of exp(sin(x))
    s, c = onp.sin(x), onp.cos(x)
    ref = onp.exp(s) * (c**3 - 3 * s * c - c)
    assert d3(x) == pytest.approx(ref, rel=1e-10)


# =============================================================================
# Errors
# =============================================================================
# (integer and boolean arrays are differentiated as float64 values, as autograd does:
# tests/test_argument_kinds.py)
@pytest.mark.parametrize("bad", [3, True, onp.int64(2), onp.bool_(True)])
def test_integer_or_bool_input_is_a_type_error_naming_function_and_argument(bad):
    with pytest.raises(TypeError, match=r"grad: argument 1"):
        grad(lambda x, y: y * 2.0, 1)(1.0, bad)
    with pytest.raises(TypeError, match=r"value_and_grad: argument 0"):
        value_and_grad(lambda x: x * 2.0)(bad)


def test_integer_inside_tuple_argnum_names_that_argument():
    with pytest.raises(TypeError, match=r"grad: argument 1 "):
        grad(lambda a, b: a * b, (0, 1))(1.0, 2)
    with pytest.raises(TypeError, match=r"grad: argument 0"):
        grad(lambda t: t[0] * t[1])((1.0, 2))


def test_function_returning_none_is_an_error():
    # a forgotten `return` must not silently give a zero gradient
    with pytest.raises(TypeError):
        grad(lambda x: None)(1.0)


def test_non_scalar_output_suggests_elementwise_grad_or_jacobian():
    with pytest.raises(TypeError) as e:
        grad(anp.sin)(X3)
    assert "elementwise_grad" in str(e.value) and "jacobian" in str(e.value)
    with pytest.raises(TypeError, match="elementwise_grad"):
        value_and_grad(anp.sin)(X3)


def test_complex_output_to_grad_is_an_error():
    with pytest.raises(TypeError, match="complex"):
        grad(lambda z: z * z)(1.0 + 1.0j)
    with pytest.raises(TypeError, match="complex"):
        grad(lambda x: anp.sum(x * 1j))(X3)


def test_escaped_box_raises_escaped_value_error():
    stash = {}

    def f(x):
        stash["x"] = x
        return anp.sum(x * x)

    grad(f)(X3)
    with pytest.raises(EscapedValueError):
        anp.sin(stash["x"])
    with pytest.raises(EscapedValueError):
        stash["x"] * 2.0
    # using it inside a later differentiation too
    with pytest.raises(EscapedValueError):
        grad(lambda y: anp.sum(y * stash["x"]))(X3)
    stash.clear()


class _Boom(Exception):
    pass


def _raising(x):
    y = anp.sin(x) * anp.exp(x)
    anp.tanh(y)
    raise _Boom("inside f")


@pytest.mark.parametrize(
    "op",
    [
        grad,
        value_and_grad,
        grad_and_aux,
        elementwise_grad,
        make_vjp,
        jacobian,
        hessian,
        holomorphic_grad,
    ],
)
def test_counters_zero_when_f_raises(op):
    x = onp.array([0.1, 0.2]) + (0j if op is holomorphic_grad else 0)
    with pytest.raises(_Boom):
        op(_raising)(x)
    assert_counters_zero()


def test_counters_zero_when_f_raises_in_products():
    with pytest.raises(_Boom):
        vector_jacobian_product(_raising)(X3, onp.ones(3))
    assert_counters_zero()
    with pytest.raises(_Boom):
        hessian_vector_product(_raising)(X3, onp.ones(3))
    assert_counters_zero()
    with pytest.raises(_Boom):
        tensor_jacobian_product(_raising)(X3, onp.ones(3))
    assert_counters_zero()
    with pytest.raises(_Boom):
        multigrad_dict(lambda a, b: _raising(a))(X3, X3)
    assert_counters_zero()
    with pytest.raises(TypeError):
        grad(anp.sin)(X3)
    assert_counters_zero()


def test_counters_zero_after_every_operator():
    v = onp.array([1.0, 2.0, 3.0])
    grad(f_scalar)(X3)
    assert_counters_zero()
    value_and_grad(f_scalar)(X3)
    assert_counters_zero()
    grad_and_aux(lambda x: (f_scalar(x), anp.sin(x)))(X3)
    assert_counters_zero()
    elementwise_grad(anp.sin)(X3)
    assert_counters_zero()
    vjp, _ = make_vjp(anp.sin)(X3)
    vjp(v)
    del vjp
    assert_counters_zero()
    jacobian(anp.sin)(X3)
    assert_counters_zero()
    hessian(f_scalar)(X3)
    assert_counters_zero()
    hessian_vector_product(f_scalar)(X3, v)
    assert_counters_zero()
    holomorphic_grad(lambda z: anp.sin(z) * z)(1.0 + 1.0j)
    assert_counters_zero()
    vector_jacobian_product(anp.sin)(X3, v)
    assert_counters_zero()
    tensor_jacobian_product(anp.sin)(X3, v)
    assert_counters_zero()
    multigrad_dict(lambda a, b: anp.sum(a * b))(X3, v)
    assert_counters_zero()
    grad_named(lambda a, b: anp.sum(a * b), "b")(X3, v)
    assert_counters_zero()
    grad(grad(grad(anp.sin)))(0.5)
    assert_counters_zero()


# =============================================================================
# Custom primitives without VJPs
# =============================================================================
def _scaled(x, y):
    return x * y


scaled = primitive(_scaled)
defvjp(scaled, lambda ans, x, y: lambda g: g * y)  # argument 1 has no VJP


def _novjp(x):
    return x * 2.0


novjp = primitive(_novjp)


def test_missing_vjp_error_names_primitive_and_argument():
    assert scaled.name.endswith("_scaled")
    g = grad(lambda x: anp.sum(scaled(x, 3.0)))(X3)  # argument 0 only: fine
    onp.testing.assert_allclose(g, onp.full(3, 3.0))
    with pytest.raises(MissingVJPError) as e:
        grad(lambda y: anp.sum(scaled(X3, y)))(onp.ones(3))
    msg = str(e.value)
    assert f"{scaled.name} has no VJP for argument 1" in msg
    assert "gradcy.extend.defvjp" in msg
    assert_counters_zero()
    with pytest.raises(MissingVJPError, match=rf"{novjp.name} has no VJP for argument 0"):
        grad(lambda x: anp.sum(novjp(x)))(X3)
    assert_counters_zero()
    # no error when no cotangent reaches the primitive
    assert grad(lambda x: anp.sum(x) + 0.0 * anp.sum(novjp(onp.ones(3))))(X3).tolist() == [
        1.0,
        1.0,
        1.0,
    ]


# =============================================================================
# Non-differentiable functions on traced values
# =============================================================================
def test_nondifferentiable_functions_work_on_traced_values():
    x = onp.array([0.5, -1.5, 2.25, 0.75])

    def f(x):
        assert anp.shape(x) == (4,) and x.shape == (4,)
        i = anp.argmax(x)
        mask = x > 0.0
        z = anp.zeros_like(x)
        fl = anp.floor(x)
        pos = anp.greater_equal(x, 0.7)
        return (
            x[i] * 10.0 + anp.sum(x * mask) + anp.sum(z + x * fl) + anp.sum(x * pos) + x[x.argmin()]
        )

    g = grad(f)(x)
    ref = onp.zeros(4)
    ref[onp.argmax(x)] += 10.0
    ref += x > 0
    ref += onp.floor(x)
    ref += x >= 0.7
    ref[onp.argmin(x)] += 1.0
    onp.testing.assert_allclose(g, ref)


# =============================================================================
# Plain numpy on traced values (protocols)
# =============================================================================
def test_plain_numpy_on_traced_values_is_routed_and_differentiated():
    c = onp.array([2.0, -1.0, 0.5])

    def f(x):
        y = onp.sin(x)  # __array_ufunc__
        y = c * y + y * c  # ndarray * Box, Box * ndarray
        y = onp.exp(y) + c  # ufunc, then Box + ndarray
        y = c + y  # ndarray + Box
        return onp.sum(y)  # __array_function__

    g = grad(f)(X3)
    ref = onp.exp(2 * c * onp.sin(X3)) * 2 * c * onp.cos(X3)
    onp.testing.assert_allclose(g, ref, rtol=1e-12)

    g = grad(lambda x: onp.dot(c, onp.tanh(x)))(X3)
    onp.testing.assert_allclose(g, c * (1 - onp.tanh(X3) ** 2), rtol=1e-12)


def test_traced_value_as_keyword_argument():
    # a Box passed by keyword must be traced (or rejected with a clear TypeError), never
    # bounce between Primitive.__call__ and __array_function__
    x = onp.array([0.3, -0.8, 1.4])
    try:
        g = grad(lambda m: anp.sum(anp.clip(x, a_min=m, a_max=10.0)))(0.0)
    except TypeError as e:
        assert "keyword" in str(e)
    else:
        assert g == pytest.approx(float(onp.sum(x < 0.0)))


# =============================================================================
# Nesting, identity, Python iteration
# =============================================================================
def test_nested_differentiation_has_no_perturbation_confusion():
    assert grad(lambda x: x * grad(lambda y: x + y)(1.0))(3.0) == 1.0
    assert grad(lambda x: grad(lambda y: x * y)(2.0))(3.0) == 1.0
    # the inner function closes over the outer traced value and returns it unchanged
    assert grad(lambda x: x * grad(lambda y: x)(2.0) + x)(3.0) == 1.0


def test_identity_and_python_iteration():
    assert grad(lambda x: x)(2.0) == 1.0
    onp.testing.assert_array_equal(jacobian(lambda x: x)(X3), onp.eye(3))
    g = grad(lambda x: sum(xi * xi for xi in x))(X3)  # builtin sum starts from int 0
    onp.testing.assert_allclose(g, 2 * X3)
    g = grad(lambda x: x[0] * x[1] + len(x))(X3)
    onp.testing.assert_allclose(g, [X3[1], X3[0], 0.0])


# =============================================================================
# Threads
# =============================================================================
def test_two_threads_differentiate_concurrently():
    xa = onp.linspace(-1.0, 1.0, 5)
    xb = onp.linspace(0.5, 2.0, 4)

    def fa(x):
        return anp.sum(anp.sin(x) * x)

    def fb(x):
        return anp.sum(anp.log(x) * anp.exp(-x))

    ga_ref = onp.cos(xa) * xa + onp.sin(xa)
    gb_ref = onp.exp(-xb) / xb - onp.log(xb) * onp.exp(-xb)
    errors = []
    barrier = threading.Barrier(2)

    def run(f, x, ref):
        try:
            barrier.wait()
            for _ in range(200):
                g = grad(f)(x)
                if not onp.allclose(g, ref, rtol=1e-12):
                    errors.append((f.__name__, g))
                    return
        except BaseException as e:
            errors.append(e)

    threads = [
        threading.Thread(target=run, args=(fa, xa, ga_ref)),
        threading.Thread(target=run, args=(fb, xb, gb_ref)),
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors[:3]


COVERED = {"gradcy.differential_operators.pack_outputs"}


def test_container_outputs_differentiate_in_both_modes():
    from gradcy.test_util import check_grads

    x = onp.array([0.3, -0.7, 1.1])
    check_grads(
        lambda x: (anp.sin(x), {"a": x * 2.0, "b": [anp.tanh(x)]}), modes=("fwd", "rev"), order=2
    )(x)


def test_make_hvp_and_make_ggnvp_match_autograd():
    autograd = pytest.importorskip("autograd")
    import autograd.numpy as agnp
    from gradcy import make_ggnvp, make_hvp

    def fun(x, np=anp):
        return np.sum(np.sin(x) * x**2)

    x = onp.array([0.3, -0.8, 1.2])
    v = onp.array([1.0, 0.5, -2.0])
    hvp, g = make_hvp(fun)(x)
    a_hvp, a_g = autograd.make_hvp(lambda x: fun(x, agnp))(x)
    onp.testing.assert_allclose(g, a_g)
    onp.testing.assert_allclose(hvp(v), a_hvp(v))
    onp.testing.assert_allclose(hvp(v * 2.0), a_hvp(v * 2.0))  # reused at the same point
    W = onp.arange(6.0).reshape(3, 2) / 5.0

    def f(x, np=anp):
        return np.tanh(np.dot(x, W))

    ggn = make_ggnvp(f)(x)
    a_ggn = autograd.make_ggnvp(lambda x: f(x, agnp))(x)
    onp.testing.assert_allclose(ggn(v), a_ggn(v), rtol=1e-10)
    del hvp, ggn
    gc.collect()
    assert_counters_zero()


# =============================================================================
# grad's fast path (_core.grad_fast): plain float inputs and a real scalar output
# =============================================================================
def _no_general_path(monkeypatch):
    from gradcy import _reverse_mode

    def fail(*a, **k):
        raise AssertionError("the general path ran")

    monkeypatch.setattr(_reverse_mode, "_trace", fail)


def test_fast_path_runs_plain_calls_without_the_general_path(monkeypatch):
    _no_general_path(monkeypatch)
    x = onp.linspace(-1.0, 1.0, 6).reshape(2, 3)
    y32 = onp.ones(3, onp.float32)
    g = grad(lambda a: anp.sum(anp.sin(a)))(x)
    onp.testing.assert_allclose(g, onp.cos(x))
    gx, gy = grad(lambda a, b: anp.sum(a * b), argnum=(0, 1))(x, y32.astype(float))
    onp.testing.assert_allclose(gx, onp.ones((2, 3)))
    onp.testing.assert_allclose(gy, x.sum(axis=0))
    g32 = grad(lambda b: anp.sum(b * 2.0))(y32)
    assert g32.dtype == onp.float32 and g32.shape == (3,)
    gf = grad(lambda s: s * s)(3.0)
    assert type(gf) is float and gf == 6.0
    g0 = grad(lambda s: s * s)(onp.array(3.0))
    assert type(g0) is onp.ndarray and g0.shape == () and g0 == 6.0
    v, g = value_and_grad(lambda a: anp.sum(a**2))(x)
    assert v == onp.sum(x**2)
    onp.testing.assert_allclose(g, 2 * x)
    # an input the output does not depend on: zeros of its dtype and shape
    gx, gz = grad(lambda a, z: anp.sum(a), argnum=(0, 1))(x, y32)
    assert gz.dtype == onp.float32 and not gz.any()
    assert_counters_zero()


def test_fast_path_hands_unusual_outputs_to_the_general_checks():
    x = onp.ones(3)
    # a constant output: zero gradient
    assert not grad(lambda a: 1.0)(x).any()
    # a one-element array output is a scalar for grad
    onp.testing.assert_allclose(grad(lambda a: anp.sum(a, keepdims=True))(x), onp.ones(3))
    with pytest.raises(TypeError, match="grad needs a scalar output"):
        grad(lambda a: a * 2.0)(x)
    with pytest.raises(TypeError, match="complex"):
        grad(lambda a: anp.sum(a) * 1j)(x)
    with pytest.raises(TypeError, match="returned None"):
        grad(lambda a: None)(x)
    assert_counters_zero()


def test_fast_path_releases_everything_when_f_raises():
    def f(a):
        anp.sin(a)
        raise KeyError("boom")

    with pytest.raises(KeyError):
        grad(f)(onp.ones(4))
    with pytest.raises(KeyError):
        value_and_grad(f)(onp.ones(4))
    assert_counters_zero()


def test_fast_path_gradient_is_the_callers_own_array():
    # the cotangent of a sum is handed out writable and not shared between calls
    x = onp.ones((2, 2))
    g1 = grad(lambda a: anp.sum(a))(x)
    g2 = grad(lambda a: anp.sum(a))(x)
    g1 += 1.0
    assert onp.array_equal(g2, onp.ones((2, 2))) and g1.flags.writeable
