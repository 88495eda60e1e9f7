"""VJPs and JVPs of convolve, correlate and the polynomial functions (vander polyval polyadd
polysub polymul polyder polyint ...)."""

import numpy as _onp

from ..registry import defjvp, defvjp_direct
from . import _wrap as anp
from ._util import _dtype, _float_dtype, _is_complex, _plain, _shape, _size, cast_like, unbroadcast


# =============================================================================
# convolve, correlate: bilinear; cotangents are 'valid' convolutions with the full-mode
# cotangent
# =============================================================================
def _conv_offset(N, M, mode, correlate):
    """Where a mode's output starts inside the full output, and its length."""
    if mode == "full":
        return 0, N + M - 1
    if mode == "same":
        if correlate and N < M:
            return min(N, M) // 2, max(N, M)
        return (min(N, M) - 1) // 2, max(N, M)
    if mode == "valid":
        return min(N, M) - 1, max(N, M) - min(N, M) + 1
    raise ValueError(f"gradcy.numpy.convolve: mode {mode!r} has no gradient")


def _mode_name(mode):
    return (
        {0: "valid", 1: "same", 2: "full"}.get(mode, mode)
        if not isinstance(mode, str)
        else {"v": "valid", "s": "same", "f": "full"}.get(mode, mode)
    )


def _full_cotangent(g, N, M, mode, correlate):
    off, L = _conv_offset(N, M, _mode_name(mode), correlate)
    g = anp.reshape(g, (-1,))
    total = N + M - 1
    if off == 0 and L == total:
        return g
    return anp.pad(g, [(off, total - off - L)])


def _conv_vjp(which, correlate):
    def rule(g, ans, a, v, mode="valid" if correlate else "full"):
        sa, sv = _shape(a), _shape(v)
        N, M = _size(sa), _size(sv)
        target = a if which == 0 else v
        gf = _full_cotangent(g, N, M, mode, correlate)
        a1 = anp.reshape(a, (-1,))
        v1 = anp.reshape(v, (-1,))
        if correlate:
            # correlate(a, v) = convolve(a, w) with w = conj(flip(v)) in full mode
            w = anp.conjugate(anp.flip(v1)) if _is_complex(v) else anp.flip(v1)
        else:
            w = v1
        if which == 0:
            c = anp.convolve(gf, anp.flip(w), "valid")
        else:
            cw = anp.convolve(gf, anp.flip(a1), "valid")
            if correlate:
                cw = anp.flip(cw)
                c = anp.conjugate(cw) if _is_complex(v) else cw
            else:
                c = cw
        return cast_like(anp.reshape(c, _shape(target)), _dtype(target))

    return rule


for _p, _corr in ((anp.convolve, False), (anp.correlate, True)):
    defvjp_direct(_p, _conv_vjp(0, _corr), _conv_vjp(1, _corr), save=(0, 1))
defjvp(
    anp.convolve,
    lambda g, ans, a, v, mode="full": anp.convolve(g, v, mode),
    lambda g, ans, a, v, mode="full": anp.convolve(a, g, mode),
)
defjvp(
    anp.correlate,
    lambda g, ans, a, v, mode="valid": anp.correlate(g, v, mode),
    lambda g, ans, a, v, mode="valid": anp.correlate(a, g, mode),
)


# =============================================================================
# Polynomials
# =============================================================================
def _as1d(x):
    return anp.reshape(x, (-1,)) if len(_shape(x)) != 1 else x


def _polyadd_vjp(which, sign):
    def rule(g, ans, a1, a2):
        target = a1 if which == 0 else a2
        shape, dtype = _shape(target), _dtype(target)
        n = max(_size(shape), 1)
        c = anp.getitem(g, slice(len(_shape(g)) and _shape(g)[0] - n, None))
        c = -c if sign < 0 else c
        return cast_like(anp.reshape(c, shape), dtype)

    return rule


def _polyadd_jvp(which, sign):
    def jvp(g, ans, a1, a2):
        n = _shape(ans)[0]
        t = anp.reshape(g, (-1,))
        t = -t if sign < 0 else t
        k = n - _shape(t)[0]
        return anp.pad(t, [(k, 0)]) if k else t

    return jvp


defvjp_direct(anp.polyadd, _polyadd_vjp(0, 1), _polyadd_vjp(1, 1), save=())
defjvp(anp.polyadd, _polyadd_jvp(0, 1), _polyadd_jvp(1, 1))
defvjp_direct(anp.polysub, _polyadd_vjp(0, 1), _polyadd_vjp(1, -1), save=())
defjvp(anp.polysub, _polyadd_jvp(0, 1), _polyadd_jvp(1, -1))


def _leading_zeros(a):
    """How many leading coefficients poly1d trims (all but the last of an all-zero a)."""
    p = _onp.atleast_1d(_onp.asarray(_plain(a))).reshape(-1)
    nz = _onp.flatnonzero(p)
    return int(nz[0]) if nz.size else max(p.size - 1, 0)


def _polymul_vjp(which):
    def rule(g, ans, a1, a2):
        target = a1 if which == 0 else a2
        shape, dtype = _shape(target), _dtype(target)
        k1, k2 = _leading_zeros(a1), _leading_zeros(a2)
        p1 = anp.getitem(_as1d(a1), slice(k1, None))
        p2 = anp.getitem(_as1d(a2), slice(k2, None))
        other, k = (p2, k1) if which == 0 else (p1, k2)
        c = anp.convolve(anp.reshape(g, (-1,)), anp.flip(other), "valid")
        if k:
            c = anp.pad(c, [(k, 0)])
        return cast_like(anp.reshape(c, shape), dtype)

    return rule


def _polymul_jvp(which):
    def jvp(g, ans, a1, a2):
        k1, k2 = _leading_zeros(a1), _leading_zeros(a2)
        p1 = anp.getitem(_as1d(a1), slice(k1, None))
        p2 = anp.getitem(_as1d(a2), slice(k2, None))
        if which == 0:
            return anp.convolve(anp.getitem(_as1d(g), slice(k1, None)), p2)
        return anp.convolve(p1, anp.getitem(_as1d(g), slice(k2, None)))

    return jvp


defvjp_direct(anp.polymul, _polymul_vjp(0), _polymul_vjp(1), save=(0, 1))
defjvp(anp.polymul, _polymul_jvp(0), _polymul_jvp(1))


def _scale_probe(fun, n, dtype):
    """The per-coefficient factors of a map that scales and shifts coefficients (polyder,
    polyint): fun applied to ones."""
    return _onp.asarray(fun(_onp.ones(n, dtype=_float_dtype(dtype))))


def _polyder_vjp(g, ans, p, m=1):
    shape, dtype = _shape(p), _dtype(p)
    n = _size(shape)
    m = int(m)
    if m == 0:
        return cast_like(g, dtype)
    if n - m <= 0:
        return None
    c = _scale_probe(lambda o: _onp.polyder(o, m), n, dtype)
    return cast_like(anp.pad(g * c.astype(_float_dtype(dtype)), [(0, m)]), dtype)


defvjp_direct(anp.polyder, _polyder_vjp, save=())
defjvp(anp.polyder, lambda g, ans, p, m=1: anp.polyder(g, m))


def _polyint_vjp(g, ans, p, m=1, k=None):
    shape, dtype = _shape(p), _dtype(p)
    n = _size(shape)
    c = _scale_probe(lambda o: _onp.polyint(o, m), n, dtype)[:n]
    return cast_like(anp.getitem(g, slice(0, n)) * c.astype(_float_dtype(dtype)), dtype)


defvjp_direct(anp.polyint, _polyint_vjp, save=())
defjvp(anp.polyint, lambda g, ans, p, m=1, k=None: anp.polyint(g, m))


def _powers(n, dtype, increasing=False):
    e = _onp.arange(n, dtype=_float_dtype(dtype))
    return e if increasing else e[::-1].copy()


def _polyval_vjp_p(g, ans, p, x):
    pshape, pdtype = _shape(p), _dtype(p)
    n = pshape[0]
    xe = anp.power(anp.expand_dims(x, -1), _powers(n, pdtype))  # x.shape + (n,)
    nd = len(_shape(x))
    gb = anp.broadcast_to(g, _shape(x)) if _shape(g) != _shape(x) else g
    c = anp.tensordot(gb, xe, axes=nd) if nd else gb * xe
    return cast_like(c, pdtype)


def _poly_slope(p, x):
    """polyval(polyder(p), x), traced in p and x."""
    n = _shape(p)[0]
    if n <= 1:
        return None
    dp = anp.getitem(p, slice(0, n - 1)) * _powers(n, _dtype(p))[:-1]
    return anp.polyval(dp, x)


def _polyval_vjp_x(g, ans, p, x):
    s = _poly_slope(p, x)
    return None if s is None else unbroadcast(g * s, x)


defvjp_direct(anp.polyval, _polyval_vjp_p, _polyval_vjp_x, save=(0, 1))
defjvp(
    anp.polyval,
    lambda g, ans, p, x: anp.polyval(g, x),
    lambda g, ans, p, x: (lambda s: None if s is None else g * s)(_poly_slope(p, x)),
)


def _vander_exponents(x, N, increasing):
    n = _shape(x)[0] if N is None else N
    return _powers(n, _dtype(x), increasing)


def _vander_vjp(g, ans, x, N=None, increasing=False):
    dtype = _dtype(x)
    e = _vander_exponents(x, N, increasing)
    coef = e * (e > 0)
    xp = anp.power(anp.expand_dims(x, -1), _onp.maximum(e - 1, 0))
    return cast_like(anp.sum(g * coef * xp, axis=-1), dtype)


def _vander_jvp(g, ans, x, N=None, increasing=False):
    e = _vander_exponents(x, N, increasing)
    coef = e * (e > 0)
    return anp.expand_dims(g, -1) * coef * anp.power(anp.expand_dims(x, -1), _onp.maximum(e - 1, 0))


defvjp_direct(anp.vander, _vander_vjp, save=(0,))
defjvp(anp.vander, _vander_jvp)
