"""One differentiated call of a function: its tape, the traced arguments, the output.

Each call opens its own Tape (no global trace state, so threads and nested calls are
independent), boxes the inputs, runs the function, and releases the tape on the way out, also
when the function raises. _trace records a call for the backward pass and hands back a VJP
object (the only holder of the tape afterwards); _forward runs a call in forward mode.

Threads: any thread may apply operations to a differentiation's traced values while that
differentiation's function runs (they are recorded on its tape); an operation that ends after
the function returned and the backward pass started, or after the tape was released, raises
(RuntimeError, EscapedValueError) and records nothing. Array constructors attach to the
differentiations of their own thread only.
"""

from typing import Any

import numpy as _np

from . import _core, backends
from ._arguments import (
    _check_float_output,
    _check_scalar_output,
    _differentiated_leaves,
    _match_input,
    _ones_like,
    _independent,
    _warn_independent,
    _zeros_like,
)
from ._core import Box, Tape
from ._pytree import _first, tree_flatten
from .registry import defjvp_argnums, defvjp_argnums_direct, primitive


class VJP:
    """The vector-Jacobian product of one traced call, as returned by `gradcy.make_vjp`.

    ``vjp(g)`` returns the cotangent of the differentiated argument(s) for a cotangent ``g``
    of the output (same structure as the output). The object holds the call's tape, and with
    it every buffer saved for the backward pass, until `release` is called or the object is
    dropped.
    """

    __slots__ = (
        "_tape",
        "_out",
        "_leaves",
        "_inputs",
        "_unflatten",
        "_consume",
        "_fname",
        "_packed",
    )

    def __init__(self, tape, out, leaves, inputs, unflatten, consume, fname):
        self._tape = tape
        self._out = out  # index of the output node, or None if independent of inputs
        self._leaves = leaves  # node indices of the input leaves
        self._inputs = inputs  # the plain input leaves (for type/dtype/shape of gradients)
        self._unflatten = unflatten
        self._consume = consume
        self._fname = fname
        self._packed = False  # the output was a container: g is flattened the same way

    def __call__(self, g: Any) -> Any:
        cots = self._cotangents(g)
        return self._unflatten(backends.compute_pending(cots, self._inputs))

    def _cotangents(self, g):
        """The matched cotangents of the input leaves (flat; Dask ones of NumPy inputs not
        computed yet)."""
        tape = self._tape
        if tape is None or tape.released:
            raise _core.EscapedValueError(
                f"{self._fname}: this VJP function was already used or released; call "
                f"make_vjp again"
            )
        try:
            if self._out is None:
                cots = [None] * len(self._leaves)
            else:
                if self._packed:
                    g = tuple(tree_flatten(g)[0])
                cots = tape.backward(self._out, g, self._consume, self._leaves)
        finally:
            if self._consume:
                self.release()
        return [_match_input(c, x) for c, x in zip(cots, self._inputs)]

    def release(self) -> None:
        """Free the tape and the buffers it saved now (idempotent); later calls raise
        `gradcy.EscapedValueError`.
        """
        tape, self._tape = self._tape, None
        if tape is not None:
            tape.release()


def _note_shared_arguments(tape, args, kwargs, argnum):
    """A plain ndarray passed beside the differentiated ones (not differentiated, top level or
    in a tuple/list/dict) whose memory a differentiated input is in: that input is marked as
    shared, so a write into it raises (NumPy would change the other argument too, which gradcy
    never writes)."""
    diff = set(argnum) if type(argnum) is tuple or type(argnum) is list else {argnum}
    diff = {i % len(args) for i in diff}
    others = [a for i, a in enumerate(args) if i not in diff] + list(kwargs.values())
    while others:
        a = others.pop()
        if type(a) is tuple or type(a) is list:
            others.extend(a)
        elif type(a) is dict:
            others.extend(a.values())
        elif type(a) is _np.ndarray:
            entry = tape.input_entry(a)
            if entry is not None:
                entry.site = (entry.site or 1) + 1
                if entry.root is not a:
                    entry.root = None


def _call_traced(tape, fun, args, kwargs, argnum, traced_x):
    """fun(*args) with args[argnum] replaced by traced_x, with `tape` this thread's active
    differentiation while it runs (array constructors hand out buffers it owns)."""
    new_args = list(args)
    if type(argnum) is tuple or type(argnum) is list:
        for i, a in zip(argnum, traced_x):
            new_args[i] = a
    else:
        new_args[argnum] = traced_x
    del traced_x
    if tape.inputs is not None:
        _note_shared_arguments(tape, args, kwargs, argnum)
    _core.push_active(tape)
    try:
        return fun(*new_args, **kwargs)
    finally:
        _core.pop_active(tape)


def _trace(fun, args, kwargs, argnum, fname, consume, observer=None, recompute=None):
    """Run fun with args[argnum] traced; returns (VJP, plain output value)."""
    leaves, unflatten = _differentiated_leaves(args, argnum, fname)
    tape = Tape()
    if observer is not None:
        tape.observer = observer
    if recompute is not None:
        tape.recompute = recompute
    try:
        boxes = [tape.new_leaf(v) for v in leaves]
        leaf_nodes = [b._node for b in boxes]
        out = _call_traced(tape, fun, args, kwargs, argnum, unflatten(boxes))
        del boxes
    except BaseException:
        tape.release()
        raise
    return _finish_trace(tape, out, leaves, leaf_nodes, unflatten, fname, consume)


def _finish_trace(tape, out, leaves, leaf_nodes, unflatten, fname, consume):
    """(VJP, plain output value) of a traced call whose function has returned `out`."""
    try:
        out_node, ans, out_structure = _output(tape, out, fname)
        del out
    except BaseException:
        tape.release()
        raise
    if fname != "checkpoint" and (out_node is None or tape.node_flags(out_node)[2]):
        # (autograd's test: the output is not traced from the argument; _independent)
        _warn_independent(fname)
    vjp = VJP(tape, out_node, leaf_nodes, leaves, unflatten, consume, fname)
    vjp._packed = out_structure is not None
    return vjp, ans


def _finish_grad(fname, with_value, tape, out, leaves, leaf_nodes, multi):
    """The rest of grad / value_and_grad after _core.grad_fast ran the function."""
    vjp, ans = _finish_trace(tape, out, leaves, leaf_nodes, tuple if multi else _first, fname, True)
    return _grad_of(vjp, ans, fname, with_value)


def _grad_of(vjp, ans, fname, with_value):
    """The gradient (with_value: (ans, gradient)) from a consuming VJP of a scalar output;
    the VJP's tape is released also when the output is not a real scalar."""
    try:
        _check_scalar_output(ans, fname)
    except BaseException:
        vjp.release()
        raise
    if not backends.is_array_value(ans):
        # a traced output (a gradient inside forward mode or another gradient): a constant
        # seed, NumPy's one when the value is a 0-d Dask array
        g = vjp(backends.seed_like(ans) if type(ans) is Box else _ones_like(ans))
        return (ans, g) if with_value else g
    # arrays of other libraries: Dask gradients of NumPy inputs (and with them the value) are
    # computed together, so the graph they share runs once
    unflatten, inputs = vjp._unflatten, vjp._inputs
    cots = vjp._cotangents(backends.seed_like(ans))
    if with_value and not any(backends.is_lazy(x) for x in inputs):
        *cots, ans = backends.compute_pending(cots + [ans], inputs + [None])
        return ans, unflatten(cots)
    g = unflatten(backends.compute_pending(cots, inputs))
    return (ans, g) if with_value else g


def pack_outputs(*values):
    """The leaves of a function's container output as one traced tuple (one output node)."""
    return values


# named by the public module that exports it
pack_outputs = primitive(pack_outputs, "gradcy.differential_operators.pack_outputs")


defvjp_argnums_direct(
    pack_outputs,
    lambda argnums, g, g_owned, ans, args, kwargs: tuple([g[k] for k in argnums]),
    save=(),
)


def _pack_outputs_jvp(argnums, gs, ans, args, kwargs):
    tangents = dict(zip(argnums, gs))
    return tuple(tangents[i] if i in tangents else _zeros_like(a) for i, a in enumerate(args))


defjvp_argnums(pack_outputs, _pack_outputs_jvp)


def _output(tape, out, fname):
    """(output node or None, plain output value, structure) of a traced call's result."""
    if out is None:
        raise TypeError(
            f"{fname}: the differentiated function returned None; it must return "
            f"its output (a scalar for grad)"
        )
    if type(out) is Box and out._tape is tape:
        return tape.pin(out), out._value, None
    if isinstance(out, (tuple, list, dict)) and _contains_tape_box(out, tape):
        leaves, unflatten = tree_flatten(out)
        packed = pack_outputs(*leaves)
        values = [
            leaf._value if type(leaf) is Box and leaf._tape is tape else leaf for leaf in leaves
        ]
        return tape.pin(packed), unflatten(values), unflatten
    return None, out, None


def _contains_tape_box(obj, tape):
    if type(obj) is Box:
        return obj._tape is tape
    if isinstance(obj, (tuple, list)):
        return any(_contains_tape_box(e, tape) for e in obj)
    if isinstance(obj, dict):
        return any(_contains_tape_box(e, tape) for e in obj.values())
    return False


def _vjp_of_ones(vjp, ans, fname):
    """vjp applied to ones like a float output; the VJP's tape is released also on error. An
    integer output computed from an integer argument (differentiated as float64 values, as
    autograd does) gets float64 ones."""
    if _traced_integer_output(vjp, ans):
        return vjp(_np.ones(_np.shape(ans)))
    try:
        _check_float_output(ans, fname)
    except BaseException:
        vjp.release()
        raise
    return vjp(_ones_like(ans))


def _traced_integer_output(vjp, ans):
    """The output is an integer or boolean array computed on the tape (only the integer
    arithmetic of an integer argument makes one: a float rounded to an integer is a constant)."""
    return vjp._out is not None and isinstance(ans, _np.ndarray) and ans.dtype.kind in "biu"


def _strip(obj, tape):
    """obj with the Boxes of `tape` replaced by their plain values."""
    if type(obj) is Box:
        return obj._value if obj._tape is tape else obj
    if isinstance(obj, (tuple, list)):
        return type(obj)(_strip(e, tape) for e in obj)
    if isinstance(obj, dict):
        return {k: _strip(v, tape) for k, v in obj.items()}
    return obj


def _forward(fun, args, kwargs, argnum, leaves, unflatten, tangents, fname):
    """(fun(*args), its tangent) for `tangents` of the leaves of args[argnum] (rebuilt by
    unflatten), run once on a forward-mode tape."""
    tape = Tape(True)
    try:
        boxes = [tape.new_leaf(leaf, _match_input(t, leaf)) for leaf, t in zip(leaves, tangents)]
        out = _call_traced(tape, fun, args, kwargs, argnum, unflatten(boxes))
        del boxes
        if out is None:
            raise TypeError(f"{fname}: the function returned None")
        out_leaves, out_unflatten = tree_flatten(out)
        values, out_tangents, independent = [], [], True
        for leaf in out_leaves:
            independent = independent and _independent(leaf, tape)
            if type(leaf) is Box and leaf._tape is tape:
                values.append(leaf._value)
                out_tangents.append(_match_input(tape.tangent(leaf), leaf._value))
            else:
                values.append(leaf)
                out_tangents.append(_zeros_like(leaf))
        if independent and fname != "checkpoint":
            _warn_independent(fname)
        del out, out_leaves
        return out_unflatten(values), out_unflatten(out_tangents)
    finally:
        tape.release()
