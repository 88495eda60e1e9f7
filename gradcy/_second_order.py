"""Second-order products built on the reverse-mode operators: hessian,
hessian_tensor_product (hessian_vector_product), make_hvp, make_ggnvp and
make_jvp_reversemode (a JVP as the VJP of a VJP)."""

from collections.abc import Callable
from functools import wraps
from typing import Any

import numpy as _np

from . import backends
from ._arguments import _differentiated_leaves, checked_operator
from ._core import Box
from ._docstrings import operator_doc
from ._batched import BatchedTangent, BatchingError
from ._forward_mode import _forward_batched
from ._pytree import tree_flatten
from ._reverse_mode import grad, jacobian, make_vjp
from ._tracing import VJP
from ._typing import P
from .wrap_util import _check_argnum, unary_to_nary


@checked_operator
@operator_doc("scalar", "int")
def hessian(fun: Callable[P, Any], argnum: int = 0) -> Callable[P, Any]:
    """The Hessian of a scalar-valued function: the Jacobian of its gradient.

    {fun and argnum}
        ``hessian_fun(*args, **kwargs)``: an array of shape ``x.shape + x.shape`` for
        ``x = args[argnum]``.

    Notes
    -----
    With Dask data (a NumPy parameter ``x``), and with NumPy data of at least 65,536 elements
    in all, the Hessian is forward mode over the gradient's reverse pass with the
    ``x.size`` unit tangents carried together as one batch: one pass, one graph and one
    ``dask.compute``; a matrix product with the unit vectors selects columns instead of
    multiplying (for a logistic loss the graph is the hand-written ``X.T @ (s * X)``).
    Otherwise, and where a rule cannot take a batch, it is one reverse pass per row of the
    gradient's Jacobian.

    See Also
    --------
    hessian_tensor_product, make_hvp : Hessian-vector products without forming the Hessian.

    Examples
    --------
    >>> import gradcy.numpy as np
    >>> from gradcy import hessian
    >>> print(hessian(lambda x: x[0] ** 2 * x[1])(np.array([1.0, 2.0])))
    [[4. 2.]
     [2. 0.]]
    """
    hess = jacobian(jacobian(fun, argnum), argnum)
    fun_grad = grad(fun, argnum)

    @wraps(fun)
    def hessian_fun(*args, **kwargs):
        _check_argnum(args, argnum, "hessian")
        if _batchable(args, kwargs, argnum):
            try:
                return _hessian_batched(fun_grad, args, kwargs, argnum)
            except BatchingError:  # a rule that cannot take a batch: one row at a time
                pass  # (any other error is the function's own: it goes on, raised once)
        return hess(*args, **kwargs)

    return hessian_fun


# NumPy arguments: the batched pass runs when they hold at least _NUMPY_MIN elements (below,
# a reverse pass per row is faster: 0.2 ms against 0.8 ms for a 100 x 5 logistic loss) and
# the whole batch fits: tangents x elements <= _NUMPY_BUDGET (100,000 x 20 data, 20 tangents:
# 0.22 s against 0.48 s; split into smaller batches it is slower than the reverse passes).
# Dask data: always, in batches of at most _LAZY_STEP tangents (memory per chunk), every batch
# computed in one dask.compute.
_NUMPY_MIN = 1 << 16
_NUMPY_BUDGET = 1 << 26
_LAZY_STEP = 256


def _batchable(args, kwargs, argnum):
    """hessian's forward-over-reverse pass applies (see _NUMPY_MIN): a real floating ndarray
    parameter and no traced values among the arguments (a Hessian inside another
    differentiation takes the reverse-over-reverse path)."""
    if type(argnum) is not int or argnum < 0:
        return False
    x = args[argnum]
    if type(x) is not _np.ndarray or x.dtype.kind != "f" or x.ndim == 0 or x.size == 0:
        return False
    leaves = tree_flatten((args, kwargs))[0]
    if any(type(leaf) is Box for leaf in leaves):
        return False
    if any(backends.is_lazy(leaf) for leaf in leaves):
        return True
    elements = sum(leaf.size for leaf in leaves if type(leaf) is _np.ndarray)
    return elements >= _NUMPY_MIN and x.size * elements <= _NUMPY_BUDGET


def _hessian_batched(fun_grad, args, kwargs, argnum):
    """The Hessian as the Jacobian of the gradient by forward mode over the gradient's
    reverse pass, its x.size tangents (the unit vectors) carried together as one batch:
    one pass, whose products with a matrix operand are one matrix product (on Dask data one
    graph, one blockwise layer per step; batches of at most _LAZY_STEP tangents, all computed
    in one dask.compute)."""
    x = args[argnum]
    n = x.size
    leaves, unflatten = _differentiated_leaves(args, argnum, "hessian")
    lazy = any(backends.is_lazy(leaf) for leaf in tree_flatten((args, kwargs))[0])
    step = min(n, _LAZY_STEP) if lazy else n
    eye = _np.eye(n, dtype=x.dtype)
    parts = []
    for start in range(0, n, step):
        batch = eye[start : start + step].reshape((-1,) + x.shape)
        if step == n and x.ndim == 1:  # the whole standard basis: products select
            batch = BatchedTangent(batch, eye=True)
        parts.append(
            _forward_batched(fun_grad, args, kwargs, argnum, leaves, unflatten, [batch], "hessian")[
                1
            ][0]
        )
    if any(backends.is_lazy(p) for p in parts):
        parts = backends.compute_pending(parts, [x] * len(parts))
    rows = parts[0] if len(parts) == 1 else _np.concatenate(parts)
    # rows[j] is the derivative of the gradient along x's j-th unit vector: H[..., j]
    h = _np.moveaxis(_np.asarray(rows).reshape((n,) + x.shape), 0, -1)
    return _np.ascontiguousarray(h.reshape(x.shape + x.shape), dtype=x.dtype)


@checked_operator
@operator_doc("scalar", "int")
def hessian_tensor_product(fun: Callable[..., Any], argnum: int = 0) -> Callable[..., Any]:
    """The Hessian of a scalar-valued function contracted with a tensor, without forming the
    Hessian (``hessian_vector_product`` is the same function).

    {fun and argnum}
        ``hvp(*args, v)``: ``H v``, the Hessian at ``args`` with respect to ``args[argnum]``
        contracted with ``v`` (shaped like that argument) over all its axes. The last
        positional argument is ``v``.

    See Also
    --------
    make_hvp : reuses one traced gradient for many vectors.

    Examples
    --------
    >>> import gradcy.numpy as np
    >>> from gradcy import hessian_vector_product
    >>> hvp = hessian_vector_product(lambda x: x[0] ** 2 * x[1])
    >>> print(hvp(np.array([1.0, 2.0]), np.array([1.0, 0.0])))     # first column of H
    [4. 2.]
    """
    fun_grad = grad(fun, argnum)

    def vector_dot_grad(*args, **kwargs):
        args, vector = args[:-1], args[-1]
        return _np.tensordot(fun_grad(*args, **kwargs), vector, _np.ndim(vector))

    hvp = grad(vector_dot_grad, argnum)

    def hessian_tensor_product_fun(*args, **kwargs):
        _check_argnum(args[:-1], argnum, "hessian_tensor_product", " besides the vector")
        if _lazy_product(args, kwargs, argnum):
            try:
                return _hvp_forward(fun_grad, args, kwargs, argnum)
            except BatchingError:  # a rule that cannot take a batch: reverse over reverse
                pass
        return hvp(*args, **kwargs)

    return hessian_tensor_product_fun


def _lazy_product(args, kwargs, argnum):
    """hessian_tensor_product's forward-over-reverse pass applies: Dask data among the
    arguments, a real floating parameter of vector's shape, no traced value. On Dask its graph
    is built in about 0.6x the time of the reverse-over-reverse one, with fewer tasks; on NumPy
    the second reverse pass is the faster one (no batch axis), so NumPy stays on it."""
    *args, vector = args
    if type(argnum) is not int or argnum < 0 or argnum >= len(args):
        return False
    x = args[argnum]
    if not (_batchable_leaf(x) and _batchable_leaf(vector)) or vector.shape != x.shape:
        return False
    leaves = tree_flatten((args, kwargs))[0]
    return any(backends.is_lazy(leaf) for leaf in leaves) and not any(
        type(leaf) is Box for leaf in leaves
    )


def _batchable_leaf(x):
    return (type(x) is _np.ndarray or backends.is_lazy(x)) and x.dtype.kind == "f"


def _hvp_forward(fun_grad, args, kwargs, argnum):
    """H v as the derivative of the gradient along v: one forward pass over the gradient's
    reverse pass (a batch of one tangent, whose products with plain values stay unformed until
    a matrix product needs them)."""
    *args, vector = args
    args = tuple(args)
    x = args[argnum]
    leaves, unflatten = _differentiated_leaves(args, argnum, "hessian_tensor_product")
    t = _forward_batched(
        fun_grad, args, kwargs, argnum, leaves, unflatten, [vector[None]], "hessian_tensor_product"
    )[1][0][0]
    return backends.compute_pending([backends.match_gradient(t, x)], [x])[0]


hessian_vector_product = hessian_tensor_product


@checked_operator
@operator_doc("scalar", "int")
def make_hvp(fun: Callable[P, Any], argnum: int = 0) -> Callable[P, tuple[VJP, Any]]:
    """A function returning Hessian-vector products of ``fun`` at a point, and the gradient there.

    The gradient is traced once; each product is one backward pass through it.

    {fun and argnum}
        ``hvp_maker(*args, **kwargs) -> (hvp, gradient)``: ``hvp(v)`` is the Hessian at
        ``args`` times ``v``. ``hvp`` holds its tape until ``hvp.release()`` or until it is
        dropped.

    See Also
    --------
    hessian_vector_product : one product per call.

    Examples
    --------
    >>> import gradcy.numpy as np
    >>> from gradcy import make_hvp
    >>> hvp, g = make_hvp(lambda x: x[0] ** 2 * x[1])(np.array([1.0, 2.0]))
    >>> print(g, hvp(np.array([1.0, 0.0])), hvp(np.array([0.0, 1.0])))
    [4. 1.] [4. 2.] [2. 0.]
    >>> hvp.release()
    """

    def hvp_maker(*args, **kwargs):
        _check_argnum(args, argnum, "make_hvp")
        return make_vjp(grad(fun, argnum), argnum)(*args, **kwargs)

    return hvp_maker


def make_ggnvp(
    f: Callable[P, Any], g: Callable[[Any], Any] | None = None, f_argnum: int = 0
) -> Callable[P, Callable[[Any], Any]]:
    """Generalized Gauss-Newton products of ``g`` composed with ``f``.

    Parameters
    ----------
    f : callable
        The inner function (for example a model's predictions as a function of its
        parameters).
    g : callable, optional
        A scalar function of ``f``'s output (for example a loss). Default: half the squared
        norm over the last axis, ``0.5 * sum(y ** 2, axis=-1)``.
    f_argnum : int, optional
        The positional argument of ``f`` to differentiate with respect to (default 0).

    Returns
    -------
    callable
        ``ggnvp_maker(*args, **kwargs) -> ggnvp``: ``ggnvp(v)`` is ``J^T H J v``, with ``J``
        the Jacobian of ``f`` at ``args`` and ``H`` the Hessian of ``g`` at ``f(*args)``.

    Examples
    --------
    >>> import gradcy.numpy as np
    >>> from gradcy import make_ggnvp
    >>> ggnvp = make_ggnvp(np.sin)(np.array([0.0, 1.0]))      # J = diag(cos x), H = I
    >>> print(ggnvp(np.array([1.0, 1.0])))                     # cos(x)**2 * v
    [1.         0.29192658]
    """
    if g is None:

        def g(y):
            return 0.5 * _np.sum(y**2, axis=-1)

    def ggnvp_maker(*args, **kwargs):
        _check_argnum(args, f_argnum, "make_ggnvp")
        f_vjp, f_x = make_vjp(f, f_argnum)(*args, **kwargs)
        g_hvp, grad_g_x = make_vjp(grad(g))(f_x)
        # the JVP of f as the VJP of its (linear) VJP, taken at zero
        f_jvp, _ = make_vjp(f_vjp)(_np.zeros_like(grad_g_x))

        def ggnvp(v):
            return f_vjp(g_hvp(f_jvp(v)))

        return ggnvp

    return ggnvp_maker


@unary_to_nary
def make_jvp_reversemode(fun, x):
    """make_jvp_reversemode(fun, argnum)(*args) -> jvp: jvp(v) is J v, computed with two
    reverse passes (the VJP of the VJP, which is linear in its cotangent) instead of forward
    mode."""
    vjp, y = make_vjp(fun)(x)
    vjp_vjp, _ = make_vjp(vjp)(_np.zeros_like(y) if not isinstance(y, float) else 0.0)
    return vjp_vjp
