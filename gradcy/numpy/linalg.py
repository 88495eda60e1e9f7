"""numpy.linalg as primitives. VJPs are registered in numpy_vjps / linalg_vjps."""
import numpy.linalg as _npla

from .numpy_wrapper import wrap_namespace

wrap_namespace(_npla.__dict__, globals(), "gradcy.numpy.linalg")
