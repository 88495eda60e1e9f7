"""Cotangent values: SparseCotangent (what a read x[index] sends back) and the sum of two
cotangents.

Contract: _cotangents.pxd. No state: a SparseCotangent lives in a node's cotangent slot of
its tape (_tape.pyx) until the sweep consumes it or the tape is released.
"""
cimport cython

import numpy as _np

cdef object _ndarray = _np.ndarray
cdef object _add = _np.add
from gradcy._dask_ops import elementwise as _dask_elementwise  # no-cython-lint


@cython.final
@cython.auto_pickle(False)   # (the generated __setstate__ reads its tuple unchecked)
cdef class SparseCotangent:
    """A cotangent that is zero except at `index` of an array of `shape`: what a read x[index]
    sends back. Added into an engine-owned dense slot in place (O(size of the read)), and made
    dense only when a VJP reads it."""

    def __init__(self, index, values, shape, dtype, advanced):
        self.index = index
        self.values = values
        self.shape = tuple(shape)
        self.dtype = _np.dtype(dtype)
        self.advanced = advanced

    cpdef add_into(self, dense):
        """dense[index] += values, in place."""
        if self.advanced:
            _np.add.at(dense, self.index, self.values)
        else:
            dense[self.index] += self.values

    cpdef dense(self):
        """The full array."""
        out = _np.zeros(self.shape, self.dtype)
        self.add_into(out)
        return out

    def __add__(self, other):
        out = self.dense()
        if type(other) is SparseCotangent:
            (<SparseCotangent>other).add_into(out)
            return out
        return out + other

    def __radd__(self, other):
        return self.__add__(other)


cdef object _add_cotangents(object a, object b):
    """a + b for cotangents; containers add elementwise, None meaning zero."""
    if a is None:
        return b
    if b is None:
        return a
    if isinstance(a, (tuple, list)) and isinstance(b, (tuple, list)):
        return tuple([_add_cotangents(x, y) for x, y in zip(a, b)]) if isinstance(a, tuple) \
            else [_add_cotangents(x, y) for x, y in zip(a, b)]
    if type(a) is dict and type(b) is dict:
        return {k: _add_cotangents(a.get(k), b.get(k)) for k in a}
    if type(a) is not _ndarray and type(a) is type(b) and hasattr(type(a), "__dask_graph__"):
        # two Dask arrays: one blockwise add where the chunks agree (about a quarter of the
        # client's time of Dask's operator, which inspects its function's signature on every
        # call), else the ufunc
        r = _dask_elementwise(_add, a, b)
        return _add(a, b) if r is None else r
    return a + b
