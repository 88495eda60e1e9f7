# Contract of gradcy/_rules.pyx: a primitive's reverse-mode rule in the one form the sweep
# calls (Primitive.vjp, _primitive.pxd). A rule owns what was registered (its dict of rules, its
# function), released with it; run() owns nothing beyond its call. _tape cimports it (the
# type of Primitive.vjp) and it cimports _tape (the arena run() adds into): the module body of
# each calls nothing of the other.
from libc.stdint cimport int32_t
from cpython.object cimport PyObject

from gradcy._tape cimport Tape
from gradcy._primitive cimport Primitive


cdef class VJP:
    # A primitive's reverse-mode rule in the one form the sweep calls: run() adds the
    # cotangents of node `i`'s traced, non-constant parents (ParentRefs start .. start+n) into
    # their slots. gradcy.registry converts every registration API to one of the two kinds below
    # once, when the rule is registered. Each cotangent a rule returns must have its argument's
    # shape or one that broadcasts to it (checked before it is added; ElementwiseRule's and a
    # save_fn record's are not: the record may not hold the argument).
    cdef readonly bint writes         # an in-place write's rule (its record is never recomputed)
    cdef int run(self, Tape tape, Primitive prim, Py_ssize_t start, int32_t n, object g,
                 bint g_owned, object ans, tuple args, object kwargs) except -1


cdef class ArgnumVJP(VJP):
    # one rule per argument: rules[argnum](g, ans, *args, **kwargs) -> that argument's
    # cotangent; None = zero; a missing argnum raises MissingVJPError
    cdef readonly dict rules


cdef class JointVJP(VJP):
    # one rule for all arguments: fn(argnums, g, g_owned, ans, args, kwargs) -> one cotangent
    # per argnum (g_owned: fn may overwrite g)
    cdef readonly object fn


cdef class ElementwiseRule:
    # a per-argument rule of a hot elementwise primitive (gradcy.numpy.elementwise): `fn` is the
    # rule in Python (the reference semantics; called as it is when a fast path does not apply);
    # ArgnumVJP.run computes the same value in C with direct ufunc calls when g and the saved
    # values are exact ndarrays (writing into g when the sweep owns it, or into a fresh
    # temporary). Owns fn, ufunc and _scalar, released with it.
    cdef readonly object fn           # rule(g, ans, *args) -> the argument's cotangent
    cdef readonly int kind            # which computation (FAST_* in _rules.pyx)
    cdef readonly int argnum          # the argument it is the rule of
    cdef readonly object ufunc        # the derivative's ufunc (sin: numpy.cos), or None
    cdef object _scalar               # (float, type number, read-only 0-d array of it): the
                                      # last Python-float operand as an array, or None
    cdef object _as_array(self, object v, object g)
    cdef object apply(self, object g, bint g_owned, object ans, tuple args, PyObject** argv,
                      Py_ssize_t nargsf)
