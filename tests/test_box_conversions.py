"""Python-level conversions of a traced value that would drop its gradient or have none raise
an error naming the call, why, and the fix (issue #23): x.tolist(), round(x), x.view(dtype).
autograd 1.9.1 raises for all three (its ArrayBox has no tolist or view, and no __round__)."""

import numpy as onp
import pytest

import gradcy.numpy as np
from gradcy import TracerArrayConversionError, grad, make_jvp
from gradcy.misc import const_graph

X = onp.array([0.5, -1.5, 2.0])


def test_tolist_of_a_traced_value_raises_naming_it_and_the_fix():
    def f(x):
        return np.sum(np.array(x.tolist()) * x)  # would be x, not 2x: a lost gradient

    for run in (lambda: grad(f)(X), lambda: make_jvp(f)(X)(onp.ones(3))):
        with pytest.raises(
            TracerArrayConversionError,
            match=r"x\.tolist\(\) of a traced value .* drop its gradient"
            r".*index it \(x\[i\]\)",
        ):
            run()


def test_tolist_of_a_constant_and_under_const_graph_still_reads():
    def f(x):
        b = np.zeros(3)  # a constant of the trace
        return np.sum(x) * len(b.tolist())

    onp.testing.assert_allclose(grad(f)(X), 3.0)
    fast = const_graph(lambda x: np.sum(x) + sum(x.tolist()))
    assert fast(X) == 2 * onp.sum(X)
    assert fast(-X) == -2 * onp.sum(X)  # a checked read: recorded again


def test_round_of_a_traced_value_raises_naming_np_round():
    for f, fix in (
        (lambda x: round(x[0]), r"np\.round\(x\)"),
        (lambda x: round(np.sum(x), 2), r"np\.round\(x, 2\)"),
    ):
        with pytest.raises(TypeError, match=r"round\(x\) of a traced value .*" + fix):
            grad(f)(X)


def test_view_as_another_dtype_raises_naming_astype():
    with pytest.raises(
        TypeError,
        match=r"x\.view\(<class 'int'>\) of a traced value .* "
        r"no derivative\. Use x\.astype\(dtype\)",
    ):
        grad(lambda x: np.sum(x.view(int)))(X)
    with pytest.raises(TypeError, match=r"x\.view\(dtype=dtype\('int64'\)\)"):
        grad(lambda x: np.sum(x.view(dtype=onp.dtype("int64"))))(X)
    with pytest.raises(TypeError, match=r"x\.view\(<class 'numpy\.matrix'>\)"):
        grad(lambda x: np.sum(x.view(onp.matrix)))(X)


def test_view_of_the_same_dtype_is_a_traced_view():
    def f(x):
        v = x.view()
        w = x.view(onp.float64)
        return np.sum(v * w * x)

    onp.testing.assert_allclose(grad(f)(X), 3 * X**2, rtol=1e-12)
