import numpy as onp

import gradcy.numpy as np
from gradcy import _core, grad


def test_chain_matches_central_differences():
    x = onp.array([1.0, 2.0, 3.0])

    def f(x):
        for _ in range(3):
            x = np.sin(x) * 1.0001 + 0.01 * x
        return np.sum(x)

    g = grad(f)(x)
    eps = 1e-6
    numeric = [(f(x + eps * e) - f(x - eps * e)) / (2 * eps) for e in onp.eye(3)]
    assert onp.allclose(g, numeric, rtol=1e-6)
    assert _core.stats()["live_tapes"] == 0
