"""The NumPy functions autograd never differentiated and NumPy 2's names (each differentiates in
both modes), the saved sets of the rules, and the coverage of the rule files these checks span
(_PRIMS: indexing, calculus, polynomials, statistics, manipulation's conversions and ranges,
elementwise's tuple-valued ufuncs); the per-family checks are in test_<family>.py."""

import numpy as onp
import pytest

import gradcy.numpy as np
from gradcy import grad, make_jvp
from gradcy._core import ArrayMeta, Tape
from gradcy.numpy import numpy_wrapper as W
from gradcy.numpy import calculus, indexing, polynomials, statistics
from gradcy.test_util import check_grads
from op_records.products import RECORDS as PRODUCTS
from op_records.reductions import QUANTILES, RECORDS as REDUCTIONS
from vjp_harness import rand

# NumPy 1.26 names trapezoid trapz, and has no unstack, cumulative_sum, cumulative_prod
trapezoid = getattr(np, "trapezoid", None) or np.trapz
needs = pytest.mark.skipif
_PRIMS = [
    W.append,
    W.insert,
    W.delete,
    W.resize,
    W.diagflat,
    W.extract,
    indexing._choose_p,
    indexing._select_p,
    W.meshgrid,
    W.broadcast_arrays,
    W.trim_zeros,
    W.sort_complex,
    W.asanyarray,
    W.ascontiguousarray,
    W.asfortranarray,
    W.asarray_chkfinite,
    W.require,
    W.unwrap,
    W.real_if_close,
    W.nextafter,
    W.modf,
    W.frexp,
    W.divmod,
    W.i0,
    W.diff,
    W.ediff1d,
    W.gradient,
    calculus._trapezoid,
    W.convolve,
    W.correlate,
    W.polyadd,
    W.polysub,
    W.polymul,
    W.polyder,
    W.polyint,
    W.polyval,
    W.vander,
    W.linspace,
    W.logspace,
    W.geomspace,
    W.cov,
    W.corrcoef,
    W.interp,
    W.full,
    W.full_like,
    W.bincount,
] + [getattr(W, n) for n in ("unstack", "cumulative_sum", "cumulative_prod") if hasattr(W, n)]
_PRIMS += [getattr(W, r.name) for r in QUANTILES]  # their records: tests/op_records/reductions.py
COVERED = {p.name for p in _PRIMS}


# The functions autograd never differentiated, and NumPy 2's names: every one differentiates
# in both modes
# =============================================================================
_x = rand(4, 3)
_v = rand(5)
_w = rand(3)
_idx = onp.array([2, 0, 1])
NEVER_CLOSED = {
    "flip": (lambda a: np.flip(a, 0), _x),
    "take": (lambda a: np.take(a, _idx), _x),
    "take_along_axis": (lambda a: np.take_along_axis(a, onp.zeros((1, 3), int), 0), _x),
    "copy": (lambda a: np.copy(a), _x),
    "asarray": (lambda a: np.asarray(a), _x),
    "cov": (lambda a: np.cov(a), _x),
    "corrcoef": (lambda a: np.corrcoef(a), _x),
    "interp": (lambda a: np.interp(onp.array([0.5, 1.5]), onp.arange(5.0), a), _v),
    "convolve": (lambda a: np.convolve(a, _w), _v),
    "correlate": (lambda a: np.correlate(a, _w), _v),
    "trapezoid": (lambda a: trapezoid(a), _v),
    "cbrt": (lambda a: np.cbrt(a), _v),
    "fmod": (lambda a: np.fmod(a, 0.7), _v),
    "heaviside": (lambda a: np.heaviside(onp.array([0.0, 1.0, -1.0]), a), _w),
    "choose": (lambda a: np.choose(onp.array([0, 1, 0]), [a, 2 * a]), _w),
    "compress": (lambda a: np.compress([True, False, True], a), _w),
    "block": (lambda a: np.block([a, a]), _w),
    "broadcast_arrays": (lambda a: np.broadcast_arrays(a, _x)[0], _w),
    "x.dot": (lambda a: a.dot(a), _w),
    "x.take": (lambda a: a.take(_idx), _w),
    "x.copy": (lambda a: a.copy(), _w),
    "x.item": (lambda a: a[:1].item(), _w),
    "permute_dims": (lambda a: np.permute_dims(a, (1, 0)), _x),
    "concat": (lambda a: np.concat([a, a]), _x),
    "pow": (lambda a: np.pow(a, 3.0), _x),
    "acos": (lambda a: np.acos(a * 0.1), _x),
    "asin": (lambda a: np.asin(a * 0.1), _x),
    "atan": (lambda a: np.atan(a), _x),
    "atan2": (lambda a: np.atan2(a, 1.5), _x),
    "acosh": (lambda a: np.acosh(a * a + 1.5), _x),
    "asinh": (lambda a: np.asinh(a), _x),
    "atanh": (lambda a: np.atanh(a * 0.1), _x),
    "linspace": (lambda a: np.linspace(a, 2.0 * a, 4), _w),
    "diff": (lambda a: np.diff(a, 2), _v),
    "ediff1d": (lambda a: np.ediff1d(a), _v),
    "gradient": (lambda a: np.gradient(a), _v),
    "append": (lambda a: np.append(a, a), _w),
    "insert": (lambda a: np.insert(_v, 1, a), _w),
    "delete": (lambda a: np.delete(a, 1), _w),
    "real_if_close": (lambda a: np.real_if_close(a), _w),
    "cumulative_sum": (lambda a: np.cumulative_sum(a, axis=0), _x),
    "cumulative_prod": (lambda a: np.cumulative_prod(a, axis=1), _x),
    "nan_to_num": (lambda a: np.nan_to_num(a), _w),
}
# and the reductions and products whose record says autograd has no rule for them (a product
# differentiated in its first operand, the others constants)
NEVER_CLOSED.update(
    {r.name: (lambda a, f=getattr(np, r.name): f(a, 0), _x) for r in REDUCTIONS if not r.autograd}
)
NEVER_CLOSED.update(
    {r.name: (lambda a, r=r: getattr(np, r.name)(a, r.q[0], axis=0), _x) for r in QUANTILES}
)
NEVER_CLOSED.update(
    {
        r.name: (
            lambda a, r=r: r.call(a, *[rand(*s, seed=k) for k, s in enumerate(r.shapes[1:])]),
            rand(*r.shapes[0]),
        )
        for r in PRODUCTS
        if not r.autograd
    }
)


@pytest.mark.parametrize("name", sorted(NEVER_CLOSED))
@pytest.mark.parametrize("mode", ["rev", "fwd"])
def test_never_closed(name, mode):
    if "." not in name and not hasattr(np, name):
        pytest.skip(f"numpy.{name} is new in NumPy 2")
    fun, x = NEVER_CLOSED[name]
    check_grads(fun, modes=(mode,), order=1)(x)


def test_ptp_method():
    """x.ptp() exists on traced values (NumPy 2 removed ndarray.ptp, so no numerical check of
    the plain function): its gradient is +1 at the max, -1 at the min."""
    x = onp.array([0.5, -1.0, 2.0, 0.1])
    assert onp.allclose(grad(lambda a: a.ptp())(x), [0, -1, 1, 0])
    _, t = make_jvp(lambda a: a.ptp())(x)(onp.array([1.0, 2.0, 3.0, 4.0]))
    assert onp.isclose(t, 1.0)


# Saved sets
# =============================================================================
def _record(fun, *args):
    t = Tape()
    try:
        boxes = [t.new_leaf(a) for a in args]
        y = fun(*boxes)
        info = t.node_info(y._node)
        return info["primitive"], info["saved"]
    finally:
        t.release()


_SAVED = [
    # (function of traced args, args, positions whose arrays are kept, keeps the output)
    (lambda a, v: np.append(a, v), (rand(3), rand(2)), (), False),
    (lambda a, v: np.insert(a, onp.array([1, 2]), v), (rand(3), rand(2)), (1,), False),
    (lambda a: np.delete(a, onp.array([1])), (rand(3),), (1,), False),
    (lambda a: np.resize(a, (5,)), (rand(3),), (), False),
    (lambda a: np.diagflat(a), (rand(3),), (), False),
    (lambda a: np.extract(onp.array([True, False, True]), a), (rand(3),), (0,), False),
    (lambda a: indexing._choose_p(onp.array([0, 1]), a), (rand(2, 2),), (0,), False),
    (lambda a: indexing._select_p([onp.array([True, False])], a), (rand(1, 2),), (0,), False),
    (lambda a: np.trim_zeros(a), (rand(3),), (0,), False),
    (lambda a: np.sort_complex(a), (rand(3),), (0,), False),
    (lambda a: np.asanyarray(a), (rand(3),), (), False),
    (lambda f: W.full((2, 3), f), (rand(3),), (), False),
    (lambda a: np.unwrap(a), (rand(3),), (), False),
    (lambda a: np.real_if_close(a), (rand(3),), (), False),
    (lambda a: np.nextafter(a, 1.0), (rand(3),), (), False),
    (lambda a: np.i0(a), (rand(3),), (0,), False),
    *(
        [
            (lambda a: np.cumulative_sum(a), (rand(3),), (), False),
            (lambda a: np.cumulative_prod(a), (rand(3),), (0,), True),
        ]
        if hasattr(np, "cumulative_sum")
        else []
    ),  # NumPy >= 2.1
    (lambda a: np.diff(a), (rand(3),), (), False),
    (lambda a: np.ediff1d(a), (rand(3),), (), False),
    (lambda a: np.gradient(a, onp.arange(3.0)), (rand(3),), (1,), False),
    (lambda a, x: trapezoid(a, x), (rand(3), rand(3)), (0, 1), False),
    (lambda a, v: np.convolve(a, v), (rand(3), rand(2)), (0, 1), False),
    (lambda a, v: np.polyadd(a, v), (rand(3), rand(2)), (), False),
    (lambda a, v: np.polymul(a, v), (rand(3), rand(2)), (0, 1), False),
    (lambda a: np.polyder(a), (rand(3),), (), False),
    (lambda a: np.polyint(a), (rand(3),), (), False),
    (lambda a, x: np.polyval(a, x), (rand(3), rand(2)), (0, 1), False),
    (lambda a: np.vander(a), (rand(3),), (0,), False),
    (lambda a, b: np.linspace(a, b, 3), (rand(2), rand(2)), (), False),
    (lambda a, b: np.logspace(a, b, 3), (rand(2), rand(2)), (), True),
    (
        lambda a, b: np.geomspace(a, b, 3),
        (rand(2, positive=True), rand(2, positive=True)),
        (0, 1),
        True,
    ),
    (lambda a, q: np.quantile(a, q), (rand(3), rand(2, low=0, high=1)), (0, 1), False),
    (lambda a: np.cov(a), (rand(2, 3),), (0,), False),
    (lambda a: np.corrcoef(a), (rand(2, 3),), (0,), False),
    (lambda f: np.interp(onp.array([0.5]), onp.arange(3.0), f), (rand(3),), (0, 1, 2), False),
]


@pytest.mark.parametrize("case", range(len(_SAVED)))
def test_saved_set(case):
    fun, args, kept, keeps_ans = _SAVED[case]
    name, (ans, sargs, kwargs) = _record(fun, *args)
    if keeps_ans:
        assert type(ans) is not ArrayMeta, f"{name} dropped its output"
    else:
        assert not isinstance(ans, onp.ndarray), f"{name} keeps its output"
    for i, a in enumerate(sargs):
        if i in kept:
            assert type(a) is not ArrayMeta, f"{name} dropped argument {i}"
        else:
            assert not isinstance(a, onp.ndarray), f"{name} keeps array argument {i}"


# the rule files that hold this table's rules, and the primitives of theirs that other tables test
_MODULES = {m.__name__ for m in (calculus, indexing, polynomials, statistics)}
_OTHER_TABLES = ["_wrap.getitem", "take", "take_along_axis", "compress"] + [
    r.name for r in REDUCTIONS if r.family in ("calculus", "statistics")
]


def test_every_primitive_of_this_table_is_covered():
    """Every primitive whose rules are defined in this table's rule files is listed in COVERED."""
    mine = set()
    for p in list(vars(W).values()) + [indexing._choose_p, indexing._select_p]:
        if not hasattr(p, "vjpmakers"):
            continue
        rules = list(p.vjpmakers.values()) + [p.vjp_argnums]
        if any(getattr(r, "__module__", None) in _MODULES for r in rules if r is not None):
            mine.add(p.name)
    mine -= {f"gradcy.numpy.{n}" for n in _OTHER_TABLES}
    assert mine, "no rules found"
    assert mine <= COVERED, sorted(mine - COVERED)


def test_operator_counts_script():
    """benchmarks/operator_counts.py counts this table's primitives and the verified
    composites (block, choose, select...), and leaves out the non-differentiable ones."""
    import importlib.util
    import pathlib

    path = pathlib.Path(__file__).parent.parent / "benchmarks" / "operator_counts.py"
    spec = importlib.util.spec_from_file_location("operator_counts", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    counts = mod._by_module(mod.gradcy_counts())
    numpy_names = counts["numpy"]
    mine = {p.name.rsplit(".", 1)[-1] for p in _PRIMS} - {"choose", "select", "full", "full_like"}
    assert mine <= numpy_names, sorted(mine - numpy_names)
    assert {"block", "choose", "select", "stack", "concatenate"} <= numpy_names
    assert not {"nanargmax", "unique_values", "spacing"} & numpy_names
    assert {"eig", "svd", "qr", "slogdet"} <= counts["numpy.linalg"]


# =============================================================================
