"""The normal distribution: pdf cdf sf logpdf logcdf logsf (x, loc=0, scale=1).

Values come from scipy.stats.norm; every argument is differentiable. With z = (x - loc)/scale
and any F(x, loc, scale) = G(z) / scale**k: dF/dloc = -dF/dx, which the rules use throughout.
"""

from ...numpy import _wrap as anp
from ._dist import density_rules, negated, partials, rules, scipy_functions, standardized

pdf, cdf, sf, logpdf, logcdf, logsf = scipy_functions(
    __name__, "pdf cdf sf logpdf logcdf logsf", "x, loc=0.0, scale=1.0"
)


def _loc_scale(dx, dscale, reads_ans=False):
    """The Rules of F(x, loc, scale) with dF/dx = dx, dF/dloc = -dF/dx and dF/dscale = dscale
    (partial derivatives as in partials)."""
    return partials([dx, negated(dx), dscale], reads_ans=reads_ans)


# log density: d/dx = -z / scale, d/dscale = (z^2 - 1) / scale
def _logpdf_dx(x, loc=0.0, scale=1.0):
    return -standardized(x, loc, scale) / scale


def _logpdf_dscale(x, loc=0.0, scale=1.0):
    z = standardized(x, loc, scale)
    return (z * z - 1.0) / scale


density_rules(logpdf, pdf, _loc_scale(_logpdf_dx, _logpdf_dscale), save=(0, 1, 2))


# distribution functions F = G(z): dF/dx = w, dF/dscale = -w z, where w is the density (with the
# sign of the tail: -1 for sf), divided by F for logcdf and logsf
def _dist_rules(prim, w, save):
    def dscale(ans, x, loc=0.0, scale=1.0):
        return -w(ans, x, loc, scale) * standardized(x, loc, scale)

    rules(prim, _loc_scale(w, dscale, reads_ans=True), save=save)


_dist_rules(cdf, lambda ans, *args, **kwargs: pdf(*args, **kwargs), save=(0, 1, 2))
_dist_rules(sf, lambda ans, *args, **kwargs: -pdf(*args, **kwargs), save=(0, 1, 2))
_dist_rules(
    logcdf,
    lambda ans, *args, **kwargs: anp.exp(logpdf(*args, **kwargs) - ans),
    save=("ans", 0, 1, 2),
)
_dist_rules(
    logsf,
    lambda ans, *args, **kwargs: -anp.exp(logpdf(*args, **kwargs) - ans),
    save=("ans", 0, 1, 2),
)


def __getattr__(name):
    # autograd's rule names for this module (grad_*, ...), added on first lookup
    from gradcy._autograd_rules import autograd_name

    return autograd_name(__name__, name)
