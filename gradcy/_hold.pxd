# Contract of gradcy/_hold.pyx: the hold table of a tape (Tape.holds, _tape.pxd), root buffer ->
# number of the tape's saved records that hold it. Keys are borrowed addresses (the saved
# records own the buffers); the table owns its slot array, freed by hold_free(), which
# Tape._free_all() calls (release(), __dealloc__).

cdef struct HoldEntry:
    void* key                # address of a root ndarray held by
                             # saved records; NULL empty, 1 deleted
    Py_ssize_t count         # saved records (of this tape) that hold it

cdef struct HoldTable:
    HoldEntry* slots         # open-addressing table (PyMem); NULL while cap is 0
    Py_ssize_t cap           # slots allocated (a power of two, or 0)
    Py_ssize_t used          # slots ever filled since the last rehash (live + deleted)
    Py_ssize_t live          # root buffers held now (each counted once in saved_bytes)

# One more (sign=+1) or one fewer (-1) saved record holding `root` (a root ndarray); returns its
# bytes when that changed whether the table holds it at all, else 0.
cdef Py_ssize_t hold_update(HoldTable* t, object root, int sign) except -1
# Free the slots; the table is empty (cap 0) afterwards.
cdef void hold_free(HoldTable* t) noexcept
# Saved records of the table that hold `root` now (0: none).
cdef Py_ssize_t hold_count(HoldTable* t, object root) noexcept
# The root buffers the table holds now (a new list; each alive: records reference it).
cdef list hold_roots(HoldTable* t)
