"""Student's t distribution: pdf cdf logpdf logcdf (x, df, loc=0, scale=1).

Values come from scipy.stats.t. pdf and logpdf are differentiable in every argument; cdf and
logcdf in x, loc and scale (a derivative reaching df raises, as in autograd).
"""
from .. import _import_scipy

_t = _import_scipy("scipy.stats").t

from ...registry import defjvp, defvjp_direct, primitive
from ...numpy import _wrap as anp
from ...numpy._util import unbroadcast
from ..special import psi

_P = "gradcy.scipy.stats.t"


def pdf(x, df, loc=0.0, scale=1.0):
    """scipy.stats.t.pdf(x, df, loc, scale)"""
    return _t.pdf(x, df, loc, scale)


def cdf(x, df, loc=0.0, scale=1.0):
    """scipy.stats.t.cdf(x, df, loc, scale)"""
    return _t.cdf(x, df, loc, scale)


def logpdf(x, df, loc=0.0, scale=1.0):
    """scipy.stats.t.logpdf(x, df, loc, scale)"""
    return _t.logpdf(x, df, loc, scale)


def logcdf(x, df, loc=0.0, scale=1.0):
    """scipy.stats.t.logcdf(x, df, loc, scale)"""
    return _t.logcdf(x, df, loc, scale)


pdf = primitive(pdf, _P + ".pdf")
cdf = primitive(cdf, _P + ".cdf")
logpdf = primitive(logpdf, _P + ".logpdf")
logcdf = primitive(logcdf, _P + ".logcdf")


def _y(x, loc, scale):
    return (x - loc) / scale


# log p = c(df) - log(scale) - (df + 1)/2 log(1 + y^2/df), y = (x - loc)/scale.
# With q = (df + 1) y / (df + y^2) = -d log p / dy:
#   d/dx = -q/scale, d/dloc = q/scale, d/dscale = (q y - 1)/scale,
#   d/ddf = (psi((df+1)/2) - psi(df/2) - 1/df - log1p(y^2/df) + (df+1) y^2 / (df (df + y^2))) / 2
def _logpdf_dx(x, df, loc, scale):
    y = _y(x, loc, scale)
    return -(df + 1.0) * y / ((df + y * y) * scale)


def _logpdf_dscale(x, df, loc, scale):
    y = _y(x, loc, scale)
    y2 = y * y
    return ((df + 1.0) * y2 / (df + y2) - 1.0) / scale


def _logpdf_ddf(x, df, loc, scale):
    y = _y(x, loc, scale)
    y2 = y * y
    return 0.5 * (psi((df + 1.0) * 0.5) - psi(df * 0.5) - 1.0 / df - anp.log1p(y2 / df)
                  + (df + 1.0) * y2 / (df * (df + y2)))


def _density_rules(prim, factor, save):
    """pdf (factor = ans) and logpdf (factor = 1): each derivative is factor * d log p."""
    defvjp_direct(
        prim,
        lambda g, ans, x, df, loc=0.0, scale=1.0: unbroadcast(
            factor(g, ans) * _logpdf_dx(x, df, loc, scale), x),
        lambda g, ans, x, df, loc=0.0, scale=1.0: unbroadcast(
            factor(g, ans) * _logpdf_ddf(x, df, loc, scale), df),
        lambda g, ans, x, df, loc=0.0, scale=1.0: unbroadcast(
            -factor(g, ans) * _logpdf_dx(x, df, loc, scale), loc),
        lambda g, ans, x, df, loc=0.0, scale=1.0: unbroadcast(
            factor(g, ans) * _logpdf_dscale(x, df, loc, scale), scale),
        save=save)
    defjvp(
        prim,
        lambda g, ans, x, df, loc=0.0, scale=1.0: factor(g, ans) * _logpdf_dx(x, df, loc, scale),
        lambda g, ans, x, df, loc=0.0, scale=1.0: factor(g, ans) * _logpdf_ddf(x, df, loc, scale),
        lambda g, ans, x, df, loc=0.0, scale=1.0: -factor(g, ans) * _logpdf_dx(x, df, loc, scale),
        lambda g, ans, x, df, loc=0.0, scale=1.0: factor(g, ans) * _logpdf_dscale(x, df, loc,
                                                                                  scale))


_density_rules(logpdf, lambda g, ans: g, save=(0, 1, 2, 3))
_density_rules(pdf, lambda g, ans: g * ans, save=("ans", 0, 1, 2, 3))


# F(x) = G(y): dF/dx = w, dF/dloc = -w, dF/dscale = -w y, with w the density (divided by F for
# logcdf). df has no rule.
def _dist_rules(prim, w, save):
    defvjp_direct(
        prim,
        lambda g, ans, x, df, loc=0.0, scale=1.0: unbroadcast(g * w(ans, x, df, loc, scale), x),
        lambda g, ans, x, df, loc=0.0, scale=1.0: unbroadcast(
            -g * w(ans, x, df, loc, scale), loc),
        lambda g, ans, x, df, loc=0.0, scale=1.0: unbroadcast(
            -g * w(ans, x, df, loc, scale) * _y(x, loc, scale), scale),
        argnums=(0, 2, 3), save=save)
    defjvp(
        prim,
        lambda g, ans, x, df, loc=0.0, scale=1.0: g * w(ans, x, df, loc, scale),
        lambda g, ans, x, df, loc=0.0, scale=1.0: -g * w(ans, x, df, loc, scale),
        lambda g, ans, x, df, loc=0.0, scale=1.0: -g * w(ans, x, df, loc, scale) * _y(x, loc,
                                                                                     scale),
        argnums=(0, 2, 3))


_dist_rules(cdf, lambda ans, x, df, loc, scale: pdf(x, df, loc, scale), save=(0, 1, 2, 3))
_dist_rules(logcdf, lambda ans, x, df, loc, scale: anp.exp(logpdf(x, df, loc, scale) - ans),
            save=("ans", 0, 1, 2, 3))
