"""Record-time fusion of a written-out softmax (gradcy/_fuse.pyx, gradcy/numpy/fusion.py): the
softmax entry of the idiom table (the other entries: tests/test_idioms.py).

Each program runs fused and unfused (gradcy._core.set_fusion): same values, gradients equal to
1e-12 and to central differences; the record is checked for what was fused (and what must not
be), and for what the tape holds after the forward pass.
"""

import contextlib

import numpy as onp
import pytest

import gradcy.numpy as np
from gradcy import grad, hessian_vector_product, make_jvp, make_vjp, value_and_grad
from gradcy import memory
from gradcy._core import set_fusion
from vjp_harness import central_gradient, check_deep, fusion, recorded

COVERED = {"gradcy.numpy.softmax (fused exp, sum, divide)"}
FUSED = "gradcy.numpy.softmax (fused exp, sum, divide)"

C = onp.random.RandomState(5).randn(3, 4)


def softmax_shifted(x, axis=1):
    e = np.exp(x - np.max(x, axis=axis, keepdims=True))
    return e / np.sum(e, axis=axis, keepdims=True)


def softmax_plain(x, axis=1):
    e = np.exp(x)
    return e / np.sum(e, axis=axis, keepdims=True)


def softmax_methods(x, axis=1):
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return np.true_divide(e, e.sum(axis, keepdims=True))


def softmax_all(x, axis=None):
    e = np.exp(x - np.max(x))
    return e / np.sum(e)


def softmax_all_keepdims(x, axis=None):
    e = np.exp(x - np.max(x, keepdims=True))
    return e / np.sum(e, keepdims=True)


def softmax_tuple_axis(x, axis=(0, 1)):
    e = np.exp(x - np.max(x, axis=axis, keepdims=True))
    return e / np.sum(e, axis=axis, keepdims=True)


def softmax_other_shift_axis(x, axis=1):
    # a shift over another axis does not cancel in w: the exp's input stays the parent
    e = np.exp(x - np.max(x, axis=0, keepdims=True))
    return e / np.sum(e, axis=axis, keepdims=True)


def softmax_mean_shift(x, axis=1):
    e = np.exp(x - np.mean(x, axis=axis, keepdims=True))
    return e / np.sum(e, axis=axis, keepdims=True)


# (program, fused: whether a softmax node is recorded)
PROGRAMS = [
    (softmax_shifted, True),
    (softmax_plain, True),
    (softmax_methods, True),
    (softmax_all, True),
    (softmax_all_keepdims, True),
    (softmax_tuple_axis, True),
    (softmax_other_shift_axis, True),
    (softmax_mean_shift, True),
    (lambda x: softmax_shifted(x, axis=0), True),
    (lambda x: softmax_shifted(x, axis=-1), True),
    (lambda x: softmax_shifted(x, axis=()), True),
    (lambda x: softmax_shifted(x, axis=(1, 0)), True),
    # a max with initial= is not the shift (its node stays the parent's): fused all the same
    (
        lambda x: (lambda e: e / np.sum(e, axis=1, keepdims=True))(
            np.exp(x - np.max(x, axis=1, keepdims=True, initial=10.0))
        ),
        True,
    ),
]


def _written_after_sum(x, how):
    e = np.exp(x)
    s = np.sum(e, axis=1, keepdims=True)
    if how == "setitem":
        e[0, 0] = 5.0
    else:
        e += 1.0
    return e / s


# programs that look alike but are not the softmax pattern: never fused
NOT_FUSED = {
    "sum without keepdims": lambda x: np.exp(x) / np.sum(np.exp(x), axis=1)[:, None],
    "sum of another exp": lambda x: np.exp(x) / np.sum(np.exp(x), axis=1, keepdims=True),
    "sum of the shifted input": lambda x: np.exp(x) / np.sum(x * x + 1.0, axis=1, keepdims=True),
    "divided the other way": lambda x: (lambda e: np.sum(e, axis=1, keepdims=True) / e)(np.exp(x)),
    "where=": lambda x: (lambda e: e / np.sum(e, axis=1, keepdims=True, where=x > -5.0))(np.exp(x)),
    "dtype=": lambda x: (lambda e: e / np.sum(e, axis=1, keepdims=True, dtype=onp.float64))(
        np.exp(x)
    ),
    "exp's output written after the sum": lambda x: _written_after_sum(x, "setitem"),
    "exp's output added to in place after the sum": lambda x: _written_after_sum(x, "iadd"),
    "out-of-place exp of a view": lambda x: (
        lambda e: e[:2] / np.sum(e[:2], axis=1, keepdims=True)
    )(np.exp(x)),
    "keepdims=1": lambda x: (lambda e: e / np.sum(e, axis=1, keepdims=1))(np.exp(x)),
    "a NumPy integer axis": lambda x: (lambda e: e / np.sum(e, axis=onp.int64(1), keepdims=True))(
        np.exp(x)
    ),
    "times the reciprocal": lambda x: (lambda e: e * (1.0 / np.sum(e, axis=1, keepdims=True)))(
        np.exp(x)
    ),
}


def loss(program):
    return lambda x: np.sum(program(x) * C) + np.sum(program(x) ** 2)


@pytest.mark.parametrize("program, fused", PROGRAMS)
def test_fused_gradient_equals_unfused_and_central_differences(program, fused):
    x = onp.random.RandomState(0).randn(3, 4)
    f = loss(program)
    with fusion(True):
        assert (FUSED in recorded(f, x)) is fused
        g1 = grad(f)(x)
        v1 = f(x)
    with fusion(False):
        assert FUSED not in recorded(f, x)
        g0 = grad(f)(x)
        v0 = f(x)
    assert v1 == v0  # the values are NumPy's own
    onp.testing.assert_allclose(g1, g0, rtol=1e-12, atol=1e-14)
    onp.testing.assert_allclose(
        g1, central_gradient(lambda z: float(f(z)), x), rtol=1e-6, atol=1e-8
    )


@pytest.mark.parametrize("name", sorted(NOT_FUSED))
def test_look_alikes_are_not_fused_and_stay_right(name):
    program = NOT_FUSED[name]
    x = onp.random.RandomState(1).randn(3, 4)
    f = (
        loss(program)
        if name != "out-of-place exp of a view"
        else (lambda z: np.sum(program(z) * C[:2]))
    )
    assert FUSED not in recorded(f, x)
    onp.testing.assert_allclose(
        grad(f)(x), central_gradient(lambda z: float(f(z)), x), rtol=1e-6, atol=1e-8
    )


@pytest.mark.parametrize("program", [softmax_shifted, softmax_all, softmax_tuple_axis])
def test_second_order_and_both_modes(program):
    x = onp.random.RandomState(2).randn(3, 4)
    check_deep(loss(program), x, order=2)


def test_hessian_vector_product_equals_unfused():
    x = onp.random.RandomState(3).randn(3, 4)
    v = onp.random.RandomState(4).randn(3, 4)
    f = loss(softmax_shifted)
    with fusion(True):
        h1 = hessian_vector_product(f)(x, v)
    with fusion(False):
        h0 = hessian_vector_product(f)(x, v)
    onp.testing.assert_allclose(h1, h0, rtol=1e-10, atol=1e-12)


def test_forward_mode_records_no_fusion():
    x = onp.random.RandomState(5).randn(3, 4)
    v = onp.random.RandomState(6).randn(3, 4)
    f = loss(softmax_shifted)
    with fusion(True):
        y1, t1 = make_jvp(f)(x)(v)
    with fusion(False):
        y0, t0 = make_jvp(f)(x)(v)
    assert y1 == y0
    onp.testing.assert_allclose(t1, t0, rtol=1e-12)


@pytest.mark.parametrize("dtype", [onp.float32, onp.float16])
def test_gradient_keeps_the_input_dtype(dtype):
    x = onp.random.RandomState(7).randn(3, 4).astype(dtype)
    f = lambda z: np.sum(softmax_shifted(z) * C.astype(dtype))
    assert FUSED in recorded(f, x)
    g = grad(f)(x)
    assert g.dtype == dtype and g.shape == x.shape
    with fusion(False):
        g0 = grad(f)(x)
    onp.testing.assert_allclose(g, g0, rtol=1e-2 if dtype == onp.float16 else 1e-5, atol=1e-3)


def test_complex_values_are_not_fused():
    x = onp.random.RandomState(8).randn(3, 4) * (1 + 0.5j)
    f = lambda z: np.real(np.sum(softmax_plain(z) * C))
    assert FUSED not in recorded(f, x)


def test_zero_dimensional():
    # NumPy's ops on a 0-d array give scalars, which the fusion leaves as they are
    x = onp.array(0.3)
    f = lambda z: np.sum(softmax_all(z) * 2.0) + z
    assert FUSED not in recorded(f, x)
    g = grad(f)(x)
    assert type(g) is onp.ndarray and g.shape == () and g == 1.0


def test_operands_used_elsewhere_keep_their_paths():
    # e, s and the shift all reach the loss by other paths too (a log-sum-exp, the raw exp)
    x = onp.random.RandomState(9).randn(3, 4)

    def f(z):
        m = np.max(z, axis=1, keepdims=True)
        sh = z - m
        e = np.exp(sh)
        s = np.sum(e, axis=1, keepdims=True)
        w = e / s
        return np.sum(w * C) + np.sum(np.log(s) + m) + np.sum(e * 0.1) + np.sum(sh**2)

    assert FUSED in recorded(f, x)
    with fusion(False):
        g0 = grad(f)(x)
    onp.testing.assert_allclose(grad(f)(x), g0, rtol=1e-12, atol=1e-14)
    onp.testing.assert_allclose(
        grad(f)(x), central_gradient(lambda z: float(f(z)), x), rtol=1e-6, atol=1e-8
    )


def test_exp_output_released_during_forward_pass():
    # after the forward pass the tape holds w only (the power and the fused node share it):
    # exp's output and the max's positions went with their dead nodes
    x = onp.random.RandomState(10).randn(50, 40)
    f = lambda z: np.sum(softmax_shifted(z) ** 2)

    def held_after_forward(on):
        with fusion(on):
            vjp, _ = make_vjp(f)(x)
            try:
                return memory.stats()["saved_bytes"]
            finally:
                vjp.release()

    assert held_after_forward(True) == x.nbytes
    assert held_after_forward(False) > 2 * x.nbytes


def test_recompute_and_value_and_grad():
    x = onp.random.RandomState(11).randn(3, 4)
    f = loss(softmax_shifted)
    with fusion(False):
        v0, g0 = value_and_grad(f)(x)
    v1, g1 = value_and_grad(f)(x)
    g2 = grad(f, recompute="elementwise")(x)
    assert v1 == v0
    onp.testing.assert_allclose(g1, g0, rtol=1e-12, atol=1e-14)
    onp.testing.assert_allclose(g2, g0, rtol=1e-12, atol=1e-14)


def test_nested_grad_of_a_fused_program():
    # grad of (x -> grad(loss)(x) . v): the inner tape's values are the outer's Boxes
    x = onp.random.RandomState(12).randn(3, 4)
    v = onp.random.RandomState(13).randn(3, 4)
    f = loss(softmax_shifted)
    outer = grad(lambda z: np.sum(grad(f)(z) * v))
    with fusion(False):
        h0 = outer(x)
    onp.testing.assert_allclose(outer(x), h0, rtol=1e-10, atol=1e-12)


def test_set_fusion_returns_the_old_setting():
    assert set_fusion(False) is True
    try:
        assert set_fusion(False) is False
    finally:
        set_fusion(True)


class _RecordingAxis(int):
    """An axis entry (NumPy takes any __index__) whose == records more nodes on the tape that
    is recording (enough to move the tape's arena) and counts its calls."""

    calls = 0
    box = None

    def __eq__(self, other):
        _RecordingAxis.calls += 1
        if _RecordingAxis.box is not None:
            _RecordingAxis.junk = [np.sin(_RecordingAxis.box) for _ in range(5000)]
        return int(self) == int(other)

    __hash__ = int.__hash__


def test_an_axis_with_python_equality_runs_no_user_code_while_recording():
    # the fusion compares max's axis with sum's while it reads the tape's arena: an axis entry
    # whose == is Python code recording onto the same tape moved the arena under it (segfault)
    x = onp.random.RandomState(14).randn(3, 4)

    def f(z):
        m = np.max(z, axis=(_RecordingAxis(1),), keepdims=True)
        e = np.exp(z - m)
        s = np.sum(e, axis=(_RecordingAxis(1),), keepdims=True)
        _RecordingAxis.box = z
        try:
            w = e / s
        finally:
            _RecordingAxis.box = _RecordingAxis.junk = None
        return np.sum(w * C)

    _RecordingAxis.calls = 0
    g = grad(f)(x)
    assert _RecordingAxis.calls == 0
    with fusion(False):
        g0 = grad(f)(x)
    onp.testing.assert_allclose(g, g0, rtol=1e-12, atol=1e-14)
    onp.testing.assert_allclose(g, central_gradient(lambda z: float(f(z)), x), rtol=1e-6, atol=1e-8)


def _divided_in_place(x):
    e = np.exp(x)
    e /= np.sum(e, axis=1, keepdims=True)  # the usual in-place spelling
    return e


def _exp_into_owned_buffer(x):
    buf = np.zeros(x.shape)
    e = np.exp(x, out=buf)  # e is buf: its node is the write
    s = np.sum(e, axis=1, keepdims=True)
    buf[0, 0] = 3.0
    return e / s


def _input_buffer_written_after_shift(x):
    buf = np.zeros(x.shape)
    buf[...] = x
    e = np.exp(buf - np.max(buf, axis=1, keepdims=True))
    buf *= 3.0  # the fused node's parent is buf before this
    return e / np.sum(e, axis=1, keepdims=True) + buf


def _exp_input_view_written_after_sum(x):
    buf = np.zeros((x.shape[0], 2 * x.shape[1]))
    buf[:, : x.shape[1]] = x
    z = buf[:, : x.shape[1]]
    e = np.exp(z)
    s = np.sum(e, axis=1, keepdims=True)
    buf[:, 1:3] = 2.0  # z is stale now: the parent of the fused node
    return e / s + buf[:, : x.shape[1]]


def _output_written_into(x):
    buf = np.zeros(x.shape)
    e = np.exp(x)
    buf[...] = e / np.sum(e, axis=1, keepdims=True)  # the slot now holds what softmax saved
    w = buf * C
    buf[0] = 1.0
    return w + buf


# writes around the pattern: (program, fused)
WRITES = [
    (_divided_in_place, True),
    (_exp_into_owned_buffer, False),
    (_input_buffer_written_after_shift, True),
    (_exp_input_view_written_after_sum, True),
    (_output_written_into, True),
]


@pytest.mark.parametrize("program, fused", WRITES)
def test_writes_around_the_pattern(program, fused):
    x = onp.random.RandomState(15).randn(3, 4)
    f = loss(program)
    assert (FUSED in recorded(f, x)) is fused
    g1 = grad(f)(x)
    with fusion(False):
        g0 = grad(f)(x)
    onp.testing.assert_allclose(g1, g0, rtol=1e-12, atol=1e-14)
    onp.testing.assert_allclose(
        g1, central_gradient(lambda z: float(f(z)), x), rtol=1e-6, atol=1e-8
    )


@pytest.mark.parametrize(
    "program, row",
    [
        (softmax_shifted, [-onp.inf, 0.0, 1.0, 2.0]),  # a zero weight; max's path dropped
        (softmax_shifted, [-onp.inf] * 4),  # nan row
        (softmax_shifted, [onp.inf, 0.0, 1.0, 2.0]),  # nan row
        (softmax_plain, [800.0, 0.0, 1.0, 2.0]),  # exp overflows: nan row
        (softmax_plain, [-800.0] * 4),  # the sum is 0: nan row
    ],
)
def test_non_finite_values_give_the_unfused_gradient(program, row):
    x = onp.random.RandomState(16).randn(3, 4)
    x[1] = row
    f = lambda z: np.sum(program(z) * C)
    with onp.errstate(all="ignore"):
        assert FUSED in recorded(f, x)
        g1 = grad(f)(x)
        with fusion(False):
            g0 = grad(f)(x)
    onp.testing.assert_allclose(g1, g0, rtol=1e-12, atol=1e-14)  # nan where unfused is


def test_traced_cotangent_through_a_fused_node():
    # the inner softmax's values are plain (fused there); its VJP gets the outer's Box t
    x = onp.random.RandomState(17).randn(3, 4)
    t = onp.random.RandomState(18).randn(3, 4)
    inner = lambda y, u: np.sum(softmax_shifted(y) ** 2 * u)
    assert FUSED in recorded(lambda y: inner(y, t), x)
    outer = lambda u: np.sum(grad(inner)(x, u) * C)
    g1 = grad(outer)(t)
    with fusion(False):
        g0 = grad(outer)(t)
    onp.testing.assert_allclose(g1, g0, rtol=1e-12, atol=1e-14)
    onp.testing.assert_allclose(
        g1, central_gradient(lambda u: float(outer(u)), t), rtol=1e-6, atol=1e-8
    )


def test_threads_recording_on_one_tape():
    # NumPy lets other threads run during each call: they append to the same arena
    import threading

    x = onp.random.RandomState(19).randn(16, 64)
    W = onp.random.RandomState(20).randn(16, 64)

    def f(z):
        parts = [0.0] * 3

        def work(k):
            for _ in range(10):
                parts[k] = parts[k] + np.sum(softmax_shifted(z * (1.0 + k)) * W)

        threads = [threading.Thread(target=work, args=(k,)) for k in range(3)]
        for th in threads:
            th.start()
        for th in threads:
            th.join()
        return parts[0] + parts[1] + parts[2]

    g1 = grad(f)(x)
    with fusion(False):
        g0 = grad(f)(x)
    onp.testing.assert_allclose(g1, g0, rtol=1e-10, atol=1e-12)


@contextlib.contextmanager
def _own_rule(prim, argnum, rule):
    """prim's VJP rule for argument argnum replaced by rule inside the block (as
    gradcy.extend.defvjp_direct does, without changing what the records keep)."""
    rules = prim.vjpmakers
    old = rules[argnum]
    rules[argnum] = rule
    try:
        yield
    finally:
        rules[argnum] = old


# a user's own rule for one of the pattern's operations (an autograd program may register one):
# the fused node would bypass it
OWN_RULES = {
    "exp": (np.exp, 0, lambda g, ans, x: 2.0 * g * ans, softmax_plain),
    "sum": (np.sum, 0, lambda g, ans, x, *a, **k: onp.full(x.shape, 0.5), softmax_plain),
    "divide 0": (np.divide, 0, lambda g, ans, x, y: g / y + 1.0, softmax_plain),
    "divide 1": (
        np.divide,
        1,
        lambda g, ans, x, y: -2.0 * onp.sum(g * x, axis=1, keepdims=True) / y**2,
        softmax_plain,
    ),
    "subtract 0": (np.subtract, 0, lambda g, ans, x, y: 3.0 * g, softmax_shifted),
    "max": (np.max, 0, lambda g, ans, x, *a, **k: onp.full(x.shape, 0.5), softmax_shifted),
}


@pytest.mark.parametrize("name", sorted(OWN_RULES))
def test_a_rule_of_the_users_own_is_not_bypassed(name):
    prim, argnum, rule, program = OWN_RULES[name]
    x = onp.random.RandomState(21).randn(3, 4)
    f = lambda z: np.sum(program(z) * C)
    with _own_rule(prim, argnum, rule):
        g1 = grad(f)(x)
        with fusion(False):
            g0 = grad(f)(x)
    onp.testing.assert_allclose(g1, g0, rtol=1e-12, atol=1e-14)
    assert not onp.allclose(g0, grad(f)(x))  # the rule made a difference
    assert FUSED in recorded(f, x)  # and fusion is back with the stock rule
