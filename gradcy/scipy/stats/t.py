"""Student's t distribution: pdf cdf logpdf logcdf (x, df, loc=0, scale=1).

Values come from scipy.stats.t. pdf and logpdf are differentiable in every argument; cdf and
logcdf in x, loc and scale (a derivative reaching df raises, as in autograd).
"""

from ...numpy import _wrap as anp
from ..special import psi
from ._dist import density_rules, negated, partials, rules, scipy_functions, standardized

pdf, cdf, logpdf, logcdf = scipy_functions(
    __name__, "pdf cdf logpdf logcdf", "x, df, loc=0.0, scale=1.0"
)


# log p = c(df) - log(scale) - (df + 1)/2 log(1 + y^2/df), y = (x - loc)/scale.
# With q = (df + 1) y / (df + y^2) = -d log p / dy:
#   d/dx = -q/scale, d/dloc = q/scale, d/dscale = (q y - 1)/scale,
#   d/ddf = (psi((df+1)/2) - psi(df/2) - 1/df - log1p(y^2/df) + (df+1) y^2 / (df (df + y^2))) / 2
def _logpdf_dx(x, df, loc=0.0, scale=1.0):
    y = standardized(x, loc, scale)
    return -(df + 1.0) * y / ((df + y * y) * scale)


def _logpdf_dscale(x, df, loc=0.0, scale=1.0):
    y = standardized(x, loc, scale)
    y2 = y * y
    return ((df + 1.0) * y2 / (df + y2) - 1.0) / scale


def _logpdf_ddf(x, df, loc=0.0, scale=1.0):
    y = standardized(x, loc, scale)
    y2 = y * y
    return 0.5 * (
        psi((df + 1.0) * 0.5)
        - psi(df * 0.5)
        - 1.0 / df
        - anp.log1p(y2 / df)
        + (df + 1.0) * y2 / (df * (df + y2))
    )


density_rules(
    logpdf,
    pdf,
    partials([_logpdf_dx, _logpdf_ddf, negated(_logpdf_dx), _logpdf_dscale]),
    save=(0, 1, 2, 3),
)


# F(x) = G(y): dF/dx = w, dF/dloc = -w, dF/dscale = -w y, with w the density (divided by F for
# logcdf). df has no rule.
def _dist_rules(prim, w, save):
    def dscale(ans, x, df, loc=0.0, scale=1.0):
        return -w(ans, x, df, loc, scale) * standardized(x, loc, scale)

    rules(prim, partials([w, negated(w), dscale], argnums=(0, 2, 3), reads_ans=True), save=save)


_dist_rules(cdf, lambda ans, *args, **kwargs: pdf(*args, **kwargs), save=(0, 1, 2, 3))
_dist_rules(
    logcdf,
    lambda ans, *args, **kwargs: anp.exp(logpdf(*args, **kwargs) - ans),
    save=("ans", 0, 1, 2, 3),
)


def __getattr__(name):
    # autograd's rule names for this module (grad_*, ...), added on first lookup
    from gradcy._autograd_rules import autograd_name

    return autograd_name(__name__, name)
