"""Property-based tests: random compositions of registered primitives.

A program is a chain of 2-5 operations drawn from a pool (elementwise functions, binary
functions broadcasting against a constant of a random compatible shape, reductions with a
random axis/keepdims, reshape/transpose/getitem with random valid indices, dot/matmul against
constants of compatible shapes, and products of the value with itself), applied to a random
float64 input of 0 to 3 dimensions. Shapes are tracked while drawing so every operation is
valid, and a bound on |value| is tracked so the pool never offers an operation that would blow
up (each operator's record says how far it grows its input; an argument whose domain is not
the real line gets x**2 + 0.5, a constant one drawn in its domain); operations that can make
equal entries (fancy indices with repeats, maximum against a broadcast constant) keep
max/min/std reductions out of the rest of the chain, since central differences are not a
derivative at a tie. The pool is every elementwise and reduction record with a bound
(tests/op_records/).

Properties:
  * the forward- and reverse-mode derivatives match central differences (check_grads,
    modes ('fwd', 'rev'), order 1);
  * with a float32 input (constants float32 or float64, drawn), the dtype contract holds:
    the raw cotangent on the tape and make_vjp's gradient have the input's dtype and shape
    (make_vjp's also its type), and make_jvp's tangent has the output's dtype and shape.

Examples are derandomized (reproducible in CI); a failure prints the program as an expression.
"""

import numpy as onp
import pytest
from hypothesis import HealthCheck, given, note, settings
from hypothesis import strategies as st

import gradcy.numpy as gnp
from gradcy import make_jvp, make_vjp
from gradcy.test_util import check_grads
from op_records.elementwise import ELEMENTWISE, RECORDS as ELEMENTWISE_RECORDS
from op_records.reductions import RECORDS as REDUCTION_RECORDS
from vjp_harness import NEP50, dtype_ok, raw_cotangent

COVERED = set()  # this module checks compositions, not individual primitives

SETTINGS = settings(
    max_examples=60,
    deadline=None,
    derandomize=True,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
MAX_BOUND = 20.0  # no operation may take |value| above this
MAX_SIZE = 27


# =============================================================================
# Programs
# =============================================================================
class Op:
    """One step: fn(x, c) with c the step's constant (float64 data cast to the constants'
    dtype when the program runs); fmt renders it as source ({} the input, {c} the constant)."""

    def __init__(self, name, fmt, fn, const=None):
        self.name, self.fmt, self.fn, self.const = name, fmt, fn, const

    def __call__(self, x, cdtype):
        c = None if self.const is None else self.const.astype(cdtype)
        return self.fn(x, c)

    def expr(self, inner):
        c = "" if self.const is None else f"C{self.const.shape}"
        return self.fmt.format(inner, c=c)


class Program:
    def __init__(self, in_shape, ops, out_shape):
        self.in_shape, self.ops, self.out_shape = in_shape, ops, out_shape

    def __call__(self, x, cdtype=onp.float64):
        for op in self.ops:
            x = op(x, cdtype)
        return x

    def __repr__(self):
        s = "x"
        for op in self.ops:
            s = op.expr(s)
        return f"<x{self.in_shape} -> {s} -> shape {self.out_shape}>"


def _const(draw, shape, lo, hi):
    seed = draw(st.integers(0, 2**16))
    return onp.random.RandomState(seed).uniform(lo, hi, shape)


# ---- the pool: each operator's record says how far it may grow its input (the records with
# no bound are not drawn), its domain and whether it picks entries (tests/op_records/)
UNARY = [r for r in ELEMENTWISE_RECORDS if r.nargs == 1 and r.grows]
BINARY = [r for r in ELEMENTWISE_RECORDS if r.nargs == 2 and r.grows]
REDUCTIONS = [r for r in REDUCTION_RECORDS if r.bound]


def _into_domain(record, arg):
    """(source, function, bound from b) putting a value bounded by b in the domain of argument
    `arg` of the record's operator: itself where any value will do, else x**2 + 0.5."""
    if record.inputs[arg] == "normal":
        return "{}", lambda x: x, lambda b: b
    return "({} ** 2 + 0.5)", lambda x: x**2 + 0.5, lambda b: b * b + 0.5


def _const_range(record, arg):
    """The range of a constant for argument `arg` (away from zero where the domain says so)."""
    kind = record.inputs[arg]
    return {"normal": (-1.0, 1.0), "nonzero": (0.5, 1.5)}.get(kind, kind)


def _broadcast_partner(draw, shape):
    """A shape that broadcasts with `shape` (dims equal or 1 on either side, maybe extra
    leading dims), keeping the result at most 3-d."""
    n = len(shape)
    m = draw(st.integers(max(0, n - 1), min(3, n + 1)))
    out = []
    for k in range(1, m + 1):  # from the right
        if k <= n:
            d = shape[-k]
            out.append(draw(st.sampled_from([d, 1] if d != 1 else [1, 2, 3])))
        else:
            out.append(draw(st.integers(1, 3)))
    return tuple(reversed(out))


FAMILIES = ("unary", "binary", "reduce", "shape", "product")


@st.composite
def programs(draw, min_ops=2, max_ops=5, focus=None):
    """A random valid chain; with `focus`, every other step (from a random first one) is drawn
    from that family."""
    ndim = draw(st.sampled_from([2, 1, 3, 0]))
    shape = tuple(draw(st.lists(st.sampled_from([2, 3, 1]), min_size=ndim, max_size=ndim)))
    in_shape = shape
    bound, ties = 1.0, False  # the input is uniform in [-1, 1]
    ops = []
    n_ops = draw(st.integers(min_ops, max_ops))
    first = draw(st.integers(0, n_ops - 1)) if focus else None
    for step in range(n_ops):
        family = focus if focus and step >= first and (step - first) % 2 == 0 else None
        for _attempt in range(4):  # a draw can be invalid here (too big, blows up): redraw
            op, new_shape, new_bound, new_ties = _draw_step(draw, shape, bound, ties, family)
            if op is not None:
                break
        else:  # squash instead
            op, new_shape, new_bound, new_ties = (
                Op("tanh", "tanh({})", lambda x, c: gnp.tanh(x)),
                shape,
                1.0,
                ties,
            )
        ops.append(op)
        shape, bound, ties = new_shape, new_bound, new_ties
    return Program(in_shape, ops, shape)


def _draw_step(draw, shape, bound, ties, family=None):
    """(op or None, shape, bound, ties) after one drawn operation (of `family` if given)."""
    if family is None:
        families = ["unary", "binary", "reduce", "shape"] + (["product"] if shape else [])
        family = draw(st.sampled_from(families))
    elif family == "product" and not shape:
        return None, shape, bound, ties
    if family == "unary":
        fits = [r for r in UNARY if r.grows(_into_domain(r, 0)[2](bound)) <= MAX_BOUND]
        r = draw(st.sampled_from(fits))
        src, into, inb = _into_domain(r, 0)
        newb = r.grows(inb(bound))
        f = getattr(gnp, r.name)
        fmt = f"{r.name}({src})"
        return Op(r.name, fmt, lambda x, c, f=f, into=into: f(into(x))), shape, newb, ties
    if family == "binary":
        return _draw_binary(draw, shape, bound, ties)
    if family == "reduce":
        return _draw_reduction(draw, shape, bound, ties)
    if family == "shape":
        op, shape, ties = _draw_shape_op(draw, shape, ties)
        return op, shape, bound, ties
    op, shape, bound = _draw_product(draw, shape, bound)
    return op, shape, bound, ties


def _draw_binary(draw, shape, bound, ties):
    """A binary operator against a constant of a broadcasting shape, the traced value either
    argument (where(M, x, C) for where)."""
    r = draw(st.sampled_from(BINARY + [ELEMENTWISE["where"]]))
    cshape = _broadcast_partner(draw, shape)
    new_shape = tuple(onp.broadcast_shapes(shape, cshape))
    if r.name == "where":
        arg, (src, into, inb), (lo, hi) = 0, _into_domain(r, 1), _const_range(r, 2)
        newb = max(bound, 1.0)
    else:
        arg = draw(st.integers(0, 1))
        (src, into, inb), (lo, hi) = _into_domain(r, arg), _const_range(r, 1 - arg)
        bounds = [inb(bound), max(abs(lo), abs(hi))]
        newb = r.grows(*(bounds if arg == 0 else bounds[::-1]))
    if len(new_shape) > 3 or int(onp.prod(new_shape)) > MAX_SIZE or newb > MAX_BOUND:
        return None, shape, bound, ties
    c = _const(draw, cshape, lo, hi)
    f = getattr(gnp, r.name)
    if r.name == "where":
        mask = onp.random.RandomState(c.size).uniform(size=new_shape) < 0.5
        fmt = f"where(M, {src}, {{c}})"

        def fn(x, c, mask=mask, into=into):
            return gnp.where(mask, into(x), c)

    elif arg == 0:
        fmt = f"{r.name}({src}, {{c}})"

        def fn(x, c, f=f, into=into):
            return f(into(x), c)

    else:
        fmt = f"{r.name}({{c}}, {src})"

        def fn(x, c, f=f, into=into):
            return f(c, into(x))

    if r.picks and new_shape != shape:
        ties = True  # copies of x along the broadcast axes
    return Op(r.name, fmt, fn, c), new_shape, newb, ties


def _draw_reduction(draw, shape, bound, ties):
    n = len(shape)
    r = draw(st.sampled_from(REDUCTIONS))
    name, f = r.name, getattr(gnp, r.name)
    if r.cumulative:
        axis = draw(st.sampled_from([None] + list(range(-n, n))))
        size = int(onp.prod(shape))
        new_shape = (size,) if axis is None else shape
        newb = r.bound(bound, size if axis is None else shape[axis])
        if newb > MAX_BOUND:
            return None, shape, bound, ties
        fmt = f"{name}({{}}, axis={axis})"
        return Op(name, fmt, lambda x, c: f(x, axis=axis)), new_shape, newb, ties
    if n == 0:
        axis = None
    else:
        axis = draw(
            st.one_of(
                st.none(),
                st.integers(-n, n - 1),
                st.lists(st.integers(0, n - 1), min_size=1, max_size=n, unique=True).map(tuple),
            )
        )
    keepdims = draw(st.booleans())
    axes = tuple(range(n)) if axis is None else ((axis % n,) if isinstance(axis, int) else axis)
    reduced = int(onp.prod([shape[a] for a in axes])) if axes else 1
    if (r.picks or r.kink == "constant") and ties:
        return None, shape, bound, ties
    if r.kink == "constant" and reduced < 2:  # a group of one entry is constant
        return None, shape, bound, ties
    new_shape = (
        tuple(1 if i in axes else d for i, d in enumerate(shape))
        if keepdims
        else tuple(d for i, d in enumerate(shape) if i not in axes)
    )
    newb = r.bound(bound, reduced)
    if newb > MAX_BOUND:
        return None, shape, bound, ties
    fmt = f"{name}({{}}, axis={axis}, keepdims={keepdims})"
    return Op(name, fmt, lambda x, c: f(x, axis=axis, keepdims=keepdims)), new_shape, newb, ties


def _draw_shape_op(draw, shape, ties):
    n = len(shape)
    size = int(onp.prod(shape))
    kinds = ["reshape"] + (["transpose", "getitem"] if n >= 1 else ["getitem0"])
    kind = draw(st.sampled_from(kinds))
    if kind == "reshape":
        factors = [f for f in (2, 3) for _ in range(_multiplicity(size, f))]
        factors = draw(st.permutations(factors)) if factors else []
        ndim = draw(st.integers(0 if size == 1 else 1, 3))
        target = [1] * max(ndim, 1)
        for i, f in enumerate(factors):
            target[i % len(target)] *= f
        target = tuple(target) if ndim else ()
        if draw(st.booleans()) and target:
            shown = (-1,) + target[1:]
        else:
            shown = target
        return (
            Op("reshape", f"reshape({{}}, {shown})", lambda x, c: gnp.reshape(x, shown)),
            target,
            ties,
        )
    if kind == "transpose":
        perm = tuple(draw(st.permutations(range(n))))
        return (
            Op("transpose", f"transpose({{}}, {perm})", lambda x, c: gnp.transpose(x, perm)),
            tuple(shape[p] for p in perm),
            ties,
        )
    if kind == "getitem0":
        idx = draw(st.sampled_from([(), None, Ellipsis]))
        new_shape = (1,) if idx is None else ()
        return Op("getitem", f"{{}}[{idx!r}]", lambda x, c: x[idx]), new_shape, ties
    form = draw(st.sampled_from(["int", "slice", "fancy", "int1", "newaxis", "ellipsis"]))
    if form == "int1" and n < 2:
        form = "int"
    d0 = shape[0]
    if form == "int":
        i = draw(st.integers(-d0, d0 - 1))
        return Op("getitem", f"{{}}[{i}]", lambda x, c: x[i]), shape[1:], ties
    if form == "int1":
        i = draw(st.integers(-shape[1], shape[1] - 1))
        return (Op("getitem", f"{{}}[:, {i}]", lambda x, c: x[:, i]), (shape[0],) + shape[2:], ties)
    if form == "slice":
        step = draw(st.sampled_from([1, 2, -1]))
        start = draw(st.integers(0, d0 - 1))
        if step > 0:
            sl = slice(start, None, step)
        else:
            sl = slice(start, None, -1)
        length = len(range(d0)[sl])
        return (
            Op("getitem", f"{{}}[{sl.start}::{sl.step}]", lambda x, c: x[sl]),
            (length,) + shape[1:],
            ties,
        )
    if form == "fancy":
        idx = draw(st.lists(st.integers(-d0, d0 - 1), min_size=1, max_size=3))
        repeats = len({i % d0 for i in idx}) < len(idx)
        return (
            Op("getitem", f"{{}}[{idx}]", lambda x, c: x[idx]),
            (len(idx),) + shape[1:],
            ties or repeats,
        )
    if form == "newaxis":
        if n >= 3:
            return Op("getitem", "{}[0]", lambda x, c: x[0]), shape[1:], ties
        return Op("getitem", "{}[:, None]", lambda x, c: x[:, None]), (d0, 1) + shape[1:], ties
    return Op("getitem", "{}[..., ::-1]", lambda x, c: x[..., ::-1]), shape, ties


def _multiplicity(n, f):
    k = 0
    while n % f == 0 and n > 1:
        n //= f
        k += 1
    return k


def _draw_product(draw, shape, bound):
    """dot/matmul against a constant of a compatible shape, or the value with itself."""
    n = len(shape)
    name = draw(st.sampled_from(["dot", "rdot", "matmul", "rmatmul", "self"]))
    k = draw(st.integers(1, 3))
    if name == "self":
        if n == 1 and bound * bound * shape[0] <= MAX_BOUND:
            return (
                Op("dot", "dot({0}, {0})", lambda x, c: gnp.dot(x, x)),
                (),
                bound * bound * shape[0],
            )
        if n == 2 and bound * bound * shape[1] <= MAX_BOUND:
            return (
                Op("matmul", "matmul({0}, {0}.T)", lambda x, c: gnp.matmul(x, x.T)),
                (shape[0], shape[0]),
                bound * bound * shape[1],
            )
        return None, shape, bound
    last = shape[-1]
    if name in ("dot", "matmul"):
        cshape = draw(st.sampled_from([(last,), (last, k)]))
        out = shape[:-1] + cshape[1:]
        contracted = last
        f = gnp.dot if name == "dot" else gnp.matmul
        op = Op(
            name, f"{name}({{}}, {{c}})", lambda x, c, f=f: f(x, c), _const(draw, cshape, -1, 1)
        )
    else:
        if n == 1:
            cshape = (k, shape[0])
            out, contracted = (k,), shape[0]
        else:
            m = shape[-2]
            cshape = (k, m)
            contracted = m
            if name == "rdot":  # dot(C, x): C's last axis with x's second-to-last
                out = (k,) + shape[:-2] + shape[-1:]
            else:  # matmul(C, x): broadcast over x's leading axes
                out = shape[:-2] + (k, shape[-1])
        f = gnp.dot if name == "rdot" else gnp.matmul
        op = Op(
            name[1:],
            f"{name[1:]}({{c}}, {{}})",
            lambda x, c, f=f: f(c, x),
            _const(draw, cshape, -1, 1),
        )
    if len(out) > 3 or int(onp.prod(out)) > MAX_SIZE or bound * contracted > MAX_BOUND:
        return None, shape, bound
    return op, tuple(out), bound * contracted


@st.composite
def inputs(draw, prog):
    shape = prog.in_shape
    seed = draw(st.integers(0, 2**16))
    # a stream of its own: with equal seeds (shrinking drives them to 0) x must not equal a
    # constant, which would put maximum(x, C) at its kink
    x = onp.random.RandomState([seed, 1]).uniform(-1, 1, shape)
    if shape == () and prog.ops[0].name != "getitem" and draw(st.booleans()):
        return float(x)  # a Python float input (which x[()] would not take)
    return x


# =============================================================================
# Properties
# =============================================================================
@pytest.mark.parametrize("focus", [None, *FAMILIES])
@SETTINGS
@given(data=st.data())
def test_composition_matches_central_differences(focus, data):
    prog = data.draw(programs(focus=focus), label="program")
    x = data.draw(inputs(prog), label="x")
    note(f"x = {x!r}")
    y = prog(x)
    assert onp.shape(y) == prog.out_shape, f"{prog}: output shape {onp.shape(y)}"
    assert onp.all(onp.isfinite(y)), f"{prog}: non-finite output for bounded input"
    check_grads(prog, modes=("fwd", "rev"), order=1)(x)


@SETTINGS
@given(st.data())
def test_composition_second_order(data):
    """Second derivatives along the same programs (short chains): reverse over reverse, forward
    over forward and the mixed ones."""
    prog = data.draw(programs(min_ops=2, max_ops=3), label="program")
    x = data.draw(inputs(prog), label="x")
    check_grads(prog, modes=("fwd", "rev"), order=2)(x)


def _describe(v):
    return f"{type(v).__name__} dtype={onp.result_type(v)} shape={onp.shape(v)}"


@pytest.mark.parametrize("focus", [None, "binary", "reduce"])
@SETTINGS
@given(data=st.data())
def test_composition_float32_dtype_contract(focus, data):
    prog = data.draw(programs(focus=focus), label="program")
    x = data.draw(inputs(prog), label="x")
    kind = data.draw(
        st.sampled_from(["array", "npscalar"] if onp.ndim(x) == 0 else ["array"]), label="kind"
    )
    x32 = onp.float32(x) if kind == "npscalar" else onp.asarray(x, onp.float32)
    cdtype = data.draw(st.sampled_from([onp.float32, onp.float64]), label="constants")

    def f(z):
        return prog(z, cdtype)

    c = raw_cotangent(f, (x32,), 0)
    if c is not None:
        assert dtype_ok(c, onp.float32) and onp.shape(c) == onp.shape(x32), (
            f"{prog}: raw cotangent {_describe(c)} for a float32 input of shape "
            f"{onp.shape(x32)} (constants {onp.dtype(cdtype)})"
        )
    vjp, ans = make_vjp(f)(x32)
    try:
        a = onp.asarray(ans)
        g = onp.ones(a.shape, a.dtype) if isinstance(ans, onp.ndarray) else a.dtype.type(1)
        out = vjp(g)
    finally:
        vjp.release()
    assert (
        type(out) is type(x32)
        and onp.result_type(out) == onp.float32
        and (onp.shape(out) == onp.shape(x32))
    ), f"{prog}: make_vjp gradient {_describe(out)}"
    v = onp.ones_like(x32) if isinstance(x32, onp.ndarray) else onp.float32(1)
    y, t = make_jvp(f)(x32)(v)
    assert onp.result_type(t) == onp.result_type(y) and onp.shape(t) == onp.shape(y), (
        f"{prog}: make_jvp tangent {_describe(t)}, output {_describe(y)}"
    )
    if cdtype is onp.float32:
        # NumPy 1.x widens float32 scalars with Python numbers itself: there, NumPy's dtype
        want = onp.float32 if NEP50 else onp.result_type(f(x32))
        assert onp.result_type(y) == want, f"{prog}: a float32 computation returned {_describe(y)}"


def test_programs_cover_the_pool():
    """The strategy reaches every operator of the pool and every shape and product step (a
    guard against a generator that silently only draws tanh)."""
    seen = set()

    @settings(max_examples=600, deadline=None, derandomize=True, database=None)
    @given(st.sampled_from([None, *FAMILIES]).flatmap(lambda f: programs(focus=f)))
    def collect(p):
        for op in p.ops:
            seen.add(op.name)

    collect()
    pool = {r.name for r in UNARY + BINARY + REDUCTIONS} | {"where"}
    steps = {"reshape", "transpose", "getitem", "matmul", "dot"}
    assert pool | steps <= seen, f"never drew {sorted(pool | steps - seen)}"
