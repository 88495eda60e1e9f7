"""Record-time fusion: the softmax a user writes out,

    e = exp(z)
    w = e / sum(e, axis=a, keepdims=True)         # or sum(e) for the whole array

is recorded as one softmax node when the division is recorded: its VJP reads only w (as a
hand-written softmax gradient does, w * (g - sum(g * w, a))) and its parent is z's node. The
exp and sum nodes then have no consumer left: they die with their Boxes, and exp's output is
released during the forward pass instead of being held until the backward pass. When z is
x - max(x, axis=a, keepdims=True) (the usual shift, which cancels in w), the parent is x's node,
so the shift's nodes die too. Every other division (and any part of the pattern that does not
hold exactly) is recorded as it is; so is every division while a rule of the user's own is
registered on exp, sum or divide (on subtract or max: the shift is kept), which the fused node
would bypass.

Contract: _fuse.pxd.
"""
from cpython.dict cimport PyDict_GetItem, PyDict_Size
from cpython.object cimport PyObject, PyObject_RichCompareBool, Py_EQ
from cpython.tuple cimport PyTuple_GET_ITEM, PyTuple_GET_SIZE
from libc.stdint cimport int32_t

cimport numpy as cnp

from gradcy._tape cimport Tape, Node, ParentRef, Primitive, NODE_RELEASED, NODE_STALE
from gradcy._saved cimport _meta_of
from gradcy._rules cimport ArgnumVJP

cnp.import_array()


cdef bint _fusion_on = True
cdef Primitive _exp = None
cdef Primitive _sum = None
cdef Primitive _max = None
cdef Primitive _subtract = None
cdef Primitive _divide = None
cdef Primitive _softmax = None
# the five primitives' reverse-mode rules when they were registered: (VJP, copy of its dict of
# rules or None), in the order exp, sum, divide, subtract, max
cdef tuple _stock = ()


cdef tuple _rules_of(Primitive p):
    return (p.vjp, dict((<ArgnumVJP>p.vjp).rules) if type(p.vjp) is ArgnumVJP else None)


cdef bint _stock_rules(Primitive p, tuple stock) noexcept:
    """p's reverse-mode rules are the ones it had when the fusion was registered (identity of
    each rule: runs no Python code)."""
    cdef dict now, then
    cdef PyObject* r
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


def register_softmax(Primitive exp not None, Primitive sum not None, Primitive max not None,
                     Primitive subtract not None, Primitive divide not None,
                     Primitive softmax not None):
    """Record divide(exp(z), sum(exp(z), axis, keepdims=True)) as softmax(z, axis) (and
    z = x - max(x, axis, keepdims=True) as softmax(x, axis)). softmax's VJP reads its output
    and its saved args (ArrayMeta of z, axis). Their reverse-mode rules, as they are now, are
    the ones the fused node stands for: a division records unfused while one of the user's own
    replaces them."""
    global _exp, _sum, _max, _subtract, _divide, _softmax, _stock
    _exp, _sum, _max, _subtract, _divide, _softmax = exp, sum, max, subtract, divide, softmax
    _stock = tuple([_rules_of(p) for p in (exp, sum, divide, subtract, max)])
    divide.fuses = True


def set_fusion(bint on):
    """Whether new records fuse (the softmax pattern); returns the old setting."""
    global _fusion_on
    old = _fusion_on
    _fusion_on = on
    return old


cdef inline bint _usable(Node* n, Primitive prim, int32_t nparents) noexcept:
    """Node n was recorded by prim with nparents traced arguments, and its record is intact."""
    return (n.prim is <PyObject*>prim and n.nparents == nparents and n.saved_args is not NULL
            and not (n.flags & (NODE_RELEASED | NODE_STALE)))


cdef object _NOT_A_REDUCTION = object()


cdef object _reduction_axis(Node* n):
    """The axis of node n's call if it was f(x), f(x, axis) or with the keywords axis= and
    keepdims= only, with keepdims=True or no axis (then the result broadcasts against x as
    keepdims would); _NOT_A_REDUCTION for any other call."""
    cdef tuple args = <tuple>n.saved_args
    cdef Py_ssize_t na = PyTuple_GET_SIZE(args)
    cdef object kw, ax = None, keep = False
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
    # thread can move the arena while softmax_record holds pointers into it
    if type(ax) is tuple:
        for a in <tuple>ax:
            if type(a) is not int:
                return _NOT_A_REDUCTION
    elif not (ax is None or type(ax) is int):
        return _NOT_A_REDUCTION
    if not (keep is True or (keep is False and ax is None)):
        return _NOT_A_REDUCTION
    return ax


cdef object softmax_record(Tape top, ParentRef* refs, int32_t nrefs, tuple uargs,
                           object kwargs, object ans):
    cdef Node* e_node
    cdef Node* s_node
    cdef Node* z_node
    cdef Node* m_node
    cdef ParentRef parent
    cdef object axis
    cdef object e
    if not _fusion_on or _softmax is None or kwargs is not None or nrefs != 2:
        return None
    if refs[0].argnum != 0 or refs[1].argnum != 1 or PyTuple_GET_SIZE(uargs) != 2:
        return None
    # the values: real floating arrays of one shape and dtype (w = e / s has e's shape)
    e = <object>PyTuple_GET_ITEM(uargs, 0)
    if not (cnp.PyArray_CheckExact(ans) and cnp.PyArray_CheckExact(e)):
        return None
    if not (cnp.PyArray_ISFLOAT(<cnp.ndarray>ans)
            and cnp.PyArray_TYPE(<cnp.ndarray>ans) == cnp.PyArray_TYPE(<cnp.ndarray>e)
            and cnp.PyArray_SAMESHAPE(<cnp.ndarray>ans, <cnp.ndarray>e)):
        return None
    # the nodes: e = exp(z), s = sum(e, axis, keepdims=True)
    e_node = &top.nodes[refs[0].node]
    s_node = &top.nodes[refs[1].node]
    if not (_usable(e_node, _exp, 1) and _usable(s_node, _sum, 1)):
        return None
    if e_node.saved_kwargs is not NULL and <object>e_node.saved_kwargs is not None:
        return None
    if (top.parents[e_node.parent_start].argnum != 0
            or top.parents[s_node.parent_start].node != refs[0].node
            or top.parents[s_node.parent_start].argnum != 0):
        return None
    axis = _reduction_axis(s_node)
    if axis is _NOT_A_REDUCTION:
        return None
    if not (_stock_rules(_exp, <tuple>_stock[0]) and _stock_rules(_sum, <tuple>_stock[1])
            and _stock_rules(_divide, <tuple>_stock[2])):
        return None
    parent = top.parents[e_node.parent_start]           # z
    # z = x - max(x, axis, keepdims=True) over the same axis: the shift cancels in w
    z_node = &top.nodes[parent.node]
    if (_usable(z_node, _subtract, 2)
            and (z_node.saved_kwargs is NULL or <object>z_node.saved_kwargs is None)
            and top.parents[z_node.parent_start].argnum == 0
            and top.parents[z_node.parent_start + 1].argnum == 1):
        m_node = &top.nodes[top.parents[z_node.parent_start + 1].node]
        if (_usable(m_node, _max, 1) and _stock_rules(_subtract, <tuple>_stock[3])
                and _stock_rules(_max, <tuple>_stock[4])
                and top.parents[m_node.parent_start].node == top.parents[z_node.parent_start].node
                and PyObject_RichCompareBool(_reduction_axis(m_node), axis, Py_EQ)):
            parent = top.parents[z_node.parent_start]   # x
    refs[0].node = parent.node
    refs[0].argnum = 0
    return (_softmax, (_meta_of(e), axis))
