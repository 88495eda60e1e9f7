"""The chi-squared distribution: pdf cdf logpdf (x, df).

Values come from scipy.stats.chi2. pdf and logpdf are differentiable in x and df; cdf in x only
(a derivative reaching df raises). Unlike autograd, whose x-derivative of the density is zero
for non-integer df, the rules hold for every df > 0.
"""

import math

from ...numpy import _wrap as anp
from ..special import psi
from ._dist import density_rules, partials, rules, scipy_functions

_HALF_LN2 = 0.5 * math.log(2.0)

pdf, cdf, logpdf = scipy_functions(__name__, "pdf cdf logpdf", "x, df")


# log p = (df/2 - 1) log x - x/2 - (df/2) log 2 - log Gamma(df/2)
def _dx(x, df):
    return (df * 0.5 - 1.0) / x - 0.5


def _ddf(x, df):
    return 0.5 * anp.log(x) - _HALF_LN2 - 0.5 * psi(df * 0.5)


density_rules(logpdf, pdf, partials([_dx, _ddf]), save=(0, 1))
rules(cdf, partials([pdf]), save=(0, 1))


def __getattr__(name):
    # autograd's rule names for this module (grad_*, ...), added on first lookup
    from gradcy._autograd_rules import autograd_name

    return autograd_name(__name__, name)
