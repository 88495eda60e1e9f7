"""Writes into buffers a tape owns: the bookkeeping of each owned buffer (the saved arrays and
the traced views in it, noted as they are recorded), the common write the core records itself
(Box.__setitem__'s fast path, setitem_fast), and what the write path of
gradcy/numpy/inplace.py asks about a tape before writing into a traced array: who else
references it (untracked_sharers), and whether a traced value is a basic-index view of a
buffer's current version (view_index); the write primitive's function (write_into); and
what happens when a stale view is used (_resolve_stale: it is taken again from the buffer's
current version by the resolver gradcy/numpy/inplace.py installs, or the use raises).

Arrays an operation computed: their traced views are noted as recorded (Tape.computed), and
the first write into one makes it an owned buffer written in place (adopt), the records that
hold it found through the tape's hold count (copy on write for the records).

Contract: _write.pxd. Reads the tape's arena and fills the OwnedBuffer entries of Tape.owned,
Tape.inputs and Tape.computed; owns the installed resolver (a module global, for the life of
the process) and nothing else.
"""
from cpython.object cimport PyObject
from cpython.tuple cimport PyTuple_GET_ITEM, PyTuple_GET_SIZE
from cpython.dict cimport PyDict_GetItem
from cpython.long cimport PyLong_FromVoidPtr

cimport numpy as cnp

from gradcy._tape cimport Tape, Node, NODE_LEAF, NODE_STALE, NODE_BOX_ALIVE
from gradcy._primitive cimport Primitive
from gradcy._box cimport Box, _transfer_box
from gradcy._hold cimport hold_count
from gradcy._hooks cimport _EMPTY, _write_primitive, _before_write, _after_write
from gradcy._regions cimport (_is_basic_index, _root_key, _root_buffer, _layout_region,
                              _region_hull, OwnedBuffer)
from gradcy._regions import regions_overlap
from weakref import ref as _weakref
import numpy as _np

cnp.import_array()

cdef extern from "Python.h":
    Py_ssize_t Py_REFCNT(PyObject* o)


# =============================================================================
# Stale views: a traced view whose memory a write changed after it was taken (NumPy shows it
# the new values) is taken again from the buffer's current version when it is next used
# =============================================================================
cdef object _stale_resolver = None      # resolve(box) -> bool (gradcy/numpy/inplace.py's)


def install_stale_resolver(resolver):
    """Install resolve(box) -> bool: moves a stale view's Box to the same view of its buffer's
    current version (True), or leaves it (False: the stale-view error is raised)."""
    global _stale_resolver
    if not callable(resolver):
        raise TypeError(f"install_stale_resolver: expected a callable, got "
                        f"{type(resolver).__name__}")
    _stale_resolver = resolver


cdef int _resolve_stale(Tape tape, Box box, str name, Py_ssize_t argpos) except -1:
    """box (a value of tape) is stale: move it to the current version of its view, or raise."""
    if _stale_resolver is not None and _stale_resolver(box):
        if (box._tape is tape and 0 <= box._node < tape.n_nodes
                and not tape.nodes[box._node].flags & NODE_STALE):
            return 0
    raise ValueError(
        f"{name}: argument {argpos} is a view of a buffer that was written to after the view "
        f"was taken, so its values changed under it, and gradcy cannot take it again from the "
        f"buffer's current version (the buffer's own traced value is gone, or the view is no "
        f"strided view of it). Take the view again after the write, or copy it before writing "
        f"(v = buf[...].copy()).")


def write_into(buf, idx, value):
    """buf[idx] = value, in place; returns buf (the write primitive's function)."""
    buf[idx] = value
    return buf


cdef list _saved_items(Node* node):
    """The values node's saved record holds (output, arguments, keyword values); [] once it
    is released."""
    if node.saved_args is NULL:
        return []
    items = [<object>node.saved_ans] if node.saved_ans is not NULL else []
    items.extend(<tuple>node.saved_args)
    if node.saved_kwargs is not NULL and type(<object>node.saved_kwargs) is dict:
        items.extend((<dict>node.saved_kwargs).values())
    return items


cdef bint _unexplained(Tape tape, Py_ssize_t start, object arr, Py_ssize_t extra,
                       object own_view) except -1:
    """Whether, of the `extra` references to ndarray `arr` beyond the expected ones, some are
    held by something other than the saved records of nodes start, ... (directly, or through
    a saved array whose base is arr and that nothing else holds). `own_view`: a view of arr
    whose reference is among the expected ones."""
    cdef Py_ssize_t i
    cdef dict views = {}
    for i in range(max(start, 0), tape.n_nodes):
        for x in _saved_items(&tape.nodes[i]):
            if x is arr:
                extra -= 1
            elif (cnp.PyArray_Check(x) and x is not own_view
                    and cnp.PyArray_BASE(<cnp.ndarray>x) == <PyObject*>arr):
                entry = views.get(id(x))
                if entry is None:
                    views[id(x)] = [x, 1]
                else:
                    entry[1] += 1
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
    cdef Tape tape
    cdef dict views = {}, wrappers = {}
    cdef bint array = j == k
    for m in range(min(j, k)):
        tape = <Tape>tapes[m]
        for i in range(max(<Py_ssize_t>starts[m], 0), tape.n_nodes):
            for x in _saved_items(&tape.nodes[i]):
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
    """Whether ndarray `value` (an input of tape, maybe an outer trace's Box of one) shares
    memory with another argument (the same array passed twice, a view overlapping it). Two
    differentiated arguments in one block that do not overlap (f(a[:1], a[1:])) share none;
    an argument not differentiated in the block (counted in site, not listed in arrays)
    counts as sharing."""
    cdef OwnedBuffer e
    cdef Py_ssize_t n = 0
    while type(value) is Box:
        value = (<Box>value)._value
    if tape.inputs is None or not cnp.PyArray_Check(value):
        return False
    entry = tape.inputs.get(_root_key(value))
    if entry is None:
        return False
    e = <OwnedBuffer>entry
    if e.site is None or e.site <= 1:
        return False
    if e.arrays is None or len(e.arrays) < e.site:
        return True
    for a in e.arrays:
        try:
            n += _np.shares_memory(a, value)
        except _np.exceptions.TooHardError:
            return True
    return n > 1


# what untracked_sharers answers (a Python IntEnum: gradcy._core.Sharers)
cpdef enum Sharers:
    UNSHARED = 0        # nothing NumPy would show the write through (or not an ndarray)
    ARRAY_SHARED = 1    # something other than the saved records references the array
    BASE_SHARED = 2     # it is a view of an array something other than the records references
    READ_ONLY = 3       # NumPy made it read-only
    INPUT_SHARED = 4    # an input whose memory another input of its trace is in


def untracked_sharers(Box box not None, Py_ssize_t caller_refs):
    """For a write into box's value, an ndarray the tape does not own (gradcy moves the Box to
    a new array instead), a Sharers: ARRAY_SHARED when something other than the tape's saved
    records references that array (a traced view of it, another traced value of the same
    array), BASE_SHARED when it is a view of an array something other than the saved records
    references, READ_ONLY when NumPy made it read-only, INPUT_SHARED for an input (a leaf of
    any of the nested traces) whose memory another input of its trace is in, else UNSHARED.
    NumPy would show the write through those; saved records keep their values. UNSHARED for
    another input and a non-array. Under nested differentiation the same, with the saved
    records of every nested trace counted (they hold outer Boxes of the array and of its
    views; a user's name is an innermost Box), and an input's memory (the input itself
    returned by real, or a view of it) always refused.
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
            return UNSHARED
        if tape.nodes[box._node].flags & NODE_LEAF:
            # an input: INPUT_SHARED when another differentiated input of its trace shares its
            # memory
            return INPUT_SHARED if _shared_input(tape, box._value) else UNSHARED
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
        return UNSHARED
    if not cnp.PyArray_ISWRITEABLE(<cnp.ndarray>box._value):
        return READ_ONLY
    start = _start(tape, box._node)
    v = box._value                       # holders expected: box, this local, the caller's
    if tapes is not None:
        entry = tape.inputs.get(_root_key(v)) if tape.inputs is not None else None
        if entry is not None:            # an input's memory: gradcy never writes it
            return ARRAY_SHARED if (<OwnedBuffer>entry).root is v else BASE_SHARED
        tapes.append(tape)
        starts.append(start)
        if Py_REFCNT(<PyObject*>v) > 2 + caller_refs and _unexplained_nested(
                tapes, starts, len(tapes), v, Py_REFCNT(<PyObject*>v) - 2 - caller_refs, None,
                chain):
            return ARRAY_SHARED
    elif Py_REFCNT(<PyObject*>v) > 2 + caller_refs and _unexplained(
            tape, start, v, Py_REFCNT(<PyObject*>v) - 2 - caller_refs, None):
        return ARRAY_SHARED
    b = cnp.PyArray_BASE(<cnp.ndarray>v)
    if b is NULL:
        return UNSHARED
    base = <object>b                     # holders expected: v's base pointer, this local
    if not cnp.PyArray_Check(base):
        return BASE_SHARED
    if tapes is not None:
        if Py_REFCNT(b) > 2 and _unexplained_nested(tapes, starts, len(tapes), base,
                                                    Py_REFCNT(b) - 2, v, chain):
            return BASE_SHARED
    elif Py_REFCNT(b) > 2 and _unexplained(tape, start, base, Py_REFCNT(b) - 2, v):
        return BASE_SHARED
    return UNSHARED


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


# =============================================================================
# The bookkeeping of owned buffers and of inputs: saved arrays and traced views in them
# (_tape records them as it records nodes)
# =============================================================================
cdef inline bint _is_argument(object ans, tuple args) except -1:
    """ans is one of args itself (seen through outer traces' Boxes): the primitive returned an
    argument's array (real or squeeze of a float buffer, ...)."""
    cdef Py_ssize_t i
    for i in range(PyTuple_GET_SIZE(args)):
        a = <object>PyTuple_GET_ITEM(args, i)
        while type(a) is Box:
            a = (<Box>a)._value
        if a is ans:
            return True
    return False


cdef int _note_view(Tape tape, Box box, Py_ssize_t node, object ans, tuple args,
                    bint is_write) except -1:
    """Node `node`'s value `ans` (an ndarray, or an outer trace's value of one): when it is a
    traced view, note it with the array whose memory it is in, so that a later write over that
    memory makes it stale (it is taken again when next used): a buffer the tape owns, an
    input, or an array an operation computed. A primitive that returns an argument's array
    itself (real or squeeze of it) makes a view of all of it; only the write primitive's output
    is the buffer's own new version. `box`: the output's Box. Costs a pointer test for a new
    array. A list or tuple of arrays (split, broadcast_arrays, ...): each of its views is
    noted with the container's node (a write over it makes the container stale: using it
    raises, as its elements' values changed)."""
    cdef PyObject* e
    while type(ans) is Box:
        ans = (<Box>ans)._value
    if type(ans) is list or type(ans) is tuple:
        for a in ans:
            while type(a) is Box:
                a = (<Box>a)._value
            if cnp.PyArray_Check(a):
                _note_view(tape, None, node, a, args, is_write)
        return 0
    if not cnp.PyArray_Check(ans):
        return 0
    if cnp.PyArray_BASE(<cnp.ndarray>ans) is NULL and (is_write or not _is_argument(ans, args)):
        return 0                # a new array, or the buffer's new version
    root = _root_buffer(ans)
    key = PyLong_FromVoidPtr(<void*>root)
    if tape.owned:
        e = PyDict_GetItem(tape.owned, key)
        if e is not NULL:
            return _owned_note(tape, <object>e, True, node, ans, -1)
    if tape.inputs is not None:
        e = PyDict_GetItem(tape.inputs, key)
        if e is not NULL:
            return _note_input_view(tape, <OwnedBuffer>e, node, ans, args)
    return _note_computed(tape, box, node, ans, root, key, args)


cdef int _note_input_view(Tape tape, OwnedBuffer entry, Py_ssize_t node, object ans,
                          tuple args) except -1:
    """ans is in the memory of the input of `entry` (a view of it, or the input itself
    returned by real, squeeze, ...)."""
    root = entry.root
    r = None if root is None or ans is root else _layout_region(ans, root)
    _add_view(tape, entry.target if entry.target is not None else entry, node, r)
    if entry.box is None and root is not None:
        _note_input_box(tape, entry, args)
    return 0


# =============================================================================
# Views of arrays an operation computed: t = f(x); v = t[0] (t.T, reshape, real, ...). NumPy
# shows a write through v in t and in t's other views, so their nodes are noted here (with t's
# own Box) as they are recorded; the first write into t's memory makes t a buffer the tape owns,
# written in place (adopt), and the records that hold t's memory get a copy of what they hold
# before a write overlaps it (the owned buffers' copy on write, _before_write)
# =============================================================================
cdef Box _entry_box(OwnedBuffer entry, object root):
    """A traced value that is the computed array `root` itself (its own Box, or real, squeeze
    of it, ...) noted in `entry` and alive, or None when every one is gone or no longer that
    array (it moved to a new value)."""
    if entry.owners is None:
        return None
    for ref in reversed(entry.owners):
        b = ref()
        if b is None:
            continue
        v = (<Box>b)._value
        while type(v) is Box:
            v = (<Box>v)._value
        if v is root:
            return <Box>b
    return None


cdef bint _entry_live(Tape tape, OwnedBuffer entry, object root) except -1:
    """Whether `entry` is of `root` as it is now: its own Box is alive, or one of the traced
    views it noted is (a view holds the array it is in, so an entry of an earlier array at the
    same address has neither). The newest views are looked at first."""
    cdef Py_ssize_t n
    if _entry_box(entry, root) is not None:
        return True
    for k in reversed(entry.views):
        n = k
        if n < tape.n_nodes and tape.nodes[n].flags & NODE_BOX_ALIVE:
            return True
    return False


cdef bint _entry_dead(Tape tape, OwnedBuffer entry) except -1:
    """Whether every traced value `entry` noted (the array's own values and its views) is gone,
    so that it can be dropped (a new one is made at the array's next view)."""
    for ref in entry.owners:
        if ref() is not None:
            return False
    return not _entry_live(tape, entry, None)


cdef int _note_computed(Tape tape, Box box, Py_ssize_t node, object ans, object root,
                        object key, tuple args) except -1:
    """ans is a traced view of `root`, an array that neither the tape owns nor an input holds:
    note it in Tape.computed, with root's own Box when the call has it among its arguments
    (the first view of root is taken from root itself, unless root never had a Box: an
    operation's internal array, reshape of a scalar); an output that is root itself (`box`,
    of real(t), squeeze(t), ...) is noted as one of root's own traced values too (a write
    needs one of them alive). Every traced view
    of root is noted from the first on (an entry lives while root's Box or one of its views
    does), so a write into root's memory knows every traced value that shows it. Entries hold
    no reference to root (a weak one to its Box); dead ones are pruned as the table doubles."""
    cdef PyObject* e
    cdef OwnedBuffer entry = None
    cdef Py_ssize_t i, n
    if not cnp.PyArray_ISWRITEABLE(<cnp.ndarray>root):
        return 0                # a write into it raises, as in NumPy
    if tape.computed is None:
        tape.computed = {}
    e = PyDict_GetItem(tape.computed, key)
    if e is not NULL and _entry_live(tape, <OwnedBuffer>e, root):
        entry = <OwnedBuffer>e
    else:
        entry = OwnedBuffer.__new__(OwnedBuffer)
        entry.views = {}
        entry.view_hull = ()
        entry.view_limit = 64
        entry.owners = []
        n = len(tape.computed)
        if n >= 64 and n & (n - 1) == 0:
            for k in [k for k, v in tape.computed.items() if _entry_dead(tape, <OwnedBuffer>v)]:
                del tape.computed[k]
        tape.computed[key] = entry
    if _entry_box(entry, root) is None:
        # root's own Box, among the arguments (the first view of root is taken from it, unless
        # it is gone or there never was one); a view of all of it, too: when a write goes in
        # through another of root's own values, it is taken again when used
        for i in range(PyTuple_GET_SIZE(args)):
            a = <object>PyTuple_GET_ITEM(args, i)
            if type(a) is not Box or (<Box>a)._tape is not tape:
                continue
            v = (<Box>a)._value
            while type(v) is Box:
                v = (<Box>v)._value
            if v is root:
                entry.owners.append(_weakref(a))
                entry.views[(<Box>a)._node] = None
                break
    if ans is root and box is not None:   # real(t), squeeze(t), ...: t itself, another one
        if len(entry.owners) > 8:
            entry.owners = [r for r in entry.owners if r() is not None]
        entry.owners.append(_weakref(box))
    # the views only: their hull is made when a write adopts root (adopt), dead ones pruned
    # as the table doubles
    r = None if ans is root else _layout_region(ans, root)
    e = PyDict_GetItem(entry.views, node)
    entry.views[node] = r if e is NULL else _region_hull(<object>e, r)
    if len(entry.views) > entry.view_limit:
        for k in [k for k in entry.views if not tape.nodes[<Py_ssize_t>k].flags
                  & NODE_BOX_ALIVE]:
            del entry.views[k]
        entry.view_limit = 2 * len(entry.views) + 64
    return 0


def computed_owner(Box box not None):
    """(root, Box or None) when box's value is in the memory of an array an operation computed
    whose traced views were noted (root: that array; Box: its own traced value, None when it
    is gone or it never had one); else None."""
    cdef Tape tape = box._tape
    v = box._value
    while type(v) is Box:
        v = (<Box>v)._value
    if tape.released or tape.computed is None or not cnp.PyArray_Check(v):
        return None
    root = _root_buffer(v)
    e = tape.computed.get(PyLong_FromVoidPtr(<void*>root))
    if e is None or not _entry_live(tape, <OwnedBuffer>e, root):
        return None
    return root, _entry_box(<OwnedBuffer>e, root)


def adopt(Box box not None, object root, OwnedBuffer info not None):
    """Make `root` (an ndarray that box, a value of its tape, is or is in; not owned yet) a
    buffer the tape owns, described by `info` (its root, site, Box and whether it is
    functional set by the caller): the traced views of it noted in Tape.computed become its
    views, and, unless functional (writes make new versions), the records that hold its memory
    now are found (the tape's hold count of root says how many, so the search walks back from
    the newest record only as far as the oldest holder) and noted as its saved arrays: a write
    that overlaps one gives that record its own copy first (_before_write)."""
    cdef Tape tape = box._tape
    cdef Py_ssize_t need, i, k
    cdef Node* node
    if tape.released or info.root is not root:
        raise ValueError("adopt: a released tape, or info is not root's")
    key = PyLong_FromVoidPtr(<void*>root)
    if tape.computed is not None:
        e = tape.computed.pop(key, None)
        if e is not None and _entry_live(tape, <OwnedBuffer>e, root):
            for n, r in (<OwnedBuffer>e).views.items():
                _add_view(tape, info, n, r)
    if not info.functional:
        need = hold_count(&tape.holds, root)
        i = tape.n_nodes - 1
        while need > 0 and i >= 0:
            node = &tape.nodes[i]
            if node.saved_args is not NULL:
                a = <object>node.saved_ans
                if cnp.PyArray_Check(a) and _root_buffer(a) is root:
                    _owned_note(tape, info, False, i, a, -1)
                    need -= 1
                args = <tuple>node.saved_args
                for k in range(PyTuple_GET_SIZE(args)):
                    a = <object>PyTuple_GET_ITEM(args, k)
                    if cnp.PyArray_Check(a) and _root_buffer(a) is root:
                        _owned_note(tape, info, False, i, a, k)
                        need -= 1
            i -= 1
        if need != 0:
            raise RuntimeError(f"adopt: the tape's hold count of the array is off by {need}")
    tape.owned[key] = info
    return info


cdef int _note_input_box(Tape tape, OwnedBuffer entry, tuple args) except -1:
    """entry.box: a weak reference to the input's own Box (a leaf of tape whose value is the
    input array), found among the arguments of a view taken of it, so that a write through the
    view can copy the input (its first write) and move that Box to the copy."""
    cdef Py_ssize_t i, n
    for i in range(PyTuple_GET_SIZE(args)):
        a = <object>PyTuple_GET_ITEM(args, i)
        if type(a) is not Box or (<Box>a)._tape is not tape:
            continue
        n = (<Box>a)._node
        if n < 0 or n >= tape.n_nodes or not tape.nodes[n].flags & NODE_LEAF:
            continue
        v = (<Box>a)._value
        while type(v) is Box:
            v = (<Box>v)._value
        if v is entry.root:
            entry.box = _weakref(a)
            return 0
    return 0


cdef int _owned_note(Tape tape, object info, bint view, Py_ssize_t node, object array,
                     Py_ssize_t position) except -1:
    """Record a saved array (view=False) or a new traced view (view=True) that lives in an
    owned buffer."""
    cdef OwnedBuffer b = <OwnedBuffer?>info
    root = _root_buffer(array) if b.functional else b.root
    r = None if array is root else _layout_region(array, root)
    if not view:
        b.saved.append(node)
        b.saved.append(position)
        b.saved_hull = _region_hull(b.saved_hull, r)
        return 0
    return _add_view(tape, b, node, r)


cdef int _add_view(Tape tape, OwnedBuffer b, Py_ssize_t node, object r) except -1:
    """Record traced view `node` over region r of buffer b (pruning dead ones as it grows)."""
    cdef Py_ssize_t n
    cdef PyObject* old = PyDict_GetItem(b.views, node)
    if old is not NULL:         # another element of a container output (split's parts)
        r = _region_hull(<object>old, r)
    b.views[node] = r
    b.view_hull = _region_hull(b.view_hull, r)
    if len(b.views) > b.view_limit:
        hull = ()
        for k in list(b.views):
            n = k
            if n < tape.n_nodes and (tape.nodes[n].flags & NODE_BOX_ALIVE):
                hull = _region_hull(hull, b.views[k])
            else:
                del b.views[k]
        b.view_hull = hull
        b.view_limit = 2 * len(b.views) + 64
    return 0


# =============================================================================
# The common in-place write, buf[basic index] = value into a buffer this tape owns, decided and
# recorded here; everything else (copy on first write, advanced indices, forward mode, nested
# differentiation, errors) is gradcy/numpy/inplace.py's _box_setitem
# =============================================================================
def setitem_fast(Box box not None, idx, value):
    """Record box[idx] = value in the core when it can (see _setitem_fast); False when the
    caller must (nothing was done)."""
    return _setitem_fast(box, idx, value)


cdef inline bint _hull_overlaps(object hull, object r) except -1:
    if type(hull) is tuple and PyTuple_GET_SIZE(hull) == 0:
        return False
    return regions_overlap(hull, r)


cdef bint _is_view_of_slot(Box value, object slot, Tape tape) except -1:
    """value (traced on tape, not stale) is an array with exactly slot's memory and layout."""
    cdef int d
    v = value._value
    if (not cnp.PyArray_CheckExact(v)
            or cnp.PyArray_DATA(<cnp.ndarray>v) != cnp.PyArray_DATA(<cnp.ndarray>slot)
            or not cnp.PyArray_SAMESHAPE(<cnp.ndarray>v, <cnp.ndarray>slot)
            or cnp.PyArray_TYPE(<cnp.ndarray>v) != cnp.PyArray_TYPE(<cnp.ndarray>slot)
            or value._node < 0 or value._node >= tape.n_nodes
            or tape.nodes[value._node].flags & NODE_STALE):
        return False
    for d in range(cnp.PyArray_NDIM(<cnp.ndarray>v)):
        if (cnp.PyArray_DIMS(<cnp.ndarray>v)[d] > 1 and cnp.PyArray_STRIDES(<cnp.ndarray>v)[d]
                != cnp.PyArray_STRIDES(<cnp.ndarray>slot)[d]):
            return False
    return True


cdef bint _setitem_fast(Box box, object idx, object value) except -1:
    """box[idx] = value when box is an owned buffer of its tape, idx a basic index, and value
    plain or traced on the same tape (traced only into a floating-point, complex or object
    buffer: into another, the write casts it, see inplace.py's constant_if_cast); False
    (nothing done) otherwise."""
    cdef Tape tape = box._tape
    cdef OwnedBuffer info
    cdef Py_ssize_t vnode
    if _write_primitive is None or tape.forward or tape.released or not tape.owned:
        return False
    buf = box._value
    if not cnp.PyArray_CheckExact(buf):
        return False
    if type(value) is Box and not (cnp.PyArray_ISFLOAT(<cnp.ndarray>buf)
                                   or cnp.PyArray_ISCOMPLEX(<cnp.ndarray>buf)
                                   or cnp.PyArray_ISOBJECT(<cnp.ndarray>buf)):
        return False            # a traced value into an integer or boolean buffer: a cast,
                                # which inplace.py makes a constant (constant_if_cast)
    if type(value) is Box and ((<Box>value)._tape is not tape
                               or type((<Box>value)._value) is Box):
        return False
    found = tape.owned.get(PyLong_FromVoidPtr(<void*>buf))
    if (type(found) is not OwnedBuffer or (<OwnedBuffer>found).root is not buf
            or (<OwnedBuffer>found).functional):
        return False
    ref = (<OwnedBuffer>found).box
    if ref is None or ref() is not box:
        return False            # another traced value that is the buffer's array (real,
                                # squeeze of it): a write through a view, inplace.py's
    if not _is_basic_index(idx):
        return False
    slot = buf[idx]
    if not cnp.PyArray_CheckExact(slot) or cnp.PyArray_BASE(<cnp.ndarray>slot) is NULL:
        return False
    if type(value) is Box and _is_view_of_slot((<Box>value), slot, tape):
        return True             # buf[i] += v wrote through the view buf[i]: writing it back
                                # stores the values already there
    info = <OwnedBuffer>found
    r = _layout_region(slot, buf)
    if _hull_overlaps(info.saved_hull, r):
        _before_write(tape, info, r)
    new = (<Primitive>_write_primitive)._dispatch((box, idx, value), _EMPTY)
    if not isinstance(new, Box):
        raise TypeError(f"{(<Primitive>_write_primitive).name} returned "
                        f"{type(new).__name__}, not a traced value")
    _transfer_box(box, <Box>new)
    if _hull_overlaps(info.view_hull, r):
        _after_write(tape, info, r)
    if type(value) is Box:
        # the written value is the saved output of the op that made it (tanh, exp, ...): its
        # VJP reads it from the slot, and the separate array can go (a later write over the
        # slot preserves a copy first, like any saved view)
        vnode = (<Box>value)._node
        if 0 <= vnode < tape.n_nodes and tape.nodes[vnode].saved_ans is not NULL:
            ans = <object>tape.nodes[vnode].saved_ans
            if (ans is (<Box>value)._value and cnp.PyArray_CheckExact(ans)
                    and cnp.PyArray_SAMESHAPE(<cnp.ndarray>ans, <cnp.ndarray>slot)
                    and cnp.PyArray_TYPE(<cnp.ndarray>ans) == cnp.PyArray_TYPE(<cnp.ndarray>slot)):
                tape.replace_saved(vnode, -1, slot)
                _owned_note(tape, info, False, vnode, slot, -1)
    return True
