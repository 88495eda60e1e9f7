"""Engine counters around each test: shared by the engine and API test modules."""

import contextlib
import gc

import numpy as onp
import pytest

from gradcy import _core

_BASELINE = {"live_tapes": 0, "live_nodes": 0, "saved_bytes": 0, "cotangent_bytes": 0}
_KEYS = tuple(_BASELINE)


def assert_counters_zero():
    """No live tape, node, saved or cotangent byte beyond what was live when the test started
    (zero, unless an earlier failing test leaked: that one is reported, not every later one)."""
    gc.collect()
    s = _core.stats()
    assert {k: s[k] for k in _KEYS} == _BASELINE, s


def _counters():
    s = _core.stats()
    return {k: s[k] for k in _KEYS}


@pytest.fixture(autouse=True)
def _counters_back_to_zero():
    """Every test ends with the counters where they started (zero when nothing leaked). The
    cycle collector runs only when a count is off: garbage in a reference cycle can hold a tape
    until it runs, and a count it brings back was no leak. Most tests end at the baseline
    without it, and a collection per test was most of the suite's time."""
    if _counters() != _BASELINE:
        gc.collect()
        _BASELINE.update(_counters())
    yield
    # a test that failed before releasing its tapes must not make later tests fail
    while _OPEN:
        _OPEN.pop().release()
    if _counters() != _BASELINE:
        assert_counters_zero()


_OPEN = []


def opened(obj):
    """Register a Tape or VJP to release if the test fails before releasing it."""
    _OPEN.append(obj)
    return obj


@contextlib.contextmanager
def leaf_slot(n):
    """(tape, node index) of a fresh tape's one leaf of n zeros, for driving its cotangent slot
    directly; the tape is released on the way out."""
    t = opened(_core.Tape())
    leaf = t.new_leaf(onp.zeros(n))
    try:
        yield t, leaf._node
    finally:
        del leaf
        t.release()
