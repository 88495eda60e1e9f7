# Contract of gradcy/_write.pyx: writes into buffers a tape owns. Reads the tape's arena
# (_tape.pxd) under the GIL; fills the OwnedBuffer entries (_regions.pxd) of Tape.owned and
# Tape.inputs, which the tape owns and drops in its release; owns no references beyond its
# calls (and the stale-view resolver installed by install_stale_resolver, held for the life of
# the process).
from gradcy._tape cimport Tape
from gradcy._box cimport Box
from gradcy._regions cimport OwnedBuffer

# whether some of `extra` references to arr are held by more than the saved records of
# nodes start, ... of tape
cdef bint _unexplained(Tape tape, Py_ssize_t start, object arr, Py_ssize_t extra,
                       object own_view) except -1

# what _tape's recording tells: node `node`'s value `ans` (its Box `box`; args: the call's
# arguments) is a traced view (_note_view) in a buffer the tape owns (is_write: the write
# primitive's own output, the buffer's new version, is none), in an input's memory, or in an
# array an operation computed (noted in Tape.computed with that array's own Box, until a write
# makes it owned: adopt); a saved array (view=False, position: its argument position, -1 the
# output) or a traced view (view=True) in the owned buffer `info` (_owned_note)
cdef int _note_view(Tape tape, Box box, Py_ssize_t node, object ans, tuple args,
                    bint is_write) except -1
cdef int _owned_note(Tape tape, object info, bint view, Py_ssize_t node, object array,
                     Py_ssize_t position) except -1

# Box.__setitem__'s fast path: box[idx] = value recorded here when box is an owned buffer of its
# tape, idx a basic index and value plain or traced on the same tape (traced only into a
# floating-point, complex or object buffer); False (nothing done) when gradcy/numpy/inplace.py
# must do it
cdef bint _setitem_fast(Box box, object idx, object value) except -1

# a traced value used while its node is stale (a view whose memory a write changed after it was
# taken): moves `box` to the same view of the buffer's current version (the resolver that
# gradcy/numpy/inplace.py installs with install_stale_resolver), or raises the stale-view error
# naming primitive `name` and argument `argpos` when that version cannot be reached
cdef int _resolve_stale(Tape tape, Box box, str name, Py_ssize_t argpos) except -1
