"""autograd's rule helpers (grad_np_sum, dot_vjp_0, fwd_grad_sort, unbroadcast_f, ...), which
autograd programs import to write their own rules, as views of gradcy's registered rules.

A view calls the rule registered on the gradcy primitive at call time, in autograd's calling
convention: a VJP maker `maker(ans, *args, **kwargs) -> vjp(g)`, an argnum maker
`maker(argnum, ans, args, kwargs) -> vjp(g)`, a JVP `rule(g, ans, *args, **kwargs)`. The
small array helpers (unbroadcast, balanced_eq, repeat_to_match_shape, ...) are written with
gradcy.numpy, so they are differentiable.

install(), called once at the end of gradcy/__init__.py, adds autograd's names to each gradcy
module whose autograd counterpart has them (gradcy.numpy.numpy_vjps, gradcy.misc.flatten, ...):
at once to the modules gradcy imports. The gradcy.scipy modules (which import SciPy, so gradcy
imports them only on demand) serve theirs through a module __getattr__ of their own, which calls
autograd_name here on the first lookup of a name they lack: gradcy installs no import hook.
"""

import builtins
import sys
import warnings

import numpy as _onp
from numpy.lib.stride_tricks import as_strided

from . import _core
from ._pytree import flatten
from ._reverse_mode import make_vjp
from ._core import Box
from ._rules import ArgnumVJP
from .builtins import tuple as atuple, type as atype
from .core import JVPNode, VJPNode
from .numpy import _wrap as _w, fft as _fft_module, linalg as _la
from .numpy._util import balanced_eq  # noqa: F401  (_add_names reads it from globals())
from .numpy._util import unbroadcast as _unbroadcast
from .numpy._wrap import wrap_namespace
from .numpy.numpy_boxes import ArrayBox
from .test_util import check_grads
from .registry import def_linear, defjvp, defjvp_argnum, defvjp, defvjp_argnum, defvjp_argnums
from .registry import primitive
from .tracer import register_notrace
from .util import func
from .vspace import SparseObject, vspace

__all__ = ["vjp_maker", "vjp_argnum_maker", "jvp_rule", "jvp_argnum_rule", "install"]


# =============================================================================
# Views of registered rules in autograd's calling conventions
# =============================================================================
def _vjp_of(prim, argnum, ans, args, kwargs):
    """vjp(g) of argument argnum from the rule registered on prim (read now)."""
    rule = prim.vjp
    if isinstance(rule, ArgnumVJP) and argnum not in rule.rules:
        raise _core.MissingVJPError(
            f"{prim.name} has no VJP for argument {argnum}; register one with gradcy.extend.defvjp"
        )

    def vjp(g):
        out = rule((argnum,), g, ans, tuple(args), kwargs)[0]
        return vspace(args[argnum]).zeros() if out is None else out

    return vjp


def vjp_maker(prim, argnum=0):
    """maker(ans, *args, **kwargs) -> vjp(g): prim's VJP for argument argnum."""

    def maker(ans, *args, **kwargs):
        return _vjp_of(prim, argnum, ans, args, kwargs)

    maker.__name__ = f"vjp_of_{prim.__name__}_{argnum}"
    return maker


def vjp_argnum_maker(prim, offset=0):
    """maker(argnum, ans, args, kwargs) -> vjp(g): prim's VJP for any argument (offset: the
    number of leading arguments autograd's form has that gradcy's primitive does not)."""

    def maker(argnum, ans, args, kwargs):
        return _vjp_of(prim, argnum - offset, ans, tuple(args)[offset:], kwargs)

    return maker


def _jvp_of(prim, argnum, g, ans, args, kwargs):
    if prim.jvp_argnums is not None:
        return prim.jvp_argnums((argnum,), (g,), ans, tuple(args), kwargs)
    if argnum not in prim.jvpmakers:
        raise _core.MissingJVPError(
            f"{prim.name} has no JVP for argument {argnum}; register one with gradcy.extend.defjvp"
        )
    rule = prim.jvpmakers[argnum]
    if rule is None:
        return vspace(ans).zeros()
    return rule(g, ans, *args, **kwargs)


def jvp_rule(prim, argnum=0):
    """rule(g, ans, *args, **kwargs): prim's JVP for argument argnum."""

    def rule(g, ans, *args, **kwargs):
        return _jvp_of(prim, argnum, g, ans, args, kwargs)

    return rule


def jvp_argnum_rule(prim, offset=0):
    """rule(argnum, g, ans, args, kwargs): prim's JVP for any argument."""

    def rule(argnum, g, ans, args, kwargs):
        return _jvp_of(prim, argnum - offset, g, ans, tuple(args)[offset:], kwargs)

    return rule


def _stub(shape, dtype):
    """A read-only array of zeros of that shape and dtype that takes no memory (stands for an
    argument whose values a rule does not read)."""
    return _onp.broadcast_to(_onp.zeros((), dtype), tuple(shape))


def _meta_shape_dtype(meta):
    """(shape, dtype) of autograd's metadata tuple (shape, ndim, dtype, iscomplex)."""
    return tuple(meta[0]), meta[2]


# =============================================================================
# Array helpers of autograd.numpy.numpy_vjps / numpy_jvps
# =============================================================================
def match_complex(target, x):
    """x as target's kind: the real part when target is real; x's sum over extra leading axes
    is not taken (x has target's shape)."""
    target_iscomplex = _onp.iscomplexobj(
        _core.box_value(target) if _core.is_box(target) else target
    )
    x_iscomplex = _onp.iscomplexobj(_core.box_value(x) if _core.is_box(x) else x)
    if x_iscomplex and not target_iscomplex:
        return _w.real(x)
    if not x_iscomplex and target_iscomplex:
        return x + 0j
    return x


def unbroadcast(x, target_meta, broadcast_idx=0):
    """x summed over the axes broadcasting added to a value with autograd's metadata tuple
    target_meta = (shape, ndim, dtype, iscomplex), and made real if that value is."""
    shape, dtype = _meta_shape_dtype(target_meta)
    out = _unbroadcast(x, _stub(shape, dtype))
    return match_complex(_stub((), dtype), out)


def unbroadcast_f(target, f):
    """lambda g: unbroadcast(f(g), metadata(target))."""
    meta = metadata(target)
    return lambda g: unbroadcast(f(g), meta)


def metadata(A):
    return _onp.shape(A), _onp.ndim(A), _onp.result_type(A), _onp.iscomplexobj(A)


def unbroadcast_einsum(x, target_meta, subscript):
    """x summed over the axes that an einsum operand's ellipsis broadcast (subscript: the
    operand's subscripts)."""
    if "..." not in subscript:
        return x
    shape = tuple(target_meta[0])
    if subscript == "..." or subscript.index("...") == 0:
        return unbroadcast(x, target_meta)
    if subscript.index("...") == len(subscript) - 3:
        nd = len(shape)
        return _w.swapaxes(
            unbroadcast(_w.swapaxes(x, 0, -1), (shape[::-1][:nd], nd) + tuple(target_meta[2:])),
            0,
            -1,
        )
    start = subscript.index("...")
    moved = _w.moveaxis(x, start, 0)
    meta = ((shape[start],) + shape[:start] + shape[start + 1 :],) + tuple(target_meta[1:])
    return _w.moveaxis(unbroadcast(moved, meta), 0, start)


def replace_zero(x, val):
    """x with its zeros replaced by val."""
    return _w.where(x, x, val)


def repeat_to_match_shape(g, shape, dtype, axis, keepdims):
    """(g broadcast back over the reduced axes of an array of `shape`, the number of elements
    each entry of g stands for)."""
    if shape == ():
        return g, 1
    axis = list(axis) if isinstance(axis, (tuple, list)) else axis
    new_shape = _onp.array(shape)
    new_shape[axis] = 1
    num_reps = int(_onp.prod(_onp.array(shape)[axis]))
    return _w.broadcast_to(_w.reshape(g, tuple(new_shape)), shape), num_reps


def reverse_axis(x, axis):
    """x reversed along axis."""
    return _w.flip(x, axis)


def unpermuter(g, permutation):
    """g with the permutation (along the last axis) undone."""
    unsort = _onp.zeros(len(permutation), dtype=int)
    unsort[permutation] = _onp.arange(len(permutation))
    return _w.take(g, unsort, axis=-1) if _onp.ndim(g) else g


def untake(x, idx, vs):
    """The element of vs (a vector space) that is x at idx and zero elsewhere (repeated indices
    add up)."""
    if isinstance(idx, list) and (len(idx) == 0 or not isinstance(idx[0], slice)):
        idx = _onp.array(idx, dtype="int64")
    return _w.at(_w.zeros(vs.shape, vs.dtype))[idx].add(x)


def wrapped_reshape(x, *args, **kwargs):
    """reshape(x, shape) with the shape also given as separate integers."""
    if len(args) > 1 or (args and isinstance(args[0], (int, _onp.integer))):
        return _w.reshape(x, args, **kwargs)
    return _w.reshape(x, *args, **kwargs)


def broadcast(x, target):
    """x broadcast to target's shape, with target's kind (real/complex)."""
    target_shape, target_ndim, _, target_iscomplex = metadata(target)
    while _w.ndim(x) < target_ndim:
        x = _w.expand_dims(x, 0)
    for axis, size in enumerate(_w.shape(x)):
        if size == 1:
            x = _w.repeat(x, target_shape[axis], axis=axis)
    if target_iscomplex and not _w.iscomplexobj(x):
        x = x + 0j
    return x


def atleast_jvpmaker(fun):
    """The JVP of atleast_1d/2d/3d (of one or several arrays): fun of the tangents."""

    def jvp(g, ans, *arys):
        if len(arys) > 1:
            raise NotImplementedError("Can't handle multiple arguments yet.")
        return fun(g)

    return jvp


# =============================================================================
# Adjoint products of dot, matmul and tensordot
# =============================================================================
def _vjp_at(prim, argnum, args, G, **kwargs):
    return _vjp_of(prim, argnum, _stub(_onp.shape(G), _onp.result_type(G)), args, kwargs)(G)


def dot_adjoint_0(B, G, A_meta, B_meta):
    """The cotangent of A in dot(A, B) for output cotangent G."""
    return _vjp_at(_w.dot, 0, (_stub(*_meta_shape_dtype(A_meta)), B), G)


def dot_adjoint_1(A, G, A_meta, B_meta):
    """The cotangent of B in dot(A, B) for output cotangent G."""
    return _vjp_at(_w.dot, 1, (A, _stub(*_meta_shape_dtype(B_meta))), G)


def matmul_adjoint_0(B, G, A_meta, B_ndim):
    """The cotangent of A in matmul(A, B) for output cotangent G."""
    return _vjp_at(_w.matmul, 0, (_stub(*_meta_shape_dtype(A_meta)), B), G)


def matmul_adjoint_1(A, G, A_ndim, B_meta):
    """The cotangent of B in matmul(A, B) for output cotangent G."""
    return _vjp_at(_w.matmul, 1, (A, _stub(*_meta_shape_dtype(B_meta))), G)


def _tensordot_axes(axes, A_ndim, B_ndim):
    if isinstance(axes, (int, _onp.integer)):
        return list(range(A_ndim - axes, A_ndim)), list(range(axes))
    a, b = axes
    a = [a] if isinstance(a, (int, _onp.integer)) else list(a)
    b = [b] if isinstance(b, (int, _onp.integer)) else list(b)
    return [i % A_ndim for i in a], [i % B_ndim for i in b]


def tensordot_adjoint_0(B, G, axes, A_ndim, B_ndim):
    """The cotangent of A (of ndim A_ndim) in tensordot(A, B, axes) for output cotangent G."""
    a_ax, b_ax = _tensordot_axes(axes, A_ndim, B_ndim)
    free = iter(_onp.shape(G)[: A_ndim - len(a_ax)])
    contracted = dict(zip(a_ax, (_onp.shape(B)[i] for i in b_ax)))
    shape = [contracted[i] if i in contracted else next(free) for i in range(A_ndim)]
    A = _stub(shape, _onp.result_type(G))
    return _vjp_at(_w.tensordot, 0, (A, B), G, axes=axes)


def tensordot_adjoint_1(A, G, axes, A_ndim, B_ndim):
    """The cotangent of B (of ndim B_ndim) in tensordot(A, B, axes) for output cotangent G."""
    a_ax, b_ax = _tensordot_axes(axes, A_ndim, B_ndim)
    free = iter(_onp.shape(G)[A_ndim - len(a_ax) :])
    contracted = dict(zip(b_ax, (_onp.shape(A)[i] for i in a_ax)))
    shape = [contracted[i] if i in contracted else next(free) for i in range(B_ndim)]
    B = _stub(shape, _onp.result_type(G))
    return _vjp_at(_w.tensordot, 1, (A, B), G, axes=axes)


# =============================================================================
# autograd.numpy.fft's helpers
# =============================================================================
def check_no_repeated_axes(axes):
    if len(set(axes)) != len(axes):
        raise NotImplementedError("FFT gradient for repeated axes not implemented.")


def check_even_shape(shape):
    """autograd's rfft rules need an even last axis; gradcy's do not (kept for programs that
    call it)."""
    if shape[-1] % 2 != 0:
        raise NotImplementedError(
            "Real FFT gradient for odd lengthed last axes is not implemented."
        )


def get_fft_args(a, d=None, axis=-1, norm=None, *args, **kwargs):
    """(axes, lengths, norm) of a 1-d fft call."""
    return [axis], (None if d is None else [d]), norm


def get_fft2_args(a, s=None, axes=(-2, -1), norm=None, *args, **kwargs):
    return axes, s, norm


def get_fftn_args(a, s=None, axes=None, norm=None, *args, **kwargs):
    if axes is None:
        axes = list(range(_onp.ndim(a)))
    return axes, s, norm


def truncate_pad(x, shape):
    """x cut or zero-padded (at the end of each axis) to `shape`."""
    pads = [(0, max(0, n - m)) for n, m in zip(shape, _w.shape(x))]
    return _w.pad(x, pads, "constant")[tuple(slice(n) for n in shape)]


def make_rfft_factors(axes, resshape, facshape, normshape, norm):
    """The weights of an rfft output's entries in its inner products: 2 for entries that
    stand for a conjugate pair, 1 for the zero frequency (and Nyquist when the half-spectrum
    covers it), divided by the transform size when norm is None."""
    fac = _onp.full(resshape, 2.0)
    index = [slice(None)] * len(resshape)
    last = axes[-1]
    index[last] = [0, facshape[-1] - 1] if facshape[-1] <= resshape[last] else [0]
    fac[tuple(index)] = 1.0
    if norm is None:
        fac /= float(_onp.prod(normshape))
    return fac


_RFFT_FORWARD = {
    "irfft": "rfft",
    "irfft2": "rfft2",
    "irfftn": "rfftn",
    "rfft": "irfft",
    "rfft2": "irfft2",
    "rfftn": "irfftn",
}


def fft_grad(get_args, fft_fun, ans, x, *args, **kwargs):
    """The VJP of fft_fun (fft, ifft, fft2, ...) at x."""
    return _vjp_of(fft_fun, 0, ans, (x,) + args, kwargs)


def _fft_named(name):
    return getattr(_fft_module, name)


def rfft_grad(get_args, irfft_fun, ans, x, *args, **kwargs):
    """The VJP of the real transform whose inverse is irfft_fun (rfft for irfft, ...)."""
    return _vjp_of(_fft_named(_RFFT_FORWARD[irfft_fun.__name__]), 0, ans, (x,) + args, kwargs)


def irfft_grad(get_args, rfft_fun, ans, x, *args, **kwargs):
    """The VJP of the inverse real transform of rfft_fun (irfft for rfft, ...)."""
    return _vjp_of(_fft_named(_RFFT_FORWARD[rfft_fun.__name__]), 0, ans, (x,) + args, kwargs)


# =============================================================================
# Per module: autograd's names there
# =============================================================================
def _numpy_vjps():
    names = dict(
        ArrayBox=ArrayBox,
        SparseObject=SparseObject,
        VJPNode=VJPNode,
        defvjp=defvjp,
        defvjp_argnum=defvjp_argnum,
        func=func,
        primitive=primitive,
        register_notrace=register_notrace,
        vspace=vspace,
    )
    names.update(
        nograd_functions=[getattr(_w, n) for n in sorted(_w.NONDIFFERENTIABLE) if hasattr(_w, n)]
    )
    for name, prim in [
        ("grad_np_sum", _w.sum),
        ("grad_np_mean", _w.mean),
        ("grad_np_prod", _w.prod),
        ("grad_np_var", _w.var),
        ("grad_np_std", _w.std),
        ("grad_chooser", _w.max),
        ("grad_np_cumsum", _w.cumsum),
        ("grad_transpose", _w.transpose),
        ("grad_repeat", _w.repeat),
        ("grad_tile", _w.tile),
        ("grad_rollaxis", _w.rollaxis),
        ("grad_diff", _w.diff),
        ("grad_gradient", _w.gradient),
        ("grad_broadcast_to", _w.broadcast_to),
        ("grad_sort", _w.sort),
        ("grad_partition", _w.partition),
        ("grad_reshape_list", _w.atleast_1d),
        ("pad_vjp", _w.pad),
        ("np_abs_vjp", _w.absolute),
        ("np_conj_vjp", _w.conjugate),
        ("dot_vjp_0", _w.dot),
        ("matmul_vjp_0", _w.matmul),
        ("tensordot_vjp_0", _w.tensordot),
    ]:
        names[name] = vjp_maker(prim, 0)
    for name, prim in [
        ("dot_vjp_1", _w.dot),
        ("matmul_vjp_1", _w.matmul),
        ("tensordot_vjp_1", _w.tensordot),
    ]:
        names[name] = vjp_maker(prim, 1)
    names.update(
        grad_inner=_argnum_form(_w.inner),
        grad_kron=_argnum_form(_w.kron),
        grad_concatenate_args=vjp_argnum_maker(_w.concatenate_args),
        grad_einsum=vjp_argnum_maker(_w.einsum),
        array_from_args_gradmaker=vjp_argnum_maker(_w.array_from_args, offset=2),
    )

    def array_from_scalar_or_array_gradmaker(ans, array_args, array_kwargs, scarray):
        return lambda g: unbroadcast_f(scarray, lambda g: g)(g)

    names["array_from_scalar_or_array_gradmaker"] = array_from_scalar_or_array_gradmaker
    return names


def _argnum_form(prim):
    """autograd's grad_inner / grad_kron form: maker(argnum, ans, A, B) -> vjp(g)."""

    def maker(argnum, ans, *args, **kwargs):
        return _vjp_of(prim, argnum, ans, args, kwargs)

    return maker


_SHARED_VJPS = (
    "dot_adjoint_0",
    "dot_adjoint_1",
    "matmul_adjoint_0",
    "matmul_adjoint_1",
    "tensordot_adjoint_0",
    "tensordot_adjoint_1",
    "match_complex",
    "unbroadcast",
    "unbroadcast_f",
    "unbroadcast_einsum",
    "balanced_eq",
    "replace_zero",
    "repeat_to_match_shape",
    "reverse_axis",
    "unpermuter",
    "untake",
    "wrapped_reshape",
)


def _numpy_jvps():
    names = dict(
        ArrayBox=ArrayBox,
        JVPNode=JVPNode,
        def_linear=def_linear,
        defjvp=defjvp,
        defjvp_argnum=defjvp_argnum,
        func=func,
        register_notrace=register_notrace,
        vspace=vspace,
        atleast_jvpmaker=atleast_jvpmaker,
        broadcast=broadcast,
    )
    for k in (
        "balanced_eq",
        "replace_zero",
        "untake",
        "match_complex",
        "dot_adjoint_0",
        "dot_adjoint_1",
        "tensordot_adjoint_0",
        "tensordot_adjoint_1",
    ):
        names[k] = globals()[k]
    names["nograd_functions"] = _numpy_vjps()["nograd_functions"]
    for name, prim in [
        ("forward_grad_np_var", _w.var),
        ("forward_grad_np_std", _w.std),
        ("fwd_grad_chooser", _w.max),
        ("fwd_grad_sort", _w.sort),
        ("fwd_grad_partition", _w.partition),
        ("np_abs_jvp", _w.absolute),
        ("np_conj_jvp", _w.conjugate),
    ]:
        names[name] = jvp_rule(prim, 0)
    names["fwd_grad_concatenate_args"] = jvp_argnum_rule(_w.concatenate_args)
    return names


def _fft():
    return dict(
        defvjp=defvjp,
        primitive=primitive,
        vspace=vspace,
        fft_grad=fft_grad,
        rfft_grad=rfft_grad,
        irfft_grad=irfft_grad,
        truncate_pad=truncate_pad,
        check_no_repeated_axes=check_no_repeated_axes,
        check_even_shape=check_even_shape,
        get_fft_args=get_fft_args,
        get_fft2_args=get_fft2_args,
        get_fftn_args=get_fftn_args,
        make_rfft_factors=make_rfft_factors,
        match_complex=match_complex,
    )


def _linalg(la):
    def grad_cholesky(L, A):
        return _vjp_of(la.cholesky, 0, L, (A,), {})

    def grad_svd(usv_, a, full_matrices=True, compute_uv=True):
        return _vjp_of(
            la.svd, 0, usv_, (a,), dict(full_matrices=full_matrices, compute_uv=compute_uv)
        )

    return dict(
        defjvp=defjvp,
        defvjp=defvjp,
        grad_cholesky=grad_cholesky,
        grad_svd=grad_svd,
        grad_eig=vjp_maker(la.eig),
        grad_eigh=vjp_maker(la.eigh),
        grad_inv=vjp_maker(la.inv),
        grad_pinv=vjp_maker(la.pinv),
        grad_solve=_argnum_form(la.solve),
        norm_vjp=vjp_maker(la.norm),
        norm_jvp=jvp_rule(la.norm),
    )


def _vjp_by_tracing(fun, argnum, args, kwargs=None):
    """vjp(g) of fun at args with respect to argument(s) argnum, by tracing fun once."""
    vjp, _ = make_vjp(fun, argnum)(*args, **(kwargs or {}))
    return vjp


def _scipy_integrate(mod):

    def grad_odeint(yt, func, y0, t, func_args, **kwargs):
        """vjp_all(g) -> (None, cotangent of y0, of t, of func_args) of odeint."""
        vjp = _vjp_by_tracing(
            lambda y0, t, a: mod.odeint(func, y0, t, tuple(a), **kwargs),
            (0, 1, 2),
            (y0, t, list(func_args)),
        )

        def vjp_all(g):
            gy0, gt, gargs = vjp(g)
            return None, gy0, gt, tuple(gargs)

        return vjp_all

    def argnums_unpack(all_vjp_builder):
        """A rule for some arguments from a builder of the VJPs of all of them."""

        def build_selected_vjps(argnums, ans, combined_args, kwargs):
            vjp_all = all_vjp_builder(ans, *combined_args, **kwargs)
            return lambda g: [vjp_all(g)[k] for k in argnums]

        return build_selected_vjps

    return dict(
        grad_odeint=grad_odeint,
        argnums_unpack=argnums_unpack,
        defvjp_argnums=defvjp_argnums,
        flatten=flatten,
        make_vjp=make_vjp,
        tuple=atuple,
    )


def _scipy_linalg(mod):
    import scipy.linalg  # (SciPy is an optional dependency)

    def grad_solve_banded(argnum, ans, l_and_u, a, b):
        return _vjp_of(mod.solve_banded, argnum, ans, (l_and_u, a, b), {})

    return dict(
        grad_solve_triangular=vjp_maker(mod.solve_triangular, 1),
        grad_solve_banded=grad_solve_banded,
        defvjp_argnums=defvjp_argnums,
        test=scipy.linalg.test,
        wrap_namespace=wrap_namespace,
    )


def compute_conv_size(A_size, B_size, mode):
    """The length of a convolution's output along one axis."""
    if mode == "full":
        return A_size + B_size - 1
    if mode == "same":
        return A_size
    if mode == "valid":
        return abs(A_size - B_size) + 1
    raise ValueError(f"convolve: mode must be 'full', 'valid' or 'same', got {mode!r}")


def flipped_idxs(ndim, axes):
    """An index that reverses the given axes."""
    return tuple(slice(None, None, -1) if i in axes else slice(None) for i in range(ndim))


def parse_axes(A_shape, B_shape, conv_axes, dot_axes, mode):
    """(axes, shapes) of convolve(A, B, conv_axes, dot_axes, mode): for "A" and "B" the
    "conv", "dot" and "ignore" axes, for "out" the "ignore_A", "ignore_B" and "conv" axes, and
    the lengths along each."""
    nA, nB = len(A_shape), len(B_shape)
    if conv_axes is None:
        conv_axes = (tuple(range(nA)), tuple(range(nA)))
    axes = {}
    for key, n, k in (("A", nA, 0), ("B", nB, 1)):
        conv, dot = tuple(conv_axes[k]), tuple(dot_axes[k])
        axes[key] = {
            "conv": conv,
            "dot": dot,
            "ignore": tuple(i for i in range(n) if i not in conv and i not in dot),
        }
    i1 = len(axes["A"]["ignore"])
    i2 = i1 + len(axes["B"]["ignore"])
    axes["out"] = {
        "ignore_A": tuple(range(i1)),
        "ignore_B": tuple(range(i1, i2)),
        "conv": tuple(range(i2, i2 + len(axes["A"]["conv"]))),
    }
    shapes = {
        key: {s: tuple(shp[i] for i in ax) for s, ax in axes[key].items()}
        for key, shp in (("A", A_shape), ("B", B_shape))
    }
    shapes["out"] = {
        "ignore_A": shapes["A"]["ignore"],
        "ignore_B": shapes["B"]["ignore"],
        "conv": tuple(
            compute_conv_size(A_shape[i], B_shape[j], mode)
            for i, j in zip(axes["A"]["conv"], axes["B"]["conv"])
        ),
    }
    return axes, shapes


def einsum_tensordot(A, B, axes, reverse=False):
    """tensordot(A, B, axes) (axes a pair of axis lists) through einsum."""
    a_idx = list(range(_onp.ndim(A)))
    b_idx = list(range(_onp.ndim(A), _onp.ndim(A) + _onp.ndim(B)))
    for k, (i, j) in enumerate(zip(*axes)):
        a_idx[i] = b_idx[j] = _onp.ndim(A) + _onp.ndim(B) + k
    return _w.einsum(A, a_idx, B, b_idx)


def _scipy_signal(mod):
    def grad_convolve(argnum, ans, A, B, axes=None, dot_axes=((), ()), mode="full"):
        """The VJP of convolve(A, B, axes, dot_axes, mode) for argument argnum."""
        return _vjp_by_tracing(
            lambda A, B: mod.convolve(A, B, axes, dot_axes, mode), argnum, (A, B)
        )

    return dict(
        defvjp=defvjp,
        as_strided=as_strided,
        compute_conv_size=compute_conv_size,
        flipped_idxs=flipped_idxs,
        parse_axes=parse_axes,
        einsum_tensordot=einsum_tensordot,
        grad_convolve=grad_convolve,
    )


def _scipy_special(mod):
    def make_gammainc_vjp_arg1(sign):
        """The VJP maker of gammainc (sign 1) or gammaincc (sign -1) for its argument x."""
        return vjp_maker(mod.gammainc if sign > 0 else mod.gammaincc, 1)

    return dict(
        defvjp=defvjp,
        unbroadcast_f=unbroadcast_f,
        repeat_to_match_shape=repeat_to_match_shape,
        make_grad_logsumexp=vjp_maker(mod.logsumexp),
        fwd_grad_logsumexp=jvp_rule(mod.logsumexp),
        make_gammainc_vjp_arg1=make_gammainc_vjp_arg1,
        root_pi=float(_onp.sqrt(_onp.pi)),
        inv_root_pi=float(1.0 / _onp.sqrt(_onp.pi)),
    )


def _scipy_stats(name, mod):
    names = dict(defvjp=defvjp, unbroadcast_f=unbroadcast_f, primitive=primitive)
    short = name.rsplit(".", 1)[1]
    if short == "beta":
        from .scipy.special import beta  # (imports SciPy, an optional dependency)

        names.update(
            beta=beta,
            grad_beta_logpdf_arg0=mod._dx,
            grad_beta_logpdf_arg1=mod._da,
            grad_beta_logpdf_arg2=mod._db,
        )
    elif short == "chi2":
        from .scipy.special import gamma

        names.update(gamma=gamma, grad_chi2_logpdf=mod._dx)
    elif short == "gamma":
        from .scipy.special import gamma

        names.update(gamma=gamma, grad_gamma_logpdf_arg0=mod._dx, grad_gamma_logpdf_arg1=mod._da)
    elif short == "poisson":
        names.update(grad_poisson_logpmf=mod._dmu)
    elif short == "t":
        names.update(
            grad_tlogpdf_x=mod._logpdf_dx,
            grad_tlogpdf_scale=mod._logpdf_dscale,
            grad_tlogpdf_df=mod._logpdf_ddf,
            grad_tlogpdf_loc=lambda x, df, loc, scale: -mod._logpdf_dx(x, df, loc, scale),
            grad_tlogpdf_diff=lambda diff, df: mod._logpdf_dx(diff, df, 0.0, 1.0),
        )
    elif short == "multivariate_normal":
        la = _la

        def generalized_outer_product(x):
            """x x' for a vector, x x' over the last two axes for a stack."""
            if _onp.ndim(x) == 1:
                return _w.outer(x, x)
            return _w.matmul(x, _w.swapaxes(x, -1, -2))

        def covgrad(x, mean, cov, allow_singular=False):
            """d logpdf / d cov at each point: (J r r' J - J) / 2, J = inv(cov), r = x - mean."""
            mod._check(allow_singular)
            J = la.inv(cov)
            solved = _w.matmul(J, _w.expand_dims(x - mean, -1))
            return 0.5 * (generalized_outer_product(solved) - J)

        def solve(allow_singular):
            """The linear solver logpdf's derivatives use: pinv with allow_singular."""
            if allow_singular:
                return lambda A, x: _w.dot(la.pinv(A), x)
            return la.solve

        names.update(
            generalized_outer_product=generalized_outer_product, covgrad=covgrad, solve=solve
        )
    return names


def _misc(name, mod):
    if name == "gradcy.misc.fixed_points":

        def fixed_point_vjp(ans, f, a, x0, distance, tol):
            """The VJP of fixed_point for its parameters a."""
            return _vjp_by_tracing(lambda a: mod.fixed_point(f, a, x0, distance, tol), 0, (a,))

        return dict(defvjp=defvjp, fixed_point_vjp=fixed_point_vjp, tuple=atuple)
    if name == "gradcy.misc.flatten":
        return dict(make_vjp=make_vjp, type=atype)
    raise KeyError(name)


# =============================================================================
# autograd.tracer's, autograd.util's and autograd.builtins's functions that gradcy's own code
# does not use
# =============================================================================
def find_top_boxed_args(args):
    """(boxed, trace_id, node_type, False): the positions and traced values of `args` that
    belong to the innermost differentiation among them, its id, and its node type."""
    top, boxes = -1, []
    for argnum, arg in enumerate(args):
        if type(arg) is Box:
            tid = arg._tape.trace_id
            if tid > top:
                top, boxes = tid, [(argnum, arg)]
            elif tid == top:
                boxes.append((argnum, arg))
    return boxes, top, (VJPNode if boxes else None), False


deprecation_msg = (
    "quick_grad_check is deprecated; use "
    "gradcy.test_util.check_grads(fun, modes=['rev'], order=1)(x)"
)


def quick_grad_check(
    fun,
    arg0,
    extra_args=(),
    kwargs={},  # noqa: B006  (autograd's; only read)
    verbose=True,
    eps=1e-4,
    rtol=1e-4,
    atol=1e-6,
    rs=None,
):
    """Deprecated: check_grads of fun with respect to arg0, reverse mode, first order."""
    warnings.warn(deprecation_msg, DeprecationWarning, stacklevel=2)
    check_grads(lambda x: fun(x, *extra_args, **kwargs), modes=["rev"], order=1)(arg0)


def _core_modules(name):
    """autograd's names in gradcy.tracer, gradcy.util and gradcy.builtins."""
    if name == "gradcy.tracer":
        return dict(find_top_boxed_args=find_top_boxed_args)
    if name == "gradcy.util":
        return dict(quick_grad_check=quick_grad_check, deprecation_msg=deprecation_msg)
    return dict(
        container_take=_w.container_take, grad_container_take=vjp_maker(_w.container_take, 0)
    )


def _names_of(module):
    """autograd's names for a gradcy module: name -> object."""
    name = module.__name__
    if name in ("gradcy.tracer", "gradcy.util", "gradcy.builtins"):
        names = _core_modules(name)
    elif name == "gradcy.numpy.numpy_vjps":
        names = _numpy_vjps()
        names.update({k: globals()[k] for k in _SHARED_VJPS})
    elif name == "gradcy.numpy.numpy_jvps":
        names = _numpy_jvps()
    elif name == "gradcy.numpy.fft":
        names = _fft()
    elif name == "gradcy.numpy.linalg":
        names = _linalg(sys.modules[name])
    elif name.startswith("gradcy.scipy.stats."):
        names = _scipy_stats(name, sys.modules[name])
    elif name.startswith("gradcy.scipy.") or name.startswith("gradcy.misc."):
        maker = {
            "gradcy.scipy.integrate": _scipy_integrate,
            "gradcy.scipy.linalg": _scipy_linalg,
            "gradcy.scipy.signal": _scipy_signal,
            "gradcy.scipy.special": _scipy_special,
        }.get(name)
        names = maker(sys.modules[name]) if maker else _misc(name, sys.modules[name])
    else:
        raise KeyError(f"gradcy._autograd_rules: no autograd names for {name}")
    return names


def _add_names(module):
    """Add autograd's names to a gradcy module (never replacing the module's own)."""
    namespace = vars(module)
    name = module.__name__
    names = _names_of(module)
    shadowing = {k: v for k, v in names.items() if hasattr(builtins, k)}
    for k, v in names.items():
        if k not in shadowing:
            namespace.setdefault(k, v)
    if shadowing:
        # names like `type` and `tuple` (gradcy.builtins's) are served by the module's
        # __getattr__, so the module's own code keeps Python's builtins
        def __getattr__(attr):
            if attr in shadowing:
                return shadowing[attr]
            raise AttributeError(f"module {name!r} has no attribute {attr!r}")

        namespace.setdefault("__getattr__", __getattr__)


# the gradcy modules that hold autograd names: imported with gradcy ...
_IMPORTED = (
    "gradcy.tracer",
    "gradcy.util",
    "gradcy.builtins",
    "gradcy.numpy.numpy_vjps",
    "gradcy.numpy.numpy_jvps",
    "gradcy.numpy.fft",
    "gradcy.numpy.linalg",
    "gradcy.misc.flatten",
    "gradcy.misc.fixed_points",
)
# ... and imported on demand (they import SciPy; each has a module __getattr__ that calls
# autograd_name)
_ON_DEMAND = frozenset(
    ["gradcy.scipy.integrate", "gradcy.scipy.linalg", "gradcy.scipy.signal", "gradcy.scipy.special"]
    + [
        f"gradcy.scipy.stats.{d}"
        for d in (
            "beta",
            "chi2",
            "dirichlet",
            "gamma",
            "multivariate_normal",
            "norm",
            "poisson",
            "t",
        )
    ]
)


# on-demand module name -> its autograd names (filled on first lookup)
_served: dict[str, dict[str, object]] = {}


def autograd_name(module_name, attr):
    """The module __getattr__ of the on-demand modules: their autograd names, added to the
    module on the first lookup of a name it does not have (no import hook: the module's own
    __getattr__ asks here)."""
    names = _served.get(module_name)
    if names is None:
        module = sys.modules[module_name]
        names = _served[module_name] = _names_of(module)
        for k, v in names.items():
            if not hasattr(builtins, k):
                vars(module).setdefault(k, v)
    if attr in names:
        return names[attr]
    raise AttributeError(f"module {module_name!r} has no attribute {attr!r}")


def install():
    """Add autograd's names to the gradcy modules imported with gradcy (idempotent). The
    on-demand modules serve theirs through their module __getattr__ (autograd_name)."""
    for name in _IMPORTED:
        if name in sys.modules:
            _add_names(sys.modules[name])
