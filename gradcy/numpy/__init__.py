"""NumPy, traced: `import gradcy.numpy as np` and write ordinary NumPy code.

Every function here runs NumPy directly when no traced value is among its arguments. This
module is the one place gradcy.numpy's names are bound: NumPy's functions as primitives
(_wrap), the front ends the rule files define, and the constructors of buffers a
differentiation owns (constructors).
"""

import importlib as _importlib

import numpy as _np

from ._wrap import *  # (every NumPy function, as a primitive)
from ._wrap import __all__ as _wrapped
from .extras import *  # (r_, c_, integer types, autograd.numpy's helpers)
from .extras import __all__ as _extras

# the rules, by family (importing a file registers its rules)
from . import elementwise, products, reductions, manipulation, indexing, sorting
from . import calculus, statistics, polynomials
from . import fft, linalg
from . import inplace  # (writes into arrays)
from . import indexed_updates  # (x.at[idx].set/add/..., ufunc.at)
from . import constructors  # (constructors that own buffers)
from . import fusion  # record-time fusion of a written-out softmax (the engine's _fuse)

# front ends in place of the primitives of the same names
from .indexing import block, choose, select
from .sorting import intersect1d, setdiff1d, setxor1d, union1d, unique
from .statistics import histogram, histogram2d, histogram_bin_edges, histogramdd
from .manipulation import bartlett, blackman, hamming, hanning

if hasattr(_np, "unique_all"):  # NumPy >= 2
    from .sorting import unique_all, unique_counts, unique_inverse, unique_values
from .indexed_updates import at
from .ufunc_methods import install_ufunc_methods as _install_ufunc_methods

_install_ufunc_methods(globals())

# constructors whose arrays a differentiation owns (writes into them are recorded)
_owning = {}
constructors.install_constructors(_owning)
array, copy = _owning["array"], _owning["copy"]
zeros, ones, empty, full = _owning["zeros"], _owning["ones"], _owning["empty"], _owning["full"]
zeros_like, ones_like = _owning["zeros_like"], _owning["ones_like"]
empty_like, full_like = _owning["empty_like"], _owning["full_like"]
identity, eye = _owning["identity"], _owning["eye"]
del _owning

# what `from gradcy.numpy import *` binds: NumPy's own public names (numpy.__all__) that this
# module serves, its submodules linalg, fft and random ("random": the module's class imports it
# on first use) and at; not the helpers the rule files bind here (wrap_namespace, primitive...)
_served = [n for n in dict.fromkeys(list(_wrapped) + list(_extras)) if n in _np.__all__]
__all__ = _served + ["linalg", "fft", "random", "at"]  # noqa: F405  (random: module class)

# autograd.numpy's modules (re-exports of the above)
from . import numpy_boxes, numpy_jvps, numpy_vjps, numpy_vspaces, numpy_wrapper

__version__ = _np.__version__


class _LazySubmodule:
    """A module attribute that imports the submodule of its name on first use (a non-data
    descriptor: the import binds the submodule in the module's namespace, which then serves
    it). It lives on the module's class, not in its namespace, so code that copies the
    namespace (pennylane.numpy copies every callable of autograd.numpy's) copies no hook."""

    def __set_name__(self, owner, name):
        self.name = name

    def __get__(self, module, owner=None):
        if module is None:
            return self
        return _importlib.import_module(f"{module.__name__}.{self.name}")


class _NumpyModule(type(_importlib)):
    # gradcy.numpy.random (numpy.random's draws, constants to differentiation) is imported on
    # first use, as NumPy 2 does with numpy.random: importing it costs about 9 ms
    random = _LazySubmodule()

    def __dir__(self):
        return sorted(set(vars(self)) | {"random"})


import sys as _sys

_sys.modules[__name__].__class__ = _NumpyModule
del _sys
