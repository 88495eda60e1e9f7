"""checkpoint of a function that closes over traced values (a layer's weights): they are inputs
of the checkpointed call, so their gradients arrive and the block is recomputed in the backward
pass; a traced value the function reaches otherwise (an attribute) raises naming checkpoint and
the fix."""

import numpy as onp
import pytest

import gradcy.numpy as np
from gradcy import checkpoint, grad, make_jvp

from vjp_harness import central_gradient

RS = onp.random.RandomState(0)
W0 = RS.randn(3, 3)
B0 = RS.randn(3)
H0 = RS.randn(2, 3)


def counted(block):
    """block wrapped so that its calls are counted (a checkpointed block runs twice: the
    forward pass and again in the backward pass)."""
    calls = []

    def f(h):
        calls.append(1)
        return block(h)

    return f, calls


def two_layers(W, h, wrap):
    layer = wrap(lambda h: np.tanh(h @ W))
    return np.sum(layer(layer(h)) ** 2)


@pytest.mark.parametrize("argnum", [0, 1, (0, 1)])
def test_closure_over_traced_weights(argnum):
    got = grad(lambda W, h: two_layers(W, h, checkpoint), argnum)(W0, H0)
    want = grad(lambda W, h: two_layers(W, h, lambda f: f), argnum)(W0, H0)
    for g, w in zip(
        got if type(argnum) is tuple else [got], want if type(argnum) is tuple else [want]
    ):
        onp.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-14)
    if argnum == 0:
        onp.testing.assert_allclose(
            got, central_gradient(lambda W: two_layers(W, H0, lambda f: f), W0), rtol=1e-6
        )


def test_closed_weights_only_traced_is_checkpointed():
    # h plain, W traced: the call used to run unrecorded (its insides saved as usual)
    def loss(W):
        f, calls = counted(lambda h: np.tanh(h @ W))
        out = np.sum(checkpoint(f)(H0) ** 2)
        loss.calls = calls
        return out

    g = grad(loss)(W0)
    assert len(loss.calls) == 2
    onp.testing.assert_allclose(g, grad(lambda W: np.sum(np.tanh(H0 @ W) ** 2))(W0), rtol=1e-12)


def test_closure_over_a_list_of_weights():
    def loss(params, h):
        layer = checkpoint(lambda h: np.tanh(h @ params[0] + params[1]))
        return np.sum(layer(h) ** 2)

    def ref(params, h):
        return np.sum(np.tanh(h @ params[0] + params[1]) ** 2)

    got = grad(loss)([W0, B0], H0)
    want = grad(ref)([W0, B0], H0)
    for g, w in zip(got, want):
        onp.testing.assert_allclose(g, w, rtol=1e-12)


def test_closure_in_forward_mode():
    def f(W):
        return checkpoint(lambda h: np.tanh(h @ W))(H0)

    t = RS.randn(3, 3)
    got = make_jvp(f)(W0)(t)[1]
    want = make_jvp(lambda W: np.tanh(H0 @ W))(W0)(t)[1]
    onp.testing.assert_allclose(got, want, rtol=1e-12)


def test_traced_attribute_raises_naming_checkpoint():
    class Layer:
        def __call__(self, h):
            return np.tanh(h @ self.W)

    def loss(W):
        layer = Layer()
        layer.W = W
        return np.sum(checkpoint(layer)(H0))

    with pytest.raises(ValueError, match=r"checkpoint\(.*Pass it as an argument"):
        grad(loss)(W0)


def test_closure_of_plain_values_unchanged():
    def loss(h):
        return np.sum(checkpoint(lambda h: np.tanh(h @ W0))(h))

    onp.testing.assert_allclose(
        grad(loss)(H0), grad(lambda h: np.sum(np.tanh(h @ W0)))(H0), rtol=1e-12
    )
