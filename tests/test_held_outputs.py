"""What a differentiation saved for its backward pass does not change under it (gradcy issue
23, B). After make_vjp's forward pass, the arrays its tape holds (the output when a rule reads
it, the inputs rules read, their views) are read-only until the records let go of them; a
user's primitive runs with the held arguments read-only, and a write raises naming it and the
fix. The flags come back when the tape releases the arrays."""

import gc

import numpy as onp
import pytest

import gradcy.numpy as np
from gradcy import grad, grad_and_aux, make_vjp, value_and_grad
from gradcy.extend import defvjp, primitive


X = onp.linspace(-1.0, 1.0, 6).reshape(2, 3)
G = onp.arange(1.0, 7.0).reshape(2, 3)


def softmax(z):
    e = np.exp(z)
    return e / np.sum(e, axis=1, keepdims=True)


def softmax_vjp(x, g):
    w = onp.exp(x) / onp.exp(x).sum(1, keepdims=True)
    return w * (g - (g * w).sum(1, keepdims=True))


CASES = {
    "softmax": (softmax, softmax_vjp),
    "tanh": (np.tanh, lambda x, g: g * (1 - onp.tanh(x) ** 2)),
    "exp": (np.exp, lambda x, g: g * onp.exp(x)),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_ans_is_read_only_while_held(name):
    f, want = CASES[name]
    vjp, ans = make_vjp(f)(X)
    with pytest.raises(ValueError, match="read-only"):
        ans *= 0
    with pytest.raises(ValueError, match="read-only"):
        ans[0, 0] = 5.0
    onp.testing.assert_allclose(vjp(G), want(X, G), rtol=1e-12)
    onp.testing.assert_allclose(vjp(G), want(X, G), rtol=1e-12)  # (still held: called again)
    assert not ans.flags.writeable
    vjp.release()
    assert ans.flags.writeable
    ans *= 0  # the user's array again


def test_ans_view_of_held_output():
    # ans is a view of tanh's output, which tanh's record holds
    vjp, ans = make_vjp(lambda x: np.tanh(x)[0])(X)
    with pytest.raises(ValueError, match="read-only"):
        ans *= 0
    onp.testing.assert_allclose(vjp(G[0])[0], G[0] * (1 - onp.tanh(X[0]) ** 2), rtol=1e-12)
    onp.testing.assert_array_equal(vjp(G[0])[1], 0.0)
    del vjp
    gc.collect()
    assert ans.flags.writeable


def test_views_of_held_arrays_are_read_only():
    vjp, ans = make_vjp(np.tanh)(X)
    row = ans[1]
    with pytest.raises(ValueError, match="read-only"):
        row += 1
    onp.testing.assert_allclose(vjp(G), G * (1 - onp.tanh(X) ** 2), rtol=1e-12)
    vjp.release()


def test_input_written_after_forward_pass():
    # sin's record holds the user's x: writing it would change cos(x) in the gradient
    x = X.copy()
    vjp, ans = make_vjp(np.sin)(x)
    with pytest.raises(ValueError, match="read-only"):
        x[0, 0] = 100.0
    onp.testing.assert_allclose(vjp(G), G * onp.cos(X), rtol=1e-12)
    vjp.release()
    assert x.flags.writeable
    onp.testing.assert_array_equal(x, X)
    x[0, 0] = 100.0


def test_input_view_restored():
    base = X.copy()
    x = base[1]
    vjp, _ = make_vjp(np.sin)(x)
    assert not x.flags.writeable and not base.flags.writeable
    onp.testing.assert_allclose(vjp(G[1]), G[1] * onp.cos(X[1]), rtol=1e-12)
    del vjp
    gc.collect()
    assert x.flags.writeable and base.flags.writeable


def test_read_only_input_stays_read_only():
    x = X.copy()
    x.flags.writeable = False
    vjp, _ = make_vjp(np.sin)(x)
    vjp.release()
    assert not x.flags.writeable


def test_unheld_input_stays_writable():
    # x * 2's rule reads no argument: nothing of x is held
    x = X.copy()
    vjp, ans = make_vjp(lambda x: x * 2.0)(x)
    assert x.flags.writeable and ans.flags.writeable
    onp.testing.assert_array_equal(vjp(G), 2 * G)
    vjp.release()


@primitive
def scale_in_place(a):
    a *= 2
    return a


defvjp(scale_in_place, lambda ans, a: lambda g: 2 * g)


def test_user_primitive_writing_held_argument_raises():
    # the fused softmax node holds only its output w: scaling w in place would change the
    # softmax's gradient
    def f(z):
        return np.sum(scale_in_place(softmax(z)) * G)

    with pytest.raises(ValueError, match=r"scale_in_place.*argument 0.*a\.copy\(\)"):
        grad(f)(X)
    with pytest.raises(ValueError, match=r"scale_in_place.*argument 0"):
        grad(lambda z: np.sum(scale_in_place(np.tanh(z))))(X)


def test_user_primitive_flags_restored_and_unheld_argument_written():
    seen = []

    @primitive
    def peek(a):
        seen.append(a.flags.writeable)
        return a * 1.0

    defvjp(peek, lambda ans, a: lambda g: g)

    def f(x):
        t = np.tanh(x)  # tanh's record holds t
        y = peek(t)
        seen.append(t._value.flags.writeable)
        return np.sum(y * t)

    grad(f)(X)
    assert seen == [False, True]
    # an argument nothing holds is the function's to write (x * 1.0: not saved)
    out = grad(lambda x: np.sum(scale_in_place(x * 1.0) * G))(X)
    onp.testing.assert_array_equal(out, 2 * G)


def test_outputs_of_consuming_operators_are_writable():
    value, g = value_and_grad(lambda x: np.sum(np.tanh(x) ** 2))(X)
    g += 1
    (g2, aux) = grad_and_aux(lambda x: (np.sum(np.tanh(x)), np.tanh(x)))(X)
    assert aux.flags.writeable and g2.flags.writeable
    aux *= 0
    x = X.copy()
    grad(lambda x: np.sum(np.sin(x)))(x)
    assert x.flags.writeable


def test_checkpointed_block_writing_held_argument_raises():
    # tanh's record holds t; the block, run on plain values, would scale it in place
    from gradcy import checkpoint

    def block(h):
        h *= 2
        return h

    def f(x):
        t = np.tanh(x)
        return np.sum(checkpoint(block)(t) * t)

    with pytest.raises(ValueError, match=r"checkpoint\(block\).*argument"):
        grad(f)(X)
