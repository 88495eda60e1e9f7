"""gradcy.builtins, gradcy.misc (flatten, optimizers, fixed_point), gradcy.vspace and
SparseObject cotangents. autograd (installed in the test environment) is the oracle where its
behaviour is the specification."""

import numpy as onp
import pytest

import autograd
import autograd.builtins as ag_builtins
import autograd.misc as ag_misc
import autograd.misc.fixed_points as ag_fixed_points
import autograd.misc.optimizers as ag_optimizers
import autograd.numpy as agnp
from autograd.extend import vspace as ag_vspace

import gradcy.numpy as np
from gradcy import grad, make_jvp
from gradcy._core import ArrayMeta, Box, Tape
from gradcy.builtins import dict as gdict
from gradcy.builtins import isinstance as gisinstance
from gradcy.builtins import list as glist
from gradcy.builtins import tuple as gtuple
from gradcy.builtins import type as gtype
from gradcy.extend import defvjp, primitive
from gradcy.misc import fixed_point, flatten, flatten_func
from gradcy.misc import optimizers
from gradcy.test_util import check_grads
from gradcy.vspace import SparseObject, VSpace, vspace
from vjp_harness import check, dtype_ok

COVERED = {"gradcy.misc.fixed_points.fixed_point"}

RTOL = 1e-7


def close(a, b, rtol=RTOL, atol=1e-12):
    onp.testing.assert_allclose(onp.asarray(a), onp.asarray(b), rtol=rtol, atol=atol)


def rs(seed=0):
    return onp.random.RandomState(seed)


# =============================================================================
# gradcy.builtins
# =============================================================================
TYPE_EXAMPLES = [onp.zeros(3), onp.zeros((2, 2), onp.float32), 1.5, onp.float64(2.0)]
CLASSINFOS = [
    onp.ndarray,
    float,
    onp.floating,
    (float, onp.ndarray),
    tuple,
    list,
    dict,
    onp.float32,
]


@pytest.mark.parametrize("x", TYPE_EXAMPLES, ids=lambda x: type(x).__name__)
def test_isinstance_and_type_see_through_traced_values_like_autograd(x):
    expected = [ag_builtins.isinstance(x, c) for c in CLASSINFOS]
    seen = {}

    def probe(v):
        seen["isinstance"] = [gisinstance(v, c) for c in CLASSINFOS]
        seen["type"] = gtype(v)
        seen["box"] = type(v) is Box
        return np.sum(v * 2.0)

    grad(probe)(x)
    assert seen["box"]
    assert seen["isinstance"] == expected
    assert seen["type"] is type(x)
    # plain values: same as the builtins
    assert [gisinstance(x, c) for c in CLASSINFOS] == [isinstance(x, c) for c in CLASSINFOS]


def test_isinstance_and_type_through_two_levels_of_tracing():
    seen = []

    def f(x):
        seen.append((gisinstance(x, float), gtype(x), type(x) is Box))
        return x**3

    close(grad(grad(f))(2.0), 12.0)
    assert seen == [(True, float, True)]


def test_container_classes_answer_isinstance_like_autograd():
    for value in [(), (1.0,), [], [1.0], {}, {"a": 1.0}, onp.zeros(2), 1.0]:
        for ours, theirs in [
            (gtuple, ag_builtins.tuple),
            (glist, ag_builtins.list),
            (gdict, ag_builtins.dict),
        ]:
            assert isinstance(value, ours) == isinstance(value, theirs), (value, ours)
            assert gisinstance(value, ours) == ag_builtins.isinstance(value, theirs)
    assert issubclass(tuple, gtuple) and not issubclass(list, gtuple)


def test_constructors_build_plain_containers():
    assert gtuple([1, 2]) == (1, 2) and type(gtuple([1, 2])) is tuple
    assert glist((1, 2)) == [1, 2] and type(glist((1, 2))) is list
    assert gtuple() == () and glist() == []
    for d in [gdict(), gdict(()), gdict({}), gdict([("a", 1)], b=2), gdict(a=1)]:
        assert type(d) is dict
    assert gdict([("a", 1)], b=2) == {"a": 1, "b": 2}


def test_tuple_of_a_traced_sequence_is_a_traced_tuple():
    # as autograd's: tuple(xs) / list(xs) with traced elements is one traced container
    # (a SequenceBox), whose elements index as traced values
    from gradcy.builtins import SequenceBox

    def f(x):
        parts = gtuple(np.split(x, 2))  # np.split of a traced array: a traced list
        assert type(parts) is Box and isinstance(parts, SequenceBox)
        assert type(parts._value) is tuple and len(parts) == 2
        assert all(type(p) is Box for p in parts)
        lst = glist(np.split(x, 2))
        assert isinstance(lst, SequenceBox) and type(lst._value) is list
        return np.sum(parts[0] * 2.0) + np.sum(lst[1] ** 2)

    x = onp.arange(4.0)
    close(grad(f)(x), [2.0, 2.0, 4.0, 6.0])


def test_functions_returning_builtin_containers():
    x = rs(1).randn(3)
    check_grads(lambda x: gtuple((np.sin(x), x * 2.0)), modes=["rev"])(x)
    check_grads(lambda x: glist([np.sin(x), x * 2.0]), modes=["rev"])(x)
    check_grads(lambda x: gdict([("a", x)], b=np.cos(x)), modes=["rev"])(x)
    check_grads(lambda x: gdict({"a": x * x}), modes=["rev"])(1.5)


def test_nested_higher_order_through_a_builtin_tuple():
    def outer(x):
        def inner(y):
            return y[0] * y[1]

        return np.sum(np.sin(np.array(grad(inner)(gtuple((x, x))))))

    def ag_outer(x):
        def inner(y):
            return y[0] * y[1]

        return agnp.sum(agnp.sin(agnp.array(autograd.grad(inner)(ag_builtins.tuple((x, x))))))

    check_grads(outer, modes=["rev"])(0.3)
    close(grad(outer)(0.3), autograd.grad(ag_outer)(0.3))


def test_dict_argument_with_builtins():
    def f(d):
        assert gisinstance(d, dict) and gisinstance(d, gdict)
        total = 0.0
        for i, k in enumerate(sorted(d)):
            total = total + np.sum(np.sin(d[k])) * (i + 1.0)
        return total + np.sum(d.get("b", 0.0) ** 2)

    def ag_f(d):
        total = 0.0
        for i, k in enumerate(sorted(d)):
            total = total + agnp.sum(agnp.sin(d[k])) * (i + 1.0)
        return total + agnp.sum(d.get("b", 0.0) ** 2)

    d = {"b": rs(2).randn(3), "a": rs(3).randn(2, 2)}
    ours, theirs = grad(f)(d), autograd.grad(ag_f)(d)
    for k in d:
        close(ours[k], theirs[k])


# =============================================================================
# flatten
# =============================================================================
def nested_example():
    r = rs(4)
    return {
        "b": [r.randn(2).astype(onp.float32), 1.5],
        "a": r.randn(3, 1),
        "c": (onp.float64(2.0), {"z": r.randn(2, 2), "y": onp.array(3.0)}),
    }


def test_flatten_matches_autograd():
    value = nested_example()
    flat, unflatten = flatten(value)
    ag_flat, ag_unflatten = ag_misc.flatten(value)
    assert flat.dtype == ag_flat.dtype and flat.shape == ag_flat.shape
    close(flat, ag_flat)
    v = rs(5).randn(flat.size)
    ours, theirs = unflatten(v), ag_unflatten(v)
    assert ours.keys() == theirs.keys()
    ol, _ = flatten(ours)
    tl, _ = ag_misc.flatten(theirs)
    close(ol, tl)
    assert type(ours["b"]) is list and type(ours["c"]) is tuple and type(ours["c"][1]) is dict
    assert ours["b"][0].dtype == onp.float32 == theirs["b"][0].dtype
    for leaf, orig in [
        (ours["a"], value["a"]),
        (ours["c"][1]["z"], value["c"][1]["z"]),
        (ours["b"][1], onp.asarray(1.5)),
    ]:
        assert isinstance(leaf, onp.ndarray) and leaf.shape == onp.shape(orig)


@pytest.mark.filterwarnings("ignore:Output seems independent of input")
def test_flatten_edge_cases():
    for value in [[], (), {}, [[], {}]]:
        flat, unflatten = flatten(value)
        ag_flat, _ = ag_misc.flatten(value)
        assert flat.shape == (0,) == ag_flat.shape and flat.dtype == ag_flat.dtype
        assert unflatten(flat) == value
    flat, unflatten = flatten(3.0)
    assert flat.shape == (1,) and unflatten(onp.array([4.0])) == 4.0
    flat, unflatten = flatten([onp.ones(2), 1j])  # complex leaf: complex vector
    assert flat.dtype == complex
    back = unflatten(flat * 2)
    assert back[0].dtype == onp.float64 and back[1] == 2j
    with pytest.raises(ValueError):
        unflatten(onp.ones(5))


def test_unflatten_does_not_alias_the_vector():
    flat, unflatten = flatten([onp.ones(2), onp.ones(3)])
    v = onp.arange(5.0)
    out = unflatten(v)
    out[0][0] = 100.0
    assert v[0] == 0.0


def test_flatten_and_unflatten_are_differentiable():
    params = nested_example()
    flat, unflatten = flatten(params)

    def loss(p):
        return (
            np.sum(np.sin(p["a"]))
            + np.sum(p["b"][0] ** 2) * p["b"][1]
            + p["c"][0] * np.sum(p["c"][1]["z"] ** 3)
            + p["c"][1]["y"]
        )

    g_struct = grad(loss)(params)
    g_flat = grad(lambda v: loss(unflatten(v)))(flat)
    close(g_flat, flatten(g_struct)[0], rtol=1e-6)  # the float32 leaf is rounded
    # flatten of traced leaves
    g = grad(lambda p: np.sum(flatten(p)[0] ** 2))(params)
    close(flatten(g)[0], 2 * flat, rtol=1e-6)
    x = rs(6).randn(5)
    check_grads(lambda v: unflatten(v)["a"] * unflatten(v)["c"][1]["z"][0, 1])(flat)
    check_grads(lambda x: flatten({"u": x[:2], "v": (np.sin(x), x[0] * 2.0)})[0])(x)


def test_flatten_of_a_traced_sequence():
    def f(x):
        flat, unflatten = flatten(np.split(x, 3))
        parts = unflatten(flat * 2.0)
        assert type(parts) is list and len(parts) == 3
        return np.sum(parts[1] * flat[:2])

    x = rs(7).randn(6)
    check_grads(f)(x)


def test_flatten_func():
    def func(p, scale):
        return {"s": p["x"] * scale, "t": [np.sin(p["y"])]}

    example = {"x": onp.ones(2), "y": onp.zeros(3)}
    flat_func, unflatten, flat_example = flatten_func(func, example)
    out = flat_func(onp.arange(5.0), 2.0)
    close(out, onp.concatenate([[0.0, 2.0], onp.sin([2.0, 3.0, 4.0])]))
    assert unflatten(flat_example)["x"].shape == (2,)


# =============================================================================
# optimizers
# =============================================================================
def _quadratic_problem():
    r = rs(8)
    A = r.randn(5, 5)
    A = A @ A.T / 5 + onp.eye(5)
    b = r.randn(5)
    x0 = {"w": r.randn(3), "rest": [r.randn(1), 0.5]}
    return A, b, x0


def _make_objective(npmod, flat_of, A, b):
    def objective(params, i):
        v = flat_of(params)
        return 0.5 * npmod.dot(v, npmod.dot(A, v)) - npmod.dot(b, v) + 0.01 * i * npmod.sum(v)

    return objective


@pytest.mark.parametrize(
    "name,kwargs",
    [
        ("sgd", {"num_iters": 30, "step_size": 0.05, "mass": 0.8}),
        ("rmsprop", {"num_iters": 30, "step_size": 0.05, "gamma": 0.8}),
        ("adam", {"num_iters": 30, "step_size": 0.05, "b1": 0.8, "b2": 0.99}),
    ],
)
def test_optimizers_match_autograd_on_nested_parameters(name, kwargs):
    A, b, x0 = _quadratic_problem()
    ours_obj = _make_objective(np, lambda p: flatten(p)[0], A, b)
    ag_obj = _make_objective(agnp, lambda p: ag_misc.flatten(p)[0], A, b)
    ours_seen, ag_seen = [], []
    ours = getattr(optimizers, name)(
        grad(ours_obj), x0, callback=lambda x, i, g: ours_seen.append((x, i, g)), **kwargs
    )
    theirs = getattr(ag_optimizers, name)(
        autograd.grad(ag_obj), x0, callback=lambda x, i, g: ag_seen.append((x, i, g)), **kwargs
    )
    close(flatten(ours)[0], ag_misc.flatten(theirs)[0])
    assert type(ours["rest"]) is list and ours["w"].shape == (3,)
    assert len(ours_seen) == kwargs["num_iters"] == len(ag_seen)
    for (x, i, g), (ax, ai, ag) in zip(ours_seen, ag_seen):
        assert i == ai and type(x) is dict and type(g) is dict
        close(flatten(x)[0], ag_misc.flatten(ax)[0])
        close(flatten(g)[0], ag_misc.flatten(ag)[0])


@pytest.mark.parametrize("name", ["sgd", "rmsprop", "adam"])
def test_optimizers_minimize_a_quadratic(name):
    A, b, x0 = _quadratic_problem()
    obj = _make_objective(np, lambda p: flatten(p)[0], A, b)

    def loss(p, i=0):
        return obj(p, 0)

    step = {"sgd": 0.1, "rmsprop": 0.05, "adam": 0.1}[name]
    out = getattr(optimizers, name)(grad(loss), x0, num_iters=200, step_size=step)
    x_star = onp.linalg.solve(A, b)
    assert loss(out) < loss(x0)
    assert abs(loss(out) - loss(onp_unflat(x0, x_star))) < 0.05


def onp_unflat(example, v):
    return flatten(example)[1](v)


def test_optimizer_run_is_differentiable_in_its_step_size():
    A, b, x0 = _quadratic_problem()
    x0 = onp.array([1.0, -1.0, 0.5, 0.0, 0.2])

    def loss(x, i=0):
        return 0.5 * np.dot(x, np.dot(A, x)) - np.dot(b, x)

    def final_loss(step):
        return loss(optimizers.sgd(grad(loss), x0, num_iters=5, step_size=step, mass=0.5))

    def ag_final_loss(step):
        def ag_loss(x, i=0):
            return 0.5 * agnp.dot(x, agnp.dot(A, x)) - agnp.dot(b, x)

        return ag_loss(
            ag_optimizers.sgd(autograd.grad(ag_loss), x0, num_iters=5, step_size=step, mass=0.5)
        )

    close(grad(final_loss)(0.1), autograd.grad(ag_final_loss)(0.1))
    check_grads(final_loss, modes=["rev"], order=1)(0.1)


# =============================================================================
# fixed_point
# =============================================================================
def distance(x, y):
    return np.max(np.abs(x - y))


def newton_sqrt_iter(a):
    return lambda x: 0.5 * (x + a / x)


def descent_sqrt_iter(a):
    return lambda x: x - 0.05 * (x**2 - a)


def test_fixed_point_sqrt_value_and_derivatives():
    def sqrt(a):
        return fixed_point(newton_sqrt_iter, a, 10.0, distance, 1e-10)

    close(sqrt(2.0), onp.sqrt(2.0))
    close(grad(sqrt)(2.0), 0.5 / onp.sqrt(2.0), rtol=1e-9)
    close(grad(grad(sqrt))(2.0), -0.25 * 2.0**-1.5, rtol=1e-8)
    close(make_jvp(sqrt)(2.0)(1.0)[1], 0.5 / onp.sqrt(2.0), rtol=1e-9)
    a = onp.array([0.5, 2.0, 9.0])
    close(grad(lambda a: np.sum(sqrt(a)))(a), 0.5 / onp.sqrt(a), rtol=1e-9)


def test_fixed_point_matches_autograd():
    def ours(a):
        return fixed_point(descent_sqrt_iter, a, 1.0, distance, 1e-10)

    def theirs(a):
        return ag_fixed_points.fixed_point(
            lambda a: lambda x: x - 0.05 * (x**2 - a),
            a,
            1.0,
            lambda x, y: agnp.max(agnp.abs(x - y)),
            1e-10,
        )

    a = onp.array([1.5, 2.0, 3.0])
    close(ours(a), theirs(a))
    close(
        grad(lambda a: np.sum(ours(a) ** 2))(a),
        autograd.grad(lambda a: agnp.sum(theirs(a) ** 2))(a),
    )


def test_fixed_point_gradient_checks_forward_and_reverse():
    # linear convergence: the iterates themselves are not what is differentiated
    check(
        lambda a: fixed_point(descent_sqrt_iter, a, 1.0, distance, 1e-12),
        onp.array([1.5, 2.0, 3.0]),
    )
    check(lambda a: fixed_point(descent_sqrt_iter, a, 1.0, distance, 1e-12), 2.0, dtypes=False)


def _coupled_iter(params):
    A, c = params["A"], params["c"]
    return lambda x: 0.5 * np.tanh(np.dot(A, x)) + c


def test_fixed_point_with_container_parameters():
    r = rs(9)
    params = {"A": 0.3 * r.randn(3, 3), "c": r.randn(3)}

    def solve(params):
        return fixed_point(_coupled_iter, params, onp.zeros(3), distance, 1e-13)

    x = solve(params)
    close(x, 0.5 * onp.tanh(params["A"] @ x) + params["c"], rtol=1e-10)
    check_grads(solve, modes=["rev", "fwd"], order=2)(params)
    # a tuple built with gradcy.builtins, as autograd programs do
    check_grads(
        lambda A, c: fixed_point(
            lambda p: _coupled_iter({"A": p[0], "c": p[1]}),
            gtuple((A, c)),
            onp.zeros(3),
            distance,
            1e-13,
        ),
        (0, 1),
        modes=["rev"],
        order=1,
    )(params["A"], params["c"])


def test_fixed_point_float32_keeps_dtype():
    a = onp.array([1.5, 2.0], onp.float32)
    out = fixed_point(descent_sqrt_iter, a, onp.ones(2, onp.float32), distance, 1e-6)
    assert out.dtype == onp.float32
    g = grad(
        lambda a: np.sum(
            fixed_point(descent_sqrt_iter, a, onp.ones(2, onp.float32), distance, 1e-6)
        )
    )(a)
    assert g.dtype == onp.float32
    close(g, 0.5 / onp.sqrt(a.astype(float)), rtol=1e-4)


def test_fixed_point_saves_only_the_output_and_the_parameters():
    a = onp.array([1.5, 2.0, 3.0])
    x0 = onp.ones(3)
    t = Tape()
    try:
        b = t.new_leaf(a)
        y = fixed_point(newton_sqrt_iter, b, x0, distance, 1e-10)
        info = t.node_info(y._node)
        assert info["primitive"] == "gradcy.misc.fixed_points.fixed_point"
        ans, args, kwargs = info["saved"]
        assert isinstance(ans, onp.ndarray)
        assert type(args[0]) is ArrayMeta  # x0: only its metadata
        assert args[5] is a  # the parameter leaf
        del y
    finally:
        t.release()


def test_fixed_point_x0_gets_no_gradient():
    g = grad(lambda x0: np.sum(fixed_point(newton_sqrt_iter, 2.0, x0, distance, 1e-10)))(
        onp.array([1.0, 3.0])
    )
    close(g, onp.zeros(2))


# =============================================================================
# vspace
# =============================================================================
VSPACE_EXAMPLES = [
    onp.zeros((2, 3)),
    onp.zeros(3, onp.float32),
    1.5,
    onp.float32(1.0),
    onp.float64(2.0),
    1 + 2j,
    onp.zeros(2, complex),
    onp.zeros((), onp.complex64),
    (1.0, onp.zeros(2)),
    [onp.ones(2), [2.0, 1j]],
    {"a": 1.0, "b": (onp.zeros((2, 1)),)},
]


def _ids(x):
    return type(x).__name__ + str(onp.shape(x) if not isinstance(x, (tuple, list, dict)) else "")


@pytest.mark.parametrize("value", VSPACE_EXAMPLES, ids=_ids)
def test_vspace_matches_autograd(value):
    vs, ag = vspace(value), ag_vspace(value)
    assert vs.size == ag.size
    assert vs.iscomplex == ag.iscomplex
    if hasattr(ag, "dtype"):
        assert vs.shape == ag.shape and vs.dtype == ag.dtype and vs.ndim == ag.ndim
    for ours, theirs in [(vs.zeros(), ag.zeros()), (vs.ones(), ag.ones())]:
        _same_structure(ours, theirs)
    basis, ag_basis = list(vs.standard_basis()), list(ag.standard_basis())
    assert len(basis) == len(ag_basis) == vs.size
    for e, f in zip(basis, ag_basis):
        _same_structure(e, f)
    onp.random.seed(0)
    x = vs.randn()
    onp.random.seed(0)
    _same_structure(x, ag.randn())
    y = vs.randn()
    close(vs.inner_prod(x, y), ag.inner_prod(x, y))
    _same_structure(vs.covector(x), ag.covector(x))
    _same_structure(vs.add(x, y), ag.add(x, y))
    _same_structure(vs.scalar_mul(x, 3.0), ag.scalar_mul(x, 3.0))
    _same_structure(vs.mut_add(None, x), ag.mut_add(None, x))
    _same_structure(vs.unflatten(vs.flatten(x)), x)
    assert vs == vspace(value) and vs != vspace(onp.zeros(7))
    assert vspace(vs.zeros()) == vs


def _same_structure(a, b):
    if isinstance(b, dict):
        assert type(a) is dict and a.keys() == b.keys()
        for k in b:
            _same_structure(a[k], b[k])
    elif isinstance(b, (tuple, list)):
        assert type(a) is type(b) and len(a) == len(b)
        for x, y in zip(a, b):
            _same_structure(x, y)
    else:
        # (autograd's ones() of a complex64 0-d space adds 1j: NumPy 1.x widens that scalar)
        assert onp.shape(a) == onp.shape(b) and (
            onp.result_type(a) == onp.result_type(b)
            or (onp.ndim(b) == 0 and dtype_ok(b, onp.result_type(a)))
        ), (a, b)
        close(a, b)


def test_vspace_of_traced_values_and_differentiable_operations():
    x = rs(10).randn(3)

    def f(x):
        vs = vspace(x)
        assert vs == vspace(onp.zeros(3)) and vs.size == 3
        return vs.inner_prod(x, vs.scalar_mul(x, 2.0)) + vs.inner_prod(vs.flatten(x), x)

    close(grad(f)(x), 6 * x)
    check_grads(lambda z: vspace(z).inner_prod(z, z * 1j), modes=["rev"])(x + 0.5j * x)
    check_grads(lambda z: vspace(z).covector(z) * z, modes=["rev"])(x + 0.5j * x)

    def g(t):  # a traced tuple (np.split's output)
        parts = np.split(t, 3)
        vs = vspace(parts)
        assert type(vs).__name__ == "ListVSpace" and vs.size == 3
        return vs.inner_prod(parts, parts)

    close(grad(g)(x), 2 * x)


def test_vspace_errors_and_registration():
    with pytest.raises(TypeError):
        vspace("text")
    with pytest.raises(TypeError):
        vspace(3)

    class Wrapped:
        def __init__(self, a):
            self.a = a

    VSpace.register(Wrapped, lambda w: vspace(w.a))
    try:
        assert vspace(Wrapped(onp.zeros(4))).size == 4
    finally:
        del VSpace.mappings[Wrapped]


# =============================================================================
# SparseObject cotangents
# =============================================================================
@primitive
def pick(x, i):
    """x[i], whose VJP returns a SparseObject."""
    return x[i]


def _pick_vjp(ans, x, i):
    vs = vspace(x)

    def vjp(g):
        def mut_add(dense):
            dense[i] += g
            return dense

        return SparseObject(vs, mut_add)

    return vjp


defvjp(pick, _pick_vjp, None)


def test_sparse_cotangent_alone_reaches_the_leaf_dense():
    x = onp.array([1.0, 2.0, 3.0])
    g = grad(lambda x: pick(x, 1) * 3.0)(x)
    assert type(g) is onp.ndarray and g.dtype == x.dtype
    close(g, [0.0, 3.0, 0.0])
    g32 = grad(lambda x: pick(x, 2) * 3.0)(x.astype(onp.float32))
    assert g32.dtype == onp.float32
    close(g32, [0.0, 0.0, 3.0])


def test_sparse_cotangents_accumulate_with_each_other_and_dense_ones():
    x = onp.array([1.0, 2.0, 3.0])
    close(grad(lambda x: pick(x, 1) * 3.0 + pick(x, 2) + pick(x, 1))(x), [0.0, 4.0, 1.0])
    close(grad(lambda x: pick(x, 1) * 3.0 + np.sum(x**2))(x), 2 * x + [0.0, 3.0, 0.0])
    close(grad(lambda x: np.sum(x**2) + pick(x, 0) * 3.0)(x), 2 * x + [3.0, 0.0, 0.0])


def test_sparse_cotangent_flows_through_upstream_rules():
    x = onp.array([0.5, 1.0, 1.5])
    close(
        grad(lambda x: pick(np.exp(x), 1) + pick(np.exp(x), 0))(x),
        [onp.exp(0.5), onp.exp(1.0), 0.0],
    )
    close(grad(lambda x: pick(np.sin(x) * x, 2))(x), [0.0, 0.0, onp.cos(1.5) * 1.5 + onp.sin(1.5)])


def test_sparse_object_arithmetic_never_mutates_operands():
    vs = vspace(onp.zeros(3))
    s = SparseObject(vs, lambda d: (d.__setitem__(0, d[0] + 5.0), d)[1])
    dense = onp.ones(3)
    close(s + dense, [6.0, 1.0, 1.0])
    close(dense + s, [6.0, 1.0, 1.0])
    close(s + s, [10.0, 0.0, 0.0])
    close(dense, onp.ones(3))
    close(onp.asarray(s), [5.0, 0.0, 0.0])
    assert vspace(s) is vs and s.shape == (3,) and s.dtype == onp.float64
    assert vs.mut_add(onp.zeros(3), s)[0] == 5.0


@primitive
def _untake(g, i, vs):
    """The SparseObject cotangent of x[i], built by a primitive so that it is traced when g
    is (autograd's container_untake pattern): needed for higher-order derivatives."""

    def mut_add(dense):
        dense[i] += g
        return dense

    return SparseObject(vs, mut_add)


@primitive
def pick2(x, i):
    return x[i]


defvjp(pick2, lambda ans, x, i: lambda g: _untake(g, i, vspace(x)), None)
defvjp(_untake, lambda ans, g, i, vs: lambda G: pick2(G, i), None, None)


def test_sparse_cotangents_built_by_a_primitive_support_higher_order():
    x = onp.array([1.0, 2.0, 3.0])

    def inner(y):
        return pick2(y, 1) ** 3 + np.sum(y**2)

    close(grad(inner)(x), [2.0, 16.0, 6.0])
    close(grad(lambda x: np.sum(grad(inner)(x) ** 2))(x), [8.0, 448.0, 24.0])
    check_grads(lambda x: grad(inner)(x), modes=["rev"])(x)
