"""VJPs of elementwise functions: unary and binary ufuncs, maximum/minimum/clip/where.

Complex inputs follow autograd's convention: the VJP of a holomorphic f is g * f'(x) (no
conjugate); non-holomorphic functions (absolute, real, imag, angle, conjugate) use the matching
rules, e.g. absolute: g * conj(x) / |x|.

Constants in the rules are Python floats (weakly typed), so float32 cotangents stay float32.
"""
import math

import numpy as _onp  # noqa: F401

from ..extend import ArrayMeta, defvjp, defvjp_direct, primitive  # noqa: F401
from . import numpy_wrapper as anp
from .vjp_util import balanced_eq, cast_like, unbroadcast, expand_reduced, shape_dtype  # noqa: F401

_LN2 = math.log(2.0)
_LN10 = math.log(10.0)
_PI = math.pi
_DEG = 180.0 / math.pi
_RAD = math.pi / 180.0
_PYNUM = (int, float)


def _identity(g):
    return g


def _is_complex(x):
    """Whether a saved value (array, Box, ArrayMeta or scalar) is complex."""
    dt = getattr(x, "dtype", None)
    if dt is None:
        return type(x) is complex
    return dt.kind == "c"


def _dtype_of(x):
    dt = getattr(x, "dtype", None)
    return dt if dt is not None else shape_dtype(x)[1]


def _replace_zero(x, val):
    """x with its zeros replaced by val (autograd's guard for log/abs of 0)."""
    return anp.where(x, x, val)


# =============================================================================
# Arithmetic
# =============================================================================
defvjp_direct(anp.add,
       lambda g, ans, x, y: unbroadcast(g, x),
       lambda g, ans, x, y: unbroadcast(g, y), save=())
defvjp_direct(anp.subtract,
       lambda g, ans, x, y: unbroadcast(g, x),
       lambda g, ans, x, y: unbroadcast(-g, y), save=())
defvjp_direct(anp.multiply,
       lambda g, ans, x, y: unbroadcast(g * y, x),
       lambda g, ans, x, y: unbroadcast(x * g, y), save=(0, 1))
defvjp_direct(anp.divide,
       lambda g, ans, x, y: unbroadcast(g / y, x),
       lambda g, ans, x, y: unbroadcast(-g * x / (y * y), y), save=(0, 1))
defvjp_direct(anp.negative, lambda g, ans, x: -g, save=())
defvjp(anp.positive, lambda ans, x: _identity, save=())


def _power_dx(ans, x, y):
    if type(y) in _PYNUM:          # constant Python exponent: the common x ** 2, x ** 0.5
        if y == 0:
            return lambda g: g * 0.0
        if y == 1:
            return _identity
        if y == 2:
            return lambda g: g * (2.0 * x)
        return lambda g: g * (y * x ** (y - 1))
    # the where() keeps 0 ** -1 out of the y == 0 entries
    return lambda g: unbroadcast(g * y * x ** anp.where(y, y - 1, 1.0), x)


def _log_base(x):
    """log(x) with log(0) replaced by 0 (the exponent's gradient where the base is 0)."""
    if type(x) is float and x > 0.0:
        return math.log(x)
    return anp.log(_replace_zero(x, 1.0))


def _power_dy(ans, x, y):
    return lambda g: unbroadcast(g * _log_base(x) * anp.power(x, y), y)


defvjp(anp.power, _power_dx, _power_dy, save=(0, 1))


def _float_power_dx(ans, x, y):
    if type(y) in _PYNUM and y == 0:
        return lambda g: cast_like(g * 0.0, _dtype_of(x))
    return lambda g: unbroadcast(g * y * anp.float_power(x, anp.where(y, y - 1, 1.0)), x)


defvjp(anp.float_power, _float_power_dx,
       lambda ans, x, y: lambda g: unbroadcast(g * _log_base(x) * anp.float_power(x, y), y),
       save=(0, 1))

defvjp_direct(anp.fmod,
       lambda g, ans, x, y: unbroadcast(g, x),
       lambda g, ans, x, y: unbroadcast(-g * anp.trunc(x / y), y), save=(0, 1))
defvjp_direct(anp.remainder,
       lambda g, ans, x, y: unbroadcast(g, x),
       lambda g, ans, x, y: unbroadcast(-g * anp.floor_divide(x, y), y), save=(0, 1))

# =============================================================================
# Powers, roots, exponentials, logarithms
# =============================================================================
defvjp_direct(anp.sqrt, lambda g, ans, x: g * 0.5 / ans, save=("ans",))
defvjp_direct(anp.cbrt, lambda g, ans, x: g / (3.0 * ans * ans), save=("ans",))
defvjp_direct(anp.square, lambda g, ans, x: g * (2.0 * x), save=(0,))
defvjp_direct(anp.reciprocal, lambda g, ans, x: -g * ans * ans, save=("ans",))
defvjp_direct(anp.exp, lambda g, ans, x: g * ans, save=("ans",))
defvjp_direct(anp.exp2, lambda g, ans, x: g * ans * _LN2, save=("ans",))
defvjp_direct(anp.expm1, lambda g, ans, x: g * (ans + 1.0), save=("ans",))
defvjp_direct(anp.log, lambda g, ans, x: g / x, save=(0,))
defvjp_direct(anp.log2, lambda g, ans, x: g / (x * _LN2), save=(0,))
defvjp_direct(anp.log10, lambda g, ans, x: g / (x * _LN10), save=(0,))
defvjp_direct(anp.log1p, lambda g, ans, x: g / (x + 1.0), save=(0,))
defvjp_direct(anp.logaddexp,
       lambda g, ans, x, y: unbroadcast(g * anp.exp(x - ans), x),
       lambda g, ans, x, y: unbroadcast(g * anp.exp(y - ans), y), save=("ans", 0, 1))
defvjp_direct(anp.logaddexp2,
       lambda g, ans, x, y: unbroadcast(g * anp.exp2(x - ans), x),
       lambda g, ans, x, y: unbroadcast(g * anp.exp2(y - ans), y), save=("ans", 0, 1))
defvjp_direct(anp.ldexp,
       lambda g, ans, x, i: unbroadcast(anp.ldexp(g, i), x), None, save=(1,))

# =============================================================================
# Trigonometric and hyperbolic
# =============================================================================
defvjp_direct(anp.sin, lambda g, ans, x: g * anp.cos(x), save=(0,))
defvjp_direct(anp.cos, lambda g, ans, x: -g * anp.sin(x), save=(0,))
defvjp_direct(anp.tan, lambda g, ans, x: g * (1.0 + ans * ans), save=("ans",))
defvjp_direct(anp.arcsin, lambda g, ans, x: g / anp.sqrt(1.0 - x * x), save=(0,))
defvjp_direct(anp.arccos, lambda g, ans, x: -g / anp.sqrt(1.0 - x * x), save=(0,))
defvjp_direct(anp.arctan, lambda g, ans, x: g / (1.0 + x * x), save=(0,))
defvjp_direct(anp.sinh, lambda g, ans, x: g * anp.cosh(x), save=(0,))
defvjp_direct(anp.cosh, lambda g, ans, x: g * anp.sinh(x), save=(0,))
defvjp_direct(anp.tanh, lambda g, ans, x: g * (1.0 - ans * ans), save=("ans",))
defvjp_direct(anp.arcsinh, lambda g, ans, x: g / anp.sqrt(x * x + 1.0), save=(0,))
defvjp_direct(anp.arccosh, lambda g, ans, x: g / anp.sqrt(x * x - 1.0), save=(0,))
defvjp_direct(anp.arctanh, lambda g, ans, x: g / (1.0 - x * x), save=(0,))
defvjp_direct(anp.arctan2,
       lambda g, ans, x, y: unbroadcast(g * y / (x * x + y * y), x),
       lambda g, ans, x, y: unbroadcast(-g * x / (x * x + y * y), y), save=(0, 1))
defvjp_direct(anp.hypot,
       lambda g, ans, x, y: unbroadcast(g * x / ans, x),
       lambda g, ans, x, y: unbroadcast(g * y / ans, y), save=("ans", 0, 1))


def _sinc_vjp(ans, x):
    # d/dx sin(pi x) / (pi x) = (cos(pi x) - sinc(x)) / x, and 0 at x = 0
    def vjp(g):
        xs = _replace_zero(x, 1.0)
        return g * anp.where(x, (anp.cos(_PI * xs) - anp.sinc(xs)) / xs, 0.0)
    return vjp


defvjp(anp.sinc, _sinc_vjp, save=(0,))
defvjp_direct(anp.deg2rad, lambda g, ans, x: g * _RAD, save=())
defvjp_direct(anp.radians, lambda g, ans, x: g * _RAD, save=())
defvjp_direct(anp.rad2deg, lambda g, ans, x: g * _DEG, save=())
defvjp_direct(anp.degrees, lambda g, ans, x: g * _DEG, save=())

# =============================================================================
# Absolute value and complex parts
# =============================================================================


def _absolute_vjp(ans, x):
    if _is_complex(x):
        return lambda g: g * anp.conjugate(x) / _replace_zero(anp.absolute(x), 1.0)
    return lambda g: g * anp.sign(x)


defvjp(anp.absolute, _absolute_vjp, save=(0,))
defvjp_direct(anp.fabs, lambda g, ans, x: g * anp.sign(x), save=(0,))
defvjp(anp.conjugate,
       lambda ans, x: anp.conjugate if _is_complex(x) else _identity, save=())
defvjp(anp.real, lambda ans, x: (lambda g: g + 0j) if _is_complex(x) else _identity, save=())
defvjp(anp.imag,
       lambda ans, x: (lambda g: g * -1j) if _is_complex(x) else (lambda g: None), save=())


def _angle_vjp(ans, x, deg=False):
    if not _is_complex(x):
        return lambda g: None      # angle of a real number is piecewise constant
    scale = _DEG if deg else 1.0

    def vjp(g):
        xc = anp.conjugate(x)
        return (g * scale) * (xc * -1j) / anp.real(x * xc)
    return vjp


defvjp(anp.angle, _angle_vjp, save=(0,))

# =============================================================================
# Extrema, clipping, selection
# =============================================================================


def _extremum_vjp(ans, x, y):
    """g where x attains the extremum ans (halved where x and y tie): autograd's balanced_eq."""
    def vjp(g):
        mask = balanced_eq(x, ans, y)          # comparisons are not traced: a plain array
        return unbroadcast(g * mask.astype(_dtype_of(ans), copy=False), x)
    return vjp


def _extremum_vjp_y(ans, x, y):
    return _extremum_vjp(ans, y, x)


for _prim in (anp.maximum, anp.minimum, anp.fmax, anp.fmin):
    defvjp(_prim, _extremum_vjp, _extremum_vjp_y, save=("ans", 0, 1))


def _clip_bounds(args, kwargs):
    lo = args[0] if len(args) > 0 else kwargs.get("a_min", kwargs.get("min", None))
    hi = args[1] if len(args) > 1 else kwargs.get("a_max", kwargs.get("max", None))
    if lo is _onp._NoValue:
        lo = None
    if hi is _onp._NoValue:
        hi = None
    return lo, hi


def _clip_vjp_x(ans, x, *args, **kwargs):
    lo, hi = _clip_bounds(args, kwargs)
    if lo is None and hi is None:
        return lambda g: unbroadcast(g, x)
    if lo is None:
        mask = x < hi
    elif hi is None:
        mask = x > lo
    else:
        mask = (x > lo) & (x < hi)             # comparisons are not traced: a plain bool array
    return lambda g: unbroadcast(g * mask, x)


def _clip_vjp_lo(ans, x, *args, **kwargs):
    lo, hi = _clip_bounds(args, kwargs)
    mask = x < lo if hi is None else (x < lo) & (lo <= hi)
    return lambda g: unbroadcast(g * mask, lo)


def _clip_vjp_hi(ans, x, *args, **kwargs):
    lo, hi = _clip_bounds(args, kwargs)
    mask = x > hi if lo is None else (x > hi) | (lo > hi)
    return lambda g: unbroadcast(g * mask, hi)


defvjp(anp.clip, _clip_vjp_x, _clip_vjp_lo, _clip_vjp_hi, save=(0, 1, 2))

defvjp_direct(anp.where, None,
       lambda g, ans, c, x, y: unbroadcast(anp.where(c, g, 0.0), x),
       lambda g, ans, c, x, y: unbroadcast(anp.where(c, 0.0, g), y),
       save=(0,))
defvjp(anp.nan_to_num,
       lambda ans, x, *a, **k: lambda g: anp.where(anp.isfinite(x), g, 0.0), save=(0,))


def _copysign_vjp(ans, x, y):
    flip = anp.signbit(x) != anp.signbit(y)    # not traced: a plain bool array
    return lambda g: unbroadcast(anp.where(flip, -g, g), x)


defvjp(anp.copysign, _copysign_vjp, None, save=(0, 1))
defvjp_direct(anp.heaviside, None,
       lambda g, ans, x, h0: unbroadcast(anp.where(x == 0, g, 0.0), h0), save=(0,))
