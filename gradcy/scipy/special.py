"""scipy.special as gradcy primitives (gradcy.scipy.special.<name>).

Differentiable (reverse and forward mode):
    beta betaln gamma gammaln rgamma multigammaln psi digamma polygamma erf erfc erfinv erfcinv
    expit logit logsumexp softmax log_softmax i0 i1 j0 j1 y0 y1, and with respect to their last
    argument only:
    betainc(a, b, x) gammainc(a, x) gammaincc(a, x) polygamma(n, x) iv(v, x) ive(v, x)
    jn(n, x) jv(v, x) yn(n, x).
    A cotangent reaching a parameter without a rule (betainc's a, b; gammainc's a) raises
    MissingVJPError, as in autograd; the orders n, v (and multigammaln's d) get a zero gradient.
gammasgn and round are piecewise constant: traced values pass through them unrecorded.
Every other public scipy.special function is a primitive without derivative rules: it runs
unchanged on plain values and raises MissingVJPError / MissingJVPError when a derivative has to
flow through it. scipy.special.sinc is numpy's sinc (gradcy.numpy.sinc).

Calling the scipy.special ufuncs themselves on traced values routes to these primitives.
Complex arguments follow autograd's convention: the VJP of a holomorphic f is g * f'(x).
"""

import math

import numpy as _onp

from . import _import_scipy

_sp = _import_scipy("scipy.special")

from .._core import register_numpy_override
from .._core import Primitive
from ..backends import is_array_value
from ..registry import defjvp, defvjp_direct, notrace_primitive, primitive
from ..numpy import _wrap as anp
from ..numpy._util import cast_like, shape_dtype, unbroadcast
from ..numpy.fusion import log_softmax_jvp, log_softmax_vjp, softmax_lin

_PREFIX = "gradcy.scipy.special"
_TWO_OVER_SQRT_PI = 2.0 / math.sqrt(math.pi)
_HALF_SQRT_PI = 0.5 * math.sqrt(math.pi)

# Names of scipy.special that are not functions of array values: re-exported unchanged.
_NOT_WRAPPED = {"errstate", "geterr", "seterr", "SpecialFunctionError", "SpecialFunctionWarning"}
_NONDIFFERENTIABLE = {"gammasgn", "round"}


def _wrap(name):
    fun = getattr(_sp, name)
    full = f"{_PREFIX}.{name}"
    p = notrace_primitive(fun, full) if name in _NONDIFFERENTIABLE else primitive(fun, full)
    anp.set_out_arg(p, fun)  # out= goes through gradcy.numpy's out hook
    if isinstance(fun, _onp.ufunc):
        register_numpy_override(fun, p)
    return p


# The primitives with rules (registered below), and the two piecewise constant ones (gammasgn,
# round). psi and digamma are the same scipy ufunc, as are jn and jv.
(
    beta,
    betainc,
    betaln,
    gamma,
    gammaln,
    gammainc,
    gammaincc,
    gammasgn,
    rgamma,
    multigammaln,
    psi,
    digamma,
    polygamma,
    erf,
    erfc,
    erfinv,
    erfcinv,
    expit,
    logit,
    logsumexp,
    i0,
    i1,
    iv,
    ive,
    j0,
    j1,
    jn,
    jv,
    y0,
    y1,
    yn,
    round,
) = map(
    _wrap,
    """beta betainc betaln gamma gammaln gammainc gammaincc
    gammasgn rgamma multigammaln psi digamma polygamma erf erfc erfinv erfcinv expit logit
    logsumexp i0 i1 iv ive j0 j1 jn jv y0 y1 yn round""".split(),
)


def _softmax(x, axis=None):
    """scipy.special.softmax: exp(x - logsumexp(x, axis)), computed in one buffer for real
    floating arrays (same values as SciPy's); an array of another library (Dask, CuPy) through
    NumPy's dispatch, as an array of its library."""
    if is_array_value(x):
        e = _onp.exp(x - _onp.max(x, axis=axis, keepdims=True))
        return e / _onp.sum(e, axis=axis, keepdims=True)
    x = _onp.asarray(x)
    if x.dtype.kind != "f" or x.ndim == 0:
        return _sp.softmax(x, axis=axis)
    e = x - _onp.maximum.reduce(x, axis=axis, keepdims=True)  # x.max, without its wrapper
    _onp.exp(e, out=e)
    e /= _onp.add.reduce(e, axis=axis, keepdims=True)
    return e


def _log_softmax(x, axis=None):
    """scipy.special.log_softmax: x - logsumexp(x, axis), computed in one buffer for real
    floating arrays (same values as SciPy's); an array of another library through NumPy's
    dispatch."""
    if is_array_value(x):
        m = _onp.max(x, axis=axis, keepdims=True)
        out = x - _onp.where(_onp.isfinite(m), m, 0)
        return out - _onp.log(_onp.sum(_onp.exp(out), axis=axis, keepdims=True))
    x = _onp.asarray(x)
    if x.dtype.kind != "f" or x.ndim == 0:
        return _sp.log_softmax(x, axis=axis)
    m = x.max(axis=axis, keepdims=True)
    m[~_onp.isfinite(m)] = 0
    out = x - m
    s = _onp.exp(out).sum(axis=axis, keepdims=True)
    with _onp.errstate(divide="ignore"):
        _onp.log(s, out=s)
    out -= s
    return out


softmax = primitive(_softmax, f"{_PREFIX}.softmax")
log_softmax = primitive(_log_softmax, f"{_PREFIX}.log_softmax")

_WITH_RULES = frozenset(k for k, v in globals().items() if isinstance(v, Primitive))


def _wrap_rest():
    """Every other public scipy.special function as a primitive without rules."""
    g = globals()
    for name in dir(_sp):
        if name.startswith("_") or name in _WITH_RULES or name == "test":
            continue
        obj = getattr(_sp, name)
        if type(obj).__name__ == "module":
            continue
        if name in _NOT_WRAPPED or not callable(obj) or isinstance(obj, type):
            g[name] = obj
        elif obj is _onp.sinc:
            g[name] = anp.sinc
        else:
            g[name] = _wrap(name)


_wrap_rest()


def _like(t, ans):
    """A JVP's tangent t in the output's dtype: a float64 intermediate (a numpy float64 scalar
    from Python-float parameters, polygamma's float64 result) must not widen a float32 tangent."""
    dt = getattr(ans, "dtype", None)
    if dt is None or getattr(t, "dtype", dt) == dt:
        return t
    return cast_like(t, dt)


def _unary(prim, deriv, save):
    """Rules of an elementwise f with f'(x) = deriv(ans, x). SciPy computes float16 inputs in
    float32 or float64, and a derivative may come out wider than x (polygamma, yn: float64 for
    float32), so the cotangent is cast back to x's dtype and the tangent to the output's (free
    when they already are)."""
    defvjp_direct(prim, lambda g, ans, x: unbroadcast(g * deriv(ans, x), x), save=save)
    defjvp(prim, lambda g, ans, x: _like(g * deriv(ans, x), ans))


def _last_arg(prim, deriv, save):
    """Rules of f(p, x) differentiable in x only: f_x = deriv(ans, p, x); p gets none."""
    defvjp_direct(prim, None, lambda g, ans, p, x: unbroadcast(g * deriv(ans, p, x), x), save=save)
    defjvp(prim, None, lambda g, ans, p, x: g * deriv(ans, p, x))


# =============================================================================
# Gamma and beta functions
# =============================================================================
_unary(gamma, lambda ans, x: ans * psi(x), save=("ans", 0))
_unary(gammaln, lambda ans, x: psi(x), save=(0,))
_unary(rgamma, lambda ans, x: -psi(x) * ans, save=("ans", 0))
for _p in (psi, digamma):
    _unary(_p, lambda ans, x: polygamma(1, x), save=(0,))
_last_arg(polygamma, lambda ans, n, x: polygamma(n + 1, x), save=(0, 1))


def _multigammaln_d(a, d):
    """d/da log Gamma_d(a) = sum_j digamma(a - j/2), j < d (in a's float dtype)."""
    half = (_onp.arange(d) * 0.5).astype(_onp.result_type(shape_dtype(a)[1], _onp.float16))
    return anp.sum(digamma(anp.expand_dims(a, -1) - half), axis=-1)


defvjp_direct(
    multigammaln, lambda g, ans, a, d: unbroadcast(g * _multigammaln_d(a, d), a), None, save=(0,)
)
defjvp(multigammaln, lambda g, ans, a, d: g * _multigammaln_d(a, d), None)


def _beta_da(ans, a, b):
    return ans * (psi(a) - psi(a + b))


def _betaln_da(a, b):
    return psi(a) - psi(a + b)


defvjp_direct(
    beta,
    lambda g, ans, a, b: unbroadcast(g * _beta_da(ans, a, b), a),
    lambda g, ans, a, b: unbroadcast(g * _beta_da(ans, b, a), b),
    save=("ans", 0, 1),
)
defjvp(
    beta, lambda g, ans, a, b: g * _beta_da(ans, a, b), lambda g, ans, a, b: g * _beta_da(ans, b, a)
)
defvjp_direct(
    betaln,
    lambda g, ans, a, b: unbroadcast(g * _betaln_da(a, b), a),
    lambda g, ans, a, b: unbroadcast(g * _betaln_da(b, a), b),
    save=(0, 1),
)
defjvp(betaln, lambda g, ans, a, b: g * _betaln_da(a, b), lambda g, ans, a, b: g * _betaln_da(b, a))


def _betainc_dx(a, b, x):
    """The beta density: d/dx of the regularized incomplete beta function."""
    return x ** (a - 1.0) * (1.0 - x) ** (b - 1.0) / beta(a, b)


# a and b have no rule: a cotangent reaching them raises MissingVJPError (as in autograd)
defvjp_direct(
    betainc,
    lambda g, ans, a, b, x: unbroadcast(g * _betainc_dx(a, b, x), x),
    argnums=(2,),
    save=(0, 1, 2),
)
defjvp(betainc, lambda g, ans, a, b, x: _like(g * _betainc_dx(a, b, x), ans), argnums=(2,))


def _gammainc_dx(a, x):
    """The gamma density: d/dx of the regularized lower incomplete gamma function."""
    return anp.exp(-x) * x ** (a - 1.0) / gamma(a)


defvjp_direct(
    gammainc, lambda g, ans, a, x: unbroadcast(g * _gammainc_dx(a, x), x), argnums=(1,), save=(0, 1)
)
defjvp(gammainc, lambda g, ans, a, x: _like(g * _gammainc_dx(a, x), ans), argnums=(1,))
defvjp_direct(
    gammaincc,
    lambda g, ans, a, x: unbroadcast(-g * _gammainc_dx(a, x), x),
    argnums=(1,),
    save=(0, 1),
)
defjvp(gammaincc, lambda g, ans, a, x: _like(-g * _gammainc_dx(a, x), ans), argnums=(1,))

# =============================================================================
# Error functions, logistic
# =============================================================================
_unary(erf, lambda ans, x: _TWO_OVER_SQRT_PI * anp.exp(-x * x), save=(0,))
_unary(erfc, lambda ans, x: -_TWO_OVER_SQRT_PI * anp.exp(-x * x), save=(0,))
_unary(erfinv, lambda ans, x: _HALF_SQRT_PI * anp.exp(ans * ans), save=("ans",))
_unary(erfcinv, lambda ans, x: -_HALF_SQRT_PI * anp.exp(ans * ans), save=("ans",))
_unary(expit, lambda ans, x: ans * (1.0 - ans), save=("ans",))
_unary(logit, lambda ans, x: 1.0 / (x * (1.0 - x)), save=(0,))

# =============================================================================
# logsumexp(a, axis=None, b=None, keepdims=False, return_sign=False)
# =============================================================================


def _lse_keep(v, a, b, axis, keepdims):
    """A reduction's output (or cotangent) v reshaped to broadcast against the reduced input."""
    if axis is None or keepdims:
        return v  # a scalar, or already with the reduced axes kept
    shape = _onp.shape(a) if b is None else _onp.broadcast_shapes(_onp.shape(a), _onp.shape(b))
    nd = len(shape)
    axes = (axis,) if isinstance(axis, int) else tuple(axis)
    axes = {ax % nd for ax in axes}
    return anp.reshape(v, tuple(1 if i in axes else n for i, n in enumerate(shape)))


def _lse_weights(ans, a, b, axis, keepdims, return_sign):
    """exp(a - logsumexp): d logsumexp / d b (times b: d logsumexp / d a)."""
    if return_sign:
        raise NotImplementedError(
            f"{_PREFIX}.logsumexp: derivatives with return_sign=True are not implemented"
        )
    return anp.exp(a - _lse_keep(ans, a, b, axis, keepdims))


def _lse_vjp_a(g, ans, a, axis=None, b=None, keepdims=False, return_sign=False):
    w = _lse_weights(ans, a, b, axis, keepdims, return_sign)
    if b is not None:
        w = w * b
    return unbroadcast(_lse_keep(g, a, b, axis, keepdims) * w, a)


def _lse_vjp_b(g, ans, a, axis=None, b=None, keepdims=False, return_sign=False):
    w = _lse_weights(ans, a, b, axis, keepdims, return_sign)
    return unbroadcast(_lse_keep(g, a, b, axis, keepdims) * w, b)


def _lse_jvp_a(g, ans, a, axis=None, b=None, keepdims=False, return_sign=False):
    w = _lse_weights(ans, a, b, axis, keepdims, return_sign)
    if b is not None:
        w = w * b
    return anp.sum(g * w, axis=axis, keepdims=keepdims)


def _lse_jvp_b(g, ans, a, axis=None, b=None, keepdims=False, return_sign=False):
    w = _lse_weights(ans, a, b, axis, keepdims, return_sign)
    return anp.sum(g * w, axis=axis, keepdims=keepdims)


defvjp_direct(logsumexp, _lse_vjp_a, None, _lse_vjp_b, save=("ans", 0, 2))
defjvp(logsumexp, _lse_jvp_a, None, _lse_jvp_b)

# =============================================================================
# softmax(x, axis=None), log_softmax(x, axis=None): both save only their output.
# The softmax Jacobian diag(y) - y y^T is symmetric: the VJP and the JVP are one formula.
# The rules are gradcy.numpy.fusion's (the fused idioms' records use them too).
# =============================================================================
defvjp_direct(softmax, softmax_lin, save=("ans",))
defjvp(softmax, softmax_lin)
defvjp_direct(log_softmax, log_softmax_vjp, save=("ans",))
defjvp(log_softmax, log_softmax_jvp)

# =============================================================================
# Bessel functions
# =============================================================================
_unary(i0, lambda ans, x: i1(x), save=(0,))
_unary(i1, lambda ans, x: (i0(x) + iv(2, x)) * 0.5, save=(0,))
_last_arg(iv, lambda ans, v, x: (iv(v - 1, x) + iv(v + 1, x)) * 0.5, save=(0, 1))
# ive(v, x) = iv(v, x) exp(-|x|)
_last_arg(
    ive,
    lambda ans, v, x: (ive(v - 1, x) + ive(v + 1, x)) * 0.5 - anp.sign(x) * ans,
    save=("ans", 0, 1),
)
_unary(j0, lambda ans, x: -j1(x), save=(0,))
_unary(j1, lambda ans, x: (j0(x) - jn(2, x)) * 0.5, save=(0,))
_last_arg(jn, lambda ans, n, x: (jn(n - 1, x) - jn(n + 1, x)) * 0.5, save=(0, 1))
_last_arg(jv, lambda ans, v, x: (jv(v - 1, x) - jv(v + 1, x)) * 0.5, save=(0, 1))
_unary(y0, lambda ans, x: -y1(x), save=(0,))
# yn(2, x) is float64 for a float32 x
_unary(y1, lambda ans, x: (y0(x) - yn(2, x)) * 0.5, save=(0,))
_last_arg(yn, lambda ans, n, x: (yn(n - 1, x) - yn(n + 1, x)) * 0.5, save=(0, 1))

del _p


def __getattr__(name):
    # autograd's rule names for this module (grad_*, ...), added on first lookup
    from gradcy._autograd_rules import autograd_name

    return autograd_name(__name__, name)
