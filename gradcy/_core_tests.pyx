"""Private test hooks of the gradcy engine (used by tests/test_core.py only).

Cimports the core's struct declarations and reports struct-level facts that the Python API does
not expose (arena capacities, raw flags, NULL-ness of owned pointers, refcounts of cotangent
slots), and drives the engine's C-level methods directly (appending nodes, accumulating
cotangents) so that tests can check the invariants of the arena.
"""
from cpython.object cimport PyObject
from libc.stdint cimport int32_t

from gradcy._tape cimport (Tape, Node, ParentRef, NODE_LEAF, NODE_BOX_ALIVE, NODE_PINNED,
                           NODE_RELEASED, NODE_REACHABLE)
from gradcy._primitive cimport Primitive
from gradcy._box cimport Box

cdef extern from "Python.h":
    Py_ssize_t Py_REFCNT(PyObject* o)


FLAGS = {
    "LEAF": NODE_LEAF,
    "BOX_ALIVE": NODE_BOX_ALIVE,
    "PINNED": NODE_PINNED,
    "RELEASED": NODE_RELEASED,
    "REACHABLE": NODE_REACHABLE,
}


cdef int _check_index(Tape t, Py_ssize_t i) except -1:
    if t.released:
        raise ValueError("tape released")
    if i < 0 or i >= t.n_nodes:
        raise IndexError(f"node {i} not in arena of {t.n_nodes} nodes")
    return 0


# =============================================================================
# Arena facts
# =============================================================================
def arena(Tape t not None):
    """Sizes of the arena: dict of n_nodes, cap_nodes, n_parents, cap_parents, nodes_null,
    parents_null."""
    return {
        "n_nodes": t.n_nodes,
        "cap_nodes": t.cap_nodes,
        "n_parents": t.n_parents,
        "cap_parents": t.cap_parents,
        "nodes_null": t.nodes is NULL,
        "parents_null": t.parents is NULL,
        "buffers": None if t.released else t.hold_live,
    }


def node_struct(Tape t not None, Py_ssize_t i):
    """The raw struct of node i as a dict."""
    _check_index(t, i)
    cdef Node* n = &t.nodes[i]
    cdef int32_t k
    return {
        "flags": n.flags,
        "leaf": bool(n.flags & NODE_LEAF),
        "box_alive": bool(n.flags & NODE_BOX_ALIVE),
        "pinned": bool(n.flags & NODE_PINNED),
        "released": bool(n.flags & NODE_RELEASED),
        "nparents": n.nparents,
        "nconsumers": n.nconsumers,
        "parent_start": n.parent_start,
        "parents": [t.parents[n.parent_start + k].node for k in range(n.nparents)],
        "argnums": [t.parents[n.parent_start + k].argnum for k in range(n.nparents)],
        "prim_null": n.prim is NULL,
        "saved_null": n.saved_args is NULL,
        "saved_ans_null": n.saved_ans is NULL,
        "saved_kwargs_null": n.saved_kwargs is NULL,
        "cotangent_null": n.cotangent is NULL,
        "saved_bytes": n.saved_bytes,
        "cot_bytes": n.cot_bytes,
    }


def saved_object(Tape t not None, Py_ssize_t i):
    """Node i's saved record as a tuple (ans, args, kwargs), or None when released (NULL)."""
    _check_index(t, i)
    cdef Node* n = &t.nodes[i]
    if n.saved_args is NULL:
        if n.saved_ans is not NULL or n.saved_kwargs is not NULL:
            raise AssertionError(f"node {i}: saved_args is NULL but not saved_ans/saved_kwargs")
        return None
    return (<object>n.saved_ans, <object>n.saved_args, <object>n.saved_kwargs)


def cotangent_object(Tape t not None, Py_ssize_t i):
    """Node i's cotangent slot object (a new reference), or None when the slot is empty."""
    _check_index(t, i)
    if t.nodes[i].cotangent is NULL:
        return None
    return <object>t.nodes[i].cotangent


def cotangent_id(Tape t not None, Py_ssize_t i):
    """id() of the object in node i's cotangent slot (no reference taken), or None."""
    _check_index(t, i)
    if t.nodes[i].cotangent is NULL:
        return None
    return <Py_ssize_t>t.nodes[i].cotangent


def cotangent_refcount(Tape t not None, Py_ssize_t i):
    """Reference count of the object in node i's cotangent slot (no reference taken), or -1."""
    _check_index(t, i)
    if t.nodes[i].cotangent is NULL:
        return -1
    return Py_REFCNT(t.nodes[i].cotangent)


def topological_violations(Tape t not None):
    """Every (child, parent) pair whose parent index is not smaller than the child's, plus
    parent refs pointing outside the arena."""
    cdef Py_ssize_t i, p
    cdef int32_t k
    cdef list bad = []
    if t.released:
        return bad
    for i in range(t.n_nodes):
        if t.nodes[i].parent_start < 0 or (
                t.nodes[i].parent_start + t.nodes[i].nparents > t.n_parents):
            bad.append((i, -1))
            continue
        for k in range(t.nodes[i].nparents):
            p = t.parents[t.nodes[i].parent_start + k].node
            if p < 0 or p >= i:
                bad.append((i, p))
    return bad


def consumer_counts(Tape t not None):
    """For every node, the number of non-released nodes that list it as a parent (what
    nconsumers should equal), and nconsumers itself: list of (expected, actual)."""
    cdef Py_ssize_t i, p
    cdef int32_t k
    cdef list expected = [0] * t.n_nodes
    for i in range(t.n_nodes):
        if t.nodes[i].flags & NODE_RELEASED:
            continue
        for k in range(t.nodes[i].nparents):
            p = t.parents[t.nodes[i].parent_start + k].node
            expected[p] += 1
    return [(expected[i], t.nodes[i].nconsumers) for i in range(t.n_nodes)]


# =============================================================================
# Driving the engine at C level
# =============================================================================
def record_chain(Primitive prim not None, Py_ssize_t n, Py_ssize_t fan=2, seed=12345):
    """On a fresh tape with one leaf, append n nodes of `prim` through Tape._append, node i
    reading up to `fan` earlier nodes (pseudo-random, deterministic). Each node's saved
    record is (None, (i,), None): ans None, args (i,), kwargs None, checked after growth. Returns
    (tape, capacity history: list of (n_nodes_after_append, cap_nodes, cap_parents) recorded
    whenever a capacity changed, expected parent lists)."""
    cdef Tape t = Tape()
    cdef ParentRef refs[8]
    cdef int32_t nrefs, k
    cdef Py_ssize_t i, j, cap_n = 0, cap_p = 0
    cdef unsigned long long state = <unsigned long long>seed
    cdef list history = []
    cdef list expected = [[]]
    if fan > 8 or fan < 0:
        raise ValueError("0 <= fan <= 8")
    if n > 10_000_000:
        raise ValueError("n <= 10_000_000")
    leaf = t.new_leaf(0.0)
    for i in range(1, n + 1):
        nrefs = 0
        plist = []
        for k in range(fan):
            state = state * 6364136223846793005ULL + 1442695040888963407ULL
            j = <Py_ssize_t>((state >> 33) % <unsigned long long>i)
            refs[nrefs].node = j
            refs[nrefs].argnum = k
            nrefs += 1
            plist.append(j)
        t._append(prim, refs, nrefs, None, (i,), None, 0)
        expected.append(plist)
        if t.cap_nodes != cap_n or t.cap_parents != cap_p:
            cap_n = t.cap_nodes
            cap_p = t.cap_parents
            history.append((t.n_nodes, cap_n, cap_p))
    del leaf
    return t, history, expected


def accumulate(Tape t not None, Py_ssize_t i, g):
    """Tape._accumulate(i, g): add g into node i's cotangent slot as a VJP result would be."""
    _check_index(t, i)
    t._accumulate(i, g)


def take_cotangent(Tape t not None, Py_ssize_t i):
    """Tape._take_cotangent(i): empty node i's slot and return its object."""
    _check_index(t, i)
    return t._take_cotangent(i)


def counters(Tape t not None):
    """The tape's own counters."""
    return {
        "live_nodes": t.live_nodes,
        "saved_bytes": t.saved_bytes,
        "cotangent_bytes": t.cotangent_bytes,
        "peak_saved_bytes": t.peak_saved_bytes,
        "peak_bytes": t.peak_bytes,
    }


def box_fields(Box b not None):
    """(id of tape, node index, tape released) of a Box."""
    return id(b._tape), b._node, b._tape.released
