"""autograd.numpy.numpy_boxes's names: gradcy has one traced-value type, Box, for arrays,
scalars and sequences alike, so ArrayBox and SequenceBox are Box."""

from .._core import Box
from ..registry import primitive  # (autograd.numpy.numpy_boxes has it)
from ..tracer import trace_primitives_map

__all__ = ["ArrayBox", "SequenceBox", "Box", "nondiff_methods", "diff_methods"]

ArrayBox = Box
SequenceBox = Box

# ndarray methods that traced values have, by whether they are differentiable
nondiff_methods = [
    "all",
    "any",
    "argmax",
    "argmin",
    "argpartition",
    "argsort",
    "nonzero",
    "searchsorted",
    "round",
]
diff_methods = [
    "clip",
    "compress",
    "cumprod",
    "cumsum",
    "diagonal",
    "max",
    "mean",
    "min",
    "prod",
    "ptp",
    "ravel",
    "repeat",
    "reshape",
    "squeeze",
    "std",
    "sum",
    "swapaxes",
    "take",
    "trace",
    "transpose",
    "var",
]
