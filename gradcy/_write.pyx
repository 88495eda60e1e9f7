"""What the write path of gradcy/numpy/inplace.py asks about a tape before writing into a
traced array: who else references it (untracked_sharers), and whether a traced value is a
basic-index view of a buffer's current version (view_index); and the write primitive's
function (write_into).

Contract: _write.pxd. Reads the tape's arena, owns nothing. (The write recorded by the core
itself, Box.__setitem__'s fast path, is _tape._setitem_fast: it runs inside Box.)
"""
from cpython.object cimport PyObject
from cpython.tuple cimport PyTuple_GET_SIZE

cimport numpy as cnp

from gradcy._tape cimport Tape, Box, Node, Primitive, NODE_LEAF, NODE_STALE
from gradcy._regions cimport _is_basic_index, _root_key, OwnedBuffer

cnp.import_array()

cdef extern from "Python.h":
    Py_ssize_t Py_REFCNT(PyObject* o)


def write_into(buf, idx, value):
    """buf[idx] = value, in place; returns buf (the write primitive's function)."""
    buf[idx] = value
    return buf


cdef bint _unexplained(Tape tape, Py_ssize_t start, object arr, Py_ssize_t extra,
                       object own_view) except -1:
    """Whether, of the `extra` references to ndarray `arr` beyond the expected ones, some are
    held by something other than the saved records of nodes start, ... (directly, or through
    a saved array whose base is arr and that nothing else holds). `own_view`: a view of arr
    whose reference is among the expected ones."""
    cdef Py_ssize_t i
    cdef Node* node
    cdef dict views = {}
    for i in range(max(start, 0), tape.n_nodes):
        node = &tape.nodes[i]
        if node.saved_args is NULL:
            continue
        items = [<object>node.saved_ans] if node.saved_ans is not NULL else []
        items.extend(<tuple>node.saved_args)
        if node.saved_kwargs is not NULL and type(<object>node.saved_kwargs) is dict:
            items.extend((<dict>node.saved_kwargs).values())
        for x in items:
            if x is arr:
                extra -= 1
            elif (cnp.PyArray_Check(x) and x is not own_view
                    and cnp.PyArray_BASE(<cnp.ndarray>x) == <PyObject*>arr):
                entry = views.get(id(x))
                if entry is None:
                    views[id(x)] = [x, 1]
                else:
                    entry[1] += 1
        del items
    x = None
    for entry in views.values():
        extra -= 1                           # the saved view's own reference to arr
        x = entry[0]
        # its holders: its saved slots, the entry, this local (and `x` left over: none)
        if Py_REFCNT(<PyObject*>x) > <Py_ssize_t>entry[1] + 2:
            return True
    return extra > 0


def untracked_sharers(Box box not None, Py_ssize_t caller_refs):
    """For a write into box's value, an ndarray the tape does not own (gradcy moves the Box to
    a new array instead): 1 when something other than the tape's saved records references
    that array (a traced view of it, another traced value of the same array), 2 when it is a
    view of an array something other than the saved records references, 3 when NumPy made it
    read-only, else 0. NumPy would show the write through those; saved records keep their
    values. 0 for an input (a leaf of any of the nested traces) and a non-array; under nested
    differentiation, 3, or 1 / 2 for an input's memory only, else 0. `caller_refs`: the references
    the caller's frames hold."""
    cdef Tape tape = box._tape
    cdef Node* node
    cdef Py_ssize_t start, k, p
    cdef PyObject* b
    cdef bint nested = False
    while True:
        # nested differentiation: box's value is an outer trace's Box; the outermost one holds
        # the array (an inner Box holds only the Box inside it)
        if tape.released or box._node < 0 or box._node >= tape.n_nodes:
            return 0
        if tape.nodes[box._node].flags & NODE_LEAF:
            return 0
        if type(box._value) is not Box:
            break
        box = <Box>box._value
        tape = box._tape
        nested = True
    if not cnp.PyArray_CheckExact(box._value):
        return 0
    if not cnp.PyArray_ISWRITEABLE(<cnp.ndarray>box._value):
        return 3
    if nested:
        # the inner traces' saved records hold outer Boxes of this array and of its views,
        # which the counts below cannot tell from a user's names for them: only an input's
        # memory is refused (the input itself returned by real, or a view of it: NumPy would
        # change the input, which gradcy never writes)
        entry = tape.inputs.get(_root_key(box._value)) if tape.inputs is not None else None
        if entry is None:
            return 0
        return 1 if (<OwnedBuffer>entry).root is box._value else 2
    node = &tape.nodes[box._node]
    start = box._node
    for k in range(node.nparents):
        p = tape.parents[node.parent_start + k].node
        if p < start:
            start = p
    v = box._value                       # holders expected: box, this local, the caller's
    if Py_REFCNT(<PyObject*>v) > 2 + caller_refs and _unexplained(
            tape, start, v, Py_REFCNT(<PyObject*>v) - 2 - caller_refs, None):
        return 1
    b = cnp.PyArray_BASE(<cnp.ndarray>v)
    if b is NULL:
        return 0
    base = <object>b                     # holders expected: v's base pointer, this local
    if not cnp.PyArray_Check(base):
        return 2
    if Py_REFCNT(b) > 2 and _unexplained(tape, start, base, Py_REFCNT(b) - 2, v):
        return 2
    return 0


def view_index(Box view not None, Box buf not None):
    """idx when `view` is buf[idx] for a basic index, taken by the getitem primitive from buf's
    current version (the common view, written through cheaply); else None."""
    cdef Tape tape = view._tape
    cdef Node* node
    if (tape is not buf._tape or tape.released or view._node < 0 or view._node >= tape.n_nodes
            or buf._node < 0):
        return None
    node = &tape.nodes[view._node]
    if (node.prim is NULL or not (<Primitive>node.prim).basic_view or node.nparents != 1
            or node.saved_args is NULL or node.flags & NODE_STALE
            or tape.parents[node.parent_start].node != buf._node
            or PyTuple_GET_SIZE(<tuple>node.saved_args) < 2):
        return None
    idx = (<tuple>node.saved_args)[1]
    return idx if _is_basic_index(idx) else None
