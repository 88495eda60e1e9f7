"""The beta distribution: pdf cdf logpdf (x, a, b).

Values come from scipy.stats.beta. pdf and logpdf are differentiable in x, a and b; cdf in x only
(a derivative reaching a or b raises, as in autograd).
"""

from ...numpy import _wrap as anp
from ..special import psi
from ._dist import density_rules, partials, rules, scipy_functions

pdf, cdf, logpdf = scipy_functions(__name__, "pdf cdf logpdf", "x, a, b")


# log p = (a - 1) log x + (b - 1) log(1 - x) - log B(a, b)
def _dx(x, a, b):
    return (a - 1.0) / x - (b - 1.0) / (1.0 - x)


def _da(x, a, b):
    return anp.log(x) - psi(a) + psi(a + b)


def _db(x, a, b):
    return anp.log1p(-x) - psi(b) + psi(a + b)


density_rules(logpdf, pdf, partials([_dx, _da, _db]), save=(0, 1, 2))
rules(cdf, partials([pdf]), save=(0, 1, 2))


def __getattr__(name):
    # autograd's rule names for this module (grad_*, ...), added on first lookup
    from gradcy._autograd_rules import autograd_name

    return autograd_name(__name__, name)
