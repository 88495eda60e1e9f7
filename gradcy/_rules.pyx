"""A primitive's reverse-mode rule in the one form the backward sweep calls (VJP): one rule per
argument (ArgnumVJP) or one for all of them (JointVJP). gradcy.registry converts every
registration API to one of them, once, when the rule is registered. An ArgnumVJP's rule may be
an ElementwiseRule: a hot elementwise primitive's Python rule with the same computation in C.

Contract: _rules.pxd. A rule holds what was registered (released with it); run() adds the
cotangents it makes into the tape's slots (Tape._accumulate) and keeps none.
"""
cimport cython
from cpython.object cimport PyObject, PyObject_Call
from cpython.number cimport PyNumber_Multiply, PyNumber_TrueDivide, PyNumber_Negative
from cpython.dict cimport PyDict_GetItem
from cpython.tuple cimport PyTuple_GET_ITEM, PyTuple_GET_SIZE
from libc.stdint cimport int32_t

cimport numpy as cnp

import numpy as _np

from gradcy._errors import MissingVJPError
from gradcy._tape cimport Tape, ParentRef, NODE_CONSTANT, MAX_INLINE_PARENTS
from gradcy._primitive cimport Primitive
from gradcy._saved cimport ArrayMeta, _same_shape_dtype
from gradcy._box cimport Box
from gradcy._cotangents cimport SparseCotangent
from gradcy._hooks cimport _unbroadcast_slow

cnp.import_array()

cdef extern from "Python.h":
    object PyObject_Vectorcall(PyObject* callable, PyObject** args, size_t nargsf,
                               PyObject* kwnames)


@cython.auto_pickle(False)   # (the generated __setstate__ sets its fields unchecked)
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


# =============================================================================
# Hot elementwise rules in C (ElementwiseRule)
# =============================================================================
cdef enum:
    FAST_UNBROADCAST = 1       # unbroadcast(g, args[argnum])             add x and y, subtract x
    FAST_NEG_UNBROADCAST = 2   # -unbroadcast(g, args[argnum])            subtract y
    FAST_MUL = 3               # unbroadcast(g * y, x), unbroadcast(x * g, y)
    FAST_DIV = 4               # unbroadcast(g / y, x)                    (divide's x only)
    FAST_NEG = 5               # -g                                       negative
    FAST_TIMES_D = 6           # g * ufunc(x)                             sin (cos), sinh, cosh
    FAST_NEG_TIMES_D = 7       # -g * ufunc(x)                            cos (sin)
    FAST_TIMES_ANS = 8         # g * ans                                  exp
    FAST_TANH = 9              # g * (1.0 - ans * ans)                    tanh

_KINDS = {"unbroadcast": FAST_UNBROADCAST, "neg_unbroadcast": FAST_NEG_UNBROADCAST,
          "mul": FAST_MUL, "div": FAST_DIV, "neg": FAST_NEG, "times_d": FAST_TIMES_D,
          "neg_times_d": FAST_NEG_TIMES_D, "times_ans": FAST_TIMES_ANS, "tanh": FAST_TANH}

cdef object _multiply = _np.multiply
cdef object _divide = _np.true_divide
cdef object _subtract = _np.subtract
cdef object _negative = _np.negative
# NEP 50 (NumPy 2): a Python float or int with an inexact array has the array's dtype; NumPy
# 1.x decides by value, which keeps the dtype for sure only at the top of each kind
cdef bint _NEP50 = int(_np.__version__.split(".")[0]) >= 2


cdef inline object _call1(object f, object a):
    cdef PyObject* argv[1]
    argv[0] = <PyObject*>a
    return PyObject_Vectorcall(<PyObject*>f, argv, 1, NULL)


cdef inline object _call2(object f, object a, object b):
    cdef PyObject* argv[2]
    argv[0] = <PyObject*>a
    argv[1] = <PyObject*>b
    return PyObject_Vectorcall(<PyObject*>f, argv, 2, NULL)


cdef inline object _call3(object f, object a, object b, object out):
    """f(a, b, out): a ufunc writing into `out` (positional: no keyword parsing)."""
    cdef PyObject* argv[3]
    argv[0] = <PyObject*>a
    argv[1] = <PyObject*>b
    argv[2] = <PyObject*>out
    return PyObject_Vectorcall(<PyObject*>f, argv, 3, NULL)


cdef inline object _unbroadcast(object g, object target):
    """gradcy.numpy._util.unbroadcast (its C common case, then the operator layer's)."""
    if _same_shape_dtype(g, target):
        return g
    return _unbroadcast_slow(g, target)


cdef inline bint _float_array(object a) noexcept:
    """a is an exact ndarray of a builtin float or complex dtype in native byte order, not
    0-d (ufuncs return scalars for 0-d results: those keep the rule's own path)."""
    return (cnp.PyArray_CheckExact(a) and cnp.PyArray_NDIM(<cnp.ndarray>a) > 0
            and (cnp.PyTypeNum_ISFLOAT(cnp.PyArray_TYPE(<cnp.ndarray>a))
                 or cnp.PyTypeNum_ISCOMPLEX(cnp.PyArray_TYPE(<cnp.ndarray>a)))
            and cnp.PyArray_ISNOTSWAPPED(<cnp.ndarray>a))


cdef inline bint _like(object a, object b) noexcept:
    """Two _float_arrays of one dtype and shape."""
    return (cnp.PyArray_TYPE(<cnp.ndarray>a) == cnp.PyArray_TYPE(<cnp.ndarray>b)
            and cnp.PyArray_SAMESHAPE(<cnp.ndarray>a, <cnp.ndarray>b))


cdef bint _keeps(object g, object o) noexcept:
    """g (a _float_array) combined with o by a binary ufunc gives g's dtype and shape, so the
    ufunc may write its result into g: o is a Python float or int (weak, NEP 50), or an exact
    ndarray of g's dtype that broadcasts to g's shape."""
    cdef int t = cnp.PyArray_TYPE(<cnp.ndarray>g)
    cdef int k, nd, gnd
    cdef cnp.npy_intp* od
    cdef cnp.npy_intp* gd
    if type(o) is float or type(o) is int:
        return _NEP50 or t == cnp.NPY_DOUBLE or t == cnp.NPY_CDOUBLE \
            or t == cnp.NPY_LONGDOUBLE or t == cnp.NPY_CLONGDOUBLE
    if not (cnp.PyArray_CheckExact(o) and cnp.PyArray_TYPE(<cnp.ndarray>o) == t
            and cnp.PyArray_ISNOTSWAPPED(<cnp.ndarray>o)):
        return False
    nd = cnp.PyArray_NDIM(<cnp.ndarray>o)
    gnd = cnp.PyArray_NDIM(<cnp.ndarray>g)
    if nd > gnd:
        return False
    od = cnp.PyArray_DIMS(<cnp.ndarray>o)
    gd = cnp.PyArray_DIMS(<cnp.ndarray>g)
    for k in range(nd):
        if od[k] != 1 and od[k] != gd[gnd - nd + k]:
            return False
    return True


cdef inline bint _plain_operand(object o) noexcept:
    """o is a Python float or int or an exact ndarray: a ufunc called on it directly does what
    the arithmetic operator does (no other type's operator or __array_ufunc__ takes part)."""
    return type(o) is float or type(o) is int or cnp.PyArray_CheckExact(o)


# =============================================================================
# What a rule returns: a cotangent the argument's shape can take
# =============================================================================
cdef object _shape_of(object v):
    """The shape of a value, a saved record's stand-in of one, or a cotangent; None when it
    has none that can be told (a container, an object of another library without one)."""
    while type(v) is Box:
        v = (<Box>v)._value
    if cnp.PyArray_Check(v):
        return (<object>v).shape
    if type(v) is ArrayMeta:
        return (<ArrayMeta>v).shape
    if type(v) is SparseCotangent:
        return (<SparseCotangent>v).shape
    if isinstance(v, (int, float, complex, _np.generic)):
        return ()
    shape = getattr(v, "shape", None)
    if type(shape) is tuple and all([type(d) is int for d in shape]):
        return shape
    return None


cdef inline int _check_cotangent(Primitive prim, int32_t argnum, object out,
                                 tuple args) except -1:
    """Raise when rule `argnum` of prim returned a cotangent that cannot be its argument's: a
    shape that does not broadcast to the argument's (what is accepted is what the engine
    takes: the shape itself, or one that broadcasts to it, as the end of the backward pass
    broadcasts it). The common case (the argument's shape and dtype) is decided in C."""
    if out is None or _same_shape_dtype(out, <object>PyTuple_GET_ITEM(args, argnum)):
        return 0
    return _check_cotangent_slow(prim, argnum, out, args)


cdef int _check_cotangent_slow(Primitive prim, int32_t argnum, object out,
                               tuple args) except -1:
    cdef Py_ssize_t k, n
    got = _shape_of(out)
    want = _shape_of(<object>PyTuple_GET_ITEM(args, argnum))
    if got is None or want is None:
        return 0
    n = len(got)
    if n <= len(want):
        for k in range(1, n + 1):
            if got[n - k] != 1 and got[n - k] != want[len(want) - k]:
                break
        else:
            return 0
    raise ValueError(
        f"{prim.name}: the reverse-mode rule (VJP) of argument {argnum} returned a cotangent of "
        f"shape {got}, but the argument has shape {want}: a rule returns its argument's "
        f"cotangent, of the argument's shape (or one that broadcasts to it). If the rule "
        f"computed the cotangent of a broadcast result, sum it over the axes the argument was "
        f"broadcast along (g.sum(axis=0) for a leading axis).")


@cython.final
@cython.auto_pickle(False)   # (the generated __setstate__ sets its fields unchecked)
cdef class ElementwiseRule:
    """The rule of argument `argnum` of a hot elementwise primitive: fn(g, ans, *args) in Python,
    and the same computation in C (kind) that ArgnumVJP.run uses when g and the saved values
    are exact ndarrays: direct ufunc calls, the result written into g when the sweep owns it
    (only this rule reads it) or into a temporary the rule made, when NumPy's result has that
    array's dtype and shape. Values, dtypes, shapes and types are those of fn: anything else
    (traced values in higher-order differentiation, 0-d arrays, subclasses, other dtypes)
    takes fn itself."""

    def __cinit__(self, str kind not None, fn not None, int argnum=0, ufunc=None):
        if kind not in _KINDS:
            raise ValueError(f"ElementwiseRule: unknown kind {kind!r}")
        # apply() indexes the call's arguments by argnum (and 1 - argnum) without a check:
        # a binary kind is the rule of argument 0 or 1, a unary one of argument 0
        if not (0 <= argnum <= (1 if _KINDS[kind] <= FAST_DIV else 0)):
            raise ValueError(f"ElementwiseRule: argnum {argnum} is not an argument of a "
                             f"{'binary' if _KINDS[kind] <= FAST_DIV else 'unary'} "
                             f"elementwise function (kind {kind!r}); pass "
                             f"{'0 or 1' if _KINDS[kind] <= FAST_DIV else '0'}")
        if not callable(fn):
            raise TypeError(f"ElementwiseRule: fn must be the rule in Python (a callable), "
                            f"got {type(fn).__name__}")
        if ufunc is not None and not callable(ufunc):
            raise TypeError(f"ElementwiseRule: ufunc must be a callable (the derivative's "
                            f"ufunc) or None, got {type(ufunc).__name__}")
        self.kind = _KINDS[kind]
        self.fn = fn
        self.argnum = argnum
        self.ufunc = ufunc
        if (self.kind == FAST_TIMES_D or self.kind == FAST_NEG_TIMES_D) and ufunc is None:
            raise ValueError(f"ElementwiseRule: kind {kind!r} needs the derivative's ufunc")

    def __call__(self, *args, **kwargs):
        return self.fn(*args, **kwargs)

    cdef object _as_array(self, object v, object g):
        """Python float v as the read-only 0-d array of g's dtype (float64 or complex128: the
        conversion is exact, the ufunc loop the one NumPy picks for the float) that NumPy
        would convert it to, kept for the next call with the same float (a loop's constant):
        a ufunc takes an array operand ~120 ns faster than a Python float. Else v itself."""
        cdef int t = cnp.PyArray_TYPE(<cnp.ndarray>g)
        if t != cnp.NPY_DOUBLE and t != cnp.NPY_CDOUBLE:
            return v
        c = self._scalar                  # (one tuple: never seen half updated)
        if c is not None and <object>PyTuple_GET_ITEM(c, 0) is v \
                and <object>PyTuple_GET_ITEM(c, 1) == t:
            return <object>PyTuple_GET_ITEM(c, 2)
        a = _np.array(v, dtype=_np.float64 if t == cnp.NPY_DOUBLE else _np.complex128)
        cnp.PyArray_CLEARFLAGS(<cnp.ndarray>a, cnp.NPY_ARRAY_WRITEABLE)
        self._scalar = (v, t, a)
        return a

    cdef object apply(self, object g, bint g_owned, object ans, tuple args, PyObject** argv,
                      Py_ssize_t nargsf):
        """This rule's cotangent for the call (g, ans, *args) (argv: the same as a vector);
        g_owned: the rule may write into g (an exact, writable ndarray owning its memory that
        nothing else references, and this node's only parent's rule)."""
        cdef int kind = self.kind
        cdef Py_ssize_t nargs = PyTuple_GET_SIZE(args)
        cdef object x, o, r, c, target
        if not cnp.PyArray_CheckExact(g) and hasattr(type(g), "__dask_graph__"):
            # a Dask g: fn (one blockwise layer per rule where the chunks agree, not a layer
            # per operator)
            return PyObject_Vectorcall(<PyObject*>self.fn, argv, nargsf, NULL)
        if kind <= FAST_DIV:              # the binary ones: (x, y)
            if nargs != 2 or self.argnum > 1:
                return PyObject_Vectorcall(<PyObject*>self.fn, argv, nargsf, NULL)
            target = <object>PyTuple_GET_ITEM(args, self.argnum)
            if kind == FAST_UNBROADCAST:
                return _unbroadcast(g, target)
            if kind == FAST_NEG_UNBROADCAST:
                r = _unbroadcast(g, target)
                if r is g and g_owned and _float_array(g):
                    return _call2(_negative, g, g)        # (negative's out is 2nd)
                return PyNumber_Negative(r)
            o = <object>PyTuple_GET_ITEM(args, 1 - self.argnum)
            if kind == FAST_MUL:
                if cnp.PyArray_CheckExact(g) and _plain_operand(o):
                    if type(o) is float:
                        o = self._as_array(o, g)
                    if g_owned and _float_array(g) and _keeps(g, o):
                        r = (_call3(_multiply, g, o, g) if self.argnum == 0
                             else _call3(_multiply, o, g, g))
                    else:
                        r = _call2(_multiply, g, o) if self.argnum == 0 else _call2(_multiply, o, g)
                else:
                    r = PyNumber_Multiply(g, o) if self.argnum == 0 else PyNumber_Multiply(o, g)
                return _unbroadcast(r, target)
            if self.argnum != 0:          # (divide's y has a rule of its own)
                return PyObject_Vectorcall(<PyObject*>self.fn, argv, nargsf, NULL)
            if cnp.PyArray_CheckExact(g) and _plain_operand(o):
                if type(o) is float:
                    o = self._as_array(o, g)
                if g_owned and _float_array(g) and _keeps(g, o):
                    r = _call3(_divide, g, o, g)
                else:
                    r = _call2(_divide, g, o)
            else:
                r = PyNumber_TrueDivide(g, o)
            return _unbroadcast(r, target)
        if nargs != 1:
            return PyObject_Vectorcall(<PyObject*>self.fn, argv, nargsf, NULL)
        if kind == FAST_NEG:
            if g_owned and _float_array(g):
                return _call2(_negative, g, g)
            return PyNumber_Negative(g)
        if kind == FAST_TIMES_ANS:
            if g_owned and _float_array(g) and _keeps(g, ans):
                return _call3(_multiply, g, ans, g)
            return PyNumber_Multiply(g, ans)
        if kind == FAST_TANH:
            if _float_array(g) and _float_array(ans) and _like(g, ans):
                c = _call2(_multiply, ans, ans)           # a new array of ans's dtype and shape
                _call3(_subtract, 1.0, c, c)
                return _call3(_multiply, g, c, c)
            return PyObject_Vectorcall(<PyObject*>self.fn, argv, nargsf, NULL)
        # g * ufunc(x), -g * ufunc(x)
        x = <object>PyTuple_GET_ITEM(args, 0)
        if not (_float_array(g) and cnp.PyArray_CheckExact(x)):
            return PyObject_Vectorcall(<PyObject*>self.fn, argv, nargsf, NULL)
        c = _call1(self.ufunc, x)                         # a new array (or a scalar for 0-d x)
        if kind == FAST_NEG_TIMES_D:
            g = _call2(_negative, g, g) if g_owned else _call1(_negative, g)
        if _float_array(c) and _like(g, c):
            return _call3(_multiply, g, c, c)
        return _call2(_multiply, g, c)


@cython.final
@cython.auto_pickle(False)   # (the generated __setstate__ sets its fields unchecked)
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
        # a node with one parent: its rule is the only reader of g, so an elementwise rule may
        # write into g when the sweep owns it (JointVJP's test)
        # the argument of each rule is in the record (save_fn records are compact forms)
        cdef bint check = prim.save_fn is None
        cdef bint owned = (g_owned and n == 1 and cnp.PyArray_CheckExact(g)
                           and cnp.PyArray_BASE(<cnp.ndarray>g) is NULL
                           and cnp.PyArray_ISWRITEABLE(<cnp.ndarray>g))
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
            if vector and type(<object>rule) is ElementwiseRule:
                out = (<ElementwiseRule>rule).apply(g, owned, ans, args, argv, 2 + nargs)
            elif vector:
                out = PyObject_Vectorcall(rule, argv, 2 + nargs, NULL)
            elif kwargs is None:
                out = PyObject_Call(<object>rule, callargs, <object>NULL)
            else:
                out = PyObject_Call(<object>rule, callargs, kwargs)
            if check and ref.argnum < nargs and type(<object>rule) is not ElementwiseRule:
                _check_cotangent(prim, ref.argnum, out, args)
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


# gradcy.vspace's, imported on the first call of a maker's rule (gradcy.vspace imports the core)
cdef object _SparseObject = None
cdef object _container_cotangent = None


cdef object _as_autograd_gives(object g, object ans):
    """The cotangent g of ans as autograd's VJPs get it: a container's dense, of the output's
    type (gradcy.vspace.container_cotangent), not with gradcy's None for zero elements."""
    global _SparseObject, _container_cotangent
    if _container_cotangent is None:
        from gradcy.vspace import SparseObject, container_cotangent
        _SparseObject, _container_cotangent = SparseObject, container_cotangent
    if type(g) is list or type(g) is tuple or type(g) is dict or type(g) is _SparseObject:
        return _container_cotangent(g, ans)
    return g


# gradcy's own rules are registered in the direct forms (ArgnumVJP's rules, JointVJP's fn): a
# rule registered in a maker form of autograd's API (defvjp, defvjp_argnum, defvjp_argnums) is
# written for autograd (a user's, or a library's such as PennyLane's), and gets its cotangents
# as autograd gives them
def maker_rule(maker):
    """A VJP maker(ans, *args, **kwargs) -> vjp(g) (defvjp) as a rule(g, ans, *args, **kwargs)
    of an ArgnumVJP (compiled: cheaper to call than the same closure in Python); container
    cotangents reach it dense, as under autograd."""
    def rule(g, ans, *args, **kwargs):
        return maker(ans, *args, **kwargs)(_as_autograd_gives(g, ans))
    return rule


def joint_maker_rule(maker):
    """A VJP maker(argnums, ans, args, kwargs) -> vjp(g) of all arguments (defvjp_argnums) as
    the fn(argnums, g, g_owned, ans, args, kwargs) of a JointVJP; container cotangents reach it
    dense, as under autograd."""
    def rule(argnums, g, g_owned, ans, args, kwargs):
        return maker(argnums, ans, args, kwargs)(_as_autograd_gives(g, ans))
    return rule


@cython.final
@cython.auto_pickle(False)   # (the generated __setstate__ sets its fields unchecked)
cdef class JointVJP(VJP):
    """One rule for all arguments: fn(argnums, g, g_owned, ans, args, kwargs) -> one cotangent
    per argnum (g_owned: fn may write into g)."""

    def __cinit__(self, fn, bint writes=False):
        self.fn = fn
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
        if len(grads) != len(live):
            raise ValueError(f"{prim.name}: the reverse-mode rule (VJP) of arguments {argnums} "
                             f"returned {len(grads)} cotangents; it returns one per argument")
        for j, k in enumerate(live):
            if prim.save_fn is None and argnums[j] < PyTuple_GET_SIZE(args):
                _check_cotangent(prim, argnums[j], grads[j], args)
            tape._accumulate(tape.parents[start + k].node, grads[j])
        return 0

    def __call__(self, argnums, g, ans, args, kwargs):
        return tuple(self.fn(tuple(argnums), g, False, ans, tuple(args),
                             kwargs if kwargs is not None else {}))

    def as_maker(self):
        """This rule in autograd's form: maker(argnums, ans, args, kwargs) -> vjp(g)."""
        return lambda argnums, ans, args, kwargs: lambda g: self(argnums, g, ans, args, kwargs)
