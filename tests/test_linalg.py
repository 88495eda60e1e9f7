"""Gradient checks of numpy.linalg (gradcy/numpy/linalg.py): reverse and forward mode,
second order where autograd's tests use it, float32 dtype contract, batched (stacked) inputs,
complex inputs, tuple outputs with partial cotangents, and the saved sets."""

import inspect

import numpy as onp
import pytest

import gradcy.numpy as np
import gradcy.numpy.linalg  # noqa: F401  (binds the submodule attribute gradcy.numpy.linalg)
from gradcy import grad, make_jvp, make_vjp
from gradcy._core import ArrayMeta, Box, Tape
from gradcy.test_util import check_grads
from op_records.linalg import RECORDS, draw
from vjp_harness import check, check_dtype, raw_cotangent

COVERED = {f"gradcy.numpy.linalg.{r.name}" for r in RECORDS}

FWD_REV = ("fwd", "rev")


def R(*shape, seed=0):
    return onp.random.RandomState(seed + 7 * len(shape) + sum(shape)).randn(*shape)


def C(*shape, seed=0):
    return R(*shape, seed=seed) + 1j * R(*shape, seed=seed + 100)


def well(*shape, seed=0):
    """A well-conditioned (batch of) square matrices: random + n I."""
    n = shape[-1]
    return R(*shape, seed=seed) + n * onp.eye(n)


def spd(*shape, seed=0):
    """spd(*batch, n): symmetric positive definite n x n matrices, A A^T + n I."""
    a = R(*shape, shape[-1], seed=seed)
    return a @ onp.swapaxes(a, -1, -2) + shape[-1] * onp.eye(shape[-1])


def hpd(*shape, seed=0):
    """hpd(*batch, n): Hermitian positive definite n x n matrices."""
    a = C(*shape, shape[-1], seed=seed)
    return a @ onp.conj(onp.swapaxes(a, -1, -2)) + shape[-1] * onp.eye(shape[-1])


def T(x):
    return np.swapaxes(x, -1, -2)


def sym(a):
    """The symmetric matrix built from a's lower triangle (autograd's test wrapper)."""
    low = np.tril(a)
    return (low + T(low)) / 2.0


def herm(a):
    low = np.tril(a)
    return (low + np.conj(T(low))) / 2.0


def flat(parts):
    """Tuple outputs as one vector (so check() applies its float32 contract to them)."""
    return np.concatenate([np.ravel(p) for p in parts])


def cg(fun, *args, order=2, modes=FWD_REV):
    check_grads(fun, tuple(range(len(args))), modes=modes, order=order)(*args)


def saved(fun, *args, argnum=0):
    """(ans, args, kwargs) of the node fun records for one call (args[argnum] traced)."""
    t = Tape()
    try:
        boxes = list(args)
        boxes[argnum] = t.new_leaf(args[argnum])
        y = fun(*boxes)
        node = y._node if type(y) is Box else y[0]._node
        info = t.node_info(node)
        return info["saved"], info["primitive"]
    finally:
        t.release()


def _is_meta(x):
    """True when x keeps no buffer (metadata, or a tuple of metadata and small scalars)."""
    if type(x) is tuple:
        return all(_is_meta(e) or not isinstance(e, onp.ndarray) for e in x)
    return type(x) is ArrayMeta


def _holds_arrays(x):
    if type(x) is tuple:
        return all(type(e) is not ArrayMeta for e in x)
    return type(x) is not ArrayMeta


# =============================================================================
# det, slogdet
# =============================================================================
def test_det():
    check(np.linalg.det, R(4, 4))
    check(np.linalg.det, R(2, 3, 3))
    cg(np.linalg.det, C(3, 3))


def test_det_singular_direction_values():
    a = well(3, 3)
    g = grad(np.linalg.det)(a)
    assert onp.allclose(g, onp.linalg.det(a) * onp.linalg.inv(a).T)


def test_slogdet():
    fun = lambda x: np.linalg.slogdet(x)[1]
    check(fun, R(4, 4))
    check(fun, -R(4, 4))
    check(lambda x: np.sum(np.linalg.slogdet(x)[1]), spd(3, 4))


def test_slogdet_unpacking_and_sign():
    a = R(4, 4)

    def fun(x):
        sign, logdet = np.linalg.slogdet(x)
        return sign * logdet

    cg(fun, a)
    # the sign of a real matrix is piecewise constant: a zero gradient
    assert onp.all(grad(lambda x: np.linalg.slogdet(x)[0])(a) == 0)


def test_slogdet_complex():
    def fun(x):
        s, ld = np.linalg.slogdet(x)
        return flat([s, ld])

    cg(fun, C(3, 3))
    cg(fun, C(2, 3, 3))


# =============================================================================
# inv, pinv
# =============================================================================
def test_inv():
    check(np.linalg.inv, well(4, 4))
    check(np.linalg.inv, well(3, 3, 3))
    check(np.linalg.inv, well(2, 2, 3, 3))
    cg(np.linalg.inv, C(3, 3) + 3 * onp.eye(3))


@pytest.mark.parametrize("shape", [(4, 3), (3, 4), (3, 3), (2, 4, 3)])
def test_pinv(shape):
    check(np.linalg.pinv, R(*shape))


def test_pinv_complex_and_kwargs():
    cg(np.linalg.pinv, C(4, 3))
    cg(np.linalg.pinv, C(2, 3, 4))
    check(lambda x: np.linalg.pinv(x, rcond=1e-10), R(3, 4))


# =============================================================================
# solve
# =============================================================================
SOLVE_CASES = [
    ((4, 4), (4,)),
    ((4, 4), (4, 2)),
    ((3, 4, 4), (4,)),
    ((3, 4, 4), (3, 4, 2)),
    ((4, 4), (3, 4, 2)),
    ((3, 4, 4), (4, 2)),
    ((2, 1, 3, 3), (4, 3, 1)),
    ((3, 4, 4), (3, 4)),
]


@pytest.mark.parametrize("sa,sb", SOLVE_CASES)
def test_solve(sa, sb):
    """As NumPy reads b: NumPy 2 takes only a 1-D b as a vector, NumPy 1.x also a b with one
    axis fewer than a (a stack of vectors); the shapes the installed NumPy rejects, gradcy
    rejects alike."""
    a, b = well(*sa), R(*sb, seed=1)
    try:
        onp.linalg.solve(a, b)
    except ValueError:
        with pytest.raises(ValueError):
            np.linalg.solve(a, b)
        return
    check(np.linalg.solve, a, b)


def test_solve_complex_and_one_argument():
    a, b = C(3, 3) + 3 * onp.eye(3), C(3, 2, seed=1)
    cg(np.linalg.solve, a, b)
    A, B = well(4, 4), R(4, 3, seed=1)
    check(lambda x: np.linalg.solve(x, B), A)
    check(lambda y: np.linalg.solve(A, y), B)


# =============================================================================
# norms
# =============================================================================
VECTOR_ORDS = [None, 2, 1, 3, 4, -1, -2, 0.5, onp.inf, -onp.inf, 0]


@pytest.mark.parametrize("ord", VECTOR_ORDS)
def test_vector_norm_ord(ord):
    x = R(6)
    check(lambda v: np.linalg.norm(v, ord), x)


@pytest.mark.parametrize("ord", [None, "fro", "nuc", 2, -2, 1, -1, onp.inf, -onp.inf])
def test_matrix_norm_ord(ord):
    check(lambda m: np.linalg.norm(m, ord), R(4, 3))


@pytest.mark.parametrize("axis", [0, 1, 2, -1, (0, 1), (2, 0), (1, -1)])
@pytest.mark.parametrize("keepdims", [False, True])
def test_norm_axis(axis, keepdims):
    x = R(4, 3, 5)
    check(lambda v: np.linalg.norm(v, axis=axis, keepdims=keepdims), x)


@pytest.mark.parametrize(
    "ord,axis",
    [(3, 1), (onp.inf, 0), (1, -1), ("nuc", (0, 2)), (2, (2, 1)), (-onp.inf, (0, 1)), (1, (1, 0))],
)
def test_norm_ord_axis(ord, axis):
    check(lambda v: np.linalg.norm(v, ord, axis, True), R(3, 4, 5))
    check(lambda v: np.linalg.norm(v, ord, axis), R(3, 4, 5))


def test_norm_flattened_and_complex():
    check(np.linalg.norm, R(2, 3, 4))
    cg(np.linalg.norm, C(5))
    cg(lambda z: np.linalg.norm(z, 3), C(5))
    cg(lambda z: np.linalg.norm(z, onp.inf), C(5))
    cg(lambda z: np.linalg.norm(z, "nuc"), C(4, 3))
    cg(lambda z: np.linalg.norm(z, 2), C(4, 3))
    cg(lambda z: np.linalg.norm(z, 1), C(4, 3))


@pytest.mark.skipif(not hasattr(onp.linalg, "vector_norm"), reason="NumPy < 2")
def test_vector_and_matrix_norm():
    check(lambda v: np.linalg.vector_norm(v), R(3, 4))
    check(lambda v: np.linalg.vector_norm(v, ord=3, axis=(0, 2), keepdims=True), R(3, 4, 2))
    check(lambda v: np.linalg.vector_norm(v, ord=onp.inf, axis=1), R(3, 4))
    check(lambda v: np.linalg.matrix_norm(v), R(2, 3, 4))
    check(lambda v: np.linalg.matrix_norm(v, ord="nuc", keepdims=True), R(2, 3, 4))
    check(lambda v: np.linalg.matrix_norm(v, ord=1), R(2, 3, 4))


# =============================================================================
# eigh, eigvalsh
# =============================================================================
@pytest.mark.parametrize("UPLO", ["L", "U"])
def test_eigh(UPLO):
    fun = lambda x: flat(np.linalg.eigh(x, UPLO))
    check(fun, spd(5))  # the triangle not read has no effect
    cg(lambda x: flat(np.linalg.eigh(x, UPLO)), spd(4))
    cg(lambda x: np.linalg.eigh(sym(x), UPLO)[1], spd(4))


def test_eigh_batched_and_partial_outputs():
    a = spd(2, 3, 4)
    check(lambda x: flat(np.linalg.eigh(x)), a)
    check(lambda x: np.linalg.eigh(x)[0], a)  # eigenvector cotangent None
    check(lambda x: np.linalg.eigh(x)[1], spd(4))  # eigenvalue cotangent None

    def unpack(x):
        w, v = np.linalg.eigh(x)
        return w[..., :, None] * v

    check(unpack, a)


def test_eigh_degenerate_eigenvalues_only():
    # eigenvalues-only gradients stay finite for repeated eigenvalues
    g = grad(lambda x: np.sum(np.linalg.eigh(x)[0] ** 2))(onp.eye(3))
    assert onp.all(onp.isfinite(g))
    assert onp.allclose(g, 2 * onp.eye(3))


@pytest.mark.parametrize("UPLO", ["L", "U"])
def test_eigh_complex(UPLO):
    cg(lambda x: flat([np.linalg.eigh(x, UPLO)[0], np.abs(np.linalg.eigh(x, UPLO)[1])]), C(4, 4))


@pytest.mark.parametrize("UPLO", ["L", "U"])
def test_eigvalsh(UPLO):
    check(lambda x: np.linalg.eigvalsh(x, UPLO), spd(4))
    check(lambda x: np.linalg.eigvalsh(x, UPLO), spd(2, 4))
    cg(lambda x: np.linalg.eigvalsh(x, UPLO), C(3, 3))


# =============================================================================
# eig, eigvals
# =============================================================================
def test_eig_real():
    def fun(x):
        w, v = np.linalg.eig(x)
        return flat([np.abs(w), np.abs(v)])

    cg(fun, R(5, 5, seed=3))


def test_eig_real_spectrum():
    # symmetric input: NumPy returns real eigenpairs (no complex dtype anywhere)
    fun = lambda x: flat(np.abs(p) for p in np.linalg.eig(x + T(x)))
    check(fun, R(4, 4))


def test_eig_complex_and_batched():
    def fun(x):
        w, v = np.linalg.eig(x)
        return flat([w, np.abs(v)])

    cg(fun, C(4, 4))
    cg(fun, C(2, 4, 4))
    cg(lambda x: np.linalg.eig(x)[0], C(3, 4, 4))
    check(lambda x: np.abs(np.linalg.eig(x)[1]), R(2, 4, 4, seed=5))


def test_eigvals():
    check(lambda x: np.abs(np.linalg.eigvals(x)), R(4, 4, seed=3))
    check(lambda x: np.linalg.eigvals(x + T(x)), R(2, 4, 4))
    cg(np.linalg.eigvals, C(4, 4))


# =============================================================================
# cholesky
# =============================================================================
CHOLESKY_UPPER = "upper" in inspect.signature(onp.linalg.cholesky).parameters  # NumPy >= 2


def test_cholesky():
    check(lambda a: np.linalg.cholesky(sym(a)), spd(5))
    check(lambda a: np.linalg.cholesky(sym(a)), spd(3, 4))
    if CHOLESKY_UPPER:
        check(lambda a: np.linalg.cholesky(sym(a), upper=True), spd(4))


def test_cholesky_gradient_symmetric_and_reparam():
    g = grad(lambda a: np.sum(np.linalg.cholesky(a) ** 3))(spd(4))
    assert onp.allclose(g, g.T)
    z0 = R(4, seed=9)
    check(lambda a: np.linalg.norm(np.dot(np.linalg.cholesky(sym(a)), z0)), spd(4))


def test_cholesky_complex():
    cg(lambda a: np.linalg.cholesky(herm(a)), hpd(3))
    if CHOLESKY_UPPER:
        cg(lambda a: np.linalg.cholesky(herm(a), upper=True), hpd(2, 3))


# =============================================================================
# svd, svdvals
# =============================================================================
@pytest.mark.parametrize("shape", [(3, 5), (5, 3), (4, 4), (2, 3, 5), (2, 5, 3), (3, 4, 4)])
def test_svd(shape):
    fun = lambda x: flat(np.linalg.svd(x, full_matrices=False))
    check(fun, R(*shape))


def test_svd_partial_outputs_and_square_full():
    a = R(4, 3)
    check(lambda x: np.linalg.svd(x, full_matrices=False)[0], a)
    check(lambda x: np.linalg.svd(x, full_matrices=False)[2], a)
    check(lambda x: np.linalg.svd(x, full_matrices=False)[1], a)
    check(lambda x: flat(np.linalg.svd(x)), R(3, 3))  # full_matrices=True, square

    def unpack(x):
        u, s, vh = np.linalg.svd(x, full_matrices=False)
        return u * s[..., None, :] @ vh  # reconstructs x

    check(unpack, R(2, 3, 4))


def test_svd_full_matrices_nonsquare_raises():
    with pytest.raises(NotImplementedError):
        grad(lambda x: np.sum(np.linalg.svd(x)[0]))(R(4, 3))


def test_svd_complex():
    def fun(x):
        u, s, vh = np.linalg.svd(x, full_matrices=False)
        return flat([np.abs(u), s, np.abs(vh), u @ vh])  # phase-invariant functions

    cg(fun, C(3, 4))
    cg(fun, C(4, 3))
    cg(fun, C(2, 3, 3))


def test_svd_compute_uv_false_and_svdvals():
    check(lambda x: np.linalg.svd(x, compute_uv=False), R(5, 3))
    check(lambda x: np.linalg.svd(x, compute_uv=False), R(4, 3, 5))
    if hasattr(onp.linalg, "svdvals"):
        check(np.linalg.svdvals, R(3, 4))
    cg(lambda x: np.linalg.svd(x, compute_uv=False), C(3, 4))


def test_svd_hermitian():
    fun = lambda x: flat(np.linalg.svd(sym(x), hermitian=True))
    check(fun, R(4, 4))
    check(lambda x: np.linalg.svd(sym(x), compute_uv=False, hermitian=True), R(4, 4))
    u, s, vh = np.linalg.svd(sym(R(4, 4)), hermitian=True)
    assert onp.allclose(u * s @ vh, sym(R(4, 4)))


# =============================================================================
# qr
# =============================================================================
@pytest.mark.parametrize("shape", [(5, 3), (4, 4), (3, 5), (2, 5, 3), (2, 3, 5)])
def test_qr(shape):
    check(lambda x: flat(np.linalg.qr(x)), R(*shape))


def test_qr_modes_and_partial_outputs():
    a = R(5, 3)
    check(lambda x: np.linalg.qr(x)[0], a)
    check(lambda x: np.linalg.qr(x)[1], a)
    check(lambda x: np.linalg.qr(x, mode="r"), a)
    check(lambda x: np.linalg.qr(x, mode="r"), R(3, 5))
    check(lambda x: flat(np.linalg.qr(x, mode="complete")), R(3, 5))
    check(lambda x: np.linalg.qr(x)[1], R(3, 5))
    check(lambda x: np.linalg.qr(x)[0], R(3, 5))

    def unpack(x):
        q, r = np.linalg.qr(x)
        return q @ r

    check(unpack, R(2, 4, 3))
    with pytest.raises(NotImplementedError):
        grad(lambda x: np.sum(np.linalg.qr(x, mode="complete")[0]))(a)


def test_qr_complex():
    cg(lambda x: flat(np.linalg.qr(x)), C(4, 3))
    cg(lambda x: flat(np.linalg.qr(x)), C(3, 3))
    cg(lambda x: flat(np.linalg.qr(x)), C(2, 3, 4))


# =============================================================================
# lstsq
# =============================================================================
@pytest.mark.parametrize(
    "sa,sb", [((5, 3), (5,)), ((5, 3), (5, 2)), ((3, 3), (3, 2)), ((3, 5), (3,)), ((3, 5), (3, 2))]
)
def test_lstsq_solution(sa, sb):
    a, b = R(*sa), R(*sb, seed=1)
    check(lambda x, y: np.linalg.lstsq(x, y)[0], a, b)


def test_lstsq_residuals_and_singular_values():
    a, b = R(5, 3), R(5, 2, seed=1)
    check(lambda x, y: np.linalg.lstsq(x, y)[1], a, b)
    check(lambda x, y: np.linalg.lstsq(x, y)[1], a, R(5, seed=2))
    check(lambda x, y: np.linalg.lstsq(x, y)[3], a, b)

    def everything(x, y):
        sol, res, rank, s = np.linalg.lstsq(x, y, rcond=None)
        return flat([sol, res, s])

    check(everything, a, b)


def test_lstsq_complex():
    a, b = C(5, 3), C(5, 2, seed=1)
    cg(lambda x, y: np.linalg.lstsq(x, y)[0], a, b)
    cg(lambda x, y: np.linalg.lstsq(x, y)[1], a, b)
    cg(lambda x, y: np.linalg.lstsq(x, y)[0], C(3, 5), C(3, seed=1))


# =============================================================================
# matrix_power, multi_dot, tensorsolve, tensorinv, cond
# =============================================================================
@pytest.mark.parametrize("n", [0, 1, 2, 3, 5, -1, -2])
def test_matrix_power(n):
    a = well(3, 3) / 3.0
    if n == 0:
        cg(lambda x: np.linalg.matrix_power(x, n) + x, a)
        check_dtype(lambda x: np.linalg.matrix_power(x, n) * x, a.astype(onp.float32))
    else:
        check(lambda x: np.linalg.matrix_power(x, n), a)
    check(lambda x: np.linalg.matrix_power(x, 3), well(2, 3, 3) / 3.0)


def test_multi_dot():
    A, B, Cm, D = R(3, 4), R(4, 6, seed=1), R(6, 2, seed=2), R(2, 5, seed=3)
    check(lambda a, b, c, d: np.linalg.multi_dot([a, b, c, d]), A, B, Cm, D)
    check(lambda a, b: np.linalg.multi_dot([a, b]), A, B)
    v, w = R(3, seed=4), R(5, seed=5)
    check(lambda a, b, c: np.linalg.multi_dot([a, b, c]), v, A, B)
    check(lambda a, b: np.linalg.multi_dot([a, A, B, Cm, D, b]), v, w)
    res = np.linalg.multi_dot([v, A, B, Cm, D, w])
    assert onp.allclose(res, v @ A @ B @ Cm @ D @ w)
    # plain numpy on traced values routes here as well
    check(lambda b: onp.linalg.multi_dot([A, b, Cm]), B)


def test_tensorsolve():
    a = well(6, 6).reshape(6, 2, 3)
    b = R(6, seed=1)
    check(np.linalg.tensorsolve, a, b)
    a2 = well(6, 6).reshape(2, 3, 2, 3)
    check(np.linalg.tensorsolve, a2, R(2, 3, seed=1))
    a3 = onp.moveaxis(a2, 1, 3)  # axes=(1, 2) moves it back to a2
    check(lambda x, y: np.linalg.tensorsolve(x, y, axes=(1, 2)), a3, R(2, 3, seed=1))
    assert onp.allclose(
        np.linalg.tensorsolve(a3, R(2, 3, seed=1), axes=(1, 2)),
        onp.linalg.tensorsolve(a3, R(2, 3, seed=1), axes=(1, 2)),
    )


def test_tensorinv():
    a = well(6, 6).reshape(2, 3, 6)
    check(lambda x: np.linalg.tensorinv(x, 2), a)
    check(lambda x: np.linalg.tensorinv(x, ind=1), well(6, 6).reshape(6, 3, 2))


@pytest.mark.parametrize("p", [None, 2, -2, "fro", "nuc", 1, onp.inf])
def test_cond(p):
    a = well(3, 3)
    check(lambda x: np.linalg.cond(x, p), a)
    assert onp.allclose(np.linalg.cond(a, p), onp.linalg.cond(a, p))


def test_matrix_rank_and_array_api_aliases():
    a = R(4, 3)
    assert grad(lambda x: np.sum(x) * np.linalg.matrix_rank(x))(a).shape == (4, 3)
    if not hasattr(onp.linalg, "matrix_transpose"):  # the array API aliases: NumPy >= 2
        return
    x3 = R(2, 3, 3)
    check(lambda x: np.linalg.trace(x, offset=1), x3)
    check(lambda x: np.linalg.diagonal(x), x3)
    check(lambda x: np.linalg.matrix_transpose(x), x3)
    check(lambda x, y: np.linalg.matmul(x, y), x3, R(3, 2, seed=1))
    check(lambda x, y: np.linalg.cross(x, y), R(4, 3), R(4, 3, seed=1))
    check(lambda x, y: np.linalg.outer(x, y), R(3), R(4, seed=1))
    check(lambda x, y: np.linalg.tensordot(x, y, axes=1), R(2, 3), R(3, 4, seed=1))
    check(lambda x, y: np.linalg.vecdot(x, y), R(2, 3), R(2, 3, seed=1))
    assert onp.allclose(np.linalg.trace(x3), onp.linalg.trace(x3))


# =============================================================================
# Dispatch, tuple outputs, NumPy on traced values
# =============================================================================
def test_plain_calls_keep_numpy_results():
    a = spd(3)
    assert type(np.linalg.eigh(a)) is type(onp.linalg.eigh(a))
    assert type(np.linalg.svd(a)) is type(onp.linalg.svd(a))
    assert type(np.linalg.qr(a)) is type(onp.linalg.qr(a))
    assert type(np.linalg.slogdet(a)) is type(onp.linalg.slogdet(a))
    assert type(np.linalg.eig(a)) is type(onp.linalg.eig(a))
    assert onp.allclose(np.linalg.eigh(a).eigenvalues, onp.linalg.eigvalsh(a))


def test_numpy_functions_on_traced_values():
    a = spd(4)

    def fun(x):
        w, v = onp.linalg.eigh(x)
        s = onp.linalg.svd(x, compute_uv=False)
        q, r = onp.linalg.qr(x)
        return (
            onp.sum(w)
            + onp.sum(s)
            + onp.sum(r**2)
            + onp.linalg.slogdet(x)[1]
            + onp.linalg.det(x)
            + onp.sum(onp.linalg.inv(x))
            + onp.linalg.norm(x)
        )

    ref = grad(
        lambda x: (
            np.sum(np.linalg.eigh(x)[0])
            + np.sum(np.linalg.svd(x)[1])
            + np.sum(np.linalg.qr(x)[1] ** 2)
            + np.linalg.slogdet(x)[1]
            + np.linalg.det(x)
            + np.sum(np.linalg.inv(x))
            + np.linalg.norm(x)
        )
    )(a)
    assert onp.allclose(grad(fun)(a), ref)


def test_tuple_outputs_forward_mode():
    a = spd(4)
    t = R(4, 4, seed=3)
    t = t + t.T
    (w, v), (dw, dv) = make_jvp(lambda x: np.linalg.eigh(x))(a)(t)
    eps = 1e-6
    w2, v2 = onp.linalg.eigh(a + eps * t)
    assert onp.allclose(dw, (w2 - w) / eps, atol=1e-4)
    assert onp.allclose(dv, (v2 - v) / eps, atol=1e-4)


def test_float32_tuple_outputs():
    a32 = spd(4).astype(onp.float32)
    for fun in [
        lambda x: flat(np.linalg.eigh(x)),
        lambda x: flat(np.linalg.qr(x)),
        lambda x: flat(np.linalg.svd(x, full_matrices=False)),
        lambda x: np.linalg.slogdet(x)[1],
        lambda x: np.abs(np.linalg.eig(x)[1]),
        lambda x: np.linalg.lstsq(x, x[:, :2])[0],
    ]:
        c = raw_cotangent(fun, (a32,), 0)
        assert c.dtype == onp.float32 and c.shape == a32.shape
        vjp, ans = make_vjp(fun)(a32)
        try:
            assert vjp(onp.ones_like(onp.asarray(ans))).dtype == onp.float32
        finally:
            vjp.release()
        y, jv = make_jvp(fun)(a32)(onp.ones_like(a32))
        assert onp.asarray(jv).dtype == onp.asarray(y).dtype


# =============================================================================
# Saved sets: each node keeps only what its rules read
# =============================================================================
def _traced_first(rec, i):
    """The record's call as a function of operand i first (saved() traces argument 0)."""

    def fun(x, *others):
        ops = list(others)
        ops.insert(i, x)
        return rec.call(*ops)

    return fun


# each operator's record (tests/op_records/linalg.py), each of its operands traced in turn
SAVED_CASES = [
    pytest.param(rec, i, id=rec.name + (f"@{i}" if i else ""))
    for rec in RECORDS
    for i in range(len(rec.shapes))
]


@pytest.mark.parametrize("rec,i", SAVED_CASES)
def test_saved_sets(rec, i):
    ops = [
        draw(k, onp.random.RandomState(j), s) for j, (k, s) in enumerate(zip(rec.kinds, rec.shapes))
    ]
    (ans, sargs, kwargs), prim = saved(_traced_first(rec, i), ops[i], *ops[:i], *ops[i + 1 :])
    name, expected = rec.name, rec.saved
    assert prim == f"gradcy.numpy.linalg.{name}"
    if "ans" in expected:
        assert _holds_arrays(ans), f"{name}: ans should be saved"
    else:
        assert _is_meta(ans), f"{name}: ans saved but never read: {ans!r}"
    for k, a in enumerate(sargs):
        if not (isinstance(a, onp.ndarray) or type(a) is ArrayMeta):
            continue
        if k in expected:
            assert type(a) is not ArrayMeta, f"{name}: argument {k} should be saved"
        else:
            assert type(a) is ArrayMeta, f"{name}: argument {k} saved but never read"


def test_functions_returning_the_tuples():
    cg(lambda x: tuple(np.linalg.eigh(x)), spd(2, 4))
    cg(lambda x: tuple(np.linalg.svd(x, full_matrices=False)), R(4, 3))
    cg(lambda x: tuple(np.linalg.qr(x)), R(3, 4))
    cg(lambda x: tuple(np.linalg.slogdet(x)), C(3, 3))
    cg(lambda x, y: np.linalg.lstsq(x, y)[:2], R(5, 3), R(5, 2, seed=1))
