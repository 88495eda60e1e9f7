# Contract of gradcy/_write.pyx: what the write path of gradcy/numpy/inplace.py asks about a
# tape. Reads the tape's arena (_tape.pxd) under the GIL; owns no references beyond its calls.
from gradcy._tape cimport Tape

# whether some of `extra` references to arr are held by more than the saved records of
# nodes start, ... of tape
cdef bint _unexplained(Tape tape, Py_ssize_t start, object arr, Py_ssize_t extra,
                       object own_view) except -1
