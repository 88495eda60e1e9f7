"""autograd.numpy.numpy_wrapper's module path: NumPy's functions as primitives (gradcy.numpy._wrap,
gradcy.numpy.extras), with the front ends of the rule files in place of some of them (as in
gradcy.numpy, less its constructors of owned buffers)."""

import numpy as _np

from ._wrap import *
from .extras import *
from ._wrap import __all__ as _wrapped
from .extras import __all__ as _extras
from .indexing import block, choose, select
from .sorting import intersect1d, setdiff1d, setxor1d, union1d, unique
from .statistics import histogram, histogram2d, histogram_bin_edges, histogramdd
from .manipulation import bartlett, blackman, hamming, hanning

if hasattr(_np, "unique_all"):  # NumPy >= 2
    from .sorting import unique_all, unique_counts, unique_inverse, unique_values

__all__ = list(dict.fromkeys(list(_wrapped) + list(_extras)))
