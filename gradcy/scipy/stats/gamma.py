"""The gamma distribution: pdf cdf logpdf (x, a).

Values come from scipy.stats.gamma. pdf and logpdf are differentiable in x and a; cdf in x only
(a derivative reaching a raises, as in autograd).
"""

from ...numpy import _wrap as anp
from ..special import psi
from ._dist import density_rules, partials, rules, scipy_functions

pdf, cdf, logpdf = scipy_functions(__name__, "pdf cdf logpdf", "x, a")


# log p = (a - 1) log x - x - log Gamma(a)
def _dx(x, a):
    return (a - 1.0) / x - 1.0


def _da(x, a):
    return anp.log(x) - psi(a)


density_rules(logpdf, pdf, partials([_dx, _da]), save=(0, 1))
rules(cdf, partials([pdf]), save=(0, 1))


def __getattr__(name):
    # autograd's rule names for this module (grad_*, ...), added on first lookup
    from gradcy._autograd_rules import autograd_name

    return autograd_name(__name__, name)
