"""A user's program, type-checked with `mypy --strict` against the installed gradcy (.ci/lint
with the editable install, .ci/package with the wheel): a logistic regression's loss written
with gradcy.numpy, its gradient and value, a primitive with its own VJP and JVP, a checkpointed
block, forward mode, flattening and an optimizer (gradcy.misc), and the memory counters. It
also runs (python tests/typing/user_program.py).

It must type-check as written, and the types mypy infers are asserted with assert_type, so a
change that loses them (grad typed as returning Any) fails (tests/typing/check.py); it runs in
the test suite too (tests/typing/test_user_program.py), so that it stays a working program.
"""

import sys
from typing import Any

import numpy as onp
from numpy.typing import NDArray

if sys.version_info >= (3, 11):
    from typing import assert_type
else:
    from typing_extensions import assert_type

import gradcy
import gradcy.memory
import gradcy.numpy as np
from gradcy import (
    checkpoint,
    elementwise_grad,
    grad,
    hessian,
    jacobian,
    make_jvp,
    make_vjp,
    value_and_grad,
)
from gradcy.extend import defjvp, defvjp, primitive
from gradcy.misc import flatten
from gradcy.misc.optimizers import adam
from gradcy.test_util import check_grads

Array = NDArray[onp.float64]


@primitive
def softplus(x: Array) -> Array:
    """log(1 + exp(x)), a primitive: gradcy records it as one operation."""
    return onp.logaddexp(0.0, x)


defvjp(softplus, lambda ans, x: lambda g: g / (1.0 + onp.exp(-x)))
defjvp(softplus, lambda g, ans, x: g / (1.0 + onp.exp(-x)))


def loss(w: Array, x: Array, y: Array) -> onp.floating[Any]:
    """The mean logistic loss of weights w on data (x, y) (a NumPy scalar: float() of a traced
    value would drop its gradient, and raises)."""
    z = x @ w
    return np.mean(softplus(z) - y * z)


def block(h: Array) -> Array:
    return np.tanh(h)


def deep(w: Array) -> onp.floating[Any]:
    h = checkpoint(block)(w)
    return np.sum(h * h)


def main() -> None:
    rng = onp.random.default_rng(0)
    x: Array = rng.standard_normal((20, 3))
    y: Array = (rng.random(20) > 0.5).astype(onp.float64)
    w: Array = np.zeros(3)

    check_grads(softplus, modes=["fwd", "rev"], order=2)(x[0])  # the rules vs differences
    g = grad(loss)(w, x, y)
    assert_type(g, Array)
    value, g2 = value_and_grad(loss)(w, x, y)
    assert_type(value, onp.floating[Any])
    assert_type(g2, Array)
    gx = grad(loss, 1)(w, x, y)  # another argument: typed Any
    gw, gx2 = grad(loss, (0, 1))(w, x, y)
    for _ in range(5):  # a few steps of gradient descent
        w = w - 0.5 * grad(loss)(w, x, y)

    assert_type(elementwise_grad(np.tanh)(w), Any)
    flat, unflatten = flatten({"w": w, "b": np.ones(2)})
    assert_type(flat, onp.ndarray[Any, Any])
    w_fit = adam(lambda p, i: grad(loss)(p, x, y), w, num_iters=10, step_size=0.1)
    vjp, ans = make_vjp(deep)(w)
    assert_type(ans, onp.floating[Any])
    vjp.release()
    out, tangent = make_jvp(deep)(w)(np.ones(3))
    h = hessian(deep)(w)
    jac = jacobian(block)(w)

    gradcy.memory.reset_peak()
    prof = gradcy.memory.profile(loss)(w, x, y)
    top = prof.top_site()
    peak: int = gradcy.memory.stats()["peak_saved_bytes"]
    print(
        f"loss {value:.4f}, gradient {g}, peak {peak} bytes, top site {top}",
        gx.shape,
        gw.shape,
        gx2.shape,
        out,
        tangent,
        h.shape,
        jac.shape,
        prof.summary(),
        unflatten(flat)["b"],
        w_fit,
    )


if __name__ == "__main__":
    main()
