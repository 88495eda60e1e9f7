"""Utilities built on gradcy: flattening nested parameters, gradient-based optimizers, fixed
points with implicit-function gradients (autograd.misc's API)."""
from .flatten import flatten, flatten_func
from .fixed_points import fixed_point
from . import optimizers

__all__ = ["flatten", "flatten_func", "fixed_point", "optimizers"]
