"""The Poisson distribution: pmf cdf logpmf (k, mu), differentiable in mu.

Values come from scipy.stats.poisson. k is discrete: a derivative reaching it raises, as in
autograd.
"""

from ...numpy import _wrap as anp
from ._dist import density_rules, partials, rules, scipy_functions

pmf, cdf, logpmf = scipy_functions(__name__, "pmf cdf logpmf", "k, mu")


# log p = k log mu - mu - log k!  on the support (integers k >= 0), -inf elsewhere
def _dmu(k, mu):
    support = (k % 1 == 0) & (k >= 0)  # comparisons are not traced: a plain mask
    return anp.where(support, k / mu - 1.0, 0.0)


density_rules(logpmf, pmf, partials([_dmu], argnums=(1,)), save=(0, 1))
# d/dmu P(K <= k) = -pmf(floor(k), mu)
rules(cdf, partials([lambda k, mu: -pmf(anp.floor(k), mu)], argnums=(1,)), save=(0, 1))


def __getattr__(name):
    # autograd's rule names for this module (grad_*, ...), added on first lookup
    from gradcy._autograd_rules import autograd_name

    return autograd_name(__name__, name)
