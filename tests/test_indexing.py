"""Gradient checks of gradcy/numpy/indexing.py: getitem, take, take_along_axis, compress,
untake/unrepeat (to second order in both modes), the selection functions (append insert delete
resize diagflat extract choose select meshgrid unstack broadcast_arrays block trim_zeros
sort_complex) and its non-differentiable functions."""

import inspect

import numpy as onp
import pytest

import gradcy.numpy as np
from gradcy import grad
from gradcy.numpy import numpy_wrapper as W
from gradcy.numpy import indexing
from op_records.manipulation import of_family
from vjp_harness import assert_jvps_follow_vjps, check, check_deep, rand, total

# each gather's record (tests/op_records/manipulation.py), indexing and the internal scatters
_PRIMS = (
    [W.getitem]
    + [r.primitive for r in of_family("indexing")]
    + [indexing.untake, indexing.unrepeat]
)
COVERED = {p.name for p in _PRIMS}


# Selections
# =============================================================================
def test_append():
    x, v = rand(3, 4), rand(2, 4)
    check(lambda a, b: np.append(a, b), x, v)
    check(lambda a, b: np.append(a, b, axis=0), x, v)
    check(lambda a, b: np.append(a, b, 1), x, rand(3, 2))
    check(lambda a: np.append(a, 2.0), rand(3))


def test_insert():
    x = rand(3, 4)
    check(lambda a, v: np.insert(a, 1, v, axis=0), x, rand(4))
    check(lambda a, v: np.insert(a, 2, v, axis=1), x, rand(3))
    check(lambda a, v: np.insert(a, [0, 2, 2], v), rand(5), rand(3))
    check(lambda a, v: np.insert(a, slice(0, 3), v, axis=1), x, rand(3, 1))
    # a broadcast value: its cotangent sums over every copy
    check(lambda a, v: np.insert(a, [1, 3], v, axis=1), x, onp.asarray(rand(1)[0]))
    check(lambda a: np.insert(a, 1, [5.0, 6.0]), rand(4))


def test_delete():
    x = rand(3, 5)
    check(lambda a: np.delete(a, [0, 2], axis=1), x)
    check(lambda a: np.delete(a, 4), x)
    check(lambda a: np.delete(a, slice(0, None, 2), 0), x)
    check(lambda a: np.delete(a, onp.array([True, False, True, False, False]), axis=1), x)


def test_resize_diagflat_extract():
    x = rand(2, 3)
    check(lambda a: np.resize(a, (4, 4)), x)
    check(lambda a: np.resize(a, (5,)), x)
    check(lambda a: np.diagflat(a), rand(3))
    check(lambda a: np.diagflat(a, -1), rand(2, 2))
    check(lambda a: np.extract(x > 0, a), x)


def test_choose():
    idx = onp.array([[0, 1, 2], [2, 1, 0]])
    c = rand(3, 2, 3)
    check(lambda ch: np.choose(idx, ch), c)
    check(lambda ch: np.choose(idx + 2, ch, mode="wrap"), c)
    check(lambda ch: np.choose(idx * 2, ch, mode="clip"), c)
    # a list of traced choices (with broadcasting): the front end stacks them
    check(lambda a, b: np.choose(idx % 2, [a, b]), rand(2, 3), rand(3))
    check(lambda a: onp.choose(idx % 2, [a, 2.0 * a]), rand(2, 3))
    # repeated picks of one element of a broadcast choice accumulate
    check(lambda ch: np.choose(onp.zeros((4, 3), int), ch), rand(1, 1, 3))


def test_select():
    x = rand(4, 3)
    conds = [x < -0.5, x > 0.5]
    check(lambda a, b: np.select(conds, [a, b]), rand(4, 3), rand(3))
    check(lambda a, b, d: np.select(conds, [a, b], d), rand(4, 3), rand(4, 3), rand(3))
    check(lambda ch: np.select(conds, ch, 1.5), rand(2, 4, 3))


def test_meshgrid_unstack_broadcast_arrays():
    a, b = rand(3), rand(4)
    check(lambda u, v: total(np.meshgrid(u, v)), a, b)
    check(lambda u, v: np.meshgrid(u, v, indexing="ij")[1] * 2.0, a, b)
    check(lambda u, v: np.meshgrid(u, v, sparse=True)[0], a, b)
    check(lambda u: np.meshgrid(u, onp.arange(2.0))[0], a)
    x = rand(2, 3, 2)
    if hasattr(np, "unstack"):  # NumPy >= 2.1
        check(lambda u: total(np.unstack(u, axis=1)), x)
        check(lambda u: np.unstack(u)[1], x)
    check(lambda u, v: total(np.broadcast_arrays(u, v)), rand(3, 1), rand(4))
    check(lambda u: np.broadcast_arrays(u, onp.ones((2, 3)))[0], rand(3))
    check(lambda u, v: np.broadcast_arrays(u, v)[1], rand(3, 1), rand(4))


def test_block():
    a, b = rand(2, 2), rand(2, 3)
    check(lambda u, v: np.block([[u, v], [v[:, :2], onp.ones((2, 3))]]), a, b)
    check(lambda u, v: np.block([u, 1.0, v]), rand(3), rand(2))
    check(lambda u: np.block([[u], [u]]), rand(3))
    check(lambda u: onp.block([[u, u]]), rand(2, 2))
    want = onp.block([[a, b], [b[:, :2], onp.ones((2, 3))]])
    assert onp.array_equal(np.block([[a, b], [b[:, :2], onp.ones((2, 3))]]), want)
    with pytest.raises(ValueError):
        grad(lambda u: np.sum(np.block([u, [u]])))(rand(2))


def test_trim_zeros_and_sort_complex():
    mask = onp.array([0, 0, 1, 1, 0, 1, 0.0])
    check(lambda a: np.trim_zeros(a * mask), rand(7))
    check(lambda a: np.trim_zeros(a * mask, "f"), rand(7))
    m2 = onp.zeros((4, 5))
    m2[1:3, 1:4] = 1.0
    if "axis" in inspect.signature(onp.trim_zeros).parameters:  # n-d: NumPy >= 2.2
        check(lambda a: np.trim_zeros(a * m2), rand(4, 5))
        check(lambda a: np.trim_zeros(a * m2, axis=1), rand(4, 5))
    check(lambda a: np.sort_complex(a), rand(5))
    z = rand(2, 4) + 1j * rand(2, 4, seed=1)
    check(lambda a: np.sort_complex(a), z)


# =============================================================================


def test_where_one_argument_and_around_are_constants():
    x = rand(5)
    g = grad(lambda a: np.sum(a) + np.sum(np.where(a > 0)[0]) + np.sum(np.around(a)))(x)
    assert onp.allclose(g, 1.0)


@pytest.mark.parametrize("name", indexing._NONDIFFERENTIABLE)
def test_nondifferentiable(name):
    if not hasattr(onp, name):
        pytest.skip(f"numpy.{name} is new in NumPy 2")
    p = getattr(W, name)
    assert p.traced is False


def test_nondifferentiable_pass_through():
    x = rand(6)
    g = grad(lambda a: np.sum(a * a) + np.nanargmax(a))(x)
    assert onp.allclose(g, 2 * x)


# =============================================================================


# =============================================================================
# getitem, take, take_along_axis, compress
# =============================================================================
_IDX = [
    (slice(1, None), slice(None, None, 2)),
    0,
    -1,
    (1, 2),
    (None, 0),
    (Ellipsis, 1),
    (slice(None), None, slice(1, 3)),
    [0, 0, 2],
    (onp.array([0, 2, 2]), onp.array([1, 1, 0])),
    onp.array([[0, 1], [1, 1]]),
    (slice(None), [3, 3, 0]),
    (Ellipsis,),
    (),
    (onp.array([True, False, True]),),
    (0, onp.array([1, 1, 3, 1])),
]


@pytest.mark.parametrize("idx", _IDX, ids=[repr(i)[:30] for i in _IDX])
def test_getitem(idx):
    check_deep(lambda x: x[idx], rand(3, 4))


def test_getitem_masks_and_scalars():
    x = rand(3, 4)
    mask = x > 0
    check_deep(lambda x: x[mask], x)
    check_deep(lambda x: x[x > 0.2], x)
    check_deep(lambda x: x[[True, False, True]], x)
    check_deep(lambda x: x[()], onp.array(rand()))
    check_deep(lambda x: x[..., None], onp.array(rand()))
    check_deep(lambda x: x[1:, ::2], x)
    check_deep(lambda x: x[::-1, 1], x)


def test_getitem_repeated_indices_accumulate():
    x = rand(4)
    g = grad(lambda x: np.sum(x[[0, 0, 2, 0]]))(x)
    assert onp.array_equal(g, [3, 0, 1, 0])
    g = grad(lambda x: np.sum(x[onp.array([[1, 1], [1, 3]])]))(x)
    assert onp.array_equal(g, [0, 3, 0, 1])


def test_getitem_complex():
    z = rand(3, 4) + 1j * rand(3, 4, seed=5)
    check_deep(lambda z: z[[0, 0, 2], 1:], z)


def test_len_and_iteration():
    x = rand(3, 2)

    def f(x):
        assert len(x) == 3
        total = 0.0
        for k, row in enumerate(x):
            total = total + (k + 1.0) * np.sum(row * row)
        return total

    check_deep(f, x)
    g = grad(f)(x)
    assert onp.allclose(g, 2 * x * onp.arange(1.0, 4.0)[:, None])


@pytest.mark.parametrize(
    "axis,mode",
    [(None, "raise"), (0, "raise"), (1, "raise"), (-1, "wrap"), (1, "clip"), (None, "wrap")],
)
def test_take(axis, mode):
    idx = onp.array([[0, 2], [1, 1]]) if mode == "raise" else onp.array([-1, 5, 2, 5])
    check_deep(lambda x: np.take(x, idx, axis=axis, mode=mode), rand(3, 4))


def test_take_scalar_and_method():
    x = rand(3, 4)
    check_deep(lambda x: np.take(x, 1, axis=1), x)
    check_deep(lambda x: x.take([0, 0, 5]), x)
    check_deep(lambda x: np.take(x, [2, 2], 0), x)


def test_take_along_axis():
    x = rand(3, 4)
    check_deep(lambda x: np.take_along_axis(x, onp.argsort(x, axis=1), axis=1), x)
    check_deep(lambda x: np.take_along_axis(x, onp.array([[0, 0, 2, 1]]), 0), x)
    check_deep(lambda x: np.take_along_axis(x, onp.array([[3], [3], [0]]), -1), x)
    check_deep(lambda x: np.take_along_axis(x, onp.array([1, 1, 7]), axis=None), x)
    check_deep(lambda x: np.take_along_axis(x, onp.zeros((2, 2, 3), int), axis=0), rand(1, 2, 3))


def test_compress():
    x = rand(3, 4)
    check_deep(lambda x: np.compress([True, False, True], x, axis=0), x)
    check_deep(lambda x: np.compress([False, True, True], x, axis=1), x)
    check_deep(lambda x: np.compress(onp.arange(12) % 5 == 0, x), x)


# =============================================================================
# The helper primitives untake and unrepeat (the VJPs of getitem/take and repeat)
# =============================================================================
def test_untake_unrepeat_direct():
    g = rand(3)
    check_deep(lambda g: indexing.untake(g, [0, 0, 2], (4,), onp.dtype(g.dtype)), g)
    check_deep(lambda g: indexing.untake(g, (slice(None), 1), (3, 2), onp.dtype(g.dtype)), g)
    check_deep(
        lambda g: indexing.untake(
            g, onp.array([True, False, True, True]), (4,), onp.dtype(g.dtype)
        ),
        g,
    )
    check_deep(lambda g: indexing.unrepeat(g, 3, None, (2, 2)), rand(12))
    check_deep(lambda g: indexing.unrepeat(g, [1, 2], 0, (2, 3)), rand(3, 3))
    complex_g = rand(3) + 1j * rand(3)
    assert indexing.untake(complex_g, [0, 1, 1], (2,), onp.dtype(float)).dtype == float


@pytest.mark.parametrize("prim", _PRIMS, ids=lambda p: p.name)
def test_every_vjp_has_a_jvp(prim):
    assert_jvps_follow_vjps(prim)
