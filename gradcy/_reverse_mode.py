"""The reverse-mode operators: grad, value_and_grad, make_vjp, jacobian, checkpoint, ...

Each builds on _tracing._trace (one recorded call, swept backwards); grad and value_and_grad
first try _core.grad_fast, which runs the common case (float arrays in, a real scalar out)
without the general path.
"""

import inspect
from collections.abc import Callable
from functools import partial, wraps
from types import CellType as _CellType
from types import FunctionType as _FunctionType
from typing import Any, Concatenate, Literal, overload

import numpy as _np

from ._arguments import _check_float_output, _match_input, checked_operator
from .backends import compute_pending
from ._core import Box
from ._core import grad_fast as _grad_fast
from ._docstrings import operator_doc
from ._pytree import tree_flatten
from ._tracing import (
    _finish_grad,
    _forward,
    _grad_of,
    _strip,
    _trace,
    _traced_integer_output,
    _vjp_of_ones,
)
from ._tracing import VJP
from ._typing import A, ArgNum, P, R, Recompute, T
from .registry import defjvp_argnums, defvjp_argnums_direct, primitive
from .wrap_util import _check_argnum, wrap_nary_f


@checked_operator
def make_vjp(fun: Callable[P, R], argnum: ArgNum = 0) -> Callable[P, tuple[VJP, R]]:
    """A function returning the vector-Jacobian product (VJP) function of ``fun`` and its value.

    Parameters
    ----------
    fun : callable
        The function to differentiate; its output may be an array or a tuple/list/dict of
        arrays.
    argnum : int or tuple of int, optional
        The positional argument(s) to differentiate with respect to (default 0).

    Returns
    -------
    callable
        ``vjp_maker(*args, **kwargs) -> (vjp, ans)``: ``ans`` is ``fun(*args, **kwargs)`` and
        ``vjp(g)`` the cotangent of ``args[argnum]`` for a cotangent ``g`` shaped like ``ans``
        (``g`` contracted with the Jacobian). ``vjp`` may be called many times; it holds the
        recorded tape until ``vjp.release()`` is called or ``vjp`` is dropped.

        While ``vjp`` holds the tape, the arrays it saved for the backward pass are read-only:
        ``ans`` when a rule reads it (``tanh``, ``exp``, a softmax), an input that a rule
        reads (``x`` of ``sin``), and views of them. A write into one would change the
        gradient ``vjp`` computes; NumPy refuses it ("output array is read-only",
        "assignment destination is read-only"). Write into a copy (``ans.copy()``), or
        release the VJP first: they are writable again after ``vjp.release()``, or when
        ``vjp`` is dropped.

    See Also
    --------
    vector_jacobian_product : the same for one cotangent, without keeping the tape.
    make_jvp : the forward-mode counterpart.

    Examples
    --------
    >>> import gradcy.numpy as np
    >>> from gradcy import make_vjp
    >>> vjp, ans = make_vjp(np.sin)(np.array([0.0, 1.0]))
    >>> print(vjp(np.array([1.0, 2.0])))          # cos(x) * g
    [1.         1.08060461]
    >>> print(vjp(np.array([1.0, 0.0])))          # called again on the same tape
    [1. 0.]
    >>> vjp.release()
    """

    @wrap_nary_f(fun, make_vjp, argnum)
    def vjp_maker(*args, **kwargs):
        vjp, ans = _trace(fun, args, kwargs, argnum, "make_vjp", consume=False)
        # what the tape saved must not change under it while the user holds vjp
        vjp._tape.freeze_saved(
            tree_flatten(ans)[0] if isinstance(ans, (tuple, list, dict)) else (ans,)
        )
        return vjp, ans

    return vjp_maker


@overload  # (a ufunc: its overloads would give it the first one's types)
def value_and_grad(fun: _np.ufunc, argnum: ArgNum = 0) -> Callable[..., Any]: ...
@overload
def value_and_grad(  # type: ignore[overload-overlap]  # (ParamSpec: a false alarm)
    fun: Callable[Concatenate[T, P], R], argnum: Literal[0] = 0
) -> Callable[Concatenate[T, P], tuple[R, T]]: ...
@overload
def value_and_grad(fun: Callable[P, R], argnum: int) -> Callable[P, tuple[R, Any]]: ...
@overload
def value_and_grad(
    fun: Callable[P, R], argnum: tuple[int, ...]
) -> Callable[P, tuple[R, tuple[Any, ...]]]: ...
@checked_operator
@operator_doc("scalar", "ints")
def value_and_grad(fun: Callable[..., Any], argnum: ArgNum = 0) -> Callable[..., Any]:
    """A function returning both the value and the gradient of a scalar-valued function.

    Cheaper than calling ``fun`` and `grad` separately: the value comes from the forward pass
    of the gradient computation.

    {fun and argnum}
        ``value_and_grad_fun(*args, **kwargs) -> (fun(*args, **kwargs), gradient)``, the
        gradient as `grad` gives it.

    See Also
    --------
    grad, grad_and_aux

    Examples
    --------
    >>> import gradcy.numpy as np
    >>> from gradcy import value_and_grad
    >>> loss, g = value_and_grad(lambda w: np.sum(w ** 2))(np.array([1.0, -2.0]))
    >>> print(loss, g)
    5.0 [ 2. -4.]
    """

    @wrap_nary_f(fun, value_and_grad, argnum)
    def value_and_grad_fun(*args, **kwargs):
        out = _grad_fast(
            fun, args, kwargs, argnum, "value_and_grad", True, _finish_grad, _match_input
        )
        if out is not NotImplemented:
            return out
        vjp, ans = _trace(fun, args, kwargs, argnum, "value_and_grad", consume=True)
        return _grad_of(vjp, ans, "value_and_grad", True)

    return value_and_grad_fun


def _recompute_flag(recompute):
    """The tape setting of grad's `recompute` policy (None: the process default)."""
    if recompute is None:
        return None
    if recompute in ("elementwise", True):
        return True
    if recompute in ("none", False):
        return False
    raise ValueError(
        f"grad: recompute must be 'elementwise', 'none' or None (the default), got {recompute!r}"
    )


@overload  # (a ufunc: its overloads would give it the first one's types)
def grad(fun: _np.ufunc, argnum: ArgNum = 0, recompute: Recompute = None) -> Callable[..., Any]: ...
@overload
def grad(  # type: ignore[overload-overlap]  # (ParamSpec: a false alarm)
    fun: Callable[Concatenate[T, P], Any], argnum: Literal[0] = 0, recompute: Recompute = None
) -> Callable[Concatenate[T, P], T]: ...
@overload
def grad(fun: Callable[P, Any], argnum: int, recompute: Recompute = None) -> Callable[P, Any]: ...
@overload
def grad(
    fun: Callable[P, Any], argnum: tuple[int, ...], recompute: Recompute = None
) -> Callable[P, tuple[Any, ...]]: ...
@checked_operator
def grad(
    fun: Callable[..., Any], argnum: ArgNum = 0, recompute: Recompute = None
) -> Callable[..., Any]:
    """
    Returns a function which computes the gradient of a scalar-valued function.

    Parameters
    ----------
    fun : callable
        A function of one or more positional arguments returning a real scalar (a Python float,
        or a NumPy scalar or array of size 1), written with ``gradcy.numpy`` (plain NumPy
        functions called on traced values are routed to gradcy too).
    argnum : int or tuple of int, optional
        The positional argument to differentiate with respect to (default 0). With a tuple of
        ints the gradient is a tuple, one entry per listed argument.
    recompute : {None, 'elementwise', 'none'}, optional
        ``'elementwise'``: a value made by a cheap elementwise operation (divide, multiply,
        exp, tanh, ...) whose own saved record holds all its inputs is not kept by the
        operations that read it; the backward pass makes it again (same values, bit for bit).
        Less memory, a little more arithmetic. Default: off.

    Returns
    -------
    callable
        ``gradfun(*args, **kwargs)``: the gradient of ``fun`` at ``args`` with respect to
        ``args[argnum]``. It has the type, dtype and shape of that argument: a Python float
        for a float, a float32 array for a float32 array, a tuple/list/dict of gradients for a
        tuple/list/dict argument.

    Raises
    ------
    TypeError
        If ``fun`` returns an array of more than one element or a complex value (use
        `elementwise_grad`, `jacobian`, `make_vjp` or `holomorphic_grad`), or if the
        differentiated argument holds integers (pass floats).
    IndexError
        If ``argnum`` is not the position of one of the arguments.

    See Also
    --------
    value_and_grad : the value and the gradient in one pass.
    elementwise_grad, jacobian, make_vjp : functions with array outputs.
    grad_named : the gradient with respect to an argument given by name.

    Examples
    --------
    >>> import gradcy.numpy as np
    >>> from gradcy import grad
    >>> def f(x, y):
    ...     return np.sum(np.sin(x) * y)
    >>> x, y = np.array([0.0, 1.0]), np.array([2.0, 3.0])
    >>> print(grad(f)(x, y))                      # cos(x) * y
    [2.         1.62090692]
    >>> gx, gy = grad(f, argnum=(0, 1))(x, y)
    >>> print(gy)                                 # sin(x)
    [0.         0.84147098]
    >>> grad(lambda t: t ** 3)(2.0)               # a float in, a float out
    12.0
    >>> grad(grad(lambda t: t ** 3))(2.0)         # gradients of gradients
    12.0
    """
    flag = _recompute_flag(recompute)

    @wrap_nary_f(fun, grad, argnum)
    def gradfun(*args, **kwargs):
        if flag is None:
            # plain float arrays in, a real scalar out: the whole call runs in _core
            g = _grad_fast(fun, args, kwargs, argnum, "grad", False, _finish_grad, _match_input)
            if g is not NotImplemented:
                return g
        vjp, ans = _trace(fun, args, kwargs, argnum, "grad", consume=True, recompute=flag)
        return _grad_of(vjp, ans, "grad", False)

    return gradfun


@overload
def grad_and_aux(  # type: ignore[overload-overlap]  # (ParamSpec: a false alarm)
    fun: Callable[Concatenate[T, P], tuple[Any, A]], argnum: Literal[0] = 0
) -> Callable[Concatenate[T, P], tuple[T, A]]: ...
@overload
def grad_and_aux(fun: Callable[P, tuple[Any, A]], argnum: int) -> Callable[P, tuple[Any, A]]: ...
@overload
def grad_and_aux(
    fun: Callable[P, tuple[Any, A]], argnum: tuple[int, ...]
) -> Callable[P, tuple[tuple[Any, ...], A]]: ...
@checked_operator
def grad_and_aux(fun: Callable[..., Any], argnum: ArgNum = 0) -> Callable[..., Any]:
    """The gradient of a function that also returns an auxiliary value.

    Parameters
    ----------
    fun : callable
        A function returning a pair ``(output, aux)``: ``output`` a real scalar, ``aux``
        anything (it is not differentiated).
    argnum : int or tuple of int, optional
        The positional argument(s) to differentiate with respect to (default 0).

    Returns
    -------
    callable
        ``grad_and_aux_fun(*args, **kwargs) -> (gradient of output, aux)``, with ``aux`` as
        plain (untraced) values.

    Examples
    --------
    >>> import gradcy.numpy as np
    >>> from gradcy import grad_and_aux
    >>> def f(x):
    ...     y = np.tanh(x)
    ...     return np.sum(y), y                  # (output, auxiliary value)
    >>> g, aux = grad_and_aux(f)(np.zeros(2))
    >>> print(g, aux)
    [1. 1.] [0. 0.]
    """

    @wrap_nary_f(fun, grad_and_aux, argnum)
    def grad_and_aux_fun(*args, **kwargs):
        aux_box = []

        def only_output(*a, **k):
            out, aux = fun(*a, **k)
            aux_box.append(aux)
            return out

        vjp, ans = _trace(only_output, args, kwargs, argnum, "grad_and_aux", consume=True)
        aux = _strip(aux_box[0], vjp._tape)  # while the tape is there to compare with
        return _grad_of(vjp, ans, "grad_and_aux", False), aux

    return grad_and_aux_fun


@overload  # (a ufunc: its overloads would give it the first one's types)
def elementwise_grad(fun: _np.ufunc, argnum: ArgNum = 0) -> Callable[..., Any]: ...
@overload
def elementwise_grad(  # type: ignore[overload-overlap]  # (ParamSpec: a false alarm)
    fun: Callable[Concatenate[T, P], Any], argnum: Literal[0] = 0
) -> Callable[Concatenate[T, P], T]: ...
@overload
def elementwise_grad(fun: Callable[P, Any], argnum: int) -> Callable[P, Any]: ...
@overload
def elementwise_grad(
    fun: Callable[P, Any], argnum: tuple[int, ...]
) -> Callable[P, tuple[Any, ...]]: ...
@checked_operator
@operator_doc("array", "ints")
def elementwise_grad(fun: Callable[..., Any], argnum: ArgNum = 0) -> Callable[..., Any]:
    """The derivative of an elementwise function, element by element.

    It is the vector-Jacobian product with a cotangent of ones: for a function whose output
    element ``i`` depends only on input element ``i``, element ``i`` of the result is the
    derivative of output ``i`` with respect to input ``i``. For other functions it is the
    gradient of the sum of the outputs.

    {fun and argnum}
        ``gradfun(*args, **kwargs)``, shaped like ``args[argnum]``.

    See Also
    --------
    deriv : the same in forward mode (cheaper for elementwise functions of large arrays).

    Examples
    --------
    >>> import gradcy.numpy as np
    >>> from gradcy import elementwise_grad
    >>> print(elementwise_grad(np.tanh)(np.array([0.0, 1.0])))   # 1 - tanh(x)**2
    [1.         0.41997434]
    """

    @wrap_nary_f(fun, elementwise_grad, argnum)
    def gradfun(*args, **kwargs):
        vjp, ans = _trace(fun, args, kwargs, argnum, "elementwise_grad", consume=True)
        return _vjp_of_ones(vjp, ans, "elementwise_grad")

    return gradfun


@overload  # (a ufunc: its overloads would give it the first one's types)
def holomorphic_grad(fun: _np.ufunc, argnum: int = 0) -> Callable[..., Any]: ...
@overload
def holomorphic_grad(  # type: ignore[overload-overlap]  # (ParamSpec: a false alarm)
    fun: Callable[Concatenate[T, P], Any], argnum: Literal[0] = 0
) -> Callable[Concatenate[T, P], T]: ...
@overload
def holomorphic_grad(fun: Callable[P, Any], argnum: int) -> Callable[P, Any]: ...
@checked_operator
def holomorphic_grad(fun: Callable[..., Any], argnum: int = 0) -> Callable[..., Any]:
    """The complex derivative of a holomorphic function.

    Parameters
    ----------
    fun : callable
        A holomorphic (complex-differentiable) function of a complex argument.
    argnum : int, optional
        The positional argument to differentiate with respect to (default 0); it must be
        complex.

    Returns
    -------
    callable
        ``gradfun(*args, **kwargs)``: ``d fun / d z`` at ``args``, complex.

    Raises
    ------
    TypeError
        If the argument is not complex.

    Examples
    --------
    >>> from gradcy import holomorphic_grad
    >>> holomorphic_grad(lambda z: z ** 2)(1.0 + 2.0j)    # 2 z
    (2+4j)
    """

    @wrap_nary_f(fun, holomorphic_grad, argnum)
    def gradfun(*args, **kwargs):
        _check_argnum(args, argnum, "holomorphic_grad")
        x = args[argnum]
        if not _np.iscomplexobj(x._value if type(x) is Box else x):
            raise TypeError(
                "holomorphic_grad: the input must be complex; pass e.g. x.astype(complex) or x + 0j"
            )
        vjp, ans = _trace(fun, args, kwargs, argnum, "holomorphic_grad", consume=True)
        return _vjp_of_ones(vjp, ans, "holomorphic_grad")

    return gradfun


@checked_operator
@operator_doc("any", "ints")
def vector_jacobian_product(fun: Callable[..., Any], argnum: ArgNum = 0) -> Callable[..., Any]:
    """The vector-Jacobian product of ``fun`` for a given cotangent, in one call.

    {fun and argnum}
        ``vjp_fun(*args, v)``: the cotangent of ``args[argnum]`` for the cotangent ``v`` of
        ``fun(*args)`` (the last positional argument is the vector, not an argument of
        ``fun``).

    See Also
    --------
    make_vjp : keeps the tape to apply the VJP to many cotangents.

    Examples
    --------
    >>> import gradcy.numpy as np
    >>> from gradcy import vector_jacobian_product
    >>> vjp_fun = vector_jacobian_product(np.sin)
    >>> print(vjp_fun(np.array([0.0, 1.0]), np.array([1.0, 2.0])))   # cos(x) * v
    [1.         1.08060461]
    """

    def vector_dot_grad(*args, **kwargs):
        args, vector = args[:-1], args[-1]
        _check_argnum(args, argnum, "vector_jacobian_product", " besides the vector")
        vjp, _ = _trace(fun, args, kwargs, argnum, "vector_jacobian_product", consume=True)
        return vjp(vector)

    return vector_dot_grad


@checked_operator
@operator_doc("array", "int")
def jacobian(fun: Callable[P, Any], argnum: int = 0) -> Callable[P, Any]:
    """The Jacobian of ``fun``, by one reverse pass per output element.

    {fun and argnum}
        ``jacobian_fun(*args, **kwargs)``: an array of shape ``out.shape + x.shape`` where
        ``out = fun(*args)`` and ``x = args[argnum]``; element ``[i, j]`` is
        ``d out[i] / d x[j]``.

    See Also
    --------
    hessian, make_vjp, make_jvp

    Examples
    --------
    >>> import gradcy.numpy as np
    >>> from gradcy import jacobian
    >>> print(jacobian(np.cumsum)(np.array([1.0, 2.0, 3.0])))
    [[1. 0. 0.]
     [1. 1. 0.]
     [1. 1. 1.]]
    """

    @wrap_nary_f(fun, jacobian, argnum)
    def jacobian_fun(*args, **kwargs):
        vjp, ans = _trace(fun, args, kwargs, argnum, "jacobian", consume=False)
        try:
            integer_output = _traced_integer_output(vjp, ans)
            if not integer_output:
                _check_float_output(ans, "jacobian")
            x = args[argnum]
            out_shape = _np.shape(ans._value if type(ans) is Box else ans)
            ans_value = ans
            while type(ans_value) is Box:
                ans_value = ans_value._value
            n = int(_np.prod(out_shape))
            dtype = _np.dtype(_np.float64) if integer_output else _np.result_type(ans_value)
            rows = []
            for i in range(n):
                e = _np.zeros(n, dtype)
                e[i] = 1
                e = e.reshape(out_shape)
                if not isinstance(ans_value, _np.ndarray):
                    e = dtype.type(e)
                rows.append(vjp._cotangents(e))
        finally:
            vjp.release()
        rows = _compute_rows(rows, vjp)
        x_shape = _np.shape(x._value if type(x) is Box else x)
        if not rows:
            return _np.zeros(tuple(out_shape) + tuple(x_shape))
        return _np.reshape(_np.stack(rows), tuple(out_shape) + tuple(x_shape))

    return jacobian_fun


def _compute_rows(rows, vjp):
    """The Jacobian's rows (each the flat cotangents of the inputs) unflattened, with every
    lazy (Dask) row of a NumPy input computed in one dask.compute: one graph, whose shared
    forward pass runs once, instead of one compute per row."""
    k = len(vjp._inputs)
    flat = compute_pending([c for row in rows for c in row], list(vjp._inputs) * len(rows))
    return [vjp._unflatten(flat[i * k : (i + 1) * k]) for i in range(len(rows))]


@checked_operator
@operator_doc("array", "int")
def tensor_jacobian_product(fun: Callable[..., Any], argnum: int = 0) -> Callable[..., Any]:
    """A tensor contracted with the Jacobian of ``fun`` (a VJP for outputs of any shape).

    {fun and argnum}
        ``tjp(*args, v)``: ``v`` (shaped like the output) contracted with the Jacobian over the
        output's axes, shaped like ``args[argnum]``. The last positional argument is ``v``.

    Examples
    --------
    >>> import gradcy.numpy as np
    >>> from gradcy import tensor_jacobian_product
    >>> tjp = tensor_jacobian_product(np.cumsum)
    >>> print(tjp(np.array([1.0, 2.0, 3.0]), np.ones(3)))
    [3. 2. 1.]
    """

    def vector_dot_fun(*args, **kwargs):
        args, vector = args[:-1], args[-1]
        return _np.tensordot(vector, fun(*args, **kwargs), axes=_np.ndim(vector))

    tjp = jacobian(vector_dot_fun, argnum)

    def tensor_jacobian_product_fun(*args, **kwargs):
        _check_argnum(args[:-1], argnum, "tensor_jacobian_product", " besides the vector")
        return tjp(*args, **kwargs)

    return tensor_jacobian_product_fun


@checked_operator
def grad_named(fun: Callable[P, Any], argname: str) -> Callable[P, Any]:
    """The gradient with respect to an argument given by its parameter name.

    Parameters
    ----------
    fun : callable
        A function returning a real scalar.
    argname : str
        The name of the parameter of ``fun`` to differentiate with respect to. The argument
        must still be passed positionally.

    Returns
    -------
    callable
        ``grad(fun, argnum)`` for the position of ``argname`` in ``fun``'s signature.

    Examples
    --------
    >>> from gradcy import grad_named
    >>> def f(x, y):
    ...     return x * y ** 2
    >>> grad_named(f, "y")(3.0, 2.0)
    12.0
    """
    arg_index = list(inspect.signature(fun).parameters).index(argname)
    return grad(fun, arg_index)


@checked_operator
def multigrad_dict(fun: Callable[P, Any]) -> Callable[P, dict[str, Any]]:
    """The gradients with respect to every argument, as a dict keyed by parameter name.

    Parameters
    ----------
    fun : callable
        A function returning a real scalar.

    Returns
    -------
    callable
        ``gradfun(*args, **kwargs) -> {name: gradient}`` for every argument given (by
        position or by keyword).

    Examples
    --------
    >>> from gradcy import multigrad_dict
    >>> def f(x, y):
    ...     return x * y ** 2
    >>> multigrad_dict(f)(3.0, 2.0)
    {'x': 4.0, 'y': 12.0}
    """
    sig = inspect.signature(fun)

    def gradfun(*args, **kwargs):
        bound = sig.bind(*args, **kwargs)
        names = list(bound.arguments)
        values = [bound.arguments[n] for n in names]

        def f_of_values(vals):
            return fun(**dict(zip(names, vals)))

        grads = grad(f_of_values)(values)
        return dict(zip(names, grads))

    return gradfun


@checked_operator
def checkpoint(fun: Callable[P, R]) -> Callable[P, R]:
    """``fun`` as one recorded operation that recomputes its insides during the backward pass.

    A checkpointed call saves only its inputs; its intermediate values are computed again
    when the backward pass reaches it, instead of being held from the forward pass: memory
    traded for time. Use it on the blocks of a long chain (the layers of a network, the steps
    of a simulation) to hold one block's intermediates at a time.

    Parameters
    ----------
    fun : callable
        A function of positional arguments (any of which may be traced) returning a value or
        a tuple/list/dict of values. Traced values it closes over (a layer's weights in the
        enclosing function: ``checkpoint(lambda h: np.tanh(h @ W))``, directly or in a
        tuple/list/dict) are inputs of the call too; a traced value it reaches otherwise (an
        attribute, a global) raises: pass it as an argument.

    Returns
    -------
    callable
        A function computing what ``fun`` computes, differentiable in reverse and forward
        mode and to any order.

    Examples
    --------
    >>> import gradcy.numpy as np
    >>> from gradcy import checkpoint, grad
    >>> def block(x):
    ...     for _ in range(10):
    ...         x = np.tanh(x)
    ...     return x
    >>> cblock = checkpoint(block)
    >>> x = np.linspace(-1.0, 1.0, 4)
    >>> g = grad(lambda x: np.sum(cblock(cblock(x))))(x)
    >>> bool(np.allclose(g, grad(lambda x: np.sum(block(block(x))))(x)))
    True
    """
    name = getattr(fun, "__name__", "fun")

    def run(closed, packed, *args, **kwargs):
        """fun(*args) with the traced values fun closes over (`closed`: (cell, rebuild, count)
        per such cell of its closure, their values the last arguments) put back in its cells:
        the call's plain values when it runs as the primitive, traced ones when the backward
        pass or forward mode traces it again. `packed`: (rebuild, count) per argument of fun,
        a tuple/list/dict holding traced values passed as its leaves (rebuild None: as is)."""
        f = fun
        plain = not any(isinstance(a, Box) for a in args)
        if closed:
            n = len(args) - sum(count for _, _, count in closed)
            f = _with_cells(fun, closed, args[n:])
            args = args[:n]
        if packed is not None:
            rebuilt, k = [], 0
            for rebuild, count in packed:
                rebuilt.append(args[k] if rebuild is None else rebuild(list(args[k : k + count])))
                k += count
            args = rebuilt
        out = f(*args, **kwargs)
        if plain:
            _check_untraced_output(out, name)
        return out

    def vjp(argnums, g, g_owned, ans, args, kwargs):
        try:
            inner, _ = _trace(run, args, kwargs, tuple(argnums), "checkpoint", consume=True)
        except RuntimeError as e:
            if "backward pass runs" not in str(e):
                raise
            raise RuntimeError(_hidden_traced_message(name)) from e
        return inner(g)

    def jvp_argnums(argnums, gs, ans, args, kwargs):
        argnums = tuple(argnums)
        return _forward(
            run, args, kwargs, argnums, [args[i] for i in argnums], tuple, gs, "checkpoint"
        )[1]

    wrapped = primitive(run, f"checkpoint({name})")
    wrapped.guard_args = True  # (run is gradcy's, the function it runs the user's)
    defvjp_argnums_direct(wrapped, vjp, save=("args",))
    defjvp_argnums(wrapped, jvp_argnums)

    def checkpointed(*args, **kwargs):
        closed, values = _closed_traced(fun)
        packed, flat = None, args
        if any(isinstance(a, (tuple, list, dict)) for a in args):
            # a container argument holding traced values is passed as its leaves (the
            # primitive sees traced values as its own arguments only), rebuilt in run
            packed, flat = [], []
            for a in args:
                leaves, rebuild = (
                    tree_flatten(a) if isinstance(a, (tuple, list, dict)) else ((a,), None)
                )
                if rebuild is not None and any(isinstance(leaf, Box) for leaf in leaves):
                    packed.append((rebuild, len(leaves)))
                    flat.extend(leaves)
                else:
                    packed.append((None, 1))
                    flat.append(a)
            packed = tuple(packed)
        return wrapped(closed, packed, *flat, *values, **kwargs)

    return wraps(fun)(checkpointed)


def _closed_traced(fun, seen=None):
    """The cells of fun's closure that hold traced values (a Box, a tuple/list/dict with one,
    or a function whose own closure holds one: a wrapper of the block): ((cell index,
    rebuild, number of values), ...) and their values, flat."""
    cells = getattr(fun, "__closure__", None)
    closed, values = [], []
    if not cells or type(fun) is not _FunctionType:
        return (), values
    seen = {id(fun)} if seen is None else seen | {id(fun)}
    for i, cell in enumerate(cells):
        try:
            v = cell.cell_contents
        except ValueError:  # (a cell not yet assigned)
            continue
        if isinstance(v, Box):
            closed.append((i, None, 1))
            values.append(v)
        elif isinstance(v, (tuple, list, dict)):
            leaves, rebuild = tree_flatten(v)
            if any(isinstance(leaf, Box) for leaf in leaves):
                closed.append((i, rebuild, len(leaves)))
                values.extend(leaves)
        elif type(v) is _FunctionType and id(v) not in seen and len(seen) < 8:
            inner, leaves = _closed_traced(v, seen)
            if inner:
                closed.append((i, partial(_with_cells, v, inner), len(leaves)))
                values.extend(leaves)
    return tuple(closed), values


def _with_cells(fun, closed, values):
    """A copy of function fun whose closure cells listed in `closed` hold `values` (fun's
    own cells are left as they are: other calls, other threads)."""
    cells = list(fun.__closure__)
    k = 0
    for i, rebuild, count in closed:
        part = values[k : k + count]
        k += count
        cells[i] = _CellType(part[0] if rebuild is None else rebuild(list(part)))
    f = _FunctionType(fun.__code__, fun.__globals__, fun.__name__, fun.__defaults__, tuple(cells))
    f.__kwdefaults__ = fun.__kwdefaults__
    return f


def _hidden_traced_message(name):
    return (
        f"checkpoint({name}): the function computes with a traced value that it neither "
        f"receives as an argument nor holds in its closure (an attribute of an object, a "
        f"global, ...), which checkpoint cannot compute again in the backward pass. Pass "
        f"it as an argument: checkpoint(lambda h, W: ...)(h, W)."
    )


def _check_untraced_output(out, name):
    """The primitive's function ran on plain values: a traced value in its output came from
    a traced value it reached some other way."""
    leaves = tree_flatten(out)[0] if isinstance(out, (tuple, list, dict)) else [out]
    if any(isinstance(leaf, Box) for leaf in leaves):
        raise ValueError(_hidden_traced_message(name))
