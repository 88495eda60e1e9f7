"""What NumPy code does with traced values beyond calling functions on arrays: lists of traced
values passed where an array goes (np.mean([a, b])), r_ and c_ (index-expression
concatenation), the integer scalar types (int64(x) of a traced x is a constant), make_diagonal
(the complement of diagonal), and autograd.numpy's helpers (metadata, parse_einsum_input,
wrap_if_boxes_inside, wrap_intdtype)."""

import numpy as _np

from .. import _core
from .._core import Box
from ..registry import defjvp, defvjp_direct, notrace_primitive, primitive
from . import _wrap

try:
    from numpy._core.einsumfunc import _parse_einsum_input
except ImportError:  # NumPy 1.x
    from numpy.core.einsumfunc import _parse_einsum_input

__all__ = [
    "r_",
    "c_",
    "r_class",
    "c_class",
    "make_diagonal",
    "metadata",
    "parse_einsum_input",
    "wrap_if_boxes_inside",
    "wrap_intdtype",
    "int8",
    "int16",
    "int32",
    "int64",
    "integer",
    "notrace_functions",
    "numpy_version",
]

numpy_version = _np.__version__


# =============================================================================
# Lists of traced values as array arguments
# =============================================================================
# functions whose list arguments are structure, not one array (np.block([[A, B]]))
_LISTS_ARE_STRUCTURE = {_np.block}


def _contains_box(obj):
    if type(obj) is Box:
        return True
    return isinstance(obj, (list, tuple)) and any(_contains_box(e) for e in obj)


def lists_as_arrays(prim, args):
    """args with each list/tuple argument that holds traced values made one traced array
    (gradcy.numpy.array), as NumPy makes an array of an array_like argument; None when there
    is none (or the function takes lists as structure)."""
    if prim.fun in _LISTS_ARE_STRUCTURE:
        return None
    new, changed = list(args), False
    for i, a in enumerate(args):
        if type(a) in (list, tuple) and _contains_box(a):
            new[i] = _wrap.array(a)
            changed = True
    return tuple(new) if changed else None


_core.install_hooks(list_arg=lists_as_arrays)


def _has_box(items):
    return any(type(v) is Box for v in items)


class r_class:
    """numpy.r_: r_[a, b, 1:4] concatenates along the first axis (slices become aranges);
    traced arrays among the items stay traced."""

    def __getitem__(self, key):
        items = key if isinstance(key, tuple) else (key,)
        if not _has_box(items):
            return _np.r_[key]
        return _wrap.concatenate(self._items(items), axis=self.axis)

    axis = 0

    def _items(self, items):
        w = _wrap
        if isinstance(items[0], str):
            raise NotImplementedError(
                f"gradcy.numpy.{type(self).__name__[0]}_ with a string directive "
                f"({items[0]!r}) and traced values; use gradcy.numpy.concatenate"
            )
        out = []
        for v in items:
            if isinstance(v, slice):
                v = _np.r_[v]
            out.append(self._shape(w, v))
        return out

    def _shape(self, w, v):
        return w.atleast_1d(v)


class c_class(r_class):
    """numpy.c_: c_[a, b] stacks 1-D items as columns (and concatenates 2-D ones) along the
    last axis; traced arrays among the items stay traced."""

    axis = -1

    def __getitem__(self, key):
        items = key if isinstance(key, tuple) else (key,)
        if not _has_box(items):
            return _np.c_[key]
        return _wrap.concatenate(self._items(items), axis=-1)

    def _shape(self, w, v):
        v = w.atleast_1d(v)
        return w.reshape(v, (-1, 1)) if w.ndim(v) == 1 else v


r_ = r_class()
c_ = c_class()


# =============================================================================
# Integer scalar types: calling one on a traced value gives a constant
# =============================================================================
class _IntTypeMeta(type):
    def __call__(cls, *args, **kwargs):
        args = [a._value if type(a) is Box else a for a in args]
        while any(type(a) is Box for a in args):
            args = [a._value if type(a) is Box else a for a in args]
        return cls._numpy_type(*args, **kwargs)

    def __instancecheck__(cls, obj):
        return isinstance(obj, cls._numpy_type)

    def __subclasscheck__(cls, sub):
        return issubclass(sub, cls._numpy_type)


def wrap_intdtype(cls):
    """The numpy scalar type cls, callable on traced values (whose plain value it converts):
    calls return instances of cls itself, isinstance and numpy dtypes treat it as cls."""
    return _IntTypeMeta(
        cls.__name__, (cls,), {"_numpy_type": cls, "__module__": __name__, "__doc__": cls.__doc__}
    )


int8, int16, int32, int64 = (wrap_intdtype(t) for t in (_np.int8, _np.int16, _np.int32, _np.int64))
integer = wrap_intdtype(_np.integer)


# =============================================================================
# make_diagonal
# =============================================================================
def _make_diagonal(D, offset=0, axis1=0, axis2=1):
    """The arrays whose diagonal over the last two axes is D's last axis (the inverse of
    diagonal(A, axis1=-1, axis2=-2)); only offset=0, axis1=-1, axis2=-2 are supported."""
    if not (offset == 0 and axis1 == -1 and axis2 == -2):
        raise NotImplementedError(
            "gradcy.numpy.make_diagonal supports offset=0, axis1=-1, axis2=-2 only"
        )
    D = _np.asarray(D)
    out = _np.zeros(D.shape + D.shape[-1:], D.dtype)
    _np.einsum("...ii->...i", out)[...] = D
    return out


make_diagonal = primitive(_make_diagonal, "gradcy.numpy.make_diagonal")
defvjp_direct(
    make_diagonal,
    lambda g, ans, D, offset=0, axis1=0, axis2=1: _wrap.diagonal(g, offset, axis1, axis2),
    save=(),
)
defjvp(make_diagonal, "same")


# =============================================================================
# autograd.numpy's helpers
# =============================================================================
@notrace_primitive
def metadata(A):
    """(shape, ndim, result_type, iscomplexobj) of A."""
    return _np.shape(A), _np.ndim(A), _np.result_type(A), _np.iscomplexobj(A)


def parse_einsum_input(*args):
    """numpy's parse of einsum's arguments: (input subscripts, output subscripts, operands).
    Traced operands come back as they were given (their gradient still flows); the
    subscripts are strings."""
    plain = []
    for a in args:
        while type(a) is Box:
            a = a._value
        plain.append(a)
    in_subs, out_subs, operands = _parse_einsum_input(tuple(plain))
    given = args[1:] if isinstance(plain[0], str) else args[0::2][: len(operands)]
    operands = [g if type(g) is Box else o for g, o in zip(given, operands)]
    return in_subs, out_subs, operands


def wrap_if_boxes_inside(raw_array, slow_op_name=None):
    """An object array of traced values as one traced array (other arrays unchanged)."""
    if raw_array.dtype == _np.dtype("O"):
        w = _wrap
        return w.reshape(w.array(list(raw_array.ravel())), raw_array.shape)
    return raw_array


notrace_functions = [_np.ndim, _np.shape, _np.iscomplexobj, _np.result_type]
