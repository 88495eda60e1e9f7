"""Gradient checks of the array-manipulation family (gradcy/numpy/manipulation.py: reshaping,
joining/splitting, casting, rearrangements, the window constructors)."""

import warnings

import numpy as onp
import pytest

import gradcy.numpy as np
from gradcy import grad, make_jvp, make_vjp
from gradcy._core import ArrayMeta, Box, Tape
from gradcy.numpy import numpy_wrapper as W
from gradcy.numpy import indexing as S
from gradcy.numpy._wrap import _astype_traced
from gradcy.test_util import check_grads
from op_records.manipulation import RECORDS, of_family
from vjp_harness import assert_jvps_follow_vjps, check_deep, rand

# each operator's record (tests/op_records/manipulation.py), and the primitives that
# concatenate, build arrays from traced entries, take from traced containers and cast
_PRIMS = (
    [r.primitive for r in of_family("manipulation")]
    + [
        W.concatenate_args,
        W.array_from_args,
        W.container_take,
        _astype_traced,
    ]
    + ([np.matrix_transpose] if hasattr(onp, "matrix_transpose") else [])
)  # NumPy >= 2
COVERED = {p.name for p in _PRIMS}


def check(fun, *args, order=2, dtypes=True):
    """check_deep without the forward-mode float32 contract, which reads tuple outputs only
    (split and the traced containers give lists)."""
    check_deep(fun, *args, order=order, dtypes=dtypes, tangents=False)


def _sum(y):
    """A scalar depending on every element of y, with distinct weights."""
    w = onp.arange(1.0, 1.0 + onp.size(y._value if isinstance(y, Box) else y)).reshape(
        onp.shape(y._value if isinstance(y, Box) else y)
    )
    return np.sum(y * w)


# =============================================================================
# Reshaping and axis permutations
# =============================================================================
@pytest.mark.parametrize(
    "shape,new",
    [
        ((2, 3), (3, 2)),
        ((2, 3), (-1,)),
        ((4,), (2, 1, 2)),
        ((2, 3, 2), (6, 2)),
        ((), (1, 1)),
        ((1,), ()),
    ],
)
def test_reshape(shape, new):
    check(lambda x: np.reshape(x, new), rand(*shape))


def test_reshape_order_and_methods():
    x = rand(2, 3)
    check(lambda x: np.reshape(x, (3, 2), order="F"), x)
    check(lambda x: np.reshape(x, (3, 2), "F"), x)
    check(lambda x: x.reshape(3, 2), x)
    check(lambda x: x.reshape((3, 2)), x)
    check(lambda x: x.reshape(-1), x)
    check(lambda x: np.reshape(x, (1, 1)), 1.5)


def test_reshape_unknown_order_raises():
    with pytest.raises(NotImplementedError):
        grad(lambda x: np.sum(np.reshape(x, (3, 2), order="A")))(rand(2, 3))


def test_ravel_flatten():
    x = rand(2, 3, 2)
    check(np.ravel, x)
    check(lambda x: np.ravel(x, "F"), x)
    check(lambda x: np.ravel(x, order="F"), x)
    check(lambda x: x.ravel(), x)
    check(lambda x: x.flatten(), x)
    check(lambda x: x.flatten("F"), x)
    check(np.ravel, rand())


@pytest.mark.parametrize("axes", [None, (1, 0, 2), (2, 0, 1), (-1, 0, -2), [0, 2, 1]])
def test_transpose(axes):
    check(lambda x: np.transpose(x, axes), rand(2, 3, 4))


def test_transpose_variants():
    x = rand(2, 3, 4)
    if hasattr(np, "permute_dims"):  # NumPy >= 2
        check(lambda x: np.permute_dims(x, (1, 2, 0)), x)
    check(lambda x: x.T, rand(2, 3))
    check(lambda x: x.T, rand(3))
    check(lambda x: x.transpose(), x)
    check(lambda x: x.transpose(1, 0, 2), x)
    check(lambda x: x.transpose((2, 0, 1)), x)
    check(np.transpose, rand())


def test_swapaxes_moveaxis_rollaxis():
    x = rand(2, 3, 4)
    check(lambda x: np.swapaxes(x, 0, 2), x)
    check(lambda x: x.swapaxes(0, 1), x)
    check(lambda x: np.swapaxes(x, -1, 1), x)
    check(lambda x: np.moveaxis(x, 0, -1), x)
    check(lambda x: np.moveaxis(x, (0, 1), (2, 0)), x)
    for axis, start in [(2, 0), (0, 3), (1, 1), (-1, 1), (0, -1), (2, 2)]:
        check(lambda x: np.rollaxis(x, axis, start), x)
    if hasattr(np, "matrix_transpose"):  # NumPy >= 2
        check(lambda x: np.matrix_transpose(x), x)


def test_expand_squeeze():
    x = rand(2, 3)
    check(lambda x: np.expand_dims(x, 0), x)
    check(lambda x: np.expand_dims(x, -1), x)
    check(lambda x: np.expand_dims(x, (0, 2)), x)
    check(lambda x: np.expand_dims(x, 0), 2.5)
    y = rand(1, 3, 1)
    check(np.squeeze, y)
    check(lambda x: np.squeeze(x, 0), y)
    check(lambda x: np.squeeze(x, axis=(0, 2)), y)
    check(lambda x: x.squeeze(), y)
    check(np.squeeze, rand(1))


@pytest.mark.parametrize(
    "shape,target",
    [((3,), (2, 3)), ((1, 3), (4, 3)), ((2, 1, 3), (2, 4, 3)), ((), (2, 2)), ((3, 1), (2, 3, 5))],
)
def test_broadcast_to(shape, target):
    check(lambda x: np.broadcast_to(x, target), rand(*shape))


def test_broadcast_to_python_float():
    check(lambda x: np.broadcast_to(x, (3,)), 1.5)


def test_atleast():
    for f in (np.atleast_1d, np.atleast_2d, np.atleast_3d):
        for shape in [(), (3,), (2, 3), (2, 3, 2)]:
            check(f, rand(*shape))
        check(f, 0.7)


def test_atleast_multiple_args():
    a, b = rand(3), rand(2, 2)

    def f(a, b):
        ra, rb = np.atleast_2d(a, b)
        return np.sum(ra * ra) + np.sum(rb)

    check(f, a, b)

    def g(a, b):
        return _sum(np.atleast_3d(a, b)[1])  # a gets no cotangent

    check(g, a, b)


# =============================================================================
# Joining
# =============================================================================
@pytest.mark.parametrize("axis", [0, 1, -1, None])
def test_concatenate(axis):
    a, b, c = rand(2, 3), rand(2, 3, seed=1), rand(2, 3, seed=2)
    check(lambda a, b, c: np.concatenate([a, b, c], axis=axis), a, b, c)


def test_concatenate_shapes_and_constants():
    a, b = rand(2, 3), rand(4, 3)
    check(lambda a, b: np.concatenate((a, b)), a, b)
    check(lambda a: np.concatenate([onp.ones((1, 3)), a, onp.zeros((2, 3))]), a)
    check(lambda a: np.concatenate([a, a], axis=1), a)
    if hasattr(np, "concat"):  # NumPy >= 2
        check(lambda a: np.concat([a, a]), a)


def test_concatenate_mixed_dtypes():
    a32 = rand(3).astype(onp.float32)
    b64 = rand(2)
    g = grad(lambda a: np.sum(np.concatenate([a, b64]) ** 2))(a32)
    assert g.dtype == onp.float32 and onp.allclose(g, 2 * a32)
    g = grad(lambda b: np.sum(np.concatenate([a32, b]) * 3.0))(b64)
    assert g.dtype == onp.float64 and onp.allclose(g, 3.0)


@pytest.mark.parametrize("axis", [0, 1, -1, 2])
def test_stack(axis):
    a, b = rand(2, 3), rand(2, 3, seed=1)
    check(lambda a, b: np.stack([a, b], axis=axis), a, b)
    check(lambda a, b: onp.stack([a, b], axis=axis), a, b)  # via __array_function__


def test_hstack_vstack_dstack_column_stack():
    a, b = rand(3), rand(3, seed=1)
    A, B = rand(2, 3), rand(2, 2, seed=1)
    check(lambda a, b: np.hstack([a, b]), a, b)
    check(lambda a, b: np.hstack([a, b]), A, B)
    check(lambda a, b: np.vstack([a, b]), a, b)
    check(lambda a, b: np.vstack([a, b]), A, rand(1, 3))
    check(lambda a, b: np.dstack([a, b]), a, b)
    check(lambda a, b: np.dstack([a, b]), A, rand(2, 3))
    check(lambda a, b: np.column_stack([a, b]), a, b)
    check(lambda a, b: np.column_stack([a, b]), rand(2), B)
    check(lambda a, b: onp.vstack([a, b]), a, b)
    check(lambda a, b: onp.concatenate([a, b]), a, b)


def test_array_from_traced_values():
    a, b = rand(3), rand(3, seed=1)
    check(lambda a, b: np.array([a, b]), a, b)
    check(lambda a, b: np.array([a, b, a]), a, b)
    check(lambda a, b: np.array((a, 2.0 * b)), rand(), rand(seed=3))
    check(lambda a, b: np.array([a, b]), 1.5, -0.5)
    check(lambda a, b: np.array([[a, b], [b, 1.0]]), 1.5, -0.5)
    check(lambda a: np.array([a, onp.ones(3)]), a)
    check(lambda a, b: np.asarray([a, b]), a, b)
    check(lambda a: np.array(a), a)


def test_array_from_args_mixed_dtypes():
    a32 = onp.float32(1.5)
    g = grad(lambda a: np.sum(np.array([a, 2.0]) * 3.0))(onp.array(a32))
    assert g.dtype == onp.float32 and g == 3.0
    g = grad(lambda a: np.sum(np.array([a, onp.float32(2.0)]) * 3.0))(1.0)
    assert type(g) is float and g == 3.0


# =============================================================================
# Splitting and traced containers
# =============================================================================
def test_split_family():
    x = rand(4, 6, 2)
    check(lambda x: _sum(np.split(x, 2)[1]) + np.sum(np.split(x, 2)[0] ** 2), x)
    check(lambda x: np.stack(np.split(x, 3, axis=1)), x)
    check(lambda x: np.concatenate(np.split(x, [1, 4], axis=-2)[::-1], axis=1), x)
    check(lambda x: _sum(np.array_split(x, 4, axis=1)[2]), x)
    check(lambda x: _sum(np.array_split(rand(7) * x[0, 0, 0], 3)[0]), x)
    check(lambda x: _sum(np.hsplit(x, 2)[1]), x)
    check(lambda x: _sum(np.hsplit(x[:, 0, 0], [1])[1]), x)
    check(lambda x: _sum(np.vsplit(x, [3])[0]), x)
    check(lambda x: _sum(np.dsplit(x, 2)[1]), x)


def test_split_pieces_iteration_and_slices():
    x = rand(6, 2)

    def f(x):
        total = 0.0
        for i, p in enumerate(np.split(x, 3)):
            total = total + (i + 1.0) * np.sum(p * p)
        return total

    check(f, x)
    check(lambda x: _sum(np.concatenate(np.split(x, 3)[1:])), x)
    check(lambda x: _sum(np.split(x, 3)[-1]), x)


def test_split_unused_pieces_zero():
    x = rand(6)
    g = grad(lambda x: np.sum(np.split(x, 3)[1]))(x)
    assert onp.array_equal(g, [0, 0, 1, 1, 0, 0])


# =============================================================================
# Casting and copies
# =============================================================================
def test_astype():
    x = rand(2, 3)
    check(lambda x: np.astype(x, onp.float64), x)
    check(lambda x: x.astype(onp.float64), x)
    check(lambda x: x.astype(complex), x)
    check(lambda x: np.astype(x, float), 1.5)


def test_astype_dtypes():
    x32 = rand(3).astype(onp.float32)
    g = grad(lambda x: np.sum(x.astype(onp.float64) * 3.0))(x32)
    assert g.dtype == onp.float32 and onp.allclose(g, 3.0)
    x64 = rand(3)
    g = grad(lambda x: np.sum(x.astype(onp.float32) * onp.float32(2)))(x64)
    assert g.dtype == onp.float64 and onp.allclose(g, 2.0)


def test_astype_complex_to_real_takes_real_part():
    z = rand(3) + 1j * rand(3, seed=4)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", onp.exceptions.ComplexWarning)
        check(lambda z: z.astype(float), z)
        vjp, _ = make_vjp(lambda z: z.astype(float))(z)
        g = vjp(onp.array([1.0, 2.0, 3.0]))
    assert g.dtype == complex and onp.array_equal(g, [1.0, 2.0, 3.0])


def test_copy():
    x = rand(2, 3)
    check(np.copy, x)
    check(lambda x: x.copy(), x)
    check(lambda x: np.array(x), x)
    check(lambda x: np.array(x, dtype=onp.float64), x)
    check(np.copy, 0.3)


# =============================================================================
# Rearrangements
# =============================================================================
def test_flips_rolls_rotations():
    x = rand(3, 4, 2)
    for axis in [None, 0, -1, (0, 2)]:
        check(lambda x: np.flip(x, axis), x)
    check(np.fliplr, x)
    check(np.flipud, x)
    check(lambda x: np.roll(x, 2), x)
    check(lambda x: np.roll(x, -1, axis=1), x)
    check(lambda x: np.roll(x, (1, 3), axis=(0, 1)), x)
    check(lambda x: np.roll(x, onp.array([2, -1]), axis=(2, 0)), x)
    for k in [1, 2, 3, -1, 0]:
        check(lambda x: np.rot90(x, k), x)
    check(lambda x: np.rot90(x, 1, axes=(1, 2)), x)


@pytest.mark.parametrize(
    "shape,reps",
    [
        ((3,), 2),
        ((2, 3), (2, 1)),
        ((2, 3), (2, 2, 3)),
        ((2, 3, 2), (2,)),
        ((), (3, 2)),
        ((2, 1), 1),
    ],
)
def test_tile(shape, reps):
    check(lambda x: np.tile(x, reps), rand(*shape))


def test_tile_python_float():
    check(lambda x: np.tile(x, 3), 0.4)


@pytest.mark.parametrize(
    "repeats,axis",
    [(2, None), (3, 0), (2, 1), ([1, 0, 3], 0), ([2, 1, 0, 1], -1), (onp.array([2]), 1), (0, 0)],
)
def test_repeat(repeats, axis):
    check(lambda x: np.repeat(x, repeats, axis=axis), rand(3, 4))


def test_repeat_method_and_scalars():
    check(lambda x: x.repeat(2, axis=0), rand(2, 3))
    check(lambda x: np.repeat(x, 3), 0.25)
    check(lambda x: np.repeat(x, [1, 2, 3, 1, 1, 2]), rand(2, 3))


@pytest.mark.parametrize("pad_width", [1, (1, 2), ((1, 0), (2, 3)), ((2,), (1,)), ((0, 1),)])
@pytest.mark.parametrize("mode", ["constant", "edge", "reflect", "symmetric", "wrap"])
def test_pad(pad_width, mode):
    check(lambda x: np.pad(x, pad_width, mode=mode), rand(3, 4))


def test_pad_constant_values_and_empty():
    x = rand(3)
    check(lambda x: np.pad(x, 2, constant_values=5.0), x)
    check(lambda x: np.pad(x, (1, 2), "constant", constant_values=(1.0, 2.0)), x)
    check(lambda x: np.pad(x, (1, 2), "empty")[1:4], x)


def test_pad_unsupported_mode_raises():
    with pytest.raises(NotImplementedError):
        grad(lambda x: np.sum(np.pad(x, 2, mode="reflect", reflect_type="odd")))(rand(4))


@pytest.mark.parametrize("k", [0, 1, -1, 3])
def test_tril_triu(k):
    for f in (np.tril, np.triu):
        check(lambda x: f(x, k), rand(3, 4))
        check(lambda x: f(x, k=k), rand(2, 3, 3))
        check(lambda x: f(x, k), rand(4))


@pytest.mark.parametrize("k", [0, 1, -2])
def test_diag(k):
    check(lambda x: np.diag(x, k), rand(3))
    check(lambda x: np.diag(x, k), rand(3, 4))
    check(lambda x: np.diag(x, k=k), rand(4, 3))
    check(np.diag, rand(3, 3))


def test_array_valued_metadata_arguments():
    """Index arrays passed as axes/sections/reps are kept, so the rules can read them."""
    x = rand(2, 3, 4)
    check(lambda x: np.transpose(x, onp.array([2, 0, 1])), x)
    check(lambda x: _sum(np.split(x, onp.array([1, 3]), axis=2)[1]), x)
    check(lambda x: np.tile(x, onp.array([2, 1, 1])), x)


def test_complex_values():
    z = rand(2, 3) + 1j * rand(2, 3, seed=9)
    w = rand(2, 3, seed=2) + 1j * rand(2, 3, seed=3)
    check(lambda z: np.reshape(z, (3, 2)).T, z)
    check(lambda z, w: np.concatenate([z, w], axis=1), z, w)
    check(lambda z, w: np.stack([z, w])[:, ::-1], z, w)
    check(lambda z: np.take(z, [0, 0, 4]), z)
    check(lambda z: np.roll(np.tile(z, 2), 1), z)
    check(lambda z: np.pad(z, 1, mode="wrap"), z)


# =============================================================================
# Compositions
# =============================================================================
def test_higher_order_through_shapes():
    """Third derivative of a composition that only goes through this family (and products)."""
    x = rand(2, 3)

    def f(x):
        y = np.concatenate([x.T.ravel(), np.flip(x, 1)[0]])
        return np.sum(np.tile(y[[0, 0, 4]], 2)[1:4] * y[1:4] * y[:3])

    check(f, x, order=3)


# =============================================================================
# Saved sets: these rules keep no buffer of the input or output
# =============================================================================
def _saved(fun, x):
    t = Tape()
    try:
        b = t.new_leaf(x)
        y = fun(b)
        info = t.node_info(y._node)
        return info["primitive"], info["saved"]
    finally:
        t.release()


_X = rand(3, 4)
# each operator's record (tests/op_records/manipulation.py), and the other spellings of them
# (methods, operators, other arguments) applied to _X
_SAVED_CASES = [pytest.param(r.call, r.saved, r.shape, id=r.name) for r in RECORDS] + [
    pytest.param(*case, _X.shape, id=f"form{k}")
    for k, case in enumerate(
        [
            (lambda b: np.reshape(b, (4, 3)), ()),
            (lambda b: b.reshape(2, 6), ()),
            (lambda b: b.T, (1,)),
            (lambda b: np.transpose(b, (1, 0)), (1,)),
            *([(lambda b: np.matrix_transpose(b), ())] if hasattr(np, "matrix_transpose") else []),
            (lambda b: np.broadcast_to(b, (2, 3, 4)), ()),
            (lambda b: np.concatenate([b, b]), ()),
            (lambda b: np.array([b, b]), ()),
            (lambda b: np.vsplit(b, onp.array([1])), (1,)),
            (lambda b: np.dsplit(b[:, :, None], 1), (1,)),
            (lambda b: b[1:, ::2], (1,)),
            (lambda b: b[[0, 0, 2]], (1,)),
            (lambda b: b[_X > 0], (1,)),
            (lambda b: b.astype(onp.float32), ()),
            (lambda b: np.roll(b, 1), (1,)),
            (lambda b: np.tile(b, 2), (1,)),
            (lambda b: np.pad(b, 1), (1,)),
            (lambda b: np.diag(b), ()),
        ]
    )
]
# (sort and partition keep their permutation instead: tests/test_saved_sets.py)


@pytest.mark.parametrize("fun,kept,shape", _SAVED_CASES)
def test_saved_set(fun, kept, shape):
    x = rand(*shape)
    name, (ans, args, kwargs) = _saved(fun, x)
    assert type(ans) is ArrayMeta or (
        isinstance(ans, tuple) and all(type(a) is ArrayMeta for a in ans)
    ), f"{name} keeps its output"
    assert all(k < len(args) for k in kept), f"{name} has no argument {max(kept)}"
    for i, a in enumerate(args):
        if i in kept:
            assert type(a) is not ArrayMeta, f"{name} dropped argument {i}"
        else:
            assert not isinstance(a, onp.ndarray), f"{name} keeps array argument {i}"
            if isinstance(a, tuple):
                assert not any(isinstance(e, onp.ndarray) for e in a)
    traced = [
        i
        for i, a in enumerate(args)
        if type(a) in (ArrayMeta, onp.ndarray) and a.shape in (x.shape, x.shape + (1,))
    ]
    assert traced, f"{name}: the traced input is missing from the record"
    for i in traced:
        assert (type(args[i]) is onp.ndarray) == (i in kept), (name, i)


def test_saved_set_untake_and_container_take():
    t = Tape()
    try:
        g = t.new_leaf(rand(3))
        u = S.untake(g, [0, 0, 2], (4,), onp.dtype(float))
        info = t.node_info(u._node)
        ans, args, _ = info["saved"]
        assert type(ans) is ArrayMeta and type(args[0]) is ArrayMeta and args[1] == [0, 0, 2]
        x = t.new_leaf(rand(6))
        parts = np.split(x, 3)
        p1 = parts[1]
        ans, args, _ = t.node_info(p1._node)["saved"]
        assert type(ans) is ArrayMeta
        assert all(type(a) is ArrayMeta for a in args[0])
    finally:
        t.release()


# =============================================================================
# Forward mode (check() above checks both modes; these are the forward-only cases)
# =============================================================================
@pytest.mark.parametrize("prim", _PRIMS, ids=lambda p: p.name)
def test_every_vjp_has_a_jvp(prim):
    assert_jvps_follow_vjps(prim)


def _fwd(fun, *args, order=2):
    check_grads(fun, tuple(range(len(args))), modes=("fwd",), order=order)(*args)


def test_pad_forward_only_modes():
    """Modes whose reverse rule is not implemented but which are linear in the input."""
    x = rand(3, 4)
    _fwd(lambda x: np.pad(x, ((1, 2), (0, 1)), mode="reflect", reflect_type="odd"), x)
    _fwd(lambda x: np.pad(x, 2, mode="symmetric", reflect_type="odd"), x)
    _fwd(lambda x: np.pad(x, ((1, 2), (2, 1)), mode="linear_ramp", end_values=3.0), x)
    _fwd(lambda x: np.pad(x, 2, mode="mean"), x)
    _fwd(lambda x: np.pad(x, 1, mode="constant", constant_values=7.0), x)
    with pytest.raises(NotImplementedError):
        make_jvp(lambda x: np.pad(x, 1, mode="maximum"))(x)(x)


def test_container_outputs_forward():
    """split / atleast_*(a, b) / traced containers: tangents are lists and tuples."""
    x = rand(6, 2)
    _fwd(lambda x: np.split(x, 3), x)
    _fwd(lambda x: np.array_split(x, [1, 4], axis=0), x)
    _fwd(lambda x: np.atleast_2d(x[0], x), x)
    _fwd(lambda x: np.atleast_3d(x[0, 0], 2.0 * x)[0], x)
    y, t = make_jvp(lambda x: np.split(x, 3))(x)(onp.ones_like(x))
    assert type(t) is list and len(t) == 3
    assert all(ti.shape == (2, 2) and onp.all(ti == 1.0) for ti in t)
    _, t = make_jvp(lambda x: np.atleast_2d(x[0], x[1, 1]))(x)(onp.arange(12.0).reshape(6, 2))
    assert onp.array_equal(t[0], [[0.0, 1.0]]) and onp.array_equal(t[1], [[3.0]])


def test_join_with_constants_forward():
    a = rand(2, 3)
    _, t = make_jvp(lambda a: np.concatenate([onp.ones((1, 3)), a]))(a)(onp.ones_like(a))
    assert onp.array_equal(t, onp.vstack([onp.zeros((1, 3)), onp.ones((2, 3))]))
    _, t = make_jvp(lambda a: np.array([a[0, 0], 5.0, a[1, 2]]))(a)(onp.ones_like(a))
    assert onp.array_equal(t, [1.0, 0.0, 1.0])
    # a float32 argument joined with float64 constants: the tangent has the output's dtype
    a32 = a.astype(onp.float32)
    y, t = make_jvp(lambda a: np.concatenate([a, onp.ones((1, 3))]))(a32)(onp.ones_like(a32))
    assert t.dtype == y.dtype == onp.float64
    y, t = make_jvp(lambda a: np.stack([a, a]))(a32)(onp.ones_like(a32))
    assert t.dtype == y.dtype == onp.float32


def test_astype_forward():
    x = rand(3)
    _, t = make_jvp(lambda x: x.astype(int))(x)(onp.ones(3))
    assert onp.all(t == 0)
    _, t = make_jvp(lambda x: x.astype(complex))(x)(onp.ones(3))
    assert t.dtype == complex and onp.array_equal(t, onp.ones(3))
    _, t = make_jvp(lambda x: x.astype(onp.float32))(x)(onp.full(3, 2.0))
    assert t.dtype == onp.float32 and onp.array_equal(t, onp.full(3, 2.0))
    z = rand(3) + 1j * rand(3, seed=4)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", onp.exceptions.ComplexWarning)
        _, t = make_jvp(lambda z: z.astype(float))(z)(onp.array([1 + 2j, 3j, -1.0]))
    assert t.dtype == float and onp.array_equal(t, [1.0, 0.0, -1.0])


# =============================================================================
# Window constructors: the length is a count
# =============================================================================
@pytest.mark.parametrize("name", ["bartlett", "blackman", "hamming", "hanning"])
def test_window_length_is_a_count(name):
    onp.testing.assert_array_equal(getattr(np, name)(6), getattr(onp, name)(6))
    with pytest.raises(TypeError, match=f"{name}: M, the number of points, is traced"):
        grad(lambda m: np.sum(getattr(np, name)(m)))(6.0)
