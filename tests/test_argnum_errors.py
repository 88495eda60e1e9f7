"""An argnum that names no positional argument raises an error naming the operator, argnum and
the number of arguments (not a bare IndexError from a tuple), before anything is traced; an
argnum in range (negative ones included) still differentiates that argument."""

import re

import numpy as onp
import pytest

import gradcy
import gradcy.numpy as anp
from gradcy import (
    deriv,
    elementwise_grad,
    grad,
    grad_and_aux,
    hessian,
    hessian_tensor_product,
    hessian_vector_product,
    holomorphic_grad,
    jacobian,
    make_ggnvp,
    make_hvp,
    make_jvp,
    make_vjp,
    tensor_jacobian_product,
    value_and_grad,
    vector_jacobian_product,
)

from gradcy.differential_operators import make_jvp_reversemode
from gradcy.test_util import check_grads


def f2(x, y):
    return anp.sum(anp.sin(x) * y)


def aux2(x, y):
    return f2(x, y), 1.0


# (operator, the name its errors carry, the function, extra trailing positional arguments the
# operator's result takes besides the function's own: the vector of the *_product operators)
OPERATORS = [
    (grad, "grad", f2, ()),
    (value_and_grad, "value_and_grad", f2, ()),
    (grad_and_aux, "grad_and_aux", aux2, ()),
    (elementwise_grad, "elementwise_grad", f2, ()),
    (make_vjp, "make_vjp", f2, ()),
    (make_jvp, "make_jvp", f2, ()),
    (deriv, "deriv", f2, ()),
    (jacobian, "jacobian", f2, ()),
    (hessian, "hessian", f2, ()),
    (make_hvp, "make_hvp", f2, ()),
    (holomorphic_grad, "holomorphic_grad", f2, ()),
    (gradcy.memory.profile, "profile", f2, ()),
    (vector_jacobian_product, "vector_jacobian_product", f2, (1.0,)),
    (hessian_tensor_product, "hessian_tensor_product", f2, (onp.ones(3),)),
    (hessian_vector_product, "hessian_tensor_product", f2, (onp.ones(3),)),
    (tensor_jacobian_product, "tensor_jacobian_product", f2, (1.0,)),
    (lambda fun, argnum: make_ggnvp(fun, f_argnum=argnum), "make_ggnvp", f2, ()),
    # autograd's operators built with gradcy.wrap_util.unary_to_nary
    (make_jvp_reversemode, "make_jvp_reversemode", f2, ()),
    (lambda fun, argnum: check_grads(fun, argnum, modes=["rev"], order=1), "check_grads", f2, ()),
]
IDS = [
    name if op is not hessian_vector_product else "hessian_vector_product"
    for op, name, _, _ in OPERATORS
]


def _args():
    return onp.linspace(0.1, 0.9, 3), onp.linspace(1.0, 2.0, 3)


@pytest.mark.parametrize("op,name,fun,extra", OPERATORS, ids=IDS)
@pytest.mark.parametrize("argnum", [2, 5, -3, (0, 2)])
def test_out_of_range_names_argnum_and_count(op, name, fun, extra, argnum):
    calls = []

    def counted(*a):
        calls.append(1)
        return fun(*a)

    with pytest.raises(IndexError) as info:
        op(counted, argnum)(*_args(), *extra)
    msg = str(info.value)
    assert msg.startswith(
        f"{name}: argnum={argnum!r} but the function was called with 2 positional arguments"
    ), msg
    if extra:
        assert "besides the vector" in msg, msg
    assert calls == []  # raised before the function ran


@pytest.mark.parametrize("op,name,fun,extra", OPERATORS, ids=IDS)
def test_non_integer_argnum_names_it(op, name, fun, extra):
    with pytest.raises(
        TypeError, match=re.escape(f"{name}: argnum must be an int or a tuple of ints, got 'y'")
    ):
        op(fun, "y")(*_args(), *extra)


def test_one_argument_is_singular():
    with pytest.raises(
        IndexError,
        match=r"grad: argnum=1 but the function was called with 1 "
        r"positional argument;",
    ):
        grad(lambda x, y=2.0: x * y, 1)(3.0)


def test_keyword_argument_is_not_counted():
    """A differentiated argument must be passed positionally: argnum 1 with y by keyword."""
    with pytest.raises(IndexError, match="arguments passed by keyword are not differentiated"):
        grad(lambda x, y: x * y, 1)(3.0, y=2.0)


def test_in_range_argnums_still_differentiate():
    x, y = _args()
    onp.testing.assert_allclose(grad(f2, 1)(x, y), onp.sin(x))
    onp.testing.assert_allclose(grad(f2, -1)(x, y), onp.sin(x))
    onp.testing.assert_allclose(grad(f2, -2)(x, y), onp.cos(x) * y)
    gx, gy = grad(f2, (0, 1))(x, y)
    onp.testing.assert_allclose(gx, onp.cos(x) * y)
    onp.testing.assert_allclose(gy, onp.sin(x))
    # the vector of the *_product operators is not an argument of the function
    onp.testing.assert_allclose(hessian_tensor_product(f2, 1)(x, y, onp.ones(3)), onp.zeros(3))
    onp.testing.assert_allclose(tensor_jacobian_product(f2, 1)(x, y, 2.0), 2 * onp.sin(x))
    onp.testing.assert_allclose(hessian(f2, 0)(x, y), onp.diag(-onp.sin(x) * y))
