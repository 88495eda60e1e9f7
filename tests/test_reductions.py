"""Derivative checks of the reductions family, VJPs and JVPs (gradcy/numpy/reductions.py)."""
import contextlib
import inspect
import warnings

import numpy as onp
import pytest

import gradcy.numpy as np
from gradcy import grad, make_jvp, make_vjp
from gradcy._core import ArrayMeta, Tape, install_hooks
from gradcy.numpy._util import match_tangent
from gradcy.numpy.saved_sets import unpack_positions
from gradcy.test_util import check_grads
from vjp_harness import check as _harness_check, dtype_ok, raw_cotangent
from vjp_harness import rand

_NAMES = ["sum", "mean", "prod", "max", "min", "var", "std", "cumsum", "cumprod", "ptp",
          "average", "nansum", "nanmean", "nanmax", "nanmin", "nanprod", "nanvar", "nanstd",
          "median", "nanmedian", "nancumsum", "nancumprod"]
COVERED = {f"gradcy.numpy.{n}" for n in _NAMES}
MODES = ("fwd", "rev")
# var/std/nanvar/nanstd take mean= and correction= from NumPy 2.0 on
VAR_MEAN_CORRECTION = "correction" in inspect.signature(onp.var).parameters


# =============================================================================
# Checking helpers
# =============================================================================
def _is_inexact(a):
    return isinstance(a, (float, complex)) or (
        isinstance(a, onp.ndarray) and a.dtype.kind in "fc")


def _to(a, dtype):
    return a.astype(dtype) if isinstance(a, onp.ndarray) and a.dtype.kind == "f" else a


def check_raw_dtypes(fun, *args, dtype=onp.float32):
    """At the tape level, each float argument cast to `dtype` gets a cotangent of exactly its
    shape and dtype."""
    args = tuple(_to(a, dtype) for a in args)
    for i, a in enumerate(args):
        if not _is_inexact(a):
            continue
        c = raw_cotangent(fun, args, i)
        want = a.dtype if isinstance(a, onp.ndarray) else onp.dtype(type(a))
        assert onp.shape(c) == onp.shape(a), f"arg {i}: shape {onp.shape(c)} != {onp.shape(a)}"
        assert dtype_ok(c, want), f"arg {i}: dtype {onp.result_type(c)} != {want}"


@contextlib.contextmanager
def tangent_dtypes():
    """Record (tangent dtype, output dtype) of every JVP result the engine has to cast or
    broadcast (Python scalars aside: they are weak in NumPy's promotion)."""
    seen = []

    def fixer(t, ans):
        if isinstance(ans, tuple):          # average(..., returned=True): leafwise
            return tuple(None if ti is None else fixer(ti, ai) for ti, ai in zip(t, ans))
        if type(t) not in (float, complex) and not dtype_ok(t, onp.result_type(ans)):
            seen.append((onp.result_type(t), onp.result_type(ans)))
        return match_tangent(t, ans)
    install_hooks(tangent_fixer=fixer)
    try:
        yield seen
    finally:
        install_hooks(tangent_fixer=match_tangent)


def raw_tangent(fun, args, i, v=None):
    """(output, tangent) of fun along tangent v (ones by default) of argument i, asserting that
    no JVP rule on the way widened a float32/complex64 tangent to double precision."""
    v = onp.ones_like(args[i]) if v is None else v
    with tangent_dtypes() as seen:
        y, t = make_jvp(fun, argnum=i)(*args)(v)
    widened = [(tt, a) for tt, a in seen if a.kind in "fc" and tt.kind in "fc"
               and tt.itemsize > a.itemsize and onp.can_cast(a, tt)]
    assert not widened, f"argument {i}: a JVP rule widened {widened}"
    return y, t


def check_raw_tangent_dtypes(fun, *args, dtype=onp.float32):
    """Forward mode with each float argument cast to `dtype`: the output tangent has the
    output's dtype and shape, and no rule widened on the way."""
    args = tuple(_to(a, dtype) for a in args)
    for i, a in enumerate(args):
        if not _is_inexact(a):
            continue
        y, t = raw_tangent(fun, args, i, a * 0 + 1 if isinstance(a, onp.ndarray) else 1.0)
        for yl, tl in zip(_flat(y), _flat(t)):
            assert onp.shape(tl) == onp.shape(yl), f"arg {i}: shape {onp.shape(tl)}"
            assert onp.result_type(tl) == onp.result_type(yl), (
                f"arg {i}: tangent dtype {onp.result_type(tl)}, output {onp.result_type(yl)}")


def _flat(y):
    return list(y) if isinstance(y, tuple) else [y]


def check(fun, *args, order=2, dtypes=True):
    """The harness check to first order (both modes), then each argument's VJP (a function of
    the arguments and the cotangent) and JVP (of the arguments and the tangent) checked
    recursively to `order`, then the float32 contracts on the tape in both modes."""
    _harness_check(fun, *args, order=1, dtypes=dtypes, modes=MODES)
    if order > 1:
        y = onp.asarray(fun(*args))
        rs = onp.random.RandomState(1)
        u = rs.randn(*y.shape)
        if onp.iscomplexobj(y):
            u = u + 1j * rs.randn(*y.shape)
        u = onp.asarray(u)
        for i, a in enumerate(args):
            if not _is_inexact(a):
                continue

            def vjp_i(*args_u, i=i):
                *aa, uu = args_u
                vjp, _ = make_vjp(fun, argnum=i)(*aa)
                try:
                    return vjp(uu)
                finally:
                    vjp.release()
            check(vjp_i, *args, u, order=order - 1, dtypes=False)
            v = rs.randn(*onp.shape(a))
            if onp.iscomplexobj(a):
                v = v + 1j * rs.randn(*onp.shape(a))
            v = onp.asarray(v) if isinstance(a, onp.ndarray) else type(a)(v)

            def jvp_i(*args_v, i=i):
                *aa, vv = args_v
                return make_jvp(fun, argnum=i)(*aa)(vv)[1]
            check(jvp_i, *args, v, order=order - 1, dtypes=False)
    if dtypes:
        check_raw_dtypes(fun, *args)
        check_raw_tangent_dtypes(fun, *args)


def saved_record(fun, *args):
    """(ans, args) of the node that fun records on a fresh tape with args[0] traced."""
    t = Tape()
    try:
        b = t.new_leaf(args[0])
        y = fun(b, *args[1:])
        ans, sargs, _ = t.node_info(y._node)["saved"]
        return ans, sargs
    finally:
        t.release()


def distinct(*shape, seed=0):
    """Random data without ties (so max/min/median are differentiable)."""
    rs = onp.random.RandomState(seed + 11 * len(shape))
    n = int(onp.prod(shape))
    return (rs.permutation(n) * 0.37 + rs.uniform(0, 0.1, n)).reshape(shape) - n * 0.15


X3 = distinct(2, 3, 4)
AXES = [None, 0, -1, (0, 2), (-1, -3), ()]
AXIS_KEEP = [(a, k) for a in AXES for k in (False, True)]


# =============================================================================
# sum, mean, prod, var, std (smooth reductions)
# =============================================================================
@pytest.mark.parametrize("axis,keepdims", AXIS_KEEP)
@pytest.mark.parametrize("name", ["sum", "mean", "prod", "var", "std"])
def test_smooth_reductions(name, axis, keepdims):
    f = getattr(np, name)
    x = rand(2, 3, 4, positive=(name == "prod"))
    if name == "std" and axis == ():
        return                   # std over no axes is 0 everywhere: not differentiable
    check(lambda x: f(x, axis=axis, keepdims=keepdims), x)


@pytest.mark.parametrize("ddof", [0, 1, 2])
@pytest.mark.parametrize("name", ["var", "std"])
def test_var_std_ddof(name, ddof):
    f = getattr(np, name)
    x = rand(3, 5)
    check(lambda x: f(x, axis=1, ddof=ddof), x)
    check(lambda x: f(x, ddof=ddof), x)
    check(lambda x: f(x, 0, None, None, ddof, True), x)        # positional keepdims
    if VAR_MEAN_CORRECTION:
        check(lambda x: f(x, axis=0, correction=ddof), x)
        m = rand(3, 1, seed=9)          # a given mean= is a constant of the function
        check(lambda x: f(x, axis=1, ddof=ddof, mean=m), x)


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


@pytest.mark.parametrize("name", ["sum", "mean", "prod", "max", "min", "var", "std", "ptp",
                                  "median", "nansum", "nanmean", "nanprod", "nanmax", "nanmin",
                                  "nanvar", "nanstd", "nanmedian", "cumsum", "cumprod",
                                  "nancumsum", "nancumprod", "average"])
def test_zero_d_and_python_float(name):
    f = getattr(np, name)
    x0 = onp.array(1.3)
    check(f, x0)
    check(f, 1.3)
    check(lambda x: f(x) * x, x0)
    c = raw_cotangent(f, (x0,), 0)
    assert onp.shape(c) == () and onp.result_type(c) == onp.float64
    c = raw_cotangent(f, (x0.astype(onp.float32),), 0)
    assert onp.shape(c) == () and dtype_ok(c, onp.float32)


@pytest.mark.parametrize("name", ["sum", "prod", "max", "min", "ptp", "cumsum",
                                  "cumprod", "nansum", "nanmax"])
def test_zero_d_with_axis_zero(name):
    """NumPy reduces 0-d arrays over axis 0 or -1 as well."""
    f = getattr(np, name)
    x0 = onp.array(0.7)
    for axis in (0, -1):
        check(lambda x: f(x, axis=axis), x0)


def test_sum_of_zero_d_gives_zero_d_gradient():
    x0 = onp.array(2.5)
    g = grad(np.sum)(x0)
    assert isinstance(g, onp.ndarray) and g.shape == () and g == 1.0
    c = raw_cotangent(np.sum, (x0,), 0)
    assert onp.shape(c) == () and onp.asarray(c) == 1.0
    assert type(grad(np.sum)(2.5)) is float


@pytest.mark.parametrize("name", ["sum", "mean", "var", "std", "prod", "max", "median",
                                  "cumsum", "cumprod", "nanvar", "nanmean"])
@pytest.mark.parametrize("dtype", [onp.float16, onp.float32])
def test_low_precision_dtypes(name, dtype):
    """NumPy may compute in higher precision (or return it); the cotangent never does."""
    f = getattr(np, name)
    x = distinct(3, 4).astype(dtype) / 10
    for axis in (None, 0, (0, 1)):
        if name.startswith("cum") and isinstance(axis, tuple):
            continue
        c = raw_cotangent(lambda x: f(x, axis=axis), (x,), 0)
        assert c.dtype == dtype and c.shape == x.shape, (name, axis, c.dtype)


@pytest.mark.parametrize("name", _NAMES)
@pytest.mark.parametrize("dtype", [onp.float16, onp.float32])
def test_make_jvp_low_precision_tangents(name, dtype):
    """make_jvp of float32 (float16) inputs gives tangents of the output's dtype, and no rule
    computes in a wider dtype on the way (the engine's cast would hide it)."""
    f = getattr(np, name)
    x = distinct(3, 4).astype(dtype) / 10
    if name in ("prod", "nanprod", "cumprod", "nancumprod"):
        x = onp.abs(x) + dtype(0.5)
    for axis in (None, 0, (0, 1), -1):
        if name.startswith(("cum", "nancum")) and isinstance(axis, tuple):
            continue
        for keepdims in ((False,) if name.startswith(("cum", "nancum")) or name == "average"
                         else (False, True)):
            kw = {"keepdims": True} if keepdims else {}
            y, t = raw_tangent(lambda x: f(x, axis=axis, **kw), (x,), 0)
            assert t.dtype == y.dtype == dtype and t.shape == y.shape, (name, axis, t.dtype)
    w = onp.abs(distinct(4)).astype(dtype) + dtype(1)
    y, t = raw_tangent(lambda w: np.average(x, 1, w), (w,), 0)
    assert t.dtype == y.dtype == dtype and t.shape == y.shape


def test_make_jvp_float32_with_wider_outputs():
    """dtype=float64 reductions of float32 inputs: the tangent is the float64 output's."""
    x = rand(3, 4).astype(onp.float32)
    for fun in [lambda x: np.sum(x, axis=0, dtype=onp.float64),
                lambda x: np.mean(x, axis=1, dtype=onp.float64),
                lambda x: np.prod(x, dtype=onp.float64),
                lambda x: np.var(x, axis=0, dtype=onp.float64),
                lambda x: np.std(x, dtype=onp.float64),
                lambda x: np.cumsum(x, axis=1, dtype=onp.float64),
                lambda x: np.cumprod(x, dtype=onp.float64)]:
        y, t = make_jvp(fun)(x)(onp.ones_like(x))
        assert t.dtype == y.dtype == onp.float64 and t.shape == y.shape
        y64, t64 = make_jvp(fun)(x.astype(onp.float64))(onp.ones(x.shape))
        assert onp.allclose(t, t64, rtol=1e-4, atol=1e-5)


def test_float16_mean_over_many_elements():
    """1/n with n beyond float16's range is still representable: no overflow to a 0 gradient."""
    x = onp.full(70000, 0.5, onp.float16)
    for f in (np.mean, np.average):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)     # NumPy's own count cast
            c = raw_cotangent(f, (x,), 0, g=onp.float16(1))
        assert c.dtype == onp.float16 and onp.allclose(c, 1 / 70000, rtol=0.05), f


def test_float64_cotangent_into_float32_input():
    """A float64 cotangent (sum's dtype=, or a float64 consumer) still reaches a float32 input
    as float32."""
    x = rand(3, 4).astype(onp.float32)
    for fun in [lambda x: np.sum(x, axis=0, dtype=onp.float64),
                lambda x: np.mean(x, axis=1, dtype=onp.float64),
                lambda x: np.prod(x, dtype=onp.float64),
                lambda x: np.var(x, axis=0, dtype=onp.float64),
                lambda x: np.std(x, dtype=onp.float64),
                lambda x: np.cumsum(x, axis=1, dtype=onp.float64),
                lambda x: np.cumprod(x, dtype=onp.float64),
                lambda x: np.max(x, axis=0) * onp.ones(4)]:
        y = onp.asarray(fun(x))
        c = raw_cotangent(fun, (x,), 0, g=onp.ones(y.shape, onp.float64))
        assert c.dtype == onp.float32 and c.shape == x.shape


def test_matches_autograd():
    import autograd
    import autograd.numpy as anp
    x = distinct(3, 4)
    x[1, 2] = x[1, 0] = x.max()              # ties
    for name, kw in [("sum", dict(axis=0)), ("mean", dict(axis=1, keepdims=True)),
                     ("prod", dict(axis=1)), ("max", dict(axis=1)), ("min", dict()),
                     ("max", dict()), ("var", dict(axis=0, ddof=1)), ("std", dict(axis=1)),
                     ("cumsum", dict(axis=1)), ("cumsum", dict())]:
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
    for name, kw in [("sum", dict(axis=0)), ("mean", dict(axis=1, keepdims=True)),
                     ("prod", dict(axis=1)), ("max", dict(axis=1)), ("min", dict()),
                     ("var", dict(axis=0, ddof=1)), ("std", dict(axis=1)),
                     ("cumsum", dict(axis=1)), ("cumsum", dict())]:
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
    for name, kw in [("sum", dict(axis=0)), ("mean", dict(axis=1)), ("prod", dict(axis=0)),
                     ("cumsum", dict(axis=1)), ("var", dict(axis=1)), ("std", dict(axis=0)),
                     ("var", dict(ddof=1))]:
        _, ours = make_jvp(lambda z: getattr(np, name)(z, **kw))(z)(v)
        _, theirs = autograd.make_jvp(lambda z: getattr(anp, name)(z, **kw))(z)(v)
        assert onp.allclose(ours, theirs), (name, kw)
        assert onp.iscomplexobj(ours) == (name not in ("var", "std")), name
        y, t = raw_tangent(lambda z: getattr(np, name)(z, **kw), (z.astype(onp.complex64),), 0,
                           v.astype(onp.complex64))
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
    for name, kw in [("sum", dict(axis=0)), ("mean", dict(axis=1)), ("prod", dict(axis=0)),
                     ("prod", dict()), ("cumsum", dict(axis=1)), ("cumprod", dict(axis=1)),
                     ("cumprod", dict(axis=0))]:
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


def test_std_of_constant_group_has_zero_gradient():
    x = onp.array([[1.0, 1.0, 1.0], [1.0, 2.0, 4.0]])
    g = grad(lambda x: np.sum(np.std(x, axis=1)))(x)
    assert onp.all(onp.isfinite(g)) and onp.all(g[0] == 0)
    assert onp.allclose(g[1], grad(lambda r: np.std(r))(x[1]))


# =============================================================================
# prod and cumprod with zeros
# =============================================================================
def _others_product(x, axis):
    """d prod / d x_i computed by brute force: the product with x_i replaced by 1."""
    out = onp.empty_like(x)
    for idx in onp.ndindex(*x.shape):
        y = x.copy()
        y[idx] = 1.0
        out[idx] = onp.prod(y, axis=axis, keepdims=True)[
            tuple(0 if (axis is None or a == axis) else i for a, i in enumerate(idx))]
    return out


@pytest.mark.parametrize("zeros", [[], [(0, 1)], [(0, 1), (2, 1)], [(1, 0), (1, 2), (1, 3)],
                                   [(0, 0), (1, 1), (2, 2)]])
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


def _cumprod_brute(x, u):
    """sum_i u_i d cumprod(x)_i / d x_j along the last axis, by brute force."""
    out = onp.zeros_like(x)
    n = x.shape[-1]
    for r in onp.ndindex(*x.shape[:-1]):
        for j in range(n):
            for i in range(j, n):
                others = onp.prod([x[r + (k,)] for k in range(i + 1) if k != j])
                out[r + (j,)] += u[r + (i,)] * others
    return out


@pytest.mark.parametrize("zeros", [[], [(0, 2)], [(0, 0)], [(0, 4)], [(0, 1), (0, 3)],
                                   [(0, 1), (1, 1), (1, 2)]])
def test_cumprod_with_zeros(zeros):
    x = rand(2, 5, positive=True) * onp.array([1, -1, 1, 1, -1])
    for idx in zeros:
        x[idx] = 0.0
    u = rand(2, 5, seed=4)
    vjp, _ = make_vjp(lambda x: np.cumprod(x, axis=1))(x)
    g = vjp(u)
    vjp.release()
    assert onp.allclose(g, _cumprod_brute(x, u))
    vjp, _ = make_vjp(lambda x: np.cumprod(x.T, axis=0))(x)
    assert onp.allclose(vjp(u.T), _cumprod_brute(x, u))
    vjp.release()
    per_row = onp.array([sum(1 for r, _ in zeros if r == row) for row in range(2)])
    if per_row.max() <= 1:       # exact to second order with one zero per slice
        check(lambda x: np.cumprod(x, axis=1), x)
    else:
        check(lambda x: np.cumprod(x, axis=1), x, order=1)


@pytest.mark.parametrize("axis", [None, 0, 1, -1])
def test_cumsum_cumprod_axes(axis):
    x = rand(3, 4, positive=True)
    check(lambda x: np.cumsum(x, axis=axis), x)
    check(lambda x: np.cumprod(x, axis=axis), x)
    x3 = rand(2, 3, 2)
    check(lambda x: np.cumsum(x, axis=axis), x3)


# =============================================================================
# max, min, ptp, median: ties split evenly
# =============================================================================
@pytest.mark.parametrize("axis,keepdims", AXIS_KEEP)
@pytest.mark.parametrize("name", ["max", "min", "ptp", "median"])
def test_choosers(name, axis, keepdims):
    f = getattr(np, name)
    if name == "ptp" and axis == ():
        return                   # ptp over no axes is constant 0
    check(lambda x: f(x, axis=axis, keepdims=keepdims), X3)


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
    assert onp.array_equal(g, [[0, 1, 0], [1, 0, 0]])       # the nan maximum gets it
    w = onp.array([[True, False, True], [False, True, True]])
    g = grad(lambda x: np.sum(np.max(x, axis=1, where=w, initial=-10.0)))(x)
    assert onp.array_equal(g, [[0, 0, 1], [0, 1, 0]])
    x = onp.nan_to_num(x)
    g = grad(lambda x: np.sum(np.min(x, axis=1, initial=-1.0)))(x)
    assert onp.array_equal(g, onp.zeros_like(x))            # the initial value is the min
    check(lambda x: np.max(x, axis=0, where=w[0], initial=-10.0), rand(4, 3))


def test_ptp_ties():
    x = onp.array([[1.0, 4.0, 4.0, 1.0, 2.0], [2.0, 2.0, 2.0, 2.0, 2.0]])
    g = grad(lambda x: np.sum(np.ptp(x, axis=1)))(x)
    assert onp.allclose(g, [[-0.5, 0.5, 0.5, -0.5, 0.0], [0, 0, 0, 0, 0]])


@pytest.mark.parametrize("n", [1, 2, 5, 6])
def test_median_middle_elements(n):
    x = distinct(3, n, seed=n)
    g = grad(lambda x: np.sum(np.median(x, axis=1)))(x)
    order = onp.argsort(x, axis=1)
    expect = onp.zeros_like(x)
    mids = [(n - 1) // 2, n // 2]
    for r in range(3):
        for k in mids:
            expect[r, order[r, k]] += 1.0 / len(mids)
    assert onp.allclose(g, expect)
    check(lambda x: np.median(x, axis=1), x)


def test_median_ties():
    x = onp.array([1.0, 2.0, 2.0, 2.0, 7.0])
    assert onp.allclose(grad(np.median)(x), [0, 1 / 3, 1 / 3, 1 / 3, 0])
    x = onp.array([1.0, 2.0, 2.0, 7.0])
    assert onp.allclose(grad(np.median)(x), [0, 0.5, 0.5, 0])
    x = onp.array([1.0, 3.0, 9.0, 3.0, 8.0, 5.0])      # lower middle tied, upper alone
    assert onp.allclose(grad(np.median)(x), [0, 0.25, 0, 0.25, 0, 0.5])


# =============================================================================
# nan variants: nan entries get zero gradient
# =============================================================================
def _with_nans(*shape, seed=0):
    x = distinct(*shape, seed=seed)
    flat = x.reshape(-1)
    flat[[1, 5, 6]] = onp.nan
    return x


@pytest.mark.parametrize("axis,keepdims", [(None, False), (0, False), (1, True), ((0, 1), False),
                                           (-1, False)])
@pytest.mark.parametrize("name", ["nansum", "nanmean", "nanprod", "nanmax", "nanmin", "nanvar",
                                  "nanstd", "nanmedian"])
def test_nan_reductions(name, axis, keepdims):
    f = getattr(np, name)
    x = _with_nans(3, 4)
    if name == "nanprod":
        x = onp.where(onp.isnan(x), x, onp.abs(x) + 0.5)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        check(lambda x: f(x, axis=axis, keepdims=keepdims), x)
        g = grad(lambda x: np.sum(f(x, axis=axis, keepdims=keepdims) ** 2))(x)
    assert onp.all(onp.isfinite(g)) and onp.all(g[onp.isnan(x)] == 0)
    # without nans the gradient is that of the plain reduction
    xc = distinct(3, 4, seed=2)
    plain = getattr(np, name[3:])
    g1 = grad(lambda x: np.sum(f(x, axis=axis) ** 2))(xc)
    g2 = grad(lambda x: np.sum(plain(x, axis=axis) ** 2))(xc)
    assert onp.allclose(g1, g2)


@pytest.mark.parametrize("name", ["nanmean", "nanvar", "nanstd", "nansum", "nanmedian"])
def test_nan_reductions_match_dropping_the_nans(name):
    """On a row with nans, the gradient is the plain reduction's gradient over the rest."""
    x = onp.array([1.0, onp.nan, -2.0, 0.5, onp.nan, 3.0])
    keep = ~onp.isnan(x)
    g = grad(getattr(np, name))(x)
    g_ref = grad(getattr(np, name[3:]))(x[keep])
    assert onp.allclose(g[keep], g_ref) and onp.all(g[~keep] == 0)


@pytest.mark.skipif(not VAR_MEAN_CORRECTION, reason="mean= is new in NumPy 2")
@pytest.mark.parametrize("name", ["nanvar", "nanstd"])
def test_nanvar_nanstd_given_mean(name):
    """mean= is honoured with and without nans (without nans the rule defers to var/std's)."""
    f, plain = getattr(np, name), getattr(np, name[3:])
    m = rand(3, 1, seed=9)
    xc = distinct(3, 4, seed=2)
    g1 = grad(lambda x: np.sum(f(x, axis=1, mean=m) ** 2))(xc)
    g2 = grad(lambda x: np.sum(plain(x, axis=1, mean=m) ** 2))(xc)
    assert onp.allclose(g1, g2)
    check(lambda x: f(x, axis=1, ddof=1, mean=m), xc)
    check(lambda x: f(x, axis=1, mean=m), _with_nans(3, 4))


def test_all_nan_groups():
    x = onp.array([[onp.nan, onp.nan], [1.0, 2.0]])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        for name in ["nanmean", "nanmax", "nanmin", "nanvar", "nanstd", "nanmedian"]:
            g = grad(lambda x: np.sum(getattr(np, name)(x, axis=1)[1]))(x)
            assert onp.all(g[0] == 0) and onp.all(onp.isfinite(g)), name


@pytest.mark.parametrize("axis", [None, 0, 1])
def test_nancumsum_nancumprod(axis):
    x = _with_nans(3, 4)
    xp = onp.where(onp.isnan(x), x, onp.abs(x) * 0.3 + 0.5)
    check(lambda x: np.nancumsum(x, axis=axis), x)
    check(lambda x: np.nancumprod(x, axis=axis), xp)
    for f, v in [(np.nancumsum, x), (np.nancumprod, xp)]:
        g = grad(lambda x: np.sum(f(x, axis=axis)))(v)
        assert onp.all(g[onp.isnan(v)] == 0) and onp.all(onp.isfinite(g))


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


def _jacobian_by_vjp(fun, x):
    """The Jacobian of fun at x, (output size, input size), one VJP per output entry."""
    vjp, y = make_vjp(fun)(x)
    try:
        y = onp.asarray(y)
        rows = []
        for k in range(y.size):
            e = onp.zeros(y.size, y.dtype)
            e[k] = 1
            rows.append(onp.asarray(vjp(e.reshape(y.shape))).ravel())
        return onp.array(rows).reshape(y.size, -1)
    finally:
        vjp.release()


def _tricky_cases():
    ties = onp.array([[1.0, 5.0, 5.0, -2.0], [5.0, -2.0, 0.5, -2.0], [3.0, 3.0, 3.0, 3.0]])
    nans = _with_nans(3, 4)
    zeros = rand(3, 4, positive=True)
    zeros[0, 1] = zeros[2, 1] = zeros[2, 3] = zeros[1, 0] = 0.0
    w = onp.array([[True, False, True, True], [False, True, True, False],
                   [True, True, False, True]])
    mask_max = ties.copy()
    mask_max[0, 1] = 9.0                     # the maximum of row 0, masked out by `w`
    return [
        ("max ties", lambda x: np.max(x, axis=1), ties),
        ("min ties", lambda x: np.min(x), ties),
        ("max where", lambda x: np.max(x, axis=1, where=w, initial=-10.0), mask_max),
        ("min initial", lambda x: np.min(x, axis=0, initial=-1.0, keepdims=True), ties),
        ("ptp ties", lambda x: np.ptp(x, axis=1), ties),
        ("median ties", lambda x: np.median(x, axis=1), ties),
        ("median even", lambda x: np.median(x, axis=0, keepdims=True), ties),
        ("nanmax", lambda x: np.nanmax(x, axis=0), nans),
        ("nanmedian", lambda x: np.nanmedian(x, axis=1), nans),
        ("nansum where", lambda x: np.nansum(x, axis=1, where=w), nans),
        ("nanmean", lambda x: np.nanmean(x, axis=(0, 1), keepdims=True), nans),
        ("nanvar", lambda x: np.nanvar(x, axis=1, ddof=1), nans),
        ("nanstd", lambda x: np.nanstd(x, axis=0), nans),
        ("nanprod", lambda x: np.nanprod(x, axis=1), onp.abs(nans) + 0.5),
        ("nancumsum", lambda x: np.nancumsum(x, axis=1), nans),
        ("nancumprod", lambda x: np.nancumprod(x), onp.abs(nans) + 0.5),
        ("sum where", lambda x: np.sum(x, axis=0, where=w), ties),
        ("mean where", lambda x: np.mean(x, axis=1, where=w, keepdims=True), ties),
        ("prod zeros", lambda x: np.prod(x, axis=1), zeros),
        ("prod zeros all", lambda x: np.prod(x, initial=2.0), zeros),
        ("cumprod zeros", lambda x: np.cumprod(x, axis=1), zeros),
        ("cumprod zeros T", lambda x: np.cumprod(x, axis=0), zeros),
        ("std const row", lambda x: np.std(x, axis=1), ties),
        ("average w", lambda x: np.average(x, 1, onp.arange(1.0, 5.0)), ties),
    ] + ([("var mean=", lambda x: np.var(x, axis=1, mean=onp.ones((3, 1))), ties),
          ("std correction", lambda x: np.std(x, axis=0, correction=1), ties)]
         if VAR_MEAN_CORRECTION else [])


@pytest.mark.parametrize("case", range(len(_tricky_cases())))
def test_jvp_agrees_with_vjp(case):
    """On ties, nans, zeros and where= masks (where numerical checks do not reach), forward
    mode picks the same (sub)gradient as reverse mode: J v from the JVP equals the Jacobian
    built from VJPs, times v."""
    name, fun, x = _tricky_cases()[case]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        J = _jacobian_by_vjp(fun, x)
        for seed in (0, 1):
            v = rand(*x.shape, seed=seed)
            y, t = make_jvp(fun)(x)(v)
            assert onp.shape(t) == onp.shape(y), name
            assert onp.allclose(onp.ravel(t), J @ v.ravel()), name


def test_every_name_has_a_jvp():
    for n in _NAMES:
        p = getattr(np, n)
        assert p.vjpmakers or p.vjp_argnums, n
        assert p.jvpmakers or p.jvp_argnums, n


# =============================================================================
# average
# =============================================================================
def test_average():
    a = rand(3, 4)
    w_full = rand(3, 4, positive=True)
    w_row = rand(4, positive=True)
    w_col = rand(3, positive=True)
    check(lambda a: np.average(a), a)
    check(lambda a: np.average(a, 1), a)
    check(lambda a: np.average(a, (0, 1), None, False, keepdims=True), a)
    check(lambda a, w: np.average(a, None, w), a, w_full)
    check(lambda a, w: np.average(a, 0, w), a, w_full)
    check(lambda a, w: np.average(a, 1, w, False, keepdims=True), a, w_row)
    check(lambda a, w: np.average(a, 0, w), a, w_col)
    check(lambda a, w: np.average(a, -1, w), a, w_row)
    a3 = rand(2, 3, 4)
    try:
        onp.average(a3, (2, 0), rand(4, 2, positive=True))
    except TypeError:               # weights over a tuple of axes: NumPy >= 2.0
        with pytest.raises(TypeError):
            np.average(a3, (2, 0), rand(4, 2, positive=True))
        return
    check(lambda a, w: np.average(a, (2, 0), w), a3, rand(4, 2, positive=True))
    check(lambda a, w: np.average(a, (0, 2), w), a3, rand(2, 4, positive=True))


@contextlib.contextmanager
def container_tangents():
    """The engine's tangent fixer applied leafwise to a tuple output (average's returned=True),
    for as long as gradcy.numpy._util.match_tangent handles arrays only."""
    def fixer(t, ans):
        if isinstance(ans, tuple):
            return tuple(None if ti is None else match_tangent(ti, ai) for ti, ai in zip(t, ans))
        return match_tangent(t, ans)
    install_hooks(tangent_fixer=fixer)
    try:
        yield
    finally:
        install_hooks(tangent_fixer=match_tangent)


@pytest.mark.parametrize("fwd", [False, True])
def test_average_returned(fwd):
    """returned=True: the sum of weights depends on the weights only. (Second order needs
    indexing a traced tuple one level up; forward mode needs the engine's tangent fixer to
    handle tuple outputs, which container_tangents stands in for.)"""
    a = rand(3, 4)
    w_row = rand(4, positive=True)
    w_full = rand(3, 4, positive=True)
    modes = ("fwd",) if fwd else ("rev",)
    with container_tangents() if fwd else contextlib.nullcontext():
        for w in (w_row, w_full):
            _harness_check(lambda a, w: np.sum(np.average(a, 1, w, True)[0]
                                               * np.average(a, 1, w, True)[1]),
                           a, w, order=1, modes=modes)
        _harness_check(lambda a: np.average(a, 1, None, True)[0], a, order=1, modes=modes)
        _harness_check(lambda a, w: np.average(a, 0, w, True, keepdims=True)[1] * 1.0,
                       a, w_full, order=1, modes=modes)
        if fwd:
            a32, w32 = a.astype(onp.float32), w_row.astype(onp.float32)
            for i in (0, 1):
                (avg, scl), (t_avg, t_sum) = raw_tangent(
                    lambda a, w: np.average(a, 1, w, True), (a32, w32), i)
                assert t_avg.dtype == avg.dtype == onp.float32 and t_avg.shape == avg.shape
                assert t_sum.dtype == scl.dtype and t_sum.shape == scl.shape
                if i == 0:
                    assert not t_sum.any()
                else:
                    assert onp.allclose(t_sum, 4.0)


def test_average_weights_dtype():
    a = rand(3, 4).astype(onp.float32)
    w = rand(4, positive=True)                  # float64 weights: float64 output
    for i in (0, 1):
        c = raw_cotangent(lambda a, w: np.average(a, 1, w), (a, w), i)
        assert c.dtype == (a, w)[i].dtype and c.shape == (a, w)[i].shape


# =============================================================================
# what the tape keeps
# =============================================================================
def _kept(record):
    """Which of the output and the array arguments the record holds (not as ArrayMeta)."""
    ans, args = record
    return ("ans",) * isinstance(ans, (onp.ndarray, onp.generic)) + tuple(
        i for i, a in enumerate(args) if isinstance(a, onp.ndarray))


@pytest.mark.parametrize("name,expect", [
    ("sum", ()), ("mean", ()), ("cumsum", ()),
    # max and friends keep the chosen positions (a bit mask) in the output's place
    ("max", ("ans",)), ("min", ("ans",)), ("nanmax", ("ans",)), ("nanmin", ("ans",)),
    ("prod", ("ans", 0)), ("nanprod", ("ans", 0)), ("cumprod", ("ans", 0)),
    ("nancumprod", ("ans", 0)), ("std", ("ans", 0)), ("nanstd", ("ans", 0)),
    ("var", (0,)), ("nanvar", (0,)), ("ptp", (0,)), ("median", ("ans",)), ("nanmedian", ("ans",)),
    ("nansum", (0,)), ("nanmean", (0,)), ("nancumsum", (0,))])
def test_saved_set(name, expect):
    x = rand(3, 4)
    assert _kept(saved_record(lambda x: getattr(np, name)(x, 1), x)) == expect
    # the spec is what the rules read: they still run on the reduced record
    check(lambda x: getattr(np, name)(x, 1), distinct(3, 4), order=1, dtypes=False)


def test_saved_set_sum_mean_max_details():
    x = rand(3, 4)
    ans, args = saved_record(lambda x: np.sum(x, axis=0), x)
    assert type(ans) is ArrayMeta and type(args[0]) is ArrayMeta
    assert args[0].shape == (3, 4) and args[0].dtype == onp.float64
    # a positional out (None here) is taken off, the arguments after it passed by keyword
    ans, args = saved_record(lambda x: np.mean(x, 1, None, None, True), x)
    assert type(ans) is ArrayMeta and type(args[0]) is ArrayMeta and args[1:] == (1, None)
    assert ans.shape == (3, 1)
    ans, args = saved_record(lambda x: np.max(x, axis=1), x)
    # the positions of the maxima, one bit per element of x (saved_sets.py), not x itself
    assert ans.dtype == onp.uint8 and ans.nbytes == 2 and type(args[0]) is ArrayMeta
    assert onp.array_equal(unpack_positions(ans, x.shape), x == x.max(axis=1, keepdims=True))
    ans, args = saved_record(lambda x, w: np.average(x, 1, w), x, rand(4))
    assert type(ans) is ArrayMeta and isinstance(args[0], onp.ndarray)
