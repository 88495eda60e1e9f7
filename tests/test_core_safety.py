"""The engine never crashes the interpreter and keeps its counters exact (issue 10, items 6, 7,
8, 11 and 13): tapes released while a primitive's function, a VJP, an observer or a __del__
runs; threads using each other's traced values; every Python-visible callable of gradcy._core
and gradcy._core_tests called with hostile arguments; constructors inside primitive and
checkpoint bodies; forward mode and second order through checkpoint.

Anything that crashed the interpreter before it was fixed runs in a subprocess: the test
checks the subprocess's exit code and what it printed."""

import enum
import json
import os
import subprocess
import sys
import textwrap

import numpy as onp
import pytest

import gradcy.numpy as np
from gradcy import _core, checkpoint, grad, hessian_vector_product, make_jvp
from gradcy._core import EscapedValueError, Tape
from gradcy.extend import defjvp, defvjp, primitive

from vjp_harness import central_gradient

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(_core.__file__)))
ZERO = {"live_tapes": 0, "live_nodes": 0, "saved_bytes": 0, "cotangent_bytes": 0}


def run_python(source, *args, timeout=600):
    """Run `source` in a fresh interpreter; returns (exit code, stdout, stderr)."""
    # the subprocess imports the gradcy this process tests (run from tests/, it would
    # otherwise find an installed one first)
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(
        [ROOT] + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else [])
    )
    p = subprocess.run(
        [sys.executable, "-X", "faulthandler", "-c", textwrap.dedent(source), *args],
        capture_output=True,
        text=True,
        timeout=timeout,
        cwd=HERE,
        env=env,
    )
    return p.returncode, p.stdout, p.stderr


def run_json(source, timeout=600):
    """Run `source`, which prints one JSON document last; assert it exited cleanly."""
    rc, out, err = run_python(source, timeout=timeout)
    assert rc == 0, f"exit code {rc} (-11: segmentation fault)\n{out[-2000:]}\n{err[-4000:]}"
    return json.loads(out.strip().splitlines()[-1])


# =============================================================================
# 6. A tape released while something records onto it
# =============================================================================
RELEASE_SCENARIOS = r"""
import gc, json
import numpy as onp
import gradcy.numpy as np
from gradcy import _core, grad, make_jvp, make_vjp
from gradcy.extend import defjvp, defvjp, primitive

out = {}

def outcome(name, fn):
    try:
        r = fn()
        out[name] = ["ok", repr(r)[:300]]
    except Exception as e:
        out[name] = [type(e).__name__, str(e)]

def deep(x, n=100_000, keep=None):
    # node indices far past the arena a released tape would start again from
    for _ in range(n):
        x = np.sin(x)
    if keep is not None:
        keep.append(x)
    return np.sum(x)

def vjp_released_by_primitive():
    # the issue's reproducer: the primitive's function releases the VJP whose tape records it
    esc = []
    vjp, _ = make_vjp(lambda x: deep(x, keep=esc))(onp.ones(3))
    @primitive
    def rel(a):
        vjp.release()
        return a * 2
    defvjp(rel, lambda ans, a: lambda g: 2 * g)
    return rel(esc.pop())

def forward_tape_released_by_primitive():
    held = []
    @primitive
    def rel(a):
        held[0]._tape.release()
        return a * 2
    defjvp(rel, lambda g, ans, a: 2 * g)
    def f(x):
        held.append(x)
        y = x
        for _ in range(20_000):
            y = np.sin(y)
        return rel(y)
    return make_jvp(f)(onp.ones(3))(onp.ones(3))

def vjp_released_by_a_vjp():
    # during the sweep: the release waits for the sweep's end, the gradient is complete
    held = {}
    @primitive
    def triple(a):
        return a * 3.0
    defvjp(triple, lambda ans, a: lambda g: (held["vjp"].release(), 3.0 * g)[1])
    x = onp.array([0.3, -1.1, 2.0])
    vjp, _ = make_vjp(lambda x: np.sum(triple(np.sin(x)) ** 2))(x)
    held["vjp"] = vjp
    g = vjp(1.0)
    expected = 18 * onp.sin(x) * onp.cos(x)
    assert onp.allclose(g, expected), (g, expected)
    try:
        vjp(1.0)
    except _core.EscapedValueError as e:
        return "gradient right, then: " + str(e)
    raise AssertionError("a released VJP ran again")

def observer_releases():
    t = _core.Tape()
    b = t.new_leaf(onp.ones(3))
    t.observer = lambda *args: t.release()
    y = np.sin(b)                  # recorded, then the observer releases the tape
    return np.cos(y)               # a value of a released tape: EscapedValueError

def write_value_releases():
    class Releases:
        def __float__(self):
            self.tape.release()
            return 1.0
    def f(x):
        deep(x, n=50_000)
        Releases.tape = _core.active_tape()
        buf = np.zeros(3)
        buf = buf * x                  # a traced buffer: the write below is recorded
        buf[0] = Releases()
        return np.sum(buf)
    return grad(f)(onp.ones(3))

def grad_function_releases_its_tape():
    def f(x):
        y = deep(x, n=50_000)
        x._tape.release()
        return y
    return grad(f)(onp.ones(3))

def del_releases_during_dead_node_release():
    held = []
    class Releases:
        def __del__(self):
            held[0].release()
    @primitive
    def p(a, obj):
        return a * 1.0
    def f(x):
        held.append(x._tape)
        y = x
        for _ in range(2_000):
            y = np.sin(y)
        p(y, Releases())            # dropped at once: its record (and Releases) are released
        return np.sum(y)
    return grad(f)(onp.ones(3))

for name, fn in list(globals().items()):
    if callable(fn) and getattr(fn, "__module__", None) == "__main__" and name not in (
            "outcome", "deep", "primitive", "defvjp", "defjvp", "grad", "make_jvp", "make_vjp"):
        outcome(name, fn)
gc.collect()
out["stats"] = {k: v for k, v in _core.stats().items() if not k.startswith("peak")}
print(json.dumps(out))
"""


def test_tapes_released_while_recording_raise_cleanly_in_a_subprocess():
    out = run_json(RELEASE_SCENARIOS)
    stats = out.pop("stats")
    assert stats == ZERO
    released = "was released while"
    assert out["vjp_released_by_primitive"][0] == "EscapedValueError"
    assert released in out["vjp_released_by_primitive"][1]
    assert "rel" in out["vjp_released_by_primitive"][1]
    assert out["forward_tape_released_by_primitive"][0] == "EscapedValueError"
    assert released in out["forward_tape_released_by_primitive"][1]
    assert out["vjp_released_by_a_vjp"][0] == "ok"
    assert "already used or released" in out["vjp_released_by_a_vjp"][1]
    assert out["observer_releases"][0] == "EscapedValueError"
    assert out["write_value_releases"][0] == "EscapedValueError"
    assert out["grad_function_releases_its_tape"][0] == "EscapedValueError"
    assert "released" in out["grad_function_releases_its_tape"][1]
    assert out["del_releases_during_dead_node_release"][0] == "EscapedValueError"
    assert len(out) == 7


# =============================================================================
# 7. Threads
# =============================================================================
THREADS = r"""
import gc, json, sys, threading
import numpy as onp
import gradcy.numpy as np
from gradcy import _core, grad

OWNERS, WORKERS, ROUNDS, STEPS = (int(a) for a in sys.argv[1:5])
shared = [None] * OWNERS
stop = threading.Event()
errors, wrong = {}, []
lock = threading.Lock()

def note(e):
    with lock:
        key = "recorded" if e is None else type(e).__name__
        errors[key] = errors.get(key, 0) + 1

def owner(k):
    x = onp.linspace(-1.0, 1.0, 40) + k
    def f(x):
        y = x
        for _ in range(STEPS):
            y = np.sin(y) * 1.01
            shared[k] = y          # another thread applies ops to it while this one runs
        return np.sum(y * y)
    def ref(x):
        y = x
        for _ in range(STEPS):
            y = onp.sin(y) * 1.01
        return onp.sum(y * y)
    try:
        for _ in range(ROUNDS):
            g = grad(f)(x)
            if not onp.isfinite(g).all() or g.shape != x.shape:
                wrong.append("bad gradient")
        e = 1e-6
        fd = onp.array([(ref(x + e * d) - ref(x - e * d)) / (2 * e) for d in onp.eye(x.size)])
        if not onp.allclose(g, fd, rtol=1e-5, atol=1e-7):
            wrong.append("gradient differs from finite differences")
    finally:
        shared[k] = None

def worker(j):
    n = 0
    while not stop.is_set():
        b = shared[(j + n) % OWNERS]
        n += 1
        if b is None:
            continue
        try:
            z = np.sum(np.cos(b) + b * 2.0)
            w = b[1:3] * z
            del z, w
            note(None)
        except (_core.EscapedValueError, RuntimeError) as e:
            note(e)
        except Exception as e:
            with lock:
                wrong.append(f"{type(e).__name__}: {e}")
        del b

owners = [threading.Thread(target=owner, args=(k,)) for k in range(OWNERS)]
workers = [threading.Thread(target=worker, args=(j,)) for j in range(WORKERS)]
for t in owners + workers:
    t.start()
for t in owners:
    t.join()
stop.set()
for t in workers:
    t.join()
shared = None
gc.collect()
stats = {k: v for k, v in _core.stats().items() if not k.startswith("peak")}
print(json.dumps({"errors": errors, "wrong": wrong[:5], "stats": stats}))
"""


@pytest.mark.parametrize("owners,workers,rounds,steps", [(1, 3, 150, 60), (4, 4, 10, 2000)])
def test_threads_using_other_threads_traced_values(owners, workers, rounds, steps):
    rc, out, err = run_python(THREADS, str(owners), str(workers), str(rounds), str(steps))
    assert rc == 0, f"exit code {rc} (-11: segmentation fault)\n{err[-4000:]}"
    result = json.loads(out.strip().splitlines()[-1])
    print(result)
    assert result["wrong"] == []
    assert result["stats"] == ZERO
    # the only errors: the owner's tape was released or was sweeping when a worker's op ended
    assert set(result["errors"]) <= {"recorded", "EscapedValueError", "RuntimeError"}


def test_recording_from_another_thread_while_the_owner_runs_is_traced():
    """The rule: any thread may apply ops to a differentiation's values while its function
    runs; they are recorded on that differentiation's tape like the owner's own ops."""
    import threading

    x0 = onp.array([0.4, -0.7, 1.3])

    def f(x):
        result = {}
        t = threading.Thread(target=lambda: result.update(y=np.sin(x) * x))
        t.start()
        t.join()
        return np.sum(result["y"] ** 2)

    g = grad(f)(x0)
    assert onp.allclose(
        g, central_gradient(lambda v: onp.sum((onp.sin(v) * v) ** 2), x0), atol=1e-6
    )


# =============================================================================
# 8. Every Python-visible callable with hostile arguments
# =============================================================================
sys.path.insert(0, HERE)
import hostile_calls


@pytest.mark.parametrize("group", hostile_calls.GROUPS)
def test_hostile_calls_never_crash(group):
    rc, out, err = run_python(
        f"import runpy, sys; sys.argv = ['hostile_calls.py', {group!r}, "
        f"'0', '--trace']; runpy.run_path('hostile_calls.py', "
        f"run_name='__main__')"
    )
    calls = err.split("Fatal Python error")[0].strip().splitlines()
    last_call = calls[-1] if calls else ""
    assert rc == 0, (
        f"exit code {rc} (-11: segmentation fault); last call: {last_call}\n{out[-3000:]}"
    )
    summary = out.strip().splitlines()[-1]
    print(summary)
    assert int(summary.split("calls=")[1].split()[0]) > 1000
    assert json.loads(summary.split("stats=")[1]) == ZERO


def test_hostile_calls_cover_every_engine_class():
    # every class a compiled part of the engine (gradcy/_*.pyx) defines, but its exceptions,
    # is constructed and called by one of the groups above
    import importlib
    import pkgutil

    import gradcy

    covered = {c for group in hostile_calls.CLASSES.values() for c in group}
    found = set()
    for m in pkgutil.iter_modules(gradcy.__path__):
        if not m.name.startswith("_"):
            continue
        mod = importlib.import_module(f"gradcy.{m.name}")
        if mod.__file__.endswith(".py"):
            continue
        found.update(
            v
            for v in vars(mod).values()
            if isinstance(v, type)
            and v.__module__ == mod.__name__
            and not issubclass(v, (BaseException, enum.Enum))
        )
    assert found and found <= covered, sorted(c.__name__ for c in found - covered)
    assert gradcy.__file__.startswith(ROOT)


def test_engine_parts_listed_once():
    # the engine's parts are the files gradcy/_*.pyx (setup.py compiles each; gradcy._core
    # re-exports them and gradcy._core_tests is C-level test code), and the table of
    # docs/architecture.md is the one list saying what each holds: it names every part and
    # nothing else. Every compiled module of the package has its .pyx: one left behind by a
    # part since removed or made plain Python (gradcy/_errors.*.so beside _errors.py) would
    # be imported in its place; delete it.
    import importlib.machinery
    import re

    package = os.path.dirname(os.path.abspath(_core.__file__))
    names = os.listdir(package)
    sources = {n[: -len(".pyx")] for n in names if n.startswith("_") and n.endswith(".pyx")}
    compiled = {
        n.split(".")[0] for n in names if n.endswith(tuple(importlib.machinery.EXTENSION_SUFFIXES))
    }
    assert compiled == sources, (
        f"compiled without a .pyx: {sorted(compiled - sources)}; "
        f".pyx not compiled: {sorted(sources - compiled)}"
    )
    with open(os.path.join(HERE, os.pardir, "docs", "architecture.md")) as f:
        doc = f.read()
    table = doc.split("| Part | What it holds |", 1)[1].split("\n\n", 1)[0]
    listed = re.findall(r"^\| `(_\w+)` \|", table, re.M)
    assert len(listed) == len(set(listed)), listed
    assert set(listed) == sources - {"_core", "_core_tests"}, sorted(
        set(listed) ^ (sources - {"_core", "_core_tests"})
    )


def test_hostile_strides_in_layout_region():
    # INT_MIN // -1 traps (SIGFPE) in C: a stride of -2**63 against a root whose size-1 axis
    # has stride -1 must give "no exact region", not a crash
    rc, out, err = run_python("""
        import numpy as onp
        from numpy.lib.stride_tricks import as_strided
        from gradcy import _core
        root = onp.zeros(3, onp.int8)
        print(_core.layout_region(as_strided(root, shape=(2,), strides=(-2 ** 63,)),
                                  as_strided(root, shape=(1, 3), strides=(-1, 1))))
    """)
    assert rc == 0, err
    assert out.strip() == "None"


def test_node_methods_check_the_tape_and_the_index():
    t = Tape()
    b = t.new_leaf(onp.ones(2))
    for i in (-1, 1, 2**40):
        with pytest.raises(IndexError, match="not on this tape"):
            t.node_flags(i)
        with pytest.raises(IndexError, match="not on this tape"):
            t.mark_stale(i)
        with pytest.raises(IndexError, match="not on this tape"):
            t.replace_saved(i, 0, onp.ones(2))
    assert t.node_flags(0) == (False, True, False, False)
    other = Tape()
    with pytest.raises(ValueError, match="another tape"):
        other.pin(b)
    t.release()
    for call in (
        lambda: t.node_flags(0),
        lambda: t.mark_stale(0),
        lambda: t.pin(b),
        lambda: t.replace_saved(0, 0, 1.0),
        lambda: _core.transfer_box(b, b),
    ):
        with pytest.raises(EscapedValueError, match="released"):
            call()
    with pytest.raises(TypeError):
        t.pin(None)
    other.release()


def test_boxes_not_made_by_a_tape_and_detached_boxes_raise():
    stray = _core.Box.__new__(_core.Box)
    with pytest.raises(EscapedValueError):
        np.sin(stray)
    t = Tape()
    a, b = t.new_leaf(onp.ones(2)), t.new_leaf(onp.zeros(2))
    _core.transfer_box(a, b)  # b is left detached
    with pytest.raises(EscapedValueError):
        np.sin(b)
    assert onp.array_equal(np.sin(a)._value, onp.sin(onp.zeros(2)))
    _core.transfer_box(a, a)  # onto itself: nothing changes
    assert t.node_flags(a._node)[1]
    t.release()


# =============================================================================
# 11. Constructors inside primitive and checkpoint bodies
# =============================================================================
@primitive
def square_into_buffer(x):
    out = np.zeros(x.shape)  # a plain array: the body runs on plain values
    assert type(out) is onp.ndarray
    out[...] = x * x
    return out


defvjp(square_into_buffer, lambda ans, x: lambda g: 2 * g * x)
defjvp(square_into_buffer, lambda g, ans, x: 2 * g * x)


@checkpoint
def segment(x):
    buf = np.zeros(x.shape)
    buf[...] = np.sin(x) * x
    return buf * 2.0


def segment_plain(x):
    return onp.sin(x) * x * 2.0


X = onp.array([0.3, -1.2, 2.0])
V = onp.array([0.5, 1.0, -0.7])


def test_constructor_inside_a_primitive_body_is_plain():
    def f(x):
        return np.sum(square_into_buffer(x) * x)

    assert onp.allclose(grad(f)(X), 3 * X**2)
    assert onp.allclose(make_jvp(f)(X)(V)[1], onp.dot(3 * X**2, V))
    # called on plain values inside a differentiation, too
    assert type(grad(lambda x: np.sum(square_into_buffer(onp.ones(2)) * x))(X[:2])) is onp.ndarray


def test_checkpoint_body_filling_a_buffer_composes():
    def f(x):
        return np.sum(segment(segment(x)) ** 2)

    def f_plain(x):
        return onp.sum(segment_plain(segment_plain(x)) ** 2)

    assert onp.allclose(f(X), f_plain(X))
    assert onp.allclose(grad(f)(X), central_gradient(f_plain, X), rtol=1e-6, atol=1e-6)


def test_suspension_ends_with_the_body_also_when_it_raises():
    @primitive
    def fails(x):
        np.zeros(2)
        raise ArithmeticError("inside")

    def f(x):
        with pytest.raises(ArithmeticError):
            fails(x)
        buf = np.zeros(3)  # the differentiation is active again: an owned buffer
        buf[1:] = x[:2] * 2.0  # (into a plain array this would raise)
        return np.sum(buf * x)  # 2 x0 x1 + 2 x1 x2

    assert onp.allclose(grad(f)(X), [2 * X[1], 2 * X[0] + 2 * X[2], 2 * X[1]])


def test_a_differentiation_inside_a_primitive_body_is_active_there():
    @primitive
    def inner_grad(x):
        def g(y):
            buf = np.zeros(y.shape)  # this inner differentiation owns it
            buf[...] = y**3
            return np.sum(buf)

        return grad(g)(x)

    defvjp(inner_grad, lambda ans, x: lambda g: g * 6 * x)

    assert onp.allclose(grad(lambda x: np.sum(inner_grad(x)))(X), 6 * X)


# =============================================================================
# 13. Forward mode and second order through checkpoint
# =============================================================================
def test_make_jvp_through_checkpoint_matches_finite_differences():
    def f(x):
        return segment(segment(x)) ** 2

    def f_plain(x):
        return segment_plain(segment_plain(x)) ** 2

    value, tangent = make_jvp(f)(X)(V)
    eps = 1e-6
    fd = (f_plain(X + eps * V) - f_plain(X - eps * V)) / (2 * eps)
    assert onp.allclose(value, f_plain(X))
    assert onp.allclose(tangent, fd, rtol=1e-6, atol=1e-7)


def test_checkpoint_with_two_traced_arguments_in_forward_mode():
    @checkpoint
    def mix(a, b):
        return np.sin(a) * b + a

    def f(x):
        return mix(x, x**2)

    _, tangent = make_jvp(f)(X)(V)
    expected = (onp.cos(X) * X**2 + onp.sin(X) * 2 * X + 1) * V
    assert onp.allclose(tangent, expected)


def test_second_order_through_checkpoint():
    def f(x):
        return np.sum(segment(segment(x)) ** 2)

    def f_plain(x):
        return onp.sum(segment_plain(segment_plain(x)) ** 2)

    hv = hessian_vector_product(f)(X, V)
    g = grad(f)
    eps = 1e-5
    fd = (g(X + eps * V) - g(X - eps * V)) / (2 * eps)
    assert onp.allclose(hv, fd, rtol=1e-5, atol=1e-5)
    # forward over reverse: the JVP of the gradient
    _, jg = make_jvp(grad(f))(X)(V)
    assert onp.allclose(jg, fd, rtol=1e-5, atol=1e-5)
    # and the gradient itself against central differences of the plain function
    assert onp.allclose(g(X), central_gradient(f_plain, X), rtol=1e-6, atol=1e-6)
