"""Numerical checks of derivatives, with the API of autograd's test_util.

check_grads(f, argnum=0, modes=("fwd", "rev"), order=2)(*args) compares, along random
directions, the JVP and VJP of f with respect to argument argnum with central differences of f
(float64), recursively to `order`, and checks that every derivative has the type, dtype and
shape of what it is the derivative of.
"""

import itertools
from collections.abc import Callable, Sequence
from typing import Any

import numpy as _np

from .core import vspace  # (autograd.test_util has it)
from ._arguments import _match_input
from ._docstrings import fill
from ._forward_mode import make_jvp
from ._pytree import tree_flatten
from ._reverse_mode import make_vjp
from .wrap_util import get_name, unary_to_nary

EPS = 1e-6
RTOL = 1e-5
ATOL = 1e-6

__all__ = [
    "check_grads",
    "check_vjp",
    "check_jvp",
    "scalar_close",
    "combo_check",
    "check_equivalent",
    "make_numerical_jvp",
]
TOL = ATOL


def _leaves(x):
    return tree_flatten(x)[0]


def _random_like(x, rs):
    leaves, unflatten = tree_flatten(x)
    out = []
    for leaf in leaves:
        shape = _np.shape(leaf)
        v = rs.randn(*shape)
        if _np.iscomplexobj(leaf):
            v = v + 1j * rs.randn(*shape)
        out.append(_match_input(v, leaf))
    return unflatten(out)


def _vdot(a, b):
    """Real inner product of two values with the same structure."""
    total = 0.0
    for x, y in zip(_leaves(a), _leaves(b)):
        total += _np.real(
            _np.vdot(_np.asarray(x, dtype=complex).ravel(), _np.asarray(y, dtype=complex).ravel())
        )
    return total


def _axpy(a, x, y):
    """y + a * x leafwise, keeping each leaf's type."""
    lx, _ = tree_flatten(x)
    ly, unflatten = tree_flatten(y)
    return unflatten(
        [_match_input(_np.asarray(yy) + a * _np.asarray(xx), yy) for xx, yy in zip(lx, ly)]
    )


def scalar_close(a: Any, b: Any) -> bool:
    """Whether two numbers agree to the checks' tolerance: absolute difference below ``ATOL``
    or relative difference below ``RTOL``.

    Examples
    --------
    >>> from gradcy.test_util import scalar_close
    >>> scalar_close(1.0, 1.0 + 1e-9), scalar_close(1.0, 1.1)
    (True, False)
    """
    return abs(a - b) < ATOL or abs(a - b) / max(abs(a), abs(b)) < RTOL


def _check_like(g, x, what):
    for gl, xl in zip(_leaves(g), _leaves(x)):
        gt, xt = type(gl), type(xl)
        if isinstance(xl, _np.ndarray):
            assert isinstance(gl, _np.ndarray), f"{what}: gradient is {gt.__name__}, input ndarray"
            assert gl.dtype == xl.dtype, f"{what}: gradient dtype {gl.dtype}, input {xl.dtype}"
            assert gl.shape == xl.shape, f"{what}: gradient shape {gl.shape}, input {xl.shape}"
        else:
            assert gt is xt, f"{what}: gradient is {gt.__name__}, input {xt.__name__}"


def _covector(x):
    """The conjugate of complex leaves (identity on real ones): how a cotangent pairs with a
    tangent under autograd's convention for complex values."""
    leaves, unflatten = tree_flatten(x)
    return unflatten([_np.conj(leaf) if _np.iscomplexobj(leaf) else leaf for leaf in leaves])


def _name(f):
    return getattr(f, "__name__", repr(f))


# the parameters x and rs and the Raises section of check_vjp and check_jvp
_one_direction_doc = fill(
    {
        "x, rs and raises": """x : value
    The point.
rs : numpy.random.RandomState, optional
    The source of the random directions (default: seeded with 0).

Raises
------
AssertionError
    Naming the function, with the analytic and numeric values."""
    }
)


@_one_direction_doc
def check_vjp(f: Callable[[Any], Any], x: Any, rs: _np.random.RandomState | None = None) -> None:
    """Check the VJP of ``f`` at ``x`` against central differences, along one random direction.

    For random ``u`` (shaped like the output) and ``v`` (shaped like ``x``), the inner
    product ``<v, vjp(u)>`` must equal ``<u, (f(x + eps v/2) - f(x - eps v/2)) / eps>``
    (complex values paired by autograd's convention), and the cotangent must have the type,
    dtype and shape of ``x``.

    Parameters
    ----------
    f : callable
        A function of one value (an array, scalar, or tuple/list/dict of these).
    {x, rs and raises}

    Examples
    --------
    >>> import numpy as onp
    >>> import gradcy.numpy as np
    >>> from gradcy.test_util import check_vjp
    >>> check_vjp(np.sin, onp.array([0.1, 0.5]))          # passes silently
    """
    rs = rs or _np.random.RandomState(0)
    vjp, y = make_vjp(f)(x)
    try:
        u = _random_like(y, rs)
        v = _random_like(x, rs)
        vjp_u = vjp(_covector(u))
    finally:
        vjp.release()
    name = _name(f)
    _check_like(vjp_u, x, f"VJP of {name}")
    analytic = _vdot(v, _covector(vjp_u))
    numeric = (_vdot(u, f(_axpy(EPS / 2, v, x))) - _vdot(u, f(_axpy(-EPS / 2, v, x)))) / EPS
    assert scalar_close(numeric, analytic), (
        f"Derivative (VJP) check of {name} failed at {x!r}:\n"
        f"  analytic (VJP) = {analytic!r}\n  numeric (central differences) = {numeric!r}"
    )


@_one_direction_doc
def check_jvp(f: Callable[[Any], Any], x: Any, rs: _np.random.RandomState | None = None) -> None:
    """Check the JVP of ``f`` at ``x`` against central differences, along one random direction;
    the tangent must have the type, dtype and shape of the output.

    Parameters
    ----------
    f : callable
        A function of one value.
    {x, rs and raises}

    Examples
    --------
    >>> from gradcy.test_util import check_jvp
    >>> import gradcy.numpy as np
    >>> check_jvp(np.tanh, 0.3)                           # passes silently
    """
    rs = rs or _np.random.RandomState(0)
    v = _random_like(x, rs)
    y, jv = make_jvp(f)(x)(v)
    name = _name(f)
    _check_like(jv, y, f"JVP of {name}")
    numeric = _axpy(-1.0, f(_axpy(-EPS / 2, v, x)), f(_axpy(EPS / 2, v, x)))
    u = _random_like(y, rs)
    analytic_p = _vdot(u, jv)
    numeric_p = _vdot(u, numeric) / EPS
    assert scalar_close(numeric_p, analytic_p), (
        f"Derivative (JVP) check of {name} failed at {x!r}:\n"
        f"  analytic (JVP) = {analytic_p!r}\n  numeric (central differences) = {numeric_p!r}"
    )


@unary_to_nary
def check_grads(
    f: Callable[[Any], Any], x: Any, modes: str | Sequence[str] = ("fwd", "rev"), order: int = 2
) -> None:
    """Check the derivatives of ``f`` against central differences (float64), in reverse and/or
    forward mode, to a given order.

    Each mode is checked with `check_vjp` / `check_jvp` along random directions; with
    ``order > 1`` the VJP (JVP), as a function of the point and the direction, is checked in
    turn, down to ``order``. Use it on the rules registered with `gradcy.extend.defvjp` and
    `gradcy.extend.defjvp`.

    Parameters
    ----------
    f : callable
        The function to check.
    argnum : int or tuple of int, optional
        The positional argument(s) of ``f`` to differentiate with respect to (default 0).
    modes : str or sequence of {'fwd', 'rev'}, optional
        The modes to check (default both).
    order : int, optional
        The highest order of derivatives checked (default 2).

    Returns
    -------
    callable
        ``checker(*args, **kwargs)``: runs the checks at ``args``; returns None, or raises
        AssertionError naming the function.

    Examples
    --------
    >>> import numpy as onp
    >>> import gradcy.numpy as np
    >>> from gradcy.extend import primitive, defvjp
    >>> from gradcy.test_util import check_grads
    >>> check_grads(np.tanh, modes=["fwd", "rev"], order=2)(onp.array([0.1, 0.5]))
    >>> check_grads(np.arctan2, argnum=(0, 1))(onp.array([0.1, 0.5]), onp.array([1.0, 2.0]))
    >>> @primitive
    ... def my_sin(x):
    ...     return onp.sin(x)
    >>> defvjp(my_sin, lambda ans, x: lambda g: g * onp.sin(x))     # wrong: should be cos
    >>> check_grads(my_sin, modes=["rev"], order=1)(onp.array([0.1, 0.5]))
    Traceback (most recent call last):
    ...
    AssertionError: ...check of ...failed...
    """
    modes = (modes,) if isinstance(modes, str) else tuple(modes)
    for m in modes:
        if m not in ("rev", "fwd"):
            raise ValueError(f"check_grads: unknown mode {m!r}; use 'rev' and/or 'fwd'")
    _check(f, x, modes, order, _np.random.RandomState(0))


def _check(f, x, modes, order, rs):
    name = _name(f)
    if "fwd" in modes:
        check_jvp(f, x, rs)
        if order > 1:

            def jvp_of(packed):
                xx, vv = packed
                return make_jvp(f)(xx)(vv)[1]

            jvp_of.__name__ = f"jvp_{name}"
            _check(jvp_of, (x, _random_like(x, rs)), modes, order - 1, rs)
    if "rev" in modes:
        check_vjp(f, x, rs)
        if order > 1:
            vjp, y = make_vjp(f)(x)
            vjp.release()

            def vjp_of(packed):
                xx, uu = packed
                vjp_inner, _ = make_vjp(f)(xx)
                try:
                    return vjp_inner(uu)
                finally:
                    vjp_inner.release()

            vjp_of.__name__ = f"vjp_{name}"
            _check(vjp_of, (x, _random_like(y, rs)), modes, order - 1, rs)


def combo_check(fun: Callable[..., Any], *args: Any, **kwargs: Any) -> Callable[..., None]:
    """`check_grads` at every combination of the given argument values.

    Parameters
    ----------
    fun : callable
        The function to check.
    *args, **kwargs
        Passed on to `check_grads` (``argnum``, ``modes``, ``order``).

    Returns
    -------
    callable
        ``checker(*arg_options, **kwarg_options)``: each positional argument and each keyword
        argument of ``fun`` is given as a list of values; ``fun`` is checked at every
        combination (keyword arguments are passed to ``fun``, not differentiated).

    Examples
    --------
    >>> import numpy as onp
    >>> import gradcy.numpy as np
    >>> from gradcy.test_util import combo_check
    >>> combo_check(np.sum, modes=["rev"], order=1)([onp.ones((2, 3))], axis=[None, 0, 1])
    """

    def checker(*arg_options, **kwarg_options):
        kw_items = [[(k, v) for v in vs] for k, vs in kwarg_options.items()]
        for a in itertools.product(*arg_options):
            for kw in itertools.product(*kw_items):
                check_grads(fun, *args, **kwargs)(*a, **dict(kw))

    return checker


def check_equivalent(x: Any, y: Any) -> None:
    """Assert that ``x`` and ``y`` have the same structure and equal values (to the checks'
    tolerance).

    Examples
    --------
    >>> import numpy as onp
    >>> from gradcy.test_util import check_equivalent
    >>> check_equivalent((onp.ones(2), 1.0), (onp.ones(2), 1.0 + 1e-9))
    >>> check_equivalent(onp.ones(2), onp.zeros(2))
    Traceback (most recent call last):
    ...
    AssertionError: ...
    """
    x_vs, y_vs = vspace(x), vspace(y)
    assert x_vs == y_vs, f"VSpace mismatch:\nx: {x_vs}\ny: {y_vs}"
    lx, ly = _leaves(x), _leaves(y)
    assert len(lx) == len(ly), f"different structures: {x!r} vs {y!r}"
    for a, b in zip(lx, ly):
        assert _np.allclose(a, b, rtol=RTOL, atol=ATOL), f"Value mismatch:\nx: {a!r}\ny: {b!r}"


def make_numerical_jvp(f: Callable[[Any], Any], x: Any) -> Callable[[Any], Any]:
    """The central-difference approximation of the JVP of ``f`` at ``x``.

    Returns
    -------
    callable
        ``jvp(v)``: ``(f(x + eps v/2) - f(x - eps v/2)) / eps``, with the structure of ``f``'s
        output.

    Examples
    --------
    >>> import numpy as onp
    >>> import gradcy.numpy as np
    >>> from gradcy.test_util import make_numerical_jvp
    >>> jvp = make_numerical_jvp(np.sin, onp.array([0.0, 1.0]))
    >>> print(onp.round(jvp(onp.ones(2)), 6))                # cos(x)
    [1.       0.540302]
    """

    def jvp(v):
        return _scale(1.0 / EPS, _axpy(-1.0, f(_axpy(-EPS / 2, v, x)), f(_axpy(EPS / 2, v, x))))

    return jvp


def _scale(a, x):
    leaves, unflatten = tree_flatten(x)
    return unflatten([_match_input(_np.asarray(leaf) * a, leaf) for leaf in leaves])
