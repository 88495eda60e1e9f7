"""A differential fuzzer: random array programs run by NumPy, by gradcy and by central differences.

A program is Python source text, `def prog(np, x, y): ... return loss`, run with `np=numpy`
(the reference values) and with `np=gradcy.numpy` (traced). It is generated from one seed by
trying random statements on plain NumPy one at a time and keeping those that run, so every
shape is known, every program is valid NumPy, and no maximum or data-dependent mask is within
TIE_GAP of a tie (central differences stay on one smooth piece). Statements write into buffers
and inputs with every index kind (ints, negative ints, slices with negative steps, Ellipsis,
None, boolean masks, data-dependent masks, advanced index arrays, two broadcast index arrays,
mixed advanced and basic, broadcast values; `=`, `+=`, `-=`, `*=`), overwrite slots whose
earlier values were used, write a buffer into itself shifted or reversed, write into 0-d
buffers, iterate over rows, take views, and compute ordinary values (sin/cos/tanh/exp, +, -, *,
sum/mean/max over axes, dot/matmul/@, reshapes, transposes and other view functions, reads with
any index, concatenate/stack), ending in a scalar loss over every variable.

Modes, each checked against central differences (float64):
  rev          value_and_grad, or make_vjp swept twice, w.r.t. (x, y); with float32 inputs too
               (every fourth seed) for the dtype contract
  fwd          make_jvp along a random tangent v
  hvp          make_hvp (reverse over reverse) along v
  vjp_of_jvp   grad of the JVP along v (reverse over forward)
  jvp_of_grad  make_jvp of grad (forward over reverse)
rev and fwd are compared with central differences of the NumPy program, the second-order modes
with central differences of gradcy's gradient. Every mode also checks the forward value
against NumPy (VALUE_RTOL), each derivative's type, dtype and shape against its input's, that
the caller's arrays are unchanged, and that gradcy.memory.stats() live_tapes / live_nodes /
saved_bytes are back where they were. A mode that raises one of gradcy's documented errors
(_documented) counts as "raised", never as a pass; any other exception, a wrong number or a
leak is a failure, shrunk to a smaller program (statements and loss terms dropped while it
fails the same way) and printed with its seed. The report counts programs run, refused (some
mode raised a documented error) and wrong (some mode failed), per feature class and in total,
and the refusals by reason (REFUSALS); tests/conftest.py prints that table in CI.

FEATURES switch statement classes (all on by default; each failed on the code of issue #10):
  dup_adv          a write whose advanced index repeats a position (issue #10, item 1)
  view_iop         v = buf[1:]; v += e, and `for row in buf2d: row *= e` (item 2)
  zerod_write      a second write into a 0-d buffer, or a write into a 0-d input (item 12)
  input_view       a view of an input read after a write into that input changed its memory
                   (it sees the new values, as in NumPy)
  stale_view       a view of a buffer read after a write changed it (it sees the new values)
  view_setitem     v[idx] = e through a view of a buffer or input
  alias_iop        a = buf; a += e (or buf += e) while the array has two names
  identity_ops     t = np.squeeze(buf) (also np.real, .real, np.atleast_2d,
                   np.ascontiguousarray), which NumPy answers with buf itself
  overwrite_saved  a write over a buffer region that an operation with x or y read through a
                   view while the buffer held constants only
  computed_view    v = t[...] (t.T, reshape, real, ...) of an array t gradcy computed, then
                   v op= e or v[idx] = e, t maybe used later (issue #10: nested modes must
                   raise where first order does, never return a NumPy-different result)
  int_cast         i = (3 e).astype(int) (np.asarray(.., dtype=int), floor or rint then astype),
                   no value within TIE_GAP of a rounding boundary, used in the loss: a
                   constant (derivative 0) whose values count
  held_output      (mode "held") make_vjp of the program returning an array (the first loss
                   term before its sum, maybe through a user primitive whose rule reads its
                   output), then a write into that output (ans *= 0, ans[...] = 1, through a
                   view of it) before the VJP: the VJP must equal the one of a fresh make_vjp
                   (itself against central differences), or the write raise NumPy's
                   read-only error (the output is held: the documented protection)
  subclass_arg     (mode "subclass") x as np.matrix (2-d x) and as a masked array: refused with
                   the error naming the type; as an ndarray subclass registered through
                   autograd's API (Box.register): the gradient of the plain program
  int_arg          (its own programs and test: tests/fuzz_int_args.py, --int-arg) an integer or
                   boolean array as the differentiated argument, against central differences
                   of the float program; np.reciprocal of it and a Python int refused
The refusals of held and subclass are the documented answer there: they count as passes, and
the report says how many checks each answered so ("expected errors").
Switched off, a feature is not generated, except those in MODE_SKIPS (too common to leave
out), which are generated with their failing modes skipped.

    python tests/fuzz_programs.py --programs 5000 --seed 0            # everything
    python tests/fuzz_programs.py --programs 5000 --only ""           # no known-bug class
    python tests/fuzz_programs.py --programs 2000 --only dup_adv      # one class
    python tests/fuzz_programs.py --programs 1 --seed 123 --print     # one program, verbose
    python tests/fuzz_programs.py --programs 5000 --int-arg           # integer arguments
"""

import argparse
import gc
import math
import re
import sys
import time
import traceback

import numpy as onp

FEATURES = (
    "dup_adv",
    "view_iop",
    "zerod_write",
    "input_view",
    "stale_view",
    "view_setitem",
    "alias_iop",
    "identity_ops",
    "overwrite_saved",
    "computed_view",
    "int_cast",
    "held_output",
    "subclass_arg",
)
# switched off, these are still generated but the listed modes are skipped for programs that
# use them (they are too common to leave out); every other feature switched off is not generated
MODE_SKIPS = {"stale_view": ("fwd",), "overwrite_saved": ("hvp",)}
MODES = ("rev", "fwd", "hvp", "vjp_of_jvp", "jvp_of_grad")
# checks run only for the programs of their feature class (tagged by the generator)
CLASS_MODES = {"held_output": "held", "subclass_arg": "subclass"}
EXTRA_MODES = tuple(CLASS_MODES.values())

FD_STEP = 1e-6  # central differences of the NumPy program (first order)
FD_STEP2 = 1e-5  # central differences of gradcy's gradient (second order)
TOL = 1e-5  # |derivative - differences| <= TOL * (1 + max|differences|)
VALUE_RTOL = 1e-12  # |gradcy value - NumPy value| <= VALUE_RTOL * max(1, |NumPy value|)
TIE_GAP = 1e-3  # no maximum within this of a tie, no mask entry this close to its cut
BOUND = 200.0  # values of every variable stay within this (keeps differences exact)
COUNTERS = ("live_tapes", "live_nodes", "saved_bytes")


def _documented():
    from gradcy import _core

    return (
        (ValueError, "written to after the view was taken"),  # stale view (buffer, input)
        (TypeError, "whose elements repeat (zero strides) or lie"),  # write through a view
        (NotImplementedError, "writing a value traced by an inner differentiation"),
        # NumPy 1.x only: buf[int array] = (view of buf) depends on NumPy's write order
        (NotImplementedError, "so the result depends on its write order"),
        # a write into an array gradcy does not own while NumPy would show it elsewhere
        (ValueError, "whose memory another traced value shares"),
        (ValueError, "that is a view of another array"),
        (ValueError, "assignment destination is read-only"),
        # a write into an array of a registered ndarray subclass (subclass_arg)
        (TypeError, "an ndarray subclass registered for differentiation"),
        (_core.MissingVJPError, ""),
        (_core.MissingJVPError, ""),
    )


# the documented errors by reason (message part -> short name), for the refusal counts
REFUSALS = (
    ("written to after the view was taken", "stale_view"),
    ("that is a view of another array", "view_write"),
    ("whose memory another traced value shares", "shared_memory"),
    ("whose memory another argument shares", "shared_argument"),
    ("whose elements repeat (zero strides) or lie", "unmappable_view"),
    ("writing a value traced by an inner differentiation", "inner_value"),
    ("so the result depends on its write order", "write_order"),
    ("assignment destination is read-only", "read_only"),
    ("an ndarray subclass registered for differentiation", "subclass_write"),
)


def refusal_reason(message):
    """The short name of a documented error's reason (REFUSALS), or its type's name."""
    for part, name in REFUSALS:
        if part in message:
            return name
    return message.split(":", 1)[0][:40]


# =============================================================================
# Programs
# =============================================================================
class Stmt:
    """One statement (maybe several lines) and the tags of what it exercises."""

    __slots__ = ("text", "tags")

    def __init__(self, text, tags=()):
        self.text, self.tags = text, frozenset(tags)


class Program:
    def __init__(self, seed, x, y, stmts, terms):
        self.seed, self.x, self.y = seed, x, y
        self.stmts, self.terms = list(stmts), list(terms)  # terms: Stmt with an expression
        self._fn = None

    def source(self):
        body = [line for s in self.stmts for line in s.text.split("\n")]
        body.append("return " + " + ".join(t.text for t in self.terms))
        return "def prog(np, x, y):\n" + "".join("    " + line + "\n" for line in body)

    def fn(self):
        if self._fn is None:
            ns = {"onp": onp}
            exec(compile(self.source(), f"<fuzz program {self.seed}>", "exec"), ns)
            self._fn = ns["prog"]
        return self._fn

    def tags(self):
        return frozenset().union(*[s.tags for s in self.stmts + self.terms]) | self.extra

    extra = frozenset()  # feature classes of checks beyond the statements (held, subclass)
    held = None  # the held_output check's choices: (through a user primitive,
    # the write), or None

    def out_fn(self):
        """The program returning the first loss term's array (before its sum)."""
        term = self.terms[0].text
        assert term.startswith("np.sum(") and term.endswith(")")
        body = [line for st in self.stmts for line in st.text.split("\n")]
        body.append("return " + term[len("np.sum(") : -1])
        ns = {"onp": onp}
        exec(
            compile(
                "def prog(np, x, y):\n" + "".join("    " + ln + "\n" for ln in body),
                f"<fuzz output {self.seed}>",
                "exec",
            ),
            ns,
        )
        return ns["prog"]

    def replace(self, stmts=None, terms=None):
        p = Program(
            self.seed,
            self.x,
            self.y,
            self.stmts if stmts is None else stmts,
            self.terms if terms is None else terms,
        )
        p.extra, p.held = self.extra, self.held
        return p

    def reproducer(self):
        return (
            f"import numpy as onp\n{self.source()}"
            f"x = {_lit(self.x)}\ny = {_lit(self.y)}\n"
            f"# NumPy: prog(onp, x.copy(), y.copy()); gradcy: "
            f"grad(lambda x, y: prog(gradcy.numpy, x, y), (0, 1))(x, y)"
        )


def _lit(v):
    if isinstance(v, onp.ndarray):
        return f"onp.array({v.tolist()!r})"
    return repr(float(v))


def _fmt(c):
    return repr(round(float(c), 3))


def _copy(v):
    return v.copy() if isinstance(v, onp.ndarray) else v


class _Watch:
    """numpy for the reference run, recording how close each maximum is to a tie and each mask
    entry to its threshold (the program must be smooth within central differences' reach)."""

    def __init__(self):
        self.gap = math.inf

    def __getattr__(self, name):
        return getattr(onp, name)

    def max(self, a, axis=None, keepdims=False):
        a = onp.asarray(a)
        if a.size > 1:
            s = onp.sort(a.reshape(-1) if axis is None else onp.moveaxis(a, axis, -1), axis=-1)
            if s.shape[-1] > 1:
                self.gap = min(self.gap, float(onp.min(s[..., -1] - s[..., -2])))
        return onp.max(a, axis=axis, keepdims=keepdims)

    def greater(self, a, b):
        self.gap = min(self.gap, float(onp.min(onp.abs(onp.asarray(a) - b))))
        return onp.greater(a, b)


def reference(prog, x, y):
    """(NumPy value, smooth) of the program, or raises what NumPy raises."""
    w = _Watch()
    with onp.errstate(all="raise"):
        v = prog.fn()(w, _copy(x), _copy(y))
    v = float(v)
    return v, (w.gap > TIE_GAP and math.isfinite(v) and abs(v) < 1e6)


# =============================================================================
# The generator
# =============================================================================
BUFFER_SHAPES = ((), (5,), (4,), (3, 4), (4, 3), (2, 3), (2, 3, 2), (1, 4))
X_SHAPES = ((), (3,), (4,), (2, 3), (3, 2))
Y_SHAPES = ((), (2,), (3,))
VIEW_OPS = (
    "{}.T",
    "np.transpose({})",
    "np.reshape({}, (-1,))",
    "np.ravel({})",
    "{}.flatten()",
    "np.expand_dims({}, 0)",
    "np.squeeze({})",
    "np.flip({}, 0)",
    "{}[::-1]",
    "np.real({})",
    "{}.real",
    "np.atleast_2d({})",
    "np.swapaxes({}, 0, -1)",
    "np.moveaxis({}, 0, -1)",
    "np.ascontiguousarray({})",
    "np.diagonal({})",
)


class _Reject(Exception):
    """A candidate statement or expression is not kept."""


# what a candidate may raise under NumPy: it is dropped
_INVALID = (
    _Reject,
    ValueError,
    IndexError,
    TypeError,
    FloatingPointError,
    onp.exceptions.AxisError,
)


class Generator:
    """Builds a Program from a seed by trying statements on NumPy (see the module docstring)."""

    def __init__(self, seed, features=FEATURES, n_stmts=None):
        self.rng = onp.random.RandomState(seed)
        self.seed = seed
        self.features = frozenset(features) | frozenset(MODE_SKIPS)  # what may be generated
        r = self.rng
        self.x = self._input(X_SHAPES[r.randint(len(X_SHAPES))])
        self.y = self._input(Y_SHAPES[r.randint(len(Y_SHAPES))])
        self.n_stmts = n_stmts if n_stmts is not None else int(r.randint(3, 11))
        self.stmts = []
        # name -> dict(kind: input | buffer | temp | view (shares a buffer's or input's memory)
        # | alias (is that array); base: that buffer or input; stale: a write changed the
        # view's memory; writes: count; traced: holds values computed from x or y)
        self.vars = {
            n: dict(kind="input", base=None, stale=False, writes=0, traced=True) for n in ("x", "y")
        }
        self.counter = 0
        self.read_pos = {}  # buffer -> bool mask of positions read through views
        self._reads = []  # (name, index) read by the statement being built
        self._reset_env()

    def _input(self, shape):
        v = onp.round(self.rng.uniform(-1.2, 1.2, size=shape), 3)
        if shape == () and self.rng.rand() < 0.5:
            return float(v)
        return onp.asarray(v, dtype=onp.float64)

    def _reset_env(self):
        self.env = {"onp": onp, "np": _Watch(), "x": _copy(self.x), "y": _copy(self.y)}

    def _replay(self):
        self._reset_env()
        for s in self.stmts:
            exec(s.text, self.env)

    # ---- small random pieces ------------------------------------------------------------
    def _pick(self, seq):
        return seq[self.rng.randint(len(seq))]

    def _const(self, lo=0.3, hi=1.5):
        c = self.rng.uniform(lo, hi)
        return _fmt(c if self.rng.rand() < 0.7 else -c)

    def _name(self, prefix):
        self.counter += 1
        return f"{prefix}{self.counter}"

    def _val(self, name):
        return self.env[name]

    def _eval(self, text):
        w = self.env["np"]
        w.gap = math.inf
        with onp.errstate(all="raise"):
            v = eval(text, self.env)
        if w.gap <= TIE_GAP:
            raise _Reject("near tie")
        a = onp.asarray(v)
        if a.dtype == bool or a.size == 0:
            raise _Reject("not a float value")
        if not onp.all(onp.isfinite(a)) or onp.max(onp.abs(a)) > BOUND:
            raise _Reject("too large")
        return v

    def readable(self):
        """Variables a statement may read: every buffer, input and temporary, and views,
        stale ones only when that feature is on (and then rarely)."""
        out = []
        for name, info in self.vars.items():
            if name not in self.env:
                continue
            if info["stale"]:
                cls = "input_view" if self.vars[info["base"]]["kind"] == "input" else "stale_view"
                if cls not in self.features or self.rng.rand() > 0.3:
                    continue
            out.append(name)
        return out

    def _use_tags(self, text):
        """Tags of reading the stale views named in text."""
        tags = set()
        for name, info in self.vars.items():
            if info["stale"] and _mentions(text, name):
                tags.add(
                    "input_view" if self.vars[info["base"]]["kind"] == "input" else "stale_view"
                )
        return tags

    def writable(self):
        return [
            n
            for n, i in self.vars.items()
            if i["kind"] in ("buffer", "input", "alias")
            and isinstance(self.env.get(n), onp.ndarray)
        ]

    # ---- indices ------------------------------------------------------------------------
    def _slice(self, n):
        r = self.rng
        for _ in range(20):
            step = self._pick((None, None, 1, 2, -1, -1, -2))
            start = None if r.rand() < 0.4 else int(r.randint(-n, n))
            stop = None if r.rand() < 0.4 else int(r.randint(-n - 1, n + 1))
            s = slice(start, stop, step)
            if len(range(*s.indices(n))) > 0:
                break
        else:
            s = slice(None)
        text = (
            ("" if s.start is None else str(s.start))
            + ":"
            + ("" if s.stop is None else str(s.stop))
        )
        if s.step is not None:
            text += f":{s.step}"
        return text, s

    def _int(self, n):
        k = int(self.rng.randint(-n, n))
        return str(k), k

    def _adv(self, n, length=None, dup=True):
        r = self.rng
        length = length or int(r.randint(1, 5))
        if dup:
            vals = r.randint(-n, n, size=length)
        else:
            length = min(length, n)
            vals = r.permutation(n)[:length]
            vals = onp.where(r.rand(length) < 0.3, vals - n, vals)
        vals = [int(v) for v in vals]
        if r.rand() < 0.5:
            return repr(vals), vals
        return f"onp.array({vals!r})", onp.array(vals)

    def _mask(self, n):
        m = self.rng.rand(n) < 0.5
        m[self.rng.randint(n)] = True
        vals = [bool(v) for v in m]
        return f"onp.array({vals!r})", onp.array(vals)

    def index(self, shape, target=None, write=False):
        """(text, index, tags) of a random index into an array of `shape`; target names the
        array, for data-dependent masks. Write indices repeat no position unless dup_adv."""
        for _ in range(20):
            got = self._index(shape, target, write)
            if got is None:
                continue
            text, idx, tags = got
            if onp.empty(shape)[idx].size == 0:
                continue
            if write:
                pos = onp.arange(int(onp.prod(shape))).reshape(shape)[idx]
                if onp.unique(pos).size < onp.size(pos):
                    if "dup_adv" not in self.features:
                        continue
                    tags.add("dup_adv")
            return text, idx, tags
        return "...", Ellipsis, {"ellipsis"}

    def _index(self, shape, target, write):
        r = self.rng
        nd = len(shape)
        if nd == 0:
            text = self._pick(("...", "()", "None", "..., None"))
            return text, eval(f"onp.s_[{text}]", {"onp": onp}), {"zero_d"}
        kind = self._pick(
            (
                "basic",
                "basic",
                "basic",
                "ellipsis",
                "none",
                "adv",
                "adv",
                "adv2",
                "mask",
                "mask_full",
                "mask_data",
            )
        )
        tags = {kind}
        parts = []
        if kind in ("basic", "ellipsis", "none"):
            k = int(r.randint(1, nd + 1))
            lead = kind == "ellipsis" and r.rand() < 0.5  # x[..., i] indexes the last dims
            for d in range(nd - k, nd) if lead else range(k):
                if r.rand() < 0.35:
                    parts.append(self._int(shape[d]))
                else:
                    parts.append(self._slice(shape[d]))
                    if (parts[-1][1].step or 1) < 0:
                        tags.add("neg_step")
            if kind == "ellipsis":
                parts.insert(0 if lead else len(parts), ("...", Ellipsis))
            if kind == "none":
                parts.insert(int(r.randint(0, len(parts) + 1)), ("None", None))
        elif kind == "adv":
            d = int(r.randint(nd))
            for i in range(nd):
                if i == d:
                    parts.append(self._adv(shape[i], dup=not write or "dup_adv" in self.features))
                elif r.rand() < 0.5:
                    parts.append(self._slice(shape[i]))
                elif r.rand() < 0.5:
                    parts.append(self._int(shape[i]))
                else:
                    parts.append((":", slice(None)))
            if r.rand() < 0.3:
                parts = parts[: d + 1]
        elif kind == "adv2":  # two index arrays broadcast together
            if nd < 2:
                return None
            length = int(r.randint(1, 4))
            a = self._adv(shape[0], length)
            if nd >= 3 and r.rand() < 0.5:  # separated by a slice: dims go first
                parts = [a, (":", slice(None)), self._adv(shape[2], length)]
            else:
                parts = [a, self._adv(shape[1], 1 if r.rand() < 0.3 else length)]
        elif kind == "mask":
            parts.append(self._mask(shape[0]))
            for i in range(1, nd):
                if r.rand() < 0.5:
                    parts.append(self._slice(shape[i]))
        elif kind == "mask_full":
            m = r.rand(*shape) < 0.5
            m.flat[r.randint(m.size)] = True
            parts.append((f"onp.array({m.tolist()!r})", m))
        else:  # mask_data: np.greater(target, c)
            if target is None:
                return None
            c = _fmt(r.uniform(-0.5, 0.5))
            m = onp.greater(onp.asarray(self._val(target)), float(c))
            if (
                not m.any()
                or onp.min(onp.abs(onp.asarray(self._val(target)) - float(c))) <= TIE_GAP
            ):
                return None
            parts.append((f"np.greater({target}, {c})", m))
        text = ", ".join(p[0] for p in parts) if parts else "()"
        idx = tuple(p[1] for p in parts)
        return text, (idx[0] if len(idx) == 1 else idx), tags

    # ---- expressions ----------------------------------------------------------------------
    def expr(self, depth=2):
        """(text, value) of a random float expression over the readable variables."""
        r = self.rng
        for _ in range(30):
            try:
                if depth <= 0 or r.rand() < 0.25:
                    text = self._leaf()
                else:
                    text = self._compound(depth)
                return text, self._eval(text)
            except _INVALID:
                continue
        text = self._pick([n for n in self.readable()] or ["x"])
        return text, self._eval(text)

    def _leaf(self):
        names = self.readable()
        name = self._pick(names)
        v = self._val(name)
        if isinstance(v, onp.ndarray) and v.ndim and self.rng.rand() < 0.6:
            t, idx, tags = self.index(v.shape, target=name)
            if tags & {"basic", "ellipsis", "none"}:
                self._reads.append((name, idx))
            return f"{name}[{t}]"
        self._reads.append((name, Ellipsis))
        return name

    def _compound(self, depth):
        r = self.rng
        a, av = self.expr(depth - 1)
        shape = onp.shape(av)
        op = self._pick(
            (
                "unary",
                "unary",
                "binary",
                "binary",
                "scale",
                "reduce",
                "reduce",
                "dot",
                "shape",
                "shape",
                "concat",
            )
        )
        if op == "unary":
            f = self._pick(("sin", "tanh", "exp", "cos"))
            if f == "exp" and onp.max(onp.asarray(av)) > 3:
                f = "tanh"
            return f"np.{f}({a})"
        if op == "scale":
            return self._pick(
                (
                    f"{a} * {self._const()}",
                    f"{self._const()} * {a}",
                    f"({a} + {self._const(-1, 1)})",
                    f"-{_paren(a)}",
                )
            )
        if op == "binary":
            b = self.shaped(self._broadcast_variant(shape), depth - 1)
            o = self._pick(("*", "+", "-"))
            return (
                f"{_paren(a)} {o} {_paren(b)}" if r.rand() < 0.7 else f"{_paren(b)} {o} {_paren(a)}"
            )
        if op == "reduce":
            if not shape:
                return f"np.sum({a})"
            f = self._pick(("sum", "mean", "max", "sum"))
            axis = int(r.randint(-len(shape), len(shape)))
            kw = ", keepdims=True" if r.rand() < 0.3 else ""
            if r.rand() < 0.25:
                return f"np.{f}({a})"
            if f != "max" and r.rand() < 0.3:
                return f"{_paren(a)}.{f}(axis={axis}{kw})"
            return f"np.{f}({a}, axis={axis}{kw})"
        if op == "dot":
            if not shape:
                return f"{_paren(a)} * {_paren(self.shaped((), depth - 1))}"
            m = int(r.randint(1, 4))
            bshape = (shape[-1],) if r.rand() < 0.3 else (shape[-1], m)
            b = self.shaped(bshape, depth - 1)
            if len(shape) > 2 or r.rand() < 0.5:
                return f"{_paren(a)} @ {_paren(b)}"
            return f"np.{self._pick(('dot', 'matmul'))}({a}, {b})"
        if op == "shape":
            if not shape:
                return f"np.reshape({a}, (1, 1))"
            f = self._pick(VIEW_OPS + ("reshape",))
            if f == "reshape":
                return f"np.reshape({a}, {_factor(int(onp.prod(shape)), r)})"
            return f.format(_paren(a))
        # concat / stack
        if not shape:
            b = self.shaped((), depth - 1)
            return f"np.stack([{a}, {b}])"
        axis = int(r.randint(len(shape)))
        if r.rand() < 0.5:
            return f"np.stack([{a}, {self.shaped(shape, depth - 1)}], axis={axis})"
        bshape = list(shape)
        bshape[axis] = int(r.randint(1, 3))
        return f"np.concatenate([{a}, {self.shaped(tuple(bshape), depth - 1)}], axis={axis})"

    def _broadcast_variant(self, shape):
        r = self.rng
        if r.rand() < 0.5 or not shape:
            return shape
        s = list(shape[int(r.randint(0, len(shape) + 1)) :])
        for i in range(len(s)):
            if r.rand() < 0.3:
                s[i] = 1
        return tuple(s)

    def shaped(self, shape, depth=1):
        """Text of an expression of exactly `shape`."""
        text, v = self.expr(depth)
        return self.adapt(text, v, shape)

    def adapt(self, text, v, shape):
        vs = onp.shape(v)
        if vs == tuple(shape):
            return text
        size, n = int(onp.prod(shape)), int(onp.size(v))
        if size == n:
            return f"np.reshape({text}, {tuple(shape)!r})"
        if shape == ():
            return f"np.reshape({text}, (-1,))[{int(self.rng.randint(-n, n))}]"
        idx = [int(i) for i in self.rng.randint(0, n, size=size)]
        gathered = f"np.reshape({text}, (-1,))[{idx!r}]"
        return gathered if len(shape) == 1 else f"np.reshape({gathered}, {tuple(shape)!r})"

    # ---- statements ---------------------------------------------------------------------
    # Each returns a list of (text, tags, (what, name, index)) for _commit; what is "buffer" or
    # "temp" (name is assigned), "write" (into the array `name`) or "viewwrite" (through the
    # view `name`), index the written part.
    def statement(self):
        kinds = (
            ["write"] * 8
            + ["temp"] * 4
            + ["buffer"] * 2
            + ["view"] * 2
            + ["overlap"] * 2
            + ["iop_whole"] * 2
        )
        kinds += ["rows"]
        if "view_iop" in self.features:
            kinds += ["view_iop"] * 2
        if "view_setitem" in self.features:
            kinds += ["view_setitem"]
        if "computed_view" in self.features:
            kinds += ["computed_view"] * 6
        n_buffers = sum(1 for i in self.vars.values() if i["kind"] == "buffer")
        kind = "buffer" if n_buffers == 0 and self.rng.rand() < 0.8 else self._pick(kinds)
        return getattr(self, "_s_" + kind)()

    def _s_buffer(self):
        r = self.rng
        name = self._name("b")
        shape = BUFFER_SHAPES[r.randint(len(BUFFER_SHAPES))]
        how = self._pick(("zeros", "zeros", "ones", "full", "like", "array", "eye"))
        if how == "full":
            text = f"np.full({shape!r}, {self._const(-1, 1)})"
        elif how == "like":
            src = self._pick(["x", "y"])
            text = f"np.{self._pick(('zeros_like', 'ones_like'))}({src})"
        elif how == "array":
            text = f"np.array({onp.round(r.uniform(-1, 1, size=shape), 2).tolist()!r})"
        elif how == "eye":
            text = f"np.eye({int(r.randint(2, 5))})"
        else:
            text = f"np.{how}({shape!r})"
        return [(f"{name} = {text}", {"buffer"}, ("buffer", name, None))]

    def _target(self):
        ws = self.writable()
        if not ws:
            raise _Reject("nothing to write")
        return self._pick(ws)

    def _value(self, slot_shape, op):
        """Text of a value to write into a slot (maybe broadcast), bounded for *=."""
        r = self.rng
        if r.rand() < 0.15 and op != "*=":
            return self._const(-1, 1)
        t, v = self.expr(int(r.randint(1, 3)))
        val = self.adapt(t, v, self._broadcast_variant(slot_shape))
        if op == "*=":
            return f"(1.0 + 0.3 * np.tanh({val}))"
        return f"np.tanh({val})" if r.rand() < 0.3 else val

    def _s_write(self):
        target = self._target()
        shape = self._val(target).shape
        idx_text, idx, tags = self.index(shape, target=target, write=True)
        op = self._pick(("=", "=", "+=", "-=", "*="))
        val = self._value(onp.empty(shape)[idx].shape, op)
        if (
            op == "="
            and tags & {"mask", "mask_full", "mask_data"}
            and onp.shares_memory(eval(val, self.env), self._val(target))
        ):
            # NumPy (2.4) does not copy an overlapping value for a boolean-mask write
            # (b[mask] = b[::-1] gives [4, 3, 3, 4] for [1, 2, 3, 4]); not a reference
            raise _Reject("mask write from an overlapping view")
        if op != "=" and tags & {"basic", "ellipsis", "none", "zero_d"}:
            self._reads.append((target, idx))
        return [
            (
                f"{target}[{idx_text}] {op} {val}",
                tags | {"write" + op} | self._use_tags(val),
                ("write", target, idx),
            )
        ]

    def _s_iop_whole(self):
        target = self._target()
        tags = {"iop_whole"}
        if self._aliased(target):
            if "alias_iop" not in self.features:
                raise _Reject("an array with two names")
            tags.add("alias_iop")
        op = self._pick(("+=", "-=", "*="))
        val = self._value(self._val(target).shape, op)
        self._reads.append((target, Ellipsis))
        return [
            (
                f"{target} {op} {val}",
                tags | {"write" + op} | self._use_tags(val),
                ("write", target, Ellipsis),
            )
        ]

    def _s_overlap(self):
        """target[shifted] op= target[shifted the other way]: reads what it overwrites."""
        target = self._target()
        shape = self._val(target).shape
        dims = [d for d, n in enumerate(shape) if n >= 2]
        if not dims:
            raise _Reject("no dimension to shift")
        d = self._pick(dims)
        k = int(self.rng.randint(1, shape[d]))
        pre = ":, " * d
        dst, src = f"{pre}{k}:", f"{pre}:-{k}"
        if self.rng.rand() < 0.5:
            dst, src = src, dst
        u = self.rng.rand()
        if u < 0.2:
            dst, src = f"{pre}::-1", f"{pre}:"  # reverse in place
        elif u < 0.35:  # an advanced destination
            first = k if dst == f"{pre}{k}:" else 0
            dst = f"{pre}{list(range(first, first + shape[d] - k))!r}"
        op = self._pick(("=", "=", "+=", "*="))
        val = f"{target}[{src}]"
        self._reads.append((target, Ellipsis))
        if op == "*=":
            val = f"(1.0 + 0.3 * np.tanh({val}))"
        return [
            (
                f"{target}[{dst}] {op} {val}",
                {"self_overlap", "write" + op},
                ("write", target, eval(f"onp.s_[{dst}]")),
            )
        ]

    def _s_temp(self):
        name = self._name("t")
        t, _ = self.expr(int(self.rng.randint(1, 4)))
        return [(f"{name} = {t}", {"temp"} | self._use_tags(t), ("temp", name, None))]

    def _view_text(self, base):
        """A view of `base`: a basic index of its leading axes, or one of VIEW_OPS."""
        if self.rng.rand() < 0.6:
            shape = self._val(base).shape
            parts = [
                self._slice(n) if self.rng.rand() < 0.7 else self._int(n)
                for n in shape[: int(self.rng.randint(1, len(shape) + 1))]
            ]
            return f"{base}[{', '.join(p[0] for p in parts)}]"
        return self._pick(VIEW_OPS).format(base)

    def _s_view(self):
        ws = [n for n in self.writable() if self._val(n).ndim]
        if not ws:
            raise _Reject("no array to view")
        base = self._pick(ws)
        name = self._name("v")
        text = self._view_text(base)
        return [(f"{name} = {text}", {"view"}, ("temp", name, None))]

    def _views(self):
        return [
            n
            for n, i in self.vars.items()
            if i["kind"] == "view" and not i["stale"] and n in self.env
        ]

    def _s_view_iop(self):
        """v op= e on a view of a buffer or input (NumPy writes it through to the base)."""
        views = self._views()
        if views and self.rng.rand() < 0.6:
            items, name = [], self._pick(views)
            v = self._val(name)
        else:
            items = self._s_view()
            name = items[0][2][1]
            v = eval(items[0][0].split(" = ", 1)[1], self.env)
        if not isinstance(v, onp.ndarray) or not v.flags.writeable or not v.size:
            raise _Reject("not a writable view")
        op = self._pick(("+=", "-=", "*="))
        val = self._value(v.shape, op)
        self._reads.append((name, Ellipsis))
        return items + [
            (
                f"{name} {op} {val}",
                {"view_iop"} | self._use_tags(val),
                ("viewwrite", name, Ellipsis),
            )
        ]

    def _s_computed_view(self):
        """v = t[...] (or t.T, reshape, real, ... of t), then v op= e or v[idx] = e, for t an
        array gradcy computed (not a buffer or input): NumPy changes t too, so a later use of
        t must raise a documented error in every mode, first and second order alike."""
        temps = [
            n
            for n, i in self.vars.items()
            if i["kind"] == "temp" and isinstance(self.env.get(n), onp.ndarray) and self.env[n].ndim
        ]
        if not temps:
            raise _Reject("no computed array")
        base = self._pick(temps)
        name = self._name("c")
        text = self._view_text(base)
        v = eval(text, self.env)
        if not isinstance(v, onp.ndarray) or not v.flags.writeable or not v.size:
            raise _Reject("not a writable view")
        tags = {"computed_view"}
        if v.ndim and self.rng.rand() < 0.4:
            idx_text, idx, itags = self.index(v.shape, write=True)
            val = self._value(onp.empty(v.shape)[idx].shape, "=")
            write = (
                f"{name}[{idx_text}] = {val}",
                tags | itags | self._use_tags(val),
                ("viewwrite", name, idx),
            )
        else:
            op = self._pick(("+=", "-=", "*="))
            val = self._value(v.shape, op)
            write = (
                f"{name} {op} {val}",
                tags | self._use_tags(val),
                ("viewwrite", name, Ellipsis),
            )
        return [(f"{name} = {text}", tags, ("temp", name, None)), write]

    def _s_rows(self):
        """for row in a: row op= e (rows of a 1-d array are scalars: NumPy rebinds them)."""
        target = self._target()
        if self._val(target).ndim == 0:
            raise _Reject("0-d")
        if self._val(target).ndim > 1 and "view_iop" not in self.features:
            raise _Reject("rows are views")
        op = self._pick(("+=", "*="))
        inner = self._pick(("row", "np.sin(row)", "np.tanh(row)", self._const(-1, 1)))
        inner = f"(1.0 + 0.3 * np.tanh({inner}))" if op == "*=" else f"0.5 * {inner}"
        tags = {"rows"} | ({"view_iop"} if self._val(target).ndim > 1 else set())
        self._reads.append((target, Ellipsis))
        return [(f"for row in {target}:\n    row {op} {inner}", tags, ("write", target, Ellipsis))]

    def _s_view_setitem(self):
        views = [
            n
            for n in self._views()
            if isinstance(self._val(n), onp.ndarray)
            and self._val(n).ndim
            and self._val(n).flags.writeable
        ]
        if not views:
            raise _Reject("no view")
        name = self._pick(views)
        shape = self._val(name).shape
        idx_text, idx, tags = self.index(shape, write=True)
        val = self._value(onp.empty(shape)[idx].shape, "=")
        return [
            (
                f"{name}[{idx_text}] = {val}",
                {"view_setitem"} | tags | self._use_tags(val),
                ("viewwrite", name, idx),
            )
        ]

    # ---- bookkeeping ----------------------------------------------------------------------
    def _register(self, name, kind):
        """A new variable: a view of a buffer or input when it shares its memory, an alias
        when it is the same array (t = buf)."""
        v = self.env[name]
        base = None
        if isinstance(v, onp.ndarray):
            for other, info in self.vars.items():
                if (
                    info["kind"] in ("buffer", "input")
                    and isinstance(self.env.get(other), onp.ndarray)
                    and onp.shares_memory(v, self.env[other])
                ):
                    base = other
                    if v is self.env[other]:
                        kind = "alias"
                    break
        if base and kind != "alias":
            kind = "view"
        self.vars[name] = dict(kind=kind, base=base, stale=False, writes=0, traced=False)

    def _traced(self, text):
        """Whether the expression depends on x or y (through any variable)."""
        for n, i in self.vars.items():
            if _mentions(text, n):
                owner = self.vars[i["base"]] if i["base"] else i
                if owner["traced"] or i["traced"]:
                    return True
        return False

    def _root(self, name):
        """The buffer or input an alias names (the name itself otherwise)."""
        info = self.vars[name]
        return info["base"] if info["kind"] == "alias" else name

    def _aliased(self, name):
        root = self._root(name)
        return any(i["kind"] == "alias" and i["base"] == root for i in self.vars.values())

    def _positions(self, arr, base):
        """Flat positions in base (C-contiguous float64) of the elements of its view arr."""
        b = self.env[base]
        off = (arr.__array_interface__["data"][0] - b.__array_interface__["data"][0]) // 8
        pos = onp.arange(b.size, dtype=onp.int64)
        return onp.lib.stride_tricks.as_strided(pos[off:], arr.shape, arr.strides)

    def _commit(self, items):
        """Run the statements on the shadow environment and record them (the caller undoes
        everything when this raises)."""
        for text, tags, (what, name, idx) in items:
            tags = set(tags)
            if what == "viewwrite" and self.vars[name]["base"] is None:
                what = "iop_temp"  # t += e on a temporary: no base to track
            if what in ("write", "viewwrite"):
                base = self._root(name) if what == "write" else self.vars[name]["base"]
                b = self.env[base]
                if not b.flags.c_contiguous:
                    raise _Reject("base not contiguous")
                if what == "write":
                    written = onp.arange(b.size).reshape(b.shape)[idx]
                else:
                    written = self._positions(self.env[name], base)[idx]
                info = self.vars[base]
                info["writes"] += 1
                self._note_reads(self._traced(text.split("\n")[-1].split("= ", 1)[-1]))
                if (
                    info["kind"] == "buffer"
                    and not info["traced"]
                    and self.read_pos.get(base) is not None
                    and self.read_pos[base][onp.asarray(written).reshape(-1)].any()
                ):
                    tags.add("overwrite_saved")
                if self._traced(text.split("\n")[-1].split("= ", 1)[-1]):
                    info["traced"] = True
                if b.ndim == 0 and (info["writes"] > 1 or info["kind"] == "input"):
                    if "zerod_write" not in self.features:
                        raise _Reject("second write into a 0-d buffer")
                    tags.add("zerod_write")
                if info["kind"] == "input":
                    tags.add("input_write")
            w = self.env["np"]
            w.gap = math.inf
            with onp.errstate(all="raise"):
                exec(text, self.env)
            self.env.pop("row", None)
            if w.gap <= TIE_GAP:
                raise _Reject("near tie")
            if what in ("buffer", "temp"):
                rhs = text.split(" = ", 1)[1]
                same = any(self.env[name] is self.env.get(n) for n in self.vars)
                self._register(name, what)
                self.vars[name]["traced"] = what == "temp" and self._traced(rhs)
                if same and not rhs.isidentifier():
                    # np.squeeze, np.real, ... which NumPy answers with the array itself
                    if "identity_ops" not in self.features:
                        raise _Reject("an op returning its argument itself")
                    tags.add("identity_ops")
            elif what != "iop_temp":  # views whose memory changed go stale
                written = onp.asarray(written).reshape(-1)
                for vname, vinfo in self.vars.items():
                    if (
                        vinfo["kind"] == "view"
                        and vinfo["base"] == base
                        and vname != name
                        and onp.intersect1d(self._positions(self.env[vname], base), written).size
                    ):
                        vinfo["stale"] = True
            self._note_reads(self._traced(text.split("\n")[-1].split("= ", 1)[-1]))
            self.stmts.append(Stmt(text, tags))
        for name in self.vars:
            a = onp.asarray(self.env[name])
            if not onp.all(onp.isfinite(a)) or (a.size and onp.max(onp.abs(a)) > BOUND):
                raise _Reject("values too large")

    def _note_reads(self, traced):
        """Positions of buffers read through views by a statement computing with x or y (an
        operation of an outer differentiation may have saved the view)."""
        reads, self._reads = self._reads, []
        for name, idx in reads if traced else ():
            info = self.vars.get(name)
            if info is None or not isinstance(self.env.get(name), onp.ndarray):
                continue
            base = self._root(name) if info["kind"] != "view" else info["base"]
            if self.vars[base]["kind"] != "buffer" or self.vars[base]["traced"]:
                continue  # (a buffer holding traced values is written functionally
                # under nested differentiation: nothing saved changes)
            b = self.env[base]
            if info["kind"] == "view":
                pos = self._positions(self.env[name], base)
            else:
                pos = onp.arange(b.size).reshape(b.shape)
            mask = self.read_pos.setdefault(base, onp.zeros(b.size, bool))
            mask[onp.asarray(pos[idx]).reshape(-1)] = True

    def build(self):
        made = 0
        for _ in range(self.n_stmts * 10):
            if made >= self.n_stmts:
                break
            n_stmts, saved = len(self.stmts), {n: dict(i) for n, i in self.vars.items()}
            counter = self.counter
            read_pos = {n: m.copy() for n, m in self.read_pos.items()}
            self._reads = []
            try:
                self._commit(self.statement())
                made += 1
            except _INVALID:
                del self.stmts[n_stmts:]
                self.vars, self.counter, self.read_pos = saved, counter, read_pos
                self._replay()
        terms = self.loss_terms()
        # the later classes draw from a generator of their own, so that the programs of the
        # classes before them stay as they were
        self.rng = onp.random.RandomState((self.seed * 7919 + 13) % 2**32)
        extra = set()
        if "int_cast" in self.features and self.rng.rand() < 0.25:
            for _ in range(10):
                n_stmts = len(self.stmts)
                try:
                    term = self._int_cast()
                except _INVALID + (AttributeError,):  # (a float has no astype)
                    del self.stmts[n_stmts:]
                    self._replay()
                    continue
                terms.append(term)
                break
        prog = Program(self.seed, self.x, self.y, self.stmts, terms)
        if "held_output" in self.features and self.rng.rand() < 0.2:
            extra.add("held_output")
            prog.held = (
                bool(self.rng.rand() < 0.4),
                self._pick(
                    (
                        "ans *= 0.0",
                        "ans[...] = 1.0",
                        "ans += 2.0",
                        "v = ans.reshape(-1)\nv[0] = 7.0",
                    )
                ),
            )
        if (
            "subclass_arg" in self.features
            and self.rng.rand() < 0.15
            and isinstance(self.x, onp.ndarray)
            and self.x.ndim
        ):
            extra.add("subclass_arg")
        prog.extra = frozenset(extra)
        return prog

    def _int_cast(self):
        """A statement i = <cast of 3 e to an integer dtype>, away from every rounding
        boundary, and a loss term that reads i's values: sum(i * w) * sum(sin(x))."""
        text, v = self.expr(int(self.rng.randint(1, 3)))
        v = 3.0 * onp.asarray(v, dtype=float)
        how = self._pick(
            (
                "({e}).astype(int)",
                "np.asarray({e}, dtype=int)",
                "np.floor({e}).astype(np.int64)",
                "np.rint({e}).astype(int)",
            )
        )
        edge = v - onp.floor(v) - 0.5 if "rint" in how else v - onp.round(v)
        if onp.min(onp.abs(edge)) <= TIE_GAP:
            raise _Reject("near a rounding boundary")
        name = self._name("i")
        stmt = f"{name} = " + how.format(e=f"3.0 * {_paren(text)}")
        self._reads = []
        self._commit([(stmt, {"int_cast"}, ("temp", name, None))])
        self.vars[name]["kind"] = "int"  # not written, viewed or read by later code
        shape = onp.shape(self.env[name])
        n = int(onp.prod(shape))
        w = f"onp.linspace({self._const(-1.5, -0.2)}, {self._const(0.2, 1.5)}, {n})"
        if shape:
            w = f"{w}.reshape({shape!r})"
        return Stmt(f"np.sum({name} * {w}) * np.sum(np.sin(x))", {"int_cast"})

    def loss_terms(self):
        r = self.rng
        terms = []
        for name, info in self.vars.items():
            stale_cls = None
            if info["stale"]:
                stale_cls = (
                    "input_view" if self.vars[info["base"]]["kind"] == "input" else "stale_view"
                )
                if stale_cls not in self.features or r.rand() < 0.5:
                    continue
            if info["kind"] in ("temp", "view") and r.rand() < 0.3:
                continue
            if info["kind"] == "input" and not info["writes"] and r.rand() < 0.7:
                continue
            shape = onp.shape(self.env[name])
            n = int(onp.prod(shape))
            w = f"onp.linspace({_fmt(r.uniform(-1.5, 0))}, {_fmt(r.uniform(0.2, 1.5))}, {n})"
            if shape:
                w = f"{w}.reshape({shape!r})"
            form = self._pick(
                ("np.sum({v} * {w})", "np.sum(np.sin({v}) * {w})", "np.sum(np.tanh({v}) * {w})")
            )
            terms.append(Stmt(form.format(v=name, w=w), {stale_cls} if stale_cls else ()))
        if not terms:
            terms.append(Stmt("np.sum(np.sin(x) * 0.7)"))
        return terms


def _mentions(text, name):
    return re.search(r"\b" + re.escape(name) + r"\b", text) is not None


def _paren(t):
    return (
        t
        if t.replace("_", "").replace(".", "").isalnum()
        or (t.endswith(")") and t.startswith("np.") and _balanced_call(t))
        else f"({t})"
    )


def _balanced_call(t):
    depth = 0
    for i, ch in enumerate(t):
        if ch in "([":
            depth += 1
        elif ch in ")]":
            depth -= 1
            if depth == 0 and i != len(t) - 1:
                return False
    return True


def _factor(n, r):
    """A random shape with n elements (maybe with -1)."""
    divs = [d for d in range(1, n + 1) if n % d == 0]
    a = divs[r.randint(len(divs))]
    shape = (a, n // a) if r.rand() < 0.7 else (n,)
    if r.rand() < 0.3 and len(shape) == 2:
        shape = (shape[0], -1)
    return shape


def generate(seed, features=FEATURES):
    """The program of `seed` (NumPy-valid, smooth at its inputs)."""
    for attempt in range(20):
        prog = Generator(seed * 1000 + attempt, features).build()
        prog.seed = seed
        try:
            _, smooth = reference(prog, prog.x, prog.y)
        except Exception:
            continue
        if smooth:
            return prog
    raise RuntimeError(f"fuzz generator: no valid program for seed {seed}")


# =============================================================================
# Running a program three ways
# =============================================================================
class Failure(Exception):
    """A mode's wrong result: kind is 'value', 'grad', 'type', 'leak', 'resweep',
    'input_modified', 'error:<ExceptionType>' (gradcy raised it) or 'reference' (the NumPy
    program failed near the inputs: a fault of the fuzzer)."""

    def __init__(self, kind, detail):
        super().__init__(f"{kind}: {detail}")
        self.kind, self.detail = kind, detail


def _array(v):
    return onp.asarray(v, dtype=onp.float64)


class RegisteredArray(onp.ndarray):
    """An ndarray subclass registered through autograd's API (the subclass_arg class)."""


def _user_prims():
    """exp as a user's primitive whose rule reads its output (the held_output class)."""
    from gradcy.extend import Box, defvjp, primitive

    Box.register(RegisteredArray)
    user_exp = primitive(lambda a: onp.exp(a))
    defvjp(user_exp, lambda ans, a: lambda g: g * ans)
    return user_exp


def _user_exp(a):
    return _prims()(a)


def _prims():
    global _USER_EXP
    if _USER_EXP is None:
        _USER_EXP = _user_prims()
    return _USER_EXP


_USER_EXP = None


def _close(got, want, tol):
    got, want = _array(got), _array(want)
    if got.shape != want.shape:
        return False
    return float(onp.max(onp.abs(got - want), initial=0.0)) <= tol * (
        1.0 + float(onp.max(onp.abs(want), initial=0.0))
    )


def _axpy(a, v, x):
    """x + a v, of x's type (a 0-d array stays one: NumPy programs may write into it)."""
    out = _array(x) + a * _array(v)
    return onp.asarray(out) if isinstance(x, onp.ndarray) else float(out)


class Checker:
    """The reference numbers of one program (NumPy values, central differences), computed on
    demand, and the check of each mode."""

    def __init__(self, prog):
        import gradcy.numpy as gnp

        self.prog, self.gnp = prog, gnp
        self.x, self.y = prog.x, prog.y
        rs = onp.random.RandomState(prog.seed + 7)  # the tangent for fwd and second order
        self.v = tuple(
            onp.asarray(rs.randn(*a.shape)) if isinstance(a, onp.ndarray) else float(rs.randn())
            for a in (self.x, self.y)
        )
        self.value, self.smooth = reference(prog, self.x, self.y)
        self._fd = self._fd_dir = self._fd2 = None

    # ---- the program under NumPy and gradcy -----------------------------------------------
    def numpy_f(self, x, y):
        try:
            return float(self.prog.fn()(onp, _copy(x), _copy(y)))
        except Exception as e:  # the fuzzer's own fault, not gradcy's
            raise Failure("reference", f"NumPy raised {e!r} near the inputs") from e

    def gradcy_f(self, x, y):
        return self.prog.fn()(self.gnp, x, y)

    def _central(self, f, h, vx, vy):
        """(f(x + h vx, y + h vy) - f(x - h vx, y - h vy)) / 2h."""
        plus = f(_axpy(h, vx, self.x), _axpy(h, vy, self.y))
        minus = f(_axpy(-h, vx, self.x), _axpy(-h, vy, self.y))
        if isinstance(plus, tuple):
            return tuple((_array(p) - _array(m)) / (2 * h) for p, m in zip(plus, minus))
        return (plus - minus) / (2 * h)

    def fd_grad(self):
        """Central differences of the NumPy program, element by element of x and y."""
        if self._fd is None:
            self._fd = self._central_grad(self.numpy_f)
        return self._fd

    def fd_dir(self):
        """Central differences of the NumPy program along v."""
        if self._fd_dir is None:
            self._fd_dir = self._central(self.numpy_f, FD_STEP, *self.v)
        return self._fd_dir

    def fd_hvp(self):
        """Central differences of gradcy's gradient along v (first order is checked in rev).
        Called after a second-order mode returned: when the gradient raises a documented error
        instead, the mode returned what nothing checks (issue #10: a nested mode raises where
        first order does, or agrees with NumPy), a failure."""
        if self._fd2 is None:
            from gradcy import grad

            try:
                self._fd2 = self._central(grad(self.gradcy_f, (0, 1)), FD_STEP2, *self.v)
            except Exception as e:  # (any exception: classified below)
                if any(isinstance(e, t) and m in str(e) for t, m in _documented()):
                    raise Failure(
                        "nested_returned",
                        f"second order returned where the "
                        f"gradient raises {str(e).splitlines()[0][:200]}",
                    ) from None
                raise
        return self._fd2

    # ---- checks ---------------------------------------------------------------------------
    def _value(self, got):
        if abs(float(got) - self.value) > VALUE_RTOL * max(1.0, abs(self.value)):
            raise Failure("value", f"gradcy {float(got)!r}, NumPy {self.value!r}")

    def _types(self, gs, inputs, strict=True):
        """Each derivative has its input's type, dtype and shape; second order (strict=False)
        only its dtype and shape (make_jvp of grad answers 0-d arrays with NumPy scalars and
        an unused float input with a 0-d array)."""
        for name, g, a in zip("xy", gs, inputs):
            want = f"{type(a).__name__} {onp.result_type(a)} {onp.shape(a)}"
            got = f"{type(g).__name__} {onp.result_type(g)} {onp.shape(g)}"
            if strict:
                ok = type(g) is type(a) and (
                    not isinstance(a, onp.ndarray) or (g.dtype == a.dtype and g.shape == a.shape)
                )
            else:
                ok = onp.result_type(g) == onp.result_type(a) and onp.shape(g) == onp.shape(a)
            if not ok:
                raise Failure("type", f"d/d{name}: {got}; input {want}")

    def _derivs(self, got, want, what):
        for name, g, w in zip("xy", got, want):
            if not _close(g, w, TOL):
                raise Failure(
                    "grad",
                    f"{what} d/d{name}: gradcy {_array(g).tolist()}, "
                    f"central differences {_array(w).round(8).tolist()}",
                )

    def mode_rev(self):
        from gradcy import grad, make_vjp, value_and_grad

        x, y = _copy(self.x), _copy(self.y)
        if self.prog.seed % 2 == 0:
            val, gs = value_and_grad(self.gradcy_f, (0, 1))(x, y)
        else:  # two sweeps of one tape give the same gradient
            vjp, val = make_vjp(self.gradcy_f, (0, 1))(x, y)
            try:
                gs = vjp(onp.float64(1.0))
                gs2 = vjp(onp.float64(1.0))
            finally:
                vjp.release()
            for g1, g2 in zip(gs, gs2):
                if not onp.array_equal(g1, g2):
                    raise Failure("resweep", f"first sweep {g1}, second {g2}")
        for a, b in ((x, self.x), (y, self.y)):
            if not onp.array_equal(a, b):
                raise Failure("input_modified", f"input changed to {a}")
        self._value(val)
        self._types(gs, (self.x, self.y))
        self._derivs(gs, self.fd_grad(), "gradient")
        if self.prog.seed % 4 == 1:  # float32 in, float32 out
            x32, y32 = (
                a.astype(onp.float32) if isinstance(a, onp.ndarray) else a for a in (self.x, self.y)
            )
            self._types(grad(self.gradcy_f, (0, 1))(x32, y32), (x32, y32))

    def mode_fwd(self):
        from gradcy import make_jvp

        val, jv = make_jvp(self.gradcy_f, (0, 1))(_copy(self.x), _copy(self.y))(self.v)
        self._value(val)
        if not _close(jv, self.fd_dir(), TOL):
            raise Failure(
                "grad", f"JVP: gradcy {float(jv)!r}, central differences {self.fd_dir()!r}"
            )

    def mode_hvp(self):
        from gradcy import make_hvp

        hvp, _ = make_hvp(self.gradcy_f, (0, 1))(_copy(self.x), _copy(self.y))
        try:
            hv = hvp(self.v)
        finally:
            hvp.release()
        self._types(hv, (self.x, self.y), strict=False)
        self._derivs(hv, self.fd_hvp(), "Hessian-vector product")

    def mode_vjp_of_jvp(self):
        from gradcy import grad, make_jvp

        def jvp(x, y):
            return make_jvp(self.gradcy_f, (0, 1))(x, y)(self.v)[1]

        hv = grad(jvp, (0, 1))(_copy(self.x), _copy(self.y))
        self._types(hv, (self.x, self.y), strict=False)
        self._derivs(hv, self.fd_hvp(), "VJP of the JVP")

    def mode_jvp_of_grad(self):
        from gradcy import grad, make_jvp

        _, hv = make_jvp(grad(self.gradcy_f, (0, 1)), (0, 1))(_copy(self.x), _copy(self.y))(self.v)
        self._types(hv, (self.x, self.y), strict=False)
        self._derivs(hv, self.fd_hvp(), "JVP of the gradient")

    # ---- the checks of the later classes (CLASS_MODES): their documented errors are passes,
    # noted in self.expected
    expected = None

    def _expect(self, what):
        self.expected = (self.expected or ()) + (what,)

    def mode_held(self):
        """make_vjp of the program's output array, a write into that output, then the VJP."""
        from gradcy import make_vjp

        through_user, write = self.prog.held
        out = self.prog.out_fn()

        def f(x, y):
            a = out(self.gnp, x, y)
            return _user_exp(a) if through_user else a

        def numpy_out(x, y):
            a = _array(out(onp, _copy(x), _copy(y)))
            return onp.exp(a) if through_user else a

        vjp, ans = make_vjp(f, (0, 1))(_copy(self.x), _copy(self.y))
        try:
            g = onp.random.RandomState(self.prog.seed + 11).uniform(-1, 1, onp.shape(ans))
            g = g if onp.ndim(ans) else float(g)
            fresh, _ = make_vjp(f, (0, 1))(_copy(self.x), _copy(self.y))
            try:
                want = fresh(g)
            finally:
                fresh.release()
            fd = self._central_grad(lambda x, y: float(onp.sum(numpy_out(x, y) * g)))
            self._derivs(want, fd, "VJP of the output")
            try:
                exec(write, {"ans": ans})
            except ValueError as e:
                if "read-only" not in str(e):
                    raise
                self._expect("held output read-only")
            except TypeError:  # a NumPy scalar output: nothing to write into
                pass
            got = vjp(g)
        finally:
            vjp.release()
        self._types(got, (self.x, self.y))
        self._derivs(got, want, "VJP after a write into its output")

    def _central_grad(self, f):
        """Central differences of f (of x and y, like the program), element by element."""
        zx, zy = onp.zeros(onp.shape(self.x)), onp.zeros(onp.shape(self.y))
        out = []
        for which, z in ((0, zx), (1, zy)):
            g = onp.zeros(z.shape)
            for i in range(g.size):
                e = onp.zeros(g.size)
                e[i] = 1.0
                e = e.reshape(g.shape)
                g.flat[i] = self._central(f, FD_STEP, *((e, zy) if which == 0 else (zx, e)))
            out.append(g)
        return tuple(out)

    def mode_subclass(self):
        """x as np.matrix and as a masked array: refused naming the type; as a subclass
        registered through autograd's API: the plain program's gradient."""
        from gradcy import grad

        _prims()  # (registers RegisteredArray)
        refused = [("numpy.ma.MaskedArray", onp.ma.array(self.x, mask=False))]
        if self.x.ndim == 2:
            refused.append(("numpy.matrix", onp.asmatrix(self.x)))
        for name, arg in refused:
            try:
                grad(self.gradcy_f, (0, 1))(arg, _copy(self.y))
            except TypeError as e:
                # (NumPy 1.x names MaskedArray's module numpy.ma.core)
                if f"argument 0 is a {name}" not in str(e).replace("numpy.ma.core.", "numpy.ma."):
                    raise
                self._expect(f"{name} refused")
            else:
                raise Failure("subclass", f"a {name} argument was differentiated")
        try:
            got = grad(self.gradcy_f, (0, 1))(_copy(self.x).view(RegisteredArray), _copy(self.y))
        except TypeError as e:  # a write into an array of the subclass: refused
            if "an ndarray subclass registered for differentiation" not in str(e):
                raise
            self._expect("write into a registered subclass refused")
            return
        self._derivs(got, self.fd_grad(), "gradient of a registered subclass argument")

    def run(self, mode):
        """('pass' | 'raised' | 'fail', kind, detail) of one mode, counters included."""
        before = _counters()
        try:
            getattr(self, "mode_" + mode)()
            status, kind, detail = "pass", "", ""
        except Failure as e:
            status, kind, detail = "fail", e.kind, e.detail
        except Exception as e:  # classified below
            documented = any(isinstance(e, t) and m in str(e) for t, m in _documented())
            if documented:
                status, kind, detail = "raised", type(e).__name__, str(e).split("\n")[0]
            else:
                status, kind = "fail", "error:" + type(e).__name__
                detail = f"{e}\n" + "".join(traceback.format_exception(e)[-6:])
            del e
        after = _counters()
        if after != before:
            gc.collect()
            after = _counters()
        if after != before and status != "fail":
            status, kind = "fail", "leak"
            detail = f"{dict(zip(COUNTERS, before))} -> {dict(zip(COUNTERS, after))}"
        return status, kind, detail


def _counters():
    from gradcy import memory

    s = memory.stats()
    return tuple(s[k] for k in COUNTERS)


# =============================================================================
# Shrinking and the summary
# =============================================================================
def shrink(prog, mode, kind, budget=300):
    """A smaller program failing `mode` the same way: statements and loss terms are dropped
    while it still does (and stays valid, smooth NumPy)."""

    def fails(p):
        try:
            c = Checker(p)
        except Exception:
            return False
        return c.smooth and c.run(mode)[:2] == ("fail", kind)

    changed = True
    while changed and budget > 0:
        changed = False
        for field in ("terms", "stmts"):
            items = getattr(prog, field)
            i = len(items) - 1
            while i >= 0 and budget > 0:
                if field == "terms" and len(items) == 1:
                    break
                trial = prog.replace(**{field: items[:i] + items[i + 1 :]})
                budget -= 1
                if fails(trial):
                    prog, items, changed = trial, items[:i] + items[i + 1 :], True
                i -= 1
    return prog


def feature_class(prog):
    """The switchable features of a (shrunk) program, or 'other'."""
    tags = prog.tags() & set(FEATURES)
    return ",".join(sorted(tags)) if tags else "other"


class Summary:
    def __init__(self):
        self.programs = 0
        self.counts = {
            m: {"pass": 0, "fail": 0, "raised": 0, "skipped": 0} for m in MODES + EXTRA_MODES
        }
        self.expected = {}  # documented errors that answered a later class's check
        self.raised = {}  # (mode, message head) -> count
        self.failures = []  # (seed, mode, kind, detail, program)
        self.skipped = 0  # programs not smooth at their inputs (none expected)
        # per feature class (each FEATURES tag a program has, "other" for none): programs run,
        # refused (some mode raised a documented error), wrong (some mode failed)
        self.classes = {}
        self.reasons = {}  # refusal reason (REFUSALS) -> programs refused for it
        self.refused = []  # (seed, feature classes, reason) of the programs refused

    def add(self, other):
        self.programs += other.programs
        self.skipped += other.skipped
        for m in MODES + EXTRA_MODES:
            for k in self.counts[m]:
                self.counts[m][k] += other.counts[m][k]
        for k, v in other.expected.items():
            self.expected[k] = self.expected.get(k, 0) + v
        for k, v in other.raised.items():
            self.raised[k] = self.raised.get(k, 0) + v
        self.failures += other.failures
        for k, v in other.classes.items():
            mine = self.classes.setdefault(k, [0, 0, 0])
            for i in range(3):
                mine[i] += v[i]
        for k, v in other.reasons.items():
            self.reasons[k] = self.reasons.get(k, 0) + v
        self.refused += other.refused

    def count_expected(self, prog, checker):
        for what in checker.expected or ():
            self.expected[what] = self.expected.get(what, 0) + 1
        checker.expected = None

    def add_program(self, prog, raised, failed):
        """Count one program run in every mode: by its feature classes, refused when some mode
        raised (raised: the first such message), wrong when some mode failed."""
        for cls in sorted(prog.tags() & set(FEATURES)) or ["other"]:
            c = self.classes.setdefault(cls, [0, 0, 0])
            c[0] += 1
            c[1] += raised is not None
            c[2] += failed
        if raised is not None:
            reason = refusal_reason(raised)
            self.reasons[reason] = self.reasons.get(reason, 0) + 1
            self.refused.append((prog.seed, prog.tags() & set(FEATURES), reason))

    def refused_outside(self, classes, reasons=()):
        """Seeds of the refused programs that have none of the feature `classes`, refused for
        a reason not in `reasons`."""
        return [
            seed
            for seed, tags, reason in self.refused
            if not tags & set(classes) and reason not in reasons
        ]

    def counts_table(self):
        lines = [
            f"fuzz: {self.programs} programs run ({self.skipped} skipped as not smooth)",
            f"  {'mode':<12} {'pass':>6} {'fail':>6} {'raised':>7} {'skipped':>8}",
        ]
        for m in MODES + EXTRA_MODES:
            c = self.counts[m]
            if sum(c.values()):
                lines.append(
                    f"  {m:<12} {c['pass']:>6} {c['fail']:>6} {c['raised']:>7} {c['skipped']:>8}"
                )
        run = self.programs - self.skipped
        refused = len(self.refused)
        lines.append(
            f"  programs: {run} run, {refused} refused "
            f"({100.0 * refused / max(run, 1):.1f}%), "
            f"{len({f[0] for f in self.failures})} wrong"
        )
        if self.classes:
            lines.append(f"  {'class':<16} {'run':>6} {'refused':>8} {'wrong':>6}")
            for cls, (n, r, w) in sorted(self.classes.items()):
                lines.append(f"  {cls:<16} {n:>6} {r:>8} {w:>6}")
        if self.expected:
            lines.append(
                "  expected errors (passes of held / subclass): "
                + ", ".join(f"{k} {v}" for k, v in sorted(self.expected.items()))
            )
        if self.reasons:
            lines.append(
                "  refused by reason: "
                + ", ".join(
                    f"{k} {v}" for k, v in sorted(self.reasons.items(), key=lambda kv: -kv[1])
                )
            )
        return lines

    def report(self, shrink_failures=True, show=3):
        """The counts, the documented errors raised, and each failure class (feature tags,
        mode, kind) with its seeds and its smallest shrunk programs."""
        lines = self.counts_table()
        if self.raised:
            lines.append("  raised (documented errors):")
            for (m, msg), n in sorted(self.raised.items(), key=lambda kv: -kv[1])[:8]:
                lines.append(f"    {n:>5} x {m}: {msg[:110]}")
        groups = {}
        for seed, mode, kind, detail, prog in self.failures:
            small = shrink(prog, mode, kind) if shrink_failures else prog
            key = (feature_class(small), mode, kind)
            groups.setdefault(key, []).append((seed, detail, small))
        for (cls, mode, kind), items in sorted(groups.items()):
            seeds = sorted(s for s, _, _ in items)
            lines.append(
                f"  FAIL [{cls}] {mode} {kind}: {len(items)} program(s), seeds "
                f"{', '.join(map(str, seeds[:20]))}{' ...' if len(seeds) > 20 else ''}"
            )
            for seed, detail, small in sorted(items, key=lambda it: len(it[2].source()))[:show]:
                lines.append(f"    seed {seed}: {detail.splitlines()[0][:300]}")
                lines += ["      " + ln for ln in small.source().splitlines()]
                lines.append(f"      # x = {_lit(small.x)}, y = {_lit(small.y)}")
        return "\n".join(lines)


def run_seeds(seeds, features=FEATURES, modes=MODES):
    """Generate and check the program of each seed in every mode; returns a Summary."""
    summary = Summary()
    for seed in seeds:
        prog = generate(seed, features)
        checker = Checker(prog)
        summary.programs += 1
        if not checker.smooth:
            summary.skipped += 1
            continue
        skip = {
            m for f, ms in MODE_SKIPS.items() if f not in features and f in prog.tags() for m in ms
        }
        raised, failed = None, False
        for mode in modes:
            if mode in skip:
                summary.counts[mode]["skipped"] += 1
                continue
            status, kind, detail = checker.run(mode)
            summary.counts[mode][status] += 1
            summary.count_expected(prog, checker)
            if status == "raised":
                key = (mode, detail)
                summary.raised[key] = summary.raised.get(key, 0) + 1
                raised = detail if raised is None else raised
            elif status == "fail":
                summary.failures.append((seed, mode, kind, detail, prog))
                failed = True
        for cls, mode in CLASS_MODES.items():
            if cls not in prog.tags():
                continue
            status, kind, detail = checker.run(mode)
            summary.counts[mode][status] += 1
            summary.count_expected(prog, checker)
            if status == "raised":
                key = (mode, detail)
                summary.raised[key] = summary.raised.get(key, 0) + 1
                raised = detail if raised is None else raised
            elif status == "fail":
                summary.failures.append((seed, mode, kind, detail, prog))
                failed = True
        summary.add_program(prog, raised, failed)
    return summary


# totals of every run_seeds call in this process (tests/conftest.py prints them)
SESSION = Summary()


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--programs", type=int, default=200)
    p.add_argument("--seed", type=int, default=0, help="first seed (one program per seed)")
    p.add_argument("--without", default="", help="comma-separated FEATURES to leave out")
    p.add_argument("--only", default=None, help="comma-separated FEATURES to keep (no others)")
    p.add_argument("--modes", default=",".join(MODES))
    p.add_argument("--show", type=int, default=3, help="minimal programs printed per class")
    p.add_argument("--no-shrink", action="store_true")
    p.add_argument("--print", action="store_true", help="print each program and its results")
    p.add_argument(
        "--int-arg", action="store_true", help="the int_arg class (integer arguments) instead"
    )
    a = p.parse_args(argv)
    if a.int_arg:
        t0 = time.time()
        import fuzz_int_args

        result = fuzz_int_args.run_seeds(range(a.seed, a.seed + a.programs))
        print(f"int_arg seeds {a.seed}..{a.seed + a.programs - 1}, {time.time() - t0:.1f} s")
        print(f"passed by dtype {result['pass']}, raised {result['raised']}")
        print("\n\n".join(result["failures"][: a.show]) or "no failures")
        return 1 if result["failures"] else 0
    without = {f for f in a.without.split(",") if f}
    if a.only is not None:
        without |= set(FEATURES) - {f for f in a.only.split(",") if f}
    unknown = without - set(FEATURES)
    if unknown:
        p.error(f"unknown features {sorted(unknown)}; choose from {FEATURES}")
    features = tuple(f for f in FEATURES if f not in without)
    modes = tuple(m for m in a.modes.split(",") if m)
    t0 = time.time()
    total = Summary()
    for seed in range(a.seed, a.seed + a.programs):
        s = run_seeds([seed], features, modes)
        if a.print:
            prog = generate(seed, features)
            print(f"# seed {seed}\n{prog.reproducer()}")
            for m in modes:
                print(f"#   {m}: {Checker(prog).run(m)}")
        total.add(s)
    print(
        f"seeds {a.seed}..{a.seed + a.programs - 1}, features: {', '.join(features) or '-'}, "
        f"{time.time() - t0:.1f} s"
    )
    print(total.report(shrink_failures=not a.no_shrink, show=a.show))
    return 1 if total.failures else 0


if __name__ == "__main__":
    sys.exit(main())
