"""The hold table of a tape: root buffer -> number of the tape's saved records that hold it, so
that a buffer saved by several nodes counts once in the tape's saved bytes.

Contract: _hold.pxd. An open-addressing table keyed by the address of the root ndarray (a held
root is alive, since the records reference it, so its address cannot be reused while it is in
the table).
"""
from cpython.mem cimport PyMem_Calloc, PyMem_Free

cimport numpy as cnp

from gradcy._regions cimport _nbytes

cnp.import_array()


cdef void* _DELETED = <void*>1       # a hold-table slot whose buffer was let go


cdef inline size_t _hash_ptr(void* p) noexcept nogil:
    cdef size_t h = <size_t>p
    h ^= h >> 17
    h *= <size_t>0x9E3779B97F4A7C15ULL
    return h ^ (h >> 29)


cdef Py_ssize_t hold_update(HoldTable* t, object root, int sign) except -1:
    """One more (sign=+1) or one fewer (-1) saved record holding `root` (a root ndarray);
    returns its bytes when that changed whether the table holds it at all, else 0. The
    table is keyed by the root's address: a held root is alive (the record references
    it), so its address cannot be reused while it is in the table."""
    cdef void* key = <void*>root
    cdef HoldEntry* e
    cdef HoldEntry* free_slot = NULL
    cdef size_t i, mask
    if sign > 0 and (t.used + 1) * 3 >= t.cap * 2:
        _rehash(t, max(16, 4 * (t.live + 1)))
    if t.cap == 0:
        return 0
    mask = <size_t>t.cap - 1
    i = _hash_ptr(key) & mask
    while True:
        e = &t.slots[i]
        if e.key == NULL:
            break
        if e.key == key:
            if sign > 0:
                e.count += 1
                return 0
            e.count -= 1
            if e.count > 0:
                return 0
            e.key = _DELETED
            t.live -= 1
            return _nbytes(root)
        if e.key == _DELETED and free_slot is NULL:
            free_slot = e
        i = (i + 1) & mask
    if sign < 0:
        return 0
    if free_slot is not NULL:
        e = free_slot
    else:
        t.used += 1
    e.key = key
    e.count = 1
    t.live += 1
    return _nbytes(root)


cdef int _rehash(HoldTable* t, Py_ssize_t want) except -1:
    """Move the live entries into a table of at least `want` slots (a power of two)."""
    cdef Py_ssize_t cap = 16, k
    cdef HoldEntry* old = t.slots
    cdef Py_ssize_t old_cap = t.cap
    cdef HoldEntry* fresh
    cdef size_t i, mask
    while cap < want:
        cap *= 2
    fresh = <HoldEntry*>PyMem_Calloc(cap, sizeof(HoldEntry))
    if fresh is NULL:
        raise MemoryError()
    mask = <size_t>cap - 1
    for k in range(old_cap):
        if old[k].key != NULL and old[k].key != _DELETED:
            i = _hash_ptr(old[k].key) & mask
            while fresh[i].key != NULL:
                i = (i + 1) & mask
            fresh[i] = old[k]
    t.slots = fresh
    t.cap = cap
    t.used = t.live
    PyMem_Free(old)
    return 0


cdef Py_ssize_t hold_count(HoldTable* t, object root) noexcept:
    """Saved records of the table that hold `root` now (0: none)."""
    cdef void* key = <void*>root
    cdef size_t i, mask
    if t.cap == 0:
        return 0
    mask = <size_t>t.cap - 1
    i = _hash_ptr(key) & mask
    while t.slots[i].key != NULL:
        if t.slots[i].key == key:
            return t.slots[i].count
        i = (i + 1) & mask
    return 0


cdef list hold_roots(HoldTable* t):
    """The root buffers the table holds now."""
    cdef Py_ssize_t k
    cdef list out = []
    for k in range(t.cap):
        if t.slots[k].key != NULL and t.slots[k].key != _DELETED:
            out.append(<object>t.slots[k].key)
    return out


cdef void hold_free(HoldTable* t) noexcept:
    PyMem_Free(t.slots)
    t.slots = NULL
    t.cap = t.used = t.live = 0
