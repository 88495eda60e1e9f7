"""Registration of primitives and their derivative rules onto the core.

The public surface is gradcy.extend, which re-exports these.
"""
from ._core import Primitive

__all__ = ["primitive", "notrace_primitive", "defvjp", "defvjp_direct", "defvjp_argnum",
           "defvjp_argnums",
           "defjvp", "defjvp_argnum", "defjvp_argnums", "def_linear", "nondifferentiable",
           "subval"]


def _qualname(fun):
    module = getattr(fun, "__module__", None) or ""
    name = getattr(fun, "__name__", None) or repr(fun)
    return f"{module}.{name}" if module else name


def primitive(fun, name=None):
    """Wrap `fun` so that calls on traced values are recorded as one node.

    Register its derivatives with defvjp (reverse mode) and defjvp (forward mode)."""
    if isinstance(fun, Primitive):
        return fun
    return Primitive(fun, name or _qualname(fun))


def notrace_primitive(fun, name=None):
    """Wrap `fun` so that it runs on the plain values of traced arguments and records nothing
    (its output is a constant: argmax, floor, comparisons, shape queries...)."""
    p = primitive(fun, name)
    p.traced = False
    return p


def nondifferentiable(*prims):
    """Mark already-wrapped primitives as non-differentiable: traced values pass through them
    unrecorded."""
    for p in prims:
        p.traced = False


def defvjp(prim, *vjpmakers, argnums=None, save=None):
    """Register reverse-mode rules, one per argument: `maker(ans, *args, **kwargs)` returns
    `vjp(g)`, the cotangent of that argument. `None` as a maker means a zero cotangent.

    save: what the makers read, an iterable of 'ans' and argument positions ('args' for all).
    Values not listed reach the makers as ArrayMeta (shape, dtype, type only), so the tape never
    holds their buffers. Default: everything is saved."""
    _check_prim(prim, "defvjp")
    argnums = range(len(vjpmakers)) if argnums is None else argnums
    for argnum, maker in zip(argnums, vjpmakers):
        prim.vjpmakers[argnum] = _as_direct(maker) if prim.direct else maker
    prim.set_saved(save)


def defvjp_direct(prim, *rules, argnums=None, save=None):
    """Like defvjp, with rules called directly at backward time: `rule(g, ans, *args,
    **kwargs)` returns the cotangent of that argument. No closure is built per node, so this
    is the cheaper form for small arrays; gradcy.numpy uses it for its hottest primitives."""
    _check_prim(prim, "defvjp_direct")
    if not prim.direct:
        prim.vjpmakers = {a: _as_direct(m) for a, m in prim.vjpmakers.items()}
        prim.direct = True
    argnums = range(len(rules)) if argnums is None else argnums
    for argnum, rule in zip(argnums, rules):
        prim.vjpmakers[argnum] = rule
    prim.set_saved(save)


def _as_direct(maker):
    if maker is None:
        return None
    return lambda g, ans, *args, **kwargs: maker(ans, *args, **kwargs)(g)


def defvjp_argnums(prim, vjpmaker, save=None):
    """Register one rule for every argument: `vjpmaker(argnums, ans, args, kwargs)` returns
    `vjp(g)`, which returns a tuple with one cotangent per entry of argnums."""
    _check_prim(prim, "defvjp_argnums")
    prim.vjp_argnums = vjpmaker
    prim.set_saved(save)


def defvjp_argnum(prim, vjpmaker, save=None):
    """Register one rule for every argument: `vjpmaker(argnum, ans, args, kwargs)` returns
    `vjp(g)` for that single argument."""
    def vjp_argnums(argnums, ans, args, kwargs):
        vjps = [vjpmaker(argnum, ans, args, kwargs) for argnum in argnums]
        return lambda g: tuple(vjp(g) for vjp in vjps)
    defvjp_argnums(prim, vjp_argnums, save=save)


def defjvp(prim, *jvpfuns, argnums=None):
    """Register forward-mode rules, one per argument: `jvp(g, ans, *args, **kwargs)` returns
    the output tangent caused by tangent g of that argument. `None` means zero; "same" means
    the function itself with g in place of that argument (it is linear in the argument)."""
    _check_prim(prim, "defjvp")
    argnums = range(len(jvpfuns)) if argnums is None else argnums
    for argnum, jvp in zip(argnums, jvpfuns):
        if isinstance(jvp, str) and jvp == "same":
            jvp = _same_jvp(prim, argnum)
        prim.jvpmakers[argnum] = jvp


def _same_jvp(prim, argnum):
    return lambda g, ans, *args, **kwargs: prim(*subval(args, argnum, g), **kwargs)


def defjvp_argnums(prim, jvpmaker):
    """Register one forward rule for all arguments: `jvpmaker(argnums, gs, ans, args, kwargs)`
    returns the output tangent for tangents gs of the arguments argnums."""
    _check_prim(prim, "defjvp_argnums")
    prim.jvp_argnums = jvpmaker


def defjvp_argnum(prim, jvpmaker):
    """Register one forward rule for all arguments: `jvpmaker(argnum, g, ans, args, kwargs)`."""
    def jvp_argnums(argnums, gs, ans, args, kwargs):
        total = None
        for argnum, g in zip(argnums, gs):
            t = jvpmaker(argnum, g, ans, args, kwargs)
            total = t if total is None else total + t
        return total
    defjvp_argnums(prim, jvp_argnums)


def subval(x, i, v):
    """The tuple x with element i replaced by v."""
    x = list(x)
    x[i] = v
    return tuple(x)


def def_linear(prim):
    """Register the rules of a function linear in each argument: the VJP/JVP of argument k is
    the function itself with the cotangent (tangent) in place of argument k."""
    _check_prim(prim, "def_linear")
    defvjp_argnum(prim, lambda argnum, ans, args, kwargs:
                  lambda g: prim(*subval(args, argnum, g), **kwargs), save=("args",))
    defjvp_argnum(prim, lambda argnum, g, ans, args, kwargs:
                  prim(*subval(args, argnum, g), **kwargs))
    prim.linear = True


def _check_prim(prim, where):
    if not isinstance(prim, Primitive):
        raise TypeError(f"{where}: expected a function wrapped by gradcy.extend.primitive, got "
                        f"{prim!r}; wrap it first: f = primitive(f)")
