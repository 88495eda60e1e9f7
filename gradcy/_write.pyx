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


cdef Py_ssize_t _start(Tape tape, Py_ssize_t n):
    """The first node whose saved records may hold node n's value: n or its earliest parent."""
    cdef Node* node = &tape.nodes[n]
    cdef Py_ssize_t k, p, start = n
    for k in range(node.nparents):
        p = tape.parents[node.parent_start + k].node
        if p < start:
            start = p
    return start


cdef bint _unexplained_nested(list tapes, list starts, Py_ssize_t j, object o,
                              Py_ssize_t extra, object own, set chain) except -1:
    """Under nested differentiation (tapes[0] innermost, ..., tapes[k - 1] outermost: a Box of
    tapes[m] holds a value of tapes[m + 1], the outermost one an ndarray), whether of the
    `extra` references to `o` (a value of tapes[j - 1]'s Boxes; j == k: an ndarray) beyond the
    expected ones, some are held by something other than the nested traces' saved records:
    directly, through a view of o, or through a Box wrapping o, that only saved records hold
    (found in any trace's records, unwrapping the Boxes saved there, and checked the same
    way). A user's name for a traced value is an innermost Box, which no record holds.
    `own`: a view of o whose reference is expected; `chain`: ids of the written value's own
    Boxes (expected)."""
    cdef Py_ssize_t i, m
    cdef Py_ssize_t k = len(tapes)
    cdef Node* node
    cdef Tape tape
    cdef dict views = {}, wrappers = {}
    cdef bint array = j == k
    for m in range(min(j, k)):
        tape = <Tape>tapes[m]
        for i in range(max(<Py_ssize_t>starts[m], 0), tape.n_nodes):
            node = &tape.nodes[i]
            if node.saved_args is NULL:
                continue
            items = [<object>node.saved_ans] if node.saved_ans is not NULL else []
            items.extend(<tuple>node.saved_args)
            if node.saved_kwargs is not NULL and type(<object>node.saved_kwargs) is dict:
                items.extend((<dict>node.saved_kwargs).values())
            for x in items:
                if x is o:
                    extra -= 1
                    continue
                while True:
                    if (array and cnp.PyArray_Check(x) and x is not own
                            and cnp.PyArray_BASE(<cnp.ndarray>x) == <PyObject*>o):
                        views[id(x)] = x
                    if type(x) is not Box:
                        break
                    if (<Box>x)._value is o:
                        if id(x) not in chain:
                            wrappers[id(x)] = x
                        break
                    x = (<Box>x)._value
            x = None
            del items
    for x in views.values():
        extra -= 1                        # the view's reference to o
        # its holders: the dict, this local, and (checked by the call) records and Boxes
        if _unexplained_nested(tapes, starts, j, x, Py_REFCNT(<PyObject*>x) - 2, None, chain):
            return True
    for x in wrappers.values():
        extra -= 1                        # the wrapping Box's reference to o
        if _unexplained_nested(tapes, starts, j - 1, x, Py_REFCNT(<PyObject*>x) - 2, None,
                               chain):
            return True
    return extra > 0


cdef bint _shared_input(Tape tape, object value):
    """Whether ndarray `value` (an input of tape, maybe an outer trace's Box of one) is in
    memory that another input of tape is in too (the same array passed twice, a view of it)."""
    while type(value) is Box:
        value = (<Box>value)._value
    if tape.inputs is None or not cnp.PyArray_Check(value):
        return False
    entry = tape.inputs.get(_root_key(value))
    return entry is not None and (<OwnedBuffer>entry).site is not None and \
        (<OwnedBuffer>entry).site > 1


def untracked_sharers(Box box not None, Py_ssize_t caller_refs):
    """For a write into box's value, an ndarray the tape does not own (gradcy moves the Box to
    a new array instead): 1 when something other than the tape's saved records references
    that array (a traced view of it, another traced value of the same array), 2 when it is a
    view of an array something other than the saved records references, 3 when NumPy made it
    read-only, 4 for an input (a leaf of any of the nested traces) whose memory another
    input of its trace is in, else 0. NumPy would show the write through those; saved
    records keep their values. 0 for another input and a non-array. Under nested
    differentiation the same, with the saved records of every nested trace counted (they hold
    outer Boxes of the array and of its views; a user's name is an innermost Box), and an
    input's memory (the input itself returned by real, or a view of it) always refused.
    `caller_refs`: the references the caller's frames hold."""
    cdef Tape tape = box._tape
    cdef Py_ssize_t start
    cdef PyObject* b
    cdef list tapes = None, starts = None
    cdef set chain = None
    while True:
        # nested differentiation: box's value is an outer trace's Box; the outermost one holds
        # the array (an inner Box holds only the Box inside it)
        if tape.released or box._node < 0 or box._node >= tape.n_nodes:
            return 0
        if tape.nodes[box._node].flags & NODE_LEAF:
            # an input: 4 when another differentiated input of its trace shares its memory
            return 4 if _shared_input(tape, box._value) else 0
        if type(box._value) is not Box:
            break
        if tapes is None:
            tapes, starts, chain = [], [], set()
        tapes.append(tape)
        starts.append(_start(tape, box._node))
        box = <Box>box._value
        chain.add(id(box))
        tape = box._tape
    if not cnp.PyArray_CheckExact(box._value):
        return 0
    if not cnp.PyArray_ISWRITEABLE(<cnp.ndarray>box._value):
        return 3
    start = _start(tape, box._node)
    v = box._value                       # holders expected: box, this local, the caller's
    if tapes is not None:
        entry = tape.inputs.get(_root_key(v)) if tape.inputs is not None else None
        if entry is not None:            # an input's memory: gradcy never writes it
            return 1 if (<OwnedBuffer>entry).root is v else 2
        tapes.append(tape)
        starts.append(start)
        if Py_REFCNT(<PyObject*>v) > 2 + caller_refs and _unexplained_nested(
                tapes, starts, len(tapes), v, Py_REFCNT(<PyObject*>v) - 2 - caller_refs, None,
                chain):
            return 1
    elif Py_REFCNT(<PyObject*>v) > 2 + caller_refs and _unexplained(
            tape, start, v, Py_REFCNT(<PyObject*>v) - 2 - caller_refs, None):
        return 1
    b = cnp.PyArray_BASE(<cnp.ndarray>v)
    if b is NULL:
        return 0
    base = <object>b                     # holders expected: v's base pointer, this local
    if not cnp.PyArray_Check(base):
        return 2
    if tapes is not None:
        if Py_REFCNT(b) > 2 and _unexplained_nested(tapes, starts, len(tapes), base,
                                                    Py_REFCNT(b) - 2, v, chain):
            return 2
    elif Py_REFCNT(b) > 2 and _unexplained(tape, start, base, Py_REFCNT(b) - 2, v):
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
