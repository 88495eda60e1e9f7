"""gradcy.jit's native code generator: a recorded program (gradcy.misc.tracers._Program) into
Numba kernels with Python glue between them.

A recorded program is a list of NumPy calls on slots. `compile_program` runs it once at the
recording's inputs to learn the type, shape and dtype of every slot (the guards of the
recording fix them for every replay), then cuts it into groups: a run of consecutive
elementwise steps (ufuncs of _UNARY/_BINARY, numpy.where) whose results are real arrays of one
shape becomes one kernel, a loop nest over that shape that computes each element of the run as
scalar statements (no temporaries: only the slots read after the run are written to arrays);
every other step stays the NumPy call it was (matmul calls BLAS as it does in NumPy; an einsum
that is a matrix product becomes that np.matmul call where the result stays within rounding,
_einsums_lowered; reductions, indexing, and any primitive the generator does not know). Each
kernel replaces its run by one step of the program, a Python wrapper that allocates the kernel's
outputs and calls it, so the glue, its guards and its freeing of slots are const_graph's own
(tracers._Program.rebuilt).

Then gradcy._buffer_plan's passes decide where each value lives (in-place accumulation and
writes, buffers reused, values read back from the buffers they were written into), and
gradcy._segments turns the runs of planned steps Numba can run in nopython mode (kernels, 2-d
products as BLAS calls, NumPy's own SIMD unary loops called through the ufunc's loop pointer,
in-place updates, basic indexing, writes, axis sums) that a loop of the user's program repeats
into native segments: one Numba function per distinct repeat, its int indexes as parameters.
Kernels, segments and the ufunc loop calls are compiled from files named by their text's hash
with Numba's cache=True (cache_dir(), _cached_function), so a later process loads them from disk;
Numba's cache files are sealed by their hash (a file that no longer matches compiles again).

Kernels compute each step in the dtype NumPy's loop would (the result's dtype for arithmetic,
the operands' common dtype for comparisons), with Python scalars cast to it as NEP 50 does, and
Numba's error_model='numpy' (1/0 is inf, not an exception): + - * / and comparisons give NumPy's
bits; sin, tanh, exp... call the C library's functions, which may differ from NumPy's SIMD ones
in the last place.
"""

import hashlib
import importlib.util
import math
import operator
import os
import platform
import sys
import warnings
import weakref

import numpy as np

from .misc.tracers import _step_args

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
            a = _step_args(args, links, nested, vals)
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


# the Numba functions _cached_function made in this process (native_compiles counts their
# compiles), and of those cached on disk: {module name: (weak reference to the function, the
# path of its seal, how many compiles it had when sealed)}
_made = weakref.WeakSet()
_seals = {}


def native_compiles():
    """How many times Numba compiled (rather than loaded from the disk cache) a kernel, native
    segment or ufunc loop call of gradcy.jit in this process."""
    return sum(sum(f.stats.cache_misses.values()) for f in list(_made))


def _cached_function(source, name, globals_=None):
    """numba.njit of the function `name` that `source` defines, its globals NumPy as np and
    globals_ ({global name: (object, a description of it: what names it across processes, or
    None where nothing does)}).

    It is compiled from a file of cache_dir() named by the hash of its text (the source, the
    globals' descriptions, NumPy's and Numba's versions and the machine), with Numba's
    cache=True: a later process loads the compiled code from disk (about 40 ms) instead of
    compiling it again (0.1-3 s). Numba reads its cache files unchecked (a corrupted one raises
    or runs wrong code), so they are sealed by their SHA-256 after the first compile
    (_seal_caches) and, where they no longer match their seal, deleted before the function is
    made: it compiles again. Where the directory cannot be written the function is compiled in
    memory only."""
    numba = numba_module()
    opts = {"error_model": "numpy", "nogil": True}
    globals_ = globals_ or {}
    d = cache_dir()
    if d and all(desc is not None for _, desc in globals_.values()):
        described = "".join(f"# {g}: {desc}\n" for g, (_, desc) in sorted(globals_.items()))
        text = (
            f"# gradcy.jit: numpy {np.__version__}, numba {numba.__version__}, "
            f"{platform.machine()}\n{described}import numpy as np\n\n\n{source}\n"
        )
        modname = f"gradcy_{name}_" + hashlib.sha256(text.encode()).hexdigest()[:32]
        path = os.path.join(d, modname + ".py")
        try:
            if not os.path.exists(path) or _read(path) != text:
                os.makedirs(d, exist_ok=True)
                tmp = f"{path}.{os.getpid()}.tmp"
                with open(tmp, "w") as fh:
                    fh.write(text)
                os.replace(tmp, path)  # (atomic: another process may write the same file)
            module = sys.modules.get(modname)
            if module is None:
                spec = importlib.util.spec_from_file_location(modname, path)
                module = importlib.util.module_from_spec(spec)
                module.__dict__.update((g, obj) for g, (obj, _) in globals_.items())
                spec.loader.exec_module(module)
                sys.modules[modname] = module  # (Numba's cache finds the function by module)
            fn = getattr(module, name)
            if fn.__code__.co_filename == path:
                jitted = numba.njit(fn, cache=True, **opts)
                seal = os.path.join(d, modname + ".sealed")
                _check_seal(jitted.stats.cache_path, modname, seal)
                _seals[modname] = (weakref.ref(jitted), seal, 0)
                _made.add(jitted)
                return jitted
        except (OSError, ImportError, SyntaxError, AttributeError):
            pass
    ns = {"np": np}
    ns.update((g, obj) for g, (obj, _) in globals_.items())
    exec(compile(source, f"<gradcy.jit {name}>", "exec"), ns)
    jitted = numba.njit(ns[name], **opts)
    _made.add(jitted)
    return jitted


def _numba_files(cache_path, modname):
    """{file name: its SHA-256} of Numba's cache files (index, data) of module modname."""
    out = {}
    if not cache_path or not os.path.isdir(cache_path):
        return out
    for f in os.listdir(cache_path):
        if f.startswith(modname + ".") and f.endswith((".nbi", ".nbc")):
            with open(os.path.join(cache_path, f), "rb") as fh:
                out[f] = hashlib.sha256(fh.read()).hexdigest()
    return out


def _check_seal(cache_path, modname, seal):
    """Delete Numba's cache files of modname unless they are exactly those its seal lists."""
    files = _numba_files(cache_path, modname)
    if not files:
        return
    try:
        sealed = dict(line.split(" ", 1)[::-1] for line in _read(seal).splitlines())
    except (OSError, ValueError):
        sealed = None
    if sealed != files:
        for f in files:
            try:
                os.remove(os.path.join(cache_path, f))
            except OSError:
                pass


def _seal_caches():
    """Seal the cache files of each function Numba compiled (and saved) since it was last
    sealed: a file of their SHA-256, written atomically."""
    for modname, (ref, seal, done) in list(_seals.items()):
        jitted = ref()
        if jitted is None:
            del _seals[modname]
            continue
        stats = jitted.stats
        misses = sum(stats.cache_misses.values())
        if misses == done:
            continue  # (not called since, or loaded: its files are those sealed)
        _seals[modname] = (ref, seal, misses)
        try:
            files = _numba_files(stats.cache_path, modname)
            tmp = f"{seal}.{os.getpid()}.tmp"
            with open(tmp, "w") as fh:
                fh.write("".join(f"{h} {f}\n" for f, h in sorted(files.items())))
            os.replace(tmp, seal)
        except OSError:
            pass


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
    from . import _buffer_plan as plan, _segments  # (they import this module's parts)

    steps, n_slots = plan._outer_product_sums(steps, meta, prog, prog.n_slots)
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
    last_read = plan._last_reads(steps, prog.out)  # (the output: read after the end)
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
            jitted = _kernels[kern.source] = _cached_function(kern.source, "kernel")
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
    planned = plan._accumulations(plan._transposes(new_steps, meta), meta, prog)
    planned = plan._reuse_buffers(plan._writes_in_place(planned, meta, prog), meta, prog)
    planned, n_slots = plan._values_in_buffers(planned, meta, prog, n_slots)
    planned, n_slots = plan._views_at_reads(planned, meta, prog, n_slots)
    native = _segments._native_program(planned, meta, prog, n_slots)
    if native is not None:
        try:
            with np.errstate(all="ignore"), warnings.catch_warnings():
                # (np.dot on a strided view: Numba's note that a contiguous one would be faster)
                warnings.simplefilter("ignore", numba.NumbaPerformanceWarning)
                _result(native[0], prog, leaves)  # (Numba compiles each segment at its first call)
            planned, n_slots = native
        except Exception:
            pass
    steps = _einsums_lowered(planned, meta, prog, leaves)
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", numba.NumbaPerformanceWarning)
        _result(steps, prog, leaves)  # (each kernel compiles, or loads, at its first call)
    _seal_caches()
    return prog.rebuilt(steps, n_slots)


# the most runs of the program _einsums_lowered makes to find the einsums it may lower
_LOWERING_RUNS = 6


def _einsums_lowered(steps, meta, prog, leaves):
    """steps with the einsums that are matrix products as np.matmul calls
    (_buffer_plan._einsums_as_matmuls): all of them where the program's result at `leaves`
    stays within rounding of the recording's (the check gradcy.jit makes of a compiled
    program), else those from the earliest point where it does (found by bisection).

    BLAS sums in its own order, so each product differs from einsum's in the last bits, and a
    recurrence can amplify that: a memory network of 256 steps, whose gradient a change of W
    by one unit in the last place moves by 2e-12, moves by 7e-12 where its forward pass's
    einsums are lowered, beyond the check's 64 units (3e-14) of its inputs' scale; lowered in
    the backward pass only, by 7e-15."""
    from . import _buffer_plan
    from .compiled import _close

    lowered = _buffer_plan._einsums_as_matmuls(steps, meta)
    if not lowered:
        return steps
    at = sorted(lowered)

    def variant(c):
        return [lowered[k] if k in lowered and k >= at[c] else s for k, s in enumerate(steps)]

    def agrees(c):
        try:
            with np.errstate(all="ignore"):
                return _close(_result(variant(c), prog, leaves), want)
        except Exception:
            return False

    try:
        with np.errstate(all="ignore"):
            want = _result(prog.steps, prog, leaves)
    except Exception:  # (the recording's own steps: not expected to raise)
        return steps
    if agrees(0):
        return variant(0)
    lo, hi, runs = 0, len(at), 1  # (cutting at lo disagrees; at hi, agrees: none is lowered)
    while hi - lo > 1 and runs < _LOWERING_RUNS:
        mid = (lo + hi) // 2
        runs += 1
        if agrees(mid):
            hi = mid
        else:
            lo = mid
    return steps if hi == len(at) else variant(hi)


def _result(steps, prog, leaves):
    """prog's output after running `steps` on `leaves`, each slot freed after its last read."""
    from ._buffer_plan import _last_reads

    vals = list(leaves) + [None] * (max((s[4] for s in steps), default=0) + 1)
    drops = {}
    for s, k in _last_reads(steps, prog.out).items():
        drops.setdefault(k, []).append(s)
    for k, (fun, args, links, kwargs, slot, _d, _g, nested) in enumerate(steps):
        a = _step_args(args, links, nested, vals)
        for s in drops.get(k, ()):
            vals[s] = None
        vals[slot] = fun(*a, **kwargs) if kwargs else fun(*a)
    return vals[prog.out]
