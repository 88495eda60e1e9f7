"""Regions of buffers and the record of a buffer a tape owns (OwnedBuffer).

Contract: _regions.pxd, which also holds the small hot helpers inline (_root_buffer,
_root_key, _is_basic_index, _nbytes). The root buffer of an array and its bytes, the region
((lo, hi) per axis) of a view in its root's memory, hulls and overlaps of regions, basic
indices, and OwnedBuffer (the record of a buffer a tape writes in place: saved arrays and
traced views in it). No state of
its own: OwnedBuffer objects belong to the Tape.owned dict of their tape (_tape.pyx), which
drops them in release().
"""
cimport cython
from cpython.ref cimport Py_INCREF
from cpython.tuple cimport PyTuple_New, PyTuple_SET_ITEM, PyTuple_GET_ITEM, PyTuple_GET_SIZE

from array import array as _array

cimport numpy as cnp

cnp.import_array()


def root_buffer(a):
    """The ndarray that owns the memory of ndarray `a` (a itself when it owns it)."""
    if not cnp.PyArray_Check(a):
        raise TypeError(f"root_buffer: expected an ndarray, got {type(a).__name__}")
    return _root_buffer(a)


def is_basic_index(idx):
    """Whether idx selects a view (ints, slices, None, Ellipsis only)."""
    return _is_basic_index(idx)


cdef Py_ssize_t _nbytes_other(object a) except -1:
    """Bytes of array a other than an ndarray: the nbytes its type declares (0 when it cannot
    say, e.g. dask arrays of unknown shape)."""
    try:
        return int(a.nbytes)
    except (AttributeError, TypeError, ValueError, OverflowError):
        return 0


def layout_region(view, root):
    """The index ranges ((lo, hi) per axis) of C-contiguous ndarray `root` that `view`, an
    array in root's memory, touches: exact for views made by basic slicing (transposed or not),
    None (all of it) when the view's strides do not map onto root's axes one to one."""
    return _layout_region(view, root)


cdef object _layout_region(object view, object root):
    cdef cnp.ndarray r = <cnp.ndarray?>root
    cdef cnp.ndarray v = <cnp.ndarray?>view
    cdef int nd = cnp.PyArray_NDIM(r), vnd = cnp.PyArray_NDIM(v), k, d, best
    cdef Py_ssize_t item = cnp.PyArray_ITEMSIZE(r), off, vs, rs, q, end, n
    cdef Py_ssize_t span = cnp.PyArray_NBYTES(r)
    cdef cnp.npy_intp* rshape = cnp.PyArray_DIMS(r)
    cdef cnp.npy_intp* rstr = cnp.PyArray_STRIDES(r)
    cdef cnp.npy_intp* vshape = cnp.PyArray_DIMS(v)
    cdef cnp.npy_intp* vstr = cnp.PyArray_STRIDES(v)
    cdef Py_ssize_t lo[32]
    cdef Py_ssize_t hi[32]
    cdef unsigned int used = 0
    if nd == 0 or nd > 32 or not cnp.PyArray_IS_C_CONTIGUOUS(r) or item == 0:
        return None
    off = <Py_ssize_t>(<char*>cnp.PyArray_DATA(v) - <char*>cnp.PyArray_DATA(r))
    if off % item or off < 0:
        return None
    off //= item
    for d in range(nd):
        rs = rstr[d] // item
        lo[d] = off // rs if rs else 0
        off -= lo[d] * rs
        hi[d] = lo[d]
    for k in range(vnd):
        n = vshape[k]
        if n == 1:
            continue
        if n == 0:
            return tuple([(0, 0)] * nd)
        # (a stride longer than root's memory is no view of it; the bound also keeps the
        # divisions below clear of INT_MIN // -1, which traps, for as_strided arrays)
        if vstr[k] % item or vstr[k] > span or vstr[k] < -span:
            return None
        vs = vstr[k] // item
        best = -1
        for d in range(nd):
            rs = rstr[d] // item
            if rs and vs % rs == 0 and (d == 0 or abs(vs // rs) < rshape[d]):
                best = d
                break
        if best < 0 or (used >> best) & 1:
            return None
        used |= 1u << best
        q = vs // (rstr[best] // item)
        end = lo[best] + (n - 1) * q
        if end < lo[best]:
            lo[best] = end
        else:
            hi[best] = end
    for d in range(nd):
        if lo[d] < 0 or hi[d] >= rshape[d]:
            return None
    return tuple([(lo[d], hi[d] + 1) for d in range(nd)])


# =============================================================================
# Owned buffers (gradcy/numpy/inplace.py writes into them): regions are tuples of (lo, hi)
# per axis; None means all of the buffer, () no region at all (the hull of nothing)
# =============================================================================
cdef int _check_region(object r) except -1:
    """r is None or a tuple of (lo, hi) pairs (the regions below read them unchecked)."""
    cdef Py_ssize_t k
    if r is None:
        return 0
    if type(r) is tuple:
        for k in range(PyTuple_GET_SIZE(r)):
            e = <object>PyTuple_GET_ITEM(r, k)
            if type(e) is not tuple or PyTuple_GET_SIZE(e) != 2:
                break
        else:
            return 0
    raise TypeError(f"gradcy: a region is None or a tuple of (lo, hi) pairs, got {r!r}")


cdef object _region_hull(object a, object b):
    cdef Py_ssize_t k, n
    _check_region(a)
    _check_region(b)
    if type(a) is tuple and PyTuple_GET_SIZE(a) == 0:
        return b
    if type(b) is tuple and PyTuple_GET_SIZE(b) == 0:
        return a
    if a is None or b is None:
        return None
    n = min(PyTuple_GET_SIZE(a), PyTuple_GET_SIZE(b))
    out = PyTuple_New(n)
    for k in range(n):
        x = <tuple>PyTuple_GET_ITEM(a, k)
        y = <tuple>PyTuple_GET_ITEM(b, k)
        lo = x[0] if x[0] < y[0] else y[0]
        hi = x[1] if x[1] > y[1] else y[1]
        pair = (lo, hi)
        Py_INCREF(pair)
        PyTuple_SET_ITEM(out, k, pair)
    return out


def region_hull(a, b):
    """The smallest region covering regions a and b."""
    return _region_hull(a, b)


def regions_overlap(a, b):
    """Whether regions a and b share an element (None overlaps everything)."""
    cdef Py_ssize_t k, n
    _check_region(a)
    _check_region(b)
    if a is None or b is None:
        return True
    n = min(PyTuple_GET_SIZE(a), PyTuple_GET_SIZE(b))
    for k in range(n):
        x = <tuple>PyTuple_GET_ITEM(a, k)
        y = <tuple>PyTuple_GET_ITEM(b, k)
        if (x[0] if x[0] > y[0] else y[0]) >= (x[1] if x[1] < y[1] else y[1]):
            return False
    return True


@cython.final
@cython.auto_pickle(False)   # (the generated __setstate__ reads its tuple unchecked)
cdef class OwnedBuffer:
    """A buffer a tape owns: what was saved from it and which traced views of it exist.

    Saved arrays are kept as flat (node, position) pairs; their regions are recomputed from
    the memory layout only when a write overlaps their hull, so each costs a few bytes
    however many steps a loop runs. Views keep their region (the view itself is not held);
    entries of views whose Box is gone are pruned as the table grows."""

    def __init__(self, root, site):
        self.root = root
        self.site = site
        self.saved = _array("q")
        self.saved_hull = ()
        self.views = {}
        self.view_hull = ()
        self.view_limit = 64
        self.box = None
        self.functional = False
        self.target = None
        self.arrays = None
        self.owners = None

    def region_of(self, array):
        """The region of the buffer that `array` (a view into it, or into an earlier version
        of it) covers; None: all of it."""
        if not cnp.PyArray_Check(array):
            raise TypeError(f"OwnedBuffer.region_of: expected an ndarray, got "
                            f"{type(array).__name__}")
        root = _root_buffer(array)
        if array is root:
            return None
        return _layout_region(array, root)

    def describe(self):
        return f"buffer {self.root.shape} {self.root.dtype} created at {self.site}"
