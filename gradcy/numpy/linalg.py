"""VJPs and JVPs of numpy.linalg: det slogdet inv pinv solve norm (and matrix_norm vector_norm)
eigh eigvalsh eig eigvals cholesky svd svdvals qr lstsq matrix_power tensorsolve tensorinv, plus
multi_dot and cond as compositions of differentiable primitives. Every rule is batched over
leading (stacked-matrix) dimensions wherever NumPy batches.

Conventions:
- Complex values follow autograd's convention: a holomorphic function's VJP carries no
  conjugation (inv: -A^{-T} g A^{-T}). Rules involving conjugation (SVD, QR, Cholesky, pinv,
  lstsq, norms) are written with the standard adjoint (the adjoint under Re<a, b>) between a
  conjugation of the incoming cotangent and of the result, which is the same convention.
- Functions with several outputs (slogdet, eigh, eig, svd, qr) are primitives on thin wrappers
  returning a plain tuple (a traced tuple is indexed with container_take); their cotangent
  arrives as a tuple or list with None for outputs that received none. gradcy.numpy.linalg.<f>
  is rebound to a dispatcher that returns NumPy's own result (a namedtuple) for plain inputs
  and calls the _primitive for traced ones.
- eigh / eigvalsh differentiate what NumPy computes: only the triangle named by UPLO is read,
  so the gradient lives in that triangle (real diagonal), as in autograd. cholesky follows
  autograd: its gradient is symmetrized (valid for symmetric perturbations).
- Eigenvector and singular-vector rules assume distinct eigenvalues / singular values; complex
  eigen/singular vectors carry a phase gauge, so only phase-invariant functions of them have
  well-defined derivatives (as in autograd).
"""

import numpy.linalg as _npla
import numpy as _onp

# the rule machinery under private names: this module's public names are numpy.linalg's
from .._core import Box as _Box, register_numpy_override as _register_numpy_override
from ..backends import is_lazy as _is_lazy
from ..registry import (
    defjvp,
    defjvp_argnums as _defjvp_argnums,
    defvjp_argnums_direct as _defvjp_argnums_direct,
    defvjp_direct as _defvjp_direct,
    nondifferentiable as _nondifferentiable,
    primitive as _primitive,
)
from . import _wrap as _anp
from ._wrap import wrap_namespace
from ._util import (
    _dtype,
    _is_complex,
    _plain,
    _shape,
    _zeros_of,
    cast_like as _cast_like,
    unbroadcast as _unbroadcast,
)

wrap_namespace(_npla.__dict__, globals(), "gradcy.numpy.linalg")


# helpers of autograd.numpy.linalg's rules, which autograd programs import
def T(x):
    """x with its last two axes swapped."""
    return _anp.swapaxes(x, -1, -2)


def _dot(a, b):
    """Matrix product over the last two axes, broadcast over the leading ones."""
    return _anp.einsum("...ij,...jk->...ik", a, b)


def add2d(x):
    """x with two trailing axes of length 1."""
    return _anp.expand_dims(_anp.expand_dims(x, -1), -1)


_ndarray = _onp.ndarray


# =============================================================================
# Helpers (all differentiable: gradcy.numpy calls on possibly traced values)
# =============================================================================
def _real_dtype(dt):
    return _onp.finfo(dt).dtype if dt.kind in "fc" else _onp.dtype(_onp.float64)


_T = _anp._mT  # x with its last two axes swapped (a view for ndarrays)


def _conj(x):
    return _anp.conj(x) if _is_complex(x) else x


def _H(x):
    return _conj(_T(x))


def _mm(a, b):
    return _anp.matmul(a, b)


def _eye(n, x):
    return _onp.eye(n, dtype=_real_dtype(_dtype(x)))


def _add2d(x):
    return _anp.reshape(x, _shape(x) + (1, 1))


def _col(x):
    """(..., n) -> (..., n, 1)."""
    return _anp.reshape(x, _shape(x) + (1,))


def _row(x):
    """(..., n) -> (..., 1, n)."""
    s = _shape(x)
    return _anp.reshape(x, s[:-1] + (1,) + s[-1:])


def _diag_part(x):
    return _anp.diagonal(x, 0, -2, -1)


def _diag_embed(v):
    """(..., n) -> (..., n, n) with v on the diagonal."""
    return _row(v) * _eye(_shape(v)[-1], v)


def _tr(x):
    return _anp.trace(x, 0, -2, -1)


def _parts(g, n):
    """The entries of a tuple cotangent (None = zero)."""
    if type(g) is _Box:
        return [g[i] for i in range(n)]
    return g


def _inv_F(w):
    """F[..., i, j] = 1 / (w_j - w_i) off the diagonal, 0 on it."""
    n = _shape(w)[-1]
    eye = _eye(n, w)
    return (1.0 - eye) / (_row(w) - _col(w) + eye)


def _add(a, b):
    return b if a is None else a + b


# =============================================================================
# Dispatchers for tuple-valued functions
# =============================================================================
def _tuple_prim(fn, name):
    """A primitive that returns fn's result as a plain tuple (NumPy returns namedtuples)."""

    def wrapper(*args, **kwargs):
        return tuple(fn(*args, **kwargs))

    wrapper.__name__ = name.rsplit(".", 1)[-1]
    wrapper.__doc__ = fn.__doc__
    return _primitive(wrapper, name)


# =============================================================================
# det, slogdet
# =============================================================================
def _det_vjp(g, ans, a):
    return _cast_like(_add2d(g * ans) * _T(inv(a)), _dtype(a))


_defvjp_direct(det, _det_vjp, save=("ans", 0))
defjvp(det, lambda g, ans, a: ans * _tr(solve(a, g)))

_slogdet_p = _tuple_prim(_npla.slogdet, "gradcy.numpy.linalg.slogdet")


def _slogdet_vjp(g, ans, a):
    g_sign, g_logdet = _parts(g, 2)
    if _is_complex(a) and g_sign is not None:
        # d sign = sign * i Im(tr(A^-1 dA)); d logdet = Re(tr(A^-1 dA))
        coef = 1j * _anp.imag(g_sign * ans[0])
        coef = coef if g_logdet is None else coef + g_logdet
    elif g_logdet is None:
        return None
    else:
        coef = g_logdet
    return _cast_like(_add2d(coef) * _T(inv(a)), _dtype(a))


def _slogdet_jvp(g, ans, a):
    t = _tr(solve(a, g))
    if _is_complex(a):
        return (ans[0] * (1j * _anp.imag(t)), _anp.real(t))
    return (_zeros_of(ans[0]), t)


_defvjp_direct(_slogdet_p, _slogdet_vjp, save=("ans", 0))
defjvp(_slogdet_p, _slogdet_jvp)


def _pair_function(p, np_function, doc):
    """numpy.linalg's np_function (one array argument) as a function that calls the primitive p
    (a plain tuple of the two outputs) when its argument is traced, and registers it as
    np_function's override."""

    def f(a):
        if type(a) is _Box:
            return p(a)
        return np_function(a)

    f.__name__ = f.__qualname__ = np_function.__name__
    f.__doc__ = doc
    _register_numpy_override(np_function, f)
    return f


slogdet = _pair_function(
    _slogdet_p, _npla.slogdet, """numpy.linalg.slogdet; a (sign, logabsdet) tuple when traced."""
)


# =============================================================================
# inv, pinv
# =============================================================================
def _inv_vjp(g, ans, a):
    at = _T(ans)
    return _cast_like(-_mm(_mm(at, g), at), _dtype(a))


_defvjp_direct(inv, _inv_vjp, save=("ans",))
defjvp(inv, lambda g, ans, a: -_mm(_mm(ans, g), ans))


def _pinv_vjp(g, ans, a, *args, **kwargs):
    # dP = -P dA P + P P^H dA^H (I - A P) + (I - P A) dA^H P^H P; standard adjoint below
    cplx = _is_complex(ans)
    G = _conj(g) if cplx else g
    P, Ph = ans, _H(ans)
    Gh = _H(G)
    X = _mm(Gh, _mm(P, Ph))  # G^H P P^H
    Y = _mm(_mm(Ph, P), Gh)  # P^H P G^H
    r = -_mm(_mm(Ph, G), Ph) + X - _mm(a, _mm(P, X)) + Y - _mm(_mm(Y, P), a)
    return _cast_like(_conj(r) if cplx else r, _dtype(a))


def _pinv_jvp(g, ans, a, *args, **kwargs):
    P, Ph, gh = ans, _H(ans), _H(g)
    t1 = _mm(_mm(P, Ph), gh)  # P P^H dA^H
    t2 = _mm(gh, _mm(Ph, P))  # dA^H P^H P
    return -_mm(_mm(P, g), P) + t1 - _mm(_mm(t1, a), P) + t2 - _mm(_mm(P, a), t2)


_defvjp_direct(pinv, _pinv_vjp, save=("ans", 0))
defjvp(pinv, _pinv_jvp)


# =============================================================================
# solve (b a vector only when 1-D, as in NumPy 2; batch dimensions broadcast)
# =============================================================================
# NumPy 1.x's solve (not 2's) reads b as a stack of vectors also when b has one axis fewer
# than a
_SOLVE_STACKS_VECTORS = _onp.lib.NumpyVersion(_onp.__version__) < "2.0.0"


def _solve_vec(a, b):
    """solve(a, b) reads b as (a stack of) vectors, not matrices."""
    nb = len(_shape(b))
    return nb == 1 or (_SOLVE_STACKS_VECTORS and nb == len(_shape(a)) - 1)


def _solve_vjp(argnums, g, g_owned, ans, args, kwargs):
    a, b = args[0], args[1]
    vec = _solve_vec(a, b)
    gb = solve(_T(a), _col(g) if vec else g)
    out = []
    for i in argnums:
        if i == 0:
            x = _col(ans) if vec else ans
            out.append(_unbroadcast(-_mm(gb, _T(x)), a))
        else:
            out.append(_unbroadcast(gb[..., 0] if vec else gb, b))
    return tuple(out)


def _solve_jvp_a(g, ans, a, b):
    if _solve_vec(a, b):
        return -solve(a, _mm(g, _col(ans)))[..., 0]
    return -solve(a, _mm(g, ans))


def _solve_jvp_b(g, ans, a, b):
    if _solve_vec(a, b):
        if len(_shape(g)) == 1:
            return solve(a, g)
        return solve(a, _col(g))[..., 0]
    return solve(a, g)


_defvjp_argnums_direct(solve, _solve_vjp, save=("ans", 0))
defjvp(solve, _solve_jvp_a, _solve_jvp_b)


# =============================================================================
# tensorsolve, tensorinv
# =============================================================================
def _tensorsolve_perm(nd, axes):
    perm = list(range(nd))
    if axes is not None:
        for k in axes:
            perm.remove(k % nd if k < 0 else k)
            perm.append(k % nd if k < 0 else k)
    return perm


def _tensorsolve_vjp(argnums, g, g_owned, ans, args, kwargs):
    a, b = args[0], args[1]
    axes = args[2] if len(args) > 2 else kwargs.get("axes")
    nd = len(_shape(a))
    perm = _tensorsolve_perm(nd, axes)
    at = _anp.transpose(a, perm) if perm != list(range(nd)) else a
    N = int(_onp.prod(_shape(ans)))
    A2 = _anp.reshape(at, (N, N))
    gb = solve(_T(A2), _anp.reshape(g, (N, 1)))
    out = []
    for i in argnums:
        if i == 0:
            ga = -gb * _anp.reshape(ans, (1, N))
            ga = _anp.reshape(ga, _shape(at))
            if perm != list(range(nd)):
                ga = _anp.transpose(ga, list(_onp.argsort(perm)))
            out.append(_cast_like(ga, _dtype(a)))
        else:
            out.append(_cast_like(_anp.reshape(gb, _shape(b)), _dtype(b)))
    return tuple(out)


def _tensorsolve_A2(a, axes, N):
    nd = len(_shape(a))
    perm = _tensorsolve_perm(nd, axes)
    at = _anp.transpose(a, perm) if perm != list(range(nd)) else a
    return _anp.reshape(at, (N, N))


def _tensorsolve_jvp_a(g, ans, a, b, axes=None):
    N = int(_onp.prod(_shape(ans)))
    A2 = _tensorsolve_A2(a, axes, N)
    dA2 = _tensorsolve_A2(g, axes, N)
    return _anp.reshape(-solve(A2, _mm(dA2, _anp.reshape(ans, (N, 1)))), _shape(ans))


def _tensorsolve_jvp_b(g, ans, a, b, axes=None):
    N = int(_onp.prod(_shape(ans)))
    A2 = _tensorsolve_A2(a, axes, N)
    return _anp.reshape(solve(A2, _anp.reshape(g, (N, 1))), _shape(ans))


_defvjp_argnums_direct(tensorsolve, _tensorsolve_vjp, save=("ans", 0))
defjvp(tensorsolve, _tensorsolve_jvp_a, _tensorsolve_jvp_b)


def _tensorinv_vjp(g, ans, a, ind=2):
    N = int(_onp.prod(_shape(a)[:ind]))
    it = _T(_anp.reshape(ans, (N, N)))
    return _cast_like(
        _anp.reshape(-_mm(_mm(it, _anp.reshape(g, (N, N))), it), _shape(a)), _dtype(a)
    )


def _tensorinv_jvp(g, ans, a, ind=2):
    N = int(_onp.prod(_shape(a)[:ind]))
    i2 = _anp.reshape(ans, (N, N))
    return _anp.reshape(-_mm(_mm(i2, _anp.reshape(g, (N, N))), i2), _shape(ans))


_defvjp_direct(tensorinv, _tensorinv_vjp, save=("ans",))
defjvp(tensorinv, _tensorinv_jvp)


# =============================================================================
# matrix_power
# =============================================================================
def _powers(a, n):
    """[I, a, a^2, ..., a^(n-1)] (I as None)."""
    out = [None, a]
    for _ in range(n - 2):
        out.append(_mm(out[-1], a))
    return out[:n]


def _sandwich_sum(P, g, n):
    """sum_k P[k] g P[n-1-k] (P[0] = identity, given as None)."""
    total = None
    for k in range(n):
        left = g if P[k] is None else _mm(P[k], g)
        term = left if P[n - 1 - k] is None else _mm(left, P[n - 1 - k])
        total = _add(total, term)
    return total


def _matrix_power_vjp(g, ans, a, n):
    n = int(n)
    if n == 0:
        return None
    if n > 0:
        return _cast_like(_sandwich_sum(_powers(_T(a), n), g, n), _dtype(a))
    bt = _T(inv(a))
    gb = _sandwich_sum(_powers(bt, -n), g, -n)
    return _cast_like(-_mm(_mm(bt, gb), bt), _dtype(a))


def _matrix_power_jvp(g, ans, a, n):
    n = int(n)
    if n == 0:
        return _zeros_of(ans)
    if n > 0:
        return _sandwich_sum(_powers(a, n), g, n)
    b = inv(a)
    return _sandwich_sum(_powers(b, -n), -_mm(_mm(b, g), b), -n)


_defvjp_direct(matrix_power, _matrix_power_vjp, None, save=(0,))
defjvp(matrix_power, _matrix_power_jvp, None)


# =============================================================================
# Norms
# =============================================================================
def _norm_axes(nd, ord, axis):
    """(axes reduced, matrix?) of norm(x, ord, axis)."""
    if axis is None:
        if ord is None or nd == 1:
            return tuple(range(nd)), False
        return (0, 1), True
    if isinstance(axis, (int, _onp.integer)):
        return (int(axis) % nd,), False
    axis = tuple(int(ax) % nd for ax in axis)
    return axis, len(axis) == 2


def _keep(v, xshape, axes):
    """The reduced value v reshaped so it broadcasts against x (reduced axes of length 1)."""
    target = tuple(1 if i in axes else n for i, n in enumerate(xshape))
    return v if _shape(v) == target else _anp.reshape(v, target)


def _csign(x):
    """x / |x| (0 at 0) for complex x; sign(x) for real x."""
    if _is_complex(x):
        ax = _anp.abs(x)
        return x / _anp.where(ax == 0, 1.0, ax)
    return _anp.sign(x)


def _argext_mask(v, axes, smallest):
    """1/count where v attains its max (min) over axes (ties share evenly); a constant."""
    pv = _plain(v)  # NumPy's functions: an array of any library stays one
    ext = (_onp.min if smallest else _onp.max)(pv, axis=axes, keepdims=True)
    m = (pv == ext).astype(_real_dtype(_dtype(pv)))
    return m / _onp.sum(m, axis=axes, keepdims=True)


def _norm_D(x, ans_k, ord, axes, matrix):
    """D with d norm = Re(sum(D * dx)) over the reduced axes (same shape as x)."""
    if matrix:
        r, c = axes
        if ord is None or ord == "fro":
            return _conj(x) / ans_k
        if ord in ("nuc", 2, -2):
            xm = _anp.moveaxis(x, (r, c), (-2, -1))
            u, s, vh = _svd_p(xm, full_matrices=False)
            if ord == "nuc":
                d = _mm(u, vh)
            else:
                i = 0 if ord == 2 else _shape(s)[-1] - 1
                d = _mm(u[..., :, i : i + 1], vh[..., i : i + 1, :])
            return _anp.moveaxis(_conj(d), (-2, -1), (r, c))
        if ord in (1, -1):
            colsum = _anp.sum(_anp.abs(x), axis=r, keepdims=True)
            return _conj(_csign(x)) * _argext_mask(colsum, c, ord == -1)
        if ord in (_onp.inf, -_onp.inf):
            rowsum = _anp.sum(_anp.abs(x), axis=c, keepdims=True)
            return _conj(_csign(x)) * _argext_mask(rowsum, r, ord == -_onp.inf)
        raise ValueError(f"norm: invalid norm order {ord!r} for matrices")
    if ord is None or ord == 2:
        return _conj(x) / ans_k
    if ord == _onp.inf or ord == -_onp.inf:
        return _conj(_csign(x)) * _argext_mask(_anp.abs(x), axes, ord == -_onp.inf)
    if ord == 0:
        return _zeros_of(x)
    if ord == 1:
        return _conj(_csign(x))
    p = float(ord)
    return _conj(_csign(x)) * (_anp.abs(x) / ans_k) ** (p - 1.0)


def _norm_vjp_rule(g, ans, x, ord, axes, matrix, keepdims):
    xs = _shape(x)
    D = _norm_D(x, _keep(ans, xs, axes), ord, axes, matrix)
    return _cast_like(_keep(g, xs, axes) * D, _dtype(x))


def _norm_jvp_rule(t, ans, x, ord, axes, matrix, keepdims):
    D = _norm_D(x, _keep(ans, _shape(x), axes), ord, axes, matrix)
    out = _anp.sum(D * t, axis=axes, keepdims=keepdims)
    return _anp.real(out) if _is_complex(out) else out


def _norm_args(x, ord=None, axis=None, keepdims=False):
    axes, matrix = _norm_axes(len(_shape(x)), ord, axis)
    return ord, axes, matrix, keepdims


_defvjp_direct(
    norm,
    lambda g, ans, x, *a, **k: _norm_vjp_rule(g, ans, x, *_norm_args(x, *a, **k)),
    save=("ans", 0),
)
defjvp(norm, lambda t, ans, x, *a, **k: _norm_jvp_rule(t, ans, x, *_norm_args(x, *a, **k)))


def _vector_norm_args(x, axis=None, keepdims=False, ord=2):
    nd = len(_shape(x))
    if axis is None:
        axes = tuple(range(nd))
    elif isinstance(axis, (int, _onp.integer)):
        axes = (int(axis) % nd,)
    else:
        axes = tuple(int(ax) % nd for ax in axis)
    return ord, axes, False, keepdims


def _matrix_norm_args(x, keepdims=False, ord="fro"):
    nd = len(_shape(x))
    return ord, (nd - 2, nd - 1), True, keepdims


for _prim, _args in [
    (globals().get("vector_norm"), _vector_norm_args),
    (globals().get("matrix_norm"), _matrix_norm_args),
]:
    if _prim is None:
        continue
    _defvjp_direct(
        _prim,
        (lambda pa: lambda g, ans, x, **k: _norm_vjp_rule(g, ans, x, *pa(x, **k)))(_args),
        save=("ans", 0),
    )
    defjvp(_prim, (lambda pa: lambda t, ans, x, **k: _norm_jvp_rule(t, ans, x, *pa(x, **k)))(_args))


# =============================================================================
# eigh, eigvalsh
# =============================================================================
_eigh_p = _tuple_prim(_npla.eigh, "gradcy.numpy.linalg.eigh")


def _fold_triangle(t, UPLO):
    """The cotangent of the full matrix from that of the Hermitian matrix NumPy builds out of
    one triangle: t_ij + conj(t_ji) in the triangle read, the real part on the diagonal."""
    off = t + _H(t)
    off = _anp.tril(off, -1) if UPLO.upper() == "L" else _anp.triu(off, 1)
    d = _diag_part(t)
    return off + _diag_embed(_anp.real(d) if _is_complex(d) else d)


def _unfold_triangle(t, UPLO):
    """The Hermitian matrix NumPy reads when given t (tangent form)."""
    tri = _anp.tril(t, -1) if UPLO.upper() == "L" else _anp.triu(t, 1)
    d = _diag_part(t)
    return tri + _H(tri) + _diag_embed(_anp.real(d) if _is_complex(d) else d)


def _eigh_vjp(g, ans, a, UPLO="L"):
    w, v = ans[0], ans[1]
    gw, gv = _parts(g, 2)
    inner = None if gw is None else _diag_embed(gw)
    if gv is not None:
        inner = _add(inner, _inv_F(w) * _mm(_T(v), gv))
    if inner is None:
        return None
    t = _mm(_mm(_conj(v), inner), _T(v))
    return _cast_like(_fold_triangle(t, UPLO), _dtype(a))


def _eigh_jvp(g, ans, a, UPLO="L"):
    w, v = ans[0], ans[1]
    P = _mm(_mm(_H(v), _unfold_triangle(g, UPLO)), v)
    dw = _diag_part(P)
    return (_anp.real(dw) if _is_complex(dw) else dw, _mm(v, _inv_F(w) * P))


_defvjp_direct(_eigh_p, _eigh_vjp, save=("ans",))
defjvp(_eigh_p, _eigh_jvp)


def eigh(a, UPLO="L"):
    """numpy.linalg.eigh; a (eigenvalues, eigenvectors) tuple when traced."""
    if type(a) is _Box:
        return _eigh_p(a, UPLO=UPLO)
    return _npla.eigh(a, UPLO)


_register_numpy_override(_npla.eigh, eigh)


def _eigvalsh_vjp(g, ans, a, UPLO="L"):
    w, v = _eigh_p(a, UPLO=UPLO)
    t = _mm(_conj(v) * _row(g), _T(v))
    return _cast_like(_fold_triangle(t, UPLO), _dtype(a))


def _eigvalsh_jvp(g, ans, a, UPLO="L"):
    w, v = _eigh_p(a, UPLO=UPLO)
    d = _anp.sum(_conj(v) * _mm(_unfold_triangle(g, UPLO), v), axis=-2)
    return _anp.real(d) if _is_complex(d) else d


_defvjp_direct(eigvalsh, _eigvalsh_vjp, save=(0,))
defjvp(eigvalsh, _eigvalsh_jvp)


# =============================================================================
# eig, eigvals
# =============================================================================
_eig_p = _tuple_prim(_npla.eig, "gradcy.numpy.linalg.eig")


def _eig_vjp(g, ans, a):
    e, u = ans[0], ans[1]
    ge, gu = _parts(g, 2)
    inner = None if ge is None else _diag_embed(ge)
    ut = _T(u)
    if gu is not None:
        utgu = _mm(ut, gu)
        # the eigenvectors have unit norm: the normalization's share of the cotangent
        dre = _diag_part(utgu)
        norm_part = _mm(ut, _conj(u)) * _row(_anp.real(dre) if _is_complex(dre) else dre)
        inner = _add(inner, _inv_F(e) * (utgu - norm_part))
    if inner is None:
        return None
    r = solve(ut, _mm(inner, ut))
    return _cast_like(r, _dtype(a))


def _eig_jvp(g, ans, a):
    e, u = ans[0], ans[1]
    P = solve(u, _mm(g, u))
    C = _inv_F(e) * P
    uC = _mm(u, C)
    c = _anp.sum(_conj(u) * uC, axis=-2)  # diag(U^H U C)
    c = _anp.real(c) if _is_complex(c) else c
    return (_diag_part(P), uC - u * _row(c))


_defvjp_direct(_eig_p, _eig_vjp, save=("ans",))
defjvp(_eig_p, _eig_jvp)


eig = _pair_function(
    _eig_p, _npla.eig, """numpy.linalg.eig; an (eigenvalues, eigenvectors) tuple when traced."""
)


def _eig_matching(ans, a):
    """eig(a) with its eigenpairs in the order of eigvals' output `ans`."""
    if _is_lazy(_plain(a)):
        raise NotImplementedError(
            f"gradcy.numpy.linalg.eigvals: no gradient for argument 0 (a) as a "
            f"{type(_plain(a)).__module__}.{type(_plain(a)).__name__}: Dask has no eig, so its "
            f"eigenvectors would be computed in memory; pass a.compute() (a NumPy array)"
        )
    e, u = _eig_p(a)
    pe, pa = _plain(e), _plain(ans)
    if _onp.shape(pe) == _onp.shape(pa) and _onp.array_equal(pe, pa):
        return e, u
    idx = _onp.argmin(
        _onp.abs(_onp.asarray(pa)[..., :, None] - _onp.asarray(pe)[..., None, :]), axis=-1
    )
    return (
        _anp.take_along_axis(e, idx, axis=-1),
        _anp.take_along_axis(u, idx[..., None, :], axis=-1),
    )


def _eigvals_vjp(g, ans, a):
    e, u = _eig_matching(ans, a)
    ut = _T(u)
    return _cast_like(solve(ut, _col(g) * ut), _dtype(a))


def _eigvals_jvp(g, ans, a):
    e, u = _eig_matching(ans, a)
    return _diag_part(solve(u, _mm(g, u)))


_defvjp_direct(eigvals, _eigvals_vjp, save=("ans", 0))
defjvp(eigvals, _eigvals_jvp)


# =============================================================================
# cholesky
# =============================================================================
def _phi(x):
    """The lower triangle of x with its diagonal halved."""
    n = _shape(x)[-1]
    return _anp.tril(x) * (1.0 - 0.5 * _eye(n, x))


def _cholesky_vjp(g, ans, a, upper=False):
    cplx = _is_complex(ans)
    G = _conj(g) if cplx else g
    L = _H(ans) if upper else ans
    if upper:
        G = _H(G)
    Lh = _H(L)
    # standard adjoint: sym(L^-H phi(L^H G) L^-1)
    y = solve(Lh, _phi(_mm(Lh, G)))
    s = _H(solve(Lh, _H(y)))
    r = 0.5 * (s + _H(s))
    return _cast_like(_conj(r) if cplx else r, _dtype(a))


def _cholesky_jvp(g, ans, a, upper=False):
    L = _H(ans) if upper else ans
    dA = 0.5 * (g + _H(g))
    y = solve(L, dA)
    x = _H(solve(L, _H(y)))  # L^-1 dA L^-H
    dL = _mm(L, _phi(x))
    return _H(dL) if upper else dL


_defvjp_direct(cholesky, _cholesky_vjp, save=("ans",))
defjvp(cholesky, _cholesky_jvp)


# =============================================================================
# svd, svdvals
# =============================================================================
def _svd_uv(a, full_matrices=True):
    return tuple(_npla.svd(a, full_matrices=full_matrices))


_svd_uv.__name__ = "svd"
_svd_p = _primitive(_svd_uv, "gradcy.numpy.linalg.svd")
_svd_p = _svd_p


def _svd_vjp(g, ans, a, full_matrices=True):
    u, s, vh = ans[0], ans[1], ans[2]
    m, n = _shape(a)[-2:]
    k = min(m, n)
    if full_matrices and m != n:
        raise NotImplementedError(
            "gradcy: the gradient of svd(full_matrices=True) of a non-square matrix is not "
            "defined (the extra singular vectors are arbitrary); use full_matrices=False"
        )
    cplx = _is_complex(u)
    gu, gs, gvh = [None if p is None else (_conj(p) if cplx else p) for p in _parts(g, 3)]
    inner = None if gs is None else _diag_embed(gs)
    F = None
    srow = _row(s)
    if gu is not None or gvh is not None:
        s2 = s * s
        eye = _eye(k, s)
        F = (1.0 - eye) / (_row(s2) - _col(s2) + eye)
    r = None
    if gu is not None:
        M = _mm(_H(u), gu)
        inner = _add(inner, F * (M - _H(M)) * srow)
        if cplx:
            inner = inner + 1j * _diag_embed(_anp.imag(_diag_part(M)) / s)
        if m > k:
            r = _mm((gu - _mm(u, M)) / srow, vh)
    if gvh is not None:
        N = _mm(vh, _H(gvh))
        inner = _add(inner, _col(s) * (F * (N - _H(N))))
        if n > k:
            r = _add(r, _mm(u / srow, gvh - _mm(_H(N), vh)))
    if inner is not None:
        r = _add(r, _mm(_mm(u, inner), vh))
    if r is None:
        return None
    return _cast_like(_conj(r) if cplx else r, _dtype(a))


def _svd_jvp(g, ans, a, full_matrices=True):
    u, s, vh = ans[0], ans[1], ans[2]
    m, n = _shape(a)[-2:]
    k = min(m, n)
    if full_matrices and m != n:
        raise NotImplementedError(
            "gradcy: svd(full_matrices=True) of a non-square matrix has "
            "no derivative; use full_matrices=False"
        )
    cplx = _is_complex(u)
    v = _H(vh)
    dAv = _mm(g, v)
    P = _mm(_H(u), dAv)
    Ph = _H(P)
    srow, scol = _row(s), _col(s)
    s2 = s * s
    eye = _eye(k, s)
    F = (1.0 - eye) / (_row(s2) - _col(s2) + eye)
    dP = _diag_part(P)
    ds = _anp.real(dP) if cplx else dP
    om_u = F * (P * srow + scol * Ph)
    if cplx:
        om_u = om_u + 1j * _diag_embed(_anp.imag(dP) / s)
    om_v = F * (scol * P + Ph * srow)
    du = _mm(u, om_u)
    if m > k:
        du = du + (dAv - _mm(u, P)) / srow
    dv = _mm(v, om_v)
    if n > k:
        dv = dv + (_mm(_H(g), u) - _mm(v, Ph)) / srow
    return (du, ds, _H(dv))


_defvjp_direct(_svd_p, _svd_vjp, save=("ans",))
defjvp(_svd_p, _svd_jvp)


def _svdvals_vjp(g, ans, a):
    u, s, vh = _svd_p(a, full_matrices=False)
    return _cast_like(_mm(_conj(u) * _row(g), _conj(vh)), _dtype(a))


def _svdvals_jvp(g, ans, a):
    u, s, vh = _svd_p(a, full_matrices=False)
    d = _anp.sum(_conj(u) * _mm(g, _H(vh)), axis=-2)
    return _anp.real(d) if _is_complex(d) else d


if "svdvals" in globals():  # NumPy >= 2
    _svdvals_p = svdvals
else:  # NumPy < 2
    _svdvals_p = svdvals = _primitive(
        lambda x: _npla.svd(x, compute_uv=False), "gradcy.numpy.linalg.svdvals"
    )
_defvjp_direct(_svdvals_p, _svdvals_vjp, save=(0,))
defjvp(_svdvals_p, _svdvals_jvp)


def _svd_hermitian(a, compute_uv):
    """numpy.linalg.svd(a, hermitian=True) composed from eigh (as NumPy computes it), so its
    derivative is that of what NumPy computes."""
    if not compute_uv:
        s = _anp.abs(eigvalsh(a))
        return _anp.flip(_anp.sort(s, axis=-1), axis=-1)
    w, u = _eigh_p(a)
    sgn = _anp.sign(_plain(w))
    s = _anp.abs(w)
    sidx = _onp.argsort(_plain(s), axis=-1)[..., ::-1]
    sgn = _onp.take_along_axis(sgn, sidx, axis=-1)
    s = _anp.take_along_axis(s, sidx, axis=-1)
    u = _anp.take_along_axis(u, sidx[..., None, :], axis=-1)
    return u, s, _H(u * _row(sgn))


def svd(a, full_matrices=True, compute_uv=True, hermitian=False):
    """numpy.linalg.svd; a (U, S, Vh) tuple when traced (gradients need full_matrices=False
    or a square matrix)."""
    if type(a) is not _Box:
        return _npla.svd(a, full_matrices, compute_uv, hermitian)
    if hermitian:
        return _svd_hermitian(a, compute_uv)
    if not compute_uv:
        return _svdvals_p(a)
    return _svd_p(a, full_matrices=full_matrices)


_register_numpy_override(_npla.svd, svd)


# =============================================================================
# qr
# =============================================================================
def _numpy_qr(a, mode):
    """numpy.linalg.qr(a, mode), the default mode not passed on: an array library's qr may
    take no mode (Dask's)."""
    return _npla.qr(a) if mode == "reduced" else _npla.qr(a, mode)


def _qr_uv(a, mode="reduced"):
    return tuple(_numpy_qr(a, mode))


_qr_uv.__name__ = "qr"
_qr_p = _primitive(_qr_uv, "gradcy.numpy.linalg.qr")


def _qr_square_adjoint(q, r, gq, gr, cplx, project):
    """Standard adjoint of A = QR (m >= n) for cotangents gq, gr (None = zero)."""
    M = None if gq is None else _mm(_H(q), gq)
    if gr is not None:
        rgr = _mm(gr, _H(r))
        M = -rgr if M is None else M - rgr
    C = _add(None if gr is None else rgr, _anp.tril(M - _H(M), -1))
    if cplx:
        C = C + 1j * _diag_embed(_anp.imag(_diag_part(M)))
    Z = _mm(q, C)
    if gq is not None and project:
        Z = Z + gq - _mm(q, _mm(_H(q), gq))
    return _H(solve(r, _H(Z)))  # Z R^-H


def _qr_vjp(g, ans, a, mode="reduced"):
    q, r = ans[0], ans[1]
    m, n = _shape(a)[-2:]
    if mode not in ("reduced", "complete") or (mode == "complete" and m > n):
        raise NotImplementedError(
            f"gradcy: qr(mode={mode!r}) of a {m}x{n} matrix has no gradient; use mode='reduced'"
        )
    cplx = _is_complex(q)
    gq, gr = [None if p is None else (_conj(p) if cplx else p) for p in _parts(g, 2)]
    if gq is None and gr is None:
        return None
    if m >= n:
        res = _qr_square_adjoint(q, r, gq, gr, cplx, m > n)
    else:
        r1, r2 = r[..., :, :m], r[..., :, m:]
        gr1 = None if gr is None else gr[..., :, :m]
        if gr is not None:
            gr2 = gr[..., :, m:]
            y = _mm(q, r2)
            gq = _add(gq, _mm(y, _H(gr2)))
            gy = _mm(q, gr2)
        else:
            gy = _zeros_of(a)[..., :, m:]
        gx = _qr_square_adjoint(q, r1, gq, gr1, cplx, False)
        res = _anp.concatenate([gx, gy], axis=-1)
    return _cast_like(_conj(res) if cplx else res, _dtype(a))


def _qr_square_jvp(q, r, da, cplx, project):
    D = _T(solve(_T(r), _T(da)))  # dA R^-1
    C = _mm(_H(q), D)
    low = _anp.tril(C, -1)
    om = low - _H(low)
    if cplx:
        om = om + 1j * _diag_embed(_anp.imag(_diag_part(C)))
    dr = _mm(C - om, r)
    dq = _mm(q, om)
    if project:
        dq = dq + D - _mm(q, C)
    return dq, dr


def _qr_jvp(g, ans, a, mode="reduced"):
    q, r = ans[0], ans[1]
    m, n = _shape(a)[-2:]
    if mode not in ("reduced", "complete") or (mode == "complete" and m > n):
        raise NotImplementedError(
            f"gradcy: qr(mode={mode!r}) of a {m}x{n} matrix has no derivative; use mode='reduced'"
        )
    cplx = _is_complex(q)
    if m >= n:
        return _qr_square_jvp(q, r, g, cplx, m > n)
    dq, dr1 = _qr_square_jvp(q, r[..., :, :m], g[..., :, :m], cplx, False)
    dr2 = _mm(_H(dq), _mm(q, r[..., :, m:])) + _mm(_H(q), g[..., :, m:])
    return dq, _anp.concatenate([dr1, dr2], axis=-1)


_defvjp_direct(_qr_p, _qr_vjp, save=("ans",))
defjvp(_qr_p, _qr_jvp)


def qr(a, mode="reduced"):
    """numpy.linalg.qr; a (Q, R) tuple when traced (R alone for mode='r')."""
    if type(a) is not _Box:
        return _numpy_qr(a, mode)
    if mode == "r":
        return _qr_p(a)[1]
    return _qr_p(a, mode=mode)


_register_numpy_override(_npla.qr, qr)


# =============================================================================
# lstsq: (x, residuals, rank, s); rank carries no gradient
# =============================================================================
def _lstsq_rcond(args, kwargs):
    return args[2] if len(args) > 2 else kwargs.get("rcond")


def _lstsq_vjp(argnums, g, g_owned, ans, args, kwargs):
    a, b = args[0], args[1]
    rcond = _lstsq_rcond(args, kwargs)
    vec = len(_shape(b)) == 1
    cplx = _is_complex(a) or _is_complex(b)
    gx, gres, _, gs = _parts(g, 4)
    P = pinv(a) if rcond is None else pinv(a, rcond)
    B = _col(b) if vec else b
    X = _mm(P, B)
    res_size = int(_onp.prod(_shape(ans[1])))  # residuals: empty unless full rank, m > n
    ga = gb = None
    if gx is not None:
        G = _col(gx) if vec else gx
        G = _conj(G) if cplx else G
        Ph = _H(P)
        gb = _mm(Ph, G)
        if 0 in argnums:
            R = B - _mm(a, X)
            Gh = _H(G)
            t = _mm(Gh, P)  # G^H P
            ga = -_mm(gb, _H(X)) + _mm(R, _mm(t, Ph)) + _mm(_mm(Ph, X), Gh - _mm(t, a))
    if gres is not None and res_size:
        rho = _anp.real(gres) if _is_complex(gres) else gres
        R2 = (B - _mm(a, X)) * (2.0 * _row(rho))  # 2 r diag(rho)
        gb = _add(gb, R2)
        if 0 in argnums:
            ga = _add(ga, -_mm(R2, _H(X)))
    if gs is not None and 0 in argnums:
        u, s, vh = _svd_p(a, full_matrices=False)
        ga = _add(ga, _mm(u * _row(gs), vh))
    out = []
    for i in argnums:
        if i == 0:
            out.append(None if ga is None else _cast_like(_conj(ga) if cplx else ga, _dtype(a)))
        else:
            if gb is not None:
                gb = _conj(gb) if cplx else gb
                gb = gb[..., 0] if vec else gb
                gb = _cast_like(gb, _dtype(b))
            out.append(gb)
    return tuple(out)


def _lstsq_jvp(argnums, gs, ans, args, kwargs):
    # one rule for both arguments: the engine adds tangents with +, which would concatenate
    # the tuples two per-argument rules return
    a, b = args[0], args[1]
    rcond = _lstsq_rcond(args, kwargs)
    vec = len(_shape(b)) == 1
    P = pinv(a) if rcond is None else pinv(a, rcond)
    B = _col(b) if vec else b
    X = _col(ans[0]) if vec else ans[0]
    R = B - _mm(a, X)
    dx = dr = ds = None
    for i, g in zip(argnums, gs):
        if i == 0:
            Ph, gh = _H(P), _H(g)
            gX = _mm(g, X)
            t = _mm(gh, _mm(Ph, X))
            dx = _add(dx, -_mm(P, gX) + _mm(P, _mm(Ph, _mm(gh, R))) + t - _mm(P, _mm(a, t)))
            dr = _add(dr, -gX)
            u, s, vh = _svd_p(a, full_matrices=False)
            ds = _anp.sum(_conj(u) * _mm(g, _H(vh)), axis=-2)
            ds = _anp.real(ds) if _is_complex(ds) else ds
        elif i == 1:
            G = _col(g) if vec else g
            dx = _add(dx, _mm(P, G))
            dr = _add(dr, G)
    res = ans[1]
    if _onp.size(_plain(res)) and dr is not None:
        # d residuals_j = 2 Re(r_j^H (db_j - dA x_j)) (A^H r = 0 at the solution)
        dres = 2.0 * _anp.real(_anp.sum(_conj(R) * dr, axis=0))
    else:
        dres = _zeros_of(res)
    return (dx[..., 0] if vec else dx, dres, None, _zeros_of(ans[3]) if ds is None else ds)


_defvjp_argnums_direct(lstsq, _lstsq_vjp, save=(0, 1))
_defjvp_argnums(lstsq, _lstsq_jvp)


# =============================================================================
# Compositions: multi_dot, cond; numpy.linalg's array-API aliases; matrix_rank
# =============================================================================
def _chain_order(shapes):
    """Optimal parenthesization of a matrix chain (dynamic programming): split[i][j]."""
    n = len(shapes)
    p = [shapes[0][0]] + [s[1] for s in shapes]
    cost = [[0] * n for _ in range(n)]
    split = [[0] * n for _ in range(n)]
    for length in range(1, n):
        for i in range(n - length):
            j = i + length
            cost[i][j] = None
            for k in range(i, j):
                c = cost[i][k] + cost[k + 1][j] + p[i] * p[k + 1] * p[j + 1]
                if cost[i][j] is None or c < cost[i][j]:
                    cost[i][j], split[i][j] = c, k
    return split


def multi_dot(arrays, *, out=None):
    """numpy.linalg.multi_dot: traced arrays are multiplied with gradcy.numpy.dot in NumPy's
    optimal order, so the chain is differentiable in both modes."""
    arrays = list(arrays)
    if out is not None and (type(out) is _Box or any(type(x) is _Box for x in arrays)):
        return _anp.write_out("gradcy.numpy.linalg.multi_dot", out, lambda: multi_dot(arrays))
    if out is not None or not any(type(x) is _Box for x in arrays):
        return _npla.multi_dot(arrays, out=out)
    n = len(arrays)
    if n < 2:
        raise ValueError("Expecting at least two arrays.")
    if n == 2:
        return _anp.dot(arrays[0], arrays[1])
    first_1d, last_1d = len(_shape(arrays[0])) == 1, len(_shape(arrays[-1])) == 1
    if first_1d:
        arrays[0] = _anp.reshape(arrays[0], (1, -1))
    if last_1d:
        arrays[-1] = _anp.reshape(arrays[-1], (-1, 1))
    split = _chain_order([_shape(x) for x in arrays])

    def prod(i, j):
        if i == j:
            return arrays[i]
        k = split[i][j]
        return _anp.dot(prod(i, k), prod(k + 1, j))

    res = prod(0, n - 1)
    if first_1d and last_1d:
        return _anp.reshape(res, ())
    if first_1d or last_1d:
        return _anp.reshape(res, (-1,))
    return res


_register_numpy_override(_npla.multi_dot, multi_dot)


def cond(x, p=None):
    """numpy.linalg.cond, differentiable on traced values."""
    if type(x) is not _Box:
        return _npla.cond(x, p)
    if p is None or p == 2 or p == -2:
        s = _svdvals_p(x)
        if p == -2:
            return s[..., -1] / s[..., 0]
        return s[..., 0] / s[..., -1]
    return norm(x, p, axis=(-2, -1)) * norm(inv(x), p, axis=(-2, -1))


_register_numpy_override(_npla.cond, cond)
_nondifferentiable(matrix_rank)


def _linalg_trace(x, /, *, offset=0, dtype=None):
    return _anp.trace(x, offset, -2, -1, dtype)


def _linalg_diagonal(x, /, *, offset=0):
    return _anp.diagonal(x, offset, -2, -1)


def _linalg_cross(x1, x2, /, *, axis=-1):
    return _anp.cross(x1, x2, axis=axis)


def _linalg_outer(x1, x2, /):
    return _anp.outer(x1, x2)


def _linalg_tensordot(x1, x2, /, *, axes=2):
    return _anp.tensordot(x1, x2, axes)


def _linalg_vecdot(x1, x2, /, *, axis=-1):
    return _anp.vecdot(x1, x2, axis=axis)


def _array_api_alias(name, fn):
    """numpy.linalg's array-API functions as their gradcy.numpy counterparts on traced
    values (plain calls keep NumPy's own function and checks)."""
    npfn = getattr(_npla, name)

    def f(*args, **kwargs):
        if any(type(x) is _Box for x in args):
            return fn(*args, **kwargs)
        return npfn(*args, **kwargs)

    f.__name__ = name
    f.__doc__ = npfn.__doc__
    _register_numpy_override(npfn, f)
    return f


if hasattr(_npla, "vecdot"):  # NumPy >= 2: numpy.linalg's array-API names
    trace = _array_api_alias("trace", _linalg_trace)
    diagonal = _array_api_alias("diagonal", _linalg_diagonal)
    cross = _array_api_alias("cross", _linalg_cross)
    outer = _array_api_alias("outer", _linalg_outer)
    tensordot = _array_api_alias("tensordot", _linalg_tensordot)
    vecdot = _array_api_alias("vecdot", _linalg_vecdot)
    matmul = _array_api_alias("matmul", lambda x1, x2, /: _anp.matmul(x1, x2))
    matrix_transpose = _array_api_alias("matrix_transpose", lambda x, /: _anp.matrix_transpose(x))
del _prim, _args
