"""numpy.random: random draws are constants to differentiation.

The sampling functions are numpy.random's own; given a traced value as a parameter (a mean, a
scale, an array to shuffle) they raise a TypeError that says how to write the draw so that its
gradient flows: sample with constant parameters and transform the sample (the
reparameterisation), e.g. ``mu + sigma * np.random.standard_normal(size)``.
"""

import functools as _functools

import numpy.random as _npr
from numpy.random import *
from numpy.random import get_bit_generator, set_bit_generator, test

from .._arguments import SHARP_EDGES as _SHARP_EDGES
from .._core import Box as _Box
from ._wrap import wrap_namespace  # (autograd.numpy.random has it)

# how to write a draw whose parameters are traced: location-scale families as a transform of a
# standard draw; index draws for the functions that rearrange or pick from an array
_REWRITE = {
    "normal": "loc + scale * np.random.standard_normal(size)",
    "uniform": "low + (high - low) * np.random.random(size)",
    "exponential": "scale * np.random.standard_exponential(size)",
    "lognormal": "np.exp(mean + sigma * np.random.standard_normal(size))",
    "laplace": "loc + scale * np.random.laplace(0.0, 1.0, size)",
    "logistic": "loc + scale * np.random.logistic(0.0, 1.0, size)",
    "gumbel": "loc + scale * np.random.gumbel(0.0, 1.0, size)",
    "rayleigh": "scale * np.random.rayleigh(1.0, size)",
    "weibull": "np.random.standard_exponential(size) ** (1.0 / a)",
    "multivariate_normal": "mean + np.random.standard_normal(size + mean.shape) @ "
    "np.linalg.cholesky(cov).T",
    "permutation": "x[np.random.permutation(len(x))]",
    "shuffle": "x = x[np.random.permutation(len(x))]",
    "choice": "a[np.random.randint(0, len(a), size)]",
}
_NOT_SAMPLERS = {"seed", "get_state", "set_state"}


def _has_box(obj):
    if type(obj) is _Box:
        return True
    if isinstance(obj, (list, tuple)):
        return any(_has_box(e) for e in obj)
    return False


def _sampler(name, fun):
    rewrite = _REWRITE.get(
        name, f"np.random.{name} with constant parameters, transformed by the traced ones"
    )

    @_functools.wraps(fun)
    def sample(*args, **kwargs):
        for where, value in list(enumerate(args)) + list(kwargs.items()):
            if _has_box(value):
                what = f"argument {where}" if type(where) is int else f"{where}="
                raise TypeError(
                    f"gradcy.numpy.random.{name}: {what} is a traced value; random sampling "
                    f"is not differentiable in its parameters. Draw from constant parameters "
                    f"and transform the draw with the traced ones (the reparameterisation): "
                    f"{rewrite}. See {_SHARP_EDGES}#random-sampling"
                )
        return fun(*args, **kwargs)

    return sample


for _name in _npr.__all__:
    _fun = getattr(_npr, _name)
    if (
        _name not in _NOT_SAMPLERS
        and callable(_fun)
        and not isinstance(_fun, type)
        and (getattr(_fun, "__self__", None) is not None)
    ):  # the global RandomState's
        globals()[_name] = _sampler(_name, _fun)
del _name, _fun
