"""The normal distribution: pdf cdf sf logpdf logcdf logsf (x, loc=0, scale=1).

Values come from scipy.stats.norm; every argument is differentiable. With z = (x - loc)/scale
and any F(x, loc, scale) = G(z) / scale**k: dF/dloc = -dF/dx, which the rules use throughout.
"""
from .. import _import_scipy

_norm = _import_scipy("scipy.stats").norm

from ...registry import defjvp, defvjp_direct, primitive
from ...numpy import _wrap as anp
from ...numpy._util import unbroadcast

_P = "gradcy.scipy.stats.norm"


def pdf(x, loc=0.0, scale=1.0):
    """scipy.stats.norm.pdf(x, loc, scale)"""
    return _norm.pdf(x, loc, scale)


def cdf(x, loc=0.0, scale=1.0):
    """scipy.stats.norm.cdf(x, loc, scale)"""
    return _norm.cdf(x, loc, scale)


def sf(x, loc=0.0, scale=1.0):
    """scipy.stats.norm.sf(x, loc, scale)"""
    return _norm.sf(x, loc, scale)


def logpdf(x, loc=0.0, scale=1.0):
    """scipy.stats.norm.logpdf(x, loc, scale)"""
    return _norm.logpdf(x, loc, scale)


def logcdf(x, loc=0.0, scale=1.0):
    """scipy.stats.norm.logcdf(x, loc, scale)"""
    return _norm.logcdf(x, loc, scale)


def logsf(x, loc=0.0, scale=1.0):
    """scipy.stats.norm.logsf(x, loc, scale)"""
    return _norm.logsf(x, loc, scale)


pdf = primitive(pdf, _P + ".pdf")
cdf = primitive(cdf, _P + ".cdf")
sf = primitive(sf, _P + ".sf")
logpdf = primitive(logpdf, _P + ".logpdf")
logcdf = primitive(logcdf, _P + ".logcdf")
logsf = primitive(logsf, _P + ".logsf")


def _z(x, loc, scale):
    return (x - loc) / scale


def _register(prim, dx, dscale, save):
    """Rules of F(x, loc, scale) with dF/dx = dx(ans, x, loc, scale), dF/dloc = -dF/dx and
    dF/dscale = dscale(ans, x, loc, scale)."""
    defvjp_direct(
        prim,
        lambda g, ans, x, loc=0.0, scale=1.0: unbroadcast(g * dx(ans, x, loc, scale), x),
        lambda g, ans, x, loc=0.0, scale=1.0: unbroadcast(-g * dx(ans, x, loc, scale), loc),
        lambda g, ans, x, loc=0.0, scale=1.0: unbroadcast(g * dscale(ans, x, loc, scale), scale),
        save=save)
    defjvp(
        prim,
        lambda g, ans, x, loc=0.0, scale=1.0: g * dx(ans, x, loc, scale),
        lambda g, ans, x, loc=0.0, scale=1.0: -g * dx(ans, x, loc, scale),
        lambda g, ans, x, loc=0.0, scale=1.0: g * dscale(ans, x, loc, scale))


# log density: d/dx = -z / scale, d/dscale = (z^2 - 1) / scale
def _logpdf_dx(ans, x, loc, scale):
    return -_z(x, loc, scale) / scale


def _logpdf_dscale(ans, x, loc, scale):
    z = _z(x, loc, scale)
    return (z * z - 1.0) / scale


_register(logpdf, _logpdf_dx, _logpdf_dscale, save=(0, 1, 2))
_register(pdf,
          lambda ans, x, loc, scale: ans * _logpdf_dx(ans, x, loc, scale),
          lambda ans, x, loc, scale: ans * _logpdf_dscale(ans, x, loc, scale),
          save=("ans", 0, 1, 2))


# distribution functions F = G(z): dF/dx = w, dF/dscale = -w z, where w is the density (with the
# sign of the tail: -1 for sf), divided by F for logcdf and logsf
def _dist_rules(prim, w, save):
    _register(prim, w, lambda ans, x, loc, scale: -w(ans, x, loc, scale) * _z(x, loc, scale),
              save=save)


_dist_rules(cdf, lambda ans, x, loc, scale: pdf(x, loc, scale), save=(0, 1, 2))
_dist_rules(sf, lambda ans, x, loc, scale: -pdf(x, loc, scale), save=(0, 1, 2))
_dist_rules(logcdf, lambda ans, x, loc, scale: anp.exp(logpdf(x, loc, scale) - ans),
            save=("ans", 0, 1, 2))
_dist_rules(logsf, lambda ans, x, loc, scale: -anp.exp(logpdf(x, loc, scale) - ans),
            save=("ans", 0, 1, 2))
