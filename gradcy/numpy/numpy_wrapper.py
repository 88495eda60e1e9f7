"""autograd.numpy.numpy_wrapper's module path: the wrapped NumPy namespace (gradcy.numpy._wrap)."""
from . import _wrap as _w

globals().update({k: v for k, v in vars(_w).items() if not k.startswith("__")})
__all__ = _w.__all__
