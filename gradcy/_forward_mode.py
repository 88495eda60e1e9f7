"""The forward-mode operators: make_jvp and deriv (one forward-mode run per tangent, nothing
saved for a backward pass)."""

from collections.abc import Callable
from typing import Any

import numpy as _np

from . import backends
from ._arguments import (
    _differentiated_leaves,
    _independent,
    _ones_like,
    _warn_independent,
    checked_operator,
)
from ._batched import BatchedTangent, BatchingError
from ._core import Box, Tape
from ._docstrings import operator_doc
from ._pytree import tree_flatten
from ._tracing import _call_traced, _forward
from ._typing import ArgNum, P, R
from .wrap_util import _check_argnum, wrap_nary_f


@checked_operator
@operator_doc("any", "ints")
def make_jvp(
    fun: Callable[P, R], argnum: ArgNum = 0
) -> Callable[P, Callable[[Any], tuple[R, Any]]]:
    """A function returning the Jacobian-vector product (forward mode) of ``fun``.

    {fun and argnum}
        ``jvp_maker(*args, **kwargs) -> jvp``, where ``jvp(v)`` returns
        ``(fun(*args), J v)``: the output and its tangent for the tangent ``v`` of
        ``args[argnum]`` (``v`` has that argument's structure). Each ``jvp`` call runs ``fun``
        once, saving nothing for a backward pass.

    See Also
    --------
    make_vjp : the reverse-mode counterpart.
    deriv : the tangent for ``v`` of ones.

    Examples
    --------
    >>> import gradcy.numpy as np
    >>> from gradcy import make_jvp
    >>> jvp = make_jvp(np.sin)(np.array([0.0, 1.0]))
    >>> ans, tangent = jvp(np.array([1.0, 1.0]))
    >>> print(tangent)                            # cos(x) * v
    [1.         0.54030231]
    """

    def jvp_maker(*args, **kwargs):
        leaves, unflatten = _differentiated_leaves(args, argnum, "make_jvp")

        def jvp(v):
            tangents = tree_flatten(v)[0]
            if len(tangents) != len(leaves):
                raise ValueError(
                    f"make_jvp: the tangent has {len(tangents)} leaves, the "
                    f"argument {len(leaves)}; give it the argument's structure"
                )
            return _forward(fun, args, kwargs, argnum, leaves, unflatten, tangents, "make_jvp")

        return jvp

    return jvp_maker


@checked_operator
@operator_doc("any", "int")
def deriv(fun: Callable[P, Any], argnum: int = 0) -> Callable[P, Any]:
    """The derivative along a tangent of ones (forward mode).

    For an elementwise function this is the elementwise derivative (as `elementwise_grad`,
    computed in forward mode); for a function of a scalar, its derivative, of any output
    shape.

    {fun and argnum}
        ``deriv_fun(*args, **kwargs)``: the tangent of the output, shaped like the output.

    Examples
    --------
    >>> import gradcy.numpy as np
    >>> from gradcy import deriv
    >>> print(deriv(np.tanh)(np.array([0.0, 1.0])))
    [1.         0.41997434]
    >>> print(deriv(lambda t: np.array([1.0, 2.0]) * t ** 2)(3.0))   # d/dt of a curve
    [ 6. 12.]
    """

    @wrap_nary_f(fun, deriv, argnum)
    def deriv_fun(*args, **kwargs):
        _check_argnum(args, argnum, "deriv")
        x = args[argnum]
        ones = _ones_like(x._value if type(x) is Box else x)
        if isinstance(x, _np.ndarray):
            ones = _np.ones_like(x)
        return make_jvp(fun, argnum)(*args, **kwargs)(ones)[1]

    return deriv_fun


def _forward_batched(fun, args, kwargs, argnum, leaves, unflatten, batches, fname):
    """(fun(*args), the output's tangents) for a batch of B tangents of each leaf of
    args[argnum] (`batches`: arrays of shape (B,) + the leaf's shape), in one forward-mode run
    whose tangents carry the batch as their leading axis (`BatchedTangent`; a batch may be
    given as one, e.g. marked as the standard basis). The output's
    tangents come back as arrays of shape (B,) + each output leaf's shape. Raises
    BatchingError when a JVP rule cannot take a batch (the caller runs the tangents one by
    one)."""
    tape = Tape(True)
    try:
        boxes = [
            tape.new_leaf(leaf, t if type(t) is BatchedTangent else BatchedTangent(t))
            for leaf, t in zip(leaves, batches)
        ]
        out = _call_traced(tape, fun, args, kwargs, argnum, unflatten(boxes))
        del boxes
        if out is None:
            raise TypeError(f"{fname}: the function returned None")
        n = (
            batches[0].batch_size
            if type(batches[0]) is BatchedTangent
            else _np.shape(batches[0])[0]
        )
        out_leaves, out_unflatten = tree_flatten(out)
        values, out_tangents, independent = [], [], True
        for leaf in out_leaves:
            traced = type(leaf) is Box and leaf._tape is tape
            value = leaf._value if traced else leaf
            t = tape.tangent(leaf) if traced else None
            independent = independent and _independent(leaf, tape)
            values.append(value)
            out_tangents.append(_batch_of(t, value, n))
        if independent:
            _warn_independent(fname)
        del out, out_leaves
        return out_unflatten(values), out_tangents
    finally:
        tape.release()


def _batch_of(t, value, n):
    """An output's tangents as one array of shape (n,) + value's shape and value's dtype."""
    shape = _np.shape(value)
    if type(t) is BatchedTangent:
        t = t.data
        if tuple(_np.shape(t)) != (n,) + tuple(shape):
            t = _np.broadcast_to(t, (n,) + tuple(shape))
    elif t is None:
        t = _np.zeros((n,) + tuple(shape), _np.result_type(value))
        if backends.is_array_value(value):
            t = backends.zeros((n,) + tuple(shape), t.dtype, like=value)
    else:
        raise BatchingError("a JVP rule returned a tangent that does not depend on the batch")
    dtype = _np.result_type(value)
    if _np.iscomplexobj(t) and dtype.kind != "c":
        t = t.real
    if t.dtype != dtype and dtype.kind in "fc":
        t = t.astype(dtype)
    return t
