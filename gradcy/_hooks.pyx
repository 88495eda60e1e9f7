"""What the operator layer installs into the engine: the Box methods and operators, the NumPy
functions and ufuncs routed to gradcy's, the array types of other libraries, and the hooks
(install_hooks). Each table and hook is a C global of this module that the other parts cimport
and read through a pointer (no Python lookup).

Contract: _hooks.pxd. Filled when gradcy.numpy is imported; kept for the life of the process.
"""
from cpython.object cimport PyObject
from cpython.dict cimport PyDict_GetItem

import numpy as _np
cimport numpy as cnp

from gradcy._primitive cimport Primitive
from gradcy._box cimport Box

cnp.import_array()


# =============================================================================
# Registries filled by the operator layer
# =============================================================================
cdef dict _EMPTY = {}           # the kwargs of a call that had none (never mutated)
cdef dict _box_methods = {}      # name -> callable(box, *args, **kw): Box operators and methods
cdef dict _ufunc_map = {}        # numpy ufunc -> gradcy function (for __array_ufunc__)
cdef dict _function_map = {}     # numpy function -> gradcy function (for __array_function__)


def register_box_method(str name, fn):
    """Make `fn(box, ...)` the implementation of Box.<name> (operators included: 'add', 'radd',
    '__getitem__', 'sum', ...)."""
    _box_methods[name] = fn


def register_numpy_override(numpy_fn, gradcy_fn):
    """Route calls of a plain-numpy ufunc or function on Boxes to its gradcy counterpart."""
    if isinstance(numpy_fn, _np.ufunc):
        _ufunc_map[numpy_fn] = gradcy_fn
    else:
        _function_map[numpy_fn] = gradcy_fn


# Array types of other libraries that implement NumPy's dispatch protocols and hold plain
# numbers (dask.array.Array, cupy.ndarray): values of the computation like ndarrays, which
# gradcy traces, differentiates and saves as they are (never converted to numpy.ndarray).
# type -> bool, filled on first sight of a type; _any_array_types: some type was True.
cdef dict _array_types = {}
cdef bint _any_array_types = False
_ARRAY_MODULES = ("dask.array", "cupy")


cdef bint _is_array_type(object t) except -1:
    global _any_array_types
    cdef PyObject* known = PyDict_GetItem(_array_types, t)
    if known is not NULL:
        return <object>known is True
    mod = getattr(t, "__module__", None) or ""
    ok = (isinstance(t, type) and not issubclass(t, _np.ndarray)
          and hasattr(t, "__array_function__") and hasattr(t, "__array_ufunc__")
          and any(mod == m or mod.startswith(m + ".") for m in _ARRAY_MODULES))
    _array_types[t] = ok
    if ok:
        _any_array_types = True
    return ok


def register_array_type(t, bint is_array=True):
    """Treat instances of type `t` as array values of their own (like dask.array.Array and
    cupy.ndarray, which are recognised without registration): they implement NumPy's
    __array_function__ / __array_ufunc__ and hold plain numbers, so gradcy traces them,
    saves them as they are and counts their declared nbytes."""
    global _any_array_types
    _array_types[t] = bool(is_array)
    if is_array:
        _any_array_types = True


def is_array_value(x):
    """x is an instance of a registered (or recognised) array type other than numpy.ndarray."""
    return (not cnp.PyArray_Check(x) and type(x) is not Box and type(x) is not float
            and _is_array_type(type(x)))


# =============================================================================
# Hooks the operator layer installs (install_hooks); each is None until installed
# =============================================================================
cdef object _out_hook = None            # out(prim, args, kwargs): a call with an `out` argument
cdef object _getitem_primitive = None   # x[idx] of a traced ndarray goes straight to it
cdef object _list_arg_hook = None       # list_arg(prim, args) -> new args or None
cdef object _tangent_fixer = None       # tangent_fixer(t, ans) -> t as ans's shape and dtype
cdef object _unbroadcast_slow = None    # unbroadcast(g, target): the general reduce and cast
cdef object _write_primitive = None     # gradcy.numpy.setitem
cdef object _before_write = None        # inplace._before_write(tape, info, region)
cdef object _after_write = None         # inplace._after_write(tape, info, region)

cdef tuple _HOOK_NAMES = ("out", "getitem", "list_arg", "tangent_fixer", "unbroadcast",
                          "write", "before_write", "after_write")


def install_hooks(**hooks):
    """Install the operator layer's hooks into the engine, by name (None uninstalls one):

    - out: out(prim, args, kwargs), the handler of calls that pass `out` to a primitive whose
      function has an `out` parameter (Primitive.out_arg >= 0; for nan_to_num, the position of
      `copy`, whose False writes into the argument): it writes into buffers the tape owns, or
      raises for plain arrays, instead of letting the function write untraced numbers; it
      also takes a ufunc's call keywords (dtype=, casting=, ...) on traced values;
    - getitem: the Primitive Box.__getitem__ records when the traced value is a plain ndarray;
    - list_arg: list_arg(prim, args) -> new args or None, called when a primitive's raw
      function refused a traced value inside a list argument (TracerArrayConversionError);
    - tangent_fixer: tangent_fixer(t, ans), which broadcasts a tangent to its output's shape
      and casts it to its dtype, used when the fast check fails;
    - unbroadcast: unbroadcast(g, target), the general unbroadcast (reduce and cast), used by
      unbroadcast() when the fast check fails;
    - write, before_write, after_write (installed together): the write Primitive and the
      hooks before_write(tape, info, region) / after_write(tape, info, region) that keep saved
      values (before the write) and traced views (after it) consistent with a write that
      overlaps them.
    """
    global _out_hook, _getitem_primitive, _list_arg_hook, _tangent_fixer, _unbroadcast_slow
    global _write_primitive, _before_write, _after_write
    for name, fn in hooks.items():
        if name not in _HOOK_NAMES:
            raise TypeError(f"install_hooks: unknown hook {name!r}; the hooks are "
                            f"{', '.join(_HOOK_NAMES)}")
        if fn is None:
            continue
        if name == "getitem" or name == "write":
            if type(fn) is not Primitive:
                raise TypeError(f"install_hooks: hook {name!r} is a gradcy Primitive, got "
                                f"{type(fn).__name__}")
        elif not callable(fn):
            raise TypeError(f"install_hooks: hook {name!r} must be callable, got "
                            f"{type(fn).__name__}")
    given = [name for name in ("write", "before_write", "after_write") if name in hooks]
    if given and len(given) != 3:
        raise TypeError("install_hooks: the hooks write, before_write and after_write are "
                        "installed together (all three in one call)")
    if "out" in hooks:
        _out_hook = hooks["out"]
    if "getitem" in hooks:
        _getitem_primitive = hooks["getitem"]
    if "list_arg" in hooks:
        _list_arg_hook = hooks["list_arg"]
    if "tangent_fixer" in hooks:
        _tangent_fixer = hooks["tangent_fixer"]
    if "unbroadcast" in hooks:
        _unbroadcast_slow = hooks["unbroadcast"]
    if given:
        _write_primitive = hooks["write"]
        _before_write = hooks["before_write"]
        _after_write = hooks["after_write"]


cdef object _method(str name):
    try:
        return _box_methods[name]
    except KeyError:
        raise TypeError(f"gradcy: traced values have no operation '{name}' registered; "
                        f"import gradcy.numpy to register the NumPy operators") from None
