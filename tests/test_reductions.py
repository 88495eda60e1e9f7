"""Derivative checks of the reductions family, VJPs and JVPs (gradcy/numpy/reductions.py: sum,
mean, prod, max, min, ptp and their nan variants), and the checks that run one function of each
reduction-shaped family together (reductions, statistics, calculus)."""

import warnings

import numpy as onp
import pytest

import gradcy.numpy as np
import reduction_cases as cases
from gradcy import grad, make_jvp, make_vjp
from gradcy._core import ArrayMeta
from gradcy.numpy.saved_sets import unpack_positions
from gradcy.test_util import check_grads
from op_records.reductions import RECORDS, REDUCTION, names
from reduction_cases import AXIS_KEEP, distinct
from vjp_harness import check_deep as check, raw_cotangent, raw_tangent, rand, saved_record

FAMILY = names("reductions")
COVERED = {f"gradcy.numpy.{n}" for n in FAMILY}
MODES = ("fwd", "rev")


# =============================================================================
# sum, mean, prod (smooth reductions)
# =============================================================================
@pytest.mark.parametrize("axis,keepdims", AXIS_KEEP)
@pytest.mark.parametrize("name", names("reductions", picks=False, nan=False))
def test_smooth_reductions(name, axis, keepdims):
    cases.smooth(name, axis, keepdims)


def test_positional_arguments():
    x = rand(3, 4)
    check(lambda x: np.sum(x, 0, None, None, True), x)
    check(lambda x: np.mean(x, 1, None, None, True), x)
    check(lambda x: np.prod(x, 1, None, None, True), x)
    check(lambda x: np.max(x, 1, None, True), x)
    check(lambda x: np.cumsum(x, 1), x)
    check(lambda x: np.ptp(x, 0, None, True), x)
    check(lambda x: np.median(x, 0, None, False, True), x)


def test_methods_of_traced_values():
    x = distinct(3, 4)
    check(lambda x: x.sum(axis=0) + x.mean() + x.prod(1)[0], x)
    check(lambda x: x.max(axis=1) - x.min(axis=0)[:3] + np.ptp(x, axis=1), x)
    check(lambda x: x.var(axis=0, ddof=1) + x.std() + x.cumsum(axis=1)[0] + x.cumprod()[:4], x)


@pytest.mark.parametrize("name", FAMILY)
def test_zero_d_and_python_float(name):
    cases.zero_d_and_python_float(name)


@pytest.mark.parametrize("name", FAMILY)
def test_zero_d_with_axis_zero(name):
    cases.zero_d_with_axis_zero(name)


def test_sum_of_zero_d_gives_zero_d_gradient():
    x0 = onp.array(2.5)
    g = grad(np.sum)(x0)
    assert isinstance(g, onp.ndarray) and g.shape == () and g == 1.0
    c = raw_cotangent(np.sum, (x0,), 0)
    assert onp.shape(c) == () and onp.asarray(c) == 1.0
    assert type(grad(np.sum)(2.5)) is float


@pytest.mark.parametrize("name", FAMILY)
@pytest.mark.parametrize("dtype", [onp.float16, onp.float32])
def test_low_precision_dtypes(name, dtype):
    cases.low_precision_dtypes(name, dtype)


@pytest.mark.parametrize("name", FAMILY)
@pytest.mark.parametrize("dtype", [onp.float16, onp.float32])
def test_make_jvp_low_precision_tangents(name, dtype):
    cases.make_jvp_low_precision_tangents(name, dtype)


# dtype=float64 reductions of a float32 input
WIDER_OUTPUTS = [
    lambda x: np.sum(x, axis=0, dtype=onp.float64),
    lambda x: np.mean(x, axis=1, dtype=onp.float64),
    lambda x: np.prod(x, dtype=onp.float64),
    lambda x: np.var(x, axis=0, dtype=onp.float64),
    lambda x: np.std(x, dtype=onp.float64),
    lambda x: np.cumsum(x, axis=1, dtype=onp.float64),
    lambda x: np.cumprod(x, dtype=onp.float64),
]


def test_make_jvp_float32_with_wider_outputs():
    """dtype=float64 reductions of float32 inputs: the tangent is the float64 output's."""
    x = rand(3, 4).astype(onp.float32)
    for fun in WIDER_OUTPUTS:
        y, t = make_jvp(fun)(x)(onp.ones_like(x))
        assert t.dtype == y.dtype == onp.float64 and t.shape == y.shape
        y64, t64 = make_jvp(fun)(x.astype(onp.float64))(onp.ones(x.shape))
        assert onp.allclose(t, t64, rtol=1e-4, atol=1e-5)


def test_float16_mean_over_many_elements():
    """1/n with n beyond float16's range is still representable: no overflow to a 0 gradient."""
    x = onp.full(70000, 0.5, onp.float16)
    for f in (np.mean, np.average):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)  # NumPy's own count cast
            c = raw_cotangent(f, (x,), 0, g=onp.float16(1))
        assert c.dtype == onp.float16 and onp.allclose(c, 1 / 70000, rtol=0.05), f


def test_float64_cotangent_into_float32_input():
    """A float64 cotangent (sum's dtype=, or a float64 consumer) still reaches a float32 input
    as float32."""
    x = rand(3, 4).astype(onp.float32)
    for fun in WIDER_OUTPUTS + [lambda x: np.max(x, axis=0) * onp.ones(4)]:
        y = onp.asarray(fun(x))
        c = raw_cotangent(fun, (x,), 0, g=onp.ones(y.shape, onp.float64))
        assert c.dtype == onp.float32 and c.shape == x.shape


# the calls compared with autograd: each function autograd differentiates (its record), over
# all axes, one axis and with keepdims=, and ddof=
AUTOGRAD_CALLS = [
    (r.name, kw)
    for r in RECORDS
    if r.autograd
    for kw in [dict(), dict(axis=0), dict(axis=1)]
    + [dict(axis=1, keepdims=True)] * (not r.cumulative)
] + [("var", dict(axis=0, ddof=1)), ("std", dict(ddof=1))]


def test_matches_autograd():
    import autograd
    import autograd.numpy as anp

    x = distinct(3, 4)
    x[1, 2] = x[1, 0] = x.max()  # ties
    for name, kw in AUTOGRAD_CALLS:

        def f_ag(x):
            return anp.sum(getattr(anp, name)(x, **kw) ** 2)

        def f_gc(x):
            return np.sum(getattr(np, name)(x, **kw) ** 2)

        assert onp.allclose(grad(f_gc)(x), autograd.grad(f_ag)(x)), (name, kw)


def test_jvp_matches_autograd():
    import autograd
    import autograd.numpy as anp

    x = distinct(3, 4)
    v = rand(3, 4, seed=8)
    for name, kw in AUTOGRAD_CALLS:
        _, ours = make_jvp(lambda x: getattr(np, name)(x, **kw))(x)(v)
        _, theirs = autograd.make_jvp(lambda x: getattr(anp, name)(x, **kw))(x)(v)
        assert onp.allclose(ours, theirs), (name, kw)


def test_complex_jvp_matches_autograd():
    """Complex inputs in forward mode: J v for the holomorphic reductions, the real-linear
    derivative for var and std (real outputs)."""
    import autograd
    import autograd.numpy as anp

    rs = onp.random.RandomState(5)
    z = rs.randn(3, 4) + 1j * rs.randn(3, 4)
    v = rs.randn(3, 4) + 1j * rs.randn(3, 4)
    for name, kw in [(n, kw) for n, kw in AUTOGRAD_CALLS if REDUCTION[n].complex]:
        _, ours = make_jvp(lambda z: getattr(np, name)(z, **kw))(z)(v)
        _, theirs = autograd.make_jvp(lambda z: getattr(anp, name)(z, **kw))(z)(v)
        assert onp.allclose(ours, theirs), (name, kw)
        # NumPy's own output type: real for var and std
        assert onp.iscomplexobj(ours) == onp.iscomplexobj(getattr(onp, name)(z, **kw)), name
        y, t = raw_tangent(
            lambda z: getattr(np, name)(z, **kw),
            (z.astype(onp.complex64),),
            0,
            v.astype(onp.complex64),
        )
        assert t.dtype == y.dtype and t.shape == y.shape, (name, t.dtype, y.dtype)


def _holomorphic_vjp(fun, z, u, eps=1e-6):
    """sum_i u_i d fun(z)_i / d z_j by central differences (fun holomorphic): the VJP under
    autograd's convention (no conjugation)."""
    out = onp.zeros(z.shape, complex)
    for j in onp.ndindex(*z.shape):
        e = onp.zeros(z.shape)
        e[j] = eps
        out[j] = onp.sum(u * (fun(z + e) - fun(z - e))) / (2 * eps)
    return out


def test_complex_inputs():
    import autograd
    import autograd.numpy as anp

    rs = onp.random.RandomState(3)
    z = rs.randn(3, 4) + 1j * rs.randn(3, 4)
    z[1, 2] = 0.0
    for name, kw in [
        ("sum", dict(axis=0)),
        ("mean", dict(axis=1)),
        ("prod", dict(axis=0)),
        ("prod", dict()),
        ("cumsum", dict(axis=1)),
        ("cumprod", dict(axis=1)),
        ("cumprod", dict(axis=0)),
    ]:
        f = getattr(np, name)
        y = f(z, **kw)
        u = rs.randn(*onp.shape(y)) + 1j * rs.randn(*onp.shape(y))
        vjp, _ = make_vjp(lambda z: f(z, **kw))(z)
        got = vjp(u)
        vjp.release()
        want = _holomorphic_vjp(lambda z: getattr(onp, name)(z, **kw), z, u)
        assert onp.allclose(got, want, atol=1e-5), (name, kw)
        check_grads(lambda z: f(z, **kw), modes=MODES, order=2)(z)
        c = raw_cotangent(lambda z: f(z, **kw), (z.astype(onp.complex64),), 0)
        assert c.dtype == onp.complex64 and c.shape == z.shape
    # real outputs of complex inputs: autograd's convention (2 conj(z - mean) / (N - ddof))
    for name, kw in [("var", dict(axis=1)), ("std", dict(axis=0, ddof=1)), ("var", dict())]:

        def loss(m):
            return lambda z: m.sum(getattr(m, name)(z, **kw) ** 2)

        assert onp.allclose(grad(loss(np))(z), autograd.grad(loss(anp))(z)), (name, kw)
        check_grads(lambda z: getattr(np, name)(z, **kw), modes=MODES, order=2)(z)
        c = raw_cotangent(lambda z: getattr(np, name)(z, **kw), (z.astype(onp.complex64),), 0)
        assert c.dtype == onp.complex64 and c.shape == z.shape


# =============================================================================
# prod with zeros
# =============================================================================
def _others_product(x, axis):
    """d prod / d x_i computed by brute force: the product with x_i replaced by 1."""
    out = onp.empty_like(x)
    for idx in onp.ndindex(*x.shape):
        y = x.copy()
        y[idx] = 1.0
        out[idx] = onp.prod(y, axis=axis, keepdims=True)[
            tuple(0 if (axis is None or a == axis) else i for a, i in enumerate(idx))
        ]
    return out


@pytest.mark.parametrize(
    "zeros", [[], [(0, 1)], [(0, 1), (2, 1)], [(1, 0), (1, 2), (1, 3)], [(0, 0), (1, 1), (2, 2)]]
)
@pytest.mark.parametrize("axis", [None, 0, 1])
def test_prod_with_zeros(zeros, axis):
    x = rand(3, 4, positive=True)
    for idx in zeros:
        x[idx] = 0.0
    g = grad(lambda x: np.sum(np.prod(x, axis=axis)))(x)
    assert onp.all(onp.isfinite(g))
    assert onp.allclose(g, _others_product(x, axis))
    # exact to second order with up to two zeros per group
    check(lambda x: np.prod(x, axis=axis), x)


def test_prod_zero_keepdims_tuple_axis_initial():
    x = rand(2, 3, 2, positive=True)
    x[1, 2, 0] = 0.0
    check(lambda x: np.prod(x, axis=(0, 2), keepdims=True), x)
    check(lambda x: np.prod(x, axis=-1, initial=2.5), x)
    check(lambda x: np.prod(x), x)


# =============================================================================
# max, min, ptp: ties split evenly
# =============================================================================
@pytest.mark.parametrize("axis,keepdims", AXIS_KEEP)
@pytest.mark.parametrize("name", names("reductions", picks=True, nan=False))
def test_choosers(name, axis, keepdims):
    cases.chooser(name, axis, keepdims)


def test_amax_amin_are_max_min():
    assert np.amax is np.max and np.amin is np.min
    check(lambda x: np.amax(x, axis=0) + np.amin(x, axis=0), distinct(3, 2))


def _split_ties(x, pick, axis):
    """Brute force: 1/k at each of the k entries equal to the extremum of their group."""
    m = pick(x, axis=axis, keepdims=True)
    mask = (x == m).astype(float)
    return mask / mask.sum(axis=axis, keepdims=True)


@pytest.mark.parametrize("name,pick", [("max", onp.max), ("min", onp.min)])
@pytest.mark.parametrize("axis", [None, 0, 1])
def test_max_min_ties_split_evenly(name, pick, axis):
    x = onp.array([[1.0, 5.0, 5.0, -2.0], [5.0, -2.0, 0.5, -2.0], [3.0, 3.0, 3.0, 3.0]])
    g = grad(lambda x: np.sum(getattr(np, name)(x, axis=axis)))(x)
    assert onp.allclose(g, _split_ties(x, pick, axis))
    assert onp.isclose(g.sum(), onp.size(pick(x, axis=axis)))
    x32 = x.astype(onp.float32)
    c = raw_cotangent(lambda x: getattr(np, name)(x, axis=axis), (x32,), 0)
    assert c.dtype == onp.float32 and onp.allclose(c, _split_ties(x, pick, axis))


def test_max_with_nan_and_where_and_initial():
    x = onp.array([[1.0, onp.nan, 3.0], [4.0, 2.0, 0.0]])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        g = grad(lambda x: np.sum(np.max(x, axis=1)))(x)
    assert onp.array_equal(g, [[0, 1, 0], [1, 0, 0]])  # the nan maximum gets it
    w = onp.array([[True, False, True], [False, True, True]])
    g = grad(lambda x: np.sum(np.max(x, axis=1, where=w, initial=-10.0)))(x)
    assert onp.array_equal(g, [[0, 0, 1], [0, 1, 0]])
    x = onp.nan_to_num(x)
    g = grad(lambda x: np.sum(np.min(x, axis=1, initial=-1.0)))(x)
    assert onp.array_equal(g, onp.zeros_like(x))  # the initial value is the min
    check(lambda x: np.max(x, axis=0, where=w[0], initial=-10.0), rand(4, 3))


def test_ptp_ties():
    x = onp.array([[1.0, 4.0, 4.0, 1.0, 2.0], [2.0, 2.0, 2.0, 2.0, 2.0]])
    g = grad(lambda x: np.sum(np.ptp(x, axis=1)))(x)
    assert onp.allclose(g, [[-0.5, 0.5, 0.5, -0.5, 0.0], [0, 0, 0, 0, 0]])


# =============================================================================
# nan variants: nan entries get zero gradient
# =============================================================================
@pytest.mark.parametrize(
    "axis,keepdims", [(None, False), (0, False), (1, True), ((0, 1), False), (-1, False)]
)
@pytest.mark.parametrize("name", names("reductions", nan=True))
def test_nan_reductions(name, axis, keepdims):
    cases.nan_reduction(name, axis, keepdims)


@pytest.mark.parametrize("name", names("reductions", nan=True))
def test_nan_reductions_match_dropping_the_nans(name):
    cases.nan_matches_dropping_the_nans(name)


def test_all_nan_groups():
    x = onp.array([[onp.nan, onp.nan], [1.0, 2.0]])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        for name in names(nan=True, cumulative=False):
            g = grad(lambda x: np.sum(getattr(np, name)(x, axis=1)[1]))(x)
            assert onp.all(g[0] == 0) and onp.all(onp.isfinite(g)), name


# =============================================================================
# where= on sum and mean
# =============================================================================
def test_sum_mean_where():
    x = rand(3, 4)
    w = rand(3, 4, seed=5) > 0
    check(lambda x: np.sum(x, axis=1, where=w), x)
    check(lambda x: np.mean(x, axis=0, where=w), x)
    check(lambda x: np.nansum(x, axis=0, where=w), x)
    check(lambda x: np.mean(x, where=w[0]), x)
    g = grad(lambda x: np.mean(x, where=w))(x)
    assert onp.allclose(g, w / w.sum())


def test_where_unsupported_raises():
    x = rand(3, 4)
    with pytest.raises(NotImplementedError):
        grad(lambda x: np.var(x, where=x > 0))(x)
    for f in (np.var, np.std, np.prod, np.nanvar, np.nanstd, np.nanprod):
        with pytest.raises(NotImplementedError):
            make_jvp(lambda x: f(x, where=x > 0))(x)(onp.ones_like(x))


@pytest.mark.parametrize("case", cases.tricky_cases_of(FAMILY))
def test_jvp_agrees_with_vjp(case):
    cases.jvp_agrees_with_vjp(case)


def test_every_name_has_a_jvp():
    for r in RECORDS:
        p = getattr(np, r.name)
        assert p.vjpmakers or p.vjp_argnums, r.name
        assert p.jvpmakers or p.jvp_argnums, r.name


# =============================================================================
# what the tape keeps
# =============================================================================
@pytest.mark.parametrize("name", FAMILY)
def test_saved_set(name):
    cases.saved_set(name)


def test_saved_set_sum_mean_max_details():
    x = rand(3, 4)
    ans, args, _ = saved_record(lambda x: np.sum(x, axis=0), x)
    assert type(ans) is ArrayMeta and type(args[0]) is ArrayMeta
    assert args[0].shape == (3, 4) and args[0].dtype == onp.float64
    # a positional out (None here) is taken off, the arguments after it passed by keyword
    ans, args, _ = saved_record(lambda x: np.mean(x, 1, None, None, True), x)
    assert type(ans) is ArrayMeta and type(args[0]) is ArrayMeta and args[1:] == (1, None)
    assert ans.shape == (3, 1)
    ans, args, _ = saved_record(lambda x: np.max(x, axis=1), x)
    # the positions of the maxima, one bit per element of x (saved_sets.py), not x itself
    assert ans.dtype == onp.uint8 and ans.nbytes == 2 and type(args[0]) is ArrayMeta
    assert onp.array_equal(unpack_positions(ans, x.shape), x == x.max(axis=1, keepdims=True))
    ans, args, _ = saved_record(lambda x, w: np.average(x, 1, w), x, rand(4), traced=(0,))
    assert type(ans) is ArrayMeta and isinstance(args[0], onp.ndarray)
