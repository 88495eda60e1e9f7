"""gradcy.jit's native segments: the runs of planned steps Numba can run in nopython mode
(gradcy._codegen's kernels, 2-d products as BLAS calls, NumPy's own SIMD unary loops called
through the ufunc's loop pointer, in-place updates, basic indexing, writes, axis sums) that a
loop of the user's program repeats, as one Numba function per distinct repeat with its int
indexes as parameters (`_native_program`, called by gradcy._codegen.compile_program).
"""

import math
import operator
import re

import numpy as np

from . import _codegen
from ._buffer_plan import _T, _add_at, _last_reads, _take_copy
from ._codegen import (
    _BINARY,
    _BOOL,
    _MAX_PERIOD,
    _NP_DTYPE,
    _SIMD_IN_NUMPY,
    _UNARY,
    _Meta,
    _constant_ok,
    _set_into,
)


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
    """(f, fn): a Numba function f(fn, x) -> ufunc(x) for an array x of `dtype` that calls the
    ufunc's own inner loop (NumPy's SIMD tanh, exp... with NumPy's bits) at the address fn (an
    argument: the compiled code holds no address of this process, so it is cached on disk);
    None where the ufunc's table cannot be read and checked (the loop is then Numba's, the C
    library's function per element)."""
    key = (ufunc, dtype)
    if key not in _UFUNC_LOOPS:
        _UFUNC_LOOPS[key] = _make_ufunc_loop(ufunc, dtype)
    return _UFUNC_LOOPS[key]


def _inner_loop_address(ufunc, dtype):
    """The address of the ufunc's inner loop for dtype -> dtype, read from its table, or None."""
    import ctypes

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
    return fn if fn and not data else None


_LOOP_CALL = """def call(fn, x):
    x = np.ascontiguousarray(x)
    out = np.empty_like(x)
    b = np.empty(5, np.intp)  # args (2), dimensions (1), steps (2)
    b[0] = x.ctypes.data
    b[1] = out.ctypes.data
    b[2] = x.size
    b[3] = {item}
    b[4] = {item}
    inner_loop(fn, b.ctypes.data, b[2:].ctypes.data, b[3:].ctypes.data)
    return out"""


def _make_ufunc_loop(ufunc, dtype):
    fn = _inner_loop_address(ufunc, dtype)
    if fn is None:
        return None
    f = _codegen._cached_function(
        _LOOP_CALL.format(item=dtype.itemsize),
        "call",
        {"inner_loop": (_inner_loop(), "gradcy._segments._inner_loop (fn, args, dims, steps)")},
    )
    x = np.linspace(-3.0, 3.0, 37).astype(dtype)
    try:
        ok = np.array_equal(f(fn, x), ufunc(x))
    except Exception:
        ok = False
    return (f, fn) if ok else None


_INNER_LOOP = []


def _inner_loop():
    """The Numba intrinsic inner_loop(fn, args, dims, steps): a call of the NumPy inner loop
    at address fn (void fn(char **args, npy_intp *dims, npy_intp *steps, void *data)) with
    data NULL, the addresses as ints."""
    if not _INNER_LOOP:
        from llvmlite import ir
        from numba import types
        from numba.extending import intrinsic

        @intrinsic
        def inner_loop(typingctx, fn, args, dims, steps):
            if not all(isinstance(t, types.Integer) for t in (fn, args, dims, steps)):
                return None

            def codegen(context, builder, signature, llargs):
                ptr = ir.IntType(8).as_pointer()
                fnty = ir.FunctionType(ir.VoidType(), [ptr] * 4)
                callee = builder.inttoptr(llargs[0], fnty.as_pointer())
                builder.call(callee, [builder.inttoptr(v, ptr) for v in llargs[1:]] + [ptr(None)])
                return context.get_dummy_value()

            return types.void(fn, args, dims, steps), codegen

        _INNER_LOOP.append(inner_loop)
    return _INNER_LOOP[0]


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
                    call, fn = loop
                    return [f"r{slot} = {self._g(call, 'loop')}({self._const(fn)}, {ops[0]})"]
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


def _described(fun):
    """What a segment's global (a kernel, a ufunc loop call) is, for the name of its file: the
    module and name of the Numba function's Python code (a file named by its text's hash), or
    None where that code is not in such a file (compiled in memory: nor is the segment)."""
    py = getattr(fun, "py_func", fun)
    code = getattr(py, "__code__", None)
    module = getattr(py, "__module__", None) or ""
    if code is None or code.co_filename.startswith("<") or not module.startswith("gradcy_"):
        return None
    return f"{module}.{py.__qualname__}"


_TOKEN = re.compile(r"\b(r\d+|o\d+_\d+|k\d+)\b|\$(-?\d+)\$")


def _native_program(steps, meta, prog, n_slots):
    """(steps, n_slots) with each run of MIN_SEGMENT_STEPS or more steps _Native translates
    as calls of Numba functions (segments); None where no run is that long.

    A run is cut into segments of about SEGMENT_STEPS steps, aligned on the repeats of a
    loop of the user's program (found as in _roll), and each segment's source is written
    with local names and its constant ints as parameters: every repeat of a loop then runs
    one compiled function (Numba's compile time grows faster than a function's size)."""
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
    last_read = _last_reads(steps, prog.out)
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
        (k for k in calls if calls[k] >= MIN_SEGMENT_CALLS and k not in _codegen._kernels),
        key=lambda k: -size[k],
    )
    chosen = set(ranked[:MAX_SEGMENTS]) | {k for k in calls if k in _codegen._kernels}
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
        hit = _codegen._kernels.get(key)
        if hit is None:
            fn = _codegen._cached_function(
                src, "segment", {n: (nat.globals[n], _described(nat.globals[n])) for n in used}
            )
            # the names of the steps it runs (for tests and for reading a program)
            fn.step_names = tuple(getattr(steps[i][0], "__name__", "") for i in range(a, e))
            # its source and its kernels' (what the bits of its results depend on)
            fn.sources = (src,) + tuple(
                nat.kernel_sources[n] for n in used if n in nat.kernel_sources
            )
            hit = _codegen._kernels[key] = (fn, [nat.globals[n] for n in used])
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
