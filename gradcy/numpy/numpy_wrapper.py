"""autograd.numpy.numpy_wrapper's module path: NumPy's functions as primitives (gradcy.numpy._wrap,
gradcy.numpy.extras), with the front ends of the rule files in place of some of them (as in
gradcy.numpy, less its constructors of owned buffers)."""
import numpy as _np

from ._wrap import *  # noqa: F401,F403
from .extras import *  # noqa: F401,F403
from ._wrap import __all__ as _wrapped
from .extras import __all__ as _extras
from .indexing import block, choose, select  # noqa: F401
from .sorting import intersect1d, setdiff1d, setxor1d, union1d, unique  # noqa: F401
from .statistics import histogram, histogram2d, histogram_bin_edges, histogramdd  # noqa: F401
from .manipulation import bartlett, blackman, hamming, hanning  # noqa: F401
if hasattr(_np, "unique_all"):      # NumPy >= 2
    from .sorting import unique_all, unique_counts, unique_inverse, unique_values  # noqa: F401

__all__ = list(dict.fromkeys(list(_wrapped) + list(_extras)))
