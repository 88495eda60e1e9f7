"""Batches of tangents through forward mode (gradcy._batched.BatchedTangent) and the Hessian
they give: forward mode over the gradient's reverse pass, the parameter's unit vectors carried
as one batch.

Each NumPy operation on a batch equals the same operation applied to each tangent and stacked;
`hessian` by the batched pass equals the reverse-over-reverse one (jacobian of jacobian) on a
set of functions covering elementwise chains, matrix products, reductions, indexing, reshapes
and operations without a batched rule (run tangent by tangent inside the pass).
"""

import numpy as onp
import pytest

import gradcy.numpy as np
from gradcy import grad, hessian, jacobian
from gradcy._batched import BatchedTangent, BatchingError
from gradcy._second_order import _batchable, _hessian_batched

RTOL = 1e-12
rng = onp.random.default_rng(0)


def _per_tangent(fn, batch_arg_index, args):
    """fn applied to each tangent of args[batch_arg_index] (an array (B,) + shape), stacked."""
    data = args[batch_arg_index]
    return onp.stack(
        [
            fn(*[a[b] if i == batch_arg_index else a for i, a in enumerate(args)])
            for b in range(data.shape[0])
        ]
    )


_OPS = {
    "multiply row": (lambda t, a: t * a, (rng.standard_normal((4, 3, 5)), rng.standard_normal(5))),
    "multiply wider": (
        lambda t, a: a * t,
        (rng.standard_normal((4, 5)), rng.standard_normal((3, 5))),
    ),
    "add batches": (lambda t, a: t + t * a, (rng.standard_normal((4, 3)), rng.standard_normal(3))),
    "divide, negate": (
        lambda t, a: -(t / a) - t,
        (rng.standard_normal((4, 3)), rng.standard_normal(3) + 3),
    ),
    "exp chain": (
        lambda t, a: t * onp.exp(a) * onp.cos(a) / (1 + a * a),
        (rng.standard_normal((4, 6)), rng.standard_normal(6)),
    ),
    "matrix @ vector": (
        lambda t, a: a @ t,
        (rng.standard_normal((4, 3)), rng.standard_normal((5, 3))),
    ),
    "stack @ vector": (
        lambda t, a: a @ t,
        (rng.standard_normal((4, 3)), rng.standard_normal((2, 5, 3))),
    ),
    "vector @ matrix": (
        lambda t, a: t @ a,
        (rng.standard_normal((4, 3)), rng.standard_normal((3, 5))),
    ),
    "vector @ stack": (
        lambda t, a: t @ a,
        (rng.standard_normal((4, 3)), rng.standard_normal((2, 3, 5))),
    ),
    "matrix @ matrix": (
        lambda t, a: t @ a,
        (rng.standard_normal((4, 2, 3)), rng.standard_normal((2, 3, 5))),
    ),
    "matrix @ batched matrix": (
        lambda t, a: a @ t,
        (rng.standard_normal((4, 3, 2)), rng.standard_normal((2, 5, 3))),
    ),
    "dot vector": (
        lambda t, a: onp.dot(a, t),
        (rng.standard_normal((4, 3)), rng.standard_normal((5, 3))),
    ),
    "dot matrix": (
        lambda t, a: onp.dot(a, t),
        (rng.standard_normal((4, 3, 2)), rng.standard_normal((5, 3))),
    ),
    "dot from batch": (
        lambda t, a: onp.dot(t, a),
        (rng.standard_normal((4, 2, 3)), rng.standard_normal((3, 5))),
    ),
    "sum axis": (
        lambda t, a: onp.sum(t * a, axis=-1),
        (rng.standard_normal((4, 3, 5)), rng.standard_normal(5)),
    ),
    "sum all": (
        lambda t, a: onp.sum(t) + onp.mean(t * a, axis=(0, 1)),
        (rng.standard_normal((4, 3, 5)), rng.standard_normal(5)),
    ),
    "reduce": (
        lambda t, a: onp.add.reduce(t, axis=1)[:, None] + onp.add.accumulate(t, axis=0),
        (rng.standard_normal((4, 3, 5)), None),
    ),
    "reshape, transpose": (
        lambda t, a: t.reshape(5, -1).T.ravel() + onp.transpose(t).ravel(),
        (rng.standard_normal((4, 3, 5)), None),
    ),
    "index": (
        lambda t, a: t[1:, ::2] + t[..., onp.array([0, 2, 4])][1:],
        (rng.standard_normal((4, 3, 5)), None),
    ),
    "broadcast, expand": (
        lambda t, a: onp.broadcast_to(t, (2, 3, 5)).sum(0) + onp.squeeze(onp.expand_dims(t, 1), 1),
        (rng.standard_normal((4, 3, 5)), None),
    ),
    "where": (
        lambda t, a: onp.where(a > 0, t, -t),
        (rng.standard_normal((4, 5)), rng.standard_normal(5)),
    ),
    "no batched rule (per tangent)": (
        lambda t, a: onp.cumsum(onp.sort(a) * t) + onp.concatenate([t, t])[:5],
        (rng.standard_normal((4, 5)), rng.standard_normal(5)),
    ),
}


@pytest.mark.parametrize("case", list(_OPS))
def test_an_operation_on_a_batch_is_the_operation_on_each_tangent(case):
    fn, (data, a) = _OPS[case]
    out = fn(BatchedTangent(data), a)
    assert type(out) is BatchedTangent
    expected = _per_tangent(fn, 0, (data, a))
    assert out.shape == expected.shape[1:]
    onp.testing.assert_allclose(out.data, expected, rtol=RTOL, atol=1e-15)


def test_a_product_chain_stays_unformed_until_needed():
    """t * a * b + t * c keeps one batch and a scale: one multiply of the batch at the end."""
    data = rng.standard_normal((4, 6))
    a, b, c = rng.standard_normal((3, 6))
    t = BatchedTangent(data)
    out = -(t * a * b) / c + t * c
    assert out._base is data and out._scale is not None
    assert out.shape == (6,) and out.dtype == onp.float64
    onp.testing.assert_allclose(out.data, -(data * a * b) / c + data * c, rtol=RTOL)


@pytest.mark.parametrize(
    "case", ["A @ e", "e @ A", "e @ stack", "dot(A, e)", "dot(e, A)", "dot(e, v)", "int A @ e"]
)
def test_a_product_with_the_standard_basis_selects(case):
    """The unit vectors as a batch (hessian's tangents): A @ e_b is A's column b, taken as a
    view of A (no product), equal to the product tangent by tangent."""
    A = rng.standard_normal((5, 3))
    e = onp.eye(3)
    fn, plain = {
        "A @ e": (lambda t: A @ t, A),
        "e @ A": (lambda t: t @ A.T, A.T),
        "e @ stack": (lambda t: t @ onp.stack([A.T, 2 * A.T]), None),
        "dot(A, e)": (lambda t: onp.dot(A, t), A),
        "dot(e, A)": (lambda t: onp.dot(t, A.T), A.T),
        "dot(e, v)": (lambda t: onp.dot(t, A[0]), None),
        "int A @ e": (lambda t: onp.arange(6).reshape(2, 3) @ t, None),
    }[case]
    out = fn(BatchedTangent(e, eye=True))
    expected = onp.stack([fn(e[b]) for b in range(3)])
    assert out.data.dtype == expected.dtype
    onp.testing.assert_array_equal(out.data, expected)
    if plain is not None:
        assert onp.shares_memory(out.data, plain)


def test_metadata_is_answered_once_and_conversion_refuses():
    t = BatchedTangent(onp.ones((3, 2, 4)))
    assert onp.shape(t) == (2, 4) and onp.ndim(t) == 2 and t.dtype == onp.float64
    assert onp.result_type(t) == onp.float64
    with pytest.raises(BatchingError):
        onp.asarray(t)
    with pytest.raises(BatchingError):
        bool(t)


def _functions():
    A = rng.standard_normal((7, 4))
    B = rng.standard_normal((4, 4))
    y = rng.standard_normal(7)
    return {
        "logistic": (
            lambda w: np.sum(np.log1p(np.exp(-(A @ w)))) - np.dot(y, A @ w),
            rng.standard_normal(4),
        ),
        "tanh layer": (lambda w: np.sum(np.tanh(A @ np.sin(B @ w)) ** 2), rng.standard_normal(4)),
        "quadratic form": (lambda w: w @ B @ w + np.dot(w, w) ** 2, rng.standard_normal(4)),
        "matrix parameter": (
            lambda W: np.sum(np.tanh(A @ W) * (A @ W)) + np.trace(W.T @ B @ W),
            rng.standard_normal((4, 3)),
        ),
        "log-sum-exp": (
            lambda w: np.log(np.sum(np.exp(A @ w))) + np.max(A @ w),
            rng.standard_normal(4),
        ),
        "indexing, reshape": (
            lambda w: np.sum(w[::2] * w[1::2]) + np.sum(w.reshape(2, 2).T @ w.reshape(2, 2)) ** 2,
            rng.standard_normal(4),
        ),
        "sort, cumsum, where": (
            lambda w: np.sum(np.cumsum(np.sort(w) ** 3)) + np.sum(np.where(w > 0, w**2, np.sin(w))),
            rng.standard_normal(5),
        ),
        "division, power": (
            lambda w: np.sum(w**3 / (1.0 + w**2)) + np.prod(w[:3]),
            rng.standard_normal(5),
        ),
        "einsum, outer": (
            lambda w: np.einsum("i,ij,j->", w, B, w) * np.sum(np.outer(w, w)),
            rng.standard_normal(4),
        ),
        "float32": (lambda w: np.sum(np.tanh(w) ** 3), rng.standard_normal(3).astype("float32")),
    }


# their JVP rules write a batch into a plain array (untake: the transpose of x[idx]), which a
# batch refuses; hessian runs them one row at a time
_UNBATCHED = {"indexing, reshape", "division, power"}


@pytest.mark.parametrize("name", list(_functions()))
def test_batched_hessian_equals_reverse_over_reverse(name):
    f, x = _functions()[name]
    ref = jacobian(jacobian(f))(x)
    if name in _UNBATCHED:
        with pytest.raises(BatchingError):
            _hessian_batched(grad(f), (x,), {}, 0)
        onp.testing.assert_allclose(hessian(f)(x), ref, rtol=RTOL, atol=1e-12)
        return
    H = _hessian_batched(grad(f), (x,), {}, 0)  # the batched pass itself, no fallback
    assert type(H) is onp.ndarray and H.shape == x.shape + x.shape and H.dtype == x.dtype
    onp.testing.assert_allclose(
        H,
        ref,
        rtol=1e-5 if x.dtype == onp.float32 else RTOL,
        atol=1e-5 if x.dtype == onp.float32 else 1e-12,
    )


def test_hessian_takes_the_batched_pass_on_large_numpy_data():
    """NumPy: the batched pass for data of at least _NUMPY_MIN elements whose whole batch fits
    _NUMPY_BUDGET (there it is about 2x faster than a reverse pass per row); hessian's result
    is the batched pass's, equal to reverse over reverse."""
    import gradcy._second_order as so

    X = rng.standard_normal((so._NUMPY_MIN // 4, 4))
    w = rng.standard_normal(4)

    def f(w, X):
        return np.sum(np.log1p(np.exp(X @ w)))

    assert so._batchable((w, X), {}, 0)
    assert not so._batchable((w, X[:100]), {}, 0)  # small: reverse
    assert not so._batchable((rng.standard_normal(2000), X), {}, 0)  # over the budget
    H = hessian(f)(w, X)
    onp.testing.assert_array_equal(H, so._hessian_batched(grad(f), (w, X), {}, 0))
    onp.testing.assert_allclose(H, jacobian(jacobian(f))(w, X), rtol=RTOL)


def test_batched_hessian_in_pieces_equals_one_batch(monkeypatch):
    """Dask data: batches of at most _LAZY_STEP tangents, computed together; the pieces give
    the Hessian of one batch."""
    import gradcy._second_order as so

    da = pytest.importorskip("dask.array")
    f, x = _functions()["tanh layer"]
    A = rng.standard_normal((6, 4))

    def g(w, A):
        return f(w) + np.sum(np.sin(A @ w))

    Ad = da.from_array(A, chunks=3)
    whole = so._hessian_batched(grad(g), (x, Ad), {}, 0)
    monkeypatch.setattr(so, "_LAZY_STEP", 3)
    onp.testing.assert_allclose(so._hessian_batched(grad(g), (x, Ad), {}, 0), whole, rtol=RTOL)
    onp.testing.assert_allclose(whole, jacobian(jacobian(g))(x, A), rtol=RTOL)


def test_hessian_falls_back_where_a_batch_cannot_go():
    """A Hessian inside another differentiation, a tuple argnum and an integer argument take
    the reverse-over-reverse path, with autograd's results."""
    x = rng.standard_normal(3)
    assert not _batchable((x,), {}, (0,))
    assert not _batchable((onp.arange(3),), {}, 0)
    third = grad(lambda x: np.sum(hessian(lambda x: np.sum(x**4))(x)))(x)
    onp.testing.assert_allclose(third, 24 * x, rtol=RTOL)


@pytest.fixture
def batched_hessian(monkeypatch):
    """hessian takes the batched pass on small NumPy data too (the test's)."""
    import gradcy._second_order as so

    monkeypatch.setattr(so, "_NUMPY_MIN", 1)


def test_a_users_error_in_the_batched_pass_propagates_once(batched_hessian):
    """An error of the function's own (not a rule that cannot take a batch) is raised as it
    is, from the one run of the function: hessian does not run it again on the other path."""
    calls = []

    def f(x):
        calls.append(1)
        y = np.sum(np.sin(x) * x)
        if calls:
            raise ValueError("the user's bug")
        return y

    x = rng.standard_normal(3)
    assert _batchable((x,), {}, 0)
    with pytest.raises(ValueError, match="^the user's bug$") as caught:
        hessian(f)(x)
    assert type(caught.value) is ValueError and caught.value.__cause__ is None
    assert len(calls) == 1

    # a successful Hessian runs the function once per point too
    calls.clear()

    def g(x):
        calls.append(1)
        return np.sum(np.sin(x) * x)

    for k in range(3):
        H = hessian(g)(x + k)
        onp.testing.assert_allclose(H, onp.diag(2 * onp.cos(x + k) - (x + k) * onp.sin(x + k)))
    assert len(calls) == 3


def test_a_users_error_in_the_batched_hvp_propagates_once():
    from gradcy import hessian_tensor_product

    da = pytest.importorskip("dask.array")
    calls = []

    def f(w, A):
        calls.append(1)
        y = np.sum(np.sin(A @ w))
        raise KeyError("the user's bug")
        return y

    w, A = rng.standard_normal(3), da.from_array(rng.standard_normal((4, 3)), chunks=2)
    with pytest.raises(KeyError, match="the user's bug"):
        hessian_tensor_product(f)(w, A, onp.ones(3))
    assert len(calls) == 1


def test_a_jvp_rule_that_cannot_take_a_batch_falls_back(batched_hessian):
    """A JVP rule that fails on a batch of tangents (any error) is "not supported by the batch
    path": BatchingError, and hessian runs reverse over reverse (VJP rules), with the right
    Hessian; the same rule on one tangent works."""
    from gradcy import make_jvp
    from gradcy._batched import BatchedTangent
    from gradcy.extend import defjvp, defvjp, primitive

    @primitive
    def cube(x):
        return x**3

    def cube_jvp(g, ans, x):
        if type(g) is BatchedTangent:
            raise IndexError("this rule reads one tangent")
        return 3 * x**2 * g

    defvjp(cube, lambda ans, x: lambda g: 3 * x**2 * g)
    defjvp(cube, cube_jvp)
    x = rng.standard_normal(3)
    f = lambda x: np.sum(cube(x) * x)
    with pytest.raises(BatchingError, match="JVP rule of .*cube.*IndexError") as caught:
        _hessian_batched(grad(f), (x,), {}, 0)
    assert type(caught.value.__cause__) is IndexError
    onp.testing.assert_allclose(hessian(f)(x), onp.diag(12 * x**2), rtol=RTOL)
    onp.testing.assert_allclose(make_jvp(f)(x)(onp.ones(3))[1], onp.sum(4 * x**3), rtol=RTOL)
