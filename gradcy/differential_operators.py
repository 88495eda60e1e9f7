"""The differentiation operators: grad, value_and_grad, make_vjp, jacobian, hessian, ...

This is the public module (autograd.differential_operators's path); the operators live in
files of one job each:

    _reverse_mode.py   grad, value_and_grad, make_vjp, jacobian, checkpoint, ...
    _forward_mode.py   make_jvp, deriv
    _second_order.py   hessian, hessian_tensor_product, make_hvp, make_ggnvp, ...
    _tracing.py        one differentiated call: its tape, the VJP object, forward-mode runs
    _arguments.py      checks of arguments and outputs; gradients matched to their inputs
    _pytree.py         nested tuples/lists/dicts as leaves (tree_flatten)
"""

from ._forward_mode import deriv, make_jvp
from ._pytree import tree_flatten  # noqa: F401  (imported from here by programs)
from ._reverse_mode import (
    checkpoint,
    elementwise_grad,
    grad,
    grad_and_aux,
    grad_named,
    holomorphic_grad,
    jacobian,
    make_vjp,
    multigrad_dict,
    tensor_jacobian_product,
    value_and_grad,
    vector_jacobian_product,
)
from ._second_order import (
    hessian,
    hessian_tensor_product,
    hessian_vector_product,
    make_ggnvp,
    make_hvp,
    make_jvp_reversemode,  # noqa: F401  (re-exported here)
)
from ._tracing import VJP, pack_outputs  # noqa: F401  (re-exported here)

# autograd.differential_operators's other names
from .builtins import tuple as atuple  # noqa: F401  (re-exported here)
from .registry import defvjp_argnum, primitive  # noqa: F401  (re-exported here)
from .vspace import vspace  # noqa: F401  (re-exported here)
from .wrap_util import unary_to_nary  # noqa: F401  (re-exported here)

__all__ = [
    "grad",
    "value_and_grad",
    "grad_and_aux",
    "elementwise_grad",
    "make_vjp",
    "vector_jacobian_product",
    "jacobian",
    "hessian",
    "hessian_vector_product",
    "hessian_tensor_product",
    "tensor_jacobian_product",
    "holomorphic_grad",
    "multigrad_dict",
    "grad_named",
    "checkpoint",
    "make_jvp",
    "deriv",
    "make_hvp",
    "make_ggnvp",
    "VJP",
]
