"""Record a function's primitive calls once and replay them (autograd.misc.tracers's API).

    f_fast = const_graph(f)
    f_fast(x)      # first call: runs f on a recording tape, keeps the straight-line program
    f_fast(x2)     # later calls: run that program on x2, without tracing or dispatch

The recorded program holds, for each primitive call that depends on the inputs, the raw NumPy
function, its constant arguments and where its traced arguments come from; a replay calls
those functions in order. If f computes a gradient (const_graph(grad(loss))), the program is
the forward and the backward pass as plain NumPy calls, as a hand-written gradient would be.

Everything computed from the inputs is recomputed by the replay: the recording tape records the
calls of untraced primitives too (comparisons, argmax, sign, floor, isnan, nonzero: the masks
of where, abs, maximum, sort and of the VJP rules that branch on values), which a
differentiation leaves unrecorded. What a replay cannot recompute is checked instead (guards):
the type, shape and dtype of every input leaf and the structure of the arguments (one recorded
program per signature), and every value Python code read from a traced value while recording
(bool(x > 0) of an if, int(x), float(x), x.tolist(), len() and .shape of a value whose shape
depends on the values, as x[x > 0] has). A replay whose guards differ from the recording's
records the function again at those arguments (the last _MAX_PROGRAMS programs are kept); a
stale program is never run. Values that do not depend on the arguments (closures, globals,
random draws) are the first call's, as in autograd. Writes into arrays (buf[i] = v) cannot be
replayed and raise.
"""

import operator
from collections.abc import Callable
from functools import partial
from itertools import repeat
from typing import Any, TypeVar

import numpy as _np

from .._arguments import _check_leaf, _warn_independent
from .._core import Box, Tape
from .._pytree import tree_flatten
from .._tracing import _call_traced, pack_outputs
from ..tracer import Node, trace
from ..util import subvals, toposort
from ..wrap_util import wraps

_R = TypeVar("_R")  # what the function returns

__all__ = [
    "const_graph",
    "const_graph_unary",
    "full_graph",
    "ConstGraphNode",
    "FullGraphNode",
    "Node",
    "trace",
    "toposort",
    "subvals",
    "wraps",
]


# programs longer than this are interpreted step by step instead of compiled (the compiled
# function's code grows with the program: ~1 KB per step)
_MAX_COMPILED_STEPS = 100_000

# recorded programs a const_graph function keeps (one per signature and per set of values its
# Python code read); the least recently used is dropped
_MAX_PROGRAMS = 16

# untraced gradcy.numpy functions whose results depend on shapes and dtypes only, which the
# signature guard fixes: a recording leaves them untraced (their results stay plain values)
_SHAPE_ONLY_NAMES = (
    "ndim",
    "shape",
    "size",
    "isscalar",
    "iscomplexobj",
    "isrealobj",
    "result_type",
    "can_cast",
    "promote_types",
    "zeros_like",
    "ones_like",
    "empty_like",
    "tri",
    "tril_indices_from",
    "triu_indices_from",
    "diag_indices_from",
    "indices",
    "mask_indices",
    "may_share_memory",
    "shares_memory",
    "iterable",
    "isfortran",
    "ndindex",
)

# functions whose results' shapes depend on the values of their traced arguments (besides calls
# with a traced integer or boolean argument: an index, a mask, a count, a shape)
_VALUE_SHAPED_NAMES = (
    "nonzero",
    "argwhere",
    "flatnonzero",
    "unique",
    "unique_all",
    "unique_counts",
    "unique_inverse",
    "unique_values",
    "compress",
    "extract",
    "trim_zeros",
    "setdiff1d",
    "intersect1d",
    "union1d",
    "setxor1d",
)

_known: list[frozenset[Any]] = []


class ReplayedWriteError(NotImplementedError):
    """A recording's value depends on a write into an array, which a replay cannot redo (the
    caller may run the function eagerly instead: gradcy.jit does)."""


def _positional_only(label, kw, what="replayed"):
    """The TypeError of a replayed function (const_graph's, jit's) called with keywords."""
    return TypeError(
        f"{label}: the {what} function takes its arguments by position only, "
        f"got keyword argument(s) {', '.join(kw)}; pass them by position, or bind "
        f"them with {label.removeprefix('gradcy.')}(fun, {next(iter(kw))}=...)"
    )


def _known_sets():
    """(untraced primitives left unrecorded, primitives whose result shapes depend on values)."""
    if not _known:
        from .. import numpy as gnp

        _known.append(frozenset(getattr(gnp, n) for n in _SHAPE_ONLY_NAMES if hasattr(gnp, n)))
        _known.append(frozenset(getattr(gnp, n) for n in _VALUE_SHAPED_NAMES if hasattr(gnp, n)))
    return _known


class _GuardMiss(Exception):
    """A replay read a value other than its recording read: the program does not apply."""


def _shape_of(v):
    shape = getattr(v, "shape", None)
    if type(shape) is tuple:
        return shape
    if isinstance(v, (list, tuple)):  # (array_split's pieces: shapes that differ)
        return type(v), tuple(map(_shape_of, v))
    return _np.shape(v)


def _tolist(v):
    return v.tolist()


def _same_value(a, b):
    """a and b are the same value: type, shape, dtype and every element (nan equal to nan)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, _np.ndarray):
        return (
            a.shape == b.shape
            and a.dtype == b.dtype
            and bool(_np.array_equal(a, b, equal_nan=a.dtype.kind in "fc"))
        )
    if isinstance(a, (tuple, list)):
        return len(a) == len(b) and all(map(_same_value, a, b))
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_same_value(a[k], b[k]) for k in a)
    try:
        if a == b:
            return True
        return a != a and b != b  # nan
    except (TypeError, ValueError):
        return a is b


class _SameValue:
    """The guard of a whole value a rule read with gradcy.numpy._wrap._plain: True when the
    replay's value is the recorded one."""

    __slots__ = ("value",)

    def __init__(self, value):
        self.value = value

    def __call__(self, v):
        return _same_value(v, self.value)


# kind of read (gradcy/_box.pyx and gradcy/numpy/_wrap.py's _plain tell the recorder) -> what
# the replay's guard computes (its result is compared with the recorded one)
_READS = {
    "bool": bool,
    "int": int,
    "index": operator.index,
    "float": float,
    "complex": complex,
    "tolist": _tolist,
    "shape": _shape_of,
}


class _Recorder:
    """A const_graph recording, as the engine sees it (Tape.recorder): which untraced
    primitives to record, and the Python-level reads of traced values."""

    __slots__ = ("tape", "skip", "reads")

    def __init__(self, tape):
        self.tape = tape
        self.skip = _known_sets()[0]
        self.reads = []  # (node, kind, value, box)

    def records(self, prim):
        return prim not in self.skip

    def read(self, box, kind, value):
        if box._tape is not self.tape or self.tape.node_flags(box._node)[2]:
            return  # not computed from the inputs
        if kind == "shape":
            value = _shape_of(box._value)
        # the Box is kept until the program is built: its node (and what it depends on)
        # keeps its record while the recording runs
        self.reads.append((box._node, kind, value, box))


# leaves a recording keeps as constants (not traced): a replay runs only where they are equal
_STATIC_LEAVES = (bool, int, str, bytes, _np.integer, _np.bool_)


def _leaf_signature(v):
    t = type(v)
    if t is float or t is complex:
        return t
    if isinstance(v, _STATIC_LEAVES):
        return t, v  # (a recording has its value as a constant)
    return t, getattr(v, "shape", None), getattr(v, "dtype", None)


def _structure(x):
    t = type(x)
    if t is tuple or t is list or isinstance(x, (tuple, list)):
        return t, tuple(_structure(e) for e in x)
    if isinstance(x, dict):
        return t, tuple((k, _structure(v)) for k, v in x.items())
    return None


_ndarray = _np.ndarray


def _signature(x):
    """(leaves of x, the key its programs are recorded under: the structure of x and the
    type, shape and dtype of each leaf)."""
    leaves, unflatten = tree_flatten(x)
    key = [unflatten if unflatten is tuple or unflatten is list else _structure(x)]
    for v in leaves:
        if type(v) is _ndarray:  # (shape, dtype): two entries, no tuple built
            key.append(v.shape)
            key.append(v.dtype)
        else:
            key.append(_leaf_signature(v))
    return leaves, tuple(key)


class _Program:
    """A recorded straight-line program: steps (fun, args, links, kwargs, slot, drops, guards,
    nested), where links are (argument position, slot of its value), drops are slots freed
    before the step's result is stored, guards are (read, value) pairs the step's result must
    give (read(result) == value, else _GuardMiss) and nested the positions of container
    arguments that hold values of slots (_Slot); the inputs fill slots 0..n_inputs-1, whose
    guards are input_guards (slot, read, value). `run(*inputs)` executes it: a Python function
    compiled from the steps (one line `r3 = f1(r0, k2)` per step, as a hand-written program
    would be), or the step interpreter for very long programs."""

    __slots__ = ("steps", "n_inputs", "n_slots", "out", "run", "input_guards", "structure")

    def __call__(self, x):
        leaves = tree_flatten(x)[0]
        if len(leaves) != self.n_inputs:
            raise ValueError(
                f"const_graph: recorded with {self.n_inputs} input values, called "
                f"with {len(leaves)}"
            )
        return self.replay(leaves)

    def replay(self, leaves):
        """The output at the input leaves `leaves` (raises _GuardMiss where a guard fails)."""
        out = self.run(*leaves)
        return out if self.structure is None else self.structure(list(out))

    def _interpret(self, *leaves):
        for s, read, value in self.input_guards:
            if read(leaves[s]) != value:
                raise _GuardMiss
        vals = list(leaves) + [None] * (self.n_slots - self.n_inputs)
        for fun, args, links, kwargs, slot, drops, guards, nested in self.steps:
            a = _step_args(args, links, nested, vals)
            for s in drops:
                vals[s] = None
            vals[slot] = v = fun(*a, **kwargs) if kwargs else fun(*a)
            for read, value in guards:
                if read(v) != value:
                    raise _GuardMiss
            del v
        return vals[self.out]

    def rebuilt(self, steps, n_slots):
        """A program of the same inputs, guards and output that runs `steps` (whose drops are
        recomputed: each slot is freed at the step that reads it last) in n_slots slots."""
        from .._buffer_plan import _last_reads  # (gradcy.jit's; it imports this module)

        drops = [[] for _ in steps]
        for s, k in _last_reads(steps).items():
            if s != self.out:
                drops[k].append(s)
        prog = _Program()
        prog.steps = [step[:5] + (tuple(drops[k]),) + step[6:] for k, step in enumerate(steps)]
        prog.n_inputs = self.n_inputs
        prog.n_slots = n_slots
        prog.out = self.out
        prog.structure = self.structure
        prog.input_guards = self.input_guards
        prog.run = prog._compile() if len(steps) <= _MAX_COMPILED_STEPS else prog._interpret
        return prog

    def _first_run(self, *leaves):
        self.run = self._compile()
        return self.run(*leaves)

    def _compile(self):
        """The program as one Python function of the inputs. Functions and constants are its
        globals (never written into the source); values live in local registers, each freed
        (reused or deleted) at the step that reads it last, as the interpreter frees slots."""
        ns, names = {"_GuardMiss": _GuardMiss}, {}

        def ref(obj):
            name = names.get(id(obj))
            if name is None:
                name = names[id(obj)] = f"k{len(names)}"
                ns[name] = obj
            return name

        def guard(reg_name, read, value):
            lines.append(f" if {ref(read)}({reg_name}) != {ref(value)}: raise _GuardMiss")

        reg = {s: f"a{s}" for s in range(self.n_inputs)}
        free, n_regs = [], 0
        lines = [f"def run({''.join(f'a{s}, ' for s in range(self.n_inputs))}):"]
        for s, read, value in self.input_guards:
            guard(reg[s], read, value)
        used = {s for step in self.steps for s in step[5]} | {self.out}

        def source(v):  # a container argument holding registers
            t = type(v)
            if t is _Slot:
                return reg[v.slot]
            if t is tuple:
                return f"({''.join(source(e) + ', ' for e in v)})"
            if t is list:
                return f"[{', '.join(source(e) for e in v)}]"
            if t is dict:
                return f"{{{', '.join(f'{ref(k)}: {source(e)}' for k, e in v.items())}}}"
            if t is slice:
                return f"slice({source(v.start)}, {source(v.stop)}, {source(v.step)})"
            return ref(v)

        for fun, args, links, kwargs, slot, drops, guards, nested in self.steps:
            exprs = [ref(a) for a in args]
            for pos, s in links:
                exprs[pos] = reg[s]
            for pos in nested:
                exprs[pos] = source(args[pos])
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
            for read, value in guards:
                guard(out, read, value)
            if slot not in used:  # computed for its guards only
                dead.append(out)
                free.append(out)
            else:
                reg[slot] = out
            if dead:
                lines.append(f" del {', '.join(dead)}")
        lines.append(f" return {reg[self.out]}")
        exec(compile("\n".join(lines), "<const_graph replay>", "exec"), ns)
        return ns["run"]


def _record(fun, x):
    """(fun(x), the program that recomputes it from x, valid for the arguments whose signature
    and reads are those of x)."""
    leaves, unflatten = tree_flatten(x)
    for i, leaf in enumerate(leaves):
        if not isinstance(leaf, _STATIC_LEAVES):
            _check_leaf(leaf, "const_graph", i)
    tape = Tape()
    tape.keep_args = True
    recorder = tape.recorder = _Recorder(tape)
    try:
        # an int, bool or str argument (a step count, a flag, a mode) stays a constant of the
        # recording, as in the eager call; its value is part of the signature (_leaf_signature)
        boxes = [v if isinstance(v, _STATIC_LEAVES) else tape.new_leaf(v) for v in leaves]
        slot_of = {(b._node if type(b) is Box else ("constant", k)): k for k, b in enumerate(boxes)}
        # active: constructors hand out buffers of this tape, so writes are recorded (and refused)
        out = _call_traced(tape, fun, (None,), {}, 0, unflatten(boxes))
        del boxes
        structure = None
        if type(out) is not Box and isinstance(out, (tuple, list, dict)):
            # a container of outputs: one traced tuple of its leaves, rebuilt after a replay
            out_leaves, structure = tree_flatten(out)
            if any(type(v) is Box and v._tape is tape for v in out_leaves):
                out = pack_outputs(*out_leaves)
            del out_leaves
        tape.recorder = None
        if type(out) is not Box or out._tape is not tape:
            _warn_independent("const_graph")  # (autograd warns, then raises)
            raise ValueError(
                "const_graph: the output is independent of the input (or holds no "
                "value computed from it); there is nothing to record"
            )
        value, out_node = out._value, tape.pin(out)
        del out
        prog = _program(tape, out_node, slot_of, len(leaves), recorder.reads)
        if not _reaches_inputs(tape, out_node, slot_of):
            # made by array constructors (and reads of the inputs' shapes) only: recorded and
            # replayed, with autograd's warning (autograd raises there)
            _warn_independent("const_graph")
        if structure is not None:
            prog.structure = structure
            value = structure(list(value))
        return value, prog
    finally:
        tape.recorder = None
        tape.release()


def _needed(tape, roots, slot_of, infos):
    """The recorded nodes the nodes `roots` depend on (inputs excluded), their node_info
    dicts in `infos` (filled)."""
    stack = list(roots)
    needed = set()
    while stack:
        i = stack.pop()
        if i in needed or i in slot_of:
            continue
        info = infos.get(i)
        if info is None:
            info = tape.node_info(i)
            constant = tape.node_flags(i)[2]
            info["parents_argnums"] = [
                (p, a)
                for p, a in zip(info["parents"], info["argnums"])
                if not tape.node_flags(p)[2]
            ]
            info["constant"] = constant
            linked = {a for _, a in info["parents_argnums"]}
            saved = info["saved"] or (None, (), None)
            info["nested"] = [
                (a, n)
                for a, v in enumerate(saved[1])
                if a not in linked
                for n in _nested_nodes(v, tape)
            ]
            if saved[2] and any(True for v in saved[2].values() for _ in _nested_nodes(v, tape)):
                raise NotImplementedError(
                    f"const_graph: a keyword argument of {info['primitive']} holds a value "
                    f"computed from the inputs, which a replay cannot recompute; pass it by "
                    f"position, or call the function without const_graph."
                )
            infos[i] = info
        if info["constant"] and info["prim"] is None:
            continue  # a constructor's buffer: its value is in the consumers
        if info["prim"] is None or info["saved"] is None:
            raise ValueError(
                f"const_graph: node {i} of the recording has no replayable call "
                f"(an array buffer written during the call?)"
            )
        if info["prim"].vjp.writes:
            raise ReplayedWriteError(
                "const_graph: the function writes into an array (buf[idx] = value); a "
                "recorded write cannot be replayed. Build the array functionally (concatenate, "
                "stack, where) or call the function without const_graph."
            )
        needed.add(i)
        stack.extend(p for p, _ in info["parents_argnums"])
        stack.extend(n for _, n in info["nested"])
    return needed


def _reaches_inputs(tape, out_node, inputs):
    """A recorded value of the inputs (node indices `inputs`) reaches node out_node: through
    the traced arguments of the calls, or values computed from them inside their containers."""
    stack, seen = [out_node], set()
    while stack:
        i = stack.pop()
        if i in inputs:
            return True
        if i in seen:
            continue
        seen.add(i)
        info = tape.node_info(i)
        stack.extend(info["parents"])
        if info["saved"] is not None:
            for v in info["saved"][1]:
                stack.extend(_nested_nodes(v, tape))
    return False


def _nested_nodes(v, tape):
    """The nodes of the Boxes of `tape` (not constants) inside the container argument v (a
    tuple index (i, j) of values computed from the inputs, a slice...)."""
    t = type(v)
    if t is Box:
        return ()  # (a traced argument itself is a link)
    if t is not tuple and t is not list and t is not dict and t is not slice:
        return ()
    found, stack = [], [v]
    while stack:
        v = stack.pop()
        t = type(v)
        if t is Box:
            if v._tape is tape and not tape.node_flags(v._node)[2]:
                found.append(v._node)
        elif t is tuple or t is list:
            stack.extend(v)
        elif t is dict:
            stack.extend(v.values())
        elif t is slice:
            stack.extend((v.start, v.stop, v.step))
    return found


class _Slot:
    """In a recorded container argument: the value of slot `slot` at the replay."""

    __slots__ = ("slot",)

    def __init__(self, slot):
        self.slot = slot


def _detach(v, tape, slot_of):
    """The container argument v with each Box of `tape` replaced by its _Slot (its value for a
    constant)."""
    t = type(v)
    if t is Box:
        if v._tape is not tape:
            return v
        return v._value if tape.node_flags(v._node)[2] else _Slot(slot_of[v._node])
    if t is tuple or t is list:
        return t([_detach(e, tape, slot_of) for e in v])
    if t is dict:
        return {k: _detach(e, tape, slot_of) for k, e in v.items()}
    if t is slice:
        return slice(*(_detach(e, tape, slot_of) for e in (v.start, v.stop, v.step)))
    return v


def _slots_in(v):
    """The slots of the _Slots inside a _detach'ed container."""
    t = type(v)
    if t is _Slot:
        return [v.slot]
    if t is tuple or t is list:
        return [s for e in v for s in _slots_in(e)]
    if t is dict:
        return [s for e in v.values() for s in _slots_in(e)]
    if t is slice:
        return [s for e in (v.start, v.stop, v.step) for s in _slots_in(e)]
    return []


def _step_args(args, links, nested, vals):
    """A step's arguments: its template args with the values (in vals) of the slots its links
    and its nested containers name."""
    a = list(args)
    for pos, s in links:
        a[pos] = vals[s]
    for pos in nested:
        a[pos] = _fill(a[pos], vals)
    return a


def _fill(v, vals):
    """A _detach'ed container with the values of its slots (the interpreter's)."""
    t = type(v)
    if t is _Slot:
        return vals[v.slot]
    if t is tuple or t is list:
        return t([_fill(e, vals) for e in v])
    if t is dict:
        return {k: _fill(e, vals) for k, e in v.items()}
    if t is slice:
        return slice(_fill(v.start, vals), _fill(v.stop, vals), _fill(v.step, vals))
    return v


def _value_shaped(i, info, dynamic, value_shaped):
    """Node i's result may change shape with the values of the inputs: its function is one of
    those, or it has a traced integer or boolean argument, or an argument that may."""
    if any(p in dynamic for p, _ in info["parents_argnums"]):
        return True
    if info["prim"] in value_shaped:
        return True
    args = info["saved"][1]
    if isinstance(info["prim"].fun, _np.ufunc) or (
        info["prim"].name == "gradcy.numpy.where" and len(args) == 3
    ):
        return False  # elementwise: the broadcast shape of the arguments
    for _p, a in info["parents_argnums"]:
        v = args[a]
        dtype = getattr(v, "dtype", None)
        if dtype is None:
            if not isinstance(v, (float, complex)):
                return True  # a traced int, tuple (nonzero's), ...
        elif dtype.kind not in "fc":
            return True
    return False


def _program(tape, out_node, slot_of, n_inputs, reads):
    infos = {}
    value_reads = [(i, k, v) for i, k, v, _ in reads if k != "shape"]
    shape_reads = [(i, k, v) for i, k, v, _ in reads if k == "shape"]
    roots = [out_node] + [i for i, _, _ in value_reads]
    if shape_reads:  # which shape reads read a shape the values decide
        candidates = _needed(tape, roots + [i for i, _, _ in shape_reads], slot_of, infos)
        value_shaped, dynamic = _known_sets()[1], set()
        for i in sorted(candidates):
            if _value_shaped(i, infos[i], dynamic, value_shaped):
                dynamic.add(i)
        shape_reads = [r for r in shape_reads if r[0] in dynamic]
    guarded = value_reads + shape_reads
    nodes = _needed(tape, roots + [i for i, _, _ in shape_reads], slot_of, infos)
    order = sorted(nodes)  # the arena's order is a topological order
    slot_of = dict(slot_of)
    for i in order:
        slot_of[i] = len(slot_of)
    guards, seen = {}, set()
    for i, kind, value in guarded:
        if (i, kind) in seen:
            continue  # (a node's value is the same at every read)
        seen.add((i, kind))
        if kind == "value":
            guards.setdefault(slot_of[i], []).append((_SameValue(value), True))
        else:
            guards.setdefault(slot_of[i], []).append((_READS[kind], value))
    last_use = {}
    for step, i in enumerate(order):
        for p, _ in infos[i]["parents_argnums"]:
            last_use[slot_of[p]] = step
        for _, p in infos[i]["nested"]:
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
        nested = tuple(sorted({a for a, _ in info["nested"]}))
        if nested:  # containers holding values of the program
            template = subvals(template, [(a, _detach(template[a], tape, slot_of)) for a in nested])
        steps.append(
            (
                info["prim"].fun,
                template,
                links,
                kwargs or None,
                slot_of[i],
                tuple(drops[step]),
                tuple(_dedup(guards.get(slot_of[i], ()))),
                nested,
            )
        )
    prog = _Program()
    prog.steps = steps
    prog.n_inputs = n_inputs
    prog.n_slots = len(slot_of)
    prog.out = slot_of[out_node]
    prog.structure = None
    prog.input_guards = tuple(
        (s, read, value) for s in range(n_inputs) for read, value in _dedup(guards.get(s, ()))
    )
    # (compiled at the first replay: gradcy.jit replaces most programs before any)
    prog.run = prog._first_run if len(steps) <= _MAX_COMPILED_STEPS else prog._interpret
    return prog


def _dedup(guards):
    """guards without repeats of one (read, value) pair."""
    out = []
    for read, value in guards:
        if not any(r is read and type(v) is type(value) and v == value for r, v in out):
            out.append((read, value))
    return out


def const_graph_unary(fun, compile=None):
    """fun(x) that records its primitive calls at the first call and replays them later; a
    call whose signature or Python-level reads differ from every kept recording's records
    again. compile(program, leaves), if given, is called on each new recording (with the
    input leaves it was recorded at) and returns the program to keep in its place (gradcy.jit's
    native code generator); the guards and the cache are the same either way."""
    programs = []  # [signature, program], most recently used first

    def maybe_cached_fun(x):
        leaves, key = _signature(x)
        for k, entry in enumerate(programs):
            if entry[0] == key:
                try:
                    out = entry[1].replay(leaves)
                except _GuardMiss:
                    continue
                if k:
                    programs.insert(0, programs.pop(k))
                return out
        value, prog = _record(fun, x)
        if compile is not None:
            prog = compile(prog, leaves, value)
        programs.insert(0, [key, prog])
        del programs[_MAX_PROGRAMS:]
        return value

    maybe_cached_fun.programs = programs
    return maybe_cached_fun


def const_graph(fun: Callable[..., _R], *args: Any, **kwargs: Any) -> Callable[..., _R]:
    """Record ``fun``'s operations at the first call and replay them on later calls.

    The first call runs ``fun`` on a recording tape and keeps the straight-line program of its
    primitive calls that depend on the arguments; later calls run that program on their
    arguments as plain NumPy calls, without tracing or dispatch. Everything computed from the
    arguments is recomputed, masks and comparisons included (``where(x > 0, ...)``, ``abs``,
    ``maximum``, ``sort``, ``argmax`` and the masks of their gradients). What the program
    cannot recompute is checked at each call: the structure of the arguments and the type,
    shape and dtype of each, and every value Python code read from a traced value while
    recording (``if x.sum() > 0``, ``int(i)``, ``x.tolist()``, the shape of ``x[x > 0]``);
    a call where one differs records ``fun`` again (the last 16 recordings are kept), so a
    stale program never runs. An ``int``, ``bool`` or ``str`` argument (a step count, a flag,
    a mode) is a constant of the recording: a call with another value records again. Values
    that do not depend on the arguments (globals, closures, random draws) are the first
    call's, as in autograd. A function that writes into arrays
    (``buf[i] = v``) cannot be replayed and raises.

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
    ...     return np.sum(np.maximum(x, 0.0) * np.tanh(x))
    >>> fast_grad = const_graph(grad(loss))
    >>> print(fast_grad(onp.array([0.5, -1.0])))               # recorded
    [0.85534102 0.        ]
    >>> y = onp.array([-0.5, 1.0])
    >>> bool(onp.array_equal(fast_grad(y), grad(loss)(y)))      # replayed, new mask
    True
    """
    partial_fun = partial(fun, *args, **kwargs)
    cached = const_graph_unary(lambda xs: partial_fun(*xs))

    @wraps(fun)
    def _fun(*xs, **kw):
        if kw:
            raise _positional_only("const_graph", kw)
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
