"""VJPs of products: dot matmul tensordot einsum outer inner vdot kron cross, trace and diagonal,
and NumPy 2's matrix_transpose vecdot matvec vecmat (numpy.linalg lives in linalg.py).

Complex values follow autograd's convention: a holomorphic product's rule carries no
conjugation (the rule of dot for A is g @ B.T); the functions that conjugate an operand (vdot,
vecdot, vecmat) conjugate that operand's cotangent.

Every product's rule for one operand is a single product of the cotangent with the other
operand, taken on transposed *views* (ndarray.mT / .T, tensordot's own views), so the chain
z = dot(x, z) costs exactly one matrix product per argument and copies nothing.
"""

import functools
import string

import numpy as _onp

from .. import _dask_ops
from .._core import ArrayMeta, Box, is_array_value
from ..registry import defjvp, defjvp_argnum, defvjp_argnums_direct, defvjp_direct, primitive
from . import _wrap as anp
from ._util import cast_like, shape_dtype, unbroadcast

_ndarray = _onp.ndarray
_META_OR_ARRAY = (_ndarray, ArrayMeta)
_c_einsum = anp._c_einsum


# =============================================================================
# Helpers
# =============================================================================
_mT = anp._mT  # x with its last two axes swapped, as a view (traced: matrix_transpose)


def _permute(x, src):
    """The axes of x rearranged so that result axis i is the axis of x labelled i in `src`
    (src[p] names the target axis of x's axis p); a view, and no call when already in order."""
    perm = [src.index(i) for i in range(len(src))]
    if perm == list(range(len(perm))):
        return x
    return anp.transpose(x, perm)


def _sum_to(x, shape):
    """x (a broadcast of an array of `shape`) summed back down to `shape`."""
    xshape = _onp.shape(x) if type(x) is not _ndarray else x.shape
    if xshape == shape:
        return x
    lead = len(xshape) - len(shape)
    if lead:
        x = anp.sum(x, axis=tuple(range(lead)))
    axes = tuple(i for i, n in enumerate(shape) if n == 1 and xshape[lead + i] != 1)
    if axes:
        x = anp.sum(x, axis=axes, keepdims=True)
    return x


def _conj_if_complex(x):
    dt = x.dtype if hasattr(x, "dtype") else _onp.result_type(x)
    return anp.conj(x) if dt.kind == "c" else x


def _append_axis(x, where=-1):
    """x with a new axis of length 1 at the end (where=-1) or before its last axis (-2)."""
    s = _onp.shape(x) if type(x) is not _ndarray else x.shape
    return anp.reshape(x, s + (1,) if where == -1 else s[:-1] + (1,) + s[-1:])


# =============================================================================
# dot
# =============================================================================
# numpy.dot(A, B): a product by a scalar when either is 0-d; otherwise the last axis of A
# against the only axis of a 1-D B, or against the second-to-last axis of B, with the output
# axes A.shape[:-1] + B.shape[:-2] + B.shape[-1:]. dot and matmul are hot: their rules are
# direct (rule(g, ans, A, B), no closure per node) and test the common 2-D case first.
def _dot_rule_0(g, ans, A, B):
    if (
        type(g) is _ndarray
        and type(B) is _ndarray
        and type(A) in _META_OR_ARRAY
        and (B.ndim == 2 and A.ndim == 2)
    ):
        r = _onp.matmul(g, B.T)  # 2-D dot is matmul: the common case, without dispatch
        if r.dtype == A.dtype:  # (and without dot's zero fill of the output)
            return r
    sA, dtA = shape_dtype(A)
    nA, nB = len(sA), len(shape_dtype(B)[0])
    if nA == 2 and nB == 2:
        r = anp.dot(g, _mT(B))
    elif nA == 0:
        r = anp.tensordot(g, B, nB)
    elif nB == 0:
        r = g * B
    elif nB == 1:
        r = _dask_ops.multiply(g, B) if nA == 1 else _append_axis(g) * B
    elif nA == 1:
        r = (
            anp.dot(B, g)
            if nB == 2
            else anp.tensordot(B, g, (list(range(nB - 2)) + [nB - 1], list(range(nB - 1))))
        )
    elif nB == 2:
        r = anp.tensordot(g, B, ([nA - 1], [1]))
    else:
        r = anp.tensordot(g, B, (list(range(nA - 1, nA + nB - 2)), list(range(nB - 2)) + [nB - 1]))
    return cast_like(r, dtA)


def _dot_rule_1(g, ans, A, B):
    if (
        type(g) is _ndarray
        and type(A) is _ndarray
        and type(B) in _META_OR_ARRAY
        and (A.ndim == 2 and B.ndim == 2)
    ):
        r = _onp.matmul(A.T, g)  # as in _dot_rule_0
        if r.dtype == B.dtype:
            return r
    sB, dtB = shape_dtype(B)
    nA, nB = len(shape_dtype(A)[0]), len(sB)
    if nA == 2 and nB == 2:
        r = anp.dot(_mT(A), g)
    elif nA == 0:
        r = g * A
    elif nB == 0:
        r = anp.tensordot(A, g, nA)
    elif nB == 1:
        if nA == 1:
            r = _dask_ops.multiply(g, A)
        elif nA == 2 and _dask_ops.is_dask(anp._value_of(A)):
            # = tensordot here; on Dask (a tall A) a blockwise product per chunk and their
            # sum, and a batch rule in forward mode over it (hessian)
            r = anp.dot(g, A)
        else:
            r = anp.tensordot(g, A, nA - 1)
    elif nA == 1:
        r = anp.reshape(A, (sB[-2], 1)) * _append_axis(g, -2)
    else:
        # (K, *B.shape[:-2], N), then K moved to the second-to-last axis
        r = anp.tensordot(A, g, (list(range(nA - 1)), list(range(nA - 1))))
        r = _permute(r, [nB - 2] + list(range(nB - 2)) + [nB - 1])
    return cast_like(r, dtB)


# the rule of an argument reads the other one: a call with one traced argument keeps only the
# other (a constant matrix times a traced vector keeps the matrix)
defvjp_direct(anp.dot, _dot_rule_0, _dot_rule_1, save={0: (1,), 1: (0,)})


# =============================================================================
# matmul (also the @ operator of traced values)
# =============================================================================
# 1-D operands are a row (A) or a column (B) that the output drops; the leading (batch) axes
# broadcast. A 2-D operand against a batched one gets its cotangent from one tensordot (one
# large matrix product, no per-batch partial sums).
def _matmul_rule_0(g, ans, A, B):
    if (
        type(g) is _ndarray
        and type(B) is _ndarray
        and type(A) in _META_OR_ARRAY
        and (B.ndim == 2 and A.ndim >= 2)
    ):
        r = _onp.matmul(g, B.T)  # the common case, without dispatch
        if r.dtype == A.dtype:
            return r
    sA, dtA = shape_dtype(A)
    nA, nB = len(sA), len(shape_dtype(B)[0])
    if nA >= 2 and nB == 2:
        r = anp.matmul(g, _mT(B))
    elif nA == 1:
        if nB == 1:
            r = g * B
        elif nB == 2:
            r = anp.dot(B, g)  # = matmul here; on Dask one fused task per block
        else:
            r = anp.tensordot(B, g, (list(range(nB - 2)) + [nB - 1], list(range(nB - 1))))
    elif nB == 1:
        r = _append_axis(g) * B
    elif nA == 2:
        axes = list(range(nB - 2)) + [nB - 1]
        r = anp.tensordot(g, B, (axes, axes))
    else:
        r = _sum_to(anp.matmul(g, _mT(B)), sA)
    return cast_like(r, dtA)


def _matmul_rule_1(g, ans, A, B):
    if (
        type(g) is _ndarray
        and type(A) is _ndarray
        and type(B) in _META_OR_ARRAY
        and (A.ndim == 2 and B.ndim >= 2)
    ):
        r = _onp.matmul(A.T, g)  # the common case, without dispatch
        if r.dtype == B.dtype:
            return r
    sB, dtB = shape_dtype(B)
    nA, nB = len(shape_dtype(A)[0]), len(sB)
    if nA == 2 and nB >= 2:
        r = anp.matmul(_mT(A), g)
    elif nB == 1:
        if nA == 1:
            r = g * A
        elif nA == 2:
            r = anp.dot(g, A)  # = matmul here; on Dask one fused task per block
        else:
            r = anp.tensordot(g, A, nA - 1)
    elif nA == 1:
        r = anp.reshape(A, (sB[-2], 1)) * _append_axis(g, -2)
    elif nB == 2:
        axes = list(range(nA - 1))
        r = anp.tensordot(A, g, (axes, axes))
    else:
        r = _sum_to(anp.matmul(_mT(A), g), sB)
    return cast_like(r, dtB)


defvjp_direct(anp.matmul, _matmul_rule_0, _matmul_rule_1, save={0: (1,), 1: (0,)})


# =============================================================================
# tensordot
# =============================================================================
def _tensordot_axes(axes, nA, nB):
    """numpy.tensordot's `axes` as two lists of non-negative axes of A and of B."""
    if _onp.ndim(axes) == 0:
        n = int(axes)
        return list(range(nA - n, nA)), list(range(n))
    a_ax, b_ax = axes
    a_ax = [a_ax] if _onp.ndim(a_ax) == 0 else list(a_ax)
    b_ax = [b_ax] if _onp.ndim(b_ax) == 0 else list(b_ax)
    return [int(i) % nA if nA else int(i) for i in a_ax], [
        int(i) % nB if nB else int(i) for i in b_ax
    ]


def _tensordot_vjp_0(g, ans, A, B, axes=2):
    sA, dtA = shape_dtype(A)
    nA, nB = len(sA), len(shape_dtype(B)[0])
    a_ax, b_ax = _tensordot_axes(axes, nA, nB)
    freeA = [i for i in range(nA) if i not in a_ax]
    freeB = [j for j in range(nB) if j not in b_ax]
    # the result holds A's free axes, then B's contracted axes in B's order
    src = freeA + [a_ax[b_ax.index(j)] for j in sorted(b_ax)]
    g_axes = list(range(len(freeA), len(freeA) + len(freeB)))
    return cast_like(_permute(anp.tensordot(g, B, (g_axes, freeB)), src), dtA)


def _tensordot_vjp_1(g, ans, A, B, axes=2):
    sB, dtB = shape_dtype(B)
    nA, nB = len(shape_dtype(A)[0]), len(sB)
    a_ax, b_ax = _tensordot_axes(axes, nA, nB)
    freeA = [i for i in range(nA) if i not in a_ax]
    freeB = [j for j in range(nB) if j not in b_ax]
    # the result holds A's contracted axes in A's order (named by their B partners), then B's
    # free axes
    src = [b_ax[a_ax.index(i)] for i in sorted(a_ax)] + freeB
    g_axes = list(range(len(freeA)))
    return cast_like(_permute(anp.tensordot(A, g, (freeA, g_axes)), src), dtB)


defvjp_direct(anp.tensordot, _tensordot_vjp_0, _tensordot_vjp_1, save=(0, 1))


# =============================================================================
# einsum
# =============================================================================
# The cotangent of operand k is one einsum of g with the other operands, whose output is
# operand k's subscripts. Three things an einsum cannot write directly are added as constant
# operands: a repeated index of operand k (its diagonal) gets a fresh label tied to the first
# by an identity matrix; an index of operand k that appears nowhere else (summed out by k
# alone) and a length-1 axis that broadcast against a longer one each get a vector of ones.
_SUBLIST_LETTERS = string.ascii_uppercase + string.ascii_lowercase


def _einsum_from_sublists(args):
    """einsum(op0, sublist0, op1, sublist1, ..., [sublist_out]) as (subscripts, operands)."""
    n = len(args) // 2

    def subs(sublist):
        return "".join("..." if s is Ellipsis else _SUBLIST_LETTERS[s] for s in sublist)

    text = ",".join(subs(args[2 * i + 1]) for i in range(n))
    if len(args) % 2:
        text += "->" + subs(args[-1])
    return text, args[0 : 2 * n : 2]


def _pattern(shape):
    """What of an operand's shape the einsum rule depends on: its ndim when no axis has length
    1, else which axes have length 1 (they may broadcast). Lengths themselves never matter."""
    return len(shape) if 1 not in shape else tuple([n == 1 for n in shape])


@functools.lru_cache(maxsize=1024)
def _einsum_grad_spec(subscripts, patterns, k):
    """(subscripts of the einsum that gives the cotangent of operand k, the constant operands
    it needs after g and the other operands: ('eye' | 'ones', axis of operand k whose length
    they take; None for length 1) pairs). patterns: _pattern of each operand's shape, so the
    spec is shared by every call with the same subscripts, ndims and length-1 axes (a
    growing prefix reuses it)."""
    text = subscripts.replace(" ", "")
    ins, arrow, out = text.partition("->")
    in_subs = ins.split(",")
    if len(in_subs) != len(patterns):
        raise ValueError(
            f"einsum: {len(in_subs)} operands in {subscripts!r}, {len(patterns)} given"
        )
    unit = [(False,) * p if type(p) is int else p for p in patterns]  # axis has length 1
    fresh = iter([c for c in string.ascii_letters if c not in text])

    def new_label():
        try:
            return next(fresh)
        except StopIteration:
            raise ValueError(f"einsum VJP: no free index letters left for {subscripts!r}") from None

    n_ell = max(
        [len(u) - (len(sub) - 3) for u, sub in zip(unit, in_subs) if "..." in sub], default=0
    )
    ell = [new_label() for _ in range(n_ell)]

    def expand(sub, nd):
        """The labels of an operand of ndim nd (None: the output, with every ellipsis axis)."""
        if "..." not in sub:
            return list(sub)
        pre, post = sub.split("...")
        m = n_ell if nd is None else nd - len(pre) - len(post)
        return list(pre) + ell[n_ell - m :] + list(post)

    labels = [expand(sub, len(u)) for sub, u in zip(in_subs, unit)]
    if arrow:
        out_labels = expand(out, None)
    else:
        letters = "".join(sub.replace("...", "") for sub in in_subs)
        out_labels = ell + sorted(c for c in set(letters) if letters.count(c) == 1)
    long_labels = {
        lab for labs, u in zip(labels, unit) for lab, one in zip(labs, u) if not one
    }  # labels with a length other than 1 somewhere

    new_k, extras, extra_subs, seen = [], [], [], {}
    for axis, (lab, one) in enumerate(zip(labels[k], unit[k])):
        if lab in seen:  # a diagonal: tie a fresh label to the first
            f = new_label()
            new_k.append(f)
            extras.append(("eye", axis))
            extra_subs.append(lab + f)
        elif one and lab in long_labels:  # broadcast against a longer axis
            f = new_label()
            new_k.append(f)
            extras.append(("ones", None))
            extra_subs.append(f)
        else:
            seen[lab] = axis
            new_k.append(lab)
    others = [labs for j, labs in enumerate(labels) if j != k]
    long_others = {
        lab
        for j, (labs, u) in enumerate(zip(labels, unit))
        if j != k
        for lab, one in zip(labs, u)
        if not one
    }
    tied = {e[0] for e in extra_subs if len(e) == 2}  # diagonals: eye(n) gives the length
    present = set(out_labels).union(*others)
    for lab, axis in seen.items():
        if lab in out_labels or lab in tied:
            continue
        # summed out by operand k alone, or longer in operand k than in every other operand
        # that has it (they broadcast a length 1): a vector of ones gives the label its length
        if lab not in present or (not unit[k][axis] and lab not in long_others):
            extras.append(("ones", axis))
            extra_subs.append(lab)
    grad_subs = ",".join(["".join(out_labels)] + ["".join(o) for o in others] + extra_subs)
    return grad_subs + "->" + "".join(new_k), tuple(extras)


def _einsum_cotangent(g, subscripts, patterns, ops, k, optimize, plain):
    """The cotangent of operand k: one einsum of g with the other operands. On plain arrays it
    is written into a fresh C-contiguous buffer of operand k's shape (out=), so it never comes
    back as a transposed or strided result (order='K' follows the operands' strides; a
    one-operand einsum returns a view of g) that the engine would later add with a strided
    pass; out= keeps the iteration order einsum picks (order='C' can force a slow one)."""
    grad_subs, extras = _einsum_grad_spec(subscripts, patterns, k)
    op = ops[k]
    operands = (g,) + ops[:k] + ops[k + 1 :]
    dtype = op.dtype if type(op) is _ndarray else shape_dtype(op)[1]
    if extras:
        cdtype = dtype if dtype.kind in "fc" else _onp.dtype(_onp.float64)
        shape = _onp.shape(op) if type(op) is not _ndarray else op.shape
        operands += tuple(
            _onp.eye(shape[ax], dtype=cdtype)
            if kind == "eye"
            else _onp.ones(1 if ax is None else shape[ax], cdtype)
            for kind, ax in extras
        )
    if plain and type(g) is _ndarray:
        c = _onp.empty(op.shape, _onp.result_type(*operands))
        _onp.einsum(grad_subs, *operands, out=c, optimize=optimize)
        if c.dtype == dtype:
            return c
        if c.dtype.kind == "c" and dtype.kind != "c":
            c = c.real  # a strided view: astype copies it to C order
        return c.astype(dtype, order="C") if dtype.kind in "fc" else c
    c = anp.einsum(grad_subs, *operands, optimize=optimize)
    if type(c) is _ndarray and not c.flags.c_contiguous:
        c = _onp.ascontiguousarray(c)
    return cast_like(c, dtype)


_SAME_DTYPE_SPECS = {}  # (subscripts, patterns, ks) -> cotangent subscripts, or None


def _einsum_vjp(argnums, ans, args, kwargs):
    if type(args[0]) is str:
        subscripts, ops, ks = args[0], args[1:], tuple([a - 1 for a in argnums])
    else:
        (subscripts, ops), ks = _einsum_from_sublists(args), tuple([a // 2 for a in argnums])
    optimize = kwargs.get("optimize", False) if kwargs else False
    # the common case first: two or more plain operands of one dtype, no optimize
    # an operand kept as ArrayMeta (the only traced one: see save= below) is read for its
    # shape and dtype only
    dtype = ops[0].dtype if type(ops[0]) in _META_OR_ARRAY else None
    patterns = []
    for o in ops:
        if type(o) in _META_OR_ARRAY:
            shape = o.shape
            if o.dtype != dtype:
                dtype = None
        else:
            shape, dtype = _onp.shape(o), None
        patterns.append(len(shape) if 1 not in shape else tuple([n == 1 for n in shape]))
    patterns = tuple(patterns)
    if dtype is not None and optimize is False and _c_einsum is not None and len(ops) >= 2:
        key = (subscripts, patterns, ks)
        specs = _SAME_DTYPE_SPECS.get(key, False)
        if specs is False:
            specs = [_einsum_grad_spec(subscripts, patterns, k) for k in ks]
            specs = None if any([extras for _, extras in specs]) else [sub for sub, _ in specs]
            if len(_SAME_DTYPE_SPECS) < 4096:
                _SAME_DTYPE_SPECS[key] = specs
        if specs is not None:
            return _same_dtype_einsum_vjp(subscripts, patterns, ops, ks, specs, dtype)
    plain = all([type(o) in _META_OR_ARRAY for o in ops])  # no traced or scalar operand
    return lambda g: tuple(
        [_einsum_cotangent(g, subscripts, patterns, ops, k, optimize, plain) for k in ks]
    )


def _same_dtype_einsum_vjp(subscripts, patterns, ops, ks, specs, dtype):
    def vjp(g):
        # plain operands and cotangent of one dtype: each cotangent is one einsum call (with
        # two or more operands its result is a fresh array, C-ordered unless the operands'
        # strides say otherwise)
        if type(g) is not _ndarray or g.dtype != dtype:
            return tuple(
                [_einsum_cotangent(g, subscripts, patterns, ops, k, False, True) for k in ks]
            )
        out = []
        for k, subs in zip(ks, specs):
            c = _c_einsum(subs, g, *ops[:k], *ops[k + 1 :])
            out.append(c if c.flags.c_contiguous else _onp.ascontiguousarray(c))
        return tuple(out)

    return vjp


def _einsum_rule(argnums, g, g_owned, ans, args, kwargs):
    """einsum's rule as the sweep calls it: the common case (plain operands and cotangent of
    one dtype, no optimize) without making a closure per node; _einsum_vjp otherwise."""
    if (
        type(g) is _ndarray
        and not kwargs
        and type(args[0]) is str
        and len(args) >= 3
        and _c_einsum is not None
    ):
        ops = args[1:]
        dtype = g.dtype
        patterns = []
        for o in ops:
            if type(o) not in _META_OR_ARRAY or o.dtype != dtype:
                break
            shape = o.shape
            patterns.append(len(shape) if 1 not in shape else tuple([n == 1 for n in shape]))
        else:
            ks = tuple([a - 1 for a in argnums])
            key = (args[0], tuple(patterns), ks)
            specs = _SAME_DTYPE_SPECS.get(key)
            if specs is not None:
                out = []
                for k, subs in zip(ks, specs):
                    c = _c_einsum(subs, g, *ops[:k], *ops[k + 1 :])
                    out.append(c if c.flags.c_contiguous else _onp.ascontiguousarray(c))
                return out
    return _einsum_vjp(argnums, ans, args, kwargs)(g)


# The subscripts string (or, in the sublist form, each sublist) is never traced, so the rule
# only ever runs for operands. Every operand's rule reads every other operand, not its own: a
# call with one traced operand keeps the others only (``einsum('bsd,d->bs', prefix, q)`` with
# q constant keeps q, not the prefix).
defvjp_argnums_direct(anp.einsum, _einsum_rule, save={k: ("others",) for k in range(8)})


# =============================================================================
# outer inner vdot kron cross
# =============================================================================
def _outer_vjp_0(g, ans, a, b):
    sa, dta = shape_dtype(a)
    return cast_like(anp.reshape(anp.dot(g, anp.reshape(b, (-1,))), sa), dta)


def _outer_vjp_1(g, ans, a, b):
    sb, dtb = shape_dtype(b)
    return cast_like(anp.reshape(anp.dot(anp.reshape(a, (-1,)), g), sb), dtb)


defvjp_direct(anp.outer, _outer_vjp_0, _outer_vjp_1, save=(0, 1))


# inner(A, B) contracts the last axes; the output axes are A.shape[:-1] + B.shape[:-1].
def _inner_vjp_0(g, ans, A, B):
    sA, dtA = shape_dtype(A)
    nA, nB = len(sA), len(shape_dtype(B)[0])
    if nA == 0:
        return cast_like(anp.tensordot(g, B, nB), dtA)
    if nB == 0:
        return cast_like(g * B, dtA)
    axes = (list(range(nA - 1, nA + nB - 2)), list(range(nB - 1)))
    return cast_like(anp.tensordot(g, B, axes), dtA)


def _inner_vjp_1(g, ans, A, B):
    sB, dtB = shape_dtype(B)
    nA, nB = len(shape_dtype(A)[0]), len(sB)
    if nB == 0:
        return cast_like(anp.tensordot(g, A, nA), dtB)
    if nA == 0:
        return cast_like(g * A, dtB)
    axes = (list(range(nA - 1)), list(range(nA - 1)))
    return cast_like(anp.tensordot(g, A, axes), dtB)


defvjp_direct(anp.inner, _inner_vjp_0, _inner_vjp_1, save=(0, 1))


# vdot(a, b) = sum(conj(a.ravel()) * b.ravel()): the cotangent of a is conj(g * b).
def _vdot_vjp_0(g, ans, a, b):
    sa, dta = shape_dtype(a)
    return cast_like(anp.reshape(_conj_if_complex(g * b), sa), dta)


def _vdot_vjp_1(g, ans, a, b):
    sb, dtb = shape_dtype(b)
    return cast_like(anp.reshape(g * _conj_if_complex(a), sb), dtb)


defvjp_direct(anp.vdot, _vdot_vjp_0, _vdot_vjp_1, save=(0, 1))


# kron(a, b) viewed with interleaved axes (a0, b0, a1, b1, ...) is the outer product of a and
# b (both padded with leading 1s to the same ndim): each cotangent is one tensordot of that
# view with the other operand.
def _kron_shapes(a, b):
    sa, dta = shape_dtype(a)
    sb, dtb = shape_dtype(b)
    nd = max(len(sa), len(sb))
    pa, pb = (1,) * (nd - len(sa)) + sa, (1,) * (nd - len(sb)) + sb
    inter = tuple(n for pair in zip(pa, pb) for n in pair)
    return sa, dta, sb, dtb, nd, pa, pb, inter


def _kron_vjp_0(g, ans, a, b):
    sa, dta, sb, dtb, nd, pa, pb, inter = _kron_shapes(a, b)
    axes = (list(range(1, 2 * nd, 2)), list(range(nd)))
    return cast_like(
        anp.reshape(anp.tensordot(anp.reshape(g, inter), anp.reshape(b, pb), axes), sa), dta
    )


def _kron_vjp_1(g, ans, a, b):
    sa, dta, sb, dtb, nd, pa, pb, inter = _kron_shapes(a, b)
    axes = (list(range(nd)), list(range(0, 2 * nd, 2)))
    return cast_like(
        anp.reshape(anp.tensordot(anp.reshape(a, pa), anp.reshape(g, inter), axes), sb), dtb
    )


defvjp_direct(anp.kron, _kron_vjp_0, _kron_vjp_1, save=(0, 1))


# cross(a, b) of 3-vectors: g . (da x b) = da . (b x g) and g . (a x db) = db . (g x a). The
# product is taken with its vector axis last, summed down to the operand's broadcast shape,
# then put back on the operand's vector axis.
def _cross_vjp(argnum):
    def rule(g, ans, a, b, axisa=-1, axisb=-1, axisc=-1, axis=None):
        if axis is not None:
            axisa = axisb = axisc = axis
        x, ax = (a, axisa) if argnum == 0 else (b, axisb)
        sa, sb = shape_dtype(a)[0], shape_dtype(b)[0]
        if sa[axisa] != 3 or sb[axisb] != 3:
            raise NotImplementedError(
                "gradcy: the VJP of cross is defined for 3-vectors "
                "(2-vectors are deprecated by NumPy 2)"
            )
        sx, dtx = shape_dtype(x)
        ax = ax % len(sx)
        moved = sx[:ax] + sx[ax + 1 :] + (3,)
        src = list(range(ax)) + list(range(ax + 1, len(sx))) + [ax]
        if argnum == 0:
            r = anp.cross(b, g, axisa=axisb, axisb=axisc, axisc=-1)
        else:
            r = anp.cross(g, a, axisa=axisc, axisb=axisa, axisc=-1)
        return cast_like(_permute(_sum_to(r, moved), src), dtx)

    return rule


defvjp_direct(anp.cross, _cross_vjp(0), _cross_vjp(1), save=(0, 1))


# =============================================================================
# diagonal and trace: the cotangent is scattered onto the diagonal of zeros
# =============================================================================
def _diag_index(shape, offset, axis1, axis2):
    n1, n2 = shape[axis1], shape[axis2]
    length = max(0, min(n1, n2 - offset) if offset >= 0 else min(n1 + offset, n2))
    rows = _onp.arange(length) + max(-offset, 0)
    return rows, rows + offset


@primitive
def diagonal_scatter(g, shape, dtype, offset=0, axis1=0, axis2=1):
    """Zeros of `shape` and `dtype` with g (broadcast to the diagonal's shape) on the diagonal
    diagonal(out, offset, axis1, axis2): the transpose of numpy.diagonal."""
    if type(g) is Box:  # a value of an enclosing differentiation: record it there
        return diagonal_scatter(g, shape, dtype, offset, axis1, axis2)
    rows, cols = _diag_index(shape, offset, axis1, axis2)
    if is_array_value(g):  # Dask, CuPy: g on an identity's diagonal, padded out (no writes)
        a1, a2 = axis1 % len(shape), axis2 % len(shape)
        n = len(rows)
        if n == 0:
            return _onp.zeros_like(g, dtype=dtype, shape=shape)
        g = cast_like(
            _onp.broadcast_to(g, tuple(d for i, d in enumerate(shape) if i not in (a1, a2)) + (n,)),
            dtype,
        )
        r, c = int(rows[0]), int(cols[0])
        square = _onp.where(_onp.eye(n, dtype=bool), g[..., :, None], dtype.type(0))
        block = _onp.pad(
            square, [(0, 0)] * (len(shape) - 2) + [(r, shape[a1] - r - n), (c, shape[a2] - c - n)]
        )
        return _onp.moveaxis(block, (-2, -1), (a1, a2))
    out = _onp.zeros(shape, dtype)
    _onp.moveaxis(out, (axis1, axis2), (-2, -1))[..., rows, cols] = g
    return out


defvjp_direct(
    diagonal_scatter,
    lambda h, ans, g, shape, dtype, offset=0, axis1=0, axis2=1: unbroadcast(
        anp.diagonal(h, offset, axis1, axis2), g
    ),
    save=(),
)


def _diagonal_vjp(g, ans, a, offset=0, axis1=0, axis2=1):
    sa, dta = shape_dtype(a)
    return diagonal_scatter(cast_like(g, dta), sa, dta, offset, axis1, axis2)


defvjp_direct(anp.diagonal, _diagonal_vjp, save=())


def _trace_vjp(g, ans, a, offset=0, axis1=0, axis2=1, dtype=None, out=None):
    sa, dta = shape_dtype(a)
    return diagonal_scatter(_append_axis(cast_like(g, dta)), sa, dta, offset, axis1, axis2)


defvjp_direct(anp.trace, _trace_vjp, save=())


# =============================================================================
# NumPy 2: matrix_transpose vecdot matvec vecmat
# =============================================================================
def _no_gufunc_axes(name, kwargs):
    for key in ("axes", "axis", "keepdims"):
        if key in kwargs:
            raise NotImplementedError(f"gradcy: the VJP of {name} with {key}= is not supported")


if hasattr(anp, "vecdot"):
    # vecdot(x1, x2, axis) = sum(conj(x1) * x2, axis), broadcasting the other axes. The rule
    # works with each operand's vector axis last (a view) and puts it back at the end.
    def _vecdot_vjp(argnum):
        def rule(g, ans, x1, x2, axis=-1, keepdims=False, **kwargs):
            if "axes" in kwargs:
                raise NotImplementedError(
                    "gradcy: the VJP of vecdot with axes= is not supported; use axis="
                )
            x, other = (x1, x2) if argnum == 0 else (x2, x1)
            sx, dtx = shape_dtype(x)
            ax, nx = axis % len(sx), len(sx)
            on = len(shape_dtype(other)[0])
            oax = axis % on
            moved = sx[:ax] + sx[ax + 1 :] + (sx[ax],)
            src = list(range(ax)) + list(range(ax + 1, nx)) + [ax]
            operm = list(range(oax)) + list(range(oax + 1, on)) + [oax]
            if keepdims:
                gs = _onp.shape(g) if type(g) is not _ndarray else g.shape
                k = axis % len(gs)
                g = anp.reshape(g, gs[:k] + gs[k + 1 :])
            o = other if oax == on - 1 else anp.transpose(other, operm)
            if argnum == 0:
                r = _conj_if_complex(_append_axis(g) * o)
            else:
                r = _append_axis(g) * _conj_if_complex(o)
            return cast_like(_permute(_sum_to(r, moved), src), dtx)

        return rule

    defvjp_direct(anp.vecdot, _vecdot_vjp(0), _vecdot_vjp(1), save=(0, 1))


if hasattr(anp, "matvec"):
    # matvec(A, v) = A @ v[..., None] without the last axis, broadcasting the batch axes.
    def _matvec_vjp_0(g, ans, A, v, **kwargs):
        _no_gufunc_axes("matvec", kwargs)
        sA, dtA = shape_dtype(A)
        return cast_like(_sum_to(_append_axis(g) * _append_axis(v, -2), sA), dtA)

    def _matvec_vjp_1(g, ans, A, v, **kwargs):
        _no_gufunc_axes("matvec", kwargs)
        sv, dtv = shape_dtype(v)
        return cast_like(_sum_to(anp.matvec(_mT(A), g), sv), dtv)

    defvjp_direct(anp.matvec, _matvec_vjp_0, _matvec_vjp_1, save=(0, 1))


if hasattr(anp, "vecmat"):
    # vecmat(v, A) = conj(v)[..., None, :] @ A without the second-to-last axis.
    def _vecmat_vjp_0(g, ans, v, A, **kwargs):
        _no_gufunc_axes("vecmat", kwargs)
        sv, dtv = shape_dtype(v)
        return cast_like(_sum_to(_conj_if_complex(anp.matvec(A, g)), sv), dtv)

    def _vecmat_vjp_1(g, ans, v, A, **kwargs):
        _no_gufunc_axes("vecmat", kwargs)
        sA, dtA = shape_dtype(A)
        return cast_like(_sum_to(_append_axis(_conj_if_complex(v)) * _append_axis(g, -2), sA), dtA)

    defvjp_direct(anp.vecmat, _vecmat_vjp_0, _vecmat_vjp_1, save=(0, 1))


# =============================================================================
# JVPs (forward mode)
# =============================================================================
# Every function here is linear in each array operand (vdot, vecdot and vecmat conjugate an
# operand, which is still real-linear), so the tangent caused by operand k is the function
# with the tangent in place of operand k; the engine sums the operands' terms and casts the
# sum to the output's dtype.
def _jvp_0(fn):
    return lambda g, ans, a, b, *args, **kwargs: fn(g, b, *args, **kwargs)


def _jvp_1(fn):
    return lambda g, ans, a, b, *args, **kwargs: fn(a, g, *args, **kwargs)


for _f in [
    anp.dot,
    anp.matmul,
    anp.tensordot,
    anp.outer,
    anp.inner,
    anp.vdot,
    anp.kron,
    anp.cross,
] + [getattr(anp, n) for n in ("vecdot", "matvec", "vecmat") if hasattr(anp, n)]:
    defjvp(_f, _jvp_0(_f), _jvp_1(_f))


def _einsum_jvp(argnum, g, ans, args, kwargs):
    return anp.einsum(*args[:argnum], g, *args[argnum + 1 :], **kwargs)


defjvp_argnum(anp.einsum, _einsum_jvp)

defjvp(
    diagonal_scatter,
    lambda t, ans, g, shape, dtype, offset=0, axis1=0, axis2=1: diagonal_scatter(
        t, shape, dtype, offset, axis1, axis2
    ),
)
defjvp(anp.diagonal, lambda g, ans, a, *args, **kwargs: anp.diagonal(g, *args, **kwargs))
defjvp(anp.trace, lambda g, ans, a, *args, **kwargs: anp.trace(g, *args, **kwargs))
if hasattr(anp, "matrix_transpose"):
    defjvp(anp.matrix_transpose, lambda g, ans, x: anp.matrix_transpose(g))
del _f
