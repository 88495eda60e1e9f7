"""The NumPy namespace as gradcy primitives.

Every public NumPy function and ufunc becomes a primitive named `gradcy.numpy.<name>`; the ones
whose outputs carry no gradient (rounding, arg*, comparisons, shape queries, *_like
constructors...) run on plain values without recording. Functions that take a list of arrays
(concatenate, stack, array(...) of traced values) get wrappers that pass the arrays as separate
arguments, so each one is a traced parent. The VJPs live in numpy_vjps.py.
"""
import builtins as _builtins
import functools
import types

import numpy as _np

from .._core import Box, register_box_method, register_numpy_override, set_getitem_primitive
from ..registry import notrace_primitive, primitive

# Functions whose outputs are constants for differentiation (integer, boolean or piecewise
# constant results, shapes and constructors): traced values pass through them unrecorded.
NONDIFFERENTIABLE = {
    "floor", "ceil", "round", "around", "rint", "fix", "trunc", "sign", "signbit",
    "floor_divide", "all", "any", "argmax", "argmin", "argpartition", "argsort", "argwhere",
    "nonzero", "flatnonzero", "count_nonzero", "searchsorted", "digitize", "bincount",
    "histogram", "histogram_bin_edges", "unique", "ndim", "shape", "size", "isscalar",
    "logical_and", "logical_or", "logical_not", "logical_xor", "isfinite", "isinf", "isnan",
    "isneginf", "isposinf", "isreal", "iscomplex", "iscomplexobj", "isrealobj", "allclose",
    "isclose", "array_equal", "array_equiv", "greater", "greater_equal", "less", "less_equal",
    "equal", "not_equal", "zeros_like", "ones_like", "empty_like", "result_type", "can_cast",
    "min_scalar_type", "promote_types", "bitwise_and", "bitwise_or", "bitwise_xor",
    "bitwise_not", "invert", "left_shift", "right_shift", "gcd", "lcm", "isin", "in1d",
    "tri", "tril_indices_from", "triu_indices_from", "diag_indices_from", "indices",
    "unravel_index", "ravel_multi_index", "may_share_memory", "shares_memory", "iterable",
    "isfortran", "ndindex", "mask_indices",
}

# Names kept from NumPy unwrapped: they are not functions of array values.
_NOT_WRAPPED = {"vectorize", "errstate", "printoptions", "nditer", "broadcast", "ndenumerate",
                "set_printoptions", "get_printoptions", "seterr", "geterr", "info", "show_config",
                "get_include", "load", "save", "savez", "savez_compressed", "loadtxt",
                "savetxt", "genfromtxt", "fromfile", "frombuffer", "fromregex", "memmap",
                "setbufsize", "getbufsize", "test", "typename", "seterrcall",
                "geterrcall", "deprecate", "asmatrix", "matrix", "poly1d", "busday_count",
                "busday_offset", "is_busday", "datetime_as_string", "datetime_data",
                "set_string_function", "add_docstring", "add_newdoc", "from_dlpack",
                "array_repr", "array_str", "array2string", "format_float_positional",
                "format_float_scientific", "base_repr", "binary_repr"}


def _is_function(obj):
    return (isinstance(obj, (_np.ufunc, types.FunctionType, types.BuiltinFunctionType))
            or type(obj).__name__ == "_ArrayFunctionDispatcher")


_add_reduce = _np.add.reduce


@functools.wraps(_np.sum)
def _sum(a, axis=None, dtype=None, out=None, keepdims=_np._NoValue, initial=_np._NoValue,
         where=_np._NoValue):
    # numpy.sum of a plain ndarray is add.reduce after about 1 us of Python dispatch
    # (ndarray.sum -> _methods._sum); go straight there when nothing else is asked for
    if type(a) is _np.ndarray and initial is _np._NoValue and where is _np._NoValue:
        if keepdims is _np._NoValue:
            return _add_reduce(a, axis, dtype, out)
        return _add_reduce(a, axis, dtype, out, keepdims)
    return _np.sum(a, axis, dtype, out, keepdims=keepdims, initial=initial, where=where)


_c_einsum = getattr(getattr(_np._core, "multiarray", None), "c_einsum", None)


@functools.wraps(_np.einsum)
def _einsum(*operands, out=None, optimize=False, **kwargs):
    # numpy.einsum without optimize is its C core behind __array_function__ dispatch; plain
    # ndarray operands need no dispatch
    if optimize is False and _c_einsum is not None:
        for o in operands:
            if type(o) is not _np.ndarray and type(o) is not str:
                break
        else:
            if out is not None:
                kwargs["out"] = out
            return _c_einsum(*operands, **kwargs)
    return _np.einsum(*operands, out=out, optimize=optimize, **kwargs)


# NumPy functions run through a faster equivalent with the same signature and results
_FAST_IMPL = {"sum": _sum, "einsum": _einsum}


def wrap_namespace(src, dst, prefix=None):
    """Fill `dst` with the names of the module dict `src`: functions as primitives named
    `prefix.name` (default: dst's __name__), everything else unchanged."""
    if prefix is None:
        prefix = dst.get("__name__", "gradcy")
    for name, obj in src.items():
        if name.startswith("_"):
            continue
        if _is_function(obj) and name not in _NOT_WRAPPED:
            full = f"{prefix}.{name}"
            impl = _FAST_IMPL.get(name, obj) if src is _np.__dict__ else obj
            wrapped = (notrace_primitive(impl, full) if name in NONDIFFERENTIABLE
                       else primitive(impl, full))
            dst[name] = wrapped
            register_numpy_override(obj, wrapped)
        elif not isinstance(obj, types.ModuleType):
            dst[name] = obj


wrap_namespace(_np.__dict__, globals(), "gradcy.numpy")

# NumPy aliases that are the same object under two names (max/amax, round/around...) each got
# their own primitive above; make each alias the primitive of its canonical name so every
# name shares one set of rules.
for _alias, _canonical in [("amax", "max"), ("amin", "min"), ("around", "round"),
                           ("abs", "absolute"), ("conj", "conjugate"), ("true_divide", "divide"),
                           ("mod", "remainder"), ("acos", "arccos"), ("asin", "arcsin"),
                           ("atan", "arctan"), ("acosh", "arccosh"), ("asinh", "arcsinh"),
                           ("atanh", "arctanh"), ("atan2", "arctan2"), ("pow", "power"),
                           ("concat", "concatenate"), ("permute_dims", "transpose"),
                           ("bitwise_invert", "bitwise_not"), ("bitwise_left_shift", "left_shift"),
                           ("bitwise_right_shift", "right_shift"),
                           ("product", "prod"), ("cumproduct", "cumprod"),
                           ("alltrue", "all"), ("sometrue", "any")]:
    if _canonical in globals() and _alias in globals():
        globals()[_alias] = globals()[_canonical]
        if hasattr(_np, _alias):
            register_numpy_override(getattr(_np, _alias), globals()[_canonical])


# =============================================================================
# Functions of lists of arrays: each array becomes its own argument (a traced parent)
# =============================================================================
def _contains_box(obj):
    if type(obj) is Box:
        return True
    if isinstance(obj, (list, tuple)):
        return _builtins.any(_contains_box(e) for e in obj)
    return False


@primitive
def array_from_args(*args):
    """np.array(args): the elements stacked along a new first axis."""
    return _np.array(args)


def array(obj, *args, **kwargs):
    """numpy.array that also builds an array from (nested) lists of traced values."""
    if type(obj) is Box:
        return _copy_box(obj, *args, **kwargs)
    if _contains_box(obj):
        if args or _builtins.any(v is not None for k, v in kwargs.items() if k not in ("copy",)):
            dtype = kwargs.get("dtype", args[0] if args else None)
            return astype(array(obj), dtype)
        return array_from_args(*[array(e) if isinstance(e, (list, tuple)) else e for e in obj])
    return _np.array(obj, *args, **kwargs)


def asarray(obj, dtype=None, **kwargs):
    """numpy.asarray that keeps traced values traced."""
    if type(obj) is Box:
        return obj if dtype is None or _np.dtype(dtype) == obj.dtype else astype(obj, dtype)
    if _contains_box(obj):
        return array(obj, dtype=dtype)
    return _np.asarray(obj, dtype=dtype, **kwargs)


def _copy_box(obj, dtype=None, copy=True, **kwargs):
    if dtype is not None and _np.dtype(dtype) != obj.dtype:
        return astype(obj, dtype)
    return copy_(obj) if copy else obj


copy_ = globals()["copy"]


@primitive
def concatenate_args(axis, *arrays):
    """concatenate(arrays, axis) with each array a separate argument."""
    return _np.concatenate(arrays, axis)


def concatenate(arrays, axis=0, out=None, **kwargs):
    """numpy.concatenate; traced arrays in the list are traced parents."""
    if out is not None or kwargs or not _builtins.any(type(a) is Box for a in arrays):
        return _np.concatenate(arrays, axis=axis, out=out, **kwargs)
    if axis is None:
        return concatenate_args(0, *[ravel(a) for a in arrays])
    return concatenate_args(axis, *arrays)


def stack(arrays, axis=0, out=None, **kwargs):
    """numpy.stack, traced."""
    arrays = list(arrays)
    if out is not None or kwargs or not _builtins.any(type(a) is Box for a in arrays):
        return _np.stack(arrays, axis=axis, out=out, **kwargs)
    return concatenate_args(axis, *[expand_dims(a, axis) for a in arrays])


def hstack(tup, **kwargs):
    """numpy.hstack, traced."""
    arrs = [atleast_1d(a) for a in tup]
    return concatenate(arrs, axis=0 if arrs and arrs[0].ndim == 1 else 1, **kwargs)


def vstack(tup, **kwargs):
    """numpy.vstack, traced."""
    return concatenate([atleast_2d(a) for a in tup], axis=0, **kwargs)


row_stack = vstack


def dstack(tup):
    """numpy.dstack, traced."""
    return concatenate([atleast_3d(a) for a in tup], axis=2)


def column_stack(tup):
    """numpy.column_stack, traced."""
    arrs = [reshape(a, (-1, 1)) if ndim(a) < 2 else a for a in tup]
    return concatenate(arrs, axis=1)


for _name in ["array", "asarray", "concatenate", "stack", "hstack", "vstack", "dstack",
              "column_stack"]:
    if hasattr(_np, _name):
        register_numpy_override(getattr(_np, _name), globals()[_name])
concat = concatenate


# =============================================================================
# Indexing, casting, methods of traced values
# =============================================================================
@primitive
def getitem(A, idx):
    """A[idx] as a primitive."""
    return A[idx]


@primitive
def container_take(A, idx):
    """A[idx] for a traced tuple or list (the output of split, eigh, ...)."""
    return A[idx]


def _box_getitem(A, idx):
    v = A._value
    while type(v) is Box:          # nested differentiation
        v = v._value
    if isinstance(v, (tuple, list)):
        return container_take(A, idx)
    return getitem(A, idx)


def _box_setitem(A, idx, value):
    raise TypeError("gradcy: item assignment into a traced array is not supported yet; build the "
                    "result functionally (gradcy.numpy.where, concatenate, ...)")


@primitive
def astype(x, dtype, *args, **kwargs):
    """x.astype(dtype) as a primitive."""
    return _np.asarray(x).astype(dtype, *args, **kwargs)


def _method_reshape(x, *shape, **kwargs):
    return reshape(x, shape[0] if len(shape) == 1 else shape, **kwargs)


def _method_transpose(x, *axes):
    if len(axes) == 1 and (axes[0] is None or isinstance(axes[0], (tuple, list))):
        axes = axes[0]
    return transpose(x, axes if axes else None)


def _method_item(x, *args):
    if args:
        return getitem(x, args[0] if len(args) == 1 else args)
    if x.size != 1:
        raise ValueError("item(): can only convert an array of size 1 to a scalar")
    return reshape(x, ())


def _method_flatten(x, order="C"):
    return ravel(x, order)


def _method_copy(x, order="K"):
    return copy_(x)


def _register_methods():
    g = globals()
    ops = {
        "add": "add", "subtract": "subtract", "multiply": "multiply", "true_divide": "divide",
        "floor_divide": "floor_divide", "mod": "remainder", "power": "power",
        "matmul": "matmul", "negative": "negative", "absolute": "absolute", "equal": "equal",
        "not_equal": "not_equal", "less": "less", "less_equal": "less_equal",
        "greater": "greater", "greater_equal": "greater_equal", "real": "real", "imag": "imag",
        "conj": "conjugate",
    }
    for method, fn in ops.items():
        register_box_method(method, g[fn])
    for name in ["sum", "mean", "prod", "max", "min", "var", "std", "cumsum", "cumprod", "ptp",
                 "argmax", "argmin", "argsort", "nonzero", "all", "any", "swapaxes", "ravel",
                 "squeeze", "repeat", "dot", "clip", "round", "take", "trace", "diagonal"]:
        if name in g:
            register_box_method(name, g[name])
    register_box_method("reshape", _method_reshape)
    register_box_method("transpose", _method_transpose)
    register_box_method("flatten", _method_flatten)
    register_box_method("copy", _method_copy)
    register_box_method("item", _method_item)
    register_box_method("astype", astype)
    register_box_method("__getitem__", _box_getitem)
    set_getitem_primitive(getitem)
    register_box_method("__setitem__", _box_setitem)


_register_methods()

# r_, c_, integer types, make_diagonal and autograd.numpy's helpers
from .extras import *  # noqa: E402,F401,F403

__all__ = [name for name in globals() if not name.startswith("_")
           and name not in ("types", "register_box_method", "register_numpy_override")]
