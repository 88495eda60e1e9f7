"""The Dask graphs gradcy builds are no larger than the ones a user writes by hand.

A NumPy parameter vector with Dask data (the logistic regression a Dask user fits, many times,
in cross-validation and regularisation paths): the graph `grad` computes has no more tasks,
once Dask has optimised it, than the hand-written gradient X.T @ (sigmoid(X @ w) - y)
(dask-glm's Logistic.gradient) for the same chunks; value_and_grad's graph no more than the
hand-written loss and gradient computed together; `hessian` and `jacobian` compute all their
rows in one graph. Counted exactly, through a scheduler that records the graph it is given
(the synchronous one runs it), so the counts do not depend on the machine's load.
"""

import numpy as onp
import pytest

import gradcy.numpy as np
from gradcy import grad, hessian, jacobian, value_and_grad

da = pytest.importorskip("dask.array", reason="dask is not installed (pip install -e '.[dask]')")
dask = pytest.importorskip("dask")

RTOL = 1e-12


def loss(w, X, y):
    """dask-glm's Logistic.pointwise_loss."""
    z = X @ w
    return np.sum(z + np.log1p(np.exp(-z))) - np.dot(y, z)


def _hand_loss(w, X, y):
    z = X.dot(w)
    return (z + da.log1p(da.exp(-z))).sum() - da.dot(y, z)


def _hand_gradient(w, X, y):
    p = 1 / (1 + da.exp(-X.dot(w)))
    return da.dot(X.T, p - y)


def _data(blocks, n=400, d=5):
    rng = onp.random.default_rng(0)
    X = rng.standard_normal((n, d))
    y = (rng.random(n) < 0.5).astype(float)
    w = onp.linspace(-0.5, 0.5, d)
    return w, da.from_array(X, chunks=(n // blocks, d)), da.from_array(y, chunks=n // blocks), X, y


class _Recorder:
    """A scheduler recording the number of tasks (aliases, which run nothing, not counted) of
    each graph it is given, then running it synchronously."""

    def __init__(self):
        self.graphs = []

    def __call__(self, dsk, keys, **kwargs):
        try:
            from dask._task_spec import Alias
        except ImportError:
            Alias = ()
        graph = dsk.__dask_graph__() if hasattr(dsk, "__dask_graph__") else dsk
        self.graphs.append(sum(1 for v in dict(graph).values() if not isinstance(v, Alias)))
        return dask.get(dsk, keys, **kwargs)


def _run(fn):
    rec = _Recorder()
    with dask.config.set(scheduler=rec):
        out = fn()
    return out, rec.graphs


@pytest.mark.parametrize("blocks", [1, 4, 10])
def test_grad_graph_no_larger_than_hand_written(blocks):
    w, X, y, Xn, yn = _data(blocks)
    g, graphs = _run(lambda: grad(loss)(w, X, y))
    ref, ref_graphs = _run(lambda: _hand_gradient(w, X, y).compute())
    assert len(graphs) == 1 and len(ref_graphs) == 1
    assert graphs[0] <= ref_graphs[0], (graphs, ref_graphs)
    assert type(g) is onp.ndarray
    onp.testing.assert_allclose(g, ref, rtol=RTOL)
    onp.testing.assert_allclose(g, grad(loss)(w, Xn, yn), rtol=RTOL)


@pytest.mark.parametrize("blocks", [1, 4, 10])
def test_value_and_grad_graph_no_larger_than_hand_written(blocks):
    w, X, y, Xn, yn = _data(blocks)
    (v, g), graphs = _run(lambda: value_and_grad(loss)(w, X, y))
    (rv, rg), ref_graphs = _run(lambda: dask.compute(_hand_loss(w, X, y), _hand_gradient(w, X, y)))
    assert len(graphs) == 1 and len(ref_graphs) == 1
    assert graphs[0] <= ref_graphs[0], (graphs, ref_graphs)
    onp.testing.assert_allclose(v, rv, rtol=RTOL)
    onp.testing.assert_allclose(g, rg, rtol=RTOL)


def test_hessian_one_graph():
    """The d x d Hessian of a NumPy parameter on Dask data: its d rows in one compute, equal to
    the hand-written X.T diag(p (1 - p)) X."""
    w, X, y, Xn, yn = _data(4)
    H, graphs = _run(lambda: hessian(loss)(w, X, y))
    assert len(graphs) == 1, graphs
    p = 1 / (1 + onp.exp(-Xn @ w))
    assert type(H) is onp.ndarray and H.shape == (w.size, w.size)
    onp.testing.assert_allclose(H, (Xn.T * (p * (1 - p))) @ Xn, rtol=RTOL)


def test_jacobian_one_graph():
    """jacobian of a vector function of Dask data: every row from one compute."""
    w, X, y, Xn, yn = _data(4)
    J, graphs = _run(lambda: jacobian(lambda w, X: np.tanh(X.T @ np.sin(X @ w)))(w, X))
    assert len(graphs) == 1, graphs
    onp.testing.assert_allclose(
        J, jacobian(lambda w, X: np.tanh(X.T @ np.sin(X @ w)))(w, Xn), rtol=RTOL
    )


@pytest.mark.parametrize("blocks", [1, 4, 10])
def test_grad_graph_no_larger_than_dask_glm(blocks):
    """Against dask-glm 0.4's own Logistic.pointwise_gradient, where it is installed."""
    import warnings

    pytest.importorskip(
        "dask_glm", reason="dask-glm is not installed (pip install -e '.[dask-glm]')"
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        from dask_glm.families import Logistic
    w, X, y, Xn, yn = _data(blocks)
    g, graphs = _run(lambda: grad(loss)(w, X, y))
    ref, ref_graphs = _run(lambda: Logistic.pointwise_gradient(w, X, y).compute())
    assert len(graphs) == 1 and graphs[0] <= ref_graphs[0], (graphs, ref_graphs)
    onp.testing.assert_allclose(g, ref, rtol=RTOL)


def _hessian_cases(X, y):
    """Scalar functions of a parameter w on data X (n x d) and y (n,), written once for NumPy
    and Dask data."""
    return {
        "logistic": lambda w: loss(w, X, y),
        "logaddexp": lambda w: np.sum(np.logaddexp(0.0, X @ w) - y * (X @ w)),
        "tanh layer": lambda w: np.sum(np.tanh(X @ np.sin(w)) ** 2 * y),
        "least squares, mean": lambda w: np.mean((X @ w - y) ** 2) + np.dot(w, w) ** 2,
        "poisson": lambda w: np.sum(np.exp(X @ w) - y * (X @ w)) / 3.0,
    }


@pytest.mark.parametrize("name", list(_hessian_cases(None, None)))
def test_hessian_on_dask_data_equals_numpys(name):
    """hessian of a NumPy parameter on Dask data (forward mode over the gradient, the d unit
    vectors as one batch): NumPy's Hessian of the same data, from one compute."""
    w, X, y, Xn, yn = _data(4)
    H, graphs = _run(lambda: hessian(_hessian_cases(X, y)[name])(w))
    assert len(graphs) == 1, graphs
    assert type(H) is onp.ndarray and H.shape == (w.size, w.size) and H.dtype == w.dtype
    onp.testing.assert_allclose(H, hessian(_hessian_cases(Xn, yn)[name])(w), rtol=RTOL, atol=1e-12)


def test_hessian_graph_does_not_grow_with_the_parameter():
    """The Hessian's graph carries its d tangents as one batch: the same tasks for d = 3 and
    d = 12 (d separate products would have 4x the tasks), and the logistic Hessian's graph
    no larger after optimisation than the hand-written X.T @ (p (1 - p) X): its seed, a
    constant, adds no task, and X @ (the unit vectors) is X itself, not a product."""
    sizes = []
    for d in (3, 12):
        w, X, y, Xn, yn = _data(4, d=d)
        _, graphs = _run(lambda: hessian(loss)(w, X, y))
        p = 1 / (1 + da.exp(-X.dot(w)))
        _, ref = _run(lambda: da.dot(X.T, (p * (1 - p))[:, None] * X).compute())
        sizes.append((graphs[0], ref[0]))
    assert sizes[0][0] == sizes[1][0], sizes
    assert all(mine <= ref for mine, ref in sizes), sizes


def test_the_seed_of_a_lazy_scalar_output_adds_no_layer():
    """The backward pass of a 0-d Dask output starts from a NumPy one (its value is known):
    no layer of ones, one layer fewer for each first step on it (the negation of
    `- np.dot(y, z)`, the broadcast of the sum)."""
    from gradcy.backends import recording_computes

    w, X, y, Xn, yn = _data(4)
    with recording_computes() as computes:
        g = grad(loss)(w, X, y)
    names = [name.split("-")[0] for name in computes[0][0].__dask_graph__().layers]
    assert "ones_like" not in names, names
    onp.testing.assert_allclose(g, grad(loss)(w, Xn, yn), rtol=RTOL)


@pytest.mark.parametrize("name", list(_hessian_cases(None, None)))
@pytest.mark.parametrize("lazy_w", [False, True])
def test_hessian_vector_product_on_dask_data_equals_numpys(name, lazy_w):
    """hessian_vector_product with Dask data (forward mode over the gradient): NumPy's
    product of the same data; NumPy in, NumPy out (one compute), Dask in, lazy Dask out with
    the parameter's chunks."""
    from gradcy import hessian_vector_product

    w, X, y, Xn, yn = _data(4)
    v = onp.cos(onp.arange(w.size))
    ref = hessian_vector_product(lambda w, v: _hessian_cases(Xn, yn)[name](w))(w, v, v)
    if lazy_w:
        wd, vd = da.from_array(w, chunks=2), da.from_array(v, chunks=2)
        out = hessian_vector_product(lambda w: _hessian_cases(X, y)[name](w))(wd, vd)
        assert type(out) is type(wd) and out.chunks == wd.chunks
        out = out.compute()
    else:
        out, graphs = _run(
            lambda: hessian_vector_product(lambda w: _hessian_cases(X, y)[name](w))(w, v)
        )
        assert len(graphs) == 1 and type(out) is onp.ndarray
    assert out.dtype == w.dtype
    onp.testing.assert_allclose(out, ref, rtol=RTOL, atol=1e-12)


def test_hessian_vector_product_graph_smaller_than_reverse_over_reverse(monkeypatch):
    """The forward-over-reverse product's graph (Dask w and v, the logistic loss) has fewer
    tasks after optimisation than the second reverse pass's."""
    import gradcy._second_order as so
    from gradcy import hessian_vector_product
    from gradcy.backends import graph_size

    w, X, y, Xn, yn = _data(4)
    wd, vd = da.from_array(w), da.from_array(onp.cos(onp.arange(w.size)))
    forward = graph_size(hessian_vector_product(loss)(wd, X, y, vd), data=(X, y))
    monkeypatch.setattr(so, "_lazy_product", lambda *a: False)
    reverse = graph_size(hessian_vector_product(loss)(wd, X, y, vd), data=(X, y))
    assert forward["optimized_tasks"] < reverse["optimized_tasks"], (forward, reverse)
    assert forward["layers"] < reverse["layers"], (forward, reverse)


def test_hessian_on_dask_data_where_a_rule_refuses_a_batch():
    """A matrix parameter (no standard-basis shortcut) and a parameter read by index (its
    rule writes the tangent into a plain array, which a batch refuses: reverse over reverse):
    NumPy's Hessian of the same data, each from one compute."""
    w, X, y, Xn, yn = _data(4)
    W = onp.linspace(-0.5, 0.5, 10).reshape(5, 2)

    def matrix(W, X):
        return np.sum(np.tanh(X @ W) ** 2)

    def indexed(w, X):
        return np.sum(np.exp(X @ w) * w[0]) + w[1] * w[2]

    for f, x in ((matrix, W), (indexed, w)):
        H, graphs = _run(lambda: hessian(f)(x, X))
        assert len(graphs) == 1, graphs
        assert type(H) is onp.ndarray and H.shape == x.shape + x.shape
        onp.testing.assert_allclose(H, hessian(f)(x, Xn), rtol=RTOL, atol=1e-12)


def _new_layers(out, *inputs):
    """The layers of out's graph that none of `inputs` has (the ones the operation made)."""
    old = set()
    for x in inputs:
        if isinstance(x, da.Array):
            old |= set(x.__dask_graph__().layers)
    return [name for name in out.__dask_graph__().layers if name not in old]


def _parts(out, name):
    """The names (without token) of the blockwise layers merged into out's layer `name`
    (gradcy._dask_ops.fuse_chunks: one task per chunk running them all), [name's] when it is
    one layer."""
    task = out.__dask_graph__().layers[name].task
    if getattr(task.func, "__name__", "") != "_execute_subgraph":
        return [name.rsplit("-", 1)[0]]
    return [k.rsplit("-", 1)[0] for k in task.args[0]]


def _dot_cases():
    rng = onp.random.default_rng(1)
    A = rng.standard_normal((60, 4))
    v = rng.standard_normal(60)
    u = rng.standard_normal(4)
    Ad = da.from_array(A, chunks=(15, 4))
    vd = da.from_array(v, chunks=15)
    return {
        # (a, b, their NumPy values, layers made)
        "matrix times NumPy vector": (Ad, u, A, u, 1),
        "matrix times one-chunk Dask vector": (Ad, da.from_array(u), A, u, 1),
        "vector times matrix": (vd, Ad, v, A, 2),
        "vector times vector": (vd, vd * 2.0, v, v * 2.0, 2),
    }


@pytest.mark.parametrize("case", list(_dot_cases()))
def test_dot_of_a_tall_problem_is_one_blockwise_layer_and_a_sum(case):
    """numpy.dot of Dask operands chunked along the contracted rows: one blockwise layer (a
    block's product per chunk) and, for a contraction over the chunked axis, one task adding
    the partials; NumPy's value, dtype and shape, a Dask result. Through gradcy.numpy.dot
    and the plain function gradcy uses (gradcy._dask_ops.dot)."""
    from gradcy import _dask_ops

    a, b, an, bn, layers = _dot_cases()[case]
    ref = onp.dot(an, bn)
    for out in (_dask_ops.dot(a, b), np.dot(a, b)):
        assert isinstance(out, da.Array)
        assert len(_new_layers(out, a, b)) == layers, _new_layers(out, a, b)
        v = out.compute()
        assert v.shape == ref.shape and v.dtype == ref.dtype
        onp.testing.assert_allclose(v, ref, rtol=RTOL)


def test_dot_and_sum_other_cases_are_dasks_own():
    """Cases outside the tall problem's (the contracted axis of a matrix chunked, integer
    dtypes, chunks that differ) are Dask's own dot and sum: the same values."""
    from gradcy import _dask_ops

    rng = onp.random.default_rng(2)
    A = rng.standard_normal((12, 6))
    Ad = da.from_array(A, chunks=(4, 3))
    u = rng.standard_normal(6)
    v = rng.standard_normal(12)
    assert _dask_ops.dot(Ad, u) is None
    assert _dask_ops.dot(da.from_array(v, chunks=6), da.from_array(A, chunks=(4, 6))) is None
    assert _dask_ops.total(da.from_array(onp.arange(12), chunks=4)) is None
    onp.testing.assert_allclose(np.dot(Ad, u).compute(), A @ u, rtol=RTOL)
    assert np.sum(da.from_array(onp.arange(12), chunks=4)).compute() == 66


@pytest.mark.parametrize("chunks", [(15, 4), (10, 2)])
def test_sum_is_one_blockwise_layer_and_a_sum(chunks):
    """numpy.sum (every axis) of a floating Dask array: each chunk's sum, then theirs -- two
    layers; NumPy's value and dtype."""
    rng = onp.random.default_rng(3)
    for dtype in (onp.float64, onp.float32):
        A = rng.standard_normal((60, 4)).astype(dtype)
        Ad = da.from_array(A, chunks=chunks)
        out = np.sum(Ad)
        assert isinstance(out, da.Array) and len(_new_layers(out, Ad)) == 2
        v = out.compute()
        assert v.dtype == onp.sum(A).dtype and v.shape == ()
        onp.testing.assert_allclose(v, onp.sum(A), rtol=1e-5 if dtype == onp.float32 else RTOL)


_UNARY = {
    "log1p": (np.log1p, lambda x: onp.abs(x) + 0.5),
    "exp": (np.exp, lambda x: x),
    "tanh": (np.tanh, lambda x: x),
    "sin": (np.sin, lambda x: x),
    "sqrt": (np.sqrt, lambda x: onp.abs(x) + 0.5),
    "negative": (np.negative, lambda x: x),
}


@pytest.mark.parametrize("name", list(_UNARY))
def test_an_elementwise_rule_on_dask_is_one_layer(name):
    """The VJP of an elementwise function of a Dask array is one blockwise layer (the rule on
    each chunk, NumPy's operations: NumPy's gradient), not a layer per operation of the rule
    (log1p's g / (x + 1.0) was two); the layer reads only what the rule reads (log1p's and
    sin's rules read x, not the output: the output's layer is not in the gradient's graph;
    exp's, tanh's and sqrt's read the output)."""
    from gradcy import grad as grad_

    f, domain = _UNARY[name]
    x = domain(onp.linspace(-1.5, 1.3, 40))
    xd = da.from_array(x, chunks=10)
    c = da.from_array(onp.cos(onp.arange(40.0)), chunks=10)

    def loss(x, c):
        return np.sum(f(x) * c)

    gd = grad_(loss)(xd, c)
    assert isinstance(gd, da.Array) and gd.chunks == xd.chunks
    # one layer (fuse_chunks) running, on each chunk: the seed's broadcast (sum's rule),
    # multiply's rule for x (g * c), f's rule
    assert _new_layers(gd, xd, c) == [gd.name]
    made = sorted(_parts(gd, gd.name))
    expected = ["_broadcast_block", "vjp-elementwise", "vjp-elementwise"]
    if name in ("exp", "tanh", "sqrt"):
        expected.append(name)  # (f's output, which its rule reads)
    assert made == sorted(expected), made
    onp.testing.assert_allclose(gd.compute(), grad_(loss)(x, c.compute()), rtol=RTOL)


def test_elementwise_rules_with_other_chunks_or_shapes_are_dasks_operators():
    """An elementwise rule whose Dask operands differ in chunks or broadcast is Dask's own
    operators: NumPy's gradient all the same."""
    from gradcy import grad as grad_

    x = onp.linspace(0.1, 2.0, 24)
    y = onp.cos(onp.arange(24.0))
    xd, yd = da.from_array(x, chunks=6), da.from_array(y, chunks=8)
    row = onp.linspace(1.0, 2.0, 6).reshape(1, 6)

    def f(x, y):
        return np.sum(np.log(x) * y / (x + 1.0))

    def g(x, row):
        return np.sum(np.exp(x.reshape(4, 6) - row) * row)

    onp.testing.assert_allclose(grad_(f)(xd, yd).compute(), grad_(f)(x, y), rtol=RTOL)
    onp.testing.assert_allclose(grad_(g)(xd, row).compute(), grad_(g)(x, row), rtol=RTOL)


def test_the_logistic_gradient_graph_layers():
    """The logistic gradient's graph (NumPy w, Dask data in 4 chunks): the layers it makes
    besides X's and y's, exactly: X @ w as one blockwise product (numpy.dot's), -z and
    exp(-z), the seed's broadcast (sum's rule), the rules of log1p, exp and negative as one
    layer each, y times the dot's cotangent, the two sums of z's cotangent, and X.T's product
    with it as a blockwise layer and one task adding the partials: 12 (18 with Dask's matmul,
    a layer per operation of each rule and Dask's tensordot with its reduction), one fewer
    than dask-glm's gradient, and no more tasks once optimised (one per chunk and the sum)."""
    import warnings

    from gradcy.backends import graph_size, recording_computes

    w, X, y, Xn, yn = _data(4)
    with recording_computes() as computes:
        g = grad(loss)(w, X, y)
    out = computes[0][0]
    # two layers: the blockwise one (fuse_chunks: one task per chunk running the rest) and
    # the sum of its partials
    assert sorted(n.rsplit("-", 1)[0] for n in _new_layers(out, X, y)) == [
        "block_partial",
        "dot-block_partial",
    ]
    kinds = sorted(_parts(out, out.name.split("-", 1)[1]) + ["dot-block_partial"])
    assert kinds == sorted(
        ["block_dot", "negative", "exp", "_broadcast_block"]
        + ["vjp-elementwise"] * 3
        + ["multiply", "add", "add", "block_partial", "dot-block_partial"]
    ), kinds
    assert graph_size(computes[0][0], data=(X, y))["optimized_tasks"] == 5
    onp.testing.assert_allclose(g, grad(loss)(w, Xn, yn), rtol=RTOL)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", FutureWarning)
            from dask_glm.families import Logistic
    except ImportError:
        return
    assert len(kinds) < graph_size(Logistic.pointwise_gradient(w, X, y), data=(X, y))["layers"]


def test_chunkwise_rules_run_on_a_cluster(dask_client):
    """The logistic gradient and Hessian-vector product computed on the two-process cluster:
    a task of a chunkwise rule names the rule by reference (its index among the rules
    gradcy.numpy wraps, checked by fingerprint in the worker), so it pickles without
    cloudpickle; NumPy's values."""
    import pickle

    from gradcy import hessian_vector_product
    from gradcy.backends import recording_computes

    w, X, y, Xn, yn = _data(4)
    with recording_computes() as computes:
        g = grad(loss)(w, X, y)
    (opt,) = dask.optimize(computes[0][0])
    for task in dict(opt.__dask_graph__()).values():
        pickle.dumps(task)  # (a lambda's code in a task would need cloudpickle)
    onp.testing.assert_allclose(g, grad(loss)(w, Xn, yn), rtol=RTOL)
    onp.testing.assert_allclose(
        dask_client.compute(computes[0][0]).result(), grad(loss)(w, Xn, yn), rtol=RTOL
    )
    v = onp.cos(onp.arange(w.size))
    hv = hessian_vector_product(loss)(da.from_array(w), X, y, da.from_array(v))
    onp.testing.assert_allclose(
        dask_client.compute(hv).result(),
        hessian_vector_product(loss)(w, Xn, yn, v),
        rtol=RTOL,
    )


def _arrays_built(fn):
    """fn()'s result and the names (without token) of the Dask arrays built while it ran."""
    made = []
    new = da.Array.__new__

    def counting(cls, graph, name, *args, **kwargs):
        made.append(name.rsplit("-", 1)[0])
        return new(cls, graph, name, *args, **kwargs)

    da.Array.__new__ = counting
    try:
        out = fn()
    finally:
        da.Array.__new__ = new
    return out, made


def test_hessian_vector_product_builds_no_tangent_of_the_loss_value():
    """Forward over reverse on Dask data: the tangent of the loss value (a sum and a dot
    product of the tangent of X @ w, which the gradient discards) is never built; the
    tangent of X @ w is one layer (a product per chunk, not two transposes around it); 38
    Dask arrays built by the pass (49 before both) and the product's blockwise layers merged
    into one (fuse_chunks: X @ w's tangent, read by several steps, is in the task of its
    chunk, not a task of its own); 9 tasks and 6 layers in the graph (73 and 22 before the
    merge; dask-glm's Hessian 54 and 15), 7 tasks after dask.optimize (11 before; dask-glm's
    10), and the product equals NumPy's."""
    from gradcy import hessian_vector_product
    from gradcy.backends import graph_size

    w, X, y, Xn, yn = _data(4)
    v = onp.cos(onp.arange(w.size))
    wd, vd = da.from_array(w), da.from_array(v)
    hessian_vector_product(loss)(wd, X, y, vd)  # (imports and caches)
    out, made = _arrays_built(lambda: hessian_vector_product(loss)(wd, X, y, vd))
    assert made.count("sum-aggregate") == 0, made  # the tangent of sum(...)
    # dot(y, z) forward and the two products of the backward pass (gradient, its tangent)
    assert made.count("dot-block_partial") == 3, made
    assert made.count("transpose") == 0, made
    assert len(made) == 38 + 1, made  # (+ the merged one)
    size = graph_size(out, data=(X, y))
    assert (size["tasks"], size["layers"], size["optimized_tasks"]) == (9, 6, 7), size
    ref = hessian_vector_product(loss)(w, Xn, yn, v)
    onp.testing.assert_allclose(out.compute(), ref, rtol=RTOL)


def test_a_batch_reduced_to_numbers_on_dask_is_built_when_read():
    """A batch of tangents on Dask data summed, or dotted with a vector, to one number per
    tangent is built only when read (negations, sums, products with numbers of such batches
    too), with NumPy's values and dtype."""
    from gradcy._batched import BatchedTangent

    rng = onp.random.default_rng(1)
    t, y = rng.standard_normal((3, 40)), rng.standard_normal(40)
    td, yd = da.from_array(t, chunks=(3, 10)), da.from_array(y, chunks=10)

    def combined():
        s, d = np.sum(BatchedTangent(td)), np.dot(yd, BatchedTangent(td))
        return s, d, 2.0 * s - d / 4.0 + (-d)

    (s, d, c), made = _arrays_built(combined)
    assert made == [], made
    assert s.shape == () and c.shape == () and c.dtype == onp.float64 and c.batch_size == 3
    _, made = _arrays_built(lambda: c.data)
    assert made, made  # built now
    onp.testing.assert_allclose(s.data.compute(), t.sum(axis=1), rtol=RTOL)
    onp.testing.assert_allclose(d.data.compute(), t @ y, rtol=RTOL)
    onp.testing.assert_allclose(c.data.compute(), 2.0 * t.sum(axis=1) - 1.25 * (t @ y), rtol=RTOL)


@pytest.mark.parametrize(
    "blocks, split_every, tree", [(10, 4, [3, 1]), (125, 4, [32, 8, 2, 1]), (4, 4, [1])]
)
def test_the_partials_of_a_tall_dot_and_sum_add_as_a_tree(blocks, split_every, tree):
    """The partial products (sums) of the chunks are added as Dask's own reductions add
    theirs, in a tree whose tasks add at most dask.config's split_every (not one task adding
    all of them, which the scheduler runs only after the last chunk); NumPy's values."""
    rng = onp.random.default_rng(4)
    A, v = rng.standard_normal((blocks * 3, 2)), rng.standard_normal(blocks * 3)
    Ad, vd = da.from_array(A, chunks=(3, 2)), da.from_array(v, chunks=3)
    with dask.config.set(split_every=split_every):
        for out, ref in ((np.dot(vd, Ad), v @ A), (np.sum(Ad), A.sum())):
            (layer,) = [
                layer
                for name, layer in out.__dask_graph__().layers.items()
                if name.startswith(("dot-", "sum-"))
            ]
            levels = {}
            for key in layer:
                levels[key[0]] = levels.get(key[0], 0) + 1
            assert sorted(levels.values(), reverse=True) == tree, levels
            onp.testing.assert_allclose(out.compute(), ref, rtol=RTOL)


def test_layer_names_follow_what_determines_the_layer():
    """gradcy names its blockwise layers itself (not Dask's tokenizing of the function and
    every operand): the same inputs give the same name, and a different function, constant
    operand, Dask operand or NumPy operand a different one (else two results would share
    keys)."""
    from gradcy import _dask_ops

    rng = onp.random.default_rng(5)
    A = rng.standard_normal((12, 3))
    Ad = da.from_array(A, chunks=(4, 3))
    Bd = da.from_array(A + 1.0, chunks=(4, 3))
    u, u2 = rng.standard_normal(3), rng.standard_normal(3)
    same = [_dask_ops.elementwise(onp.multiply, Ad, 2.0).name for _ in range(2)]
    assert same[0] == same[1]
    names = {
        same[0],
        _dask_ops.elementwise(onp.multiply, Ad, 3.0).name,
        _dask_ops.elementwise(onp.add, Ad, 2.0).name,
        _dask_ops.elementwise(onp.multiply, Bd, 2.0).name,
        _dask_ops.dot(Ad, u).name,
        _dask_ops.dot(Ad, u2).name,
        _dask_ops.dot(Bd, u).name,
    }
    assert len(names) == 7, names
    assert _dask_ops.dot(Ad, u).name == _dask_ops.dot(Ad, u.copy()).name
    onp.testing.assert_allclose(_dask_ops.dot(Ad, u2).compute(), A @ u2, rtol=RTOL)


def test_a_value_several_layers_read_is_merged_into_their_chunks_task_once():
    """fuse_chunks merges a blockwise layer that several merged layers read (Dask's fusion
    leaves it a task per chunk of its own) into their layer, computing it once per chunk; a
    layer wanted as an output stays a layer of its own; NumPy's values."""
    from gradcy._dask_ops import elementwise, fuse_chunks

    calls = []

    def twice(x):
        calls.append(x.shape)
        return x * 2.0

    xn = onp.linspace(-1.0, 1.0, 40)
    x = da.from_array(xn, chunks=10)
    s = elementwise(twice, x)
    out = elementwise(onp.add, elementwise(onp.exp, s), elementwise(onp.negative, s))
    (f,) = fuse_chunks(out)
    assert _new_layers(f, x) == [f.name]
    assert sorted(_parts(f, f.name)) == ["add", "exp", "negative", "twice"]
    del calls[:]
    with dask.config.set(scheduler="sync"):
        got = f.compute()
    assert calls == [(10,)] * 4  # once per chunk
    onp.testing.assert_array_equal(got, onp.exp(2.0 * xn) - 2.0 * xn)

    f, fs = fuse_chunks(out, s)  # s wanted too: its own layer, read by out's
    assert sorted(_parts(f, f.name)) == ["add", "exp", "negative"]
    assert _parts(fs, fs.name) == ["twice"]
    with dask.config.set(scheduler="sync"):
        got, got_s = dask.compute(f, fs)
    onp.testing.assert_array_equal(got, onp.exp(2.0 * xn) - 2.0 * xn)
    onp.testing.assert_array_equal(got_s, 2.0 * xn)

    # a value a contraction reads too (X @ w's blockwise product) is not merged: the merge
    # would name its axes twice and compute it twice per chunk
    from gradcy._dask_ops import dot

    An, u = onp.arange(80.0).reshape(40, 2) / 80.0, onp.array([1.0, -1.0])
    T = elementwise(twice, da.from_array(An, chunks=(10, 2)))
    (r,) = fuse_chunks(dot(elementwise(onp.exp, dot(T, u)), T))
    del calls[:]
    with dask.config.set(scheduler="sync"):
        got = r.compute()
    assert calls == [(10, 2)] * 4
    onp.testing.assert_allclose(got, onp.exp(2.0 * An @ u) @ (2.0 * An), rtol=RTOL)


def _into_steps(out):
    """The steps of out's merged layer that write into a temporary of the chunk's (as
    (ufunc name, position)), sorted."""
    from gradcy._dask_ops import _Into

    task = out.__dask_graph__().layers[out.name].task
    return sorted(
        (t.func.ufunc.__name__, t.func.pos) for t in task.args[0].values() if type(t.func) is _Into
    )


def test_merged_steps_write_only_into_temporaries_of_their_own():
    """In a merged layer a ufunc step writes its result into an operand (no new array) only
    when that operand is a temporary made in the task, which that step alone reads: never a
    chunk of the task's inputs (x's chunks here are views of x's NumPy array, which stays as it
    was), nor a temporary another step reads; NumPy's values."""
    from gradcy._dask_ops import elementwise, fuse_chunks

    xn = onp.linspace(-1.0, 1.0, 40)
    keep = xn.copy()
    x = da.from_array(xn, chunks=10)
    neg = elementwise(onp.negative, x)  # reads x: not written
    out = elementwise(onp.add, elementwise(onp.exp, neg), elementwise(onp.multiply, x, 2.0))
    (f,) = fuse_chunks(out)
    # exp writes into -x (its own temporary), add into exp's result; not into x, 2x kept (one)
    assert _into_steps(f) == [("add", 0), ("exp", 0)]
    with dask.config.set(scheduler="sync"):
        got = f.compute()
    onp.testing.assert_array_equal(got, onp.exp(-xn) + 2.0 * xn)
    onp.testing.assert_array_equal(xn, keep)

    s = elementwise(onp.negative, x)
    (f,) = fuse_chunks(elementwise(onp.add, elementwise(onp.exp, s), s))
    assert _into_steps(f) == [("add", 0)]  # -x read twice: exp does not write into it
    with dask.config.set(scheduler="sync"):
        got = f.compute()
    onp.testing.assert_array_equal(got, onp.exp(-xn) - xn)
    onp.testing.assert_array_equal(xn, keep)


def test_a_long_elementwise_chain_merges_in_bounded_runs(monkeypatch):
    # Dask's rewrite_blockwise costs about the cube of a merge's size: a 100-step chain merged
    # whole took 200 s to build; merges stop at _dask_ops._MAX_MERGED layers each, and the
    # gradient is the same however the chain is cut
    from gradcy import _dask_ops

    def chain(x):
        for _ in range(12):
            x = np.sin(x) * 1.0001 + 0.01 * x
        return np.sum(x)

    x = onp.linspace(-1.0, 1.0, 40)
    want = grad(chain)(x)
    sizes = {}
    for cap in (4, 1000):
        monkeypatch.setattr(_dask_ops, "_MAX_MERGED", cap)
        g = grad(chain)(da.from_array(x, chunks=10))
        sizes[cap] = len(g.__dask_graph__().layers)
        onp.testing.assert_allclose(g.compute(scheduler="sync"), want, rtol=RTOL)
    assert sizes[1000] <= 3 < sizes[4]
