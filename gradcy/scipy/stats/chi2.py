"""The chi-squared distribution: pdf cdf logpdf (x, df).

Values come from scipy.stats.chi2. pdf and logpdf are differentiable in x and df; cdf in x only
(a derivative reaching df raises). Unlike autograd, whose x-derivative of the density is zero
for non-integer df, the rules hold for every df > 0.
"""
import math

from .. import _import_scipy

_chi2 = _import_scipy("scipy.stats").chi2

from ...registry import defjvp, defvjp_direct, primitive
from ...numpy import _wrap as anp
from ...numpy._util import unbroadcast
from ..special import psi

_P = "gradcy.scipy.stats.chi2"
_HALF_LN2 = 0.5 * math.log(2.0)


def pdf(x, df):
    """scipy.stats.chi2.pdf(x, df)"""
    return _chi2.pdf(x, df)


def cdf(x, df):
    """scipy.stats.chi2.cdf(x, df)"""
    return _chi2.cdf(x, df)


def logpdf(x, df):
    """scipy.stats.chi2.logpdf(x, df)"""
    return _chi2.logpdf(x, df)


pdf = primitive(pdf, _P + ".pdf")
cdf = primitive(cdf, _P + ".cdf")
logpdf = primitive(logpdf, _P + ".logpdf")


# log p = (df/2 - 1) log x - x/2 - (df/2) log 2 - log Gamma(df/2)
def _dx(x, df):
    return (df * 0.5 - 1.0) / x - 0.5


def _ddf(x, df):
    return 0.5 * anp.log(x) - _HALF_LN2 - 0.5 * psi(df * 0.5)


def _density_rules(prim, factor, save):
    defvjp_direct(prim,
                  lambda g, ans, x, df: unbroadcast(factor(g, ans) * _dx(x, df), x),
                  lambda g, ans, x, df: unbroadcast(factor(g, ans) * _ddf(x, df), df),
                  save=save)
    defjvp(prim,
           lambda g, ans, x, df: factor(g, ans) * _dx(x, df),
           lambda g, ans, x, df: factor(g, ans) * _ddf(x, df))


_density_rules(logpdf, lambda g, ans: g, save=(0, 1))
_density_rules(pdf, lambda g, ans: g * ans, save=("ans", 0, 1))

defvjp_direct(cdf, lambda g, ans, x, df: unbroadcast(g * pdf(x, df), x), save=(0, 1))
defjvp(cdf, lambda g, ans, x, df: g * pdf(x, df))
