"""Nested tuples/lists/dicts as a flat list of leaves and a function that rebuilds the structure:
the one walker behind the differential operators' arguments and outputs (tree_flatten) and
autograd's vector flatten (flatten, gradcy.misc.flatten's).

The two callers look into different containers, by one rule each (_front_end_node,
_autograd_node):
- tree_flatten: tuples, lists and dicts and their subclasses (namedtuples, OrderedDicts, ...),
  dicts in insertion order, rebuilt with their own type; a traced value is a leaf.
- flatten: exactly tuple, list and dict (autograd's container spaces), also when traced (a
  traced tuple's elements are taken one by one), dicts in sorted key order, so two dicts with
  the same keys flatten alike whatever their insertion order; rebuilt as plain containers.
"""

from collections.abc import Callable
from typing import Any

import numpy as _np

from ._core import Box

__all__ = ["tree_flatten", "flatten"]


def _first(vals):
    return vals[0]


def _getval(x):
    while type(x) is Box:
        x = x._value
    return x


def _front_end_node(x):
    """(type, keys or None, children) of a container the differential operators look into, or
    None for a leaf."""
    if isinstance(x, (tuple, list)):
        return type(x), None, x
    if isinstance(x, dict):
        keys = list(x)
        return type(x), keys, [x[k] for k in keys]
    return None


def _autograd_node(x):
    """(type, keys or None, children) of a container autograd's flatten looks into, or None."""
    v = _getval(x)
    t = type(v)
    if t is tuple or t is list:
        return t, None, ([x[i] for i in range(len(v))] if type(x) is Box else x)
    if t is dict:
        keys = sorted(v)
        return t, keys, [x[k] for k in keys]
    return None


def _walk(x, node):
    """(leaves, unflatten) of x, looking into the containers `node` names."""
    spec = node(x)
    if spec is None:
        return [x], _first
    kind, keys, children = spec
    parts, leaves = [], []
    for child in children:
        child_leaves, unf = _walk(child, node)
        leaves.extend(child_leaves)
        parts.append((unf, len(child_leaves)))

    def unflatten(vals):
        out, i = [], 0
        for unf, n in parts:
            out.append(unf(vals[i : i + n]))
            i += n
        if keys is not None:
            rebuilt = kind()
            for k, v in zip(keys, out):
                rebuilt[k] = v
            return rebuilt
        return kind(out) if kind is tuple or kind is list else kind(*out)

    return leaves, unflatten


def tree_flatten(x):
    """(leaves, unflatten) of nested tuples/lists/dicts (their subclasses too, dicts in
    insertion order); unflatten(values) rebuilds the structure with other leaves."""
    t = type(x)
    if t is _np.ndarray or t is float:
        return [x], _first
    if t is Box:
        v = x._value
        while type(v) is Box:
            v = v._value
        if type(v) is not tuple and type(v) is not list:
            return [x], _first
        # a traced tuple/list (gradcy.builtins.tuple of traced values): its elements
        return tree_flatten(type(v)([x[i] for i in range(len(v))]))
    if t is tuple or t is list:
        for e in x:
            if isinstance(e, (tuple, list, dict)):
                break
        else:
            return list(x), t  # a flat tuple/list is rebuilt by its own constructor
    return _walk(x, _front_end_node)


def flatten(value: Any) -> tuple[_np.ndarray[Any, Any], Callable[[Any], Any]]:
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
    leaves, rebuild = _walk(value, _autograd_node)
    metas = []
    for leaf in leaves:
        v = _getval(leaf)
        shape = _np.shape(v)
        metas.append((shape, _np.result_type(v), int(_np.prod(shape, dtype=_np.int64))))
    size = sum(n for _, _, n in metas)
    flat = _np.concatenate([_np.ravel(leaf) for leaf in leaves]) if leaves else _np.array([])

    def unflatten(vec):
        n = len(vec)
        if n != size:
            raise ValueError(f"unflatten: expected a vector of length {size}, got {n}")
        pieces, pos = [], 0
        for shape, dtype, n in metas:
            pieces.append(_leaf(vec[pos : pos + n], shape, dtype))
            pos += n
        return rebuild(pieces)

    return flat, unflatten


def _leaf(piece, shape, dtype):
    """A slice of a flat vector as the leaf it stands for: its shape and dtype (the real part
    of a complex slice for a real leaf); a plain leaf never aliases the vector."""
    if type(piece) is Box:
        piece = _np.reshape(piece, shape)
        vdtype = _getval(piece).dtype
        if vdtype != dtype:
            if vdtype.kind == "c" and dtype.kind != "c":
                piece = _np.real(piece)
            piece = piece.astype(dtype)
        return piece
    piece = _np.asarray(piece).reshape(shape)
    if piece.dtype != dtype:
        if piece.dtype.kind == "c" and dtype.kind != "c":
            piece = piece.real
        return piece.astype(dtype)
    return piece.copy() if piece.base is not None else piece
