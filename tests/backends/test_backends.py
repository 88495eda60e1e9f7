"""grad, JVPs, Hessian-vector products and writes into buffers on arrays of other libraries
(Dask through a real two-process cluster, CuPy on a GPU), against the same code on NumPy.

Each program runs on NumPy and on the backend; values and gradients agree to 1e-12 relative,
and every gradient has the type of its input (NumPy in, NumPy out; Dask in, lazy Dask out with
the input's chunks; CuPy in, CuPy out).
"""

import numpy as onp
import pytest
from counters import assert_counters_zero

import gradcy
import gradcy.numpy as np
from gradcy import grad, hessian_vector_product, make_jvp, value_and_grad

BACKENDS = ["numpy", "dask", "cupy"]
RTOL = 1e-12


def _backend(name, request):
    """(to_backend(ndarray, chunks) -> array, to_numpy(array) -> ndarray) of a backend; skips
    when it is not installed or has no device."""
    if name == "numpy":
        return (lambda a, chunks=None: a), (lambda a: a)
    if name == "dask":
        da = pytest.importorskip(
            "dask.array", reason="dask is not installed (pip install -e '.[dask]')"
        )
        request.getfixturevalue("dask_client")  # computations run on the cluster

        def to(a, chunks=None):
            return da.from_array(a, chunks=chunks if chunks is not None else -1)

        return to, (lambda a: a.compute())
    cupy = pytest.importorskip("cupy", reason="cupy is not installed (no GPU on this machine)")
    try:
        cupy.cuda.runtime.getDeviceCount()
    except Exception as e:  # cupy without a usable device
        pytest.skip(f"cupy has no GPU: {e}")
    return (lambda a, chunks=None: cupy.asarray(a)), (lambda a: cupy.asnumpy(a))


@pytest.fixture(params=BACKENDS)
def backend(request):
    to, back = _backend(request.param, request)
    return request.param, to, back


def _lazy(x):
    return hasattr(type(x), "__dask_graph__")


def _check_type(g, x, name):
    """The gradient has its input's type: lazy Dask with the input's chunks for Dask."""
    assert type(g) is type(x), (type(g), type(x))
    assert g.shape == x.shape and g.dtype == x.dtype
    if name == "dask":
        assert _lazy(g) and g.chunks == x.chunks


def _close(a, b):
    onp.testing.assert_allclose(a, b, rtol=RTOL, atol=0)


# ---- the programs ---------------------------------------------------------------------------
def logistic(w, X, y):
    z = X @ w
    return np.sum(np.logaddexp(0.0, z) - y * z) / X.shape[0]


def sin_chain(x, steps=100):
    for _ in range(steps):
        x = np.sin(x) * 1.0001 + 0.01 * x
    return np.sum(x)


def mlp(W1, W2, X, y):
    h = np.tanh(X @ W1)
    out = h @ W2
    return np.mean((out - y) ** 2)


def write_into_buffer(w, X):
    """Columns of a buffer made like X, written one by one, then read."""
    buf = np.zeros_like(X)
    buf[:, 0] = np.sin(X[:, 0] * w[0])
    buf[:, 1] = X[:, 1] * w[1] + buf[:, 0]
    buf[:, 2] = np.exp(-(buf[:, 1] ** 2)) * w[2]
    return np.sum(buf**2 * X)


def _data(n=400, d=3, seed=0):
    rng = onp.random.default_rng(seed)
    X = rng.standard_normal((n, d))
    y = (rng.random(n) > 0.5).astype(float)
    return X, y, rng.standard_normal(d)


# ---- gradients --------------------------------------------------------------------------------
def test_logistic_grad_numpy_parameter(backend):
    """A NumPy parameter with backend data: a NumPy gradient (Dask's computed), equal to
    NumPy's."""
    name, to, back = backend
    if name == "cupy":
        pytest.skip("CuPy refuses NumPy operands (device data needs device parameters)")
    X, y, w = _data()
    expect = grad(logistic)(w, X, y)
    g = grad(logistic)(w, to(X, (100, 3)), to(y, 100))
    assert type(g) is onp.ndarray and g.dtype == w.dtype
    _close(g, expect)


def test_logistic_grad_backend_parameter(backend):
    name, to, back = backend
    X, y, w = _data()
    expect = grad(logistic, argnum=(0, 1))(w, X, y)
    wb, Xb, yb = to(w), to(X, (100, 3)), to(y, 100)
    gw, gX = grad(logistic, argnum=(0, 1))(wb, Xb, yb)
    _check_type(gw, wb, name)
    _check_type(gX, Xb, name)
    _close(back(gw), expect[0])
    _close(back(gX), expect[1])


def test_value_and_grad_one_compute(backend):
    """value_and_grad of a NumPy parameter on Dask data: value and gradient from one
    dask.compute (counted through a scheduler that counts its calls)."""
    name, to, back = backend
    if name == "cupy":
        pytest.skip("CuPy refuses NumPy operands (device data needs device parameters)")
    X, y, w = _data()
    v0, g0 = value_and_grad(logistic)(w, X, y)
    Xb, yb = to(X, (100, 3)), to(y, 100)
    if name == "dask":
        import dask

        calls = []

        def counting(dsk, keys, **kw):
            calls.append(len(keys))
            return dask.get(dsk, keys, **kw)

        with dask.config.set(scheduler=counting):
            v, g = value_and_grad(logistic)(w, Xb, yb)
        assert len(calls) == 1, calls
    else:
        v, g = value_and_grad(logistic)(w, Xb, yb)
    assert type(g) is onp.ndarray and not _lazy(v)
    _close(v, v0)
    _close(g, g0)


def test_sin_chain(backend):
    name, to, back = backend
    x = onp.linspace(-1.0, 1.0, 40)
    expect = grad(sin_chain)(x)
    xb = to(x, 10)
    g = grad(sin_chain)(xb)
    _check_type(g, xb, name)
    _close(back(g), expect)


def test_mlp_step(backend):
    name, to, back = backend
    rng = onp.random.default_rng(1)
    X, y = rng.standard_normal((200, 4)), rng.standard_normal((200, 2))
    W1, W2 = rng.standard_normal((4, 8)), rng.standard_normal((8, 2))
    e1, e2 = grad(mlp, argnum=(0, 1))(W1, W2, X, y)
    Wb1, Wb2 = to(W1), to(W2)
    g1, g2 = grad(mlp, argnum=(0, 1))(Wb1, Wb2, to(X, (50, 4)), to(y, (50, 2)))
    _check_type(g1, Wb1, name)
    _check_type(g2, Wb2, name)
    _close(back(g1), e1)
    _close(back(g2), e2)


def test_float32_keeps_dtype(backend):
    name, to, back = backend
    x = onp.linspace(-1.0, 1.0, 12).astype(onp.float32)
    xb = to(x, 4)
    g = grad(lambda t: np.sum(np.tanh(t) * t))(xb)
    _check_type(g, xb, name)
    onp.testing.assert_allclose(back(g), grad(lambda t: np.sum(np.tanh(t) * t))(x), rtol=1e-6)


# ---- forward mode and second order ---------------------------------------------------------
def test_jvp(backend):
    name, to, back = backend
    x = onp.linspace(-1.0, 1.0, 30)
    v = onp.cos(x)
    f = lambda t: np.exp(np.sin(t)) * t
    expect_t = make_jvp(f)(x)(v)[1]
    xb, vb = to(x, 10), to(v, 10)
    ans, t = make_jvp(f)(xb)(vb)
    _check_type(t, xb, name)
    _close(back(t), expect_t)
    _close(back(ans), onp.exp(onp.sin(x)) * x)


def test_hessian_vector_product(backend):
    name, to, back = backend
    X, y, w = _data()
    v = onp.array([1.0, -2.0, 0.5])
    expect = hessian_vector_product(logistic)(w, X, y, v)
    wb, vb = to(w), to(v)
    h = hessian_vector_product(logistic)(wb, to(X, (100, 3)), to(y, 100), vb)
    _check_type(h, wb, name)
    _close(back(h), expect)
    # a NumPy parameter and direction with backend data: a NumPy product
    if name == "dask":
        h = hessian_vector_product(logistic)(w, to(X, (100, 3)), to(y, 100), v)
        assert type(h) is onp.ndarray
        _close(h, expect)


# ---- writes into arrays ------------------------------------------------------------------------
def test_write_into_buffer(backend):
    """buf[:, k] = ... into a buffer made like the data: Dask's own (lazy) item assignment."""
    name, to, back = backend
    X, _, w = _data(60)
    expect_v, expect_g = value_and_grad(write_into_buffer)(w, X)
    wb = to(w)
    v, g = value_and_grad(write_into_buffer)(wb, to(X, (20, 3)))
    _check_type(g, wb, name)
    _close(back(v), expect_v)
    _close(back(g), expect_g)


def test_write_into_buffer_numpy_parameter(backend):
    name, to, back = backend
    X, _, w = _data(60)
    expect = grad(write_into_buffer)(w, X)
    if name == "cupy":
        pytest.skip("CuPy refuses NumPy operands (device data needs device parameters)")
    g = grad(write_into_buffer)(w, to(X, (20, 3)))
    assert type(g) is onp.ndarray
    _close(g, expect)


# ---- counters and laziness ---------------------------------------------------------------
def test_counters_count_declared_nbytes():
    """Saved Dask arrays count the nbytes they declare while the tape holds them, and the
    counters come back to zero."""
    da = pytest.importorskip("dask.array", reason="dask is not installed")
    x = da.ones((1000, 100), chunks=(250, 100))  # 800 kB declared, nothing allocated
    vjp, ans = gradcy.make_vjp(lambda t: np.sin(t) * t)(x)
    try:
        assert gradcy.memory.stats()["saved_bytes"] >= x.nbytes
    finally:
        vjp.release()
    assert_counters_zero()


def test_nothing_computed_for_lazy_parameters():
    """grad of a Dask parameter builds a graph and computes nothing (a scheduler that fails
    when called)."""
    da = pytest.importorskip("dask.array", reason="dask is not installed")
    import dask

    def refuse(*a, **k):
        raise AssertionError("gradcy computed a Dask array")

    X, y, w = _data()
    with dask.config.set(scheduler=refuse):
        g = grad(logistic)(
            da.from_array(w), da.from_array(X, chunks=(100, 3)), da.from_array(y, chunks=100)
        )
        h = hessian_vector_product(logistic)(
            da.from_array(w),
            da.from_array(X, chunks=(100, 3)),
            da.from_array(y, chunks=100),
            da.from_array(w),
        )
    assert _lazy(g) and _lazy(h)


def _lazy_programs(da):
    X, y, w = _data()
    rng = onp.random.default_rng(2)
    x = da.from_array(onp.linspace(-1.0, 1.0, 40), chunks=10)
    Xd, yd, wd = da.from_array(X, chunks=(100, 3)), da.from_array(y, chunks=100), da.from_array(w)
    W1, W2 = (da.from_array(rng.standard_normal(s)) for s in ((3, 8), (8, 1)))
    return {
        "sin_chain": lambda: grad(sin_chain)(x),
        "mlp": lambda: grad(mlp, argnum=(0, 1))(W1, W2, Xd, yd[:, None]),
        "jvp": lambda: make_jvp(lambda t: np.exp(np.sin(t)) * t)(x)(x),
        "hvp": lambda: hessian_vector_product(logistic)(wd, Xd, yd, wd),
        "write": lambda: value_and_grad(write_into_buffer)(wd, Xd),
        "float32": lambda: grad(lambda t: np.sum(np.tanh(t) * t))(x.astype(onp.float32)),
    }


@pytest.mark.parametrize("program", ["sin_chain", "mlp", "jvp", "hvp", "write", "float32"])
def test_lazy_programs_compute_nothing(program):
    """Differentiating Dask parameters builds graphs only: a scheduler that fails when called
    is never called (no value is converted to numpy.ndarray on the way)."""
    da = pytest.importorskip("dask.array", reason="dask is not installed")
    import dask

    def refuse(*a, **k):
        raise AssertionError("gradcy computed a Dask array")

    run = _lazy_programs(da)[program]
    with dask.config.set(scheduler=refuse):
        out = run()
    leaves = out if isinstance(out, tuple) else (out,)
    assert all(_lazy(v) for v in leaves)


def test_integer_backend_argument_is_refused():
    da = pytest.importorskip("dask.array", reason="dask is not installed")
    with pytest.raises(TypeError, match="argument 0 has dtype int64"):
        grad(lambda t: np.sum(t * 1.0))(da.arange(4))


def test_mixed_libraries_raise():
    """A Dask argument whose gradient comes out as another library's array is refused."""
    da = pytest.importorskip("dask.array", reason="dask is not installed")
    from gradcy.backends import match_gradient

    class Other:
        pass

    with pytest.raises(TypeError, match="does not move arrays between array libraries"):
        match_gradient(Other(), onp.zeros(3))
    assert type(match_gradient(onp.ones(3), da.zeros(3, chunks=1))) is da.Array
