"""The public surface for adding primitives and derivative rules to gradcy."""
from ._core import ArrayMeta, Box, Primitive
from .vspace import SparseObject, VSpace, vspace
from .registry import (def_linear, defjvp, defjvp_argnum, defjvp_argnums, defvjp,
                       defvjp_argnum, defvjp_argnums, defvjp_direct, nondifferentiable, notrace_primitive,
                       primitive, subval)

__all__ = ["primitive", "notrace_primitive", "nondifferentiable", "defvjp", "defvjp_argnum",
           "defvjp_argnums", "defvjp_direct", "defjvp", "defjvp_argnum", "defjvp_argnums", "def_linear",
           "subval", "Box", "Primitive", "ArrayMeta", "SparseObject", "VSpace", "vspace"]
# autograd.extend's node types and notrace registration
from .core import JVPNode, VJPNode  # noqa: E402,F401
from .tracer import register_notrace  # noqa: E402,F401

__all__ += ["JVPNode", "VJPNode", "register_notrace"]
