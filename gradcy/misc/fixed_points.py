"""fixed_point(f, a, x0, distance, tol): the fixed point x* = f(a)(x*) reached by iterating
f(a) from x0 until distance(x_new, x_old) <= tol, differentiable in `a` through the implicit
function theorem (the iterations themselves are not recorded).

At x* = f(a)(x*), with A = d f(a)(x)/dx and B = d f(a)(x)/da at (a, x*):
  VJP:  a_bar = B^T w   where w = x_bar + A^T w      (w itself found as a fixed point)
  JVP:  dx = A dx + B da                             (likewise)
Both inner fixed points are computed by this same function, so they are differentiable in turn
(gradients of any order, forward and reverse). `a` may be an array, a scalar, or a nested
tuple/list/dict of them; x0 only chooses the starting point and gets no gradient.
"""

from collections.abc import Callable
from typing import Any, TypeVar

from .._forward_mode import make_jvp
from .._pytree import tree_flatten
from .._reverse_mode import make_vjp
from ..registry import defjvp_argnums, defvjp_argnums_direct, primitive
from ..vspace import vspace

_X = TypeVar("_X")  # the iterate

__all__ = ["fixed_point"]

_FIRST_LEAF = 5  # argument position of the first leaf of `a` in the primitive's call


def _iterate(x0, f, distance, tol, unflatten, *a_leaves):
    step = f(unflatten(list(a_leaves)))
    x, x_prev = step(x0), x0
    while distance(x, x_prev) > tol:
        x, x_prev = step(x), x
    return x


_fixed_point = primitive(_iterate, "gradcy.misc.fixed_points.fixed_point")
_saved_leaves = 0


def _ensure_saved(n):
    """The VJP reads the output and the leaves of `a`, not x0: save exactly those (the
    positions of the leaves depend on how many there are)."""
    global _saved_leaves
    if n > _saved_leaves:
        _saved_leaves = max(n, 2 * _saved_leaves, 8)
        _fixed_point.set_saved(("ans",) + tuple(range(_FIRST_LEAF, _FIRST_LEAF + _saved_leaves)))


def fixed_point(
    f: Callable[[Any], Callable[[_X], _X]],
    a: Any,
    x0: _X,
    distance: Callable[[_X, _X], Any],
    tol: float,
) -> _X:
    """The fixed point of ``f(a)``, differentiable with respect to ``a``.

    Iterates ``x <- f(a)(x)`` from ``x0`` until ``distance(x, x_previous) <= tol``. The
    iterations are not recorded: the derivatives come from the implicit function theorem at
    the fixed point, themselves computed as fixed points, so they are differentiable in turn
    (any order, forward and reverse mode).

    Parameters
    ----------
    f : callable
        ``f(a)`` returns the function to iterate, ``x -> x_next``.
    a : array, scalar, or tuple/list/dict of these
        The parameters, differentiated.
    x0 : array or scalar
        The starting point (not differentiated).
    distance : callable
        ``distance(x_new, x_old)``, a float.
    tol : float
        The stopping tolerance.

    Returns
    -------
    The fixed point ``x``.

    Examples
    --------
    >>> from gradcy import grad
    >>> from gradcy.misc import fixed_point
    >>> def newton_sqrt(a):
    ...     return lambda x: 0.5 * (x + a / x)
    >>> def sqrt(a):
    ...     return fixed_point(newton_sqrt, a, 1.0, lambda x, y: abs(x - y), 1e-10)
    >>> print(round(sqrt(2.0), 8), round(grad(sqrt)(2.0), 8))     # d sqrt(a)/da = 1/(2 sqrt(a))
    1.41421356 0.35355339
    """
    leaves, unflatten = tree_flatten(a)
    _ensure_saved(len(leaves))
    return _fixed_point(x0, f, distance, tol, unflatten, *leaves)


# ---- reverse mode -------------------------------------------------------------------------
def _adjoint_step(f, params):
    """w -> x_bar + A^T w, for params = (a, x*, x_bar)."""
    a, x_star, x_bar = params
    vjp_x, _ = make_vjp(f(a))(x_star)
    vs = vspace(x_star)
    return lambda w: vs.add(vjp_x(w), x_bar)


def _fixed_point_vjp(argnums, g, g_owned, ans, args, kwargs):
    _, f, distance, tol, unflatten = args[:_FIRST_LEAF]
    a = unflatten(list(args[_FIRST_LEAF:]))
    w = fixed_point(lambda p: _adjoint_step(f, p), (a, ans, g), vspace(ans).zeros(), distance, tol)
    vjp_a, _ = make_vjp(lambda aa: f(aa)(ans))(a)
    try:
        grads = tree_flatten(vjp_a(w))[0]
    finally:
        vjp_a.release()
    return tuple([None if k < _FIRST_LEAF else grads[k - _FIRST_LEAF] for k in argnums])


# ---- forward mode -------------------------------------------------------------------------
def _tangent_step(f, params):
    """t -> A t + b, for params = (a, x*, b)."""
    a, x_star, b = params
    jvp_x = make_jvp(f(a))(x_star)
    vs = vspace(x_star)
    return lambda t: vs.add(jvp_x(t)[1], b)


def _fixed_point_jvp(argnums, gs, ans, args, kwargs):
    _, f, distance, tol, unflatten = args[:_FIRST_LEAF]
    leaves = list(args[_FIRST_LEAF:])
    tangents = [vspace(leaf).zeros() for leaf in leaves]
    for k, g in zip(argnums, gs):
        if k >= _FIRST_LEAF:
            tangents[k - _FIRST_LEAF] = g
    a = unflatten(leaves)
    b = make_jvp(lambda aa: f(aa)(ans))(a)(unflatten(tangents))[1]
    return fixed_point(
        lambda p: _tangent_step(f, p), (a, ans, b), vspace(ans).zeros(), distance, tol
    )


defvjp_argnums_direct(_fixed_point, _fixed_point_vjp, save=("ans",))
defjvp_argnums(_fixed_point, _fixed_point_jvp)
_ensure_saved(8)
