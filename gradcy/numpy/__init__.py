"""NumPy, traced: `import gradcy.numpy as np` and write ordinary NumPy code.

Every function here runs NumPy directly when no traced value is among its arguments.
"""
import numpy as _np

from . import _wrap
from ._wrap import *  # noqa: F401,F403
from ._wrap import __all__ as _wrapper_all
from . import numpy_vjps  # noqa: F401  (registers the VJPs)
from . import linalg, fft  # noqa: F401
from . import random  # noqa: F401

from . import inplace  # noqa: E402  (writes into arrays; constructors that own buffers)
from .inplace import at  # noqa: E402,F401

inplace.install_constructors(globals())

from . import numpy_boxes, numpy_jvps, numpy_vspaces  # noqa: E402,F401  (autograd's modules)

__version__ = _np.__version__

__all__ = list(_wrapper_all) + ["linalg", "fft", "random", "at"]
