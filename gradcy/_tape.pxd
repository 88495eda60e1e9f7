# Contract of gradcy/_tape.pyx, the engine's record: the tape (an arena of typed nodes and the
# backward sweep over it). The parts it refers to and that refer to it are parts of their own
# that this one cimports and that cimport it: the primitives that record onto it (_primitive.pxd,
# the type of Node.prim), the rules the sweep calls (_rules.pxd, the type of Primitive.vjp),
# recomputed outputs (_recompute.pxd), the compact saved record (_saved.pxd), the traced value
# (Box, _box.pxd), the tables and hooks the operator layer installs (_hooks.pxd) and the
# owned-buffer writes (_write.pxd); the module body of each calls nothing of the others, so
# Python may import any of them first. The parts they use and that use nothing of them are
# below it, grad's fast path (_fast) above it (docs/architecture.md lists every part and who
# imports whom).
#
# What this part owns, and where each owned reference is released:
# - Node.prim, Node.saved_ans, Node.saved_args, Node.saved_kwargs: Tape._release_saved() (after
#   the node's VJP ran in a consuming sweep, when the node dies or cannot reach the output of a
#   sweep), or Tape._free_all() (release(), __dealloc__).
# - Node.cotangent (a tangent on a forward-mode tape): Tape._take_cotangent() when the node's
#   VJP consumes it, the end of backward(), or Tape._free_all().
# - Tape.nodes, Tape.parents (C arrays), Tape.holds (_hold.pxd): Tape._free_all().
# - Tape.owned, Tape.computed (dicts of OwnedBuffer, _regions.pxd), Tape.observer:
#   Tape._free_all() drops `owned` and `computed`; the rest with the Tape object.
# - Tape.frozen (the arrays freeze_saved made read-only, per held root buffer): an entry when
#   the root's last holding record releases it (Tape._hold -> _thaw, flags restored), the
#   rest (flags restored) by Tape._free_all().
# - A Box (_box.pxd) holds its Tape; a Tape never holds its Boxes (make_box sets the node's
#   NODE_BOX_ALIVE, Box.__dealloc__ clears it through Tape._box_dropped()).
# - _DETACHED, _SWEPT: for the life of the process.
from libc.stdint cimport int32_t, uint8_t
from cpython.object cimport PyObject

from gradcy._cotangents cimport SparseCotangent
from gradcy._hold cimport HoldTable
from gradcy._primitive cimport Primitive
from gradcy._box cimport Box

# =============================================================================
# Node flags
# =============================================================================
cdef enum:
    MAX_INLINE_PARENTS = 16   # a call's ParentRefs (a rule's argument vector) up to this many
                              # arguments live on the C stack

cdef enum:
    NODE_LEAF = 1         # an input of the differentiation: no primitive, no parents
    NODE_BOX_ALIVE = 2    # the Box carrying this node's value still exists
    NODE_PINNED = 4       # an output that a backward pass will start from: never dead
    NODE_RELEASED = 8     # saved record released (VJP ran, node dead or unreachable)
    NODE_REACHABLE = 16   # scratch mark of the reachability pass before a sweep
    NODE_CONSTANT = 32    # no traced input reaches it (a buffer
                          # made by a constructor): no cotangent
    NODE_STALE = 64       # a view whose memory a later write changed: using it takes it
                          # again from the buffer's current version (_write._resolve_stale)
    NODE_RECOMPUTE = 128  # its saved record has Recomputed entries (made again before its VJP)


# =============================================================================
# Arena records
# =============================================================================
cdef struct Node:
    PyObject* prim           # owned ref to the Primitive that made the value; NULL for a leaf
    PyObject* saved_ans      # owned: the output, or its ArrayMeta if the
                             # VJP does not read it; NULL once released
    PyObject* saved_args     # owned: tuple of arguments (unread
                             # buffers as ArrayMeta); NULL once released
    PyObject* saved_kwargs   # owned: the call's keyword arguments, or None; NULL once released
    PyObject* cotangent      # owned ref to the accumulated cotangent (on a forward-mode tape,
                             # Tape.forward: the value's tangent); NULL until one arrives
    Py_ssize_t parent_start  # index of this node's first ParentRef in the tape's parent pool
    Py_ssize_t saved_bytes   # bytes of buffers this node's record
                             # holds (shared buffers counted once)
    Py_ssize_t cot_bytes     # bytes of the cotangent slot, as counted in the tape's totals
    int32_t nparents         # number of traced arguments, i.e. ParentRefs
    int32_t nconsumers       # recorded nodes that read this value and are not dead
    uint8_t flags            # NODE_* bits

cdef struct ParentRef:
    Py_ssize_t node          # arena index of the parent node (always < the child's index)
    int32_t argnum           # position of the parent among the primitive's positional arguments


# =============================================================================
# Extension types
# =============================================================================
cdef class Tape:
    cdef Node* nodes               # the arena; node i's parents all have indices < i
    cdef Py_ssize_t n_nodes        # nodes in use
    cdef Py_ssize_t cap_nodes      # nodes allocated
    cdef ParentRef* parents        # parent pool shared by all nodes
    cdef Py_ssize_t n_parents      # entries in use
    cdef Py_ssize_t cap_parents    # entries allocated
    cdef HoldTable holds           # root buffer -> saved records holding it (_hold.pxd)
    cdef readonly long long trace_id   # unique for the life of the process, never reused
    cdef readonly long long forward_end   # the next trace id when its forward pass last left
                                   # the active stack (pop_active); 2**62 until then
    cdef readonly bint released    # release() has run: every node and buffer is gone
    cdef readonly bint sweeping    # a backward pass is running on this tape
    cdef bint release_pending      # release() was called during the
                                   # sweep: it runs when the sweep ends
    cdef readonly bint forward     # forward mode: slots hold tangents, nothing is saved
    cdef readonly Py_ssize_t saved_bytes       # bytes held by saved records now
    cdef readonly Py_ssize_t peak_saved_bytes  # most saved bytes held at once
    cdef readonly Py_ssize_t cotangent_bytes   # bytes held by cotangent slots now
    cdef readonly Py_ssize_t peak_bytes        # most saved + cotangent bytes held at once
    cdef readonly Py_ssize_t live_nodes        # nodes whose saved record has not been released
    cdef public object observer    # callable(event, index, name,
                                   # saved_bytes, cotangent_bytes) or None
    cdef public bint keep_args     # save every argument and the output in full (graph recording)
    cdef public object recorder    # a const_graph recording (gradcy.misc.tracers) or None:
                                   # recorder.records(prim) says whether a call of an
                                   # untraced primitive is recorded too (its output is
                                   # then a Box); Box tells recorder.read(box, kind,
                                   # value) each Python-level read of a traced value
    cdef public bint recompute     # outputs of recomputable ops whose record holds their inputs
                                   # are not kept by their consumers: made again in the backward
    cdef readonly dict owned       # id(root) -> OwnedBuffer: buffers
                                   # this tape owns and writes in place
    cdef readonly dict inputs      # id(root) -> OwnedBuffer of an array
                                   # input: its traced views, or None
    cdef readonly dict computed    # id(root) -> OwnedBuffer (box, views only) of an array an
                                   # operation computed whose traced views were taken, until
                                   # a write through one makes it owned (_write.pxd), or None
    cdef dict frozen               # id(root) -> [arrays freeze_saved made read-only in that held
                                   # root buffer], or None: writable again when the root's
                                   # last holding record releases it (_hold) or at _free_all

    cdef int _grow_nodes(self, Py_ssize_t need) except -1
    cdef int _grow_parents(self, Py_ssize_t need) except -1
    cdef Py_ssize_t _append(self, Primitive prim, ParentRef* refs, int32_t nrefs,
                            object ans, tuple args, object kwargs,
                            Py_ssize_t nbytes) except -1
    cdef Py_ssize_t _account(self, object ans, object args, int sign) except -1
    cdef Py_ssize_t _hold(self, object a, int sign) except -1
    cdef int _freeze(self, object v, bint held) except -1
    cdef int _thaw(self, object root) except -1
    cdef int _release_saved(self, Py_ssize_t i) except -1
    cdef int _set_cotangent(self, Py_ssize_t i, object g) except -1
    cdef object _take_cotangent(self, Py_ssize_t i)
    cdef object _view_slot(self, Py_ssize_t i, int depth)
    cdef bint _add_into_parent_slot(self, Py_ssize_t i, object g) except -1
    cdef Py_ssize_t _new_input(self, uint8_t flags, str caller) except -1
    cdef int _accumulate(self, Py_ssize_t i, object g) except -1
    cdef int _accumulate_sparse(self, Py_ssize_t i, SparseCotangent g) except -1
    cdef int _box_dropped(self, Py_ssize_t i) except -1
    cdef int _kill(self, Py_ssize_t i) except -1
    cdef int _mark_reachable(self, Py_ssize_t out) except -1
    cdef int _notify(self, str event, Py_ssize_t i, object name) except -1
    cdef int _free_all(self) noexcept
    cdef int _owned_scan(self, Py_ssize_t node, object ans, tuple args) except -1
    cdef _run_vjp(self, Py_ssize_t i, object g, bint g_owned)


# the tape of Boxes not made by make_box and of Boxes left detached by transfer_box (released)
cdef Tape _DETACHED
# the tape of the values computed, during a backward pass, from that differentiation's own
# traced values (_primitive's _swept_value): released, nothing is recorded onto it
cdef Tape _SWEPT

# The Box of node `node` of `tape` (sets the node's NODE_BOX_ALIVE)
cdef Box make_box(object value, Tape tape, Py_ssize_t node)
# t began during the forward pass (or the backward pass) of the tape whose backward pass runs
# outermost in this thread (the thread-local state of the sweep is this part's)
cdef bint _began_in_sweep(Tape t) noexcept
# PyMem_Realloc of count items, raising MemoryError on overflow or failure
cdef void* _realloc_checked(void* p, Py_ssize_t count, size_t itemsize) except? NULL
