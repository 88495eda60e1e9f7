"""Calls every Python-visible callable of gradcy._core and gradcy._core_tests, and every
constructible class of the engine's compiled parts (gradcy/_*.pyx: CLASSES), with hostile
arguments (released tapes, detached Boxes, indices -1 and huge, None, wrong types, objects
whose __index__ or __del__ release a tape) and checks that each call returns or raises an
ordinary exception: never a crash of the interpreter, never a SystemError (a C-API misuse).

    python tests/hostile_calls.py GROUP [SEED] [--trace]

GROUP is one of GROUPS below; --trace writes each call to stderr before making it (the last
line names the call that crashed). Prints one line, "GROUP calls=N errors=M stats={...}", and
exits 0 when no call crashed or raised SystemError and the engine's counters came back to
zero once every tape of the pool was released; tests/test_core_safety.py runs each group in
a subprocess of its own (a crash kills only that process; hostile calls change module state).
"""

import gc
import inspect
import json
import random
import sys

import numpy as onp
from numpy.lib.stride_tricks import as_strided

import gradcy.numpy as gnp  # noqa: F401  (registers the Box operators the methods call)
from gradcy import _core, _core_tests
from gradcy._box import _TypeMappings
from gradcy._core import ArrayMeta, Box, OwnedBuffer, Primitive, SparseCotangent, Tape
from gradcy._recompute import Recomputed
from gradcy._rules import VJP, ArgnumVJP, ElementwiseRule, JointVJP

GROUPS = ("core_functions", "core_tests_functions", "Tape", "Box", "Primitive", "others", "rules")
# the classes each group constructs and calls; tests/test_core_safety.py checks that every class
# a compiled part (gradcy/_*.pyx) defines, but its exceptions and enums, is here
CLASSES = {
    "Tape": (Tape,),
    "Box": (Box,),
    "Primitive": (Primitive,),
    "others": (SparseCotangent, OwnedBuffer, ArrayMeta, Recomputed, _TypeMappings),
    "rules": (VJP, ArgnumVJP, JointVJP, ElementwiseRule),
}
KINDS = (
    "unbroadcast",
    "neg_unbroadcast",
    "mul",
    "div",
    "neg",
    "times_d",
    "neg_times_d",
    "times_ans",
    "tanh",
)


class Pool:
    """Hostile and ordinary values; tapes are kept to be released at the end. The live tape
    (deep: its nodes' indices are far past a fresh arena) is made again whenever a call
    released it, so that every callable meets a live tape that some argument may release
    during the call."""

    LIVE_SLOTS = 4

    def __init__(self):
        self.tapes = []
        fwd = self.tape(True)
        self.fwd_leaf = fwd.new_leaf(onp.ones(3), onp.ones(3))
        rel = self.tape()
        self.released_leaf = rel.new_leaf(1.0)
        rel.release()
        outer = self.tape()
        inner = self.tape()
        self.nested = inner.new_leaf(outer.new_leaf(onp.ones(2)))
        self.prim = Primitive(lambda *a, **k: a[0] if a else 0.0, "hostile.p")
        pool = self

        class ReleasesOnIndex:
            def __index__(self):
                pool.live.release()
                return 0

        class ReleasesOnDel:
            def __del__(self):
                pool.live.release()

        root = onp.zeros(3, onp.int8)
        self.values = [None] * self.LIVE_SLOTS + [
            fwd,
            rel,
            inner,
            self.fwd_leaf,
            self.released_leaf,
            self.nested,
            Box.__new__(Box),
            self.prim,
            Primitive(len, "hostile.len"),
            Primitive(lambda *a, **k: pool.live.release(), "hostile.releases"),
            None,
            0,
            1,
            -1,
            2,
            3,
            5000,
            2**31,
            2**62,
            -(2**63),
            2**64,
            1.5,
            float("nan"),
            True,
            "s",
            b"b",
            object(),
            ReleasesOnIndex(),
            ReleasesOnDel,
            (),
            (0,),
            (None,),
            ((0, 1),),
            ((0, 1), (0, 1)),
            ((0,),),
            ((-5, 2**62),),
            [0, -1],
            {},
            {0: 1},
            slice(None, None, -1),
            Ellipsis,
            onp.zeros(3),
            onp.zeros(()),
            onp.arange(6.0).reshape(2, 3)[:, ::-1],
            onp.array([1, None], dtype=object),
            onp.zeros(0),
            root,
            as_strided(root, shape=(1, 3), strides=(-1, 1)),
            onp.float32(1),
            onp.dtype(float),
            float,
            onp.sin,
            onp.add,
            ArrayMeta.__new__(ArrayMeta),
            SparseCotangent((0,), onp.ones(1), (3,), float, False),
            SparseCotangent.__new__(SparseCotangent),
            OwnedBuffer(onp.zeros(4), "here"),
            OwnedBuffer.__new__(OwnedBuffer),
            OwnedBuffer(None, None),
            lambda *a, **k: None,
            lambda *a, **k: pool.live.release(),
            len,
        ]
        self.live = None
        self.refresh()

    def refresh(self):
        """A new live tape (5000 constants, then a leaf array, a constant and a leaf scalar)
        in the first slots of `values` when the current one was released."""
        if self.live is not None and not self.live.released:
            return
        live = self.tape()
        for _ in range(5000):
            live.new_constant(0.0)
        self.live = live
        self.values[: self.LIVE_SLOTS] = [
            live,
            live.new_leaf(onp.arange(3.0)),
            live.new_constant(onp.zeros(3)),
            live.new_leaf(2.0),
        ]

    def tape(self, forward=False):
        t = Tape(forward)
        self.tapes.append(t)
        return t

    def instances(self, cls):
        return [v for v in self.values if type(v) is cls]

    def release_all(self):
        for t in self.tapes:
            t.release()


def arity(fn):
    """The positional parameters (excluding self) and whether more may be passed."""
    try:
        params = list(inspect.signature(fn).parameters.values())
    except (TypeError, ValueError):
        return 2, True
    if params and params[0].name == "self":
        params = params[1:]
    n = sum(p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD) for p in params)
    more = any(p.kind is p.VAR_POSITIONAL for p in params)
    return n, more


class Runner:
    def __init__(self, pool, rng, trace):
        self.pool = pool
        self.rng = rng
        self.trace = trace
        self.calls = 0
        self.errors = 0
        self.failures = []

    def call(self, label, fn, args):
        self.calls += 1
        if self.trace:
            sys.stderr.write(f"{label}{tuple(map(short, args))}\n")
            sys.stderr.flush()
        try:
            fn(*args)
        except SystemError as e:  # a C-API call on a wrong object: a bug, not an error
            self.failures.append(f"{label}{tuple(map(short, args))}: SystemError {e}")
        except Exception:
            self.errors += 1

    def exercise(self, label, fn, bound=()):
        """fn(*bound, *args): every pool value in every position (the others drawn at random),
        then random combinations, for 0 .. n(+1 when variadic) arguments."""
        n, more = arity(fn)
        values = self.pool.values
        for count in range(0, n + (2 if more else 1)):
            for pos in range(count):
                for k in range(len(values)):
                    self.pool.refresh()
                    args = [self.rng.choice(values) for _ in range(count)]
                    args[pos] = values[k]
                    self.call(label, fn, tuple(bound) + tuple(args))
            for _ in range(20):
                self.pool.refresh()
                args = [self.rng.choice(values) for _ in range(count)]
                self.call(label, fn, tuple(bound) + tuple(args))

    def attributes(self, cls):
        """Call every method (operators and protocols included) of each instance of cls in the
        pool, read every attribute, and set the writable ones to hostile values (the
        instances are then used by later calls)."""
        for name in sorted(vars(cls)):
            if name in ("__new__", "__doc__", "__pyx_vtable__"):
                continue
            attr = vars(cls)[name]
            self.pool.refresh()
            for obj in self.pool.instances(cls):
                if type(attr).__name__ == "getset_descriptor":
                    self.call(f"{cls.__name__}.{name}", getattr, (obj, name))
                    if self.rng.random() < 0.3:
                        self.call(
                            f"{cls.__name__}.{name}=",
                            setattr,
                            (obj, name, self.rng.choice(self.pool.values)),
                        )
                elif callable(attr):
                    self.exercise(f"{cls.__name__}.{name}", getattr(cls, name), (obj,))

    def functions(self, module):
        for name in sorted(vars(module)):
            fn = vars(module)[name]
            if type(fn).__name__ != "cython_function_or_method":
                continue
            self.exercise(f"{module.__name__}.{name}", fn)


def rules(r, pool):
    """The reverse-mode rules: each constructor with hostile arguments (ElementwiseRule with
    every kind), their methods, then every rule that constructed installed on a primitive and
    run by backward passes of calls with 0 to 3 traced arguments of several shapes (a rule's
    C path indexes the call's arguments)."""
    made = []

    def construct(label, cls, args):
        r.calls += 1
        if r.trace:
            sys.stderr.write(f"{label}{tuple(map(short, args))}\n")
            sys.stderr.flush()
        try:
            made.append(cls(*args))
        except SystemError as e:
            r.failures.append(f"{label}{tuple(map(short, args))}: SystemError {e}")
        except Exception:
            r.errors += 1

    values = pool.values
    fns = [
        lambda *a, **k: a[0],
        lambda *a, **k: None,
        lambda *a, **k: onp.ones((4, 5)),
        lambda *a, **k: (1.0, 2.0, 3.0),
        lambda *a, **k: pool.live.release(),
        len,
    ]
    for cls in (VJP, ArgnumVJP, JointVJP, ElementwiseRule):
        r.exercise(f"{cls.__name__}()", cls)
    for kind in KINDS + ("nope",):
        for argnum in (-(2**31), -1, 0, 1, 2, 5, 2**31 - 1):
            for fn in fns[:3] + [None, 1.0]:
                for ufunc in (None, onp.cos, 1.0):
                    construct("ElementwiseRule", ElementwiseRule, (kind, fn, argnum, ufunc))
    for _ in range(200):
        construct(
            "JointVJP",
            JointVJP,
            (r.rng.choice(fns + values), r.rng.choice(values)),
        )
        construct(
            "ArgnumVJP",
            ArgnumVJP,
            ({r.rng.choice((-1, 0, 1, 2, "a", None)): r.rng.choice(fns + values)},),
        )
    construct("VJP", VJP, ())
    rule_objects = [m for m in made if type(m) is ElementwiseRule]
    for m in rule_objects[:40]:
        construct("ArgnumVJP", ArgnumVJP, ({0: m, 1: m, 2: m},))
    for cls in (VJP, ArgnumVJP, JointVJP, ElementwiseRule):
        for obj in [m for m in made if type(m) is cls][:8]:
            for name in sorted(vars(cls)):
                attr = vars(cls)[name]
                if name in ("__new__", "__doc__", "__pyx_vtable__"):
                    continue
                if type(attr).__name__ == "getset_descriptor":
                    r.call(f"{cls.__name__}.{name}", getattr, (obj, name))
                elif callable(attr):
                    for _ in range(10):
                        args = [r.rng.choice(values) for _ in range(r.rng.randint(0, 5))]
                        r.call(f"{cls.__name__}.{name}", getattr(cls, name), (obj, *args))
    shapes = [
        onp.ones(3),
        onp.ones((2, 3)),
        onp.ones(()),
        2.0,
        onp.ones(3, onp.float32),
        onp.ones(3, complex),
        onp.arange(3),
    ]
    for vjp in made:
        if not isinstance(vjp, VJP):
            continue
        prim = Primitive(lambda *a: a[0] if a else 0.0, "hostile.rule")
        prim.set_vjp(vjp)
        for nargs in range(4):
            for _ in range(3):
                args = [r.rng.choice(shapes) for _ in range(nargs)]
                r.call(f"backward[{short(vjp)}]", _sweep, (prim, args))


def _sweep(prim, args):
    """A tape with traced `args` (plain ones between them), prim called on them, swept."""
    tape = Tape()
    try:
        traced = [tape.new_leaf(a) if k % 2 == 0 else a for k, a in enumerate(args)]
        out = prim(*traced)
        node = getattr(out, "_node", None)
        if node is not None and out._tape is tape:
            tape.backward(node, onp.ones(onp.shape(out._value)), True, [0])
    finally:
        tape.release()


def short(v):
    try:
        if isinstance(v, onp.ndarray):  # (its layout says more than its values)
            r = f"ndarray{v.shape}{v.dtype}{v.strides}"
        else:
            r = repr(v) if not isinstance(v, (Box, Tape)) else type(v).__name__
    except Exception:
        r = type(v).__name__
    return r if len(r) < 40 else r[:37] + "..."


def run(group, seed, trace=False):
    pool = Pool()
    r = Runner(pool, random.Random(seed), trace)
    if group == "core_functions":
        r.functions(_core)
    elif group == "core_tests_functions":
        r.functions(_core_tests)
    elif group == "Tape":
        r.attributes(Tape)
    elif group == "Box":
        r.attributes(Box)
    elif group == "Primitive":
        for p in pool.instances(Primitive):
            r.exercise("Primitive.__call__", p)
        r.attributes(Primitive)  # (sets their public attributes to hostile values)
        for p in pool.instances(Primitive):
            r.exercise("Primitive.__call__", p)
    elif group == "others":
        for cls in CLASSES["others"]:
            r.exercise(f"{cls.__name__}()", cls)
            r.attributes(cls)
    elif group == "rules":
        rules(r, pool)
    else:
        raise SystemExit(f"unknown group {group!r}; one of {GROUPS}")
    # the counters must be exact whatever was called: every tape released, nothing held
    stack = getattr(_core._active, "stack", None)
    while stack:
        _core.pop_active(stack[-1][0])
    pool.release_all()
    del pool, r.pool
    gc.collect()
    stats = {k: v for k, v in _core.stats().items() if not k.startswith("peak")}
    return r, stats


def main():
    args = [a for a in sys.argv[1:] if a != "--trace"]
    group = args[0]
    seed = int(args[1]) if len(args) > 1 else 0
    r, stats = run(group, seed, "--trace" in sys.argv)
    print(f"{group} calls={r.calls} errors={r.errors} stats={json.dumps(stats)}")
    for f in r.failures[:20]:
        print("FAILURE", f)
    sys.exit(1 if r.failures or any(stats.values()) else 0)


if __name__ == "__main__":
    main()
