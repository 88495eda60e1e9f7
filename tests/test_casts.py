"""Every path by which a traced float becomes an integer or boolean value is a constant with
zero derivative (as np.trunc and JAX give): the value is NumPy's, the gradient (reverse mode,
forward mode, second order) is zero, and the result is a plain array (usable as an index)."""

import warnings

import numpy as onp
import pytest

import gradcy.numpy as np
from gradcy import grad, hessian, make_jvp, value_and_grad
from gradcy.misc import const_graph

X = onp.array([0.3, 1.7, -2.2, 2.6])


def _sum_times(y):
    return np.sum(y * 1.5)


# name -> (gradcy program, the same program in NumPy)
CASTS = {
    "astype(int)": (lambda x: x.astype(int), lambda x: x.astype(int)),
    "astype(bool)": (lambda x: x.astype(bool), lambda x: x.astype(bool)),
    "astype(np.int32)": (lambda x: x.astype(np.int32), lambda x: x.astype(onp.int32)),
    "astype(uint8) of abs": (
        lambda x: np.abs(x).astype(onp.uint8),
        lambda x: onp.abs(x).astype(onp.uint8),
    ),
    "asarray(dtype=int)": (lambda x: np.asarray(x, dtype=int), lambda x: onp.asarray(x, dtype=int)),
    "asarray(x, int)": (lambda x: np.asarray(x, int), lambda x: onp.asarray(x, int)),
    "array(dtype=int)": (lambda x: np.array(x, dtype=int), lambda x: onp.array(x, dtype=int)),
    "array(list, dtype=int)": (
        lambda x: np.array([x[0], x[1]], dtype=int),
        lambda x: onp.array([x[0], x[1]], dtype=int),
    ),
    "rint().astype(int)": (lambda x: np.rint(x).astype(int), lambda x: onp.rint(x).astype(int)),
    "clip().astype(int)": (
        lambda x: np.clip(x, 0, 1).astype(int),
        lambda x: onp.clip(x, 0, 1).astype(int),
    ),
    "floor_divide": (lambda x: np.floor_divide(x, 0.7), lambda x: onp.floor_divide(x, 0.7)),
    "//": (lambda x: x // 0.7, lambda x: x // 0.7),
    "divmod()[0]": (lambda x: np.divmod(x, 0.7)[0], lambda x: onp.divmod(x, 0.7)[0]),
    "sum(dtype=int)": (lambda x: np.sum(x, dtype=int), lambda x: onp.sum(x, dtype=int)),
    "x.sum(dtype=int)": (lambda x: x.sum(dtype=int), lambda x: x.sum(dtype=int)),
    "cumsum(dtype=int)": (lambda x: np.cumsum(x, dtype=int), lambda x: onp.cumsum(x, dtype=int)),
    "prod(dtype=int)": (lambda x: np.prod(x, dtype=int), lambda x: onp.prod(x, dtype=int)),
    "add(dtype=int, casting=unsafe)": (
        lambda x: np.add(x, 0.5, dtype=int, casting="unsafe"),
        lambda x: onp.add(x, 0.5, dtype=int, casting="unsafe"),
    ),
    "einsum(dtype=int)": (
        lambda x: np.einsum("i->", x, dtype=int, casting="unsafe"),
        lambda x: onp.einsum("i->", x, dtype=int, casting="unsafe"),
    ),
    "int()": (lambda x: int(x[1]), lambda x: int(x[1])),
    "np.int64()": (lambda x: np.int64(x[1]), lambda x: onp.int64(x[1])),
    "comparison": (lambda x: x > 0.5, lambda x: x > 0.5),
}
if hasattr(onp, "astype"):  # numpy.astype: NumPy >= 2.1
    CASTS["np.astype(x, int)"] = (lambda x: np.astype(x, int), lambda x: onp.astype(x, int))
    CASTS["numpy.astype(x, int)"] = (lambda x: onp.astype(x, int), lambda x: onp.astype(x, int))


def _program(cast):
    return lambda x: _sum_times(cast(x)) + np.sum(x * 0.0)


def _check_constant(ours, numpys):
    """ours (gradcy) and numpys (NumPy) are the same program: the value is NumPy's, and its
    derivative is zero in reverse mode, forward mode and second order."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # (the output depends on x only through the cast)
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
            fd = (
                onp.sum(onp.asarray(numpys(X + e)) * 1.5)
                - onp.sum(onp.asarray(numpys(X - e)) * 1.5)
            ) / (2 * eps)
            assert fd == 0.0
        ans, tangent = make_jvp(_program(ours))(X)(onp.ones(4))
        assert ans == value and tangent == 0.0
        onp.testing.assert_array_equal(hessian(_program(ours))(X), onp.zeros((4, 4)))


@pytest.mark.parametrize("name", list(CASTS))
def test_cast_to_integer_is_a_constant(name):
    _check_constant(*CASTS[name])


# Writes of a traced float into an integer or boolean buffer: NumPy casts the value (truncation
# toward zero, x != 0 for bool, wrapping for unsigned), so the written value is a constant.
# Each is (m, x) -> the buffer, run with m = gradcy.numpy and m = numpy.
def _setitem(dtype, idx, value, shape=(4,), fill=0):
    def program(m, x):
        b = m.full(shape, fill, dtype)
        b[idx] = value(m, x)
        return b

    return program


def _view_write(m, x):
    b = m.zeros((2, 3), int)
    v = b[1]
    v[1:] = x[1:3] * 2.0
    return b


def _copyto(**kwargs):
    def program(m, x):
        b = m.ones(4, int)
        m.copyto(b, x * 2.0, **kwargs)
        return b

    return program


def _out(m, x):
    b = m.zeros(4, onp.int32)
    r = m.add(x * 2.5, 0.1, out=b, casting="unsafe")
    assert r is b
    return b


def _out_casting(call):
    def program(m, x):
        b = m.zeros(4, int)
        r = call(m, x, b)
        assert r is b
        return b

    return program


def _put(m, x):
    b = m.zeros(4, int)
    m.put(b, [3, 0], x[1:3])
    return b


def _fill_diagonal(m, x):
    b = m.zeros((3, 3), int)
    m.fill_diagonal(b, x[1:] * 1.5)
    return b


def _ufunc_at(m, x):
    b = m.full(4, 3)
    m.add.at(b, [0, 0, 2], x[1:])
    return b


def _at(method, ufunc, fill=0):
    """x.at[1:3].<method>(v) on an integer buffer against its NumPy form (a copy, then
    numpy.<ufunc>.at, or a plain write for set)."""

    def program(m, x):
        v = x[:2] * 3.0
        if m is np:
            return getattr(np.at(np.full(4, fill, int))[1:3], method)(v)
        b = onp.full(4, fill, int)
        if ufunc is None:
            b[1:3] = v
        else:
            ufunc.at(b, slice(1, 3), v)
        return b

    return program


WRITES = {
    "b[0] = x[1]": _setitem(int, 0, lambda m, x: x[1]),
    "b[1:] = x[1:] * 2": _setitem(int, slice(1, None), lambda m, x: x[1:] * 2.0),
    "b[...] = x, 0-d": _setitem(int, Ellipsis, lambda m, x: x[3], shape=()),
    "b[[0, 2]] = x[1:3]": _setitem(int, [0, 2], lambda m, x: x[1:3]),
    "b[[0, 0]] = x[1:3]": _setitem(int, [0, 0], lambda m, x: x[1:3]),
    "b[mask] = x": _setitem(int, onp.array([True, False, True, True]), lambda m, x: x[1:] * 3.0),
    "int32 b[:] = x": _setitem(onp.int32, slice(None), lambda m, x: x * 7.0),
    "uint8 b[:] = abs(x)": _setitem(onp.uint8, slice(None), lambda m, x: m.abs(x) * 23.0),
    "bool b[:] = x": _setitem(bool, slice(None), lambda m, x: x - 0.3),
    "bool b[1] = x[0]": _setitem(bool, 1, lambda m, x: x[0], fill=True),
    "bool b[[1, 2]] = x": _setitem(bool, [1, 2], lambda m, x: x[:2] - 0.3),
    "write through a view": _view_write,
    "copyto(casting=unsafe)": _copyto(casting="unsafe"),
    "copyto(where=)": _copyto(casting="unsafe", where=onp.array([True, False, True, True])),
    "ufunc out= int32, casting=unsafe": _out,
    "clip out= int, casting=unsafe": _out_casting(
        lambda m, x, b: m.clip(x * 1.5, -2.5, 2.5, out=b, casting="unsafe")
    ),
    "concatenate out= int, casting=unsafe": _out_casting(
        lambda m, x, b: m.concatenate([x[2:], x[:2] * 3.0], out=b, casting="unsafe")
    ),
    "put": _put,
    "fill_diagonal": _fill_diagonal,
    "add.at": _ufunc_at,
    "at[].set": _at("set", None),
    "at[].add": _at("add", onp.add),
    "at[].multiply": _at("multiply", onp.multiply, fill=2),
    "at[].max": _at("max", onp.maximum),
}


@pytest.mark.parametrize("name", list(WRITES))
def test_write_into_integer_buffer_is_a_constant(name):
    program = WRITES[name]
    _check_constant(lambda x: program(np, x), lambda x: program(onp, x))


@pytest.mark.parametrize("name", ["b[1:] = x[1:] * 2", "b[0] = x[1]", "add.at", "at[].set"])
def test_write_into_integer_buffer_replays_under_const_graph(name):
    # the written value is a constant of this x: a replay for another x must not reuse it
    program = WRITES[name]

    def loss(x):
        return np.sum(program(np, x) * x)

    fast = const_graph(value_and_grad(loss))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        for x in (X, X + 0.6, X * -1.3):
            value, g = fast(x)
            assert value == onp.sum(program(onp, x) * x)
            onp.testing.assert_array_equal(g, program(onp, x))


def test_augmented_write_into_integer_buffer_refuses_as_numpy():
    # NumPy's same_kind rule refuses b[:] += x (float into int): so does gradcy
    b = onp.zeros(4, int)
    with pytest.raises(TypeError, match="same_kind"):
        b[:] += X

    def f(x):
        b = np.zeros(4, int)
        b[:] += x
        return np.sum(b * 1.0)

    with pytest.raises(TypeError, match="same_kind"):
        grad(f)(X)


def test_integer_value_into_integer_buffer_keeps_its_gradient():
    # an integer argument written into an integer buffer is no rounding: it stays recorded
    xi = onp.array([1, 2, 3])

    def f(x):
        b = np.zeros(3, int)
        b[0] = x[1]
        b[1:] = x[1:] * 3
        return np.sum(b * 1.5)

    onp.testing.assert_array_equal(grad(f)(xi), [0.0, 6.0, 4.5])
    assert make_jvp(f)(xi)(onp.ones(3))[1] == 10.5


def _float32_writes(m, x):
    b = m.zeros(5, onp.float32)
    b[0] = x[1]
    b[1:4] = x[1:] ** 2
    m.copyto(b[3:], x[2:] * 3.0)
    return b


def test_write_into_lower_precision_float_buffer_keeps_its_gradient():
    # float64 into float32: NumPy rounds to float32, the gradient goes through the cast
    def f(x):
        return np.sum(_float32_writes(np, x) * 2.0)

    value = f(X)
    assert value == onp.sum(_float32_writes(onp, X) * 2.0) and value.dtype == onp.float32
    g = grad(f)(X)
    assert g.dtype == onp.float64
    onp.testing.assert_allclose(g, [0.0, 2.0 + 4.0 * X[1], 4.0 * X[2] + 6.0, 6.0], rtol=1e-6)
    ans, tangent = make_jvp(f)(X)(onp.ones(4))
    assert ans == value
    onp.testing.assert_allclose(tangent, onp.sum(g), rtol=1e-6)
    onp.testing.assert_array_equal(hessian(f)(X), onp.diag([0.0, 4.0, 4.0, 0.0]))
    h = grad(lambda x: np.sum(np.at(np.zeros(4, onp.float32))[1:].set(x[1:]) * x))(X)
    onp.testing.assert_allclose(h, [0.0, *(2 * X[1:])], rtol=1e-6)


@pytest.mark.parametrize(
    "name",
    [
        "astype(int)",
        "asarray(dtype=int)",
        "sum(dtype=int)",
        "cumsum(dtype=int)",
        "add(dtype=int, casting=unsafe)",
    ],
)
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
    onp.testing.assert_array_equal(grad(lambda x: np.sum(x**2) * 1.0)(xi), [2, 4, 6])
