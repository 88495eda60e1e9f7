"""Process-wide counters of the engine (gradcy.memory.stats() reads them through stats()).

Contract: _counters.pxd. The variables are C globals of this module that the tape module
cimports and updates directly (a pointer, no Python call): see _tape._count_bytes,
Tape.__cinit__, Tape._append, Tape._release_saved and Tape._free_all.
"""

# =============================================================================
# Process-wide counters (under the GIL; every change happens in C with no Python call between
# the read and the write, so threads cannot tear them)
# =============================================================================
cdef long long _next_trace_id = 1
cdef Py_ssize_t _live_tapes = 0
cdef Py_ssize_t _live_nodes = 0
cdef Py_ssize_t _saved_bytes = 0
cdef Py_ssize_t _peak_saved_bytes = 0
cdef Py_ssize_t _cotangent_bytes = 0
cdef Py_ssize_t _peak_bytes = 0


def stats():
    """The engine's own counts, summed over every tape in the process.

    live_tapes: tapes not yet released; live_nodes: recorded nodes whose saved record is still
    held; saved_bytes / cotangent_bytes: bytes of buffers held now by saved records / cotangent
    slots (a buffer saved by several nodes counts once per tape); peak_saved_bytes / peak_bytes:
    the most saved (saved + cotangent) bytes held at once since the last reset_peak().
    """
    return {
        "live_tapes": _live_tapes,
        "live_nodes": _live_nodes,
        "saved_bytes": _saved_bytes,
        "cotangent_bytes": _cotangent_bytes,
        "peak_saved_bytes": _peak_saved_bytes,
        "peak_bytes": _peak_bytes,
    }


def reset_peak():
    """Set the process-wide peaks to what is held now."""
    global _peak_saved_bytes, _peak_bytes
    _peak_saved_bytes = _saved_bytes
    _peak_bytes = _saved_bytes + _cotangent_bytes
