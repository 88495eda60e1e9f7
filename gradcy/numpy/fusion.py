"""Record-time fusion (the engine's gradcy/_fuse.pyx): the softmax a user writes out,

    e = np.exp(z)                                   # z often x - np.max(x, axis, keepdims=True)
    w = e / np.sum(e, axis=axis, keepdims=True)

is recorded as one node, `softmax`, whose VJP reads only w: w * (g - sum(g * w, axis)). The
exp and sum nodes are left without consumers, so exp's output is released during the forward
pass rather than held for the backward pass, and the backward pass makes four array operations
instead of about fifteen. The values the user's program computes are NumPy's own; only the
record changes. gradcy._core.set_fusion(False) turns it off (tests compare the two).

softmax_lin is the one softmax derivative formula (gradcy.scipy.special.softmax uses it too).
"""
import numpy as _onp

from .._core import register_softmax
from ..registry import defjvp, defvjp_direct, primitive
from . import _wrap as anp


def softmax_lin(t, ans, x, axis=None):
    """The softmax Jacobian (diag(w) - w w^T along axis, symmetric) applied to t: the VJP and
    the JVP of w = softmax(x, axis)."""
    if type(t) is _onp.ndarray and type(ans) is _onp.ndarray:     # plain: no dispatch
        return ans * (t - _onp.add.reduce(t * ans, axis=axis, keepdims=True))
    return ans * (t - anp.sum(t * ans, axis=axis, keepdims=True))


def _softmax(x, axis=None):
    """exp(x - max(x, axis)) / sum(...), what the fused record stands for."""
    e = _onp.exp(x - _onp.max(x, axis=axis, keepdims=True))
    return e / _onp.sum(e, axis=axis, keepdims=True)


softmax = primitive(_softmax, "gradcy.numpy.softmax (fused exp, sum, divide)")
defvjp_direct(softmax, softmax_lin, None, save=("ans",))
defjvp(softmax, softmax_lin, None)

register_softmax(anp.exp, anp.sum, anp.max, anp.subtract, anp.divide, softmax)
