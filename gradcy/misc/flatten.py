"""flatten(value) -> (vector, unflatten): nested tuples/lists/dicts of arrays and scalars as one
1-D array, and the inverse map (gradcy._pytree's walker, shared with the differential
operators); flatten_func: a function of nested containers as a function of one vector.

Both directions are differentiable: flatten on traced leaves gives a traced vector, unflatten of
a traced vector gives traced leaves. Dict entries are taken in sorted key order (as autograd
does), so two dicts with the same keys flatten alike whatever their insertion order.
"""

from collections.abc import Callable
from typing import Any

import numpy as _np

from .._pytree import flatten

__all__ = ["flatten", "flatten_func"]


def flatten_func(
    func: Callable[..., Any], example: Any
) -> tuple[Callable[..., Any], Callable[[Any], Any], _np.ndarray[Any, Any]]:
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
