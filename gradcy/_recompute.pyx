"""Recomputed outputs (Tape.recompute): a saved record keeps a Recomputed stand-in in place of
the output of a cheap elementwise op whose own record holds all its inputs, and the backward
pass makes that output again from the record before the VJP that reads it runs.

Contract: _recompute.pxd. A Recomputed owns its ArrayMeta; the record that holds it releases it
(Tape._release_saved). _materialize's outputs belong to the caller (the sweep's _run_vjp).
"""
cimport cython
from cpython.object cimport PyObject_Call
from cpython.tuple cimport PyTuple_GET_ITEM, PyTuple_GET_SIZE
from libc.stdint cimport int32_t

cimport numpy as cnp

from gradcy._tape cimport Tape, Node, ParentRef, NODE_RELEASED, NODE_RECOMPUTE, NODE_STALE
from gradcy._primitive cimport Primitive
from gradcy._saved cimport ArrayMeta, _meta_of
from gradcy._box cimport Box

cnp.import_array()


cdef bint _recompute_default = False


def set_recompute_default(bint on):
    """Whether new tapes recompute (Tape.recompute) unless told otherwise; returns the old
    setting."""
    global _recompute_default
    old = _recompute_default
    _recompute_default = on
    return old


@cython.final
@cython.auto_pickle(False)
cdef class Recomputed:
    """A saved record's stand-in for the output of node `node` (an op whose own record holds
    all its inputs): the backward pass makes the output again from that record before running
    the VJP that reads it, so the record does not hold it meanwhile."""

    def __repr__(self):
        return f"Recomputed(node={self.node}, {self.meta!r})"


cdef bint _record_holds_inputs(Node* n) noexcept:
    """Whether node n's saved record holds every argument of its call as a plain value (no
    metadata, no traced value of an outer differentiation, no keyword arguments)."""
    cdef Py_ssize_t j
    cdef object v
    if n.saved_args is NULL or n.prim is NULL or not (<Primitive>n.prim).recomputable:
        return False
    if n.saved_kwargs is not NULL and <object>n.saved_kwargs is not None:
        return False
    if n.flags & (NODE_RELEASED | NODE_RECOMPUTE | NODE_STALE):
        return False
    for j in range(PyTuple_GET_SIZE(<object>n.saved_args)):
        v = <object>PyTuple_GET_ITEM(<object>n.saved_args, j)
        if type(v) is ArrayMeta or type(v) is Box or type(v) is Recomputed \
                or type(v) is tuple or type(v) is list:
            return False
    return True


cdef tuple _recompute_args(Tape top, ParentRef* refs, int32_t nrefs, tuple sargs):
    """sargs with the outputs of recomputable parents replaced by Recomputed stand-ins (a new
    tuple), or sargs itself when none is."""
    cdef int32_t k
    cdef Recomputed r
    cdef list out = None
    cdef object v
    for k in range(nrefs):
        v = <object>PyTuple_GET_ITEM(sargs, refs[k].argnum)
        if not cnp.PyArray_CheckExact(v) or not _record_holds_inputs(&top.nodes[refs[k].node]):
            continue
        if out is None:
            out = list(sargs)
        r = Recomputed.__new__(Recomputed)
        r.node = refs[k].node
        r.meta = _meta_of(v)
        out[refs[k].argnum] = r
    if out is None:
        return sargs
    return tuple(out)


cdef tuple _materialize(Tape t, tuple args):
    """args with each Recomputed stand-in replaced by the output made again from its node's
    record."""
    cdef list out = list(args)
    cdef Node* n
    cdef Py_ssize_t j
    for j in range(len(out)):
        if type(out[j]) is Recomputed:
            n = &t.nodes[(<Recomputed>out[j]).node]
            if n.saved_args is NULL or n.prim is NULL:
                raise RuntimeError(f"backward: the record that a recomputed value of node "
                                   f"{(<Recomputed>out[j]).node} is made from was released")
            out[j] = PyObject_Call((<Primitive>n.prim).fun, <tuple>n.saved_args, <object>NULL)
    return tuple(out)
