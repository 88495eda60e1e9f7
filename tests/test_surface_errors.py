"""Issue 10's operator-surface items: set operations select values (their gradients go to the
selected inputs), traced values never go silently into plain arrays (out=, put & co, item
assignment, concatenate(out=)), pow with a modulus, and grad of non-float outputs. Values are
checked against NumPy, gradients against central differences, errors by type and message;
the engine counters end at zero after every test (counters.py)."""

import inspect

import numpy as onp
import pytest

import gradcy
import gradcy.numpy as np
from gradcy import (
    TracerArrayConversionError,
    elementwise_grad,
    grad,
    jacobian,
    make_jvp,
    make_vjp,
    value_and_grad,
)
from vjp_harness import central_gradient, check

X = onp.array([0.3, -1.2, 0.31, 2.5, -1.25, 0.7])  # distinct values: no ties
Y = onp.array([0.75, 5.0, 0.35, -3.0])  # shares no value with X
WEIGHTS = onp.sin(onp.arange(1.0, 20.0)) ** 2


def _weighted(v):
    """A scalar that weighs each output position differently."""
    return np.sum(v * WEIGHTS[: v.shape[0]])


# =============================================================================
# 3. Set operations
# =============================================================================
SET_OPS = {
    "unique": lambda a: np.unique(a),
    "unique(return_index, return_counts)": lambda a: np.unique(a, True, False, True)[0],
    "unique(return_inverse)": lambda a: np.unique(a, return_inverse=True)[0],
    "unique_values": lambda a: np.sort(np.unique_values(a)),
    "unique_all": lambda a: np.unique_all(a).values,
    "unique_counts": lambda a: np.unique_counts(a).values,
    "unique_inverse": lambda a: np.unique_inverse(a).values,
    "union1d": lambda a: np.union1d(a, Y),
    "union1d(ar2)": lambda a: np.union1d(Y, a),
    "setdiff1d": lambda a: np.setdiff1d(a, Y[:2]),
    "setxor1d": lambda a: np.setxor1d(a, Y),
    "setxor1d(ar2)": lambda a: np.setxor1d(Y, a),
}


def _numpy_has(name):
    """Whether the installed NumPy has the function a SET_OPS case calls (unique_all and the
    other array-API names are NumPy 2's)."""
    return hasattr(onp, name.split("(")[0])


@pytest.mark.parametrize(
    "name",
    [
        n
        if _numpy_has(n)
        else pytest.param(n, marks=pytest.mark.skip(f"NumPy {onp.__version__} has no {n}"))
        for n in sorted(SET_OPS)
    ],
)
def test_set_operation_gradients_match_central_differences(name):
    check(SET_OPS[name], X)


@pytest.mark.parametrize(
    "name,np_call",
    [
        ("unique", lambda a: onp.unique(a)),
        ("unique(return_index, return_counts)", lambda a: onp.unique(a, True, False, True)[0]),
        ("union1d", lambda a: onp.union1d(a, Y)),
        ("union1d(ar2)", lambda a: onp.union1d(Y, a)),
        ("setdiff1d", lambda a: onp.setdiff1d(a, Y[:2])),
        ("setxor1d", lambda a: onp.setxor1d(a, Y)),
    ],
)
def test_set_operation_values_match_numpy(name, np_call):
    for x in (X, onp.array([2.0, 1.0, 2.0, -0.0, 0.0, 1.0])):
        _, y = make_vjp(SET_OPS[name])(x)
        onp.testing.assert_array_equal(y, np_call(x))


def test_unique_integer_outputs_are_numpys():
    x = onp.array([[0.5, 0.2], [0.5, 0.9], [0.2, 0.1]])

    def f(a):
        values, index, inverse, counts = np.unique(a, True, True, True)
        for got, want in zip((index, inverse, counts), onp.unique(x, True, True, True)[1:]):
            assert type(got) is onp.ndarray
            onp.testing.assert_array_equal(got, want)
        onp.testing.assert_array_equal(values._value, onp.unique(x))
        if _numpy_has("unique_all"):
            res = np.unique_all(a)
            assert type(res).__name__ == "UniqueAllResult"
            onp.testing.assert_array_equal(res.counts, onp.unique_all(x).counts)
        return np.sum(values * WEIGHTS[:4])

    g = grad(f)(x)
    # duplicates: the first occurrence (numpy's return_index) receives the cotangent
    assert onp.array_equal(g, [[WEIGHTS[2], WEIGHTS[1]], [0.0, WEIGHTS[3]], [0.0, WEIGHTS[0]]])


def test_unique_with_ties_sends_the_gradient_to_the_first_occurrence():
    x = onp.array([0.3, -1.2, 0.3, 2.5, -1.2, 0.7])
    g = grad(lambda a: _weighted(np.unique(a)))(x)
    # sorted unique values -1.2, 0.3, 0.7, 2.5 come from positions 1, 0, 5, 3
    expected = onp.zeros(6)
    expected[[1, 0, 5, 3]] = WEIGHTS[:4]
    assert onp.array_equal(g, expected)
    _, t = make_jvp(lambda a: np.unique(a))(x)(onp.arange(6.0))
    assert onp.array_equal(t, [1.0, 0.0, 5.0, 3.0])


def test_unique_along_an_axis():
    x = onp.array([[1.0, 2.0], [0.5, 3.0], [1.0, 2.0], [4.0, -1.0]])
    _, y = make_vjp(lambda a: np.unique(a, axis=0))(x)
    onp.testing.assert_array_equal(y, onp.unique(x, axis=0))
    g = grad(lambda a: np.sum(np.unique(a, axis=0) ** 2))(x)
    assert onp.array_equal(g, 2 * x * onp.array([[1.0], [1.0], [0.0], [1.0]]))
    check(lambda a: np.unique(a, axis=1), onp.array([[1.0, 0.2, 3.0], [0.4, 0.5, 0.6]]))


def test_intersect1d_sends_the_gradient_to_ar1():
    a1, a2 = onp.array([0.3, 2.0, -1.0, 0.7]), onp.array([0.7, 5.0, 0.3])
    f = lambda a, b: _weighted(np.intersect1d(a, b))
    g1, g2 = grad(f, (0, 1))(a1, a2)
    assert onp.array_equal(g1, [WEIGHTS[0], 0.0, 0.0, WEIGHTS[1]]) and not g2.any()
    # where the function is smooth (the shared values move together) the gradient is exact
    d1, d2 = onp.array([1.0, 0.0, 0.0, -2.0]), onp.array([-2.0, 0.0, 1.0])
    eps = 1e-6
    numeric = (f(a1 + eps * d1, a2 + eps * d2) - f(a1 - eps * d1, a2 - eps * d2)) / (2 * eps)
    assert onp.isclose(g1 @ d1 + g2 @ d2, numeric)
    vals, i1, i2 = np.intersect1d(a1, a2, return_indices=True)
    onp.testing.assert_array_equal(i1, onp.intersect1d(a1, a2, return_indices=True)[1])


def test_set_operation_float32_and_nan():
    x = X.astype(onp.float32)
    g = grad(lambda a: np.sum(np.union1d(a, Y.astype(onp.float32)) ** 2))(x)
    assert g.dtype == onp.float32 and onp.allclose(g, 2 * x)
    x = onp.array([onp.nan, 1.0, onp.nan, 2.0])
    _, y = make_vjp(lambda a: np.unique(a))(x)
    onp.testing.assert_array_equal(y, onp.unique(x))
    g = grad(lambda a: np.sum(np.nan_to_num(np.unique(a, equal_nan=False), nan=3.0) * 2.0))(x)
    assert onp.array_equal(g, [0.0, 2.0, 0.0, 2.0])


def test_isin_stays_a_constant():
    g = grad(lambda a: np.sum(a * np.isin(a, Y)) + np.sum(a))(onp.append(X, 0.75))
    assert onp.array_equal(g, [1, 1, 1, 1, 1, 1, 2])


# =============================================================================
# 4. and 10. Writes into a caller's plain array; concatenate(out=)
# =============================================================================
V = onp.array([0.4, -0.8, 1.3])
I3 = onp.eye(3)
_PLAIN_WRITES = {
    "dot": lambda v, d: onp.dot(v, I3, out=d),
    "dot(positional out)": lambda v, d: onp.dot(v, I3, d),
    "cumsum": lambda v, d: onp.cumsum(v, out=d),
    "clip": lambda v, d: onp.clip(v, -1.0, 1.0, out=d),
    "sum": lambda v, d: onp.sum(onp.stack([v, v]), axis=0, out=d),
    "mean": lambda v, d: onp.mean(onp.stack([v, v]), axis=0, out=d),
    "max": lambda v, d: onp.max(onp.stack([v, -v]), axis=0, out=d),
    "einsum": lambda v, d: onp.einsum("i,ij->j", v, I3, out=d),
    "take": lambda v, d: onp.take(v, [2, 0, 1], out=d),
    "multiply": lambda v, d: onp.multiply(v, 2.0, out=d),
    "np.cumsum": lambda v, d: np.cumsum(v, out=d),
    "np.add(positional out)": lambda v, d: np.add(v, 1.0, d),
    "copyto": lambda v, d: onp.copyto(d, v),
    "np.put": lambda v, d: np.put(d, [2, 0, 1], v),
    "np.putmask": lambda v, d: np.putmask(d, [True, False, True], v),
    "np.place": lambda v, d: np.place(d, [True, False, True], v),
    "np.put_along_axis": lambda v, d: np.put_along_axis(d, onp.array([1, 2, 0]), v, None),
    "concatenate": lambda v, d: onp.concatenate([v[:1], v[1:]], out=d),
    "stack": lambda v, d: onp.stack([v[0], v[1], v[2]], out=d),
}


def _reads_buffer(write, owned):
    def f(v):
        d = np.zeros(3) if owned else onp.zeros(3)
        write(v, d)
        return np.sum(d * onp.array([1.0, 2.0, 3.0]) * v)

    return f


@pytest.mark.parametrize("name", sorted(_PLAIN_WRITES))
def test_traced_values_into_a_plain_array_raise(name):
    with pytest.raises(TracerArrayConversionError, match="gradcy.numpy") as e:
        grad(_reads_buffer(_PLAIN_WRITES[name], owned=False))(V)
    assert "with gradcy.numpy (zeros, empty, array, ...)" in str(e.value)


def test_fill_diagonal_into_a_plain_array_raises():
    with pytest.raises(TracerArrayConversionError, match="fill_diagonal: argument 0 is a plain"):
        grad(lambda v: (np.fill_diagonal(onp.zeros((3, 3)), v), np.sum(v))[1])(V)


@pytest.mark.parametrize("name", sorted(_PLAIN_WRITES))
def test_the_same_writes_into_a_traced_buffer_are_traced(name):
    f = _reads_buffer(_PLAIN_WRITES[name], owned=True)
    assert onp.allclose(grad(f)(V), central_gradient(f, V))
    v = V.copy()
    _, t = make_jvp(f)(v)(onp.array([1.0, -1.0, 0.5]))
    assert onp.isclose(t, central_gradient(f, v) @ [1.0, -1.0, 0.5])
    assert onp.array_equal(v, V)


def test_out_returns_the_buffer_and_checks_it():
    def f(v):
        d = np.zeros(3)
        r = onp.cumsum(v, out=d)
        assert r is d
        return np.sum(d**2)

    assert onp.allclose(grad(f)(V), central_gradient(f, V))

    def wrong(v):
        with pytest.raises(ValueError, match="cumsum: out= has shape"):
            onp.cumsum(v, out=np.zeros(4))
        with pytest.raises(TypeError, match="cannot cast the result from float64 to out="):
            onp.cumsum(v, out=np.zeros(3, int))
        return np.sum(v)

    grad(wrong)(V)


def test_ufunc_out_with_where_keeps_the_masked_values():
    mask = onp.array([True, False, True])

    def f(v):
        d = np.ones(3) * v[1]
        onp.multiply(v, v, out=d, where=mask)
        return np.sum(d * onp.array([1.0, 2.0, 3.0]))

    assert onp.allclose(grad(f)(V), central_gradient(f, V))


def test_round_into_a_plain_array_writes_a_constant():
    # round's result is piecewise constant: numbers written into a plain array lose nothing
    def f(v):
        d = onp.zeros(3)
        onp.round(v * 3.0, out=d)
        return np.sum(d * v)

    g = grad(f)(V)
    assert onp.allclose(g, central_gradient(f, V)) and onp.array_equal(g, onp.round(V * 3.0))


def test_plain_out_without_traced_values_is_numpy():
    def f(v):
        d = onp.zeros(3)
        onp.cumsum(onp.array([1.0, 2.0, 3.0]), out=d)
        np.put(d, [0], 7.0)
        onp.concatenate([onp.ones(1), onp.zeros(2)], out=d)
        return np.sum(v * d)

    assert onp.array_equal(grad(f)(V), [1.0, 0.0, 0.0])


def test_concatenate_out_and_dtype_never_recurse():
    with pytest.raises(TracerArrayConversionError, match="concatenate: out= is a plain"):
        grad(lambda v: np.sum(onp.concatenate([v, v], out=onp.zeros(6))))(V)

    def f(v):
        d = np.zeros(6)
        onp.concatenate([v, 2 * v], out=d)
        e = onp.concatenate([v, v], dtype=onp.float32)
        assert e.dtype == onp.float32
        return np.sum(d * d) + np.sum(e)

    assert onp.allclose(grad(f)(V), central_gradient(f, V, eps=1e-3), rtol=1e-3)  # e is float32

    def wrong(v):
        with pytest.raises(TypeError, match="concatenate: cannot cast from float64 to int64"):
            np.concatenate([v, v], dtype=int)
        return np.sum(v)

    grad(wrong)(V)


def test_writers_keep_numpys_errors_and_semantics():
    def f(v):
        d = np.zeros(3)
        with pytest.raises(IndexError):
            np.put(d, [5], v[:1])
        np.put(d, [0, 1, 2], v[:2])  # values repeat: d = v0, v1, v0
        e = np.zeros((3, 3))
        np.fill_diagonal(e, v[:2], wrap=True)
        if type(v) is not onp.ndarray:  # traced: numpy's values
            onp.testing.assert_array_equal(d._value, [V[0], V[1], V[0]])
            ref = onp.zeros((3, 3))
            onp.fill_diagonal(ref, V[:2], wrap=True)
            onp.testing.assert_array_equal(e._value, ref)
        return np.sum(d * d) + np.sum(e * onp.arange(9.0).reshape(3, 3))

    assert onp.allclose(grad(f)(V), central_gradient(f, V))


# =============================================================================
# 5. pow with a modulus; non-float outputs
# =============================================================================
def test_pow_with_a_modulus_raises_like_numpy():
    with pytest.raises(TypeError, match="unsupported operand type"):
        pow(onp.array(2.0), 2, 3)
    with pytest.raises(TypeError, match=r"unsupported operand type\(s\) for \*\* or pow\(\)"):
        grad(lambda x: pow(x, 2, 3))(2.0)
    assert grad(lambda x: pow(x, 2))(3.0) == 6.0


NON_FLOAT = {
    "str": lambda x: "a",
    "bool": lambda x: True,
    "numpy bool": lambda x: x[0] > 0,
    "int": lambda x: 3,
    "numpy int": lambda x: np.argmax(x),
    "traced int": lambda x: (x * 3).astype(int)[0],
    "None": lambda x: None,
    "object": lambda x: object(),
}


@pytest.mark.parametrize("name", sorted(NON_FLOAT))
@pytest.mark.parametrize(
    "op",
    [grad, value_and_grad, elementwise_grad, jacobian],
    ids=["grad", "value_and_grad", "elementwise_grad", "jacobian"],
)
def test_non_float_outputs_raise(name, op):
    for x in (V, (V, V)):  # a plain float array takes grad's fast path; a tuple does not
        fun = NON_FLOAT[name]
        f = fun if type(x) is onp.ndarray else (lambda t, fun=fun: fun(t[0]))
        with pytest.raises(TypeError, match="returned"):
            op(f)(x)


def test_float_outputs_still_work():
    assert grad(lambda x: 2.0)(V).tolist() == [0.0, 0.0, 0.0]
    assert grad(lambda x: onp.float32(2.0))(V).tolist() == [0.0, 0.0, 0.0]
    assert onp.array_equal(grad(lambda x: 1.0 * np.argmax(x) + x[0])(V), [1.0, 0.0, 0.0])
    assert onp.array_equal(elementwise_grad(lambda x: x * 2.0)(V), [2.0, 2.0, 2.0])


# =============================================================================
# 9. One traced element into a plain array; the exported error
# =============================================================================
@pytest.mark.parametrize("dtype", [float, onp.float32, complex])
def test_traced_element_into_a_plain_array(dtype):
    def f(x):
        d = onp.zeros(2, dtype)
        d[0] = x[0]
        return np.sum(np.real(d))

    with pytest.raises(TracerArrayConversionError, match="create the buffer that receives"):
        grad(f)(V)


@pytest.mark.parametrize(
    "write",
    [
        lambda d, x: d.__setitem__(slice(None), x[:2]),
        lambda d, x: d.fill(x[0]),
        lambda d, x: d.__setitem__(0, x[0] * 2.0),
    ],
)
def test_other_conversions_raise_the_same_error(write):
    with pytest.raises(TracerArrayConversionError):
        grad(lambda x: (write(onp.zeros(2), x), np.sum(x))[1])(V)


def test_the_element_into_a_traced_buffer_works():
    def f(x):
        d = np.zeros(2)
        d[0] = x[0]
        d[1] = x[2] * x[0]
        return np.sum(d * d)

    assert onp.allclose(grad(f)(V), central_gradient(f, V))

    def g(x):
        d = np.zeros(3)
        d.fill(x[1])
        return np.sum(d * onp.array([1.0, 2.0, 3.0]))

    assert onp.allclose(grad(g)(V), [0.0, 6.0, 0.0])


def test_the_error_is_exported():
    assert gradcy.TracerArrayConversionError is TracerArrayConversionError
    assert issubclass(TracerArrayConversionError, ValueError)
    assert "TracerArrayConversionError" in gradcy.__all__
    assert gradcy.MissingJVPError is gradcy._core.MissingJVPError


def test_traced_values_still_iterate_and_unpack():
    def f(x):
        a, b, c = x
        s = sum(x) + sum(e for e in x) + len(x)
        return a * b + c + s + np.sum(np.array([e * 2.0 for e in x]))

    assert onp.allclose(grad(f)(V), central_gradient(f, V))


# =============================================================================
# NumPy-version differences: buf[int array] = a view of buf; out= of NumPy 1.x C functions
# =============================================================================
def _fancy_write(x):
    x[[2, 3, 4]] = x[:-2]  # the value overlaps the elements written
    return _weighted(np.tanh(x))


def test_a_fancy_write_of_an_overlapping_view_is_numpys_or_raises():
    """NumPy 2 reads the value before it writes; NumPy 1.x writes element by element, reading
    elements it already wrote: gradcy follows the first, and raises under the second."""
    from gradcy.numpy import inplace

    x0 = onp.array([-0.49, -0.15, 0.49, -0.63, -0.64])
    written = x0.copy()
    written[[2, 3, 4]] = written[:-2]  # what the installed NumPy does
    copies = onp.array_equal(written, [-0.49, -0.15, -0.49, -0.15, 0.49])
    assert inplace._FANCY_WRITES_COPY == copies
    if copies:
        _, value = make_vjp(_fancy_write)(x0)
        assert value == _fancy_write(x0.copy())
        check(_fancy_write, x0)
        return
    for run in (lambda: grad(_fancy_write)(x0), lambda: make_jvp(_fancy_write)(x0)(x0)):
        with pytest.raises(
            NotImplementedError,
            match=r"gradcy.numpy.setitem: .*write order.*"
            r"buf\[idx\] = value.copy\(\)",
        ):
            run()


def test_a_fancy_write_that_reads_no_written_element_works_under_every_numpy():
    def f(x):
        x[[0, 1]] = x[3:5]  # same buffer, but no element both read and written
        x[[4, 2]] = x[:2].copy()  # a copy: never order-dependent
        return _weighted(np.tanh(x))

    x0 = onp.array([-0.49, -0.15, 0.49, -0.63, -0.64])
    _, value = make_vjp(f)(x0)
    assert value == f(x0.copy())
    check(f, x0)


def test_out_positions_are_numpys_without_an_inspectable_signature():
    """NumPy 1.x's dot, concatenate and busday_count are C functions without a signature to
    inspect; their out= position comes from the signature their docstring opens with."""
    from gradcy.numpy import numpy_wrapper as nw

    assert nw.dot.out_arg == 2
    names = [p.name for p in nw.parameters(onp.concatenate)]
    assert names[1:3] == ["axis", "out"]
    assert [p.default for p in nw.parameters(onp.concatenate)[1:3]] == [0, None]

    class NoSignature:  # inspect.signature raises on it
        __name__ = "no_signature"
        __doc__ = "no_signature(a, (b1, b2, ...), /, out=None, *, axis=-1, **kw)\n\nText."
        __signature__ = "unreadable"

        def __call__(self, *args, **kwargs):
            pass

    P = inspect.Parameter
    assert [(p.name, p.kind, p.default) for p in nw.parameters(NoSignature())] == [
        ("a", P.POSITIONAL_ONLY, P.empty),
        ("_arg1", P.POSITIONAL_ONLY, P.empty),
        ("out", P.POSITIONAL_OR_KEYWORD, None),
        ("axis", P.KEYWORD_ONLY, -1),
        ("kw", P.VAR_KEYWORD, P.empty),
    ]
    NoSignature.__doc__ = "Text only."
    assert nw.parameters(NoSignature()) is None
