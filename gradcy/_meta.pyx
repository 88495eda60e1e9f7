"""ArrayMeta, the metadata a saved record keeps instead of a buffer its VJP does not read, and
the shape-and-dtype test of a cotangent against an array or an ArrayMeta.

Contract: _meta.pxd. _saved._meta_of builds ArrayMeta objects; this module
owns no state.
"""
cimport cython
from cpython.tuple cimport PyTuple_GET_ITEM, PyTuple_GET_SIZE

cimport numpy as cnp

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


cdef bint _same_shape_dtype(object g, object target) except -1:
    cdef int nd, d
    cdef cnp.npy_intp* dims
    cdef tuple shape
    if not cnp.PyArray_CheckExact(g):
        return False
    if type(target) is ArrayMeta:
        shape = (<ArrayMeta>target).shape
        tdtype = (<ArrayMeta>target).dtype
        if shape is None:           # an ArrayMeta made from Python, not by the tape
            return False
    elif cnp.PyArray_Check(target):
        return (cnp.PyArray_SAMESHAPE(<cnp.ndarray>g, <cnp.ndarray>target)
                and cnp.PyArray_TYPE(<cnp.ndarray>g) == cnp.PyArray_TYPE(<cnp.ndarray>target))
    else:
        return False
    nd = cnp.PyArray_NDIM(<cnp.ndarray>g)
    if nd != PyTuple_GET_SIZE(shape):
        return False
    dims = cnp.PyArray_DIMS(<cnp.ndarray>g)
    for d in range(nd):
        if dims[d] != <cnp.npy_intp>(<object>PyTuple_GET_ITEM(shape, d)):
            return False
    gdtype = <object>cnp.PyArray_DESCR(<cnp.ndarray>g)
    return gdtype is tdtype or gdtype == tdtype


cdef Py_ssize_t _nbytes(object a) except -1:
    """Bytes of array a: an ndarray's, or the nbytes another array type declares (0 when it
    cannot say, e.g. dask arrays of unknown shape)."""
    if cnp.PyArray_Check(a):
        return cnp.PyArray_NBYTES(<cnp.ndarray>a)
    try:
        return int(a.nbytes)
    except (AttributeError, TypeError, ValueError, OverflowError):
        return 0
