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

Kernels compute each step in the dtype NumPy's loop would (the result's dtype for arithmetic,
the operands' common dtype for comparisons), with Python scalars cast to it as NEP 50 does, and
Numba's error_model='numpy' (1/0 is inf, not an exception): + - * / and comparisons give NumPy's
bits; sin, tanh, exp... call the C library's functions, which may differ from NumPy's SIMD ones
in the last place.
"""
import math
import operator

import numpy as np

from .misc.tracers import _fill, _slots_in

# ufunc -> scalar expression template ({0}, {1}: the operands, cast to the loop's dtype)
_UNARY = {
    np.sin: "np.sin({0})", np.cos: "np.cos({0})", np.tan: "np.tan({0})",
    np.arcsin: "np.arcsin({0})", np.arccos: "np.arccos({0})", np.arctan: "np.arctan({0})",
    np.sinh: "np.sinh({0})", np.cosh: "np.cosh({0})", np.tanh: "np.tanh({0})",
    np.arcsinh: "np.arcsinh({0})", np.arccosh: "np.arccosh({0})",
    np.arctanh: "np.arctanh({0})", np.exp: "np.exp({0})", np.exp2: "np.exp2({0})",
    np.expm1: "np.expm1({0})", np.log: "np.log({0})", np.log2: "np.log2({0})",
    np.log10: "np.log10({0})", np.log1p: "np.log1p({0})", np.sqrt: "np.sqrt({0})",
    np.negative: "(-{0})", np.positive: "(+{0})", np.absolute: "abs({0})",
    np.fabs: "abs({0})", np.square: "({0} * {0})", np.floor: "np.floor({0})",
    np.ceil: "np.ceil({0})", np.trunc: "np.trunc({0})",
    np.isnan: "np.isnan({0})", np.isinf: "np.isinf({0})", np.isfinite: "np.isfinite({0})",
    np.logical_not: "(not {0})",
}
_BINARY = {
    np.add: "({0} + {1})", np.subtract: "({0} - {1})", np.multiply: "({0} * {1})",
    np.true_divide: "({0} / {1})", np.power: "np.power({0}, {1})",
    np.maximum: "np.maximum({0}, {1})", np.minimum: "np.minimum({0}, {1})",
    np.fmax: "np.fmax({0}, {1})", np.fmin: "np.fmin({0}, {1})",
    np.arctan2: "np.arctan2({0}, {1})", np.hypot: "np.hypot({0}, {1})",
    np.copysign: "np.copysign({0}, {1})", np.logaddexp: "np.logaddexp({0}, {1})",
    np.greater: "({0} > {1})", np.greater_equal: "({0} >= {1})", np.less: "({0} < {1})",
    np.less_equal: "({0} <= {1})", np.equal: "({0} == {1})", np.not_equal: "({0} != {1})",
    np.logical_and: "({0} and {1})", np.logical_or: "({0} or {1})",
    np.logical_xor: "({0} != {1})",
}
_LOGICAL = (np.logical_not, np.logical_and, np.logical_or, np.logical_xor)
_WHERE = np.where

_FLOATS = (np.dtype(np.float64), np.dtype(np.float32))
_BOOL = np.dtype(bool)
_OPERAND_DTYPES = _FLOATS + (_BOOL, np.dtype(np.int64), np.dtype(np.int32))
_CAST = {np.dtype(np.float64): "np.float64", np.dtype(np.float32): "np.float32",
         _BOOL: "bool"}

# fused runs shorter than this stay NumPy calls (a kernel call costs about as much as two)
MIN_FUSED_STEPS = 2

_numba = []


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
    """The _Meta of every slot of prog, from one interpreted run at `leaves`."""
    vals = list(leaves) + [None] * (prog.n_slots - prog.n_inputs)
    meta = [_Meta(v) for v in vals[:prog.n_inputs]] + [None] * (prog.n_slots - prog.n_inputs)
    with np.errstate(all="ignore"):
        for fun, args, links, kwargs, slot, drops, _guards, nested in prog.steps:
            a = list(args)
            for pos, s in links:
                a[pos] = vals[s]
            for pos in nested:
                a[pos] = _fill(a[pos], vals)
            for s in drops:
                vals[s] = None
            vals[slot] = v = fun(*a, **kwargs) if kwargs else fun(*a)
            meta[slot] = _Meta(v)
            del v
    return meta


def _constant_ok(v):
    t = type(v)
    if t is bool or t is float:
        return True
    if t is int:
        return -2**62 < v < 2**62
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
    linked = dict(links)
    operands = []
    for pos, a in enumerate(args):
        if pos in linked:
            om = meta[linked[pos]]
            if om.type is np.ndarray or isinstance(om.type, type) and issubclass(
                    om.type, np.generic):
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
        text = ("np.nan" if math.isnan(f) else ("np.inf" if f > 0 else "-np.inf")
                if math.isinf(f) else repr(f))
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
    """One fused run of steps: its source, inputs (slots, then constant arrays) and outputs."""

    def __init__(self, shape, steps, fused, meta, live_after):
        self.shape = shape
        produced = {step[4] for step in steps}
        self.inputs = []                  # slots read, defined before the run
        self.arrays = []                  # constant array arguments
        names = {}
        body = []

        def operand(kind, v, loop_dt, count):
            if kind == "const":
                return _literal(v, loop_dt)
            if kind == "array":
                idx = len(self.arrays)
                self.arrays.append(v)
                text = self._index(f"c{idx}", v.shape, v.ndim)
                om_dtype = v.dtype
            else:
                text = names.get(v)
                om = meta[v]
                om_dtype = om.dtype if om.dtype is not None else None
                if text is None:            # an input of the kernel
                    idx = len(self.inputs)
                    self.inputs.append(v)
                    if om.type is np.ndarray and om.shape:
                        name = f"a{idx}"
                        text = f"v{len(names)}"
                        body.append(f"{text} = {self._index(name, om.shape, len(om.shape))}")
                    else:
                        text = f"a{idx}"
                    names[v] = text
            if loop_dt is not None and om_dtype != loop_dt and loop_dt in _CAST:
                return f"{_CAST[loop_dt]}({text})"
            return text

        for step, (template, operands) in zip(steps, fused):
            fun, slot = step[0], step[4]
            m = meta[slot]
            values = []
            for kind, v in operands:
                if kind == "slot":
                    om = meta[v]
                    values.append(np.empty((), om.dtype) if om.dtype is not None
                                  else om.value)
                elif kind == "array":
                    values.append(np.empty((), v.dtype))
                else:
                    values.append(v)
            if fun is _WHERE:
                loop_dt = m.dtype
                c = operand(*operands[0], _BOOL, 0)
                x = operand(*operands[1], loop_dt, 1)
                y = operand(*operands[2], loop_dt, 2)
                expr = f"({x} if {c} else {y})"
            else:
                loop_dt = _loop_dtype(fun, m.dtype, values)
                if loop_dt not in _CAST:
                    loop_dt = None
                texts = [operand(kind, v, loop_dt, k) for k, (kind, v) in enumerate(operands)]
                if fun is np.power and operands[1] == ("const", 2):
                    template = "({0} * {0})"          # NumPy's own fast path of x**2
                expr = template.format(*texts)
            if m.dtype != loop_dt:
                expr = f"{_CAST[m.dtype]}({expr})"
            name = names[slot] = f"t{slot}"
            body.append(f"{name} = {expr}")
        self.input_meta = [meta[s] for s in self.inputs]
        self.outputs = [s for s in sorted(produced) if s in live_after]
        self.out_meta = [meta[s] for s in self.outputs]
        for k, s in enumerate(self.outputs):
            body.append(f"{self._index(f'o{k}', meta[s].shape, len(meta[s].shape))} = "
                        f"{names[s]}")
        args = ([f"a{k}" for k in range(len(self.inputs))]
                + [f"c{k}" for k in range(len(self.arrays))]
                + [f"o{k}" for k in range(len(self.outputs))])
        lines = [f"def kernel({', '.join(args)}):"]
        indent = " "
        for d, n in enumerate(shape):
            lines.append(f"{indent}for i{d} in range({n}):")
            indent += " "
        lines.extend(indent + b for b in body)
        self.source = "\n".join(lines)

    def _index(self, name, shape, ndim):
        """name[i...] for an operand of `shape` broadcast to the kernel's shape."""
        full = len(self.shape)
        idx = []
        for d in range(ndim):
            fd = full - ndim + d
            idx.append("0" if shape[d] == 1 and self.shape[fd] != 1 else f"i{fd}")
        return f"{name}[{', '.join(idx)}]" if idx else name


def _wrapper(kernel, jitted):
    """The program step that runs a kernel: inputs in, its outputs (one, or a tuple) out."""
    arrays = tuple(kernel.arrays)
    specs = [(m.shape, m.dtype) for m in kernel.out_meta]
    empty = np.empty
    n_in = len(kernel.inputs)
    ns = {"kernel": jitted, "empty": empty, "arrays": arrays}
    params = [f"a{k}" for k in range(n_in)]
    # a 0-d array input is passed as its element (the kernel reads it as a scalar)
    passed = [f"a{k}[()]" if m.type is np.ndarray and not m.shape else f"a{k}"
              for k, m in enumerate(kernel.input_meta)]
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
    return ns["run_kernel"]


def compile_program(prog, leaves):
    """prog with its fusable runs as Numba kernels (a new tracers._Program; prog itself if
    nothing fuses). Raises what Numba raises when a kernel does not compile."""
    numba = numba_module()
    meta = _probe(prog, leaves)
    steps = list(prog.steps)
    fused = [_fusable(step, meta) for step in steps]
    # runs of consecutive fusable steps with one result shape
    runs, k = [], 0
    while k < len(steps):
        if fused[k] is None:
            k += 1
            continue
        shape = meta[steps[k][4]].shape
        j = k
        while j < len(steps) and fused[j] is not None and meta[steps[j][4]].shape == shape:
            j += 1
        if j - k >= MIN_FUSED_STEPS:
            runs.append((k, j))
        k = j
    if not runs:
        return prog
    # the slots each position's later steps read (and the output)
    read_after = [set() for _ in range(len(steps) + 1)]
    read_after[len(steps)] = {prog.out}
    for k in range(len(steps) - 1, -1, -1):
        step = steps[k]
        r = set(read_after[k + 1])
        r.update(s for _, s in step[2])
        for pos in step[7]:
            r.update(_slots_in(step[1][pos]))
        read_after[k] = r
    new_steps, n_slots, pos = [], prog.n_slots, 0
    for k, j in runs:
        new_steps.extend(steps[pos:k])
        kern = _Kernel(meta[steps[k][4]].shape, steps[k:j], fused[k:j], meta, read_after[j])
        ns = {"np": np}
        exec(compile(kern.source, "<gradcy.jit kernel>", "exec"), ns)
        jitted = numba.njit(ns["kernel"], error_model="numpy", nogil=True)
        call = _wrapper(kern, jitted)
        links = tuple((p, s) for p, s in enumerate(kern.inputs))
        if len(kern.outputs) == 1:
            new_steps.append((call, (None,) * len(links), links, None, kern.outputs[0], (),
                              (), ()))
        elif kern.outputs:
            packed = n_slots
            n_slots += 1
            new_steps.append((call, (None,) * len(links), links, None, packed, (), (), ()))
            for q, s in enumerate(kern.outputs):
                new_steps.append((operator.getitem, (None, q), ((0, packed),), None, s, (),
                                  (), ()))
        pos = j
    new_steps.extend(steps[pos:])
    return prog.rebuilt(new_steps, n_slots)

