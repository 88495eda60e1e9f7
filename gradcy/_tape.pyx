"""The gradcy engine: primitive dispatch, the tape, the backward sweep, buffer lifetimes.

Contract and field comments: _tape.pxd. This module knows nothing about which NumPy functions
exist; the operator layer (gradcy/numpy, gradcy/extend.py) registers primitives, their VJPs and
the Box methods onto it (the tables and hooks: _hooks). The traced value is _box's Box, which
make_box (here) makes; the owned-buffer bookkeeping of a recording is _write's.

Lifetimes (each owned reference has one release point):
- Node.prim, Node.saved: released by _release_saved() right after the node's VJP ran in a
  consuming sweep, when the node dies (its Box dropped and nothing consumed it), when the node
  cannot reach the output of a sweep, or by release(). A node that never receives a cotangent
  (a basic-index view whose cotangent went into its parent's slot, or one whose consumers'
  rules returned None) keeps its record until release().
- Node.cotangent: released by _take_cotangent() when the node's VJP consumes it, or by release().
- The arena and the hold table (Tape.holds, _hold.pxd): freed by release(), which __dealloc__
  also runs.
- Tape.owned (the OwnedBuffer of each buffer the tape writes in place): dropped by release().
"""
cimport cython
from cpython.object cimport PyObject
from cpython.ref cimport Py_INCREF, Py_DECREF, Py_XDECREF, Py_XINCREF
from cpython.mem cimport PyMem_Realloc, PyMem_Free
from cpython.tuple cimport PyTuple_New, PyTuple_SET_ITEM, PyTuple_GET_ITEM, PyTuple_GET_SIZE
from cpython.object cimport PyObject_Call
from cpython.dict cimport PyDict_GetItem
from cpython.long cimport PyLong_FromVoidPtr
from libc.stdint cimport int32_t, uint8_t, SIZE_MAX
from libc.string cimport memset

import threading as _threading
from types import MethodType as _MethodType

import numpy as _np
cimport numpy as cnp

cnp.import_array()

cdef extern from "Python.h":
    Py_ssize_t Py_REFCNT(PyObject* o)
    bint PyObject_IS_GC(PyObject* o)
    bint PyObject_GC_IsTracked(PyObject* o)
    void PyObject_GC_UnTrack(void* o)
    object _call_kw_ptr "PyObject_Call"(object callable, object args, PyObject* kwargs)


from gradcy._counters cimport (_next_trace_id, _live_tapes, _live_nodes, _saved_bytes,
                               _peak_saved_bytes, _cotangent_bytes, _peak_bytes)
from gradcy._saved cimport ArrayMeta, _same_shape_dtype
from gradcy._regions cimport OwnedBuffer, _root_key, _root_buffer, _is_basic_index, _nbytes
from gradcy._cotangents cimport SparseCotangent, _densify, _add_cotangents
from gradcy._hold cimport hold_update, hold_free, hold_count, hold_roots
from gradcy._errors import EscapedValueError, TracerArrayConversionError, MissingJVPError
from gradcy._rules cimport ArgnumVJP, JointVJP
from gradcy._recompute cimport _recompute_default, _recompute_args, _materialize
from gradcy._saved cimport _meta_of, _shared_kwargs
from gradcy._fuse cimport fuse_record
from gradcy._box cimport Box, _box_type_of, _box_factories, _n_box_subtypes
from gradcy._hooks cimport (_EMPTY, _any_array_types, _is_array_type, _out_hook,
                            _list_arg_hook, _tangent_fixer, _unbroadcast_slow, _write_primitive)
from gradcy._write cimport _note_view, _owned_note, _resolve_stale


# =============================================================================
# Byte counts of a tape and of the process (_counters)
# =============================================================================
cdef inline void _count_bytes(Tape t, Py_ssize_t dsaved, Py_ssize_t dcot) noexcept:
    global _saved_bytes, _peak_saved_bytes, _cotangent_bytes, _peak_bytes
    t.saved_bytes += dsaved
    t.cotangent_bytes += dcot
    if t.saved_bytes > t.peak_saved_bytes:
        t.peak_saved_bytes = t.saved_bytes
    if t.saved_bytes + t.cotangent_bytes > t.peak_bytes:
        t.peak_bytes = t.saved_bytes + t.cotangent_bytes
    _saved_bytes += dsaved
    _cotangent_bytes += dcot
    if _saved_bytes > _peak_saved_bytes:
        _peak_saved_bytes = _saved_bytes  # no-cython-lint (a C global: see `global` above)
    if _saved_bytes + _cotangent_bytes > _peak_bytes:
        _peak_bytes = _saved_bytes + _cotangent_bytes  # no-cython-lint (a C global too)


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
    typedef struct { long long floor, forward_end, next; } gradcy_sweep_t;
    #if defined(_MSC_VER)
    static __declspec(thread) gradcy_sweep_t gradcy_sweep = {-1, -1, -1};
    #else
    static __thread gradcy_sweep_t gradcy_sweep = {-1, -1, -1};
    #endif
    static gradcy_sweep_t *gradcy_sweep_ptr(void) { return &gradcy_sweep; }
    """
    Py_ssize_t gradcy_running_bodies
    Py_ssize_t* gradcy_running_bodies_ptr() noexcept nogil
    # the outermost backward pass running in this thread: its tape's trace id (-1: none) and
    # forward_end, and the trace id of the first tape created after the pass began
    ctypedef struct gradcy_sweep_t:
        long long floor
        long long forward_end
        long long next
    gradcy_sweep_t* gradcy_sweep_ptr() noexcept nogil

_active = _threading.local()
# Tape.forward_end of a tape whose forward pass has not left the active stack
cdef long long _FORWARD_RUNNING = 1LL << 62
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


cdef inline bint _began_in_sweep(Tape t) noexcept:
    """t began during the forward pass of the tape whose backward pass runs outermost in this
    thread (any thread's tape: trace ids are the process's), or during that pass."""
    cdef gradcy_sweep_t* w = gradcy_sweep_ptr()
    return w.floor >= 0 and ((w.floor < t.trace_id < w.forward_end) or t.trace_id >= w.next)


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
                n > self.out_arg or "out" in kwargs or "copy" in kwargs):
            return _out_hook(self, args, kwargs)     # out=, or nan_to_num's copy=False
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
        """The maker(argnums, ans, args, kwargs) -> vjp(g) registered for all arguments,
        or None."""
        return self.vjp.maker if type(self.vjp) is JointVJP else None

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
                tangent = self._jvp(top, refs, nrefs, ans, uargs, kwargs)
                if tangent is not None:
                    tangent = _match_tangent(tangent, ans)
                if top.released or top.sweeping:
                    _raise_moved_on(self.name, top)
                node = top._append(self, refs, nrefs, None, (), None, 0)
                if tangent is not None and not top.released:    # (an observer may release it)
                    top._set_cotangent(node, tangent)
                return _output_box(self, top, node, ans, args)
            fused = None
            if self.fuses and not mixed and not top.keep_args:
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


# =============================================================================
# The tape
# =============================================================================
cdef Py_ssize_t _grow_to(Py_ssize_t cap, Py_ssize_t need) noexcept nogil:
    if cap < 16:
        cap = 16
    while cap < need:
        cap *= 2
    return cap


cdef void* _realloc_checked(void* p, Py_ssize_t count, size_t itemsize) except? NULL:
    """Grow (or allocate) an array; raises MemoryError. Never frees: that is release()'s job."""
    if count <= 0 or <size_t>count > SIZE_MAX // itemsize:
        raise MemoryError(f"could not allocate {count} x {itemsize} bytes")
    cdef void* q = PyMem_Realloc(p, count * itemsize)
    if q is NULL:
        raise MemoryError(f"could not allocate {count * itemsize} bytes")
    return q


cdef inline bint _exclusive_array(PyObject* p, Py_ssize_t refs) noexcept:
    """p is an exact, writable ndarray that owns its memory and has exactly `refs` references
    (the slot's, plus the caller's locals): the engine may add into it in place."""
    return (cnp.PyArray_CheckExact(<object>p) and Py_REFCNT(p) == refs
            and cnp.PyArray_BASE(<cnp.ndarray>p) is NULL
            and cnp.PyArray_ISWRITEABLE(<cnp.ndarray>p))


cdef object _add_ufunc = _np.add


cdef inline void _untrack_plain(tuple t) noexcept:
    """Take a saved argument tuple that holds no object the cycle collector tracks (arrays,
    numbers, ArrayMetas, Boxes) out of its reach now, as CPython would at the tuple's first
    collection: a long recording then leaves the collections it triggers nothing to walk."""
    cdef Py_ssize_t i
    cdef PyObject* item
    if not PyObject_GC_IsTracked(<PyObject*>t):
        return
    for i in range(PyTuple_GET_SIZE(t)):
        item = PyTuple_GET_ITEM(t, i)
        if PyObject_IS_GC(item) and PyObject_GC_IsTracked(item):
            return
    PyObject_GC_UnTrack(<void*>t)


@cython.final
cdef class Tape:
    """One differentiation's record: an arena of Node structs in topological order."""

    def __cinit__(self, bint forward=False):
        global _next_trace_id, _live_tapes
        self.nodes = NULL
        self.parents = NULL
        self.n_nodes = self.cap_nodes = 0
        self.n_parents = self.cap_parents = 0
        self.holds.slots = NULL
        self.holds.cap = self.holds.used = self.holds.live = 0
        self.trace_id = _next_trace_id
        _next_trace_id += 1
        self.forward_end = _FORWARD_RUNNING
        self.released = False
        self.sweeping = False
        self.forward = forward
        self.observer = None
        self.keep_args = False
        self.recorder = None
        self.recompute = _recompute_default
        self.owned = {}
        self.computed = None
        self.frozen = None
        _live_tapes += 1

    def __dealloc__(self):
        self._free_all()

    # ---- growth ---------------------------------------------------------------------------
    cdef int _grow_nodes(self, Py_ssize_t need) except -1:
        cdef Py_ssize_t cap = _grow_to(self.cap_nodes, need)
        self.nodes = <Node*>_realloc_checked(self.nodes, cap, sizeof(Node))
        memset(&self.nodes[self.cap_nodes], 0, (cap - self.cap_nodes) * sizeof(Node))
        self.cap_nodes = cap
        return 0

    cdef int _grow_parents(self, Py_ssize_t need) except -1:
        cdef Py_ssize_t cap = _grow_to(self.cap_parents, need)
        self.parents = <ParentRef*>_realloc_checked(self.parents, cap, sizeof(ParentRef))
        self.cap_parents = cap
        return 0

    @property
    def hold_live(self):
        """Root buffers the tape's saved records hold now (each counted once in saved_bytes)."""
        return self.holds.live

    @property
    def capacity(self):
        """(nodes allocated, parent entries allocated) of the arena."""
        return (self.cap_nodes, self.cap_parents)

    def __len__(self):
        return self.n_nodes

    # ---- recording ------------------------------------------------------------------------
    cdef Py_ssize_t _account(self, object ans, object args, int sign) except -1:
        """Count (sign=+1) or uncount (sign=-1) the buffers of a saved record; returns the
        bytes that changed hands. A buffer already held by this tape counts once: the tape
        keeps one holder count per root buffer (the ndarray that owns the memory)."""
        cdef Py_ssize_t total = 0, i, n
        cdef object v
        if type(ans) is ArrayMeta:      # (the common unsaved output: no subclass walk for it)
            pass
        elif cnp.PyArray_Check(ans):
            total += self._hold(ans, sign)
        elif _any_array_types and _is_array_type(type(ans)):
            total += self._hold(ans, sign)
        n = PyTuple_GET_SIZE(args)
        for i in range(n):
            v = <object>PyTuple_GET_ITEM(args, i)
            if type(v) is ArrayMeta or type(v) is float:     # (no subclass walk for these)
                continue
            if cnp.PyArray_Check(v):
                total += self._hold(v, sign)
            elif _any_array_types and _is_array_type(type(v)):
                total += self._hold(v, sign)
        return total

    cdef Py_ssize_t _hold(self, object a, int sign) except -1:
        """One more (sign=+1) or one fewer (-1) saved record holding the root buffer of `a`;
        returns its bytes when that changed whether the tape holds it at all, else 0
        (_hold.hold_update). An array of another type (dask, cupy) is its own root and counts
        the nbytes it declares."""
        cdef Py_ssize_t n
        root = _root_buffer(a) if cnp.PyArray_Check(a) else a
        n = hold_update(&self.holds, root, sign)
        if sign < 0 and self.frozen and hold_count(&self.holds, root) == 0:
            self._thaw(root)
        return n

    def freeze_saved(self, outputs=()):
        """Make the arrays this tape's saved records hold read-only until the records let go
        of them (make_vjp, after the forward pass): every held root buffer, the saved arrays
        in one, and the ndarrays in `outputs` (an iterable) whose memory is in one. A write
        into them would change what the VJPs read. Each is writable again when the last
        record holding its root buffer is released (by a consuming sweep, release(), or the
        tape's end). Returns how many arrays it made read-only."""
        cdef Py_ssize_t i, n0
        cdef Node* node
        if self.released or self.sweeping or self.forward:
            return 0
        if self.frozen is None:
            self.frozen = {}
        n0 = sum([len(v) for v in self.frozen.values()])
        for root in hold_roots(&self.holds):
            if cnp.PyArray_Check(root):
                self._freeze(root, True)
        for i in range(self.n_nodes):
            node = &self.nodes[i]
            if node.saved_args is NULL:
                continue
            self._freeze(<object>node.saved_ans, False)
            for v in <tuple>node.saved_args:
                self._freeze(v, False)
        for v in outputs:
            self._freeze(v, False)
        return sum([len(v) for v in self.frozen.values()]) - n0

    cdef int _freeze(self, object v, bint held) except -1:
        """v (a held root buffer, or an exact ndarray whose root buffer the tape holds) made
        read-only, noted under its root in `frozen`; nothing for anything else (or once the
        tape is released: iterating `outputs` may have released it)."""
        if self.frozen is None:
            return 0
        if held:
            root = v
        elif cnp.PyArray_CheckExact(v):
            root = _root_buffer(v)
            if hold_count(&self.holds, root) == 0:
                return 0
        else:
            return 0
        if not cnp.PyArray_ISWRITEABLE(<cnp.ndarray>v):
            return 0
        cnp.PyArray_CLEARFLAGS(<cnp.ndarray>v, cnp.NPY_ARRAY_WRITEABLE)
        key = PyLong_FromVoidPtr(<void*>root)
        entry = self.frozen.get(key)
        if entry is None:
            self.frozen[key] = [v]
        else:
            (<list>entry).append(v)
        return 0

    cdef int _thaw(self, object root) except -1:
        """The arrays freeze_saved made read-only in `root` writable again (its last holding
        record let go of it)."""
        if self.frozen is None:
            return 0
        entry = self.frozen.pop(PyLong_FromVoidPtr(<void*>root), None)
        if entry is not None:
            for v in <list>entry:
                cnp.PyArray_ENABLEFLAGS(<cnp.ndarray>v, cnp.NPY_ARRAY_WRITEABLE)
        return 0

    @property
    def frozen_count(self):
        """How many arrays freeze_saved made read-only are read-only still."""
        return 0 if not self.frozen else sum([len(v) for v in self.frozen.values()])

    cdef Py_ssize_t _append(self, Primitive prim, ParentRef* refs, int32_t nrefs,
                            object ans, tuple args, object kwargs,
                            Py_ssize_t nbytes) except -1:
        global _live_nodes
        cdef Py_ssize_t i = self.n_nodes, k
        cdef Node* node
        if self.released:
            raise EscapedValueError("Tape: recording onto a released tape")
        if i >= self.cap_nodes:
            self._grow_nodes(i + 1)
        if self.n_parents + nrefs > self.cap_parents:
            self._grow_parents(self.n_parents + nrefs)
        node = &self.nodes[i]
        node.prim = <PyObject*>prim
        Py_XINCREF(node.prim)
        node.saved_ans = <PyObject*>ans
        Py_INCREF(ans)
        node.saved_args = <PyObject*>args
        Py_INCREF(args)
        _untrack_plain(args)
        node.saved_kwargs = <PyObject*>kwargs
        Py_INCREF(kwargs)
        node.cotangent = NULL
        node.parent_start = self.n_parents
        node.nparents = nrefs
        node.nconsumers = 0
        node.saved_bytes = nbytes
        node.cot_bytes = 0
        node.flags = NODE_CONSTANT if nrefs > 0 else 0
        for k in range(nrefs):
            self.parents[self.n_parents + k] = refs[k]
            self.nodes[refs[k].node].nconsumers += 1
            if not (self.nodes[refs[k].node].flags & NODE_CONSTANT):
                node.flags = 0
        self.n_parents += nrefs
        self.n_nodes = i + 1
        self.live_nodes += 1
        _live_nodes += 1
        _count_bytes(self, nbytes, 0)
        if self.observer is not None:
            self._notify("forward", i, prim.name)
        return i

    cdef Py_ssize_t _new_input(self, uint8_t flags, str caller) except -1:
        """Append a node with no primitive and no parents (a leaf or a constant)."""
        global _live_nodes
        if self.released:
            raise EscapedValueError(f"Tape.{caller}: this tape has been released")
        cdef Py_ssize_t i = self.n_nodes
        if i >= self.cap_nodes:
            self._grow_nodes(i + 1)
        memset(&self.nodes[i], 0, sizeof(Node))
        self.nodes[i].parent_start = self.n_parents
        self.nodes[i].flags = flags
        self.n_nodes = i + 1
        self.live_nodes += 1
        _live_nodes += 1
        return i

    def new_leaf(self, value, tangent=None):
        """Append an input node for `value` and return its Box. On a forward-mode tape,
        `tangent` is the input's tangent."""
        if tangent is not None and not self.forward:
            raise ValueError("Tape.new_leaf: a tangent is given only on a forward-mode tape")
        if _box_factories:              # autograd's box factories (Box.type_mappings)
            factory = _box_factories.get(type(value))
            if factory is not None:
                factory(value, None, None)
        cdef Py_ssize_t i = self._new_input(NODE_LEAF, "new_leaf")
        if tangent is not None:
            self._set_cotangent(i, tangent)
        plain = value
        while type(plain) is Box:       # nested differentiation: an outer trace's value
            plain = (<Box>plain)._value
        if cnp.PyArray_Check(plain):
            # track the input's traced views (a write into the input makes those it overlaps
            # stale); two inputs in one memory: their regions are not told apart (root None),
            # and a write into one raises when another overlaps it (site counts the inputs,
            # arrays lists them: _write._shared_input)
            if self.inputs is None:
                self.inputs = {}
            key = _root_key(plain)
            entry = self.inputs.get(key)
            if entry is None:
                self.inputs[key] = OwnedBuffer(plain, 1)
            else:
                (<OwnedBuffer>entry).site = (<OwnedBuffer>entry).site + 1
                if (<OwnedBuffer>entry).arrays is None:    # (which of them overlap: _write)
                    (<OwnedBuffer>entry).arrays = [(<OwnedBuffer>entry).root]
                (<OwnedBuffer>entry).arrays.append(plain)
                if (<OwnedBuffer>entry).root is not plain:
                    (<OwnedBuffer>entry).root = None
        return make_box(value, self, i)

    def input_entry(self, array):
        """The view table of the input whose memory ndarray `array` is in, or None."""
        if self.inputs is None or not cnp.PyArray_Check(array):
            return None
        return self.inputs.get(_root_key(array))

    def new_constant(self, value):
        """Append a node for a constant `value` (a buffer an array constructor made during this
        differentiation) and return its Box. No cotangent is ever computed for it."""
        return make_box(value, self, self._new_input(NODE_CONSTANT, "new_constant"))

    def register_owned(self, root, OwnedBuffer info not None):
        """Record that this tape owns ndarray `root` (it may write into it in place)."""
        self.owned[PyLong_FromVoidPtr(<void*>root)] = info

    def owned_info(self, array):
        """The info registered for the buffer that owns `array`'s memory, or None."""
        if not cnp.PyArray_Check(array) or not self.owned:
            return None
        return self.owned.get(_root_key(array))

    def node_flags(self, Py_ssize_t i):
        """(released, box_alive, constant, stale) of node i."""
        _check_node(self, i, "node_flags")
        cdef uint8_t f = self.nodes[i].flags
        return (bool(f & NODE_RELEASED), bool(f & NODE_BOX_ALIVE), bool(f & NODE_CONSTANT),
                bool(f & NODE_STALE))

    def mark_stale(self, Py_ssize_t i):
        """Node i's value is a view whose memory was overwritten: using it raises."""
        _check_node(self, i, "mark_stale")
        self.nodes[i].flags |= NODE_STALE

    def saved_value(self, Py_ssize_t i, Py_ssize_t position):
        """Node i's saved argument `position` (-1: the saved output); None after release."""
        if i < 0 or i >= self.n_nodes or self.nodes[i].saved_args is NULL:
            return None
        if position < 0:
            return <object>self.nodes[i].saved_ans
        args = <tuple>self.nodes[i].saved_args
        return args[position] if position < PyTuple_GET_SIZE(args) else None

    def replace_saved(self, Py_ssize_t i, Py_ssize_t position, value):
        """Put `value` (a preserved copy) in place of node i's saved argument `position`
        (-1: the saved output), keeping the byte counts exact."""
        _check_node(self, i, "replace_saved")
        cdef Node* node = &self.nodes[i]
        if node.saved_args is NULL:
            return
        old_ans, old_args = <object>node.saved_ans, <object>node.saved_args
        if position < 0:
            new_ans, new_args = value, old_args
        else:
            if position >= PyTuple_GET_SIZE(old_args):
                raise IndexError(f"Tape.replace_saved: node {i} saved {len(old_args)} "
                                 f"arguments, not {position + 1}")
            lst = list(old_args)
            lst[position] = value
            new_ans, new_args = old_ans, tuple(lst)
        gained = self._account(new_ans, new_args, 1)
        freed = self._account(old_ans, old_args, -1)
        Py_INCREF(new_ans)
        Py_INCREF(new_args)
        node = &self.nodes[i]
        node.saved_ans = <PyObject*>new_ans
        node.saved_args = <PyObject*>new_args
        node.saved_bytes += gained - freed
        _count_bytes(self, gained - freed, 0)
        Py_DECREF(old_ans)
        Py_DECREF(old_args)

    cdef int _owned_scan(self, Py_ssize_t node, object ans, tuple args) except -1:
        """Tell the owned-buffer hook about saved arrays whose memory belongs to an owned
        buffer (a later write into it must not change what this node's VJP will read)."""
        cdef Py_ssize_t k
        cdef PyObject* info
        if cnp.PyArray_Check(ans):
            info = PyDict_GetItem(self.owned, _root_key(ans))
            if info is not NULL:
                _owned_note(self, <object>info, False, node, ans, -1)
        for k in range(PyTuple_GET_SIZE(args)):
            v = <object>PyTuple_GET_ITEM(args, k)
            if cnp.PyArray_Check(v):
                info = PyDict_GetItem(self.owned, _root_key(v))
                if info is not NULL:
                    _owned_note(self, <object>info, False, node, v, k)
        return 0

    def tangent(self, Box box not None):
        """The tangent of `box` (a value of this forward-mode tape), or None for zero."""
        if box._tape is not self or self.released:
            raise ValueError("Tape.tangent: the value belongs to another or a released tape")
        if self.nodes[box._node].flags & NODE_STALE:
            _resolve_stale(self, box, "gradcy (an output)", 0)    # (or raises)
        c = self.nodes[box._node].cotangent
        return None if c is NULL else <object>c

    # ---- lifetimes ------------------------------------------------------------------------
    cdef int _release_saved(self, Py_ssize_t i) except -1:
        """Drop node i's primitive and saved record (idempotent)."""
        global _live_nodes
        cdef Node* node = &self.nodes[i]
        cdef PyObject* ans = node.saved_ans
        cdef PyObject* args = node.saved_args
        cdef PyObject* kwargs = node.saved_kwargs
        cdef PyObject* prim = node.prim
        cdef Py_ssize_t freed = 0
        if node.flags & NODE_RELEASED:
            return 0
        node.flags |= NODE_RELEASED
        node.saved_ans = node.saved_args = node.saved_kwargs = node.prim = NULL
        node.saved_bytes = 0
        self.live_nodes -= 1
        _live_nodes -= 1
        if args is not NULL:
            freed = self._account(<object>ans, <object>args, -1)
        _count_bytes(self, -freed, 0)
        # the struct is consistent before any Python code (a __del__) can run
        name = (<Primitive>prim).name if prim is not NULL and self.observer is not None else None
        Py_XDECREF(ans)
        Py_XDECREF(args)
        Py_XDECREF(kwargs)
        Py_XDECREF(prim)
        if self.observer is not None:
            self._notify("release", i, name)
        return 0

    cdef int _set_cotangent(self, Py_ssize_t i, object g) except -1:
        cdef Node* node = &self.nodes[i]
        cdef Py_ssize_t nb = cnp.PyArray_NBYTES(<cnp.ndarray>g) if cnp.PyArray_Check(g) else (
            _nbytes(g) if _any_array_types and _is_array_type(type(g)) else 0)
        cdef PyObject* old = node.cotangent
        cdef Py_ssize_t oldnb = node.cot_bytes
        Py_INCREF(g)
        node.cotangent = <PyObject*>g
        node.cot_bytes = nb
        _count_bytes(self, 0, nb - oldnb)
        Py_XDECREF(old)
        return 0

    cdef object _take_cotangent(self, Py_ssize_t i):
        """Remove node i's cotangent from its slot and hand the reference to the caller."""
        cdef Node* node = &self.nodes[i]
        cdef PyObject* c = node.cotangent
        if c is NULL:
            return None
        g = <object>c          # new reference for the caller
        node.cotangent = NULL
        _count_bytes(self, 0, -node.cot_bytes)
        node.cot_bytes = 0
        Py_XDECREF(c)          # the slot's reference
        return g

    cdef object _view_slot(self, Py_ssize_t i, int depth):
        """For node i = A[idx] (a basic-index view, no slot of its own): the region of A's
        cotangent slot that node i's cotangent would be added into, as a writable view, when
        that slot is an engine-owned ndarray nothing else references (or, recursively, the
        region of A's own view slot). None when any condition fails: then node i keeps a
        slot of its own as usual. Adding into this view instead of a slot of node i's own
        is what a hand-written gradient does (dP = dM[:, :n]; dP += ...): no buffer per view,
        and node i's VJP never runs."""
        cdef Node* node = &self.nodes[i]
        cdef Py_ssize_t p
        cdef PyObject* pc
        cdef object base, view
        if (depth > 8 or node.prim is NULL or not (<Primitive>node.prim).basic_view
                or node.nparents != 1 or self.parents[node.parent_start].argnum != 0
                or node.saved_args is NULL or PyTuple_GET_SIZE(<object>node.saved_args) < 2):
            return None
        idx = <object>PyTuple_GET_ITEM(<object>node.saved_args, 1)
        if not _is_basic_index(idx):
            return None
        p = self.parents[node.parent_start].node
        pc = self.nodes[p].cotangent
        if pc is NULL:
            base = self._view_slot(p, depth + 1)
            if base is None:
                return None
        elif _exclusive_array(pc, 1):
            base = <object>pc
        else:
            return None
        view = base[idx]
        if not cnp.PyArray_CheckExact(view) or cnp.PyArray_BASE(<cnp.ndarray>view) is NULL:
            return None
        return view

    cdef bint _add_into_parent_slot(self, Py_ssize_t i, object g) except -1:
        """Node i (slot empty) is a basic-index view: add its cotangent g (dense, or sparse
        within the view) straight into the region of the parent's slot (_view_slot) and
        return True; False (nothing done) when g's dtype or shape differs from the region's,
        or when the view cannot forward."""
        cdef Node* node = &self.nodes[i]
        if node.prim is NULL or not (<Primitive>node.prim).basic_view:
            return False
        if type(g) is SparseCotangent:
            sg = <SparseCotangent>g
            if cnp.PyArray_Check(sg.values) and (<object>sg.values).dtype != sg.dtype:
                return False
            view = self._view_slot(i, 0)
            if (view is None or cnp.PyArray_TYPE(<cnp.ndarray>view) != sg.dtype.num
                    or (<object>view).shape != sg.shape):
                return False
            sg.add_into(view)
            return True
        if not cnp.PyArray_CheckExact(g):
            return False
        view = self._view_slot(i, 0)
        if (view is None
                or cnp.PyArray_TYPE(<cnp.ndarray>view) != cnp.PyArray_TYPE(<cnp.ndarray>g)
                or not cnp.PyArray_SAMESHAPE(<cnp.ndarray>view, <cnp.ndarray>g)):
            return False
        _add_ufunc(view, g, view)
        return True

    cdef int _accumulate(self, Py_ssize_t i, object g) except -1:
        """Add cotangent g into node i's slot: in place only when the slot holds an ndarray
        the engine alone references, that owns its memory, with g's shape and dtype."""
        cdef Node* node = &self.nodes[i]
        cdef PyObject* cur = node.cotangent
        if g is None:
            return 0
        if type(g) is SparseCotangent:
            return self._accumulate_sparse(i, <SparseCotangent>g)
        if cur is NULL:
            if self._add_into_parent_slot(i, g):
                return 0
            return self._set_cotangent(i, g)
        c = <object>cur
        if type(c) is SparseCotangent:
            c = (<SparseCotangent>c).dense()
            if cnp.PyArray_CheckExact(g) and (<object>g).shape == c.shape:
                _np.add(c, g, out=c, casting="unsafe")
                return self._set_cotangent(i, c)
            return self._set_cotangent(i, c + g)
        if (_exclusive_array(cur, 2)             # the slot and `c`
                and cnp.PyArray_CheckExact(g)
                and cnp.PyArray_TYPE(<cnp.ndarray>c) == cnp.PyArray_TYPE(<cnp.ndarray>g)
                and cnp.PyArray_SAMESHAPE(<cnp.ndarray>c, <cnp.ndarray>g)):
            _add_ufunc(c, g, c)               # out positionally: no keyword parsing
            return 0
        total = _add_cotangents(c, g)
        return self._set_cotangent(i, total)

    cdef int _accumulate_sparse(self, Py_ssize_t i, SparseCotangent g) except -1:
        """Add a sparse cotangent: into the slot's array in place when the engine alone holds
        it (O(size of g)), else into a fresh dense copy."""
        cdef PyObject* cur = self.nodes[i].cotangent
        if cur is NULL:
            if self._add_into_parent_slot(i, g):
                return 0
            return self._set_cotangent(i, g)      # stays sparse until it is read
        c = <object>cur
        if type(c) is SparseCotangent:
            dense = (<SparseCotangent>c).dense()
            g.add_into(dense)
            return self._set_cotangent(i, dense)
        if _exclusive_array(cur, 2):              # the slot and `c`
            g.add_into(c)
            return 0
        if type(c) is Box:
            return self._set_cotangent(i, c + g.dense())
        # contiguous: later slot adds are fast
        dense = _np.array(c, dtype=g.dtype, copy=True, order="C")
        g.add_into(dense)
        return self._set_cotangent(i, dense)

    cdef int _box_dropped(self, Py_ssize_t i) except -1:
        if self.released or i >= self.n_nodes:
            return 0
        self.nodes[i].flags &= ~NODE_BOX_ALIVE
        if self.forward:
            # a tangent is read only when a primitive is applied to its Box
            if not (self.nodes[i].flags & NODE_PINNED):
                self._take_cotangent(i)
                # (dropping the tangent ran Python code, which may have released the tape)
                if not self.released and not (self.nodes[i].flags & NODE_LEAF):
                    self._release_saved(i)
            return 0
        if self.nodes[i].nconsumers == 0 and not (self.nodes[i].flags & (NODE_PINNED | NODE_LEAF)):
            self._kill(i)
        return 0

    cdef int _kill(self, Py_ssize_t i) except -1:
        """Node i can never receive a cotangent (no Box, no consumer, not an output): release
        it, then every ancestor left in the same state."""
        cdef list work = [i]
        cdef Py_ssize_t j, k, p
        cdef Node* node
        while work:
            j = work.pop()
            if self.nodes[j].flags & NODE_RELEASED:
                continue
            self._release_saved(j)
            if self.released:       # a __del__ run by the release released the tape
                return 0
            node = &self.nodes[j]
            for k in range(node.nparents):
                p = self.parents[node.parent_start + k].node
                self.nodes[p].nconsumers -= 1
                if (self.nodes[p].nconsumers == 0
                        and not (self.nodes[p].flags & (NODE_BOX_ALIVE | NODE_PINNED | NODE_LEAF))):
                    work.append(p)
            node.nparents = 0
        return 0

    cdef int _mark_reachable(self, Py_ssize_t out) except -1:
        cdef Py_ssize_t i, k
        cdef Node* node
        for i in range(out + 1):
            self.nodes[i].flags &= ~NODE_REACHABLE
        self.nodes[out].flags |= NODE_REACHABLE
        i = out
        while i >= 0:
            node = &self.nodes[i]
            if node.flags & NODE_REACHABLE:
                for k in range(node.nparents):
                    self.nodes[self.parents[node.parent_start + k].node].flags |= NODE_REACHABLE
            i -= 1
        return 0

    cdef int _notify(self, str event, Py_ssize_t i, object name) except -1:
        self.observer(event, i, name, self.saved_bytes, self.cotangent_bytes)
        return 0

    def pin(self, Box box not None):
        """Mark the node of `box` (a value of this tape) as an output a backward pass starts
        from; returns its index."""
        _check_box(self, box, "pin")
        if self.nodes[box._node].flags & NODE_STALE:
            _resolve_stale(self, box, "gradcy (an output)", 0)     # (or raises)
        self.nodes[box._node].flags |= NODE_PINNED
        return box._node

    # ---- the backward sweep -----------------------------------------------------------------
    def backward(self, Py_ssize_t out, g, bint consume=True, leaves=None):
        """Propagate cotangent g from node `out` down the arena.

        Nodes that cannot reach `out` release their saved records first. With consume=True
        every node's saved record is released right after its VJP has run (the tape cannot be
        swept again); otherwise they stay for another sweep. Cotangents are always released
        as soon as they are consumed. Returns the cotangents of the nodes listed in `leaves`
        (None where none arrived)."""
        cdef Py_ssize_t i, k
        cdef Node* node
        if self.released:
            raise EscapedValueError("backward: this differentiation's tape has been released; "
                                    "a VJP function from make_vjp cannot be used after release()")
        if out < 0 or out >= self.n_nodes:
            raise IndexError(f"backward: node {out} is not on this tape")
        if self.sweeping:
            raise RuntimeError("backward: a sweep is already running on this tape")
        if self.forward:
            raise RuntimeError("backward: this is a forward-mode tape")
        if leaves is not None:
            leaves = list(leaves)
            for k in leaves:
                if k < 0 or k >= self.n_nodes:
                    raise IndexError(f"backward: leaf node {k} is not on this tape")
        # while the sweep runs nothing is recorded onto this tape and release() waits for it,
        # so the arena stays where it is whatever Python code the VJPs (and __del__s) run
        self.sweeping = True
        cdef gradcy_sweep_t* sweep = gradcy_sweep_ptr()
        cdef gradcy_sweep_t outer_sweep = sweep[0]
        if outer_sweep.floor < 0:
            sweep.floor = self.trace_id
            sweep.forward_end = self.forward_end
            sweep.next = _next_trace_id
        try:
            self._mark_reachable(out)
            # nodes recorded after the output (aux values) cannot reach it either
            for i in range(out + 1, self.n_nodes):
                self.nodes[i].flags &= ~NODE_REACHABLE
            for i in range(self.n_nodes):
                if not (self.nodes[i].flags & (NODE_REACHABLE | NODE_RELEASED | NODE_LEAF)):
                    self._kill(i)
            self._accumulate(out, g)
            i = out
            while i >= 0:
                node = &self.nodes[i]
                if node.cotangent is NULL or (node.flags & NODE_LEAF):
                    i -= 1
                    continue
                if node.flags & NODE_CONSTANT:
                    self._take_cotangent(i)
                    i -= 1
                    continue
                if node.prim is NULL:
                    raise RuntimeError(f"backward: node {i} received a cotangent after its saved "
                                       f"values were released (the tape was already consumed)")
                gi = self._take_cotangent(i)
                if type(gi) is SparseCotangent:
                    gi = (<SparseCotangent>gi).dense()
                # `gi` is this sweep's only reference: a write's VJP may zero it in place
                self._run_vjp(i, gi, Py_REFCNT(<PyObject*>gi) == 1)
                del gi
                if consume:
                    self._release_saved(i)
                elif self.observer is not None:
                    self._notify("backward", i, (<Primitive>self.nodes[i].prim).name)
                i -= 1
            result = None
            if leaves is not None:
                result = [_densify(self._take_cotangent(k)) for k in leaves]
        finally:
            for i in range(self.n_nodes):
                if self.nodes[i].cotangent is not NULL:
                    self._take_cotangent(i)
            self.sweeping = False
            sweep[0] = outer_sweep
            if self.release_pending:
                self._free_all()
        return result

    cdef _run_vjp(self, Py_ssize_t i, object g, bint g_owned):
        # Recording onto a sweeping tape raises, so the parent pool cannot move while VJPs run;
        # node fields are read before any Python code runs.
        cdef Node* node = &self.nodes[i]
        cdef Primitive prim = <Primitive>node.prim
        cdef tuple args = <tuple>node.saved_args
        if node.flags & NODE_RECOMPUTE:
            args = _materialize(self, args)
        prim.vjp.run(self, prim, node.parent_start, node.nparents, g, g_owned,
                     <object>node.saved_ans, args, <object>node.saved_kwargs)

    # ---- release --------------------------------------------------------------------------
    cdef int _free_all(self) noexcept:
        global _live_tapes, _live_nodes, _saved_bytes, _cotangent_bytes
        cdef Py_ssize_t i
        cdef Node* nodes = self.nodes
        cdef Py_ssize_t n = self.n_nodes
        if self.released:
            return 0
        if self.sweeping:
            # called by a VJP or another thread during the sweep: the sweep ends it
            self.release_pending = True
            return 0
        self.release_pending = False
        self.released = True
        self.nodes = NULL
        self.n_nodes = 0
        _live_tapes -= 1
        _live_nodes -= self.live_nodes
        _saved_bytes -= self.saved_bytes
        _cotangent_bytes -= self.cotangent_bytes
        self.live_nodes = 0
        self.saved_bytes = 0
        self.cotangent_bytes = 0
        # the counters and the flag are final before any reference is dropped, so a __del__
        # that runs below sees a released tape
        for i in range(n):
            Py_XDECREF(nodes[i].prim)
            Py_XDECREF(nodes[i].saved_ans)
            Py_XDECREF(nodes[i].saved_args)
            Py_XDECREF(nodes[i].saved_kwargs)
            Py_XDECREF(nodes[i].cotangent)
        PyMem_Free(nodes)
        PyMem_Free(self.parents)
        self.parents = NULL
        self.n_parents = 0
        self.cap_nodes = 0
        self.cap_parents = 0
        hold_free(&self.holds)
        # arrays freeze_saved made read-only: writable again (their lists go below)
        frozen, self.frozen = self.frozen, None
        if frozen:
            for entry in frozen.values():
                for v in <list>entry:
                    cnp.PyArray_ENABLEFLAGS(<cnp.ndarray>v, cnp.NPY_ARRAY_WRITEABLE)
        # owned buffers (and the hook's bookkeeping about them) go with the tape, even while
        # a Box of this tape is still referenced somewhere
        self.owned = None
        self.computed = None
        self.inputs = None
        return 0

    def release(self):
        """Free every node, saved buffer and cotangent now (called during a backward pass of
        this tape: when the pass ends). Idempotent. Boxes of this tape raise
        EscapedValueError when used in a primitive afterwards."""
        self._free_all()

    # ---- introspection (tests, memory reports) ----------------------------------------------
    def node_info(self, Py_ssize_t i):
        """A dict describing node i (for tests and reports)."""
        if self.released:
            raise EscapedValueError("node_info: this tape has been released")
        if i < 0 or i >= self.n_nodes:
            raise IndexError(f"node_info: node {i} is not on this tape")
        cdef Node* node = &self.nodes[i]
        return {
            "primitive": (<Primitive>node.prim).name if node.prim is not NULL else None,
            "prim": <object>node.prim if node.prim is not NULL else None,
            "parents": [self.parents[node.parent_start + k].node for k in range(node.nparents)],
            "argnums": [self.parents[node.parent_start + k].argnum for k in range(node.nparents)],
            "nconsumers": node.nconsumers,
            "saved": (None if node.saved_args is NULL else
                      (<object>node.saved_ans, <object>node.saved_args, <object>node.saved_kwargs)),
            "saved_bytes": node.saved_bytes,
            "has_cotangent": node.cotangent is not NULL,
            "leaf": bool(node.flags & NODE_LEAF),
            "box_alive": bool(node.flags & NODE_BOX_ALIVE),
            "pinned": bool(node.flags & NODE_PINNED),
            "released": bool(node.flags & NODE_RELEASED),
        }


cdef int _check_node(Tape t, Py_ssize_t i, str caller) except -1:
    if t.released:
        raise EscapedValueError(f"Tape.{caller}: this tape has been released")
    if i < 0 or i >= t.n_nodes:
        raise IndexError(f"Tape.{caller}: node {i} is not on this tape ({t.n_nodes} nodes)")
    return 0


cdef int _check_box(Tape t, Box box, str caller) except -1:
    """box is a value of tape t, which is not released (so box._node is in its arena)."""
    if box._tape is not t:
        raise ValueError(f"Tape.{caller}: the value belongs to another tape")
    if t.released:
        raise EscapedValueError(f"Tape.{caller}: this tape has been released")
    return 0


cdef inline Box _output_box(Primitive prim, Tape top, Py_ssize_t node, object ans, tuple args):
    """The traced output of a recorded call (either mode): its Box, and the view notes a later
    write checks (a view in a buffer the tape owns, in an input's memory, or in an array an
    operation computed: _write._note_view)."""
    box = make_box(ans, top, node)
    if (cnp.PyArray_Check(ans) or type(ans) is Box or type(ans) is list
            or type(ans) is tuple):
        _note_view(top, box, node, ans, args, prim is _write_primitive)
    return box


cdef Box make_box(object value, Tape tape, Py_ssize_t node):
    """The Box of node `node` of `tape`. Invariant of every Box: its tape is released, or its
    node is in the tape's arena (so a check of `released` guards every arena access)."""
    cdef Box b
    cdef PyObject* sub
    if _n_box_subtypes and not cnp.PyArray_CheckExact(value):
        sub = PyDict_GetItem(_box_type_of, type(value))
        b = Box.__new__(Box) if sub is NULL else (<object>sub).__new__(<object>sub)
    else:
        b = Box.__new__(Box)
    b._value = value
    b._tape = tape
    b._node = node
    if node < tape.n_nodes:      # (0 once released: an observer may have released it)
        tape.nodes[node].flags |= NODE_BOX_ALIVE
    return b


# the tape of Boxes not made by make_box and of Boxes left detached by transfer_box
cdef Tape _DETACHED = Tape()
_DETACHED.release()
# the tape of the values computed, during a backward pass, from that differentiation's own
# traced values (_swept_value): released (nothing is recorded onto it), and a call with one of
# its Boxes runs on their values instead of raising as for an escaped value
cdef Tape _SWEPT = Tape()
_SWEPT.release()


def unbroadcast(g, target):
    """The cotangent g reduced to the shape and cast to the dtype of `target` (an array,
    ArrayMeta, traced value or scalar). The common case (already matching) is decided here."""
    if _same_shape_dtype(g, target):
        return g
    return _unbroadcast_slow(g, target)
