"""The Poisson distribution: pmf cdf logpmf (k, mu), differentiable in mu.

Values come from scipy.stats.poisson. k is discrete: a derivative reaching it raises, as in
autograd.
"""
from .. import _import_scipy

_poisson = _import_scipy("scipy.stats").poisson

from ...registry import defjvp, defvjp_direct, primitive
from ...numpy import _wrap as anp
from ...numpy._util import unbroadcast

_P = "gradcy.scipy.stats.poisson"


def pmf(k, mu):
    """scipy.stats.poisson.pmf(k, mu)"""
    return _poisson.pmf(k, mu)


def cdf(k, mu):
    """scipy.stats.poisson.cdf(k, mu)"""
    return _poisson.cdf(k, mu)


def logpmf(k, mu):
    """scipy.stats.poisson.logpmf(k, mu)"""
    return _poisson.logpmf(k, mu)


pmf = primitive(pmf, _P + ".pmf")
cdf = primitive(cdf, _P + ".cdf")
logpmf = primitive(logpmf, _P + ".logpmf")


# log p = k log mu - mu - log k!  on the support (integers k >= 0), -inf elsewhere
def _dmu(k, mu):
    support = (k % 1 == 0) & (k >= 0)       # comparisons are not traced: a plain mask
    return anp.where(support, k / mu - 1.0, 0.0)


defvjp_direct(logpmf, lambda g, ans, k, mu: unbroadcast(g * _dmu(k, mu), mu),
              argnums=(1,), save=(0, 1))
defjvp(logpmf, lambda g, ans, k, mu: g * _dmu(k, mu), argnums=(1,))
defvjp_direct(pmf, lambda g, ans, k, mu: unbroadcast(g * ans * _dmu(k, mu), mu),
              argnums=(1,), save=("ans", 0, 1))
defjvp(pmf, lambda g, ans, k, mu: g * ans * _dmu(k, mu), argnums=(1,))
# d/dmu P(K <= k) = -pmf(floor(k), mu)
defvjp_direct(cdf, lambda g, ans, k, mu: unbroadcast(-g * pmf(anp.floor(k), mu), mu),
              argnums=(1,), save=(0, 1))
defjvp(cdf, lambda g, ans, k, mu: -g * pmf(anp.floor(k), mu), argnums=(1,))
