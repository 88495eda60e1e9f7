"""Gradient checks of the products family (gradcy/numpy/products.py)."""

import warnings

import numpy as onp
import pytest

import gradcy.numpy as np
from gradcy import make_jvp, make_vjp
from gradcy._core import ArrayMeta, Tape
from gradcy.numpy import products
from op_records.products import BILINEAR, RECORDS
from vjp_harness import check, rand, raw_cotangent, saved_record

# each operator's representative call, operand shapes and saved spec: its record
COVERED = {f"gradcy.numpy.{rec.name}" for rec in RECORDS} | {
    "gradcy.numpy.products.diagonal_scatter"
}


def operands(rec, dtype=None):
    """Seeded operands of the record's representative call."""
    out = [r(*s, seed=k) for k, s in enumerate(rec.shapes)]
    return out if dtype is None else [a.astype(dtype) for a in out]


def r(*shape, seed=0):
    """Seeded test data; shape () gives a Python float, shape (None,) a 0-d array."""
    if shape == (None,):
        return onp.array(rand(seed=seed + 3))
    return rand(*shape, seed=seed)


def chk(fun, *args):
    """check() (numerical to order 2, float32 contract), plus the float32 contract on the raw
    cotangent each rule returns (make_vjp would hide a wrong dtype by casting at the leaves)."""
    check(fun, *args)
    args32 = [
        a.astype(onp.float32) if isinstance(a, onp.ndarray) and a.dtype.kind == "f" else a
        for a in args
    ]
    for i, a in enumerate(args32):
        if isinstance(a, onp.ndarray) and a.dtype == onp.float32:
            c = raw_cotangent(fun, args32, i)
            assert c.dtype == onp.float32, f"argument {i}: cotangent dtype {c.dtype}"
            assert onp.shape(c) == a.shape, f"argument {i}: cotangent shape {onp.shape(c)}"


# =============================================================================
# dot
# =============================================================================
DOT_SHAPES = [
    ((), (3,)),
    ((3,), ()),
    ((None,), (2, 3)),
    ((2, 3), (None,)),
    ((3,), (3,)),
    ((2, 3), (3,)),
    ((3,), (3, 4)),
    ((2, 3), (3, 4)),
    ((2, 3, 4), (4,)),
    ((4,), (2, 4, 3)),
    ((2, 3, 4), (4, 2)),
    ((3, 4), (2, 4, 2)),
    ((2, 1, 3), (2, 3, 2)),
    ((1, 2, 3), (3,)),
]


@pytest.mark.parametrize("sa,sb", DOT_SHAPES)
def test_dot(sa, sb):
    chk(np.dot, r(*sa), r(*sb, seed=1))


def test_dot_method_and_values():
    A, B = r(2, 3), r(3, 4, seed=1)
    chk(lambda a: a.dot(B), A)  # Box.dot (ndarray.dot of a traced value cannot dispatch)
    chk(lambda a: a.dot(a.T), A)
    g = r(2, 4, seed=2)
    assert onp.allclose(raw_cotangent(np.dot, (A, B), 0, g), g @ B.T)
    assert onp.allclose(raw_cotangent(np.dot, (A, B), 1, g), A.T @ g)


def test_dot_chain():
    D = 4
    x, z0 = r(D, D) / 2, r(D, D, seed=1)

    def chain(x, z):
        for _ in range(3):
            z = np.dot(x, z)
        return z

    chk(chain, x, z0)


# =============================================================================
# matmul and @
# =============================================================================
MATMUL_SHAPES = [
    ((3,), (3,)),
    ((3,), (3, 4)),
    ((2, 3), (3,)),
    ((2, 3), (3, 4)),
    ((2, 2, 3), (3,)),
    ((3,), (2, 3, 4)),
    ((2, 2, 3), (3, 4)),
    ((2, 3), (2, 3, 4)),
    ((2, 1, 2, 3), (3, 3, 2)),
    ((1, 2, 3), (4, 3, 2)),
    ((4, 2, 3), (1, 3, 2)),
    ((3, 2, 3), (3, 3, 2)),
]


@pytest.mark.parametrize("sa,sb", MATMUL_SHAPES)
def test_matmul(sa, sb):
    chk(np.matmul, r(*sa), r(*sb, seed=1))


@pytest.mark.parametrize("sa,sb", [((2, 3), (3, 4)), ((2, 2, 3), (3,)), ((3,), (2, 3, 2))])
def test_matmul_operator(sa, sb):
    A, B = r(*sa), r(*sb, seed=1)
    chk(lambda a, b: a @ b, A, B)
    chk(lambda b: A @ b, B)  # plain left operand: ndarray.__matmul__ -> gradcy
    chk(lambda a: a @ B, A)


# =============================================================================
# tensordot
# =============================================================================
TENSORDOT_CASES = [
    ((2, 3, 4), (3, 4, 2), 2),
    ((2, 3), (3, 4), 1),
    ((2, 3), (4,), 0),
    ((None,), (2, 3), 0),
    ((3, 2, 4), (2, 3, 2), ([1, 0], [0, 1])),
    ((3, 2, 4), (2, 3, 2), ([0, 1], [1, 0])),
    ((2, 3, 4), (4, 2), ([2], [0])),
    ((2, 3), (3, 2), (1, 0)),
    ((4, 2, 3), (2, 3, 4), ([-1, 0], [1, -1])),
    ((2, 3), (3, 2), ([0, 1], [1, 0])),
]


@pytest.mark.parametrize("sa,sb,axes", TENSORDOT_CASES)
def test_tensordot(sa, sb, axes):
    chk(lambda a, b: np.tensordot(a, b, axes), r(*sa), r(*sb, seed=1))


def test_tensordot_axes_keyword():
    chk(lambda a, b: np.tensordot(a, b, axes=([0], [1])), r(3, 2), r(2, 3, seed=1))


# =============================================================================
# einsum
# =============================================================================
EINSUM_CASES = [
    ("ij,jk->ik", [(2, 3), (3, 4)]),
    ("ij,jk", [(2, 3), (3, 4)]),
    ("ii->i", [(3, 3)]),
    ("ii", [(3, 3)]),
    ("ij->", [(2, 3)]),
    ("ij->ji", [(2, 3)]),
    ("ba", [(2, 3)]),
    ("i,i", [(3,), (3,)]),
    ("i,j->ij", [(2,), (3,)]),
    ("ij,ij->ij", [(2, 1), (2, 3)]),
    ("...ij,...jk->...ik", [(2, 1, 2, 3), (3, 3, 2)]),
    ("...ij,...jk", [(2, 3), (4, 3, 2)]),
    ("i...->...", [(2, 3)]),
    ("ij...,j...->i...", [(2, 3, 4), (3, 1)]),
    ("iij->j", [(2, 2, 3)]),
    ("iij,jk->ik", [(2, 2, 3), (3, 2)]),
    ("ii,i->i", [(3, 3), (3,)]),
    ("ij,jk,kl->il", [(2, 3), (3, 2), (2, 2)]),
    ("i,ij,j->", [(2,), (2, 3), (3,)]),
    (",ij->ij", [(), (2, 3)]),
    ("Ab,bC->AC", [(2, 3), (3, 2)]),
    # the same subscripts with and without length-1 axes (the rule is cached on which axes
    # have length 1, so each pattern is its own rule)
    ("ij,ij->ij", [(1, 3), (2, 3)]),
    ("ij,ij->ij", [(1, 1), (2, 3)]),
    ("ij,ij->ij", [(2, 3), (2, 3)]),
    ("ij,jk->ik", [(1, 1), (1, 4)]),
    ("ij,jk->ik", [(2, 1), (1, 4)]),
    ("bsd,bd->bs", [(2, 1, 3), (2, 3)]),
    ("bsd,bd->bs", [(2, 4, 3), (2, 3)]),
    ("bs,bsd->bd", [(2, 4), (2, 4, 3)]),
    ("bs,bsd->bd", [(2, 4), (1, 4, 3)]),
    # a contracted label longer in one operand than in the others (which broadcast it)
    ("ij,jk", [(2, 3), (1, 4)]),
    ("ij,jk->ik", [(2, 3), (1, 4)]),
    ("ij,i->", [(2, 3), (1,)]),
    ("ij,j,jk->ik", [(2, 3), (1,), (1, 2)]),
]


@pytest.mark.parametrize("subs,shapes", EINSUM_CASES)
def test_einsum(subs, shapes):
    args = [r(*s, seed=k) for k, s in enumerate(shapes)]
    assert onp.allclose(np.einsum(subs, *args), onp.einsum(subs, *args))
    chk(lambda *ops: np.einsum(subs, *ops), *args)


def test_einsum_optimize_and_sublists():
    A, B, C = r(2, 3), r(3, 2, seed=1), r(2, 4, seed=2)
    chk(lambda a, b, c: np.einsum("ij,jk,kl->il", a, b, c, optimize=True), A, B, C)
    chk(lambda a, b: np.einsum(a, [0, 1], b, [1, 2], [0, 2]), A, B)
    chk(lambda a, b: np.einsum(a, [Ellipsis, 1], b, [1, 2]), A, B)


def _einsum_rule(subs, ops, g, **kwargs):
    """The cotangents einsum's registered rule returns for every operand."""
    ans = onp.einsum(subs, *ops, **kwargs)
    return np.einsum.vjp_argnums(tuple(range(1, len(ops) + 1)), ans, (subs,) + tuple(ops), kwargs)(
        g
    )


LAYOUT_CASES = [
    # (subscripts, operands, einsum kwargs): a plain einsum (order='K') would hand back a
    # transposed or strided result for these
    ("ij->ji", lambda: [r(3, 4)], {}),
    ("ij->ij", lambda: [r(3, 4)], {}),
    ("ij,jk->ik", lambda: [r(3, 4), r(4, 5, seed=1)], {"optimize": True}),
    ("ij,jk,kl->il", lambda: [r(3, 4), r(4, 5, seed=1), r(5, 2, seed=2)], {"optimize": True}),
    ("ij,j->ij", lambda: [r(4, 3).T, r(4, seed=1)], {}),
    (
        "bsd,bd->bs",
        lambda: [r(2, 7, 5).transpose(2, 1, 0)[:, :4].transpose(2, 1, 0), r(2, 5, seed=1)],
        {},
    ),
    ("bs,bsd->bd", lambda: [r(5, 2, seed=1).T, r(2, 9, 5)[:, :5]], {}),
]


@pytest.mark.parametrize("subs,make,kwargs", LAYOUT_CASES, ids=[c[0] for c in LAYOUT_CASES])
def test_einsum_cotangents_are_c_contiguous(subs, make, kwargs):
    ops = make()
    ans = onp.einsum(subs, *ops, **kwargs)
    for g in (onp.ones_like(ans), r(*reversed(ans.shape), seed=7).T):  # C and transposed g
        cots = _einsum_rule(subs, ops, g, **kwargs)
        for k, (c, op) in enumerate(zip(cots, ops)):
            assert type(c) is onp.ndarray and c.flags.c_contiguous, (k, c.strides)
            assert c.shape == op.shape and c.dtype == op.dtype
            # against the product rule written out: d<g, einsum>/d op_k by finite differences
            eps, e = 1e-6, onp.zeros(op.shape)
            idx = tuple(n // 2 for n in op.shape)
            e[idx] = eps
            plus = [o + e if j == k else o for j, o in enumerate(ops)]
            minus = [o - e if j == k else o for j, o in enumerate(ops)]
            fd = onp.sum(g * (onp.einsum(subs, *plus) - onp.einsum(subs, *minus))) / (2 * eps)
            assert abs(c[idx] - fd) < 1e-6 * max(1.0, abs(fd)), (k, c[idx], fd)


def test_einsum_rule_is_cached_across_lengths():
    """A prefix that grows every step (memory networks) reuses one rule per operand: the cache
    key is the subscripts, the ndims and the length-1 axes, not the lengths."""
    spec = products._einsum_grad_spec
    subs = "xyz,xz->xy"  # letters no other test uses: its own cache entries
    q = r(3, 4, seed=1)
    before = spec.cache_info().misses
    for n in range(2, 40):
        P = r(3, n, 4)
        gP, gq = _einsum_rule(subs, [P, q], onp.ones((3, n)))
        onp.testing.assert_allclose(gP, onp.broadcast_to(q[:, None, :], P.shape))
        onp.testing.assert_allclose(gq, P.sum(axis=1))
    assert spec.cache_info().misses - before == 2  # one rule per operand
    _einsum_rule(subs, [r(3, 1, 4), q], onp.ones((3, 1)))  # a length-1 axis: a new pattern
    assert spec.cache_info().misses - before == 4


def test_einsum_real_operand_with_complex_operand():
    a, b = r(2, 3), crand(3, 2, seed=1)
    complex_check(lambda a, b: np.einsum("ij,jk->ik", a, b), a, b)
    c = raw_cotangent(lambda a: np.einsum("ij,jk->ik", a, b), (a,), 0, onp.ones((2, 2), complex))
    assert c.dtype == a.dtype and c.flags.c_contiguous


# =============================================================================
# outer inner vdot kron cross
# =============================================================================
@pytest.mark.parametrize("sa,sb", [((3,), (4,)), ((2, 2), (3,)), ((), (3,)), ((3,), (1, 2))])
def test_outer(sa, sb):
    chk(np.outer, r(*sa), r(*sb, seed=1))


@pytest.mark.parametrize(
    "sa,sb",
    [
        ((3,), (3,)),
        ((2, 3), (3,)),
        ((3,), (2, 3)),
        ((2, 3), (4, 3)),
        ((2, 3), (4, 2, 3)),
        ((), (2, 3)),
        ((2, 3), ()),
        ((None,), (3,)),
    ],
)
def test_inner(sa, sb):
    chk(np.inner, r(*sa), r(*sb, seed=1))


@pytest.mark.parametrize("sa,sb", [((3,), (3,)), ((2, 3), (3, 2)), ((6,), (2, 3))])
def test_vdot(sa, sb):
    chk(np.vdot, r(*sa), r(*sb, seed=1))


@pytest.mark.parametrize(
    "sa,sb",
    [((2,), (3,)), ((2, 2), (3, 2)), ((2,), (2, 3)), ((2, 1, 2), (2, 3)), ((), (3,)), ((2, 2), ())],
)
def test_kron(sa, sb):
    chk(np.kron, r(*sa), r(*sb, seed=1))


@pytest.mark.parametrize(
    "sa,sb,kw",
    [
        ((3,), (3,), {}),
        ((4, 3), (3,), {}),
        ((2, 1, 3), (4, 3), {}),
        ((3, 4), (4, 3), dict(axisa=0, axisb=1, axisc=0)),
        ((3, 2), (3, 2), dict(axis=0)),
        ((2, 3, 2), (3,), dict(axisa=1)),
    ],
)
def test_cross(sa, sb, kw):
    chk(lambda a, b: np.cross(a, b, **kw), r(*sa), r(*sb, seed=1))


def test_cross_rejects_2_vectors():
    """Where NumPy rejects 2-vectors (2.5 on), gradcy raises what NumPy raises; where NumPy
    still takes them (deprecated in 2.0), gradcy has no VJP for them: NotImplementedError."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        try:
            onp.cross(onp.ones(2), onp.ones(2))
            expected = NotImplementedError
        except Exception as e:  # (whatever NumPy raises)
            expected = type(e)
        with pytest.raises(expected):
            make_vjp(lambda a: np.cross(a, onp.ones(2)))(onp.ones(2))[0](onp.array(1.0))


# =============================================================================
# trace and diagonal
# =============================================================================
DIAG_CASES = [
    ((3, 3), {}),
    ((3, 4), dict(offset=1)),
    ((4, 3), dict(offset=-1)),
    ((3, 4), dict(offset=-2)),
    ((2, 3, 4), dict(axis1=1, axis2=2)),
    ((3, 2, 3), dict(offset=1, axis1=2, axis2=0)),
    ((2, 3, 3), dict(axis1=-1, axis2=-2)),
    ((2, 3), dict(offset=5)),
]


@pytest.mark.parametrize("shape,kw", DIAG_CASES)
def test_trace(shape, kw):
    chk(lambda a: np.trace(a, **kw), r(*shape))


@pytest.mark.parametrize("shape,kw", DIAG_CASES)
def test_diagonal(shape, kw):
    chk(lambda a: np.diagonal(a, **kw), r(*shape))


def test_trace_and_diagonal_methods():
    chk(lambda a: a.trace(), r(3, 3))
    chk(lambda a: a.diagonal(1) * 2.0, r(3, 4))
    chk(lambda a: np.sum(np.diagonal(a) * np.trace(a)), r(3, 3))


@pytest.mark.parametrize(
    "gshape,shape,kw",
    [
        ((3,), (3, 3), {}),
        ((2, 1), (2, 3, 4), dict(axis1=1, axis2=2)),
        ((2,), (3, 4), dict(offset=-1)),
    ],
)
def test_diagonal_scatter(gshape, shape, kw):
    scatter = products.diagonal_scatter
    out = scatter(r(*gshape), shape, onp.dtype(onp.float64), **kw)
    assert onp.allclose(
        onp.diagonal(out, **kw), onp.broadcast_to(r(*gshape), onp.diagonal(out, **kw).shape)
    )
    assert onp.abs(out).sum() > 0
    chk(lambda g: scatter(g, shape, onp.dtype(onp.float64), **kw), r(*gshape))


# =============================================================================
# NumPy 2: matrix_transpose vecdot matvec vecmat
# =============================================================================
needs = pytest.mark.skipif


@needs(not hasattr(onp, "matrix_transpose"), reason="numpy < 2")
@pytest.mark.parametrize("shape", [(2, 3), (4, 2, 3)])
def test_matrix_transpose(shape):
    chk(lambda x: np.matrix_transpose(x) * r(*shape[:-2], shape[-1], shape[-2], seed=5), r(*shape))


@needs(not hasattr(onp, "vecdot"), reason="numpy < 2")
@pytest.mark.parametrize(
    "sa,sb,kw",
    [
        ((3,), (3,), {}),
        ((2, 3), (3,), {}),
        ((2, 1, 3), (4, 3), {}),
        ((3, 2), (3, 2), dict(axis=0)),
        ((2, 3), (2, 3), dict(keepdims=True)),
        ((2, 3, 2), (2, 3, 2), dict(axis=1, keepdims=True)),
    ],
)
def test_vecdot(sa, sb, kw):
    chk(lambda a, b: np.vecdot(a, b, **kw), r(*sa), r(*sb, seed=1))


@needs(not hasattr(onp, "matvec"), reason="numpy < 2.2")
@pytest.mark.parametrize(
    "sa,sb", [((2, 3), (3,)), ((4, 2, 3), (3,)), ((2, 3), (4, 3)), ((1, 2, 3), (4, 3))]
)
def test_matvec(sa, sb):
    chk(np.matvec, r(*sa), r(*sb, seed=1))


@needs(not hasattr(onp, "vecmat"), reason="numpy < 2.2")
@pytest.mark.parametrize(
    "sa,sb", [((3,), (3, 2)), ((4, 3), (3, 2)), ((3,), (4, 3, 2)), ((4, 1, 3), (2, 3, 2))]
)
def test_vecmat(sa, sb):
    chk(np.vecmat, r(*sa), r(*sb, seed=1))


@pytest.mark.parametrize(
    "fun,sa,sb",
    [pytest.param(rec.call, *rec.shapes, id=rec.name) for rec in BILINEAR]
    + [
        (np.dot, (3,), (2, 3, 2)),
        (np.matmul, (3,), (3,)),
        (lambda a, b: np.tensordot(a, b, ([1, 0], [0, 1])), (3, 2), (2, 3)),
        (lambda a, b: np.einsum("ii,i->i", a, b), (3, 3), (3,)),
    ],
)
def test_mixed_precision_cotangents(fun, sa, sb):
    """float32 with float64: the output is float64, each cotangent keeps its operand's dtype."""
    a, b = r(*sa), r(*sb, seed=1)
    for args in [(a.astype(onp.float32), b), (a, b.astype(onp.float32))]:
        for i in range(2):
            c = raw_cotangent(fun, args, i)
            assert c.dtype == args[i].dtype and onp.shape(c) == args[i].shape


# =============================================================================
# Complex values: autograd's convention (vjp_y = conj(vjp(conj(u))) is the adjoint of the
# real-linear Jacobian under Re<a, b>)
# =============================================================================
def crand(*shape, seed=0):
    rs = onp.random.RandomState(seed)
    return rs.randn(*shape) + 1j * rs.randn(*shape)


def complex_check(fun, *args, eps=1e-6):
    rs = onp.random.RandomState(1)
    for i, x in enumerate(args):

        def f(xi, i=i):
            return fun(*args[:i], xi, *args[i + 1 :])

        vjp, y = make_vjp(f)(x)
        u = rs.randn(*onp.shape(y)) + 1j * rs.randn(*onp.shape(y))
        v = rs.randn(*onp.shape(x)) + (1j * rs.randn(*onp.shape(x)) if onp.iscomplexobj(x) else 0)
        w = onp.conj(vjp(onp.conj(u)))
        assert onp.shape(w) == onp.shape(x)
        analytic = onp.real(onp.vdot(w, v))
        jv = (onp.asarray(f(x + eps * v)) - onp.asarray(f(x - eps * v))) / (2 * eps)
        numeric = onp.real(onp.vdot(u, jv))
        assert abs(analytic - numeric) < 1e-6 * max(1.0, abs(numeric)), (i, analytic, numeric)
        # forward mode: the JVP along v is the directional derivative itself
        y2, jt = make_jvp(f)(x)(v if onp.iscomplexobj(x) else onp.real(v))
        assert onp.result_type(jt) == onp.result_type(y2) and onp.shape(jt) == onp.shape(y2)
        assert onp.allclose(jt, jv, rtol=1e-6, atol=1e-7), (i, jt, jv)


COMPLEX_CASES = [pytest.param(rec.call, rec.shapes, id=rec.name) for rec in RECORDS] + [
    (np.dot, [(3,), (2, 3, 2)]),
    (lambda a: np.einsum("ii->i", a), [(3, 3)]),
]


@pytest.mark.parametrize("fun,shapes", COMPLEX_CASES)
def test_complex(fun, shapes):
    complex_check(fun, *[crand(*s, seed=k) for k, s in enumerate(shapes)])


@pytest.mark.parametrize(
    "fun,shapes", [(np.dot, [(2, 3), (3, 2)]), (np.vdot, [(3,), (3,)]), (np.matmul, [(3,), (3, 2)])]
)
def test_real_operand_with_complex_operand(fun, shapes):
    a, b = r(*shapes[0]), crand(*shapes[1], seed=1)
    complex_check(fun, a, b)
    complex_check(fun, crand(*shapes[0]), r(*shapes[1], seed=1))
    assert raw_cotangent(fun, (a, b), 0, onp.ones(onp.shape(fun(a, b)), complex)).dtype == a.dtype


# =============================================================================
# The dot chain costs one matrix product per argument, on views
# =============================================================================
PRODUCTS = {
    "gradcy.numpy.dot",
    "gradcy.numpy.matmul",
    "gradcy.numpy.tensordot",
    "gradcy.numpy.einsum",
}
VIEWS = {"gradcy.numpy.matrix_transpose", "gradcy.numpy.transpose", "gradcy.numpy.swapaxes"}


def rule(prim, argnum, g, ans, *args):
    """Run one registered rule on g (registration converts makers to the form
    rule(g, ans, *args))."""
    return prim.vjpmakers[argnum](g, ans, *args)


@pytest.mark.parametrize("prim", [np.dot, np.matmul])
@pytest.mark.parametrize("argnum", [0, 1])
def test_product_rule_is_one_product(prim, argnum):
    """Trace the rule itself: it records exactly one product and otherwise only views."""
    D = 5
    A, B, g = r(D, D), r(D, D, seed=1), r(D, D, seed=2)
    t = Tape()
    try:
        Ab, Bb, gb = t.new_leaf(A), t.new_leaf(B), t.new_leaf(g)
        out = rule(prim, argnum, gb, onp.dot(A, B), Ab, Bb)
        names = [t.node_info(i)["primitive"] for i in range(len(t)) if not t.node_info(i)["leaf"]]
        assert onp.allclose(out._value, g @ B.T if argnum == 0 else A.T @ g)
    finally:
        t.release()
    assert sum(n in PRODUCTS for n in names) == 1, names
    assert all(n in PRODUCTS | VIEWS for n in names), names
    # on plain arrays: the operand is a transposed view, the result is the product's output
    plain = rule(prim, argnum, g, None, A, B)
    assert plain.flags.owndata and plain.dtype == A.dtype


@pytest.mark.parametrize("prim", [np.dot, np.matmul])
def test_dot_chain_memory_is_one_buffer_per_product(prim):
    """Backward through z = dot(x, z): each step allocates only its two products."""
    import tracemalloc

    D, n = 200, 4
    x, z0 = r(D, D) / D, r(D, D, seed=1)

    def chain(x):
        z = z0
        for _ in range(n):
            z = prim(x, z)
        return z

    vjp, _ = make_vjp(chain)(x)
    g = onp.ones((D, D))
    tracemalloc.start()
    try:
        vjp(g)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    # held at once: the incoming cotangent of z and the two products (the cotangent of x
    # accumulates in place); a materialised transpose or cast would add one more D x D
    assert peak < 3.5 * D * D * 8, peak / (D * D * 8)


# =============================================================================
# Saved sets: only the declared values reach the tape
# =============================================================================
def not_kept(v):
    """A saved value whose buffer the tape does not hold (numpy scalars are kept as values)."""
    return type(v) is ArrayMeta or (type(v) is not onp.ndarray and onp.ndim(v) == 0)


@pytest.mark.parametrize("rec", RECORDS, ids=lambda rec: rec.name)
def test_saved_set(rec):
    """The primitive's saved spec is its record's; the tape holds the arrays it names (every
    operand for einsum's "args") and ArrayMeta for the other operands, never the output."""
    assert getattr(np, rec.name).saved_spec == rec.saved
    ans, args, kwargs = saved_record(rec.call, *operands(rec))
    assert not_kept(ans)
    kept = rec.operands if rec.saved == ("args",) else rec.saved
    for k, shape in zip(rec.operands, rec.shapes):
        assert (type(args[k]) is onp.ndarray) == (k in kept), (k, type(args[k]))
        assert args[k].shape == shape


def test_saved_diagonal_scatter():
    scatter = products.diagonal_scatter
    assert scatter.saved_spec == ()
    ans, args, kwargs = saved_record(lambda g: scatter(g, (3, 3), onp.dtype(onp.float64)), r(3))
    assert type(ans) is ArrayMeta and type(args[0]) is ArrayMeta


# =============================================================================
# Forward mode: every primitive of this family has a JVP for each argument with a VJP
# (the numerical checks of both modes are in check() above)
# =============================================================================
def _prims():
    import gradcy.numpy as gnp

    found = []
    for name in sorted(COVERED):
        obj = (
            products.diagonal_scatter
            if name.endswith("diagonal_scatter")
            else getattr(gnp, name.rsplit(".", 1)[1])
        )
        found.append(obj)
    return found


@pytest.mark.parametrize("prim", _prims(), ids=lambda p: p.name)
def test_every_vjp_has_a_jvp(prim):
    if prim.jvp_argnums is not None:
        return
    for argnum, maker in prim.vjpmakers.items():
        if maker is not None:
            assert prim.jvpmakers.get(argnum) is not None, f"{prim.name}: no JVP for {argnum}"
    assert prim.vjp_argnums is None or prim.jvpmakers, f"{prim.name}: no JVP"


@pytest.mark.parametrize(
    "fun,sa,sb", [pytest.param(rec.call, *rec.shapes, id=rec.name) for rec in BILINEAR]
)
def test_forward_float32_and_mixed(fun, sa, sb):
    """Forward mode keeps float32 when every input is float32; a float64 operand promotes."""
    a, b = r(*sa).astype(onp.float32), r(*sb, seed=1).astype(onp.float32)
    y, t = make_jvp(lambda a, b: fun(a, b), argnum=(0, 1))(a, b)(
        (onp.ones_like(a), onp.ones_like(b))
    )
    assert y.dtype == onp.float32 and t.dtype == onp.float32
    expected = fun(onp.ones_like(a), b) + fun(a, onp.ones_like(b))
    assert onp.allclose(t, expected, rtol=1e-5)
    y, t = make_jvp(lambda a: fun(a, b.astype(onp.float64)))(a)(onp.ones_like(a))
    assert y.dtype == t.dtype == onp.float64
