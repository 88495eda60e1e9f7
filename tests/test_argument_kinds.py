"""Which arguments can be differentiated, and what comes back: integer and boolean arrays are
differentiated as float64 values (as autograd does; lifelines passes integer durations this
way), their gradient a float64 array; integer and boolean scalars are refused (autograd refuses
them too). And the "Output seems independent of input." warning of autograd's operators."""

import warnings

import numpy as onp
import pytest

import gradcy.numpy as np
from gradcy import (
    deriv,
    elementwise_grad,
    grad,
    hessian,
    jacobian,
    make_jvp,
    make_vjp,
    value_and_grad,
)

INT_ARRAYS = [
    onp.array([1, 2, 3]),
    onp.array([1, 2, 3], dtype=onp.int32),
    onp.array([1, 2, 3], dtype=onp.uint8),
    onp.array([[1, -2], [3, 4]]),
    onp.array([True, False, True]),
    onp.array(3),
]


def _f(x):
    # (x * 1.0: NumPy takes the sine of a uint8 or bool array in float16)
    return np.sum(np.sin(x * 1.0) * x)


def _df(x):
    x = onp.asarray(x, dtype=float)
    return onp.cos(x) * x + onp.sin(x)


def _g(x):
    return np.exp(x * 0.5) * x


def _dg(x):
    x = onp.asarray(x, dtype=float)
    return onp.exp(x * 0.5) * (0.5 * x + 1.0)


def _same(a, b):
    assert type(a) is onp.ndarray and a.dtype == onp.float64 and a.shape == onp.shape(b)
    onp.testing.assert_allclose(a, b, rtol=1e-13, atol=1e-15)


def _central(f, x, eps=1e-6):
    """Central differences of a scalar f at the float64 values of x."""
    x = onp.asarray(x, dtype=float)
    out = onp.zeros(x.shape)
    for i in onp.ndindex(x.shape):
        e = onp.zeros(x.shape)
        e[i] = eps
        out[i] = (f(x + e) - f(x - e)) / (2 * eps)
    return out


@pytest.mark.parametrize("x", INT_ARRAYS, ids=lambda x: f"{x.dtype}{x.shape}")
def test_integer_and_bool_arrays_are_differentiated_as_float64(x):
    ref = _df(x)
    _same(grad(_f)(x), ref)
    onp.testing.assert_allclose(
        ref, _central(lambda v: float(onp.sum(onp.sin(v) * v)), x), rtol=1e-7
    )
    value, g = value_and_grad(_f)(x)
    _same(g, ref)
    assert value == pytest.approx(float(onp.sum(onp.sin(x * 1.0) * x)), rel=1e-15)
    _same(elementwise_grad(_g)(x), _dg(x))
    _same(make_vjp(_g)(x)[0](onp.ones(x.shape)), _dg(x))
    jac = jacobian(_g)(x)
    _same(jac, onp.diag(_dg(x).ravel()).reshape(x.shape * 2))
    # forward mode: a fractional tangent is not truncated to the integer dtype
    value, tangent = make_jvp(_g)(x)(onp.full(x.shape, 0.5))
    onp.testing.assert_allclose(tangent, 0.5 * _dg(x), rtol=1e-13)
    onp.testing.assert_allclose(deriv(_g)(x), _dg(x), rtol=1e-13)


def test_integer_array_second_order():
    x = onp.array([1, 2, 3])
    h = hessian(_f)(x)
    xf = x.astype(float)
    ref = onp.diag(2 * onp.cos(xf) - xf * onp.sin(xf))
    _same(h, ref)


def test_integer_argument_beside_a_float_one():
    # lifelines: elementwise_grad(cumulative_hazard, 1)(params, times) with integer times
    params, times = onp.array([2.0, 1.5]), onp.array([1, 2, 5, 7])

    def cumulative_hazard(p, t):
        return (t / p[0]) ** p[1]

    hazard = elementwise_grad(cumulative_hazard, 1)(params, times)
    tf = times.astype(float)
    _same(hazard, params[1] / params[0] * (tf / params[0]) ** (params[1] - 1))
    gp = grad(lambda p, t: np.sum(cumulative_hazard(p, t)))(params, times)
    gp_float = grad(lambda p, t: np.sum(cumulative_hazard(p, t)))(params, tf)
    onp.testing.assert_array_equal(gp, gp_float)
    g0, g1 = grad(lambda p, t: np.sum(cumulative_hazard(p, t)), (0, 1))(params, times)
    onp.testing.assert_array_equal(g0, gp_float)
    _same(g1, hazard)


def test_integer_array_inside_a_container():
    g = grad(lambda d: np.sum(d["a"] * d["b"]))({"a": onp.array([1, 2]), "b": onp.ones(2)})
    _same(g["a"], onp.ones(2))
    assert g["b"].dtype == onp.float64
    onp.testing.assert_array_equal(g["b"], [1.0, 2.0])


def test_integer_array_values_stay_integers_in_the_function():
    # the function sees its integer values (x // 2 is an integer constant, as in NumPy)
    seen = []

    def f(x):
        seen.append((x // 2).dtype)
        return np.sum((x // 2) * x * 1.0)

    g = grad(f)(onp.array([1, 4, 7]))
    assert seen == [onp.dtype(onp.int64)]
    _same(g, onp.array([0.0, 2.0, 3.0]))


@pytest.mark.parametrize("bad", [3, True, onp.int64(3), onp.uint8(3), onp.bool_(False)])
@pytest.mark.parametrize(
    "op", [grad, value_and_grad, elementwise_grad, jacobian, make_vjp, make_jvp]
)
def test_integer_and_bool_scalars_are_refused(op, bad):
    # autograd refuses them ("Can't differentiate w.r.t. type <class 'int'>"): a Python or
    # NumPy integer scalar has no float64 array form to hand a gradient back in
    name = op.__name__
    with pytest.raises(TypeError) as info:
        out = op(lambda x: x * 1.0)(bad)
        if op is make_jvp:
            out(1.0)
    assert str(info.value) == (
        f"{name}: argument 0 is an integer scalar ({type(bad).__name__}); gradients are "
        f"defined for floating-point and complex scalars (and for arrays of any numeric "
        f"dtype). Pass a float (e.g. {float(bad)!r} or float(x))."
    )


def test_string_array_is_refused():
    with pytest.raises(
        TypeError,
        match=r"^grad: argument 0 has dtype <U1; gradients are "
        r"defined for numeric",
    ):
        grad(lambda x: 1.0)(onp.array(["a"]))


# =============================================================================
# "Output seems independent of input." (autograd's UserWarning, same words)
# =============================================================================
def _constant_calls():
    return {
        "grad": lambda: grad(lambda x: 1.0)(2.0),
        "grad of an array": lambda: grad(lambda x: 1.0)(onp.ones(2)),
        "value_and_grad": lambda: value_and_grad(lambda x: 2.0)(onp.ones(2)),
        "elementwise_grad": lambda: elementwise_grad(lambda x: np.ones(2))(onp.ones(2)),
        "jacobian": lambda: jacobian(lambda x: np.ones(2))(onp.ones(2)),
        "make_vjp": lambda: make_vjp(lambda x: 3.0)(1.0)[0](1.0),
        "make_jvp": lambda: make_jvp(lambda x: 3.0)(1.0)(1.0),
        "make_jvp of a constructor": lambda: make_jvp(lambda x: np.ones(2))(onp.ones(2))(
            onp.ones(2)
        ),
        "hessian": lambda: hessian(lambda x: np.sum(x))(onp.ones(2)),
        "an integer cast": lambda: grad(lambda x: np.sum(x.astype(int)) * 1.0)(onp.ones(2)),
        # a traced output made by a constructor (grad's fast path: float arrays and floats)
        "grad of a constructor's sum": lambda: grad(lambda x: np.sum(np.zeros(3)))(onp.ones(2)),
        "grad of zeros_like's sum, a float": lambda: grad(lambda x: np.sum(np.zeros_like(x)))(2.0),
        "value_and_grad of a constructor's sum": lambda: value_and_grad(lambda x: np.ones(3).sum())(
            onp.ones(2)
        ),
        "grad of two arguments, a constructor's sum": lambda: grad(
            lambda x, y: np.sum(np.ones_like(y)), (0, 1)
        )(onp.ones(2), 1.0)[1],
    }


@pytest.mark.parametrize("case", list(_constant_calls()))
def test_output_independent_of_input_warns(case):
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = _constant_calls()[case]()
    found = [w for w in caught if str(w.message).startswith("Output seems independent of input.")]
    assert found, [str(w.message) for w in caught]
    assert all(w.category is UserWarning for w in found)
    # attributed to the line that called the operator (this file), not to gradcy
    assert all(w.filename == __file__ for w in found)
    g = result[1] if isinstance(result, tuple) else result
    assert not onp.any(g)


def test_independent_output_warning_text_and_filter():
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert grad(lambda x: 1.0)(2.0) == 0.0
    assert [str(w.message) for w in caught] == [
        "Output seems independent of input. (grad: the function's output was not computed "
        "from the differentiated argument, so its derivative is zero; see "
        "docs/sharp_edges.md#output-independent-of-input)"
    ]
    # autograd users' filter silences it
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        warnings.filterwarnings("ignore", message="Output seems independent of input")
        assert grad(lambda x: 1.0)(2.0) == 0.0


@pytest.mark.parametrize(
    "f", [lambda x: x, lambda x: np.sum(x * 0.0), lambda x: x[0] * 2.0, lambda x: (x, 1.0)[0]]
)
def test_dependent_output_does_not_warn(f):
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        make_vjp(f)(onp.ones(1))[0](onp.ones(()) if onp.ndim(f(onp.ones(1))) == 0 else onp.ones(1))
        make_jvp(f)(onp.ones(1))(onp.ones(1))


def test_integer_output_of_an_integer_argument():
    # autograd: elementwise_grad, jacobian and make_vjp of x ** 2 at an integer array give
    # 2 x as float64; grad of an integer scalar output is an error in both
    x = onp.array([1, 2, 3])
    _same(elementwise_grad(lambda x: x**2)(x), onp.array([2.0, 4.0, 6.0]))
    _same(jacobian(lambda x: x**2)(x), onp.diag([2.0, 4.0, 6.0]))
    _same(make_vjp(lambda x: x**2)(x)[0](onp.ones(3)), onp.array([2.0, 4.0, 6.0]))
    value, tangent = make_jvp(lambda x: x**2)(x)(onp.full(3, 0.5))
    assert value.dtype == onp.int64
    onp.testing.assert_array_equal(tangent, [1.0, 2.0, 3.0])
    with pytest.raises(TypeError, match=r"^grad: the function returned a value of dtype int64"):
        grad(lambda x: np.sum(x**2))(x)
    # a float rounded to integers is a constant: the output is not traced, so still an error
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(
            TypeError,
            match=r"^elementwise_grad: the function returned a value "
            r"of dtype int64",
        ):
            elementwise_grad(lambda x: x.astype(int))(x * 1.0)


@pytest.mark.parametrize(
    "f",
    [
        lambda x: np.sum(x[[0, 0, 2]] * 1.5) + np.sum(x[1:] * 2.0),  # repeated fancy index
        lambda x: x[0] * 1.0 + x[1] * 3.0,  # scalar reads
        lambda x: np.sum(x[onp.array([0, 2])] * 1.0) + np.sum(x[0:2] * x[0:2] * 1.0),
    ],
    ids=["fancy", "scalars", "mixed"],
)
@pytest.mark.filterwarnings("ignore:Output seems independent of input")  # (linear: H = 0)
def test_indexed_integer_array_is_differentiated_as_floats(f):
    # reads of an integer argument send back float cotangents (lifelines' CoxPH strata score)
    xi = onp.array([1, 2, 3])
    _same(grad(f)(xi), grad(f)(xi.astype(float)))
    _same(hessian(f)(xi), hessian(f)(xi.astype(float)))
