"""The gradcy engine's record: the tape, the backward sweep, buffer lifetimes.

Contract and field comments: _tape.pxd. This module knows nothing about which NumPy functions
exist; the operator layer (gradcy/numpy, gradcy/extend.py) registers primitives, their VJPs and
the Box methods onto it (the tables and hooks: _hooks). Primitives dispatch and record onto a
Tape in _primitive. The traced value is _box's Box, which make_box (here) makes; the
owned-buffer bookkeeping of a recording is _write's.

Lifetimes (each owned reference has one release point):
- Node.prim, Node.saved: released by _release_saved() right after the node's VJP ran in a
  consuming sweep, when the node dies (its Box dropped and nothing consumed it), when the node
  cannot reach the output of a sweep, or by release(). A node that never receives a cotangent
  (a basic-index view whose cotangent went into its parent's slot, or one whose consumers'
  rules returned None) keeps its record until release().
- Node.cotangent: released by _take_cotangent() when the node's VJP consumes it, or by release().
- The arena and the hold table (Tape.holds, _hold.pxd): freed by release(), which __dealloc__
  also runs.
- Tape.owned (the OwnedBuffer of each buffer the tape writes in place): dropped by release().
"""
cimport cython
from cpython.object cimport PyObject
from cpython.ref cimport Py_INCREF, Py_DECREF, Py_XDECREF, Py_XINCREF
from cpython.mem cimport PyMem_Realloc, PyMem_Free
from cpython.tuple cimport PyTuple_GET_ITEM, PyTuple_GET_SIZE
from cpython.dict cimport PyDict_GetItem
from cpython.long cimport PyLong_FromVoidPtr
from libc.stdint cimport int32_t, uint8_t, SIZE_MAX
from libc.string cimport memset

import numpy as _np
cimport numpy as cnp

cnp.import_array()

cdef extern from "Python.h":
    Py_ssize_t Py_REFCNT(PyObject* o)
    bint PyObject_IS_GC(PyObject* o)
    bint PyObject_GC_IsTracked(PyObject* o)
    void PyObject_GC_UnTrack(void* o)


from gradcy._counters cimport (_next_trace_id, _live_tapes, _live_nodes, _saved_bytes,
                               _peak_saved_bytes, _cotangent_bytes, _peak_bytes)
from gradcy._saved cimport ArrayMeta, _same_shape_dtype
from gradcy._regions cimport OwnedBuffer, _root_key, _root_buffer, _is_basic_index, _nbytes
from gradcy._cotangents cimport SparseCotangent, _densify, _add_cotangents
from gradcy._hold cimport hold_update, hold_free, hold_count, hold_roots
from gradcy._errors import EscapedValueError
from gradcy._recompute cimport _recompute_default, _materialize
from gradcy._box cimport Box, _box_type_of, _box_factories, _n_box_subtypes
from gradcy._hooks cimport _any_array_types, _is_array_type, _unbroadcast_slow
from gradcy._write cimport _owned_note, _resolve_stale
from gradcy._primitive cimport Primitive


# =============================================================================
# Byte counts of a tape and of the process (_counters)
# =============================================================================
cdef inline void _count_bytes(Tape t, Py_ssize_t dsaved, Py_ssize_t dcot) noexcept:
    global _saved_bytes, _peak_saved_bytes, _cotangent_bytes, _peak_bytes
    t.saved_bytes += dsaved
    t.cotangent_bytes += dcot
    if t.saved_bytes > t.peak_saved_bytes:
        t.peak_saved_bytes = t.saved_bytes
    if t.saved_bytes + t.cotangent_bytes > t.peak_bytes:
        t.peak_bytes = t.saved_bytes + t.cotangent_bytes
    _saved_bytes += dsaved
    _cotangent_bytes += dcot
    if _saved_bytes > _peak_saved_bytes:
        _peak_saved_bytes = _saved_bytes  # no-cython-lint (a C global: see `global` above)
    if _saved_bytes + _cotangent_bytes > _peak_bytes:
        _peak_bytes = _saved_bytes + _cotangent_bytes  # no-cython-lint (a C global too)


# =============================================================================
# The outermost backward pass running in this thread
# =============================================================================
cdef extern from *:
    """
    typedef struct { long long floor, forward_end, next; } gradcy_sweep_t;
    #if defined(_MSC_VER)
    static __declspec(thread) gradcy_sweep_t gradcy_sweep = {-1, -1, -1};
    #else
    static __thread gradcy_sweep_t gradcy_sweep = {-1, -1, -1};
    #endif
    static gradcy_sweep_t *gradcy_sweep_ptr(void) { return &gradcy_sweep; }
    """
    # the outermost backward pass running in this thread: its tape's trace id (-1: none) and
    # forward_end, and the trace id of the first tape created after the pass began
    ctypedef struct gradcy_sweep_t:
        long long floor
        long long forward_end
        long long next
    gradcy_sweep_t* gradcy_sweep_ptr() noexcept nogil

# Tape.forward_end of a tape whose forward pass has not left the active stack (pop_active,
# _primitive.pyx)
cdef long long _FORWARD_RUNNING = 1LL << 62


cdef bint _began_in_sweep(Tape t) noexcept:
    """t began during the forward pass of the tape whose backward pass runs outermost in this
    thread (any thread's tape: trace ids are the process's), or during that pass."""
    cdef gradcy_sweep_t* w = gradcy_sweep_ptr()
    return w.floor >= 0 and ((w.floor < t.trace_id < w.forward_end) or t.trace_id >= w.next)


# =============================================================================
# The tape
# =============================================================================
cdef Py_ssize_t _grow_to(Py_ssize_t cap, Py_ssize_t need) noexcept nogil:
    if cap < 16:
        cap = 16
    while cap < need:
        cap *= 2
    return cap


cdef void* _realloc_checked(void* p, Py_ssize_t count, size_t itemsize) except? NULL:
    """Grow (or allocate) an array; raises MemoryError. Never frees: that is release()'s job."""
    if count <= 0 or <size_t>count > SIZE_MAX // itemsize:
        raise MemoryError(f"could not allocate {count} x {itemsize} bytes")
    cdef void* q = PyMem_Realloc(p, count * itemsize)
    if q is NULL:
        raise MemoryError(f"could not allocate {count * itemsize} bytes")
    return q


cdef inline bint _exclusive_array(PyObject* p, Py_ssize_t refs) noexcept:
    """p is an exact, writable ndarray that owns its memory and has exactly `refs` references
    (the slot's, plus the caller's locals): the engine may add into it in place."""
    return (cnp.PyArray_CheckExact(<object>p) and Py_REFCNT(p) == refs
            and cnp.PyArray_BASE(<cnp.ndarray>p) is NULL
            and cnp.PyArray_ISWRITEABLE(<cnp.ndarray>p))


cdef object _add_ufunc = _np.add


cdef inline void _untrack_plain(tuple t) noexcept:
    """Take a saved argument tuple that holds no object the cycle collector tracks (arrays,
    numbers, ArrayMetas, Boxes) out of its reach now, as CPython would at the tuple's first
    collection: a long recording then leaves the collections it triggers nothing to walk."""
    cdef Py_ssize_t i
    cdef PyObject* item
    if not PyObject_GC_IsTracked(<PyObject*>t):
        return
    for i in range(PyTuple_GET_SIZE(t)):
        item = PyTuple_GET_ITEM(t, i)
        if PyObject_IS_GC(item) and PyObject_GC_IsTracked(item):
            return
    PyObject_GC_UnTrack(<void*>t)


@cython.final
cdef class Tape:
    """One differentiation's record: an arena of Node structs in topological order."""

    def __cinit__(self, bint forward=False):
        global _next_trace_id, _live_tapes
        self.nodes = NULL
        self.parents = NULL
        self.n_nodes = self.cap_nodes = 0
        self.n_parents = self.cap_parents = 0
        self.holds.slots = NULL
        self.holds.cap = self.holds.used = self.holds.live = 0
        self.trace_id = _next_trace_id
        _next_trace_id += 1
        self.forward_end = _FORWARD_RUNNING
        self.released = False
        self.sweeping = False
        self.forward = forward
        self.observer = None
        self.keep_args = False
        self.recorder = None
        self.recompute = _recompute_default
        self.owned = {}
        self.computed = None
        self.frozen = None
        _live_tapes += 1

    def __dealloc__(self):
        self._free_all()

    # ---- growth ---------------------------------------------------------------------------
    cdef int _grow_nodes(self, Py_ssize_t need) except -1:
        cdef Py_ssize_t cap = _grow_to(self.cap_nodes, need)
        self.nodes = <Node*>_realloc_checked(self.nodes, cap, sizeof(Node))
        memset(&self.nodes[self.cap_nodes], 0, (cap - self.cap_nodes) * sizeof(Node))
        self.cap_nodes = cap
        return 0

    cdef int _grow_parents(self, Py_ssize_t need) except -1:
        cdef Py_ssize_t cap = _grow_to(self.cap_parents, need)
        self.parents = <ParentRef*>_realloc_checked(self.parents, cap, sizeof(ParentRef))
        self.cap_parents = cap
        return 0

    @property
    def hold_live(self):
        """Root buffers the tape's saved records hold now (each counted once in saved_bytes)."""
        return self.holds.live

    @property
    def capacity(self):
        """(nodes allocated, parent entries allocated) of the arena."""
        return (self.cap_nodes, self.cap_parents)

    def __len__(self):
        return self.n_nodes

    # ---- recording ------------------------------------------------------------------------
    cdef Py_ssize_t _account(self, object ans, object args, int sign) except -1:
        """Count (sign=+1) or uncount (sign=-1) the buffers of a saved record; returns the
        bytes that changed hands. A buffer already held by this tape counts once: the tape
        keeps one holder count per root buffer (the ndarray that owns the memory)."""
        cdef Py_ssize_t total = 0, i, n
        cdef object v
        if type(ans) is ArrayMeta:      # (the common unsaved output: no subclass walk for it)
            pass
        elif cnp.PyArray_Check(ans):
            total += self._hold(ans, sign)
        elif _any_array_types and _is_array_type(type(ans)):
            total += self._hold(ans, sign)
        n = PyTuple_GET_SIZE(args)
        for i in range(n):
            v = <object>PyTuple_GET_ITEM(args, i)
            if type(v) is ArrayMeta or type(v) is float:     # (no subclass walk for these)
                continue
            if cnp.PyArray_Check(v):
                total += self._hold(v, sign)
            elif _any_array_types and _is_array_type(type(v)):
                total += self._hold(v, sign)
        return total

    cdef Py_ssize_t _hold(self, object a, int sign) except -1:
        """One more (sign=+1) or one fewer (-1) saved record holding the root buffer of `a`;
        returns its bytes when that changed whether the tape holds it at all, else 0
        (_hold.hold_update). An array of another type (dask, cupy) is its own root and counts
        the nbytes it declares."""
        cdef Py_ssize_t n
        root = _root_buffer(a) if cnp.PyArray_Check(a) else a
        n = hold_update(&self.holds, root, sign)
        if sign < 0 and self.frozen and hold_count(&self.holds, root) == 0:
            self._thaw(root)
        return n

    def freeze_saved(self, outputs=()):
        """Make the arrays this tape's saved records hold read-only until the records let go
        of them (make_vjp, after the forward pass): every held root buffer, the saved arrays
        in one, and the ndarrays in `outputs` (an iterable) whose memory is in one. A write
        into them would change what the VJPs read. Each is writable again when the last
        record holding its root buffer is released (by a consuming sweep, release(), or the
        tape's end). Returns how many arrays it made read-only."""
        cdef Py_ssize_t i, n0
        cdef Node* node
        if self.released or self.sweeping or self.forward:
            return 0
        if self.frozen is None:
            self.frozen = {}
        n0 = sum([len(v) for v in self.frozen.values()])
        for root in hold_roots(&self.holds):
            if cnp.PyArray_Check(root):
                self._freeze(root, True)
        for i in range(self.n_nodes):
            node = &self.nodes[i]
            if node.saved_args is NULL:
                continue
            self._freeze(<object>node.saved_ans, False)
            for v in <tuple>node.saved_args:
                self._freeze(v, False)
        for v in outputs:
            self._freeze(v, False)
        return sum([len(v) for v in self.frozen.values()]) - n0

    cdef int _freeze(self, object v, bint held) except -1:
        """v (a held root buffer, or an exact ndarray whose root buffer the tape holds) made
        read-only, noted under its root in `frozen`; nothing for anything else (or once the
        tape is released: iterating `outputs` may have released it)."""
        if self.frozen is None:
            return 0
        if held:
            root = v
        elif cnp.PyArray_CheckExact(v):
            root = _root_buffer(v)
            if hold_count(&self.holds, root) == 0:
                return 0
        else:
            return 0
        if not cnp.PyArray_ISWRITEABLE(<cnp.ndarray>v):
            return 0
        cnp.PyArray_CLEARFLAGS(<cnp.ndarray>v, cnp.NPY_ARRAY_WRITEABLE)
        key = PyLong_FromVoidPtr(<void*>root)
        entry = self.frozen.get(key)
        if entry is None:
            self.frozen[key] = [v]
        else:
            (<list>entry).append(v)
        return 0

    cdef int _thaw(self, object root) except -1:
        """The arrays freeze_saved made read-only in `root` writable again (its last holding
        record let go of it)."""
        if self.frozen is None:
            return 0
        entry = self.frozen.pop(PyLong_FromVoidPtr(<void*>root), None)
        if entry is not None:
            for v in <list>entry:
                cnp.PyArray_ENABLEFLAGS(<cnp.ndarray>v, cnp.NPY_ARRAY_WRITEABLE)
        return 0

    @property
    def frozen_count(self):
        """How many arrays freeze_saved made read-only are read-only still."""
        return 0 if not self.frozen else sum([len(v) for v in self.frozen.values()])

    cdef Py_ssize_t _append(self, Primitive prim, ParentRef* refs, int32_t nrefs,
                            object ans, tuple args, object kwargs,
                            Py_ssize_t nbytes) except -1:
        global _live_nodes
        cdef Py_ssize_t i = self.n_nodes, k
        cdef Node* node
        if self.released:
            raise EscapedValueError("Tape: recording onto a released tape")
        if i >= self.cap_nodes:
            self._grow_nodes(i + 1)
        if self.n_parents + nrefs > self.cap_parents:
            self._grow_parents(self.n_parents + nrefs)
        node = &self.nodes[i]
        node.prim = <PyObject*>prim
        Py_XINCREF(node.prim)
        node.saved_ans = <PyObject*>ans
        Py_INCREF(ans)
        node.saved_args = <PyObject*>args
        Py_INCREF(args)
        _untrack_plain(args)
        node.saved_kwargs = <PyObject*>kwargs
        Py_INCREF(kwargs)
        node.cotangent = NULL
        node.parent_start = self.n_parents
        node.nparents = nrefs
        node.nconsumers = 0
        node.saved_bytes = nbytes
        node.cot_bytes = 0
        node.flags = NODE_CONSTANT if nrefs > 0 else 0
        for k in range(nrefs):
            self.parents[self.n_parents + k] = refs[k]
            self.nodes[refs[k].node].nconsumers += 1
            if not (self.nodes[refs[k].node].flags & NODE_CONSTANT):
                node.flags = 0
        self.n_parents += nrefs
        self.n_nodes = i + 1
        self.live_nodes += 1
        _live_nodes += 1
        _count_bytes(self, nbytes, 0)
        if self.observer is not None:
            self._notify("forward", i, prim.name)
        return i

    cdef Py_ssize_t _new_input(self, uint8_t flags, str caller) except -1:
        """Append a node with no primitive and no parents (a leaf or a constant)."""
        global _live_nodes
        if self.released:
            raise EscapedValueError(f"Tape.{caller}: this tape has been released")
        cdef Py_ssize_t i = self.n_nodes
        if i >= self.cap_nodes:
            self._grow_nodes(i + 1)
        memset(&self.nodes[i], 0, sizeof(Node))
        self.nodes[i].parent_start = self.n_parents
        self.nodes[i].flags = flags
        self.n_nodes = i + 1
        self.live_nodes += 1
        _live_nodes += 1
        return i

    def new_leaf(self, value, tangent=None):
        """Append an input node for `value` and return its Box. On a forward-mode tape,
        `tangent` is the input's tangent."""
        if tangent is not None and not self.forward:
            raise ValueError("Tape.new_leaf: a tangent is given only on a forward-mode tape")
        if _box_factories:              # autograd's box factories (Box.type_mappings)
            factory = _box_factories.get(type(value))
            if factory is not None:
                factory(value, None, None)
        cdef Py_ssize_t i = self._new_input(NODE_LEAF, "new_leaf")
        if tangent is not None:
            self._set_cotangent(i, tangent)
        plain = value
        while type(plain) is Box:       # nested differentiation: an outer trace's value
            plain = (<Box>plain)._value
        if cnp.PyArray_Check(plain):
            # track the input's traced views (a write into the input makes those it overlaps
            # stale); two inputs in one memory: their regions are not told apart (root None),
            # and a write into one raises when another overlaps it (site counts the inputs,
            # arrays lists them: _write._shared_input)
            if self.inputs is None:
                self.inputs = {}
            key = _root_key(plain)
            entry = self.inputs.get(key)
            if entry is None:
                self.inputs[key] = OwnedBuffer(plain, 1)
            else:
                (<OwnedBuffer>entry).site = (<OwnedBuffer>entry).site + 1
                if (<OwnedBuffer>entry).arrays is None:    # (which of them overlap: _write)
                    (<OwnedBuffer>entry).arrays = [(<OwnedBuffer>entry).root]
                (<OwnedBuffer>entry).arrays.append(plain)
                if (<OwnedBuffer>entry).root is not plain:
                    (<OwnedBuffer>entry).root = None
        return make_box(value, self, i)

    def input_entry(self, array):
        """The view table of the input whose memory ndarray `array` is in, or None."""
        if self.inputs is None or not cnp.PyArray_Check(array):
            return None
        return self.inputs.get(_root_key(array))

    def new_constant(self, value):
        """Append a node for a constant `value` (a buffer an array constructor made during this
        differentiation) and return its Box. No cotangent is ever computed for it."""
        return make_box(value, self, self._new_input(NODE_CONSTANT, "new_constant"))

    def register_owned(self, root, OwnedBuffer info not None):
        """Record that this tape owns ndarray `root` (it may write into it in place)."""
        self.owned[PyLong_FromVoidPtr(<void*>root)] = info

    def owned_info(self, array):
        """The info registered for the buffer that owns `array`'s memory, or None."""
        if not cnp.PyArray_Check(array) or not self.owned:
            return None
        return self.owned.get(_root_key(array))

    def node_flags(self, Py_ssize_t i):
        """(released, box_alive, constant, stale) of node i."""
        _check_node(self, i, "node_flags")
        cdef uint8_t f = self.nodes[i].flags
        return (bool(f & NODE_RELEASED), bool(f & NODE_BOX_ALIVE), bool(f & NODE_CONSTANT),
                bool(f & NODE_STALE))

    def mark_stale(self, Py_ssize_t i):
        """Node i's value is a view whose memory was overwritten: using it raises."""
        _check_node(self, i, "mark_stale")
        self.nodes[i].flags |= NODE_STALE

    def saved_value(self, Py_ssize_t i, Py_ssize_t position):
        """Node i's saved argument `position` (-1: the saved output); None after release."""
        if i < 0 or i >= self.n_nodes or self.nodes[i].saved_args is NULL:
            return None
        if position < 0:
            return <object>self.nodes[i].saved_ans
        args = <tuple>self.nodes[i].saved_args
        return args[position] if position < PyTuple_GET_SIZE(args) else None

    def replace_saved(self, Py_ssize_t i, Py_ssize_t position, value):
        """Put `value` (a preserved copy) in place of node i's saved argument `position`
        (-1: the saved output), keeping the byte counts exact."""
        _check_node(self, i, "replace_saved")
        cdef Node* node = &self.nodes[i]
        if node.saved_args is NULL:
            return
        old_ans, old_args = <object>node.saved_ans, <object>node.saved_args
        if position < 0:
            new_ans, new_args = value, old_args
        else:
            if position >= PyTuple_GET_SIZE(old_args):
                raise IndexError(f"Tape.replace_saved: node {i} saved {len(old_args)} "
                                 f"arguments, not {position + 1}")
            lst = list(old_args)
            lst[position] = value
            new_ans, new_args = old_ans, tuple(lst)
        gained = self._account(new_ans, new_args, 1)
        freed = self._account(old_ans, old_args, -1)
        Py_INCREF(new_ans)
        Py_INCREF(new_args)
        node = &self.nodes[i]
        node.saved_ans = <PyObject*>new_ans
        node.saved_args = <PyObject*>new_args
        node.saved_bytes += gained - freed
        _count_bytes(self, gained - freed, 0)
        Py_DECREF(old_ans)
        Py_DECREF(old_args)

    cdef int _owned_scan(self, Py_ssize_t node, object ans, tuple args) except -1:
        """Tell the owned-buffer hook about saved arrays whose memory belongs to an owned
        buffer (a later write into it must not change what this node's VJP will read)."""
        cdef Py_ssize_t k
        cdef PyObject* info
        if cnp.PyArray_Check(ans):
            info = PyDict_GetItem(self.owned, _root_key(ans))
            if info is not NULL:
                _owned_note(self, <object>info, False, node, ans, -1)
        for k in range(PyTuple_GET_SIZE(args)):
            v = <object>PyTuple_GET_ITEM(args, k)
            if cnp.PyArray_Check(v):
                info = PyDict_GetItem(self.owned, _root_key(v))
                if info is not NULL:
                    _owned_note(self, <object>info, False, node, v, k)
        return 0

    def tangent(self, Box box not None):
        """The tangent of `box` (a value of this forward-mode tape), or None for zero."""
        if box._tape is not self or self.released:
            raise ValueError("Tape.tangent: the value belongs to another or a released tape")
        if self.nodes[box._node].flags & NODE_STALE:
            _resolve_stale(self, box, "gradcy (an output)", 0)    # (or raises)
        c = self.nodes[box._node].cotangent
        return None if c is NULL else <object>c

    # ---- lifetimes ------------------------------------------------------------------------
    cdef int _release_saved(self, Py_ssize_t i) except -1:
        """Drop node i's primitive and saved record (idempotent)."""
        global _live_nodes
        cdef Node* node = &self.nodes[i]
        cdef PyObject* ans = node.saved_ans
        cdef PyObject* args = node.saved_args
        cdef PyObject* kwargs = node.saved_kwargs
        cdef PyObject* prim = node.prim
        cdef Py_ssize_t freed = 0
        if node.flags & NODE_RELEASED:
            return 0
        node.flags |= NODE_RELEASED
        node.saved_ans = node.saved_args = node.saved_kwargs = node.prim = NULL
        node.saved_bytes = 0
        self.live_nodes -= 1
        _live_nodes -= 1
        if args is not NULL:
            freed = self._account(<object>ans, <object>args, -1)
        _count_bytes(self, -freed, 0)
        # the struct is consistent before any Python code (a __del__) can run
        name = (<Primitive>prim).name if prim is not NULL and self.observer is not None else None
        Py_XDECREF(ans)
        Py_XDECREF(args)
        Py_XDECREF(kwargs)
        Py_XDECREF(prim)
        if self.observer is not None:
            self._notify("release", i, name)
        return 0

    cdef int _set_cotangent(self, Py_ssize_t i, object g) except -1:
        cdef Node* node = &self.nodes[i]
        cdef Py_ssize_t nb = cnp.PyArray_NBYTES(<cnp.ndarray>g) if cnp.PyArray_Check(g) else (
            _nbytes(g) if _any_array_types and _is_array_type(type(g)) else 0)
        cdef PyObject* old = node.cotangent
        cdef Py_ssize_t oldnb = node.cot_bytes
        Py_INCREF(g)
        node.cotangent = <PyObject*>g
        node.cot_bytes = nb
        _count_bytes(self, 0, nb - oldnb)
        Py_XDECREF(old)
        return 0

    cdef object _take_cotangent(self, Py_ssize_t i):
        """Remove node i's cotangent from its slot and hand the reference to the caller."""
        cdef Node* node = &self.nodes[i]
        cdef PyObject* c = node.cotangent
        if c is NULL:
            return None
        g = <object>c          # new reference for the caller
        node.cotangent = NULL
        _count_bytes(self, 0, -node.cot_bytes)
        node.cot_bytes = 0
        Py_XDECREF(c)          # the slot's reference
        return g

    cdef object _view_slot(self, Py_ssize_t i, int depth):
        """For node i = A[idx] (a basic-index view, no slot of its own): the region of A's
        cotangent slot that node i's cotangent would be added into, as a writable view, when
        that slot is an engine-owned ndarray nothing else references (or, recursively, the
        region of A's own view slot). None when any condition fails: then node i keeps a
        slot of its own as usual. Adding into this view instead of a slot of node i's own
        is what a hand-written gradient does (dP = dM[:, :n]; dP += ...): no buffer per view,
        and node i's VJP never runs."""
        cdef Node* node = &self.nodes[i]
        cdef Py_ssize_t p
        cdef PyObject* pc
        cdef object base, view
        if (depth > 8 or node.prim is NULL or not (<Primitive>node.prim).basic_view
                or node.nparents != 1 or self.parents[node.parent_start].argnum != 0
                or node.saved_args is NULL or PyTuple_GET_SIZE(<object>node.saved_args) < 2):
            return None
        idx = <object>PyTuple_GET_ITEM(<object>node.saved_args, 1)
        if not _is_basic_index(idx):
            return None
        p = self.parents[node.parent_start].node
        pc = self.nodes[p].cotangent
        if pc is NULL:
            base = self._view_slot(p, depth + 1)
            if base is None:
                return None
        elif _exclusive_array(pc, 1):
            base = <object>pc
        else:
            return None
        view = base[idx]
        if not cnp.PyArray_CheckExact(view) or cnp.PyArray_BASE(<cnp.ndarray>view) is NULL:
            return None
        return view

    cdef bint _add_into_parent_slot(self, Py_ssize_t i, object g) except -1:
        """Node i (slot empty) is a basic-index view: add its cotangent g (dense, or sparse
        within the view) straight into the region of the parent's slot (_view_slot) and
        return True; False (nothing done) when g's dtype or shape differs from the region's,
        or when the view cannot forward."""
        cdef Node* node = &self.nodes[i]
        if node.prim is NULL or not (<Primitive>node.prim).basic_view:
            return False
        if type(g) is SparseCotangent:
            sg = <SparseCotangent>g
            if cnp.PyArray_Check(sg.values) and (<object>sg.values).dtype != sg.dtype:
                return False
            view = self._view_slot(i, 0)
            if (view is None or cnp.PyArray_TYPE(<cnp.ndarray>view) != sg.dtype.num
                    or (<object>view).shape != sg.shape):
                return False
            sg.add_into(view)
            return True
        if not cnp.PyArray_CheckExact(g):
            return False
        view = self._view_slot(i, 0)
        if (view is None
                or cnp.PyArray_TYPE(<cnp.ndarray>view) != cnp.PyArray_TYPE(<cnp.ndarray>g)
                or not cnp.PyArray_SAMESHAPE(<cnp.ndarray>view, <cnp.ndarray>g)):
            return False
        _add_ufunc(view, g, view)
        return True

    cdef int _accumulate(self, Py_ssize_t i, object g) except -1:
        """Add cotangent g into node i's slot: in place only when the slot holds an ndarray
        the engine alone references, that owns its memory, with g's shape and dtype."""
        cdef Node* node = &self.nodes[i]
        cdef PyObject* cur = node.cotangent
        if g is None:
            return 0
        if type(g) is SparseCotangent:
            return self._accumulate_sparse(i, <SparseCotangent>g)
        if cur is NULL:
            if self._add_into_parent_slot(i, g):
                return 0
            return self._set_cotangent(i, g)
        c = <object>cur
        if type(c) is SparseCotangent:
            c = (<SparseCotangent>c).dense()
            if cnp.PyArray_CheckExact(g) and (<object>g).shape == c.shape:
                _np.add(c, g, out=c, casting="unsafe")
                return self._set_cotangent(i, c)
            return self._set_cotangent(i, c + g)
        if (_exclusive_array(cur, 2)             # the slot and `c`
                and cnp.PyArray_CheckExact(g)
                and cnp.PyArray_TYPE(<cnp.ndarray>c) == cnp.PyArray_TYPE(<cnp.ndarray>g)
                and cnp.PyArray_SAMESHAPE(<cnp.ndarray>c, <cnp.ndarray>g)):
            _add_ufunc(c, g, c)               # out positionally: no keyword parsing
            return 0
        total = _add_cotangents(c, g)
        return self._set_cotangent(i, total)

    cdef int _accumulate_sparse(self, Py_ssize_t i, SparseCotangent g) except -1:
        """Add a sparse cotangent: into the slot's array in place when the engine alone holds
        it (O(size of g)), else into a fresh dense copy."""
        cdef PyObject* cur = self.nodes[i].cotangent
        if cur is NULL:
            if self._add_into_parent_slot(i, g):
                return 0
            return self._set_cotangent(i, g)      # stays sparse until it is read
        c = <object>cur
        if type(c) is SparseCotangent:
            dense = (<SparseCotangent>c).dense()
            g.add_into(dense)
            return self._set_cotangent(i, dense)
        if _exclusive_array(cur, 2):              # the slot and `c`
            g.add_into(c)
            return 0
        if type(c) is Box:
            return self._set_cotangent(i, c + g.dense())
        # contiguous: later slot adds are fast
        dense = _np.array(c, dtype=g.dtype, copy=True, order="C")
        g.add_into(dense)
        return self._set_cotangent(i, dense)

    cdef int _box_dropped(self, Py_ssize_t i) except -1:
        if self.released or i >= self.n_nodes:
            return 0
        self.nodes[i].flags &= ~NODE_BOX_ALIVE
        if self.forward:
            # a tangent is read only when a primitive is applied to its Box
            if not (self.nodes[i].flags & NODE_PINNED):
                self._take_cotangent(i)
                # (dropping the tangent ran Python code, which may have released the tape)
                if not self.released and not (self.nodes[i].flags & NODE_LEAF):
                    self._release_saved(i)
            return 0
        if self.nodes[i].nconsumers == 0 and not (self.nodes[i].flags & (NODE_PINNED | NODE_LEAF)):
            self._kill(i)
        return 0

    cdef int _kill(self, Py_ssize_t i) except -1:
        """Node i can never receive a cotangent (no Box, no consumer, not an output): release
        it, then every ancestor left in the same state."""
        cdef list work = [i]
        cdef Py_ssize_t j, k, p
        cdef Node* node
        while work:
            j = work.pop()
            if self.nodes[j].flags & NODE_RELEASED:
                continue
            self._release_saved(j)
            if self.released:       # a __del__ run by the release released the tape
                return 0
            node = &self.nodes[j]
            for k in range(node.nparents):
                p = self.parents[node.parent_start + k].node
                self.nodes[p].nconsumers -= 1
                if (self.nodes[p].nconsumers == 0
                        and not (self.nodes[p].flags & (NODE_BOX_ALIVE | NODE_PINNED | NODE_LEAF))):
                    work.append(p)
            node.nparents = 0
        return 0

    cdef int _mark_reachable(self, Py_ssize_t out) except -1:
        cdef Py_ssize_t i, k
        cdef Node* node
        for i in range(out + 1):
            self.nodes[i].flags &= ~NODE_REACHABLE
        self.nodes[out].flags |= NODE_REACHABLE
        i = out
        while i >= 0:
            node = &self.nodes[i]
            if node.flags & NODE_REACHABLE:
                for k in range(node.nparents):
                    self.nodes[self.parents[node.parent_start + k].node].flags |= NODE_REACHABLE
            i -= 1
        return 0

    cdef int _notify(self, str event, Py_ssize_t i, object name) except -1:
        self.observer(event, i, name, self.saved_bytes, self.cotangent_bytes)
        return 0

    def pin(self, Box box not None):
        """Mark the node of `box` (a value of this tape) as an output a backward pass starts
        from; returns its index."""
        _check_box(self, box, "pin")
        if self.nodes[box._node].flags & NODE_STALE:
            _resolve_stale(self, box, "gradcy (an output)", 0)     # (or raises)
        self.nodes[box._node].flags |= NODE_PINNED
        return box._node

    # ---- the backward sweep -----------------------------------------------------------------
    def backward(self, Py_ssize_t out, g, bint consume=True, leaves=None):
        """Propagate cotangent g from node `out` down the arena.

        Nodes that cannot reach `out` release their saved records first. With consume=True
        every node's saved record is released right after its VJP has run (the tape cannot be
        swept again); otherwise they stay for another sweep. Cotangents are always released
        as soon as they are consumed. Returns the cotangents of the nodes listed in `leaves`
        (None where none arrived)."""
        cdef Py_ssize_t i, k
        cdef Node* node
        if self.released:
            raise EscapedValueError("backward: this differentiation's tape has been released; "
                                    "a VJP function from make_vjp cannot be used after release()")
        if out < 0 or out >= self.n_nodes:
            raise IndexError(f"backward: node {out} is not on this tape")
        if self.sweeping:
            raise RuntimeError("backward: a sweep is already running on this tape")
        if self.forward:
            raise RuntimeError("backward: this is a forward-mode tape")
        if leaves is not None:
            leaves = list(leaves)
            for k in leaves:
                if k < 0 or k >= self.n_nodes:
                    raise IndexError(f"backward: leaf node {k} is not on this tape")
        # while the sweep runs nothing is recorded onto this tape and release() waits for it,
        # so the arena stays where it is whatever Python code the VJPs (and __del__s) run
        self.sweeping = True
        cdef gradcy_sweep_t* sweep = gradcy_sweep_ptr()
        cdef gradcy_sweep_t outer_sweep = sweep[0]
        if outer_sweep.floor < 0:
            sweep.floor = self.trace_id
            sweep.forward_end = self.forward_end
            sweep.next = _next_trace_id
        try:
            self._mark_reachable(out)
            # nodes recorded after the output (aux values) cannot reach it either
            for i in range(out + 1, self.n_nodes):
                self.nodes[i].flags &= ~NODE_REACHABLE
            for i in range(self.n_nodes):
                if not (self.nodes[i].flags & (NODE_REACHABLE | NODE_RELEASED | NODE_LEAF)):
                    self._kill(i)
            self._accumulate(out, g)
            i = out
            while i >= 0:
                node = &self.nodes[i]
                if node.cotangent is NULL or (node.flags & NODE_LEAF):
                    i -= 1
                    continue
                if node.flags & NODE_CONSTANT:
                    self._take_cotangent(i)
                    i -= 1
                    continue
                if node.prim is NULL:
                    raise RuntimeError(f"backward: node {i} received a cotangent after its saved "
                                       f"values were released (the tape was already consumed)")
                gi = self._take_cotangent(i)
                if type(gi) is SparseCotangent:
                    gi = (<SparseCotangent>gi).dense()
                # `gi` is this sweep's only reference: a write's VJP may zero it in place
                self._run_vjp(i, gi, Py_REFCNT(<PyObject*>gi) == 1)
                del gi
                if consume:
                    self._release_saved(i)
                elif self.observer is not None:
                    self._notify("backward", i, (<Primitive>self.nodes[i].prim).name)
                i -= 1
            result = None
            if leaves is not None:
                result = [_densify(self._take_cotangent(k)) for k in leaves]
        finally:
            for i in range(self.n_nodes):
                if self.nodes[i].cotangent is not NULL:
                    self._take_cotangent(i)
            self.sweeping = False
            sweep[0] = outer_sweep
            if self.release_pending:
                self._free_all()
        return result

    cdef _run_vjp(self, Py_ssize_t i, object g, bint g_owned):
        # Recording onto a sweeping tape raises, so the parent pool cannot move while VJPs run;
        # node fields are read before any Python code runs.
        cdef Node* node = &self.nodes[i]
        cdef Primitive prim = <Primitive>node.prim
        cdef tuple args = <tuple>node.saved_args
        if node.flags & NODE_RECOMPUTE:
            args = _materialize(self, args)
        prim.vjp.run(self, prim, node.parent_start, node.nparents, g, g_owned,
                     <object>node.saved_ans, args, <object>node.saved_kwargs)

    # ---- release --------------------------------------------------------------------------
    cdef int _free_all(self) noexcept:
        global _live_tapes, _live_nodes, _saved_bytes, _cotangent_bytes
        cdef Py_ssize_t i
        cdef Node* nodes = self.nodes
        cdef Py_ssize_t n = self.n_nodes
        if self.released:
            return 0
        if self.sweeping:
            # called by a VJP or another thread during the sweep: the sweep ends it
            self.release_pending = True
            return 0
        self.release_pending = False
        self.released = True
        self.nodes = NULL
        self.n_nodes = 0
        _live_tapes -= 1
        _live_nodes -= self.live_nodes
        _saved_bytes -= self.saved_bytes
        _cotangent_bytes -= self.cotangent_bytes
        self.live_nodes = 0
        self.saved_bytes = 0
        self.cotangent_bytes = 0
        # the counters and the flag are final before any reference is dropped, so a __del__
        # that runs below sees a released tape
        for i in range(n):
            Py_XDECREF(nodes[i].prim)
            Py_XDECREF(nodes[i].saved_ans)
            Py_XDECREF(nodes[i].saved_args)
            Py_XDECREF(nodes[i].saved_kwargs)
            Py_XDECREF(nodes[i].cotangent)
        PyMem_Free(nodes)
        PyMem_Free(self.parents)
        self.parents = NULL
        self.n_parents = 0
        self.cap_nodes = 0
        self.cap_parents = 0
        hold_free(&self.holds)
        # arrays freeze_saved made read-only: writable again (their lists go below)
        frozen, self.frozen = self.frozen, None
        if frozen:
            for entry in frozen.values():
                for v in <list>entry:
                    cnp.PyArray_ENABLEFLAGS(<cnp.ndarray>v, cnp.NPY_ARRAY_WRITEABLE)
        # owned buffers (and the hook's bookkeeping about them) go with the tape, even while
        # a Box of this tape is still referenced somewhere
        self.owned = None
        self.computed = None
        self.inputs = None
        return 0

    def release(self):
        """Free every node, saved buffer and cotangent now (called during a backward pass of
        this tape: when the pass ends). Idempotent. Boxes of this tape raise
        EscapedValueError when used in a primitive afterwards."""
        self._free_all()

    # ---- introspection (tests, memory reports) ----------------------------------------------
    def node_info(self, Py_ssize_t i):
        """A dict describing node i (for tests and reports)."""
        if self.released:
            raise EscapedValueError("node_info: this tape has been released")
        if i < 0 or i >= self.n_nodes:
            raise IndexError(f"node_info: node {i} is not on this tape")
        cdef Node* node = &self.nodes[i]
        return {
            "primitive": (<Primitive>node.prim).name if node.prim is not NULL else None,
            "prim": <object>node.prim if node.prim is not NULL else None,
            "parents": [self.parents[node.parent_start + k].node for k in range(node.nparents)],
            "argnums": [self.parents[node.parent_start + k].argnum for k in range(node.nparents)],
            "nconsumers": node.nconsumers,
            "saved": (None if node.saved_args is NULL else
                      (<object>node.saved_ans, <object>node.saved_args, <object>node.saved_kwargs)),
            "saved_bytes": node.saved_bytes,
            "has_cotangent": node.cotangent is not NULL,
            "leaf": bool(node.flags & NODE_LEAF),
            "box_alive": bool(node.flags & NODE_BOX_ALIVE),
            "pinned": bool(node.flags & NODE_PINNED),
            "released": bool(node.flags & NODE_RELEASED),
        }


cdef int _check_node(Tape t, Py_ssize_t i, str caller) except -1:
    if t.released:
        raise EscapedValueError(f"Tape.{caller}: this tape has been released")
    if i < 0 or i >= t.n_nodes:
        raise IndexError(f"Tape.{caller}: node {i} is not on this tape ({t.n_nodes} nodes)")
    return 0


cdef int _check_box(Tape t, Box box, str caller) except -1:
    """box is a value of tape t, which is not released (so box._node is in its arena)."""
    if box._tape is not t:
        raise ValueError(f"Tape.{caller}: the value belongs to another tape")
    if t.released:
        raise EscapedValueError(f"Tape.{caller}: this tape has been released")
    return 0


cdef Box make_box(object value, Tape tape, Py_ssize_t node):
    """The Box of node `node` of `tape`. Invariant of every Box: its tape is released, or its
    node is in the tape's arena (so a check of `released` guards every arena access)."""
    cdef Box b
    cdef PyObject* sub
    if _n_box_subtypes and not cnp.PyArray_CheckExact(value):
        sub = PyDict_GetItem(_box_type_of, type(value))
        b = Box.__new__(Box) if sub is NULL else (<object>sub).__new__(<object>sub)
    else:
        b = Box.__new__(Box)
    b._value = value
    b._tape = tape
    b._node = node
    if node < tape.n_nodes:      # (0 once released: an observer may have released it)
        tape.nodes[node].flags |= NODE_BOX_ALIVE
    return b


# the tape of Boxes not made by make_box and of Boxes left detached by transfer_box
cdef Tape _DETACHED = Tape()
_DETACHED.release()
# the tape of the values computed, during a backward pass, from that differentiation's own
# traced values (_swept_value): released (nothing is recorded onto it), and a call with one of
# its Boxes runs on their values instead of raising as for an escaped value
cdef Tape _SWEPT = Tape()
_SWEPT.release()


def unbroadcast(g, target):
    """The cotangent g reduced to the shape and cast to the dtype of `target` (an array,
    ArrayMeta, traced value or scalar). The common case (already matching) is decided here."""
    if _same_shape_dtype(g, target):
        return g
    return _unbroadcast_slow(g, target)
