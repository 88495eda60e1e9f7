"""Gradient checks of gradcy/numpy/sorting.py: sort and partition (to second order in both
modes; forward mode follows the permutation)."""

import numpy as onp
import pytest

import gradcy.numpy as np
from gradcy import grad, make_jvp
from op_records.sorting import RECORDS
from vjp_harness import assert_jvps_follow_vjps, check_deep, rand

_PRIMS = [getattr(np, r.name) for r in RECORDS]  # tests/op_records/sorting.py
COVERED = {p.name for p in _PRIMS}


@pytest.mark.parametrize("axis", [-1, 0, None])
def test_sort(axis):
    check_deep(lambda x: np.sort(x, axis=axis), rand(3, 4))
    check_deep(
        lambda x: (
            np.sort(x, axis) * onp.arange(1.0, 13.0).reshape(3, 4)
            if axis is not None
            else np.sort(x, axis) * onp.arange(1.0, 13.0)
        ),
        rand(3, 4),
    )


def test_sort_1d_values():
    x = onp.array([3.0, -1.0, 2.0, 0.5])
    g = grad(lambda x: np.sum(np.sort(x) * onp.array([1.0, 2.0, 3.0, 4.0])))(x)
    assert onp.array_equal(g, [4.0, 1.0, 3.0, 2.0])
    check_deep(lambda x: np.sort(x, kind="mergesort"), rand(6))


@pytest.mark.parametrize("kth,axis", [(1, -1), (2, 0), ((0, 3), -1), (5, None)])
def test_partition(kth, axis):
    check_deep(lambda x: np.partition(x, kth, axis=axis), rand(4, 5))


def test_sort_forward_follows_the_permutation():
    x = onp.array([3.0, -1.0, 2.0, 0.5])
    _, t = make_jvp(np.sort)(x)(onp.array([10.0, 20.0, 30.0, 40.0]))
    assert onp.array_equal(t, [20.0, 40.0, 30.0, 10.0])
    _, t = make_jvp(lambda x: np.partition(x, 1))(x)(onp.array([10.0, 20.0, 30.0, 40.0]))
    assert onp.array_equal(t[:2], [20.0, 40.0])


@pytest.mark.parametrize("prim", _PRIMS, ids=lambda p: p.name)
def test_every_vjp_has_a_jvp(prim):
    assert_jvps_follow_vjps(prim)
