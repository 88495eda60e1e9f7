"""The gamma distribution: pdf cdf logpdf (x, a).

Values come from scipy.stats.gamma. pdf and logpdf are differentiable in x and a; cdf in x only
(a derivative reaching a raises, as in autograd).
"""
from .. import _import_scipy

_gamma = _import_scipy("scipy.stats").gamma

from ...registry import defjvp, defvjp_direct, primitive
from ...numpy import _wrap as anp
from ...numpy._util import unbroadcast
from ..special import psi

_P = "gradcy.scipy.stats.gamma"


def pdf(x, a):
    """scipy.stats.gamma.pdf(x, a)"""
    return _gamma.pdf(x, a)


def cdf(x, a):
    """scipy.stats.gamma.cdf(x, a)"""
    return _gamma.cdf(x, a)


def logpdf(x, a):
    """scipy.stats.gamma.logpdf(x, a)"""
    return _gamma.logpdf(x, a)


pdf = primitive(pdf, _P + ".pdf")
cdf = primitive(cdf, _P + ".cdf")
logpdf = primitive(logpdf, _P + ".logpdf")


# log p = (a - 1) log x - x - log Gamma(a)
def _dx(x, a):
    return (a - 1.0) / x - 1.0


def _da(x, a):
    return anp.log(x) - psi(a)


def _density_rules(prim, factor, save):
    defvjp_direct(prim,
                  lambda g, ans, x, a: unbroadcast(factor(g, ans) * _dx(x, a), x),
                  lambda g, ans, x, a: unbroadcast(factor(g, ans) * _da(x, a), a),
                  save=save)
    defjvp(prim,
           lambda g, ans, x, a: factor(g, ans) * _dx(x, a),
           lambda g, ans, x, a: factor(g, ans) * _da(x, a))


_density_rules(logpdf, lambda g, ans: g, save=(0, 1))
_density_rules(pdf, lambda g, ans: g * ans, save=("ans", 0, 1))

defvjp_direct(cdf, lambda g, ans, x, a: unbroadcast(g * pdf(x, a), x), save=(0, 1))
defjvp(cdf, lambda g, ans, x, a: g * pdf(x, a))
