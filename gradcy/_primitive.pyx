"""Primitive dispatch and recording, and each thread's active differentiations.

Contract: _primitive.pxd. A Primitive call with no traced value among its positional arguments
runs its function on plain values; one with traced values records a node onto the innermost
tape among them (_tape's Tape: Tape._append, make_box) and returns the output's Box, or, on a
forward-mode tape, computes the output's tangent (_jvp). The stack of active differentiations
of each thread (push_active, pop_active, active_tape) lives here because a primitive's function
suspends it while it runs (_run_body: a C thread-local count, read by active_tape).

Lifetimes: a Primitive owns its function, name, rules and saved-set description for its own
life; a call owns nothing past its return (what it records is the node's, released by _tape).
The active stack's entries (a tape and a count) are dropped by pop_active.
"""
cimport cython
from cpython.object cimport PyObject
from cpython.ref cimport Py_INCREF, Py_XDECREF
from cpython.mem cimport PyMem_Free
from cpython.tuple cimport PyTuple_New, PyTuple_SET_ITEM, PyTuple_GET_ITEM, PyTuple_GET_SIZE
from cpython.object cimport PyObject_Call
from cpython.dict cimport PyDict_GetItem
from libc.stdint cimport int32_t

import threading as _threading
from types import MethodType as _MethodType

import numpy as _np
cimport numpy as cnp

cnp.import_array()

cdef extern from "Python.h":
    Py_ssize_t Py_REFCNT(PyObject* o)
    object _call_kw_ptr "PyObject_Call"(object callable, object args, PyObject* kwargs)


from gradcy._counters cimport _next_trace_id
from gradcy._saved cimport _same_shape_dtype
from gradcy._regions cimport _root_buffer
from gradcy._cotangents cimport _add_cotangents
from gradcy._hold cimport hold_count
from gradcy._errors import EscapedValueError, TracerArrayConversionError, MissingJVPError
from gradcy._rules cimport ArgnumVJP, JointVJP
from gradcy._recompute cimport _recompute_args
from gradcy._saved cimport _meta_of, _shared_kwargs
from gradcy._fuse cimport fuse_record
from gradcy._box cimport Box, _n_box_subtypes
from gradcy._hooks cimport (_EMPTY, _out_hook, _list_arg_hook, _tangent_fixer,
                            _write_primitive)
from gradcy._write cimport _note_view, _resolve_stale
from gradcy._tape cimport (Tape, ParentRef, MAX_INLINE_PARENTS, NODE_RECOMPUTE, NODE_STALE,
                           make_box, _began_in_sweep, _SWEPT, _realloc_checked)


# =============================================================================
# The innermost active differentiation of each thread (array constructors ask for it)
# =============================================================================
# A primitive's function runs on plain values: while it runs, the differentiations active
# around the call are suspended (constructors inside it return plain arrays). The count of
# primitive functions running in this thread is a C thread-local (one lookup and two
# increments per call, and none while no differentiation is active in any thread); each stack
# entry keeps the count at which it was pushed, and is the active differentiation only while
# no primitive function started since is still running.
cdef extern from *:
    """
    #if defined(_MSC_VER)
    static __declspec(thread) Py_ssize_t gradcy_running_bodies = 0;
    #else
    static __thread Py_ssize_t gradcy_running_bodies = 0;
    #endif
    static Py_ssize_t *gradcy_running_bodies_ptr(void) { return &gradcy_running_bodies; }
    """
    Py_ssize_t gradcy_running_bodies
    Py_ssize_t* gradcy_running_bodies_ptr() noexcept nogil

_active = _threading.local()
cdef Py_ssize_t _n_active = 0        # stack entries of all threads (under the GIL)


def push_active(Tape tape not None):
    """Make `tape` this thread's innermost active differentiation."""
    global _n_active
    stack = getattr(_active, "stack", None)
    if stack is None:
        stack = _active.stack = []
    stack.append((tape, gradcy_running_bodies))
    _n_active += 1


def pop_active(Tape tape not None):
    """Remove the innermost entry of `tape` from this thread's active stack."""
    global _n_active
    stack = getattr(_active, "stack", None)
    cdef Py_ssize_t k = len(stack) - 1 if stack else -1
    while k >= 0:
        if stack[k][0] is tape:
            del stack[k]
            _n_active -= 1
            tape.forward_end = _next_trace_id     # (its forward pass left the stack)
            return
        k -= 1
    raise ValueError("pop_active: the tape is not active in this thread")


def active_tape():
    """This thread's innermost active reverse- or forward-mode tape, or None (also while a
    primitive's function, called inside that differentiation, runs)."""
    stack = getattr(_active, "stack", None)
    if not stack:
        return None
    tape, bodies = stack[len(stack) - 1]
    return tape if bodies >= gradcy_running_bodies else None


cdef object _swept_value(object r):
    """The result r of a call on values of a differentiation whose backward pass runs, one
    tracing level deeper, as autograd leaves it (a VJP that strips one level with x._value gets
    r, traced by an outer differentiation when it is): a Box of _SWEPT, which records nothing
    (a later call with it runs on its value, and its inexact result is wrapped again).
    Integer and other non-differentiable results (shapes, counts, flags) are returned plain."""
    cdef Box b
    if type(r) is Box and (<Box>r)._tape is _SWEPT:
        return r            # (already one level deeper: a call that mixed both kinds)
    if not _differentiable(r):
        return r
    b = Box.__new__(Box)
    b._value = r
    b._tape = _SWEPT
    b._node = -1
    return b


cdef inline bint _is_container(object r) noexcept:
    return type(r) is tuple or type(r) is list or type(r) is dict


cdef bint _differentiable_value(object r) except -1:
    """r is a traced value or an inexact array or scalar."""
    return (type(r) is Box or type(r) is float or type(r) is complex
            or (cnp.PyArray_Check(r) and r.dtype.kind in "fc")
            or isinstance(r, (_np.floating, _np.complexfloating)))


cdef bint _differentiable(object r) except -1:
    """r is what _swept_value wraps: a traced value, an inexact array or scalar, or a tuple,
    list or dict holding one at any depth (a traced container, as autograd's SequenceBox /
    DictBox). The containers are walked with a stack and each is visited once: a list that
    holds itself, or one nested deeper than the C stack, is an answer, not a crash."""
    cdef list todo
    cdef set seen
    if _differentiable_value(r):
        return True
    if not _is_container(r):
        return False
    todo, seen = [r], set()
    while todo:
        c = todo.pop()
        if id(c) in seen:           # (r holds every container walked: their ids stay theirs)
            continue
        seen.add(id(c))
        for e in ((<dict>c).values() if type(c) is dict else c):
            if _differentiable_value(e):
                return True
            if _is_container(e):
                todo.append(e)
    return False


cdef tuple _values_of(tuple args, Tape tape):
    """args with each Box of `tape` replaced by its value (one level)."""
    return tuple([(<Box>a)._value if _is_box(a) and (<Box>a)._tape is tape else a
                  for a in args])


cdef inline bint _is_box(object a) noexcept:
    """a is a Box or an instance of a registered Box subclass (the exact check first)."""
    return type(a) is Box or (_n_box_subtypes != 0 and isinstance(a, Box))


# =============================================================================
# Primitive dispatch
# =============================================================================
@cython.final
cdef class Primitive:
    """A function the tape records as one node. Calls without a Box among the positional
    arguments go straight to `fun`."""

    def __cinit__(self, fun, name=None):
        self.fun = fun
        self.name = name if name is not None else getattr(fun, "__name__", repr(fun))
        self.vjp = ArgnumVJP({})
        self.jvpmakers = {}
        self.jvp_argnums = None
        self.traced = True
        self.save_ans = True
        self.save_all_args = True
        self.save_args = frozenset()
        self.per_arg = False
        self.arg_known = self.arg_ans = 0
        self.save_fn = None
        self.recomputable = False
        self.basic_view = False
        self.out_arg = -1
        self.fuses = False
        self.guard_args = _users_function(fun)

    def __call__(self, *args, **kwargs):
        try:
            return self._dispatch(args, kwargs)
        except TracerArrayConversionError:
            # a list of traced values where the function takes an array (np.mean([a, b])):
            # the operator layer's hook makes it one traced array, as NumPy would (asarray)
            if _list_arg_hook is None:
                raise
            converted = _list_arg_hook(self, args)
            if converted is None:
                raise
        return self._dispatch(converted, kwargs)

    cdef object _dispatch(self, tuple args, dict kwargs):
        """Run on plain values when no Box is among the positional arguments, else record."""
        cdef Py_ssize_t i, n = PyTuple_GET_SIZE(args)
        cdef object a
        cdef Tape top = None, t
        cdef bint mixed = False
        for i in range(n):
            a = <object>PyTuple_GET_ITEM(args, i)
            if _is_box(a):
                t = (<Box>a)._tape
                if t.released:
                    if t is _SWEPT or _began_in_sweep(t):
                        # (or a value of a finished differentiation that began during the
                        # forward pass of the one whose backward pass runs in this thread, or
                        # during that pass: PennyLane's VJPs run tapes that hold the values of an
                        # inner derivative's finished trace; as in autograd the call runs on
                        # their values, one level deeper. One that began before or between the
                        # two passes escaped: EscapedValueError)
                        return _swept_value(self._dispatch(_values_of(args, t),
                                                           kwargs if kwargs is not None
                                                           else _EMPTY))
                    _raise_escaped(self.name, i)
                if top is None:
                    top = t
                elif t is not top:
                    mixed = True
                    if t.trace_id > top.trace_id:
                        top = t
        if not kwargs:
            if top is None:
                if _n_active == 0:      # (_run_body's test, here: measurably faster inline)
                    return PyObject_Call(self.fun, args, <object>NULL)
                return _run_body(self.fun, args, NULL)
            if self.out_arg >= 0 and n > self.out_arg and _out_hook is not None:
                return _out_hook(self, args, _EMPTY)     # a positional out= with traced values
            return self._record(top, mixed, args, None)
        if self.out_arg >= 0 and _out_hook is not None and (
                n > self.out_arg or "out" in kwargs or "copy" in kwargs
                or (top is not None and isinstance(self.fun, _np.ufunc)
                    and not _UFUNC_CALL_KEYWORDS.isdisjoint(kwargs))):
            # out=, nan_to_num's copy=False, or a ufunc's keywords (dtype=, casting=, ...)
            # on traced values, which the rules do not read
            return _out_hook(self, args, kwargs)
        for v in kwargs.values():
            if _is_box(v):
                _raise_keyword_box(self.name, kwargs)
        if top is None:
            return _run_body(self.fun, args, <PyObject*>kwargs)
        return self._record(top, mixed, args, kwargs)

    def set_vjp(self, VJP vjp not None):
        """Install the reverse-mode rule (gradcy.registry builds it from the registration)."""
        self.vjp = vjp

    @property
    def vjpmakers(self):
        """argnum -> rule(g, ans, *args, **kwargs) (None: zero cotangent) of a per-argument
        rule, the registry's own dict; {} for a rule of all arguments."""
        return self.vjp.rules if type(self.vjp) is ArgnumVJP else {}

    @property
    def vjp_argnums(self):
        """The rule of all arguments in autograd's form, maker(argnums, ans, args, kwargs) ->
        vjp(g) (a view of the registered rule); None for per-argument rules and an in-place
        write's rule."""
        if type(self.vjp) is not JointVJP or self.vjp.writes:
            return None
        return (<JointVJP>self.vjp).as_maker()

    def set_saved(self, save):
        """Declare what the VJPs read: an iterable of 'ans' and argument positions, or None for
        everything. Everything else is kept as ArrayMeta (shape and dtype only).

        A dict {argnum: entries} declares it per argument: a call keeps the union of the
        entries of its traced arguments only ('others' stands for every argument but that
        one). A traced argument without an entry (or at a position past 7) keeps everything."""
        self.per_arg = False
        self.arg_known = self.arg_ans = 0
        if isinstance(save, dict):
            union = set()
            for k, entries in save.items():
                if not (isinstance(k, int) and k >= 0):
                    raise ValueError(f"{self.name}: per-argument save keys are argument "
                                     f"positions (non-negative ints), got {k!r}")
                entries = tuple(entries)
                if "others" in entries:
                    union.add("args")
                    entries = tuple(e for e in entries if e != "others")
                    others = True
                else:
                    others = False
                self._check_entries(entries)
                union.update(entries)
                if k >= 8:
                    continue
                mask = ~((<unsigned long long>1) << <int>k) if others else 0
                if "args" in entries:
                    mask = ~(<unsigned long long>0)
                for e in entries:
                    if isinstance(e, int) and e < 64:
                        mask |= (<unsigned long long>1) << <int>e
                    elif isinstance(e, int):
                        mask = ~(<unsigned long long>0)     # (positions past 63: keep all)
                self.arg_masks[k] = mask
                self.arg_known |= 1u << <int>k
                if "ans" in entries:
                    self.arg_ans |= 1u << <int>k
            self.per_arg = True
            save = tuple(union)
        if save is None:
            self.save_ans = True
            self.save_all_args = True
            self.save_args = frozenset()
            self.save_mask = 0
            return
        save = tuple(save)
        self._check_entries(save)
        self.save_ans = "ans" in save
        self.save_all_args = "args" in save
        self.save_args = frozenset(s for s in save if isinstance(s, int))
        self._update_mask()

    cdef void _update_mask(self) noexcept:
        cdef unsigned long long mask = 0
        for a in self.save_args:
            if a < 64:
                mask |= (<unsigned long long>1) << <int>a
        self.save_mask = mask

    def _check_entries(self, save):
        for s in save:
            if not (s == "ans" or s == "args" or (isinstance(s, int) and s >= 0)):
                raise ValueError(f"{self.name}: save entries are 'ans', 'args' or argument "
                                 f"positions (non-negative ints), got {s!r}")

    def saved_set(self, argnums):
        """What a call with traced arguments `argnums` keeps: ('ans'?, positions...) or
        ('ans', 'args') for everything (the per-call counterpart of saved_spec)."""
        cdef unsigned long long mask = 0
        cdef bint sa = False, everything = not self.per_arg
        if self.per_arg:
            for a in argnums:
                if a < 8 and (self.arg_known >> <int>a) & 1:
                    mask |= self.arg_masks[a]
                    sa = sa or bool((self.arg_ans >> <int>a) & 1)
                else:
                    everything = True
        if everything:
            return self.saved_spec
        spec = ["ans"] if sa else []
        if mask == ~(<unsigned long long>0):
            spec.append("args")
        else:
            spec.extend([i for i in range(64) if (mask >> i) & 1])
        return tuple(spec)

    @property
    def saved_spec(self):
        """What this primitive's saved record keeps: a tuple of 'ans', 'args' or positions."""
        spec = []
        if self.save_ans:
            spec.append("ans")
        if self.save_all_args:
            spec.append("args")
        spec.extend(sorted(self.save_args))
        return tuple(spec)

    def __repr__(self):
        return f"<gradcy primitive {self.name}>"

    def __get__(self, obj, objtype):
        """A primitive that is a class attribute binds to instances as a function would
        (``class F: __call__ = primitive(...)``: ``f(x)`` calls it with ``(f, x)``)."""
        return self if obj is None else _MethodType(self, obj)

    @property
    def __name__(self):
        return self.fun.__name__ if hasattr(self.fun, "__name__") else self.name

    @property
    def __doc__(self):
        return getattr(self.fun, "__doc__", None)

    @property
    def __signature__(self):
        """The signature of the raw function (None when it has none, e.g. a ufunc)."""
        import inspect
        try:
            return inspect.signature(self.fun)
        except (TypeError, ValueError):
            return None

    cdef tuple _saved_args(self, tuple args, bint reuse, unsigned long long mask, bint all_args):
        """The arguments as the VJPs will see them: values they do not read (bit clear in
        `mask`) replaced by their metadata. With reuse, `args` (which nothing else references)
        is filled in place. Positions past 63 follow save_args (a per-call set keeps them)."""
        cdef Py_ssize_t i, n
        cdef tuple out
        cdef object v
        if all_args:
            return args
        n = PyTuple_GET_SIZE(args)
        out = args if reuse else PyTuple_New(n)
        for i in range(n):
            v = <object>PyTuple_GET_ITEM(args, i)
            if not ((i < 64 and (mask >> i) & 1)
                    or (i >= 64 and (self.per_arg or i in self.save_args))):
                v = _meta_of(v)
            elif out is args:
                continue
            Py_INCREF(v)
            if out is args:
                Py_XDECREF(PyTuple_GET_ITEM(out, i))
            PyTuple_SET_ITEM(out, i, v)
        return out

    cdef object _record(self, Tape top, bint mixed, tuple args, object kwargs):
        cdef Py_ssize_t i, n = PyTuple_GET_SIZE(args)
        cdef ParentRef inline_refs[MAX_INLINE_PARENTS]
        cdef ParentRef* refs = inline_refs
        cdef int32_t nrefs = 0
        cdef object a, ans
        cdef tuple uargs, sargs
        cdef Py_ssize_t node
        cdef unsigned long long mask
        cdef bint all_args, save_ans, recomputed
        cdef Primitive prim = self      # what the node records (a fused record: _fuse's)
        cdef object fused
        cdef tuple new_sargs
        cdef int32_t a_k
        if top.sweeping:
            # a VJP of this differentiation computes with its traced values (PennyLane's VJPs
            # run its tapes, which hold them): nothing is recorded onto this tape (no
            # cotangent can reach it now); the call runs on their values (traced by an outer
            # differentiation if they belong to one) and, as in autograd, its inexact result
            # stays one level deeper than them (_swept_value), which such VJPs strip
            return _swept_value(self._dispatch(_values_of(args, top),
                                               kwargs if kwargs is not None else _EMPTY))
        if n > MAX_INLINE_PARENTS:
            refs = <ParentRef*>_realloc_checked(NULL, n, sizeof(ParentRef))
        try:
            uargs = PyTuple_New(n)
            for i in range(n):
                a = <object>PyTuple_GET_ITEM(args, i)
                if _is_box(a) and (<Box>a)._tape is top:
                    if top.nodes[(<Box>a)._node].flags & NODE_STALE:
                        _resolve_stale(top, <Box>a, self.name, i)    # (or raises)
                    refs[nrefs].node = (<Box>a)._node
                    refs[nrefs].argnum = <int32_t>i
                    nrefs += 1
                    a = (<Box>a)._value
                    if _is_box(a):          # nested differentiation: an outer trace's value
                        mixed = True
                Py_INCREF(a)
                PyTuple_SET_ITEM(uargs, i, a)
            # nested differentiation (mixed): the outer trace records the call; no list hook
            # at this level (a failing list argument is converted by the outermost __call__)
            if not kwargs:
                kwargs = None
            if mixed:       # the outer trace records it (its own _record runs the body)
                ans = self._dispatch(uargs, kwargs)
            elif self.guard_args and top.holds.live != 0:
                ans = _run_guarded(self, top, uargs, kwargs)
            elif kwargs is None:
                ans = _run_body(self.fun, uargs, NULL)
            else:
                ans = _run_body(self.fun, uargs, <PyObject*>kwargs)
            # an untraced primitive records nothing, except on a const_graph recording that
            # asks for it (its output depends on the inputs: the replay recomputes it)
            if not self.traced and (top.recorder is None or not top.recorder.records(self)):
                return ans
            if cnp.PyArray_Check(ans) and not cnp.PyArray_CheckExact(ans):
                _raise_subclass_result(self.name, uargs, ans)
            if (top.recorder is None and _is_integer_result(ans)
                    and _inexact_parents(uargs, refs, nrefs)):
                # a float rounded to an integer or boolean dtype (sum(x, dtype=int), a ufunc's
                # dtype=int, ...): a constant, whose derivative is zero. Not on a const_graph
                # recording, which is never differentiated: its replay recomputes the value
                return ans
            # the function ran Python code: the tape may have been released or started its
            # sweep meanwhile (by the function itself, or by another thread)
            if top.released or top.sweeping:
                _raise_moved_on(self.name, top)
            if top.forward:
                try:
                    tangent = self._jvp(top, refs, nrefs, ans, uargs, kwargs)
                    if tangent is not None:
                        tangent = _match_tangent(tangent, ans)
                except Exception as e:
                    _raise_if_batched(self.name, top, refs, nrefs, e)
                    raise
                if top.released or top.sweeping:
                    _raise_moved_on(self.name, top)
                node = top._append(self, refs, nrefs, None, (), None, 0)
                if tangent is not None and not top.released:    # (an observer may release it)
                    top._set_cotangent(node, tangent)
                return _output_box(self, top, node, ans, args)
            fused = None
            # (nested: only under a const_graph recording, whose Box ans is; fuse_record)
            if self.fuses and not top.keep_args and (not mixed or type(ans) is Box):
                fused = fuse_record(self, top, refs, nrefs, uargs, kwargs, ans)
            if fused is not None:       # recorded as one node with its operands (_fuse.pxd)
                prim, ans_s, sargs = fused
                nrefs = 1
            elif top.keep_args:         # a graph recording (gradcy.tracer): keep everything
                ans_s, sargs = ans, uargs
            elif self.save_fn is not None:     # the rules read a compact record of their own
                ans_s, sargs = self.save_fn(
                    tuple([refs[k].argnum for k in range(nrefs)]), ans, uargs,
                    kwargs if kwargs is not None else _EMPTY)
                if type(sargs) is not tuple:
                    raise TypeError(f"{self.name}: save_fn must return (ans, args tuple)")
            elif self.per_arg:          # the union of what the traced arguments' rules read
                mask = 0
                all_args = save_ans = False
                for k in range(nrefs):
                    a_k = refs[k].argnum
                    if a_k < 8 and (self.arg_known >> a_k) & 1:
                        mask |= self.arg_masks[a_k]
                        if (self.arg_ans >> a_k) & 1:
                            save_ans = True
                    else:
                        all_args = save_ans = True
                        break
                ans_s = ans if save_ans else _meta_of(ans)
                sargs = self._saved_args(uargs, Py_REFCNT(<PyObject*>uargs) == 1, mask,
                                         all_args)
            else:
                ans_s = ans if self.save_ans else _meta_of(ans)
                # the call may have kept the argument tuple (a Python function's *args): reuse
                # it for the saved record only if this frame holds the sole reference
                sargs = self._saved_args(uargs, Py_REFCNT(<PyObject*>uargs) == 1,
                                         self.save_mask, self.save_all_args)
            del uargs
            if top.released or top.sweeping:
                _raise_moved_on(self.name, top)
            recomputed = False
            if top.recompute and not top.keep_args and not self.vjp.writes \
                    and not self.basic_view:
                new_sargs = _recompute_args(top, refs, nrefs, sargs)
                recomputed = new_sargs is not sargs
                sargs = new_sargs
            if kwargs is not None and not top.keep_args:
                kwargs = _shared_kwargs(<dict>kwargs)
            node = top._append(prim, refs, nrefs, ans_s, sargs, kwargs,
                               top._account(ans_s, sargs, 1))
            if recomputed:
                top.nodes[node].flags |= NODE_RECOMPUTE
            if top.owned:
                top._owned_scan(node, ans_s, sargs)
        finally:
            if refs is not inline_refs:
                PyMem_Free(refs)
        return _output_box(self, top, node, ans, args)

    cdef object _jvp(self, Tape top, ParentRef* refs, int32_t nrefs, object ans, tuple uargs,
                     object kwargs):
        """The output tangent: the sum of each traced argument's JVP rule applied to the
        argument's tangent (held in its node's slot); None when every tangent is zero."""
        cdef int32_t k
        cdef PyObject* g
        cdef PyObject* rule
        cdef object total = None
        if kwargs is None:
            kwargs = _EMPTY
        if self.jvp_argnums is not None:
            argnums, gs = [], []
            for k in range(nrefs):
                g = top.nodes[refs[k].node].cotangent
                if g is not NULL:
                    argnums.append(refs[k].argnum)
                    gs.append(<object>g)
            if not gs:
                return None
            return self.jvp_argnums(tuple(argnums), tuple(gs), ans, uargs, kwargs)
        for k in range(nrefs):
            if top.released:            # a rule released it: the caller raises
                return None
            g = top.nodes[refs[k].node].cotangent
            if g is NULL:
                continue
            rule = PyDict_GetItem(self.jvpmakers, refs[k].argnum)
            if rule is NULL:
                raise MissingJVPError(
                    f"{self.name} has no JVP for argument {refs[k].argnum}; register one with "
                    f"gradcy.extend.defjvp")
            if <object>rule is None:
                continue
            t = PyObject_Call(<object>rule, (<object>g, ans) + uargs, kwargs)
            if t is None:
                continue
            total = t if total is None else _add_cotangents(total, t)
        return total


# the keywords of a ufunc's call (NumPy's "ufunc kwargs" besides out=), which the rules do not
# read: the out hook handles them (a gufunc's axis=, axes=, keepdims= go to its rules)
cdef frozenset _UFUNC_CALL_KEYWORDS = frozenset(
    ("dtype", "casting", "signature", "order", "subok", "where"))


cdef int _raise_if_batched(str name, Tape top, ParentRef* refs, int32_t nrefs,
                           object e) except -1:
    """A JVP rule given a batch of tangents (gradcy/_batched.py: the one forward pass of
    hessian and hessian_tensor_product for many tangents) raised e: raise BatchingError from
    it, which the caller takes as "this rule cannot take a batch" and runs the tangents one at
    a time; on plain tangents return (e goes on unchanged)."""
    cdef int32_t k
    cdef PyObject* g
    from gradcy._batched import BatchedTangent, BatchingError
    if isinstance(e, BatchingError):
        return 0
    for k in range(nrefs):
        g = top.nodes[refs[k].node].cotangent
        if g is not NULL and type(<object>g) is BatchedTangent:
            raise BatchingError(
                f"the JVP rule of {name} cannot take a batch of tangents "
                f"({type(e).__name__}: {e})") from e
    return 0


cdef inline object _match_tangent(object t, object ans):
    if _same_shape_dtype(t, ans) or _tangent_fixer is None:
        return t
    return _tangent_fixer(t, ans)


cdef bint _users_function(object fun) except -1:
    """fun is not NumPy's, SciPy's or gradcy's own (whose functions never write their
    arguments): a primitive of it runs with the held arguments read-only (_run_guarded)."""
    if isinstance(fun, _np.ufunc):
        return False
    module = getattr(fun, "__module__", None)
    if type(module) is not str:
        return True
    return not (module in ("numpy", "builtins", "math", "operator")
                or module.startswith(("numpy.", "scipy", "gradcy")))


cdef object _run_guarded(Primitive prim, Tape top, tuple uargs, object kwargs):
    """prim's function on uargs with the arguments (and their root buffers) that the tape's
    saved records hold made read-only while it runs: a function writing one in place (a *= 2)
    would change what an earlier operation's VJP reads. Their flags are restored after."""
    cdef list flipped = []
    cdef list held = []
    cdef Py_ssize_t i
    for i in range(PyTuple_GET_SIZE(uargs)):
        a = <object>PyTuple_GET_ITEM(uargs, i)
        if not cnp.PyArray_Check(a):
            continue
        root = _root_buffer(a)
        if hold_count(&top.holds, root) == 0:
            continue
        held.append(i)
        for v in (a, root):
            if cnp.PyArray_ISWRITEABLE(<cnp.ndarray>v):
                cnp.PyArray_CLEARFLAGS(<cnp.ndarray>v, cnp.NPY_ARRAY_WRITEABLE)
                flipped.append(v)
    try:
        if kwargs is None:
            return _run_body(prim.fun, uargs, NULL)
        return _run_body(prim.fun, uargs, <PyObject*>kwargs)
    except ValueError as e:
        if held and "read-only" in str(e):
            raise ValueError(
                f"{prim.name}: its function wrote into argument "
                f"{' or '.join(map(str, held))} in place, an array this differentiation "
                f"saved for its backward pass (an operation before it reads the value to "
                f"compute its gradient), so the write would change that gradient. Write into "
                f"a copy (a = a.copy(); a *= 2) or return a new array (return a * 2).") from e
        raise
    finally:
        for v in flipped:
            cnp.PyArray_ENABLEFLAGS(<cnp.ndarray>v, cnp.NPY_ARRAY_WRITEABLE)


cdef tuple _INTEGER_SCALARS = (_np.integer, _np.bool_)


cdef inline bint _is_integer_result(object ans) except -1:
    """ans is an integer or boolean array or NumPy scalar."""
    cdef int t
    if cnp.PyArray_Check(ans):
        t = cnp.PyArray_TYPE(<cnp.ndarray>ans)
        return cnp.PyTypeNum_ISINTEGER(t) or cnp.PyTypeNum_ISBOOL(t)
    if type(ans) is float:
        return False
    return isinstance(ans, _INTEGER_SCALARS)


cdef bint _inexact_parents(tuple uargs, ParentRef* refs, int32_t nrefs) except -1:
    """Every traced argument of a call (its plain value in uargs) is floating-point or
    complex: an integer result of the call rounds them (an integer-valued traced input, such
    as an integer array differentiated as float64 values, keeps its integer arithmetic
    recorded)."""
    cdef int32_t k
    cdef int t
    cdef object v
    for k in range(nrefs):
        v = <object>PyTuple_GET_ITEM(uargs, refs[k].argnum)
        while _is_box(v):          # nested differentiation: an outer trace's value
            v = (<Box>v)._value
        if cnp.PyArray_Check(v):
            t = cnp.PyArray_TYPE(<cnp.ndarray>v)
            if not (cnp.PyTypeNum_ISFLOAT(t) or cnp.PyTypeNum_ISCOMPLEX(t)):
                return False
        elif not (type(v) is float or type(v) is complex
                  or isinstance(v, (_np.inexact, float, complex))):
            return False
    return nrefs > 0


cdef object _check_subclass_result = None     # gradcy._arguments.check_subclass_result


cdef void _raise_subclass_result(str name, tuple uargs, object ans) except *:
    """A recorded operation returned an ndarray subclass (np.matrix, a masked array...): the
    rules are NumPy's plain-array semantics and would be wrong for it (gradcy's own
    subclasses, marked _gradcy_plain, are plain arrays to the rules; a subclass the user
    registered through autograd's API, as PennyLane's tensor, is accepted as autograd does
    when an input is of such a type: check_subclass_result)."""
    global _check_subclass_result
    if getattr(type(ans), "_gradcy_plain", False):
        return
    if _check_subclass_result is None:
        from gradcy._arguments import check_subclass_result
        _check_subclass_result = check_subclass_result
    _check_subclass_result(name, uargs, ans)


cdef void _raise_keyword_box(str name, dict kwargs) except *:
    keys = [k for k, v in kwargs.items() if isinstance(v, Box)]
    raise TypeError(f"{name}: traced value passed as keyword argument {keys[0]!r}; gradcy traces "
                    f"positional arguments only. Pass it positionally.")


cdef inline object _run_body(object fun, tuple args, PyObject* kwargs):
    """fun(*args, **kwargs) (kwargs may be NULL) with this thread's active differentiations
    suspended: a primitive's function runs on plain values."""
    if _n_active == 0:          # no differentiation is active: nothing to suspend
        return _call_kw_ptr(fun, args, kwargs)
    cdef Py_ssize_t* bodies = gradcy_running_bodies_ptr()
    bodies[0] += 1
    try:
        return _call_kw_ptr(fun, args, kwargs)
    finally:
        bodies[0] -= 1


cdef void _raise_moved_on(str name, Tape top) except *:
    if top.released:
        raise EscapedValueError(
            f"{name}: the differentiation that traced its arguments was released while {name} "
            f"ran (its function released the VJP from make_vjp, or the grad that traced them "
            f"returned in another thread), so its result cannot be recorded. Release the VJP "
            f"after the call, or compute on plain values (box._value).")
    raise RuntimeError(
        f"{name}: the backward pass of the differentiation that traced its arguments started "
        f"while {name} ran (in another thread), so its result cannot be recorded. Finish every "
        f"operation on a differentiation's values before its function returns.")


cdef void _raise_escaped(str name, Py_ssize_t argpos) except *:
    raise EscapedValueError(
        f"{name}: argument {argpos} is a traced value from a differentiation that has already "
        f"finished (its tape was released). A value escaped grad/make_vjp, e.g. through a global "
        f"or a closure; use its plain value instead (box._value) or compute it inside the "
        f"differentiated function.")


cdef inline Box _output_box(Primitive prim, Tape top, Py_ssize_t node, object ans, tuple args):
    """The traced output of a recorded call (either mode): its Box, and the view notes a later
    write checks (a view in a buffer the tape owns, in an input's memory, or in an array an
    operation computed: _write._note_view)."""
    box = make_box(ans, top, node)
    if (cnp.PyArray_Check(ans) or type(ans) is Box or type(ans) is list
            or type(ans) is tuple):
        _note_view(top, box, node, ans, args, prim is _write_primitive)
    return box
