"""gradcy.jit's native code generator: a recorded program (gradcy.misc.tracers._Program) into
Numba kernels with Python glue between them.

A recorded program is a list of NumPy calls on slots. `compile_program` runs it once at the
recording's inputs to learn the type, shape and dtype of every slot (the guards of the
recording fix them for every replay), then cuts it into groups: a run of consecutive
elementwise steps (ufuncs of _UNARY/_BINARY, numpy.where) whose results are real arrays of one
shape becomes one kernel, a loop nest over that shape that computes each element of the run as
scalar statements (no temporaries: only the slots read after the run are written to arrays);
every other step stays the NumPy call it was (matmul and einsum call BLAS as they do in NumPy,
reductions, indexing, and any primitive the generator does not know). Each kernel replaces its
run by one step of the program, a Python wrapper that allocates the kernel's outputs and calls
it, so the glue, its guards and its freeing of slots are const_graph's own
(tracers._Program.rebuilt).

Then the runs of planned steps Numba can run in nopython mode (kernels, 2-d products as BLAS
calls, NumPy's own SIMD unary loops called through the ufunc's loop pointer, in-place updates,
basic indexing, writes, axis sums) that a loop of the user's program repeats become native
segments (_native_program): one Numba function per distinct repeat, its int indexes as
parameters. Kernels are compiled from files named by their source's hash with Numba's
cache=True (cache_dir()), so a later process loads them from disk.

Kernels compute each step in the dtype NumPy's loop would (the result's dtype for arithmetic,
the operands' common dtype for comparisons), with Python scalars cast to it as NEP 50 does, and
Numba's error_model='numpy' (1/0 is inf, not an exception): + - * / and comparisons give NumPy's
bits; sin, tanh, exp... call the C library's functions, which may differ from NumPy's SIMD ones
in the last place.
"""

import bisect
import hashlib
import importlib.util
import math
import operator
import os
import re
import sys
import warnings
import weakref

import numpy as np

from .misc.tracers import _fill, _slots_in

# ufunc -> scalar expression template ({0}, {1}: the operands, cast to the loop's dtype)
_UNARY = {
    np.sin: "np.sin({0})",
    np.cos: "np.cos({0})",
    np.tan: "np.tan({0})",
    np.arcsin: "np.arcsin({0})",
    np.arccos: "np.arccos({0})",
    np.arctan: "np.arctan({0})",
    np.sinh: "np.sinh({0})",
    np.cosh: "np.cosh({0})",
    np.tanh: "np.tanh({0})",
    np.arcsinh: "np.arcsinh({0})",
    np.arccosh: "np.arccosh({0})",
    np.arctanh: "np.arctanh({0})",
    np.exp: "np.exp({0})",
    np.exp2: "np.exp2({0})",
    np.expm1: "np.expm1({0})",
    np.log: "np.log({0})",
    np.log2: "np.log2({0})",
    np.log10: "np.log10({0})",
    np.log1p: "np.log1p({0})",
    np.sqrt: "np.sqrt({0})",
    np.negative: "(-{0})",
    np.positive: "(+{0})",
    np.absolute: "abs({0})",
    np.fabs: "abs({0})",
    np.square: "({0} * {0})",
    np.floor: "np.floor({0})",
    np.ceil: "np.ceil({0})",
    np.trunc: "np.trunc({0})",
    np.isnan: "np.isnan({0})",
    np.isinf: "np.isinf({0})",
    np.isfinite: "np.isfinite({0})",
    np.logical_not: "(not {0})",
}
_BINARY = {
    np.add: "({0} + {1})",
    np.subtract: "({0} - {1})",
    np.multiply: "({0} * {1})",
    np.true_divide: "({0} / {1})",
    np.power: "np.power({0}, {1})",
    np.maximum: "np.maximum({0}, {1})",
    np.minimum: "np.minimum({0}, {1})",
    np.fmax: "np.fmax({0}, {1})",
    np.fmin: "np.fmin({0}, {1})",
    np.arctan2: "np.arctan2({0}, {1})",
    np.hypot: "np.hypot({0}, {1})",
    np.copysign: "np.copysign({0}, {1})",
    np.logaddexp: "np.logaddexp({0}, {1})",
    np.greater: "({0} > {1})",
    np.greater_equal: "({0} >= {1})",
    np.less: "({0} < {1})",
    np.less_equal: "({0} <= {1})",
    np.equal: "({0} == {1})",
    np.not_equal: "({0} != {1})",
    np.logical_and: "({0} and {1})",
    np.logical_or: "({0} or {1})",
    np.logical_xor: "({0} != {1})",
}
# NumPy's loops of these are SIMD (AVX2/AVX-512: about 1-2 ns an element), ten times the speed
# of the C library's scalar functions a Numba loop calls (tanh: 17.6 against 1.8 ns, exp 4.3
# against 0.9, measured on 4096 float64 elements); sin and cos are the C library's in both.
# On arrays of _SIMD_MIN_SIZE elements or more they stay NumPy calls between kernels.
_SIMD_IN_NUMPY = frozenset(
    (
        np.tanh,
        np.exp,
        np.exp2,
        np.expm1,
        np.log,
        np.log2,
        np.log10,
        np.log1p,
        np.arctan,
        np.arcsin,
        np.arccos,
        np.sinh,
        np.cosh,
        np.arcsinh,
        np.arccosh,
        np.arctanh,
        np.tan,
        np.power,
        np.logaddexp,
        np.arctan2,
        np.hypot,
    )
)
_SIMD_MIN_SIZE = 64
_LOGICAL = (np.logical_not, np.logical_and, np.logical_or, np.logical_xor)
_WHERE = np.where

_FLOATS = (np.dtype(np.float64), np.dtype(np.float32))
_BOOL = np.dtype(bool)
_OPERAND_DTYPES = _FLOATS + (_BOOL, np.dtype(np.int64), np.dtype(np.int32))
_CAST = {np.dtype(np.float64): "np.float64", np.dtype(np.float32): "np.float32", _BOOL: "bool"}

# fused runs shorter than this stay NumPy calls (a kernel call costs about as much as two)
MIN_FUSED_STEPS = 2
# longer runs are cut into kernels of this many steps (LLVM's time grows faster than the size
# of a function: one 8,000-statement kernel compiles in over a minute)
MAX_KERNEL_STEPS = 20_000

_numba = []

# compiled kernels by source (identical steps of a loop in the user's program, or of two
# recordings, compile once); the oldest are dropped beyond _MAX_KERNELS
_kernels = {}
_MAX_KERNELS = 1024


def numba_module():
    """numba, or None where it is not installed (imported once)."""
    if not _numba:
        try:
            import numba
        except ImportError:
            numba = None
        _numba.append(numba)
    return _numba[0]


class _Meta:
    """What a slot holds at every replay: its type, shape and dtype (value for a scalar)."""

    __slots__ = ("type", "shape", "dtype", "value")

    def __init__(self, v):
        self.type = type(v)
        self.shape = getattr(v, "shape", None) if isinstance(v, (np.ndarray, np.generic)) else ()
        self.dtype = getattr(v, "dtype", None)
        self.value = v if self.type in (float, int, bool) else None


def _probe(prog, leaves):
    """(the _Meta of every slot of prog, the steps whose write can be made in place), from one
    interpreted run at `leaves`.

    A recorded write buf[idx] = v is the step at_set(buf, idx, v), which copies buf (const_graph
    keeps every version: the backward pass reads views of old ones). The copy is left out (the
    write goes into buf's buffer) where nothing can see the difference: buf is a copy the
    program made (a chain of such writes, started by a copy), no step reads buf after this one,
    and every value still to be read that lies in the chain's buffer (a view of an older
    version, as a memory network's saved prefix) shares no element with buf[idx]."""
    from .numpy.indexed_updates import _at_set

    vals = list(leaves) + [None] * (prog.n_slots - prog.n_inputs)
    meta = [_Meta(v) for v in vals[: prog.n_inputs]] + [None] * (prog.n_slots - prog.n_inputs)
    chain = {}  # id(version array) -> chain number
    in_place = set()
    with np.errstate(all="ignore"):
        for k, (fun, args, links, kwargs, slot, drops, _guards, nested) in enumerate(prog.steps):
            a = list(args)
            for pos, s in links:
                a[pos] = vals[s]
            for pos in nested:
                a[pos] = _fill(a[pos], vals)
            for s in drops:
                vals[s] = None
            if (
                fun is _at_set
                and not kwargs
                and not nested
                and len(args) == 3
                and all(pos != 1 for pos, _ in links)
                and _basic(args[1])
                and any(pos == 0 and s in drops for pos, s in links)
            ):
                # (a constant basic index; buf is dead after this step)
                c = _write_chain(a[0], links, chain)
                if c is not None and _unseen(c, a[0], a[1], vals, chain):
                    in_place.add(k)
            vals[slot] = v = fun(*a, **kwargs) if kwargs else fun(*a)
            if fun is _at_set and type(v) is np.ndarray:
                c = chain.get(id(a[0])) if _is_version_arg(a[0], chain) else None
                chain[id(v)] = (len(chain) if c is None else c[0], weakref.ref(v))
            meta[slot] = _Meta(v)
            del v
    return meta, in_place


def _basic(idx):
    """idx is a basic index (ints, slices, Ellipsis, None): buf[idx] is a view of buf, whose
    memory says where the write goes (an advanced index's buf[idx] is a copy)."""
    if type(idx) is tuple:
        return all(map(_basic, idx))
    return (
        idx is None
        or idx is Ellipsis
        or type(idx) is slice
        or (isinstance(idx, (int, np.integer)) and not isinstance(idx, (bool, np.bool_)))
    )


def _is_version_arg(v, chain):
    return type(v) is np.ndarray and _is_version(v, chain)


def _write_chain(buf, links, chain):
    """The chain of copies the buffer `buf` (at_set's first argument, linked to a slot) is the
    latest version of, or None."""
    if type(buf) is not np.ndarray or not any(pos == 0 for pos, _ in links):
        return None
    c = chain.get(id(buf))
    return None if c is None or c[1]() is not buf else c[0]


def _arrays_in(v):
    t = type(v)
    if t is tuple or t is list:
        return [a for e in v for a in _arrays_in(e)]
    return [v] if isinstance(v, np.ndarray) else []


def _is_version(arr, chain):
    """arr is a version of a chain (not an array that reuses a dead version's id)."""
    entry = chain.get(id(arr))
    return entry is not None and entry[1]() is arr


def _unseen(c, buf, idx, vals, chain):
    """No live value in chain c's buffer shares an element with buf[idx] (every version of a
    chain has buf's layout: a region of one is the same region of the others)."""
    try:
        region_of = {}
        for v in vals:
            for arr in _arrays_in(v):
                root = arr
                while root.base is not None and not _is_version(root, chain):
                    root = root.base
                entry = chain.get(id(root))
                if entry is None or entry[0] != c or entry[1]() is not root:
                    continue
                region = region_of.get(id(root))
                if region is None:
                    region = region_of[id(root)] = root[idx]
                if np.shares_memory(arr, region):
                    return False
        return True
    except Exception:  # (an index at_set takes that a view does not)
        return False


def _set_into(x, idx, v):
    """at_set into x's own buffer (x is dead after it: _probe's in-place writes)."""
    x[idx] = v
    return x


def _constant_ok(v):
    t = type(v)
    if t is bool or t is float:
        return True
    if t is int:
        return -(2**62) < v < 2**62
    return isinstance(v, (np.float64, np.float32, np.bool_))


def _fusable(step, meta):
    """The step's (template, operands) if it can join a kernel: an elementwise function of the
    table on real operands with a real array result, no guard, no keyword; else None.
    operands: ("slot", s) or ("const", value) per argument."""
    fun, args, links, kwargs, slot, _drops, guards, nested = step
    if guards or nested or kwargs:
        return None
    if fun is _WHERE:
        if len(args) != 3:
            return None
        template = None
    else:
        template = _UNARY.get(fun) if len(args) == 1 else _BINARY.get(fun)
        if template is None or len(args) != fun.nin:
            return None
    m = meta[slot]
    if m.type is not np.ndarray or m.dtype not in _FLOATS + (_BOOL,) or not m.shape:
        return None
    if fun in _SIMD_IN_NUMPY and math.prod(m.shape) >= _SIMD_MIN_SIZE:
        return None
    linked = dict(links)
    operands = []
    for pos, a in enumerate(args):
        if pos in linked:
            om = meta[linked[pos]]
            if (
                om.type is np.ndarray
                or isinstance(om.type, type)
                and issubclass(om.type, np.generic)
            ):
                if om.dtype not in _OPERAND_DTYPES:
                    return None
                if om.type is np.ndarray and not _broadcasts(om.shape, m.shape):
                    return None
            elif om.type not in (float, bool):
                return None
            operands.append(("slot", linked[pos]))
        elif isinstance(a, np.ndarray):
            if a.dtype not in _OPERAND_DTYPES or not _broadcasts(a.shape, m.shape):
                return None
            operands.append(("array", a))
        elif _constant_ok(a):
            operands.append(("const", a))
        else:
            return None
    return template, operands


def _broadcasts(shape, to):
    if shape == to:
        return True
    if len(shape) > len(to):
        return False
    return all(s == t or s == 1 for s, t in zip(shape[::-1], to[::-1]))


def _literal(v, dtype):
    """Source text of the constant v as a value of `dtype` (None: Python's own)."""
    if type(v) is bool or isinstance(v, np.bool_):
        text = "True" if v else "False"
    elif type(v) is int:
        text = repr(v)
    else:
        f = float(v)
        text = (
            "np.nan"
            if math.isnan(f)
            else ("np.inf" if f > 0 else "-np.inf")
            if math.isinf(f)
            else repr(f)
        )
        if isinstance(v, np.float32):
            text = f"np.float32({text})"
    if dtype is not None and dtype in _CAST:
        return f"{_CAST[dtype]}({text})"
    return text


def _loop_dtype(fun, result_dtype, operand_values):
    """The dtype NumPy computes the step in (operands are cast to it): the result's for
    arithmetic, the operands' common one for a comparison, bool for a logical function."""
    if fun in _LOGICAL:
        return _BOOL
    if result_dtype != _BOOL or fun is _WHERE:
        return result_dtype
    return np.result_type(*operand_values)


class _Kernel:
    """One fused run of steps: its source, inputs (slots, then constant arrays) and outputs.

    The run becomes a list of scalar statements (expression text with {k} where statement k's
    value goes); repeated stretches of them (a loop of the user's program, forward or
    backward) are rolled back into loops by _roll, so the source stays small."""

    def __init__(self, shape, steps, fused, meta, read_after):
        self.shape = shape
        produced = {step[4] for step in steps}
        self.inputs = []  # slots read, defined before the run
        self.arrays = []  # constant array arguments
        index = {}  # slot -> its statement
        arrays = {}  # (dtype, shape, bytes) -> position in self.arrays
        stmts = []  # (expression, refs, dtype)
        # the loads of the inputs come first (a repeated stretch then has no load in it)
        for _template, operands in fused:
            for kind, v in operands:
                if kind == "slot" and v not in produced and v not in index:
                    om = meta[v]
                    k = len(self.inputs)
                    self.inputs.append(v)
                    text = (
                        self._index(f"a{k}", om.shape, len(om.shape))
                        if om.type is np.ndarray and om.shape
                        else f"a{k}"
                    )
                    index[v] = len(stmts)
                    stmts.append((text, (), om.dtype))

        def operand(kind, v, loop_dt, refs):
            if kind == "const":
                return _literal(v, loop_dt)
            if kind == "array":
                om_dtype = v.dtype
                first = v.flat[0] if v.size else None
                if v.size and v.dtype in _CAST and (v == first).all():
                    text = _literal(first, None)  # a broadcast constant: its element
                else:
                    key = (v.dtype, v.shape, v.tobytes())
                    idx = arrays.get(key)
                    if idx is None:
                        idx = arrays[key] = len(self.arrays)
                        self.arrays.append(v)
                    text = self._index(f"c{idx}", v.shape, v.ndim)
            else:
                text = "{" + str(len(refs)) + "}"
                refs.append(index[v])
                om_dtype = meta[v].dtype
            if loop_dt is not None and om_dtype != loop_dt and loop_dt in _CAST:
                return f"{_CAST[loop_dt]}({text})"
            return text

        for step, (template, operands) in zip(steps, fused):
            fun, slot = step[0], step[4]
            m = meta[slot]
            refs = []
            if fun is _WHERE:
                loop_dt = m.dtype
                c = operand(*operands[0], _BOOL, refs)
                x = operand(*operands[1], loop_dt, refs)
                y = operand(*operands[2], loop_dt, refs)
                expr = f"({x} if {c} else {y})"
            else:
                values = [
                    np.empty((), meta[v].dtype)
                    if kind == "slot" and meta[v].dtype is not None
                    else meta[v].value
                    if kind == "slot"
                    else np.empty((), v.dtype)
                    if kind == "array"
                    else v
                    for kind, v in operands
                ]
                loop_dt = _loop_dtype(fun, m.dtype, values)
                if loop_dt not in _CAST:
                    loop_dt = None
                texts = [operand(kind, v, loop_dt, refs) for kind, v in operands]
                if fun is np.power and operands[1] == ("const", 2):
                    template = "({0} * {0})"  # NumPy's own fast path of x**2
                expr = template.format(*texts)
            if m.dtype != loop_dt:
                expr = f"{_CAST[m.dtype]}({expr})"
            index[slot] = len(stmts)
            stmts.append((expr, tuple(refs), m.dtype))
        self.input_meta = [meta[s] for s in self.inputs]
        self.outputs = [s for s in sorted(produced) if read_after(s)]
        self.out_meta = [meta[s] for s in self.outputs]
        outputs = [
            (self._index(f"o{k}", meta[s].shape, len(meta[s].shape)), index[s])
            for k, s in enumerate(self.outputs)
        ]
        args = (
            [f"a{k}" for k in range(len(self.inputs))]
            + [f"c{k}" for k in range(len(self.arrays))]
            + [f"o{k}" for k in range(len(self.outputs))]
        )
        self.n_statements = len(stmts)
        self.source = _emit(stmts, outputs, shape, args)

    def _index(self, name, shape, ndim):
        """name[i...] for an operand of `shape` broadcast to the kernel's shape."""
        full = len(self.shape)
        idx = []
        for d in range(ndim):
            fd = full - ndim + d
            idx.append("0" if shape[d] == 1 and self.shape[fd] != 1 else f"i{fd}")
        return f"{name}[{', '.join(idx)}]" if idx else name


# repeated stretches are looked for with periods up to this many statements, and rolled when
# they repeat at least _MIN_REPEATS times
_MAX_PERIOD = 64
_MIN_REPEATS = 3


def _roll(stmts):
    """The repeated stretches of stmts: [(start, period, repeats)], in order, disjoint. In a
    stretch, the statement at repeat r and offset q has repeat 0's expression, and each of its
    references points either the same distance back within one period (a value of this repeat
    or of the previous one), or at a fixed statement before the stretch, or moves by a fixed
    stride per repeat (a value saved by an earlier stretch, read forward or backward)."""
    n = len(stmts)
    ids = {}
    # each statement's expression and dtype as a number, and the distances back to its refs
    ekey = [
        ids.setdefault((e, dt), len(ids)) if refs else -1 - i
        for i, (e, refs, dt) in enumerate(stmts)
    ]
    dists = [tuple(i - j for j in refs) for i, (_, refs, _) in enumerate(stmts)]
    out = []
    s = 0
    while s < n:
        best = None
        found = []
        for p in range(1, min(_MAX_PERIOD, (n - s) // _MIN_REPEATS) + 1):
            if ekey[s + p] != ekey[s] or any(p % f == 0 for f in found):
                continue  # (a multiple of a period found covers no more)
            r = _repeats(ekey, dists, s, p, n)
            if r >= _MIN_REPEATS:
                found.append(p)
                if best is None or r * p > best[1] * best[0]:
                    best = (p, r)
        if best is None:
            s += 1
            continue
        out.append((s, best[0], best[1]))
        s += best[0] * best[1]
    return out


def _ref_kind(i, j, s, p):
    """How statement i (in a stretch starting at s, period p) refers to statement j: near
    (this repeat or the previous one; before the first repeat, the value carried in), far."""
    d = i - j
    if d <= (i - s) % p + p:
        return ("near", d)
    return ("far",)


def _repeats(ekey, dists, s, p, n):
    """How many times the statements s..s + p - 1 repeat from s (the first copy included)."""
    strides = {}
    r = 1
    while s + p * (r + 1) <= n:
        base = s + p * r
        for q in range(p):
            i, i0 = base + q, s + q
            if ekey[i] != ekey[i0]:
                return r
            ds, ds0 = dists[i], dists[i0]
            if ds == ds0 and max(ds, default=0) <= q + p:
                continue  # every reference near, at the same distance
            for k, (d, d0) in enumerate(zip(ds, ds0)):
                near, near0 = d <= q + p, d0 <= q + p
                if near or near0:
                    if d != d0 or not (near and near0):
                        return r
                    continue
                step = (i - d) - (i0 - d0)  # far: where the reference moved to
                stride = strides.setdefault((q, k), step if r == 1 else None)
                if stride is None or step != stride * r:
                    return r
        r += 1
    return r


def _emit(stmts, outputs, shape, args):
    """The kernel's source: loops over the elements of `shape`; in them the statements, with the
    stretches _roll finds as loops (values read outside their stretch kept in small arrays)."""
    stretches = _roll(stmts)
    while True:
        try:
            return _emit_rolled(stmts, outputs, shape, args, stretches)
        except _NoRoll as e:  # that stretch, one repeat shorter (or unrolled)
            s, p, n = stretches[e.args[0]]
            if n - 1 >= _MIN_REPEATS:
                stretches[e.args[0]] = (s, p, n - 1)
            else:
                del stretches[e.args[0]]


def _emit_rolled(stmts, outputs, shape, args, stretches):
    where = {}  # statement -> (stretch number, repeat, offset)
    for k, (s, p, n) in enumerate(stretches):
        for i in range(s, s + p * n):
            where[i] = (k, (i - s) // p, (i - s) % p)
    saved = set()  # (stretch, offset) kept in an array

    def outside_ref(j):
        """The text of statement j's value, read from outside its stretch's loop."""
        w = where.get(j)
        if w is None:
            return f"t{j}"
        k, r, q = w
        saved.add((k, q))
        return f"s{k}_{q}[{r}]"

    body, pos, k = [], 0, 0
    order = sorted(stretches)
    for k, (s, p, n) in enumerate(order):
        for i in range(pos, s):
            e, refs, _ = stmts[i]
            body.append((0, f"t{i} = {e.format(*map(outside_ref, refs))}"))
        loop, carried = [], {}
        for q in range(p):
            i = s + q
            e, refs, _ = stmts[i]
            texts = []
            for j in refs:
                kind = _ref_kind(i, j, s, p)
                if kind[0] == "near":
                    q2 = q - kind[1]
                    if q2 >= 0:
                        texts.append(f"u{k}_{q2}")
                    else:  # the previous repeat's value of offset q2 + p
                        q2 += p
                        carried[q2] = j
                        texts.append(f"c{k}_{q2}")
                else:
                    # a fixed statement before the stretch, or a stride through a saved one
                    texts.append(_far_text(j, i, s, p, stmts, where, saved, order))
            loop.append(f"u{k}_{q} = {e.format(*texts)}")
        for q2, j in sorted(carried.items()):
            body.append((0, f"c{k}_{q2} = {outside_ref(j)}"))
        body.append((0, f"for r{k} in range({n}):"))
        body.extend((1, line) for line in loop)
        for q2 in sorted(carried):
            body.append((1, f"c{k}_{q2} = u{k}_{q2}"))
        body.append((1, f"SAVE{k}"))
        pos = s + p * n
    for i in range(pos, len(stmts)):
        e, refs, _ = stmts[i]
        body.append((0, f"t{i} = {e.format(*map(outside_ref, refs))}"))
    for target, j in outputs:
        body.append((0, f"{target} = {outside_ref(j)}"))
    # the arrays of saved values: allocated once per call, outside the loops over elements
    lines = [f"def kernel({', '.join(args)}):"]
    for k, q in sorted(saved):
        s, p, n = order[k]
        lines.append(f" s{k}_{q} = np.empty({n}, {_NP_DTYPE[stmts[s + q][2]]})")
    indent = " "
    # (the bounds are the first output's shape, not numbers: steps of one loop of the user's
    # program on growing arrays, as a memory network's prefix, share one compiled kernel)
    for d in range(len(shape)):
        lines.append(f"{indent}for i{d} in range(o0.shape[{d}]):")
        indent += " "
    for depth, line in body:
        if line.startswith("SAVE"):
            k = int(line[4:])
            for k2, q in sorted(saved):
                if k2 == k:
                    lines.append(f"{indent} s{k}_{q}[r{k}] = u{k}_{q}")
            continue
        lines.append(indent + " " * depth + line)
    return "\n".join(lines)


_NP_DTYPE = {
    np.dtype(np.float64): "np.float64",
    np.dtype(np.float32): "np.float32",
    _BOOL: "np.bool_",
}


def _far_text(j, i, s, p, stmts, where, saved, order):
    """A far reference of statement i (repeat 0 of a stretch at s, period p) to statement j,
    as the loop's text: j itself when every repeat reads it, else the saved array of the
    earlier stretch it moves through, indexed by a multiple of the loop's counter."""
    k = where[i][0]
    # the stride: compare with repeat 1's reference at the same position
    refs0, refs1 = stmts[i][1], stmts[i + p][1]
    pos = [t for t, jj in enumerate(refs0) if jj == j][0]
    stride = refs1[pos] - j
    w = where.get(j)
    if stride == 0:
        if w is None:
            return f"t{j}"
        k2, r2, q2 = w
        saved.add((k2, q2))
        return f"s{k2}_{q2}[{r2}]"
    if w is None or w[0] >= k:
        raise _NoRoll(k)
    k2, r2, q2 = w
    p2 = order[k2][1]
    if stride % p2:
        raise _NoRoll(k)
    step = stride // p2
    n2 = order[k2][2]
    n = order[k][2]
    if not (0 <= r2 + step * (n - 1) < n2):
        raise _NoRoll(k)
    saved.add((k2, q2))
    sign = "+" if step >= 0 else "-"
    return f"s{k2}_{q2}[{r2} {sign} {abs(step)} * r{k}]"


class _NoRoll(Exception):
    """A stretch reads values that move through statements no loop saves."""


def cache_dir():
    """The directory of the kernels' sources and Numba's compiled code of them, kept across
    processes: $GRADCY_JIT_CACHE, else $XDG_CACHE_HOME/gradcy/jit (~/.cache/gradcy/jit); the
    empty string turns the disk cache off."""
    d = os.environ.get("GRADCY_JIT_CACHE")
    if d is None:
        base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
        d = os.path.join(base, "gradcy", "jit")
    return d


def _read(path):
    with open(path) as fh:
        return fh.read()


def _cached_kernel(source, numba):
    """numba.njit of the kernel `source` defines, compiled from a file named by the source's
    hash with Numba's cache=True: a later process loads the compiled code from disk (about
    40 ms) instead of compiling it again (0.1-1 s). Where the directory cannot be written the
    kernel is compiled in memory only."""
    opts = {"error_model": "numpy", "nogil": True}
    d = cache_dir()
    if d:
        name = "gradcy_kernel_" + hashlib.sha256(source.encode()).hexdigest()[:32]
        path = os.path.join(d, name + ".py")
        text = "import numpy as np\n\n\n" + source + "\n"
        try:
            if not os.path.exists(path) or _read(path) != text:
                os.makedirs(d, exist_ok=True)
                tmp = f"{path}.{os.getpid()}.tmp"
                with open(tmp, "w") as fh:
                    fh.write(text)
                os.replace(tmp, path)  # (atomic: another process may write the same file)
            spec = importlib.util.spec_from_file_location(name, path)
            module = sys.modules.get(name)
            if module is None:
                module = importlib.util.module_from_spec(spec)
                spec.loader.exec_module(module)
                sys.modules[name] = module  # (Numba's cache finds the function by module)
            if module.kernel.__code__.co_filename == path:
                return numba.njit(module.kernel, cache=True, **opts)
        except (OSError, ImportError, SyntaxError):
            pass
    ns = {"np": np}
    exec(compile(source, "<gradcy.jit kernel>", "exec"), ns)
    return numba.njit(ns["kernel"], **opts)


def _wrapper(kernel, jitted):
    """The program step that runs a kernel: inputs in, its outputs (one, or a tuple) out."""
    arrays = tuple(kernel.arrays)
    specs = [(m.shape, m.dtype) for m in kernel.out_meta]
    empty = np.empty
    n_in = len(kernel.inputs)
    ns = {"kernel": jitted, "empty": empty, "arrays": arrays}
    params = [f"a{k}" for k in range(n_in)]
    # a 0-d array input is passed as its element (the kernel reads it as a scalar)
    passed = [
        f"a{k}[()]" if m.type is np.ndarray and not m.shape else f"a{k}"
        for k, m in enumerate(kernel.input_meta)
    ]
    outs = []
    lines = []
    for k, (shape, dtype) in enumerate(specs):
        ns[f"s{k}"], ns[f"d{k}"] = shape, dtype
        lines.append(f" o{k} = empty(s{k}, d{k})")
        outs.append(f"o{k}")
    call = passed + [f"arrays[{k}]" for k in range(len(arrays))] + outs
    lines.append(f" kernel({', '.join(call)})")
    lines.append(f" return {outs[0] if len(outs) == 1 else '(' + ', '.join(outs) + ',)'}")
    src = f"def run_kernel({', '.join(params)}):\n" + "\n".join(lines)
    exec(compile(src, "<gradcy.jit kernel call>", "exec"), ns)
    run = ns["run_kernel"]
    run.source = kernel.source
    run.kernel, run.jitted = kernel, jitted
    return run


def compile_program(prog, leaves):
    """prog with its fusable runs as Numba kernels (a new tracers._Program; prog itself if
    nothing fuses). Raises what Numba raises when a kernel does not compile."""
    numba = numba_module()
    meta, in_place = _probe(prog, leaves)
    steps = [
        (_set_into,) + step[1:] if k in in_place else step for k, step in enumerate(prog.steps)
    ]
    steps, n_slots = _outer_product_sums(steps, meta, prog, prog.n_slots)
    fused = [_fusable(step, meta) for step in steps]
    # runs of consecutive fusable steps with one result shape
    runs, k = [], 0
    while k < len(steps):
        if fused[k] is None:
            k += 1
            continue
        shape = meta[steps[k][4]].shape
        j = k
        while (
            j < len(steps)
            and j - k < MAX_KERNEL_STEPS
            and fused[j] is not None
            and meta[steps[j][4]].shape == shape
        ):
            j += 1
        if j - k >= MIN_FUSED_STEPS:
            runs.append((k, j))
        k = j
    # the last step that reads each slot (the output: read after the end)
    last_read = {prog.out: len(steps)}
    for k, step in enumerate(steps):
        for _, s in step[2]:
            last_read[s] = k
        for pos in step[7]:
            for s in _slots_in(step[1][pos]):
                last_read[s] = k
    new_steps, pos = [], 0
    for k, j in runs:
        new_steps.extend(steps[pos:k])
        kern = _Kernel(
            meta[steps[k][4]].shape,
            steps[k:j],
            fused[k:j],
            meta,
            lambda s, j=j: last_read.get(s, -1) >= j,
        )
        jitted = _kernels.get(kern.source)
        if jitted is None:
            jitted = _kernels[kern.source] = _cached_kernel(kern.source, numba)
            while len(_kernels) > _MAX_KERNELS:
                del _kernels[next(iter(_kernels))]
        call = _wrapper(kern, jitted)
        links = tuple((p, s) for p, s in enumerate(kern.inputs))
        if len(kern.outputs) == 1:
            new_steps.append((call, (None,) * len(links), links, None, kern.outputs[0], (), (), ()))
        elif kern.outputs:
            packed = n_slots
            n_slots += 1
            new_steps.append((call, (None,) * len(links), links, None, packed, (), (), ()))
            for q, s in enumerate(kern.outputs):
                new_steps.append((operator.getitem, (None, q), ((0, packed),), None, s, (), (), ()))
        pos = j
    new_steps.extend(steps[pos:])
    planned = _accumulations(_transposes(new_steps, meta), meta, prog)
    planned = _reuse_buffers(_writes_in_place(planned, meta, prog), meta, prog)
    planned, n_slots = _values_in_buffers(planned, meta, prog, n_slots)
    planned, n_slots = _views_at_reads(planned, meta, prog, n_slots)
    fallback = prog.rebuilt(planned, n_slots)
    native = _native_program(planned, meta, prog, n_slots)
    if native is None:
        return fallback
    fast = prog.rebuilt(*native)
    try:
        with np.errstate(all="ignore"), warnings.catch_warnings():
            # (np.dot on a strided view: Numba's note that a contiguous one would be faster)
            warnings.simplefilter("ignore", numba.NumbaPerformanceWarning)
            fast.replay(leaves)  # (Numba compiles each segment at its first call)
    except Exception:
        return fallback
    return fast


def _outer_axes(spec, out):
    """The axes to insert into an operand of einsum subscripts `spec` so that it broadcasts
    to the output `out` with its letters in place, or None (a letter out of out's order)."""
    pos = [out.find(c) for c in spec]
    if -1 in pos or pos != sorted(pos) or len(set(spec)) != len(spec):
        return None
    return tuple(a for a in range(len(out)) if a not in pos)


def _outer_product_sums(steps, meta, prog, n_slots):
    """add(einsum(A), einsum(B)) of two einsums that sum over nothing (each output element one
    product: 'bs,bd->bsd', the cotangents of a product's operand), each read by the add only,
    as multiply(a[..., None, ...], b[..., None, ...]) computed at the add: the three steps then
    fuse into one kernel, with one result of the output's size instead of three (a memory
    network's backward pass, at each step, the gradient of the prefix it attended over).
    The values are the einsums' (one rounding per product), up to the sign of a zero."""
    from .numpy import einsum

    fun_einsum = getattr(einsum, "fun", None)
    if fun_einsum is None:
        return steps, n_slots
    readers = {}
    for k, step in enumerate(steps):
        for _, s in step[2]:
            readers.setdefault(s, []).append(k)
        for pos in step[7]:
            for s in _slots_in(step[1][pos]):
                readers.setdefault(s, []).extend((k, -1))
    producer = {step[4]: k for k, step in enumerate(steps)}
    mutated = {s for step in steps if step[0] is _set_into for p, s in step[2] if p == 0}
    # writes made so far, by step: the einsums' operands (views of a buffer, maybe) must see no
    # write between the einsum and the add, where their products are now computed
    writes = [0]
    for step in steps:
        writes.append(writes[-1] + (step[0] is _set_into))

    def outer(k, out_meta):
        """The (operand slots, axes to insert) of einsum step k, or None."""
        fun, args, links, kwargs, slot, _d, guards, nested = steps[k]
        if (
            fun is not fun_einsum
            or guards
            or nested
            or kwargs not in (None, {"optimize": False})
            or len(args) != 3
            or type(args[0]) is not str
            or dict(links).keys() != {1, 2}
            or readers.get(slot) is None
            or len(readers[slot]) != 1
        ):
            return None
        spec = args[0].replace(" ", "")
        if spec.count("->") != 1 or "." in spec:
            return None
        ins, out = spec.split("->")
        ins = ins.split(",")
        if len(ins) != 2 or set(out) != set(ins[0]) | set(ins[1]) or len(set(out)) != len(out):
            return None
        linked = dict(links)
        result = []
        for q, sub in enumerate(ins):
            axes = _outer_axes(sub, out)
            m = meta[linked[q + 1]]
            if (
                axes is None
                or m.type is not np.ndarray
                or m.dtype != out_meta.dtype
                or len(m.shape) != len(sub)
                or linked[q + 1] in mutated
            ):
                return None
            result.append((linked[q + 1], axes))
        mk = meta[slot]
        if mk.type is not np.ndarray or mk.shape != out_meta.shape or mk.dtype != out_meta.dtype:
            return None
        return result

    gone, at = set(), {}
    for k, step in enumerate(steps):
        fun, args, links, kwargs, slot, _d, guards, nested = step
        if fun is not np.add or kwargs or guards or nested or len(links) != 2:
            continue
        m = meta[slot]
        if m.type is not np.ndarray or m.dtype not in _FLOATS:
            continue
        parts = []
        for _, s in sorted(links):
            j = producer.get(s)
            o = (
                outer(j, m)
                if j is not None and j not in gone and writes[k] == writes[j + 1]
                else None
            )
            if o is None:
                break
            parts.append(o)
        if len(parts) != 2 or links[0][1] == links[1][1]:
            continue
        new = []
        products = []
        for o in parts:
            views = []
            for s, axes in o:
                v = n_slots
                n_slots += 1
                shape = list(meta[s].shape)
                for a in axes:
                    shape.insert(a, 1)
                meta.append(_Meta(np.empty(tuple(shape), meta[s].dtype)))
                # (a[:, :, None]: the view expand_dims makes, without its Python call)
                idx = tuple(None if a in axes else slice(None) for a in range(len(shape)))
                new.append((operator.getitem, (None, idx), ((0, s),), None, v, (), (), ()))
                views.append(v)
            p = n_slots
            n_slots += 1
            meta.append(_Meta(np.empty(m.shape, m.dtype)))
            products.append(
                (np.multiply, (None, None), ((0, views[0]), (1, views[1])), None, p, (), (), ())
            )
        new.extend(products)
        new.append(
            (
                np.add,
                (None, None),
                ((0, products[0][4]), (1, products[1][4])),
                None,
                slot,
                (),
                step[6],
                (),
            )
        )
        for _, s in links:
            gone.add(producer[s])
        at[k] = new
    if not at:
        return steps, n_slots
    out = []
    for k, step in enumerate(steps):
        if k in gone:
            continue
        out.extend(at.get(k, (step,)))
    return out, n_slots


def _T(a):
    return a.T


def _transposes(steps, meta):
    """numpy.matrix_transpose of a 2-d array as its .T (the same view, without the ~1.5 us of
    NumPy's Python-level dispatch)."""
    out = []
    for step in steps:
        if (
            step[0] is _matrix_transpose
            and len(step[1]) == 1
            and step[2]
            and not step[3]
            and meta[step[2][0][1]].type is np.ndarray
            and len(meta[step[2][0][1]].shape) == 2
        ):
            step = (_T,) + step[1:]
        out.append(step)
    return out


_matrix_transpose = getattr(np, "matrix_transpose", None)
_INTO = {}


def _into(ufunc, pos):
    """ufunc(a, b) computed into its operand at pos (a buffer nothing else holds)."""
    f = _INTO.get((ufunc, pos))
    if f is None:
        if pos == 0:

            def f(a, b):
                return ufunc(a, b, out=a)
        else:

            def f(a, b):
                return ufunc(a, b, out=b)

        f.__name__ = f"{ufunc.__name__}_into_{pos}"
        f.ufunc, f.pos = ufunc, pos
        _INTO[(ufunc, pos)] = f
    return f


_REUSABLE = (np.add, np.subtract, np.multiply, np.true_divide)


def _add_at(a, g, idx):
    """a + untake(g, idx): g added into a's own buffer at idx (a is dead after it)."""
    a[idx] += g
    return a


def _copy_add_at(c, g, idx):
    """c + untake(g, idx) for a constant array c: a copy of c with g added at idx."""
    a = c.copy()
    a[idx] += g
    return a


def _take_copy(a, idx):
    """a[idx] as a new array (read before a's buffer is written)."""
    return a[idx].copy()


def _fresh_slots(steps, meta):
    """(slots holding an array a step of the program made (a ufunc's, a kernel's, at_set's
    copy), whether each slot is read by ufuncs and kernels only, the last step reading it)."""
    from .numpy.indexed_updates import _at_set  # (a copy with the write made)

    fresh, readers_ok, last = set(), {}, {}
    for k, (fun, args, links, kwargs, slot, _d, _g, nested) in enumerate(steps):
        elementwise = isinstance(fun, np.ufunc) or getattr(fun, "source", None) is not None
        for _, s in links:
            last[s] = k
            readers_ok[s] = readers_ok.get(s, True) and elementwise and not nested
        for pos in nested:
            for s in _slots_in(args[pos]):
                last[s] = k
                readers_ok[s] = False
        if not kwargs and (
            isinstance(fun, np.ufunc)
            and fun.nout == 1
            or fun is _at_set
            or fun is _copy_add_at
            or fun is _add_at
            and args[0] is None
            and any(p == 0 and s in fresh for p, s in links)
            or getattr(fun, "source", None) is not None
        ):
            m = meta[slot] if slot < len(meta) else None
            if m is not None and m.type is np.ndarray:
                fresh.add(slot)
    return fresh, readers_ok, last


def _accumulations(steps, meta, prog):
    """add(a, untake(g, idx, shape, dtype)), the gradient of a read x[idx] accumulated into a
    cotangent, as a[idx] += g where a is a dead fresh array of the result's shape and dtype
    and idx repeats no position: no zero array of the whole shape per read (a memory
    network's backward pass reads a prefix of its buffer at each step)."""
    from .numpy import indexing

    untake = getattr(indexing.untake, "fun", None)
    if untake is None:
        return steps
    fresh, readers_ok, last = _fresh_slots(steps, meta)
    readers = {}
    for k, step in enumerate(steps):
        for _, s in step[2]:
            readers.setdefault(s, []).append(k)
    drop, replace = set(), {}
    for k, (fun, args, links, kwargs, u, _d, _g, nested) in enumerate(steps):
        if (
            fun is not untake
            or kwargs
            or nested
            or len(args) != 4
            or len(links) != 1
            or links[0][0] != 0
            or u == prog.out
            or u >= len(meta)
        ):
            continue
        g_slot, idx = links[0][1], args[1]
        mu, mg = meta[u], meta[g_slot]
        if (
            mu.type is not np.ndarray
            or mu.dtype not in _FLOATS
            or mg.dtype != mu.dtype
            or not indexing._no_repeats(idx)
            or len(readers.get(u, ())) != 1
        ):
            continue
        k2 = readers[u][0]
        f2, args2, links2, kw2, out2 = steps[k2][:5]
        if (
            f2 is not np.add
            or kw2
            or len(args2) != 2
            or len(links2) not in (1, 2)
            or steps[k2][7]
            or out2 >= len(meta)
            or k2 in replace
        ):
            continue
        if len(links2) == 1 and links2[0][1] == u:
            # constant + untake(g, idx): a copy of the constant with g added at idx (no zero
            # array of the whole shape)
            c = args2[1 - links2[0][0]]
            mo = meta[out2]
            if (
                type(c) is np.ndarray
                and mo.type is np.ndarray
                and c.shape == mu.shape == mo.shape
                and c.dtype == mu.dtype == mo.dtype
            ):
                drop.add(k)
                replace[k2] = (
                    _copy_add_at,
                    (c, None, idx),
                    ((1, g_slot),),
                    None,
                    out2,
                    (),
                    steps[k2][6],
                    (),
                )
            continue
        (p0, s0), (p1, s1) = sorted(links2)
        a = s1 if s0 == u else s0 if s1 == u else None
        if a is None or a == u:
            continue
        ma, mo = meta[a], meta[out2]
        if (
            a in fresh
            and a != prog.out
            and last.get(a) == k2
            and readers_ok.get(a)
            and ma.type is np.ndarray
            and ma.shape == mu.shape == mo.shape
            and ma.dtype == mu.dtype == mo.dtype
            and not any(steps[j][0] is _set_into for j in range(k, k2))
        ):
            drop.add(k)
            replace[k2] = (
                _add_at,
                (None, None, idx),
                ((0, a), (1, g_slot)),
                None,
                out2,
                (),
                steps[k2][6],
                (),
            )
    if not replace:
        return steps
    return [replace.get(k, step) for k, step in enumerate(steps) if k not in drop]


def _writes_in_place(steps, meta, prog):
    """at_set(b, idx, v) (a copy of b with the write made) as the write into b's own buffer
    where b is a fresh array read before only by ufuncs and kernels (no view of it exists)
    and after only as b[idx2] for basic indexes idx2: those reads move before the write, as
    copies of the (small) regions they read. A memory network's backward pass zeroes the
    cotangent of each written slot after reading it: one buffer, not a copy per write."""
    from .numpy import _wrap
    from .numpy.indexed_updates import _at_set

    getitems = (operator.getitem, getattr(_wrap.getitem, "fun", None))
    fresh, _readers_ok, _last = _fresh_slots(steps, meta)
    readers = {}
    for k, step in enumerate(steps):
        for _, s in step[2]:
            readers.setdefault(s, []).append(k)
        for pos in step[7]:
            for s in _slots_in(step[1][pos]):
                readers.setdefault(s, []).extend((k, -1))  # (-1: never movable)
    moves = {}
    for k, (fun, args, links, kwargs, _slot, _d, _g, nested) in enumerate(steps):
        if fun is not _at_set or kwargs or nested or len(args) != 3:
            continue
        linked = dict(links)
        b = linked.get(0)
        if (
            b is None
            or 1 in linked
            or not _basic(args[1])
            or b not in fresh
            or b == prog.out
            or b >= len(meta)
            or meta[b].type is not np.ndarray
            or sum(1 for _, s in links if s == b) != 1
        ):
            continue
        later, ok = [], True
        for j in readers.get(b, ()):
            if j == k:
                continue
            if j < k and j >= 0:
                f = steps[j][0]
                elementwise = isinstance(f, np.ufunc) or getattr(f, "source", None) is not None
                ok = ok and elementwise and not steps[j][7]
                continue
            if j < 0 or j in later:
                ok = False
                break
            f2, a2, l2, kw2, s2, _d2, g2, n2 = steps[j]
            if (
                f2 in getitems
                and not kw2
                and not n2
                and not g2
                and len(a2) == 2
                and l2 == ((0, b),)
                and _basic(a2[1])
                and s2 < len(meta)
                and meta[s2].type is np.ndarray
            ):
                later.append(j)
            else:
                ok = False
        if ok:
            moves[k] = later
    if not moves:
        return steps
    moved = {j for js in moves.values() for j in js}
    out = []
    for k, step in enumerate(steps):
        if k in moved:
            continue
        if k in moves:
            for j in moves[k]:
                out.append((_take_copy,) + steps[j][1:])
            step = (_set_into,) + step[1:]
        out.append(step)
    return out


def _reuse_buffers(steps, meta, prog):
    """The buffer plan: a binary NumPy call whose operand is a fresh array (made by a ufunc,
    matmul or a kernel of the program) of the result's shape and dtype, read by ufuncs and
    kernels only and for the last time here, writes its result into that operand's buffer
    (out=) instead of a new one: gradient accumulations (dW = dW + h.T @ g) become the
    in-place updates a hand-written gradient makes."""
    fresh, readers_ok, last = _fresh_slots(steps, meta)
    out = []
    for k, step in enumerate(steps):
        fun, args, links, kwargs, slot = step[:5]
        if fun in _REUSABLE and not kwargs and len(args) == 2 and slot < len(meta):
            m = meta[slot]
            for pos, s in links:
                om = meta[s]
                if (
                    s in fresh
                    and s != prog.out
                    and last.get(s) == k
                    and readers_ok.get(s)
                    and om.type is np.ndarray
                    and om.shape == m.shape
                    and om.dtype == m.dtype
                    and m.type is np.ndarray
                    and sum(1 for _, s2 in links if s2 == s) == 1
                ):
                    step = (_into(fun, pos),) + step[1:]
                    break
        out.append(step)
    return out


def _mutated(step):
    """The position of the argument whose buffer the planned step writes into, or None."""
    fun = step[0]
    if fun is _set_into or fun is _add_at:
        return 0
    return getattr(fun, "pos", None) if getattr(fun, "ufunc", None) is not None else None


def _values_in_buffers(steps, meta, prog, n_slots):
    """A value written into a buffer in place (_set_into(buf, idx, v), v of buf[idx]'s shape
    and dtype, so the region holds v's exact bits) and read again later is read from the
    buffer, as a view buf[idx] taken right after the write: v itself dies at the write. A
    memory network's backward pass reads each step's output (tanh's, for its derivative) from
    the memory, as a hand-written gradient does, instead of keeping a copy of it per step.
    Only where no later write into the buffer touches the region before v's last read, and
    the buffer is read (or viewed) at least that late anyway (the view never keeps a buffer
    alive longer than the program did). Returns (steps, n_slots)."""
    # the slots that share a buffer: a write's result is its target; a view shares its base's
    parent = {}

    def find(s):
        while parent.get(s, s) != s:
            s = parent[s]
        return s

    from .numpy import _wrap

    getitems = (operator.getitem, getattr(_wrap.getitem, "fun", None))
    for step in steps:
        pos = _mutated(step)
        if pos is not None:
            for p, s in step[2]:
                if p == pos:
                    parent[find(step[4])] = find(s)
        elif step[0] in getitems and _basic(step[1][1]) and step[2] and step[2][0][0] == 0:
            parent[find(step[4])] = find(step[2][0][1])
    readers, last = {}, {}
    for k, step in enumerate(steps):
        for _, s in step[2]:
            readers.setdefault(s, []).append(k)
            last[s] = k
        for pos in step[7]:
            for s in _slots_in(step[1][pos]):
                readers.setdefault(s, []).append(-1)  # (read inside a container: left)
                last[s] = k
    buffer_last = {}
    for s, k in last.items():
        r = find(s)
        buffer_last[r] = max(buffer_last.get(r, -1), k)
    redirect, inserts = {}, {}
    by_class = _mutations_by_buffer(steps, find)
    for k, step in enumerate(steps):
        fun, args, links, kwargs, slot = step[:5]
        if fun is not _set_into or kwargs or step[7] or len(args) != 3:
            continue
        linked = dict(links)
        v, b = linked.get(2), linked.get(0)
        idx = args[1]
        if v is None or b is None or 1 in linked or v == prog.out or not _basic(idx):
            continue
        later = [j for j in readers.get(v, ()) if j != k]
        if not later or any(j < 0 for j in later) or min(later) < k:
            continue
        if any(dict(steps[j][2]).get(_mutated(steps[j])) == v for j in later):
            continue  # (a step writes into v's buffer: the buffer's region must not be)
        mv, mb = meta[v], meta[b]
        if mv.type is not np.ndarray or mb.type is not np.ndarray or mv.dtype != mb.dtype:
            continue
        try:
            probe = np.lib.stride_tricks.as_strided(
                np.zeros(1, np.uint8), mb.shape, (0,) * len(mb.shape)
            )
            if probe[idx].shape != mv.shape:
                continue
        except (IndexError, TypeError, ValueError):
            continue
        end, root = max(later), find(b)
        if buffer_last.get(root, -1) < end:
            continue
        ok = True
        for _j, later_step in _between(by_class.get(root, ()), k, end):
            if later_step[0] is not _set_into or not _disjoint(mb.shape, idx, later_step[1][1]):
                ok = False
                break
        if not ok:
            continue
        view = n_slots
        n_slots += 1
        meta.append(_Meta(np.empty(mv.shape, mv.dtype)))
        inserts[k] = (operator.getitem, (None, idx), ((0, slot),), None, view, (), (), ())
        for j in later:
            redirect.setdefault(j, {})[v] = view
    if not inserts:
        return steps, n_slots
    out = []
    for k, step in enumerate(steps):
        r = redirect.get(k)
        if r:
            step = step[:2] + (tuple((p, r.get(s, s)) for p, s in step[2]),) + step[3:]
        out.append(step)
        if k in inserts:
            out.append(inserts[k])
    return out, n_slots


# a view read again this many steps or more after its previous read is taken again there
_VIEW_GAP = 8


def _views_at_reads(steps, meta, prog, n_slots):
    """A basic view of a buffer (x[:, :i], x[:, -1], a chain of them) read again much later
    (the backward pass's read of a memory network's prefixes) is taken again at that read,
    from the array it views, instead of being kept alive in between: the array is alive
    anyway (the view holds it), so a program that keeps a view per step keeps one array
    instead. Only where the region it views is not written in between (the array a write
    chain's version, or an input, which nothing writes) and no step writes into the view.
    Returns (steps, n_slots)."""
    from .numpy import _wrap
    from .numpy.indexed_updates import _at_set

    getitems = (operator.getitem, getattr(_wrap.getitem, "fun", None))
    producer, path = {}, {}
    parent = {}

    def find(s):
        while parent.get(s, s) != s:
            s = parent[s]
        return s

    for k, step in enumerate(steps):
        fun, args, links, kwargs, slot, _d, guards, nested = step
        producer[slot] = k
        pos = _mutated(step)
        if pos is not None:
            for p, t in links:
                if p == pos:
                    parent[find(slot)] = find(t)
        if (
            fun in getitems
            and not kwargs
            and not guards
            and not nested
            and len(args) == 2
            and links == ((0, links[0][1]),)
            and _basic(args[1])
        ):
            base = links[0][1]
            parent[find(slot)] = find(base)
            if base in path:
                r, idxs, slots = path[base]
                path[slot] = (r, idxs + (args[1],), slots + (slot,))
            elif base < prog.n_inputs or steps[producer[base]][0] in (_set_into, _at_set):
                path[slot] = (base, (args[1],), (slot,))
    readers = {}
    for k, step in enumerate(steps):
        for _, t in step[2]:
            readers.setdefault(t, []).append(k)
        for pos in step[7]:
            for t in _slots_in(step[1][pos]):
                readers.setdefault(t, []).extend((k, -1))
    by_class = _mutations_by_buffer(steps, find)
    retake, redirect, drop = {}, {}, set()
    for v, (root, idxs, slots) in path.items():
        k = producer[v]
        rs = sorted(set(readers.get(v, ())))
        if not rs or rs[0] < 0 or v == prog.out or steps[k][6]:
            continue
        if any(dict(steps[j][2]).get(_mutated(steps[j])) == v for j in rs):
            continue
        groups, prev = [], k
        for j in rs:
            if j - prev >= _VIEW_GAP or not groups:
                groups.append([j])
            else:
                groups[-1].append(j)
            prev = j
        keep_first = groups[0][0] - k < _VIEW_GAP
        far = groups[1:] if keep_first else groups
        if not far:
            continue
        end = far[-1][-1]
        mr = meta[root]
        if mr.type is not np.ndarray:
            continue
        try:
            z = np.empty(mr.shape, np.uint8)
            region = z
            for idx in idxs:
                region = region[idx]
        except (IndexError, TypeError, ValueError):
            continue
        rc, ok = find(root), True
        for _j, step in _between(by_class.get(rc, ()), k, end):
            if step[0] is not _set_into or not _basic(step[1][1]):
                ok = False
                break
            try:
                if np.shares_memory(region, z[step[1][1]]):
                    ok = False
                    break
            except (IndexError, TypeError, ValueError):
                ok = False
                break
        if not ok:
            continue
        for group in far:
            src, chain = root, []
            for idx, orig in zip(idxs, slots):
                new = n_slots
                n_slots += 1
                meta.append(meta[orig])
                chain.append((operator.getitem, (None, idx), ((0, src),), None, new, (), (), ()))
                src = new
            retake.setdefault(group[0], []).append(chain)
            for j in group:
                redirect.setdefault(j, {})[v] = src
        if not keep_first:
            drop.add(k)
    if not retake:
        return steps, n_slots
    out = []
    for k, step in enumerate(steps):
        if k in drop:
            continue
        for chain in retake.get(k, ()):
            out.extend(chain)
        r = redirect.get(k)
        if r:
            step = step[:2] + (tuple((p, r.get(t, t)) for p, t in step[2]),) + step[3:]
        out.append(step)
    return out, n_slots


def _mutations_by_buffer(steps, find):
    """{buffer class root: ([step indexes], [steps])} of the steps that write into a buffer
    (a slot of the class: find(slot) is its root), in program order."""
    out = {}
    for k, step in enumerate(steps):
        pos = _mutated(step)
        if pos is None:
            continue
        t = dict(step[2]).get(pos)
        if t is None:
            continue
        ks, ss = out.setdefault(find(t), ([], []))
        ks.append(k)
        ss.append(step)
    return out


def _between(entry, k, end):
    """The (index, step) pairs of a _mutations_by_buffer entry with k < index <= end."""
    if not entry:
        return ()
    ks, ss = entry
    lo, hi = bisect.bisect_right(ks, k), bisect.bisect_right(ks, end)
    return zip(ks[lo:hi], ss[lo:hi])


def _disjoint(shape, idx, idx2):
    """The basic indexes idx and idx2 of an array of `shape` select no common element."""
    if not _basic(idx2):
        return False
    try:
        z = np.empty(shape, np.uint8)
        return not np.shares_memory(z[idx], z[idx2])
    except (IndexError, TypeError, ValueError):
        return False


# =============================================================================
# Native segments: runs of planned steps as one Numba function each
# =============================================================================
# After fusion and the buffer plan, each maximal run of steps Numba can run in nopython mode
# (the kernels, products of 2-d arrays, NumPy's SIMD unary loops, in-place updates, basic
# indexing, writes, axis sums) becomes one Numba function: the program's per-step Python
# dispatch (about 1 us a step, a third of a small RNN's time) is gone, and the products call
# BLAS from native code. A step Numba cannot run stays the NumPy call it was, between segments.

# runs are cut into functions of about this many steps (Numba's typing and LLVM's time grow
# faster than a function's size: 400 steps take 16 s)
SEGMENT_STEPS = 20
# a run shorter than this stays NumPy calls (a segment's call costs about what a step does)
MIN_SEGMENT_STEPS = 3
# a segment is compiled where a loop runs its code this many times (a one-off run saves a few
# microseconds a call for 0.3-3 s of compile), and at most MAX_SEGMENTS of them per program
MIN_SEGMENT_CALLS = 4
MAX_SEGMENTS = 4
# the share of the program's steps the segments must run, else none is made
MIN_SEGMENT_SHARE = 0.8

_ARRAY_DTYPES = (np.dtype(np.float64), np.dtype(np.float32))
_NATIVE_ITEMS = _ARRAY_DTYPES + (_BOOL, np.dtype(np.int64))


def _is_array(m, dtypes=_NATIVE_ITEMS):
    """m is the _Meta of an array Numba types as it is (ndim >= 1, a plain dtype)."""
    return m is not None and m.type is np.ndarray and bool(m.shape) and m.dtype in dtypes


def _is_scalar(m):
    return m is not None and m.type in (float, int, bool)


_UFUNC_LOOPS = {}


def _ufunc_loop(ufunc, dtype):
    """A Numba function f(x) -> ufunc(x) for a C-contiguous array x of `dtype` that calls the
    ufunc's own inner loop (NumPy's SIMD tanh, exp... with NumPy's bits) through its function
    pointer; None where the ufunc's table cannot be read and checked (the loop is then Numba's,
    the C library's function per element)."""
    key = (ufunc, dtype)
    if key in _UFUNC_LOOPS:
        return _UFUNC_LOOPS[key]
    _UFUNC_LOOPS[key] = f = _make_ufunc_loop(ufunc, dtype)
    return f


def _make_ufunc_loop(ufunc, dtype):
    import ctypes

    numba = numba_module()

    class _UFuncHead(ctypes.Structure):  # numpy/ufuncobject.h, PyUFuncObject's first fields
        _fields_ = [
            ("ob_refcnt", ctypes.c_ssize_t),
            ("ob_type", ctypes.c_void_p),
            ("nin", ctypes.c_int),
            ("nout", ctypes.c_int),
            ("nargs", ctypes.c_int),
            ("identity", ctypes.c_int),
            ("functions", ctypes.POINTER(ctypes.c_void_p)),
            ("data", ctypes.POINTER(ctypes.c_void_p)),
            ("ntypes", ctypes.c_int),
            ("reserved1", ctypes.c_int),
            ("name", ctypes.c_char_p),
            ("types", ctypes.POINTER(ctypes.c_char)),
        ]

    sig = f"{dtype.char}->{dtype.char}"
    if type(ufunc) is not np.ufunc or ufunc.nin != 1 or ufunc.nout != 1 or sig not in ufunc.types:
        return None
    try:
        head = _UFuncHead.from_address(id(ufunc))
        if (
            type(ufunc).__basicsize__ < ctypes.sizeof(_UFuncHead)
            or head.ob_type != id(np.ufunc)
            or (head.nin, head.nout, head.nargs) != (1, 1, 2)
            or head.ntypes != ufunc.ntypes
            or head.name != ufunc.__name__.encode()
            or head.types[: 2 * head.ntypes]
            != bytes(np.dtype(c).num for t in ufunc.types for c in t.split("->"))
        ):
            return None
        i = ufunc.types.index(sig)
        fn, data = head.functions[i], head.data[i]
    except Exception:
        return None
    if not fn or data:
        return None
    proto = ctypes.CFUNCTYPE(
        None, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p
    )
    loop = proto(fn)
    item = dtype.itemsize

    def call(x):
        x = np.ascontiguousarray(x)
        out = np.empty_like(x)
        b = np.empty(5, np.intp)  # args (2), dimensions (1), steps (2)
        b[0] = x.ctypes.data
        b[1] = out.ctypes.data
        b[2] = x.size
        b[3] = item
        b[4] = item
        loop(b.ctypes.data, b[2:].ctypes.data, b[3:].ctypes.data, 0)
        return out

    f = numba.njit(call, nogil=True)
    x = np.linspace(-3.0, 3.0, 37).astype(dtype)
    try:
        ok = np.array_equal(f(x), ufunc(x))
    except Exception:
        ok = False
    return f if ok else None


def _index_text(idx):
    """Source text of a constant basic index of ints and slices, or None."""
    if type(idx) is tuple:
        parts = [_index_text(e) for e in idx]
        if None in parts or not parts:
            return None
        return ", ".join(parts) + ("," if len(parts) == 1 else "")
    if isinstance(idx, (int, np.integer)) and not isinstance(idx, (bool, np.bool_)):
        return f"${int(idx)}$"  # (a parameter of the segment: steps of a loop share its code)
    if type(idx) is slice:
        for v in (idx.start, idx.stop, idx.step):
            if v is not None and not (isinstance(v, (int, np.integer)) and not isinstance(v, bool)):
                return None
        if idx.step is not None and int(idx.step) == 0:
            return None

        def t(v):
            return "" if v is None else f"${int(v)}$"

        return f"{t(idx.start)}:{t(idx.stop)}" + ("" if idx.step is None else f":{t(idx.step)}")
    return None


class _Native:
    """The statements of one segment: translate(step) gives a step's lines or None."""

    def __init__(self, meta, n_meta):
        from .numpy import _wrap

        self.getitems = (operator.getitem, getattr(_wrap.getitem, "fun", None))
        self.sums = (np.sum, getattr(getattr(_wrap, "sum", None), "fun", None))
        self.meta = meta
        self.n_meta = n_meta
        self.globals = {"np": np}
        self.consts = []  # constant arrays, passed as arguments
        self.const_names = {}
        self.packed_outputs = set()  # outputs of the kernels of several outputs
        self.kernel_sources = {}  # global name -> the kernel's source

    def _g(self, obj, prefix):
        for name, v in self.globals.items():
            if v is obj and name.startswith(prefix):
                return name
        name = f"{prefix}{len(self.globals)}"
        self.globals[name] = obj
        return name

    def _const(self, a):
        name = self.const_names.get(id(a))
        if name is None:
            name = self.const_names[id(a)] = f"k{len(self.consts)}"
            self.consts.append(a)
        return name

    def _m(self, s):
        return self.meta[s] if s < self.n_meta else None

    def _operands(self, step, kinds):
        """The operands' texts, or None: kinds[pos] is 'array', 'any' (array or scalar)."""
        fun, args, links, kwargs, slot = step[:5]
        linked = dict(links)
        out = []
        for pos, a in enumerate(args):
            kind = kinds[pos] if pos < len(kinds) else kinds[-1]
            if pos in linked:
                m = self._m(linked[pos])
                if not (_is_array(m) or kind == "any" and _is_scalar(m)):
                    return None
                out.append(f"r{linked[pos]}")
            elif type(a) is np.ndarray:
                if a.dtype not in _NATIVE_ITEMS or not a.shape:
                    return None
                out.append(self._const(a))
            elif kind == "any" and type(a) in (float, int) and _constant_ok(a):
                out.append(repr(a) if math.isfinite(a) else None)
                if out[-1] is None:
                    return None
            else:
                return None
        return out

    def translate(self, step):
        fun, args, links, kwargs, slot, _drops, guards, nested = step
        if guards or nested:
            return None
        kern = getattr(fun, "kernel", None)
        if kern is not None:
            return self._kernel(step, kern)
        if fun in self.getitems and slot in self.packed_outputs:
            return []  # (a kernel's output, named by the kernel's lines)
        m = self._m(slot)
        if not _is_array(m):
            return None
        if fun in _MATMUL and not kwargs and len(args) == 2:
            ops = self._operands(step, ["array"])
            ms = [self._operand_meta(step, p) for p in range(2)]
            if (
                ops is None
                or m.dtype not in _ARRAY_DTYPES
                or not all(len(x.shape) == 2 and x.dtype == m.dtype for x in ms)
            ):
                return None
            return [f"r{slot} = np.dot({ops[0]}, {ops[1]})"]
        if fun is _T and len(args) == 1:
            ops = self._operands(step, ["array"])
            return None if ops is None else [f"r{slot} = {ops[0]}.T"]
        if (
            (fun in self.getitems or fun is _take_copy)
            and not kwargs
            and len(args) == 2
            and len(links) == 1
        ):
            text = _index_text(args[1])
            ops = self._operands((fun, args[:1], links) + step[3:], ["array"])
            if text is None or ops is None or links[0][0] != 0:
                return None
            copy = ".copy()" if fun is _take_copy else ""
            return [f"r{slot} = {ops[0]}[{text}]{copy}"]
        if fun in self.sums and kwargs and set(kwargs) == {"axis"} and len(args) == 1:
            axis = kwargs["axis"]
            if type(axis) is tuple and len(axis) == 1:
                axis = axis[0]
            ops = self._operands(step, ["array"])
            im = self._operand_meta(step, 0)
            if (
                ops is None
                or type(axis) is not int
                or m.dtype not in _ARRAY_DTYPES
                or im.dtype != m.dtype
                or not -len(im.shape) <= axis < len(im.shape)
            ):
                return None
            return [f"r{slot} = np.sum({ops[0]}, axis={axis % len(im.shape)})"]
        if fun in (_set_into, _add_at) and not kwargs and len(args) == 3:
            # buf[idx] = v / buf[idx] += g: args (buf, idx, v) / (buf, g, idx)
            ipos, vpos = (1, 2) if fun is _set_into else (2, 1)
            text = _index_text(args[ipos])
            if text is None or any(p == ipos for p, _ in links):
                return None
            sub = tuple((0 if p == 0 else 1, s) for p, s in links)
            ops = self._operands((fun, (args[0], args[vpos]), sub) + step[3:], ["array", "any"])
            vm = self._operand_meta(step, vpos)
            if ops is None or 0 not in dict(links):
                return None
            if vm is not None and vm.dtype != m.dtype:
                return None
            op = "=" if fun is _set_into else "+="
            return [f"{ops[0]}[{text}] {op} {ops[1]}", f"r{slot} = {ops[0]}"]
        base = getattr(fun, "ufunc", None)
        ufunc = base if base is not None else fun
        if type(ufunc) is np.ufunc and not kwargs and ufunc.nout == 1 and len(args) == ufunc.nin:
            if ufunc not in _UNARY and ufunc not in _BINARY or m.dtype not in _ARRAY_DTYPES:
                return None
            ops = self._operands(step, ["any"])
            if ops is None:
                return None
            for p in range(len(args)):
                om = self._operand_meta(step, p)
                if om is None:
                    if m.dtype != np.dtype(np.float64):
                        return None  # (a Python scalar with a float32 array: NEP 50's cast)
                elif om.type is np.ndarray and om.dtype != m.dtype:
                    return None
                elif om.type is not np.ndarray and m.dtype != np.dtype(np.float64):
                    return None
            if base is not None:  # _into: the result into the operand at fun.pos
                into = ops[fun.pos]
                return [f"np.{ufunc.__name__}({', '.join(ops)}, {into})", f"r{slot} = {into}"]
            if ufunc.nin == 1 and ufunc in _SIMD_IN_NUMPY:
                loop = _ufunc_loop(ufunc, m.dtype)
                if loop is not None:
                    return [f"r{slot} = {self._g(loop, 'loop')}({ops[0]})"]
            return [f"r{slot} = np.{ufunc.__name__}({', '.join(ops)})"]
        return None

    def _operand_meta(self, step, pos):
        for p, s in step[2]:
            if p == pos:
                return self._m(s)
        a = step[1][pos]
        return _Meta(a) if type(a) is np.ndarray else None

    def _kernel(self, step, kern):
        fun, args, links, kwargs, slot = step[:5]
        for m in kern.input_meta:
            if not (
                _is_array(m)
                or _is_scalar(m)
                or m.type is np.ndarray
                and not m.shape
                and m.dtype in _NATIVE_ITEMS
            ):
                return None
        lines, outs = [], []
        for k, m in enumerate(kern.out_meta):
            lines.append(f"o{slot}_{k} = np.empty({tuple(m.shape)!r}, {_NP_DTYPE[m.dtype]})")
            outs.append(f"o{slot}_{k}")
        passed = [
            f"r{s}[()]" if m.type is np.ndarray and not m.shape else f"r{s}"
            for s, m in zip(kern.inputs, kern.input_meta)
        ]
        consts = [self._const(a) for a in kern.arrays]
        name = self._g(fun.jitted, "kern")
        self.kernel_sources[name] = kern.source
        lines.append(f"{name}({', '.join(passed + consts + outs)})")
        if len(outs) == 1:
            lines.append(f"r{kern.outputs[0]} = {outs[0]}")
        else:
            for s, o in zip(kern.outputs, outs):
                lines.append(f"r{s} = {o}")
            self.packed_outputs.update(kern.outputs)
        return lines


_MATMUL = (np.matmul, np.dot)


_TOKEN = re.compile(r"\b(r\d+|o\d+_\d+|k\d+)\b|\$(-?\d+)\$")


def _native_program(steps, meta, prog, n_slots):
    """(steps, n_slots) with each run of MIN_SEGMENT_STEPS or more steps _Native translates
    as calls of Numba functions (segments); None where no run is that long.

    A run is cut into segments of about SEGMENT_STEPS steps, aligned on the repeats of a
    loop of the user's program (found as in _roll), and each segment's source is written
    with local names and its constant ints as parameters: every repeat of a loop then runs
    one compiled function (Numba's compile time grows faster than a function's size)."""
    numba = numba_module()
    nat = _Native(meta, len(meta))
    trans = [nat.translate(step) for step in steps]
    packed = set()  # slots holding a tuple of a kernel's outputs (read by getitem only)
    writes, reads = [], []
    writer = {}
    for k, step in enumerate(steps):
        kern = getattr(step[0], "kernel", None)
        if kern is not None and len(kern.outputs) > 1:
            packed.add(step[4])
        w = tuple(kern.outputs) if kern is not None else (step[4],)
        if trans[k] == []:
            w = ()
        writes.append(w)
        for s_ in w:
            writer[s_] = k
    for step in steps:
        reads.append(tuple(s_ for _, s_ in step[2] if s_ not in packed))
    last_read = {prog.out: len(steps)}
    for k, step in enumerate(steps):
        for _, s_ in step[2]:
            last_read[s_] = k
        for pos in step[7]:
            for s_ in _slots_in(step[1][pos]):
                last_read[s_] = k
    templ = [
        None if t is None else _TOKEN.sub(lambda mt: "$" if mt.group(2) else "@", "\n".join(t))
        for t in trans
    ]

    def sig(i, start):
        """Step i's code, with its reads as distances (within the window from start) or X."""
        if templ[i] is None:
            return None
        d = tuple(
            i - writer[s_] if writer.get(s_, -1) >= start else ("X", last_read.get(s_) == i)
            for s_ in reads[i]
        )
        return templ[i], d, tuple(last_read.get(s_, -1) < i + 1 for s_ in writes[i])

    def same(a, b, p):
        return all(sig(a + q, a) == sig(b + q, b) for q in range(p))

    segments = []  # (start, end)
    k = 0
    while k < len(steps):
        if trans[k] is None:
            k += 1
            continue
        b = k
        while b < len(steps) and trans[b] is not None:
            b += 1
        loose = k
        j = k
        while j < b:
            found = None
            for p in range(1, min(_MAX_PERIOD, (b - j) // 2) + 1):
                if same(j, j + p, p):
                    found = p
                    break
            if found is None or any(trans[q] == [] for q in (j,)):
                j += 1
                if j - loose >= SEGMENT_STEPS:
                    segments.append((loose, j))
                    loose = j
                continue
            p = found
            r = 2
            while j + (r + 1) * p <= b and same(j, j + r * p, p):
                r += 1
            if loose < j:
                segments.append((loose, j))
            per = max(1, SEGMENT_STEPS // p)
            q = 0
            while q < r:
                m = min(per, r - q)
                segments.append((j + q * p, j + (q + m) * p))
                q += m
            j += r * p
            loose = j
        if loose < b:
            segments.append((loose, b))
        k = b
    # (a kernel's getitems stay with it: a segment never starts at one)
    merged = []
    for a, e in segments:
        if merged and (trans[a] == [] or a < merged[-1][1]):
            merged[-1] = (merged[-1][0], max(e, merged[-1][1]))
        else:
            merged.append((a, e))
    merged = [(a, e) for a, e in merged if e - a >= MIN_SEGMENT_STEPS]
    if not merged:
        return None
    planned = []  # (a, e, key, src, used, inputs, outputs, consts, ints)
    for a, e in merged:
        written, inputs = set(), []
        for i in range(a, e):
            for s_ in reads[i]:
                if s_ not in written and s_ not in inputs:
                    inputs.append(s_)
            written.update(writes[i])
        outputs = [s_ for s_ in sorted(written) if last_read.get(s_, -1) >= e]
        body = [line for i in range(a, e) for line in trans[i]]
        # local names, in order of appearance; constants (arrays, ints) as parameters
        names, ints, consts = {f"r{s_}": f"v{n}" for n, s_ in enumerate(inputs)}, [], []

        def local(mt, names=names, ints=ints, consts=consts):
            tok, num = mt.group(1), mt.group(2)
            if num is not None:
                ints.append(int(num))
                return f"i{len(ints) - 1}"
            if tok[0] == "k":
                consts.append(nat.consts[int(tok[1:])])
                return f"c{len(consts) - 1}"
            name = names.get(tok)
            if name is None:
                name = names[tok] = f"v{len(names)}"
            return name

        body = [_TOKEN.sub(local, line) for line in body]
        outs = [names[f"r{s_}"] for s_ in outputs]
        params = [f"v{n}" for n in range(len(inputs))]
        params += [f"c{n}" for n in range(len(consts))] + [f"i{n}" for n in range(len(ints))]
        ret = ", ".join(outs) + ("," if len(outs) != 1 else "")
        src = "\n".join([f"def segment({', '.join(params)}):"] + [" " + x for x in body])
        src += f"\n return {ret}"
        used = sorted(set(re.findall(r"\b((?:kern|loop)\d+)\b", src)))
        key = (src, tuple((n, id(nat.globals[n])) for n in used))
        planned.append((a, e, key, src, used, inputs, outputs, consts, ints))
    # the segments worth their compile (0.3-3 s each): those a loop runs MIN_SEGMENT_CALLS
    # times or more, the MAX_SEGMENTS that replace the most steps (or already compiled)
    calls, size = {}, {}
    for a, e, key, *_ in planned:
        calls[key] = calls.get(key, 0) + 1
        size[key] = size.get(key, 0) + e - a
    ranked = sorted(
        (k for k in calls if calls[k] >= MIN_SEGMENT_CALLS and k not in _kernels),
        key=lambda k: -size[k],
    )
    chosen = set(ranked[:MAX_SEGMENTS]) | {k for k in calls if k in _kernels}
    # ... and only where they take most of the program out of Python (a memory network's
    # segments between its einsum and softmax calls cost 10 s of compile and saved nothing)
    inside = sum(e - a for a, e, key, *_ in planned if key in chosen)
    if inside < MIN_SEGMENT_SHARE * len(steps):
        return None
    new_steps, pos = [], 0
    for a, e, key, src, used, inputs, outputs, consts, ints in planned:
        if key not in chosen:
            continue
        new_steps.extend(steps[pos:a])
        hit = _kernels.get(key)
        if hit is None:
            ns = {"np": np}
            ns.update((n, nat.globals[n]) for n in used)
            exec(compile(src, "<gradcy.jit segment>", "exec"), ns)
            fn = numba.njit(ns["segment"], error_model="numpy", nogil=True)
            # the names of the steps it runs (for tests and for reading a program)
            fn.step_names = tuple(getattr(steps[i][0], "__name__", "") for i in range(a, e))
            # its source and its kernels' (what the bits of its results depend on)
            fn.sources = (src,) + tuple(
                nat.kernel_sources[n] for n in used if n in nat.kernel_sources
            )
            hit = _kernels[key] = (fn, [nat.globals[n] for n in used])
        fn = hit[0]
        links = tuple((p, s_) for p, s_ in enumerate(inputs))
        args = (None,) * len(inputs) + tuple(consts) + tuple(ints)
        if len(outputs) == 1:
            new_steps.append((fn, args, links, None, outputs[0], (), (), ()))
        else:
            tup = n_slots
            n_slots += 1
            new_steps.append((fn, args, links, None, tup, (), (), ()))
            for q, s_ in enumerate(outputs):
                new_steps.append((operator.getitem, (None, q), ((0, tup),), None, s_, (), (), ()))
        pos = e
    if not pos:
        return None
    new_steps.extend(steps[pos:])
    return new_steps, n_slots
