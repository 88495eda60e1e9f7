"""The program tests/typing/check.py type-checks runs, and computes what it should."""

import runpy
from pathlib import Path

import numpy as onp

PROGRAM = Path(__file__).with_name("user_program.py")


def test_user_program_runs():
    program = runpy.run_path(str(PROGRAM))
    program["main"]()
    rng = onp.random.default_rng(0)
    x, y = rng.standard_normal((20, 3)), (rng.random(20) > 0.5).astype(onp.float64)
    w = onp.zeros(3)
    # the loss's gradient by hand: mean over rows of (sigmoid(x w) - y) x
    expected = ((1.0 / (1.0 + onp.exp(-(x @ w))) - y)[:, None] * x).mean(axis=0)
    onp.testing.assert_allclose(program["grad"](program["loss"])(w, x, y), expected, rtol=1e-12)
