# Contract of gradcy/_meta.pyx: ArrayMeta, the metadata a saved record keeps in place of a
# buffer its VJP does not read (built by _saved._meta_of), and the test of a cotangent's shape
# and dtype against an array or an ArrayMeta. Owns nothing but the fields of each ArrayMeta
# (released with it); an ArrayMeta lives in the saved records of its tape (released with the
# record, _tape.pxd) and in _saved's caches of the last ones made.

cdef class ArrayMeta:
    # Shape and dtype of a value whose buffer a VJP declared it does not need.
    cdef readonly tuple shape     # the value's shape
    cdef readonly object dtype    # the value's numpy dtype
    cdef readonly object type     # the value's Python type (ndarray, float, numpy.float32, ...)


# True when g is an exact ndarray with the shape and dtype of target (an ndarray or ArrayMeta)
cdef bint _same_shape_dtype(object g, object target) except -1


# Bytes of an array: an ndarray's, or the nbytes another array type (dask, cupy) declares
cdef Py_ssize_t _nbytes(object a) except -1
