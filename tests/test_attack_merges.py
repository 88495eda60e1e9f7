"""An adversarial pass over five merged changes, each program checked against a reference:
central differences of the same NumPy program in float64, autograd 1.9.1 where it has the
feature, or eager gradcy (for const_graph and jit replays, at fresh inputs).

1. one rule form: joint direct rules of gradcy's own, user rules in every maker form on
   primitives returning containers (dense cotangents), primitive_vjps read and restored;
2. the replay type contract (match_input): a traced gradient's conversion to its input's type;
3. const_graph's bookkeeping reads (_unwrap) never replaying a stale result;
4. a ufunc's dtype= / casting= on traced values;
5. hessian's fall-back on BatchingError only.
"""

import warnings

import numpy as onp
import pytest

import gradcy
import gradcy.numpy as np
import gradcy.scipy.linalg as gsl
from gradcy import (
    elementwise_grad,
    grad,
    hessian,
    holomorphic_grad,
    jacobian,
    make_jvp,
    value_and_grad,
)
from gradcy.core import primitive_vjps, primitive_with_deprecation_warnings
from gradcy.extend import defjvp, defvjp, defvjp_argnum, defvjp_argnums, primitive
from gradcy.misc import const_graph

# NumPy 2's name; NumPy 1.26 (CI's oldest) calls it trapz
_trapezoid = getattr(np, "trapezoid", None) or np.trapz

rs = onp.random.RandomState(20261205)
EPS = 1e-6


def _fd_grad(f, args, argnum):
    """Central differences of f (a float64 NumPy program) with respect to args[argnum]."""
    args = [onp.array(a, dtype=float) for a in args]
    x = args[argnum]
    g = onp.zeros_like(x)
    for i in onp.ndindex(x.shape):
        up, down = x.copy(), x.copy()
        up[i] += EPS
        down[i] -= EPS
        a_up = list(args)
        a_up[argnum] = up
        a_down = list(args)
        a_down[argnum] = down
        g[i] = (f(*a_up) - f(*a_down)) / (2 * EPS)
    return g


def _close(got, want, rtol=1e-6, atol=1e-8):
    got = onp.asarray(got)
    assert got.shape == onp.shape(want)
    onp.testing.assert_allclose(got, want, rtol=rtol, atol=atol)


# =============================================================================
# 1. Joint primitives of gradcy's own (now direct rules): every argnum subset
# =============================================================================
_A = rs.randn(3, 3) + 3 * onp.eye(3)
_B = rs.randn(3, 2)
_L = onp.tril(_A) + 2 * onp.eye(3)
_T = rs.randn(2, 3, 2, 3)
_T = _T.reshape(6, 6) + 6 * onp.eye(6)

JOINT = {
    "solve matrix rhs": (lambda a, b: np.sum(np.sin(np.linalg.solve(a, b))), (_A, _B)),
    "solve vector rhs": (lambda a, b: np.sum(np.sin(np.linalg.solve(a, b[:, 0]))), (_A, _B)),
    "tensorsolve": (
        lambda a, b: np.sum(np.linalg.tensorsolve(a.reshape(2, 3, 2, 3), b) ** 2),
        (_T, rs.randn(2, 3)),
    ),
    "lstsq": (
        lambda a, b: np.sum(np.linalg.lstsq(a, b, rcond=None)[0] ** 2),
        (rs.randn(4, 2), rs.randn(4, 2)),
    ),
    "cov x, y": (lambda a, b: np.sum(np.sin(np.cov(a, b))), (rs.randn(2, 4), rs.randn(2, 4))),
    "corrcoef x, y": (
        lambda a, b: np.sum(np.corrcoef(a, b) ** 3),
        (rs.randn(2, 4), rs.randn(2, 4)),
    ),
    "trapezoid y, x": (
        lambda y, x: _trapezoid(np.sin(y), np.cumsum(np.exp(x))),
        (rs.randn(5), rs.randn(5)),
    ),
    "interp x, xp, fp": (
        lambda x, fp: np.sum(np.interp(x, onp.linspace(-2, 2, 5), fp) ** 2),
        (onp.array([-1.3, 0.2, 1.7]), rs.randn(5)),
    ),
    "broadcast_arrays": (
        lambda a, b: np.sum(np.prod(np.stack(np.broadcast_arrays(a, b[:, :1])), axis=0)),
        (_A, _B),
    ),
    "atleast_2d of two": (
        lambda a, b: np.sum(np.atleast_2d(a[0, 0], b[0])[0] * np.atleast_2d(a[0, 0], b[0])[1]),
        (_A, _B),
    ),
    "atleast_3d": (lambda a, b: np.sum(np.atleast_3d(a) * np.atleast_3d(b[:, :1])), (_A, _B)),
    "concatenate": (
        lambda a, b: np.sum(np.sin(np.concatenate([a, b, a[:, :1] * b[:, 1:]], axis=1)) ** 2),
        (_A, _B),
    ),
    "array of traced scalars": (
        lambda a, b: np.sum(np.array([[a[0, 0], b[1, 1] * a[1, 1]], [2.0, b[0, 0]]]) ** 3),
        (_A, _B),
    ),
    "solve_triangular": (
        lambda a, b: np.sum(gsl.solve_triangular(a, b, lower=True) ** 2),
        (_L, _B),
    ),
    "solve_sylvester": (
        lambda a, c: np.sum(gsl.solve_sylvester(a, a.T + onp.eye(3), c) ** 2),
        (_A, rs.randn(3, 3)),
    ),
    "solve_banded": (
        lambda ab, b: np.sum(gsl.solve_banded((1, 1), ab, b) ** 2),
        (onp.array([[0.0, 1.0, 0.5], [4.0, 5.0, 6.0], [0.3, 0.7, 0.0]]), _B),
    ),
}


def _np_version(f):
    """f's program on plain NumPy values (gradcy.numpy runs them eagerly)."""
    return lambda *a: float(onp.real(f(*a)))


ARGNUMS = [0, 1, (0, 1), (1, 0)]


@pytest.mark.parametrize("argnum", ARGNUMS, ids=str)
@pytest.mark.parametrize("name", list(JOINT))
def test_joint_rule_any_argnum_subset(name, argnum):
    f, args = JOINT[name]
    got = grad(f, argnum=argnum)(*args)
    nums = argnum if isinstance(argnum, tuple) else (argnum,)
    gots = got if isinstance(argnum, tuple) else (got,)
    assert len(gots) == len(nums)
    for k, g in zip(nums, gots):
        assert type(g) is onp.ndarray and g.dtype == onp.float64
        _close(g, _fd_grad(_np_version(f), args, k))


@pytest.mark.parametrize("argnum", [0, 1])
@pytest.mark.parametrize("name", list(JOINT))
def test_joint_rule_second_order_and_forward(name, argnum):
    f, args = JOINT[name]
    other = 1 - argnum
    g = grad(f, argnum=argnum)
    # d/d(other) of the gradient (reverse over reverse, one argument at a time)
    mixed = jacobian(g, argnum=other)(*args)
    n_in = onp.size(args[argnum])
    want = onp.stack(
        [_fd_grad(lambda *a, i=i: onp.ravel(g(*a))[i], args, other).ravel() for i in range(n_in)]
    )
    _close(onp.reshape(mixed, (n_in, -1)), want, rtol=1e-5, atol=1e-7)
    # forward mode along a direction
    v = rs.randn(*onp.shape(args[argnum]))
    try:
        _, t = make_jvp(f, argnum=argnum)(*args)(v)
    except NotImplementedError as e:  # no JVP rule: must say which
        assert "JVP" in str(e)
        return
    _close(t, onp.sum(_fd_grad(_np_version(f), args, argnum) * v))


@pytest.mark.parametrize("argnum", [0, 1, (0, 1)], ids=str)
@pytest.mark.parametrize("name", list(JOINT))
def test_joint_rule_const_graph_replay(name, argnum):
    f, args = JOINT[name]
    g = grad(f, argnum=argnum)
    cg = const_graph(g)
    cg(*args)
    for k in range(2):
        fresh = tuple(a + 0.01 * (k + 1) * rs.randn(*onp.shape(a)) for a in args)
        got, want = cg(*fresh), g(*fresh)
        if not isinstance(argnum, tuple):
            got, want = (got,), (want,)
        for a, b in zip(got, want):
            assert type(a) is type(b) and a.dtype == b.dtype
            # within rounding: the replay may call another NumPy loop for the same operation
            # (NumPy 1.26's power and square differ in the last bit); a stale replay is far off
            onp.testing.assert_allclose(a, b, rtol=1e-13, atol=0)


# =============================================================================
# 1b. User rules in every maker form on primitives returning containers
# =============================================================================
def _register(how, p, rule):
    """rule(g, x) -> the cotangent of x, registered in one of autograd's maker forms."""
    if how == "defvjp":
        defvjp(p, lambda ans, x: lambda g: rule(g, x))
    elif how == "defvjp_argnum":
        defvjp_argnum(p, lambda argnum, ans, args, kwargs: lambda g: rule(g, args[0]))
    elif how == "defvjp_argnums":
        defvjp_argnums(p, lambda argnums, ans, args, kwargs: lambda g: (rule(g, args[0]),))
    elif how == "primitive_vjps":
        primitive_vjps[p] = lambda argnums, ans, args, kwargs: lambda g: (rule(g, args[0]),)
    else:
        with pytest.warns(DeprecationWarning):
            p.defvjp(lambda g, ans, vs, gvs, x: rule(g, x))


FORMS = ["defvjp", "defvjp_argnum", "defvjp_argnums", "primitive_vjps", "prim.defvjp"]

# (primitive body, rule(g, x), use of the output, reference of the use on plain values)
CONTAINERS = {
    "tuple, first used": (
        lambda x: (onp.sin(x), onp.cos(x)),
        lambda g, x: g[0] * onp.cos(x) - g[1] * onp.sin(x),
        lambda o: o[0] * 2.0,
    ),
    "tuple, second used": (
        lambda x: (onp.sin(x), onp.cos(x)),
        lambda g, x: g[0] * onp.cos(x) - g[1] * onp.sin(x),
        lambda o: o[1] ** 2,
    ),
    "list, both used": (
        lambda x: [onp.sin(x), onp.cos(x)],
        lambda g, x: g[0] * onp.cos(x) - g[1] * onp.sin(x),
        lambda o: o[0] * o[1],
    ),
    "dict, one used": (
        lambda x: {"s": onp.sin(x), "c": onp.cos(x)},
        lambda g, x: g["s"] * onp.cos(x) - g["c"] * onp.sin(x),
        lambda o: o["c"] * 3.0,
    ),
    "nested tuple in dict": (
        lambda x: {"a": (onp.sin(x), x**2), "b": onp.cos(x)},
        lambda g, x: g["a"][0] * onp.cos(x) + g["a"][1] * 2 * x - g["b"] * onp.sin(x),
        lambda o: o["a"][1] * o["b"],
    ),
    "nested list in tuple, unused branch": (
        lambda x: ([onp.sin(x), x**3], onp.cos(x)),
        lambda g, x: g[0][0] * onp.cos(x) + g[0][1] * 3 * x**2 - g[1] * onp.sin(x),
        lambda o: o[0][1] + 0.0,
    ),
}


def _scalar_use(use):
    """use's result summed to a real scalar, as plain or gradcy NumPy."""
    return lambda o: np.sum(np.real(use(o)))


def _leaves(c):
    if isinstance(c, dict):
        return [("d", sorted(c))] + [v for k in sorted(c) for v in _leaves(c[k])]
    if isinstance(c, (tuple, list)):
        return [(type(c).__name__, len(c))] + [v for e in c for v in _leaves(e)]
    return [c]


def _same_cotangent(got, want):
    """got (gradcy's cotangent) has autograd's structure, leaf types and values."""
    lg, lw = _leaves(got), _leaves(want)
    assert len(lg) == len(lw)
    for a, b in zip(lg, lw):
        if isinstance(b, tuple):
            assert a == b
        else:
            assert a is not None
            assert type(onp.asarray(a)) is type(onp.asarray(b))
            assert onp.shape(a) == onp.shape(b) and onp.asarray(a).dtype == onp.asarray(b).dtype
            onp.testing.assert_allclose(a, b, rtol=1e-14, atol=1e-300)


def _autograd_reference(body, rule, use, x):
    """autograd 1.9.1's gradient of sum(use(p(x))) with the same rule, and the cotangents
    the rule saw."""
    import autograd
    import autograd.numpy as anp
    from autograd.extend import defvjp as a_defvjp
    from autograd.extend import primitive as a_primitive

    seen = []
    p = a_primitive(body)
    a_defvjp(p, lambda ans, x: lambda g: (seen.append(g), rule(g, x))[1])
    if use.__code__.co_argcount == 2:
        g = autograd.grad(lambda x: anp.sum(anp.real(use(p(x), anp))))(x)
    else:
        g = autograd.grad(lambda x: anp.sum(anp.real(use(p(x)))))(x)
    return g, seen


@pytest.mark.parametrize("x", [0.3, onp.array(0.7), onp.array([0.2, -1.1])], ids=["f", "0d", "1d"])
@pytest.mark.parametrize("case", list(CONTAINERS))
@pytest.mark.parametrize("how", FORMS)
def test_user_rule_container_output(how, case, x):
    body, rule, use = CONTAINERS[case]
    seen = []

    def recording_rule(g, x):
        seen.append(g)
        return rule(g, x)

    p = primitive_with_deprecation_warnings(body)
    _register(how, p, recording_rule)
    f = lambda x: np.sum(np.real(use(p(x))))
    g = grad(f)(x)
    want, want_seen = _autograd_reference(body, rule, use, x)
    # gradcy's contract: the input's type (autograd gives numpy.float64 for a float or 0-d input)
    assert type(g) is type(x) and onp.shape(g) == onp.shape(want)
    assert onp.asarray(g).dtype == onp.float64
    _close(g, _fd_grad(lambda x: float(onp.sum(use(body(x)))), (x,), 0))
    onp.testing.assert_allclose(g, want, rtol=1e-14)
    assert len(seen) == len(want_seen) == 1
    _same_cotangent(seen[0], want_seen[0])
    # second order through the container: d/dc of sum(grad of c * f) = sum(grad f)
    mixed = grad(lambda c: np.sum(grad(lambda x: c * f(x))(x)))(2.0)
    _close(mixed, onp.sum(want), rtol=1e-12)


@pytest.mark.parametrize("how", FORMS)
def test_user_rule_complex_container_output(how):
    # a complex element in a tuple output; the differentiated input is real
    body = lambda x: (onp.exp(1j * x), x * 2.0)
    rule = lambda g, x: onp.real(g[0] * 1j * onp.exp(1j * x)) + 2.0 * g[1]
    p = primitive_with_deprecation_warnings(body)
    seen = []
    _register(how, p, lambda g, x: (seen.append(g), rule(g, x))[1])
    x = onp.array([0.3, 1.2])
    for use in [
        lambda o, m: m.real(o[0]) * o[1],
        lambda o, m: m.abs(o[0] + 1.0) ** 2,
        lambda o, m: o[1] ** 2,
        lambda o, m: m.imag(o[0]) * m.real(o[0] * o[0]),
    ]:
        seen.clear()
        g = grad(lambda x: np.sum(np.real(use(p(x), np))))(x)
        want, want_seen = _autograd_reference(body, rule, use, x)
        assert type(g) is onp.ndarray and g.dtype == onp.float64
        _close(g, _fd_grad(lambda x: float(onp.sum(onp.real(use(body(x), onp)))), (x,), 0))
        onp.testing.assert_allclose(g, want, rtol=1e-14)
        _same_cotangent(seen[0], want_seen[0])


def test_primitive_vjps_read_and_restored():
    p = primitive(lambda x: (onp.sin(x), onp.cos(x)))
    defvjp(p, lambda ans, x: lambda g: g[0] * onp.cos(x) - g[1] * onp.sin(x))
    saved = primitive_vjps[p]
    x = 0.4
    f = lambda x: p(x)[1] * 2.0 + p(x)[0]
    want = -2.0 * onp.sin(x) + onp.cos(x)
    assert grad(f)(x) == pytest.approx(want, rel=1e-15)
    # the maker read back computes the same cotangents, also on a sparse/partial cotangent
    vjp = saved((0,), p(x), (x,), {})
    assert onp.allclose(vjp((1.0, 0.0))[0], onp.cos(x))
    primitive_vjps[p] = lambda argnums, ans, args, kwargs: lambda g: (g[0] * 0.0,)
    assert grad(f)(x) == 0.0
    primitive_vjps[p] = saved
    assert grad(f)(x) == pytest.approx(want, rel=1e-15)
    # a gradcy joint primitive's rule read in autograd's form and restored through it
    solve = np.linalg.solve
    prim = solve
    original = primitive_vjps[prim]
    fs = lambda a, b: np.sum(np.linalg.solve(a, b) ** 2)
    before = grad(fs, argnum=(0, 1))(_A, _B)
    vjp = original((0, 1), onp.linalg.solve(_A, _B), (_A, _B), {})
    ga, gb = vjp(2 * onp.linalg.solve(_A, _B))
    _close(ga, before[0], rtol=1e-12)
    _close(gb, before[1], rtol=1e-12)
    primitive_vjps[prim] = original
    after = grad(fs, argnum=(0, 1))(_A, _B)
    onp.testing.assert_allclose(after[0], before[0], rtol=1e-12)
    onp.testing.assert_allclose(after[1], before[1], rtol=1e-12)


@pytest.mark.parametrize("how", FORMS)
@pytest.mark.parametrize(
    "constant", [2, onp.int64(2), True, None, "label"], ids=["int", "int64", "bool", "None", "str"]
)
def test_user_rule_container_output_with_a_constant_element(how, constant):
    # a tuple output with an element no cotangent can reach (an index, a flag, a label): a
    # maker-form rule gets the dense cotangent of the others (integer zeros for an integer, as
    # an integer array's; None for None or a string), not "vspace: no vector space for int"
    if how == "prim.defvjp" and (constant is None or isinstance(constant, str)):
        pytest.skip("the deprecated vjpfun(g, ans, vs, gvs, x) takes vspace(g): none for None")
    body = lambda x: (onp.sin(x), constant)
    seen = []
    p = primitive_with_deprecation_warnings(body)
    _register(how, p, lambda g, x: (seen.append(g), g[0] * onp.cos(x))[1])
    x = onp.array([0.3, -0.4])
    g = grad(lambda x: np.sum(p(x)[0] * 2.0))(x)
    onp.testing.assert_allclose(g, 2 * onp.cos(x), rtol=1e-15)
    ((used, rest),) = seen
    onp.testing.assert_array_equal(used, [2.0, 2.0])
    if constant is None or isinstance(constant, str):
        assert rest is None
    else:
        assert type(rest) is onp.ndarray and rest.dtype == onp.asarray(constant).dtype
        assert rest.shape == () and not rest


def test_joint_rule_read_through_vjp_argnums_on_an_output_with_an_integer():
    # lstsq's rule read in autograd's form and registered on a new primitive (a maker form:
    # dense cotangents, rank an integer element)
    a, b = rs.randn(4, 2), rs.randn(4, 2)
    q = primitive(np.linalg.lstsq.fun)
    defvjp_argnums(q, np.linalg.lstsq.vjp_argnums)

    def f(solver):
        return lambda a, b: np.sum(solver(a, b, rcond=None)[0] ** 2)

    got, want = grad(f(q), argnum=(0, 1))(a, b), grad(f(np.linalg.lstsq), argnum=(0, 1))(a, b)
    for u, v in zip(got, want):
        onp.testing.assert_allclose(u, v, rtol=1e-13)
    _close(got[0], _fd_grad(_np_version(f(onp.linalg.lstsq)), (a, b), 0))


# =============================================================================
# 2. The replay type contract: a traced gradient converted to its input's type
# =============================================================================
_INT_X = onp.array([[1, 2, 3], [2, 1, 4]])

# programs of an integer argument whose rules allocated a buffer of the argument's (integer)
# dtype, so the cotangent was truncated (3 for 3.7, 0 for 0.37) and the gradient was an
# integer array; each is compared to the same program at the float64 values
INT_PROGRAMS = {
    "sum": lambda x: np.sum(x) * 3.7,
    "method sum": lambda x: x.sum() * 3.7,
    "sum of a product": lambda x: np.sum(x * x) * 3.7,
    "sum of a sum": lambda x: np.sum(np.sum(x, axis=0)) * 3.7,
    "sum of a negation": lambda x: np.sum(-x) * 3.7,
    "sum of abs": lambda x: np.sum(np.abs(x)) * 3.7,
    "sum of fabs": lambda x: np.sum(np.fabs(x) * 3.7),
    "sum of a concatenation": lambda x: np.sum(np.concatenate([x, x])) * 3.7,
    "sum of a tile": lambda x: np.sum(np.tile(x, 2)) * 3.7,
    "sum of a triangle": lambda x: np.sum(np.triu(x)) * 3.7,
    "cumsum": lambda x: np.sum(np.cumsum(x, axis=1)) * 3.7,
    "matmul": lambda x: np.sum(x @ x.T) * 0.37,
    "dot": lambda x: np.sum(np.dot(x, x.T)) * 0.37,
    "outer": lambda x: np.sum(np.outer(x, x)) * 0.037,
    "trace": lambda x: np.trace(x @ x.T) * 0.37,
    "diagonal": lambda x: np.sum(np.diag(x @ x.T)) * 0.37,
    "take": lambda x: np.sum(np.take(x, [0, 2], axis=1)) * 3.7,
    "fancy index": lambda x: np.sum(x[[0, 0, 1]]) * 3.7,
    "maximum with a tie": lambda x: np.sum(np.maximum(x, 2)) * 3.7,
    "clip": lambda x: np.sum(np.clip(x, 1, 3)) * 3.7,
    "pad": lambda x: np.sum(np.pad(x, 1) ** 2) * 0.37,
    "stack": lambda x: np.sum(np.stack([x, x]) ** 2) * 0.37,
    "x squared": lambda x: np.sum(x**2) * 3.7,
    "mean": lambda x: np.mean(x) * 3.7,
    "var": lambda x: np.var(x) * 3.7,
    "select": lambda x: np.sum(np.select([onp.array([[0, 1, 1], [1, 0, 1]]) > 0], [x])) * 0.37,
    "choose": lambda x: np.sum(np.choose([0, 1, 0], [x[0], x[1]])) * 0.37,
    "delete": lambda x: np.sum(np.delete(x, 1, axis=1)) * 0.37,
    "append": lambda x: np.sum(np.append(x, x[0]) ** 2) * 0.37,
    "insert": lambda x: np.sum(np.insert(x.ravel(), 2, 7) * 1.0) * 0.37,
}


@pytest.mark.parametrize("dtype", ["int64", "int8", "bool"])
@pytest.mark.parametrize("name", list(INT_PROGRAMS))
def test_integer_argument_gradient_is_the_float64_one(name, dtype):
    f = INT_PROGRAMS[name]
    if dtype == "bool" and name == "sum of a negation":
        pytest.skip("NumPy has no negative of a boolean array")
    x = _INT_X.astype(dtype) if dtype != "bool" else _INT_X > 1
    g = grad(f)(x)
    assert type(g) is onp.ndarray and g.dtype == onp.float64 and g.shape == x.shape
    if dtype == "int8" and name in ("matmul", "dot", "trace", "diagonal", "outer", "stack"):
        return  # (int8 products overflow in NumPy itself: the float64 program differs)
    # (fabs of int8 or bool computes in float16, as NumPy does)
    rtol = 1e-3 if name == "sum of fabs" and dtype != "int64" else 1e-13
    onp.testing.assert_allclose(g, grad(f)(x.astype(float)), rtol=rtol, atol=1e-13)
    # forward mode: the tangent along ones, against the same float64 program
    t = make_jvp(f)(x)(onp.ones(x.shape))[1]
    onp.testing.assert_allclose(t, make_jvp(f)(x.astype(float))(onp.ones(x.shape))[1], rtol=rtol)
    # a replay gives eager's result exactly
    cg = const_graph(grad(f))
    cg(x)
    onp.testing.assert_array_equal(cg(x), g)


_LEAVES = {  # a leaf of an argument at a scale s (its values change with s)
    "float32": lambda s: onp.array([1.0, 2.0], dtype=onp.float32) * onp.float32(s),
    "float16": lambda s: onp.array([1.0, 2.0], dtype=onp.float16) * onp.float16(s),
    "complex64": lambda s: onp.array([1 + 2j, 0.5j], dtype=onp.complex64) * onp.float32(s),
    "0-d complex128": lambda s: onp.array(1 + 2j) * s,
    "Python float": lambda s: 0.7 * s,
    "Python complex": lambda s: (0.7 + 0.2j) * s,
    "numpy float32": lambda s: onp.float32(0.7 * s),
    "numpy float64": lambda s: onp.float64(0.7 * s),
    "int64 array": lambda s: onp.array([1, 2 + int(s > 1)]),
    "bool array": lambda s: onp.array([True, s > 1]),
    "0-d float64": lambda s: onp.array(0.3 * s),
    "0-d float32": lambda s: onp.array(0.3 * s, dtype=onp.float32),
}
_NAMES = list(_LEAVES)


def _leaf_loss(v):
    return np.sum(np.real(v * np.conj(v))) + np.sum(np.real(np.sin(v)))


def _tree_loss(p):
    out = 0.0
    for k in sorted(p["d"]):
        out = out + _leaf_loss(p["d"][k])
    for v in p["t"]:
        out = out + _leaf_loss(v) * 0.5
    return out


def _tree(sel, s):
    return {
        "d": {sel[0]: _LEAVES[sel[0]](s), sel[1]: _LEAVES[sel[1]](s)},
        "t": [_LEAVES[sel[2]](s), (_LEAVES[sel[0]](s))],
    }


def _assert_same_tree(got, want):
    if isinstance(want, dict):
        assert type(got) is type(want) and list(got) == list(want)
        for k in want:
            _assert_same_tree(got[k], want[k])
    elif isinstance(want, (tuple, list)):
        assert type(got) is type(want) and len(got) == len(want)
        for a, b in zip(got, want):
            _assert_same_tree(a, b)
    else:
        assert type(got) is type(want)
        assert onp.asarray(got).dtype == onp.asarray(want).dtype
        assert onp.shape(got) == onp.shape(want)
        onp.testing.assert_array_equal(got, want)


def _assert_input_types(g, x):
    """g has the type, dtype and shape of x (float64 for an integer or boolean x)."""
    if isinstance(x, dict):
        assert type(g) is dict and list(g) == list(x)
        for k in x:
            _assert_input_types(g[k], x[k])
    elif isinstance(x, (tuple, list)):
        assert type(g) is type(x) and len(g) == len(x)
        for a, b in zip(g, x):
            _assert_input_types(a, b)
    else:
        dt = onp.asarray(x).dtype
        assert type(g) is type(x), (type(g), type(x))
        assert onp.asarray(g).dtype == (dt if dt.kind in "fc" else onp.float64)
        assert onp.shape(g) == onp.shape(x)


WRAPS = {
    "grad": lambda f: grad(f),
    "grad of value_and_grad's value": lambda f: grad(lambda p: value_and_grad(f)(p)[0] * 2.0),
    "grad of a sum of grads": lambda f: grad(
        lambda p: f(p) + 0.0 * sum(np.sum(np.real(v)) for v in _flat(grad(f)(p)))
    ),
}


def _flat(t):
    if isinstance(t, dict):
        return [v for k in t for v in _flat(t[k])]
    if isinstance(t, (tuple, list)):
        return [v for e in t for v in _flat(e)]
    return [t]


@pytest.mark.parametrize("wrap", list(WRAPS))
@pytest.mark.parametrize("i", range(len(_NAMES)), ids=lambda i: _NAMES[i])
def test_container_argument_of_mixed_kinds_replays_as_eager(i, wrap):
    sel = [_NAMES[i], _NAMES[(i + 3) % len(_NAMES)], _NAMES[(i + 7) % len(_NAMES)]]
    g = WRAPS[wrap](_tree_loss)
    x = _tree(sel, 1.0)
    eager = g(x)
    _assert_input_types(eager, x)
    for replay in (const_graph(g), gradcy.jit(g)):
        _assert_same_tree(replay(_tree(sel, 1.0)), eager)
        for s in (1.3, 0.6):  # fresh values (the integer and boolean leaves change too)
            _assert_same_tree(replay(_tree(sel, s)), g(_tree(sel, s)))


KINDS = {
    "float32": onp.array([0.3, 0.5], dtype=onp.float32),
    "int64": onp.array([1, 2]),
    "bool": onp.array([True, False]),
    "Python float": 0.4,
    "0-d float64": onp.array(0.4),
    "numpy float32": onp.float32(0.4),
}


def _f(x):
    return np.sum(np.sin(x) * x)


def _f_float64(x):
    return float(onp.sum(onp.sin(x) * x))


@pytest.mark.parametrize("kind", list(KINDS))
def test_nested_operators_keep_the_input_type(kind):
    x = KINDS[kind]
    dt = onp.asarray(x).dtype
    gdt = dt if dt.kind in "fc" else onp.dtype(onp.float64)
    xf = onp.asarray(x, dtype=float)
    # (float32 values, or a boolean's sin computed in float16 by NumPy)
    low = gdt != onp.float64 or dt.kind == "b"
    tol = dict(rtol=5e-3, atol=1e-6) if low else dict(rtol=1e-7, atol=1e-9)
    want_g = _fd_grad(_f_float64, (xf,), 0)
    d2 = 2 * onp.cos(xf) - xf * onp.sin(xf)  # the Hessian's diagonal
    # gradient of value_and_grad's gradient, elementwise_grad, checkpoint: the input's type
    for got in (
        grad(lambda x: np.sum(value_and_grad(_f)(x)[1]))(x),
        elementwise_grad(lambda x: np.sin(x) * x)(x),
        grad(lambda x: np.sum(elementwise_grad(lambda x: np.sin(x) * x)(x)))(x),
        grad(lambda x: np.sum(gradcy.checkpoint(lambda x: grad(_f)(x) * x)(x)))(x),
    ):
        assert type(got) is type(x) and onp.asarray(got).dtype == gdt
        assert onp.shape(got) == onp.shape(x)
    _close(elementwise_grad(lambda x: np.sin(x) * x)(x), want_g, **tol)
    _close(grad(lambda x: np.sum(value_and_grad(_f)(x)[1]))(x), d2, **tol)
    # hessian and jacobian of grad: arrays of the gradient dtype, shape x.shape * 2
    for H in (hessian(_f)(x), jacobian(grad(_f))(x)):
        assert type(H) is onp.ndarray and H.dtype == gdt
        assert H.shape == onp.shape(x) * 2
        _close(H, onp.diag(d2) if onp.ndim(x) else d2, **tol)
    # const_graph of a gradient of a gradient: eager's result exactly
    gg = grad(lambda x: np.sum(grad(_f)(x) * x))
    cg = const_graph(gg)
    cg(x)
    _assert_same_tree(cg(x), gg(x))


@pytest.mark.parametrize("dtype", ["complex64", "complex128"])
def test_holomorphic_grad_and_its_gradient_keep_the_complex_type(dtype):
    z = onp.array([0.3 + 0.4j, 1 - 1j], dtype=dtype)
    h = holomorphic_grad(lambda z: np.sum(np.sin(z) * z))(z)
    assert type(h) is onp.ndarray and h.dtype == onp.dtype(dtype)
    tol = 1e-6 if dtype == "complex64" else 1e-13
    onp.testing.assert_allclose(h, onp.sin(z) + z * onp.cos(z), rtol=tol)
    gg = grad(lambda z: np.real(np.sum(holomorphic_grad(lambda z: np.sum(np.sin(z) * z))(z))))
    got = gg(z)
    assert got.dtype == onp.dtype(dtype)
    cg = const_graph(gg)
    cg(z)
    _assert_same_tree(cg(z * 2), gg(z * 2))


def test_dask_gradient_of_a_gradient_keeps_the_input_type():
    da = pytest.importorskip("dask.array")
    x = onp.array([0.3, 0.5, 0.9])
    dx = da.from_array(x, chunks=2)
    gg = grad(lambda x: np.sum(grad(_f)(x) * x))
    got = gg(dx)
    assert isinstance(got, da.Array) and got.dtype == onp.float64 and got.shape == (3,)
    onp.testing.assert_allclose(got.compute(), gg(x), rtol=1e-14)
    H = hessian(_f)(dx)
    onp.testing.assert_allclose(onp.asarray(H), hessian(_f)(x), rtol=1e-14)


def _block(t):
    return np.sum(np.sin(t[0]) * t[1]) + np.sum(t[1] ** 2)


def _block_dict(p):
    return np.sum(np.sin(p["a"])) + np.sum(p["b"][0] ** 2) * p["c"]


@pytest.mark.parametrize(
    "how",
    [
        "grad of a tuple argument",
        "a tuple of traced values built inside",
        "a dict with a list and a float inside",
        "second order",
        "forward mode",
        "const_graph replay",
    ],
)
def test_checkpoint_of_a_container_argument(how):
    # checkpoint(f)(container) computes and differentiates as f(container) (autograd 1.9.1
    # does; it raised "computes with a traced value that it neither receives as an argument")
    x = onp.array([0.3, -0.8])
    cp = gradcy.checkpoint(_block)
    if how == "grad of a tuple argument":
        t = (x, x[::-1] * 2.0)
        got, want = grad(cp)(t), grad(_block)(t)
        _assert_same_tree(got, want)
        _close(got[0], _fd_grad(lambda a: _np_version(_block)((a, t[1])), (x,), 0))
    elif how == "a tuple of traced values built inside":
        f = lambda x: cp((x, x * 2.0))
        _assert_same_tree(grad(f)(x), grad(lambda x: _block((x, x * 2.0)))(x))
        _close(grad(f)(x), _fd_grad(lambda x: _np_version(_block)((x, x * 2.0)), (x,), 0))
    elif how == "a dict with a list and a float inside":
        p = {"a": x, "b": [onp.array(0.5)], "c": 1.5}
        _assert_same_tree(grad(gradcy.checkpoint(_block_dict))(p), grad(_block_dict)(p))
    elif how == "second order":
        f = lambda x: cp((x, x * 2.0))
        _close(hessian(f)(x), hessian(lambda x: _block((x, x * 2.0)))(x), rtol=1e-13)
    elif how == "forward mode":
        v = onp.array([1.0, -0.5])
        got = make_jvp(lambda x: cp((x, x * 2.0)))(x)(v)
        want = make_jvp(lambda x: _block((x, x * 2.0)))(x)(v)
        _close(got[1], want[1], rtol=1e-14)
        assert got[0] == want[0]
    else:
        g = grad(lambda x: cp((x, x * 2.0)))
        c = const_graph(g)
        c(x)
        _assert_same_tree(c(x * 1.5), grad(lambda x: _block((x, x * 2.0)))(x * 1.5))


# =============================================================================
# 3. const_graph: Python control flow on values read through bookkeeping paths
# =============================================================================
def _fill_empty_like(x):
    b = np.empty_like(x)
    b.fill(float(x[1]))
    return np.sum(b * x)


CONTROL = {
    "zeros_like of a value-sized slice": lambda x: (
        np.sum(np.zeros_like(x[: int(np.sum(x > 0))]) + 1.0) + np.sum(x)
    ),
    "full_like with a traced fill": lambda x: np.sum(np.full_like(x, np.max(x)) * x),
    "full_like with a fill read as float": lambda x: np.sum(np.full_like(x, float(np.max(x))) * x),
    "ones_like of a slice by a comparison": lambda x: np.sum(
        np.ones_like(x[: int(x[0] > 0) + 1]) * x[0]
    ),
    "empty_like filled with a read value": _fill_empty_like,
    "zeros of a shape computed from a value": lambda x: np.sum(
        np.zeros(int(abs(x[0]) * 3) + 1) + x[1]
    ),
    "branch on a sum": lambda x: np.sum(x**2) if np.sum(x) > 0 else np.sum(np.sin(x)),
    "full of a value-dependent shape": lambda x: np.sum(np.full((int(abs(x[0]) * 2) + 1,), x[1])),
    "full_like of an integer dtype in a branch": lambda x: (
        np.sum(np.full_like(x, 2, dtype=int) * x) if x[0] > 0 else np.sum(x)
    ),
    "zeros_like of a list of traced values": lambda x: np.sum(np.zeros_like([x[0], x[1]]) + x[:2]),
    "ones_like with a dtype": lambda x: np.sum(x * np.ones_like(x, dtype=float)),
    "boolean mask's size": lambda x: np.sum(x[x > 0] ** 2),
    "zeros_like of a computed slice": lambda x: np.sum(
        np.zeros_like(np.sin(x)[: int(np.argmax(x)) + 1]) + x[0]
    ),
    "reshape by a comparison": lambda x: np.sum(np.reshape(x, (-1, 1 + int(x[0] > 0))) ** 2),
    "count of positive elements read from tolist": lambda x: np.sum(
        x * len([v for v in x.tolist() if v > 0])
    ),
    "in-place write under grad": lambda x: (
        lambda b: (b.__setitem__(slice(0, int(x[0] > 0) + 1), x[: int(x[0] > 0) + 1]), np.sum(b))[1]
    )(np.zeros(3)),
    "out= under grad in a branch": lambda x: (
        np.sum(np.add(x, 1.0, out=np.zeros_like(x)) * x) if x[1] > 0 else np.sum(x)
    ),
}

_NO_PLAIN_READ_UNDER_GRAD = {  # float()/tolist() of a traced value: grad refuses (clear error)
    "full_like with a fill read as float",
    "empty_like filled with a read value",
    "count of positive elements read from tolist",
}
_WRITES = {"in-place write under grad", "out= under grad in a branch"}


@pytest.mark.parametrize("wrap", ["value", "grad"])
@pytest.mark.parametrize("name", list(CONTROL))
def test_const_graph_replay_is_never_stale(name, wrap):
    f = CONTROL[name]
    if wrap == "grad" and name in _NO_PLAIN_READ_UNDER_GRAD:
        with pytest.raises(gradcy.TracerArrayConversionError):
            grad(f)(onp.array([0.5, -0.3, 0.9, 1.2]))
        return
    fn = f if wrap == "value" else grad(f)
    cg = const_graph(fn)
    if wrap == "value" and name in _WRITES:
        with pytest.raises(Exception, match="const_graph: the function writes into an array"):
            cg(onp.array([0.5, 0.3, 0.9, 1.2]))
        return
    cg(onp.array([0.5, -0.3, 0.9, 1.2]))
    draws = onp.random.RandomState(7)
    for _ in range(10):
        x = draws.randn(4) * 1.5
        want = fn(x)
        got = cg(x)
        assert type(got) is type(want) and onp.shape(got) == onp.shape(want)
        # within rounding (NumPy 1.26's x**2 and the replay's power(x, 2) differ in the last
        # bit); a stale replay takes the other branch or shape and is far off
        onp.testing.assert_allclose(got, want, rtol=1e-13, atol=0)


@pytest.mark.parametrize("name", ["zeros_like", "ones_like", "empty_like", "full_like"])
def test_like_constructor_of_a_list_of_traced_values_is_autograds(name):
    # NumPy reads the list's shape and dtype only; autograd 1.9.1 gives the same gradient
    import autograd
    import autograd.numpy as anp

    def f(m):
        def fun(x):
            make = getattr(m, name)
            buf = make([x[0], x[1]], 2.0) if name == "full_like" else make([x[0], x[1]])
            assert buf.shape == (2,)
            assert m is anp or buf.dtype == onp.float64  # (autograd's: an object array)
            if name == "empty_like":  # (its values are whatever memory held)
                return m.sum(x[:2] * 3.0 * buf.shape[0])
            return m.sum((buf + 1.0) * x[:2])

        return fun

    x = onp.array([0.5, -0.3, 0.9])
    want = autograd.grad(f(anp))(x)
    onp.testing.assert_array_equal(grad(f(np))(x), want)
    cg = const_graph(grad(f(np)))
    cg(x)
    onp.testing.assert_array_equal(cg(x * 2), want)


# =============================================================================
# 4. A ufunc's dtype= and casting= on traced values
# =============================================================================
_UNARY = [
    "sin", "cos", "tan", "exp", "expm1", "log", "log1p", "log2", "log10", "sqrt", "cbrt",
    "square", "tanh", "sinh", "cosh", "arcsin", "arccos", "arctan", "arcsinh", "arctanh",
    "negative", "positive", "absolute", "reciprocal", "exp2", "deg2rad", "rad2deg", "rint",
    "floor", "ceil", "sign", "fabs", "conjugate",
]  # fmt: skip
_BINARY = [
    "add", "subtract", "multiply", "divide", "power", "arctan2", "hypot", "maximum", "minimum",
    "fmax", "fmin", "logaddexp", "logaddexp2", "copysign", "float_power", "remainder", "fmod",
]  # fmt: skip
_UX = onp.array([0.3, 0.45, 0.7])
_UY = onp.array([0.5, 1.5, 2.0])


def _ufunc_call(name, m):
    u = getattr(m, name)
    if name in _UNARY:
        return lambda x, c=None, **kw: u(x, **kw)
    return lambda x, **kw: u(x, _UY.astype(kw.pop("c", _UY.dtype)), **kw)


@pytest.mark.parametrize("dtype", ["float16", "float32", "float64", "complex64", "complex128"])
@pytest.mark.parametrize("name", _UNARY + _BINARY)
def test_ufunc_dtype_is_the_explicit_cast_program(name, dtype):
    call, plain = _ufunc_call(name, np), _ufunc_call(name, onp)
    for x in (_UX, _UX.astype(onp.float32)):
        try:
            want = plain(x, dtype=dtype)
        except TypeError:  # NumPy has no such loop: gradcy refuses too, naming the function
            with pytest.raises(TypeError, match=f"gradcy.numpy.{name}"):
                grad(lambda x: np.sum(np.real(call(x, dtype=dtype))))(x)
            continue
        got = call(x, dtype=dtype)
        assert got.dtype == want.dtype
        onp.testing.assert_array_equal(got, want)

        def f(x):
            return np.sum(np.real(call(x, dtype=dtype)) ** 2)

        def explicit(x):
            return np.sum(np.real(call(x.astype(dtype), c=dtype)) ** 2)

        g = grad(f)(x)
        assert type(g) is onp.ndarray and g.dtype == x.dtype
        onp.testing.assert_array_equal(g, grad(explicit)(x))
        t = make_jvp(lambda x: call(x, dtype=dtype))(x)(onp.ones(3, x.dtype))[1]
        assert t.dtype == onp.dtype(dtype)
        te = make_jvp(lambda x: call(x.astype(dtype), c=dtype))(x)(onp.ones(3, x.dtype))[1]
        onp.testing.assert_array_equal(t, te)
        if x.dtype == onp.float64 and dtype in ("float64", "complex128"):
            onp.testing.assert_array_equal(hessian(f)(x), hessian(explicit)(x))
            _close(
                g, _fd_grad(lambda x: float(onp.sum(onp.real(plain(x, dtype=dtype)) ** 2)), (x,), 0)
            )

        # out= of that dtype with dtype=: the same gradient
        def f_out(x):
            o = np.zeros(3, dtype=dtype)
            call(x, dtype=dtype, out=o)
            return np.sum(np.real(o) ** 2)

        onp.testing.assert_array_equal(grad(f_out)(x), g)


@pytest.mark.parametrize("name", ["add", "multiply", "maximum", "subtract"])
@pytest.mark.parametrize("dtype", ["int64", "int8", "bool"])
def test_ufunc_integer_dtype_raises_or_is_a_constant(name, dtype):
    # same_kind refuses (as NumPy); unsafe makes an integer result: a constant, gradient zero
    u = getattr(np, name)
    with pytest.raises(TypeError, match=f"gradcy.numpy.{name}: dtype={dtype}"):
        grad(lambda x: np.sum(u(x, 2.5 * x, dtype=dtype) * 1.0))(_UX)
    if dtype == "bool" and name == "subtract":
        with pytest.raises(TypeError):
            onp.subtract(_UX, 2.5 * _UX, dtype=bool, casting="unsafe")
        return
    f = lambda x: np.sum(u(x, 2.5 * x, dtype=dtype, casting="unsafe") * 1.0)
    onp.testing.assert_array_equal(
        f(_UX), onp.sum(getattr(onp, name)(_UX, 2.5 * _UX, dtype=dtype, casting="unsafe") * 1.0)
    )
    with pytest.warns(UserWarning, match="independent of input"):
        g = grad(f)(_UX)
    assert g.dtype == onp.float64
    onp.testing.assert_array_equal(g, onp.zeros(3))


@pytest.mark.parametrize("order", ["traced first", "plain first"])
def test_ufunc_dtype_with_mixed_traced_and_plain_operands(order):
    y = onp.array([1, 2, 3])  # an integer plain operand, cast by dtype= too

    def f(x):
        args = (x, y) if order == "traced first" else (y, x)
        return np.sum(np.sin(np.multiply(*args, dtype=onp.float32)))

    x = _UX
    g = grad(f)(x)
    assert g.dtype == onp.float64
    want = grad(lambda x: np.sum(np.sin(x.astype(onp.float32) * y.astype(onp.float32))))(x)
    onp.testing.assert_array_equal(g, want)
    H = hessian(f)(x)
    onp.testing.assert_allclose(H, onp.diag(-onp.sin(x * y) * y**2), rtol=1e-5, atol=1e-6)


# =============================================================================
# 5. hessian's batched pass falls back on BatchingError only
# =============================================================================
def _jvp_rules():
    """JVP rules written for one tangent with plain NumPy (the forms users write)."""
    sq = lambda x: onp.sum(x**2)
    cube = lambda x: x**3
    sq_vjp = lambda ans, x: lambda g: 2 * g * x
    cube_vjp = lambda ans, x: lambda g: 3 * x**2 * g
    return {
        "onp.dot": (sq, sq_vjp, lambda g, ans, x: 2 * onp.dot(x, g)),
        "method sum": (sq, sq_vjp, lambda g, ans, x: (2 * x * g).sum()),
        "matmul": (sq, sq_vjp, lambda g, ans, x: 2 * (x @ g)),
        "tensordot": (sq, sq_vjp, lambda g, ans, x: 2 * onp.tensordot(x, g, axes=1)),
        "Python sum over len": (
            sq,
            sq_vjp,
            lambda g, ans, x: sum(2 * x[i] * g[i] for i in range(len(g))),
        ),
        "cumsum's last": (sq, sq_vjp, lambda g, ans, x: onp.cumsum(2 * x * g)[-1]),
        "asarray": (cube, cube_vjp, lambda g, ans, x: 3 * x**2 * onp.asarray(g)),
        "reshape": (cube, cube_vjp, lambda g, ans, x: (3 * x**2).reshape(-1) * g.reshape(-1)),
        "index loop": (
            cube,
            cube_vjp,
            lambda g, ans, x: onp.array([3 * x[i] ** 2 * g[i] for i in range(len(x))]),
        ),
        "einsum": (cube, cube_vjp, lambda g, ans, x: onp.einsum("i,i->i", 3 * x**2, g)),
        "diag matmul": (cube, cube_vjp, lambda g, ans, x: onp.diag(3 * x**2) @ g),
        "ravel": (cube, cube_vjp, lambda g, ans, x: onp.ravel(g) * 3 * x**2),
        "raises on anything but an ndarray": (
            cube,
            cube_vjp,
            lambda g, ans, x: 3 * x**2 * (g if type(g) is onp.ndarray else g.no_such_attribute),
        ),
    }


@pytest.fixture
def batched_hessian(monkeypatch):
    import gradcy._second_order as so

    monkeypatch.setattr(so, "_NUMPY_MIN", 1)


@pytest.mark.parametrize("rule", list(_jvp_rules()))
def test_hessian_with_a_single_tangent_jvp_rule(rule, batched_hessian):
    fun, vjp, jvp = _jvp_rules()[rule]
    p = primitive(fun)
    defvjp(p, vjp)
    defjvp(p, jvp)
    f = lambda x: np.sum(np.sin(p(x)) * x)
    x = onp.array([0.3, -0.8, 1.4])
    H = hessian(f)(x)
    onp.testing.assert_allclose(H, jacobian(jacobian(f))(x), rtol=1e-12, atol=1e-14)
    g = grad(f)
    fd = onp.stack([(g(x + e * 1e-6) - g(x - e * 1e-6)) / 2e-6 for e in onp.eye(3)])
    _close(H, fd, rtol=1e-5, atol=1e-7)


@pytest.mark.parametrize("error", [ValueError, KeyError, ZeroDivisionError, IndexError])
@pytest.mark.parametrize("where", ["before any primitive", "after the gradient's primitives"])
def test_hessian_surfaces_the_functions_error_once(error, where, batched_hessian):
    calls = []

    def f(x):
        calls.append(1)
        if where == "before any primitive":
            raise error("the user's bug")
        y = np.sum(np.sin(x) * x)
        raise error("the user's bug")
        return y

    x = onp.array([0.3, -0.8, 1.4])
    with pytest.raises(error, match="the user's bug") as caught:
        hessian(f)(x)
    assert type(caught.value) is error and caught.value.__cause__ is None
    assert len(calls) == 1


# =============================================================================
# 1c. Joint rules given one traced value in several arguments; odeint and fixed_point
# =============================================================================
_SQ = rs.randn(3, 3) + 3 * onp.eye(3)

SAME_VALUE = {
    "solve(a, a)": lambda a: np.sum(np.sin(np.linalg.solve(a, a))),
    "solve(a, a[:, 0])": lambda a: np.sum(np.linalg.solve(a, a[:, 0]) ** 2),
    "concatenate([a, a, 2a])": lambda a: np.sum(np.sin(np.concatenate([a, a, a * 2])) ** 2),
    "cov(a, a)": lambda a: np.sum(np.sin(np.cov(a, a))),
    "corrcoef(a, a + a**2)": lambda a: np.sum(np.corrcoef(a, a + a**2) ** 3),
    "broadcast_arrays(a, a[:, :1])": lambda a: np.sum(
        np.prod(np.stack(np.broadcast_arrays(a, a[:, :1])), axis=0)
    ),
    "trapezoid(sin a0, cumsum exp a0)": lambda a: _trapezoid(np.sin(a[0]), np.cumsum(np.exp(a[0]))),
    "atleast_2d(a00, a00)": lambda a: np.sum(
        np.atleast_2d(a[0, 0], a[0, 0])[0] * np.atleast_2d(a[0, 0], a[0])[1]
    ),
    "array of one element twice": lambda a: np.sum(
        np.array([[a[0, 0], a[0, 0] * a[1, 1]], [a[0, 0], a[1, 1]]]) ** 3
    ),
    "solve_triangular(tril a, a)": lambda a: np.sum(
        gsl.solve_triangular(np.tril(a) + 2 * onp.eye(3), a, lower=True) ** 2
    ),
    "solve_sylvester(a, a.T + I, a)": lambda a: np.sum(
        gsl.solve_sylvester(a, a.T + onp.eye(3), a) ** 2
    ),
    "lstsq(a, a)": lambda a: np.sum(np.linalg.lstsq(a, a, rcond=None)[0] ** 2),
    "block": lambda a: np.sum(np.block([[a, a], [a, a]]) ** 3),
    "convolve(a0, a1)": lambda a: np.sum(np.convolve(a[0], a[1]) ** 2),
}


@pytest.mark.parametrize("name", list(SAME_VALUE))
def test_joint_rule_with_one_value_in_several_arguments(name):
    f = SAME_VALUE[name]
    want = _fd_grad(_np_version(f), (_SQ,), 0)
    g = grad(f)(_SQ)
    _close(g, want, rtol=1e-5, atol=1e-6)
    H = hessian(f)(_SQ).reshape(9, 9)
    Hfd = onp.stack(
        [
            _fd_grad(lambda a, i=i: float(onp.ravel(grad(f)(a))[i]), (_SQ,), 0).ravel()
            for i in range(9)
        ]
    )
    _close(H, Hfd, rtol=1e-4, atol=1e-5)
    v = rs.randn(3, 3)
    _close(make_jvp(f)(_SQ)(v)[1], onp.sum(want * v), rtol=1e-5, atol=1e-6)


def _ode_loss(y0, t, k, c):
    from gradcy.scipy.integrate import odeint

    func = lambda y, t, k, c: -k * y + c * np.sin(t)
    return np.sum(odeint(func, y0, t, args=(k, c), rtol=1e-11, atol=1e-11) ** 2)


def _ode_loss_np(y0, t, k, c):
    import scipy.integrate as si

    func = lambda y, t, k, c: -k * y + c * onp.sin(t)
    y = si.odeint(func, y0, t, args=(float(k), c), rtol=1e-11, atol=1e-11)
    return float(onp.sum(y**2))


@pytest.mark.parametrize("argnum", [0, 1, 2, 3, (0, 2), (3, 0, 1)], ids=str)
def test_odeint_any_argnum_subset(argnum):
    args = (onp.array([1.0, 0.5]), onp.array([0.0, 0.5, 1.0]), 0.7, onp.array([0.3, -0.2]))
    g = grad(_ode_loss, argnum=argnum)(*args)
    nums = argnum if isinstance(argnum, tuple) else (argnum,)
    gs = g if isinstance(argnum, tuple) else (g,)
    for k, gk in zip(nums, gs):
        assert type(gk) is type(args[k])
        want = _fd_grad(lambda *a: _ode_loss_np(*a), args, k)
        _close(gk, want, rtol=1e-4, atol=1e-6)
    cg = const_graph(grad(_ode_loss, argnum=argnum))
    cg(*args)
    fresh = (args[0] * 1.1, args[1], 0.6, args[3] * 0.9)
    got, want = cg(*fresh), grad(_ode_loss, argnum=argnum)(*fresh)
    _assert_same_tree(got, want)


def test_fixed_point_second_order_forward_and_replay():
    from gradcy.misc.fixed_points import fixed_point

    step = lambda a: lambda x: 0.5 * (x + a / x)
    root = lambda a: fixed_point(step, a, 1.0, lambda x, y: np.abs(x - y), 1e-12)
    _close(grad(root)(2.0), 0.5 / onp.sqrt(2.0), rtol=1e-14)
    _close(hessian(root)(2.0), -0.25 * 2.0**-1.5, rtol=1e-12)
    _close(make_jvp(root)(2.0)(1.0)[1], 0.5 / onp.sqrt(2.0), rtol=1e-14)
    cg = const_graph(grad(root))
    cg(2.0)
    for a in (3.0, 10.0, 0.01):  # a different number of iterations each
        got = cg(a)
        assert type(got) is float and got == grad(root)(a)


_FWD_OUTPUTS = {  # (body, vjp maker, jvp rule, use of the output, written once for both)
    "tuple": (
        lambda x: (onp.sin(x), onp.cos(x)),
        lambda ans, x: lambda g: g[0] * onp.cos(x) - g[1] * onp.sin(x),
        lambda g, ans, x: (g * onp.cos(x), -g * onp.sin(x)),
        lambda o: o[0] * o[1],
    ),
    "dict": (
        lambda x: {"s": onp.sin(x), "c": onp.cos(x)},
        lambda ans, x: lambda g: g["s"] * onp.cos(x) - g["c"] * onp.sin(x),
        lambda g, ans, x: {"s": g * onp.cos(x), "c": -g * onp.sin(x)},
        lambda o: o["s"] ** 2 + o["c"],
    ),
    "dict, one element read": (
        lambda x: {"s": onp.sin(x), "c": onp.cos(x)},
        lambda ans, x: lambda g: g["s"] * onp.cos(x) - g["c"] * onp.sin(x),
        lambda g, ans, x: {"s": g * onp.cos(x), "c": -g * onp.sin(x)},
        lambda o: o["c"] * 3.0,
    ),
    "list, one element read": (
        lambda x: [onp.sin(x), onp.cos(x)],
        lambda ans, x: lambda g: g[0] * onp.cos(x) - g[1] * onp.sin(x),
        lambda g, ans, x: [g * onp.cos(x), -g * onp.sin(x)],
        lambda o: o[1] ** 3,
    ),
}


@pytest.mark.parametrize("case", list(_FWD_OUTPUTS))
def test_user_jvp_rule_on_a_container_output(case, batched_hessian):
    # forward mode through a user primitive returning a container (a dict raised NumPy's
    # "entry not a 2- or 3- tuple" from the tangent's dtype matching), against autograd 1.9.1
    import autograd
    import autograd.extend as ae
    import autograd.numpy as anp

    body, vjp, jvp, use = _FWD_OUTPUTS[case]
    p, pa = primitive(body), ae.primitive(body)
    defvjp(p, vjp)
    defjvp(p, jvp)
    ae.defvjp(pa, vjp)
    ae.defjvp(pa, jvp)
    x, v = onp.array([0.3, -0.8, 1.4]), onp.array([1.0, 0.5, -2.0])
    f = lambda x: np.sum(use(p(x)) * x)
    fa = lambda x: anp.sum(use(pa(x)) * x)
    got, want = make_jvp(f)(x)(v), autograd.make_jvp(fa)(x)(v)
    onp.testing.assert_allclose(got, want, rtol=1e-14)
    _close(got[1], onp.sum(_fd_grad(lambda x: float(onp.sum(use(body(x)) * x)), (x,), 0) * v))
    onp.testing.assert_allclose(hessian(f)(x), autograd.hessian(fa)(x), rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("replay", ["const_graph", "jit"])
@pytest.mark.parametrize("case", ["tuple, first used", "dict, one used", "nested tuple in dict"])
@pytest.mark.parametrize("how", ["defvjp", "defvjp_argnums", "primitive_vjps"])
def test_user_maker_rule_replayed_at_fresh_inputs(how, case, replay):
    # the rule (plain NumPy on its arguments) and its dense zeros run again at each replay
    body, rule, use = CONTAINERS[case]
    p = primitive_with_deprecation_warnings(body)
    _register(how, p, rule)
    g = grad(lambda x: np.sum(use(p(x)) * x))
    c = const_graph(g) if replay == "const_graph" else gradcy.jit(g)
    x0 = onp.array([0.3, 0.5])
    c(x0)
    for s in (0.7, 1.3, 2.0):
        onp.testing.assert_array_equal(c(x0 * s), g(x0 * s))


@pytest.mark.parametrize(
    "how",
    [
        "grad",
        "hessian",
        "jacobian of grad",
        "grad of value_and_grad",
        "elementwise_grad",
        "float32",
    ],
)
def test_dask_gradients_keep_the_input_type(how):
    da = pytest.importorskip("dask.array")
    x = onp.array([0.3, 0.5, 0.9])
    dx = da.from_array(x, chunks=2)
    ops = {
        "grad": lambda x: grad(_f)(x),
        "hessian": lambda x: hessian(_f)(x),
        "jacobian of grad": lambda x: jacobian(grad(_f))(x),
        "grad of value_and_grad": lambda x: grad(lambda x: np.sum(value_and_grad(_f)(x)[1]))(x),
        "elementwise_grad": lambda x: elementwise_grad(lambda x: np.sin(x) * x)(x),
        "float32": lambda x: grad(_f)(x.astype(onp.float32)),
    }
    got, want = ops[how](dx), ops[how](x)
    assert isinstance(got, da.Array) and got.dtype == want.dtype and got.shape == want.shape
    onp.testing.assert_allclose(got.compute(), want, rtol=1e-6 if how == "float32" else 1e-14)


_SELECTS = {
    "one traced condition": lambda x: np.sum(np.select([x > 1], [x]) * 1.5),
    "two conditions, a traced default": lambda x: np.sum(
        np.select([x > 1, x < 0.5], [x, x**2], default=x[0]) * 1.5
    ),
    "a tuple of conditions": lambda x: np.sum(np.select((x > 1,), (x * 2,))),
}


@pytest.mark.parametrize("wrap", ["value", "grad"])
@pytest.mark.parametrize("name", list(_SELECTS))
def test_const_graph_of_select_with_traced_conditions(name, wrap):
    # const_graph records comparisons: select's conditions arrive traced, in a list (NumPy's
    # dispatch sent them back to gradcy.numpy.select: RecursionError)
    f = _SELECTS[name]
    fn = f if wrap == "value" else grad(f)
    x = onp.array([0.3, 1.5, 2.0])
    c = const_graph(fn)
    onp.testing.assert_array_equal(c(x), fn(x))
    for s in (2.0, 0.9, 1.2):  # (some condition true at each)
        onp.testing.assert_array_equal(c(x * s), fn(x * s))


def test_const_graph_of_select_gradient_where_no_condition_holds():
    # (the conditions' values were read by select's rule: a replay where none holds recorded
    # again, and that recording's zero gradient was refused as independent of the input)
    f = _SELECTS["one traced condition"]
    c = const_graph(grad(f))
    x = onp.array([0.3, 1.5, 2.0])
    c(x)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        onp.testing.assert_array_equal(c(-x), grad(f)(-x))
