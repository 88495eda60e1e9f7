"""The compact form of a saved record: ArrayMeta (what it keeps for a buffer its rules do not
read: shape, dtype and type), _meta_of (an ArrayMeta for a buffer, the value itself for a small
Python object), the one keyword dict that the records of calls with equal small keyword
arguments share (_shared_kwargs), and the shape-and-dtype test of a cotangent against an array
or an ArrayMeta (_same_shape_dtype, inline in _saved.pxd).

Contract: _saved.pxd. Its caches hold recent ArrayMetas and keyword dicts (immutable, shared
by the records that use them) for the life of the process, at most 64 of each.
"""
cimport cython
from cpython.object cimport PyObject
from cpython.ref cimport Py_INCREF
from cpython.tuple cimport PyTuple_New, PyTuple_SET_ITEM, PyTuple_GET_ITEM, PyTuple_GET_SIZE
from cpython.dict cimport PyDict_GetItem
from cpython.long cimport PyLong_FromSsize_t, PyLong_AsSsize_t

import numpy as _np
cimport numpy as cnp

from gradcy._box cimport Box
from gradcy._hooks cimport _any_array_types, _is_array_type

cnp.import_array()


# =============================================================================
# Metadata standing in for unsaved buffers
# =============================================================================
@cython.final
@cython.no_gc
@cython.freelist(64)
@cython.auto_pickle(False)   # (the generated __setstate__ reads its tuple unchecked)
cdef class ArrayMeta:
    """Shape, dtype and type of a value whose buffer a VJP does not need (what the tape keeps
    instead of the buffer). Has `.shape .dtype .ndim .size .type`."""

    @property
    def ndim(self):
        return len(self.shape)

    @property
    def size(self):
        cdef Py_ssize_t n = 1
        for d in self.shape:
            n *= d
        return n

    def __repr__(self):
        return f"ArrayMeta(shape={self.shape}, dtype={self.dtype}, type={self.type.__name__})"


# =============================================================================
# What a saved record keeps
# =============================================================================
cdef ArrayMeta _last_meta = None
cdef dict _recent_metas = {}       # (shape, dtype, type) -> ArrayMeta, at most 64 (then cleared)
cdef dict _recent_kwargs = {}      # items -> an equal keyword dict that records share
                                   # (never mutated)


cdef object _shared_kwargs(dict kwargs):
    """An equal dict shared by the records of calls with the same small keyword arguments
    (axis=1, keepdims=True): one dict for a loop's records instead of one per call. Only
    ints, bools, strings and None are shared (not floats: -0.0 == 0.0); anything else keeps
    the call's dict."""
    cdef object key
    cdef PyObject* found
    if len(kwargs) > 4:
        return kwargs
    for v in kwargs.values():
        t = type(v)
        if not (t is int or t is bool or t is str or v is None):
            return kwargs
    key = tuple([(k, type(v), v) for k, v in kwargs.items()])
    found = PyDict_GetItem(_recent_kwargs, key)
    if found is not NULL:
        return <object>found
    if len(_recent_kwargs) >= 64:
        _recent_kwargs.clear()
    _recent_kwargs[key] = kwargs
    return kwargs


# _last_meta's shape as C integers (when it has at most 8 dimensions), so that the common case
# (a value of the last one's shape, dtype and type) compares C arrays, not Python ints
cdef int _last_nd = -1
cdef cnp.npy_intp _last_dims[8]


cdef inline void _set_last_meta(ArrayMeta m) noexcept:
    global _last_meta, _last_nd
    cdef Py_ssize_t d, nd = PyTuple_GET_SIZE(m.shape)
    _last_meta = m
    _last_nd = -1
    if nd <= 8:
        for d in range(nd):
            _last_dims[d] = <cnp.npy_intp>PyLong_AsSsize_t(<object>PyTuple_GET_ITEM(m.shape, d))
        _last_nd = <int>nd


cdef object _meta_of(object v):
    """What a saved record holds for a value it does not keep: metadata for buffers, the value
    itself for small Python objects (ints, floats, None, strings, dtypes)."""
    cdef ArrayMeta m
    cdef int d, nd
    cdef cnp.npy_intp* dims
    cdef tuple shape
    if cnp.PyArray_Check(v):
        # built from the array struct directly: no attribute lookups on this hot path
        nd = cnp.PyArray_NDIM(<cnp.ndarray>v)
        dims = cnp.PyArray_DIMS(<cnp.ndarray>v)
        m = _last_meta
        # ArrayMeta is immutable: consecutive values of one shape and dtype (a loop over
        # same-shaped arrays) share one
        if (m is not None and _last_nd == nd and m.type is type(v)
                and <PyObject*>m.dtype is <PyObject*>cnp.PyArray_DESCR(<cnp.ndarray>v)):
            for d in range(nd):
                if _last_dims[d] != dims[d]:
                    break
            else:
                return m
        shape = PyTuple_New(nd)
        for d in range(nd):
            dim = PyLong_FromSsize_t(dims[d])
            Py_INCREF(dim)
            PyTuple_SET_ITEM(shape, d, dim)
        # a loop's records alternate between a few shapes: one ArrayMeta per recent shape
        key = (shape, <object>cnp.PyArray_DESCR(<cnp.ndarray>v), type(v))
        cached = PyDict_GetItem(_recent_metas, key)
        if cached is not NULL:
            m = <ArrayMeta>cached
            _set_last_meta(m)
            return m
        m = ArrayMeta.__new__(ArrayMeta)
        m.shape = shape
        m.dtype = <object>cnp.PyArray_DESCR(<cnp.ndarray>v)
        m.type = type(v)
        if len(_recent_metas) >= 64:
            _recent_metas.clear()
        _recent_metas[key] = m
        _set_last_meta(m)
        return m
    if type(v) is Box:
        if (<Box>v)._tape.recorder is not None:     # a const_graph recording: a shape read
            (<Box>v)._tape.recorder.read(v, "shape", None)
        inner = _meta_of((<Box>v)._value)
        if type(inner) is ArrayMeta or type(inner) is tuple or type(inner) is dict or (
                _any_array_types and _is_array_type(type(inner))):
            # (arrays of other types are saved as they are; so is a traced dict's value, as a
            # plain dict is: NumPy would read a dict as a dtype's fields)
            return inner
        m = ArrayMeta.__new__(ArrayMeta)
        m.shape = tuple(_np.shape(inner))
        m.dtype = _np.result_type(inner)
        m.type = type(inner)
        return m
    if isinstance(v, (tuple, list)):
        return tuple([_meta_of(e) for e in v])
    return v


def meta_of(v):
    """What a saved record keeps for a value its rules do not read: ArrayMeta for an array
    (shape, dtype, type), the value itself for small Python objects."""
    return _meta_of(v)
