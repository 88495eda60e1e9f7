"""What the distribution modules share: SciPy's functions of a distribution as primitives, and
the registration of their rules (from elementwise partial derivatives; a density's from its
log-density's)."""

from typing import NamedTuple

from .. import _import_scipy

_stats = _import_scipy("scipy.stats")

from ...registry import defjvp, defvjp_direct, primitive
from ...numpy._util import unbroadcast


def scipy_functions(module, names, params):
    """The functions `names` (space-separated) of the scipy.stats distribution the module
    `module` (gradcy.scipy.stats.<dist>) is named after, as primitives named <module>.<name>
    with the parameters `params` (Python source, e.g. "x, loc=0.0, scale=1.0"). Each is a
    plain function of that signature (its own argument errors, docstring and module) that
    calls SciPy with its arguments in order."""
    family = module.rsplit(".", 1)[1]
    dist = getattr(_stats, family)
    call = ", ".join(p.split("=")[0].strip() for p in params.split(","))
    out = []
    for name in names.split():
        ns = {"__name__": module, "_scipy": getattr(dist, name)}
        exec(
            compile(
                f"def {name}({params}):\n    return _scipy({call})\n", f"<{module}.{name}>", "exec"
            ),
            ns,
        )
        fun = ns[name]
        fun.__doc__ = f"scipy.stats.{family}.{name}({call})"
        out.append(primitive(fun, f"{module}.{name}"))
    return out


class Rules(NamedTuple):
    """A function's VJPs (direct form) and JVPs, one each per argument in argnums (default 0,
    1, ...)."""

    vjps: list
    jvps: list
    argnums: tuple = None


def rules(prim, r, save):
    """Register the Rules r on prim."""
    defvjp_direct(prim, *r.vjps, argnums=r.argnums, save=save)
    defjvp(prim, *r.jvps, argnums=r.argnums)


def _partial_vjp(d, i):
    return lambda g, ans, *args, **kwargs: unbroadcast(g * d(ans, *args, **kwargs), args[i])


def _partial_jvp(d):
    return lambda g, ans, *args, **kwargs: g * d(ans, *args, **kwargs)


def _of_args(d):
    return lambda ans, *args, **kwargs: d(*args, **kwargs)


def partials(ds, argnums=None, reads_ans=False):
    """The Rules of an elementwise function whose derivative in argument argnums[j] (default j)
    is ds[j](*args, **kwargs), or ds[j](ans, *args, **kwargs) with reads_ans."""
    nums = range(len(ds)) if argnums is None else argnums
    ds = ds if reads_ans else [_of_args(d) for d in ds]
    return Rules(
        [_partial_vjp(d, i) for d, i in zip(ds, nums)], [_partial_jvp(d) for d in ds], argnums
    )


def negated(d):
    """The partial derivative -d (of the same arguments)."""
    return lambda *args, **kwargs: -d(*args, **kwargs)


def standardized(x, loc=0.0, scale=1.0):
    """(x - loc) / scale."""
    return (x - loc) / scale


def _density_vjp(vjp):
    return lambda g, ans, *args, **kwargs: vjp(g * ans, ans, *args, **kwargs)


def _density_jvp(jvp):
    return lambda g, ans, *args, **kwargs: ans * jvp(g, ans, *args, **kwargs)


def density_rules(logpdf, pdf, r, save):
    """The Rules r of logpdf, and those of pdf = exp(logpdf) made from them: pdf's cotangent g
    enters logpdf's VJPs as g * pdf, and pdf's tangent is pdf times logpdf's. Within pdf's
    rules, logpdf's see pdf's output as ans: they may read it only for its shape."""
    rules(logpdf, r, save)
    rules(
        pdf,
        Rules([_density_vjp(v) for v in r.vjps], [_density_jvp(j) for j in r.jvps], r.argnums),
        ("ans",) + tuple(save),
    )
