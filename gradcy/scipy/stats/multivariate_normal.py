"""The multivariate normal distribution: pdf logpdf (x, mean=None, cov=1), entropy(mean, cov).

Values come from scipy.stats.multivariate_normal, with its conventions: mean has d entries (None:
zeros); cov is a (d, d) matrix, a vector (its diagonal) or a scalar (times the identity); x holds
points along its last axis (for d = 1, a vector of points). Derivatives with respect to x, mean
and cov; the cov derivative is the symmetric one (SciPy reads one triangle of cov), reduced to the
form cov was given in (its trace for a scalar, its diagonal for a vector). allow_singular=True has
no derivatives.
"""

import numpy as _onp

from ...numpy import linalg as _la
from ...numpy import _wrap as anp
from ...numpy._util import unbroadcast
from ...registry import defjvp, defvjp_direct
from ._dist import Rules, density_rules, scipy_functions

pdf, logpdf = scipy_functions(__name__, "pdf logpdf", "x, mean=None, cov=1, allow_singular=False")
(entropy,) = scipy_functions(__name__, "entropy", "mean=None, cov=1")


def _dim(mean, cov):
    if mean is not None:
        return int(_onp.size(mean))
    return 1 if _onp.ndim(cov) < 2 else int(_onp.shape(cov)[0])


def _cov_matrix(c, d):
    """cov (or a tangent of it) in any of SciPy's forms, as a (d, d) matrix."""
    nd = _onp.ndim(c)
    if d == 1:
        return anp.reshape(c, (1, 1))
    if nd == 0:
        return c * _onp.eye(d)
    if nd == 1:
        return anp.diag(c)
    return c


def _cov_cotangent(G, cov, d):
    """A (d, d) cotangent reduced to the form cov was given in."""
    nd = _onp.ndim(cov)
    if d == 1:
        return unbroadcast(anp.reshape(G, _onp.shape(cov)), cov)
    if nd == 0:
        return unbroadcast(anp.trace(G), cov)
    if nd == 1:
        return unbroadcast(anp.diagonal(G), cov)
    return unbroadcast(G, cov)


def _check(allow_singular):
    if allow_singular:
        raise NotImplementedError(
            f"{__name__}: no derivative with respect to cov with "
            f"allow_singular=True (the density is not differentiable at "
            f"a singular covariance)"
        )


def _parts(x, mean, cov, allow_singular):
    """(d, the points as an (n, d) array minus the mean, precision matrix J, S = (x - mean) J).
    With allow_singular, J is the pseudo-inverse: the density lives on the range of cov, and
    its derivatives along that range are the usual ones with J = pinv(cov)."""
    d = _dim(mean, cov)
    r = anp.reshape(x, (-1, d))
    if mean is not None:
        r = r - anp.reshape(mean, (d,))
    J = (_la.pinv if allow_singular else _la.inv)(_cov_matrix(cov, d))
    return d, r, J, anp.matmul(r, J)


# log p(x) = -(x - m)' J (x - m) / 2 - log det(2 pi cov) / 2, J = inv(cov):
#   d/dx = -J (x - m), d/dm = J (x - m), d/dcov = (J (x - m)(x - m)' J - J) / 2
def _vjp_x(w, ans, x, mean=None, cov=1, allow_singular=False):
    d, r, J, s = _parts(x, mean, cov, allow_singular)
    return unbroadcast(anp.reshape(-anp.reshape(w, (-1, 1)) * s, _onp.shape(x)), x)


def _vjp_mean(w, ans, x, mean=None, cov=1, allow_singular=False):
    d, r, J, s = _parts(x, mean, cov, allow_singular)
    gm = anp.sum(anp.reshape(w, (-1, 1)) * s, axis=0)
    return unbroadcast(anp.reshape(gm, _onp.shape(mean)), mean)


def _vjp_cov(w, ans, x, mean=None, cov=1, allow_singular=False):
    _check(allow_singular)
    d, r, J, s = _parts(x, mean, cov, allow_singular)
    ws = anp.reshape(w, (-1, 1)) * s
    G = 0.5 * (anp.matmul(anp.transpose(s), ws) - anp.sum(w) * J)
    return _cov_cotangent(G, cov, d)


def _jvp_x(t, ans, x, mean=None, cov=1, allow_singular=False):
    d, r, J, s = _parts(x, mean, cov, allow_singular)
    return anp.reshape(-anp.sum(anp.reshape(t, (-1, d)) * s, axis=1), _onp.shape(ans))


def _jvp_mean(t, ans, x, mean=None, cov=1, allow_singular=False):
    d, r, J, s = _parts(x, mean, cov, allow_singular)
    return anp.reshape(anp.matmul(s, anp.reshape(t, (d,))), _onp.shape(ans))


def _jvp_cov(t, ans, x, mean=None, cov=1, allow_singular=False):
    _check(allow_singular)
    d, r, J, s = _parts(x, mean, cov, allow_singular)
    T = _cov_matrix(t, d)
    out = 0.5 * (anp.sum(anp.matmul(s, T) * s, axis=1) - anp.sum(J * T))
    return anp.reshape(out, _onp.shape(ans))


density_rules(
    logpdf, pdf, Rules([_vjp_x, _vjp_mean, _vjp_cov], [_jvp_x, _jvp_mean, _jvp_cov]), save=(0, 1, 2)
)


# entropy = log det(2 pi e cov) / 2: d/dcov = inv(cov) / 2; the mean does not enter
def _entropy_vjp_cov(g, ans, mean=None, cov=1):
    d = _dim(mean, cov)
    return _cov_cotangent(0.5 * g * anp.transpose(_la.inv(_cov_matrix(cov, d))), cov, d)


def _entropy_jvp_cov(t, ans, mean=None, cov=1):
    d = _dim(mean, cov)
    J = _la.inv(_cov_matrix(cov, d))
    return 0.5 * anp.sum(anp.transpose(J) * _cov_matrix(t, d))


defvjp_direct(entropy, None, _entropy_vjp_cov, save=(1,))
defjvp(entropy, None, _entropy_jvp_cov)


def __getattr__(name):
    # autograd's rule names for this module (grad_*, ...), added on first lookup
    from gradcy._autograd_rules import autograd_name

    return autograd_name(__name__, name)
