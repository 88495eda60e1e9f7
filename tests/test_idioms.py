"""The idiom table of record-time rewrites (gradcy/_fuse.pyx, gradcy.numpy.fusion.IDIOMS): the
written-out logsumexp, log_softmax, sigmoid, softplus and tanh (the softmax entry's own tests are
tests/test_fusion.py's).

IDIOM_TESTS holds, per idiom, the forms that fuse, the look-alikes that must not, the bytes a
hand-written gradient saves and the primitives whose user rules turn the fusion off. Each form
runs fused and unfused (gradcy._core.set_fusion): the same values, gradients equal to the
unfused ones and to central differences (float64), to second order; the tape holds exactly the
hand-written set after the forward pass.
"""

import contextlib

import numpy as onp
import pytest

import gradcy.numpy as np
from gradcy import grad, hessian, make_jvp, make_vjp, memory
from gradcy.misc import const_graph
from gradcy.numpy import fusion as F
from vjp_harness import central_gradient, check_deep, fusion, recorded

COVERED = {F.logsumexp.name, F.log_softmax.name, F.sigmoid.name, F.softplus.name, F.tanh.name}


# =============================================================================
# The forms
# =============================================================================
def lse(x, axis=1):
    m = np.max(x, axis=axis, keepdims=True)
    return np.log(np.sum(np.exp(x - m), axis=axis, keepdims=True)) + m


def lse_m_first(x, axis=1):
    m = np.max(x, axis=axis, keepdims=True)
    return m + np.log(np.sum(np.exp(x - m), axis=axis, keepdims=True))


def lse_methods(x, axis=1):
    m = x.max(axis=axis, keepdims=True)
    return np.log(np.exp(x - m).sum(axis, keepdims=True)) + m


def log_softmax_of_lse(x, axis=1):
    return x - lse(x, axis)


def log_softmax_shifted(x, axis=1):
    z = x - np.max(x, axis=axis, keepdims=True)
    return z - np.log(np.sum(np.exp(z), axis=axis, keepdims=True))


def log_softmax_plain(x, axis=1):
    return x - np.log(np.sum(np.exp(x), axis=axis, keepdims=True))


def log_softmax_whole(x):
    return x - np.log(np.sum(np.exp(x)))


def sigmoid(x):
    return 1 / (1 + np.exp(-x))


def sigmoid_float(x):
    return 1.0 / (np.exp(-x) + 1.0)


def softplus(x):
    return np.log(1 + np.exp(x))


def softplus_log1p(x):
    return np.log1p(np.exp(x))


def tanh_exp(x):
    return (np.exp(x) - np.exp(-x)) / (np.exp(x) + np.exp(-x))


def tanh_exp_shared(x):
    e, f = np.exp(x), np.exp(-x)
    return (e - f) / (f + e)


def tanh_exp2(x):
    return (1 - np.exp(-2 * x)) / (1 + np.exp(-2 * x))


def tanh_exp2_shared(x):
    e = np.exp(x * -2.0)
    return (1.0 - e) / (e + 1)


# =============================================================================
# The look-alikes (never fused, still right)
# =============================================================================
def _lse_written(x, what):
    m = np.max(x, axis=1, keepdims=True)
    z = x - m
    if what == "z before":
        z += 1.0  # exp's input is the write: not the pattern
    e = np.exp(z)
    s = np.sum(e, axis=1, keepdims=True)
    if what == "e":
        e[0, 0] = 7.0  # written after the sum: the sum's value is the record's
    elif what == "z after":
        z += 1.0
    return np.log(s) + m


def _sigmoid_written(x, what):
    e = np.exp(-x)
    if what == "before":
        e += 1.0  # 1 + e, in place: a write, not an add
        return 1 / e
    d = 1 + e
    e[0, 0] = 5.0  # after the add: d's value is the record's
    return 1 / d


def _softplus_used_elsewhere(x):
    e = np.exp(x)
    return np.log(1 + e) + 0.1 * e


def _tanh_written(x):
    e, f = np.exp(x), np.exp(-x)
    num = e - f
    e[1, 1] = 4.0  # after the difference, before the sum: not the pattern
    return num / (e + f)


def _lse_parts_used_elsewhere(x):
    m = np.max(x, axis=1, keepdims=True)
    e = np.exp(x - m)
    s = np.sum(e, axis=1, keepdims=True)
    return np.log(s) + m + 0.1 * m**2 + 0.01 * s * e


def _sigmoid_parts_used_elsewhere(x):
    n = -x
    d = 1 + np.exp(n)
    return 1 / d + 0.1 * d + n**2


def _tanh_parts_used_elsewhere(x):
    e, f = np.exp(x), np.exp(-x)
    return (e - f) / (e + f) + 0.1 * e * f


def _softplus_exp_written(x):
    e = np.exp(x)
    d = 1 + e
    e[0, 0] = 3.0  # after the add: log's operand is the record's
    return np.log(d) + e


def _output_written_into(program):
    def f(x):
        buf = np.zeros(x.shape)
        buf[...] = program(x)
        w = buf * 2.0
        buf[0] = 1.0
        return w + buf

    return f


def _output_written_in_place(program):
    def f(x):
        y = program(x)  # the fused node's saved output, when it saves it
        w = y * 2.0
        y[0, 0] = 5.0
        y += 1.0
        return w * y

    return f


IDIOM_TESTS = {
    "logsumexp": dict(
        fused=F.logsumexp.name,
        forms=[
            lse,
            lse_m_first,
            lse_methods,
            lambda x: lse(x, axis=0),
            lambda x: lse(x, axis=None),
            lambda x: lse(x, axis=(0, 1)),
            lambda x: lse(x, axis=-1),
        ],
        # exp(x - m) and its sum
        hand=lambda x: x.nbytes + x.shape[0] * x.itemsize,
        saves_output=False,
        near_misses={
            "max over another axis": lambda x: (
                lambda m: (
                    np.log(np.sum(np.exp(x - m), axis=1, keepdims=True))
                    + np.max(x, axis=1, keepdims=True)
                )
            )(np.max(x, axis=0, keepdims=True)),
            "another max added back": lambda x: (
                np.log(np.sum(np.exp(x - np.max(x, axis=1, keepdims=True)), axis=1, keepdims=True))
                + np.max(x, axis=1, keepdims=True)
            ),
            "mean shift": lambda x: (
                lambda m: np.log(np.sum(np.exp(x - m), axis=1, keepdims=True)) + m
            )(np.mean(x, axis=1, keepdims=True)),
            "sum without keepdims": lambda x: (
                lambda m: np.log(np.sum(np.exp(x - m), axis=1))[:, None] + m
            )(np.max(x, axis=1, keepdims=True)),
            "max without keepdims": lambda x: (lambda m: np.log(np.sum(np.exp(x - m))) + m)(
                np.max(x)
            ),
            "log2": lambda x: (lambda m: np.log2(np.sum(np.exp(x - m), axis=1, keepdims=True)) + m)(
                np.max(x, axis=1, keepdims=True)
            ),
            "the shifted input written before exp": lambda x: _lse_written(x, "z before"),
            "another array's max": lambda x: (
                lambda m: np.log(np.sum(np.exp(x - m), axis=1, keepdims=True)) + m
            )(np.max(x * 2.0, axis=1, keepdims=True)),
        },
        fused_writes=[
            lambda x: _lse_written(x, "e"),
            lambda x: _lse_written(x, "z after"),
            _output_written_into(lse),
            _output_written_in_place(lse),
            _lse_parts_used_elsewhere,
        ],
        rules=[(np.add, 0), (np.log, 0), (np.sum, 0), (np.exp, 0), (np.subtract, 0), (np.max, 0)],
        program=lse,
    ),
    "log_softmax": dict(
        fused=F.log_softmax.name,
        forms=[
            log_softmax_of_lse,
            log_softmax_shifted,
            log_softmax_plain,
            log_softmax_whole,
            lambda x: log_softmax_of_lse(x, axis=0),
            lambda x: x - np.log(np.sum(np.exp(x), axis=0, keepdims=True)),
            # a shift over another axis does not cancel: z stays the parent
            lambda x: (lambda z: z - np.log(np.sum(np.exp(z), axis=1, keepdims=True)))(
                x - np.max(x, axis=0, keepdims=True)
            ),
            lambda x: log_softmax_shifted(x, axis=(0, 1)),
        ],
        hand=lambda x: x.nbytes,
        saves_output=True,
        near_misses={
            "another array's lse": lambda x: x - lse(x * 2.0),
            "lse of a broadcast row": lambda x: x - lse(x[:1]),
            "lse subtracted the other way": lambda x: lse(x) - x,
            "a constant subtracted": lambda x: (
                x - np.log(np.sum(np.exp(x), axis=1, keepdims=True) + 1.0)
            ),
        },
        fused_writes=[
            _output_written_into(log_softmax_shifted),
            _output_written_in_place(log_softmax_shifted),
        ],
        rules=[(np.subtract, 0), (np.log, 0), (np.sum, 0), (np.exp, 0)],
        program=log_softmax_shifted,
    ),
    "sigmoid": dict(
        fused=F.sigmoid.name,
        forms=[sigmoid, sigmoid_float, lambda x: 1 / (1 + np.exp(-x[:, 1:]))],
        hand=lambda x: x.nbytes,
        saves_output=True,
        near_misses={
            "numerator 2": lambda x: 2 / (1 + np.exp(-x)),
            "plus 2": lambda x: 1 / (2 + np.exp(-x)),
            "exp(x)": lambda x: 1 / (1 + np.exp(x)),
            "minus": lambda x: 1 / (1 - np.exp(-x)),
            "an array numerator": lambda x: onp.ones(x.shape) / (1 + np.exp(-x)),
            "a broadcast numerator": lambda x: onp.ones((1, x.shape[1])) / (1 + np.exp(-x)),
            "NumPy's float64 numerator": lambda x: onp.float64(1.0) / (1 + np.exp(-x)),
            "times -1": lambda x: 1 / (1 + np.exp(-1.0 * x)),
        },
        # (e += 1 on a Box of an array the program does not own is e = e + 1, autograd's way)
        fused_writes=[
            lambda x: _sigmoid_written(x, "after"),
            lambda x: _sigmoid_written(x, "before"),
            _output_written_into(sigmoid),
            _output_written_in_place(sigmoid),
            _sigmoid_parts_used_elsewhere,
        ],
        rules=[(np.divide, 1), (np.add, 1), (np.exp, 0), (np.negative, 0)],
        program=sigmoid,
    ),
    "softplus": dict(
        fused=F.softplus.name,
        forms=[
            softplus,
            softplus_log1p,
            lambda x: np.log(np.exp(x) + 1.0),
            _softplus_used_elsewhere,
        ],
        hand=lambda x: x.nbytes,
        saves_output=False,  # exp(x)
        near_misses={
            "plus 2": lambda x: np.log(2 + np.exp(x)),
            "log1p of 1 + exp": lambda x: np.log1p(1 + np.exp(x)),
            "log of exp": lambda x: np.log(np.exp(x)) + x,
            "2 exp": lambda x: np.log(1 + np.exp(x) * 2.0),
            "log10": lambda x: np.log10(1 + np.exp(x)),
            "log1p of exp2": lambda x: np.log1p(np.exp2(x)),
        },
        fused_writes=[
            _output_written_into(softplus),
            _output_written_in_place(softplus),
            lambda x: softplus(-x),
            _softplus_exp_written,
        ],
        rules=[(np.log, 0), (np.add, 1), (np.exp, 0), (np.log1p, 0)],
        program=softplus,
    ),
    "tanh": dict(
        fused=F.tanh.name,
        forms=[tanh_exp, tanh_exp_shared, tanh_exp2, tanh_exp2_shared],
        hand=lambda x: x.nbytes,
        saves_output=True,
        near_misses={
            "exp(-3x)": lambda x: (1 - np.exp(-3 * x)) / (1 + np.exp(-3 * x)),
            "different exps": lambda x: (1 - np.exp(-2 * x)) / (1 + np.exp(-2 * x * 1.0)),
            "sum over difference": lambda x: (np.exp(x) + np.exp(-x)) / (np.exp(x) - np.exp(-x)),
            "another argument": lambda x: (np.exp(x) - np.exp(-x)) / (np.exp(x) + np.exp(-x[::-1])),
            "2 - exp": lambda x: (2 - np.exp(-2 * x)) / (1 + np.exp(-2 * x)),
            "written between": _tanh_written,
        },
        fused_writes=[
            _output_written_into(tanh_exp),
            _output_written_in_place(tanh_exp),
            _tanh_parts_used_elsewhere,
        ],
        rules=[(np.divide, 0), (np.subtract, 0), (np.add, 0), (np.exp, 0), (np.negative, 0)],
        program=tanh_exp,
    ),
}

FORMS = [(name, i) for name, t in IDIOM_TESTS.items() for i in range(len(t["forms"]))]
NEAR = [(name, k) for name, t in IDIOM_TESTS.items() for k in sorted(t["near_misses"])]
WRITES = [(name, i) for name, t in IDIOM_TESTS.items() for i in range(len(t["fused_writes"]))]
RULES = [(name, i) for name, t in IDIOM_TESTS.items() for i in range(len(t["rules"]))]
C = onp.random.RandomState(5).randn(3, 4)


def loss(program):
    return lambda x: np.sum(np.sin(program(x) * 1.5)) + np.sum(program(x) ** 2)


def _x(seed, shape=(3, 4)):
    return onp.random.RandomState(seed).randn(*shape)


def _fused_and_unfused(f, *args):
    with fusion(True):
        r1 = f(*args)
    with fusion(False):
        r0 = f(*args)
    return r1, r0


def _assert_right(f, x, fused_name, fused):
    """f records fused_name iff fused; its gradient equals the unfused one and central
    differences."""
    assert (fused_name in recorded(f, x)) is fused
    with fusion(False):
        assert fused_name not in recorded(f, x)
    (v1, g1), (v0, g0) = _fused_and_unfused(lambda z: (f(z), grad(f)(z)), x)
    assert v1 == v0  # the values are NumPy's own
    onp.testing.assert_allclose(g1, g0, rtol=1e-12, atol=1e-13)
    onp.testing.assert_allclose(
        g1, central_gradient(lambda z: float(f(z)), x), rtol=1e-6, atol=1e-8
    )


@pytest.mark.parametrize("name, i", FORMS)
def test_forms_fuse_and_equal_unfused_and_central_differences(name, i):
    t = IDIOM_TESTS[name]
    _assert_right(loss(t["forms"][i]), _x(i), t["fused"], True)


@pytest.mark.parametrize("name, key", NEAR)
def test_look_alikes_are_not_fused_and_stay_right(name, key):
    t = IDIOM_TESTS[name]
    _assert_right(loss(t["near_misses"][key]), _x(1), t["fused"], False)


@pytest.mark.parametrize("name, i", WRITES)
def test_writes_around_the_pattern(name, i):
    t = IDIOM_TESTS[name]
    _assert_right(loss(t["fused_writes"][i]), _x(2), t["fused"], True)


@pytest.mark.parametrize("name", sorted(IDIOM_TESTS))
@pytest.mark.parametrize("square", [False, True])
def test_saved_bytes_equal_the_hand_written_set(name, square):
    # after the forward pass of sum(idiom(x) * W) (W a constant the multiply keeps) the tape
    # holds W and what the hand-written gradient keeps (the idiom's own record), less than
    # unfused; with sum(idiom(x) ** 2) the square's input (the output) too, held once
    t = IDIOM_TESTS[name]
    x = _x(3, (50, 40))
    W = _x(4, (50, 1) if name == "logsumexp" else (50, 40))
    if square:
        f = lambda z: np.sum(t["program"](z) ** 2)
        out_bytes = 50 * 8 if name == "logsumexp" else x.nbytes
        extra = 0 if t["saves_output"] else out_bytes
    else:
        f = lambda z: np.sum(t["program"](z) * W)
        extra = W.nbytes

    def held():
        vjp, _ = make_vjp(f)(x)
        try:
            return memory.stats()["saved_bytes"]
        finally:
            vjp.release()

    fused, unfused = _fused_and_unfused(held)
    assert fused == t["hand"](x) + extra
    assert unfused > fused or (name == "softplus" and unfused == fused)


@pytest.mark.parametrize("name", sorted(IDIOM_TESTS))
def test_hessian_equals_unfused_and_central_differences(name):
    t = IDIOM_TESTS[name]
    f = loss(t["program"])
    x = _x(4)
    h1, h0 = _fused_and_unfused(lambda z: hessian(f)(z), x)
    onp.testing.assert_allclose(h1, h0, rtol=1e-10, atol=1e-11)
    g = grad(f)
    for k in range(x.size):  # each row of the Hessian: d grad / dx_k
        e = onp.zeros_like(x)
        e.flat[k] = 1e-5
        cd = (g(x + e) - g(x - e)) / 2e-5
        onp.testing.assert_allclose(h1.reshape(x.size, x.size)[k], cd.ravel(), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("name", sorted(IDIOM_TESTS))
def test_grad_of_grad_and_traced_cotangent(name):
    t = IDIOM_TESTS[name]
    f = loss(t["program"])
    x, v = _x(5), _x(6)
    outer = grad(lambda z: np.sum(grad(f)(z) * v))
    h1, h0 = _fused_and_unfused(outer, x)
    onp.testing.assert_allclose(h1, h0, rtol=1e-10, atol=1e-11)
    # the inner values plain (fused), the cotangent the outer's Box
    inner = lambda y, u: np.sum(t["program"](y) ** 2 * u)
    assert t["fused"] in recorded(lambda y: inner(y, v), x)
    outer2 = lambda u: np.sum(grad(inner)(x, u) * C)
    g1, g0 = _fused_and_unfused(grad(outer2), v)
    onp.testing.assert_allclose(g1, g0, rtol=1e-12, atol=1e-13)
    onp.testing.assert_allclose(
        g1, central_gradient(lambda u: float(outer2(u)), v), rtol=1e-6, atol=1e-8
    )


@pytest.mark.parametrize("name", sorted(IDIOM_TESTS))
def test_forward_mode_and_const_graph(name):
    t = IDIOM_TESTS[name]
    f = loss(t["program"])
    x, v = _x(7), _x(8)
    (y1, t1), (y0, t0) = _fused_and_unfused(lambda: make_jvp(f)(x)(v))
    assert y1 == y0
    onp.testing.assert_allclose(t1, t0, rtol=1e-12, atol=1e-13)
    onp.testing.assert_allclose(t1, onp.sum(grad(f)(x) * v), rtol=1e-10)
    # forward over reverse (the inner tape's values are the outer's: recorded as written) and
    # reverse over forward (the outer reverse tape records the primal calls: fused there)
    fwd_rev = lambda z: make_jvp(grad(f))(z)(v)[1]
    rev_fwd = grad(lambda z: make_jvp(f)(z)(v)[1])
    for h in (fwd_rev, rev_fwd):
        h1, h0 = _fused_and_unfused(h, x)
        onp.testing.assert_allclose(h1, h0, rtol=1e-10, atol=1e-11)
    assert t["fused"] in recorded(lambda z: make_jvp(f)(z)(v)[1], x)
    hv = (grad(f)(x + 1e-5 * v) - grad(f)(x - 1e-5 * v)) / 2e-5
    onp.testing.assert_allclose(fwd_rev(x), hv, rtol=1e-5, atol=1e-6)
    onp.testing.assert_allclose(rev_fwd(x), hv, rtol=1e-5, atol=1e-6)
    fast = const_graph(grad(f))
    fast(x)
    for seed in (9, 10):  # replays at fresh inputs
        z = _x(seed)
        onp.testing.assert_allclose(fast(z), grad(f)(z), rtol=1e-12, atol=1e-13)
    onp.testing.assert_allclose(
        grad(f, recompute="elementwise")(x), grad(f)(x), rtol=1e-12, atol=1e-13
    )


@pytest.mark.parametrize("name", sorted(IDIOM_TESTS))
@pytest.mark.parametrize("dtype", [onp.float32, onp.float16])
def test_gradient_keeps_the_input_dtype(name, dtype):
    t = IDIOM_TESTS[name]
    x = _x(11).astype(dtype)
    f = lambda z: np.sum(t["program"](z) * C.astype(dtype))
    assert t["fused"] in recorded(f, x)
    g1, g0 = _fused_and_unfused(grad(f), x)
    assert g1.dtype == dtype and g1.shape == x.shape
    onp.testing.assert_allclose(g1, g0, rtol=1e-2 if dtype == onp.float16 else 1e-5, atol=2e-3)


@pytest.mark.parametrize("name", sorted(IDIOM_TESTS))
def test_integer_and_complex_inputs_are_not_fused(name):
    t = IDIOM_TESTS[name]
    xi = onp.arange(12).reshape(3, 4) % 5 - 2
    assert t["fused"] not in recorded(lambda z: np.sum(t["program"](z * 1)), xi)
    xc = _x(12) * (1 + 0.5j)
    f = lambda z: np.real(np.sum(t["program"](z) * C))
    if name in ("logsumexp", "log_softmax"):  # (max of complex values: no derivative)
        f = lambda z: np.real(np.sum(log_softmax_plain(z) * C))
    assert t["fused"] not in recorded(f, xc)


@contextlib.contextmanager
def _own_rule(prim, argnum):
    """prim's VJP rule for argument argnum replaced by a wrong one (the stock rule's cotangent
    doubled, plus 0.5) inside the block."""
    rules = prim.vjpmakers
    old = rules[argnum]
    rules[argnum] = lambda g, ans, *args, **kw: 2.0 * old(g, ans, *args, **kw) + 0.5
    try:
        yield
    finally:
        rules[argnum] = old


@pytest.mark.parametrize("name, i", RULES)
def test_a_rule_of_the_users_own_is_not_bypassed(name, i):
    t = IDIOM_TESTS[name]
    prim, argnum = t["rules"][i]
    program = t["program"] if prim is not np.log1p else softplus_log1p
    x = _x(13)
    f = lambda z: np.sum(program(z) * C)
    with _own_rule(prim, argnum):
        assert t["fused"] not in recorded(f, x)
        g1, g0 = _fused_and_unfused(grad(f), x)
        onp.testing.assert_allclose(g1, g0, rtol=1e-12, atol=1e-13)
    assert not onp.allclose(g0, grad(f)(x))  # the rule made a difference
    assert t["fused"] in recorded(f, x)  # and fusion is back with the stock rule


_EXTEND_SCRIPT = """
import numpy as onp
import gradcy.numpy as np
from gradcy import grad
from gradcy._core import active_tape
from gradcy.extend import defvjp
x = onp.random.RandomState(0).randn(3, 4)
f = lambda z: np.sum(np.log1p(np.exp(z)) + 1 / (1 + np.exp(-z)))
before = grad(f)(x)
defvjp(np.exp, lambda ans, z: lambda g: 3.0 * g * ans, save=("ans",))   # the user's own
names = []
def g(z):
    out = f(z)
    names.extend(active_tape().node_info(i)["primitive"] for i in range(len(active_tape())))
    return out
after = grad(g)(x)
e = onp.exp(x)
want = 3.0 * e / (1 + e) + 3.0 * e / (1 + e) ** 2       # the chain rule with exp's rule x3
assert not any("fused" in str(n) for n in names), names
onp.testing.assert_allclose(after, want, rtol=1e-12)
onp.testing.assert_allclose(before, want / 3.0, rtol=1e-12)
print("ok")
"""


def test_a_rule_registered_with_gradcy_extend_turns_the_idioms_of_its_primitive_off():
    # (in a child process: a rule registered with defvjp stays for the life of the process)
    import os
    import subprocess
    import sys

    env = dict(
        os.environ,
        PYTHONPATH=os.pathsep.join(
            [os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(F.__file__))))]
            + os.environ.get("PYTHONPATH", "").split(os.pathsep)
        ),
    )
    r = subprocess.run(
        [sys.executable, "-c", _EXTEND_SCRIPT], capture_output=True, text=True, env=env, timeout=120
    )
    assert r.returncode == 0 and r.stdout.strip() == "ok", r.stderr


@pytest.mark.parametrize(
    "prim, args",
    [
        (F.logsumexp, (1,)),
        (F.logsumexp, (None,)),
        (F.log_softmax, (1,)),
        (F.log_softmax, (0,)),
        (F.sigmoid, ()),
        (F.softplus, ()),
        (F.tanh, ()),
        (F.softmax, (1,)),
    ],
)
def test_fused_rules_to_second_order_in_both_modes(prim, args):
    # the fused primitives called directly: their VJP and JVP against central differences
    check_deep(lambda z: prim(z, *args), _x(14), order=2)


def test_fused_logsumexp_record_reads_exp_and_its_sum():
    # the record's exp(x - m) and sum give the rule the weights; they equal exp(x - ans)
    x = _x(15)
    m = onp.max(x, axis=1, keepdims=True)
    e = onp.exp(x - m)
    s = e.sum(axis=1, keepdims=True)
    ans = onp.log(s) + m
    g = _x(16)[:, :1]
    onp.testing.assert_allclose(
        F.logsumexp_vjp(g, ans, None, 1, e, s), F.logsumexp_vjp(g, ans, x, 1), rtol=1e-14
    )


def test_sigmoid_overflow_gives_the_limit():
    # exp(-x) overflows to inf at x = -800: unfused, exp's rule makes 0 * inf = nan; the fused
    # rule reads the output (0 there) and gives the derivative's limit, 0. Like a hand-written
    # ans * (1 - ans) (PyTorch's and JAX's rule too), it is exact to an absolute 1e-16 for
    # large x, where ans rounds to within 1e-16 of 1
    x = onp.array([[-800.0, -30.0, 0.0, 30.0, 800.0]])
    f = lambda z: np.sum(sigmoid(z))
    with onp.errstate(over="ignore", invalid="ignore"):
        g = grad(f)(x)
        with fusion(False):
            g0 = grad(f)(x)
    want = onp.exp(-onp.abs(x)) / (1 + onp.exp(-onp.abs(x))) ** 2
    onp.testing.assert_allclose(g, want, rtol=1e-12, atol=2e-16)
    assert onp.isnan(g0[0, 0]) and onp.allclose(g0[0, 1:4], want[0, 1:4], rtol=1e-12)


def test_threads_recording_on_one_tape():
    # NumPy lets other threads run during each call: they append to the same arena while a
    # matcher reads it
    import threading

    x = _x(17, (16, 64))

    def f(z):
        parts = [0.0] * 3

        def work(k):
            for _ in range(10):
                y = z * (1.0 + k)
                parts[k] = parts[k] + np.sum(lse(y) ** 2) + np.sum(sigmoid(y) * tanh_exp2(y))

        threads = [threading.Thread(target=work, args=(k,)) for k in range(3)]
        for th in threads:
            th.start()
        for th in threads:
            th.join()
        return parts[0] + parts[1] + parts[2]

    g1, g0 = _fused_and_unfused(grad(f), x)
    onp.testing.assert_allclose(g1, g0, rtol=1e-10, atol=1e-12)


def test_idiom_table_lists_every_fused_primitive():
    assert {v[1].name for v in F.IDIOMS.values()} == COVERED | {F.softmax.name}
    assert set(IDIOM_TESTS) | {"softmax"} == set(F.IDIOMS)
