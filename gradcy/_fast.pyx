"""grad's fast path (differential_operators.grad calls grad_fast first).

Contract: _fast.pxd. Each call makes its own Tape and releases it (the `finally` of
grad_fast) before it returns, whatever the function did; nothing outlives the call.
"""
from cpython.tuple cimport PyTuple_GET_ITEM, PyTuple_GET_SIZE

import numpy as _np
cimport numpy as cnp

from gradcy._regions cimport _root_key
from gradcy._tape cimport Tape, NODE_CONSTANT
from gradcy._box cimport Box
from gradcy._primitive import push_active, pop_active

cnp.import_array()


# =============================================================================
# grad's fast path: plain float inputs and a real scalar output, run without Python between
# the steps. Anything else (containers, other dtypes, array or complex outputs) goes to the
# general path in differential_operators; once the function has run, `finish` completes it.
# =============================================================================
cdef dict _SCALAR_SEEDS = {float: 1.0, _np.float64: _np.float64(1), _np.float32: _np.float32(1),
                           _np.float16: _np.float16(1)}
SCALAR_SEEDS = _SCALAR_SEEDS     # real scalar output type -> the
                                 # seed 1 of that type (read-only use)


cdef inline bint _fast_leaf(object v):
    """A plain float ndarray or a Python float: gradients of it need no general checks."""
    if cnp.PyArray_CheckExact(v):
        return cnp.PyArray_ISFLOAT(<cnp.ndarray>v)
    return type(v) is float


cdef object _match_fast(object g, object x, object match):
    """The gradient g given x's type, dtype and shape, for the common cases; `match` (the
    general rule) for the rest."""
    cdef cnp.ndarray xa, ga
    if cnp.PyArray_CheckExact(x):
        xa = <cnp.ndarray>x
        if g is None:
            return cnp.PyArray_ZEROS(cnp.PyArray_NDIM(xa), cnp.PyArray_DIMS(xa),
                                     cnp.PyArray_TYPE(xa), 0)
        if cnp.PyArray_CheckExact(g):
            ga = <cnp.ndarray>g
            if (cnp.PyArray_TYPE(ga) == cnp.PyArray_TYPE(xa)
                    and cnp.PyArray_SAMESHAPE(ga, xa)):
                return ga if cnp.PyArray_ISWRITEABLE(ga) else ga.copy()
    elif type(x) is float and type(g) is float:
        return g
    return match(g, x)


cdef bint _in_roots(set roots, object a) except -1:
    """Whether a (an ndarray, or a tuple, list or dict holding some) is in the memory of one of
    the root buffers whose keys are `roots`."""
    if cnp.PyArray_CheckExact(a):
        return _root_key(a) in roots
    if type(a) is tuple or type(a) is list:
        for e in a:
            if _in_roots(roots, e):
                return True
    elif type(a) is dict:
        for e in (<dict>a).values():
            if _in_roots(roots, e):
                return True
    return False


def grad_fast(fun, tuple args not None, dict kwargs not None, argnum, str fname,
              bint with_value, finish, match):
    """grad(fun, argnum)(*args) (with_value: value_and_grad) when every differentiated
    argument is a plain float ndarray or Python float and argnum an int or a tuple of ints;
    NotImplemented (before running anything) otherwise. When the output is not a real scalar
    traced on this call's tape, finish(fname, with_value, tape, out, leaves, leaf_nodes, multi)
    completes the call (its checks and errors are the general path's), as it does a traced
    output that no differentiated argument reaches (a constant: finish warns)."""
    cdef Py_ssize_t nargs = PyTuple_GET_SIZE(args), i, k, n
    cdef bint multi
    cdef tuple idx
    cdef list leaves = [], leaf_nodes, new_args, grads
    cdef Tape tape
    cdef Box b
    if type(argnum) is int:
        multi = False
        idx = (argnum,)
    elif type(argnum) is tuple:
        multi = True
        idx = <tuple>argnum
    else:
        return NotImplemented
    n = PyTuple_GET_SIZE(idx)
    for k in range(n):
        j = <object>PyTuple_GET_ITEM(idx, k)
        if type(j) is not int:
            return NotImplemented
        i = j
        if i < 0 or i >= nargs:
            return NotImplemented
        v = <object>PyTuple_GET_ITEM(args, i)
        if not _fast_leaf(v):
            return NotImplemented
        leaves.append(v)
    if nargs > n or kwargs:
        # an argument beside the differentiated ones in the memory of one of them: the Python
        # path marks that input shared (a write into it raises: NumPy would change both)
        roots = {_root_key(v) for v in leaves if cnp.PyArray_CheckExact(v)}
        if roots:
            for i in range(nargs):
                if i not in idx and _in_roots(roots, <object>PyTuple_GET_ITEM(args, i)):
                    return NotImplemented
            if kwargs and _in_roots(roots, list(kwargs.values())):
                return NotImplemented
    tape = Tape()
    try:
        new_args = list(args)
        leaf_nodes = []
        for k in range(n):
            b = tape.new_leaf(leaves[k])
            new_args[<Py_ssize_t>(<object>PyTuple_GET_ITEM(idx, k))] = b
            leaf_nodes.append(b._node)
        b = None
        push_active(tape)
        try:
            out = fun(*new_args, **kwargs)
        finally:
            pop_active(tape)
        new_args = None
        if (type(out) is not Box or (<Box>out)._tape is not tape
                or (not tape.released    # (the function may have released it: pin raises)
                    and tape.nodes[(<Box>out)._node].flags & NODE_CONSTANT)):
            return finish(fname, with_value, tape, out, leaves, leaf_nodes, multi)
        ans = (<Box>out)._value
        seed = _SCALAR_SEEDS.get(type(ans))
        if seed is None:
            return finish(fname, with_value, tape, out, leaves, leaf_nodes, multi)
        node = tape.pin(out)
        out = None
        cots = tape.backward(node, seed, True, leaf_nodes)
    finally:
        tape.release()
    grads = [_match_fast(cots[k], leaves[k], match) for k in range(n)]
    for k in range(n):
        if not (cnp.PyArray_CheckExact(grads[k]) or type(grads[k]) is float):
            # a lazy (Dask) gradient of a plain input, whose output the forward pass made a
            # NumPy scalar (a function Dask computes, such as sort): computed, as the general
            # path computes it
            from gradcy.backends import compute_pending
            grads = compute_pending(grads, leaves)
            break
    if multi:
        g = tuple(grads)
    else:
        g = grads[0]
    return (ans, g) if with_value else g
