"""Registration of primitives and their derivative rules onto the core.

The public surface is gradcy.extend, which re-exports these. Every reverse-mode registration
is converted here, once, to the one form the backward sweep calls (gradcy._rules.VJP): per
argument rules ``rule(g, ans, *args, **kwargs)`` (ArgnumVJP), or one rule of all arguments
``fn(argnums, g, g_owned, ans, args, kwargs)`` (JointVJP).

gradcy's own rules are written in those forms (`defvjp_direct`, `defvjp_argnums_direct`) and
get gradcy's cotangents (a container's with None for zero elements). The maker forms
(`defvjp`, `defvjp_argnum`, `defvjp_argnums`: autograd's API) are for rules written for
autograd, by users and libraries: their container cotangents reach them dense, as autograd
gives them.

The statement that registers a primitive's reverse-mode rule also says, with ``save=``, what a
recorded call keeps for it (and, with ``recomputable=``, whether its output may be made again
in the backward pass): nothing else sets them, so the statement a reader sees is the one in
force (as PyTorch keeps what a formula saves in its derivatives.yaml entry).
"""

from __future__ import annotations  # (Primitive[P, R]: generic in its stub only)

from collections.abc import Callable, Iterable, Sequence
from typing import Any, Literal, TypeAlias

from ._docstrings import fill
from ._rules import ArgnumVJP, JointVJP, joint_maker_rule, maker_rule
from ._core import Primitive
from ._typing import P, R

# what a reverse-mode registration's save= takes: what the rules read, per argument, or a saver
Save: TypeAlias = (
    Iterable[int | str] | dict[int, Iterable[int | str]] | Callable[..., tuple[Any, Any]] | None
)

__all__ = [
    "primitive",
    "notrace_primitive",
    "defvjp",
    "defvjp_direct",
    "defvjp_argnum",
    "defvjp_argnums",
    "defjvp",
    "defjvp_argnum",
    "defjvp_argnums",
    "def_linear",
    "nondifferentiable",
    "subval",
]


def _qualname(fun):
    module = getattr(fun, "__module__", None) or ""
    name = getattr(fun, "__name__", None) or repr(fun)
    return f"{module}.{name}" if module else name


# the parameter entries the registration functions share (their docstrings' {prim} and {save})
_shared_parameters = fill(
    {
        "prim": "Parameters\n----------\nprim : Primitive\n    A function wrapped by `primitive`.",
        "save": "save : iterable of {'ans', 'args', int}, dict or callable, optional\n"
        "    As in `defvjp`.",
    }
)


def primitive(fun: Callable[P, R], name: str | None = None) -> Primitive[P, R]:
    """Make ``fun`` a primitive: a function gradcy records as one operation.

    gradcy does not look inside a primitive: it runs ``fun`` on plain values and needs its
    derivatives to be registered, with `defvjp` (reverse mode) and `defjvp` (forward mode).
    Calls without a traced value among the positional arguments run ``fun`` directly.

    Parameters
    ----------
    fun : callable
        A function of arrays and scalars (it receives plain NumPy values, never traced ones).
    name : str, optional
        The name errors and memory profiles use; default ``module.function``.

    Returns
    -------
    Primitive
        The wrapped function (``fun`` itself if it already is one).

    See Also
    --------
    defvjp, defjvp, notrace_primitive

    Examples
    --------
    >>> import numpy as onp
    >>> from gradcy import grad
    >>> from gradcy.extend import primitive, defvjp
    >>> @primitive
    ... def logsumexp(x):
    ...     m = onp.max(x)
    ...     return m + onp.log(onp.sum(onp.exp(x - m)))
    >>> defvjp(logsumexp, lambda ans, x: lambda g: g * onp.exp(x - ans))
    >>> print(grad(logsumexp)(onp.array([0.0, onp.log(3.0)])))
    [0.25 0.75]
    """
    if isinstance(fun, Primitive):
        return fun
    return Primitive(fun, name or _qualname(fun))


def notrace_primitive(fun: Callable[P, R], name: str | None = None) -> Primitive[P, R]:
    """Make ``fun`` a primitive whose output is a constant: it runs on the plain values of traced
    arguments and records nothing.

    For functions whose result has no derivative to follow (argmax, floor, comparisons, shape
    or sign queries): the gradient does not flow through them.

    Parameters
    ----------
    fun : callable
        The function.
    name : str, optional
        The name errors and profiles use.

    Returns
    -------
    Primitive

    Examples
    --------
    >>> import numpy as onp
    >>> from gradcy import grad, numpy as np
    >>> from gradcy.extend import notrace_primitive
    >>> @notrace_primitive
    ... def count_positive(x):
    ...     return float(onp.sum(x > 0))
    >>> f = lambda x: np.sum(x) * count_positive(x)
    >>> print(grad(f)(onp.array([1.0, -1.0, 2.0])))
    [2. 2. 2.]
    """
    p = primitive(fun, name)
    p.traced = False
    return p


def nondifferentiable(*prims: Primitive[..., Any]) -> None:
    """Mark already-wrapped primitives as having constant outputs: traced values pass through
    them unrecorded (as for `notrace_primitive`).

    Parameters
    ----------
    *prims : Primitive
        Functions wrapped by `primitive`.

    Examples
    --------
    >>> import numpy as onp
    >>> import gradcy.numpy as np
    >>> from gradcy import grad
    >>> from gradcy.extend import primitive, nondifferentiable
    >>> rounded = primitive(onp.round, "rounded")
    >>> nondifferentiable(rounded)
    >>> print(grad(lambda x: np.sum(rounded(x) * x))(onp.array([0.4, 1.6])))
    [0. 2.]
    """
    for p in prims:
        p.traced = False


@_shared_parameters
def defvjp(
    prim: Primitive[..., Any],
    *vjpmakers: Callable[..., Callable[[Any], Any]] | None,
    argnums: Sequence[int] | None = None,
    save: Save = None,
    recomputable: bool = False,
) -> None:
    """Register the reverse-mode rules of a primitive, one per argument.

    {prim}
    *vjpmakers : callable or None
        One per argument, in order (or for the positions in ``argnums``):
        ``maker(ans, *args, **kwargs)`` is called in the forward pass with the output and the
        arguments of the call, and returns ``vjp(g)``, which maps the output's cotangent ``g``
        to that argument's cotangent (shaped like the argument; it may be broadcast to it).
        ``None`` means a zero cotangent. An argument without a rule raises
        `gradcy.MissingVJPError` when a gradient reaches it. The cotangent of a container
        output (tuple, list, dict) reaches ``vjp`` as under autograd: the whole container,
        zeros for the elements the program did not use.
    argnums : sequence of int, optional
        The argument positions of the makers (default ``0, 1, ...``).
    save : iterable of {'ans', 'args', int}, dict or callable, optional
        What a recorded call keeps for the makers, in one of three forms:

        - what they read: ``'ans'``, argument positions, or ``'args'`` for all arguments.
          Values not listed reach the makers as `gradcy.extend.ArrayMeta` (shape, dtype and
          type only), so the tape never holds their buffers;
        - per argument, ``{argnum: entries}``: a call keeps the union of the entries of its
          traced arguments only (``'others'`` stands for every argument but that one; a
          traced argument without an entry keeps everything);
        - a saver, ``saver(argnums, ans, args, kwargs) -> (ans_saved, args_saved)``: the
          compact record of its own that the rules read in place of the output and the
          arguments (``argnums``: the traced positions).

        Default: everything is saved.
    recomputable : bool, optional
        The output is cheap to make again from the call's record (an elementwise op): with
        ``grad(f, recompute="elementwise")``, a consumer that would keep it keeps a stand-in
        and the backward pass recomputes it. Default False.

    See Also
    --------
    defvjp_direct, defvjp_argnum, defvjp_argnums, defjvp

    Examples
    --------
    >>> import numpy as onp
    >>> import gradcy.numpy as np
    >>> from gradcy import grad
    >>> from gradcy.extend import primitive, defvjp
    >>> @primitive
    ... def scaled(x, c):
    ...     return c * x
    >>> defvjp(scaled, lambda ans, x, c: lambda g: g * c, save=(1,))   # reads c only
    >>> x = onp.array([1.0, 2.0])
    >>> print(grad(lambda x: np.sum(scaled(x, 3.0)))(x))
    [3. 3.]
    >>> grad(lambda c: np.sum(scaled(x, c)))(3.0)            # no rule for argument 1
    Traceback (most recent call last):
    ...
    gradcy...MissingVJPError: ...no VJP for argument 1...
    """
    _check_prim(prim, "defvjp")
    _set_argnum_rules(prim, argnums, [None if m is None else maker_rule(m) for m in vjpmakers])
    _set_saved(prim, save, recomputable)


@_shared_parameters
def defvjp_direct(
    prim: Primitive[..., Any],
    *rules: Callable[..., Any] | None,
    argnums: Sequence[int] | None = None,
    save: Save = None,
    recomputable: bool = False,
) -> None:
    """Register reverse-mode rules called directly in the backward pass.

    Like `defvjp`, but a rule takes the cotangent with the values of the call:
    ``rule(g, ans, *args, **kwargs)`` returns the cotangent of its argument. No closure is
    built per recorded call, which makes this the cheaper form for small arrays.

    {prim}
    *rules : callable or None
        One per argument (``None``: zero cotangent).
    argnums : sequence of int, optional
        The argument positions of the rules (default ``0, 1, ...``).
    {save}
    recomputable : bool, optional
        As in `defvjp`.

    Examples
    --------
    >>> from gradcy.extend import primitive, defvjp_direct
    >>> from gradcy import grad
    >>> @primitive
    ... def double(x):
    ...     return 2 * x
    >>> defvjp_direct(double, lambda g, ans, x: 2 * g, save=())
    >>> grad(lambda x: double(x) ** 2)(3.0)
    24.0
    """
    _check_prim(prim, "defvjp_direct")
    _set_argnum_rules(prim, argnums, rules)
    _set_saved(prim, save, recomputable)


def _set_saved(prim, save, recomputable=False):
    """What a call of prim keeps for its rules (the ``save=`` of every registration): a saver
    (callable) keeps a record of its own, else `Primitive.set_saved` reads the entries."""
    if callable(save):
        prim.set_saved(None)  # (the saver's own fallback: everything)
        prim.save_fn = save
    else:
        prim.set_saved(save)
        prim.save_fn = None
    prim.recomputable = recomputable


def _set_argnum_rules(prim, argnums, rules):
    """Add per-argument rules (direct form) to prim's rule; a rule of all arguments is
    replaced."""
    if type(prim.vjp) is not ArgnumVJP:
        prim.set_vjp(ArgnumVJP({}))
    argnums = range(len(rules)) if argnums is None else argnums
    for argnum, rule in zip(argnums, rules):
        prim.vjp.rules[argnum] = rule


@_shared_parameters
def defvjp_argnums(
    prim: Primitive[..., Any], vjpmaker: Callable[..., Any], save: Save = None
) -> None:
    """Register one reverse-mode rule for all the arguments of a primitive.

    {prim}
    vjpmaker : callable
        ``vjpmaker(argnums, ans, args, kwargs)`` returns ``vjp(g)``, which returns a tuple
        with one cotangent per entry of ``argnums`` (the positions being differentiated).
        ``g`` is as for `defvjp`'s makers.
    {save}

    Examples
    --------
    >>> from gradcy import grad
    >>> from gradcy.extend import primitive, defvjp_argnums
    >>> @primitive
    ... def mul(x, y):
    ...     return x * y
    >>> def mul_vjp(argnums, ans, args, kwargs):
    ...     x, y = args
    ...     return lambda g: tuple(g * (y if i == 0 else x) for i in argnums)
    >>> defvjp_argnums(mul, mul_vjp)
    >>> grad(mul, argnum=(0, 1))(2.0, 5.0)
    (5.0, 2.0)
    """
    _check_prim(prim, "defvjp_argnums")
    defvjp_argnums_direct(prim, joint_maker_rule(vjpmaker), save)


def defvjp_argnums_direct(prim, rule, save=None):
    """Register one reverse-mode rule for all the arguments, called directly in the backward
    pass (gradcy's own joint rules: one call computes the cotangents of all the requested
    arguments, sharing their work, such as one solve): ``rule(argnums, g, g_owned, ans, args,
    kwargs)`` returns one cotangent per entry of ``argnums`` (``g_owned``: it may write into
    ``g``); no closure is built per recorded call. ``save`` as in `defvjp`."""
    _check_prim(prim, "defvjp_argnums_direct")
    prim.set_vjp(JointVJP(rule))
    _set_saved(prim, save)


def defvjp_write(prim, rule, save=None):
    """Register the reverse-mode rule of an in-place write primitive (gradcy.numpy.inplace):
    ``rule(argnums, g, g_owned, ans, args, kwargs)`` returns one cotangent per argnum and may
    write into ``g`` when ``g_owned`` is true. Its records are never recomputed."""
    _check_prim(prim, "defvjp_write")
    prim.set_vjp(JointVJP(rule, True))
    _set_saved(prim, save)


@_shared_parameters
def defvjp_argnum(
    prim: Primitive[..., Any], vjpmaker: Callable[..., Any], save: Save = None
) -> None:
    """Register one reverse-mode rule for all the arguments, called once per argument.

    {prim}
    vjpmaker : callable
        ``vjpmaker(argnum, ans, args, kwargs)`` returns ``vjp(g)``, the cotangent of the
        argument at position ``argnum``.
    {save}

    Examples
    --------
    >>> from gradcy.extend import primitive, defvjp_argnum
    >>> from gradcy import grad
    >>> @primitive
    ... def sum_of_squares(*xs):
    ...     return sum(x ** 2 for x in xs)
    >>> defvjp_argnum(sum_of_squares,
    ...               lambda argnum, ans, args, kwargs: lambda g: 2 * g * args[argnum])
    >>> grad(sum_of_squares, argnum=(0, 1))(2.0, 5.0)
    (4.0, 10.0)
    """

    def vjp_argnums(argnums, ans, args, kwargs):
        vjps = [vjpmaker(argnum, ans, args, kwargs) for argnum in argnums]
        return lambda g: tuple(vjp(g) for vjp in vjps)

    _check_prim(prim, "defvjp_argnum")
    defvjp_argnums_direct(prim, joint_maker_rule(vjp_argnums), save)


@_shared_parameters
def defjvp(
    prim: Primitive[..., Any],
    *jvpfuns: Callable[..., Any] | Literal["same"] | None,
    argnums: Sequence[int] | None = None,
) -> None:
    """Register the forward-mode rules of a primitive, one per argument.

    {prim}
    *jvpfuns : callable or None
        One per argument, in order (or for the positions in ``argnums``):
        ``jvp(g, ans, *args, **kwargs)`` returns the tangent of the output caused by the
        tangent ``g`` of that argument. ``None`` means a zero tangent; ``"same"`` means
        the function itself with ``g`` in place of that argument (for a function linear in
        that argument).
    argnums : sequence of int, optional
        The argument positions of the rules (default ``0, 1, ...``).

    See Also
    --------
    defvjp, defjvp_argnum, defjvp_argnums

    Examples
    --------
    >>> from gradcy.extend import primitive, defjvp
    >>> from gradcy import deriv
    >>> @primitive
    ... def cube(x):
    ...     return x ** 3
    >>> defjvp(cube, lambda g, ans, x: 3 * x ** 2 * g)
    >>> deriv(cube)(2.0)
    12.0
    """
    _check_prim(prim, "defjvp")
    argnums = range(len(jvpfuns)) if argnums is None else argnums
    for argnum, jvp in zip(argnums, jvpfuns):
        if isinstance(jvp, str) and jvp == "same":
            jvp = _same_jvp(prim, argnum)
        prim.jvpmakers[argnum] = jvp


def _same_jvp(prim, argnum):
    return lambda g, ans, *args, **kwargs: prim(*subval(args, argnum, g), **kwargs)


@_shared_parameters
def defjvp_argnums(prim: Primitive[..., Any], jvpmaker: Callable[..., Any]) -> None:
    """Register one forward-mode rule for all the arguments of a primitive.

    {prim}
    jvpmaker : callable
        ``jvpmaker(argnums, gs, ans, args, kwargs)`` returns the output tangent for the
        tangents ``gs`` of the arguments at positions ``argnums``.

    Examples
    --------
    >>> from gradcy.extend import primitive, defjvp_argnums
    >>> from gradcy import make_jvp
    >>> @primitive
    ... def mul(x, y):
    ...     return x * y
    >>> defjvp_argnums(mul, lambda argnums, gs, ans, args, kwargs:
    ...                sum(g * args[1 - i] for i, g in zip(argnums, gs)))
    >>> make_jvp(mul, argnum=(0, 1))(2.0, 5.0)((1.0, 1.0))       # (x y, y dx + x dy)
    (10.0, 7.0)
    """
    _check_prim(prim, "defjvp_argnums")
    prim.jvp_argnums = jvpmaker


@_shared_parameters
def defjvp_argnum(prim: Primitive[..., Any], jvpmaker: Callable[..., Any]) -> None:
    """Register one forward-mode rule for all the arguments, called once per argument.

    {prim}
    jvpmaker : callable
        ``jvpmaker(argnum, g, ans, args, kwargs)`` returns the output tangent caused by the
        tangent ``g`` of the argument at position ``argnum``; the tangents of several
        arguments are summed.

    Examples
    --------
    >>> import numpy as onp
    >>> from gradcy import make_jvp
    >>> from gradcy.extend import primitive, defjvp_argnum
    >>> hypot = primitive(onp.hypot, "hypot")
    >>> defjvp_argnum(hypot, lambda argnum, g, ans, args, kwargs: g * args[argnum] / ans)
    >>> value, tangent = make_jvp(hypot, argnum=(0, 1))(3.0, 4.0)((1.0, 0.0))
    >>> print(float(value), float(tangent))           # |(x, y)|, x / |(x, y)|
    5.0 0.6
    """

    def jvp_argnums(argnums, gs, ans, args, kwargs):
        total = None
        for argnum, g in zip(argnums, gs):
            t = jvpmaker(argnum, g, ans, args, kwargs)
            total = t if total is None else total + t
        return total

    defjvp_argnums(prim, jvp_argnums)


def subval(x: Iterable[Any], i: int, v: Any) -> tuple[Any, ...]:
    """The tuple ``x`` with element ``i`` replaced by ``v`` (a helper for rules).

    Examples
    --------
    >>> from gradcy.extend import subval
    >>> subval((1, 2, 3), 1, "b")
    (1, 'b', 3)
    """
    x = list(x)
    x[i] = v
    return tuple(x)


@_shared_parameters
def def_linear(prim: Primitive[..., Any]) -> None:
    """Register the rules of a primitive that is linear in each of its arguments and whose
    Jacobian with respect to each is symmetric (elementwise products and their like).

    The VJP and the JVP of argument ``k`` are then the function itself with the cotangent
    (tangent) in place of argument ``k``.

    {prim}

    Examples
    --------
    >>> import numpy as onp
    >>> from gradcy import grad, make_jvp
    >>> from gradcy.extend import primitive, def_linear
    >>> @primitive
    ... def times(x, c):
    ...     return x * c
    >>> def_linear(times)
    >>> grad(lambda c: times(3.0, c) ** 2)(2.0)            # d/dc (3 c)**2 = 18 c
    36.0
    >>> make_jvp(times)(onp.array([1.0, 2.0]), 3.0)(onp.ones(2))[1]
    array([3., 3.])
    """
    _check_prim(prim, "def_linear")
    defvjp_argnum(
        prim,
        lambda argnum, ans, args, kwargs: lambda g: prim(*subval(args, argnum, g), **kwargs),
        save=("args",),
    )
    defjvp_argnum(
        prim, lambda argnum, g, ans, args, kwargs: prim(*subval(args, argnum, g), **kwargs)
    )


def _check_prim(prim, where):
    if not isinstance(prim, Primitive):
        raise TypeError(
            f"{where}: expected a function wrapped by gradcy.extend.primitive, got "
            f"{prim!r}; wrap it first: f = primitive(f)"
        )
