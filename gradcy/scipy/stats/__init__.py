"""scipy.stats distributions with derivatives: the functions autograd offers.

    norm.pdf cdf sf logpdf logcdf logsf (x, loc=0, scale=1)
    t.pdf cdf logpdf logcdf (x, df, loc=0, scale=1)
    beta.pdf cdf logpdf (x, a, b)          chi2.pdf cdf logpdf (x, df)
    gamma.pdf cdf logpdf (x, a)            poisson.pmf cdf logpmf (k, mu)
    dirichlet.pdf logpdf (x, alpha)
    multivariate_normal.pdf logpdf (x, mean, cov), entropy(mean, cov)

Each is a primitive named by its path (gradcy.scipy.stats.norm.cdf) that calls SciPy for its
value. Parameters without a rule (e.g. the df of t.cdf, the a and b of beta.cdf) raise
MissingVJPError / MissingJVPError when a derivative reaches them, as in autograd.
"""

from .. import _import_scipy

_import_scipy("scipy.stats")

from . import beta, chi2, dirichlet, gamma, multivariate_normal, norm, poisson, t

__all__ = ["beta", "chi2", "dirichlet", "gamma", "multivariate_normal", "norm", "poisson", "t"]
