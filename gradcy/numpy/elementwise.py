"""VJPs and JVPs of elementwise functions: unary and binary ufuncs, maximum/minimum/clip/where.

Complex inputs follow autograd's convention: the VJP of a holomorphic f is g * f'(x) (no
conjugate), and so is its JVP; non-holomorphic functions (absolute, real, imag, angle,
conjugate) use the matching rules, e.g. the VJP of absolute is g * conj(x) / |x| and its JVP
the real-linear Re(conj(x) g) / |x|.

A JVP returns a tangent that only broadcasts to the output: the engine broadcasts the sum of the
arguments' tangents to the output's shape and casts it to the output's dtype.

Constants in the rules are Python floats (weakly typed), so float32 cotangents stay float32.
"""

import math

import numpy as _onp

from .._core import meta_of
from .._dask_ops import on_chunks
from .._rules import ElementwiseRule
from ..registry import defjvp, defvjp_direct
from . import _wrap as anp
from ._util import (
    _dtype,
    _is_complex,
    _plain,
    _zeros_of,
    balanced_eq,
    cast_like,
    shape_dtype,
    unbroadcast,
)
from .saved_sets import Positions, extremum_masks

_LN2 = math.log(2.0)
_LN10 = math.log(10.0)
_PI = math.pi
_DEG = 180.0 / math.pi
_RAD = math.pi / 180.0
_PYNUM = (int, float)


def _replace_zero(x, val):
    """x with its zeros replaced by val (autograd's guard for log/abs of 0)."""
    return anp.where(x, x, val)


def _holomorphic(prim, rule, save, fast=None, ufunc=None, recomputable=False):
    """Register rule(g, ans, x) = g * f'(x) as both the VJP (autograd's convention: no
    conjugate) and the JVP of a unary function. fast: the ElementwiseRule kind that computes
    the VJP in C when g and the saved values are plain arrays (ufunc: f' for the *_d kinds)."""
    vjp = on_chunks(rule, save)  # on Dask arrays: one blockwise layer, the rule per chunk
    defvjp_direct(
        prim,
        vjp if fast is None else ElementwiseRule(fast, vjp, 0, ufunc),
        save=save,
        recomputable=recomputable,
    )
    defjvp(prim, vjp)  # (the same formula: g * f'(x) for a tangent g)


def _fast(kind, argnum, rule):
    """rule(g, ans, x, y) with the C computation `kind` of _rules.ElementwiseRule (the same
    value: direct ufunc calls, written into g or a temporary when NumPy's result allows)."""
    if kind != "unbroadcast":  # (unbroadcast of a Dask g of x's shape is g: no layer)
        # on Dask arrays: one blockwise layer, the rule per chunk (reading g and the other
        # argument, or for subtract's y only g)
        rule = on_chunks(rule, () if kind == "neg_unbroadcast" else (1 - argnum,))
    return ElementwiseRule(kind, rule, argnum)


def _jvp_first(g, ans, x, *args, **kwargs):
    """The JVP of an argument the output depends on with slope 1 (add's x, fmod's x...)."""
    return g


def _jvp_negated(g, ans, x, *args, **kwargs):
    return -g


def _times_mask(g, mask, ans):
    """g times a plain bool mask. A Python-scalar tangent (of a traced Python float) is weak
    in NumPy's promotion but a bool mask is not: the mask then takes the output's dtype, so a
    float32 output never gets a float64 tangent."""
    if type(g) is float or type(g) is complex:
        return _onp.asarray(mask, dtype=_dtype(ans)) * g
    return g * mask


def _select(mask, g, ans, negate=False):
    """g where the plain mask holds, 0 (or -g with negate) elsewhere: in g's dtype, or in
    the output's for a Python-scalar g (see _times_mask)."""
    if type(g) is float or type(g) is complex:
        m = _onp.where(mask, 1, 0).astype(_dtype(ans))
        return (2.0 * m - 1.0) * -g if negate else m * g
    if negate:
        return anp.where(mask, -g, g)
    return cast_like(anp.where(mask, g, 0.0), _dtype(g))  # NumPy 1.x widens a scalar g


# =============================================================================
# Arithmetic
# =============================================================================
# recomputable=True marks the cheap elementwise ops: with recompute on (gradcy.grad(f,
# recompute="elementwise")), a consumer that would keep the output of one of them keeps a
# stand-in instead, when the op's own record holds all its inputs; the output is made again in
# the backward pass. multiply's and divide's saved sets are per argument: the rule of an
# argument reads the other one (divide's rule for y reads x and y), so ``0.01 * x`` keeps
# nothing of x.
defvjp_direct(
    anp.add,
    _fast("unbroadcast", 0, lambda g, ans, x, y: unbroadcast(g, x)),
    _fast("unbroadcast", 1, lambda g, ans, x, y: unbroadcast(g, y)),
    save=(),
    recomputable=True,
)
defvjp_direct(
    anp.subtract,
    _fast("unbroadcast", 0, lambda g, ans, x, y: unbroadcast(g, x)),
    _fast("neg_unbroadcast", 1, lambda g, ans, x, y: -unbroadcast(g, y)),  # (reduce first)
    save=(),
    recomputable=True,
)
defvjp_direct(
    anp.multiply,
    _fast("mul", 0, lambda g, ans, x, y: unbroadcast(g * y, x)),
    _fast("mul", 1, lambda g, ans, x, y: unbroadcast(x * g, y)),
    save={0: (1,), 1: (0,)},
    recomputable=True,
)
defvjp_direct(
    anp.divide,
    _fast("div", 0, lambda g, ans, x, y: unbroadcast(g / y, x)),
    # (reduce first; / y / y: y * y of an integer y would be integer arithmetic, overflowing)
    lambda g, ans, x, y: -unbroadcast(g * x, y) / y / y,
    save={0: (1,), 1: (0, 1)},
    recomputable=True,
)
_holomorphic(anp.negative, lambda g, ans, x: -g, save=(), fast="neg", recomputable=True)
defvjp_direct(anp.positive, lambda g, ans, x: g, save=())
defjvp(anp.add, _jvp_first, _jvp_first)
# (on Dask arrays each rule one blockwise layer: on_chunks, with what it reads besides g)
defjvp(anp.subtract, _jvp_first, on_chunks(_jvp_negated, ()))
defjvp(
    anp.multiply,
    on_chunks(lambda g, ans, x, y: g * y, (1,)),
    on_chunks(lambda g, ans, x, y: x * g, (0,)),
)
defjvp(
    anp.divide,
    on_chunks(lambda g, ans, x, y: g / y, (1,)),
    on_chunks(lambda g, ans, x, y: -g * ans / y, ("ans", 1)),
)
defjvp(anp.positive, _jvp_first)


def _inexact(x):
    """x, or x * 1.0 when it is integer or boolean (an integer array differentiated as float64
    values): a rule's arithmetic on it is then float64, never wrapping integer arithmetic."""
    return x * 1.0 if _dtype(x).kind in "biu" else x


def _sq(x):
    """x * x in floating point (an integer x's square would wrap)."""
    x = _inexact(x)
    return x * x


def _power_dx(g, ans, x, y):
    x = _inexact(x)
    if type(y) in _PYNUM:  # constant Python exponent: the common x ** 2, x ** 0.5
        if y == 0:
            return g * 0.0
        if y == 1:
            return g
        if y == 2:
            return g * (2.0 * x)
        return g * (y * x ** (y - 1))
    # the where() keeps 0 ** -1 out of the y == 0 entries
    return unbroadcast(g * y * x ** anp.where(y, y - 1, 1.0), x)


def _log_base(x):
    """log(x) with log(0) replaced by 0 (the exponent's gradient where the base is 0)."""
    if type(x) is float and x > 0.0:
        return math.log(x)
    return anp.log(_replace_zero(x, 1.0))


def _power_dy(g, ans, x, y):
    return unbroadcast(g * _log_base(x) * anp.power(_inexact(x), y), y)


defvjp_direct(anp.power, _power_dx, _power_dy, save=(0, 1))


def _power_jvp_x(g, ans, x, y):
    x = _inexact(x)
    if type(y) in _PYNUM:
        if y == 0:
            return g * 0.0
        if y == 1:
            return g
        if y == 2:
            return g * (2.0 * x)
        return g * (y * x ** (y - 1))
    return g * y * x ** anp.where(y, y - 1, 1.0)


defjvp(anp.power, _power_jvp_x, lambda g, ans, x, y: g * _log_base(x) * ans)


def _float_power_dx(g, ans, x, y):
    if type(y) in _PYNUM and y == 0:
        return cast_like(g * 0.0, _dtype(x))
    return unbroadcast(g * y * anp.float_power(x, anp.where(y, y - 1, 1.0)), x)


defvjp_direct(
    anp.float_power,
    _float_power_dx,
    lambda g, ans, x, y: unbroadcast(g * _log_base(x) * anp.float_power(x, y), y),
    save=(0, 1),
)


def _float_power_jvp_x(g, ans, x, y):
    if type(y) in _PYNUM and y == 0:
        return g * 0.0
    return g * y * anp.float_power(x, anp.where(y, y - 1, 1.0))


defjvp(anp.float_power, _float_power_jvp_x, lambda g, ans, x, y: g * _log_base(x) * ans)

defvjp_direct(
    anp.fmod,
    lambda g, ans, x, y: unbroadcast(g, x),
    lambda g, ans, x, y: unbroadcast(-g * anp.trunc(x / y), y),
    save=(0, 1),
)
defvjp_direct(
    anp.remainder,
    lambda g, ans, x, y: unbroadcast(g, x),
    lambda g, ans, x, y: unbroadcast(-g * anp.floor_divide(x, y), y),
    save=(0, 1),
)
defjvp(anp.fmod, _jvp_first, lambda g, ans, x, y: -g * anp.trunc(x / y))
defjvp(anp.remainder, _jvp_first, lambda g, ans, x, y: -g * anp.floor_divide(x, y))

# =============================================================================
# Powers, roots, exponentials, logarithms
# =============================================================================
_holomorphic(anp.sqrt, lambda g, ans, x: g * 0.5 / ans, save=("ans",), recomputable=True)
_holomorphic(anp.cbrt, lambda g, ans, x: g / (3.0 * ans * ans), save=("ans",))
_holomorphic(anp.square, lambda g, ans, x: g * (2.0 * x), save=(0,), recomputable=True)


def _reciprocal_rule(g, ans, x):
    if _dtype(ans).kind in "biu":  # (an integer array differentiated as float64 values)
        raise TypeError(
            "gradcy.numpy.reciprocal: argument 0 is an integer array that is differentiated; "
            "NumPy's reciprocal of integers rounds 1 / x toward zero (0 where |x| > 1), "
            "which has no derivative. Cast it first: np.reciprocal(x.astype(float)), or "
            "write 1.0 / x"
        )
    return -g * ans * ans


_holomorphic(anp.reciprocal, _reciprocal_rule, save=("ans",), recomputable=True)
_holomorphic(anp.exp, lambda g, ans, x: g * ans, save=("ans",), fast="times_ans", recomputable=True)
_holomorphic(anp.exp2, lambda g, ans, x: g * ans * _LN2, save=("ans",))
_holomorphic(anp.expm1, lambda g, ans, x: g * (ans + 1.0), save=("ans",))
_holomorphic(anp.log, lambda g, ans, x: g / x, save=(0,), recomputable=True)
_holomorphic(anp.log2, lambda g, ans, x: g / (x * _LN2), save=(0,))
_holomorphic(anp.log10, lambda g, ans, x: g / (x * _LN10), save=(0,))
_holomorphic(anp.log1p, lambda g, ans, x: g / (x + 1.0), save=(0,))
defvjp_direct(
    anp.logaddexp,
    lambda g, ans, x, y: unbroadcast(g * anp.exp(x - ans), x),
    lambda g, ans, x, y: unbroadcast(g * anp.exp(y - ans), y),
    save=("ans", 0, 1),
)
defvjp_direct(
    anp.logaddexp2,
    lambda g, ans, x, y: unbroadcast(g * anp.exp2(x - ans), x),
    lambda g, ans, x, y: unbroadcast(g * anp.exp2(y - ans), y),
    save=("ans", 0, 1),
)
defvjp_direct(anp.ldexp, lambda g, ans, x, i: unbroadcast(anp.ldexp(g, i), x), None, save=(1,))
defjvp(
    anp.logaddexp,
    lambda g, ans, x, y: g * anp.exp(x - ans),
    lambda g, ans, x, y: g * anp.exp(y - ans),
)
defjvp(
    anp.logaddexp2,
    lambda g, ans, x, y: g * anp.exp2(x - ans),
    lambda g, ans, x, y: g * anp.exp2(y - ans),
)
defjvp(anp.ldexp, lambda g, ans, x, i: anp.ldexp(g, i), None)

# =============================================================================
# Trigonometric and hyperbolic
# =============================================================================
_holomorphic(
    anp.sin,
    lambda g, ans, x: g * anp.cos(x),
    save=(0,),
    fast="times_d",
    ufunc=_onp.cos,
    recomputable=True,
)
_holomorphic(
    anp.cos,
    lambda g, ans, x: -g * anp.sin(x),
    save=(0,),
    fast="neg_times_d",
    ufunc=_onp.sin,
    recomputable=True,
)
_holomorphic(anp.tan, lambda g, ans, x: g * (1.0 + ans * ans), save=("ans",))
_holomorphic(anp.arcsin, lambda g, ans, x: g / anp.sqrt(1.0 - _sq(x)), save=(0,))
_holomorphic(anp.arccos, lambda g, ans, x: -g / anp.sqrt(1.0 - _sq(x)), save=(0,))
_holomorphic(anp.arctan, lambda g, ans, x: g / (1.0 + _sq(x)), save=(0,))
_holomorphic(
    anp.sinh, lambda g, ans, x: g * anp.cosh(x), save=(0,), fast="times_d", ufunc=_onp.cosh
)
_holomorphic(
    anp.cosh, lambda g, ans, x: g * anp.sinh(x), save=(0,), fast="times_d", ufunc=_onp.sinh
)
_holomorphic(
    anp.tanh, lambda g, ans, x: g * (1.0 - ans * ans), save=("ans",), fast="tanh", recomputable=True
)
_holomorphic(anp.arcsinh, lambda g, ans, x: g / anp.sqrt(_sq(x) + 1.0), save=(0,))
_holomorphic(anp.arccosh, lambda g, ans, x: g / anp.sqrt(_sq(x) - 1.0), save=(0,))
_holomorphic(anp.arctanh, lambda g, ans, x: g / (1.0 - _sq(x)), save=(0,))
defvjp_direct(
    anp.arctan2,
    lambda g, ans, x, y: unbroadcast(g * y / (_sq(x) + _sq(y)), x),
    lambda g, ans, x, y: unbroadcast(-g * x / (_sq(x) + _sq(y)), y),
    save=(0, 1),
)
defvjp_direct(
    anp.hypot,
    lambda g, ans, x, y: unbroadcast(g * x / ans, x),
    lambda g, ans, x, y: unbroadcast(g * y / ans, y),
    save=("ans", 0, 1),
)
defjvp(
    anp.arctan2,
    lambda g, ans, x, y: g * y / (_sq(x) + _sq(y)),
    lambda g, ans, x, y: -g * x / (_sq(x) + _sq(y)),
)
defjvp(anp.hypot, lambda g, ans, x, y: g * x / ans, lambda g, ans, x, y: g * y / ans)


def _sinc_jvp(g, ans, x):
    # d/dx sin(pi x) / (pi x) = (cos(pi x) - sinc(x)) / x, and 0 at x = 0
    xs = _replace_zero(x, 1.0)
    return g * anp.where(x, (anp.cos(_PI * xs) - anp.sinc(xs)) / xs, 0.0)


defvjp_direct(anp.sinc, _sinc_jvp, save=(0,))  # (real-valued: the VJP is the JVP)
defjvp(anp.sinc, _sinc_jvp)
_holomorphic(anp.deg2rad, lambda g, ans, x: g * _RAD, save=())
_holomorphic(anp.radians, lambda g, ans, x: g * _RAD, save=())
_holomorphic(anp.rad2deg, lambda g, ans, x: g * _DEG, save=())
_holomorphic(anp.degrees, lambda g, ans, x: g * _DEG, save=())

# =============================================================================
# Absolute value and complex parts
# =============================================================================


def _sign(x):
    """sign(x), of a boolean x too (NumPy has no boolean sign loop): abs' and fabs' slope. A
    boolean's is its plain value as float64 (a constant, as sign's derivative is zero: a
    traced cast would give the slope a derivative)."""
    return anp.sign(x) if _dtype(x) != _onp.bool_ else anp.astype(_plain(x), _onp.float64)


def _absolute_vjp(g, ans, x):
    if _is_complex(x):
        return g * anp.conjugate(x) / _replace_zero(anp.absolute(x), 1.0)
    return g * _sign(x)


defvjp_direct(anp.absolute, _absolute_vjp, save=(0,), recomputable=True)


def _absolute_jvp(g, ans, x):
    if _is_complex(x):  # d|x| = Re(conj(x) dx) / |x|, real-linear in dx
        return anp.real(anp.conjugate(x) * g) / _replace_zero(ans, 1.0)
    return g * _sign(x)


defjvp(anp.absolute, _absolute_jvp)
defvjp_direct(anp.fabs, lambda g, ans, x: g * _sign(x), save=(0,))
defjvp(anp.fabs, lambda g, ans, x: g * _sign(x))
defvjp_direct(anp.conjugate, lambda g, ans, x: anp.conjugate(g) if _is_complex(x) else g, save=())
defvjp_direct(anp.real, lambda g, ans, x: g + 0j if _is_complex(x) else g, save=())
defvjp_direct(anp.imag, lambda g, ans, x: g * -1j if _is_complex(x) else None, save=())
defjvp(anp.conjugate, lambda g, ans, x: anp.conjugate(g) if _is_complex(x) else g)
defjvp(anp.real, lambda g, ans, x: anp.real(g) if _is_complex(x) else g)
defjvp(anp.imag, lambda g, ans, x: anp.imag(g) if _is_complex(x) else None)


def _angle_vjp(g, ans, x, deg=False):
    if not _is_complex(x):
        return None  # angle of a real number is piecewise constant
    xc = anp.conjugate(x)
    return (g * (_DEG if deg else 1.0)) * (xc * -1j) / anp.real(x * xc)


defvjp_direct(anp.angle, _angle_vjp, save=(0,))


def _angle_jvp(g, ans, x, deg=False):
    if not _is_complex(x):
        return None
    # d angle = Im(conj(x) dx) / |x|^2
    xc = anp.conjugate(x)
    t = anp.imag(xc * g) / anp.real(x * xc)
    return t * _DEG if deg else t


defjvp(anp.angle, _angle_jvp)

# =============================================================================
# Extrema, clipping, selection
# =============================================================================


def _extremum_vjp(g, ans, x, y):
    """g where x attains the extremum ans (halved where x and y tie): autograd's balanced_eq."""
    if type(ans) is Positions:  # the record keeps bit masks only (_extremum_save)
        return _positions_vjp(g, ans, x, 0)
    mask = balanced_eq(x, ans, y)  # comparisons are not traced: a plain array
    # (the cotangent's dtype: float64 for an integer ans, whose mask would drop a tie's 0.5)
    return unbroadcast(g * mask.astype(shape_dtype(ans)[1], copy=False), x)


def _extremum_vjp_y(g, ans, x, y):
    if type(ans) is Positions:
        return _positions_vjp(g, ans, y, 1)
    return _extremum_vjp(g, ans, y, x)


def _positions_vjp(g, packed, target, k):
    """The rule of argument k (0: x, 1: y) from the masks (x == ans, y == ans, x == y)."""
    masks = extremum_masks(packed)
    weight = masks[k] / (1.0 + masks[2])
    return unbroadcast(g * weight.astype(_dtype(g), copy=False), target)


def _extremum_jvp(g, ans, x, y):
    return g * balanced_eq(x, ans, y).astype(shape_dtype(ans)[1], copy=False)


def _extremum_jvp_y(g, ans, x, y):
    return g * balanced_eq(y, ans, x).astype(shape_dtype(ans)[1], copy=False)


def _extremum_save(argnums, ans, args, kwargs):
    """The saver of maximum, minimum, fmax, fmin: three bit masks of the output's shape
    (x == out, y == out, x == y) as a Positions record in place of x, y and the output:
    ``maximum(x, 0.0)`` keeps 3 bits per element instead of two float64 arrays."""
    if kwargs or len(args) != 2 or type(ans) is not _onp.ndarray or ans.dtype.kind not in "fc":
        return ans, args
    x, y = args
    for v in (x, y):
        if not (type(v) is _onp.ndarray or type(v) in (float, int) or isinstance(v, _onp.generic)):
            return ans, args  # a traced outer value (nested), a list: everything
    shape = ans.shape
    masks = _onp.empty((3,) + shape, dtype=bool)
    _onp.equal(x, ans, out=masks[0, ...])
    _onp.equal(y, ans, out=masks[1, ...])
    _onp.equal(x, y, out=masks[2, ...])
    packed = _onp.packbits(masks, axis=None).view(Positions)
    packed.out_shape = shape
    return packed, (meta_of(x), meta_of(y))


for _prim in (anp.maximum, anp.minimum, anp.fmax, anp.fmin):
    defvjp_direct(_prim, _extremum_vjp, _extremum_vjp_y, save=_extremum_save)
    defjvp(_prim, _extremum_jvp, _extremum_jvp_y)


def _clip_bounds(args, kwargs):
    lo = args[0] if len(args) > 0 else kwargs.get("a_min", kwargs.get("min", None))
    hi = args[1] if len(args) > 1 else kwargs.get("a_max", kwargs.get("max", None))
    if lo is _onp._NoValue:
        lo = None
    if hi is _onp._NoValue:
        hi = None
    return lo, hi


def _clip_mask_x(x, lo, hi):
    """Where the output is x itself (None: everywhere). Comparisons are not traced: a plain
    bool array."""
    if lo is None and hi is None:
        return None
    if lo is None:
        return x < hi
    if hi is None:
        return x > lo
    return (x > lo) & (x < hi)


def _clip_mask_lo(x, lo, hi):
    return x < lo if hi is None else (x < lo) & (lo <= hi)


def _clip_mask_hi(x, lo, hi):
    return x > hi if lo is None else (x > hi) | (lo > hi)


def _clip_vjp_x(g, ans, x, *args, **kwargs):
    mask = _clip_mask_x(x, *_clip_bounds(args, kwargs))
    return unbroadcast(g if mask is None else g * mask, x)


def _clip_vjp_lo(g, ans, x, *args, **kwargs):
    lo, hi = _clip_bounds(args, kwargs)
    return unbroadcast(g * _clip_mask_lo(x, lo, hi), lo)


def _clip_vjp_hi(g, ans, x, *args, **kwargs):
    lo, hi = _clip_bounds(args, kwargs)
    return unbroadcast(g * _clip_mask_hi(x, lo, hi), hi)


def _clip_jvp_x(g, ans, x, *args, **kwargs):
    mask = _clip_mask_x(x, *_clip_bounds(args, kwargs))
    return g if mask is None else _times_mask(g, mask, ans)


defvjp_direct(anp.clip, _clip_vjp_x, _clip_vjp_lo, _clip_vjp_hi, save=(0, 1, 2))
defjvp(
    anp.clip,
    _clip_jvp_x,
    lambda g, ans, x, *args, **kwargs: _times_mask(
        g, _clip_mask_lo(x, *_clip_bounds(args, kwargs)), ans
    ),
    lambda g, ans, x, *args, **kwargs: _times_mask(
        g, _clip_mask_hi(x, *_clip_bounds(args, kwargs)), ans
    ),
)

defvjp_direct(
    anp.where,
    None,
    lambda g, ans, c, x, y: unbroadcast(anp.where(c, g, 0.0), x),
    lambda g, ans, c, x, y: unbroadcast(anp.where(c, 0.0, g), y),
    save=(0,),
)
defvjp_direct(
    anp.nan_to_num, lambda g, ans, x, *a, **k: anp.where(anp.isfinite(x), g, 0.0), save=(0,)
)
defjvp(
    anp.where,
    None,
    lambda g, ans, c, x, y: _select(c, g, ans),
    lambda g, ans, c, x, y: _select(anp.logical_not(c), g, ans),
)
defjvp(anp.nan_to_num, lambda g, ans, x, *a, **k: _select(anp.isfinite(x), g, ans))


def _copysign_vjp(g, ans, x, y):
    flip = anp.signbit(x) != anp.signbit(y)  # not traced: a plain bool array
    return unbroadcast(anp.where(flip, -g, g), x)


defvjp_direct(anp.copysign, _copysign_vjp, None, save=(0, 1))
defjvp(
    anp.copysign,
    lambda g, ans, x, y: _select(anp.signbit(x) != anp.signbit(y), g, ans, negate=True),
    None,
)
defvjp_direct(
    anp.heaviside, None, lambda g, ans, x, h0: unbroadcast(anp.where(x == 0, g, 0.0), h0), save=(0,)
)
defjvp(anp.heaviside, None, lambda g, ans, x, h0: _select(x == 0, g, ans))


# =============================================================================
# Tuple-valued ufuncs: modf, frexp, divmod
# =============================================================================
def _modf_vjp(g, ans, x, **kwargs):
    return None if g[0] is None else cast_like(unbroadcast(g[0], x), _dtype(x))


defvjp_direct(anp.modf, _modf_vjp, save=())
defjvp(anp.modf, lambda g, ans, x, **kw: (g, _zeros_of(ans[1])))


def _frexp_vjp(g, ans, x, **kwargs):
    return None if g[0] is None else cast_like(anp.ldexp(g[0], -ans[1]), _dtype(x))


defvjp_direct(anp.frexp, _frexp_vjp, save=("ans",))
defjvp(anp.frexp, lambda g, ans, x, **kw: (anp.ldexp(g, -ans[1]), _zeros_of(ans[1])))


def _divmod_vjp_x(g, ans, x, y, **kwargs):
    return None if g[1] is None else unbroadcast(g[1], x)


def _divmod_vjp_y(g, ans, x, y, **kwargs):
    return None if g[1] is None else unbroadcast(-g[1] * anp.floor_divide(x, y), y)


defvjp_direct(anp.divmod, _divmod_vjp_x, _divmod_vjp_y, save=(0, 1))
defjvp(
    anp.divmod,
    lambda g, ans, x, y, **kw: (_zeros_of(ans[0]), g),
    lambda g, ans, x, y, **kw: (_zeros_of(ans[0]), -g * anp.floor_divide(x, y)),
)


# i0' = i1 (scipy.special.i1; numpy has no i1)
def _i1(x):
    try:
        from ..scipy import special
    except ImportError as e:  # pragma: no cover - scipy is optional
        raise NotImplementedError(
            "gradcy.numpy.i0: the derivative needs scipy (scipy.special.i1)"
        ) from e
    return special.i1(x)


defvjp_direct(anp.i0, lambda g, ans, x: cast_like(g * _i1(x), _dtype(x)), save=(0,))
defjvp(anp.i0, lambda g, ans, x: g * _i1(x))
