"""The traced value: Box (an ndarray-like stand-in whose every operation is a gradcy
primitive), its registered subclasses for value types of the user's own, and the front end's
helpers on Boxes (transfer_box, is_box, box_value).

Contract: _box.pxd. A Box holds its value and its Tape (released with the Box, whose
__dealloc__ tells the tape its node lost its Box: Tape._box_dropped); the Tape records Boxes
(make_box, in _tape) and never holds them.
"""
cimport cython
from cpython.object cimport PyObject
from cpython.dict cimport PyDict_GetItem

import numpy as _np
cimport numpy as cnp

from gradcy._errors import EscapedValueError, TracerArrayConversionError
from gradcy._tape cimport Tape, _DETACHED, NODE_CONSTANT, NODE_BOX_ALIVE
from gradcy._primitive cimport Primitive
from gradcy._hooks cimport (_EMPTY, _ufunc_map, _function_map, _getitem_primitive, _method,
                            _is_array_type, _box_methods)
from gradcy._write cimport _setitem_fast

cnp.import_array()

cdef extern from "Python.h":
    ctypedef struct PySequenceMethods:
        void* sq_item
    ctypedef struct PyTypeObject:
        PySequenceMethods* tp_as_sequence
        const char* tp_name
        PyObject* tp_dict
    void PyType_Modified(PyTypeObject* t)


# =============================================================================
# Box subclasses for value types of the user's own (Box.register): value type -> subclass,
# and the subclass -> itself (a value of an outer differentiation traced again)
# =============================================================================
cdef class _TypeMappings(dict):
    """Box.type_mappings (autograd's): value type -> the Box subclass of its traced values.
    An entry written into it registers: a Box subclass as Box.register does, any other
    callable (autograd's box factory, e.g. one that refuses values that are not trainable) as
    a check that a differentiation calls on each of its inputs of that type,
    factory(value, None, None), before tracing it (what it returns is not used)."""

    def __setitem__(self, value_type, box_type):
        if isinstance(box_type, type) and issubclass(box_type, Box):
            _register_box_type(box_type, value_type)
        elif callable(box_type) and isinstance(value_type, type):
            _box_factories[value_type] = box_type
        else:
            raise TypeError(f"Box.type_mappings[{value_type!r}] = {box_type!r}: the key is a "
                            f"class of values, the value a Box subclass or a callable "
                            f"factory(value, trace, node)")

    def __missing__(self, value_type):
        return _box_factories[value_type]


cdef dict _box_type_of = _TypeMappings()
cdef dict _box_factories = {}
cdef set _box_types = set()
cdef Py_ssize_t _n_box_subtypes = 0    # 0 until a subclass is registered: exact-type checks suffice


cdef int _register_box_type(object cls, object value_type) except -1:
    global _n_box_subtypes
    if not isinstance(value_type, type):
        raise TypeError(f"{getattr(cls, '__name__', cls)}.register: value_type must be a class "
                        f"(the type of the values to trace), got {value_type!r}")
    if cls is Box:
        # Box is the default for every type; an ndarray subclass registered with it (autograd's
        # ArrayBox.register(T), as PennyLane does for its tensor) is recorded: gradcy then
        # accepts T as autograd does (_arguments.registered_type), instead of refusing it
        if issubclass(value_type, _np.ndarray) and value_type is not _np.ndarray:
            dict.__setitem__(_box_type_of, value_type, Box)
        return 0
    if not (isinstance(cls, type) and issubclass(cls, Box)):
        raise TypeError(f"register: {cls!r} is not a subclass of gradcy's Box")
    if issubclass(value_type, (_np.ndarray, _np.generic, float, complex, int, tuple, list, dict,
                               Box)):
        raise TypeError(
            f"{cls.__name__}.register({value_type.__name__}): gradcy traces "
            f"{value_type.__name__} values with its own Box, which a subclass cannot replace; "
            f"register Box subclasses for value types of your own (a class of yours with a "
            f"VSpace registered for it)")
    dict.__setitem__(_box_type_of, value_type, cls)
    dict.__setitem__(_box_type_of, cls, cls)
    if cls not in _box_types:
        _box_types.add(cls)
        _n_box_subtypes += 1
    return 0


# =============================================================================
# Box operators
# =============================================================================
cdef object _ndarray_array_ufunc = _np.ndarray.__array_ufunc__


cdef bint _defers(object o):
    """o is an array-like container of its own (xarray.DataArray, ...) that implements
    __array_ufunc__: a Box operator leaves the operation to it (it may hold traced values).
    Array types that hold plain numbers (dask, cupy) do not: the Box records the operation."""
    cdef type t = type(o)
    if t is Box or t is float or t is int or t is _np.ndarray or t is complex or t is bool:
        return False
    if _is_array_type(t):
        return False
    uf = getattr(t, "__array_ufunc__", None)
    return uf is not None and uf is not _ndarray_array_ufunc and not issubclass(t, _np.ndarray)


cdef object _binop(str name, object a, object b):
    """Box operator `name` on (a, b): a registered primitive is dispatched directly; an
    operand with an __array_ufunc__ of its own (not an ndarray) gets the operation instead."""
    if (type(a) is not Box and _defers(a)) or (type(b) is not Box and _defers(b)):
        return NotImplemented
    cdef PyObject* found = PyDict_GetItem(_box_methods, name)
    fn = <object>found if found is not NULL else _method(name)     # (_method: the error)
    if type(fn) is Primitive:
        return (<Primitive>fn)._dispatch((a, b), None)
    return fn(a, b)


# =============================================================================
# The traced value
# =============================================================================
cdef object _array_attr(Box box, str name, object numpy_fn):
    """Attribute `name` (shape, ndim, size, dtype, nbytes) of box's value: the value's own when
    it has it (an ndarray, a Box of an outer trace, an array of another library), else
    numpy_fn(value) for Python scalars and lists (None: numpy.asarray(value)'s attribute)."""
    v = box._value
    if cnp.PyArray_Check(v) or type(v) is Box or _is_array_type(type(v)):
        return getattr(v, name)
    if numpy_fn is None:
        return getattr(_np.asarray(v), name)
    return numpy_fn(v)


cdef inline object _read(Box box, str kind, object value):
    """value, which Python code read from box's contents (bool(box), box.shape, ...); a
    const_graph recording is told of it (its replay checks that the read gives the same)."""
    if box._tape.recorder is not None:
        box._tape.recorder.read(box, kind, value)
    return value


@cython.freelist(64)   # (Cython uses the free list for exact Boxes only, not subclasses)
@cython.no_gc   # a Box refers to its tape and a plain value; neither refers back to Boxes of it
cdef class Box:
    """A value traced by a differentiation. Behaves like the ndarray it wraps: every operation
    on it is a gradcy primitive. `_value` is the plain value (not traced).

    Values of a type of your own get a Box subclass of your own (as in autograd):
    ``class MyBox(Box, MyType): ...; MyBox.register(MyType)`` makes every traced value whose
    plain value is exactly a MyType a MyBox (primitives see through it like through a Box);
    register a VSpace for MyType too (``MyVSpace.register(MyType)``)."""

    __array_priority__ = 1000.0
    types = _box_types               # Box and its registered subclasses (autograd's Box.types)
    type_mappings = _box_type_of     # value type -> Box subclass (autograd's Box.type_mappings)

    @classmethod
    def register(cls, value_type):
        """Make the traced values whose plain value is exactly of type `value_type` instances
        of this Box subclass. Box.register(t) (Box itself) changes nothing: Box is the default
        for every type."""
        _register_box_type(cls, value_type)

    def __cinit__(self, *args, **kwargs):
        # a Box made by anything but make_box (Box.__new__ from Python, or Box(value, trace,
        # node) as autograd's box factories call it) is a value of a released tape: using it
        # raises instead of reading an arena that is not there
        self._tape = _DETACHED
        self._node = -1

    def __dealloc__(self):
        # an exception here (a __del__ run by dropping a cotangent) cannot propagate; Cython
        # reports it through sys.unraisablehook
        if self._tape is not None and self._node >= 0:
            self._tape._box_dropped(self._node)

    # ---- ndarray-like attributes ---------------------------------------------------------
    @property
    def shape(self): return _read(self, "shape", _array_attr(self, "shape", _np.shape))

    @property
    def ndim(self): return _array_attr(self, "ndim", _np.ndim)

    @property
    def size(self): return _read(self, "shape", _array_attr(self, "size", _np.size))

    @property
    def dtype(self): return _array_attr(self, "dtype", _np.result_type)

    @property
    def nbytes(self): return _array_attr(self, "nbytes", None)

    @property
    def itemsize(self):
        return self.dtype.itemsize

    @property
    def T(self):
        return _method("transpose")(self)

    @property
    def real(self):
        return _method("real")(self)

    @property
    def imag(self):
        return _method("imag")(self)

    @property
    def trace_id(self):
        return self._tape.trace_id

    def __len__(self):
        return _read(self, "shape", len(self._value))

    def __iter__(self):
        cdef Py_ssize_t i
        for i in range(len(self)):
            yield self[i]

    def __repr__(self):
        state = "released" if self._tape.released else f"node {self._node}"
        return f"Box({self._value!r}, traced by tape {self._tape.trace_id}, {state})"

    def __hash__(self):
        return id(self)

    def __bool__(self):
        return _read(self, "bool", bool(self._value))

    def __index__(self):
        return _read(self, "index", self._value.__index__())

    def __int__(self):
        return _read(self, "int", int(self._value))

    def __float__(self):
        if self._tape.released or self._tape.nodes[self._node].flags & NODE_CONSTANT:
            return float(self._value)
        if self._tape.recorder is not None:     # a const_graph recording: a checked read
            return _read(self, "float", float(self._value))
        raise TracerArrayConversionError(
            "gradcy: float() of a traced value would drop its gradient (storing one traced "
            "element into a plain numpy array does this: d[i] = x[j]). Keep it an array "
            "(x.item() stays traced), or create the buffer that receives traced values with "
            "gradcy.numpy (zeros, empty, ...) instead of plain numpy.")

    def __complex__(self):
        if self._tape.released or self._tape.nodes[self._node].flags & NODE_CONSTANT:
            return complex(self._value)
        if self._tape.recorder is not None:
            return _read(self, "complex", complex(self._value))
        raise TracerArrayConversionError(
            "gradcy: complex() of a traced value would drop its gradient (storing one traced "
            "element into a plain numpy array does this: d[i] = x[j]). Keep it an array, or "
            "create the buffer that receives traced values with gradcy.numpy (zeros, empty, "
            "...) instead of plain numpy.")

    def __array__(self, dtype=None, copy=None):
        if self._tape.recorder is not None:     # a const_graph recording: a checked read
            v = _read(self, "value", self._value)
            return _np.array(v, dtype=dtype, copy=True) if copy else _np.asarray(v, dtype=dtype)
        raise TracerArrayConversionError(
            "gradcy: a traced value was converted to a plain numpy array, which would drop its "
            "gradient. Call the gradcy.numpy version of the function, and create buffers that "
            "receive traced values with gradcy.numpy (zeros, empty, ...), not plain numpy.")

    def __dask_tokenize__(self):
        # Dask names what a graph of its own holds (dask.array.map_blocks, blockwise,
        # dask.delayed) by tokenizing it: a traced value there would sit in the graph outside
        # the tape, its gradient dropped (zero, with only the warning that the output seems
        # independent of the input)
        raise TracerArrayConversionError(
            "gradcy: a traced value was passed to a Dask function that builds a graph of its "
            "own (dask.array.map_blocks, blockwise, dask.delayed...), which would drop its "
            "gradient. Apply gradcy.numpy functions to the Dask array instead, or make the "
            "block function a primitive with gradcy.extend (primitive, defvjp).")

    # ---- NumPy protocols ------------------------------------------------------------------
    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        fn = _ufunc_map.get(ufunc)
        if (fn is None or method != "__call__"
                or ("out" in kwargs and (type(fn) is not Primitive
                                         or (<Primitive>fn).out_arg < 0))):
            if fn is None and "out" not in kwargs:
                # a ufunc of NumPy or of another library (scipy.special.expit): the message
                # names the module the user called and its gradcy twin
                from gradcy.scipy import foreign_ufunc_message
                raise TypeError(foreign_ufunc_message(ufunc, method))
            what = f"numpy.{ufunc.__name__}" + ("" if method == "__call__" else f".{method}")
            if "out" in kwargs:
                what += " with out="
            raise TypeError(f"gradcy: {what} is not differentiable on traced values; use the "
                            f"gradcy.numpy function, or register a primitive with gradcy.extend")
        return fn(*inputs, **kwargs)     # out= goes to the operator layer's out hook

    def __array_function__(self, func, types, args, kwargs):
        fn = _function_map.get(func)
        if fn is None:
            name = getattr(func, "__module__", "numpy") + "." + getattr(func, "__name__", "?")
            raise TypeError(f"gradcy: {name} is not differentiable on traced values; use its "
                            f"gradcy.numpy counterpart, or register a primitive with gradcy.extend")
        return fn(*args, **kwargs)

    # ---- operators --------------------------------------------------------------------------
    def __add__(self, other): return _binop("add", self, other)
    def __radd__(self, other): return _binop("add", other, self)
    def __sub__(self, other): return _binop("subtract", self, other)
    def __rsub__(self, other): return _binop("subtract", other, self)
    def __mul__(self, other): return _binop("multiply", self, other)
    def __rmul__(self, other): return _binop("multiply", other, self)
    def __truediv__(self, other): return _binop("true_divide", self, other)
    def __rtruediv__(self, other): return _binop("true_divide", other, self)
    def __floordiv__(self, other): return _binop("floor_divide", self, other)
    def __rfloordiv__(self, other): return _binop("floor_divide", other, self)
    def __mod__(self, other): return _binop("mod", self, other)
    def __rmod__(self, other): return _binop("mod", other, self)

    def __pow__(self, other, mod=None):
        if mod is not None:
            _raise_pow_mod(self, other, mod)
        return _binop("power", self, other)

    def __rpow__(self, other, mod=None):
        if mod is not None:
            _raise_pow_mod(other, self, mod)
        return _binop("power", other, self)

    def __matmul__(self, other): return _binop("matmul", self, other)
    def __rmatmul__(self, other): return _binop("matmul", other, self)
    # (masks: comparisons of a const_graph recording give traced booleans)
    def __and__(self, other): return _binop("bitwise_and", self, other)
    def __rand__(self, other): return _binop("bitwise_and", other, self)
    def __or__(self, other): return _binop("bitwise_or", self, other)
    def __ror__(self, other): return _binop("bitwise_or", other, self)
    def __xor__(self, other): return _binop("bitwise_xor", self, other)
    def __rxor__(self, other): return _binop("bitwise_xor", other, self)
    def __invert__(self): return _method("invert")(self)
    def __neg__(self): return _method("negative")(self)
    def __pos__(self): return self
    def __abs__(self): return _method("absolute")(self)
    def __eq__(self, other): return _method("equal")(self, other)
    def __ne__(self, other): return _method("not_equal")(self, other)
    def __lt__(self, other): return _method("less")(self, other)
    def __le__(self, other): return _method("less_equal")(self, other)
    def __gt__(self, other): return _method("greater")(self, other)
    def __ge__(self, other): return _method("greater_equal")(self, other)

    def __getitem__(self, idx):
        if _getitem_primitive is not None and cnp.PyArray_CheckExact(self._value):
            return (<Primitive>_getitem_primitive)._dispatch((self, idx), _EMPTY)
        return _method("__getitem__")(self, idx)

    def __setitem__(self, idx, value):
        if not _setitem_fast(self, idx, value):
            _method("__setitem__")(self, idx, value)

    @property
    def at(self):
        """Functional updates: x.at[idx].set(v) / .add(v) / .multiply(v) ... return new arrays."""
        return _method("at")(self)

    def __iadd__(self, other): return _method("__iop__")(self, "add", other)
    def __isub__(self, other): return _method("__iop__")(self, "subtract", other)
    def __imul__(self, other): return _method("__iop__")(self, "multiply", other)
    def __itruediv__(self, other): return _method("__iop__")(self, "true_divide", other)
    def __ifloordiv__(self, other): return _method("__iop__")(self, "floor_divide", other)
    def __imod__(self, other): return _method("__iop__")(self, "mod", other)
    def __ipow__(self, other): return _method("__iop__")(self, "power", other)
    def __imatmul__(self, other): return _method("__iop__")(self, "matmul", other)

    # ---- methods ------------------------------------------------------------------------------
    def sum(self, *a, **k): return _method("sum")(self, *a, **k)
    def mean(self, *a, **k): return _method("mean")(self, *a, **k)
    def prod(self, *a, **k): return _method("prod")(self, *a, **k)
    def max(self, *a, **k): return _method("max")(self, *a, **k)
    def min(self, *a, **k): return _method("min")(self, *a, **k)
    def var(self, *a, **k): return _method("var")(self, *a, **k)
    def std(self, *a, **k): return _method("std")(self, *a, **k)
    def cumsum(self, *a, **k): return _method("cumsum")(self, *a, **k)
    def cumprod(self, *a, **k): return _method("cumprod")(self, *a, **k)
    def ptp(self, *a, **k): return _method("ptp")(self, *a, **k)
    def argmax(self, *a, **k): return _method("argmax")(self, *a, **k)
    def argmin(self, *a, **k): return _method("argmin")(self, *a, **k)
    def argsort(self, *a, **k): return _method("argsort")(self, *a, **k)
    def nonzero(self, *a, **k): return _method("nonzero")(self, *a, **k)
    def all(self, *a, **k): return _method("all")(self, *a, **k)
    def any(self, *a, **k): return _method("any")(self, *a, **k)
    def reshape(self, *a, **k): return _method("reshape")(self, *a, **k)
    def transpose(self, *a): return _method("transpose")(self, *a)
    def swapaxes(self, *a): return _method("swapaxes")(self, *a)
    def ravel(self, *a, **k): return _method("ravel")(self, *a, **k)
    def flatten(self, *a, **k): return _method("flatten")(self, *a, **k)
    def squeeze(self, *a, **k): return _method("squeeze")(self, *a, **k)
    def repeat(self, *a, **k): return _method("repeat")(self, *a, **k)
    def dot(self, *a, **k): return _method("dot")(self, *a, **k)
    def astype(self, *a, **k): return _method("astype")(self, *a, **k)
    def clip(self, *a, **k): return _method("clip")(self, *a, **k)
    def round(self, *a, **k): return _method("round")(self, *a, **k)
    def conj(self): return _method("conj")(self)
    def conjugate(self): return _method("conj")(self)
    def take(self, *a, **k): return _method("take")(self, *a, **k)
    def copy(self, *a, **k): return _method("copy")(self, *a, **k)
    def item(self, *a): return _method("item")(self, *a)
    def trace(self, *a, **k): return _method("trace")(self, *a, **k)
    def diagonal(self, *a, **k): return _method("diagonal")(self, *a, **k)

    def tolist(self):
        if self._tape.released or self._tape.nodes[self._node].flags & NODE_CONSTANT:
            return self._value.tolist()
        if self._tape.recorder is not None:     # a const_graph recording: a checked read
            return _read(self, "tolist", self._value.tolist())
        # (autograd's ArrayBox has no tolist: an AttributeError there)
        raise TracerArrayConversionError(
            "gradcy: x.tolist() of a traced value x returns plain Python numbers, which drop "
            "its gradient (anything computed from them has derivative 0). Keep it an array: "
            "index it (x[i]), iterate over it (for v in x), or use gradcy.numpy functions on "
            "x; call tolist() on the result of the differentiation instead.")

    def view(self, *a, **k):
        # x.view() (same dtype and type): a traced view; a reinterpreting view has no
        # derivative (autograd's ArrayBox has no view: an AttributeError there)
        dtype = k.get("dtype", a[0] if a else None)
        if len(a) + len(k) <= 1 and (dtype is None or (
                not isinstance(dtype, type) or not issubclass(dtype, _np.ndarray))
                and _np.dtype(dtype) == _np.result_type(self._value)):
            return _method("reshape")(self, _np.shape(self._value))
        given = ", ".join([repr(v) for v in a] + [f"{n}={v!r}" for n, v in k.items()])
        raise TypeError(
            f"gradcy: x.view({given}) of a traced value x reinterprets its memory as another "
            f"dtype or type, which has no derivative. Use x.astype(dtype) for a cast (an "
            f"integer cast has derivative 0), or call view() on the result of the "
            f"differentiation instead.")

    def __round__(self, ndigits=None):
        # as for a numpy array (NumPy defines no round() of one); autograd raises too
        raise TypeError(
            f"gradcy: round(x) of a traced value x (Python's round()) is not defined for arrays; "
            f"use np.round(x{'' if ndigits is None else f', {ndigits}'}) (gradcy.numpy.round, "
            f"whose derivative is 0) or x.round().")

    def fill(self, value):
        """x.fill(value): value written into every element (a traced write)."""
        self[...] = value


cdef void _raise_pow_mod(a, b, mod) except *:
    # as NumPy: arrays have no three-argument pow
    raise TypeError(f"unsupported operand type(s) for ** or pow(): '{type(a).__name__}', "
                    f"'{type(b).__name__}', '{type(mod).__name__}' (gradcy: a traced value has "
                    f"no modular power, like numpy arrays)")


# A Box is not a Python sequence (no sq_item; indexing goes through mp_subscript, iteration
# through __iter__): NumPy would otherwise report the TracerArrayConversionError of `d[i] = box`
# for a plain array d as "setting an array element with a sequence".
(<PyTypeObject*>Box).tp_as_sequence.sq_item = NULL
PyType_Modified(<PyTypeObject*>Box)
_box_types.add(Box)


# =============================================================================
# Python-level helpers for the front end
# =============================================================================
def transfer_box(Box target not None, Box source not None):
    """Make `target` the Box of `source`'s node and value (an in-place write gives the buffer
    a new version); `source` is left detached."""
    _transfer_box(target, source)


cdef int _transfer_box(Box target, Box source) except -1:
    if target._tape is not source._tape:
        raise ValueError("transfer_box: the values belong to different tapes")
    cdef Tape tape = target._tape
    if tape.released:
        raise EscapedValueError("transfer_box: the values' tape has been released")
    if target is source:
        return 0
    cdef Py_ssize_t old = target._node
    target._value = source._value
    target._node = source._node
    source._node = -1
    source._tape = _DETACHED
    tape._box_dropped(old)
    if target._node < tape.n_nodes:     # (releasing `old` may have released the tape)
        tape.nodes[target._node].flags |= NODE_BOX_ALIVE
    return 0


cdef dict _type_names = {}     # static type -> the bytes its tp_name points into


def set_type_name(cls, str qualified_name not None):
    """Give the extension type `cls` the dotted name `qualified_name` ("package.module.Name"),
    so that its __module__, __name__ and __qualname__ report it (gradcy.autograd_alias names
    Box autograd.numpy.numpy_boxes.ArrayBox, as libraries that check autograd's class names
    expect)."""
    if not isinstance(cls, type):
        raise TypeError(f"set_type_name: {cls!r} is not a class")
    if cls.__flags__ & (1 << 9):        # a heap type (a Python class): its attributes
        module, _, name = qualified_name.rpartition(".")
        cls.__module__, cls.__name__, cls.__qualname__ = module, name, name
        return
    encoded = qualified_name.encode()
    _type_names[cls] = encoded          # released with the module (tp_name points into it)
    (<PyTypeObject*>cls).tp_name = <const char*>encoded
    PyType_Modified(<PyTypeObject*>cls)


def set_type_attribute(cls, str name not None, value):
    """Set attribute `name` of the extension type `cls` (whose attributes Python cannot set):
    gradcy.autograd_alias sets Box.__array_ufunc__ to None, so that NumPy's operators between
    an ndarray (or a subclass of it with an __array_ufunc__ of its own, such as PennyLane's
    tensor) and a traced value defer to the traced value's operators, as they do for
    autograd's ArrayBox, which has no __array_ufunc__."""
    if not isinstance(cls, type):
        raise TypeError(f"set_type_attribute: {cls!r} is not a class")
    if cls.__flags__ & (1 << 9):
        setattr(cls, name, value)
        return
    (<dict>(<PyTypeObject*>cls).tp_dict)[name] = value
    PyType_Modified(<PyTypeObject*>cls)


def is_box(x):
    return type(x) is Box


def box_value(x):
    """The plain value of a Box (one level), or x itself."""
    return (<Box>x)._value if type(x) is Box else x
