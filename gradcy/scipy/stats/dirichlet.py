"""The Dirichlet distribution: pdf logpdf (x, alpha), differentiable in x and alpha.

Values come from scipy.stats.dirichlet: alpha has shape (K,); x holds the components along its
first axis, shape (K,) or (K, N) (N points), or K - 1 components with the last one implied
(1 - sum). The x-derivative is the derivative of the formula; note that SciPy rejects points off
the simplex, so only its component along the simplex is observable numerically.
"""

import numpy as _onp

from .. import _import_scipy
from ...registry import notrace_primitive
from ...numpy import _wrap as anp
from ...numpy._util import unbroadcast
from ..special import digamma
from ._dist import Rules, density_rules, scipy_functions

pdf, logpdf = scipy_functions(__name__, "pdf logpdf", "x, alpha")
# random draws are constants to differentiation
rvs = notrace_primitive(_import_scipy("scipy.stats").dirichlet.rvs, __name__ + ".rvs")


def _full(x, alpha):
    """(x with its implied last component appended, alpha shaped to broadcast against it,
    whether the component was implied)."""
    k = _onp.shape(alpha)[0]
    xshape = _onp.shape(x)
    implied = xshape[0] == k - 1
    if implied:
        x = anp.concatenate([x, 1.0 - anp.sum(x, axis=0, keepdims=True)], axis=0)
    return x, anp.reshape(alpha, (k,) + (1,) * (len(xshape) - 1)), implied


def _per_point(v, xf):
    """v (shaped like the output: one value per point, size-1 axes squeezed) shaped to
    broadcast against the components axis of xf."""
    return anp.reshape(v, (1,) + tuple(_onp.shape(xf)[1:]))


def _sum_points(v):
    """Sum over every axis but the first (the components)."""
    nd = len(_onp.shape(v))
    return anp.sum(v, axis=tuple(range(1, nd))) if nd > 1 else v


# log p = sum_k (alpha_k - 1) log x_k - sum_k log Gamma(alpha_k) + log Gamma(sum_k alpha_k)
def _vjp_x(w, ans, x, alpha):
    xf, a, implied = _full(x, alpha)
    gx = _per_point(w, xf) * (a - 1.0) / xf
    if implied:
        gx = gx[:-1] - gx[-1:]
    return unbroadcast(gx, x)


def _vjp_alpha(w, ans, x, alpha):
    xf, a, _ = _full(x, alpha)
    ga = _sum_points(_per_point(w, xf) * anp.log(xf))
    ga = ga + anp.sum(w) * (digamma(anp.sum(alpha)) - digamma(alpha))
    return unbroadcast(ga, alpha)


def _jvp_x(t, ans, x, alpha):
    xf, a, implied = _full(x, alpha)
    if implied:
        t = anp.concatenate([t, -anp.sum(t, axis=0, keepdims=True)], axis=0)
    return anp.reshape(anp.sum(t * (a - 1.0) / xf, axis=0), _onp.shape(ans))


def _jvp_alpha(t, ans, x, alpha):
    xf, a, _ = _full(x, alpha)
    out = anp.sum(anp.reshape(t, _onp.shape(a)) * anp.log(xf), axis=0)
    out = out + anp.sum(t * (digamma(anp.sum(alpha)) - digamma(alpha)))
    return anp.reshape(out, _onp.shape(ans))


density_rules(logpdf, pdf, Rules([_vjp_x, _vjp_alpha], [_jvp_x, _jvp_alpha]), save=(0, 1))


def __getattr__(name):
    # autograd's rule names for this module (grad_*, ...), added on first lookup
    from gradcy._autograd_rules import autograd_name

    return autograd_name(__name__, name)
