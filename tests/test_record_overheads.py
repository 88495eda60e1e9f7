"""The cheap paths of recording (gradcy/_tape.pyx, _saved.pyx, _box.pyx) keep what they stand
for: a saved argument tuple leaves the cycle collector only when it holds nothing it tracks;
the last ArrayMeta is reused for exactly its shape, dtype and type; Box operators dispatch
the registered operator."""

import gc
import weakref

import numpy as onp
import pytest

import gradcy.numpy as np
from gradcy import grad
from gradcy._core import ArrayMeta, Tape
from gradcy.extend import defvjp, primitive
from counters import opened


@primitive
def _scale_by(x, c):
    return x * c["k"]


defvjp(_scale_by, lambda ans, x, c: lambda g: g * c["k"], None, save=(1,))


class _Cyclic:
    """An object in a reference cycle (the collector must still see it from a saved record)."""

    def __init__(self):
        self.me = self


def test_saved_tuples_of_plain_values_are_untracked():
    t = opened(Tape())
    x = t.new_leaf(onp.array([0.1, 0.5]))
    y = np.sin(x) * 2.0 + x  # sin keeps x, multiply keeps (sin(x), 2.0), add metas
    for i in range(1, len(t)):
        saved = t.node_info(i)["saved"][1]
        assert not gc.is_tracked(saved), (i, saved)
    del x, y
    t.release()


def test_saved_tuples_holding_tracked_objects_stay_tracked():
    """A record holding a dict (or anything the collector tracks) keeps its tuple tracked, and
    a cycle it holds is collected once the tape lets it go."""
    t = opened(Tape())
    x = t.new_leaf(onp.array([0.1, 0.5]))
    c = {"k": 3.0, "cycle": _Cyclic()}
    alive = weakref.ref(c["cycle"])
    y = _scale_by(x, c)
    saved = t.node_info(y._node)["saved"][1]
    assert saved[1] is c and gc.is_tracked(saved)
    del x, y, saved, c
    t.release()
    gc.collect()
    assert alive() is None
    f = lambda a: np.sum(_scale_by(a, {"k": 3.0, "cycle": _Cyclic()}))
    onp.testing.assert_array_equal(grad(f)(onp.array([0.1, 0.5])), [3.0, 3.0])


@pytest.mark.parametrize(
    "shapes",
    [
        [(3,), (3,), (4,), (3,), (1, 3), (3, 1), (3,), ()],
        [(2, 3), (2, 3), (3, 2), (6,), (2, 3), (1, 2, 3), (2, 3, 1)],
        [(1,) * 9, (1,) * 9, (1,) * 8, (1,) * 10, (1,) * 9],  # past the 8 C dimensions kept
    ],
)
def test_unsaved_outputs_keep_their_own_shape(shapes):
    """x + x for each shape and dtype in turn (add's record keeps ArrayMetas of both
    arguments): every ArrayMeta has the shape, dtype and type of its own value (consecutive
    equal ones may be one object)."""
    t = opened(Tape())
    for dtype in (onp.float64, onp.float32):
        for shape in shapes:
            x = t.new_leaf(onp.ones(shape, dtype))
            y = x + x
            metas = t.node_info(y._node)["saved"][1]
            for m in metas:
                assert type(m) is ArrayMeta
                assert m.shape == shape and m.dtype == dtype and m.type is onp.ndarray
            del x, y
    t.release()


def test_box_operators_dispatch_the_registered_operator():
    x = onp.array([0.3, 0.7])
    g = grad(lambda a: np.sum(a * 2.0 - 1.0 / a + a**2 + (a / 3.0) - (2.0 - a)))(x)
    onp.testing.assert_allclose(g, 2.0 + 1.0 / x**2 + 2.0 * x + 1.0 / 3.0 + 1.0)
