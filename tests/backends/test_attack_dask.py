"""Attack tests of gradcy on Dask arrays, on the two-process cluster of conftest.py.

Every value is checked against the same program run through gradcy on the NumPy arrays
(``X.compute()``), a few against central differences of plain NumPy; every gradient has its
input's type, dtype and shape (a Dask input: a lazy Dask gradient with the input's chunks; a
NumPy input: a NumPy gradient). The cases are the ones gradcy's Dask fast paths
(gradcy/_dask_ops.py) select on or skip: uneven chunks, chunks of one and of zero rows, chunks
along both axes, a NumPy or a Dask parameter (one chunk or several), float32 data, the Dask
operand on either side of a product, kinks and non-finite data, one persisted X read many
times, repeated and concurrent calls, second order, const_graph and jit, chunks of unknown
length.
"""

import threading

import numpy as onp
import pytest
from counters import assert_counters_zero

import gradcy
import gradcy.numpy as np
from gradcy import (
    elementwise_grad,
    grad,
    hessian,
    hessian_vector_product,
    jacobian,
    make_jvp,
    value_and_grad,
)
from gradcy.misc import const_graph

da = pytest.importorskip("dask.array", reason="dask is not installed (pip install -e '.[dask]')")

RTOL = 1e-12


@pytest.fixture(autouse=True)
def _on_the_cluster(dask_client):
    """Every computation here runs on the session's LocalCluster (two worker processes); every
    test ends with the engine's counters at zero (no tape, node or buffer left alive, also
    after the refusals)."""
    yield dask_client
    assert_counters_zero()


def _rng(seed=0):
    return onp.random.default_rng(seed)


def _lazy(x):
    return isinstance(x, da.Array)


def _value(x):
    return x.compute() if _lazy(x) else x


def _assert_like(g, x):
    """g has x's type, shape and dtype (a Dask x: a lazy Dask g with x's chunks)."""
    assert type(g) is type(x), (type(g), type(x))
    assert onp.shape(g) == onp.shape(x), (onp.shape(g), onp.shape(x))
    assert g.dtype == x.dtype, (g.dtype, x.dtype)
    if _lazy(x):
        assert g.chunks == x.chunks, (g.chunks, x.chunks)


def _assert_grad(got, x, want, rtol=RTOL):
    _assert_grads([got], [x], [want], rtol)


def _assert_grads(got, xs, want, rtol=RTOL):
    """Each gradient like its input and (all lazy ones computed in one dask.compute) equal to
    the NumPy program's."""
    import dask

    for g, x in zip(got, xs):
        _assert_like(g, x)
    values = dask.compute(*got)
    for v, r in zip(values, want):
        onp.testing.assert_allclose(v, r, rtol=rtol, atol=1e-13)


def _central(f, x, eps=1e-6):
    """Central differences of the plain-NumPy scalar function f at the float64 array x."""
    g = onp.zeros_like(x)
    for i in onp.ndindex(x.shape):
        d = onp.zeros_like(x)
        d[i] = eps
        g[i] = (f(x + d) - f(x - d)) / (2 * eps)
    return g


# ---- a tall problem: X @ w, X.T @ r, dot(y, z), sums ----------------------------------------
def _tall(w, X, y):
    z = X @ w
    r = np.tanh(z) - y
    return (
        np.sum(np.logaddexp(0.0, z) - y * z)
        + np.dot(y, z) * 0.5
        + np.sum((X.T @ r) * w)
        + np.sum(np.sum(X * X, axis=0) * w)
        + np.sum(np.mean(np.sin(X), axis=1, keepdims=True) * y[:, None])
    )


def _tall_numpy(w, X, y):
    """_tall in plain NumPy (for central differences)."""
    z = X @ w
    r = onp.tanh(z) - y
    return (
        onp.sum(onp.logaddexp(0.0, z) - y * z)
        + onp.dot(y, z) * 0.5
        + onp.sum((X.T @ r) * w)
        + onp.sum(onp.sum(X * X, axis=0) * w)
        + onp.sum(onp.mean(onp.sin(X), axis=1, keepdims=True) * y[:, None])
    )


_ROW_CHUNKS = {
    "uneven": ((5, 6), (4,)),
    "one-row chunks": ((1, 1, 9), (4,)),
    "zero-row chunks": ((0, 5, 0, 6), (4,)),
    "both axes": ((3, 3, 5), (1, 3)),
    "one chunk": ((11,), (4,)),
}
_W_KINDS = ["numpy", "dask one chunk", "dask chunked"]


def _tall_data(rows, seed=0):
    rng = _rng(seed)
    X = rng.standard_normal((11, 4))
    y = (rng.random(11) > 0.5).astype(float)
    w = rng.standard_normal(4) * 0.5
    Xd = da.from_array(X, chunks=rows)
    yd = da.from_array(y, chunks=(rows[0],))
    return w, X, y, Xd, yd


def _w_as(w, kind):
    if kind == "numpy":
        return w
    return da.from_array(w, chunks=-1 if kind == "dask one chunk" else ((1, 3),))


@pytest.mark.parametrize("w_kind", ["numpy", "dask chunked"])  # (one chunk: below)
@pytest.mark.parametrize("rows", list(_ROW_CHUNKS))
def test_tall_program_equals_numpys(rows, w_kind):
    w, X, y, Xd, yd = _tall_data(_ROW_CHUNKS[rows])
    wd = _w_as(w, w_kind)
    _assert_grads(grad(_tall, (0, 1, 2))(wd, Xd, yd), (wd, Xd, yd), grad(_tall, (0, 1, 2))(w, X, y))


def test_tall_program_equals_central_differences():
    w, X, y, Xd, yd = _tall_data(_ROW_CHUNKS["both axes"])
    g = grad(_tall)(w, Xd, yd)
    onp.testing.assert_allclose(g, _central(lambda w: _tall_numpy(w, X, y), w), rtol=1e-7)
    gX = grad(_tall, 1)(w, Xd, yd).compute()
    onp.testing.assert_allclose(gX, _central(lambda X: _tall_numpy(w, X, y), X), rtol=1e-6)
    # second order: the Hessian-vector product on Dask data against central differences of
    # the gradient along v
    v, eps = onp.array([1.0, -0.5, 0.25, 2.0]), 1e-5
    g = grad(_tall)
    fd = (g(w + eps * v, X, y) - g(w - eps * v, X, y)) / (2 * eps)
    onp.testing.assert_allclose(hessian_vector_product(_tall)(w, Xd, yd, v), fd, rtol=1e-7)


# ---- products of every shape, the Dask operand on either side --------------------------------
def _products():
    rng = _rng(1)
    X, A = rng.standard_normal((11, 4)), rng.standard_normal((4, 3))
    v, u = rng.standard_normal(11), rng.standard_normal(11)
    return {
        # name: (function, arrays, chunks of each (None: NumPy))
        "dot 1-d 1-d, both Dask": (lambda a, b: np.sin(np.dot(a, b)), (v, u), ((5, 6), (5, 6))),
        "dot 1-d 1-d, other chunks": (lambda a, b: np.sin(np.dot(a, b)), (v, u), (3, (5, 6))),
        "dot 1-d 1-d, Dask left": (lambda a, b: np.sin(np.dot(a, b)), (v, u), (3, None)),
        "dot 1-d 1-d, Dask right": (lambda a, b: np.sin(np.dot(a, b)), (v, u), (None, 3)),
        "matmul 1-d 1-d": (lambda a, b: np.sin(a @ b), (v, u), ((0, 11), (0, 11))),
        "dot 2-d 2-d, Dask left": (
            lambda a, b: np.sum(np.sin(np.dot(a, b))),
            (X, A),
            ((3, 4), None),
        ),
        "dot 2-d 2-d, Dask right": (
            lambda a, b: np.sum(np.sin(np.dot(a, b))),
            (X, A),
            (None, (4, 3)),
        ),
        "dot 2-d 2-d, both, chunked": (
            lambda a, b: np.sum(np.sin(np.dot(a, b))),
            (X, A),
            ((3, 2), (2, (1, 2))),
        ),
        "matmul 2-d 2-d, Dask one-chunk right": (
            lambda a, b: np.sum(np.sin(a @ b)),
            (X, A),
            ((3, 4), (4, 3)),
        ),
        "X.T @ v": (lambda a, b: np.sum(np.sin(a.T @ b)), (X, v), ((3, 4), 3)),
        "X.T @ v, other chunks": (lambda a, b: np.sum(np.sin(a.T @ b)), (X, v), ((3, 2), (5, 6))),
        "X.T @ v, NumPy v": (lambda a, b: np.sum(np.sin(a.T @ b)), (X, v), ((3, 4), None)),
        "X.T @ v, NumPy X": (lambda a, b: np.sum(np.sin(a.T @ b)), (X, v), (None, 3)),
        "dot(v, X)": (
            lambda a, b: np.sum(np.sin(np.dot(b, a))),
            (X, v),
            (((5, 6), (1, 3)), (5, 6)),
        ),
        "v @ X": (lambda a, b: np.sum(np.sin(b @ a)), (X, v), ((3, 4), 3)),
        "w @ X.T": (lambda a, b: np.sum(np.sin(b @ a.T)), (X, A[:, 0]), ((3, 2), 2)),
        "tensordot": (lambda a, b: np.sum(np.sin(np.tensordot(a, b, 1))), (X, A), ((3, 4), None)),
        "einsum": (
            lambda a, b: np.sum(np.sin(np.einsum("ij,j->i", a, b))),
            (X, A[:, 0]),
            ((3, 4), None),
        ),
    }


@pytest.mark.parametrize("name", list(_products()))
def test_products_equal_numpys(name):
    f, arrays, chunks = _products()[name]
    args = [a if c is None else da.from_array(a, chunks=c) for a, c in zip(arrays, chunks)]
    _assert_grads(grad(f, (0, 1))(*args), args, grad(f, (0, 1))(*arrays))


# ---- dtypes ----------------------------------------------------------------------------------
@pytest.mark.parametrize("w_kind", _W_KINDS)
def test_float32_data_keeps_float32(w_kind):
    w, X, y, _, _ = _tall_data(_ROW_CHUNKS["both axes"])
    X32, y32, w32 = X.astype(onp.float32), y.astype(onp.float32), w.astype(onp.float32)
    Xd = da.from_array(X32, chunks=_ROW_CHUNKS["both axes"])
    yd = da.from_array(y32, chunks=(_ROW_CHUNKS["both axes"][0],))
    wd = _w_as(w32, w_kind)
    want = grad(_tall, (0, 1, 2))(w32, X32, y32)
    _assert_grads(grad(_tall, (0, 1, 2))(wd, Xd, yd), (wd, Xd, yd), want, rtol=1e-5)
    if w_kind == "numpy":  # a float64 parameter with float32 data: each its input's dtype
        want = grad(_tall, (0, 1))(w, X32, y32)
        _assert_grads(grad(_tall, (0, 1))(w, Xd, yd), (w, Xd), want, rtol=1e-5)


def test_integer_data_with_a_float_parameter():
    rng = _rng(2)
    Xi = rng.integers(-3, 4, (11, 4))
    w = rng.standard_normal(4)
    f = lambda w, X: np.sum(np.tanh(X @ w)) + np.sum(np.sin(X * w))
    for wd in (w, da.from_array(w, chunks=2)):
        _assert_grad(grad(f)(wd, da.from_array(Xi, chunks=(3, 4))), wd, grad(f)(w, Xi))


@pytest.mark.parametrize("scalar", [onp.float64(0.7), onp.float32(0.7), 0.7])
def test_a_scalar_parameter_keeps_its_type(scalar):
    # (numpy.float64 is a subclass of float: its gradient came back as a Python float)
    X = _rng(3).standard_normal((11, 4))
    f = lambda a, X: np.sum(np.sin(X * a))
    got = grad(f)(scalar, da.from_array(X, chunks=(3, 2)))
    want = grad(f)(scalar, X)
    assert type(got) is type(want) is type(scalar)
    onp.testing.assert_allclose(got, want, rtol=1e-6 if type(scalar) is onp.float32 else RTOL)


def test_reductions_compute_to_numpys_scalar():
    # gradcy's sum and dot of Dask arrays computed to a 0-d ndarray where Dask's own (and
    # NumPy's) give a NumPy scalar; value_and_grad's value then differed from NumPy's by type
    w, X, y, Xd, yd = _tall_data(_ROW_CHUNKS["uneven"])
    for ours, dasks in [
        (np.sum(Xd), da.sum(Xd)),
        (np.dot(yd, yd), da.dot(yd, yd)),
        (np.sum(Xd.astype(onp.float32)), da.sum(Xd.astype(onp.float32))),
    ]:
        a, b = ours.compute(), dasks.compute()
        assert type(a) is type(b), (type(a), type(b))
        onp.testing.assert_allclose(a, b, rtol=1e-14)
    value, g = value_and_grad(_tall)(w, Xd, yd)
    want_value, want_g = value_and_grad(_tall)(w, X, y)
    assert type(value) is type(want_value)
    onp.testing.assert_allclose(value, want_value, rtol=RTOL)
    _assert_grad(g, w, want_g)


# ---- broadcasting and new axes ----------------------------------------------------------------
def _broadcasts():
    return {
        "X * w[None, :]": lambda w, X: np.sum(np.sin(X * w[None, :])),
        "X.T * w[:, None]": lambda w, X: np.sum(np.sin(X.T * w[:, None])),
        "X * w[None]": lambda w, X: np.sum(np.sin(X * w[None])),
        "X * reshape(w)": lambda w, X: np.sum(np.sin(X * np.reshape(w, (1, 4)))),
        "X * expand_dims(w)": lambda w, X: np.sum(np.sin(X * np.expand_dims(w, 0))),
        "X[:, None, :]": lambda w, X: np.sum(np.sin(X[:, None, :] * w)),
        "X[None]": lambda w, X: np.sum(np.sin(X[None] * w)),
        "X[..., None]": lambda w, X: np.sum(np.sin(X[..., None] * w[:, None])),
        "X[1:5, None, 2]": lambda w, X: np.sum(np.sin(X[1:5, None, 2] * w[0])),
        "X[None, 3, ..., None]": lambda w, X: np.sum(np.sin(X[None, 3, ..., None] * w[:, None])),
    }


@pytest.mark.parametrize("name", list(_broadcasts()))
def test_broadcasts_and_new_axes(name):
    # a read with None (numpy.newaxis) of a Dask value, or of a NumPy one whose cotangent is
    # Dask, raised "ValueError: could not broadcast input array from shape(1, 4) into
    # shape ()" (Dask's item assignment takes no None)
    f = _broadcasts()[name]
    w, X, _, _, _ = _tall_data(_ROW_CHUNKS["both axes"])
    Xd = da.from_array(X, chunks=_ROW_CHUNKS["both axes"])
    wd = _w_as(w, "dask chunked")
    want = grad(f, (0, 1))(w, X)
    _assert_grads(grad(f, (0, 1))(w, Xd) + grad(f, (0, 1))(wd, Xd), (w, Xd, wd, Xd), want + want)


def test_a_zero_d_parameter_broadcast():
    X = _rng(4).standard_normal((11, 4))
    Xd = da.from_array(X, chunks=(3, 2))
    f = lambda a, X: np.sum(np.sin(X * a)) + np.sum(np.cos(X * a[None]))
    a = onp.array(0.7)
    want = grad(f)(a, X)
    for ad in (a, da.from_array(a)):
        _assert_grad(grad(f)(ad, Xd), ad, want)


# ---- kinks and non-finite data ------------------------------------------------------------
def _kinks(X):
    return (
        np.sum(np.abs(X))
        + np.sum(np.maximum(X, 0.0) * 2.0)
        + np.sum(np.minimum(X, X * 0.5))
        + np.sum(np.where(X > 0, X**2, -X))
        + np.sum(np.clip(X, -1.0, 1.0))
        + np.sum(np.sqrt(X**2 + 1.0))
    )


def test_kinks_equal_numpys():
    K = onp.array([[0.0, 1.0, -1.0, 2.0], [0.0, 0.0, 3.0, -3.0]] * 5 + [[0.0, 1.0, 1.0, -1.0]])
    Kd = da.from_array(K, chunks=((3, 3, 5), (1, 3)))
    _assert_grad(grad(_kinks)(Kd), Kd, grad(_kinks)(K))


def test_non_finite_data_equals_numpys():
    w, X, _, _, _ = _tall_data(_ROW_CHUNKS["both axes"])
    X[2, 1], X[5, 3], X[7, 0] = onp.nan, onp.inf, -onp.inf

    def f(w, X):
        z = X @ w
        return (
            np.sum(np.tanh(z))
            + np.sum(np.where(np.isfinite(X), X, 0.0) ** 2 * w)
            + np.sum(np.maximum(X, 0.0) * w)
        )

    Xd = da.from_array(X, chunks=_ROW_CHUNKS["both axes"])
    with onp.errstate(invalid="ignore"):
        gw, gX = grad(f, (0, 1))(w, Xd)
        rw, rX = grad(f, (0, 1))(w, X)
        gX = gX.compute()
    assert gw.dtype == w.dtype and type(gw) is onp.ndarray
    onp.testing.assert_array_equal(onp.isnan(gw), onp.isnan(rw))
    onp.testing.assert_allclose(gw, rw, rtol=RTOL, equal_nan=True)
    onp.testing.assert_allclose(gX, rX, rtol=RTOL, equal_nan=True)


# ---- one persisted X, read many times, in repeated and concurrent calls ----------------------
def _reads_x_often(w, X, y):
    z = X @ w
    a = np.sum(np.logaddexp(0.0, z) - y * z)
    b = np.sum(X * X * w[0]) + np.sum(np.maximum(X, 0.0) * np.sin(X))
    c = np.dot(X.T @ (y - np.tanh(z)), w)
    return a + b + c + np.sum(X[:, 1] * w[1]) + np.sum(X + X)


def _persisted():
    w, X, y, _, _ = _tall_data(((4, 0, 1, 6), (4,)), seed=5)
    Xd = da.from_array(X.copy(), chunks=((4, 0, 1, 6), (4,))).persist()
    yd = da.from_array(y.copy(), chunks=((4, 0, 1, 6),)).persist()
    return w, X, y, Xd, yd


def test_repeated_calls_are_identical_and_leave_the_data():
    w, X, y, Xd, yd = _persisted()
    import dask

    first = grad(_reads_x_often, (0, 1))(w, Xd, yd)
    want = grad(_reads_x_often, (0, 1))(w, X, y)
    _assert_grads(first, (w, Xd), want)
    first = (first[0], first[1].compute())
    for _ in range(2):
        gw, gX = grad(_reads_x_often, (0, 1))(w, Xd, yd)
        onp.testing.assert_array_equal(gw, first[0])
        onp.testing.assert_array_equal(gX.compute(), first[1])
    wd = da.from_array(w, chunks=((1, 3),))
    _assert_grad(grad(_reads_x_often)(wd, Xd, yd), wd, want[0])
    Xc, yc = dask.compute(Xd, yd)
    onp.testing.assert_array_equal(Xc, X)
    onp.testing.assert_array_equal(yc, y)


def test_concurrent_calls_on_one_dask_array():
    w, X, y, Xd, yd = _persisted()
    serial = grad(_reads_x_often)(w, Xd, yd)
    wd = da.from_array(w, chunks=2)
    results, errors = [None] * 6, []

    def work(i):
        try:
            if i % 2:
                results[i] = grad(_reads_x_often)(wd, Xd, yd).compute()
            else:
                results[i] = grad(_reads_x_often)(w, Xd, yd)
        except BaseException as e:  # reported below
            errors.append(e)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(len(results))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    for i, r in enumerate(results):
        if i % 2:
            onp.testing.assert_allclose(r, serial, rtol=RTOL)
        else:
            onp.testing.assert_array_equal(r, serial)
    onp.testing.assert_array_equal(Xd.compute(), X)


# ---- second order and the other operators ------------------------------------------------
def _loss(w, X, y):
    z = np.dot(X, w)
    return np.mean(np.maximum(z, 0.0) ** 2 * y) + np.dot(y, np.tanh(z)) + np.sum(np.abs(X * w))


@pytest.mark.parametrize("w_kind", _W_KINDS)
def test_second_order_equals_numpys(w_kind):
    w, X, y, Xd, yd = _tall_data(_ROW_CHUNKS["both axes"], seed=6)
    v = onp.cos(onp.arange(4.0))
    wd, vd = _w_as(w, w_kind), _w_as(v, w_kind)
    H = hessian(_loss)(w, X, y)
    _assert_grad(hessian_vector_product(_loss)(wd, Xd, yd, vd), wd, H @ v)
    _assert_grad(hessian_vector_product(_loss)(wd, Xd, yd, v), wd, H @ v)
    got = hessian(_loss)(wd, Xd, yd)
    assert type(got) is type(wd) and got.shape == H.shape and got.dtype == H.dtype
    onp.testing.assert_allclose(_value(got), H, rtol=1e-10)
    value, g = value_and_grad(_loss)(wd, Xd, yd)
    want_value, want_g = value_and_grad(_loss)(w, X, y)
    onp.testing.assert_allclose(_value(value), want_value, rtol=RTOL)
    _assert_grad(g, wd, want_g)
    # the gradient of a function of a gradient
    gg = grad(lambda w, X: np.sum(grad(_loss)(w, X, y) ** 2))
    _assert_grad(gg(wd, Xd), wd, gg(w, X), rtol=1e-10)


def test_jacobian_elementwise_grad_and_jvp_equal_numpys():
    w, X, _, Xd, _ = _tall_data(_ROW_CHUNKS["both axes"], seed=7)
    f = lambda w, X: np.tanh(X @ w) * np.sum(X, axis=1)
    J = jacobian(f)(w, Xd)
    assert type(J) is onp.ndarray
    onp.testing.assert_allclose(J, jacobian(f)(w, X), rtol=RTOL)
    _assert_grad(elementwise_grad(f)(w, Xd), w, elementwise_grad(f)(w, X))
    e = lambda X: np.sin(X) * np.cos(X) + X**2
    _assert_grad(elementwise_grad(e)(Xd), Xd, elementwise_grad(e)(X))
    v = onp.linspace(-1.0, 1.0, 4)
    value, tangent = make_jvp(lambda w: f(w, Xd))(w)(v)
    want_value, want_tangent = make_jvp(lambda w: f(w, X))(w)(v)
    onp.testing.assert_allclose(_value(value), want_value, rtol=RTOL)
    onp.testing.assert_allclose(_value(tangent), want_tangent, rtol=RTOL)


# ---- forward passes Dask computes -------------------------------------------------------
def _sorted_loss(w, X):
    return np.sum(np.sort(X @ w) * np.arange(11.0))


@pytest.mark.filterwarnings("ignore:The `numpy.*sort` function is not implemented by Dask")
@pytest.mark.parametrize("operator", ["grad", "grad argnum tuple", "value_and_grad"])
def test_a_forward_pass_dask_computes_gives_a_numpy_gradient(operator):
    # sort of a Dask array computes (README): the output is a NumPy scalar, and grad's fast
    # path then returned the lazy Dask gradient of the NumPy parameter as it was
    w, X, _, Xd, _ = _tall_data(_ROW_CHUNKS["uneven"], seed=8)
    if operator == "grad":
        got, want = grad(_sorted_loss)(w, Xd), grad(_sorted_loss)(w, X)
    elif operator == "grad argnum tuple":
        (got,), (want,) = grad(_sorted_loss, (0,))(w, Xd), grad(_sorted_loss, (0,))(w, X)
    else:
        got, want = value_and_grad(_sorted_loss)(w, Xd)[1], value_and_grad(_sorted_loss)(w, X)[1]
    _assert_grad(got, w, want)


# ---- const_graph and jit ---------------------------------------------------------------------
@pytest.mark.parametrize("wrap", ["const_graph", "jit"])
def test_const_graph_and_jit_of_a_dask_gradient(wrap):
    # with a NumPy parameter and Dask data the recording returned the gradient lazy (grad
    # computes it): now refused with the fix; with a Dask parameter, lazy and right at replays
    wrapper = const_graph if wrap == "const_graph" else gradcy.jit
    name = "const_graph" if wrap == "const_graph" else "gradcy.jit"
    w, X, y, Xd, yd = _tall_data(_ROW_CHUNKS["uneven"], seed=9)
    with pytest.raises(NotImplementedError, match=f"^{name}: the gradient of a NumPy argument"):
        wrapper(grad(_loss))(w, Xd, yd)
    with pytest.raises(NotImplementedError, match=f"^{name}: the gradient of a NumPy argument"):
        wrapper(value_and_grad(_loss))(w, Xd, yd)
    fast = wrapper(grad(_loss))
    onp.testing.assert_allclose(fast(w, X, y), grad(_loss)(w, X, y), rtol=RTOL)
    with pytest.raises(NotImplementedError, match=f"^{name}: the gradient of a NumPy argument"):
        fast(w, Xd, yd)  # (another signature: recorded again)
    fast = wrapper(grad(_loss))
    for scale in (1.0, 2.0, -0.5):
        wd = da.from_array(w * scale, chunks=((1, 3),))
        _assert_grad(fast(wd, Xd, yd), wd, grad(_loss)(w * scale, X, y))


# ---- chunks of unknown length (a read by a Dask mask) ----------------------------------------
def _masked():
    w, X, y, Xd, yd = _tall_data(_ROW_CHUNKS["uneven"], seed=10)
    keep = X[:, 0] > -0.3
    Xm, ym = Xd[Xd[:, 0] > -0.3], yd[Xd[:, 0] > -0.3]
    assert onp.isnan(Xm.shape[0])
    return w, X[keep], y[keep], Xm, ym


def test_unknown_chunks_numpy_parameter():
    # the seed of a sum over chunks of unknown length was made per chunk from its length
    # (NaN): "TypeError: 'float' object cannot be interpreted as an integer"
    w, X, y, Xm, ym = _masked()
    f = lambda w, X, y: np.sum(np.logaddexp(0.0, X @ w) - y * (X @ w)) + np.sum(X * w)
    _assert_grad(grad(f)(w, Xm, ym), w, grad(f)(w, X, y))
    e = lambda X: np.sum(np.sin(X) * X)
    g = grad(e)(Xm)
    assert _lazy(g) and g.dtype == X.dtype
    onp.testing.assert_allclose(g.compute(), grad(e)(X), rtol=RTOL)


@pytest.mark.xfail(
    strict=True,
    raises=(TypeError, ValueError),
    reason="rules that read the shape of a value with chunks of unknown length (mean's count, "
    "dot's and sum's reshape/broadcast of the cotangent) raise: 'TypeError: 'float' object "
    "cannot be interpreted as an integer' (numpy.broadcast_to), 'ValueError: cannot convert "
    "float NaN to integer' (dask reshape); X.compute_chunk_sizes() first works",
)
@pytest.mark.parametrize("case", ["mean", "grad of X in X @ w", "sum over axis 1"])
def test_unknown_chunks_rules_reading_shapes(case):
    w, X, y, Xm, ym = _masked()
    if case == "mean":
        f, argnum = (lambda w, X: np.mean(np.sin(X @ w))), 0
    elif case == "grad of X in X @ w":
        f, argnum = (lambda w, X: np.sum(np.tanh(X @ w))), 1
    else:
        f, argnum = (lambda w, X: np.sum(np.sin(np.sum(X * w, axis=1)))), 0
    got = grad(f, argnum)(w, Xm)
    onp.testing.assert_allclose(_value(got), grad(f, argnum)(w, X), rtol=RTOL)


# ---- errors ---------------------------------------------------------------------------------
@pytest.mark.filterwarnings("ignore:Output seems independent of input")
@pytest.mark.parametrize(
    "output",
    [
        lambda w, X: np.sum(X @ w) * 1j,  # complex: take the real part or holomorphic_grad
        lambda w, X: np.sum(X > 0),  # integer
        lambda w, X: X @ w,  # not a scalar
    ],
    ids=["complex", "integer", "array"],
)
def test_an_output_grad_refuses_gets_numpys_message(output):
    # a complex or integer Dask output gave "grad: the function returned a Array of dtype
    # complex128; grad needs a real floating-point output", without the fix NumPy's names
    w, X, _, Xd, _ = _tall_data(_ROW_CHUNKS["uneven"])
    with pytest.raises(TypeError) as numpys:
        grad(output)(w, X)
    with pytest.raises(TypeError) as dasks:
        grad(output)(w, Xd)
    assert str(dasks.value) == str(numpys.value)


@pytest.mark.parametrize("operand", ["the product X @ w", "the NumPy parameter"])
def test_map_blocks_of_a_traced_value_refuses(operand):
    # dask.array.map_blocks(f, traced) kept the Box in Dask's graph, outside the tape: a zero
    # gradient with only the "output seems independent" warning
    w, _, _, Xd, _ = _tall_data(_ROW_CHUNKS["uneven"])

    def f(w, X):
        return np.sum(da.map_blocks(onp.sin, X @ w if operand == "the product X @ w" else w))

    with pytest.raises(gradcy.TracerArrayConversionError, match="dask.array.map_blocks"):
        grad(f)(w, Xd)


@pytest.mark.parametrize(
    "read",
    [
        lambda X: X[X > 0.2],  # a lazy mask of every element
        lambda X: X[X[:, 1] > 0],  # a lazy mask of rows
        lambda X: X[onp.arange(44).reshape(11, 4) % 3 == 0],  # a NumPy mask of two dimensions
    ],
    ids=["lazy mask", "lazy row mask", "numpy 2-d mask"],
)
def test_a_read_by_a_mask_dask_cannot_assign_refuses(read):
    # the VJP wrote g with out[mask] = g, which Dask cannot do here: the lazy masks raised
    # gradcy's error about integer arrays ("read with ... a boolean mask", which the user
    # did), the NumPy 2-d mask Dask's "IndexError: Incorrect shape ((11, 4)) of integer
    # indices for dimension with size 11"; now one error naming where
    _, X, _, Xd, _ = _tall_data(_ROW_CHUNKS["both axes"])
    with pytest.raises(NotImplementedError, match=r"^gradcy\.numpy\.getitem: .*np\.where"):
        grad(lambda X: np.sum(np.sin(read(X))))(Xd)
    # the rewrites the message names
    f = lambda X: np.sum(np.where(X > 0.2, np.sin(X), 0.0))
    _assert_grad(grad(f)(Xd), Xd, grad(f)(X))
    rows = lambda X: np.sum(np.sin(X[(X[:, 1] > 0).compute()]))
    _assert_grad(grad(rows)(Xd), Xd, grad(lambda X: np.sum(np.sin(X[X[:, 1] > 0])))(X))
