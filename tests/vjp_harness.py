"""Shared checks for the VJP tables.

check(fun, *args): gradients of fun checked numerically (float64, reverse mode, to second
order by default), then the dtype contract: with every float argument cast to float32 (and, for
0-d cases, given as 0-d arrays), each gradient has its argument's type, dtype and shape.

check_deep(fun, *args): check() to first order, then each argument's VJP and JVP checked as
functions to second order, then the float32 contracts at the tape level in both modes
(check_raw_dtypes, check_raw_tangent_dtypes; raw_cotangent and raw_tangent read the tape
before the front end's cast). Also shared: saved_record (what a node keeps), central_gradient,
primitives_with_vjps, assert_jvps_follow_vjps, assert_missing_rules_raise, rand, total, fusion.

Each test module lists the primitives it checks in a module-level set COVERED (qualified names,
e.g. "gradcy.numpy.sin"); tests/test_registry.py fails when a primitive with a VJP is listed
nowhere.
"""

import contextlib
import importlib
import pkgutil

import numpy as onp
import pytest

import gradcy
import gradcy.numpy as gnp
from gradcy import grad, make_jvp, make_vjp
from gradcy._core import (
    Box,
    MissingJVPError,
    MissingVJPError,
    Primitive,
    Tape,
    active_tape,
    install_hooks,
)
from gradcy.numpy._util import match_tangent
from gradcy.test_util import check_grads

DTYPES_CHECKED = (onp.float32,)
# NumPy 2 promotes by NEP 50: a Python float is weak, float32 scalar * 2.0 is float32
NEP50 = (onp.float32(1) * 1.0).dtype == onp.float32


def dtype_ok(value, dtype):
    """value has `dtype`, or is a scalar of the dtype NumPy itself gives for a `dtype` scalar
    times a Python float. The same under NEP 50 (NumPy 2: the Python float is weak); NumPy 1.x
    promotes scalars by value, float32 scalar * 2.0 being float64, so a rule that scales a
    scalar cotangent or tangent by a Python constant widens it there as NumPy does."""
    dtype = onp.dtype(dtype)
    got = onp.result_type(value)
    return got == dtype or (onp.ndim(value) == 0 and got == (dtype.type(1) * 1.0).dtype)


def _is_float_array(a):
    return isinstance(a, onp.ndarray) and onp.issubdtype(a.dtype, onp.floating)


def check(fun, *args, order=2, dtypes=True, modes=("fwd", "rev")):
    """Numerical check of every derivative of fun(*args) (forward and reverse mode) plus the
    float32 dtype contract."""
    check_grads(fun, tuple(range(len(args))), modes=modes, order=order)(*args)
    if dtypes:
        for dt in DTYPES_CHECKED:
            check_dtype(fun, *[a.astype(dt) if _is_float_array(a) else a for a in args])


def _is_inexact(a):
    return isinstance(a, (float, complex)) or (isinstance(a, onp.ndarray) and a.dtype.kind in "fc")


def _to(a, dtype):
    return a.astype(dtype) if isinstance(a, onp.ndarray) and a.dtype.kind == "f" else a


def _random_like(shape, complex_, rs):
    r = rs.randn(*shape)
    return onp.asarray(r + 1j * rs.randn(*shape) if complex_ else r)


def vjp_of(fun, i):
    """The VJP of fun wrt argument i as a function of every argument and the cotangent."""

    def vjp_i(*args_u):
        *aa, uu = args_u
        vjp, _ = make_vjp(fun, argnum=i)(*aa)
        try:
            return vjp(uu)
        finally:
            vjp.release()

    return vjp_i


def jvp_of(fun, i):
    """The JVP of fun wrt argument i as a function of every argument and the tangent."""

    def jvp_i(*args_v):
        *aa, vv = args_v
        return make_jvp(fun, argnum=i)(*aa)(vv)[1]

    return jvp_i


def check_deep(fun, *args, order=2, dtypes=True, tangents=True):
    """check() to first order in both modes, then each argument's VJP (a function of every
    argument and the cotangent) and JVP (of every argument and the tangent) checked
    recursively to `order` in both modes, then the float32 contracts at the tape level
    (make_vjp casts at its boundary, which would hide a float64 leak): the cotangents and,
    with `tangents`, the forward tangents (check_raw_tangent_dtypes)."""
    check(fun, *args, order=1, dtypes=dtypes, modes=("fwd", "rev"))
    if order > 1:
        rs = onp.random.RandomState(1)
        y = onp.asarray(fun(*args))
        u = _random_like(y.shape, onp.iscomplexobj(y), rs)
        for i, a in enumerate(args):
            if not _is_inexact(a):
                continue
            check_deep(vjp_of(fun, i), *args, u, order=order - 1, dtypes=False)
            v = _random_like(onp.shape(a), onp.iscomplexobj(a), rs)
            v = v if isinstance(a, onp.ndarray) else type(a)(v)
            check_deep(jvp_of(fun, i), *args, v, order=order - 1, dtypes=False)
    if dtypes:
        check_raw_dtypes(fun, *args)
        if tangents:
            check_raw_tangent_dtypes(fun, *args)


def check_raw_dtypes(fun, *args, dtype=onp.float32):
    """At the tape level, each float argument cast to `dtype` gets a cotangent of exactly its
    shape and dtype (None: a rule that declares a zero cotangent)."""
    args = tuple(_to(a, dtype) for a in args)
    for i, a in enumerate(args):
        if not _is_inexact(a):
            continue
        c = raw_cotangent(fun, args, i)
        if c is None:
            continue
        want = a.dtype if isinstance(a, onp.ndarray) else onp.dtype(type(a))
        assert onp.shape(c) == onp.shape(a), f"arg {i}: shape {onp.shape(c)} != {onp.shape(a)}"
        assert dtype_ok(c, want), f"arg {i}: dtype {onp.result_type(c)} != {want}"


@contextlib.contextmanager
def tangent_dtypes():
    """Record (tangent dtype, output dtype) of every JVP result the engine has to cast or
    broadcast (Python scalars aside: they are weak in NumPy's promotion)."""
    seen = []

    def fixer(t, ans):
        if isinstance(ans, tuple):  # average(..., returned=True): leafwise
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
    widened = [
        (tt, a)
        for tt, a in seen
        if a.kind in "fc" and tt.kind in "fc" and tt.itemsize > a.itemsize and onp.can_cast(a, tt)
    ]
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
        for yl, tl in zip(*(list(z) if isinstance(z, tuple) else [z] for z in (y, t))):
            assert onp.shape(tl) == onp.shape(yl), f"arg {i}: shape {onp.shape(tl)}"
            assert onp.result_type(tl) == onp.result_type(yl), (
                f"arg {i}: tangent dtype {onp.result_type(tl)}, output {onp.result_type(yl)}"
            )


def assert_jvps_follow_vjps(prim):
    """prim has a JVP for every argument it has a VJP for."""
    if prim.jvp_argnums is not None:
        return
    assert prim.jvpmakers, f"{prim.name} has no JVP"
    for argnum, maker in prim.vjpmakers.items():
        if maker is not None:
            assert prim.jvpmakers.get(argnum) is not None, f"{prim.name}: no JVP for {argnum}"


def assert_missing_rules_raise(fun, args, argnum):
    """fun has neither a VJP nor a JVP for argument `argnum`: both modes raise, naming it."""
    with pytest.raises(MissingVJPError, match=fun.name):
        grad(lambda *a: gnp.sum(fun(*a)), argnum)(*args)
    with pytest.raises(MissingJVPError, match=fun.name):
        make_jvp(fun, argnum)(*args)(onp.ones_like(args[argnum]))


def saved_record(fun, *args, traced=None):
    """(ans, args, kwargs) as the node of fun's output saved them, on a fresh tape with the
    arguments at positions `traced` (all by default) as leaves."""
    t = Tape()
    try:
        traced = range(len(args)) if traced is None else traced
        y = fun(*[t.new_leaf(a) if i in traced else a for i, a in enumerate(args)])
        return t.node_info(y._node)["saved"]
    finally:
        t.release()


def raw_cotangent(fun, args, i, g=None):
    """The cotangent the tape delivers to argument i for output cotangent g (all ones when not
    given), before the front end's cast to the input's type (which would hide a float64 leak)."""
    t = Tape()
    try:
        b = t.new_leaf(args[i])
        y = fun(*args[:i], b, *args[i + 1 :])
        assert type(y) is Box, "the function's output does not depend on its argument"
        out = t.pin(y)
        if g is None:
            v = y._value
            g = onp.ones_like(v) if isinstance(v, onp.ndarray) else onp.asarray(v).dtype.type(1)
        del y
        return t.backward(out, g, True, [b._node])[0]
    finally:
        t.release()


def check_dtype(fun, *args):
    """Each float argument's gradient has the argument's dtype, shape and type, both at the
    tape level (no float64 leak inside the backward pass) and as returned by make_vjp."""
    for i, a in enumerate(args):
        if not (_is_float_array(a) or isinstance(a, float)):
            continue
        c = raw_cotangent(fun, args, i)
        if c is not None:
            dtype = a.dtype if isinstance(a, onp.ndarray) else onp.dtype(onp.float64)
            assert onp.shape(c) == onp.shape(a), (
                f"argument {i}: cotangent shape {onp.shape(c)}, input {onp.shape(a)}"
            )
            assert dtype_ok(c, dtype), (
                f"argument {i}: cotangent dtype {onp.result_type(c)} leaked into a {dtype} "
                f"computation"
            )

        def f_i(x, i=i):
            return fun(*args[:i], x, *args[i + 1 :])

        vjp, ans = make_vjp(f_i)(a)
        try:
            ans_arr = onp.asarray(ans)
            g = onp.ones(ans_arr.shape, ans_arr.dtype) if ans_arr.ndim else ans_arr.dtype.type(1)
            out = vjp(g)
        finally:
            vjp.release()
        if isinstance(a, onp.ndarray):
            assert isinstance(out, onp.ndarray), (
                f"gradient wrt argument {i} is {type(out).__name__}, expected ndarray"
            )
            assert out.dtype == a.dtype, (
                f"gradient wrt argument {i} has dtype {out.dtype}, input {a.dtype}"
            )
            assert out.shape == a.shape, (
                f"gradient wrt argument {i} has shape {out.shape}, input {a.shape}"
            )
        else:
            assert type(out) is type(a), (
                f"gradient wrt argument {i} is {type(out).__name__}, input {type(a).__name__}"
            )


def recorded(f, *args):
    """The primitive names of the tape's nodes when f(*args) returns, under grad (dead nodes:
    None): what record-time fusion made of f."""
    names = []

    def g(*a):
        out = f(*a)
        t = active_tape()
        names.extend(t.node_info(i)["primitive"] for i in range(len(t)))
        return out

    grad(g)(*args)
    return names


@contextlib.contextmanager
def fusion(on):
    """Record-time fusion (gradcy._core.set_fusion) on or off inside the block."""
    old = gradcy._core.set_fusion(on)
    try:
        yield
    finally:
        gradcy._core.set_fusion(old)


def central_gradient(f, x, eps=1e-6):
    """Central differences of scalar f at float64 array x."""
    x = onp.asarray(x, float)
    g = onp.zeros_like(x)
    for i in range(x.size):
        e = onp.zeros_like(x)
        e.flat[i] = eps
        g.flat[i] = (f(x + e) - f(x - e)) / (2 * eps)
    return g


def total(outs):
    """A scalar mixing every entry of a list of outputs with fixed random weights (the checks
    need a traced array output, not a list)."""
    s = 0.0
    for i, y in enumerate(outs):
        s = s + gnp.sum(y * rand(*onp.shape(y), seed=3 + i))
    return s


def rand(*shape, seed=0, positive=False, low=None, high=None):
    """Seeded float64 test data."""
    rs = onp.random.RandomState(seed + 17 * len(shape) + sum(shape))
    if low is not None:
        return rs.uniform(low, high, size=shape)
    x = rs.randn(*shape)
    return onp.abs(x) + 0.5 if positive else x


def _gradcy_modules():
    yield gradcy
    for info in pkgutil.walk_packages(gradcy.__path__, "gradcy."):
        # the Cython-level tests; the switch that makes autograd's imports resolve to gradcy
        # (importing it turns it on: it defines no primitive)
        if info.name.endswith("_core_tests") or info.name == "gradcy.autograd_alias":
            continue
        try:
            yield importlib.import_module(info.name)
        except ImportError:  # optional extras (scipy) not installed
            continue


def primitives_with_vjps():
    """{name: primitive} of every primitive with a registered VJP, over all of gradcy."""
    found = {}
    for module in _gradcy_modules():
        for obj in vars(module).values():
            if isinstance(obj, Primitive) and (obj.vjpmakers or obj.vjp_argnums is not None):
                found[obj.name] = obj
    return found
