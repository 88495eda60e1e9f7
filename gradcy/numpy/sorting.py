"""VJPs and JVPs of sort and partition (a permutation of the input, recovered from it), and the
set operations (unique and unique_*, union1d, intersect1d, setdiff1d, setxor1d).

The set operations select input values: front ends gather their value outputs from the inputs
with take, so the gradient goes to the selected positions. Where a value occurs more than once
among the inputs the output takes it from its first occurrence (the index
unique(..., return_index=True) reports; for intersect1d, the first in ar1): a definite one-sided
choice, exact wherever values are distinct. Their integer outputs (indices, inverse, counts) are
constants.
"""

import numpy as _onp

from .._core import ArrayMeta, Box, meta_of, register_numpy_override
from ..registry import defjvp, defvjp_direct
from . import _wrap as anp
from ._util import _binder, _intp, _norm_axis, _plain, _shape


def _permutation_vjp(g, a, perm, axis):
    """The cotangent of a for y = take_along_axis(a, perm, axis), a permutation perm along
    axis, from y's cotangent g."""
    shape = _shape(a)
    if type(perm) is Box:  # traced (a const_graph recording): the inverse, recorded too
        inv = anp.argsort(perm, axis=None if axis is None else _norm_axis(axis, len(shape)))
        if axis is None:
            return anp.reshape(anp.take(g, inv), shape)
        return anp.take_along_axis(g, inv, _norm_axis(axis, len(shape)))
    if axis is None:
        inv = _onp.empty_like(perm)
        inv[perm] = _onp.arange(perm.size)
        return anp.reshape(anp.take(g, inv), shape)
    ax = _norm_axis(axis, len(shape))
    inv = _onp.empty_like(perm)
    ramp = _onp.arange(shape[ax]).reshape((-1,) + (1,) * (len(shape) - ax - 1))
    _onp.put_along_axis(inv, perm, _onp.broadcast_to(ramp, perm.shape), ax)
    return anp.take_along_axis(g, inv, ax)


def _sort_vjp(g, ans, a, axis=-1, kind=None, order=None, stable=None):
    if order is not None:
        raise NotImplementedError("gradcy: sort with order= (structured arrays) has no gradient")
    if type(a) is ArrayMeta:  # the record keeps the permutation only (_sort_save)
        return _permutation_vjp(g, a, ans, axis)
    perm = anp.argsort(a, axis=axis, kind="stable")
    return _permutation_vjp(g, a, perm, axis)


def _partition_vjp(g, ans, a, kth, axis=-1, kind="introselect", order=None):
    if order is not None:
        raise NotImplementedError("gradcy: partition with order= has no gradient")
    if type(a) is ArrayMeta:  # the record keeps the permutation only (_partition_save)
        return _permutation_vjp(g, a, ans, axis)
    perm = anp.argpartition(a, kth, axis=axis, kind=kind)
    return _permutation_vjp(g, a, perm, axis)


def _small_index(perm, n):
    return perm.astype(
        _onp.int16 if n <= 32767 else _onp.int32 if n < 2**31 else perm.dtype, copy=False
    )


_SORT_ARGS = ("axis", "kind", "order", "stable")
_PARTITION_ARGS = ("kth", "axis", "kind", "order")


def _order_save(names, order):
    """The saver of sort/partition: the permutation (argsort / argpartition, computed once in
    the forward pass, in the smallest integer type that holds the axis length: int16 up to
    32767) in place of the input, read by the rule; order(a, axis, opts) computes it. Other
    inputs keep their arguments."""

    def save(argnums, ans, args, kwargs):
        a = args[0]
        opts = dict(zip(names, args[1:]))
        opts.update(kwargs)
        if type(a) is not _onp.ndarray or a.ndim == 0 or opts.get("order") is not None:
            return ans, args
        axis = opts.get("axis", -1)
        perm = order(a, axis, opts)
        return (
            _small_index(perm, a.size if axis is None else a.shape[axis]),
            (meta_of(a),) + args[1:],
        )

    return save


_sort_save = _order_save(
    _SORT_ARGS, lambda a, axis, opts: _onp.argsort(a, axis=axis, kind="stable")
)
_partition_save = _order_save(
    _PARTITION_ARGS,
    lambda a, axis, opts: _onp.argpartition(
        a, opts["kth"], axis=axis, kind=opts.get("kind", "introselect")
    ),
)

defvjp_direct(anp.sort, _sort_vjp, save=_sort_save)
defvjp_direct(anp.partition, _partition_vjp, None, save=_partition_save)


def _permuted(g, perm, axis):
    """g rearranged by the permutation perm along axis (of the flattened g for None)."""
    if axis is None:
        return anp.take(g, perm)
    return anp.take_along_axis(g, perm, axis)


def _sort_jvp(g, ans, a, axis=-1, kind=None, order=None, stable=None):
    if order is not None:
        raise NotImplementedError("gradcy: sort with order= (structured arrays) has no gradient")
    return _permuted(g, anp.argsort(a, axis=axis, kind="stable"), axis)


def _partition_jvp(g, ans, a, kth, axis=-1, kind="introselect", order=None):
    if order is not None:
        raise NotImplementedError("gradcy: partition with order= has no gradient")
    return _permuted(g, anp.argpartition(a, kth, axis=axis, kind=kind), axis)


defjvp(anp.sort, _sort_jvp)
defjvp(anp.partition, _partition_jvp, None)


# =============================================================================
# Set operations: the value outputs are input values gathered at their first occurrences
# =============================================================================
def _occurrences(a, v):
    """Positions in the 1-D array `a` of the values `v` (each one of a's values): the k-th
    copy of a value in v (in v's order) at the value's k-th occurrence in a (the first, when v
    has no repeats). NaNs match NaNs."""
    order = _onp.argsort(a, kind="stable")
    start = _onp.searchsorted(a[order], v, side="left")  # first of its run (NaNs sort last)
    ov = _onp.argsort(v, kind="stable")
    sv = v[ov]
    if sv.size:
        first = _onp.ones(sv.size, bool)
        first[1:] = ~((sv[1:] == sv[:-1]) | (_onp.isnan(sv[1:]) & _onp.isnan(sv[:-1])))
        runs = _onp.maximum.accumulate(_onp.where(first, _onp.arange(sv.size), 0))
        rank = _onp.empty(sv.size, _intp)
        rank[ov] = _onp.arange(sv.size) - runs
        start = start + rank
    idx = order[_onp.minimum(start, max(a.size - 1, 0))] if a.size else start
    found = a[idx]
    if not ((found == v) | (_onp.isnan(found) & _onp.isnan(v))).all():
        raise NotImplementedError(
            "gradcy.numpy: a set operation's output has values its inputs "
            "do not hold; no gradient rule applies"
        )
    return idx


def _gather_values(arrays, values):
    """The output `values` of a set operation of `arrays` (some traced), gathered from the
    arrays' flat values at their first occurrences: a traced array equal to `values`."""
    flat = [anp.ravel(a) if type(a) is Box else _onp.ravel(a) for a in arrays]
    cat = flat[0] if len(flat) == 1 else anp.concatenate(flat)
    values = _onp.asarray(values)
    idx = _occurrences(_onp.asarray(_plain(cat)), values.reshape(-1))
    return anp.reshape(anp.take(cat, idx), values.shape)


def _set_front(name, arrays):
    """gradcy.numpy.<name>: numpy's function on plain values; with traced inputs, its value
    output (the result, or a result tuple's first element) gathered from the arguments named
    `arrays`; the other outputs (indices, inverse, counts) are integer constants."""
    np_fn = getattr(_onp, name)
    bind = _binder(np_fn)

    def front(*args, **kwargs):
        if not any(type(a) is Box for a in args) and not any(
            type(v) is Box for v in kwargs.values()
        ):
            return np_fn(*args, **kwargs)
        result = np_fn(*[_plain(a) for a in args], **{k: _plain(v) for k, v in kwargs.items()})
        b = bind(args, kwargs)
        first = result[0] if isinstance(result, tuple) else result
        if name == "unique" and b["axis"] is not None:
            # unique slices along an axis: taken at their first occurrences (return_index)
            again = dict(b, return_index=True, return_inverse=False, return_counts=False)
            index = _onp.unique(_plain(again.pop("ar")), **again)[1]
            values = anp.take(b["ar"], index, axis=b["axis"])
        else:
            values = _gather_values([b[n] for n in arrays], first)
        if not isinstance(result, tuple):
            return values
        if hasattr(result, "_fields"):
            return result._replace(**{result._fields[0]: values})
        return (values,) + tuple(result[1:])

    front.__name__ = front.__qualname__ = name
    front.__doc__ = np_fn.__doc__
    register_numpy_override(np_fn, front)
    return front


unique = _set_front("unique", ("ar",))
union1d = _set_front("union1d", ("ar1", "ar2"))
intersect1d = _set_front("intersect1d", ("ar1", "ar2"))
setdiff1d = _set_front("setdiff1d", ("ar1", "ar2"))
setxor1d = _set_front("setxor1d", ("ar1", "ar2"))
if hasattr(_onp, "unique_all"):  # NumPy >= 2
    unique_values = _set_front("unique_values", ("x",))
    unique_counts = _set_front("unique_counts", ("x",))
    unique_inverse = _set_front("unique_inverse", ("x",))
    unique_all = _set_front("unique_all", ("x",))
