"""Writes into arrays (issue: region-precise in-place updates with O(slot) backward)."""

import numpy as onp
import pytest

import gradcy.numpy as np
from gradcy import _core, grad, hessian, jacobian, make_jvp, make_vjp, memory
from gradcy.test_util import check_grads

COVERED = {"gradcy.numpy.at_set", "gradcy.numpy.at_add", "gradcy.numpy.setitem"}

B, D = 2, 3


def _zero_live():
    s = memory.stats()
    return (s["live_tapes"], s["live_nodes"], s["saved_bytes"], s["cotangent_bytes"]) == (
        0,
        0,
        0,
        0,
    )


def cell(prefix, W):
    """Attention over the whole prefix: its matmuls save the prefix view."""
    q = np.tanh(prefix[:, -1] @ W)
    scores = np.einsum("bsd,bd->bs", prefix, q)
    w = np.exp(scores - np.max(scores, axis=1, keepdims=True))
    w = w / np.sum(w, axis=1, keepdims=True)
    return np.tanh(np.einsum("bs,bsd->bd", w, prefix) @ W)


def loss_inplace(W, x, S):
    memory = np.zeros((B, S + 1, D))
    memory[:, 0] = x
    for i in range(S):
        out = cell(memory[:, : i + 1], W)
        memory[:, i + 1] = out
    return np.sum(memory[:, -1]) - np.sum(np.mean(memory, axis=1))


def loss_concat(W, x, S):
    memory = np.expand_dims(x, 1)
    for i in range(S):
        out = cell(memory[:, : i + 1], W)
        memory = np.concatenate([memory, np.expand_dims(out, 1)], axis=1)
    return np.sum(memory[:, -1]) - np.sum(np.mean(memory, axis=1))


@pytest.fixture
def data():
    rs = onp.random.RandomState(0)
    return rs.randn(D, D) * 0.5, rs.randn(B, D)


def test_memory_network_matches_concatenation_and_numerics(data):
    W, x = data
    for argnum in (0, 1):
        g_inplace = grad(loss_inplace, argnum)(W, x, 6)
        g_concat = grad(loss_concat, argnum)(W, x, 6)
        onp.testing.assert_allclose(g_inplace, g_concat, rtol=1e-12, atol=1e-14)
    check_grads(lambda W, x: loss_inplace(W, x, 4), (0, 1), modes=("rev",), order=1)(W, x)
    assert _zero_live()


def test_memory_network_forward_mode_and_second_order(data):
    W, x = data
    v = onp.random.RandomState(3).randn(D, D)
    _, jv = make_jvp(lambda W: loss_inplace(W, x, 3))(W)(v)
    onp.testing.assert_allclose(jv, onp.sum(grad(loss_concat)(W, x, 3) * v), rtol=1e-10)
    h1 = hessian(lambda x: loss_inplace(W, x, 2))(x)
    h2 = hessian(lambda x: loss_concat(W, x, 2))(x)
    onp.testing.assert_allclose(h1, h2, rtol=1e-9, atol=1e-12)
    assert _zero_live()


def test_user_input_is_never_written(data):
    W, x = data
    x_before = x.copy()

    def f(x):
        x[0, 1] = 5.0  # copy on the first write: the caller's array stays
        x[1] = x[0] * 2.0
        return np.sum(x * x)

    g = grad(f)(x)
    onp.testing.assert_array_equal(x, x_before)
    # d/dx of sum(y^2) with y[0,1] = 5, y[1] = 2*y[0]
    expected = onp.zeros_like(x)
    y0 = x[0].copy()
    y0[1] = 5.0
    expected[0] = 2 * y0 + 2 * (2 * y0) * 2
    expected[0, 1] = 0.0
    onp.testing.assert_allclose(g, expected)
    assert _zero_live()


def test_overwriting_a_saved_region_preserves_it():
    """Read a slice, overwrite part of it, differentiate: the VJP of the read's consumer sees
    the values it had when it was recorded."""
    x = onp.array([0.5, -1.0, 2.0, 0.3])

    def f(x):
        buf = np.zeros(4)
        buf[:] = x
        head = buf[:3]
        y = np.sum(np.sin(head) * head)  # sin and multiply save the view `head`
        del head
        buf[1] = 10.0 * x[3]  # overlaps the saved region
        return y + np.sum(buf**2)

    def ref(x):
        y = onp.sin(x[:3]) * x[:3]
        b = x.copy()
        b[1] = 10.0 * x[3]
        return onp.sum(y) + onp.sum(b**2)

    eps = 1e-6
    numeric = onp.array([(ref(x + eps * e) - ref(x - eps * e)) / (2 * eps) for e in onp.eye(4)])
    onp.testing.assert_allclose(grad(f)(x), numeric, rtol=1e-6)
    assert f(x) == pytest.approx(ref(x))
    assert _zero_live()


def test_preserved_copy_is_counted_and_disjoint_writes_copy_nothing():
    x = onp.ones(100)
    counts = {}

    def f(x):
        buf = np.zeros((2, 100))
        buf[0] = x
        y = np.sum(np.sin(buf[0]))  # sin saves the view buf[0]
        v = x * 3.0
        before = memory.stats()["saved_bytes"]
        buf[1] = v  # disjoint: no copy
        counts["disjoint"] = memory.stats()["saved_bytes"] - before
        buf[0, :10] = 0.0  # overlaps buf[0]: a copy of that view
        counts["overlap"] = memory.stats()["saved_bytes"] - before
        return y + np.sum(buf)

    grad(f)(x)
    assert counts["disjoint"] == 0
    # the saved record now holds its own copy of the 100-element view (+800 bytes) instead of
    # a view into the 200-element buffer, which it no longer pins (-1600 bytes)
    assert counts["overlap"] == 100 * 8 - 200 * 8


def test_a_view_sees_a_later_write_and_writes_through_views_reach_the_buffer():
    x = onp.array([1.0, 2.0, 3.0])

    def overwritten(x, m=np):
        buf = m.zeros(3)
        view = buf[:2]
        buf[1] = x[0] * x[1]
        return m.sum(view * view)  # NumPy: view sees the write, and so does grad

    assert overwritten(x) == overwritten(x, onp) == 4.0
    onp.testing.assert_allclose(grad(overwritten)(x), [8.0, 4.0, 0.0])

    def through_view(x, m=np):
        buf = m.zeros((2, 3))
        buf[0][1] = x[0] * 3.0  # as in NumPy: buf[0, 1] changes
        return m.sum(buf * buf)

    onp.testing.assert_allclose(grad(through_view)(x), [18.0, 0.0, 0.0])
    assert through_view(x) == through_view(x, onp) == 9.0
    assert _zero_live()


def test_plain_numpy_buffer_gives_a_clear_error():
    def f(x):
        buf = onp.zeros(3)  # plain numpy: cannot hold a traced value
        buf[0] = x[0]
        return np.sum(buf)

    # NumPy reports scalar assignment failures as its own ValueError, chained to gradcy's
    with pytest.raises(ValueError) as excinfo:
        grad(f)(onp.ones(3))
    err = excinfo.value
    chain = [err, err.__cause__, err.__context__]
    assert any(
        isinstance(e, _core.TracerArrayConversionError) and "gradcy.numpy" in str(e) for e in chain
    )

    def g(x):
        buf = onp.zeros((2, 3))
        buf[0] = x
        return np.sum(buf)

    with pytest.raises(_core.TracerArrayConversionError, match="gradcy.numpy"):
        grad(g)(onp.ones(3))
    assert _zero_live()


def test_index_kinds_broadcasting_and_constants():
    x = onp.array([0.3, -0.2, 0.7])

    def f(x):
        buf = np.ones((3, 4))
        buf[0] = 2.0  # constant, broadcast
        buf[1, 1:3] = x[:2]  # slice
        buf[[2, 2], [0, 3]] = x[2]  # advanced index, broadcast traced scalar
        buf[:, -1] = buf[:, -1] * x[0]  # read-modify-write
        buf[buf[:, 0] > 1.5, 2] = 7.0  # boolean mask (constant)
        return np.sum(np.sin(buf) * buf)

    check_grads(f, modes=("fwd", "rev"), order=2)(x)
    assert _zero_live()


def test_augmented_assignment():
    x = onp.array([0.5, 1.5])

    def f(x):
        buf = np.zeros((3, 2))
        buf[0] += x  # getitem, add, write back
        buf[1] -= x * 2.0
        buf *= 3.0  # in place on the whole buffer
        buf[2] += np.sum(buf[0] * buf[1])
        y = x * 1.0
        y += x  # a value that is not a buffer: a new value
        return np.sum(buf**2) + np.sum(y)

    check_grads(f, modes=("fwd", "rev"), order=2)(x)
    assert _zero_live()


def test_functional_at_updates():
    x = onp.array([0.1, 0.2, 0.3, 0.4])
    v = onp.array([1.5, -0.5])
    idx = onp.array([1, 1])
    check_grads(lambda x, v: np.at(x)[1:3].set(v) ** 2, (0, 1), modes=("fwd", "rev"), order=2)(x, v)
    check_grads(lambda x, v: np.at(x)[idx].add(v) ** 2, (0, 1), modes=("fwd", "rev"), order=2)(x, v)

    def f(x, v):
        return np.sum(np.at(x)[:2].multiply(v) + np.at(x)[2:].set(v * v))

    check_grads(f, (0, 1), modes=("fwd", "rev"), order=2)(x, v)
    out = np.at(x)[idx].add(v)
    onp.testing.assert_allclose(out, [0.1, 1.2, 0.3, 0.4])
    onp.testing.assert_array_equal(x, [0.1, 0.2, 0.3, 0.4])  # unchanged


def test_write_saves_only_the_index():
    t = _core.Tape()
    from gradcy.numpy import inplace

    b = t.new_leaf(onp.ones(5))
    _core.push_active(t)
    try:
        buf = np.zeros(5)
        buf[1:3] = b[:2]
    finally:
        _core.pop_active(t)
    ans, args, kwargs = t.node_info(buf._node)["saved"]
    assert t.node_info(buf._node)["primitive"] == "gradcy.numpy.setitem"
    assert type(ans) is _core.ArrayMeta and type(args[0]) is _core.ArrayMeta
    assert args[1] == slice(1, 3) and type(args[2]) is _core.ArrayMeta
    assert inplace.region((slice(1, 3),), (5,)) == ((1, 3),)
    del buf, b
    t.release()
    assert _zero_live()


def test_backward_of_slot_writes_holds_one_buffer_sized_cotangent(data):
    """O(slot) backward: the buffer's cotangent is one array that flows through every write;
    no write allocates another buffer-sized array."""
    W, x = data
    S = 40
    events = []
    prof = memory.profile(lambda W: loss_inplace(W, x, S))(W)
    buffer_bytes = B * (S + 1) * D * 8
    bwd = [e for e in prof.events if e[1] == "backward"]
    events = [e[5] for e in bwd]
    assert max(events) <= buffer_bytes + 64 * B * D * 8, (max(events), buffer_bytes)
    onp.testing.assert_allclose(prof.gradient, grad(loss_concat)(W, x, S), rtol=1e-10)


def cell_last(prefix, W):
    """A cell that reads only the newest slot."""
    return np.tanh(prefix[:, -1] @ W)


def test_saved_memory_is_linear_in_steps_in_place_and_quadratic_concatenated(data):
    """Concatenation makes a new memory per step and each saved view pins its whole base:
    O(S^2). In place, the saved views share one buffer: O(S)."""
    W, x = data

    def inplace(W, S):
        memory = np.zeros((B, S + 1, D))
        memory[:, 0] = x
        for i in range(S):
            memory[:, i + 1] = cell_last(memory[:, : i + 1], W)
        return np.sum(np.mean(memory, axis=1))

    def concat(W, S):
        memory = np.expand_dims(x, 1)
        for i in range(S):
            out = cell_last(memory[:, : i + 1], W)
            memory = np.concatenate([memory, np.expand_dims(out, 1)], axis=1)
        return np.sum(np.mean(memory, axis=1))

    peaks = {}
    for name, fn in (("inplace", inplace), ("concat", concat)):
        for S in (40, 80):
            memory.reset_peak()
            grad(fn)(W, S)
            peaks[name, S] = memory.stats()["peak_saved_bytes"]
    onp.testing.assert_allclose(grad(inplace)(W, 7), grad(concat)(W, 7), rtol=1e-12)
    assert peaks["inplace", 80] < 2.2 * peaks["inplace", 40]
    assert peaks["concat", 80] > 3.2 * peaks["concat", 40]
    assert peaks["inplace", 80] < peaks["concat", 80] / 10
    assert _zero_live()


def test_written_output_is_saved_from_the_slot_and_preserved_when_overwritten():
    N = 1000
    x = onp.linspace(-1.0, 1.0, N)
    seen = {}

    def f(x, overwrite):
        buf = np.zeros((2, N))
        y = np.tanh(x)  # tanh saves its output ...
        buf[0] = y  # ... which now lives in the buffer's slot
        del y
        seen["saved"] = memory.stats()["saved_bytes"]
        if overwrite:
            buf[0] = buf[0] * 2.0  # overwrites the slot tanh's VJP reads from
        return np.sum(buf)

    g = grad(f)(x, False)
    assert seen["saved"] == 2 * N * 8  # the buffer, counted once; no separate copy of y
    onp.testing.assert_allclose(g, 1 - onp.tanh(x) ** 2, rtol=1e-12)
    g2 = grad(f)(x, True)
    onp.testing.assert_allclose(g2, 2 * (1 - onp.tanh(x) ** 2), rtol=1e-12)
    assert _zero_live()


def test_views_table_stays_small_in_a_long_loop():
    seen = {}

    def f(x):
        buf = np.zeros((500, 3))
        tape = _core.active_tape()
        for i in range(499):
            buf[i + 1] = np.sin(buf[i]) + x  # a view per step, dropped at once
        seen["views"] = len(tape.owned_info(buf._value).views)
        return np.sum(buf)

    g = grad(f)(onp.ones(3))
    assert g.shape == (3,) and seen["views"] < 200
    assert _zero_live()


def test_basic_index_writes_are_recorded_by_the_core(monkeypatch):
    from gradcy.numpy import inplace

    def no_python_region(idx, shape):
        raise AssertionError("the Python write path ran for a basic index")

    monkeypatch.setattr(inplace, "region", no_python_region)
    x32 = onp.linspace(0.1, 1.0, 4).astype(onp.float32)

    def f(x):
        buf = np.zeros((3, 4))  # float64 buffer
        buf[0] = np.exp(x)  # float32 value: cast on store, not shared
        buf[1:, :] = np.tanh(x)  # broadcast over two rows: not shared
        buf[2, 1:3] = np.sin(x[:2]) * 2.0
        return np.sum(buf * buf)

    g = grad(f)(x32)
    assert g.dtype == onp.float32
    x = x32.astype(float)
    t, e, s = onp.tanh(x), onp.exp(x), onp.sin(x[:2]) * 2.0
    ref = 2 * e * e + 2 * t * (1 - t**2)  # row 1 whole, row 2 at columns 0 and 3
    ref[[0, 3]] += 2 * t[[0, 3]] * (1 - t[[0, 3]] ** 2)
    ref[:2] += 2 * s * 2.0 * onp.cos(x[:2])
    onp.testing.assert_allclose(g, ref, rtol=1e-5)
    monkeypatch.undo()

    # a scalar slot and an advanced index take the Python path and agree with NumPy semantics
    def h(x):
        buf = np.zeros(5)
        buf[2] = x[0] * 3.0
        buf[[0, 4]] = x[1:3]
        return np.sum(buf * onp.arange(1.0, 6.0))

    onp.testing.assert_allclose(grad(h)(onp.ones(3)), [9.0, 1.0, 5.0])
    assert _zero_live()


def _random_program(seed):
    """A random sequence of slot writes (tanh/exp/sin of reads of earlier slices, some slots
    written twice, some reads of slots written later) on a (4, 6) buffer, in place and in the
    functional form (.at[].set, a copy per write) on the same input."""
    rng = onp.random.RandomState(seed)
    steps = []
    for _ in range(8):
        row = int(rng.randint(0, 4))
        lo = int(rng.randint(0, 5))
        hi = int(rng.randint(lo + 1, 7))
        src = (
            (slice(None), slice(int(rng.randint(0, 3)), None))
            if rng.rand() < 0.5
            else (int(rng.randint(0, 4)),)
        )
        op = ("tanh", "exp", "sin")[int(rng.randint(0, 3))]
        steps.append((row, lo, hi, src, op))

    def run(x, inplace):
        buf = np.zeros((4, 6))
        if inplace:
            buf[0] = x
        else:
            buf = np.at(buf)[0].set(x)
        keep = []
        for row, lo, hi, src, op in steps:
            piece = buf[src]
            keep.append(np.sum(piece * piece))  # a read saved across writes
            val = getattr(np, op)(np.mean(piece) * 0.3 + x[lo:hi])
            if inplace:
                buf[row, lo:hi] = val
            else:
                buf = np.at(buf)[row, lo:hi].set(val)
        return np.sum(buf**2) + sum(keep[::2])

    return run


@pytest.mark.parametrize("seed", range(25))
def test_random_write_programs_match_the_functional_form(seed):
    run = _random_program(seed)
    x = onp.linspace(-0.5, 0.6, 6)
    g_in = grad(lambda x: run(x, True))(x)
    g_fn = grad(lambda x: run(x, False))(x)
    onp.testing.assert_allclose(g_in, g_fn, rtol=1e-12, atol=1e-12)
    eps = 1e-6
    num = onp.array([(run(x + e, False) - run(x - e, False)) / (2 * eps) for e in onp.eye(6) * eps])
    onp.testing.assert_allclose(g_in, num, rtol=1e-6, atol=1e-8)
    assert _zero_live()


@pytest.mark.parametrize("shift", ["basic", "advanced"])
def test_assigning_an_overlapping_view_of_the_same_buffer(shift):
    # buf[1:] = buf[:-1] reads what it overwrites: NumPy copies the overlap, and so does the
    # gradient; the view used as the value sees the write afterwards, as in NumPy
    w = onp.arange(1.0, 6.0)

    def f(x, plain=False):
        buf = (onp if plain else np).zeros(5)
        buf[0] = x[0]
        buf[1] = x[1]
        for _ in range(3):
            if shift == "basic":
                buf[1:] = buf[:-1] * 1.0 if plain else buf[:-1]
            else:
                buf[[1, 2, 3, 4]] = buf[:-1] * 1.0 if plain else buf[:-1]
            buf[0] = buf[0] * 2.0
        return (buf * w).sum()

    x = onp.array([0.3, -0.7])
    from gradcy.numpy.inplace import _FANCY_WRITES_COPY

    if shift == "advanced" and not _FANCY_WRITES_COPY:  # NumPy 1.x: order-dependent
        with pytest.raises(NotImplementedError, match="depends on its write order"):
            grad(f)(x)
        return
    g = grad(f)(x)
    eps = 1e-6
    num = [(f(x + e, True) - f(x - e, True)) / (2 * eps) for e in onp.eye(2) * eps]
    onp.testing.assert_allclose(g, num, rtol=1e-7)

    def uses_overwritten(x, m=np):
        buf = m.zeros(5)
        buf[0] = x[0]
        v = buf[:-1]
        buf[1:] = v
        return m.sum(v * v)  # v's memory changed under it: [x0, x0, 0, 0]

    assert uses_overwritten(x) == uses_overwritten(x, onp) == 2 * x[0] ** 2
    onp.testing.assert_allclose(grad(uses_overwritten)(x), [4 * x[0], 0.0])
    assert _zero_live()


def test_repeated_sweeps_and_second_order_with_slice_reads():
    # jacobian sweeps the same tape once per output element; the cotangents of the slices
    # buf[:i + 1] go into the buffer's slot each time, and must start from zero each time
    def f(x, m=np):
        buf = m.zeros((3, 4))
        buf[0] = m.tanh(x)
        for i in range(2):
            buf[i + 1] = m.sin(buf[i]) * buf[: i + 1].sum(axis=0)
        return buf[1:, 1:3] * 2.0 + m.sum(buf[:, :2])

    x = onp.linspace(0.1, 0.9, 4)
    eps = 1e-6
    num = onp.stack(
        [(f(x + e, onp) - f(x - e, onp)) / (2 * eps) for e in onp.eye(4) * eps], axis=-1
    )
    onp.testing.assert_allclose(jacobian(f)(x), num, rtol=1e-6, atol=1e-8)
    vjp, _ = make_vjp(f)(x)
    g1, g2 = vjp(onp.ones((2, 2))), vjp(onp.ones((2, 2)))
    vjp.release()
    onp.testing.assert_array_equal(g1, g2)
    check_grads(lambda x: np.sum(f(x)), modes=["rev"], order=2)(x)
    assert _zero_live()
