"""scipy.signal.convolve as a gradcy primitive (N-d, modes 'full', 'valid' and 'same').

Every mode's output is a window of the full convolution, so the cotangent of each input is the
'valid' convolution of the cotangent, zero-padded back to the full output, with the other input
flipped along every axis. Complex inputs follow autograd's convention (convolution is
bilinear: no conjugation).
"""
from ..extend import defjvp, defvjp_argnums, primitive
from ..numpy import numpy_wrapper as anp
from ..numpy.vjp_util import cast_like
from . import _import_scipy

_sig = _import_scipy("scipy.signal")  # ImportError naming the extra when SciPy is missing

__all__ = ["convolve"]


def _convolve(in1, in2, mode="full", method="auto"):
    return _sig.convolve(in1, in2, mode=mode, method=method)


_convolve.__doc__ = _sig.convolve.__doc__
_convolve.__name__ = "convolve"
convolve = primitive(_convolve, "gradcy.scipy.signal.convolve")


def _mode_method(args, kwargs):
    mode = kwargs.get("mode", args[2] if len(args) > 2 else "full")
    method = kwargs.get("method", args[3] if len(args) > 3 else "auto")
    if mode not in ("full", "valid", "same"):
        raise ValueError(f"convolve: mode must be 'full', 'valid' or 'same', got {mode!r}")
    return mode, method


def _full_padding(shape1, shape2, mode):
    """Per axis, the (before, after) zeros that turn a `mode` output into the full one; None
    for mode 'full'."""
    if mode == "full" or not len(shape1):
        return None
    pads = []
    for n1, n2 in zip(shape1, shape2):
        full = n1 + n2 - 1
        if mode == "valid":
            start, length = min(n1, n2) - 1, abs(n1 - n2) + 1
        else:  # same: centered on in1's length
            start, length = (n2 - 1) // 2, n1
        pads.append((start, full - start - length))
    return pads if any(p != (0, 0) for p in pads) else None


def _convolve_vjp(argnums, ans, args, kwargs):
    in1, in2 = args[0], args[1]
    mode, method = _mode_method(args, kwargs)
    pads = _full_padding(in1.shape, in2.shape, mode)
    dtypes = (in1.dtype, in2.dtype)

    def vjp(g):
        gfull = g if pads is None else anp.pad(g, pads)
        out = []
        for k in argnums:
            other = in2 if k == 0 else in1
            c = convolve(gfull, anp.flip(other), mode="valid", method=method)
            out.append(cast_like(c, dtypes[k]))
        return tuple(out)
    return vjp


def _convolve_jvp_0(g, ans, in1, in2, mode="full", method="auto"):
    return convolve(g, in2, mode=mode, method=method)


def _convolve_jvp_1(g, ans, in1, in2, mode="full", method="auto"):
    return convolve(in1, g, mode=mode, method=method)


defvjp_argnums(convolve, _convolve_vjp, save=(0, 1))
defjvp(convolve, _convolve_jvp_0, _convolve_jvp_1)
