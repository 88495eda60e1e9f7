# Contract of gradcy/_recompute.pyx: recomputed outputs (Tape.recompute). A Recomputed owns
# its meta; it lives in a saved record (Node.saved_args, _tape.pxd) and goes with it. Reads the
# tape's arena under the GIL; owns nothing else. _tape cimports it and it cimports _tape (the
# arena): the module body of each calls nothing of the other.
from libc.stdint cimport int32_t

from gradcy._tape cimport Tape, ParentRef


cdef class Recomputed:
    # What a saved record keeps in place of the output of node `node` (a recomputable op whose
    # own record holds its inputs): the output is made again from that record before the VJP.
    cdef readonly Py_ssize_t node
    cdef readonly object meta      # ArrayMeta of the value


cdef bint _recompute_default      # whether a new Tape recomputes (set_recompute_default)

# sargs with the outputs of recomputable parents (refs) replaced by Recomputed stand-ins (a new
# tuple), or sargs itself when none is
cdef tuple _recompute_args(Tape top, ParentRef* refs, int32_t nrefs, tuple sargs)
# args with each Recomputed stand-in replaced by the output made again from its node's record
cdef tuple _materialize(Tape t, tuple args)
