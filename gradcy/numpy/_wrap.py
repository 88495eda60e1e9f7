"""The NumPy namespace as gradcy primitives.

Every public NumPy function and ufunc becomes a primitive named `gradcy.numpy.<name>`; the ones
whose outputs carry no gradient (rounding, arg*, comparisons, shape queries, *_like
constructors...) run on plain values without recording. Functions that take a list of arrays
(concatenate, stack, array(...) of traced values) get wrappers that pass the arrays as separate
arguments, so each one is a traced parent. The rules live in the family files (elementwise.py,
reductions.py, ...), which gradcy/numpy/__init__.py imports.

Writes into arguments: a call that passes `out` (by keyword or position) to a primitive whose
NumPy function has an `out` parameter goes to _out_call (the core routes it there): the result
is written into a traced buffer (one a gradcy.numpy constructor made) as a recorded write, plain
arrays receive plain values only, and traced values into a plain array raise
TracerArrayConversionError. put, putmask, place, put_along_axis, fill_diagonal, copyto and
nan_to_num(copy=False) follow the same rule for the array they write into.
"""

import ast
import builtins as _builtins
import functools
import inspect
import types

import numpy as _np

from .._core import (
    Box,
    TracerArrayConversionError,
    install_hooks,
    is_array_value,
    register_box_method,
    register_numpy_override,
)
from ..registry import notrace_primitive, primitive
from .. import _dask_ops

# Functions whose outputs are constants for differentiation (integer, boolean or piecewise
# constant results, shapes and constructors): traced values pass through them unrecorded.
NONDIFFERENTIABLE = {
    "floor",
    "ceil",
    "round",
    "around",
    "round_",
    "rint",
    "fix",
    "trunc",
    "sign",
    "signbit",
    "floor_divide",
    "all",
    "any",
    "argmax",
    "argmin",
    "argpartition",
    "argsort",
    "argwhere",
    "nonzero",
    "flatnonzero",
    "count_nonzero",
    "searchsorted",
    "digitize",
    "ndim",
    "shape",
    "size",
    "isscalar",
    "logical_and",
    "logical_or",
    "logical_not",
    "logical_xor",
    "isfinite",
    "isinf",
    "isnan",
    "isneginf",
    "isposinf",
    "isreal",
    "iscomplex",
    "iscomplexobj",
    "isrealobj",
    "allclose",
    "isclose",
    "array_equal",
    "array_equiv",
    "greater",
    "greater_equal",
    "less",
    "less_equal",
    "equal",
    "not_equal",
    "zeros_like",
    "ones_like",
    "empty_like",
    "result_type",
    "can_cast",
    "min_scalar_type",
    "promote_types",
    "bitwise_and",
    "bitwise_or",
    "bitwise_xor",
    "bitwise_not",
    "invert",
    "left_shift",
    "right_shift",
    "gcd",
    "lcm",
    "isin",
    "in1d",
    "tri",
    "tril_indices_from",
    "triu_indices_from",
    "diag_indices_from",
    "indices",
    "unravel_index",
    "ravel_multi_index",
    "may_share_memory",
    "shares_memory",
    "iterable",
    "isfortran",
    "ndindex",
    "mask_indices",
}

# Names kept from NumPy unwrapped: they are not functions of array values.
_NOT_WRAPPED = {
    "vectorize",
    "errstate",
    "printoptions",
    "nditer",
    "broadcast",
    "ndenumerate",
    "set_printoptions",
    "get_printoptions",
    "seterr",
    "geterr",
    "info",
    "show_config",
    "get_include",
    "load",
    "save",
    "savez",
    "savez_compressed",
    "loadtxt",
    "savetxt",
    "genfromtxt",
    "fromfile",
    "frombuffer",
    "fromregex",
    "memmap",
    "setbufsize",
    "getbufsize",
    "test",
    "typename",
    "seterrcall",
    "geterrcall",
    "deprecate",
    "asmatrix",
    "matrix",
    "poly1d",
    "busday_count",
    "busday_offset",
    "is_busday",
    "datetime_as_string",
    "datetime_data",
    "set_string_function",
    "add_docstring",
    "add_newdoc",
    "from_dlpack",
    "array_repr",
    "array_str",
    "array2string",
    "format_float_positional",
    "format_float_scientific",
    "base_repr",
    "binary_repr",
}


def _is_function(obj):
    return (
        isinstance(obj, (_np.ufunc, types.FunctionType, types.BuiltinFunctionType))
        or type(obj).__name__ == "_ArrayFunctionDispatcher"
    )


_add_reduce = _np.add.reduce


@functools.wraps(_np.sum)
def _sum(
    a,
    axis=None,
    dtype=None,
    out=None,
    keepdims=_np._NoValue,
    initial=_np._NoValue,
    where=_np._NoValue,
):
    # numpy.sum of a plain ndarray is add.reduce after about 1 us of Python dispatch
    # (ndarray.sum -> _methods._sum); go straight there when nothing else is asked for
    if type(a) is _np.ndarray and initial is _np._NoValue and where is _np._NoValue:
        if keepdims is _np._NoValue:
            return _add_reduce(a, axis, dtype, out)
        return _add_reduce(a, axis, dtype, out, keepdims)
    if (
        axis is None
        and dtype is None
        and out is None
        and keepdims is _np._NoValue
        and initial is _np._NoValue
        and where is _np._NoValue
    ):
        r = _dask_ops.total(a)  # a Dask array's: each chunk's sum, then theirs (else None)
        if r is not None:
            return r
    # by keyword, and only what was given: other array libraries' sum (dask's, through
    # __array_function__) take the same names in another order and no NumPy sentinels
    kw = {
        k: v
        for k, v in (("keepdims", keepdims), ("initial", initial), ("where", where))
        if v is not _np._NoValue
    }
    if out is not None:
        kw["out"] = out
    return _np.sum(a, axis=axis, dtype=dtype, **kw)


def _extremum(name, ufunc):
    reduce = ufunc.reduce

    @functools.wraps(getattr(_np, name))
    def extremum(
        a, axis=None, out=None, keepdims=_np._NoValue, initial=_np._NoValue, where=_np._NoValue
    ):
        # numpy.max / numpy.min of a plain ndarray: the ufunc's reduce, as for _sum
        if type(a) is _np.ndarray and initial is _np._NoValue and where is _np._NoValue:
            if keepdims is _np._NoValue:
                return reduce(a, axis, None, out)
            return reduce(a, axis, None, out, keepdims)
        kw = {
            k: v
            for k, v in (("keepdims", keepdims), ("initial", initial), ("where", where))
            if v is not _np._NoValue
        }
        if out is not None:
            kw["out"] = out
        return getattr(_np, name)(a, axis=axis, **kw)

    return extremum


try:
    from numpy._core.multiarray import c_einsum as _c_einsum  # NumPy 2; 1.26 has a shim
except ImportError:
    _c_einsum = None


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


_dot_impl = getattr(_np.dot, "_implementation", _np.dot)


@functools.wraps(_np.dot)
def _dot(a, b, out=None):
    # numpy.dot is its C function behind __array_function__ dispatch: plain arrays need none
    if type(a) is _np.ndarray and type(b) is _np.ndarray:
        return _dot_impl(a, b, out)
    if out is None:
        r = _dask_ops.dot(a, b)  # Dask arrays of a tall problem's shapes (else None)
        if r is not None:
            return r
        # out only when given: Dask's and CuPy's dot take (a, b) through the dispatch
        return _np.dot(a, b)
    return _np.dot(a, b, out=out)


# NumPy functions run through a faster equivalent with the same signature and results
_FAST_IMPL = {
    "sum": _sum,
    "einsum": _einsum,
    "max": _extremum("max", _np.maximum),
    "min": _extremum("min", _np.minimum),
    "dot": _dot,
}


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
            wrapped = (
                notrace_primitive(impl, full)
                if name in NONDIFFERENTIABLE
                else primitive(impl, full)
            )
            set_out_arg(wrapped, obj)
            dst[name] = wrapped
            register_numpy_override(obj, wrapped)
        elif not isinstance(obj, types.ModuleType):
            dst[name] = obj


# =============================================================================
# out=: a primitive whose function writes into an `out` argument
# =============================================================================
_KEYWORD_ONLY = 1 << 30  # out_arg of an `out` that cannot be passed by position
_OUT_TAIL = {}  # primitive -> names of the positional parameters after `out`


def parameters(fun):
    """The inspect.Parameter list of `fun`, or None when it has no readable signature. NumPy 1.x
    C functions (dot, concatenate, busday_count) have none to inspect; their docstring opens
    with it instead ("dot(a, b, out=None)"), which is read then (names, kinds, order, and the
    defaults that are Python literals; non-name parameters such as "(a1, a2, ...)" become
    "_argN")."""
    try:
        return list(inspect.signature(fun).parameters.values())
    except (TypeError, ValueError):
        pass
    name = getattr(fun, "__name__", None)
    first = (getattr(fun, "__doc__", None) or "").strip().split("\n", 1)[0].strip()
    if not name or not first.startswith(name + "(") or not first.endswith(")"):
        return None
    pieces, depth, start, text = [], 0, 0, first[len(name) + 1 : -1]
    for k, ch in enumerate(text + ","):
        depth += ch in "([{"
        depth -= ch in ")]}"
        if ch == "," and depth == 0:
            pieces.append(text[start:k].strip())
            start = k + 1
    P = inspect.Parameter
    params, kind = [], P.POSITIONAL_OR_KEYWORD
    for i, piece in enumerate(filter(None, pieces)):
        if piece == "/":
            params = [q.replace(kind=P.POSITIONAL_ONLY) for q in params]
            continue
        if piece == "*":
            kind = P.KEYWORD_ONLY
            continue
        arg, _, default = (t.strip() for t in piece.partition("="))
        try:
            default = ast.literal_eval(default) if default else P.empty
        except (ValueError, SyntaxError):
            default = P.empty
        stars = len(arg) - len(arg.lstrip("*"))
        arg = arg[stars:] if arg[stars:].isidentifier() else f"_arg{i}"
        kind_i = (kind, P.VAR_POSITIONAL, P.VAR_KEYWORD)[_builtins.min(stars, 2)]
        params.append(P(arg, kind_i, default=default if stars == 0 else P.empty))
        if stars == 1:
            kind = P.KEYWORD_ONLY
    return params


def set_out_arg(prim, fun):
    """Mark `prim` (wrapping `fun`) as having an `out` parameter, if `fun` has one: calls that
    pass it go to _out_call instead of letting fun write untraced numbers into it."""
    if isinstance(fun, _np.ufunc):
        prim.out_arg = fun.nin  # ufunc(x1, x2, out1, out2...)
        return
    params = parameters(fun)
    for i, p in enumerate(params or ()):
        if p.name == "out":
            if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD):
                prim.out_arg = i
                _OUT_TAIL[prim] = tuple(
                    q.name for q in params[i + 1 :] if q.kind is q.POSITIONAL_OR_KEYWORD
                )
            else:
                prim.out_arg = _KEYWORD_ONLY
            return


def _plain_out_error(name, what="out="):
    return TracerArrayConversionError(
        f"{name}: {what} is a plain numpy array; writing traced values into it would drop "
        f"their gradient. Create that array with gradcy.numpy (zeros, empty, array, ...) inside "
        f"the differentiated function, so the write is traced, or use the function's result "
        f"instead (y = {name.rsplit('.', 1)[-1]}(...))."
    )


def write_result(name, out, result, where=True, broadcast=False, casting="same_kind"):
    """out[...] = result for a traced buffer `out` (the write is recorded on its tape), as
    `name`'s out= would do; `where`: a ufunc's mask (False keeps out's values); `casting`: the
    call's rule for the cast into out's dtype (a ufunc's, clip's, concatenate's casting=; into
    an integer or boolean out, the cast values are a constant:
    indexed_updates.constant_if_cast)."""
    rshape, oshape = _np.shape(_unwrap(result)), tuple(out.shape)
    if rshape != oshape and not (broadcast and _np.broadcast_shapes(rshape, oshape) == oshape):
        raise ValueError(f"{name}: out= has shape {oshape}, the result has shape {rshape}")
    rdtype = _np.result_type(_unwrap(result))
    if not _np.can_cast(rdtype, out.dtype, casting):
        raise TypeError(
            f"{name}: cannot cast the result from {rdtype} to out='s dtype "
            f"{out.dtype} with casting rule {casting!r}"
        )
    out[...] = result if where is True else where_(where, result, out)
    return out


def write_out(name, out, compute):
    """`compute()` written into out= for a front end (not a primitive) that was given traced
    values or a traced buffer: a plain `out` raises, a traced one receives a recorded write."""
    if type(out) is not Box:
        raise _plain_out_error(name)
    return write_result(name, out, compute())


_OUT_HONOURED = {}


def _out_honoured(prim):
    """False for the numpy.fft functions that, in this NumPy, return a new array instead of
    their out= argument (ifft2, irfft2, hfft in NumPy 2.4): probed once on a small array."""
    if not prim.name.startswith("gradcy.numpy.fft."):
        return True
    ok = _OUT_HONOURED.get(prim)
    if ok is None:
        x = _np.linspace(0.1, 1.2, 12).reshape(3, 4)
        r = prim.fun(x)
        d = _np.zeros_like(r)
        ok = _OUT_HONOURED[prim] = prim.fun(x, out=d) is d and _np.array_equal(d, r)
    return ok


def _operand_dtype(a):
    """What NumPy's ufunc type resolution takes for operand a: its dtype, or the Python type
    of a Python scalar (a weak scalar)."""
    v = _unwrap(a)
    t = type(v)
    if t is bool:
        return _np.dtype(bool)
    if t is int or t is float or t is complex:
        return t
    dtype = getattr(v, "dtype", None)
    return dtype if isinstance(dtype, _np.dtype) else _np.asarray(_plain_tree(v)).dtype


# a ufunc's keywords that a traced call refuses: what to do instead
_UFUNC_KEYWORD_FIXES = {
    "signature": "pass dtype= for the output's dtype, or cast the arguments first (x.astype(...))",
    "order": "it sets the result's memory layout only: drop it (np.asfortranarray(result) "
    "makes a Fortran-ordered copy)",
    "subok": "drop it: traced results are plain arrays",
    "where": "without out= the masked elements are uninitialized memory; pass out= (a "
    "gradcy.numpy buffer) or compute np.where(mask, f(x), fill)",
}


def _ufunc_keywords(prim, args, kwargs):
    """A ufunc's call on traced values with keywords (besides out=, which _out_call writes):
    dtype= and casting= pick NumPy's loop (its resolution, with the call's casting), whose
    input dtypes the operands are cast to, so the ufunc without them runs that loop; a traced
    operand's cast is a recorded astype, whose gradient is cast back to the operand's dtype.
    The other keywords raise (_UFUNC_KEYWORD_FIXES). Pops what it handled from kwargs."""
    uf = prim.fun
    has_out = "out" in kwargs or len(args) > prim.out_arg
    for name, fix in _UFUNC_KEYWORD_FIXES.items():
        if name not in kwargs or (name == "where" and (has_out or kwargs[name] is True)):
            continue
        raise NotImplementedError(
            f"{prim.name}: the keyword argument {name}= is not supported on traced values "
            f"(gradcy records the ufunc's plain call); {fix}"
        )
    if not has_out:
        kwargs.pop("where", None)
    dtype = kwargs.pop("dtype", None)
    casting = kwargs.get("casting", "same_kind")
    if not has_out:
        kwargs.pop("casting", None)  # (a cast into out= reads it)
    if dtype is None and casting == "same_kind":
        return args
    operands = args[: uf.nin]
    resolve = {"casting": casting}
    if dtype is not None:
        resolve["signature"] = (None,) * uf.nin + (_np.dtype(dtype),) * uf.nout
    try:
        loop = uf.resolve_dtypes(
            tuple(_operand_dtype(a) for a in operands) + (None,) * uf.nout, **resolve
        )
    except TypeError as e:  # (NumPy's UFuncTypeError too)
        what = "casting" if dtype is None else f"dtype={_np.dtype(dtype)} with casting"
        raise TypeError(
            f"{prim.name}: {what}={casting!r} is not possible for these arguments ({e}); "
            f"pass a dtype the arguments cast to, cast them first (x.astype(...)), or drop "
            f"{'casting' if dtype is None else 'dtype'}="
        ) from None
    cast = []
    for a, want in zip(operands, loop):
        v = _unwrap(a)
        if type(a) is Box:
            cast.append(a if getattr(v, "dtype", None) == want else astype(a, want))
        elif type(v) in (bool, int, float, complex):
            cast.append(want.type(v))  # (a weak scalar: NumPy casts it to the loop's dtype)
        else:
            v = v if hasattr(v, "dtype") else _np.asarray(v)
            cast.append(v if v.dtype == want else v.astype(want))
    return tuple(cast) + args[uf.nin :]


def _out_call(prim, args, kwargs):
    """A call of primitive `prim` that passes `out` (by position or keyword), or a ufunc's call
    with dtype= on traced values (_ufunc_loop_operands). Plain outputs receive plain results; a
    traced buffer (gradcy.numpy constructors make them inside a differentiation) receives a
    recorded write; a plain array never receives traced values."""
    if prim is _nan_to_num:
        return _nan_to_num_call(args, kwargs)
    kwargs = dict(kwargs)
    pos = prim.out_arg
    ufunc = isinstance(prim.fun, _np.ufunc)
    if ufunc and kwargs and _builtins.any(type(a) is Box for a in args):
        args = _ufunc_keywords(prim, args, kwargs)
    if len(args) > pos:
        if "out" in kwargs:
            raise TypeError(
                f"{prim.name}: cannot specify 'out' as both a positional and keyword argument"
            )
        if ufunc:
            out = args[pos:] if len(args) > pos + 1 else args[pos]
        else:
            tail = _OUT_TAIL.get(prim, ())
            if len(args) > pos + 1 + len(tail):
                raise TypeError(f"{prim.name}: too many positional arguments")
            kwargs.update(zip(tail, args[pos + 1 :]))
            out = args[pos]
        args = args[:pos]
    else:
        out = kwargs.pop("out", None)
    outs = out if type(out) is tuple else (out,)
    if _builtins.all(o is None for o in outs):
        return prim(*args, **kwargs)
    traced = prim.traced and _builtins.any(type(a) is Box for a in args)
    if not _builtins.any(type(o) is Box for o in outs):
        if traced:
            raise _plain_out_error(prim.name)
        # plain buffers; the function's values are constants (no traced argument, or a
        # non-differentiable function): they go in as numbers
        return prim.fun(*[_plain(a) for a in args], out=out, **kwargs)
    if not _out_honoured(prim):
        raise NotImplementedError(
            f"{prim.name}: this NumPy returns a new array rather than writing the result into "
            f"out=, so the buffer would not hold it; use the returned value instead"
        )
    where = kwargs.pop("where", True) if ufunc else True
    result = prim(*args, **kwargs)
    results = result if len(outs) > 1 else (result,)
    for o, r in zip(outs, results):
        if o is None:
            continue
        if type(o) is not Box:
            if traced:
                raise _plain_out_error(prim.name)
            o[...] = _plain(r)
            continue
        write_result(
            prim.name, o, r, where, broadcast=ufunc, casting=kwargs.get("casting", "same_kind")
        )
    return out[0] if type(out) is tuple and len(out) == 1 else out


def _nan_to_num_call(args, kwargs):
    """nan_to_num(x, copy, ...): copy=False writes into x; for a traced x that is a recorded
    write x[...] = result (an input's own array never changes)."""
    kwargs = dict(kwargs)
    if len(args) > 1:
        kwargs.update(zip(("copy", "nan", "posinf", "neginf"), args[1:]))
        args = args[:1]
    if kwargs.pop("copy", True):
        return _nan_to_num(*args, **kwargs)
    x = args[0]
    if type(x) is not Box:
        return _nan_to_num.fun(x, copy=False, **kwargs)  # numpy writes into the plain x
    x[...] = _nan_to_num(x, **kwargs)
    return x


def _plain(a):
    """The plain value inside a, whose elements the caller reads (a const_graph recording
    guards them: its replays check the value is the recorded one)."""
    while type(a) is Box:
        if a._tape.recorder is not None:  # a const_graph recording: its replays check these
            a._tape.recorder.read(a, "value", a._value)  # values (gradcy/misc/tracers.py)
        a = a._value
    return a


def _unwrap(a):
    """The plain value inside a, for bookkeeping that reads its identity, type, shape, dtype
    or memory only, never its elements (which buffer it is, zeros_like's shape): no read for
    a const_graph recording to guard."""
    while type(a) is Box:
        a = a._value
    return a


wrap_namespace(_np.__dict__, globals(), "gradcy.numpy")
_nan_to_num = globals()["nan_to_num"]
_nan_to_num.out_arg = 1  # the position of copy: copy=False writes into x
install_hooks(out=_out_call)

# NumPy aliases that are the same object under two names (max/amax, round/around...) each got
# their own primitive above; make each alias the primitive of its canonical name so every
# name shares one set of rules.
for _alias, _canonical in [
    ("amax", "max"),
    ("amin", "min"),
    ("around", "round"),
    ("abs", "absolute"),
    ("conj", "conjugate"),
    ("true_divide", "divide"),
    ("mod", "remainder"),
    ("acos", "arccos"),
    ("asin", "arcsin"),
    ("atan", "arctan"),
    ("acosh", "arccosh"),
    ("asinh", "arcsinh"),
    ("atanh", "arctanh"),
    ("atan2", "arctan2"),
    ("pow", "power"),
    ("concat", "concatenate"),
    ("permute_dims", "transpose"),
    ("bitwise_invert", "bitwise_not"),
    ("bitwise_left_shift", "left_shift"),
    ("bitwise_right_shift", "right_shift"),
    ("product", "prod"),
    ("cumproduct", "cumprod"),
    ("alltrue", "all"),
    ("sometrue", "any"),
]:
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


def _list_call(name, fn, arrays, axis, out, kwargs):
    """concatenate/stack with out=, dtype= or casting=: `fn(arrays, axis)` on traced arrays,
    cast as asked, written into a traced buffer `out`; a plain `out` takes plain values only."""
    traced = _builtins.any(type(a) is Box for a in arrays)
    if not traced and type(out) is not Box:
        return getattr(_np, name)(arrays, axis=axis, out=out, **kwargs)
    if out is not None and type(out) is not Box:
        raise _plain_out_error(f"gradcy.numpy.{name}")
    dtype = kwargs.pop("dtype", None)
    casting = kwargs.pop("casting", "same_kind")
    if kwargs:
        raise TypeError(f"gradcy.numpy.{name}: unexpected arguments {sorted(kwargs)}")
    result = fn(arrays, axis)
    if dtype is not None:
        if not _np.can_cast(result.dtype, dtype, casting):
            raise TypeError(
                f"gradcy.numpy.{name}: cannot cast from {result.dtype} to "
                f"{_np.dtype(dtype)} with casting rule {casting!r}"
            )
        result = astype(result, dtype)
    return (
        result
        if out is None
        else write_result(f"gradcy.numpy.{name}", out, result, casting=casting)
    )


def concatenate(arrays, axis=0, out=None, **kwargs):
    """numpy.concatenate; traced arrays in the list are traced parents."""
    if out is not None or kwargs:
        return _list_call("concatenate", concatenate, list(arrays), axis, out, kwargs)
    if not _builtins.any(type(a) is Box for a in arrays):
        return _np.concatenate(arrays, axis=axis)
    if axis is None:
        return concatenate_args(0, *[ravel(a) for a in arrays])
    return concatenate_args(axis, *arrays)


def stack(arrays, axis=0, out=None, **kwargs):
    """numpy.stack, traced."""
    arrays = list(arrays)
    if out is not None or kwargs:
        return _list_call("stack", stack, arrays, axis, out, kwargs)
    if not _builtins.any(type(a) is Box for a in arrays):
        return _np.stack(arrays, axis=axis)
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


for _name in [
    "array",
    "asarray",
    "concatenate",
    "stack",
    "hstack",
    "vstack",
    "dstack",
    "column_stack",
]:
    if hasattr(_np, _name):
        register_numpy_override(getattr(_np, _name), globals()[_name])
if hasattr(_np, "concat"):  # NumPy >= 2
    concat = concatenate


# =============================================================================
# Functions that write into their first argument (put, putmask, place, put_along_axis,
# fill_diagonal, copyto): into a traced buffer they are recorded writes buf[index] = values;
# into a plain array they take plain values only
# =============================================================================
def _writes_into(name):
    """Decorate `trace(a, *args, **kwargs)`, the traced form of numpy.<name> (which writes
    into a): plain arrays and values go to numpy; traced values into a plain array raise.
    NumPy first runs on plain copies, so arguments are checked, and errors raised, as NumPy
    does."""
    np_fn = getattr(_np, name)

    def decorate(trace):
        @functools.wraps(np_fn)
        def writer(a, *args, **kwargs):
            values_traced = _builtins.any(_contains_box(v) for v in args) or _builtins.any(
                type(v) is Box for v in kwargs.values()
            )
            if type(a) is not Box:
                if values_traced:
                    raise TracerArrayConversionError(
                        f"gradcy.numpy.{name}: argument 0 is a plain numpy array; writing "
                        f"traced values into it would drop their gradient. Create it with "
                        f"gradcy.numpy (zeros, empty, array, ...) inside the differentiated "
                        f"function, so the write is traced, or build the result functionally "
                        f"(a.at[index].set(values))."
                    )
                return np_fn(a, *args, **kwargs)
            np_fn(
                _np.array(_plain(a), copy=True),
                *[_plain_tree(v) for v in args],
                **{k: _plain(v) for k, v in kwargs.items()},
            )
            trace(a, *args, **kwargs)

        writer.__name__ = name
        writer.__qualname__ = name
        return writer

    return decorate


def _plain_tree(v):
    if isinstance(v, (list, tuple)):
        return type(v)(_plain_tree(e) for e in v)
    return _plain(v)


def _cycled(v, k):
    """The first k elements of v's flat values, repeated as often as needed (numpy.put's
    reading of values)."""
    v = ravel(asarray(v))
    n = _builtins.max(1, v.shape[0])
    return take(v, _np.arange(k) % n)


def _flat_write(a, positions, values):
    """a.flat[positions] = values (one value per position, later positions win) as a write
    into the traced buffer a."""
    positions = _np.asarray(positions, dtype=_np.intp)
    if positions.size == 0:
        return
    if a.ndim == 0:
        a[...] = values[-1] if ndim(values) else values
        return
    a[_np.unravel_index(positions, a.shape)] = values


@_writes_into("put")
def put(a, ind, v, mode="raise"):
    n = a.size
    ind = _np.asarray(_plain(ind), dtype=_np.intp).reshape(-1)
    if mode == "wrap":
        ind = ind % n
    elif mode == "clip":
        ind = _np.clip(ind, 0, n - 1)
    else:
        ind = _np.where(ind < 0, ind + n, ind)
    _flat_write(a, ind, _cycled(v, ind.size))


@_writes_into("putmask")
def putmask(a, mask, values):
    positions = _np.flatnonzero(_np.broadcast_to(_plain(mask), a.shape))
    n = _builtins.max(1, size(values))
    _flat_write(a, positions, take(ravel(asarray(values)), positions % n))


@_writes_into("place")
def place(arr, mask, vals):
    positions = _np.flatnonzero(_np.asarray(_plain(mask)).reshape(-1))
    _flat_write(arr, positions, _cycled(vals, positions.size))


@_writes_into("put_along_axis")
def put_along_axis(arr, indices, values, axis):
    indices = _np.asarray(_plain(indices))
    if axis is None:
        positions = indices.reshape(-1) % arr.size if arr.size else indices.reshape(-1)
        _flat_write(arr, positions, reshape(broadcast_to(values, indices.shape), (-1,)))
        return
    nd = arr.ndim
    axis = axis + nd if axis < 0 else axis
    index = tuple(
        indices
        if d == axis
        else _np.arange(arr.shape[d]).reshape((1,) * d + (-1,) + (1,) * (nd - d - 1))
        for d in range(nd)
    )
    arr[index] = values


@_writes_into("fill_diagonal")
def fill_diagonal(a, val, wrap=False):
    shape = a.shape
    if a.ndim == 2:
        step = shape[1] + 1
        end = None if wrap else shape[1] * shape[1]
    else:
        step = 1 + int(_np.cumprod(shape[:-1]).sum())
        end = None
    positions = _np.arange(a.size)[:end:step]
    _flat_write(a, positions, _cycled(val, positions.size))


@_writes_into("copyto")
def copyto(dst, src, casting="same_kind", where=True):
    where = _plain(where)
    if where is True:
        dst[...] = src
    else:
        dst[...] = where_(where, src, dst)


for _name in ["put", "putmask", "place", "put_along_axis", "fill_diagonal", "copyto"]:
    if hasattr(_np, _name):
        register_numpy_override(getattr(_np, _name), globals()[_name])


# =============================================================================
# where: autograd.numpy's (Python values for Python arguments)
# =============================================================================
def _numpy_or_traced(x):
    if type(x) is Box or isinstance(x, (_np.ndarray, _np.generic)):
        return True
    return isinstance(x, (list, tuple)) and _builtins.any(_numpy_or_traced(e) for e in x)


def custom_where(condition, *args, **kwargs):
    """numpy.where(condition[, x, y]), x and y also as keywords. As autograd.numpy.where: when
    no argument is a NumPy value (Python scalars and lists only), the result is a Python
    value (where(True, 1, 2) is 1, not array(1)). gradcy.numpy.where is this function as a
    primitive (traced values go positionally)."""
    if not args and not kwargs:
        return _np.where(condition)
    if len(args) + len(kwargs) != 2 or not set(kwargs) <= {"x", "y"} or (args and "x" in kwargs):
        raise ValueError("where: give both x and y (positionally or as x=, y=), or neither")
    x = args[0] if args else kwargs["x"]
    y = args[1] if len(args) > 1 else kwargs["y"]
    res = _np.where(condition, x, y)
    if not (_numpy_or_traced(condition) or _numpy_or_traced(x) or _numpy_or_traced(y)):
        return res.tolist() if isinstance(res, _np.ndarray) else res
    return res


where = primitive(custom_where, "gradcy.numpy.where")
register_numpy_override(_np.where, where)
where_ = where  # for the functions whose parameter `where` hides it


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
    while type(v) is Box:  # nested differentiation
        v = v._value
    if isinstance(v, (tuple, list)):
        return container_take(A, idx)
    return getitem(A, idx)


if hasattr(_np.ndarray, "mT"):

    def _mT(x):
        """x with its last two axes swapped (the VJP rules' transpose): a view of an ndarray,
        matrix_transpose of a traced value."""
        if type(x) is _np.ndarray:
            return x.mT
        # (Dask has no matrix_transpose: its fallback would compute the array)
        return swapaxes(x, -1, -2) if is_array_value(_unwrap(x)) else matrix_transpose(x)
else:  # NumPy 1.26: no ndarray.mT, no matrix_transpose

    def _mT(x):
        return x.swapaxes(-1, -2) if type(x) is _np.ndarray else swapaxes(x, -1, -2)


def _astype_impl(x, dtype, *args, **kwargs):
    if is_array_value(x):  # a Dask / CuPy array: its own astype, no conversion
        return x.astype(dtype, *args, **kwargs)
    return _np.asarray(x).astype(dtype, *args, **kwargs)


# the cast to a floating-point, complex or object dtype: a recorded operation (its rules in
# manipulation.py)
_astype_traced = primitive(_astype_impl, "gradcy.numpy._wrap.astype")


def astype(x, dtype, *args, **kwargs):
    """x.astype(dtype): a recorded operation for a floating-point, complex or object dtype; a
    constant (a plain array, zero derivative) for an integer, boolean, string or datetime
    dtype, as the derivative of rounding is zero (np.trunc, np.rint)."""
    if type(x) is Box and _np.dtype(dtype).kind not in "fcO":
        return _astype_impl(_plain(x), dtype, *args, **kwargs)
    return _astype_traced(x, dtype, *args, **kwargs)


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


def _value_of(x):
    while type(x) is Box:
        x = x._value
    return x


def _matmul_operator(a, b):
    """a @ b with a traced operand: numpy.matmul's primitive, except for a Dask operand where
    a matrix or a vector times a vector (X @ w; the same product as numpy.dot's): numpy.dot's
    primitive, whose Dask form for a tall problem is one blockwise layer (gradcy._dask_ops.dot)
    that Dask fuses with the elementwise work on each chunk, where Dask's matmul adds four
    layers that end the fusion (the chunk of X @ w then a task of its own on the workers)."""
    va, vb = _value_of(a), _value_of(b)
    if type(va) is _np.ndarray and type(vb) is _np.ndarray:
        return matmul(a, b)  # (the primitive wrap_namespace made)
    if (
        (_dask_ops.is_dask(va) or _dask_ops.is_dask(vb))
        and 1 <= _np.ndim(va) <= 2
        and _np.ndim(vb) == 1
        and _np.shape(va)[-1] == _np.shape(vb)[0]
    ):
        return dot(a, b)
    return matmul(a, b)


def _register_methods():
    g = globals()
    ops = {
        "add": "add",
        "subtract": "subtract",
        "multiply": "multiply",
        "true_divide": "divide",
        "floor_divide": "floor_divide",
        "mod": "remainder",
        "power": "power",
        "matmul": "matmul",
        "negative": "negative",
        "absolute": "absolute",
        "equal": "equal",
        "not_equal": "not_equal",
        "less": "less",
        "less_equal": "less_equal",
        "greater": "greater",
        "greater_equal": "greater_equal",
        "real": "real",
        "imag": "imag",
        "conj": "conjugate",
        "bitwise_and": "bitwise_and",
        "bitwise_or": "bitwise_or",
        "bitwise_xor": "bitwise_xor",
        "invert": "invert",
    }
    for method, fn in ops.items():
        register_box_method(method, g[fn])
    register_box_method("matmul", _matmul_operator)
    for name in [
        "sum",
        "mean",
        "prod",
        "max",
        "min",
        "var",
        "std",
        "cumsum",
        "cumprod",
        "ptp",
        "argmax",
        "argmin",
        "argsort",
        "nonzero",
        "all",
        "any",
        "swapaxes",
        "ravel",
        "squeeze",
        "repeat",
        "dot",
        "clip",
        "round",
        "take",
        "trace",
        "diagonal",
    ]:
        if name in g:
            register_box_method(name, g[name])
    register_box_method("reshape", _method_reshape)
    register_box_method("transpose", _method_transpose)
    register_box_method("flatten", _method_flatten)
    register_box_method("copy", _method_copy)
    register_box_method("item", _method_item)
    register_box_method("astype", astype)
    if hasattr(_np, "astype"):  # numpy.astype (NumPy 2)
        register_numpy_override(_np.astype, astype)
    register_box_method("__getitem__", _box_getitem)
    install_hooks(getitem=getitem)


_register_methods()


__all__ = [
    name
    for name in globals()
    if not name.startswith("_")
    and name not in ("types", "register_box_method", "register_numpy_override")
]
