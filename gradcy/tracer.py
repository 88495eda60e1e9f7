"""Tracing a function's primitive calls into a graph of your own nodes (autograd.tracer's API).

    class PrintNode(Node):
        def __init__(self, value, fun, args, kwargs, parent_argnums, parents): ...
        def initialize_root(self, x): ...

    end_value, end_node = trace(PrintNode.new_root(x), f, x)

trace runs f on a gradcy tape that keeps every argument (Tape.keep_args) and builds one node of
the start node's type per recorded primitive call, as the call is recorded, from the tape's own
record (value, primitive, arguments, keyword arguments, positions of the traced arguments and
their nodes). gradcy's differentiation does not go through these nodes (it sweeps the tape in
Cython); they are for programs that inspect or replay a trace.
"""

import sys
from collections import defaultdict
from contextlib import contextmanager
from typing import Any

import numpy as _np

from ._core import Box, Primitive, Tape
from ._arguments import _check_leaf, _independent, _warn_independent
from ._pytree import tree_flatten
from ._tracing import pack_outputs
from .registry import notrace_primitive, primitive
from .util import subvals, toposort
from .vspace import VSpace
from .wrap_util import wraps

# (find_top_boxed_args, autograd's, is added by gradcy._autograd_rules)
__all__ = [
    "trace",
    "Node",
    "primitive",
    "notrace_primitive",
    "register_notrace",
    "notrace_primitives",
    "getval",
    "isbox",
    "new_box",
    "Box",
    "box_types",
    "box_type_mappings",
    "trace_stack",
    "TraceStack",
    "trace_primitives_map",
    "toposort",
    "subvals",
    "wraps",
]


class Node:
    """A node of a trace: subclasses define __init__(value, fun, args, kwargs, parent_argnums,
    parents) for a recorded call and initialize_root(*args) for the start node."""

    __slots__ = []

    def __init__(self, value, fun, args, kwargs, parent_argnums, parents):
        raise NotImplementedError(f"{type(self).__name__} must define __init__")

    def initialize_root(self, *args, **kwargs):
        raise NotImplementedError(f"{type(self).__name__} must define initialize_root")

    @classmethod
    def new_root(cls, *args, **kwargs):
        root = cls.__new__(cls)
        root.initialize_root(*args, **kwargs)
        return root


class _Trace:
    """One trace: a recording tape, and the node object of each of its node indices."""

    __slots__ = ("tape", "nodes", "__weakref__")

    def __init__(self):
        self.tape = Tape()
        self.tape.keep_args = True
        self.nodes = {}
        self.tape.observer = self._observe

    def _observe(self, event, index, name, saved_bytes, cotangent_bytes):
        if event != "forward" or not self.nodes:
            return
        info = self.tape.node_info(index)
        parents = tuple(self.nodes[p] for p in info["parents"])
        ans, args, kwargs = info["saved"]
        node_type = type(parents[0]) if parents else Node
        self.nodes[index] = node_type(
            ans, info["prim"], args, kwargs or {}, tuple(info["argnums"]), parents
        )

    def __index__(self):
        return self.tape.trace_id

    def __int__(self):
        return self.tape.trace_id


class TraceStack:
    """new_trace() opens a trace (a context manager that yields it and releases its tape on
    exit)."""

    def __init__(self):
        self.top = -1

    @contextmanager
    def new_trace(self):
        t = _Trace()
        self.top += 1
        try:
            yield t
        finally:
            self.top -= 1
            t.tape.observer = None
            t.tape.release()


trace_stack = TraceStack()


def new_box(value, trace, node):
    """A traced value of `trace` (from trace_stack.new_trace()) whose node is `node`; a
    container gets one traced value per leaf, all with that node."""
    leaves, unflatten = tree_flatten(value)
    for leaf in leaves:
        _check_leaf(leaf, "new_box", 0)
    boxes = []
    for leaf in leaves:
        b = trace.tape.new_leaf(leaf)
        trace.nodes[b._node] = node
        boxes.append(b)
    return unflatten(boxes)


def _flat_boxes(x, tape):
    leaves = tree_flatten(x)[0]
    return leaves, [leaf for leaf in leaves if type(leaf) is Box and leaf._tape is tape]


def trace(start_node, fun, x):
    """Run fun(x) with x traced from start_node; returns (output value, output node), or
    (output, None) with a warning when the output does not depend on x."""
    with trace_stack.new_trace() as t:
        start_box = new_box(x, t, start_node)
        end_box = fun(start_box)
        del start_box
        if type(end_box) is not Box and isinstance(end_box, (tuple, list, dict)):
            leaves, unflatten = tree_flatten(end_box)
            if any(type(v) is Box and v._tape is t.tape for v in leaves):
                packed = pack_outputs(*leaves)
                values = [v._value if type(v) is Box and v._tape is t.tape else v for v in leaves]
                return unflatten(values), t.nodes[packed._node]
        if not _independent(end_box, t.tape):
            return end_box._value, t.nodes[end_box._node]
        _warn_independent("trace")
        return end_box, None


# =============================================================================
# Queries on traced values
# =============================================================================
def isbox(x):
    """x is a traced value (a Box, or an instance of a registered Box subclass)."""
    return type(x) is Box or isinstance(x, Box)


def getval(x):
    """The plain value under any number of tracing levels."""
    while isinstance(x, Box):
        x = x._value
    return x


box_types = Box.types  # Box and the subclasses registered with Box.register (one set)


class _BoxTypeMappings(dict):
    """value type -> the type of its traced values: the Box subclass registered for it
    (Box.register), else Box, for every type gradcy can trace."""

    def __missing__(self, value_type):
        sub = Box.type_mappings.get(value_type)
        if sub is not None:
            return sub
        if (
            value_type is Box
            or value_type in VSpace.mappings
            or issubclass(value_type, (_np.ndarray, _np.inexact, tuple, list, dict))
        ):
            return Box
        raise KeyError(value_type)


box_type_mappings = _BoxTypeMappings()


# =============================================================================
# Registries
# =============================================================================
notrace_primitives: defaultdict[Any, set[Primitive]] = defaultdict(set)


def register_notrace(trace_type: Any, primitive_fun: "Primitive[..., Any]") -> None:
    """Calls of primitive_fun record nothing (gradcy has one kind of trace for reverse and
    forward mode, so this holds for every trace type)."""
    notrace_primitives[trace_type].add(primitive_fun)
    primitive_fun.traced = False


class _TracePrimitivesMap(dict):
    """raw function -> its gradcy primitive, for gradcy.numpy (with linalg and fft) and the
    gradcy.scipy modules that are imported."""

    def _fill(self):
        for name, mod in list(sys.modules.items()):
            if mod is None or not (
                name == "gradcy.numpy"
                or name.startswith("gradcy.numpy.")
                or name.startswith("gradcy.scipy.")
            ):
                continue
            for v in list(vars(mod).values()):
                if type(v) is Primitive:
                    dict.setdefault(self, v.fun, v)

    def __missing__(self, raw):
        self._fill()
        if dict.__contains__(self, raw):
            return dict.__getitem__(self, raw)
        raise KeyError(raw)

    def __contains__(self, raw):
        try:
            self[raw]
        except (KeyError, TypeError):
            return False
        return True


trace_primitives_map = _TracePrimitivesMap()
