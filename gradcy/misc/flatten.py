"""flatten(value) -> (vector, unflatten): nested tuples/lists/dicts of arrays and scalars as one
1-D array, and the inverse map.

Both directions are differentiable: flatten on traced leaves gives a traced vector, unflatten of
a traced vector gives traced leaves. Dict entries are taken in sorted key order (as autograd
does), so two dicts with the same keys flatten alike whatever their insertion order.
"""
import numpy as _np

from .._core import Box

__all__ = ["flatten", "flatten_func"]


def _getval(x):
    while type(x) is Box:
        x = x._value
    return x


def _walk(value, leaves):
    """Collect the leaves of value; return a spec from which _build rebuilds the structure:
    ('seq', type, [specs]) | ('dict', type, [keys], [specs]) | ('leaf', shape, dtype, kind)."""
    v = _getval(value)
    t = type(v)
    if t is list or t is tuple:
        if type(value) is Box:                         # a traced sequence
            items = [value[i] for i in range(len(v))]
        else:
            items = value
        return ("seq", t, [_walk(e, leaves) for e in items])
    if t is dict:
        keys = sorted(v)
        return ("dict", t, keys, [_walk(value[k], leaves) for k in keys])
    shape = _np.shape(v)
    dtype = _np.result_type(v)
    leaves.append(value)
    return ("leaf", shape, dtype, int(_np.prod(shape, dtype=_np.int64)))


def _build(spec, vec, pos):
    """(value, next position) of the part of vec described by spec, starting at pos."""
    kind = spec[0]
    if kind == "seq":
        out = []
        for s in spec[2]:
            e, pos = _build(s, vec, pos)
            out.append(e)
        return spec[1](out), pos
    if kind == "dict":
        out = {}
        for k, s in zip(spec[2], spec[3]):
            out[k], pos = _build(s, vec, pos)
        return out, pos
    _, shape, dtype, n = spec
    piece = vec[pos:pos + n]
    traced = type(piece) is Box
    if traced:
        piece = _np.reshape(piece, shape)
        vdtype = _getval(piece).dtype
        if vdtype != dtype:
            if vdtype.kind == "c" and dtype.kind != "c":
                piece = _np.real(piece)
            piece = piece.astype(dtype)
    else:
        piece = _np.asarray(piece).reshape(shape)
        if piece.dtype != dtype:
            if piece.dtype.kind == "c" and dtype.kind != "c":
                piece = piece.real
            piece = piece.astype(dtype)
        elif piece.base is not None:
            piece = piece.copy()         # leaves do not alias the caller's vector
    return piece, pos + n


def flatten(value):
    """Flatten nested containers of arrays and scalars into one 1-D array.

    Parameters
    ----------
    value : array, scalar, or tuple/list/dict of these (nested)
        Dict entries are taken in sorted key order, so two dicts with the same keys flatten
        alike whatever their insertion order.

    Returns
    -------
    vector : ndarray
        Every leaf raveled, in order, concatenated (traced if a leaf is traced).
    unflatten : callable
        ``unflatten(v)`` rebuilds the structure from a vector ``v`` of the same length: each
        leaf an array (0-d for scalars) with its original shape and dtype. Both directions are
        differentiable.

    Examples
    --------
    >>> import numpy as onp
    >>> from gradcy.misc import flatten
    >>> params = {"W": onp.ones((2, 2)), "b": onp.zeros(2)}
    >>> vec, unflatten = flatten(params)
    >>> print(vec)
    [1. 1. 1. 1. 0. 0.]
    >>> print(unflatten(2 * vec)["W"])
    [[2. 2.]
     [2. 2.]]
    """
    leaves = []
    spec = _walk(value, leaves)
    size = sum(_leaf_sizes(spec))
    if not leaves:
        flat = _np.array([])
    elif any(type(leaf) is Box for leaf in leaves):
        flat = _np.concatenate([_np.ravel(leaf) for leaf in leaves])
    else:
        flat = _np.concatenate([_np.ravel(leaf) for leaf in leaves])

    def unflatten(vec):
        n = len(vec)
        if n != size:
            raise ValueError(f"unflatten: expected a vector of length {size}, got {n}")
        return _build(spec, vec, 0)[0]
    return flat, unflatten


def _leaf_sizes(spec):
    kind = spec[0]
    if kind == "leaf":
        yield spec[3]
        return
    for s in (spec[2] if kind == "seq" else spec[3]):
        yield from _leaf_sizes(s)


def flatten_func(func, example):
    """A function of nested containers as a function of one flat vector.

    Parameters
    ----------
    func : callable
        ``func(value, *args)`` of a nested container ``value``.
    example : nested container
        A value with the structure ``func`` takes.

    Returns
    -------
    flat_func : callable
        ``flat_func(v, *args)`` is ``func(unflatten(v), *args)`` with its output flattened.
    unflatten : callable
        The inverse of flattening ``example``.
    flat_example : ndarray
        ``example`` flattened.

    Examples
    --------
    >>> import numpy as onp
    >>> from gradcy.misc import flatten_func
    >>> def f(p):
    ...     return {"y": p["a"] * p["b"]}
    >>> flat_f, unflatten, x0 = flatten_func(f, {"a": onp.ones(2), "b": 3.0})
    >>> print(x0, flat_f(x0))
    [1. 1. 3.] [3. 3.]
    """
    flat_example, unflatten = flatten(example)

    def flat_func(v, *args):
        return flatten(func(unflatten(v), *args))[0]
    return flat_func, unflatten, flat_example


# autograd's names in this module (views of the rules above; gradcy._autograd_rules)
from .._autograd_rules import export as _export

_export(globals())
