"""SciPy functions as gradcy primitives: gradcy.scipy.special, gradcy.scipy.stats, ...

SciPy is an optional extra (pip install "gradcy[scipy]"). Importing this package does not import
SciPy; each submodule imports it when it is first imported, and raises an ImportError that says
what to install when SciPy is missing.
"""
import importlib as _importlib

_SUBMODULES = ("special", "stats", "linalg", "signal", "integrate")


def _import_scipy(name):
    """Import the SciPy module `name` (e.g. "scipy.special"), or raise an ImportError that says
    how to install the extra."""
    try:
        return _importlib.import_module(name)
    except ImportError as e:
        raise ImportError(f"gradcy.scipy needs SciPy, which could not be imported ({e}); "
                          f"install it with: pip install \"gradcy[scipy]\"") from e


def __getattr__(name):
    # gradcy.scipy.special etc. without an explicit import of the submodule
    if name in _SUBMODULES:
        return _importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
