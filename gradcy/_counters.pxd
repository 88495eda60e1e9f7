# Contract of gradcy/_counters.pyx: the engine's process-wide counters. C globals, shared with
# the modules that cimport them (they are updated in C under the GIL, with no Python call
# between a read and the write, so threads cannot tear them). Owns no references.
#
# Writers: _tape._count_bytes (saved and cotangent bytes, their peaks), Tape.__cinit__
# (_next_trace_id, _live_tapes), Tape._append / _new_input / _release_saved (_live_nodes) and
# Tape._free_all (everything a released tape held); reset_peak() (the peaks).

cdef long long _next_trace_id        # trace_id of the next Tape (unique for the process)
cdef Py_ssize_t _live_tapes          # Tapes not yet released
cdef Py_ssize_t _live_nodes          # nodes whose saved record is still held
cdef Py_ssize_t _saved_bytes         # bytes of buffers held by saved records now
cdef Py_ssize_t _peak_saved_bytes    # most saved bytes held at once since reset_peak()
cdef Py_ssize_t _cotangent_bytes     # bytes held by cotangent slots now
cdef Py_ssize_t _peak_bytes          # most saved + cotangent bytes held at once
