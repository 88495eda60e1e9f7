"""The beta distribution: pdf cdf logpdf (x, a, b).

Values come from scipy.stats.beta. pdf and logpdf are differentiable in x, a and b; cdf in x only
(a derivative reaching a or b raises, as in autograd).
"""
from .. import _import_scipy

_beta = _import_scipy("scipy.stats").beta

from ...registry import defjvp, defvjp_direct, primitive
from ...numpy import _wrap as anp
from ...numpy._util import unbroadcast
from ..special import psi

_P = "gradcy.scipy.stats.beta"


def pdf(x, a, b):
    """scipy.stats.beta.pdf(x, a, b)"""
    return _beta.pdf(x, a, b)


def cdf(x, a, b):
    """scipy.stats.beta.cdf(x, a, b)"""
    return _beta.cdf(x, a, b)


def logpdf(x, a, b):
    """scipy.stats.beta.logpdf(x, a, b)"""
    return _beta.logpdf(x, a, b)


pdf = primitive(pdf, _P + ".pdf")
cdf = primitive(cdf, _P + ".cdf")
logpdf = primitive(logpdf, _P + ".logpdf")


# log p = (a - 1) log x + (b - 1) log(1 - x) - log B(a, b)
def _dx(x, a, b):
    return (a - 1.0) / x - (b - 1.0) / (1.0 - x)


def _da(x, a, b):
    return anp.log(x) - psi(a) + psi(a + b)


def _db(x, a, b):
    return anp.log1p(-x) - psi(b) + psi(a + b)


def _density_rules(prim, factor, save):
    defvjp_direct(prim,
                  lambda g, ans, x, a, b: unbroadcast(factor(g, ans) * _dx(x, a, b), x),
                  lambda g, ans, x, a, b: unbroadcast(factor(g, ans) * _da(x, a, b), a),
                  lambda g, ans, x, a, b: unbroadcast(factor(g, ans) * _db(x, a, b), b),
                  save=save)
    defjvp(prim,
           lambda g, ans, x, a, b: factor(g, ans) * _dx(x, a, b),
           lambda g, ans, x, a, b: factor(g, ans) * _da(x, a, b),
           lambda g, ans, x, a, b: factor(g, ans) * _db(x, a, b))


_density_rules(logpdf, lambda g, ans: g, save=(0, 1, 2))
_density_rules(pdf, lambda g, ans: g * ans, save=("ans", 0, 1, 2))

defvjp_direct(cdf, lambda g, ans, x, a, b: unbroadcast(g * pdf(x, a, b), x), save=(0, 1, 2))
defjvp(cdf, lambda g, ans, x, a, b: g * pdf(x, a, b))
