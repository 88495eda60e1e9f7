# Contract of gradcy/_fuse.pyx: record-time rewrites of common idioms written out with NumPy
# operations (softmax, log-sum-exp, log-softmax, sigmoid, softplus, tanh via exp; the table is
# gradcy.numpy.fusion.IDIOMS) into one node each, whose rule saves what a hand-written
# gradient saves. Primitive._record (_primitive) asks fuse_record() when it records a primitive
# whose `fuses` is set (the last operation of an idiom: divide, add, subtract, log, log1p); the
# operation is then recorded as one node of the idiom's fused primitive whose one parent is the
# idiom's input, so the inner nodes, left without consumers, die with their Boxes and release
# what they saved during the forward pass. Reads the tape's arena under the GIL and runs no
# Python code of the user's while it holds indices into it. Owns the registered Primitives and
# a copy of the reverse-mode rules of each primitive an idiom is made of and of each fused one,
# as registered (module globals, for the life of the process; register_idioms replaces them): a
# rule of the user's own on one of them (which the fused node would bypass, or which is for the
# user's calls of the fused primitive) turns off the idioms made of it while it is registered.
# _tape cimports it and it cimports _tape (the arena): the module body of each calls nothing of
# the other.
from libc.stdint cimport int32_t

from gradcy._tape cimport Tape, ParentRef
from gradcy._primitive cimport Primitive


cdef bint _fusion_on               # whether records fuse (set_fusion)

# (fused primitive, saved output, saved args) when prim's call with traced operands refs/uargs
# and output ans is the last operation of an idiom (the saved output: ans, or its ArrayMeta if
# the fused rule does not read it); refs[0] is then the fused node's one parent (argnum 0).
# None (refs untouched) otherwise. Nested under a const_graph recording (ans and the operands'
# values are the recording's Boxes: gradcy.jit(grad(f))), the matchers read their values and the
# fused node saves the Boxes (a saved array among the args: not fused); under any other outer
# trace nothing is fused (Primitive._record does not ask).
cdef object fuse_record(Primitive prim, Tape top, ParentRef* refs, int32_t nrefs, tuple uargs,
                        object kwargs, object ans)
