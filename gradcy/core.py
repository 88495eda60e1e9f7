"""autograd.core's API over gradcy's engine.

make_vjp / make_jvp here are the unary forms (fun, x) that autograd.core has; the n-ary ones are
in gradcy.differential_operators. primitive_vjps and primitive_jvps are live views of the rules
registered on gradcy's primitives (reading, setting, popping and restoring them act on the
primitives themselves). VJPNode, JVPNode and backward_pass evaluate a gradcy.tracer trace with
those rules in Python, as autograd does; gradcy's own differentiation sweeps its tape in Cython
and does not use them.
"""

from __future__ import annotations  # (Primitive[P, R]: generic in its stub only)

import warnings
from collections.abc import Callable
from typing import Any
from collections.abc import MutableMapping
from functools import reduce  # (autograd.core has it)

from . import _forward_mode, _reverse_mode
from ._core import Box, Primitive
from ._rules import ArgnumVJP
from ._typing import P, R
from .registry import (
    def_linear,
    defjvp,
    defjvp_argnum,
    defjvp_argnums,
    defvjp,
    defvjp_argnum,
    defvjp_argnums,
    defvjp_direct,
    primitive as primitive_,
)
from .tracer import Node, getval, isbox, toposort, trace, trace_primitives_map
from .util import func, subval
from .vspace import SparseObject, VSpace, vspace

__all__ = [
    "make_vjp",
    "make_jvp",
    "backward_pass",
    "VJPNode",
    "JVPNode",
    "primitive_vjps",
    "primitive_jvps",
    "defvjp",
    "defvjp_argnum",
    "defvjp_argnums",
    "defjvp",
    "defjvp_argnum",
    "defjvp_argnums",
    "def_linear",
    "translate_vjp",
    "translate_jvp",
    "add_outgrads",
    "sum_outgrads",
    "sparse_add",
    "sparse_object_types",
    "SparseBox",
    "SparseObject",
    "VSpace",
    "vspace",
    "identity_vjp",
    "identity_jvp",
    "primitive",
    "primitive_",
    "primitive_with_deprecation_warnings",
    "deprecated_defvjp",
    "deprecated_defvjp_is_zero",
    "deprecated_defgrad",
    "deprecated_defvjp_message",
    "Box",
    "Node",
    "getval",
    "isbox",
    "toposort",
    "trace",
    "func",
    "subval",
]


# =============================================================================
# Unary operators
# =============================================================================
def make_vjp(fun: Callable[[Any], Any], x: Any) -> tuple[Any, Any]:
    """(vjp, fun(x)): vjp(g) is the cotangent of x for cotangent g of the output."""
    return _reverse_mode.make_vjp(fun)(x)


def make_jvp(fun: Callable[[Any], Any], x: Any) -> Callable[[Any], tuple[Any, Any]]:
    """jvp: jvp(v) is (fun(x), the output tangent for tangent v of x)."""
    return _forward_mode.make_jvp(fun)(x)


# =============================================================================
# The rule registries, as views of the primitives
# =============================================================================
def _name(fun):
    return getattr(fun, "name", None) or getattr(fun, "__name__", repr(fun))


class _VJPRules:
    """A primitive's reverse-mode rules at the time they were read, callable as autograd's
    vjp maker: rules(argnums, ans, args, kwargs) -> vjp(g) -> one cotangent per argnum.
    Storing it back into primitive_vjps restores exactly these rules."""

    def __init__(self, prim):
        self.prim = prim
        self.vjp = prim.vjp.copy()
        self.saved = prim.saved_spec

    def restore(self, prim):
        prim.set_vjp(self.vjp.copy())
        prim.set_saved(self.saved)

    def __call__(self, argnums, ans, args, kwargs):
        argnums = tuple(argnums)
        rules = getattr(self.vjp, "rules", None)
        for argnum in argnums:
            if rules is not None and argnum not in rules:
                raise NotImplementedError(
                    f"VJP of {_name(self.prim)} wrt argnum {argnum} not "
                    f"defined; register one with gradcy.extend.defvjp"
                )

        def vjp(g):
            out = self.vjp(argnums, g, ans, args, kwargs)
            return tuple(vspace(args[a]).zeros() if o is None else o for a, o in zip(argnums, out))

        return vjp


class _JVPRules:
    """A primitive's forward-mode rules, callable as autograd's jvp maker:
    rules(argnums, gs, ans, args, kwargs) -> the output tangent."""

    def __init__(self, prim):
        self.prim = prim
        self.jvpmakers = dict(prim.jvpmakers)
        self.jvp_argnums = prim.jvp_argnums

    def restore(self, prim):
        prim.jvpmakers = dict(self.jvpmakers)
        prim.jvp_argnums = self.jvp_argnums

    def __call__(self, argnums, gs, ans, args, kwargs):
        if self.jvp_argnums is not None:
            return self.jvp_argnums(tuple(argnums), tuple(gs), ans, tuple(args), kwargs)
        total = None
        for argnum, g in zip(argnums, gs):
            if argnum not in self.jvpmakers:
                raise NotImplementedError(
                    f"JVP of {_name(self.prim)} wrt argnum {argnum} not "
                    f"defined; register one with gradcy.extend.defjvp"
                )
            rule = self.jvpmakers[argnum]
            t = vspace(ans).zeros() if rule is None else rule(g, ans, *args, **kwargs)
            total = t if total is None else total + t
        return total


class _RuleRegistry(MutableMapping):
    """primitive -> its rules, read from and written to the primitives themselves."""

    def __init__(self, kind):
        self.kind = kind  # "vjp" or "jvp"

    def _has(self, prim):
        if type(prim) is not Primitive:
            return False
        if self.kind == "vjp":
            return bool(prim.vjpmakers) or prim.vjp_argnums is not None or prim.vjp.writes
        return bool(prim.jvpmakers) or prim.jvp_argnums is not None

    def __getitem__(self, prim):
        if not self._has(prim):
            raise KeyError(prim)
        return _VJPRules(prim) if self.kind == "vjp" else _JVPRules(prim)

    def __setitem__(self, prim, rules):
        if type(prim) is not Primitive:
            raise TypeError(
                f"primitive_{self.kind}s: keys are gradcy primitives (wrap the "
                f"function with gradcy.extend.primitive first), got {prim!r}"
            )
        if isinstance(rules, (_VJPRules, _JVPRules)):
            rules.restore(prim)
        elif self.kind == "vjp":

            def vjp_argnums(argnums, ans, args, kwargs):
                vjp = rules(argnums, ans, args, kwargs)
                return lambda g: tuple(vjp(g))

            defvjp_argnums(prim, vjp_argnums)
        else:
            defjvp_argnums(prim, rules)

    def __delitem__(self, prim):
        if not self._has(prim):
            raise KeyError(prim)
        if self.kind == "vjp":
            prim.set_vjp(ArgnumVJP({}))
        else:
            prim.jvpmakers = {}
            prim.jvp_argnums = None

    def __iter__(self):
        trace_primitives_map._fill()
        return iter([p for p in set(dict.values(trace_primitives_map)) if self._has(p)])

    def __len__(self):
        return sum(1 for _ in self)

    def __contains__(self, prim):
        return self._has(prim)


primitive_vjps = _RuleRegistry("vjp")
primitive_jvps = _RuleRegistry("jvp")


# =============================================================================
# Nodes that evaluate a trace with the registered rules (autograd's Python evaluators)
# =============================================================================
class VJPNode(Node):
    __slots__ = ["parents", "vjp"]

    def __init__(self, value, fun, args, kwargs, parent_argnums, parents):
        self.parents = parents
        try:
            vjpmaker = primitive_vjps[fun]
        except KeyError:
            raise NotImplementedError(
                f"VJP of {_name(fun)} wrt argnums {parent_argnums} not defined"
            ) from None
        self.vjp = vjpmaker(parent_argnums, value, args, kwargs)

    def initialize_root(self):
        self.parents = []
        self.vjp = lambda g: ()


class JVPNode(Node):
    __slots__ = ["g"]

    def __init__(self, value, fun, args, kwargs, parent_argnums, parents):
        try:
            jvpmaker = primitive_jvps[fun]
        except KeyError:
            raise NotImplementedError(
                f"JVP of {_name(fun)} wrt argnums {parent_argnums} not defined"
            ) from None
        self.g = jvpmaker(parent_argnums, [p.g for p in parents], value, args, kwargs)

    def initialize_root(self, g):
        self.g = g


def backward_pass(g, end_node):
    """Propagate cotangent g from end_node (a VJPNode trace) to its start node; returns the
    start node's cotangent."""
    outgrads = {end_node: (g, False)}
    for node in toposort(end_node):
        outgrad = outgrads.pop(node)
        for parent, ingrad in zip(node.parents, node.vjp(outgrad[0])):
            outgrads[parent] = add_outgrads(outgrads.get(parent), ingrad)
    return outgrad[0]


# =============================================================================
# Adding cotangents
# =============================================================================
class _SparseBoxMeta(type):
    def __instancecheck__(cls, obj):
        return type(obj) is Box and type(getval(obj)) is SparseObject


class SparseBox(metaclass=_SparseBoxMeta):
    """isinstance(x, SparseBox): x is a traced SparseObject."""


sparse_object_types = {SparseObject, SparseBox}


@primitive_
def sparse_add(vs, x_prev, x_new):
    """x_prev (None: zeros of vs) plus the SparseObject x_new."""
    x_prev = x_prev if x_prev is not None else vs.zeros()
    return x_new.mut_add(x_prev)


def _is_sparse(g):
    return type(g) is SparseObject or isinstance(g, SparseBox)


def add_outgrads(prev_g_flagged, g):
    """Accumulate cotangent g into (prev, mutable) (None when nothing arrived yet); returns the
    new (sum, mutable) pair. In-place adds only into sums this function created."""
    sparse = _is_sparse(g)
    if prev_g_flagged:
        vs = vspace(g)
        prev_g, mutable = prev_g_flagged
        if sparse:
            return sparse_add(vs, prev_g if mutable else vs.mut_add(None, prev_g), g), True
        if mutable:
            return vs.mut_add(prev_g, g), True
        return vs.add(prev_g, g), True
    if sparse:
        return sparse_add(vspace(g), None, g), True
    return g, False


def sum_outgrads(gs):
    """The sum of the cotangents gs."""
    return reduce(add_outgrads, gs, None)[0]


def identity_vjp(argnums, *args):
    return lambda g: g


def identity_jvp(g, *args, **kwargs):
    return g


defvjp_direct(
    sparse_add, None, lambda g, ans, vs, x_prev, x_new: g, lambda g, ans, vs, x_prev, x_new: g
)
defjvp(sparse_add, None, identity_jvp, identity_jvp)


def translate_vjp(vjpfun, fun, argnum):
    """A vjp maker for argument argnum of fun from defvjp's argument (None: zero)."""
    if vjpfun is None:
        return lambda ans, *args, **kwargs: lambda g: vspace(args[argnum]).zeros()
    if callable(vjpfun):
        return vjpfun
    raise TypeError(f"Bad VJP {vjpfun!r} for {_name(fun)}: expected a function or None")


def translate_jvp(jvpfun, fun, argnum):
    """A jvp rule for argument argnum of fun from defjvp's argument (None: zero; "same": fun
    itself with the tangent in place of the argument, for functions linear in it)."""
    if jvpfun is None:
        return lambda g, ans, *args, **kwargs: vspace(ans).zeros()
    if isinstance(jvpfun, str) and jvpfun == "same":
        return lambda g, ans, *args, **kwargs: fun(*subval(args, argnum, g), **kwargs)
    if callable(jvpfun):
        return jvpfun
    raise TypeError(f"Bad JVP {jvpfun!r} for {_name(fun)}: expected a function, None or 'same'")


# =============================================================================
# autograd's deprecated methods of primitives (prim.defvjp, prim.defgrad, prim.defvjp_is_zero)
# =============================================================================
deprecated_defvjp_message = (
    "The {} method of primitives is deprecated; use gradcy.extend.defvjp(prim, maker, ...)"
)


def _deprecated_registrar(prim, what, to_maker):
    makers = {}

    def register(fn, argnum=0):
        warnings.warn(deprecated_defvjp_message.format(what), DeprecationWarning, stacklevel=2)
        makers[argnum] = to_maker(fn, argnum)
        argnums = sorted(makers)
        defvjp(prim, *[makers[a] for a in argnums], argnums=argnums)

    return register


def deprecated_defvjp(primitive_fun):
    """prim.defvjp(vjpfun, argnum=0), vjpfun(g, ans, vs, gvs, *args, **kwargs) -> cotangent."""

    def to_maker(vjpfun, argnum):
        def maker(ans, *args, **kwargs):
            return lambda g: vjpfun(g, ans, vspace(args[argnum]), vspace(g), *args, **kwargs)

        return maker

    return _deprecated_registrar(primitive_fun, "defvjp", to_maker)


def deprecated_defgrad(primitive_fun):
    """prim.defgrad(maker, argnum=0), maker(ans, *args, **kwargs) -> vjp(g)."""
    return _deprecated_registrar(primitive_fun, "defgrad", lambda maker, argnum: maker)


def deprecated_defvjp_is_zero(primitive_fun):
    """prim.defvjp_is_zero(argnums=(0,)): zero cotangents for those arguments."""
    zero = set()

    def defvjp_is_zero(argnums=(0,)):
        warnings.warn(
            deprecated_defvjp_message.format("defvjp_is_zero"), DeprecationWarning, stacklevel=2
        )
        zero.update(argnums)
        defvjp(primitive_fun, *[None] * len(zero), argnums=sorted(zero))

    return defvjp_is_zero


def primitive_with_deprecation_warnings(f_raw: Callable[P, R]) -> Primitive[P, R]:
    """primitive(f_raw), with autograd's deprecated registration methods attached."""
    f_wrapped: Any = primitive_(f_raw)
    f_wrapped.defvjp = deprecated_defvjp(f_wrapped)
    f_wrapped.defvjp_is_zero = deprecated_defvjp_is_zero(f_wrapped)
    f_wrapped.defgrad = deprecated_defgrad(f_wrapped)
    return f_wrapped


primitive = primitive_with_deprecation_warnings
