"""Adversarial programs against traced containers (gradcy/builtins.py): a single read of a traced
dict, and reads of containers nested in containers, each against its closed form to second
order, and a VJP written for autograd's API receiving the dense cotangent of a nested output."""

import numpy as onp
import pytest

import gradcy.numpy as np
from gradcy import grad
from gradcy.builtins import list as traced_list
from gradcy.builtins import make_dict
from gradcy.builtins import tuple as traced_tuple
from gradcy.extend import defvjp, primitive

X = 0.3
# program, its derivative and its second derivative at X (f = 2 sin(x) read through containers)
TWO_SIN = (2.0 * onp.cos(X), -2.0 * onp.sin(X))
PROGRAMS = {
    # 'SparseObject' object is not subscriptable: make_dict's rule indexed the one element's
    # cotangent of a single read
    "dict read once": (lambda x: make_dict(("a", "b"), np.sin(x), x)["a"] * 2.0, TWO_SIN),
    "dict of dict": (
        lambda x: make_dict(("a",), make_dict(("b",), np.sin(x)))["a"]["b"] * 2.0,
        TWO_SIN,
    ),
    "dict of tuple": (
        lambda x: make_dict(("a", "b"), traced_tuple([x, np.sin(x)]), x)["a"][1] * 2.0,
        TWO_SIN,
    ),
    "tuple of dict": (
        lambda x: traced_tuple([make_dict(("a",), np.sin(x)), x])[0]["a"] * 2.0,
        TWO_SIN,
    ),
    # (these passed: reads of sequences in sequences)
    "tuple of tuple": (
        lambda x: traced_tuple([traced_tuple([x, np.sin(x)]), x])[0][1] * 2.0,
        TWO_SIN,
    ),
    "list of list, two reads": (
        lambda x: (lambda t: t[0][1] * 2.0 + t[0][0] * x)(
            traced_list([traced_list([x, np.sin(x)]), x])
        ),
        (2.0 * onp.cos(X) + 2 * X, -2.0 * onp.sin(X) + 2.0),
    ),
}


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_reads_of_nested_traced_containers(name):
    f, (d1, d2) = PROGRAMS[name]
    assert grad(f)(X) == pytest.approx(d1, rel=1e-14)
    assert grad(grad(f))(X) == pytest.approx(d2, rel=1e-14)


def test_vjp_written_for_autograd_gets_a_dense_nested_dict_cotangent():
    # a read of an element of a tuple inside a dict output: the dense cotangent autograd's VJPs
    # get (autograd 1.9.1: -3 sin(0.3)); it added the tuple cotangent to the zeros with +,
    # concatenating a tuple and a list (TypeError)
    seen = []
    p = primitive(lambda x: {"a": (onp.sin(x), onp.cos(x)), "b": 2.0 * x})
    defvjp(
        p,
        lambda ans, x: (
            lambda g: (
                seen.append(g),
                g["a"][0] * onp.cos(x) - g["a"][1] * onp.sin(x) + 2.0 * g["b"],
            )[1]
        ),
    )
    assert grad(lambda x: p(x)["a"][1] * 3.0)(X) == pytest.approx(-3.0 * onp.sin(X), rel=1e-15)
    g = seen[0]
    assert type(g) is dict and type(g["a"]) is tuple and len(g["a"]) == 2
    assert [float(v) for v in g["a"]] == [0.0, 3.0] and float(g["b"]) == 0.0
