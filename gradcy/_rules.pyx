"""A primitive's reverse-mode rule in the one form the backward sweep calls (VJP): one rule per
argument (ArgnumVJP) or one for all of them (JointVJP). gradcy.registry converts every
registration API to one of them, once, when the rule is registered.

Contract: _rules.pxd. A rule holds what was registered (released with it); run() adds the
cotangents it makes into the tape's slots (Tape._accumulate) and keeps none.
"""
cimport cython
from cpython.object cimport PyObject, PyObject_Call
from cpython.dict cimport PyDict_GetItem
from cpython.tuple cimport PyTuple_GET_ITEM, PyTuple_GET_SIZE
from libc.stdint cimport int32_t

cimport numpy as cnp

from gradcy._errors import MissingVJPError
from gradcy._tape cimport Tape, Primitive, ParentRef, NODE_CONSTANT, MAX_INLINE_PARENTS

cnp.import_array()

cdef extern from "Python.h":
    object PyObject_Vectorcall(PyObject* callable, PyObject** args, size_t nargsf,
                               PyObject* kwnames)


cdef class VJP:
    """A primitive's reverse-mode rule in the one form the backward sweep calls (see
    ArgnumVJP, JointVJP); gradcy.registry builds it when a rule is registered."""

    cdef int run(self, Tape tape, Primitive prim, Py_ssize_t start, int32_t n, object g,
                 bint g_owned, object ans, tuple args, object kwargs) except -1:
        raise NotImplementedError(f"{prim.name}: VJP is abstract")

    def __call__(self, argnums, g, ans, args, kwargs):
        """The cotangents of the arguments at positions argnums (None for a zero rule), for
        views of the rule in other calling conventions."""
        raise NotImplementedError


@cython.final
cdef class ArgnumVJP(VJP):
    """One rule per argument: rules[argnum](g, ans, *args, **kwargs) -> its cotangent."""

    def __cinit__(self, dict rules not None):
        self.rules = rules

    def copy(self):
        return ArgnumVJP(dict(self.rules))

    cdef int run(self, Tape tape, Primitive prim, Py_ssize_t start, int32_t n, object g,
                 bint g_owned, object ans, tuple args, object kwargs) except -1:
        cdef Py_ssize_t k, a, nargs = PyTuple_GET_SIZE(args)
        cdef ParentRef ref
        cdef PyObject* rule
        cdef tuple callargs
        cdef PyObject* argv[MAX_INLINE_PARENTS + 2]
        # calls without keywords take a vectorcall on a C array (no argument tuple to build
        # and free); calls with keywords go through an argument tuple
        cdef bint vector = kwargs is None and nargs <= MAX_INLINE_PARENTS
        if vector:
            argv[0] = <PyObject*>g
            argv[1] = <PyObject*>ans
            for a in range(nargs):
                argv[2 + a] = PyTuple_GET_ITEM(args, a)
        else:
            callargs = (g, ans) + args
        for k in range(n):
            ref = tape.parents[start + k]
            if tape.nodes[ref.node].flags & NODE_CONSTANT:
                continue
            rule = PyDict_GetItem(self.rules, ref.argnum)
            if rule is NULL:
                raise MissingVJPError(
                    f"{prim.name} has no VJP for argument {ref.argnum}; register one with "
                    f"gradcy.extend.defvjp")
            if <object>rule is None:
                continue
            if vector:
                out = PyObject_Vectorcall(rule, argv, 2 + nargs, NULL)
            elif kwargs is None:
                out = PyObject_Call(<object>rule, callargs, <object>NULL)
            else:
                out = PyObject_Call(<object>rule, callargs, kwargs)
            tape._accumulate(ref.node, out)
            out = None      # the product is the slot's now (or added into it): free it here
        return 0

    def __call__(self, argnums, g, ans, args, kwargs):
        out = []
        for argnum in argnums:
            if argnum not in self.rules:
                raise MissingVJPError(f"no VJP for argument {argnum}; register one with "
                                      f"gradcy.extend.defvjp")
            rule = self.rules[argnum]
            out.append(None if rule is None else rule(g, ans, *args, **(kwargs or {})))
        return tuple(out)


def maker_rule(maker):
    """A VJP maker(ans, *args, **kwargs) -> vjp(g) as a rule(g, ans, *args, **kwargs) of an
    ArgnumVJP (compiled: cheaper to call than the same closure in Python)."""
    def rule(g, ans, *args, **kwargs):
        return maker(ans, *args, **kwargs)(g)
    return rule


@cython.final
cdef class JointVJP(VJP):
    """One rule for all arguments: fn(argnums, g, g_owned, ans, args, kwargs) -> one cotangent
    per argnum (g_owned: fn may write into g). maker: what was registered, if anything else."""

    def __cinit__(self, fn, maker=None, bint writes=False):
        self.fn = fn
        self.maker = maker
        self.writes = writes

    def copy(self):
        return self

    cdef int run(self, Tape tape, Primitive prim, Py_ssize_t start, int32_t n, object g,
                 bint g_owned, object ans, tuple args, object kwargs) except -1:
        cdef Py_ssize_t k
        live = [k for k in range(n)
                if not (tape.nodes[tape.parents[start + k].node].flags & NODE_CONSTANT)]
        if not live:
            return 0
        argnums = tuple([tape.parents[start + k].argnum for k in live])
        owned = (g_owned and cnp.PyArray_CheckExact(g)
                 and cnp.PyArray_BASE(<cnp.ndarray>g) is NULL
                 and cnp.PyArray_ISWRITEABLE(<cnp.ndarray>g))
        grads = self.fn(argnums, g, owned, ans, args, kwargs if kwargs is not None else {})
        for j, k in enumerate(live):
            tape._accumulate(tape.parents[start + k].node, grads[j])
        return 0

    def __call__(self, argnums, g, ans, args, kwargs):
        return tuple(self.fn(tuple(argnums), g, False, ans, tuple(args),
                             kwargs if kwargs is not None else {}))
