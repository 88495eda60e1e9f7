"""Record a function's primitive calls once and replay them (autograd.misc.tracers's API).

    f_fast = const_graph(f)
    f_fast(x)      # first call: runs f on a recording tape, keeps the straight-line program
    f_fast(x2)     # later calls: run that program on x2, without tracing or dispatch

The recorded program holds, for each primitive call that depends on the inputs, the raw NumPy
function, its constant arguments and where its traced arguments come from; a replay calls
those functions in order. If f computes a gradient (const_graph(grad(loss))), the program is
the forward and the backward pass as plain NumPy calls, as a hand-written gradient would be.

As in autograd, f's Python control flow is frozen at the first call: branches on values, loop
counts, random draws and every value that does not depend on the inputs are the ones the
first call saw. Writes into arrays (buf[i] = v) cannot be replayed and raise.
"""
from functools import partial
from itertools import repeat

from .._arguments import _check_leaf
from .._core import Box, Tape
from .._pytree import tree_flatten
from .._tracing import _call_traced
from ..tracer import Node, trace
from ..util import subvals, toposort
from ..wrap_util import wraps

__all__ = ["const_graph", "const_graph_unary", "full_graph", "ConstGraphNode", "FullGraphNode",
           "Node", "trace", "toposort", "subvals", "wraps"]


# programs longer than this are interpreted step by step instead of compiled (the compiled
# function's code grows with the program: ~1 KB per step)
_MAX_COMPILED_STEPS = 100_000


class _Program:
    """A recorded straight-line program: steps (fun, args, links, kwargs, slot, drops), where
    links are (argument position, slot of its value) and drops are slots freed after the
    step; the inputs fill slots 0..n_inputs-1. `run(*inputs)` executes it: a Python function
    compiled from the steps (one line `r3 = f1(r0, k2)` per step, as a hand-written program
    would be), or the step interpreter for very long programs."""
    __slots__ = ("steps", "n_inputs", "n_slots", "out", "run")

    def __call__(self, x):
        leaves = tree_flatten(x)[0]
        if len(leaves) != self.n_inputs:
            raise ValueError(f"const_graph: recorded with {self.n_inputs} input values, called "
                             f"with {len(leaves)}")
        return self.run(*leaves)

    def _interpret(self, *leaves):
        vals = list(leaves) + [None] * (self.n_slots - self.n_inputs)
        for fun, args, links, kwargs, slot, drops in self.steps:
            a = list(args)
            for pos, s in links:
                a[pos] = vals[s]
            vals[slot] = fun(*a, **kwargs) if kwargs else fun(*a)
            for s in drops:
                vals[s] = None
        return vals[self.out]

    def _compile(self):
        """The program as one Python function of the inputs. Functions and constants are its
        globals (never written into the source); values live in local registers, each freed
        (reused or deleted) at the step that reads it last, as the interpreter frees slots."""
        ns, names = {}, {}

        def ref(obj):
            name = names.get(id(obj))
            if name is None:
                name = names[id(obj)] = f"k{len(names)}"
                ns[name] = obj
            return name
        reg = {s: f"a{s}" for s in range(self.n_inputs)}
        free, n_regs = [], 0
        lines = [f"def run({''.join(f'a{s}, ' for s in range(self.n_inputs))}):"]
        for fun, args, links, kwargs, slot, drops in self.steps:
            exprs = [ref(a) for a in args]
            for pos, s in links:
                exprs[pos] = reg[s]
            if kwargs:
                exprs.append(f"**{ref(kwargs)}")
            freed = [reg.pop(s) for s in drops]
            free.extend(freed)
            if free:
                out = free.pop()
            else:
                out, n_regs = f"r{n_regs}", n_regs + 1
            lines.append(f" {out} = {ref(fun)}({', '.join(exprs)})")
            dead = [r for r in freed if r != out]
            if dead:
                lines.append(f" del {', '.join(dead)}")
            reg[slot] = out
        lines.append(f" return {reg[self.out]}")
        exec(compile("\n".join(lines), "<const_graph replay>", "exec"), ns)
        return ns["run"]


def _record(fun, x):
    """(fun(x), the program that recomputes it from x)."""
    leaves, unflatten = tree_flatten(x)
    for i, leaf in enumerate(leaves):
        _check_leaf(leaf, "const_graph", i)
    tape = Tape()
    tape.keep_args = True
    try:
        boxes = [tape.new_leaf(v) for v in leaves]
        slot_of = {b._node: k for k, b in enumerate(boxes)}
        # active: constructors hand out buffers of this tape, so writes are recorded (and refused)
        out = _call_traced(tape, fun, (None,), {}, 0, unflatten(boxes))
        del boxes
        if type(out) is not Box or out._tape is not tape:
            raise ValueError("const_graph: the output is independent of the input (or not a "
                             "single traced value); there is nothing to record")
        value, out_node = out._value, tape.pin(out)
        del out
        return value, _program(tape, out_node, slot_of, len(leaves))
    finally:
        tape.release()


def _program(tape, out_node, slot_of, n_inputs):
    infos = {}
    stack = [out_node]
    while stack:                        # the nodes the output depends on
        i = stack.pop()
        if i in infos or i in slot_of:
            continue
        info = tape.node_info(i)
        constant = tape.node_flags(i)[2]
        info["parents_argnums"] = [(p, a) for p, a in zip(info["parents"], info["argnums"])
                                   if not tape.node_flags(p)[2]]
        if constant and info["prim"] is None:
            continue                    # a constructor's buffer: its value is in the consumers
        if info["prim"] is None or info["saved"] is None:
            raise ValueError(f"const_graph: node {i} of the recording has no replayable call "
                             f"(an array buffer written during the call?)")
        if info["prim"].vjp.writes:
            raise NotImplementedError(
                "const_graph: the function writes into an array (buf[idx] = value); a "
                "recorded write cannot be replayed. Build the array functionally (concatenate, "
                "stack, where) or call the function without const_graph.")
        infos[i] = info
        stack.extend(p for p, _ in info["parents_argnums"])
    order = sorted(infos)               # the arena's order is a topological order
    slot_of = dict(slot_of)
    for i in order:
        slot_of[i] = len(slot_of)
    last_use = {}
    for step, i in enumerate(order):
        for p, _ in infos[i]["parents_argnums"]:
            last_use[slot_of[p]] = step
    drops = [[] for _ in order]
    for s, step in last_use.items():
        drops[step].append(s)
    steps = []
    for step, i in enumerate(order):
        info = infos[i]
        _, args, kwargs = info["saved"]
        links = tuple((a, slot_of[p]) for p, a in info["parents_argnums"])
        # no reference to the values that come from slots; constants stay in the template
        template = subvals(args, [(a, None) for a, _ in links])
        steps.append((info["prim"].fun, template, links, kwargs or None, slot_of[i],
                      tuple(drops[step])))
    prog = _Program()
    prog.steps = steps
    prog.n_inputs = n_inputs
    prog.n_slots = len(slot_of)
    prog.out = slot_of[out_node]
    prog.run = prog._compile() if len(steps) <= _MAX_COMPILED_STEPS else prog._interpret
    return prog


def const_graph_unary(fun):
    """fun(x) that records its primitive calls at the first call and replays them later."""
    program = []
    _fun = [fun]          # dropped after the recording (it may hold large bound arguments)

    def maybe_cached_fun(x):
        if program:
            return program[0](x)
        value, prog = _record(_fun[0], x)
        program.append(prog)
        _fun.clear()
        return value
    return maybe_cached_fun


def const_graph(fun, *args, **kwargs):
    """Record ``fun``'s operations at the first call and replay them on later calls.

    The first call runs ``fun`` on a recording tape and keeps the straight-line program of its
    primitive calls that depend on the arguments; later calls run that program on their
    arguments as plain NumPy calls, without tracing or dispatch. As in autograd, Python control
    flow is frozen at the first call: branches taken, loop counts, random draws and every value
    that does not depend on the arguments are the first call's. A function that writes into
    arrays (``buf[i] = v``) cannot be replayed and raises.

    Parameters
    ----------
    fun : callable
        The function; it may compute a gradient (``const_graph(grad(loss))`` records the
        forward and the backward pass).
    *args, **kwargs
        Bound to ``fun`` first (as ``functools.partial``).

    Returns
    -------
    callable
        ``fast_fun(*xs)``: ``fun(*args, *xs, **kwargs)``, recorded at its first call.

    Examples
    --------
    >>> from gradcy.misc import const_graph
    >>> from gradcy import grad
    >>> import numpy as onp
    >>> import gradcy.numpy as np
    >>> def loss(x):
    ...     return np.sum(np.tanh(x) ** 2)
    >>> fast_grad = const_graph(grad(loss))
    >>> print(fast_grad(onp.array([0.0, 1.0])))               # recorded
    [0.         0.63970001]
    >>> y = onp.array([1.0, 2.0])
    >>> bool(np.allclose(fast_grad(y), grad(loss)(y)))          # replayed
    True
    """
    partial_fun = partial(fun, *args, **kwargs)
    cached = const_graph_unary(lambda xs: partial_fun(*xs))

    @wraps(fun)
    def _fun(*xs):
        return cached(xs)
    return _fun


# =============================================================================
# autograd's node types for gradcy.tracer.trace
# =============================================================================
class ConstGraphNode(Node):
    """A node that can recompute its value from its parents' values: partial_fun(values)."""
    __slots__ = ["parents", "partial_fun"]

    def __init__(self, value, fun, args, kwargs, parent_argnums, parents):
        args = subvals(args, zip(parent_argnums, repeat(None)))

        def partial_fun(partial_args):
            return fun(*subvals(args, zip(parent_argnums, partial_args)), **kwargs)
        self.parents = parents
        self.partial_fun = partial_fun

    def initialize_root(self):
        self.parents = []


class FullGraphNode(Node):
    """A node that keeps its value and how it was computed: recipe = (fun, args, kwargs,
    (argnum, parent) pairs)."""
    __slots__ = ["value", "recipe"]

    def __init__(self, value, fun, args, kwargs, parent_argnums, parents):
        self.value = value
        self.recipe = (fun, args, kwargs, zip(parent_argnums, parents))

    def initialize_root(self):
        self.value = None
        self.recipe = (lambda x: x, (), {}, [])


def full_graph(fun, *args, **kwargs):
    """The end node of fun(*args, **kwargs)'s trace with FullGraphNodes."""
    return trace(FullGraphNode.new_root(), lambda xs: fun(*xs, **kwargs), args)[1]
