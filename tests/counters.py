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


@pytest.fixture(autouse=True)
def _counters_back_to_zero():
    """Every test ends with the counters where they started (zero when nothing leaked)."""
    gc.collect()
    s = _core.stats()
    _BASELINE.update({k: s[k] for k in _KEYS})
    yield
    # a test that failed before releasing its tapes must not make later tests fail
    while _OPEN:
        _OPEN.pop().release()
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
