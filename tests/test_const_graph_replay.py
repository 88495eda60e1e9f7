"""const_graph's two executors of a recorded program: the compiled straight-line function
(programs up to tracers._MAX_COMPILED_STEPS steps) and the step interpreter (longer ones) give
exactly the same values, and both free intermediates as they go."""

import gc
import weakref

import numpy as onp
import pytest

import gradcy
import gradcy.extend
import gradcy.numpy as gnp
from gradcy.misc import const_graph, tracers


def _both(fun):
    """(compiled, interpreted) const_graph versions of fun."""
    compiled = const_graph(fun)
    limit = tracers._MAX_COMPILED_STEPS
    tracers._MAX_COMPILED_STEPS = 0
    try:
        interpreted = const_graph(fun)
        return compiled, interpreted
    finally:
        tracers._MAX_COMPILED_STEPS = limit


def _program(fun, *xs):
    return tracers._record(lambda args: fun(*args), xs)[1]


def f_mixed(x, y):
    # keyword arguments, a value used twice in one call, constants on either side, two inputs
    z = gnp.sum(x * x, axis=0, keepdims=True) + gnp.dot(y, gnp.ones((3, 2)))
    return gnp.sum(gnp.tanh(z) * 2.0, axis=None) - gnp.sum(y.T @ x)


def test_compiled_and_interpreted_replays_agree_exactly():
    rs = onp.random.RandomState(3)
    g = gradcy.grad(f_mixed, argnum=(0, 1))
    compiled, interpreted = _both(lambda x, y: gnp.concatenate([a.ravel() for a in g(x, y)]))
    for _k in range(3):
        x, y = rs.randn(4, 2), rs.randn(4, 3)
        want = onp.concatenate([a.ravel() for a in g(x, y)])
        for fast in (compiled, interpreted):
            got = fast(x, y)
            assert got.dtype == want.dtype and got.shape == want.shape
            assert onp.array_equal(got, want)


def test_program_runs_compiled_up_to_the_limit_only(monkeypatch):
    def chain(x):
        for _ in range(5):
            x = gnp.sin(x) * 2.0
        return x

    x = onp.array([0.3, 0.7])
    prog = _program(chain, x)
    # compiled at the first replay (gradcy.jit replaces a program before it replays)
    assert len(prog.steps) == 10 and prog.run == prog._first_run
    assert onp.array_equal(prog(x), chain(x)) and prog.run.__name__ == "run"
    monkeypatch.setattr(tracers, "_MAX_COMPILED_STEPS", 9)
    prog = _program(chain, x)
    assert prog.run == prog._interpret
    assert onp.array_equal(prog(x), chain(x))


@pytest.mark.parametrize("limit", [100_000, 0])
def test_replay_frees_intermediates(limit, monkeypatch):
    monkeypatch.setattr(tracers, "_MAX_COMPILED_STEPS", limit)
    peak, refs = [], []

    def track(v):
        out = onp.array(v)  # a new array, whose life the weakref follows
        refs.append(weakref.ref(out))
        peak.append(sum(r() is not None for r in refs))
        return out

    tracked = gradcy.extend.primitive(track)
    gradcy.extend.defvjp(tracked, lambda ans, v: lambda g: g)

    def chain(x):
        for _ in range(30):
            x = tracked(x * 1.5)
        return x

    fast = const_graph(chain)
    x = onp.ones(3)
    fast(x)
    gc.collect()
    peak.clear()
    refs.clear()
    out = fast(x)
    # each step's input is dropped once read: never more than the current value and its
    # predecessor are alive
    assert len(peak) == 30 and max(peak) <= 3
    assert onp.array_equal(out, chain(x))


# =============================================================================
# Replays at new inputs (issue #23 A): everything computed from the inputs is recomputed
# (masks and comparisons, in the function and in its VJPs); what Python code read from a
# traced value, and the signature of the arguments, are checked at each call (guards), and a
# call where one differs records the function again, never replays stale
# =============================================================================
W = onp.array([1.0, 2.0, 3.0])
X1 = onp.array([1.0, -2.0, 3.0])


@pytest.fixture
def recordings(monkeypatch):
    """The list of the argument tuples const_graph recorded at (one entry per recording)."""
    seen, record = [], tracers._record

    def counting(fun, x):
        seen.append(x)
        return record(fun, x)

    monkeypatch.setattr(tracers, "_record", counting)
    return seen


def test_issue_examples_recompute_the_masks(recordings):
    fast = const_graph(gradcy.grad(lambda x: gnp.sum(gnp.maximum(x, 0.0) * W)))
    assert onp.array_equal(fast(X1), [1.0, 0.0, 3.0])
    assert onp.array_equal(fast(-X1), [0.0, 2.0, 0.0])
    f = const_graph(lambda x: gnp.sum(gnp.where(x > 0, x, 0.0)))
    assert f(onp.array([2.5, -1.0])) == 2.5
    assert f(onp.array([-2.5, 1.0])) == 1.0
    assert len(recordings) == 2  # one each: replayed, not recorded again


# functions whose values or gradients depend on masks, orders and positions; replayed at the
# sign flip, the reversal and a fresh draw of the recorded input
MASKED = {
    "maximum": lambda x: gnp.sum(gnp.maximum(x, 0.0) * W),
    "where": lambda x: gnp.sum(gnp.where(x > 0, x, 0.0) * W),
    "abs": lambda x: gnp.sum(gnp.abs(x) * W),
    "max": lambda x: gnp.max(x) * 2.0,
    "min_axis": lambda x: gnp.sum(gnp.min(gnp.stack([x, -x]), axis=0) * W),
    "sort": lambda x: gnp.sum(gnp.sort(x) * W),
    "argmax": lambda x: x[gnp.argmax(x)] * 2.0,
    "bool_mask": lambda x: gnp.sum(x[x > 0] ** 2),
    "clip": lambda x: gnp.sum(gnp.clip(x, -1.5, 1.5) * W),
    "sign_floor": lambda x: gnp.sum(gnp.sign(x) * gnp.floor(x) * x),
    "softmax": lambda x: gnp.sum(gnp.exp(x - gnp.max(x)) / gnp.sum(gnp.exp(x - gnp.max(x))) * W),
    "mask_and": lambda x: gnp.sum(gnp.where((x > -1.5) & ~(x > 2.0), x, 0.0) * W),
    "isnan": lambda x: gnp.sum(gnp.where(gnp.isnan(gnp.log(x + 2.5)), 0.0, x) * W),
    "nansum": lambda x: gnp.nansum(gnp.log(x + 2.5) * W),
}


# bit for bit; NumPy 1.x may sum a boolean selection in another order in the replay's plain
# calls than in the traced ones (38.06941061028271 against ...716): within rounding there
_NUMPY_1 = onp.lib.NumpyVersion(onp.__version__) < "2.0.0"


def _same(a, b):
    return onp.allclose(a, b, rtol=1e-14, atol=0) if _NUMPY_1 else onp.array_equal(a, b)


@pytest.mark.parametrize("name", sorted(MASKED))
def test_masks_are_recomputed_at_new_inputs(name, recordings):
    f = MASKED[name]
    fast_value, fast_grad = const_graph(f), const_graph(gradcy.grad(f))
    rs = onp.random.RandomState(0)
    for x in (X1, -X1, X1[::-1].copy(), rs.randn(3) * 3):
        with onp.errstate(invalid="ignore"):
            want_value, want_grad = f(x), gradcy.grad(f)(x)
            assert _same(fast_value(x), want_value)
            got = fast_grad(x)
        assert got.dtype == want_grad.dtype and _same(got, want_grad), (x, got)
    # recorded once each; the gradient of x[x > 0] reads the shape of the selection (its VJP
    # keeps it), so it is recorded once per number of positives (2, 1, 2, 3)
    assert len(recordings) == (4 if name == "bool_mask" else 2)


def _branchy(x):
    if gnp.sum(x) > 0:  # a Python branch on a value: guarded
        return gnp.sum(gnp.sin(x))
    return gnp.sum(gnp.cos(x)) * 2.0


def test_python_branch_on_a_value_records_each_branch_once(recordings):
    fast = const_graph(gradcy.grad(_branchy))
    for x in (X1, -X1, X1, -X1, 2 * X1):
        assert onp.array_equal(fast(x), gradcy.grad(_branchy)(x))
    assert len(recordings) == 2  # one per branch; later calls replay the matching program


@pytest.mark.parametrize("limit", [100_000, 0])
def test_guards_hold_in_both_executors(limit, monkeypatch, recordings):
    monkeypatch.setattr(tracers, "_MAX_COMPILED_STEPS", limit)

    def f(x):
        i = int(gnp.argmax(x))  # an int read, used as a constant index
        n = len(x[x > 0])  # the length of a value-shaped array
        return x[i] * float(n) + gnp.sum(x[x > 0]) * x.shape[0]

    fast = const_graph(f)
    xs = [X1, -X1, onp.array([3.0, 2.0, 1.0]), X1 * 2, onp.array([-1.0, 5.0, 0.5])]
    for x in xs + xs:
        assert fast(x) == f(x)
    # X1 and 2 * X1 read the same (argmax 2, two positives): one program; the others each theirs
    assert len(recordings) == 4


def test_float_and_tolist_reads_are_checked(recordings):
    def f(x):
        c = float(gnp.sum(x))  # a value as a Python constant
        return gnp.sum(x * c) + sum(x.tolist())

    fast = const_graph(f)
    for x in (X1, X1, -X1):
        assert fast(x) == f(x)
    assert len(recordings) == 2  # X1 replayed once; -X1 reads other values


def test_signature_changes_record_again(recordings):
    f = gradcy.grad(lambda x: gnp.sum(gnp.tanh(x) * gnp.size(x)))
    fast = const_graph(f)
    calls = [
        X1,
        onp.array([1.0, 2.0]),
        X1.astype(onp.float32),
        0.5,
        onp.float64(0.5),
        onp.array(0.5),
        X1 * 3,
    ]
    for x in calls:
        got, want = fast(x), f(x)
        assert onp.array_equal(got, want) and onp.result_type(got) == onp.result_type(want)
    assert len(recordings) == 6  # X1 * 3 replays X1's program


def test_container_arguments_and_outputs():
    def f(x, d):
        return gnp.sum(gnp.maximum(x, 0.0) * d["w"]) + d["b"][0] * gnp.sum(x)

    g = gradcy.grad(f, argnum=(0, 1))
    fast = const_graph(g)
    d = {"w": W, "b": [onp.array(2.0)]}
    for x in (X1, -X1):
        got, want = fast(x, d), g(x, d)
        assert onp.array_equal(got[0], want[0])
        assert onp.array_equal(got[1]["w"], want[1]["w"])
        assert onp.array_equal(got[1]["b"][0], want[1]["b"][0])


def test_cache_is_bounded(monkeypatch, recordings):
    monkeypatch.setattr(tracers, "_MAX_PROGRAMS", 3)
    cached = tracers.const_graph_unary(lambda xs: xs[0] * float(int(gnp.sum(xs[0]))))
    for k in range(6):
        x = onp.array([float(k), 0.5])
        assert onp.array_equal(cached((x,)), x * float(int(k + 0.5)))
    assert len(cached.programs) == 3 and len(recordings) == 6


def test_keyword_arguments_raise_naming_const_graph():
    fast = const_graph(lambda x, y=1.0: gnp.sum(x * y))
    with pytest.raises(TypeError, match=r"const_graph: .*keyword argument\(s\) y.*const_graph"):
        fast(X1, y=2.0)
    bound = const_graph(lambda x, y=1.0: gnp.sum(x * y), y=2.0)
    assert bound(X1) == 4.0


def test_comparison_output_replays():
    fast = const_graph(lambda x: x > 0.5)
    assert onp.array_equal(fast(X1), [True, False, True])
    assert onp.array_equal(fast(-X1), [False, True, False])


def test_numpy_conversion_and_reads_of_the_inputs_are_checked(recordings):
    def f(x):
        i = onp.asarray(gnp.argmax(x))  # plain NumPy's conversion of a recorded value
        return x[int(i)] * float(x[0])

    fast = const_graph(f)
    xs = [onp.array([1.0, 3.0, 2.0]), onp.array([5.0, 3.0, 2.0]), onp.array([1.0, 3.0, 2.0])]
    for x in xs:
        assert fast(x) == f(x)
    assert len(recordings) == 2
    # reads of a Python float argument itself (its float, and the bool of a comparison)
    g = const_graph(lambda x: x * float(x) if x > 0 else x * 2.0)
    assert [g(v) for v in (2.0, -3.0, 2.0, 4.0)] == [4.0, -6.0, 4.0, 16.0]


@pytest.mark.parametrize("limit", [100_000, 0])
def test_indices_computed_from_the_inputs_inside_containers(limit, monkeypatch):
    # x[i, j] with i, j from nonzero: a tuple argument holding recorded values (the forward
    # read and the scatter of its VJP), and a slice bound read with __index__
    monkeypatch.setattr(tracers, "_MAX_COMPILED_STEPS", limit)
    a = onp.array([[1.0, -2.0], [3.0, -4.0]])

    def pairs(x):
        i, j = gnp.nonzero(x > 0)
        return gnp.sum(x[i, j] ** 2)

    def head(x):
        return gnp.sum(x[: gnp.argmax(x[0]) + 1] * 2.0)

    for f in (pairs, head, gradcy.grad(pairs), gradcy.grad(head)):
        fast = const_graph(f)
        for x in (a, -a, a[::-1], a.T.copy(), a):
            assert onp.array_equal(fast(x), f(x))


def test_integer_casts_replay_as_constants_of_the_new_inputs():
    """A cast to an integer dtype is a constant of zero derivative (issue 23 E), and a
    const_graph replay recomputes it at each call (the recording keeps it as a step)."""
    g = gradcy.grad(lambda x: gnp.sum((x * 3).astype(int) * x + (x > 0) * x))
    fast = const_graph(g)
    for x in (
        onp.array([0.5, -1.2, 2.7]),
        onp.array([-0.5, 1.2, -2.7]),
        onp.array([1.5, 0.4, -0.2]),
    ):
        expected = onp.trunc(x * 3) + (x > 0)
        assert onp.array_equal(g(x), expected)
        assert onp.array_equal(fast(x), expected)


def test_matmul_gradients_replay_without_recording_again(recordings):
    """The transposes of matmul's rules ask whether a value is an array, which reads no value:
    no guard on it, so a new input replays."""

    def f(W, x):
        return gnp.sum(gnp.tanh(x @ W) @ W)

    fast = const_graph(gradcy.grad(f, (0, 1)))
    rs = onp.random.RandomState(5)
    for _ in range(3):
        W, x = rs.randn(3, 3), rs.randn(2, 3)
        got, want = fast(W, x), gradcy.grad(f, (0, 1))(W, x)
        assert all(onp.array_equal(g, w) for g, w in zip(got, want))
    assert len(recordings) == 1


def test_shape_reads_of_a_list_of_pieces_of_different_shapes():
    """array_split's pieces (2, 2) and (1, 2): the shape guard of the list is the shapes of its
    pieces (NumPy's shape of it raises)."""

    def loss(x):
        a, b = gnp.array_split(x, 2)
        return gnp.sum(gnp.tanh(a)) + gnp.sum(b * b)

    fast = const_graph(gradcy.grad(loss))
    x = onp.arange(6.0).reshape(3, 2) / 6.0
    for v in (x, -x, x * 2):
        assert onp.array_equal(fast(v), gradcy.grad(loss)(v))


# a *_like constructor of a traced value reads its shape and dtype only (the signature guard
# fixes both): no value guard, so new values replay; a shape computed from the values is read
_LIKES = {
    "zeros_like": lambda x: gnp.zeros_like(x) + 1.0,
    "ones_like": gnp.ones_like,
    "empty_like": lambda x: gnp.empty_like(x) * 0.0 + 1.0,
    "full_like": lambda x: gnp.full_like(x, 1.0),
    "full_like in a comprehension": lambda x: [gnp.full_like(v, 1.0) for v in (x,)][0],
    "ones_like in a helper": lambda x: (lambda v: gnp.ones_like(v))(x),
}


@pytest.mark.parametrize("name", list(_LIKES))
def test_like_constructors_read_no_values(name, recordings):
    like = _LIKES[name]

    def f(x):
        return gnp.sum(like(x) * x * x)

    fast, fast_grad = const_graph(f), const_graph(gradcy.grad(f))
    for k in range(4):
        x = X1 + k
        assert fast(x) == onp.sum(x * x)
        assert onp.array_equal(fast_grad(x), 2 * x)
    assert len(recordings) == 2  # one each: the later values replay


def test_a_constructor_shape_computed_from_the_values_is_guarded(recordings):
    def f(x):
        n = gnp.argmax(x) + 1  # a traced integer, read as zeros' shape
        return gnp.sum(gnp.zeros(n) + x[0])

    fast = const_graph(f)
    xs = [onp.array([1.0, 3.0, 2.0]), onp.array([2.0, 3.0, 1.0]), onp.array([1.0, 0.0, 4.0])]
    for x in xs:
        assert fast(x) == f(x) == (onp.argmax(x) + 1) * x[0]
    assert len(recordings) == 2  # argmax 1, 1, then 2: read, so recorded again


def _softmax_loss(x, c):
    e = gnp.exp(x - gnp.max(x, axis=1, keepdims=True))
    w = e / gnp.sum(e, axis=1, keepdims=True)
    return gnp.sum(w * c)


_FUSED_SOFTMAX_GRAD = ["max", "subtract", "exp", "sum", "divide"] + [
    "multiply",  # the loss's VJP
    "multiply",  # softmax's: w * (g - sum(g * w, 1, keepdims=True))
    "sum",
    "subtract",
    "multiply",
]


def test_a_written_out_softmax_is_recorded_fused_under_grad():
    """grad(f) recorded by const_graph (and so gradcy.jit) fuses the softmax f writes out as
    eager grad does: the backward pass reads the softmax's output only (no max mask, no exp
    nor scores kept for it), and the replay equals eager grad at new inputs."""
    rng = onp.random.RandomState(0)
    x, c = rng.standard_normal((3, 4)), rng.standard_normal((3, 4))
    prog = _program(gradcy.grad(_softmax_loss), x, c)
    names = [getattr(step[0], "__name__", None) for step in prog.steps]
    assert names == _FUSED_SOFTMAX_GRAD
    # the forward values other than the output die in the forward pass: no step after the
    # divide reads the scores, the max, the shifted scores, exp's output or its sum
    forward_slots = {step[4] for step in prog.steps[:4]}
    assert not {s for step in prog.steps[5:] for _, s in step[2]} & forward_slots
    fast = const_graph(gradcy.grad(_softmax_loss))
    fast(x, c)
    for seed in (1, 2):
        r = onp.random.RandomState(seed)
        x2, c2 = 3 * r.standard_normal((3, 4)), r.standard_normal((3, 4))
        onp.testing.assert_allclose(
            fast(x2, c2), gradcy.grad(_softmax_loss)(x2, c2), rtol=1e-14, atol=1e-15
        )


def test_softmax_recorded_as_written_when_fusion_is_off():
    rng = onp.random.RandomState(0)
    x, c = rng.standard_normal((3, 4)), rng.standard_normal((3, 4))
    old = gradcy._core.set_fusion(False)
    try:
        prog = _program(gradcy.grad(_softmax_loss), x, c)
        fast = const_graph(gradcy.grad(_softmax_loss))
        fast(x, c)
        x2 = rng.standard_normal((3, 4))
        want = gradcy.grad(_softmax_loss)(x2, c)
        got = fast(x2, c)
    finally:
        gradcy._core.set_fusion(old)
    names = [getattr(step[0], "__name__", None) for step in prog.steps]
    assert "equal" in names and "isnan" in names  # max's VJP, as written
    assert len(names) == 25
    onp.testing.assert_allclose(got, want, rtol=1e-14, atol=1e-15)


def test_second_derivative_of_a_written_out_softmax_replays():
    """Nested differentiation under a recording: the inner derivative's tape is not the
    recording's (its softmax is recorded as written), the outer one fuses; the replay equals
    eager at new inputs."""

    def g(x, c):
        return gnp.sum(gradcy.grad(_softmax_loss)(x, c) ** 2)

    rng = onp.random.RandomState(3)
    x, c = rng.standard_normal((2, 5)), rng.standard_normal((2, 5))
    fast = const_graph(gradcy.grad(g))
    onp.testing.assert_allclose(fast(x, c), gradcy.grad(g)(x, c), rtol=1e-13, atol=1e-14)
    x2 = rng.standard_normal((2, 5))
    onp.testing.assert_allclose(fast(x2, c), gradcy.grad(g)(x2, c), rtol=1e-13, atol=1e-14)


def _power_or_sine(x, mode, k, flag):
    y = x**k if mode == "pow" else gnp.sin(x) * k
    return gnp.sum(y if flag else -y)


@pytest.mark.parametrize("wrapper", ["const_graph", "jit"])
def test_int_bool_and_str_arguments_are_constants_of_a_recording(wrapper):
    # a step count, a flag or a mode passed beside the differentiated array (jit(grad(f))(x, 3))
    # is a constant of the recording, as in the eager call: each value records its own program,
    # and a call replays only the program recorded at equal values (never a stale one)
    import warnings

    wrap = const_graph if wrapper == "const_graph" else gradcy.jit
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # (jit without numba: the NumPy replay)
        fast = wrap(gradcy.grad(_power_or_sine))
        x = onp.array([0.5, 1.5, 2.5])
        calls = [
            ("pow", 2, True),
            ("pow", 3, True),
            ("sin", 3, False),
            ("pow", 2, True),
            ("pow", onp.int64(3), True),
            ("pow", 2, False),
        ]
        for args in calls * 2:
            got = fast(x * len(args[0]), *args)
            want = gradcy.grad(_power_or_sine)(x * len(args[0]), *args)
            assert type(got) is type(want) and got.dtype == want.dtype
            onp.testing.assert_allclose(got, want, rtol=1e-13, atol=0)


def test_differentiating_an_int_argument_of_a_recording_is_refused():
    with pytest.raises(TypeError, match=r"^grad: argument 2 is an integer scalar \(int\)"):
        const_graph(gradcy.grad(_power_or_sine, 2))(onp.ones(2), "pow", 2, True)


@pytest.mark.parametrize("wrapper", ["const_graph", "jit"])
def test_a_recording_under_an_outer_differentiation_is_differentiated(wrapper):
    # grad(jit(f)) and grad of jit(grad(f)): the recording made with traced values replays as
    # NumPy calls the outer differentiation follows (jit raised TracerArrayConversionError)
    import warnings

    wrap = const_graph if wrapper == "const_graph" else gradcy.jit

    def f(x):
        return gnp.sum((x - x[0]) ** 2 * gnp.tanh(x))

    x = onp.array([0.3, -1.2, 2.0])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # (jit without numba: the NumPy replay)
        fast, fast_grad = wrap(f), wrap(gradcy.grad(f))
        for y in (x, x + 0.5, x):
            onp.testing.assert_allclose(gradcy.grad(fast)(y), gradcy.grad(f)(y), rtol=1e-13)
            onp.testing.assert_allclose(fast(y), f(y), rtol=1e-13)
            second = gradcy.grad(lambda z: gnp.sum(fast_grad(z) ** 2))(y)
            onp.testing.assert_allclose(
                second, gradcy.grad(lambda z: gnp.sum(gradcy.grad(f)(z) ** 2))(y), rtol=1e-12
            )
