"""Adversarial programs against the sweep (gradcy/_tape.pyx): a rule computing, during a backward
pass, with the traced values of its own differentiation or of a finished inner one gets its
results one level deeper (_swept_value); which results are wrapped is decided by walking the
containers they are (_differentiable)."""

import numpy as onp
import pytest

import gradcy
import gradcy.numpy as np
from gradcy import grad, make_vjp
from gradcy.extend import defvjp, primitive


def _through_a_rule(make):
    """grad of sum(2 x) whose VJP calls a primitive returning make() on the traced x (so during
    the sweep); returns (gradient, what the rule's call returned)."""
    held, seen = {}, []
    made = primitive(lambda a: make())
    twice = primitive(lambda a: 2.0 * a)

    def vjp(g):
        seen.append(made(held["x"]))
        return g * 2.0

    defvjp(twice, lambda ans, a: vjp)

    def f(x):
        held["x"] = x
        return np.sum(twice(x))

    return grad(f)(onp.array([1.0, 2.0])), seen[0]


def test_a_list_holding_itself_returned_during_the_sweep():
    # the walk over a container result recursed in C without end: a segmentation fault
    def selfref():
        lst = [1]
        lst.append(lst)
        return lst

    g, r = _through_a_rule(selfref)
    assert g.tolist() == [2.0, 2.0]
    assert type(r) is list and r[1] is r  # (integers only: returned plain)

    def selfref_float():
        lst = [1, {"a": (2,)}]
        lst.append(lst)
        lst.append(0.5)
        return lst

    g, r = _through_a_rule(selfref_float)
    assert g.tolist() == [2.0, 2.0]
    assert r._value[2] is r._value and r._value[3] == 0.5  # (a float in it: one level deeper)


def test_a_container_nested_deeper_than_the_c_stack_returned_during_the_sweep():
    def deep():
        v = [0.5]
        for _ in range(300000):
            v = [v]
        return v

    g, r = _through_a_rule(deep)
    assert g.tolist() == [2.0, 2.0]
    assert type(r._value) is list  # (the float at the bottom is found)


def test_a_value_escaped_between_forward_and_backward_pass_raises_in_a_rule():
    # the sweep floor admitted any finished tape whose trace id was above the sweeping tape's:
    # a value escaped from an unrelated grad run after make_vjp's forward pass was computed on
    # in the rule, and vjp() returned a Box of a released tape as the gradient (the same escape
    # before make_vjp raised). A tape now knows the differentiation it began inside
    leak = {}
    p = primitive(lambda a: a * 2.0)
    defvjp(p, lambda ans, a: lambda g: g * leak["b"])
    x = onp.array([1.0, 2.0])
    vjp, _ = make_vjp(lambda z: np.sum(p(z)))(x)
    grad(lambda z: (leak.__setitem__("b", z * 2.0), np.sum(z))[1])(x)  # unrelated, finished
    try:
        with pytest.raises(gradcy.EscapedValueError, match="already finished"):
            vjp(1.0)
    finally:
        vjp.release()


def _strip(v):
    return v._value if isinstance(v, gradcy.core.Box) else v


def test_values_of_a_differentiation_begun_during_the_backward_pass_are_computed_on():
    # a rule that runs a grad (begun during the backward pass, so admitted) leaves one of its
    # values to a rule that runs later in the same pass: computed on, one level deeper, as the
    # values of a differentiation begun inside the forward pass are (test_drop_in)
    leak = {}

    def runs_a_grad(g):
        grad(lambda z: (leak.__setitem__("b", z * 2.0), np.sum(z))[1])(onp.ones(2))
        return g

    q = primitive(lambda a: a * 1.0)
    defvjp(q, lambda ans, a: runs_a_grad)
    p = primitive(lambda a: a * 2.0)
    defvjp(p, lambda ans, a: lambda g: _strip(g * leak["b"]))
    assert grad(lambda x: np.sum(q(p(x))))(onp.array([0.5, 1.5])).tolist() == [2.0, 2.0]


def test_values_of_a_differentiation_begun_in_another_thread_during_the_forward_pass():
    # the inner differentiation of a second derivative runs in a worker thread during the outer
    # forward pass; its rule records, on the outer trace, calls whose holders keep the inner
    # trace's values (as PennyLane's parameter shift does, test_drop_in): the outer backward
    # pass, in the main thread, computes on them as when the inner one ran in the main thread
    import threading

    from test_drop_in import _Holder, _shifted

    def f(v):
        return _shifted(v[0], v[1], _Holder(v[0], v[1]))

    def outer(v, threaded):
        out = {}

        def inner():
            out["g"] = grad(f)(v)

        if threaded:
            th = threading.Thread(target=inner)
            th.start()
            th.join()
        else:
            inner()
        return np.sum(out["g"] * onp.array([1.0, 2.0]))

    v = onp.array([0.4, 1.3])
    a, b = v
    want = onp.array([[-onp.sin(a) * b, onp.cos(a)], [onp.cos(a), 0.0]]) @ [1.0, 2.0]
    assert grad(lambda w: outer(w, False))(v) == pytest.approx(want, abs=1e-14)
    assert grad(lambda w: outer(w, True))(v) == pytest.approx(want, abs=1e-14)
