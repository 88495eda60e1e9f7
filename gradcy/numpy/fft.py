"""VJPs and JVPs of numpy.fft.

Every transform is linear, so no rule keeps an array: only shapes, dtypes and the non-array
arguments (n, s, axis, axes, norm).

Complex values follow autograd's convention (a cotangent pairs with a tangent through the real
part of their product, no conjugate), so the VJP of a C-linear map A is its plain transpose A^T:
- fft/ifft/fftn...: the DFT matrix is symmetric, so the VJP is the same transform of g, then the
  transpose of the zero-pad/truncation to n (a truncation/zero-pad back to the input's shape);
- real inputs take the real part of that (gradients keep the input's dtype);
- rfft* (real -> half spectrum) and irfft* (half spectrum -> real) are only R-linear; their
  transposes are the opposite half-spectrum transform with the norm direction swapped, the
  conjugate, and a weight along the last axis (1/2 or 2 on the bins that stand for two).
"""

import operator as _operator

import numpy.fft as _npfft
import numpy as _onp

# the rule machinery under private names: this module's public names are numpy.fft's
from .._core import Box as _Box
from ..registry import defjvp as _defjvp, defvjp_direct as _defvjp_direct, primitive
from . import _wrap as _anp
from ._wrap import wrap_namespace
from ._util import cast_like as _cast_like, shape_dtype as _shape_dtype
from ..backends import is_array_value as _is_array_value

wrap_namespace(_npfft.__dict__, globals(), "gradcy.numpy.fft")

_SWAP = {None: "forward", "backward": "forward", "ortho": "ortho", "forward": "backward"}


def _swap(norm):
    """The norm of the other direction with the same scaling (what numpy's hfft uses)."""
    try:
        return _SWAP[norm]
    except (KeyError, TypeError):
        raise ValueError(
            f'Invalid norm value {norm!r}; should be "backward", "ortho" or "forward".'
        ) from None


# =============================================================================
# Zero-padding / truncation: linear, its own transpose up to the shapes
# =============================================================================
def _truncate_pad_raw(x, shape):
    """x cut or zero-padded (at the end of each axis) to `shape`."""
    if type(x) is _Box:  # traced one level up (higher-order differentiation)
        return _truncate_pad(x, shape)
    if _is_array_value(x):  # Dask, CuPy: a slice and a pad, in x's library
        if tuple(x.shape) == tuple(shape):
            return x
        cut = x[tuple(slice(0, min(a, b)) for a, b in zip(x.shape, shape))]
        return _onp.pad(cut, [(0, s - c) for s, c in zip(shape, cut.shape)])
    x = _onp.asarray(x)
    if x.shape == shape:
        return x
    out = _onp.zeros(shape, x.dtype)
    idx = tuple(slice(0, min(a, b)) for a, b in zip(x.shape, shape))
    out[idx] = x[idx]
    return out


_truncate_pad = primitive(_truncate_pad_raw, "gradcy.numpy.fft._truncate_pad")
_defvjp_direct(
    _truncate_pad, lambda g, ans, x, shape: _truncate_pad(g, _shape_dtype(x)[0]), None, save=()
)
_defjvp(_truncate_pad, lambda g, ans, x, shape: _truncate_pad(g, shape), None)


def _fit(w, shape, dtype):
    """The transpose of the pad/truncation to the transform's length, then the cast to the
    input's dtype (the real part for a real input)."""
    if w.shape != shape:
        w = _truncate_pad(w, shape)
    return _cast_like(w, dtype)


# =============================================================================
# Argument parsing (metadata only)
# =============================================================================
def _norm_axes(axes, ndim):
    out = []
    for a in axes:
        a = _operator.index(a)
        if not -ndim <= a < ndim:
            raise _onp.exceptions.AxisError(a, ndim)
        out.append(a % ndim)
    return tuple(out)


def _args_1d(ndim, n=None, axis=-1, norm=None, out=None):
    return _norm_axes((axis,), ndim), (n,), norm


def _args_2d(ndim, s=None, axes=(-2, -1), norm=None, out=None):
    return _args_nd(ndim, s, axes, norm)


def _args_nd(ndim, s=None, axes=None, norm=None, out=None):
    if axes is None:
        axes = range(ndim) if s is None else range(-len(s), 0)
    axes = _norm_axes(axes, ndim)
    if s is None:
        s = (None,) * len(axes)
    return axes, tuple(s), norm


_PARSERS = {"1": _args_1d, "2": _args_2d, "n": _args_nd}


# =============================================================================
# Complex transforms: fft, ifft, fft2, ifft2, fftn, ifftn
# =============================================================================
def _complex_rule(prim, kind, one_d):
    parse = _PARSERS[kind]

    def rule(g, ans, x, *args, **kwargs):
        shape, dtype = _shape_dtype(x)
        axes, s, norm = parse(len(shape), *args, **kwargs)
        if len(set(axes)) == len(axes):
            # F = F^T for every norm; the pads/truncations commute with it
            return _fit(
                prim(g, axes=axes, norm=norm) if kind != "1" else prim(g, axis=axes[0], norm=norm),
                shape,
                dtype,
            )
        # a repeated axis: numpy applies the 1-D transforms from the last axis to the first,
        # each padding/truncating what the previous one produced; transpose them in reverse
        cur, lengths = list(shape), [0] * len(axes)
        for i in range(len(axes) - 1, -1, -1):
            lengths[i] = cur[axes[i]]
            cur[axes[i]] = cur[axes[i]] if s[i] is None or s[i] == -1 else s[i]
        for i, ax in enumerate(axes):
            g = one_d(g, axis=ax, norm=norm)
            tshape = list(g.shape)
            tshape[ax] = lengths[i]
            if tuple(tshape) != g.shape:
                g = _truncate_pad(g, tuple(tshape))
        return _cast_like(g, dtype)

    return rule


for _prim, _kind, _one in [
    (fft, "1", fft),
    (ifft, "1", ifft),
    (fft2, "2", fft),
    (ifft2, "2", ifft),
    (fftn, "n", fft),
    (ifftn, "n", ifft),
]:
    _defvjp_direct(_prim, _complex_rule(_prim, _kind, _one), save=())


# =============================================================================
# Real transforms: rfft*, irfft*, hfft, ihfft
# =============================================================================
def _half_weights(n, m, ax, ndim, dtype, pair):
    """Along axis `ax` (length m of the half spectrum of a length-n signal): 1 at the bins that
    stand for themselves alone (0, and n/2 for even n), `pair` at those standing for a bin and
    its mirror image; shaped to broadcast over an ndim array."""
    w = _onp.full(m, pair, dtype=dtype)
    w[0] = 1
    if n % 2 == 0 and m > 1:
        w[m - 1] = 1
    return w.reshape((m,) + (1,) * (ndim - 1 - ax))


def _no_repeats(axes, name):
    if len(set(axes)) != len(axes):
        raise NotImplementedError(f"gradcy: no gradient for {name} over a repeated axis")


def _real_dtype(dtype):
    return _onp.finfo(dtype).dtype


def _rfft_T(g, shape, dtype, axes, n, norm, name):
    """The VJP of the real-to-half-spectrum transform over `axes` (length n on the last one) of
    an input of `shape`/`dtype`: Re(A^T g) = irfftn(conj(g) * w) with the norm direction
    swapped, w = 1/2 on the paired bins."""
    _no_repeats(axes, name)
    if n is None or n == -1:
        n = shape[axes[-1]]
    gshape = g.shape
    nd = len(gshape)
    m = gshape[axes[-1]]
    w = _half_weights(n, m, axes[-1], nd, _real_dtype(g.dtype), 0.5)
    h = _anp.conjugate(g) * w
    s = [gshape[a] for a in axes]
    s[-1] = n
    return _fit(irfftn(h, s=s, axes=axes, norm=_swap(norm)), shape, dtype)


def _irfft_T(g, shape, dtype, axes, norm, name):
    """The VJP of the half-spectrum-to-real transform over `axes` of an input of
    `shape`/`dtype`: w * conj(rfftn(g)) with the norm direction swapped, w = 2 on the paired
    bins."""
    _no_repeats(axes, name)
    gshape = g.shape
    n = gshape[axes[-1]]
    r = _anp.conjugate(rfftn(g, axes=axes, norm=_swap(norm)))
    w = _half_weights(n, n // 2 + 1, axes[-1], len(gshape), _real_dtype(r.dtype), 2.0)
    return _fit(r * w, shape, dtype)


def _rfft_rule(kind):
    parse = _PARSERS[kind]

    def rule(g, ans, x, *args, **kwargs):
        shape, dtype = _shape_dtype(x)
        axes, s, norm = parse(len(shape), *args, **kwargs)
        return _rfft_T(g, shape, dtype, axes, s[-1], norm, "rfft")

    return rule


def _irfft_rule(kind):
    parse = _PARSERS[kind]

    def rule(g, ans, x, *args, **kwargs):
        shape, dtype = _shape_dtype(x)
        axes, s, norm = parse(len(shape), *args, **kwargs)
        return _irfft_T(g, shape, dtype, axes, norm, "irfft")

    return rule


for _kind, _r, _ir in [("1", rfft, irfft), ("2", rfft2, irfft2), ("n", rfftn, irfftn)]:
    _defvjp_direct(_r, _rfft_rule(_kind), save=())
    _defvjp_direct(_ir, _irfft_rule(_kind), save=())


def _hfft_rule(g, ans, x, *args, **kwargs):
    # hfft(a, norm) = irfft(conj(a), norm=swap(norm)); conj is its own transpose
    shape, dtype = _shape_dtype(x)
    axes, s, norm = _args_1d(len(shape), *args, **kwargs)
    r = _irfft_T(g, shape, dtype, axes, _swap(norm), "hfft")
    return _anp.conjugate(r) if dtype.kind == "c" else r


def _ihfft_rule(g, ans, x, *args, **kwargs):
    # ihfft(a, norm) = conj(rfft(a, norm=swap(norm)))
    shape, dtype = _shape_dtype(x)
    axes, s, norm = _args_1d(len(shape), *args, **kwargs)
    return _rfft_T(_anp.conjugate(g), shape, dtype, axes, s[-1], _swap(norm), "ihfft")


_defvjp_direct(hfft, _hfft_rule, save=())
_defvjp_direct(ihfft, _ihfft_rule, save=())


# =============================================================================
# Shifts: rolls, transposed by the opposite shift
# =============================================================================
_defvjp_direct(fftshift, lambda g, ans, x, axes=None: ifftshift(g, axes), save=())
_defvjp_direct(ifftshift, lambda g, ans, x, axes=None: fftshift(g, axes), save=())


# =============================================================================
# JVPs: each transform applied to the tangent (with the same non-array arguments)
# =============================================================================
def _linear_jvp(prim):
    def jvp(g, ans, x, *args, **kwargs):
        if kwargs and "out" in kwargs:
            kwargs = {k: v for k, v in kwargs.items() if k != "out"}
        return prim(g, *args, **kwargs)

    return jvp


for _prim in [
    fft,
    ifft,
    fft2,
    ifft2,
    fftn,
    ifftn,
    rfft,
    irfft,
    rfft2,
    irfft2,
    rfftn,
    irfftn,
    hfft,
    ihfft,
    fftshift,
    ifftshift,
]:
    _defjvp(_prim, _linear_jvp(_prim))

del _prim, _kind, _one, _r, _ir
