# Contract of gradcy/_saved.pyx: the compact form of a saved record, which _tape's recording
# (and _recompute, _fuse) asks for, and ArrayMeta, what it keeps in place of a buffer its rules
# do not read. What it returns belongs to the caller's record: an ArrayMeta owns nothing but its
# fields (released with it) and lives in the saved records of its tape (released with the
# record, _tape.pxd) and in this module's caches. The caches (the last ArrayMeta made, the 64
# most recent ones and keyword dicts, all immutable) live for the process. It cimports Box
# (_box.pxd) and the array types (_hooks.pxd), which cimport _tape: its module body calls
# nothing of theirs.
cimport numpy as cnp
from cpython.tuple cimport PyTuple_GET_ITEM, PyTuple_GET_SIZE


cdef class ArrayMeta:
    # Shape and dtype of a value whose buffer a VJP declared it does not need.
    cdef readonly tuple shape     # the value's shape
    cdef readonly object dtype    # the value's numpy dtype
    cdef readonly object type     # the value's Python type (ndarray, float, numpy.float32, ...)


# what a saved record holds for a value it does not keep: an ArrayMeta for a buffer (shared by
# values of one shape, dtype and type), the value itself for small Python objects (meta_of)
cdef object _meta_of(object v)
# an equal dict shared by the records of calls with the same small keyword arguments (ints,
# bools, strings, None; at most 4), or kwargs itself
cdef object _shared_kwargs(dict kwargs)


# True when g is an exact ndarray with the shape and dtype of target (an ndarray or ArrayMeta):
# the test of every cotangent a rule returns (_rules) and of every tangent (_tape), inline
cdef inline bint _same_shape_dtype(object g, object target) except -1:
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
