"""The C computations of the hot elementwise VJPs (gradcy._rules.ElementwiseRule) against the
Python rules they stand for: the same cotangent, bit for bit, with the same type, dtype and
shape, for every dtype, broadcast shape, 0-d array and Python scalar, whether the rule may write
into g (the sweep owns it and the node has one parent) or not; g given by the caller is never
written; higher-order differentiation (traced g) takes the Python rules."""

import contextlib

import numpy as onp
import pytest

import gradcy.numpy as np
from gradcy import grad, make_vjp
from gradcy._rules import ElementwiseRule
from op_records.elementwise import ELEMENTWISE, FAST
from vjp_harness import raw_cotangent

FAST_UNARY = [n for n in FAST if ELEMENTWISE[n].nargs == 1]
FAST_BINARY = [n for n in FAST if ELEMENTWISE[n].nargs == 2]
DTYPES = [onp.float64, onp.float32, onp.float16, onp.complex128, onp.complex64]


@contextlib.contextmanager
def python_rules():
    """Every ElementwiseRule replaced by the Python rule it computes (the reference)."""
    saved = []
    for name in FAST_UNARY + FAST_BINARY:
        rules = getattr(np, name).vjp.rules
        for k, rule in list(rules.items()):
            if type(rule) is ElementwiseRule:
                saved.append((rules, k, rule))
                rules[k] = rule.fn
    try:
        yield
    finally:
        for rules, k, rule in saved:
            rules[k] = rule


def test_the_hot_rules_are_elementwise_rules():
    """The rules these tests compare are the ones registered (else they compare nothing)."""
    for name in FAST:
        rules = getattr(np, name).vjp.rules
        for k in range(ELEMENTWISE[name].nargs):
            fast = k in ELEMENTWISE[name].fast
            assert (type(rules.get(k)) is ElementwiseRule) is fast, (name, k, fast)
    with python_rules():
        assert type(np.sin.vjp.rules[0]) is not ElementwiseRule
    assert type(np.sin.vjp.rules[0]) is ElementwiseRule


def assert_same(got, want):
    """Bit-for-bit the same value, with the same type, dtype and shape."""
    assert type(got) is type(want), (type(got), type(want))
    assert onp.result_type(got) == onp.result_type(want), (
        onp.result_type(got),
        onp.result_type(want),
    )
    assert onp.shape(got) == onp.shape(want)
    onp.testing.assert_array_equal(got, want, strict=True)


def shared(op):
    """op's output used twice: the multiplies' g is shared (one of them gets it owned), and
    op's own g is their sum."""

    def f(*a):
        t = op(*a)
        return t * 3.0 + t * 2.0

    return f


def scaled(op):
    """op's g is a fresh product the sweep owns (only op's rule reads it)."""
    return lambda *a: op(*a) * 3.0


def compare(fun, args, i):
    got = raw_cotangent(fun, args, i)
    with python_rules():
        want = raw_cotangent(fun, args, i)
    assert_same(got, want)
    return got


def _value(shape, dtype, seed):
    rs = onp.random.RandomState(seed)
    v = rs.uniform(0.2, 0.9, shape)
    if onp.issubdtype(dtype, onp.complexfloating):
        v = v + 1j * rs.uniform(-0.5, 0.5, shape)
    return v.astype(dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", FAST_UNARY)
@pytest.mark.parametrize("shape", [(3,), (2, 3), ()])
@pytest.mark.parametrize("wrap", [lambda op: op, scaled, shared])
def test_unary_matches_python_rule(name, dtype, shape, wrap):
    op = getattr(np, name)
    compare(wrap(op), (_value(shape, dtype, 1),), 0)


@pytest.mark.parametrize("name", FAST_UNARY)
@pytest.mark.parametrize("wrap", [lambda op: op, scaled, shared])
def test_unary_of_python_float_and_swapped_bytes(name, wrap):
    op = getattr(np, name)
    compare(wrap(op), (0.3,), 0)
    compare(wrap(op), (_value((3,), onp.float64, 2).astype(">f8"),), 0)


# (x, y) pairs: broadcasting either way, 0-d arrays, Python scalars, mixed dtypes
def _pairs(dtype):
    v = lambda shape, seed: _value(shape, dtype, seed)
    return [
        (v((2, 3), 1), v((2, 3), 2)),
        (v((2, 3), 1), v((3,), 2)),
        (v((3,), 1), v((2, 3), 2)),
        (v((2, 3), 1), v((1, 3), 2)),
        (v((2, 1), 1), v((1, 3), 2)),
        (v((3,), 1), v((), 2)),
        (v((), 1), v((3,), 2)),
        (v((), 1), v((), 2)),
        (v((3,), 1), 1.5),
        (1.5, v((3,), 2)),
        (v((3,), 1), 2),
        (v((3,), 1), _value((3,), onp.float64, 2)),
        (_value((3,), onp.float32, 1), v((3,), 2)),
    ]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", FAST_BINARY)
@pytest.mark.parametrize("wrap", [lambda op: op, scaled, shared])
def test_binary_matches_python_rule(name, dtype, wrap):
    op = getattr(np, name)
    for x, y in _pairs(dtype):
        for i in (0, 1):
            if isinstance((x, y)[i], int):
                continue  # (an int argument has no gradient)
            compare(wrap(op), (x, y), i)


@pytest.mark.parametrize("name", FAST_BINARY)
def test_both_arguments_traced(name):
    """Two parents (x op x, x op y both traced): neither rule may write into g."""
    op = getattr(np, name)
    for dtype in (onp.float64, onp.float32):
        x, y = _value((2, 3), dtype, 1), _value((3,), dtype, 2)
        for wrap in (lambda o: o, scaled, shared):
            f = wrap(op)
            compare(lambda a: f(a, a), (x,), 0)
            got = grad(lambda a, b: np.sum(f(a, b)), argnum=(0, 1))(x, y)
            with python_rules():
                want = grad(lambda a, b: np.sum(f(a, b)), argnum=(0, 1))(x, y)
            for gv, wv in zip(got, want):
                assert_same(gv, wv)


def test_values_against_numpy():
    """The sin chain's gradient (every fast rule of the benchmark on its path) against the
    derivative written out in NumPy."""
    x = onp.array([0.1, 0.5, 0.9])

    def f(x):
        for _ in range(20):
            x = np.sin(x) * 1.0001 + 0.01 * x
        return np.sum(x)

    d = onp.ones(3)
    z = x.copy()
    for _ in range(20):
        d = d * (onp.cos(z) * 1.0001 + 0.01)
        z = onp.sin(z) * 1.0001 + 0.01 * z
    onp.testing.assert_allclose(grad(f)(x), d, rtol=1e-13)


@pytest.mark.parametrize("name", FAST_UNARY + FAST_BINARY)
def test_caller_g_is_not_written(name):
    """A cotangent the caller passes in is read, never overwritten (its holder sees it)."""
    op = getattr(np, name)
    x = _value((3,), onp.float64, 1)
    f = (lambda a: op(a)) if name in FAST_UNARY else (lambda a: op(a, 1.5))
    for h in (f, scaled(f)):
        vjp, ans = make_vjp(h)(x)
        try:
            g = onp.full(3, 0.75)
            out = vjp(g)
        finally:
            vjp.release()
        onp.testing.assert_array_equal(g, onp.full(3, 0.75))
        assert onp.all(onp.isfinite(out))


def test_float_constants_of_a_loop():
    """multiply's and divide's rules keep a Python float as a cached 0-d array: a new float
    (another value, or a complex g) gets its own."""
    x = _value((3,), onp.float64, 1)
    for c in (2.0, 3.0, 2.0, -0.5):
        for name in ("multiply", "divide"):
            op = getattr(np, name)
            compare(scaled(lambda a: op(a, c)), (x,), 0)
            compare(scaled(lambda a: op(a, c)), (x.astype(onp.complex128),), 0)
            compare(scaled(lambda a: op(a, c)), (x.astype(onp.float32),), 0)
        compare(scaled(lambda a: np.multiply(c, a)), (x,), 0)


@pytest.mark.parametrize(
    "name,d2",
    [
        ("sin", lambda x: -onp.sin(x)),
        ("cos", lambda x: -onp.cos(x)),
        ("sinh", onp.sinh),
        ("cosh", onp.cosh),
        ("exp", onp.exp),
        ("tanh", lambda x: -2.0 * onp.tanh(x) * (1.0 - onp.tanh(x) ** 2)),
        ("negative", lambda x: onp.zeros_like(x)),
    ],
)
def test_second_order(name, d2):
    """grad(grad(f)): the inner sweep's g is traced, the Python rules run on Boxes."""
    op = getattr(np, name)
    x = onp.array([0.1, 0.5, 0.9])
    h = grad(lambda a: np.sum(grad(lambda b: np.sum(op(b) * 2.0))(a)))
    onp.testing.assert_allclose(h(x), 2.0 * d2(x), rtol=1e-12, atol=1e-15)


def test_second_order_binary():
    x = onp.array([0.1, 0.5, 0.9])
    # f = sum(x * x / 2.0 - 3.0 * x + x / 4.0): f' = x - 3 + 1/4, f'' = 1
    f = lambda a: np.sum(np.subtract(np.multiply(a, a) / 2.0, 3.0 * a) + np.divide(a, 4.0))
    h = grad(lambda a: np.sum(grad(f)(a) * a))  # d/dx sum(f'(x) x) = f''(x) x + f'(x)
    onp.testing.assert_allclose(h(x), x + (x - 2.75), rtol=1e-13)


def test_rule_views_and_errors():
    """An ElementwiseRule called from Python is its Python rule; a bad kind is refused."""
    rule = np.sin.vjp.rules[0]
    x = onp.array([0.1, 0.5])
    assert_same(rule(onp.ones(2), None, x), rule.fn(onp.ones(2), None, x))
    with pytest.raises(ValueError, match="unknown kind"):
        ElementwiseRule("nope", lambda g, ans, x: g)
    with pytest.raises(ValueError, match="derivative's ufunc"):
        ElementwiseRule("times_d", lambda g, ans, x: g)
