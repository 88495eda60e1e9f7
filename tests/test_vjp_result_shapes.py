"""A reverse-mode rule's result is checked where the engine receives it: a cotangent whose
shape cannot be its argument's raises naming the primitive, the argument, the shape returned
and the shape expected; what the engine took before (the argument's shape, or one that
broadcasts to it) still gives the broadcast gradient."""

import numpy as onp
import pytest

import gradcy.numpy as np
from gradcy import grad
from gradcy.extend import defvjp, defvjp_argnums, primitive


X = onp.arange(6.0).reshape(2, 3)


def scaled_with_rule(result):
    @primitive
    def scaled(a, c):
        return a * c

    defvjp(scaled, lambda ans, a, c: lambda g: result(g), None)
    return scaled


@pytest.mark.parametrize("shape", [(4, 2, 3), (3, 2), (6,), (2, 1, 3)])
def test_wrong_shape_raises_naming_rule(shape):
    scaled = scaled_with_rule(lambda g: onp.ones(shape))
    with pytest.raises(ValueError) as e:
        grad(lambda x: np.sum(np.sin(scaled(x, 2.0))))(X)
    msg = str(e.value)
    assert "scaled" in msg and "argument 0" in msg
    assert f"shape {shape}" in msg and "shape (2, 3)" in msg


@pytest.mark.parametrize("shape", [(2, 3), (1, 3), (3,), (2, 1), ()])
def test_broadcastable_shape_accepted(shape):
    scaled = scaled_with_rule(lambda g: onp.full(shape, 2.0))
    g = grad(lambda x: np.sum(scaled(x, 2.0)))(X)
    onp.testing.assert_array_equal(g, onp.full((2, 3), 2.0))


def test_joint_rule_checked():
    @primitive
    def both(a, b):
        return a * b

    defvjp_argnums(
        both,
        lambda argnums, ans, args, kwargs: (
            lambda g: tuple(onp.ones((5,)) if k == 1 else g * args[1 - k] for k in argnums)
        ),
    )
    with pytest.raises(ValueError, match=r"both.*argument 1.*shape \(5,\).*shape \(2, 3\)"):
        grad(lambda y: np.sum(both(X, y)))(X)
    onp.testing.assert_array_equal(grad(lambda x: np.sum(both(x, X)))(X), X)


def test_joint_rule_wrong_count():
    @primitive
    def both(a, b):
        return a * b

    defvjp_argnums(both, lambda argnums, ans, args, kwargs: lambda g: (g,))
    with pytest.raises(ValueError, match=r"both.*returned 1 cotangents"):
        grad(lambda x: np.sum(both(x, x)))(X)
