"""Every path by which a traced float becomes an integer or boolean value is a constant with
zero derivative (as np.trunc and JAX give): the value is NumPy's, the gradient (reverse mode,
forward mode, second order) is zero, and the result is a plain array (usable as an index)."""
import warnings

import numpy as onp
import pytest

import gradcy.numpy as np
from gradcy import grad, hessian, make_jvp

X = onp.array([0.3, 1.7, -2.2, 2.6])


def _sum_times(y):
    return np.sum(y * 1.5)


# name -> (gradcy program, the same program in NumPy)
CASTS = {
    "astype(int)": (lambda x: x.astype(int), lambda x: x.astype(int)),
    "astype(bool)": (lambda x: x.astype(bool), lambda x: x.astype(bool)),
    "astype(np.int32)": (lambda x: x.astype(np.int32), lambda x: x.astype(onp.int32)),
    "astype(uint8) of abs": (lambda x: np.abs(x).astype(onp.uint8),
                             lambda x: onp.abs(x).astype(onp.uint8)),
    "np.astype(x, int)": (lambda x: np.astype(x, int), lambda x: onp.astype(x, int)),
    "numpy.astype(x, int)": (lambda x: onp.astype(x, int), lambda x: onp.astype(x, int)),
    "asarray(dtype=int)": (lambda x: np.asarray(x, dtype=int),
                           lambda x: onp.asarray(x, dtype=int)),
    "asarray(x, int)": (lambda x: np.asarray(x, int), lambda x: onp.asarray(x, int)),
    "array(dtype=int)": (lambda x: np.array(x, dtype=int), lambda x: onp.array(x, dtype=int)),
    "array(list, dtype=int)": (lambda x: np.array([x[0], x[1]], dtype=int),
                               lambda x: onp.array([x[0], x[1]], dtype=int)),
    "rint().astype(int)": (lambda x: np.rint(x).astype(int), lambda x: onp.rint(x).astype(int)),
    "clip().astype(int)": (lambda x: np.clip(x, 0, 1).astype(int),
                           lambda x: onp.clip(x, 0, 1).astype(int)),
    "floor_divide": (lambda x: np.floor_divide(x, 0.7), lambda x: onp.floor_divide(x, 0.7)),
    "//": (lambda x: x // 0.7, lambda x: x // 0.7),
    "divmod()[0]": (lambda x: np.divmod(x, 0.7)[0], lambda x: onp.divmod(x, 0.7)[0]),
    "sum(dtype=int)": (lambda x: np.sum(x, dtype=int), lambda x: onp.sum(x, dtype=int)),
    "x.sum(dtype=int)": (lambda x: x.sum(dtype=int), lambda x: x.sum(dtype=int)),
    "cumsum(dtype=int)": (lambda x: np.cumsum(x, dtype=int),
                          lambda x: onp.cumsum(x, dtype=int)),
    "prod(dtype=int)": (lambda x: np.prod(x, dtype=int), lambda x: onp.prod(x, dtype=int)),
    "add(dtype=int, casting=unsafe)": (
        lambda x: np.add(x, 0.5, dtype=int, casting="unsafe"),
        lambda x: onp.add(x, 0.5, dtype=int, casting="unsafe")),
    "einsum(dtype=int)": (lambda x: np.einsum("i->", x, dtype=int, casting="unsafe"),
                          lambda x: onp.einsum("i->", x, dtype=int, casting="unsafe")),
    "int()": (lambda x: int(x[1]), lambda x: int(x[1])),
    "np.int64()": (lambda x: np.int64(x[1]), lambda x: onp.int64(x[1])),
    "comparison": (lambda x: x > 0.5, lambda x: x > 0.5),
}


def _program(cast):
    return lambda x: _sum_times(cast(x)) + np.sum(x * 0.0)


@pytest.mark.parametrize("name", list(CASTS))
def test_cast_to_integer_is_a_constant(name):
    ours, numpys = CASTS[name]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")      # (the output depends on x only through the cast)
        value = _program(ours)(X)
        assert value == onp.sum(onp.asarray(numpys(X)) * 1.5)
        g = grad(_program(ours))(X)
        onp.testing.assert_array_equal(g, onp.zeros(4))
        assert g.dtype == onp.float64
        # central differences agree away from the rounding points
        eps = 1e-6
        for i in range(4):
            e = onp.zeros(4)
            e[i] = eps
            fd = (onp.sum(onp.asarray(numpys(X + e)) * 1.5)
                  - onp.sum(onp.asarray(numpys(X - e)) * 1.5)) / (2 * eps)
            assert fd == 0.0
        ans, tangent = make_jvp(_program(ours))(X)(onp.ones(4))
        assert ans == value and tangent == 0.0
        onp.testing.assert_array_equal(hessian(_program(ours))(X), onp.zeros((4, 4)))


@pytest.mark.parametrize("name", ["astype(int)", "asarray(dtype=int)", "sum(dtype=int)",
                                  "cumsum(dtype=int)", "add(dtype=int, casting=unsafe)"])
def test_cast_result_is_a_plain_array(name):
    seen = []

    def f(x):
        c = CASTS[name][0](x)
        seen.append(type(c))
        return np.sum(x)
    grad(f)(X)
    assert seen[0] in (onp.ndarray, onp.int64)


def test_cast_result_indexes_plain_arrays():
    table = onp.array([10.0, 20.0, 30.0])
    x = onp.array([0.5, 1.5, 2.2])
    # x.astype(int) = [0, 1, 2]: sum(table[idx] * x), whose gradient is table[idx]
    g = grad(lambda x: np.sum(table[x.astype(int)] * x))(x)
    onp.testing.assert_array_equal(g, table)
    g = grad(lambda x: np.sum(x[x.astype(int)] * x))(onp.array([0.5, 1.5, 0.2]))
    onp.testing.assert_allclose(g, [1.2, 3.0, 0.5], rtol=1e-15)


def test_float_casts_keep_their_gradient():
    g = grad(lambda x: np.sum(x.astype(onp.float32) * 2.0))(X)
    onp.testing.assert_array_equal(g, onp.full(4, 2.0))
    g = grad(lambda x: np.sum(np.real(np.asarray(x, dtype=complex)) * 2.0))(X)
    onp.testing.assert_array_equal(g, onp.full(4, 2.0))
    g = grad(lambda x: np.sum(x.astype(object) * 2.0))(X)
    onp.testing.assert_array_equal(g, onp.full(4, 2.0))
    ans, t = make_jvp(lambda x: np.sum(x.astype(object) * 2.0))(X)(onp.ones(4))
    assert t == 8.0


def test_integer_arithmetic_of_an_integer_argument_is_recorded():
    # an integer array differentiated as float64 values: its own integer arithmetic carries
    # the gradient (only a float rounded to an integer is a constant)
    xi = onp.array([1, 2, 3])
    onp.testing.assert_array_equal(grad(lambda x: np.sum(np.cumsum(x) * 1.0))(xi), [3, 2, 1])
    onp.testing.assert_array_equal(grad(lambda x: np.sum(x ** 2) * 1.0)(xi), [2, 4, 6])
