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
    "divide.reduce initial": lambda m, x: m.divide.reduce(x, axis=1, initial=1.5),
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


def _numpy_folds(name, method):
    """NumPy's float `name`.`method` of three elements is the left fold it documents."""
    x = onp.array([1.25, 0.75, 1.5])
    ufunc = getattr(onp, name)
    left = [x[0], ufunc(x[0], x[1])]
    left.append(ufunc(left[1], x[2]))
    if method == "reduce":
        return ufunc.reduce(x) == left[2]
    return onp.array_equal(ufunc.accumulate(x), left)


@pytest.mark.parametrize("method", ["reduce", "accumulate"])
@pytest.mark.parametrize("name", ["power", "arctan2", "subtract", "logaddexp"])
def test_fold_is_numpys_or_an_error(name, method):
    # NumPy 2.4's power.reduce and arctan2.reduce of floats give op(x[0], x[-1]) for three
    # elements, and NumPy 1.26's power.accumulate differs from the fold, not the left fold NumPy
    # documents: gradcy refuses them on traced values (its fold would differ from NumPy's
    # value) and serves the others
    x = onp.array([1.2, 0.7, 1.9])
    f = lambda x: getattr(getattr(np, name), method)(x)
    if _numpy_folds(name, method):
        onp.testing.assert_allclose(
            gradcy.make_vjp(f)(x)[1], getattr(getattr(onp, name), method)(x)
        )
        check_grads(f, modes=["rev", "fwd"], order=2)(x)
    else:
        with pytest.raises(
            NotImplementedError,
            match=rf"^gradcy\.numpy\.{name}\.{method}: NumPy [0-9.]+'s {name}\.{method} of "
            r"floats does not compute the left fold it documents",
        ):
            gradcy.grad(lambda x: np.sum(f(x)))(x)
    onp.testing.assert_array_equal(f(x), getattr(getattr(onp, name), method)(x))  # plain


_BINARY = sorted(
    name
    for name in dir(onp)
    if isinstance(getattr(onp, name), onp.ufunc)
    and getattr(onp, name).__name__ == name  # (not an alias: atan2, pow, true_divide, mod)
    and getattr(onp, name).nin == 2
    and getattr(onp, name).nout == 1
    and getattr(onp, name).signature is None
    and "dd->d" in getattr(onp, name).types
)
_Y = onp.array([[1.3, 0.45, 2.1], [0.55, 1.7, 0.9]])  # (no ratio an integer: fmod, remainder)
_METHODS = {
    "reduce": lambda u, x: u.reduce(x, axis=1),
    "accumulate": lambda u, x: u.accumulate(x),
    "outer": lambda u, x: u.outer(x[0], x[1]),
}


@pytest.mark.parametrize("method", list(_METHODS))
@pytest.mark.parametrize("name", _BINARY)
def test_every_binary_ufunc_method_is_numpys(name, method):
    call = _METHODS[method]
    want = call(getattr(onp, name), _Y)
    f = lambda x: call(getattr(np, name), x)
    try:
        _, value = gradcy.make_vjp(f)(_Y)
    except NotImplementedError as e:  # (NumPy's own fold is not the documented one)
        assert method != "outer" and not _numpy_folds(name, method), e
        return
    onp.testing.assert_allclose(value, want, rtol=1e-14, atol=0)
    assert onp.shape(value) == want.shape
    if name not in ("floor_divide", "nextafter", "heaviside", "copysign"):  # (no slope to check)
        check_grads(f, modes=["rev", "fwd"], order=1)(_Y)


@pytest.mark.parametrize("name", ["subtract", "divide", "logaddexp", "hypot"])
def test_reduce_of_a_0d_or_empty_traced_array_keeps_its_gradient(name):
    # NumPy's reduce of a 0-d array is the array (after initial), of an empty one initial: the
    # traced result must be the traced value, not NumPy's plain one (a zero gradient)
    x = onp.array(1.7)
    for f in (
        lambda x: getattr(np, name).reduce(x),
        lambda x: getattr(np, name).reduce(x, initial=1.3),
        lambda x: np.sum(getattr(np, name).reduce(onp.zeros((0, 3)), initial=x)),
    ):
        onp.testing.assert_allclose(gradcy.make_vjp(f)(x)[1], f(x), rtol=1e-15)
        check_grads(f, modes=["rev", "fwd"], order=2)(x)
        assert gradcy.grad(f)(x) != 0.0
