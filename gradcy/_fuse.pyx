"""Record-time rewrites: idioms a user writes out with NumPy operations, recorded as one node.

One table (_TABLE below; the idioms, their written forms and fused rules are listed in
gradcy.numpy.fusion.IDIOMS) maps the last operation of each idiom to its matcher. When that
operation is recorded, the matcher walks back over the operands' nodes; if every node of the
idiom is there exactly as written (same axes, the constants 1 and -2, no keywords beyond
axis=/keepdims= on the reductions, records intact, real floating arrays), the operation is
recorded as one node of the fused primitive instead, whose rule saves what a hand-written
gradient saves and whose parent is the idiom's input:

    softmax       e = exp(z); e / sum(e, a, keepdims=True)            saves w
    logsumexp     m = max(x, a, keepdims=True)
                  log(sum(exp(x - m), a, keepdims=True)) + m          saves exp(x - m), its sum
    log_softmax   x - logsumexp(x) as above (recorded fused), or
                  z - log(sum(exp(z), a, keepdims=True))              saves the output
    sigmoid       1 / (1 + exp(-x))                                   saves the output
    softplus      log(1 + exp(x)), log1p(exp(x))                      saves exp(x)
    tanh          (exp(x) - exp(-x)) / (exp(x) + exp(-x)),
                  (1 - exp(-2 * x)) / (1 + exp(-2 * x))               saves the output

(z = x - max(x, a, keepdims=True), the usual shift, cancels in softmax and log_softmax: the
parent is then x.) The inner nodes have no consumer left: they die with their Boxes, and what
they saved is released during the forward pass. An operand used elsewhere keeps its node and
its path (its other consumers). Anything that does not match exactly is recorded as written;
so is every idiom while a rule of the user's own is registered on one of its primitives
(which the fused node would bypass).

Contract: _fuse.pxd.
"""
from cpython.dict cimport PyDict_GetItem, PyDict_Size
from cpython.object cimport PyObject, PyObject_RichCompareBool, Py_EQ
from cpython.tuple cimport PyTuple_GET_ITEM, PyTuple_GET_SIZE
from libc.stdint cimport int32_t

cimport numpy as cnp

from gradcy._tape cimport Tape, Node, ParentRef, NODE_RELEASED, NODE_STALE
from gradcy._primitive cimport Primitive
from gradcy._saved cimport ArrayMeta, _meta_of
from gradcy._rules cimport ArgnumVJP
from gradcy._box cimport Box

cnp.import_array()


ctypedef object (*Matcher)(Primitive, Tape, ParentRef*, int32_t, tuple, object)

cdef struct Entry:
    PyObject* terminal      # the idiom's last operation (borrowed: _registered owns it)
    Matcher match

cdef enum:
    MAX_ENTRIES = 8

cdef bint _fusion_on = True
cdef Entry _TABLE[MAX_ENTRIES]
cdef int _n_entries = 0
# every Primitive registered (keeps _TABLE's borrowed pointers alive)
cdef dict _registered = {}
# the primitives idioms are made of and the fused ones
cdef Primitive _exp = None, _sum = None, _max = None, _subtract = None, _divide = None
cdef Primitive _add = None, _log = None, _log1p = None, _negative = None, _multiply = None
cdef Primitive _softmax = None, _logsumexp = None, _log_softmax = None, _sigmoid = None
cdef Primitive _softplus = None, _tanh = None
# Primitive -> (its VJP, copy of its dict of rules or None) when the idioms were registered
cdef dict _stock = {}


cdef tuple _rules_of(Primitive p):
    return (p.vjp, dict((<ArgnumVJP>p.vjp).rules) if type(p.vjp) is ArgnumVJP else None)


cdef bint _stock_rules(Primitive p) noexcept:
    """p's reverse-mode rules are the ones it had when the idioms were registered (identity of
    each rule: runs no Python code)."""
    cdef PyObject* s = PyDict_GetItem(_stock, p)
    cdef dict now, then
    cdef PyObject* r
    if s is NULL:
        return False
    stock = <tuple>s
    if <object>p.vjp is not <object>PyTuple_GET_ITEM(stock, 0):
        return False
    if <object>PyTuple_GET_ITEM(stock, 1) is None:
        return True
    now = (<ArgnumVJP>p.vjp).rules
    then = <dict>PyTuple_GET_ITEM(stock, 1)
    if PyDict_Size(now) != PyDict_Size(then):
        return False
    for k, rule in then.items():
        r = PyDict_GetItem(now, k)
        if r is NULL or r is not <PyObject*>rule:
            return False
    return True


cdef int _add_entry(Primitive terminal, Matcher match) except -1:
    global _n_entries
    if _n_entries >= MAX_ENTRIES:
        raise RuntimeError("register_idioms: the idiom table is full")
    _TABLE[_n_entries].terminal = <PyObject*>terminal
    _TABLE[_n_entries].match = match
    _n_entries += 1
    terminal.fuses = True
    return 0


def register_idioms(dict prims not None):
    """Install the idiom table. prims maps the names exp, sum, max, subtract, divide, add, log,
    log1p, negative, multiply (the operations idioms are made of) and softmax, logsumexp,
    log_softmax, sigmoid, softplus, tanh (the fused primitives) to Primitives. The reverse-mode
    rules of the operations, as they are now, are the ones the fused nodes stand for: an idiom
    records unfused while one of the user's own replaces one of them."""
    global _exp, _sum, _max, _subtract, _divide, _add, _log, _log1p, _negative, _multiply
    global _softmax, _logsumexp, _log_softmax, _sigmoid, _softplus, _tanh
    global _n_entries, _registered, _stock
    cdef Primitive p
    for name, p in prims.items():       # (a TypeError for a value that is not a Primitive)
        if p is None:
            raise TypeError(f"register_idioms: {name} is None")
    for old in _registered.values():
        (<Primitive>old).fuses = False
    _n_entries = 0
    _registered = dict(prims)
    _exp, _sum, _max = prims["exp"], prims["sum"], prims["max"]
    _subtract, _divide, _add = prims["subtract"], prims["divide"], prims["add"]
    _log, _log1p, _negative = prims["log"], prims["log1p"], prims["negative"]
    _multiply = prims["multiply"]
    _softmax, _logsumexp, _log_softmax = prims["softmax"], prims["logsumexp"], prims["log_softmax"]
    _sigmoid, _softplus, _tanh = prims["sigmoid"], prims["softplus"], prims["tanh"]
    _stock = {p: _rules_of(p) for p in (_exp, _sum, _max, _subtract, _divide, _add, _log, _log1p,
                                        _negative, _multiply, _softmax, _logsumexp,
                                        _log_softmax, _sigmoid, _softplus, _tanh)}
    # the table: last operation -> matcher (tried in this order)
    _add_entry(_divide, _match_softmax)
    _add_entry(_divide, _match_sigmoid)
    _add_entry(_divide, _match_tanh)
    _add_entry(_add, _match_logsumexp)
    _add_entry(_subtract, _match_log_softmax)
    _add_entry(_log, _match_softplus)
    _add_entry(_log1p, _match_softplus)


def set_fusion(bint on):
    """Whether new records fuse (the idiom table); returns the old setting."""
    global _fusion_on
    old = _fusion_on
    _fusion_on = on
    return old


cdef object fuse_record(Primitive prim, Tape top, ParentRef* refs, int32_t nrefs, tuple uargs,
                        object kwargs, object ans):
    cdef int i
    cdef object r, val = ans
    cdef tuple margs = uargs
    cdef ParentRef first
    if not _fusion_on or kwargs is not None or nrefs < 1:
        return None
    first = refs[0]
    if type(ans) is Box:
        # a derivative taken under a const_graph recording (gradcy.jit(grad(f))): the operands
        # and the output are the recording's Boxes. The matchers read the values; the fused
        # node saves the Boxes, so that its rule's operations are recorded and replayed
        if (<Box>ans)._tape.recorder is None:
            return None
        val = (<Box>ans)._value
        margs = _values_on((<Box>ans)._tape, uargs)
    # the output: a real floating array (NumPy's 0-d results are scalars, left as they are)
    if not cnp.PyArray_CheckExact(val) or not cnp.PyArray_ISFLOAT(<cnp.ndarray>val):
        return None
    for i in range(_n_entries):
        if _TABLE[i].terminal is <PyObject*>prim:
            r = _TABLE[i].match(prim, top, refs, nrefs, margs, val)
            if r is not None:
                if val is not ans:
                    r = _boxed(r, val, ans)
                    if r is None:
                        refs[0] = first     # (as _fused found it)
                        return None
                return r
    return None


cdef tuple _values_on(Tape rec, tuple uargs):
    """uargs with the Boxes of the recording tape rec replaced by their values."""
    return tuple([(<Box>a)._value if type(a) is Box and (<Box>a)._tape is rec else a
                  for a in uargs])


cdef object _boxed(tuple r, object val, object ans):
    """A matcher's (fused primitive, saved output, saved args) for the value val of the
    recording's Box ans, with ans saved in val's place; None if the saved args hold an array
    (a value the matcher read, which a replay would see as a constant)."""
    for v in <tuple>r[2]:
        if cnp.PyArray_Check(v):
            return None
    return (r[0], ans if r[1] is val else r[1], r[2])


# =============================================================================
# Reading the arena (by index: nothing here runs Python code that could move it)
# =============================================================================
cdef inline Py_ssize_t _parent(Tape top, Py_ssize_t i, int k) noexcept:
    return top.parents[top.nodes[i].parent_start + k].node


cdef inline int32_t _argnum(Tape top, Py_ssize_t i, int k) noexcept:
    return top.parents[top.nodes[i].parent_start + k].argnum


cdef inline object _saved_arg(Tape top, Py_ssize_t i, Py_ssize_t k):
    return <object>PyTuple_GET_ITEM(<tuple>top.nodes[i].saved_args, k)


cdef bint _is(Tape top, Py_ssize_t i, Primitive prim, int32_t nparents, Py_ssize_t nargs,
              bint plain) noexcept:
    """Node i was recorded by prim with nparents traced arguments among nargs positional ones
    (plain: and no keyword argument), and its record is intact."""
    cdef Node* n = &top.nodes[i]
    if not (n.prim is <PyObject*>prim and n.nparents == nparents and n.saved_args is not NULL
            and not (n.flags & (NODE_RELEASED | NODE_STALE))
            and PyTuple_GET_SIZE(<tuple>n.saved_args) == nargs):
        return False
    return not plain or n.saved_kwargs is NULL or <object>n.saved_kwargs is None


cdef inline bint _intact(Tape top, Py_ssize_t i) noexcept:
    """Node i's saved record is still there (read right before taking a value from it)."""
    return (top.nodes[i].saved_ans is not NULL and top.nodes[i].saved_args is not NULL
            and not (top.nodes[i].flags & NODE_RELEASED))


cdef Py_ssize_t _unary(Tape top, Py_ssize_t i, Primitive prim) noexcept:
    """Node i is prim(p) (one argument, no keywords): p's index; -1 otherwise."""
    if _is(top, i, prim, 1, 1, True):
        return _parent(top, i, 0)
    return -1


cdef Py_ssize_t _exp_of(Tape top, Py_ssize_t e, object ans) noexcept:
    """Node e is exp(z) (no keywords) of an array z of ans's dtype (its record holds z's
    ArrayMeta; an integer z is left alone): z's index; -1 otherwise."""
    cdef object m
    if not _is(top, e, _exp, 1, 1, True):
        return -1
    m = _saved_arg(top, e, 0)
    if (type(m) is not ArrayMeta or not cnp.PyArray_DescrCheck((<ArrayMeta>m).dtype)
            or (<cnp.dtype>(<ArrayMeta>m).dtype).type_num != cnp.PyArray_TYPE(<cnp.ndarray>ans)):
        return -1
    return _parent(top, e, 0)


cdef bint _is_number(object v, double value) noexcept:
    """v is the Python number value (an exact int or float: NumPy casts it to the array's
    dtype); comparing them runs no Python code."""
    if type(v) is float:
        return <double>v == value
    if type(v) is int:
        return -1e15 < value < 1e15 and v == <long long>value
    return False


cdef Py_ssize_t _with_number(Tape top, Py_ssize_t i, Primitive prim, double value) noexcept:
    """Node i is prim(value, p) or prim(p, value) (value a Python number, no keywords): p's
    index; -1 otherwise."""
    cdef int32_t a
    if not _is(top, i, prim, 1, 2, True):
        return -1
    a = _argnum(top, i, 0)
    if not _is_number(_saved_arg(top, i, 1 - a), value):
        return -1
    return _parent(top, i, 0)


cdef Py_ssize_t _binary(Tape top, Py_ssize_t i, Primitive prim, Py_ssize_t* second) noexcept:
    """Node i is prim(p, q), both traced, no keywords: p's index (q's in second); -1
    otherwise."""
    if not _is(top, i, prim, 2, 2, True) or _argnum(top, i, 0) != 0 or _argnum(top, i, 1) != 1:
        return -1
    second[0] = _parent(top, i, 1)
    return _parent(top, i, 0)


cdef object _NOT_A_REDUCTION = object()


cdef object _reduction_axis(Tape top, Py_ssize_t i, Primitive prim, bint keepdims_only):
    """The axis of node i's call if it was prim(x), prim(x, axis) or with the keywords axis= and
    keepdims= only, with keepdims=True or (unless keepdims_only) no axis (the result then
    broadcasts against x as keepdims would); _NOT_A_REDUCTION for any other call."""
    cdef Node* n = &top.nodes[i]
    cdef tuple args
    cdef Py_ssize_t na
    cdef object kw, ax = None, keep = False
    if not (n.prim is <PyObject*>prim and n.nparents == 1 and n.saved_args is not NULL
            and not (n.flags & (NODE_RELEASED | NODE_STALE))
            and top.parents[n.parent_start].argnum == 0):
        return _NOT_A_REDUCTION
    args = <tuple>n.saved_args
    na = PyTuple_GET_SIZE(args)
    if na > 2:
        return _NOT_A_REDUCTION
    if na == 2:
        ax = <object>PyTuple_GET_ITEM(args, 1)
    kw = <object>n.saved_kwargs if n.saved_kwargs is not NULL else None
    if kw is not None:
        if type(kw) is not dict:
            return _NOT_A_REDUCTION
        for key, value in (<dict>kw).items():
            if type(key) is not str:
                return _NOT_A_REDUCTION
            if key == "axis" and na == 1:
                ax = value
            elif key == "keepdims":
                keep = value
            else:
                return _NOT_A_REDUCTION
    # only exact ints, tuples of them and None: comparing them runs no Python code, so no other
    # thread can move the arena while a matcher reads it
    if type(ax) is tuple:
        for a in <tuple>ax:
            if type(a) is not int:
                return _NOT_A_REDUCTION
    elif not (ax is None or type(ax) is int):
        return _NOT_A_REDUCTION
    if not (keep is True or (keep is False and ax is None and not keepdims_only)):
        return _NOT_A_REDUCTION
    return ax


cdef Py_ssize_t _unshift(Tape top, Py_ssize_t z, object axis):
    """z is x - max(x, axis, keepdims=True) (or max(x) for axis None): x's index, which the
    shift cancels in softmax and log_softmax; z otherwise (also while a rule of the user's own
    is registered on subtract or max)."""
    cdef Py_ssize_t m = -1
    cdef Py_ssize_t x = _binary(top, z, _subtract, &m)
    if x < 0:
        return z
    # (the axis first: it checks that m is a max node, whose parent is then read)
    if not PyObject_RichCompareBool(_reduction_axis(top, m, _max, False), axis, Py_EQ):
        return z
    if _parent(top, m, 0) != x:
        return z
    if not (_stock_rules(_subtract) and _stock_rules(_max)):
        return z
    return x


cdef bint _like(object v, object ans) noexcept:
    """v is an exact ndarray of ans's shape and dtype."""
    return (cnp.PyArray_CheckExact(v)
            and cnp.PyArray_TYPE(<cnp.ndarray>v) == cnp.PyArray_TYPE(<cnp.ndarray>ans)
            and cnp.PyArray_SAMESHAPE(<cnp.ndarray>v, <cnp.ndarray>ans))


cdef object _fused(ParentRef* refs, Py_ssize_t parent, Primitive prim, object ans_s,
                   tuple sargs):
    if not _stock_rules(prim):
        # a rule of the user's own on the fused primitive itself (fusion.sigmoid, ...) is for
        # their calls of it: the written-out form keeps the rules of the operations written
        return None
    refs[0].node = parent
    refs[0].argnum = 0
    return (prim, ans_s, sargs)


# =============================================================================
# The matchers: (prim, top, refs, nrefs, uargs, ans) -> (fused primitive, saved output,
# saved args) or None
# =============================================================================
cdef object _match_softmax(Primitive prim, Tape top, ParentRef* refs, int32_t nrefs,
                           tuple uargs, object ans):
    """divide(e, s): e = exp(z), s = sum(e, axis, keepdims=True) -> softmax(z or x, axis)."""
    cdef Py_ssize_t e, s, z
    if (nrefs != 2 or refs[0].argnum != 0 or refs[1].argnum != 1
            or PyTuple_GET_SIZE(uargs) != 2):
        return None
    e, s = refs[0].node, refs[1].node
    z = _exp_of(top, e, ans)
    axis = _reduction_axis(top, s, _sum, False)
    if z < 0 or axis is _NOT_A_REDUCTION or _parent(top, s, 0) != e:
        return None
    if not _like(<object>PyTuple_GET_ITEM(uargs, 0), ans):
        return None
    if not (_stock_rules(_exp) and _stock_rules(_sum) and _stock_rules(_divide)):
        return None
    return _fused(refs, _unshift(top, z, axis), _softmax, ans, (_meta_of(ans), axis))


cdef object _log_sum_exp(Tape top, Py_ssize_t lg, bint keepdims_only, object ans,
                         Py_ssize_t* e_out, Py_ssize_t* z_out):
    """Node lg is log(sum(exp(z), axis, ...)) (the sum's call as _reduction_axis reads it, z of
    ans's dtype as _exp_of reads it): the axis, with exp's index in e_out and z's in z_out;
    _NOT_A_REDUCTION otherwise. The one walk of logsumexp's and log-softmax's matchers."""
    cdef Py_ssize_t s = _unary(top, lg, _log), e, z
    if s < 0:
        return _NOT_A_REDUCTION
    axis = _reduction_axis(top, s, _sum, keepdims_only)     # (its parent is read)
    if axis is _NOT_A_REDUCTION:
        return axis
    e = _parent(top, s, 0)
    z = _exp_of(top, e, ans)
    if z < 0:
        return _NOT_A_REDUCTION
    e_out[0] = e
    z_out[0] = z
    return axis


cdef object _match_logsumexp(Primitive prim, Tape top, ParentRef* refs, int32_t nrefs,
                             tuple uargs, object ans):
    """add(log(s), m) or add(m, log(s)): s = sum(exp(x - m), axis, keepdims=True),
    m = max(x, axis, keepdims=True) -> logsumexp(x, axis) saving exp(x - m) and s."""
    cdef Py_ssize_t lg, m, e, z, x, m2 = -1
    cdef int k
    if nrefs != 2 or PyTuple_GET_SIZE(uargs) != 2:
        return None
    if top.nodes[refs[0].node].prim is <PyObject*>_log:
        k = 0
    elif top.nodes[refs[1].node].prim is <PyObject*>_log:
        k = 1
    else:
        return None
    lg, m = refs[k].node, refs[1 - k].node
    axis = _log_sum_exp(top, lg, True, ans, &e, &z)
    if axis is _NOT_A_REDUCTION:
        return None
    x = _binary(top, z, _subtract, &m2)
    if x < 0 or m2 != m or not PyObject_RichCompareBool(
            _reduction_axis(top, m, _max, True), axis, Py_EQ):
        return None
    if _parent(top, m, 0) != x:
        return None
    # (the axes' comparison may have run a collection: the records are checked again)
    if not (_intact(top, e) and _intact(top, lg)):
        return None
    ev = <object>top.nodes[e].saved_ans         # exp's output (its rule's record)
    sv = _saved_arg(top, lg, 0)                 # the sum (log's record)
    if not (cnp.PyArray_CheckExact(ev) and _like(sv, ans)
            and cnp.PyArray_TYPE(<cnp.ndarray>ev) == cnp.PyArray_TYPE(<cnp.ndarray>ans)):
        return None
    if not (_stock_rules(_add) and _stock_rules(_log) and _stock_rules(_sum)
            and _stock_rules(_exp) and _stock_rules(_subtract) and _stock_rules(_max)):
        return None
    return _fused(refs, x, _logsumexp, _meta_of(ans), (_meta_of(ev), axis, ev, sv))


cdef object _match_log_softmax(Primitive prim, Tape top, ParentRef* refs, int32_t nrefs,
                               tuple uargs, object ans):
    """subtract(x, l): l = logsumexp(x, axis) (a fused record) -> log_softmax(x, axis);
    l = log(sum(exp(z), axis, keepdims=True)) with z the first operand -> log_softmax(z or
    x, axis)."""
    cdef Py_ssize_t z, lg, e, z2, parent
    if (nrefs != 2 or refs[0].argnum != 0 or refs[1].argnum != 1
            or PyTuple_GET_SIZE(uargs) != 2):
        return None
    z, lg = refs[0].node, refs[1].node
    if not _like(<object>PyTuple_GET_ITEM(uargs, 0), ans):
        return None
    if top.nodes[lg].prim is <PyObject*>_logsumexp:
        if not _is(top, lg, _logsumexp, 1, 4, True) or _parent(top, lg, 0) != z:
            return None
        axis = _saved_arg(top, lg, 1)
        if not (_stock_rules(_subtract) and _stock_rules(_logsumexp)):
            return None
        return _fused(refs, z, _log_softmax, ans, (_meta_of(ans), axis))
    axis = _log_sum_exp(top, lg, False, ans, &e, &z2)
    if axis is _NOT_A_REDUCTION or z2 != z:
        return None
    if not (_stock_rules(_subtract) and _stock_rules(_log) and _stock_rules(_sum)
            and _stock_rules(_exp)):
        return None
    parent = _unshift(top, z, axis)
    return _fused(refs, parent, _log_softmax, ans, (_meta_of(ans), axis))


cdef object _match_sigmoid(Primitive prim, Tape top, ParentRef* refs, int32_t nrefs,
                           tuple uargs, object ans):
    """divide(1, d): d = 1 + exp(-x) (either order) -> sigmoid(x)."""
    cdef Py_ssize_t e, n, x
    if nrefs != 1 or refs[0].argnum != 1 or PyTuple_GET_SIZE(uargs) != 2:
        return None
    if not _is_number(<object>PyTuple_GET_ITEM(uargs, 0), 1.0):
        return None
    e = _with_number(top, refs[0].node, _add, 1.0)
    if e < 0:
        return None
    n = _exp_of(top, e, ans)
    if n < 0:
        return None
    x = _unary(top, n, _negative)
    if x < 0 or not _like(<object>top.nodes[e].saved_ans, ans):
        return None
    if not (_stock_rules(_divide) and _stock_rules(_add) and _stock_rules(_exp)
            and _stock_rules(_negative)):
        return None
    return _fused(refs, x, _sigmoid, ans, (_meta_of(ans),))


cdef object _match_softplus(Primitive prim, Tape top, ParentRef* refs, int32_t nrefs,
                            tuple uargs, object ans):
    """log(d): d = 1 + exp(x) (either order); log1p(exp(x)) -> softplus(x)."""
    cdef Py_ssize_t e, x
    if nrefs != 1 or refs[0].argnum != 0 or PyTuple_GET_SIZE(uargs) != 1:
        return None
    e = refs[0].node
    if prim is _log:
        e = _with_number(top, e, _add, 1.0)
        if e < 0:
            return None
    x = _exp_of(top, e, ans)
    if x < 0 or not _intact(top, e):
        return None
    ev = <object>top.nodes[e].saved_ans         # exp's output (its rule's record)
    if not _like(ev, ans):
        return None
    if not (_stock_rules(prim) and _stock_rules(_exp)
            and (prim is _log1p or _stock_rules(_add))):
        return None
    return _fused(refs, x, _softplus, _meta_of(ans), (_meta_of(ans), ev))


cdef Py_ssize_t _exp_pair(Tape top, Py_ssize_t a, Py_ssize_t b, object ans) noexcept:
    """a = exp(x) and b = exp(-x): x's index; -1 otherwise."""
    cdef Py_ssize_t x = _exp_of(top, a, ans)
    cdef Py_ssize_t n = _exp_of(top, b, ans)
    if x < 0 or n < 0 or _unary(top, n, _negative) != x:
        return -1
    return x


cdef Py_ssize_t _exp_minus_2x(Tape top, Py_ssize_t e, object ans) noexcept:
    """e = exp(-2 * x) (either order): x's index; -1 otherwise."""
    cdef Py_ssize_t t = _exp_of(top, e, ans)
    if t < 0:
        return -1
    return _with_number(top, t, _multiply, -2.0)


cdef object _match_tanh(Primitive prim, Tape top, ParentRef* refs, int32_t nrefs,
                        tuple uargs, object ans):
    """divide(exp(x) - exp(-x), exp(x) + exp(-x)) (the sum in either order) or
    divide(1 - exp(-2 * x), 1 + exp(-2 * x)) -> tanh(x)."""
    cdef Py_ssize_t num, den, a, b = -1, c, d = -1, x, x2
    cdef bint by_two = False
    if (nrefs != 2 or refs[0].argnum != 0 or refs[1].argnum != 1
            or PyTuple_GET_SIZE(uargs) != 2):
        return None
    num, den = refs[0].node, refs[1].node
    if not (_like(<object>PyTuple_GET_ITEM(uargs, 0), ans)
            and _like(<object>PyTuple_GET_ITEM(uargs, 1), ans)):
        return None
    a = _binary(top, num, _subtract, &b)
    if a >= 0:                                  # (exp(x) - exp(-x)) / (exp(x) + exp(-x))
        x = _exp_pair(top, a, b, ans)
        c = _binary(top, den, _add, &d)
        if x < 0 or c < 0:
            return None
        x2 = _exp_pair(top, c, d, ans)
        if x2 < 0:
            x2 = _exp_pair(top, d, c, ans)
    else:                                       # (1 - exp(-2x)) / (1 + exp(-2x))
        if not (_is(top, num, _subtract, 1, 2, True) and _argnum(top, num, 0) == 1
                and _is_number(_saved_arg(top, num, 0), 1.0)):
            return None
        x = _exp_minus_2x(top, _parent(top, num, 0), ans)
        c = _with_number(top, den, _add, 1.0)
        if x < 0 or c < 0:
            return None
        x2 = _exp_minus_2x(top, c, ans)
        by_two = True
    if x2 != x:
        return None
    if not (_stock_rules(_divide) and _stock_rules(_subtract) and _stock_rules(_add)
            and _stock_rules(_exp)
            and (_stock_rules(_multiply) if by_two else _stock_rules(_negative))):
        return None
    return _fused(refs, x, _tanh, ans, (_meta_of(ans),))
