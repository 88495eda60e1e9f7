"""New primitives and derivative rules.

Wrap a function with ``primitive``, then register its reverse-mode rule with ``defvjp``
(and its forward-mode rule with ``defjvp``); gradcy records each call as one operation and
applies the rules:

>>> import numpy as onp
>>> from gradcy import grad
>>> from gradcy.extend import primitive, defvjp
>>> @primitive
... def softplus(x):
...     return onp.logaddexp(0.0, x)
>>> defvjp(softplus, lambda ans, x: lambda g: g / (1.0 + onp.exp(-x)))
>>> grad(softplus)(0.0)
0.5

``gradcy.test_util.check_grads`` checks a rule against finite differences.
"""

from ._core import ArrayMeta, Box, Primitive
from .vspace import SparseObject, VSpace, vspace
from .registry import (
    def_linear,
    defjvp,
    defjvp_argnum,
    defjvp_argnums,
    defvjp,
    defvjp_argnum,
    defvjp_argnums,
    defvjp_direct,
    nondifferentiable,
    notrace_primitive,
    primitive,
    subval,
)

__all__ = [
    "primitive",
    "notrace_primitive",
    "nondifferentiable",
    "defvjp",
    "defvjp_argnum",
    "defvjp_argnums",
    "defvjp_direct",
    "defjvp",
    "defjvp_argnum",
    "defjvp_argnums",
    "def_linear",
    "subval",
    "Box",
    "Primitive",
    "ArrayMeta",
    "SparseObject",
    "VSpace",
    "vspace",
]
# autograd.extend's node types and notrace registration
from .core import JVPNode, VJPNode
from .tracer import register_notrace

__all__ += ["JVPNode", "VJPNode", "register_notrace"]
