"""numpy.linalg as primitives. VJPs are registered in numpy_vjps / linalg_vjps."""
import numpy.linalg as _npla

from .numpy_wrapper import wrap_namespace

wrap_namespace(_npla.__dict__, globals(), "gradcy.numpy.linalg")


# helpers of autograd.numpy.linalg's rules, which autograd programs import
def T(x):
    """x with its last two axes swapped."""
    from .numpy_wrapper import swapaxes
    return swapaxes(x, -1, -2)


def _dot(a, b):
    """Matrix product over the last two axes, broadcast over the leading ones."""
    from .numpy_wrapper import einsum
    return einsum("...ij,...jk->...ik", a, b)


def add2d(x):
    """x with two trailing axes of length 1."""
    from .numpy_wrapper import expand_dims
    return expand_dims(expand_dims(x, -1), -1)


# autograd's names in this module (views of the rules above; gradcy._autograd_rules)
from .._autograd_rules import export as _export  # noqa: E402

_export(globals())
