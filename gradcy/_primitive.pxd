# Contract of gradcy/_primitive.pyx: Primitive (a function the tape records as one node: its
# dispatch, recording onto _tape's Tape and forward-mode tangents) and each thread's stack of
# active differentiations (push_active, pop_active, active_tape), which a primitive's function
# suspends while it runs. Primitive and Tape refer to each other (a Tape's nodes hold their
# Primitive, a Primitive records onto a Tape), so _primitive and _tape cimport each other: the
# module body of each calls nothing of the other, so Python may import either first.
#
# What this part owns, and where each owned reference is released:
# - Primitive's fields (fun, name, vjp, jvpmakers, save_args, save_fn, __dict__): with the
#   Primitive. A call owns nothing past its return: the node it records (Tape._append) owns its
#   saved record, released by _tape.
# - _active (a threading.local: each thread's list of (tape, running-body count)): an entry by
#   pop_active; _n_active counts the entries of all threads (under the GIL).
from libc.stdint cimport int32_t

from gradcy._rules cimport VJP
from gradcy._tape cimport Tape, ParentRef


cdef class Primitive:
    cdef readonly object fun          # the raw function, called on unboxed values
    cdef readonly str name            # qualified name used in error messages
    cdef readonly VJP vjp             # the reverse-mode rule, in the one form the sweep calls
                                      # (gradcy.registry builds it; never None)
    cdef public dict jvpmakers        # argnum -> jvp(g, ans, *args, **kw); None = zero
    cdef public object jvp_argnums    # jvp(argnums, gs, ans, args, kwargs), or None
    cdef public bint traced           # False: run on unboxed values, record nothing
    cdef readonly bint save_ans       # the VJP reads the output value
    cdef readonly bint save_all_args  # the VJP reads every argument
    cdef readonly object save_args    # frozenset of argnums whose values the VJP reads
    cdef unsigned long long save_mask  # bit i set: argument i (< 64) is in save_args
    cdef bint per_arg                 # saved set decided per call from the traced arguments:
    cdef unsigned long long arg_masks[8]  # arguments argument k's rule reads (k < 8)
    cdef unsigned int arg_ans         # bit k: argument k's rule reads the output
    cdef unsigned int arg_known       # bit k: argument k has a per-argument entry
    cdef public object save_fn        # save_fn(argnums, ans, args, kwargs) -> (ans_s, args_s): the
                                      # record its rules read (a compact form), or None
    cdef public bint basic_view       # fun(A, idx) returns A[idx]: cotangents
                                      # of a view may land in A's slot
    cdef public bint recomputable     # cheap elementwise: its output
                                      # can be made again from its record
    cdef public Py_ssize_t out_arg    # position of fun's `out` (nan_to_num: `copy`), or -1
    cdef public bint fuses            # its record may be fused with its operands' (_fuse.pxd)
    cdef public bint guard_args       # its function (a user's) runs with the arguments that the
                                      # tape's saved records hold read-only (a write raises)
    cdef dict __dict__                # attributes set by users and compatibility layers (autograd's
                                      # deprecated prim.defvjp / defgrad methods)

    cdef object _dispatch(self, tuple args, dict kwargs)
    cdef object _record(self, Tape top, bint mixed, tuple args, object kwargs)
    cdef object _jvp(self, Tape top, ParentRef* refs, int32_t nrefs, object ans, tuple uargs,
                     object kwargs)
    cdef tuple _saved_args(self, tuple args, bint reuse, unsigned long long mask, bint all_args)
    cdef void _update_mask(self) noexcept
