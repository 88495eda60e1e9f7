# Contract of gradcy/_regions.pyx: regions of buffers, root buffers and their sizes, and
# OwnedBuffer.
#
# A region is a tuple of (lo, hi) per axis of a root buffer; None is all of it, () nothing (the
# hull of no region). The root buffer of an array is the ndarray at the end of its chain of
# bases (the one that owns the memory). An OwnedBuffer owns its fields (released with it); the
# OwnedBuffer of a buffer lives in Tape.owned of the tape that owns the buffer and is dropped by
# that tape's release (_tape.pxd).
cimport numpy as cnp
from cpython.object cimport PyObject
from cpython.long cimport PyLong_FromVoidPtr
from cpython.tuple cimport PyTuple_GET_ITEM, PyTuple_GET_SIZE


cdef class OwnedBuffer:
    # A buffer a tape owns (writes into it happen in place): what was saved from it, and
    # which traced views of it exist. Maintained by _owned_note; read by the write path.
    cdef public object root        # the ndarray that owns the memory
    cdef public object site        # "file:line" where the user created it (an input's: how
                                   # many arguments share its memory)
    cdef public object saved       # array('q'): node, position, node,
                                   # position, ... of saved arrays in it
    cdef public object saved_hull  # hull of their regions; () nothing saved, None all of it
    cdef public dict views         # node -> region of traced views of it
    cdef public object view_hull   # hull of the view regions
    cdef public Py_ssize_t view_limit  # prune dead views when the table grows past this
    cdef public object box         # weak reference to the buffer's Box
                                   # (moves with each write), or None
    cdef public bint functional    # nested differentiation: writes make a new version (a copy)
    cdef public object target      # an input's: the owned copy its
                                   # first write made (views go there)
    cdef public list arrays        # an input's, when arguments share its memory: the
                                   # differentiated ones (None: one argument)
    cdef public list owners        # of an array an operation computed (Tape.computed): weak
                                   # references to its traced values that are the array
                                   # itself (its own Box, real or squeeze of it, ...)


cdef object _layout_region(object view, object root)   # the region of root that view covers
cdef int _check_region(object r) except -1        # TypeError unless r is a region
cdef object _region_hull(object a, object b)      # the smallest region covering a and b
# bytes of an array other than an ndarray: the nbytes its type declares (dask, cupy), 0 when
# it cannot say (dask arrays of unknown shape)
cdef Py_ssize_t _nbytes_other(object a) except -1


# Small helpers of the hot paths (recording, the sweep, the write path), inline in every part
# that cimports them (each calls cnp.import_array() at its import).

# the ndarray owning a's memory (the end of ndarray a's chain of bases; a itself when it owns
# its data)
cdef inline object _root_buffer(object a):
    cdef PyObject* base = cnp.PyArray_BASE(<cnp.ndarray>a)
    while base is not NULL and cnp.PyArray_Check(<object>base):
        a = <object>base
        base = cnp.PyArray_BASE(<cnp.ndarray>a)
    return a


# id of ndarray a's root buffer (the key of Tape.owned and Tape.inputs)
cdef inline object _root_key(object a):
    cdef object root = _root_buffer(a)
    return PyLong_FromVoidPtr(<void*>root)


# ints, slices, None, Ellipsis only (idx selects a view: no arrays, lists or bools)
cdef inline bint _is_basic_index(object idx):
    cdef Py_ssize_t k
    if type(idx) is tuple:
        for k in range(PyTuple_GET_SIZE(idx)):
            e = <object>PyTuple_GET_ITEM(idx, k)
            if not (type(e) is int or type(e) is slice or e is None or e is Ellipsis):
                return False
        return True
    return type(idx) is int or type(idx) is slice or idx is Ellipsis or idx is None


# bytes of an array: an ndarray's, or the nbytes another array type declares (_nbytes_other)
cdef inline Py_ssize_t _nbytes(object a) except -1:
    if cnp.PyArray_Check(a):
        return cnp.PyArray_NBYTES(<cnp.ndarray>a)
    return _nbytes_other(a)
