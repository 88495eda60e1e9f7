"""gradcy._pytree: the one walker behind the differential operators' containers (tree_flatten)
and autograd's vector flatten (gradcy.misc.flatten), each with its own rule for what is a
container (see the module's docstring)."""

from collections import OrderedDict, namedtuple

import numpy as onp
import pytest

import gradcy.numpy as anp
from gradcy import _pytree, grad, make_vjp
from gradcy.differential_operators import tree_flatten
from gradcy.misc.flatten import flatten, flatten_func
from gradcy.test_util import check_grads

from counters import assert_counters_zero

Pair = namedtuple("Pair", "a b")


# =============================================================================
# tree_flatten (the differential operators' arguments and outputs)
# =============================================================================
def test_public_modules_share_the_walker():
    assert tree_flatten is _pytree.tree_flatten
    assert flatten is _pytree.flatten


def test_tree_flatten_keeps_insertion_order_and_container_types():
    x = {"b": 1.0, "a": (2.0, [3.0, Pair(4.0, 5.0)]), "c": OrderedDict(z=6.0, y=7.0)}
    leaves, unflatten = tree_flatten(x)
    assert leaves == [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0]
    out = unflatten([10.0 * v for v in leaves])
    assert list(out) == ["b", "a", "c"]
    assert type(out["a"]) is tuple and type(out["a"][1]) is list
    assert type(out["a"][1][1]) is Pair and out["a"][1][1] == Pair(40.0, 50.0)
    assert type(out["c"]) is OrderedDict and list(out["c"].items()) == [("z", 60.0), ("y", 70.0)]


def test_tree_flatten_leaves_and_flat_sequences():
    a = onp.ones(2)
    assert tree_flatten(a)[0] == [a] and tree_flatten(a)[1]([3]) == 3
    leaves, unflatten = tree_flatten((a, 2.0))
    assert leaves[0] is a and unflatten is tuple
    assert tree_flatten([1.0, 2.0])[1] is list
    assert tree_flatten("s")[0] == ["s"]  # anything else is a leaf


def test_grad_of_containers_keeps_order_and_types():
    x = {"w": onp.array([1.0, 2.0]), "p": Pair(3.0, onp.array([0.5]))}

    def f(d):
        return anp.sum(d["w"] ** 2) * d["p"].a + anp.sum(d["p"].b) * 2.0

    g = grad(f)(x)
    assert list(g) == ["w", "p"] and type(g["p"]) is Pair
    onp.testing.assert_allclose(g["w"], 2.0 * x["w"] * 3.0)
    assert type(g["p"].a) is float and g["p"].a == 5.0
    onp.testing.assert_allclose(g["p"].b, [2.0])
    assert_counters_zero()


# =============================================================================
# flatten (autograd's): exactly tuple/list/dict, sorted keys, plain containers rebuilt
# =============================================================================
def test_flatten_sorts_keys_and_rebuilds_plain_containers():
    value = {"b": onp.arange(3.0), "a": [onp.float32(1.5), (2.0, onp.eye(2))]}
    vec, unflatten = flatten(value)
    onp.testing.assert_array_equal(vec, [1.5, 2.0, 1.0, 0.0, 0.0, 1.0, 0.0, 1.0, 2.0])
    assert vec.dtype == onp.float64
    out = unflatten(vec + 1.0)
    assert list(out) == ["a", "b"] and type(out) is dict
    assert type(out["a"]) is list and type(out["a"][1]) is tuple
    assert out["a"][0].dtype == onp.float32 and out["a"][0].shape == ()
    assert out["a"][1][0].shape == () and out["a"][1][0] == 3.0
    onp.testing.assert_array_equal(out["a"][1][1], onp.eye(2) + 1.0)
    onp.testing.assert_array_equal(out["b"], onp.arange(3.0) + 1.0)
    # two dicts with the same keys flatten alike, whatever their insertion order
    onp.testing.assert_array_equal(
        flatten({"x": 1.0, "y": 2.0})[0], flatten({"y": 2.0, "x": 1.0})[0]
    )


def test_flatten_takes_only_exact_containers():
    # a namedtuple or OrderedDict is none of autograd's container spaces: a leaf, which has
    # no dtype (autograd raises too), while the front end walks into both
    for value in ([Pair(1.0, 2.0)], OrderedDict(a=1.0)):
        with pytest.raises(TypeError):
            flatten(value)
    leaves, unflatten = tree_flatten([Pair(1.0, 2.0)])
    assert leaves == [1.0, 2.0] and unflatten([3.0, 4.0]) == [Pair(3.0, 4.0)]
    leaves, unflatten = tree_flatten(OrderedDict(a=1.0))
    assert leaves == [1.0] and unflatten([5.0]) == OrderedDict(a=5.0)


def test_flatten_unflatten_copies_casts_and_checks_length():
    vec, unflatten = flatten([onp.zeros(2), onp.zeros(1, onp.float32)])
    v = onp.array([1.0, 2.0, 3.0 + 4.0j])
    a, b = unflatten(v)
    assert a.dtype == onp.float64 and a.base is None  # no alias into the caller's vector
    a[0] = 9.0
    assert v[0] == 1.0
    assert b.dtype == onp.float32 and b[0] == 3.0  # the real part for a real leaf
    with pytest.raises(ValueError, match="expected a vector of length 3, got 2"):
        unflatten(onp.zeros(2))
    empty, unflatten_empty = flatten({})
    assert empty.shape == (0,) and unflatten_empty(onp.zeros(0)) == {}


def test_flatten_of_a_traced_tuple_takes_its_elements():
    A = onp.array([[2.0, 0.5], [0.5, 1.0]])

    def f(a):
        vec = flatten(anp.linalg.eigh(a))[0]  # a traced tuple (w, v)
        assert vec.shape == (6,)
        return anp.sum(vec[:2] ** 2)  # the eigenvalues' squares

    def direct(a):
        return anp.sum(anp.linalg.eigh(a)[0] ** 2)

    onp.testing.assert_allclose(grad(f)(A), grad(direct)(A), atol=1e-12)
    assert_counters_zero()


def test_flatten_and_unflatten_are_differentiable():
    value = {"w": onp.array([[0.3, -0.2], [0.1, 0.4]]), "b": [0.5, onp.array([0.7])]}
    vec0, unflatten = flatten(value)

    def through_both(v):
        p = unflatten(v)
        return anp.sum(anp.sin(flatten(p)[0]) * anp.arange(1.0, 7.0))

    check_grads(through_both, modes=["rev", "fwd"], order=2)(vec0)
    vjp, _ = make_vjp(lambda v: unflatten(v)["b"][1])(vec0)
    onp.testing.assert_array_equal(vjp(onp.array([2.0])), [0, 2.0, 0, 0, 0, 0])  # b sorts first
    vjp.release()
    flat_f, unflatten_f, x0 = flatten_func(lambda p: {"y": p["w"] * p["b"][0]}, value)
    onp.testing.assert_allclose(flat_f(x0), (value["w"] * 0.5).ravel())
    assert_counters_zero()
