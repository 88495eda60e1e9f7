"""gradcy: automatic differentiation of NumPy code (reverse and forward mode).

Write a function with ``gradcy.numpy`` in place of ``numpy`` and differentiate it:

>>> import gradcy.numpy as np
>>> from gradcy import grad
>>> def loss(w, x):
...     return np.sum(np.tanh(x @ w) ** 2)
>>> w, x = np.ones(3) * 0.1, np.eye(3)
>>> print(grad(loss)(w, x))
[0.19735584 0.19735584 0.19735584]

The differential operators (``grad``, ``value_and_grad``, ``jacobian``, ``hessian``,
``make_vjp``, ``make_jvp``, ``checkpoint``, ...) take autograd's arguments; ``argnum``
chooses the argument(s) to differentiate. Subpackages: ``gradcy.numpy`` and
``gradcy.scipy`` (the operations), ``gradcy.extend`` (new primitives and their derivative
rules), ``gradcy.memory`` (counters and memory profiles), ``gradcy.misc`` (flatten,
optimizers, fixed points), ``gradcy.test_util`` (numerical checks of derivatives),
``gradcy.builtins`` (containers and type queries on traced values).
"""

from . import _core
from ._core import EscapedValueError, MissingJVPError, MissingVJPError, TracerArrayConversionError
from .differential_operators import (
    checkpoint,
    deriv,
    elementwise_grad,
    make_ggnvp,
    make_hvp,
    make_jvp,
    grad,
    grad_and_aux,
    grad_named,
    hessian,
    hessian_tensor_product,
    hessian_vector_product,
    holomorphic_grad,
    jacobian,
    make_vjp,
    multigrad_dict,
    tensor_jacobian_product,
    value_and_grad,
    vector_jacobian_product,
)
from . import numpy  # (registers the operators of traced values)
from . import memory
from . import builtins, misc
from .vspace import vspace

# autograd's module paths (core, tracer, wrap_util, util, test_util, scipy) and its top-level
# primitive (with autograd's deprecated prim.defvjp/defgrad methods)
from . import core, scipy, test_util, tracer, util, wrap_util
from .core import primitive
from .compiled import jit

__version__ = "0.1.0"

__all__ = [
    "make_jvp",
    "deriv",
    "make_hvp",
    "make_ggnvp",
    "grad",
    "value_and_grad",
    "grad_and_aux",
    "grad_named",
    "elementwise_grad",
    "jacobian",
    "hessian",
    "hessian_tensor_product",
    "hessian_vector_product",
    "tensor_jacobian_product",
    "vector_jacobian_product",
    "make_vjp",
    "holomorphic_grad",
    "multigrad_dict",
    "checkpoint",
    "memory",
    "builtins",
    "misc",
    "vspace",
    "EscapedValueError",
    "MissingVJPError",
    "MissingJVPError",
    "TracerArrayConversionError",
    "jit",
]

# autograd has its container builtins at the top level (gradcy.tuple, gradcy.list, ...); so
# does gradcy, out of __all__, so that `from gradcy import *` does not shadow Python's tuple,
# list, dict, isinstance and type (bound last: they shadow Python's names in this module)
from .builtins import dict, isinstance, list, tuple, type

# autograd's rule helpers in the modules autograd has them in (numpy_vjps, misc.flatten, ...)
from ._autograd_rules import install as _install_autograd_names

_install_autograd_names()
