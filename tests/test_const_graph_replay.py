"""const_graph's two executors of a recorded program: the compiled straight-line function
(programs up to tracers._MAX_COMPILED_STEPS steps) and the step interpreter (longer ones) give
exactly the same values, and both free intermediates as they go."""
import gc
import weakref

import numpy as onp
import pytest

import gradcy
import gradcy.extend
import gradcy.numpy as gnp
from counters import _counters_back_to_zero  # noqa: F401  (autouse fixture: counters back to zero)
from gradcy.misc import const_graph, tracers


def _both(fun):
    """(compiled, interpreted) const_graph versions of fun."""
    compiled = const_graph(fun)
    limit = tracers._MAX_COMPILED_STEPS
    tracers._MAX_COMPILED_STEPS = 0
    try:
        interpreted = const_graph(fun)
        return compiled, interpreted
    finally:
        tracers._MAX_COMPILED_STEPS = limit


def _program(fun, *xs):
    return tracers._record(lambda args: fun(*args), xs)[1]


def f_mixed(x, y):
    # keyword arguments, a value used twice in one call, constants on either side, two inputs
    z = gnp.sum(x * x, axis=0, keepdims=True) + gnp.dot(y, gnp.ones((3, 2)))
    return gnp.sum(gnp.tanh(z) * 2.0, axis=None) - gnp.sum(y.T @ x)


def test_compiled_and_interpreted_replays_agree_exactly():
    rs = onp.random.RandomState(3)
    g = gradcy.grad(f_mixed, argnum=(0, 1))
    compiled, interpreted = _both(lambda x, y: gnp.concatenate([a.ravel() for a in g(x, y)]))
    for _k in range(3):
        x, y = rs.randn(4, 2), rs.randn(4, 3)
        want = onp.concatenate([a.ravel() for a in g(x, y)])
        for fast in (compiled, interpreted):
            got = fast(x, y)
            assert got.dtype == want.dtype and got.shape == want.shape
            assert onp.array_equal(got, want)


def test_program_runs_compiled_up_to_the_limit_only(monkeypatch):
    def chain(x):
        for _ in range(5):
            x = gnp.sin(x) * 2.0
        return x
    x = onp.array([0.3, 0.7])
    prog = _program(chain, x)
    assert len(prog.steps) == 10 and prog.run.__name__ == "run"
    monkeypatch.setattr(tracers, "_MAX_COMPILED_STEPS", 9)
    prog = _program(chain, x)
    assert prog.run == prog._interpret
    assert onp.array_equal(prog(x), chain(x))


class _Tracked(onp.ndarray):
    """An ndarray subclass, to tell the tracked values apart."""


@pytest.mark.parametrize("limit", [100_000, 0])
def test_replay_frees_intermediates(limit, monkeypatch):
    monkeypatch.setattr(tracers, "_MAX_COMPILED_STEPS", limit)
    peak, refs = [], []

    def track(v):
        out = onp.asarray(v).view(_Tracked)
        refs.append(weakref.ref(out))
        peak.append(sum(r() is not None for r in refs))
        return out
    tracked = gradcy.extend.primitive(track)
    gradcy.extend.defvjp(tracked, lambda ans, v: lambda g: g)

    def chain(x):
        for _ in range(30):
            x = tracked(x * 1.5)
        return x
    fast = const_graph(chain)
    x = onp.ones(3)
    fast(x)
    gc.collect()
    peak.clear()
    refs.clear()
    out = fast(x)
    # each step's input is dropped once read: never more than the current value and its
    # predecessor are alive
    assert len(peak) == 30 and max(peak) <= 3
    assert onp.array_equal(out, chain(x))
