"""scipy.signal.convolve as a gradcy primitive (N-d, modes 'full', 'valid' and 'same'), and
autograd's generalization of it: convolve(A, B, axes, dot_axes, mode).

Every mode's output is a window of the full convolution, so the cotangent of each input is the
'valid' convolution of the cotangent, zero-padded back to the full output, with the other input
flipped along every axis. Complex inputs follow autograd's convention (convolution is
bilinear: no conjugation).
"""

import numpy as _onp

from ..backends import is_array_value, is_lazy
from ..registry import defjvp, defvjp_argnums_direct, primitive
from ..numpy import _wrap as anp
from ..numpy._util import _plain, cast_like
from . import _import_scipy

_sig = _import_scipy("scipy.signal")  # ImportError naming the extra when SciPy is missing

__all__ = ["convolve"]


def _convolve(in1, in2, mode="full", method="auto"):
    return _sig.convolve(in1, in2, mode=mode, method=method)


_convolve.__doc__ = _sig.convolve.__doc__
_convolve.__name__ = "convolve"
_conv = primitive(_convolve, "gradcy.scipy.signal.convolve")


def convolve(A, B, axes=None, dot_axes=((), ()), mode="full", method="auto"):
    """The convolution of A and B along the axis pairs `axes` = ([axes of A], [axes of B]),
    summed over the axis pairs `dot_axes`, with every other axis kept (an outer product):
    the output's axes are A's other axes, then B's, then the convolved ones (autograd's
    signature). With axes=None, every axis of A is convolved with the same axis of B, which is
    scipy.signal.convolve(A, B, mode); scipy's positional form convolve(A, B, mode, method)
    works too. mode: 'full', 'valid' or 'same' (the length of A's axis). A Dask A or B is
    convolved lazily by the axes form (scipy.signal.convolve would compute it); method is then
    not used."""
    if isinstance(axes, str):  # scipy's convolve(in1, in2, mode, method)
        axes, mode = None, axes
        if isinstance(dot_axes, str):
            dot_axes, method = ((), ()), dot_axes
    lazy = is_lazy(_plain(A)) or is_lazy(_plain(B))  # scipy would compute a Dask array
    if axes is None and not (dot_axes[0] or dot_axes[1]) and not lazy:
        if mode == "full" and method == "auto":
            return _conv(A, B)
        return _conv(A, B, mode=mode, method=method)
    return _general_convolve(A, B, axes, dot_axes, mode, method)


def _general_convolve(A, B, axes, dot_axes, mode, method):
    """convolve with axes/dot_axes as a sum over the kernel's offsets of tensordots of shifted
    windows of the (padded) signal with one kernel entry each (what a hand-written im2col
    convolution does), so the heavy work is BLAS and every step is a traced operation whose
    rules are known: the derivatives of any order follow."""
    if mode not in ("full", "valid", "same"):
        raise ValueError(f"convolve: mode must be 'full', 'valid' or 'same', got {mode!r}")
    nA, nB = anp.ndim(A), anp.ndim(B)
    if axes is None:
        if nA != nB:
            raise ValueError(
                f"convolve: axes=None needs inputs of the same ndim, got {nA} and {nB}"
            )
        axes = (list(range(nA)), list(range(nB)))
    convA, convB = [a % nA for a in axes[0]], [b % nB for b in axes[1]]
    dotA, dotB = [a % nA for a in dot_axes[0]], [b % nB for b in dot_axes[1]]
    if len(convA) != len(convB) or len(dotA) != len(dotB):
        raise ValueError("convolve: axes and dot_axes must pair axes of A with axes of B")
    keepA = [a for a in range(nA) if a not in convA + dotA]
    keepB = [b for b in range(nB) if b not in convB + dotB]
    shA, shB = anp.shape(A), anp.shape(B)
    for a, b in zip(dotA, dotB):
        if shA[a] != shB[b]:
            raise ValueError(
                f"convolve: summed axes {a} of A and {b} of B differ in length "
                f"({shA[a]} vs {shB[b]})"
            )
    n = [shA[a] for a in convA]
    m = [shB[b] for b in convB]
    swap = mode == "valid" and not all(i >= j for i, j in zip(n, m))
    if swap and not all(i <= j for i, j in zip(n, m)):
        raise ValueError(
            "convolve: in 'valid' mode one array must be at least as large as "
            "the other along every convolved axis"
        )
    # signal S = (keep, dot, conv) and kernel K = (keep, dot, conv); the longer one slides
    S = anp.transpose(A, keepA + dotA + convA)
    K = anp.transpose(B, keepB + dotB + convB)
    if swap:
        S, K, n, m = K, S, m, n
    ks, kk, nd, nc = (
        (len(keepB) if swap else len(keepA)),
        (len(keepA) if swap else len(keepB)),
        len(dotA),
        len(convA),
    )
    if mode != "valid":
        S = anp.pad(S, [(0, 0)] * (ks + nd) + [(j - 1, j - 1) for j in m])
    # windows: (keep, dot, output positions..., kernel offsets...), a view of S
    W = _windows(S, tuple(m))
    Kf = K[tuple([slice(None)] * (kk + nd) + [slice(None, None, -1)] * nc)]
    w_axes = list(range(ks + nd + nc, ks + nd + 2 * nc))
    total = anp.tensordot(
        W, Kf, axes=(list(range(ks, ks + nd)) + w_axes, list(range(kk, kk + nd + nc)))
    )
    # total: (signal keep, conv, kernel keep) -> (A keep, B keep, conv)
    conv_axes = list(range(ks, ks + nc))
    s_keep, k_keep = list(range(ks)), list(range(ks + nc, ks + nc + kk))
    total = anp.transpose(total, (k_keep + s_keep if swap else s_keep + k_keep) + conv_axes)
    if mode == "same":
        lead = [slice(None)] * (len(keepA) + len(keepB))
        total = total[tuple(lead + [slice((j - 1) // 2, (j - 1) // 2 + i) for i, j in zip(n, m)])]
    return total


def _windows_raw(S, m):
    """The sliding windows of size m over the trailing len(m) axes of S: a read-only view of
    shape S.shape[:-k] + (output positions...) + m."""
    k = len(m)
    return _onp.lib.stride_tricks.sliding_window_view(S, m, axis=tuple(range(-k, 0)))


def _unwindows_raw(G, shape, m):
    """The adjoint of _windows: an array of `shape` where each window of G adds into the
    positions it was taken from."""
    k = len(m)
    lengths = G.shape[len(shape) - k : len(shape)]
    if is_array_value(G):
        # Dask, CuPy: a sum of zero-padded windows, in G's library (Dask stays lazy)
        lead = [(0, 0)] * (len(shape) - k)
        return sum(
            _onp.pad(
                G[(Ellipsis,) + (slice(None),) * k + offset],
                lead + [(w, n - w - L) for w, L, n in zip(offset, lengths, shape[-k:])],
            )
            for offset in _onp.ndindex(*m)
        )
    out = _onp.zeros(shape, _onp.result_type(G))
    for offset in _onp.ndindex(*m):
        region = (Ellipsis,) + tuple(slice(w, w + L) for w, L in zip(offset, lengths))
        out[region] += G[(Ellipsis,) + tuple(slice(None) for _ in lengths) + offset]
    return out


_windows = primitive(_windows_raw, "gradcy.scipy.signal.windows")
_unwindows = primitive(_unwindows_raw, "gradcy.scipy.signal.unwindows")
# two linear maps, each the other's adjoint
defvjp_argnums_direct(
    _windows,
    lambda argnums, g, g_owned, ans, args, kwargs: (_unwindows(g, _onp.shape(args[0]), args[1]),),
    save=(),
)
defvjp_argnums_direct(
    _unwindows, lambda argnums, g, g_owned, ans, args, kwargs: (_windows(g, args[2]),), save=()
)
defjvp(_windows, lambda g, ans, S, m: _windows(g, m))
defjvp(_unwindows, lambda g, ans, G, shape, m: _unwindows(g, shape, m))


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


def _convolve_vjp(argnums, g, g_owned, ans, args, kwargs):
    in1, in2 = args[0], args[1]
    mode, method = _mode_method(args, kwargs)
    pads = _full_padding(in1.shape, in2.shape, mode)
    dtypes = (in1.dtype, in2.dtype)
    gfull = g if pads is None else anp.pad(g, pads)
    out = []
    for k in argnums:
        other = in2 if k == 0 else in1
        c = _conv(gfull, anp.flip(other), mode="valid", method=method)
        out.append(cast_like(c, dtypes[k]))
    return tuple(out)


def _convolve_jvp_0(g, ans, in1, in2, mode="full", method="auto"):
    return _conv(g, in2, mode=mode, method=method)


def _convolve_jvp_1(g, ans, in1, in2, mode="full", method="auto"):
    return _conv(in1, g, mode=mode, method=method)


defvjp_argnums_direct(_conv, _convolve_vjp, save=(0, 1))
defjvp(_conv, _convolve_jvp_0, _convolve_jvp_1)


def __getattr__(name):
    # autograd's rule names for this module (grad_*, ...), added on first lookup
    from gradcy._autograd_rules import autograd_name

    return autograd_name(__name__, name)
