"""Utilities built on gradcy: flattening nested parameters, gradient-based optimizers, fixed
points with implicit-function gradients (autograd.misc's API)."""

from .flatten import flatten, flatten_func
from .fixed_points import fixed_point
from . import optimizers
from .tracers import const_graph
from . import fixed_points, tracers

__all__ = [
    "flatten",
    "flatten_func",
    "fixed_point",
    "optimizers",
    "const_graph",
    "tracers",
    "fixed_points",
]
