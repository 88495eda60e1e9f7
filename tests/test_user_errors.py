"""The common mistakes get errors that name what is wrong and the fix, and point to
docs/sharp_edges.md (each message verbatim here): a value passed where the function goes,
JAX's keyword spellings, (loss, aux) and list outputs of grad, traced parameters of random
draws, and ndarray subclasses (np.matrix, masked arrays) as arguments or as constants next to
traced values."""

import re
import warnings

import numpy as onp
import pytest

import gradcy.numpy as np
from gradcy import (
    checkpoint,
    deriv,
    elementwise_grad,
    grad,
    grad_and_aux,
    hessian,
    jacobian,
    make_jvp,
    make_vjp,
    value_and_grad,
)

X = onp.array([0.5, 1.0, 2.0])


def _raises(fn, message):
    with pytest.raises(TypeError) as info:
        fn()
    assert str(info.value) == message
    assert info.value.__cause__ is None
    return info.value


# =============================================================================
# The function itself, not its value
# =============================================================================
@pytest.mark.parametrize(
    "op",
    [
        grad,
        value_and_grad,
        grad_and_aux,
        elementwise_grad,
        jacobian,
        make_vjp,
        make_jvp,
        deriv,
        hessian,
        checkpoint,
    ],
)
def test_a_value_instead_of_a_function_is_named_when_the_operator_is_built(op):
    value = onp.float64(2.5)
    name = op.__name__
    _raises(
        lambda: op(value),
        f"{name}: the function to differentiate must be callable, got a numpy.float64 "
        f"({value!r}); pass the function itself, {name}(f), not its value at a "
        f"point, {name}(f(x)). See docs/sharp_edges.md#pass-the-function",
    )


def test_a_python_float_instead_of_a_function():
    _raises(
        lambda: grad(1.0),
        "grad: the function to differentiate must be callable, got a float (1.0); pass the "
        "function itself, grad(f), not its value at a point, grad(f(x)). See "
        "docs/sharp_edges.md#pass-the-function",
    )


# =============================================================================
# JAX's spellings
# =============================================================================
@pytest.mark.parametrize(
    "op", [grad, value_and_grad, elementwise_grad, jacobian, make_vjp, make_jvp, hessian]
)
def test_argnums_gets_a_did_you_mean(op):
    name = op.__name__
    _raises(
        lambda: op(lambda x: x, argnums=0),
        f"{name}() got an unexpected keyword argument 'argnums'; did you mean argnum= "
        f"(autograd's spelling: an int or a tuple of ints)? See "
        f"docs/sharp_edges.md#jax-spellings",
    )


def test_has_aux_gets_a_did_you_mean():
    _raises(
        lambda: grad(lambda x: x, has_aux=True),
        "grad() got an unexpected keyword argument 'has_aux'; did you mean grad_and_aux(f, "
        "argnum) for a function returning (output, aux)? See "
        "docs/sharp_edges.md#jax-spellings",
    )


def test_other_unknown_keywords_are_pythons_error():
    with pytest.raises(TypeError, match=r"^grad\(\) got an unexpected keyword argument 'foo'$"):
        grad(lambda x: x, foo=1)


def test_operators_keep_their_names_signatures_and_argnum():
    import inspect

    assert grad.__name__ == "grad" and "argnum" in inspect.signature(grad).parameters
    assert list(inspect.signature(make_jvp).parameters) == ["fun", "argnum"]
    assert grad(lambda a, b: a * b, argnum=1)(2.0, 3.0) == 2.0


# =============================================================================
# grad of a function returning (loss, aux), or a list
# =============================================================================
GRAD_ONE_SCALAR = (
    "{fname}: the function returned a {kind} of {n} value{s}; {fname} needs one "
    "real scalar. If it returns (loss, aux), use grad_and_aux(f) for (gradient "
    "of loss, aux), or value_and_grad(lambda *a: f(*a)[0]) for (loss, "
    "gradient); for several outputs use jacobian or make_vjp. See "
    "docs/sharp_edges.md#grad-needs-one-scalar"
)


@pytest.mark.parametrize("fname,op", [("grad", grad), ("value_and_grad", value_and_grad)])
@pytest.mark.parametrize(
    "out,kind,n",
    [
        (lambda x: (np.sum(x), np.sin(x)), "tuple", 2),  # (loss, aux)
        (lambda x: (np.sum(x), np.sum(x * 2)), "tuple", 2),  # two scalars
        (lambda x: [np.sum(x)], "list", 1),
        (lambda x: {"loss": np.sum(x)}, "dict", 1),
    ],
)
def test_grad_of_a_container_output_points_to_grad_and_aux(fname, op, out, kind, n):
    _raises(
        lambda: op(out)(X),
        GRAD_ONE_SCALAR.format(fname=fname, kind=kind, n=n, s="" if n == 1 else "s"),
    )
    # and what the message says to write works
    if kind == "tuple":
        g, aux = grad_and_aux(out)(X)
        onp.testing.assert_array_equal(g, onp.ones(3))
        value, g = value_and_grad(lambda *a: out(*a)[0])(X)
        assert value == onp.sum(X)


@pytest.mark.parametrize(
    "fname,op", [("elementwise_grad", elementwise_grad), ("jacobian", jacobian)]
)
def test_array_operators_of_a_list_output(fname, op):
    _raises(
        lambda: op(lambda x: [x, x])(X),
        f"{fname}: the function returned a list; {fname} needs one array output. Return "
        f"np.stack([...]) of equally shaped arrays, or use make_vjp (a cotangent for each "
        f"output) or jacobian of each output; for a (loss, aux) pair use grad_and_aux. See "
        f"docs/sharp_edges.md#grad-needs-one-scalar",
    )


@pytest.mark.filterwarnings("ignore:Output seems independent of input")
def test_integer_output_message_points_to_the_page():
    _raises(
        lambda: grad(lambda x: np.sum(x > 1.0))(X),
        "grad: the function returned a value of dtype int64; derivatives are defined for "
        "floating-point (or complex) outputs. Return a float value (e.g. x.astype(float)); "
        "a boolean, integer or string result has no gradient. See "
        "docs/sharp_edges.md#integer-and-boolean-values",
    )


# =============================================================================
# Random draws with traced parameters
# =============================================================================
def test_random_draw_with_a_traced_parameter_names_the_reparameterisation():
    _raises(
        lambda: grad(lambda mu: np.sum(np.random.normal(mu, 1.0)))(X),
        "gradcy.numpy.random.normal: argument 0 is a traced value; random sampling is not "
        "differentiable in its parameters. Draw from constant parameters and transform the "
        "draw with the traced ones (the reparameterisation): loc + scale * "
        "np.random.standard_normal(size). See docs/sharp_edges.md#random-sampling",
    )
    _raises(
        lambda: grad(lambda s: np.sum(np.random.normal(0.0, scale=s)))(X),
        "gradcy.numpy.random.normal: scale= is a traced value; random sampling is not "
        "differentiable in its parameters. Draw from constant parameters and transform the "
        "draw with the traced ones (the reparameterisation): loc + scale * "
        "np.random.standard_normal(size). See docs/sharp_edges.md#random-sampling",
    )
    _raises(
        lambda: grad(lambda s: np.sum(np.random.gamma(s)))(X),
        "gradcy.numpy.random.gamma: argument 0 is a traced value; random sampling is not "
        "differentiable in its parameters. Draw from constant parameters and transform the "
        "draw with the traced ones (the reparameterisation): np.random.gamma with constant "
        "parameters, transformed by the traced ones. See "
        "docs/sharp_edges.md#random-sampling",
    )


def test_reparameterised_draw_is_differentiated_and_draws_are_numpys():
    np.random.seed(3)
    eps = np.random.standard_normal(3)
    np.random.seed(3)
    g = grad(lambda mu: np.sum((mu + 2.0 * np.random.standard_normal(3)) ** 2))(X)
    onp.testing.assert_allclose(g, 2 * (X + 2.0 * eps), rtol=1e-15)
    onp.random.seed(4)
    a = onp.random.normal(1.0, 2.0, 5)
    np.random.seed(4)
    onp.testing.assert_array_equal(np.random.normal(1.0, 2.0, 5), a)


# =============================================================================
# ndarray subclasses
# =============================================================================
def _matrix(a):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", PendingDeprecationWarning)
        return onp.asmatrix(a)


MATRIX_FIX = (
    "gradcy differentiates plain numpy.ndarray values only ({why}`*` of two "
    "matrices is a matrix product, so a rule's g * cos(x) would be one). Pass "
    "np.asarray(M) and write matrix products with @. See "
    "docs/sharp_edges.md#ndarray-subclasses"
)
MASKED_FIX = (
    "gradcy differentiates plain numpy.ndarray values only ({why}the rules do not "
    "see the mask, so masked entries would get a gradient). Pass M.filled(v) (masked "
    "entries set to v) or np.ma.getdata(M), and apply the mask in the function "
    "(np.where(mask, 0.0, y) gives masked entries a zero gradient). See "
    "docs/sharp_edges.md#ndarray-subclasses"
)
ARG_WHY = "the rules are NumPy's array semantics: "


@pytest.mark.parametrize("op", [grad, elementwise_grad, make_jvp])
def test_matrix_argument_is_refused(op):
    M = _matrix([[0.5, 1.0], [2.0, 3.0]])

    def call():
        out = op(lambda z: np.sum(np.sin(z)))(M)
        if op is make_jvp:
            out(onp.ones((2, 2)))

    _raises(
        call,
        f"{op.__name__}: argument 0 is a numpy.matrix, a subclass of numpy.ndarray; "
        + MATRIX_FIX.format(why=ARG_WHY),
    )
    # the fix: the plain array's gradient is cos(M)
    onp.testing.assert_allclose(
        grad(lambda z: np.sum(np.sin(z)))(onp.asarray(M)), onp.cos(onp.asarray(M)), rtol=1e-15
    )


# the class as the message names it (numpy.ma.MaskedArray in NumPy 2, numpy.ma.core's in 1.x)
MASKED = f"{onp.ma.MaskedArray.__module__}.{onp.ma.MaskedArray.__qualname__}"


def test_masked_argument_is_refused():
    A = onp.ma.masked_array([1.0, 2.0, 3.0], mask=[0, 1, 0])
    _raises(
        lambda: grad(lambda z: np.sum(np.sin(z)))(A),
        f"grad: argument 0 is a {MASKED}, a subclass of numpy.ndarray; "
        + MASKED_FIX.format(why=ARG_WHY),
    )
    keep = ~onp.ma.getmaskarray(A)
    g = grad(lambda z: np.sum(np.where(keep, np.sin(z), 0.0)))(A.filled(0.0))
    onp.testing.assert_allclose(g, [onp.cos(1.0), 0.0, onp.cos(3.0)], rtol=1e-15)


def test_memmap_argument_is_refused(tmp_path):
    mm = onp.memmap(tmp_path / "x.dat", dtype=float, mode="w+", shape=(3,))
    mm[:] = X
    _raises(
        lambda: grad(lambda z: np.sum(np.sin(z)))(mm),
        "grad: argument 0 is a numpy.memmap, a subclass of numpy.ndarray; gradcy "
        "differentiates plain numpy.ndarray values only (the rules are NumPy's array "
        "semantics: a subclass's operators and results may differ from them). Pass "
        "np.asarray(x) (a plain ndarray view of the same values). See "
        "docs/sharp_edges.md#ndarray-subclasses",
    )
    onp.testing.assert_allclose(
        grad(lambda z: np.sum(np.sin(z)))(onp.asarray(mm)), onp.cos(X), rtol=1e-15
    )
    # a memmap constant next to a traced value gives plain results, and the right gradient
    g = grad(lambda z: np.sum(np.sin(z) * mm))(X)
    onp.testing.assert_allclose(g, onp.cos(X) * X, rtol=1e-15)


@pytest.mark.parametrize(
    "fun,name,pos",
    [
        (lambda z, M: np.sum(np.sin(z) * M), "gradcy.numpy.multiply", 1),
        (lambda z, M: np.sum(M * np.sin(z)), "gradcy.numpy.multiply", 0),
        (lambda z, M: np.sum(np.sin(z + M)), "gradcy.numpy.add", 1),
        (lambda z, M: np.sum(np.dot(z, M)), "gradcy.numpy.dot", 1),
    ],
)
def test_matrix_constant_next_to_a_traced_value_is_refused(fun, name, pos):
    x = onp.array([[0.3, 1.7], [0.5, -1.0]])
    M = _matrix([[1.0, 2.0], [3.0, 4.0]])
    why = "used with a traced value; "
    for call in (lambda: grad(fun)(x, M), lambda: make_jvp(fun)(x, M)(onp.ones((2, 2)))):
        _raises(
            call,
            f"{name}: argument {pos} is a numpy.matrix (a subclass of numpy.ndarray) "
            + why
            + MATRIX_FIX.format(why=""),
        )


def test_masked_constant_next_to_a_traced_value_is_refused():
    A = onp.ma.masked_array([1.0, 2.0, 3.0], mask=[0, 1, 0])
    _raises(
        lambda: grad(lambda z: np.sum(np.sin(z) * A))(X),
        f"gradcy.numpy.multiply: argument 1 is a {MASKED} (a subclass of "
        "numpy.ndarray) used with a traced value; " + MASKED_FIX.format(why=""),
    )


def test_every_message_points_to_a_section_of_the_page():
    from pathlib import Path

    page = (Path(__file__).resolve().parents[1] / "docs" / "sharp_edges.md").read_text()
    slugs = {
        re.sub(r"[^a-z0-9 -]", "", line[3:].strip().lower()).replace(" ", "-")
        for line in page.splitlines()
        if line.startswith("## ")
    }
    source = "\n".join(
        Path(p).read_text() for p in [__file__, Path(__file__).parent / "test_argument_kinds.py"]
    )
    anchors = set(re.findall(r"sharp_edges\.md#([a-z0-9-]+)", source))
    assert anchors and anchors <= slugs, anchors - slugs


# =============================================================================
# Functions of other libraries: the message names the module called and the gradcy twin
# =============================================================================
def test_foreign_ufunc_message_names_its_module_and_twin():
    special = pytest.importorskip("scipy.special")
    from gradcy.scipy import foreign_ufunc, foreign_ufunc_message

    assert foreign_ufunc_message(special.expit) == (
        "gradcy: scipy.special.expit is not differentiable on traced values as it is; call "
        "its gradcy twin gradcy.scipy.special.expit (after `import gradcy.scipy.special`, "
        "scipy.special's own functions are routed to it). See "
        "docs/sharp_edges.md#functions-of-other-libraries"
    )
    import gradcy.scipy.special as gs

    assert foreign_ufunc(special.gammaln) == ("scipy.special.gammaln", gs.gammaln)
    assert foreign_ufunc_message(onp.sin, "reduce") == (
        "gradcy: numpy.sin.reduce is not differentiable on traced values; use "
        "gradcy.numpy.sin, or register a primitive with gradcy.extend. See "
        "docs/sharp_edges.md#functions-of-other-libraries"
    )
    # once gradcy.scipy.special is imported, scipy's own ufunc runs its gradcy twin
    g = grad(lambda z: np.sum(special.expit(z)))(X)
    onp.testing.assert_allclose(g, gs.expit(X) * (1 - gs.expit(X)), rtol=1e-15)


def test_a_foreign_ufunc_on_traced_values_raises_naming_its_module():
    """Plain scipy.special.expit on a traced value, before gradcy.scipy.special is imported
    (in a fresh interpreter): the error names scipy.special.expit and its twin, not
    numpy.expit."""
    pytest.importorskip("scipy.special")
    import subprocess
    import sys

    code = (
        "import numpy, scipy.special, gradcy.numpy as np\n"
        "from gradcy import grad\n"
        "try:\n"
        "    grad(lambda z: np.sum(scipy.special.expit(z)))(numpy.ones(2))\n"
        "except TypeError as e:\n"
        "    print(e)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.stdout.strip() == (
        "gradcy: scipy.special.expit is not differentiable on traced values as it is; call "
        "its gradcy twin gradcy.scipy.special.expit (after `import gradcy.scipy.special`, "
        "scipy.special's own functions are routed to it). See "
        "docs/sharp_edges.md#functions-of-other-libraries"
    ), out.stdout + out.stderr


def test_gradcys_own_saved_subclass_is_not_refused():
    # maximum's saved record is a bit-mask array of gradcy's own (saved_sets.Positions); when
    # its VJP runs inside an outer differentiation (the cotangent p is traced, x is not), the
    # rule multiplies an array made from it by a traced value
    x, p = onp.array([0.2, 0.9, 1.4]), onp.array([1.0, 2.0, 3.0])
    seen = []

    def inner(p):
        g = grad(lambda x: np.sum(np.maximum(x, 0.5) * p))(x)
        seen.append(type(g._value))
        return g

    jac = jacobian(inner)(p)
    onp.testing.assert_array_equal(jac, onp.diag([0.0, 1.0, 1.0]))
    assert seen == [onp.ndarray]  # the gradient is a plain array, not a Positions
    # (lifelines: make_vjp of that gradient, as an argument)
    vjp, ans = make_vjp(inner)(p)
    assert type(ans) is onp.ndarray
    onp.testing.assert_array_equal(vjp(onp.ones(3)), [0.0, 1.0, 1.0])
