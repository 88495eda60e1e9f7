"""Array constructors whose arrays a differentiation owns: inside a differentiation,
gradcy.numpy's zeros, ones, empty, full, identity, eye, the *_like ones, array and copy (and
ndarray.flatten) return a buffer the tape owns, as a constant traced value, so that writes
into it (inplace.py) happen in place and are recorded. Outside one they are NumPy's.
"""

import builtins as _builtins

import numpy as _np

from .. import _core
from .._core import Box, active_tape, is_array_value, register_box_method
from . import _wrap as anp
from ._util import _plain, _unwrap
from .inplace import _register, own


# =============================================================================
# Array constructors: inside a differentiation they return a buffer the tape owns
# =============================================================================
def _owning(name, make, traced=None):
    """A constructor that, inside a differentiation, returns a buffer the tape owns. `traced`
    (full, full_like) is the primitive to use when a fill value is itself traced."""

    like = name.endswith("_like")

    def constructor(*args, **kwargs):
        if traced is not None and (
            _builtins.any(type(a) is Box for a in args[1:]) or type(kwargs.get("fill_value")) is Box
        ):
            return traced(*args, **kwargs)
        # a *_like constructor reads its first argument's shape and dtype only, not a value
        # (no read for a const_graph recording to guard); a shape or fill value is read
        plain = [_unwrap_like(a) if k == 0 and like else _plain(a) for k, a in enumerate(args)]
        tape = active_tape()
        if tape is None or tape.released:
            return make(*plain, **kwargs)
        out = make(*plain, **kwargs)
        if isinstance(out, _np.ndarray) and type(out) is not _np.ndarray:
            out = _np.array(out)  # zeros_like of a registered subclass: a plain buffer,
            # which writes reach (writes into a subclass are refused)
        if type(out) is not _np.ndarray:
            # a Dask / CuPy array (zeros_like of one): a constant traced value, so traced
            # values can be written into it (by its own item assignment, see _box_setitem)
            return tape.new_constant(out) if is_array_value(out) else out
        if out.base is not None:  # e.g. array(x, copy=False) returning a view of x
            out = out.copy()
        return own(tape, out)

    constructor.__name__ = name
    constructor.__qualname__ = name
    constructor.__doc__ = (
        f"numpy.{name}; inside a differentiation the result is a buffer the "
        f"differentiation owns, so traced values can be written into it."
    )
    return constructor


def _unwrap_like(a):
    """A *_like constructor's first argument without its traces: of a list or tuple of traced
    values (zeros_like([x[0], x[1]])), each element's (NumPy reads their shape and dtype)."""
    if type(a) is list or type(a) is tuple:
        return [_unwrap_like(e) for e in a]
    return _unwrap(a)


def _owned_copy(source, result):
    """A traced copy of `source` made by the active differentiation: the tape owns it."""
    plain = _unwrap(result)
    if (
        type(result) is Box
        and result is not source
        and type(plain) is _np.ndarray
        and plain.base is None
        and plain is not _unwrap(source)
    ):
        tape = active_tape()
        if tape is result._tape and not tape.released and tape.owned_info(plain) is None:
            _register(tape, result)
    return result


def install_constructors(g):
    """Put the owning constructors into namespace `g` (the gradcy.numpy package; the
    primitives of the same names stay in numpy_wrapper, where their rules are registered)."""
    for name in [
        "zeros",
        "ones",
        "empty",
        "full",
        "zeros_like",
        "ones_like",
        "empty_like",
        "full_like",
        "identity",
        "eye",
    ]:
        make = getattr(_np, name)
        wrapped = _owning(name, make, getattr(anp, name) if name in ("full", "full_like") else None)
        g[name] = wrapped
        _core.register_numpy_override(make, wrapped)
    plain_array, plain_copy = anp.array, anp.copy_

    def array(obj, *args, **kwargs):
        if type(obj) is Box or anp._contains_box(obj):
            return _owned_copy(obj, plain_array(obj, *args, **kwargs))
        return _owning("array", _np.array)(obj, *args, **kwargs)

    def copy(a, *args, **kwargs):
        """numpy.copy; inside a differentiation the copy is a buffer the differentiation owns
        (writes into it, and through its views, happen in place)."""
        if type(a) is Box:
            return _owned_copy(a, plain_copy(a, *args, **kwargs))
        return _owning("copy", _np.copy)(a, *args, **kwargs)

    def flatten(a, order="C"):
        """ndarray.flatten: a copy (ravel may return a view), a buffer the differentiation owns."""
        return copy(anp.ravel(a, order))

    array.__doc__ = plain_array.__doc__
    g["array"] = array
    g["copy"] = copy
    register_box_method("flatten", flatten)
