"""gradcy.jit without Numba: one warning, then const_graph's NumPy replay (the same guards,
the same bits)."""

import numpy as onp
import pytest

import gradcy.numpy as gnp
from gradcy import _codegen, compiled, grad, jit
from gradcy.misc import const_graph


@pytest.fixture
def no_numba(monkeypatch):
    monkeypatch.setattr(_codegen, "_numba", [None])
    monkeypatch.setattr(compiled, "_missing_warned", [])


def f(x):
    for _ in range(5):
        x = gnp.sin(x) * 1.0001 + 0.01 * gnp.maximum(x, 0.0)
    return gnp.sum(x)


def test_without_numba_jit_warns_once_and_replays_with_numpy(no_numba):
    with pytest.warns(
        RuntimeWarning,
        match=r"gradcy.jit: numba is not installed \(pip "
        r"install gradcy\[jit\]\); running the NumPy "
        r"replay \(const_graph\) instead",
    ):
        fast = jit(grad(f))
    fast2 = jit(grad(f))  # (warned once per process)
    slow = const_graph(grad(f))
    rs = onp.random.RandomState(0)
    for _ in range(4):
        x = rs.randn(3)
        want = grad(f)(x)
        for fun in (fast, fast2):
            got = fun(x)
            assert onp.array_equal(got, slow(x)) and onp.allclose(got, want, rtol=1e-14)
    # the program is const_graph's: NumPy calls, no kernel
    steps = fast.programs[0][1].steps
    assert len(fast.programs) == 1 and [s[0] for s in steps][:2] == [onp.sin, onp.multiply]


def test_without_numba_guards_still_record_again(no_numba):
    with pytest.warns(RuntimeWarning):
        fast = jit(lambda x: gnp.sum(x * 2.0) if gnp.sum(x) > 0 else gnp.sum(x * 3.0))
    assert fast(onp.ones(2)) == 4.0 and fast(-onp.ones(2)) == -6.0
    assert fast(onp.ones(2) * 2) == 8.0 and len(fast.programs) == 2


def test_recording_errors_name_jit():
    fast = jit(lambda x: 3.0)
    with pytest.raises(
        ValueError,
        match=r"^gradcy.jit: the output is independent of the "
        r"input",
    ):
        fast(onp.ones(2))
