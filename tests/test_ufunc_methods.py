"""NumPy's ufunc methods on gradcy.numpy's ufuncs (np.add.reduce, np.multiply.outer,
np.maximum.accumulate, ...): the values NumPy gives, on plain and traced arguments, and
derivatives checked against central differences (reverse and forward, second order)."""

import numpy as onp
import pytest

import gradcy
import gradcy.numpy as np
from gradcy.test_util import check_grads

X = onp.array([[1.0, 2.0, 3.0], [4.0, 5.0, 6.5]])

CASES = {
    "add.reduce": lambda m, x: m.add.reduce(x),
    "add.reduce axis=1": lambda m, x: m.add.reduce(x, axis=1),
    "add.reduce axis=None": lambda m, x: m.add.reduce(x, axis=None),
    "add.reduce initial where": lambda m, x: m.add.reduce(
        x, axis=1, initial=0.5, where=onp.array([True, False, True])
    ),
    "multiply.reduce keepdims": lambda m, x: m.multiply.reduce(x, keepdims=True),
    "multiply.reduce axis=(0, 1)": lambda m, x: m.multiply.reduce(x, axis=(0, 1)),
    "maximum.reduce": lambda m, x: m.maximum.reduce(x),
    "minimum.reduce axis=-1": lambda m, x: m.minimum.reduce(x, axis=-1),
    "subtract.reduce": lambda m, x: m.subtract.reduce(x, axis=1),
    "divide.reduce keepdims": lambda m, x: m.divide.reduce(x, axis=0, keepdims=True),
    "power.reduce initial": lambda m, x: m.power.reduce(x, axis=0, initial=1.5),
    "logaddexp.reduce": lambda m, x: m.logaddexp.reduce(x, axis=-1),
    "add.accumulate": lambda m, x: m.add.accumulate(x),
    "multiply.accumulate axis=1": lambda m, x: m.multiply.accumulate(x, axis=1),
    "maximum.accumulate": lambda m, x: m.maximum.accumulate(x[:, ::-1], axis=1),
    "minimum.accumulate": lambda m, x: m.minimum.accumulate(x[::-1]),
    "subtract.accumulate": lambda m, x: m.subtract.accumulate(x, axis=1),
    "divide.accumulate": lambda m, x: m.divide.accumulate(x),
    "multiply.outer": lambda m, x: m.multiply.outer(x[0], x),
    "add.outer": lambda m, x: m.add.outer(x, x[1]),
    "subtract.outer of a plain operand": lambda m, x: m.subtract.outer(onp.array([0.5, 1.5]), x),
    "hypot.outer": lambda m, x: m.hypot.outer(x[0], x[1]),
    "maximum.outer": lambda m, x: m.maximum.outer(x[0], onp.array([2.5, 0.5])),
}


@pytest.mark.parametrize("case", list(CASES))
def test_values_are_numpy_values(case):
    f = CASES[case]
    want = f(onp, X)
    plain = f(np, X)  # no traced argument: NumPy's own method
    assert type(plain) is type(want)
    onp.testing.assert_array_equal(plain, want)
    # traced: the value of the forward pass (make_vjp returns it)
    _, value = gradcy.make_vjp(lambda x: f(np, x))(X)
    assert onp.shape(value) == onp.shape(want) and onp.result_type(value) == want.dtype
    onp.testing.assert_allclose(value, want, rtol=1e-15, atol=0)


@pytest.mark.parametrize("case", list(CASES))
def test_derivatives_match_central_differences(case):
    f = CASES[case]
    check_grads(lambda x: f(np, x), modes=["rev", "fwd"], order=2)(X)
    g = gradcy.grad(lambda x: np.sum(np.sin(f(np, x))))(X)
    assert g.dtype == X.dtype and g.shape == X.shape


@pytest.mark.parametrize(
    "method, target",
    [
        (lambda x: np.add.reduce(x, axis=1), lambda x: np.sum(x, axis=1)),
        (lambda x: np.multiply.reduce(x), lambda x: np.prod(x, axis=0)),
        (lambda x: np.add.accumulate(x, axis=1), lambda x: np.cumsum(x, axis=1)),
        (lambda x: np.multiply.accumulate(x), lambda x: np.cumprod(x, axis=0)),
        (lambda x: np.multiply.outer(x[0], x[1]), lambda x: np.outer(x[0], x[1])),
        (lambda x: np.maximum.reduce(x, axis=1), lambda x: np.max(x, axis=1)),
    ],
)
def test_mapped_methods_have_the_gradient_of_their_function(method, target):
    w = onp.linspace(-1.0, 2.0, onp.size(method(X))).reshape(onp.shape(method(X)))
    loss = lambda f: lambda x: np.sum(np.tanh(f(x)) * w)
    onp.testing.assert_array_equal(gradcy.grad(loss(method))(X), gradcy.grad(loss(target))(X))


def test_maximum_accumulate_ties_as_maximum():
    # a running maximum over equal values: the gradient of the fold of np.maximum (ties split
    # as np.maximum's rule splits them), summing to 1 per output
    x = onp.array([1.0, 3.0, 3.0, 2.0])
    g = gradcy.grad(lambda x: np.sum(np.maximum.accumulate(x)))(x)
    want = gradcy.grad(
        lambda x: (
            x[0]
            + np.sum(np.maximum(x[0], x[1]))
            + np.maximum(np.maximum(x[0], x[1]), x[2])
            + np.maximum(np.maximum(np.maximum(x[0], x[1]), x[2]), x[3])
        )
    )(x)
    onp.testing.assert_array_equal(g, want)
    assert g.sum() == 4.0


@pytest.mark.parametrize(
    "call, error, match",
    [
        (
            lambda x: np.add.reduceat(x, [0, 1], axis=1),
            NotImplementedError,
            r"^gradcy\.numpy\.add\.reduceat: not differentiable in gradcy; reduce each segment",
        ),
        (
            lambda x: np.sin.at(x, [0]),
            NotImplementedError,
            r"^gradcy\.numpy\.sin\.at: not differentiable in gradcy \(ufunc\.at is served for",
        ),
        (
            lambda x: np.subtract.reduce(x, axis=None),
            NotImplementedError,
            r"^gradcy\.numpy\.subtract\.reduce: on traced values, axis=None is supported only",
        ),
        (
            lambda x: np.subtract.accumulate(x, out=onp.empty((2, 3))),
            NotImplementedError,
            r"^gradcy\.numpy\.subtract\.accumulate: out= is not supported on traced values",
        ),
        (lambda x: np.sin.reduce(x), ValueError, "only supported for binary functions"),
        (lambda x: np.exp.outer(x, x), ValueError, "only supported for binary functions"),
        (lambda x: np.subtract.reduce(x, axis=2), onp.exceptions.AxisError, "out of bounds"),
    ],
)
def test_unserved_methods_raise_naming_the_method(call, error, match):
    with pytest.raises(error, match=match):
        gradcy.grad(lambda x: np.sum(call(x)))(X)


def test_plain_reduceat_and_at_are_numpy():
    onp.testing.assert_array_equal(
        np.add.reduceat(X, [0, 2], axis=1), onp.add.reduceat(X, [0, 2], axis=1)
    )
    a, b = X.copy(), X.copy()
    np.logaddexp.at(a, ([0, 0], [1, 1]), 1.0)
    onp.logaddexp.at(b, ([0, 0], [1, 1]), 1.0)
    onp.testing.assert_array_equal(a, b)


def test_ufunc_attributes_are_numpys():
    for name in ("add", "sin", "maximum", "divmod", "logaddexp"):
        mine, theirs = getattr(np, name), getattr(onp, name)
        for attr in ("nin", "nout", "nargs", "identity", "ntypes", "types", "signature"):
            assert getattr(mine, attr) == getattr(theirs, attr), (name, attr)
