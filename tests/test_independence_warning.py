"""autograd's "Output seems independent of input." warning, differentially: each program runs
under each operator in autograd 1.9.1 and in gradcy, and gradcy warns exactly as often as
autograd does. autograd warns when the output is not a traced value of the differentiation
(not computed from the argument), never because a rule's derivative is None or zero:
fixed_point's x0 and a user primitive whose VJP gives None are traced, so neither warns."""

import types
import warnings

import numpy as onp
import pytest

import gradcy
import gradcy.extend
import gradcy.numpy
from gradcy.misc.fixed_points import fixed_point as gc_fixed_point
from gradcy.misc.tracers import const_graph as gc_const_graph

pytest.importorskip("autograd")
import autograd
import autograd.extend
import autograd.numpy
from autograd.misc.fixed_points import fixed_point as ag_fixed_point
from autograd.misc.tracers import const_graph as ag_const_graph

_OPERATORS = ("grad", "value_and_grad", "jacobian", "elementwise_grad", "hessian")


def _library(ops, np, extend, fixed_point, const_graph):
    @extend.primitive
    def none_vjp(x):
        return x * 2.0

    extend.defvjp(none_vjp, lambda ans, x: lambda g: None)
    extend.defjvp(none_vjp, lambda g, ans, x: None)

    @extend.primitive
    def first_only(x, y):  # a rule for argument 0 only; None for argument 1
        return x * y

    extend.defvjp(first_only, lambda ans, x, y: lambda g: g * y, None)
    lib = types.SimpleNamespace(
        np=np,
        fixed_point=fixed_point,
        const_graph=const_graph,
        none_vjp=none_vjp,
        first_only=first_only,
    )
    for name in _OPERATORS + ("make_vjp", "make_jvp"):
        setattr(lib, name, getattr(ops, name))
    return lib


AG = _library(autograd, autograd.numpy, autograd.extend, ag_fixed_point, ag_const_graph)
GC = _library(gradcy, gradcy.numpy, gradcy.extend, gc_fixed_point, gc_const_graph)


def _programs(lib):
    np = lib.np

    def fp(a, x0):  # Newton's iteration for sqrt(a), started at x0
        step = lambda a: lambda x: 0.5 * (x + a / x)
        return lib.fixed_point(step, a, x0, lambda x, y: np.max(np.abs(x - y)), 1e-12)

    return {
        "constant": lambda x: 3.0,
        "constructor": lambda x: np.sum(np.zeros(np.shape(x))) + 1.0,
        "traced": lambda x: np.sum(np.sin(x)),
        "traced times zero": lambda x: np.sum(x * 0.0),
        "fixed_point of a": lambda x: np.sum(fp(x + 1.0, onp.ones(np.shape(x)))),
        "fixed_point of x0": lambda x: np.sum(fp(2.0, x + 1.0)),
        "primitive whose vjp is None": lambda x: np.sum(lib.none_vjp(x)),
        "primitive with no rule for the argument": lambda x: np.sum(lib.first_only(2.0, x)),
    }


def _operators(lib):
    ops = {name: (lambda name: lambda f, x: getattr(lib, name)(f)(x))(name) for name in _OPERATORS}
    ops["make_vjp"] = lambda f, x: lib.make_vjp(f)(x)[0](1.0)
    ops["make_jvp"] = lambda f, x: lib.make_jvp(f)(x)(onp.ones_like(x))
    ops["const_graph"] = lambda f, x: lib.const_graph(f)(x)
    return ops


def _run(call):
    """(number of independence warnings, result, exception) of call()."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        try:
            result, error = call(), None
        except Exception as e:  # (both libraries' errors are compared by kind below)
            result, error = None, e
    count = sum(str(w.message).startswith("Output seems independent of input.") for w in caught)
    return count, result, error


# the difference, deliberate: autograd fails on the Hessian of a primitive whose VJP gives None
# for an array (None cannot be reshaped), gradcy gives zeros and warns (the gradient it
# differentiates is a constant). (gradcy's const_graph records and replays a value made by
# array constructors, with the warning, where autograd warns and raises.)
_DIFFERENT = {("primitive whose vjp is None", "hessian", "array"): (0, 1)}
_ARGS = {"float": 1.5, "array": onp.array([1.0, 2.0])}


@pytest.mark.parametrize("kind", list(_ARGS))
@pytest.mark.parametrize("op", list(_operators(GC)))
@pytest.mark.parametrize("program", list(_programs(GC)))
def test_warns_as_autograd_warns(program, op, kind):
    x = _ARGS[kind]
    ag = _run(lambda: _operators(AG)[op](_programs(AG)[program], x))
    gc = _run(lambda: _operators(GC)[op](_programs(GC)[program], x))
    assert (ag[0], gc[0]) == _DIFFERENT.get((program, op, kind), (ag[0], ag[0]))
    if gc[2] is not None:
        # gradcy fails only where autograd does: a primitive with no JVP for the argument
        # (gradcy's MissingJVPError is a NotImplementedError), or const_graph of a constant
        assert ag[2] is not None, repr(gc[2])
        return
    if ag[2] is None and ag[1] is not None and program != "primitive whose vjp is None":
        pairs = zip(gc[1], ag[1]) if op == "value_and_grad" else [(gc[1], ag[1])]
        for mine, theirs in pairs:
            onp.testing.assert_allclose(mine, theirs, rtol=1e-9)


@pytest.mark.parametrize("program", list(_programs(GC)))
def test_jit_warns_as_autograd_const_graph(program):
    # gradcy.jit records as const_graph does: it warns where autograd's const_graph does
    # (and raises there too, except for a constructor's value, which it replays)
    x = _ARGS["array"]
    ag = _run(lambda: AG.const_graph(_programs(AG)[program])(x))
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="gradcy.jit")
        gc = _run(lambda: gradcy.jit(_programs(GC)[program])(x))
    assert (ag[0], gc[0]) == _DIFFERENT.get((program, "const_graph", "array"), (ag[0], ag[0]))
    assert (gc[2] is None) == (ag[2] is None or program == "constructor"), repr(gc[2])


def test_fixed_point_of_x0_gradient_and_no_warning():
    # the brief's case: grad with respect to the starting point, whose rule gives None
    np = gradcy.numpy
    f = lambda x0: gc_fixed_point(
        lambda a: lambda x: 0.5 * (x + a / x), 2.0, x0, lambda x, y: np.max(np.abs(x - y)), 1e-12
    )
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert gradcy.grad(f)(1.0) == 0.0  # a float (the argument's type), zero
        g = gradcy.grad(lambda x0: np.sum(f(x0)))(onp.ones(3))  # grad's fast path
    assert g.dtype == onp.float64 and g.shape == (3,) and not g.any()


def test_warns_once_at_trace_time_attributed_to_the_caller():
    # make_vjp warns when it traces (as autograd), not again when the VJP runs
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        vjp, _ = gradcy.make_vjp(lambda x: gradcy.numpy.sum(gradcy.numpy.ones(2)))(onp.ones(2))
        assert len(caught) == 1 and caught[0].filename == __file__
        vjp(1.0)
    assert len(caught) == 1
