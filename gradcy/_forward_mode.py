"""The forward-mode operators: make_jvp and deriv (one forward-mode run per tangent, nothing
saved for a backward pass)."""
from collections.abc import Callable
from typing import Any

import numpy as _np

from ._arguments import _differentiated_leaves, _ones_like, checked_operator
from ._core import Box
from ._docstrings import operator_doc
from ._pytree import tree_flatten
from ._tracing import _forward
from ._typing import ArgNum, P, R
from .wrap_util import _check_argnum, wrap_nary_f


@checked_operator
@operator_doc("any", "ints")
def make_jvp(fun: Callable[P, R], argnum: ArgNum = 0
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
                raise ValueError(f"make_jvp: the tangent has {len(tangents)} leaves, the "
                                 f"argument {len(leaves)}; give it the argument's structure")
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
