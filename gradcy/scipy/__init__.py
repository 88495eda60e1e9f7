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
        raise ImportError(
            f"gradcy.scipy needs SciPy, which could not be imported ({e}); "
            f'install it with: pip install "gradcy[scipy]"'
        ) from e


def __getattr__(name):
    # gradcy.scipy.special etc. without an explicit import of the submodule
    if name in _SUBMODULES:
        return _importlib.import_module(f"{__name__}.{name}")
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def foreign_ufunc(ufunc):
    """(qualified name, gradcy twin or None) of a ufunc of another library that has no gradcy
    routing yet: for a scipy.special ufunc, ("scipy.special.expit",
    gradcy.scipy.special.expit) once SciPy is imported (importing gradcy.scipy.special routes
    scipy.special's ufuncs on traced values to their twins); otherwise ("numpy.<name>", None).
    For the engine's error of a ufunc called on traced values (_box.pyx: __array_ufunc__),
    so the message names the module the user called and its gradcy twin."""
    import sys

    name = getattr(ufunc, "__name__", "?")
    special = sys.modules.get("scipy.special")
    if special is not None and getattr(special, name, None) is ufunc:
        twin = getattr(_importlib.import_module(f"{__name__}.special"), name, None)
        return f"scipy.special.{name}", twin
    return f"numpy.{name}", None


def foreign_ufunc_message(ufunc, method="__call__"):
    """The TypeError message for `ufunc` called on traced values without a gradcy version."""
    qualname, twin = foreign_ufunc(ufunc)
    what = qualname + ("" if method == "__call__" else f".{method}")
    if twin is not None:
        return (
            f"gradcy: {what} is not differentiable on traced values as it is; call its "
            f"gradcy twin gradcy.{qualname} (after `import gradcy.scipy.special`, "
            f"scipy.special's own functions are routed to it). See "
            f"docs/sharp_edges.md#functions-of-other-libraries"
        )
    return (
        f"gradcy: {what} is not differentiable on traced values; use "
        f"gradcy.{qualname}, or register a primitive with gradcy.extend. See "
        f"docs/sharp_edges.md#functions-of-other-libraries"
    )
