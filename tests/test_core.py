"""Struct-level tests of the engine (gradcy/_core.pyx) through the private hooks of
gradcy._core_tests: arena growth and order, release, escaped values, cotangent accumulation,
dead-node release, the consuming sweep, and the lifetime of make_vjp's tape."""

import gc

import numpy as onp
import pytest

import gradcy
import gradcy.numpy as anp
from gradcy import _core, _tracing, grad, make_vjp
from gradcy import _core_tests as ct
from gradcy._core import EscapedValueError, Tape
from gradcy.extend import defvjp, primitive


# =============================================================================
# Helpers
# =============================================================================
def stats():
    gc.collect()
    return _core.stats()


def delta():
    """stats() minus the counters live when the test started."""
    s = stats()
    return {k: v - _BASELINE.get(k, 0) for k, v in s.items()}


from counters import _BASELINE, assert_counters_zero, leaf_slot, opened


# a trivial primitive for the C-level driver (its function is never called by the hooks)
trivial = primitive(lambda *args: 0.0, name="tests.trivial")


def _is_power_of_two_sequence(caps):
    return all(b == 2 * a for a, b in zip(caps, caps[1:]))


# =============================================================================
# Arena growth and order
# =============================================================================
def test_arena_growth_is_geometric_and_nodes_survive_reallocation():
    n = 10_000
    t, history, expected = ct.record_chain(trivial, n, fan=2)
    try:
        info = ct.arena(t)
        assert info["n_nodes"] == n + 1
        assert info["n_parents"] == 2 * n
        node_caps = []
        parent_caps = []
        for _, cn, cp in history:
            if not node_caps or node_caps[-1] != cn:
                node_caps.append(cn)
            if not parent_caps or parent_caps[-1] != cp:
                parent_caps.append(cp)
        # several reallocations, each one doubling
        assert len(node_caps) >= 8 and len(parent_caps) >= 8
        assert _is_power_of_two_sequence(node_caps), node_caps
        assert _is_power_of_two_sequence(parent_caps), parent_caps
        # no over-allocation beyond one doubling
        assert n + 1 <= info["cap_nodes"] < 2 * (n + 1)
        assert 2 * n <= info["cap_parents"] < 4 * n
        # the node capacity only changed when the arena was full
        for (_n_prev, cn_prev, _), (n_after, cn, _) in zip(history, history[1:]):
            if cn != cn_prev:
                assert n_after - 1 == cn_prev, (n_after, cn_prev, cn)
        # every node intact after all the reallocations
        for i in range(1, n + 1):
            s = ct.node_struct(t, i)
            assert s["parents"] == expected[i], i
            assert s["argnums"] == [0, 1]
            assert not s["prim_null"] and not s["saved_null"]
            assert ct.saved_object(t, i) == (None, (i,), None)
        assert ct.node_struct(t, 0)["leaf"]
        assert ct.topological_violations(t) == []
        assert [e for e, a in ct.consumer_counts(t)] == [a for e, a in ct.consumer_counts(t)]
    finally:
        t.release()
    info = ct.arena(t)
    assert info["nodes_null"] and info["parents_null"] and info["n_nodes"] == 0


def test_arena_growth_through_primitive_calls_and_backward_after_growth():
    n = 10_000
    t = opened(Tape())
    x0 = 0.7
    b = t.new_leaf(x0)
    caps = [t.capacity[0]]
    values = [x0]
    for _ in range(n):
        b = anp.sin(b)
        values.append(b._value)
        if t.capacity[0] != caps[-1]:
            caps.append(t.capacity[0])
    try:
        assert len(t) == n + 1
        assert _is_power_of_two_sequence(caps) and len(caps) >= 10, caps
        assert t.capacity[0] < 2 * (n + 1)
        assert ct.topological_violations(t) == []
        # the saved records still hold the exact argument objects after the reallocations
        for i in range(1, n + 1, 97):
            info = t.node_info(i)
            assert info["primitive"] == "gradcy.numpy.sin"
            assert info["parents"] == [i - 1]
            assert info["saved"][1][0] is values[i - 1]
        out = t.pin(b)
        (g,) = t.backward(out, 1.0, True, [0])
        expected = onp.prod(onp.cos(onp.array(values[:-1])))
        assert g == pytest.approx(expected, rel=1e-12)
    finally:
        del b
        t.release()


def test_arena_is_topological_for_a_random_dag_of_primitives():
    rs = onp.random.RandomState(0)
    t = opened(Tape())
    pool = [t.new_leaf(onp.array([0.5, 0.25])), t.new_leaf(onp.array([1.5, -0.5]))]
    expected = {}
    for _ in range(300):
        i, j = rs.randint(len(pool), size=2)
        op = [anp.add, anp.multiply, anp.subtract][rs.randint(3)]
        y = op(pool[i], pool[j])
        expected[y._node] = [pool[i]._node, pool[j]._node]
        pool.append(y)
    try:
        assert ct.topological_violations(t) == []
        for node, parents in expected.items():
            assert ct.node_struct(t, node)["parents"] == parents
        for e, a in ct.consumer_counts(t):
            assert e == a
    finally:
        del pool, y
        t.release()


def test_record_chain_is_topological_with_wide_fan():
    t, _, expected = ct.record_chain(trivial, 2000, fan=8, seed=7)
    try:
        assert ct.topological_violations(t) == []
        assert ct.arena(t)["n_parents"] == 8 * 2000
    finally:
        t.release()


# =============================================================================
# release()
# =============================================================================
def test_release_is_idempotent_and_counters_return_to_zero():
    x = onp.linspace(0.1, 1.0, 1000)
    t = opened(Tape())
    b = t.new_leaf(x)
    y = anp.tanh(b)
    z = anp.exp(y) * b
    s = delta()
    assert s["live_tapes"] == 1
    assert s["live_nodes"] == 4  # leaf, tanh, exp, multiply
    assert s["saved_bytes"] > 0
    t.release()
    assert t.released
    assert_counters_zero()
    t.release()
    t.release()
    assert_counters_zero()
    assert len(t) == 0
    assert ct.arena(t)["nodes_null"]
    # dropping the Boxes of a released tape changes nothing (no double release)
    del b, y, z
    assert_counters_zero()
    with pytest.raises(EscapedValueError):
        t.node_info(0)
    with pytest.raises(EscapedValueError):
        t.backward(0, 1.0)
    with pytest.raises(EscapedValueError):
        t.new_leaf(1.0)


def test_release_after_backward_and_with_pending_cotangents():
    t = opened(Tape())
    b = t.new_leaf(onp.ones(10))
    y = anp.sum(anp.sin(b))
    ct.accumulate(t, 1, onp.ones(10))  # a cotangent left in a slot
    assert delta()["cotangent_bytes"] == 80
    t.release()
    t.release()
    del b, y
    assert_counters_zero()


def test_dealloc_of_unreleased_tape_frees_everything():
    t = Tape()
    b = t.new_leaf(onp.ones(100))
    y = anp.exp(b)
    assert delta()["live_tapes"] == 1
    del t, b, y
    assert_counters_zero()


# =============================================================================
# Escaped values
# =============================================================================
def test_box_of_released_tape_raises_naming_the_primitive():
    t = opened(Tape())
    b = t.new_leaf(onp.array([1.0, 2.0]))
    t.release()
    with pytest.raises(EscapedValueError, match=r"gradcy\.numpy\.sin: argument 0"):
        anp.sin(b)
    with pytest.raises(EscapedValueError, match=r"gradcy\.numpy\.multiply: argument 1"):
        anp.multiply(2.0, b)
    with pytest.raises(EscapedValueError, match=r"gradcy\.numpy\.add"):
        b + 1.0
    assert issubclass(EscapedValueError, ValueError)
    del b


def test_box_escaping_grad_raises_when_used_later():
    stash = []

    def f(x):
        y = anp.sin(x)
        stash.append(y)
        return anp.sum(y)

    grad(f)(onp.array([0.1, 0.2]))
    assert_counters_zero()
    with pytest.raises(EscapedValueError, match=r"gradcy\.numpy\.exp"):
        anp.exp(stash[0])
    stash.clear()


# =============================================================================
# In-place accumulation: only into buffers the engine owns
# =============================================================================
def test_accumulate_never_mutates_a_user_array_a_view_or_a_readonly_array():
    with leaf_slot(4) as (t, i):
        user = onp.arange(4.0)
        user_copy = user.copy()
        ct.accumulate(t, i, user)
        assert ct.cotangent_id(t, i) == id(user)  # first arrival is stored as is
        ct.accumulate(t, i, onp.ones(4))
        onp.testing.assert_array_equal(user, user_copy)
        assert ct.cotangent_id(t, i) != id(user)
        onp.testing.assert_array_equal(ct.cotangent_object(t, i), user_copy + 1)
        ct.take_cotangent(t, i)

        base = onp.arange(8.0)
        base_copy = base.copy()
        view = base[::2]
        ct.accumulate(t, i, view)
        del view
        ct.accumulate(t, i, onp.ones(4))
        ct.accumulate(t, i, onp.ones(4))
        onp.testing.assert_array_equal(base, base_copy)
        onp.testing.assert_array_equal(ct.cotangent_object(t, i), base_copy[::2] + 2)
        ct.take_cotangent(t, i)

        ro = onp.arange(4.0)
        ro.flags.writeable = False
        ct.accumulate(t, i, ro)
        ct.accumulate(t, i, onp.ones(4))
        onp.testing.assert_array_equal(ro, onp.arange(4.0))
        ct.take_cotangent(t, i)

        # a broadcast (read-only, zero-stride) view whose refcount is only the slot's
        ct.accumulate(t, i, onp.broadcast_to(onp.float64(3.0), (4,)))
        ct.accumulate(t, i, onp.ones(4))
        onp.testing.assert_array_equal(ct.cotangent_object(t, i), onp.full(4, 4.0))
        ct.take_cotangent(t, i)


def test_accumulate_same_object_in_two_slots_is_not_mutated_through_either():
    # an identity-like VJP hands the same cotangent object to two parents
    t = opened(Tape())
    a = t.new_leaf(onp.zeros(3))
    b = t.new_leaf(onp.zeros(3))
    try:
        g = onp.array([1.0, 2.0, 3.0])
        ct.accumulate(t, a._node, g)
        ct.accumulate(t, b._node, g)
        del g  # only the two slots hold it now
        assert ct.cotangent_id(t, a._node) == ct.cotangent_id(t, b._node)
        ct.accumulate(t, a._node, onp.full(3, 10.0))
        onp.testing.assert_array_equal(ct.cotangent_object(t, b._node), [1.0, 2.0, 3.0])
        onp.testing.assert_array_equal(ct.cotangent_object(t, a._node), [11.0, 12.0, 13.0])
    finally:
        del a, b
        t.release()


def test_accumulate_reuses_an_engine_owned_buffer():
    with leaf_slot(5) as (t, i):
        ct.accumulate(t, i, onp.ones(5))  # a fresh array: the slot is its only owner
        assert ct.cotangent_refcount(t, i) == 1
        first = ct.cotangent_id(t, i)
        for k in range(2, 6):
            ct.accumulate(t, i, onp.full(5, float(k)))
            assert ct.cotangent_id(t, i) == first  # added in place
            assert ct.cotangent_refcount(t, i) == 1
        onp.testing.assert_array_equal(ct.cotangent_object(t, i), onp.full(5, 15.0))
        assert ct.node_struct(t, i)["cot_bytes"] == 40
        assert ct.counters(t)["cotangent_bytes"] == 40
        # a differently shaped or typed arrival is added out of place, correctly
        ct.accumulate(t, i, onp.float64(1.0))
        onp.testing.assert_array_equal(ct.cotangent_object(t, i), onp.full(5, 16.0))
        ct.accumulate(t, i, onp.ones(5, onp.float32))
        onp.testing.assert_array_equal(ct.cotangent_object(t, i), onp.full(5, 17.0))
        g = ct.take_cotangent(t, i)
        assert ct.node_struct(t, i)["cotangent_null"]
        assert ct.counters(t)["cotangent_bytes"] == 0
        del g


def test_grad_does_not_mutate_user_or_saved_arrays():
    c = onp.array([0.5, -1.25, 2.0])
    x = onp.array([1.0, 2.0, 3.0])
    c0, x0 = c.copy(), x.copy()

    def f(x):
        return anp.sum(x * c) + anp.sum(x * c) + anp.sum(c * x)

    g = grad(f)(x)
    onp.testing.assert_array_equal(g, 3 * c0)
    assert c.tobytes() == c0.tobytes() and x.tobytes() == x0.tobytes()
    g2 = grad(f)(x)
    onp.testing.assert_array_equal(g2, 3 * c0)
    assert c.tobytes() == c0.tobytes() and x.tobytes() == x0.tobytes()

    # the user's own cotangent of make_vjp, passed on unchanged by add's VJP to both parents
    vjp, _ = make_vjp(lambda x: anp.add(x * 1.0, x * 1.0) + x)(x)
    opened(vjp)
    v = onp.array([1.0, 10.0, 100.0])
    v0 = v.copy()
    r = vjp(v)
    onp.testing.assert_array_equal(r, 3 * v0)
    assert v.tobytes() == v0.tobytes()
    r = vjp(v)
    onp.testing.assert_array_equal(r, 3 * v0)
    assert v.tobytes() == v0.tobytes()
    vjp.release()


# an identity-like primitive whose VJP returns the incoming cotangent object to both arguments
pair_sum = primitive(lambda a, b: a + b, name="tests.pair_sum")
defvjp(pair_sum, lambda ans, a, b: lambda g: g, lambda ans, a, b: lambda g: g, save=())

# a primitive whose VJP returns its saved argument itself when the cotangent is 1
dot_c = primitive(lambda x, c: onp.dot(x, c), name="tests.dot_c")
defvjp(
    dot_c,
    lambda ans, x, c: lambda g: c if (onp.ndim(g) == 0 and g == 1.0) else g * c,
    None,
    save=(1,),
)


def test_identity_vjp_to_two_parents_keeps_every_array_intact():
    x = onp.array([1.0, 2.0, 3.0])
    x0 = x.copy()

    def f(x):
        a = x * 2.0
        return pair_sum(pair_sum(a, a), a)

    v = onp.array([1.0, -1.0, 0.5])
    v0 = v.copy()
    vjp, _ = make_vjp(f)(x)
    opened(vjp)
    r = vjp(v)
    onp.testing.assert_array_equal(r, 6 * v0)
    onp.testing.assert_array_equal(v, v0)
    onp.testing.assert_array_equal(x, x0)
    vjp.release()

    # leaves reached directly by the same object twice
    g = make_vjp(lambda x: pair_sum(x, x))(x)[0](v)
    onp.testing.assert_array_equal(g, 2 * v0)
    onp.testing.assert_array_equal(v, v0)


def test_saved_array_returned_as_cotangent_is_not_mutated():
    c = onp.array([3.0, 5.0, 7.0])
    c0 = c.copy()
    x = onp.array([1.0, 1.0, 1.0])

    def f(x):
        return dot_c(x, c) + dot_c(x, c) + dot_c(x * 1.0, c)

    g = grad(f)(x)
    onp.testing.assert_array_equal(g, 3 * c0)
    assert c.tobytes() == c0.tobytes()

    # the same with an array only the saved records hold (created inside f)
    seen = []

    def h(x):
        k = onp.array([3.0, 5.0, 7.0])
        seen.append(k)
        return dot_c(x, k) + dot_c(x, k) + dot_c(x, k)

    g = grad(h)(x)
    onp.testing.assert_array_equal(g, 3 * c0)
    onp.testing.assert_array_equal(seen[0], c0)


def test_repeated_fresh_cotangents_accumulate_in_one_buffer():
    ids = []
    fresh = primitive(lambda x: x * 1.0, name="tests.fresh")

    def fresh_vjp(ans, x):
        def vjp(g):
            out = g * 2.0  # a new array the engine alone will own
            ids.append(id(out))
            return out

        return vjp

    defvjp(fresh, fresh_vjp, save=())

    def f(x):
        return anp.sum(fresh(x)) + anp.sum(fresh(x)) + anp.sum(fresh(x)) + anp.sum(fresh(x))

    x = onp.linspace(0.0, 1.0, 7)
    g = grad(f)(x)
    onp.testing.assert_array_equal(g, onp.full(7, 8.0))
    assert len(ids) == 4
    # the first cotangent to arrive became the leaf's slot and the others were added into it
    assert id(g) == ids[0]


# =============================================================================
# Dead nodes and unreachable nodes
# =============================================================================
def test_dropped_value_releases_its_node_immediately_with_cascade():
    x = onp.linspace(-1.0, 1.0, 1000)
    t = opened(Tape())
    b = t.new_leaf(x)
    try:
        s0 = stats()
        y = anp.tanh(b)
        s1 = stats()
        assert s1["live_nodes"] == s0["live_nodes"] + 1
        assert s1["saved_bytes"] == s0["saved_bytes"] + x.nbytes
        i = y._node
        del y
        s2 = stats()
        assert s2["live_nodes"] == s0["live_nodes"]
        assert s2["saved_bytes"] == s0["saved_bytes"]
        st = ct.node_struct(t, i)
        assert st["released"] and st["saved_null"] and st["prim_null"]
        assert not st["box_alive"]

        # cascade: tanh consumed only by exp; dropping exp's value releases both
        z = anp.exp(anp.tanh(b))
        s3 = stats()
        assert s3["live_nodes"] == s0["live_nodes"] + 2
        assert s3["saved_bytes"] == s0["saved_bytes"] + 2 * x.nbytes
        j = z._node
        (p,) = ct.node_struct(t, j)["parents"]
        assert not ct.node_struct(t, p)["released"]  # consumed: kept while exp lives
        del z
        s4 = stats()
        assert s4["live_nodes"] == s0["live_nodes"]
        assert s4["saved_bytes"] == s0["saved_bytes"]
        assert ct.node_struct(t, j)["released"] and ct.node_struct(t, p)["released"]
        assert ct.node_struct(t, p)["saved_null"]

        # a parent whose Box is alive survives its consumer's death
        a = anp.tanh(b)
        z = anp.exp(a)
        ia, iz = a._node, z._node
        del z
        assert ct.node_struct(t, iz)["released"]
        assert not ct.node_struct(t, ia)["released"]
        assert ct.node_struct(t, ia)["nconsumers"] == 0
        del a
        assert ct.node_struct(t, ia)["released"]
        assert stats()["live_nodes"] == s0["live_nodes"]
        # the leaf itself is never killed
        assert not ct.node_struct(t, b._node)["released"]
        for e, a_ in ct.consumer_counts(t):
            assert e == a_
    finally:
        del b
        t.release()


def test_dead_values_inside_grad_release_during_the_forward_pass():
    n = 20_000
    x = onp.linspace(-1.0, 1.0, n)
    marks = {}

    def f(x):
        a = anp.tanh(x)  # saves its output: n * 8 bytes
        marks["with_a"] = stats()
        del a
        marks["without_a"] = stats()
        b = anp.exp(anp.tanh(x))  # two nodes saving their outputs
        marks["with_b"] = stats()
        del b
        marks["without_b"] = stats()
        return anp.sum(anp.sin(x))

    g = grad(f)(x)
    onp.testing.assert_allclose(g, onp.cos(x))
    nb = x.nbytes
    assert marks["with_a"]["live_nodes"] - marks["without_a"]["live_nodes"] == 1
    assert marks["with_a"]["saved_bytes"] - marks["without_a"]["saved_bytes"] == nb
    assert marks["with_b"]["live_nodes"] - marks["without_b"]["live_nodes"] == 2
    assert marks["with_b"]["saved_bytes"] - marks["without_b"]["saved_bytes"] == 2 * nb


def _sweep_events(vjp, tape, want):
    """Run vjp(1.0) (checked against `want`) with an observer on its tape: (the events, the
    nodes released before the first backward step)."""
    events = []
    tape.observer = lambda *e: events.append(e)
    onp.testing.assert_allclose(vjp(1.0), want)
    first_backward = next(k for k, e in enumerate(events) if e[0] == "backward")
    return events, {e[1] for e in events[:first_backward] if e[0] == "release"}


def test_unreachable_nodes_release_before_the_sweep():
    x = onp.linspace(0.1, 1.0, 500)
    keep = []

    def f(x):
        keep.append(anp.exp(x))  # alive at backward time, but not reachable
        keep.append(anp.tanh(anp.cos(x)))
        return anp.sum(anp.sin(x))

    vjp, _ = make_vjp(f)(x)
    opened(vjp)
    tape = vjp._tape
    dead = {keep[0]._node, keep[1]._node, ct.node_struct(tape, keep[1]._node)["parents"][0]}
    events, released_first = _sweep_events(vjp, tape, onp.cos(x))
    assert dead <= released_first, (dead, events)
    for i in dead:
        assert ct.node_struct(tape, i)["saved_null"]
    # nothing on the path to the output was released (make_vjp's tape is reusable)
    assert not any(e[0] == "release" and e[1] not in dead for e in events)
    vjp.release()
    keep.clear()


def test_nodes_recorded_after_the_output_release_before_the_sweep():
    # they cannot reach the output either (parents always have smaller indices)
    x = onp.linspace(0.1, 1.0, 500)
    keep = []

    def f(x):
        out = anp.sum(anp.sin(x))
        keep.append(anp.exp(x))  # recorded after the output, kept alive
        return out

    vjp, _ = make_vjp(f)(x)
    opened(vjp)
    tape = vjp._tape
    late = keep[0]._node
    assert late > vjp._out
    events, released_first = _sweep_events(vjp, tape, onp.cos(x))
    assert late in released_first, events
    assert ct.node_struct(tape, late)["saved_null"]
    vjp.release()
    keep.clear()


def test_grad_and_aux_values_computed_after_the_output_do_not_stay_saved(monkeypatch):
    x = onp.linspace(0.1, 1.0, 1000)
    events = []

    def observed_tape():
        t = _core.Tape()
        t.observer = lambda *e: events.append(e)
        return t

    monkeypatch.setattr(_tracing, "Tape", observed_tape)

    def f(x):
        out = anp.sum(anp.sin(x))
        return out, anp.exp(x)  # aux: recorded after the output

    g, aux = gradcy.grad_and_aux(f)(x)
    monkeypatch.undo()
    onp.testing.assert_allclose(g, onp.cos(x))
    onp.testing.assert_allclose(aux, onp.exp(x))
    exp_node = next(e[1] for e in events if e[0] == "forward" and e[2] == "gradcy.numpy.exp")
    last_forward = max(k for k, e in enumerate(events) if e[0] == "forward")
    sweep = [e for e in events[last_forward + 1 :] if e[0] == "release"]
    # the exp node's record (x.nbytes of saved output) goes first, before any VJP runs
    assert sweep and sweep[0][1] == exp_node, sweep
    assert sweep[0][3] == x.nbytes  # only sin's saved x remains


def test_vjp_raising_mid_sweep_leaves_no_cotangents_or_records():
    boom = primitive(lambda x: x * 1.0, name="tests.boom")

    def boom_vjp(ans, x):
        def vjp(g):
            raise ZeroDivisionError("vjp failed")

        return vjp

    defvjp(boom, boom_vjp, save=())
    x = onp.ones(50)

    def f(x):
        return anp.sum(anp.sin(boom(anp.exp(x))) * 2.0)

    with pytest.raises(ZeroDivisionError):
        grad(f)(x)
    assert_counters_zero()

    vjp, _ = make_vjp(f)(x)
    opened(vjp)
    for _ in range(2):
        with pytest.raises(ZeroDivisionError):
            vjp(1.0)
        s = delta()
        assert s["cotangent_bytes"] == 0 and s["live_tapes"] == 1 and s["saved_bytes"] > 0
        t = vjp._tape
        assert all(ct.node_struct(t, i)["cotangent_null"] for i in range(len(t)))
        assert not t.sweeping
    vjp.release()


def test_raising_observer_leaks_no_reference():
    import sys

    prim = anp.tanh
    before = sys.getrefcount(prim)
    for _ in range(20):
        t = Tape()
        b = t.new_leaf(onp.ones(3))
        y = anp.tanh(b)

        def obs(*e):
            if e[0] == "release":
                raise RuntimeError("observer failed")

        t.observer = obs
        with pytest.raises(RuntimeError, match="observer failed"):
            t.backward(t.pin(y), onp.ones(3), True, [0])
        del y, b
        t.release()
        del t
    gc.collect()
    assert sys.getrefcount(prim) == before


# =============================================================================
# The consuming sweep of grad
# =============================================================================
def test_grad_sweep_releases_saved_bytes_monotonically():
    rs = onp.random.RandomState(1)
    W = rs.randn(40, 40) / 8.0
    x0 = rs.randn(40)
    events = []

    def f(x):
        for _ in range(20):
            x = anp.tanh(anp.dot(W, x))
        return anp.sum(x)

    # grad's consuming sweep (what _core.grad_fast runs), with an observer on its tape
    vjp, _ = _tracing._trace(
        f, (x0,), {}, 0, "grad", consume=True, observer=lambda *e: events.append(e)
    )
    g = vjp(1.0)
    assert vjp._tape is None  # consumed: the tape went with the sweep
    onp.testing.assert_allclose(g, grad(f)(x0), rtol=1e-12)

    # reference gradient by the chain rule
    xs = [x0]
    for _ in range(20):
        xs.append(onp.tanh(W @ xs[-1]))
    ref = onp.ones(40)
    for k in range(20, 0, -1):
        ref = W.T @ (ref * (1 - xs[k] ** 2))
    onp.testing.assert_allclose(g, ref, rtol=1e-10)

    last_forward = max(k for k, e in enumerate(events) if e[0] == "forward")
    forward_peak = events[last_forward][3]
    sweep = [e for e in events[last_forward + 1 :] if e[0] == "release"]
    assert len(sweep) >= 41  # every dot/tanh/sum node released in the sweep
    saved = [e[3] for e in sweep]
    assert all(b <= a for a, b in zip(saved, saved[1:])), saved
    assert saved[0] <= forward_peak
    # saved bytes fall during the sweep, not only at the end
    assert saved[len(saved) // 2] < forward_peak / 2 + W.nbytes
    assert saved[-1] == 0
    # nodes are released in reverse arena order, each right after its VJP
    idx = [e[1] for e in sweep]
    assert idx == sorted(idx, reverse=True)


# =============================================================================
# make_vjp's tape
# =============================================================================
def test_make_vjp_reusable_until_released():
    x = onp.array([0.3, -0.7, 1.1])

    def f(x):
        return anp.tanh(x) * anp.exp(x)

    vjp, ans = make_vjp(f)(x)
    opened(vjp)
    onp.testing.assert_allclose(ans, onp.tanh(x) * onp.exp(x))
    v = onp.array([1.0, 2.0, -1.0])
    g1 = vjp(v)
    s = delta()
    assert s["live_tapes"] == 1 and s["saved_bytes"] > 0
    assert s["cotangent_bytes"] == 0  # cotangents are gone after each sweep
    g2 = vjp(v)
    g3 = vjp(2 * v)
    assert g1.tobytes() == g2.tobytes()
    onp.testing.assert_allclose(g3, 2 * g1)
    d = (1 - onp.tanh(x) ** 2) * onp.exp(x) + onp.tanh(x) * onp.exp(x)
    onp.testing.assert_allclose(g1, v * d)
    # the output node is pinned and every saved record still held
    t = vjp._tape
    out = vjp._out
    assert ct.node_struct(t, out)["pinned"]
    assert all(not ct.node_struct(t, i)["saved_null"] for i in range(1, len(t)))
    vjp.release()
    vjp.release()
    assert_counters_zero()
    with pytest.raises(EscapedValueError):
        vjp(v)


def test_make_vjp_tape_freed_when_vjp_dropped():
    vjp, _ = make_vjp(lambda x: anp.sin(x) * x)(onp.ones(100))
    vjp(onp.ones(100))
    assert delta()["live_tapes"] == 1
    del vjp
    assert_counters_zero()


def test_gradcy_exports_errors():
    assert gradcy.EscapedValueError is EscapedValueError
    assert gradcy.MissingVJPError is _core.MissingVJPError


# =============================================================================
# Cotangents of basic-index views go straight into the parent's slot
# =============================================================================
def _vjp_runs(f, x):
    """(gradient, names of the primitives whose VJPs ran) of a non-consuming sweep."""
    events = []
    vjp, _ = _tracing._trace(
        f, (x,), {}, 0, "make_vjp", consume=False, observer=lambda *e: events.append(e)
    )
    try:
        g = vjp(1.0)
    finally:
        vjp.release()
    return g, [e[2] for e in events if e[0] == "backward"]


def test_view_cotangents_are_added_into_the_parents_slot():
    x = onp.linspace(0.0, 1.0, 1000)

    def f(x):
        y = anp.sin(x)
        a = anp.sum(y[:500] * 2.0)
        b = anp.sum(y[250:750][::2] * 3.0)  # a view of a view
        c = anp.sum(y[None, 10:20, ...][:, 3] * 5.0)
        return a + b + c + anp.sum(y)  # sum(y) runs first: y has a dense slot

    g, ran = _vjp_runs(f, x)
    w = onp.ones(1000)
    w[:500] += 2.0
    w[250:750:2] += 3.0
    w[13] += 5.0
    onp.testing.assert_allclose(g, onp.cos(x) * w, rtol=1e-13)
    assert not [n for n in ran if n.endswith("getitem")], ran  # every view's cotangent forwarded
    assert ran.count("gradcy.numpy.multiply") == 3
    assert_counters_zero()


@pytest.mark.parametrize(
    "case",
    [
        "advanced",
        "bool",
        "scalar",
        "no-parent-slot",
        "shared-slot",
        "float32-view",
        "traced-cotangent",
    ],
)
def test_views_that_cannot_forward_keep_their_own_slot_and_stay_correct(case):
    x = onp.linspace(0.1, 1.0, 12).reshape(3, 4)

    def f(x):
        y = anp.sin(x)
        if case == "advanced":
            v = anp.sum(y[[0, 0, 2]] * 2.0)  # repeated rows: must accumulate twice
        elif case == "bool":
            v = anp.sum(y[True] * 2.0)
        elif case == "scalar":
            v = y[1, 2] * 2.0
        elif case == "no-parent-slot":
            return anp.sum(y[1:] * 2.0)
        elif case == "shared-slot":
            z = y + y  # add's VJP hands the same g to both arguments
            return anp.sum(z[1] * 2.0) + anp.sum(z)
        elif case == "float32-view":
            v = anp.sum(anp.astype(y[1:], onp.float32) * 2.0)
        else:
            return anp.sum(y[1:] ** 2) + anp.sum(y)
        return v + anp.sum(y)

    def ref(x):
        y = onp.sin(x)
        if case == "advanced":
            return onp.sum(y[[0, 0, 2]] * 2.0) + onp.sum(y)
        if case == "bool":
            return onp.sum(y * 2.0) + onp.sum(y)
        if case == "scalar":
            return y[1, 2] * 2.0 + onp.sum(y)
        if case == "no-parent-slot":
            return onp.sum(y[1:] * 2.0)
        if case == "shared-slot":
            return onp.sum(2 * y[1] * 2.0) + onp.sum(2 * y)
        if case == "float32-view":
            return onp.sum(y[1:] * 2.0) + onp.sum(y)
        return onp.sum(y[1:] ** 2) + onp.sum(y)

    g = grad(f)(x)
    eps = 1e-6
    num = onp.zeros_like(x)
    for i in onp.ndindex(x.shape):
        e = onp.zeros_like(x)
        e[i] = eps
        num[i] = (ref(x + e) - ref(x - e)) / (2 * eps)
    onp.testing.assert_allclose(
        g,
        num,
        rtol=1e-6 if case != "float32-view" else 1e-5,
        atol=1e-8 if case != "float32-view" else 1e-5,
    )
    if case == "traced-cotangent":  # second order: traced cotangents never forward
        h = gradcy.hessian(lambda x: f(x))(x)
        assert h.shape == (3, 4, 3, 4)
    assert_counters_zero()


def test_install_hooks_rejects_unknown_names_and_wrong_kinds():
    with pytest.raises(TypeError, match=r"install_hooks: unknown hook 'outt'; the hooks are out, "):
        _core.install_hooks(outt=print)
    with pytest.raises(
        TypeError, match=r"hook 'getitem' is a gradcy Primitive, got builtin_function"
    ):
        _core.install_hooks(getitem=print)
    with pytest.raises(TypeError, match=r"hook 'out' must be callable, got int"):
        _core.install_hooks(out=3)
    with pytest.raises(
        TypeError, match=r"write, before_write and after_write are installed together"
    ):
        _core.install_hooks(write=None)
