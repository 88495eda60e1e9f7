"""Saved sets decided per call (gradcy/numpy/saved_sets.py) and the saved-bytes audit
(gradcy.memory.saved_audit): what a call keeps depends on which arguments are traced, and the
gradients stay exact (central differences, float64, to second order)."""

import os
import sys

import numpy as onp
import pytest

import gradcy.memory
import gradcy.numpy as np
from gradcy import grad
from gradcy._core import ArrayMeta, Tape
from gradcy.numpy.saved_sets import Positions, extremum_masks, unpack_positions
from gradcy.test_util import check_grads

from counters import assert_counters_zero as assert_released
from op_records.reductions import names
from vjp_harness import fusion

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "benchmarks"))
import reference_gradients as ref

rng = onp.random.RandomState(13)
FUSED = "gradcy.numpy.softmax (fused exp, sum, divide)"  # gradcy.numpy.fusion


def record_of(fun, traced, *args):
    """(ans, args) saved by the node of fun's output, with args[k] traced for k in `traced`."""
    t = Tape()
    try:
        vals = [t.new_leaf(a) if k in traced else a for k, a in enumerate(args)]
        y = fun(*vals)
        ans, sargs, _ = t.node_info(y._node)["saved"]
        return ans, sargs
    finally:
        t.release()


def kept(record):
    """Which of the output and the arguments the record holds as arrays."""
    ans, args = record
    return ("ans",) * isinstance(ans, onp.ndarray) + tuple(
        i for i, a in enumerate(args) if isinstance(a, onp.ndarray)
    )


A, B = rng.randn(3, 4), rng.randn(4, 5)
X, Y = rng.randn(3, 4), rng.rand(3, 4) + 0.5


@pytest.mark.parametrize(
    "fun,args,traced,expect",
    [
        (np.multiply, (X, Y), (0,), (1,)),
        (np.multiply, (X, Y), (1,), (0,)),
        (np.multiply, (X, Y), (0, 1), (0, 1)),
        (np.divide, (X, Y), (0,), (1,)),
        (np.divide, (X, Y), (1,), (0, 1)),
        (np.divide, (X, Y), (0, 1), (0, 1)),
        (np.dot, (A, B), (0,), (1,)),
        (np.dot, (A, B), (1,), (0,)),
        (np.matmul, (A, B), (0,), (1,)),
        (np.matmul, (A, B), (0, 1), (0, 1)),
        (lambda a, b: np.einsum("ij,jk->ik", a, b), (A, B), (0,), (2,)),
        (lambda a, b: np.einsum("ij,jk->ik", a, b), (A, B), (1,), (1,)),
        (lambda a, b: np.einsum("ij,jk->ik", a, b), (A, B), (0, 1), (1, 2)),
        (lambda a, b: np.einsum(a, [0, 1], b, [1, 2], [0, 2]), (A, B), (1,), (0,)),
    ],
)
def test_saved_per_call(fun, args, traced, expect):
    assert kept(record_of(fun, traced, *args)) == expect


def test_saved_set_query():
    assert np.divide.saved_set((0,)) == (1,)
    assert np.divide.saved_set((1,)) == (0, 1)
    assert np.multiply.saved_set((0, 1)) == (0, 1)
    assert np.einsum.saved_set((1,)) == (0,) + tuple(range(2, 64))
    assert np.exp.saved_set((0,)) == ("ans",)


@pytest.mark.parametrize("argnum", [0, 1])
@pytest.mark.parametrize(
    "fun",
    [
        np.multiply,
        np.divide,
        lambda a, b: np.dot(a, b.T),
        lambda a, b: np.matmul(a, b.T),
        lambda a, b: np.einsum("ij,kj->ik", a, b),
        lambda a, b: np.einsum("ij,ij->i", a, b),
        lambda a, b: np.einsum(a, [0, 1], b, [2, 1]),
    ],
)
def test_one_traced_argument_gradients(fun, argnum):
    args = [X, Y]
    f = (lambda a: fun(a, args[1])) if argnum == 0 else (lambda b: fun(args[0], b))
    check_grads(f, modes=["rev"], order=2)(args[argnum])


# the extrema keep a bit mask of positions in the output's place (amax and amin are max and
# min: test_reductions.py::test_amax_amin_are_max_min)
@pytest.mark.parametrize("name", names("reductions", saved=("ans",)))
@pytest.mark.parametrize("kw", [{}, {"axis": 1}, {"axis": 0, "keepdims": True}, {"axis": (0, 2)}])
def test_extrema_keep_positions(name, kw):
    x = rng.randn(3, 5, 4)
    f = getattr(np, name)
    ans, args = record_of(lambda x: f(x, **kw), (0,), x)
    assert type(args[0]) is ArrayMeta and ans.dtype == onp.uint8
    assert ans.nbytes == (x.size + 7) // 8
    ref_ans = getattr(onp, name)(x, **kw)
    axis = kw.get("axis")
    expect = x == (
        ref_ans if kw.get("keepdims") or axis is None else onp.expand_dims(ref_ans, axis)
    )
    assert onp.array_equal(unpack_positions(ans, x.shape), expect)
    check_grads(lambda x: f(x, **kw), modes=["rev"], order=2)(x)


def test_extrema_ties_and_nans():
    x = onp.array([[1.0, 3.0, 3.0, 0.0], [2.0, onp.nan, 5.0, 5.0]])
    g = grad(lambda x: np.sum(np.max(x, axis=1) * onp.array([1.0, 2.0])))(x)
    assert onp.array_equal(g, [[0, 0.5, 0.5, 0], [0, 2.0, 0, 0]])  # nan is the maximum
    g = grad(lambda x: np.sum(np.max(x, axis=1, keepdims=True)))(x)  # (the fast path)
    assert onp.array_equal(g, [[0, 0.5, 0.5, 0], [0, 1.0, 0, 0]])
    g = grad(lambda x: np.sum(np.nanmax(x, axis=1)))(x)
    assert onp.array_equal(g, [[0, 0.5, 0.5, 0], [0, 0, 0.5, 0.5]])
    x = rng.randn(4, 6)
    g = grad(lambda x: np.sum(np.max(x, axis=1, where=x < 1.0, initial=-10.0)))(x)
    xm = onp.where(x < 1.0, x, -onp.inf)
    assert onp.array_equal(g, (xm == xm.max(axis=1, keepdims=True)) * 1.0)


def test_extremum_of_an_outer_trace_keeps_everything():
    # nested differentiation: the inner record holds the outer trace's value, unchanged
    x = rng.randn(3, 4)
    h = grad(lambda x: np.sum(grad(lambda y: np.sum(np.max(y * x, axis=1) ** 2))(x)))(x)
    hx = grad(
        lambda x: np.sum(
            2
            * np.max(x * x, axis=1, keepdims=True)
            * (x * x == np.max(x * x, axis=1, keepdims=True))
            * x
        )
    )(x)
    assert onp.allclose(h, hx)


# ---------------------------------------------------------------------------- the audit
def test_audit_exact_bytes_sin_chain():
    x = rng.randn(100)

    def f(x):
        for _ in range(5):
            x = np.sin(x) * 1.0001 + 0.01 * x
        return np.sum(x)

    a = gradcy.memory.saved_audit(f)(x)
    # the hand-written gradient keeps each step's input: 5 arrays of 800 bytes; so does gradcy
    assert a.total == 5 * 800
    assert a.by_op["gradcy.numpy.sin"] == [5, 5 * 800]
    assert a.by_op["gradcy.numpy.multiply"] == [10, 0]
    assert onp.allclose(a.gradient, grad(f)(x))
    assert_released()


def test_audit_exact_bytes_softmax_read():
    P, q = rng.randn(4, 6, 8), rng.randn(8)

    def f(P):
        s = np.einsum("bsd,d->bs", P, q)
        w = np.exp(s - np.max(s, axis=1, keepdims=True))
        w = w / np.sum(w, axis=1, keepdims=True)
        return np.sum(np.einsum("bs,bsd->bd", w, P) ** 2)

    bs, bsd, bd = 4 * 6 * 8, 4 * 6 * 8 * 8, 4 * 8 * 8
    with fusion(False):  # each primitive's own saved set
        a = gradcy.memory.saved_audit(f)(P)
    assert a.by_op["gradcy.numpy.max"] == [1, 3]  # 24 bits
    assert a.by_op["gradcy.numpy.exp"] == [1, bs]  # its output
    assert a.by_op["gradcy.numpy.divide"] == [1, 4 * 8]  # the sums (its x: exp's output)
    assert a.by_op["gradcy.numpy.einsum"] == [2, 8 * 8 + bs + bsd]  # q; w and P
    assert a.by_op["gradcy.numpy.power"] == [1, bd]
    assert a.total == 3 + bs + 32 + 64 + bs + bsd + bd
    # fused (the default): the softmax keeps w, which the second einsum reads too; max, exp
    # and divide keep nothing
    a = gradcy.memory.saved_audit(f)(P)
    assert a.by_op[FUSED] == [1, bs]
    assert a.by_op["gradcy.numpy.einsum"] == [2, 8 * 8 + bsd]  # q; P (w is held once)
    assert a.by_op["gradcy.numpy.power"] == [1, bd]
    assert not {"gradcy.numpy.max", "gradcy.numpy.exp", "gradcy.numpy.divide"} & set(a.by_op)
    assert a.total == 64 + bs + bsd + bd


def test_audit_attention_network_against_hand_written():
    W, h0, q, b = ref.attention_inputs(B=2, D=8)
    S = 6
    f = ref.attention_inplace(np)
    B, D = h0.shape
    mem = B * (S + 1) * D * 8
    ws = sum(B * (i + 1) * 8 for i in range(S))  # the attention weights of every step
    reads = S * B * D * 8
    hand = mem + ws + reads
    # fused (the default): gradcy keeps what the hand-written gradient keeps, and the inputs W
    # and q (the caller's arrays, which the hand-written gradient reads too)
    a = gradcy.memory.saved_audit(f)(W, h0, q, b, S)
    assert onp.allclose(a.gradient, ref.hand_attention(W, h0, q, b, S), rtol=1e-10, atol=1e-12)
    assert a.total == hand + W.nbytes + q.nbytes
    # unfused: also exp's outputs (as many bytes as the weights), the bit masks of max and the
    # softmax sums
    with fusion(False):
        a = gradcy.memory.saved_audit(f)(W, h0, q, b, S)
    assert onp.allclose(a.gradient, ref.hand_attention(W, h0, q, b, S), rtol=1e-10, atol=1e-12)
    masks = sum((B * (i + 1) + 7) // 8 for i in range(S))
    assert a.total == hand + ws + masks + S * B * 8 + W.nbytes + q.nbytes
    assert_released()


# ---------------------------------------------------------------------------- recompute
def _softmax_net(P):
    s = np.einsum("bsd,d->bs", P, Q8)
    w = np.exp(s - np.max(s, axis=1, keepdims=True))
    w = w / np.sum(w, axis=1, keepdims=True)
    return np.sum(np.tanh(np.einsum("bs,bsd->bd", w, P)) ** 2)


Q8 = rng.randn(8)


def _overwritten(x):
    buf = np.zeros((3, 4))
    buf[:] = x  # a buffer the tape owns
    s = np.sum(buf, axis=1, keepdims=True)
    w = buf / s  # divide keeps buf and s: w can be made again
    out = np.sum(w * x)  # multiply would keep w: it keeps a stand-in
    buf[0] = 7.0  # overwrites what divide saved (a copy is kept)
    return out + np.sum(buf * buf)


@pytest.mark.parametrize(
    "fun,shape",
    [
        (_softmax_net, (4, 6, 8)),
        (_overwritten, (3, 4)),
        (lambda x: np.sum(np.sin(x / (x * x + 1.0)) * np.cos(x)), (5,)),
        (lambda x: np.sum(np.exp(x * x) * x), (2, 3)),
    ],
)
def test_recompute_same_gradient(fun, shape):
    x = rng.rand(*shape) + 0.5
    plain = grad(fun)(x)
    again = grad(fun, recompute="elementwise")(x)
    assert onp.array_equal(plain, again)  # the same arithmetic, bit for bit
    assert onp.array_equal(grad(fun, recompute="none")(x), plain)
    check_grads(fun, modes=["rev"], order=1)(x)
    assert_released()


def test_recompute_keeps_less_and_counts_back_to_zero():
    W, h0, q, b = ref.attention_inputs(B=2, D=8)
    S = 6
    f = ref.attention_inplace(np)

    def peak(**kw):
        gradcy.memory.reset_peak()
        g = grad(f, **kw)(W, h0, q, b, S)
        return g, gradcy.memory.stats()["peak_saved_bytes"]

    with fusion(False):
        (g0, peak_plain), (g1, peak_rc) = peak(), peak(recompute="elementwise")
    assert onp.array_equal(g0, g1)
    # the softmax weights (2 x (i + 1) float64 per step) are made again, not kept
    assert peak_plain - peak_rc == sum(2 * (i + 1) * 8 for i in range(S))
    # fused, the softmax keeps the weights once (and exp's outputs, max's bit masks and the
    # sums not at all): nothing is left to recompute
    (g2, peak_fused), (g3, peak_fused_rc) = peak(), peak(recompute="elementwise")
    assert onp.array_equal(g2, g3)
    onp.testing.assert_allclose(g2, g0, rtol=1e-12, atol=1e-14)
    masks = sum((2 * (i + 1) + 7) // 8 for i in range(S))
    assert peak_fused == peak_fused_rc == peak_rc - masks - S * 2 * 8
    assert_released()


def test_recompute_second_order_and_bad_policy():
    x = rng.rand(4) + 0.5
    f = lambda x: np.sum(np.exp(x / np.sum(x)) * x)
    h = grad(lambda x: np.sum(grad(f, recompute="elementwise")(x) * x))(x)
    h0 = grad(lambda x: np.sum(grad(f)(x) * x))(x)
    assert onp.allclose(h, h0, rtol=1e-12, atol=1e-14)
    with pytest.raises(ValueError, match="recompute must be"):
        grad(f, recompute="everything")


@pytest.mark.parametrize("name", ["maximum", "minimum", "fmax", "fmin"])
def test_elementwise_extrema_keep_three_bit_masks(name):
    f = getattr(np, name)
    x, y = rng.randn(3, 4), rng.randn(4)
    y[1] = x[0, 1]  # one tie
    ans, args = record_of(f, (0,), x, y)
    assert type(ans) is Positions and ans.nbytes == (3 * 12 + 7) // 8
    assert type(args[0]) is ArrayMeta and type(args[1]) is ArrayMeta
    out = getattr(onp, name)(x, y)
    assert onp.array_equal(extremum_masks(ans), [x == out, y == out + 0 * x, x == y])
    gx, gy = grad(lambda x, y: np.sum(f(x, y) * onp.arange(12.0).reshape(3, 4)), argnum=(0, 1))(
        x, y
    )
    w = onp.arange(12.0).reshape(3, 4)
    assert onp.array_equal(gx, w * (x == out) / (1.0 + (x == y)))
    assert onp.array_equal(gy, (w * (y == out) / (1.0 + (x == y))).sum(axis=0))
    check_grads(lambda x: f(x, 0.1), modes=["rev"], order=2)(x + 0.05)  # (no ties)
    check_grads(lambda x, y: f(x, y), argnum=(0, 1), modes=["rev"], order=2)(x, y + 0.01)


@pytest.mark.parametrize("kw", [{}, {"axis": 0}, {"axis": None}])
def test_sort_partition_keep_the_permutation(kw):
    x = rng.randn(4, 5)
    ans, args = record_of(lambda x: np.sort(x, **kw), (0,), x)
    assert type(args[0]) is ArrayMeta and ans.dtype == onp.int16 and ans.nbytes == x.size * 2
    check_grads(lambda x: np.sort(x, **kw), modes=["rev"], order=2)(x)
    ans, args = record_of(lambda x: np.partition(x, 2, **kw), (0,), x)
    assert type(args[0]) is ArrayMeta and ans.dtype == onp.int16
    check_grads(lambda x: np.partition(x, 2, **kw), modes=["rev"], order=2)(x)
    wts = onp.arange(20.0) if kw.get("axis", -1) is None else onp.arange(20.0).reshape(4, 5)
    g = grad(lambda x: np.sum(np.sort(x, **kw) * wts))(x)
    perm = onp.argsort(x, axis=kw.get("axis", -1), kind="stable")
    expect = onp.zeros(x.size) if kw.get("axis", -1) is None else onp.zeros_like(x)
    if kw.get("axis", -1) is None:
        expect[perm] = onp.arange(20.0)
        expect = expect.reshape(4, 5)
    else:
        onp.put_along_axis(expect, perm, onp.arange(20.0).reshape(4, 5), kw.get("axis", -1))
    assert onp.array_equal(g, expect)


@pytest.mark.parametrize("name", ["median", "nanmedian"])
@pytest.mark.parametrize("kw", [{}, {"axis": 1}, {"axis": 0, "keepdims": True}])
def test_median_keeps_two_bit_masks(name, kw):
    f = getattr(np, name)
    for shape in ((4, 5), (3, 6)):  # odd and even counts
        x = rng.randn(*shape)
        ans, args = record_of(lambda x: f(x, **kw), (0,), x)
        assert type(ans) is Positions and type(args[0]) is ArrayMeta
        assert ans.nbytes == (2 * x.size + 7) // 8
        check_grads(lambda x: f(x, **kw), modes=["rev"], order=2)(x)
    x = onp.array([[1.0, 2.0, 2.0, 5.0], [3.0, 1.0, 4.0, 1.0]], dtype=onp.float32)
    g = grad(lambda x: np.sum(f(x, axis=1)))(x)
    assert g.dtype == onp.float32
    assert onp.array_equal(g, [[0, 0.5, 0.5, 0], [0.5, 0.25, 0, 0.25]])  # (1 + 3) / 2


# ---------------------------------------------------------------------------- the benchmark
def test_attention_hand_gradient_matches_finite_differences_and_gradcy():
    W, h0, q, b = ref.attention_inputs(B=2, D=5)
    S = 4
    loss = ref.attention_inplace(onp)  # plain NumPy runs it as is
    assert ref.attention_concat(onp)(W, h0, q, b, S) == pytest.approx(loss(W, h0, q, b, S))
    hand = ref.hand_attention(W, h0, q, b, S)
    eps, fd = 1e-6, onp.zeros_like(W)
    for idx in onp.ndindex(*W.shape):
        E = onp.zeros_like(W)
        E[idx] = eps
        fd[idx] = (loss(W + E, h0, q, b, S) - loss(W - E, h0, q, b, S)) / (2 * eps)
    onp.testing.assert_allclose(hand, fd, rtol=1e-6, atol=1e-8)
    for make in (ref.attention_inplace, ref.attention_concat):
        onp.testing.assert_allclose(grad(make(np))(W, h0, q, b, S), hand, rtol=1e-10, atol=1e-12)


def test_peers_driver_runs_attention(capsys):
    import peers

    rc = peers.main(
        [
            "--workloads",
            "attention",
            "--S",
            "3",
            "--libs",
            "numpy,gradcy",
            "--repeats",
            "1",
            "--quick",
        ]
    )
    out = capsys.readouterr().out
    assert rc in (0, None)
    assert "attention: B=4, D=64, S=3" in out and "recompute='elementwise'" in out
    assert "GRADIENT DIFFERS" not in out
    assert "attention targets" in out and "S=3 recompute: time" in out


def test_rule_statement_declares_the_saved_set():
    """The save= of the statement that registers a rule is the one in force, in each of its
    forms (entries, per argument, a saver), and registering again replaces all of it: the
    saver and the recomputable flag included."""
    from gradcy.extend import defvjp_direct, primitive
    from gradcy._core import meta_of

    mul = primitive(onp.multiply, "test.mul")
    rules = (lambda g, ans, x, y: g * y, lambda g, ans, x, y: g * x)
    x, y = rng.randn(3), rng.randn(3)
    f = lambda x: np.sum(mul(x, y))

    defvjp_direct(mul, *rules, save={0: (1,), 1: (0,)}, recomputable=True)
    assert (mul.saved_set((0,)), mul.saved_set((1,))) == ((1,), (0,))
    assert mul.recomputable and mul.save_fn is None
    assert kept(record_of(mul, (0,), x, y)) == (1,)

    def saver(argnums, ans, args, kwargs):  # y only, as a 2-D copy the rule reads
        return meta_of(ans), (meta_of(args[0]), args[1].reshape(1, -1).copy())

    defvjp_direct(mul, lambda g, ans, x, y: g * y[0], None, save=saver)
    assert mul.save_fn is saver and not mul.recomputable
    ans, sargs = record_of(mul, (0,), x, y)
    assert type(ans) is ArrayMeta and type(sargs[0]) is ArrayMeta and sargs[1].shape == (1, 3)
    assert onp.array_equal(grad(f)(x), y)

    defvjp_direct(mul, *rules, save=(0, 1))
    assert mul.save_fn is None and not mul.recomputable
    assert kept(record_of(mul, (0,), x, y)) == (0, 1)
    assert onp.array_equal(grad(f)(x), y)
