"""Shared checks for the VJP tables.

check(fun, *args): gradients of fun checked numerically (float64, reverse mode, to second
order by default), then the dtype contract: with every float argument cast to float32 (and, for
0-d cases, given as 0-d arrays), each gradient has its argument's type, dtype and shape.

Each test module lists the primitives it checks in a module-level set COVERED (qualified names,
e.g. "gradcy.numpy.sin"); tests/test_registry.py fails when a primitive with a VJP is listed
nowhere.
"""
import numpy as onp

import gradcy.numpy as gnp
from gradcy import make_vjp
from gradcy._core import Box, Tape
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


def raw_cotangent(fun, args, i, g=None):
    """The cotangent the tape delivers to argument i for output cotangent g (all ones when not
    given), before the front end's cast to the input's type (which would hide a float64 leak)."""
    t = Tape()
    try:
        b = t.new_leaf(args[i])
        y = fun(*args[:i], b, *args[i + 1:])
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
                f"argument {i}: cotangent shape {onp.shape(c)}, input {onp.shape(a)}")
            assert dtype_ok(c, dtype), (
                f"argument {i}: cotangent dtype {onp.result_type(c)} leaked into a {dtype} "
                f"computation")

        def f_i(x, i=i):
            return fun(*args[:i], x, *args[i + 1:])
        vjp, ans = make_vjp(f_i)(a)
        try:
            ans_arr = onp.asarray(ans)
            g = onp.ones(ans_arr.shape, ans_arr.dtype) if ans_arr.ndim else ans_arr.dtype.type(1)
            out = vjp(g)
        finally:
            vjp.release()
        if isinstance(a, onp.ndarray):
            assert isinstance(out, onp.ndarray), (
                f"gradient wrt argument {i} is {type(out).__name__}, expected ndarray")
            assert out.dtype == a.dtype, (
                f"gradient wrt argument {i} has dtype {out.dtype}, input {a.dtype}")
            assert out.shape == a.shape, (
                f"gradient wrt argument {i} has shape {out.shape}, input {a.shape}")
        else:
            assert type(out) is type(a), (
                f"gradient wrt argument {i} is {type(out).__name__}, input {type(a).__name__}")


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
