"""Record-time rewrites of common idioms (the engine's gradcy/_fuse.pyx): an idiom a user writes
out with NumPy operations is recorded as one node, whose rule saves what a hand-written
gradient saves, instead of one node per operation (each saving its own operands). IDIOMS is
the table: for each idiom, the forms recognised, the fused primitive and what it saves.

    e = np.exp(x - np.max(x, axis=1, keepdims=True))
    w = e / np.sum(e, axis=1, keepdims=True)          # recorded as softmax(x, 1): saves w

The inner nodes are left without consumers: what they saved (exp's output, max's positions)
is released during the forward pass rather than held for the backward pass, and the backward
pass makes a few array operations instead of one per recorded operation. The values the
user's program computes are NumPy's own; only the record changes. An operand used elsewhere
keeps its node and its path; anything that is not exactly the form written (another axis, a
constant other than 1 or -2, keywords such as where= or dtype=, an operand written in place
before the last operation, complex or integer values, forward mode, a VJP rule of the user's
own on one of the operations) is recorded as written. gradcy._core.set_fusion(False) turns the
table off (the tests compare the two).

The fused primitives are also callable (fusion.softmax(x, axis), ...); their rules are the one
derivative formula of each function (gradcy.scipy.special's softmax and log_softmax use these).
"""

import numpy as _onp

from .._core import register_idioms
from ..registry import defjvp, defvjp_direct, primitive
from . import _wrap as anp
from .elementwise import _holomorphic


def _plain(t, ans):
    return type(t) is _onp.ndarray and type(ans) is _onp.ndarray


# =============================================================================
# softmax(x, axis): exp(x - max) / sum(exp(x - max)), saves its output
# =============================================================================
def softmax_lin(t, ans, x, axis=None):
    """The softmax Jacobian (diag(w) - w w^T along axis, symmetric) applied to t: the VJP and
    the JVP of w = softmax(x, axis)."""
    if _plain(t, ans):  # no dispatch
        return ans * (t - _onp.add.reduce(t * ans, axis=axis, keepdims=True))
    return ans * (t - anp.sum(t * ans, axis=axis, keepdims=True))


def _softmax(x, axis=None):
    """exp(x - max(x, axis)) / sum(...), what the fused record stands for."""
    e = _onp.exp(x - _onp.max(x, axis=axis, keepdims=True))
    return e / _onp.sum(e, axis=axis, keepdims=True)


softmax = primitive(_softmax, "gradcy.numpy.softmax (fused exp, sum, divide)")
defvjp_direct(softmax, softmax_lin, None, save=("ans",))
defjvp(softmax, softmax_lin, None)


# =============================================================================
# logsumexp(x, axis): log(sum(exp(x - m), axis, keepdims=True)) + m, m = max(x, axis,
# keepdims=True). A fused record passes e = exp(x - m) and s = sum(e) (the values the
# program computed) and saves them instead of x: the weights exp(x - ans) are e / s.
# =============================================================================
def _logsumexp(x, axis=None, e=None, s=None):
    """log(sum(exp(x), axis, keepdims=True)), with the max shift (e and s: see above)."""
    m = _onp.max(x, axis=axis, keepdims=True)
    return _onp.log(_onp.sum(_onp.exp(x - m), axis=axis, keepdims=True)) + m


def _lse_weights(ans, x, e, s):
    """exp(x - logsumexp(x)), the softmax of x: d logsumexp / dx."""
    if e is None:
        return anp.exp(x - ans)
    return e / s


def logsumexp_vjp(g, ans, x, axis=None, e=None, s=None):
    if e is not None and type(g) is _onp.ndarray:  # plain: (g / s) is the small one
        return e * (g / s)
    return g * _lse_weights(ans, x, e, s)


def logsumexp_jvp(t, ans, x, axis=None, e=None, s=None):
    return anp.sum(t * _lse_weights(ans, x, e, s), axis=axis, keepdims=True)


logsumexp = primitive(
    _logsumexp, "gradcy.numpy.logsumexp (fused max, subtract, exp, sum, log, add)"
)
defvjp_direct(logsumexp, logsumexp_vjp, None, None, None, save=("ans", 0, 2, 3))
defjvp(logsumexp, logsumexp_jvp, None, None, None)


# =============================================================================
# log_softmax(x, axis): x - logsumexp(x, axis), saves its output
# =============================================================================
def _log_softmax(x, axis=None):
    return x - _logsumexp(x, axis)


def log_softmax_vjp(g, ans, x, axis=None):
    if _plain(g, ans):
        return g - _onp.exp(ans) * _onp.add.reduce(g, axis=axis, keepdims=True)
    return g - anp.exp(ans) * anp.sum(g, axis=axis, keepdims=True)


def log_softmax_jvp(t, ans, x, axis=None):
    return t - anp.sum(t * anp.exp(ans), axis=axis, keepdims=True)


log_softmax = primitive(_log_softmax, "gradcy.numpy.log_softmax (fused exp, sum, log, subtract)")
defvjp_direct(log_softmax, log_softmax_vjp, None, save=("ans",))
defjvp(log_softmax, log_softmax_jvp, None)


# =============================================================================
# sigmoid(x) = 1 / (1 + exp(-x)), softplus(x) = log(1 + exp(x)), tanh(x) via exp: elementwise.
# sigmoid and tanh save their output (the derivative is a function of it); softplus saves
# exp(x), whose function sigmoid(x) = e / (1 + e) costs no transcendental call (from the
# output it would: -expm1(-ans), about as long as the forward pass)
# =============================================================================
def sigmoid_lin(t, ans, x):
    """t * sigmoid'(x) = t * ans * (1 - ans)."""
    if _plain(t, ans) and t.dtype == ans.dtype and t.shape == ans.shape:
        d = 1.0 - ans
        d *= ans
        d *= t
        return d
    return t * (ans * (1.0 - ans))


def softplus_lin(t, ans, x, e=None):
    """t * softplus'(x) = t * sigmoid(x), as t * e / (1 + e) from e = exp(x) (a fused
    record's, the value the program computed) or else t / (1 + exp(-x))."""
    if e is None:
        return t / (1.0 + anp.exp(-x))
    if _plain(t, e) and t.dtype == e.dtype and t.shape == e.shape:
        d = e + 1.0
        _onp.divide(e, d, out=d)
        d *= t
        return d
    return t * (e / (1.0 + e))


def _sigmoid(x):
    return 1.0 / (1.0 + _onp.exp(-x))


def _softplus(x, e=None):
    """log1p(exp(x)); e (a fused record's exp(x)): see softplus_lin."""
    return _onp.log1p(_onp.exp(x))


sigmoid = primitive(_sigmoid, "gradcy.numpy.sigmoid (fused negative, exp, add, divide)")
_holomorphic(sigmoid, sigmoid_lin, save=("ans",))
softplus = primitive(_softplus, "gradcy.numpy.softplus (fused exp, add, log)")
defvjp_direct(softplus, softplus_lin, None, save=(0, 1))
defjvp(softplus, softplus_lin, None)
tanh = primitive(_onp.tanh, "gradcy.numpy.tanh (fused exp, subtract, add, divide)")
_holomorphic(tanh, lambda g, ans, x: g * (1.0 - ans * ans), save=("ans",), fast="tanh")


# =============================================================================
# The table (the engine's matchers: gradcy/_fuse.pyx; tests: tests/test_fusion.py)
# =============================================================================
# name: (forms recognised, with a the axis; fused primitive, what its record saves)
IDIOMS = {
    "softmax": (
        (
            "e = exp(z); e / sum(e, a, keepdims=True)  (z = x - max(x, a, keepdims=True): "
            "parent x)",
            "e / sum(e)  (whole array)",
        ),
        softmax,
        "the output",
    ),
    "logsumexp": (
        (
            "m = max(x, a, keepdims=True); log(sum(exp(x - m), a, keepdims=True)) + m  "
            "(or m + log(...))",
        ),
        logsumexp,
        "exp(x - m) and its sum",
    ),
    "log_softmax": (
        (
            "x - lse  (lse: the logsumexp above)",
            "z - log(sum(exp(z), a, keepdims=True))  (z = x - max(...): parent x)",
        ),
        log_softmax,
        "the output",
    ),
    "sigmoid": (("1 / (1 + exp(-x))  (or exp(-x) + 1)",), sigmoid, "the output"),
    "softplus": (("log(1 + exp(x))  (or exp(x) + 1)", "log1p(exp(x))"), softplus, "exp(x)"),
    "tanh": (
        ("(exp(x) - exp(-x)) / (exp(x) + exp(-x))", "(1 - exp(-2 * x)) / (1 + exp(-2 * x))"),
        tanh,
        "the output",
    ),
}

register_idioms(
    {
        "exp": anp.exp,
        "sum": anp.sum,
        "max": anp.max,
        "subtract": anp.subtract,
        "divide": anp.divide,
        "add": anp.add,
        "log": anp.log,
        "log1p": anp.log1p,
        "negative": anp.negative,
        "multiply": anp.multiply,
        "softmax": softmax,
        "logsumexp": logsumexp,
        "log_softmax": log_softmax,
        "sigmoid": sigmoid,
        "softplus": softplus,
        "tanh": tanh,
    }
)
