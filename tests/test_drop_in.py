"""gradcy standing in for autograd in libraries built on it (issue #22): the reduced cases of
what PennyLane 0.45.1's autograd interface relies on. The switch itself (gradcy.autograd_alias)
is checked in fresh interpreters, since it renames gradcy's traced-value class."""

import os
import subprocess
import sys
import textwrap

import numpy as onp
import pytest

import gradcy
import gradcy.numpy as np
from gradcy import grad, hessian
from gradcy._core import Box
from gradcy.builtins import DictBox, SequenceBox, getval, make_dict
from gradcy.builtins import dict as gdict
from gradcy.builtins import list as glist
from gradcy.builtins import tuple as gtuple
from gradcy.core import primitive_vjps, primitive_with_deprecation_warnings
from gradcy.extend import defvjp, defvjp_argnums, primitive
from gradcy.vspace import ArrayVSpace, VSpace


def run_python(code, env=None):
    out = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=120,
        env=None if env is None else {**os.environ, **env},
    )
    assert out.returncode == 0, out.stderr
    return out.stdout


# ---- the switch and the class names (cause 2) ---------------------------------------------
def test_import_gradcy_leaves_the_import_system_alone():
    # issue #24: autograd's rule names of the on-demand scipy modules come from their module
    # __getattr__, not from a finder on sys.meta_path
    pytest.importorskip("scipy")
    out = run_python("""
        import sys
        before = list(sys.meta_path)
        import gradcy, gradcy.scipy.special
        from gradcy.scipy.special import make_grad_logsumexp   # an autograd rule name
        from gradcy.scipy.stats.norm import unbroadcast_f
        print(sys.meta_path == before, callable(make_grad_logsumexp), callable(unbroadcast_f))
    """)
    assert out.split() == ["True", "True", "True"]


def test_alias_resolves_autograd_and_names_the_box_as_autograd_does():
    out = run_python("""
        import gradcy.autograd_alias
        import autograd, autograd.numpy as anp, gradcy, gradcy.numpy
        from autograd.numpy.numpy_boxes import ArrayBox
        from autograd.builtins import SequenceBox
        seen = []
        def f(x):
            seen.append((type(x).__module__.split(".")[0], type(x).__name__,
                         isinstance(x, ArrayBox), isinstance(x, SequenceBox)))
            return anp.cos(x)
        print(autograd is gradcy, anp is gradcy.numpy, autograd.grad(f)(0.0), seen)
        gradcy.autograd_alias.check_no_real_autograd()
    """)
    assert out.strip() == "True True -0.0 [('autograd', 'ArrayBox', True, False)]"


def test_alias_refuses_after_the_real_autograd():
    pytest.importorskip("autograd")
    out = subprocess.run(
        [sys.executable, "-c", "import autograd, gradcy.autograd_alias"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode != 0 and "the real autograd is already imported" in out.stderr


def test_alias_runs_a_script(tmp_path):
    script = tmp_path / "prog.py"
    script.write_text("import sys, autograd\nprint(autograd.__name__, sys.argv[1:])\n")
    out = subprocess.run(
        [sys.executable, "-m", "gradcy.autograd_alias", str(script), "a"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "gradcy ['a']"


# ---- module attributes copied by value (cause 3) --------------------------------------------
def test_gradcy_numpy_has_no_module_getattr_to_copy():
    # pennylane.numpy copies every callable of autograd.numpy's namespace; a module __getattr__
    # among them would answer for pennylane.numpy's own submodules
    assert "__getattr__" not in vars(np) and "__dir__" not in vars(np)
    assert np.random.__name__ == "gradcy.numpy.random" and "random" in dir(np)


# ---- Box.type_mappings (cause 4) ------------------------------------------------------------
class Frozen(onp.ndarray):
    """An ndarray subclass whose box factory refuses it (PennyLane's requires_grad=False)."""


def _refuse(x, *args):
    raise ValueError("not trainable")


def test_type_mappings_factory_is_called_on_inputs():
    Box.type_mappings[Frozen] = _refuse
    assert Box.type_mappings[Frozen] is _refuse
    x = onp.ones(2).view(Frozen)
    with pytest.raises(ValueError, match="not trainable"):
        grad(lambda v: np.sum(v * v))(x)
    assert grad(lambda v: np.sum(v * v))(onp.ones(2)).tolist() == [2.0, 2.0]


# ---- ndarray subclasses registered through autograd's API (PennyLane's tensor) -------------
class Registered(onp.ndarray):
    """An ndarray subclass registered as PennyLane registers its tensor: a box factory in
    Box.type_mappings and a VSpace in VSpace.mappings."""


class ArrayBoxRegistered(onp.ndarray):
    """An ndarray subclass registered with autograd's ArrayBox.register (gradcy's Box)."""


class Unregistered(onp.ndarray):
    """An ndarray subclass nobody registered."""


def _registered_factory(x, *args):
    return Box(x, *args)


Box.type_mappings[Registered] = _registered_factory
VSpace.mappings[Registered] = ArrayVSpace
Box.register(ArrayBoxRegistered)


def test_registered_subclass_is_an_argument_and_a_result_as_in_autograd():
    x = onp.array([0.5, 1.5]).view(Registered)
    c = onp.array([2.0, 3.0]).view(Registered)  # a constant next to a traced value
    g = grad(lambda v: np.sum(np.sin(v) * c))(x)
    assert g.tolist() == (onp.cos([0.5, 1.5]) * [2.0, 3.0]).tolist()
    g = grad(lambda v: np.sum(v * c))(onp.array([0.5, 1.5]))
    assert g.tolist() == [2.0, 3.0]


def test_array_box_register_accepts_the_subclass():
    assert Box.type_mappings[ArrayBoxRegistered] is Box  # as autograd's ArrayBox
    x = onp.array([1.0, 2.0]).view(ArrayBoxRegistered)
    assert grad(lambda v: np.sum(v * v))(x).tolist() == [2.0, 4.0]


def test_unregistered_subclass_stays_refused_next_to_a_registered_one():
    c = onp.array([2.0, 3.0]).view(Unregistered)
    with pytest.raises(TypeError, match="argument 0 is a test_drop_in.Unregistered"):
        grad(lambda v: np.sum(v))(c)
    with pytest.raises(TypeError, match=r"test_drop_in.Unregistered \(a subclass of"):
        grad(lambda v: np.sum(v * c))(onp.array([0.5, 1.5]).view(Registered))
    with pytest.raises(TypeError, match="numpy.matrix"):
        grad(lambda v: np.sum(v * onp.matrix([[1.0, 2.0]])))(onp.array([0.5, 1.5]).view(Registered))


# ---- traced containers (causes 5 and 6) -----------------------------------------------------
@primitive
def _execute(parameters, scale):
    # as PennyLane's: the body computes on plain values (PennyLane's devices unwrap the
    # parameters); only the rule gives the gradient
    return sum(onp.cos(getval(p)) for ps in parameters for p in ps) * scale


defvjp(
    _execute,
    lambda ans, parameters, scale: (
        lambda g: gtuple([glist([-g * scale * onp.sin(p) for p in ps]) for ps in parameters])
    ),
)


def _circuit(x):
    return _execute(gtuple([glist([x, 2.0 * x]), glist([x * x])]), 3.0)


def test_primitive_of_a_traced_container_uses_its_rule():
    x = 0.3
    expected = -3.0 * (onp.sin(x) + 2.0 * onp.sin(2 * x) + 2 * x * onp.sin(x * x))
    assert grad(_circuit)(x) == pytest.approx(expected, rel=1e-12)
    second = -3.0 * (
        onp.cos(x) + 4.0 * onp.cos(2 * x) + 2 * onp.sin(x * x) + 4 * x * x * onp.cos(x * x)
    )
    assert hessian(_circuit)(x) == pytest.approx(second, rel=1e-12)


def test_traced_containers_are_sequence_and_dict_boxes():
    seen = []

    def f(x):
        t, d = gtuple([x, x]), make_dict(("a",), x)
        seen.append(
            (
                isinstance(x, SequenceBox),
                isinstance(t, SequenceBox),
                isinstance(d, DictBox),
                isinstance(t, DictBox),
                type(t._value).__name__,
            )
        )
        return t[0] * t[1] + gdict(a=x)["a"]

    assert grad(f)(2.0) == 5.0
    assert seen == [(False, True, True, False, "tuple")]
    assert type(gtuple([1.0, 2.0])) is tuple  # no traced element: a plain tuple


# ---- a traced value used inside a VJP of its own differentiation (cause 7) -------------------
def test_vjp_may_use_traced_values_of_its_own_differentiation():
    held = {}

    @primitive
    def scaled(x):
        return 2.0 * x

    def vjp_maker(ans, x):
        def vjp(g):
            # the rule reads a traced value of this same differentiation (PennyLane's VJPs
            # run tapes that hold the traced parameters)
            return g * 2.0 * onp.ones(np.shape(held["x"])) * np.ndim(held["x"])

        return vjp

    defvjp(scaled, vjp_maker)

    def f(x):
        held["x"] = x
        return np.sum(scaled(x))

    assert grad(f)(onp.ones(3)).tolist() == [2.0, 2.0, 2.0]
    assert gradcy.grad(f)(onp.ones((2, 2))).tolist() == [[4.0, 4.0], [4.0, 4.0]]


def test_alias_ndarray_subclass_operators_defer_to_the_traced_value():
    # PennyLane's tensor: an ndarray subclass whose __array_ufunc__ calls ndarray's and wraps
    # what it returns; tensor + traced value must reach the traced value's __radd__, as it
    # does under autograd < 1.9 (the version PennyLane pins)
    out = run_python(
        """
        import gradcy.autograd_alias
        import numpy as onp, autograd
        class Tensor(onp.ndarray):
            def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
                args = [onp.asarray(i) if isinstance(i, Tensor) else i for i in inputs]
                return onp.asarray(super().__array_ufunc__(ufunc, method, *args, **kwargs))
        c = onp.array(0.3).view(Tensor)
        print(autograd.grad(lambda a: c + a * a)(2.0))
    """,
        env={"GRADCY_AUTOGRAD_VERSION": "1.8.0"},
    )
    assert out.strip() == "4.0"


def test_second_order_through_a_vjp_that_strips_one_level():
    # PennyLane's VJP computes with the traced parameters of its own differentiation and strips
    # one tracing level from the result (qml.math.to_numpy(v, max_depth=1)): as under autograd,
    # that level is the inner differentiation's, so an outer one still traces the result
    held = {}

    @primitive
    def opaque_sin(x):
        return onp.sin(x)

    def strip(v):
        return v._value if isinstance(v, Box) else v

    defvjp(opaque_sin, lambda ans, x: lambda g: g * strip(np.cos(held["x"])))

    def f(x):
        held["x"] = x
        return opaque_sin(x)

    x = 0.4
    assert grad(f)(x) == pytest.approx(onp.cos(x), rel=1e-14)
    assert grad(grad(f))(x) == pytest.approx(-onp.sin(x), rel=1e-14)


COVERED = {"gradcy.builtins.make_sequence", "gradcy.builtins.make_dict"}


def test_traced_containers_gradients_match_central_differences():
    """make_sequence (builtins.tuple/list of traced elements) and make_dict: reverse and
    forward mode to second order against central differences, and the dtype of each
    element's gradient is its own (float32 stays float32)."""
    from gradcy.builtins import make_dict
    from gradcy.builtins import tuple as traced_tuple
    from gradcy.test_util import check_grads

    def f(x, y):
        t = traced_tuple([np.sin(x), y * x])
        return np.sum(t[0] * t[1]) + np.sum(t[1] ** 2)

    def g(x, y):
        d = make_dict(("a", "b"), np.sin(x), y * x)
        return np.sum(d["a"] * d["b"])

    x, y = onp.array([0.3, -1.2, 0.7]), onp.array([1.1, 0.4, -0.5])
    check_grads(f, modes=["fwd", "rev"], order=2)(x, y)
    check_grads(g, modes=["rev"], order=1)(x, y)
    g32 = grad(f)(x.astype(onp.float32), y.astype(onp.float32))
    assert g32.dtype == onp.float32


# ---- the cotangent of a container output, as autograd's VJPs receive it -----------------------
@primitive
def _sin_cos(x):
    return (onp.sin(x), onp.cos(x))


def _sin_cos_vjp(ans, x):
    def vjp(g):
        # as PennyLane's VJPs: a plain container of cotangents is data (its plain values,
        # qml.math.to_numpy); a traced container (SequenceBox) keeps its trace; the VJP reads
        # every element (autograd gives zeros for an unused one)
        if not isinstance(g, SequenceBox):
            g = [getval(e) for e in g]
        return np.einsum("i,i", g, np.stack([np.cos(x), -np.sin(x)]))

    return vjp


defvjp(_sin_cos, _sin_cos_vjp)


def test_container_output_cotangent_is_dense_and_of_the_output_type():
    seen = []
    p = primitive(lambda x: (onp.sin(x), onp.cos(x)))
    defvjp(p, lambda ans, x: lambda g: (seen.append(g), g[0] * onp.cos(x) - g[1] * onp.sin(x))[1])
    assert grad(lambda x: p(x)[0] * 2.0)(0.3) == pytest.approx(2.0 * onp.cos(0.3), rel=1e-15)
    # autograd: a tuple of both cotangents, zeros for the element the function did not use
    assert type(seen[0]) is tuple and onp.asarray(seen[0][1]).tolist() == 0.0


def test_dict_output_cotangent_is_dense_and_traced_as_a_dict_box():
    # a read of a dict output gives a sparse cotangent (one element): autograd adds it into
    # zeros before the VJP reads it; at second order it is one traced dict (a DictBox)
    seen = []
    p = primitive(lambda x: {"a": onp.sin(x), "b": onp.cos(x)})
    defvjp(
        p, lambda ans, x: lambda g: (seen.append(g), g["a"] * onp.cos(x) - g["b"] * onp.sin(x))[1]
    )
    assert grad(lambda x: p(x)["a"] * 2.0)(0.3) == pytest.approx(2 * onp.cos(0.3), rel=1e-15)
    assert type(seen[0]) is dict and onp.asarray(seen[0]["b"]).tolist() == 0.0
    mixed = grad(lambda c: grad(lambda x: p(x)["a"] * c)(0.3))(2.0)
    assert mixed == pytest.approx(onp.cos(0.3), rel=1e-15)
    assert isinstance(seen[-1], DictBox)


def _register_sin_cos_rule(how, p, rule):
    """Register rule(g, x) -> the cotangent of x as p's VJP, in one of autograd's maker forms."""
    if how == "defvjp, a maker whose module is named gradcy.*":
        maker = lambda ans, x: lambda g: rule(g, x)
        maker.__module__ = "gradcy.user_rules"
        defvjp(p, maker)
    elif how == "defvjp_argnums":
        defvjp_argnums(p, lambda argnums, ans, args, kwargs: lambda g: (rule(g, args[0]),))
    elif how == "primitive_vjps":
        primitive_vjps[p] = lambda argnums, ans, args, kwargs: lambda g: (rule(g, args[0]),)
    else:  # autograd's deprecated prim.defvjp(vjpfun), vjpfun(g, ans, vs, gvs, *args)
        with pytest.warns(DeprecationWarning):
            p.defvjp(lambda g, ans, vs, gvs, x: rule(g, x))


@pytest.mark.parametrize(
    "how",
    [
        "defvjp, a maker whose module is named gradcy.*",
        "defvjp_argnums",
        "primitive_vjps",
        "prim.defvjp",
    ],
)
def test_every_maker_form_rule_gets_dense_container_cotangents(how):
    # a rule in a maker form of autograd's API is one written for autograd (gradcy's own are
    # direct), wherever it is defined: gradcy's sparse cotangent (None for the unused element)
    # never reaches it
    seen = []
    p = primitive_with_deprecation_warnings(lambda x: (onp.sin(x), onp.cos(x)))

    def rule(g, x):
        seen.append(g)
        return g[0] * onp.cos(x) - g[1] * onp.sin(x)

    _register_sin_cos_rule(how, p, rule)
    assert grad(lambda x: p(x)[0] * 2.0)(0.3) == pytest.approx(2.0 * onp.cos(0.3), rel=1e-15)
    assert type(seen[0]) is tuple and [float(v) for v in seen[0]] == [2.0, 0.0]


def test_container_cotangent_traced_by_an_outer_differentiation_is_one_traced_container():
    # d/dc d/dx of sin(x) c + cos(x) c^2: the inner VJP's cotangent depends on c (traced by the
    # outer differentiation): it arrives as one traced container, as under autograd, so a VJP
    # that makes a plain container plain keeps the dependence (PennyLane's Hamiltonian
    # gradients: zeros and "Output seems independent of input" otherwise)
    def f(x, c):
        s = _sin_cos(x)
        return s[0] * c + s[1] * c**2

    x, c = 0.3, 0.7
    assert grad(f)(x, c) == pytest.approx(onp.cos(x) * c - onp.sin(x) * c**2, rel=1e-14)
    mixed = grad(lambda c: grad(f)(x, c))(c)
    assert mixed == pytest.approx(onp.cos(x) - 2 * c * onp.sin(x), rel=1e-14)


# ---- values of a finished inner differentiation used in an outer backward pass ---------------
class _Holder:
    """A non-differentiated argument holding traced values (PennyLane's tapes)."""

    def __init__(self, a, b):
        self.a, self.b = a, b


@primitive
def _shifted(a, b, holder):
    return onp.sin(a) * b


def _strip(v):
    return v._value if isinstance(v, Box) else v


def _shifted_vjp_a(ans, a, b, h):
    # parameter shift, as PennyLane's: the rule runs the primitive again on copies of the
    # held parameters, the unshifted one (h.b) kept as it is, traced value included
    def vjp(g):
        up = _shifted(h.a + onp.pi / 2, h.b, _Holder(h.a + onp.pi / 2, h.b))
        down = _shifted(h.a - onp.pi / 2, h.b, _Holder(h.a - onp.pi / 2, h.b))
        return _strip(g * (up - down) / 2)

    return vjp


defvjp(_shifted, _shifted_vjp_a, lambda ans, a, b, h: lambda g: _strip(g * np.sin(h.a)))


def test_outer_backward_pass_runs_on_values_of_a_finished_inner_differentiation():
    # hessian = jacobian(jacobian): the inner backward pass records, on the outer trace, calls
    # whose holders keep values of the inner trace; the outer backward pass runs their rules
    # after the inner differentiation has finished: as under autograd, they compute on those
    # values (EscapedValueError before)
    def f(v):
        return _shifted(v[0], v[1], _Holder(v[0], v[1]))

    v = onp.array([0.4, 1.3])
    a, b = v
    assert hessian(f)(v) == pytest.approx(
        onp.array([[-onp.sin(a) * b, onp.cos(a)], [onp.cos(a), 0.0]]), abs=1e-14
    )


def test_a_value_escaped_before_the_backward_pass_still_raises_in_a_rule():
    escaped = []
    grad(lambda x: (escaped.append(x * 2.0), x * 3.0)[1])(1.0)
    p = primitive(lambda x: 2.0 * x)
    defvjp(p, lambda ans, x: lambda g: g * escaped[0])
    with pytest.raises(gradcy.EscapedValueError, match="already finished"):
        grad(p)(1.0)


def test_a_container_computed_in_a_rule_stays_one_level_deeper():
    # a rule computing with the traced values of its own differentiation gets results one
    # tracing level deeper, and strips one level from what it returns (PennyLane's VJPs:
    # qml.math.to_numpy(v, max_depth=1)); a primitive returning a tuple there (PennyLane's VJPs
    # execute tapes: a tuple of results) gives a traced container, one level deeper as
    # autograd's SequenceBox, so that the strip leaves the outer trace of the cotangent g
    held = {}
    opaque = primitive(lambda x: onp.sin(x))
    defvjp(opaque, lambda ans, x: lambda g: _strip(g * _sin_cos(held["x"])[1]))

    def f(x, c):
        held["x"] = x
        return opaque(x) * c

    x, c = 0.4, 1.7
    assert grad(f)(x, c) == pytest.approx(onp.cos(x) * c, rel=1e-15)
    assert grad(lambda c: grad(f)(x, c))(c) == pytest.approx(onp.cos(x), rel=1e-15)


@pytest.mark.parametrize("spec", ["i,i", "i,i..."])
def test_traced_container_as_an_array_operand(spec):
    # autograd's SequenceBox passed where an array is taken (PennyLane's
    # einsum("i,i...", dy, jac) on a traced container cotangent): NumPy's array of it
    jac = onp.arange(1.0, 4.0) if spec == "i,i" else onp.arange(1.0, 7.0).reshape(3, 2)

    def f(c):
        return np.sum(np.einsum(spec, gtuple([c, c * c, 2.0 * c]), jac))

    c = 0.5
    assert grad(f)(c) == pytest.approx(
        onp.sum(onp.array([1.0, 2 * c, 2.0]) @ jac.reshape(3, -1)), rel=1e-15
    )


# ---- the gradient of a registered ndarray subclass is what autograd's backward pass makes ------
@pytest.mark.parametrize(
    "f, shape, expected",
    [
        # (measured under autograd 1.8.0 and 1.9.1 with the subclass registered as here)
        (lambda x: 2.0 * x, (), onp.float64),  # the seed is a plain 0-d array: arithmetic on
        (lambda x: np.sin(x), (), Registered),  # it gives a NumPy scalar; rules that compute
        (lambda x: x * x, (), Registered),  # with the argument keep its class
        (lambda x: np.sum(x), (), onp.ndarray),
        (lambda x: np.sum(2.0 * x), (2,), onp.ndarray),
        (lambda x: np.sum(np.sin(x)), (2,), Registered),
    ],
)
def test_registered_subclass_gradient_type_is_autograds(f, shape, expected):
    # PennyLane's tests: qml.grad of a 0-d tensor is a float under parameter-shift (its VJP
    # returns NumPy scalars) and a tensor under backprop; gradcy made every such gradient a
    # plain ndarray
    x = onp.full(shape, 0.3).view(Registered)
    g = grad(f)(x)
    assert type(g) is expected and g.dtype == onp.float64 and onp.shape(g) == shape
    assert onp.allclose(g, grad(f)(onp.full(shape, 0.3)))


def test_plain_arrays_keep_the_type_of_their_input():
    # (autograd gives numpy.float64 here: for plain arrays gradcy keeps its rule, the
    # gradient has the type, dtype and shape of the input)
    g = grad(lambda x: 2.0 * x)(onp.array(0.3))
    assert type(g) is onp.ndarray and g.shape == () and g == 2.0


def test_alias_numpy_makes_object_arrays_of_traced_values():
    # PennyLane's Operator stores onp.array(params) of a tuple of traced values (a QNode's
    # outputs fed to the next QNode's template): under autograd NumPy makes an object array of
    # ArrayBoxes (they have no __array__), whose elements keep tracing; a float array of them
    # still raises, as it would drop the gradient
    out = run_python("""
        import gradcy.autograd_alias
        import numpy as onp, autograd, autograd.numpy as np
        from autograd.numpy.numpy_boxes import ArrayBox
        def f(x):
            a = onp.array((x[0], x[1] * x[1]))
            b = onp.asarray(x)
            assert a.dtype == object and a.shape == (2,) and type(a[0]) is ArrayBox
            assert b.dtype == object and b.shape == (2,) and type(b[1]) is ArrayBox
            y = x[0]
            assert onp.array(y).shape == () and onp.array(y)[()] is y
            try:
                onp.array((x[0], x[1]), dtype=float)
            except autograd.TracerArrayConversionError:
                pass
            else:
                raise AssertionError("a float array of traced values")
            # a gradcy function given a list of traced values still makes it one traced
            # array, as NumPy makes one array of it (autograd's wrappers do the same)
            c = np.append([x[0], x[1]], 4.0)
            assert type(c) is ArrayBox and c.dtype == onp.float64 and c.shape == (3,)
            return a[0] * 2.0 + np.sin(a[1]) + b[1] + 3.0 * c[1]
        print(autograd.grad(f)(onp.array([0.5, 0.3])).tolist())
    """)
    assert out.strip() == str([2.0, float(2 * 0.3 * onp.cos(0.09) + 1.0 + 3.0)])
