"""scipy.linalg as gradcy primitives, with derivative rules for sqrtm, solve_sylvester,
solve_triangular, solve_banded and cho_factor (cho_solve is built from solve_triangular).

Every public function of scipy.linalg is a primitive named `gradcy.scipy.linalg.<name>`; the
ones without a rule raise MissingVJPError when a gradient reaches them.

Complex values follow autograd's convention: the rule of a holomorphic function is the plain
transpose of its Jacobian (no conjugation); solve_triangular with trans='C' conjugates the
matching factors. The overwrite_* flags are ignored (always False): a traced argument's buffer
may be saved by another node of the tape, so it must never be overwritten.
"""

import functools as _functools
import types as _types

import numpy as _onp

from ..registry import defjvp, defjvp_argnums, defvjp_argnums_direct, defvjp_direct, primitive
from ..registry import defvjp  # noqa: F401 (a name of autograd.scipy.linalg)
from ..numpy import _wrap as anp
from ..numpy._util import cast_like
from . import _import_scipy

_sla = _import_scipy("scipy.linalg")  # ImportError naming the extra when SciPy is missing

_ndarray = _onp.ndarray


def _wrap_namespace():
    names = getattr(_sla, "__all__", None) or [n for n in vars(_sla) if not n.startswith("_")]
    out = {}
    for name in names:
        obj = getattr(_sla, name, None)
        if isinstance(obj, (_types.FunctionType, _types.BuiltinFunctionType)):
            out[name] = primitive(obj, f"gradcy.scipy.linalg.{name}")
        elif obj is not None and not isinstance(obj, _types.ModuleType):
            out[name] = obj
    return out


_namespace = _wrap_namespace()
globals().update(_namespace)
__all__ = sorted(_namespace)
del _namespace


def _public(fun, name):
    """fun as the primitive gradcy.scipy.linalg.<name>, documented as scipy's function."""
    fun.__doc__ = getattr(_sla, name).__doc__
    fun.__name__ = name
    return primitive(fun, f"gradcy.scipy.linalg.{name}")


# =============================================================================
# Helpers (work on arrays and traced values alike)
# =============================================================================
_mT = anp._mT  # x with its last two axes swapped (a view for arrays)


def _is_complex(x):
    return x.dtype.kind == "c"


def _conj(x):
    return anp.conj(x) if _is_complex(x) else x


def _dtype_of(x):
    dt = getattr(x, "dtype", None)
    return dt if dt is not None else _onp.result_type(x)


def _outer_like(u, v):
    """u v^T for vectors, u @ v.T for (n, k) right-hand sides."""
    if u.ndim == 1:
        return anp.multiply(anp.reshape(u, (-1, 1)), anp.reshape(v, (1, -1)))
    return anp.matmul(u, _mT(v))


# =============================================================================
# sqrtm: X @ X = A  ->  dX solves X dX + dX X = dA
# =============================================================================
def _sqrtm(A, **kwargs):
    return _sla.sqrtm(A, **kwargs)


sqrtm = _public(_sqrtm, "sqrtm")


def _check_sqrtm_kwargs(kwargs):
    if kwargs.get("disp", True) is False:
        raise NotImplementedError("gradcy: sqrtm has no derivative rule with disp=False")


def _sqrtm_vjp(g, ans, A, **kwargs):
    _check_sqrtm_kwargs(kwargs)
    ansT = _mT(ans)
    return cast_like(solve_sylvester(ansT, ansT, g), A.dtype)


def _sqrtm_jvp(g, ans, A, **kwargs):
    _check_sqrtm_kwargs(kwargs)
    return solve_sylvester(ans, ans, g)


defvjp_direct(sqrtm, _sqrtm_vjp, save=("ans",))
defjvp(sqrtm, _sqrtm_jvp)


# =============================================================================
# solve_sylvester: A X + X B = Q
# =============================================================================
def _solve_sylvester(a, b, q):
    return _sla.solve_sylvester(a, b, q)


solve_sylvester = _public(_solve_sylvester, "solve_sylvester")


def _sylvester_vjp(argnums, g, g_owned, ans, args, kwargs):
    a, b, q = args
    dtypes = (a.dtype, b.dtype, q.dtype)
    z = solve_sylvester(_mT(a), _mT(b), g)
    out = []
    for k in argnums:
        if k == 0:
            out.append(cast_like(-anp.matmul(z, _mT(ans)), dtypes[0]))
        elif k == 1:
            out.append(cast_like(-anp.matmul(_mT(ans), z), dtypes[1]))
        else:
            out.append(cast_like(z, dtypes[2]))
    return tuple(out)


def _sylvester_jvp(argnums, gs, ans, args, kwargs):
    a, b, q = args
    rhs = None
    for k, g in zip(argnums, gs):
        if k == 0:
            t = -anp.matmul(g, ans)
        elif k == 1:
            t = -anp.matmul(ans, g)
        else:
            t = g
        rhs = t if rhs is None else rhs + t
    return solve_sylvester(a, b, rhs)


defvjp_argnums_direct(solve_sylvester, _sylvester_vjp, save=("ans", 0, 1))
defjvp_argnums(solve_sylvester, _sylvester_jvp)


# =============================================================================
# solve_triangular: op(A) x = b with op(A) = A, A.T or A.conj().T (trans = 0, 1, 2)
# =============================================================================
_TRANS = {0: 0, 1: 1, 2: 2, "N": 0, "T": 1, "C": 2, "n": 0, "t": 1, "c": 2}


def _trans_code(trans):
    try:
        return _TRANS[trans]
    except (KeyError, TypeError):
        raise ValueError(
            f"solve_triangular: trans must be 0, 1, 2, 'N', 'T' or 'C', got {trans!r}"
        ) from None


def _solve_triangular(
    a, b, trans=0, lower=False, unit_diagonal=False, overwrite_b=False, check_finite=True
):
    return _sla.solve_triangular(
        a, b, trans=trans, lower=lower, unit_diagonal=unit_diagonal, check_finite=check_finite
    )


solve_triangular = _public(_solve_triangular, "solve_triangular")


def _triangle(x, lower, unit_diagonal):
    """The part of x that solve_triangular reads (the strict triangle with a unit diagonal)."""
    if lower:
        return anp.tril(x, -1 if unit_diagonal else 0)
    return anp.triu(x, 1 if unit_diagonal else 0)


def _solve_triangular_vjp(argnums, g, g_owned, ans, args, kwargs):
    a, b = args[0], args[1]
    trans = _trans_code(kwargs.get("trans", args[2] if len(args) > 2 else 0))
    lower = kwargs.get("lower", args[3] if len(args) > 3 else False)
    unit = kwargs.get("unit_diagonal", args[4] if len(args) > 4 else False)
    check_finite = kwargs.get("check_finite", True)
    cplx = _is_complex(a)
    a_dtype, b_dtype = a.dtype, b.dtype
    # w = op(A)^-T g, the cotangent of b
    if trans == 0:
        w = solve_triangular(
            a, g, trans=1, lower=lower, unit_diagonal=unit, check_finite=check_finite
        )
    elif trans == 2 and cplx:
        w = anp.conj(
            solve_triangular(
                a,
                anp.conj(g),
                trans=0,
                lower=lower,
                unit_diagonal=unit,
                check_finite=check_finite,
            )
        )
    else:
        w = solve_triangular(
            a, g, trans=0, lower=lower, unit_diagonal=unit, check_finite=check_finite
        )
    out = []
    for k in argnums:
        if k == 1:
            out.append(cast_like(w, b_dtype))
        else:
            if trans == 0:
                abar = _outer_like(w, ans)
            else:
                abar = _outer_like(ans, w)
                if trans == 2 and cplx:
                    abar = anp.conj(abar)
            out.append(cast_like(-_triangle(abar, lower, unit), a_dtype))
    return tuple(out)


def _solve_triangular_jvp(argnums, gs, ans, args, kwargs):
    a = args[0]
    trans = _trans_code(kwargs.get("trans", args[2] if len(args) > 2 else 0))
    lower = kwargs.get("lower", args[3] if len(args) > 3 else False)
    unit = kwargs.get("unit_diagonal", args[4] if len(args) > 4 else False)
    check_finite = kwargs.get("check_finite", True)
    rhs = None
    for k, g in zip(argnums, gs):
        if k == 1:
            t = g
        else:
            da = _triangle(g, lower, unit)
            if trans == 1:
                da = _mT(da)
            elif trans == 2:
                da = _conj(_mT(da))
            t = -anp.dot(da, ans)
        rhs = t if rhs is None else rhs + t
    return solve_triangular(
        a, rhs, trans=trans, lower=lower, unit_diagonal=unit, check_finite=check_finite
    )


defvjp_argnums_direct(solve_triangular, _solve_triangular_vjp, save=("ans", 0))
defjvp_argnums(solve_triangular, _solve_triangular_jvp)


# =============================================================================
# solve_banded: A x = b with A in banded storage ab[u + i - j, j] = A[i, j]
# =============================================================================
def _solve_banded(l_and_u, ab, b, overwrite_ab=False, overwrite_b=False, check_finite=True):
    return _sla.solve_banded(l_and_u, ab, b, check_finite=check_finite)


solve_banded = _public(_solve_banded, "solve_banded")


@_functools.lru_cache(maxsize=64)
def _band_gather(l, u, n, kind):
    """(rows, cols, mask) index arrays of shape (l + u + 1, n) for three gathers of a band:

    'T'   ab_T[r, i] = ab[l + u - r, i + r - l]: the storage of A.T, with (u, l) bands;
    'row' x[k + j - u]: row i of the entry ab[k, j] (its column is j);
    'col' x[i + u - k]: column j of the entry in band row k of matrix row i.
    Out-of-range positions are clipped in the index and False in the mask."""
    k = _onp.arange(l + u + 1).reshape(-1, 1)
    j = _onp.arange(n).reshape(1, -1)
    if kind == "T":
        rows = _onp.broadcast_to(l + u - k, (l + u + 1, n))
        cols = j + k - l
    elif kind == "row":
        rows = None
        cols = k + j - u
    else:
        rows = None
        cols = j + u - k
    mask = (cols >= 0) & (cols < n)
    cols = _onp.clip(cols, 0, n - 1)
    for arr in (rows, cols, mask):
        if arr is not None:
            arr.flags.writeable = False
    return rows, cols, mask


def _l_and_u(l_and_u):
    l, u = l_and_u
    return int(l), int(u)


def _banded_transpose(l, u, ab):
    """The banded storage of A.T (whose bands are (u, l))."""
    rows, cols, mask = _band_gather(l, u, ab.shape[-1], "T")
    return anp.where(mask, anp.getitem(ab, (rows, cols)), 0.0)


def _gather_rows(x, idx, mask):
    """x[idx] (along x's first axis), zero where mask is False; mask broadcasts over the
    trailing axes of x."""
    xg = anp.getitem(x, idx)
    if x.ndim > 1:
        mask = mask.reshape(mask.shape + (1,) * (x.ndim - 1))
    return anp.where(mask, xg, 0.0)


def _solve_banded_vjp(argnums, g, g_owned, ans, args, kwargs):
    l_and_u, ab, b = args[0], args[1], args[2]
    l, u = _l_and_u(l_and_u)
    n = ab.shape[-1]
    ab_dtype, b_dtype = ab.dtype, b.dtype
    check_finite = kwargs.get("check_finite", True)
    w = solve_banded((u, l), _banded_transpose(l, u, ab), g, check_finite=check_finite)
    out = []
    for k in argnums:
        if k == 2:
            out.append(cast_like(w, b_dtype))
        else:
            # ab_bar[k, j] = -sum_m w[i, m] x[j, m] with i = k + j - u, inside the band
            _, cols, mask = _band_gather(l, u, n, "row")
            prod = _gather_rows(w, cols, mask) * ans
            if ans.ndim > 1:
                prod = anp.sum(prod, axis=-1)
            out.append(cast_like(-prod, ab_dtype))
    return tuple(out)


def _banded_matvec(l, u, dab, x):
    """A @ x for A given by the banded storage dab."""
    _, cols, mask = _band_gather(l, u, dab.shape[-1], "col")
    xg = _gather_rows(x, cols, mask)  # x[i + u - k]
    band = anp.getitem(dab, (_onp.arange(l + u + 1).reshape(-1, 1), cols))
    if x.ndim > 1:
        band = anp.reshape(band, band.shape + (1,) * (x.ndim - 1))
    return anp.sum(band * xg, axis=0)


def _solve_banded_jvp(argnums, gs, ans, args, kwargs):
    l_and_u, ab = args[0], args[1]
    l, u = _l_and_u(l_and_u)
    check_finite = kwargs.get("check_finite", True)
    rhs = None
    for k, g in zip(argnums, gs):
        t = g if k == 2 else -_banded_matvec(l, u, g, ans)
        rhs = t if rhs is None else rhs + t
    return solve_banded((l, u), ab, rhs, check_finite=check_finite)


defvjp_argnums_direct(solve_banded, _solve_banded_vjp, save=("ans", 1))
defjvp_argnums(solve_banded, _solve_banded_jvp)


# =============================================================================
# cho_factor / cho_solve
# =============================================================================
def _cho_factor_c(a, lower=False, check_finite=True):
    c, _ = _sla.cho_factor(a, lower=lower, check_finite=check_finite)
    # scipy leaves the other triangle unspecified: make it zero so c is the Cholesky factor
    return _onp.tril(c) if lower else _onp.triu(c)


_cho_factor_p = primitive(_cho_factor_c, "gradcy.scipy.linalg.cho_factor")


def cho_factor(a, lower=False, overwrite_a=False, check_finite=True):
    """Cholesky factorization for cho_solve: returns (c, lower) with c the triangular factor
    (A = c @ c.conj().T for lower, c.conj().T @ c for upper) and zeros in the other triangle.

    Differentiable for real symmetric positive definite `a` (the gradient is symmetric, the
    derivative of the function of (a + a.T) / 2)."""
    return _cho_factor_p(a, lower=lower, check_finite=check_finite), lower


def cho_solve(c_and_lower, b, overwrite_b=False, check_finite=True):
    """Solve A x = b given (c, lower) from cho_factor; differentiable in c and b."""
    c, lower = c_and_lower
    if lower:
        y = solve_triangular(c, b, trans=0, lower=True, check_finite=check_finite)
        return solve_triangular(c, y, trans=2, lower=True, check_finite=check_finite)
    y = solve_triangular(c, b, trans=2, lower=False, check_finite=check_finite)
    return solve_triangular(c, y, trans=0, lower=False, check_finite=check_finite)


def _phi(x):
    """The lower triangle of x with its diagonal halved."""
    return anp.tril(x) - 0.5 * x * _onp.eye(x.shape[-1], dtype=bool)


def _cho_factor_vjp(g, ans, a, lower=False, check_finite=True):
    if _is_complex(a):
        raise NotImplementedError("gradcy: cho_factor has a derivative rule for real matrices only")
    L = ans if lower else _mT(ans)
    Lbar = g if lower else _mT(g)
    P = _phi(anp.matmul(_mT(L), Lbar))
    # S = L^-T P L^-1
    S = solve_triangular(
        L, _mT(solve_triangular(L, _mT(P), trans=1, lower=True)), trans=1, lower=True
    )
    return cast_like(0.5 * (S + _mT(S)), a.dtype)


def _cho_factor_jvp(g, ans, a, lower=False, check_finite=True):
    L = ans if lower else _mT(ans)
    dA = 0.5 * (g + _mT(g))
    # dL = L phi(L^-1 dA L^-T)
    M = solve_triangular(L, _mT(solve_triangular(L, dA, lower=True)), lower=True)
    dL = anp.matmul(L, _phi(M))
    return dL if lower else _mT(dL)


defvjp_direct(_cho_factor_p, _cho_factor_vjp, save=("ans",))
defjvp(_cho_factor_p, _cho_factor_jvp)


def __getattr__(name):
    # autograd's rule names for this module (grad_*, ...), added on first lookup
    from gradcy._autograd_rules import autograd_name

    return autograd_name(__name__, name)
