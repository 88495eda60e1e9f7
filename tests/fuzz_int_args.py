"""The fuzzer's class int_arg: integer and boolean arrays as the differentiated argument.

A program f(np, x) of elementwise operations, reductions and reads on x, differentiated with
respect to x given as an integer or boolean array (gradcy differentiates it as float64
values: the gradient is float64, as documented) and checked against central differences of
the same program on x.astype(float) (its "float version"). A program is kept only when NumPy
gives the integer and the float version the same value and the float version is smooth at
x (differences at two steps agree), so NumPy's integer semantics (integer division,
wrapping, boolean + as or) never make the two differ. np.reciprocal of an integer (NumPy
rounds 1 / x toward zero) has no derivative: such a program must raise gradcy's error that
names it (INT_RECIPROCAL). A Python int as the argument must raise the TypeError that grad
gives for an integer scalar (autograd refuses it too).

Run more seeds: python tests/fuzz_programs.py --int-arg --programs 2000
"""

import traceback
import warnings

import numpy as onp

from fuzz_programs import BOUND, FD_STEP, TOL, VALUE_RTOL, Failure, _close, _lit

INT_DTYPES = ("int64", "int32", "int8", "uint8", "bool")
INT_UNARY = (
    "({e}) * {c}",
    "({e}) / {c}",
    "({e}) + x",
    "({e}) - x",
    "({e}) * x",
    "-({e})",
    "np.square({e})",
    "({e}) ** 2",
    "np.sin({e})",
    "np.cos({e})",
    "np.tanh(({e}) * 0.3)",
    "np.exp(({e}) * 0.1)",
    "np.abs({e})",
    "np.maximum({e}, {c})",
    "({e}) // 2",
    "({e}) % 3",
    "np.cumsum({e}, axis=0)",
    "({e})[::-1]",
    "np.where(x > 1, {e}, {c})",
    "np.sum({e}, axis=0, keepdims=True) * ({e})",
    "({e}).astype(float)",
    "np.add.accumulate({e})",
    "np.multiply.outer({e}, {c2})[..., 0]",
    "({e}) ** 3",
    "np.power(2, {e})",
    "np.sqrt(({e}) * ({e}) + 1)",
    "np.cbrt({e})",
    "np.prod({e}, axis=0, keepdims=True) + ({e})",
    "np.cumprod({e}, axis=0)",
    "np.max({e}, axis=0, keepdims=True) * ({e})",
    "np.min({e}, axis=0, keepdims=True) + ({e})",
    "np.mean({e}, axis=0) + ({e})",
    "np.var({e}, axis=0) + ({e})",
    "np.std({e}) * ({e})",
    "np.diff({e}, axis=0)",
    "np.clip({e}, -2, 3)",
    "np.hypot({e}, {c})",
    "np.arctan2({e}, {c})",
    "np.fmod({e}, 3)",
    "np.true_divide({e}, x * x + 10)",
    "np.float_power({e}, 2)",
    "np.logaddexp({e}, {c})",
    "np.expm1(({e}) * 0.1)",
    "np.exp2(({e}) * 0.5)",
    "np.log1p(np.abs({e}))",
    "np.sign({e}) * ({e})",
    "np.linalg.norm({e}) + ({e})",
    "np.dot({e}, np.ravel({e})[: np.shape({e})[-1]])",
    "np.outer({e}, x)[0]",
    "np.concatenate([np.ravel({e}), np.ravel(x)])",
    "np.stack([{e}, {e}])",
    "np.transpose({e})",
    "np.positive({e}) + np.negative(x)",
    "np.maximum({e}, x)",
    "np.fmin({e}, {c})",
    "np.subtract.accumulate({e})",
    "np.maximum.accumulate({e})",
    "np.add.reduce({e})",
    "np.deg2rad({e})",
    "np.sinc(({e}) * 0.3)",
)
INT_RECIPROCAL = "gradcy.numpy.reciprocal: argument 0 is an integer array that is differentiated"
INT_SCALAR = "is an integer scalar (int); gradients are defined for floating-point"


def generate_int_arg(seed):
    """(source, x, tags) of the int_arg program of `seed`: def prog(np, x): return loss."""
    rng = onp.random.RandomState(seed)
    dtype = INT_DTYPES[rng.randint(len(INT_DTYPES))]
    shape = ((3,), (4,), (2, 3))[rng.randint(3)]
    if dtype == "bool":
        x = rng.rand(*shape) < 0.5
    elif dtype == "uint8":
        x = rng.randint(0, 6, size=shape).astype(dtype)
    else:
        x = rng.randint(-4, 5, size=shape).astype(dtype)
    e, tags = "x", set()
    for _ in range(rng.randint(1, 5)):
        for _attempt in range(20):
            tmpl = INT_UNARY[rng.randint(len(INT_UNARY))]
            c = _lit(round(float(rng.uniform(0.3, 2.5)), 3))
            c2 = "onp.array([" + _lit(round(float(rng.uniform(0.3, 2.5)), 3)) + "])"
            cand = tmpl.format(e=e, c=c, c2=c2)
            if _int_arg_valid(cand, x):
                e = cand
                break
    inner = _int_eval(e, x)
    if (
        rng.rand() < 0.15
        and inner.dtype.kind in "iub"
        and onp.all(inner != 0)
        and _traced_by_gradcy(e, x)
    ):
        e, tags = f"np.reciprocal({e}) * 1.0 + ({e})", {"reciprocal"}
    w = f"onp.linspace({_lit(round(float(rng.uniform(-1.5, -0.2)), 3))}, 1.25, "
    shape = onp.shape(_int_eval(e, x))
    n = int(onp.prod(shape))
    src = f"def prog(np, x):\n    return np.sum(({e}) * {w}{n}).reshape({shape!r}))\n"
    if "reciprocal" not in tags and not _int_arg_valid(src, x, whole=True):
        src = "def prog(np, x):\n    return np.sum(x * 1.5)\n"
    if rng.rand() < 0.1:
        tags.add("python_int")
    return src, x, tags


def _traced_by_gradcy(expr, x):
    """gradcy traces `expr` from x (it is not a constant such as x // 2: no warning)."""
    import gradcy
    import gradcy.numpy as gnp

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        gradcy.make_vjp(lambda z: eval(expr, {"np": gnp, "onp": onp, "x": z}))(x)
    return not any("Output seems independent" in str(w.message) for w in caught)


def _int_eval(expr, x):
    with onp.errstate(all="raise"):
        return onp.asarray(eval(expr, {"np": onp, "onp": onp, "x": x}))


def _int_fn(src):
    ns = {"onp": onp}
    exec(src, ns)
    return ns["prog"]


def _int_arg_valid(text, x, whole=False):
    """NumPy gives the integer and the float version of `text` (an expression of x, or with
    whole=True a program) the same finite value, and the float version is smooth at x."""
    xf = x.astype(float)
    try:
        if whole:
            f = _int_fn(text)
            with onp.errstate(all="raise"):
                vi, vf = onp.asarray(f(onp, x)), onp.asarray(f(onp, xf))
        else:
            vi, vf = _int_eval(text, x), _int_eval(text, xf)
            f = lambda np, z: onp.sum(eval(text, {"np": np, "onp": onp, "x": z}))
    except (
        FloatingPointError,
        TypeError,
        ValueError,
        IndexError,
        OverflowError,
        ZeroDivisionError,
    ):
        return False
    if (
        vi.shape != vf.shape
        or not onp.all(onp.isfinite(vf))
        or onp.max(onp.abs(vf), initial=0) > BOUND
    ):
        return False
    if not onp.allclose(vi.astype(float), vf, rtol=1e-12, atol=1e-12):
        return False
    # smooth: along each coordinate, the one-sided differences of the float version agree
    # (integer points are where kinks are: abs at 0, ties of maximum, clip's bounds)
    f0 = onp.sum(f(onp, xf))
    for i in range(xf.size):
        e = onp.zeros(xf.size)
        e[i] = 1e-5
        e = e.reshape(xf.shape)
        right = (onp.sum(f(onp, xf + e)) - f0) / 1e-5
        left = (f0 - onp.sum(f(onp, xf - e))) / 1e-5
        near = (onp.sum(f(onp, xf + 0.1 * e)) - onp.sum(f(onp, xf - 0.1 * e))) / 2e-6
        central = (onp.sum(f(onp, xf + 10 * e)) - onp.sum(f(onp, xf - 10 * e))) / 2e-4
        if (
            abs(right - left) > 1e-3 * (1 + abs(right))
            or abs(near - right) > 1e-3 * (1 + abs(right))
            or abs(near - central) > 1e-6 * (1 + abs(central))
        ):  # (a kink, a tie of a maximum, or an infinite slope: cbrt at 0)
            return False
    return True


def check_int_arg(seed):
    """('pass' | 'raised', detail) for the int_arg program of `seed`; raises Failure."""
    import gradcy
    import gradcy.numpy as gnp

    src, x, tags = generate_int_arg(seed)
    prog = _int_fn(src)
    f = lambda z: prog(gnp, z)
    if "python_int" in tags:
        try:
            gradcy.grad(lambda z: gnp.sum(gnp.sin(z)))(int(onp.ravel(x)[0]))
        except TypeError as e:
            if INT_SCALAR not in str(e):
                raise Failure("python_int", f"seed {seed}: {e}") from e
        else:
            raise Failure("python_int", f"seed {seed}: grad of a Python int did not raise")
    x0 = x.copy()
    if "reciprocal" in tags:
        try:
            gradcy.grad(f)(x)
        except TypeError as e:
            if INT_RECIPROCAL not in str(e):
                raise Failure("reciprocal", f"seed {seed}: {e}\n{src}") from e
            return "raised", "reciprocal"
        raise Failure("reciprocal", f"seed {seed}: no error for\n{src}")
    want_value = prog(onp, x)
    xf = x.astype(float)
    n = xf.size
    fd = onp.zeros(n)
    for i in range(n):
        e = onp.zeros(n)
        e[i] = FD_STEP
        e = e.reshape(x.shape)
        fd[i] = (prog(onp, xf + e) - prog(onp, xf - e)) / (2 * FD_STEP)
    fd = fd.reshape(x.shape)
    value, g = gradcy.value_and_grad(f)(x)
    where = f"seed {seed} ({x.dtype}):\n{src}x = {x!r}"
    if not _close(value, want_value, VALUE_RTOL):
        raise Failure("value", f"{where}\nvalue {value!r} != NumPy's {want_value!r}")
    if type(g) is not onp.ndarray or g.dtype != onp.float64 or g.shape != x.shape:
        raise Failure("types", f"{where}\ngradient {type(g).__name__} {getattr(g, 'dtype', '')}")
    # NumPy computes sin, exp, ... of int8, uint8 and bool in float16: so do the cotangents
    tol = TOL if x.dtype.itemsize > 1 else 2e-3
    g_float = gradcy.grad(f)(xf)
    if not onp.all(onp.isfinite(g_float)):
        # a singular rule on the float program too (cbrt(x ** 3) at 0: inf * 0): the
        # integer argument must give what the float one gives
        if not onp.array_equal(onp.isfinite(g), onp.isfinite(g_float)):
            raise Failure("rev", f"{where}\ngrad {g!r}\nof the float argument {g_float!r}")
        return "pass", str(x.dtype)
    if not _close(g, fd, tol):
        raise Failure("rev", f"{where}\ngrad {g!r}\ndifferences {fd!r}")
    v = onp.linspace(-1.0, 0.7, n).reshape(x.shape)
    _, t = gradcy.make_jvp(f)(x)(v)
    t_float = gradcy.make_jvp(f)(xf)(v)[1]
    if not onp.isfinite(t_float):  # (std of equal values at 0 / 0, as for the float argument)
        if onp.isfinite(t):
            raise Failure("fwd", f"{where}\njvp {t!r}\nof the float argument {t_float!r}")
    elif not _close(t, onp.sum(fd * v), tol):
        raise Failure("fwd", f"{where}\njvp {t!r}\ndifferences {onp.sum(fd * v)!r}")
    # second order (reverse over reverse): the integer argument's as the float argument's
    hvp = lambda z: gradcy.grad(lambda u: gnp.sum(gradcy.grad(f)(u) * v))(z)
    h, h_float = hvp(x), hvp(xf)
    if h.dtype != onp.float64 or not (
        _close(h, h_float, tol) or onp.array_equal(h, h_float, equal_nan=True)
    ):
        raise Failure("hvp", f"{where}\nhvp {h!r}\nof the float argument {h_float!r}")
    if not onp.array_equal(x, x0):
        raise Failure("input", f"{where}\nthe argument was changed")
    return "pass", str(x.dtype)


def run_seeds(seeds):
    """{'pass': {dtype: n}, 'raised': {reason: n}, 'failures': [...]} over `seeds`."""
    out = {"pass": {}, "raised": {}, "failures": []}
    for seed in seeds:
        try:
            with warnings.catch_warnings():  # (x - x and the like: a constant output)
                warnings.filterwarnings("ignore", message="Output seems independent of input")
                status, detail = check_int_arg(seed)
        except Failure as e:
            out["failures"].append(f"{e.kind}: {e.detail}")
            continue
        except Exception:
            out["failures"].append(f"seed {seed}: {traceback.format_exc()}")
            continue
        out[status][detail] = out[status].get(detail, 0) + 1
    return out
