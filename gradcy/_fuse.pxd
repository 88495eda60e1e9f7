# Contract of gradcy/_fuse.pyx: record-time fusion of the softmax a user writes out,
# e = exp(z); w = e / sum(e, axis, keepdims=True) (z possibly x - max(x, axis, keepdims=True)).
# Primitive._record (_tape) asks softmax_record() when it records a primitive whose `fuses` is
# set (divide): the division is then recorded as one softmax node whose parent is z's node (or
# x's), so the exp and sum nodes, left without consumers, die with their Boxes and release
# what they saved (exp's output) during the forward pass. Reads the tape's arena under the GIL;
# runs no Python code of the user's. Owns the six registered Primitives and a copy of the
# reverse-mode rules of exp, sum, divide, subtract and max as registered (module globals, for
# the life of the process; register_softmax replaces them): a rule of the user's own on one of
# them (which the fused node would bypass) turns the fusion off while it is registered. _tape
# cimports it and it cimports _tape (the arena): the module body of each calls nothing of the
# other.
from libc.stdint cimport int32_t

from gradcy._tape cimport Tape, ParentRef


cdef bint _fusion_on               # whether records fuse (set_fusion)

# (softmax primitive, saved args) when the division with traced operands refs/uargs and output
# ans is the softmax pattern; refs[0] is then the fused node's one parent (argnum 0). None (refs
# untouched) otherwise.
cdef object softmax_record(Tape top, ParentRef* refs, int32_t nrefs, tuple uargs,
                           object kwargs, object ans)
