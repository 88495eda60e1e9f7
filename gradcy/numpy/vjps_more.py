"""VJPs and JVPs of the rest of gradcy.numpy: statistics (quantile percentile and their nan*
variants, cov, corrcoef), interpolation and integration (interp, trapezoid, gradient, diff,
ediff1d), signals and polynomials (convolve, correlate, vander, polyval polyadd polysub polymul
polyder polyint), ranges (linspace logspace geomspace), NumPy 2's cumulative_sum and
cumulative_prod, tuple-valued ufuncs (modf frexp divmod), conversions (asanyarray
ascontiguousarray asfortranarray asarray_chkfinite require real_if_close unwrap), and the
"selection" functions whose outputs are copies of their inputs' elements (append insert delete
resize diagflat extract choose select meshgrid unstack broadcast_arrays trim_zeros sort_complex).

Conventions as in the other tables (numpy_vjps.py). Specific to this one:
- Selection functions share one rule: the function is re-run at backward time on integer
  *markers* (1..N in place of the differentiated argument, 0 in the other differentiable ones),
  which says where each input element went; the cotangent is gathered back with a scatter-add
  (differentiable: vjps_shape.untake). Only the non-differentiable array arguments (indices,
  conditions) are saved; the differentiated arrays are kept as metadata.
- Piecewise-linear statistics (quantiles, median-like) weight the order statistics on the
  plain values (ties split evenly, like max and median); the weights are constants for
  differentiation, so the rules differentiate again.
- choose, select and block accept lists of traced arrays: front ends (installed as
  gradcy.numpy.choose / select / block, and as the overrides of numpy's) stack such lists into
  one traced argument; block is a composite of concatenate.

The set operations (unique and unique_*, union1d, intersect1d, setdiff1d, setxor1d) select
input values: front ends gather their value outputs from the inputs with take, so the gradient
goes to the selected positions. Where a value occurs more than once among the inputs the output
takes it from its first occurrence (the index unique(..., return_index=True) reports; for
intersect1d, the first in ar1): a definite one-sided choice, exact wherever values are distinct.
Their integer outputs (indices, inverse, counts) are constants.

Functions with no derivative (integer, boolean results: nanargmax, lexsort, tril_indices,
window constructors...) are marked non-differentiable here: traced values pass through them
unrecorded.
"""
import inspect
import operator
import sys

import numpy as _onp

from .._core import ArrayMeta, Box, register_numpy_override
from ..extend import defjvp, defjvp_argnums, defvjp, defvjp_argnums, nondifferentiable
from . import numpy_wrapper as anp
from .vjp_util import cast_like, shape_dtype, unbroadcast
from .vjps_reductions import _cumprod_grad, _cumprod_tangent, _revcumsum
from .vjps_shape import untake

_ndarray = _onp.ndarray
_NoValue = _onp._NoValue
_intp = _onp.intp


# =============================================================================
# Helpers
# =============================================================================
def _plain(v):
    """The plain value under any number of traced layers."""
    while type(v) is Box:
        v = v._value
    return v


def _shape(x):
    """Shape of an argument as a rule sees it (array, Box, ArrayMeta, scalar, (nested) list)."""
    t = type(x)
    if t is ArrayMeta or t is _ndarray or t is Box:
        return tuple(x.shape)
    if t is tuple or t is list:
        if x and any(type(e) in (ArrayMeta, Box, _ndarray) for e in x):
            return (len(x),) + _shape(x[0])
        return _onp.shape(x)
    return _onp.shape(x)


def _dtype(x):
    return shape_dtype(x)[1] if type(x) not in (list, tuple) else _onp.result_type(
        *[_dtype(e) for e in x]) if x else _onp.dtype(_onp.float64)


def _size(shape):
    n = 1
    for d in shape:
        n *= d
    return n


def _is_complex(x):
    return _dtype(x).kind == "c"


def _at(ax, s):
    """The index selecting `s` along axis ax (a non-negative int)."""
    return (slice(None),) * ax + (s,)


def _norm_axis(axis, ndim):
    return operator.index(axis) % ndim if ndim else 0


def _float_dtype(dtype):
    return dtype if dtype.kind in "fc" else _onp.dtype(_onp.float64)


def _binder(fun):
    """bind(args, kwargs) -> dict of every parameter of `fun` (defaults filled in); *args of a
    variadic signature come as a tuple under their name."""
    sig = inspect.signature(fun)

    def bind(args, kwargs):
        b = sig.bind(*args, **(kwargs or {}))
        b.apply_defaults()
        return b.arguments
    return bind


def _positions(fun):
    """name -> position of fun's positional parameters."""
    out = {}
    for i, p in enumerate(inspect.signature(fun).parameters.values()):
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD):
            out[p.name] = i
    return out


def _set_namespace(name, fn, numpy_fn=None):
    """Make gradcy.numpy.<name> (and numpy_wrapper.<name>) the front end `fn`, and route
    numpy's function of that name on traced values to it."""
    setattr(anp, name, fn)
    pkg = sys.modules.get("gradcy.numpy")
    if pkg is not None:
        setattr(pkg, name, fn)
    if numpy_fn is not None:
        register_numpy_override(numpy_fn, fn)


def _contains_box(obj):
    if type(obj) is Box:
        return True
    if isinstance(obj, (list, tuple)):
        return any(_contains_box(e) for e in obj)
    return False


# =============================================================================
# Selection functions: outputs are copies of input elements (a scatter-add transposes them)
# =============================================================================
def _scatter(g, m, shape, dtype):
    """The transpose of `take(ravel(x), m)` (m: int markers into x, -1 = not from x), applied
    to g: a `shape` array with g's entries added at their markers."""
    n = _size(shape)
    m = _onp.asarray(m, dtype=_intp).reshape(-1)
    gf = anp.reshape(g, (-1,))
    keep = m >= 0
    if not keep.all():
        pos = _onp.flatnonzero(keep)
        gf = anp.take(gf, pos)
        m = m[pos]
    if m.size == 0:
        return _onp.zeros(shape, dtype)
    if m.size == n and (m.size < 2 or (_onp.diff(m) > 0).all()):
        out = anp.reshape(gf, (n,))              # a permutation-free copy: every slot once
    elif (m.size < 2 or (_onp.diff(m) > 0).all()):
        mask = _onp.zeros(n, bool)
        mask[m] = True                           # increasing unique markers: a bool-mask scatter
        out = untake(gf, mask, (n,), dtype)
    else:
        out = untake(gf, m, (n,), dtype)
    return cast_like(anp.reshape(out, shape), dtype)


def _gathered(t, m):
    """take(ravel(t), m) with 0 where m < 0: the tangent of a selection."""
    m = _onp.asarray(m, dtype=_intp)
    tf = anp.reshape(t, (-1,))
    keep = m >= 0
    if keep.all():
        return anp.take(tf, m)
    return anp.where(keep, anp.take(tf, _onp.where(keep, m, 0)), 0.0)


def _selection(prim, diff, save=()):
    """Register the rules of a selection primitive whose differentiable array arguments are
    `diff` (positions); `save` lists the other array arguments the function needs (indices,
    conditions)."""
    fun = prim.fun
    names = {pos: name for name, pos in _positions(fun).items()}
    varargs = any(p.kind == p.VAR_POSITIONAL for p in inspect.signature(fun).parameters.values())

    def markers(k, args, kwargs):
        new = list(args)
        kw = dict(kwargs or {})
        targets = range(len(args)) if varargs else diff
        for j in targets:
            if j < len(new):
                shape = _shape(new[j])
                m = (_onp.arange(1, _size(shape) + 1, dtype=_intp).reshape(shape)
                     if j == k else _onp.zeros(shape, _intp))
                # a NumPy scalar stays one (NumPy 1.x's diagflat of a scalar is a scalar)
                new[j] = m[()] if isinstance(new[j], _onp.generic) else m
            elif names.get(j) in kw and kw[names[j]] is not None:
                kw[names[j]] = _onp.zeros(_onp.shape(kw[names[j]]), _intp)
        out = fun(*new, **kw)
        if isinstance(out, (tuple, list)):
            return [_onp.asarray(o) - 1 for o in out]
        return _onp.asarray(out) - 1

    def vjp_maker(k):
        def maker(ans, *args, **kwargs):
            shape, dtype = _shape(args[k]), _dtype(args[k])

            def vjp(g):
                m = markers(k, args, kwargs)
                if type(m) is list:
                    total = None
                    for gi, mi in zip(g, m):
                        if gi is None:
                            continue
                        c = _scatter(gi, mi, shape, dtype)
                        total = c if total is None else total + c
                    return total
                return _scatter(g, m, shape, dtype)
            return vjp
        return maker

    def jvp_rule(k):
        def jvp(g, ans, *args, **kwargs):
            m = markers(k, args, kwargs)
            if type(m) is list:
                return tuple(_gathered(g, mi) for mi in m)
            return _gathered(g, m)
        return jvp

    nmax = max(diff) + 1 if diff else 0
    if varargs:
        nmax = 32
    makers = [vjp_maker(k) if (varargs or k in diff) else None for k in range(nmax)]
    jvps = [jvp_rule(k) if (varargs or k in diff) else None for k in range(nmax)]
    defvjp(prim, *makers, save=save)
    defjvp(prim, *jvps)


_selection(anp.append, (0, 1))
_selection(anp.insert, (0, 2), save=(1,))
_selection(anp.delete, (0,), save=(1,))
_selection(anp.resize, (0,))
_selection(anp.diagflat, (0,))
_selection(anp.extract, (1,), save=(0,))
_selection(anp.choose, (1,), save=(0,))
_selection(anp.select, (1, 2), save=(0,))
_selection(anp.meshgrid, ())         # variadic: every positional argument
if hasattr(anp, "unstack"):
    _selection(anp.unstack, (0,))


# broadcast_arrays: each output is its argument broadcast (unbroadcast is the transpose)
def _broadcast_arrays_vjp(argnums, ans, args, kwargs):
    def vjp(g):
        return tuple(None if g[k] is None else unbroadcast(g[k], args[k]) for k in argnums)
    return vjp


def _broadcast_arrays_jvp(argnums, gs, ans, args, kwargs):
    ts = dict(zip(argnums, gs))
    outs = _plain(ans)
    return tuple(anp.broadcast_to(ts[k], _shape(a)) if k in ts else
                 _onp.zeros(_shape(a), _dtype(a)) for k, a in enumerate(outs))


defvjp_argnums(anp.broadcast_arrays, _broadcast_arrays_vjp, save=())
defjvp_argnums(anp.broadcast_arrays, _broadcast_arrays_jvp)


# trim_zeros: a slice decided by where the input's nonzeros are
def _trim_slices(filt, trim="fb", axis=None):
    f = _onp.asarray(_plain(filt))
    axes = (tuple(range(f.ndim)) if axis is None else
            tuple(_norm_axis(a, f.ndim) for a in (axis if isinstance(axis, (tuple, list))
                                                 else (axis,))))
    nz = _onp.argwhere(f != 0)
    if nz.size == 0:
        start = stop = _onp.zeros(f.ndim, _intp)
    else:
        start = nz.min(axis=0) if "f" in trim else [None] * f.ndim
        stop = nz.max(axis=0) + 1 if "b" in trim else [None] * f.ndim
    return tuple(slice(start[a], stop[a]) if a in axes else slice(None) for a in range(f.ndim))


def _trim_zeros_vjp(ans, filt, trim="fb", axis=None):
    shape, dtype = _shape(filt), _dtype(filt)
    return lambda g: cast_like(untake(g, _trim_slices(filt, trim, axis), shape, dtype), dtype)


defvjp(anp.trim_zeros, _trim_zeros_vjp, save=(0,))
defjvp(anp.trim_zeros, lambda g, ans, filt, trim="fb", axis=None:
       anp.getitem(g, _trim_slices(filt, trim, axis)))


# sort_complex: a permutation along the last axis (lexicographic on real, imaginary parts)
def _sort_complex_perm(a):
    return _onp.argsort(_onp.asarray(_plain(a)), axis=-1, kind="stable")


def _sort_complex_vjp(ans, a):
    dtype = _dtype(a)

    def vjp(g):
        perm = _sort_complex_perm(a)
        if perm.ndim == 0:
            return cast_like(g, dtype)
        inv = _onp.argsort(perm, axis=-1)
        return cast_like(anp.take_along_axis(g, inv, -1), dtype)
    return vjp


def _sort_complex_jvp(g, ans, a):
    perm = _sort_complex_perm(a)
    return g if perm.ndim == 0 else anp.take_along_axis(g, perm, -1)


defvjp(anp.sort_complex, _sort_complex_vjp, save=(0,))
defjvp(anp.sort_complex, _sort_complex_jvp)


# =============================================================================
# Set operations: the value outputs are input values gathered at their first occurrences
# =============================================================================
def _occurrences(a, v):
    """Positions in the 1-D array `a` of the values `v` (each one of a's values): the k-th
    copy of a value in v (in v's order) at the value's k-th occurrence in a (the first, when v
    has no repeats). NaNs match NaNs."""
    order = _onp.argsort(a, kind="stable")
    start = _onp.searchsorted(a[order], v, side="left")   # first of its run (NaNs sort last)
    ov = _onp.argsort(v, kind="stable")
    sv = v[ov]
    if sv.size:
        first = _onp.ones(sv.size, bool)
        first[1:] = ~((sv[1:] == sv[:-1]) | (_onp.isnan(sv[1:]) & _onp.isnan(sv[:-1])))
        runs = _onp.maximum.accumulate(_onp.where(first, _onp.arange(sv.size), 0))
        rank = _onp.empty(sv.size, _intp)
        rank[ov] = _onp.arange(sv.size) - runs
        start = start + rank
    idx = order[_onp.minimum(start, max(a.size - 1, 0))] if a.size else start
    found = a[idx]
    if not ((found == v) | (_onp.isnan(found) & _onp.isnan(v))).all():
        raise NotImplementedError("gradcy.numpy: a set operation's output has values its inputs "
                                  "do not hold; no gradient rule applies")
    return idx


def _gather_values(arrays, values):
    """The output `values` of a set operation of `arrays` (some traced), gathered from the
    arrays' flat values at their first occurrences: a traced array equal to `values`."""
    flat = [anp.ravel(a) if type(a) is Box else _onp.ravel(a) for a in arrays]
    cat = flat[0] if len(flat) == 1 else anp.concatenate(flat)
    values = _onp.asarray(values)
    idx = _occurrences(_onp.asarray(_plain(cat)), values.reshape(-1))
    return anp.reshape(anp.take(cat, idx), values.shape)


def _set_front(name, arrays):
    """gradcy.numpy.<name>: numpy's function on plain values; with traced inputs, its value
    output (the result, or a result tuple's first element) gathered from the arguments named
    `arrays`; the other outputs (indices, inverse, counts) are integer constants."""
    np_fn = getattr(_onp, name)
    bind = _binder(np_fn)

    def front(*args, **kwargs):
        if not any(type(a) is Box for a in args) and not any(
                type(v) is Box for v in kwargs.values()):
            return np_fn(*args, **kwargs)
        result = np_fn(*[_plain(a) for a in args], **{k: _plain(v) for k, v in kwargs.items()})
        b = bind(args, kwargs)
        first = result[0] if isinstance(result, tuple) else result
        if name == "unique" and b["axis"] is not None:
            # unique slices along an axis: taken at their first occurrences (return_index)
            again = dict(b, return_index=True, return_inverse=False, return_counts=False)
            index = _onp.unique(_plain(again.pop("ar")), **again)[1]
            values = anp.take(b["ar"], index, axis=b["axis"])
        else:
            values = _gather_values([b[n] for n in arrays], first)
        if not isinstance(result, tuple):
            return values
        if hasattr(result, "_fields"):
            return result._replace(**{result._fields[0]: values})
        return (values,) + tuple(result[1:])
    front.__name__ = front.__qualname__ = name
    front.__doc__ = np_fn.__doc__
    _set_namespace(name, front, np_fn)
    return front


_set_front("unique", ("ar",))
for _name in ("unique_values", "unique_counts", "unique_inverse", "unique_all"):
    if hasattr(_onp, _name):
        _set_front(_name, ("x",))
for _name in ("union1d", "intersect1d", "setdiff1d", "setxor1d"):
    _set_front(_name, ("ar1", "ar2"))


# =============================================================================
# Front ends for lists of traced arrays: choose, select, block
# =============================================================================
_choose_p, _select_p = anp.choose, anp.select


def _stacked(arrays):
    """A list of arrays (some traced) as one traced array: broadcast together, then stacked."""
    arrays = [anp.asarray(a) for a in arrays]
    return anp.stack(list(anp.broadcast_arrays(*arrays)))


def choose(a, choices, out=None, mode="raise"):
    """numpy.choose; `choices` may be a list holding traced arrays."""
    if isinstance(choices, (list, tuple)) and _contains_box(choices):
        choices = _stacked(choices)
    if out is not None:
        return _choose_p(a, choices, out=out, mode=mode)
    return _choose_p(a, choices, mode=mode) if mode != "raise" else _choose_p(a, choices)


def select(condlist, choicelist, default=0):
    """numpy.select; `choicelist` may be a list holding traced arrays, `default` traced."""
    if isinstance(choicelist, (list, tuple)) and _contains_box(choicelist):
        choicelist = _stacked(choicelist)
    return _select_p(condlist, choicelist, default)


def _block_depth(obj):
    """The list nesting depth of block's argument, checked to be the same for every leaf."""
    if not isinstance(obj, list):
        return 0
    if not obj:
        raise ValueError("gradcy.numpy.block: lists cannot be empty")
    depths = {_block_depth(e) for e in obj}
    if len(depths) != 1:
        raise ValueError("gradcy.numpy.block: list depths are mismatched")
    return depths.pop() + 1


def _block_leaves(obj):
    if isinstance(obj, list):
        for e in obj:
            yield from _block_leaves(e)
    else:
        yield obj


def block(arrays):
    """numpy.block; traced arrays anywhere in the nested lists are traced parents (a composite
    of concatenate)."""
    if not _contains_box(arrays):
        return _onp.block(arrays)
    if isinstance(arrays, tuple):
        raise TypeError("gradcy.numpy.block: arrays is a tuple; only lists can be used to "
                        "arrange blocks")
    depth = _block_depth(arrays)
    ndim = max([depth] + [len(_shape(e)) for e in _block_leaves(arrays)])

    def build(obj, level):
        if isinstance(obj, list):
            return anp.concatenate([build(e, level + 1) for e in obj], axis=level - depth)
        shape = _shape(obj)
        target = (1,) * (ndim - len(shape)) + tuple(shape)
        if type(obj) is Box:
            return anp.reshape(obj, target) if target != tuple(shape) else obj
        return _onp.reshape(_onp.asarray(obj), target)
    return build(arrays, 0)


_set_namespace("choose", choose, _onp.choose)
_set_namespace("select", select, _onp.select)
_set_namespace("block", block, _onp.block)


# =============================================================================
# Identity-like conversions
# =============================================================================
def _identity_vjp(ans, x, *args, **kwargs):
    shape, dtype = _shape(x), _dtype(x)
    if _shape(ans) != shape:            # ascontiguousarray & co. make 0-d inputs 1-d
        return lambda g: cast_like(anp.reshape(g, shape), dtype)
    return lambda g: cast_like(g, dtype)


def _identity_jvp(g, ans, x, *args, **kwargs):
    return g


for _name in ("asanyarray", "ascontiguousarray", "asfortranarray", "asarray_chkfinite",
              "require", "unwrap"):
    _p = getattr(anp, _name, None)
    if _p is not None and hasattr(_p, "vjpmakers"):
        defvjp(_p, _identity_vjp, save=())
        defjvp(_p, _identity_jvp)


def _real_if_close_vjp(ans, a, *args, **kwargs):
    dtype = _dtype(a)
    return lambda g: cast_like(g, dtype)       # complex input, real output: g as complex


def _real_if_close_jvp(g, ans, a, *args, **kwargs):
    if _is_complex(a) and not _is_complex(ans):
        return anp.real(g)
    return g


defvjp(anp.real_if_close, _real_if_close_vjp, save=())
defjvp(anp.real_if_close, _real_if_close_jvp)

# full(shape, fill_value) and full_like(a, fill_value): the fill broadcast (its VJP sums).
# gradcy.numpy.full / full_like are inplace.py's owning constructors, which take plain values;
# these rules serve the primitives numpy_wrapper.full / full_like.
def _fill_vjp(ans, *args, **kwargs):
    fill = args[1] if len(args) > 1 else kwargs.get("fill_value")
    dtype = _dtype(fill)
    if _dtype(ans).kind not in "fc":
        return lambda g: None
    return lambda g: cast_like(unbroadcast(g, fill), dtype)


def _fill_jvp(g, ans, *args, **kwargs):
    if _dtype(ans).kind not in "fc":
        return None
    return anp.broadcast_to(g, _shape(ans))


for _p in (anp.full, anp.full_like):
    defvjp(_p, None, _fill_vjp, save=())
    defjvp(_p, None, _fill_jvp)


# nextafter(x, y) moves x by one ulp: slope 1 in x, piecewise constant in y
defvjp(anp.nextafter, lambda ans, x, y, **kw: lambda g: unbroadcast(g, x), None, save=())
defjvp(anp.nextafter, lambda g, ans, x, y, **kw: g, None)


# =============================================================================
# Tuple-valued ufuncs: modf, frexp, divmod
# =============================================================================
def _zero_tangent(a):
    return _onp.zeros(_shape(a), _dtype(a))


def _modf_vjp(ans, x, **kwargs):
    dtype = _dtype(x)
    return lambda g: None if g[0] is None else cast_like(unbroadcast(g[0], x), dtype)


defvjp(anp.modf, _modf_vjp, save=())
defjvp(anp.modf, lambda g, ans, x, **kw: (g, _zero_tangent(ans[1])))


def _frexp_vjp(ans, x, **kwargs):
    dtype = _dtype(x)
    e = ans[1]
    return lambda g: None if g[0] is None else cast_like(anp.ldexp(g[0], -e), dtype)


defvjp(anp.frexp, _frexp_vjp, save=("ans",))
defjvp(anp.frexp, lambda g, ans, x, **kw: (anp.ldexp(g, -ans[1]), _zero_tangent(ans[1])))


def _divmod_vjp_x(ans, x, y, **kwargs):
    return lambda g: None if g[1] is None else unbroadcast(g[1], x)


def _divmod_vjp_y(ans, x, y, **kwargs):
    return lambda g: None if g[1] is None else unbroadcast(-g[1] * anp.floor_divide(x, y), y)


defvjp(anp.divmod, _divmod_vjp_x, _divmod_vjp_y, save=(0, 1))
defjvp(anp.divmod,
       lambda g, ans, x, y, **kw: (_zero_tangent(ans[0]), g),
       lambda g, ans, x, y, **kw: (_zero_tangent(ans[0]), -g * anp.floor_divide(x, y)))


# i0' = i1 (scipy.special.i1; numpy has no i1)
def _i1(x):
    try:
        from ..scipy import special
    except ImportError as e:        # pragma: no cover - scipy is optional
        raise NotImplementedError("gradcy.numpy.i0: the derivative needs scipy "
                                  "(scipy.special.i1)") from e
    return special.i1(x)


defvjp(anp.i0, lambda ans, x: lambda g: cast_like(g * _i1(x), _dtype(x)), save=(0,))
defjvp(anp.i0, lambda g, ans, x: g * _i1(x))


# =============================================================================
# cumulative_sum, cumulative_prod (NumPy 2.1+)
# =============================================================================
def _cum_axis(x, axis):
    nd = len(_shape(x))
    return 0 if axis is None or nd == 0 else _norm_axis(axis, nd)


def _drop_initial(g, ax, include_initial):
    return anp.getitem(g, _at(ax, slice(1, None))) if include_initial else g


if hasattr(anp, "cumulative_sum"):
    def _cumulative_sum_vjp(ans, x, axis=None, dtype=None, out=None, include_initial=False):
        shape, xdtype = _shape(x), _dtype(x)
        ax = _cum_axis(x, axis)

        def vjp(g):
            g = _drop_initial(cast_like(g, xdtype), ax, include_initial)
            if not shape:
                return anp.reshape(g, ())
            return _revcumsum(g, ax)
        return vjp

    def _cumulative_sum_jvp(g, ans, x, axis=None, dtype=None, out=None,
                            include_initial=False):
        return anp.cumulative_sum(g, axis=axis, include_initial=include_initial)

    defvjp(anp.cumulative_sum, _cumulative_sum_vjp, save=())
    defjvp(anp.cumulative_sum, _cumulative_sum_jvp)

if hasattr(anp, "cumulative_prod"):
    def _cumulative_prod_vjp(ans, x, axis=None, dtype=None, out=None, include_initial=False):
        shape, xdtype = _shape(x), _dtype(x)
        ax = _cum_axis(x, axis)

        def vjp(g):
            g = _drop_initial(cast_like(g, xdtype), ax, include_initial)
            y = _drop_initial(cast_like(ans, xdtype), ax, include_initial)
            if not shape:
                return anp.reshape(g, ())
            return _cumprod_grad(g, y, x, ax)
        return vjp

    def _cumulative_prod_jvp(g, ans, x, axis=None, dtype=None, out=None,
                             include_initial=False):
        ax = _cum_axis(x, axis)
        if not _shape(x):
            t = anp.reshape(g, (1,))
        else:
            y = _drop_initial(ans, ax, include_initial)
            t = _cumprod_tangent(g, y, x, ax)
        if include_initial:
            zshape = list(_shape(t))
            zshape[ax] = 1
            t = anp.concatenate([_onp.zeros(zshape, _dtype(t)), t], axis=ax)
        return t

    defvjp(anp.cumulative_prod, _cumulative_prod_vjp, save=(0, "ans"))
    defjvp(anp.cumulative_prod, _cumulative_prod_jvp)


# =============================================================================
# diff, ediff1d
# =============================================================================
def _diff_parts(a, axis, prepend, append):
    """(axis, the shapes of prepend, a, append as concatenated by diff; None = absent)."""
    shape = _shape(a)
    ax = _norm_axis(axis, len(shape))

    def piece(v):
        if v is _NoValue:
            return None
        s = _shape(v)
        if len(s) == 0:
            s = tuple(1 if i == ax else n for i, n in enumerate(shape))
        return s
    return ax, piece(prepend), shape, piece(append)


def _diff_transpose(g, n, ax):
    """The transpose of diff(., n, ax): (-1)^n diff(pad(g, n on both sides), n)."""
    pad = [(0, 0)] * len(_shape(g))
    pad[ax] = (n, n)
    out = anp.diff(anp.pad(g, pad), n, ax)
    return -out if n % 2 else out


def _diff_vjp_for(which):
    def maker(ans, a, n=1, axis=-1, prepend=_NoValue, append=_NoValue):
        ax, ps, shape, qs = _diff_parts(a, axis, prepend, append)
        target = {0: a, 3: prepend, 4: append}[which]
        dtype = _dtype(target)
        start = 0 if which != 0 else (ps[ax] if ps is not None else 0)
        if which == 4:
            start = (ps[ax] if ps is not None else 0) + shape[ax]
        length = {0: shape[ax], 3: ps[ax] if ps else 0, 4: qs[ax] if qs else 0}[which]

        if n == 0:                      # diff(a, 0) is a itself (prepend, append unused)
            return lambda g: cast_like(g, dtype) if which == 0 else None

        def vjp(g):
            g = cast_like(g, dtype) if dtype.kind in "fc" else g
            ge = _diff_transpose(g, n, ax)
            part = anp.getitem(ge, _at(ax, slice(start, start + length)))
            return cast_like(unbroadcast(part, target) if which else part, dtype)
        return vjp
    return maker


def _diff_jvp_for(which):
    def jvp(g, ans, a, n=1, axis=-1, prepend=_NoValue, append=_NoValue):
        if n == 0:
            return g if which == 0 else None
        ax, ps, shape, qs = _diff_parts(a, axis, prepend, append)
        dtype = _dtype(g)
        pieces = []
        for k, s in ((3, ps), (0, shape), (4, qs)):
            if s is None:
                continue
            pieces.append(anp.broadcast_to(g, s) if k == which else _onp.zeros(s, dtype))
        ext = pieces[0] if len(pieces) == 1 else anp.concatenate(pieces, axis=ax)
        return anp.diff(ext, n, ax)
    return jvp


defvjp(anp.diff, _diff_vjp_for(0), None, None, _diff_vjp_for(3), _diff_vjp_for(4), save=())
defjvp(anp.diff, _diff_jvp_for(0), None, None, _diff_jvp_for(3), _diff_jvp_for(4))


def _ediff1d_sizes(ary, to_end, to_begin):
    nb = 0 if to_begin is None else _size(_shape(to_begin))
    ne = 0 if to_end is None else _size(_shape(to_end))
    return nb, max(_size(_shape(ary)) - 1, 0), ne


def _ediff1d_vjp(which):
    def maker(ans, ary, to_end=None, to_begin=None):
        nb, nd, ne = _ediff1d_sizes(ary, to_end, to_begin)
        target = {0: ary, 1: to_end, 2: to_begin}[which]
        shape, dtype = _shape(target), _dtype(target)

        def vjp(g):
            if which == 2:
                return cast_like(anp.reshape(anp.getitem(g, slice(0, nb)), shape), dtype)
            if which == 1:
                return cast_like(anp.reshape(anp.getitem(g, slice(nb + nd, None)), shape),
                                 dtype)
            gd = anp.getitem(g, slice(nb, nb + nd))
            return cast_like(anp.reshape(_diff_transpose(gd, 1, 0), shape), dtype)
        return vjp
    return maker


def _ediff1d_jvp(which):
    def jvp(g, ans, ary, to_end=None, to_begin=None):
        nb, nd, ne = _ediff1d_sizes(ary, to_end, to_begin)
        dtype = ans.dtype
        parts = []
        if nb:
            parts.append(anp.reshape(g, (-1,)) if which == 2 else _onp.zeros(nb, dtype))
        if which == 0:
            parts.append(anp.diff(anp.reshape(g, (-1,))))
        else:
            parts.append(_onp.zeros(nd, dtype))
        if ne:
            parts.append(anp.reshape(g, (-1,)) if which == 1 else _onp.zeros(ne, dtype))
        return parts[0] if len(parts) == 1 else anp.concatenate(parts)
    return jvp


defvjp(anp.ediff1d, _ediff1d_vjp(0), _ediff1d_vjp(1), _ediff1d_vjp(2), save=())
defjvp(anp.ediff1d, _ediff1d_jvp(0), _ediff1d_jvp(1), _ediff1d_jvp(2))


# =============================================================================
# gradient: a banded linear map along each axis (coefficients read off numpy itself)
# =============================================================================
_gradient_bind = _binder(_onp.gradient)


def _gradient_axes(f, kw):
    nd = len(_shape(f))
    axis = kw["axis"]
    if axis is None:
        return tuple(range(nd))
    if isinstance(axis, (tuple, list)):
        return tuple(_norm_axis(a, nd) for a in axis)
    return (_norm_axis(axis, nd),)


def _gradient_band(L, spacing, edge_order):
    """(cols, C): row i of gradient's matrix along an axis of length L holds C[i, k] at column
    cols[i, k] (k < 3, a window of consecutive columns; every other entry of the row is 0).
    A window's columns have distinct residues mod 3, so applying numpy.gradient to the three
    combs (column % 3 == r) reads every coefficient."""
    w = min(3, L)
    start = _onp.clip(_onp.arange(L) - 1, 0, L - w)
    cols = start[:, None] + _onp.arange(w)[None, :]
    probes = [_onp.gradient((_onp.arange(L) % 3 == r).astype(float), spacing,
                            edge_order=edge_order) for r in range(3)]
    P = _onp.stack(probes)                      # (3, L)
    C = P[cols % 3, _onp.arange(L)[:, None]]    # (L, w)
    return cols, C


def _gradient_transpose(g, ax, cols, C, dtype):
    """The transpose of gradient along axis ax applied to g."""
    gm = anp.moveaxis(g, ax, -1)
    mshape = _shape(gm)
    total = None
    for k in range(cols.shape[1]):
        contrib = gm * C[:, k].astype(_float_dtype(dtype) if dtype.kind == "f" else C.dtype)
        part = untake(contrib, (Ellipsis, cols[:, k]), mshape, dtype)
        total = part if total is None else total + part
    return anp.moveaxis(total, -1, ax)


def _gradient_spacings(f, kw, axes):
    varargs = kw["varargs"]
    n = len(axes)
    if len(varargs) == 0:
        return [1.0] * n
    if len(varargs) == 1 and _onp.ndim(_plain(varargs[0])) == 0:
        return [_plain(varargs[0])] * n
    return [_onp.asarray(_plain(v)) if _onp.ndim(_plain(v)) else _plain(v) for v in varargs]


def _gradient_vjp(ans, f, *args, **kwargs):
    kw = _gradient_bind((f,) + args, kwargs)
    shape, dtype = _shape(f), _dtype(f)
    axes = _gradient_axes(f, kw)
    edge = kw["edge_order"]
    spacings = _gradient_spacings(f, kw, axes)
    single = len(axes) == 1

    def vjp(g):
        gs = (g,) if single else g
        total = None
        for ax, sp, gi in zip(axes, spacings, gs):
            if gi is None:
                continue
            cols, C = _gradient_band(shape[ax], sp, edge)
            part = _gradient_transpose(gi, ax, cols, C, _float_dtype(dtype))
            total = part if total is None else total + part
        return None if total is None else cast_like(total, dtype)
    return vjp


def _gradient_jvp(g, ans, f, *args, **kwargs):
    return anp.gradient(g, *[_plain(a) for a in args], **kwargs)


# the spacings (positions 1...) are read; f itself is not
defvjp(anp.gradient, _gradient_vjp, save=tuple(range(1, 64)))
defjvp(anp.gradient, _gradient_jvp)


# =============================================================================
# trapezoid: sum(d * (y[1:] + y[:-1]) / 2, axis) with d = diff(x) (or dx)
# =============================================================================
class _Trap:
    """trapezoid's axes: ay on y, ap on the product d * (pair sums of y) (whose ndim is that
    of a multi-dimensional x when it has more), ax on a multi-dimensional x."""

    def __init__(self, y, x, axis):
        self.yshape = _shape(y)
        ny = len(self.yshape)
        self.xshape = None if x is None else _shape(x)
        nx = 0 if x is None else len(self.xshape)
        self.np = max(ny, nx if nx > 1 else 0)
        self.ay = _norm_axis(axis, ny)
        self.ap = _norm_axis(axis, self.np)
        self.ax = _norm_axis(axis, nx) if nx > 1 else 0
        self.x1d = nx == 1
        self.lo = _at(self.ay, slice(None, -1))
        self.hi = _at(self.ay, slice(1, None))

    def d(self, x, dx):
        """The interval widths (traced if x is), broadcastable against the pair sums."""
        if x is None:
            return dx
        if self.x1d:
            d = anp.diff(x)
            s = [1] * len(self.yshape)
            s[self.ay] = _shape(d)[0]
            return anp.reshape(d, tuple(s))
        return anp.diff(x, axis=self.ax)

    def pair_mean(self, y):
        return (anp.getitem(y, self.hi) + anp.getitem(y, self.lo)) * 0.5


def _trap_bind(args, kwargs):
    kw = _trap_binder(args, kwargs)
    return _Trap(kw["y"], kw["x"], kw["axis"]), kw


# NumPy 1.26 has only trapz, the same function under its old name
_trapezoid = getattr(anp, "trapezoid", None) or anp.trapz
_trap_binder = _binder(getattr(_onp, "trapezoid", None) or _onp.trapz)


def _trapezoid_vjp(argnums, ans, args, kwargs):
    def vjp(g):
        tr, kw = _trap_bind(args, kwargs)
        y, x, dx = kw["y"], kw["x"], kw["dx"]
        gk = anp.expand_dims(g, tr.ap) if len(_shape(g)) < tr.np else g
        out = []
        for k in argnums:
            if k == 0:
                h = gk * tr.d(x, dx) * 0.5
                full = list(_shape(h))
                full[tr.ap] = tr.yshape[tr.ay] - 1
                h = anp.broadcast_to(h, tuple(_onp.broadcast_shapes(tuple(full), _shape(h))))
                pad_hi = [(0, 0)] * len(_shape(h))
                pad_lo = [(0, 0)] * len(_shape(h))
                pad_hi[tr.ap] = (1, 0)
                pad_lo[tr.ap] = (0, 1)
                c = unbroadcast(anp.pad(h, pad_hi) + anp.pad(h, pad_lo), y)
            elif k == 1:
                gd = gk * tr.pair_mean(y)
                if tr.x1d:
                    gd = anp.sum(gd, axis=tuple(i for i in range(len(_shape(gd)))
                                                if i != tr.ap))
                    c = _diff_transpose(gd, 1, 0)
                else:
                    dshape = list(tr.xshape)
                    dshape[tr.ax] -= 1
                    gd = unbroadcast(gd, _onp.broadcast_to(_onp.empty((), _dtype(x)),
                                                           tuple(dshape)))
                    c = _diff_transpose(gd, 1, tr.ax)
                c = cast_like(c, _dtype(x))
            elif k == 2:
                c = unbroadcast(g * anp.sum(tr.pair_mean(y), axis=tr.ay), dx)
            else:
                raise NotImplementedError("gradcy.numpy.trapezoid: axis has no gradient")
            out.append(c)
        return tuple(out)
    return vjp


def _trapezoid_jvp(argnums, gs, ans, args, kwargs):
    tr, kw = _trap_bind(args, kwargs)
    y, x, dx = kw["y"], kw["x"], kw["dx"]
    total = None
    for k, g in zip(argnums, gs):
        if k == 0:
            t = _trapezoid(g, x, dx, kw["axis"])
        elif k == 1:
            t = anp.sum(tr.d(g, None) * tr.pair_mean(y), axis=tr.ap)
        elif k == 2:
            t = g * anp.sum(tr.pair_mean(y), axis=tr.ay)
        else:
            raise NotImplementedError("gradcy.numpy.trapezoid: axis has no gradient")
        total = t if total is None else total + t
    return total


defvjp_argnums(_trapezoid, _trapezoid_vjp, save=(0, 1, 2))
defjvp_argnums(_trapezoid, _trapezoid_jvp)


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
    return {0: "valid", 1: "same", 2: "full"}.get(mode, mode) if not isinstance(mode, str) else {
        "v": "valid", "s": "same", "f": "full"}.get(mode, mode)


def _full_cotangent(g, N, M, mode, correlate):
    off, L = _conv_offset(N, M, _mode_name(mode), correlate)
    g = anp.reshape(g, (-1,))
    total = N + M - 1
    if off == 0 and L == total:
        return g
    return anp.pad(g, [(off, total - off - L)])


def _conv_vjp(which, correlate):
    def maker(ans, a, v, mode="valid" if correlate else "full"):
        sa, sv = _shape(a), _shape(v)
        N, M = _size(sa), _size(sv)
        target = a if which == 0 else v

        def vjp(g):
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
        return vjp
    return maker


for _p, _corr in ((anp.convolve, False), (anp.correlate, True)):
    defvjp(_p, _conv_vjp(0, _corr), _conv_vjp(1, _corr), save=(0, 1))
defjvp(anp.convolve,
       lambda g, ans, a, v, mode="full": anp.convolve(g, v, mode),
       lambda g, ans, a, v, mode="full": anp.convolve(a, g, mode))
defjvp(anp.correlate,
       lambda g, ans, a, v, mode="valid": anp.correlate(g, v, mode),
       lambda g, ans, a, v, mode="valid": anp.correlate(a, g, mode))


# =============================================================================
# Polynomials
# =============================================================================
def _as1d(x):
    return anp.reshape(x, (-1,)) if len(_shape(x)) != 1 else x


def _polyadd_vjp(which, sign):
    def maker(ans, a1, a2):
        target = a1 if which == 0 else a2
        shape, dtype = _shape(target), _dtype(target)
        n = max(_size(shape), 1)

        def vjp(g):
            c = anp.getitem(g, slice(len(_shape(g)) and _shape(g)[0] - n, None))
            c = -c if sign < 0 else c
            return cast_like(anp.reshape(c, shape), dtype)
        return vjp
    return maker


def _polyadd_jvp(which, sign):
    def jvp(g, ans, a1, a2):
        n = _shape(ans)[0]
        t = anp.reshape(g, (-1,))
        t = -t if sign < 0 else t
        k = n - _shape(t)[0]
        return anp.pad(t, [(k, 0)]) if k else t
    return jvp


defvjp(anp.polyadd, _polyadd_vjp(0, 1), _polyadd_vjp(1, 1), save=())
defjvp(anp.polyadd, _polyadd_jvp(0, 1), _polyadd_jvp(1, 1))
defvjp(anp.polysub, _polyadd_vjp(0, 1), _polyadd_vjp(1, -1), save=())
defjvp(anp.polysub, _polyadd_jvp(0, 1), _polyadd_jvp(1, -1))


def _leading_zeros(a):
    """How many leading coefficients poly1d trims (all but the last of an all-zero a)."""
    p = _onp.atleast_1d(_onp.asarray(_plain(a))).reshape(-1)
    nz = _onp.flatnonzero(p)
    return int(nz[0]) if nz.size else max(p.size - 1, 0)


def _polymul_vjp(which):
    def maker(ans, a1, a2):
        target = a1 if which == 0 else a2
        shape, dtype = _shape(target), _dtype(target)

        def vjp(g):
            k1, k2 = _leading_zeros(a1), _leading_zeros(a2)
            p1 = anp.getitem(_as1d(a1), slice(k1, None))
            p2 = anp.getitem(_as1d(a2), slice(k2, None))
            other, k = (p2, k1) if which == 0 else (p1, k2)
            c = anp.convolve(anp.reshape(g, (-1,)), anp.flip(other), "valid")
            if k:
                c = anp.pad(c, [(k, 0)])
            return cast_like(anp.reshape(c, shape), dtype)
        return vjp
    return maker


def _polymul_jvp(which):
    def jvp(g, ans, a1, a2):
        k1, k2 = _leading_zeros(a1), _leading_zeros(a2)
        p1 = anp.getitem(_as1d(a1), slice(k1, None))
        p2 = anp.getitem(_as1d(a2), slice(k2, None))
        if which == 0:
            return anp.convolve(anp.getitem(_as1d(g), slice(k1, None)), p2)
        return anp.convolve(p1, anp.getitem(_as1d(g), slice(k2, None)))
    return jvp


defvjp(anp.polymul, _polymul_vjp(0), _polymul_vjp(1), save=(0, 1))
defjvp(anp.polymul, _polymul_jvp(0), _polymul_jvp(1))


def _scale_probe(fun, n, dtype):
    """The per-coefficient factors of a map that scales and shifts coefficients (polyder,
    polyint): fun applied to ones."""
    return _onp.asarray(fun(_onp.ones(n, dtype=_float_dtype(dtype))))


def _polyder_vjp(ans, p, m=1):
    shape, dtype = _shape(p), _dtype(p)
    n = _size(shape)
    m = int(m)

    def vjp(g):
        if m == 0:
            return cast_like(g, dtype)
        if n - m <= 0:
            return None
        c = _scale_probe(lambda o: _onp.polyder(o, m), n, dtype)
        return cast_like(anp.pad(g * c.astype(_float_dtype(dtype)), [(0, m)]), dtype)
    return vjp


defvjp(anp.polyder, _polyder_vjp, save=())
defjvp(anp.polyder, lambda g, ans, p, m=1: anp.polyder(g, m))


def _polyint_vjp(ans, p, m=1, k=None):
    shape, dtype = _shape(p), _dtype(p)
    n = _size(shape)

    def vjp(g):
        c = _scale_probe(lambda o: _onp.polyint(o, m), n, dtype)[:n]
        return cast_like(anp.getitem(g, slice(0, n)) * c.astype(_float_dtype(dtype)), dtype)
    return vjp


defvjp(anp.polyint, _polyint_vjp, save=())
defjvp(anp.polyint, lambda g, ans, p, m=1, k=None: anp.polyint(g, m))


def _powers(n, dtype, increasing=False):
    e = _onp.arange(n, dtype=_float_dtype(dtype))
    return e if increasing else e[::-1].copy()


def _polyval_vjp_p(ans, p, x):
    pshape, pdtype = _shape(p), _dtype(p)
    n = pshape[0]

    def vjp(g):
        xe = anp.power(anp.expand_dims(x, -1), _powers(n, pdtype))     # x.shape + (n,)
        nd = len(_shape(x))
        gb = anp.broadcast_to(g, _shape(x)) if _shape(g) != _shape(x) else g
        c = anp.tensordot(gb, xe, axes=nd) if nd else gb * xe
        return cast_like(c, pdtype)
    return vjp


def _poly_slope(p, x):
    """polyval(polyder(p), x), traced in p and x."""
    n = _shape(p)[0]
    if n <= 1:
        return None
    dp = anp.getitem(p, slice(0, n - 1)) * _powers(n, _dtype(p))[:-1]
    return anp.polyval(dp, x)


def _polyval_vjp_x(ans, p, x):
    def vjp(g):
        s = _poly_slope(p, x)
        return None if s is None else unbroadcast(g * s, x)
    return vjp


defvjp(anp.polyval, _polyval_vjp_p, _polyval_vjp_x, save=(0, 1))
defjvp(anp.polyval,
       lambda g, ans, p, x: anp.polyval(g, x),
       lambda g, ans, p, x: (lambda s: None if s is None else g * s)(_poly_slope(p, x)))


def _vander_exponents(x, N, increasing):
    n = _shape(x)[0] if N is None else N
    return _powers(n, _dtype(x), increasing)


def _vander_vjp(ans, x, N=None, increasing=False):
    dtype = _dtype(x)

    def vjp(g):
        e = _vander_exponents(x, N, increasing)
        coef = e * (e > 0)
        xp = anp.power(anp.expand_dims(x, -1), _onp.maximum(e - 1, 0))
        return cast_like(anp.sum(g * coef * xp, axis=-1), dtype)
    return vjp


def _vander_jvp(g, ans, x, N=None, increasing=False):
    e = _vander_exponents(x, N, increasing)
    coef = e * (e > 0)
    return anp.expand_dims(g, -1) * coef * anp.power(anp.expand_dims(x, -1),
                                                     _onp.maximum(e - 1, 0))


defvjp(anp.vander, _vander_vjp, save=(0,))
defjvp(anp.vander, _vander_jvp)


# =============================================================================
# linspace, logspace, geomspace (with respect to start and stop)
# =============================================================================
def _space_frame(ans, num, endpoint, axis):
    """(ax, t, bshape): the output axis of the samples, their fractions t (shaped to broadcast
    against the samples) and the broadcast shape of start and stop."""
    v = _plain(ans)
    samples = v[0] if isinstance(v, (tuple, list)) else v
    sshape = _shape(samples)
    nd = len(sshape)
    ax = _norm_axis(axis, nd)
    t = _onp.linspace(0.0, 1.0, num, endpoint=endpoint)
    tshape = [1] * nd
    tshape[ax] = num
    bshape = tuple(n for i, n in enumerate(sshape) if i != ax)
    return ax, t.reshape(tshape), bshape


def _expand_at(v, ax, bshape):
    """A start/stop/base value (or its tangent) broadcast to bshape, with the sample axis ax
    inserted."""
    if not _shape(v):
        return v
    if _shape(v) != bshape:
        v = anp.broadcast_to(v, bshape)
    return anp.expand_dims(v, ax)


def _space_dtype(dtype):
    return dtype is None or _onp.dtype(dtype).kind in "fc"


def _linspace_vjp(which):
    def maker(ans, start, stop, num=50, endpoint=True, retstep=False, dtype=None, axis=0,
              **kw):
        target = start if which == 0 else stop
        tdtype = _dtype(target)
        ax, t, bshape = _space_frame(ans, num, endpoint, axis)
        w = (1.0 - t) if which == 0 else t
        div = (num - 1) if endpoint else num

        def vjp(g):
            if not _space_dtype(dtype):
                return None
            gs = g[0] if retstep else g
            total = None
            if gs is not None:
                total = anp.sum(gs * w.astype(_float_dtype(tdtype)), axis=ax)
            if retstep and g[1] is not None and div > 0:
                step_c = g[1] * ((-1.0 if which == 0 else 1.0) / div)
                total = step_c if total is None else total + step_c
            return None if total is None else cast_like(unbroadcast(total, target), tdtype)
        return vjp
    return maker


def _linspace_jvp(which):
    def jvp(g, ans, start, stop, num=50, endpoint=True, retstep=False, dtype=None, axis=0,
            **kw):
        ax, t, bshape = _space_frame(ans, num, endpoint, axis)
        w = (1.0 - t) if which == 0 else t
        ts = _expand_at(g, ax, bshape) * w
        if retstep:
            div = (num - 1) if endpoint else num
            step = g * ((-1.0 if which == 0 else 1.0) / div) if div > 0 else g * 0.0
            return (ts, step)
        return ts
    return jvp


defvjp(anp.linspace, _linspace_vjp(0), _linspace_vjp(1), save=())
defjvp(anp.linspace, _linspace_jvp(0), _linspace_jvp(1))




def _logspace_vjp(which):
    def maker(ans, start, stop, num=50, endpoint=True, base=10.0, dtype=None, axis=0):
        target = start if which == 0 else stop
        tdtype = _dtype(target)
        ax, t, bshape = _space_frame(ans, num, endpoint, axis)
        w = (1.0 - t) if which == 0 else t

        def vjp(g):
            if not _space_dtype(dtype):
                return None
            lb = anp.log(_expand_at(base, ax, bshape))
            c = anp.sum(g * ans * lb * w.astype(_float_dtype(tdtype)), axis=ax)
            return cast_like(unbroadcast(c, target), tdtype)
        return vjp
    return maker


def _logspace_jvp(which):
    def jvp(g, ans, start, stop, num=50, endpoint=True, base=10.0, dtype=None, axis=0):
        ax, t, bshape = _space_frame(ans, num, endpoint, axis)
        w = (1.0 - t) if which == 0 else t
        lb = anp.log(_expand_at(base, ax, bshape))
        return _expand_at(g, ax, bshape) * w * ans * lb
    return jvp


defvjp(anp.logspace, _logspace_vjp(0), _logspace_vjp(1), save=("ans", 4))
defjvp(anp.logspace, _logspace_jvp(0), _logspace_jvp(1))


def _geomspace_vjp(which):
    def maker(ans, start, stop, num=50, endpoint=True, dtype=None, axis=0):
        target = start if which == 0 else stop
        tdtype = _dtype(target)
        ax, t, bshape = _space_frame(ans, num, endpoint, axis)
        w = (1.0 - t) if which == 0 else t

        def vjp(g):
            if not _space_dtype(dtype):
                return None
            c = anp.sum(g * ans * w.astype(_float_dtype(tdtype)) / _expand_at(target, ax, bshape),
                        axis=ax)
            return cast_like(unbroadcast(c, target), tdtype)
        return vjp
    return maker


def _geomspace_jvp(which):
    def jvp(g, ans, start, stop, num=50, endpoint=True, dtype=None, axis=0):
        target = start if which == 0 else stop
        ax, t, bshape = _space_frame(ans, num, endpoint, axis)
        w = (1.0 - t) if which == 0 else t
        return _expand_at(g / target, ax, bshape) * w * ans
    return jvp


defvjp(anp.geomspace, _geomspace_vjp(0), _geomspace_vjp(1), save=("ans", 0, 1))
defjvp(anp.geomspace, _geomspace_jvp(0), _geomspace_jvp(1))


# =============================================================================
# quantile, percentile, nanquantile, nanpercentile
# =============================================================================
# d(virtual index)/dq = n + _Q_SLOPE[method] and the unclipped virtual index is
# q * (n + slope) + _Q_ALPHA1[method] (alpha - 1 in NumPy's notation), for the methods that
# interpolate continuously in q; the others are piecewise constant in q.
_Q_SLOPE = {"linear": -1.0, "weibull": 1.0, "hazen": 0.0, "median_unbiased": 1.0 / 3.0,
            "normal_unbiased": 0.25, "interpolated_inverted_cdf": 0.0}
_Q_ALPHA1 = {"linear": 0.0, "weibull": -1.0, "hazen": -0.5, "median_unbiased": -2.0 / 3.0,
             "normal_unbiased": -0.625, "interpolated_inverted_cdf": -1.0}


def _q_axes(nd, axis):
    if axis is None:
        return tuple(range(nd))
    if isinstance(axis, (tuple, list)):
        return tuple(sorted(_norm_axis(a, nd) for a in axis))
    return (_norm_axis(axis, nd),)


def _quantile_plan(x, q, axis, method, nan, scale):
    """The weights of a quantile on the plain values.

    The input is viewed as xm (kept axes..., n) (perm: kept axes then reduced ones). Returns
    (perm, K, red, w_lo, dW, t, slope): with Wx = w_lo + t * dW (Q, *K, n), out[q, k] =
    sum_n Wx * xm, the two order statistics' weights (ties split evenly); the fraction t
    (Q, *K) moves with q at rate `slope` (0 where clamped; None when the method is piecewise
    constant in q), so d out/dq = slope * sum_n dW * xm."""
    xp = _onp.asarray(_plain(x))
    nd = xp.ndim
    axes = _q_axes(nd, axis)
    kept = [i for i in range(nd) if i not in axes]
    perm = tuple(kept) + axes
    K = tuple(xp.shape[i] for i in kept)
    red = tuple(xp.shape[i] for i in axes)
    n = _size(red)
    xm = xp.transpose(perm).reshape(K + (n,))
    qf = _onp.asarray(_plain(q), dtype=_onp.float64).reshape(-1) / scale
    Q = qf.size
    isn = _onp.isnan(xm)
    if nan:
        counts = (~isn).sum(-1)
    else:
        counts = _onp.where(isn.any(-1), 0, n)      # a nan anywhere: nan out, no gradient
    lo = _onp.zeros((Q,) + K, _intp)
    hi = _onp.zeros((Q,) + K, _intp)
    t = _onp.zeros((Q,) + K)
    slope = _onp.zeros((Q,) + K)
    has_slope = method in _Q_SLOPE
    for c in _onp.unique(counts):
        c = int(c)
        if c == 0:
            continue
        v = _onp.quantile(_onp.arange(c, dtype=_onp.float64), qf, method=method)
        lc = _onp.clip(_onp.floor(v).astype(_intp), 0, c - 1)
        tc = v - lc
        hc = _onp.minimum(lc + 1, c - 1)
        sel = (slice(None),) + (counts == c,) if K else (slice(None),)
        if K:
            k = int((counts == c).sum())
            lo[sel] = _onp.broadcast_to(lc[:, None], (Q, k))
            hi[sel] = _onp.broadcast_to(hc[:, None], (Q, k))
            t[sel] = _onp.broadcast_to(tc[:, None], (Q, k))
        else:
            lo[...], hi[...], t[...] = lc, hc, tc
        if has_slope:
            raw = qf * (c + _Q_SLOPE[method]) + _Q_ALPHA1[method]
            sc = _onp.where((raw > 0) & (raw < c - 1), (c + _Q_SLOPE[method]) / scale, 0.0)
            if K:
                slope[sel] = _onp.broadcast_to(sc[:, None], (Q, int((counts == c).sum())))
            else:
                slope[...] = sc
    s = _onp.sort(xm, axis=-1)
    sb = _onp.broadcast_to(s, (Q,) + s.shape)
    s_lo = _onp.take_along_axis(sb, lo[..., None], -1)
    s_hi = _onp.take_along_axis(sb, hi[..., None], -1)
    valid = (counts > 0)[None, ..., None]

    def split(eq):
        eq = eq & valid
        return eq / _onp.maximum(eq.sum(-1, keepdims=True), 1)
    w_lo = split(xm[None] == s_lo)
    w_hi = split(xm[None] == s_hi)
    wdt = _float_dtype(xp.dtype)
    return perm, K, red, w_lo.astype(wdt), (w_hi - w_lo).astype(wdt), t, (
        slope if has_slope and slope.any() else None)


def _q_moved(x, perm, K):
    """x traced, viewed as (kept..., n)."""
    xt = anp.transpose(x, perm) if perm != tuple(range(len(perm))) else x
    return anp.reshape(xt, K + (-1,))


def _quantile_rules(prim, nan, scale):
    bind = _binder(prim.fun)

    def plan(args, kwargs):
        kw = bind(args, kwargs)
        if kw.get("weights") is not None:
            raise NotImplementedError(f"{prim.name}: the gradient with weights= is not "
                                      f"supported")
        method = kw.get("method", "linear")
        if kw.get("interpolation") is not None:
            method = kw["interpolation"]
        return kw, _quantile_plan(kw["a"], kw["q"], kw["axis"], method, nan, scale)

    def weights(q, K, w_lo, dW, t, slope):
        """Wx = w_lo + t * dW, with t traced in q (at higher order) through its slope."""
        Q = t.shape[0]
        if slope is not None and type(q) is Box:
            qb = anp.reshape(q, (Q,) + (1,) * len(K))
            qv = _onp.asarray(_plain(q), dtype=_onp.float64).reshape((Q,) + (1,) * len(K))
            tt = t + (qb - qv) * slope
            return w_lo + anp.expand_dims(tt, -1) * dW
        return w_lo + t[..., None].astype(w_lo.dtype) * dW

    def vjp_a(ans, a, *args, **kwargs):
        shape, dtype = _shape(a), _dtype(a)
        args = (a,) + args

        def vjp(g):
            kw, (perm, K, red, w_lo, dW, t, slope) = plan(args, kwargs)
            Wx = weights(kw["q"], K, w_lo, dW, t, slope)
            Q = t.shape[0]
            gm = anp.reshape(cast_like(g, dtype), (Q,) + K + (1,))
            gx = anp.sum(gm * Wx, axis=0)
            gx = anp.reshape(gx, K + red)
            inv = tuple(int(i) for i in _onp.argsort(perm))
            if inv != tuple(range(len(inv))):
                gx = anp.transpose(gx, inv)
            return cast_like(gx, dtype)
        return vjp

    def dout_dq(a, K, perm, dW, slope):
        xm = _q_moved(a, perm, K)
        nans = _onp.isnan(_plain(xm))
        if nans.any():                          # weight 0 there, but 0 * nan is nan
            xm = anp.where(nans, 0.0, xm)
        return slope * anp.sum(dW * xm, axis=-1)          # (Q, *K)

    def vjp_q(ans, a, q, *args, **kwargs):
        qshape, qdtype = _shape(q), _dtype(q)
        args = (a, q) + args

        def vjp(g):
            kw, (perm, K, red, w_lo, dW, t, slope) = plan(args, kwargs)
            if slope is None:
                return None
            Q = t.shape[0]
            gq = anp.reshape(g, (Q,) + K) * dout_dq(a, K, perm, dW, slope)
            if K:
                gq = anp.sum(gq, axis=tuple(range(1, 1 + len(K))))
            return cast_like(anp.reshape(gq, qshape), qdtype)
        return vjp

    def jvp_a(g, ans, *args, **kwargs):
        kw, (perm, K, red, w_lo, dW, t, slope) = plan(args, kwargs)
        Wx = weights(kw["q"], K, w_lo, dW, t, slope)
        out = anp.sum(Wx * _q_moved(g, perm, K), axis=-1)
        return anp.reshape(out, _shape(ans))

    def jvp_q(g, ans, *args, **kwargs):
        kw, (perm, K, red, w_lo, dW, t, slope) = plan(args, kwargs)
        if slope is None:
            return None
        Q = t.shape[0]
        dd = dout_dq(kw["a"], K, perm, dW, slope)
        return anp.reshape(anp.reshape(g, (Q,) + (1,) * len(K)) * dd, _shape(ans))

    defvjp(prim, vjp_a, vjp_q, save=(0, 1))
    defjvp(prim, jvp_a, jvp_q)


_quantile_rules(anp.quantile, False, 1.0)
_quantile_rules(anp.percentile, False, 100.0)
_quantile_rules(anp.nanquantile, True, 1.0)
_quantile_rules(anp.nanpercentile, True, 100.0)


# =============================================================================
# cov, corrcoef
# =============================================================================
_cov_bind = _binder(_onp.cov)
_corrcoef_bind = _binder(_onp.corrcoef)


def _cov_rows(a, rowvar, first, dtype):
    """a as the rows (variables) np.cov makes of it, traced, and the inverse map of a
    cotangent of those rows back to a's shape."""
    shape = _shape(a)
    if _dtype(a) != dtype:
        a = anp.astype(a, dtype)
    if len(shape) == 0:
        return anp.reshape(a, (1, 1)), lambda c: anp.reshape(c, ())
    if len(shape) == 1:
        return anp.reshape(a, (1, shape[0])), lambda c: anp.reshape(c, shape)
    transpose = (not rowvar) and (first or shape[0] != 1)
    if transpose:
        return anp.transpose(a), lambda c: anp.transpose(c)
    return a, lambda c: c


class _CovSetup:
    """What cov computes, traced in m and y: the centred rows Xc, the weights w (plain or
    None), the normalisation fact, and the row blocks of m and y."""

    def __init__(self, m, y, rowvar, bias, ddof, fweights, aweights, dtype):
        if dtype is None:
            dtype = _onp.result_type(_dtype(m), _onp.float64) if y is None else \
                _onp.result_type(_dtype(m), _dtype(y), _onp.float64)
        self.dtype = _onp.dtype(dtype)
        self._rowvar = rowvar
        Xm, self.back_m = _cov_rows(m, rowvar, True, self.dtype)
        self.nm = _shape(Xm)[0]
        if y is not None:
            Xy, self.back_y = _cov_rows(y, rowvar, False, self.dtype)
            X = anp.concatenate([Xm, Xy], axis=0)
        else:
            X, self.back_y = Xm, None
        self.d, N = _shape(X)
        if ddof is None:
            ddof = 0 if bias else 1
        w = None
        if fweights is not None:
            w = _onp.asarray(_plain(fweights), dtype=float)
        if aweights is not None:
            aw = _onp.asarray(_plain(aweights), dtype=float)
            w = aw if w is None else w * aw
        if w is None:
            fact = N - ddof
            avg = anp.mean(X, axis=1, keepdims=True)
        else:
            w_sum = w.sum()
            if ddof == 0:
                fact = w_sum
            elif aweights is None:
                fact = w_sum - ddof
            else:
                fact = w_sum - ddof * (w * aw).sum() / w_sum
            avg = anp.sum(X * w, axis=1, keepdims=True) / w_sum
        self.fact = max(float(fact), 0.0)
        self.w = w
        self.Xc = X - avg
        self.complex = self.dtype.kind == "c"

    def weighted(self, Z):
        return Z if self.w is None else Z * self.w

    def H(self, Z):
        Z = anp.transpose(Z)
        return anp.conjugate(Z) if self.complex else Z

    def C(self):
        return anp.matmul(self.Xc, self.H(self.weighted(self.Xc))) / self.fact

    def grad_rows(self, G):
        """Cotangent of the rows X for a cotangent G (d, d) of C."""
        Xc = anp.conjugate(self.Xc) if self.complex else self.Xc
        return anp.matmul(G + self.H(G), self.weighted(Xc)) / self.fact

    def tangent_C(self, dX):
        dXc = dX - (anp.mean(dX, axis=1, keepdims=True) if self.w is None else
                    anp.sum(dX * self.w, axis=1, keepdims=True) / self.w.sum())
        A = anp.matmul(dXc, self.H(self.weighted(self.Xc)))
        B = anp.matmul(self.Xc, self.H(self.weighted(dXc)))
        return (A + B) / self.fact

    def split(self, cX, argnums, m, y):
        out = []
        for k in argnums:
            if k == 0:
                c = self.back_m(anp.getitem(cX, slice(0, self.nm)))
                out.append(cast_like(c, _dtype(m)))
            elif k == 1 and self.back_y is not None:
                c = self.back_y(anp.getitem(cX, slice(self.nm, None)))
                out.append(cast_like(c, _dtype(y)))
            else:
                raise NotImplementedError("gradcy.numpy.cov: only m and y are differentiable")
        return tuple(out)

    def rows_tangent(self, argnum, g, m, y):
        """The tangent of the rows X for the tangent g of argument argnum (0: m, 1: y)."""
        if argnum == 0:
            Xm, _ = _cov_rows(g, self._rowvar, True, self.dtype)
            if self.back_y is None:
                return Xm
            Xy0 = _onp.zeros((self.d - self.nm,) + _shape(Xm)[1:], self.dtype)
            return anp.concatenate([Xm, Xy0], axis=0)
        Xy, _ = _cov_rows(g, self._rowvar, False, self.dtype)
        Xm0 = _onp.zeros((self.nm,) + _shape(Xy)[1:], self.dtype)
        return anp.concatenate([Xm0, Xy], axis=0)


def _cov_setup(args, kwargs):
    kw = _cov_bind(args, kwargs)
    s = _CovSetup(kw["m"], kw["y"], kw["rowvar"], kw["bias"], kw["ddof"], kw["fweights"],
                  kw["aweights"], kw["dtype"])
    return s, kw


def _cov_vjp(argnums, ans, args, kwargs):
    def vjp(g):
        s, kw = _cov_setup(args, kwargs)
        G = anp.reshape(g, (s.d, s.d))
        return s.split(s.grad_rows(G), argnums, kw["m"], kw["y"])
    return vjp


def _cov_jvp(argnums, gs, ans, args, kwargs):
    s, kw = _cov_setup(args, kwargs)
    total = None
    for k, g in zip(argnums, gs):
        if k > 1:
            raise NotImplementedError("gradcy.numpy.cov: only m and y are differentiable")
        dC = s.tangent_C(s.rows_tangent(k, g, kw["m"], kw["y"]))
        total = dC if total is None else total + dC
    return anp.reshape(total, _shape(ans))


defvjp_argnums(anp.cov, _cov_vjp, save=(0, 1, 5, 6))
defjvp_argnums(anp.cov, _cov_jvp)


def _corr_setup(args, kwargs):
    kw = _corrcoef_bind(args, kwargs)
    s = _CovSetup(kw["x"], kw["y"], kw["rowvar"], False, None, None, None, kw["dtype"])
    if s.complex:
        raise NotImplementedError("gradcy.numpy.corrcoef: no gradient for complex inputs")
    C = s.C()
    d = anp.diagonal(C)
    sd = anp.sqrt(d)
    R = C / (anp.expand_dims(sd, 1) * anp.expand_dims(sd, 0))
    return s, kw, C, d, sd, R


def _corrcoef_vjp(argnums, ans, args, kwargs):
    def vjp(g):
        if not _shape(ans):
            return tuple(None for _ in argnums)       # a single variable: R = 1
        s, kw, C, d, sd, R = _corr_setup(args, kwargs)
        GR = anp.reshape(g, (s.d, s.d))
        GC = GR / (anp.expand_dims(sd, 1) * anp.expand_dims(sd, 0))
        GRR = GR * R
        diag = -(anp.sum(GRR, axis=1) + anp.sum(GRR, axis=0)) / (2.0 * d)
        GC = GC + anp.diag(diag)
        return s.split(s.grad_rows(GC), argnums, kw["x"], kw["y"])
    return vjp


def _corrcoef_jvp(argnums, gs, ans, args, kwargs):
    if not _shape(ans):
        return _onp.zeros((), ans.dtype)
    s, kw, C, d, sd, R = _corr_setup(args, kwargs)
    total = None
    for k, g in zip(argnums, gs):
        dC = s.tangent_C(s.rows_tangent(k, g, kw["x"], kw["y"]))
        r = anp.diagonal(dC) / (2.0 * d)
        dR = (dC / (anp.expand_dims(sd, 1) * anp.expand_dims(sd, 0))
              - R * (anp.expand_dims(r, 1) + anp.expand_dims(r, 0)))
        total = dR if total is None else total + dR
    return total


defvjp_argnums(anp.corrcoef, _corrcoef_vjp, save=(0, 1))
defjvp_argnums(anp.corrcoef, _corrcoef_jvp)


# =============================================================================
# interp
# =============================================================================
class _InterpPlan:
    """Where each x falls in the table (plain indices and masks), for interp(x, xp, fp, left,
    right, period): out = wlo * fp[lo] + whi * fp[hi] inside, fp[0] / left below, fp[-1] /
    right above."""

    def __init__(self, x, xp, left, right, period):
        xv = _onp.asarray(_plain(x), dtype=float)
        xpv = _onp.asarray(_plain(xp), dtype=float)
        n = xpv.shape[0]
        self.period = period
        if period is not None:
            period = abs(float(_plain(period)))
            xv = xv % period
            xm = xpv % period
            order = _onp.argsort(xm, kind="stable")
            xm = xm[order]
            self.fp_index = _onp.concatenate([order[-1:], order, order[:1]])
            table = _onp.concatenate([xm[-1:] - period, xm, xm[:1] + period])
            left = right = None
        else:
            self.fp_index = None
            table = xpv
        self.table = table
        nt = table.shape[0]
        self.n = n
        j = _onp.searchsorted(table, xv, side="right") - 1
        self.lo = _onp.clip(j, 0, max(nt - 2, 0))
        self.hi = _onp.minimum(self.lo + 1, nt - 1)
        nanx = _onp.isnan(xv)
        self.below = (xv < table[0]) & ~nanx
        self.above = (xv > table[-1]) & ~nanx
        self.inside = ~(self.below | self.above | nanx)
        if nt == 1:
            self.inside_interp = _onp.zeros_like(self.inside)
            self.at_single = self.inside
        else:
            self.inside_interp = self.inside
            self.at_single = _onp.zeros_like(self.inside)
        self.left_given = left is not None
        self.right_given = right is not None

    def fp_idx(self, idx):
        return idx if self.fp_index is None else self.fp_index[idx]

    def t(self, x, xp):
        """The interpolation fractions, traced in x and xp (0 outside)."""
        if self.period is not None:
            x = anp.remainder(x, abs(float(_plain(self.period))))
            a = self.table[self.lo]
            b = self.table[self.hi]
        else:
            a = anp.take(xp, self.lo)
            b = anp.take(xp, self.hi)
        den = anp.where(self.inside_interp, b - a, 1.0)
        return anp.where(self.inside_interp, (x - a) / den, 0.0), den

    def weights(self, x, xp):
        t, _ = self.t(x, xp)
        wlo = anp.where(self.inside_interp, 1.0 - t, 0.0)
        whi = t
        extra_lo = self.at_single | (self.below & (not self.left_given))
        extra_hi = self.above & (not self.right_given)
        if extra_lo.any():
            wlo = wlo + extra_lo
        if extra_hi.any():
            whi = whi + extra_hi
        lo = _onp.where(self.below, 0, self.lo)
        hi = _onp.where(self.above, self.table.shape[0] - 1, self.hi)
        return wlo, whi, self.fp_idx(lo), self.fp_idx(hi)

    def slope(self, x, xp, fp):
        """d out / dx inside the table, traced."""
        t, den = self.t(x, xp)
        flo = anp.take(fp, self.fp_idx(self.lo))
        fhi = anp.take(fp, self.fp_idx(self.hi))
        return anp.where(self.inside_interp, (fhi - flo) / den, 0.0)


_interp_bind = _binder(_onp.interp)


def _interp_plan(args, kwargs):
    kw = _interp_bind(args, kwargs)
    return _InterpPlan(kw["x"], kw["xp"], kw["left"], kw["right"], kw["period"]), kw


def _interp_vjp(argnums, ans, args, kwargs):
    def vjp(g):
        plan, kw = _interp_plan(args, kwargs)
        x, xp, fp = kw["x"], kw["xp"], kw["fp"]
        out = []
        for k in argnums:
            if k == 0:
                c = unbroadcast(g * plan.slope(x, xp, fp), x)
            elif k == 1:
                if plan.period is not None:
                    raise NotImplementedError("gradcy.numpy.interp: no gradient with respect "
                                              "to xp with period=")
                t, _ = plan.t(x, xp)
                s = -g * plan.slope(x, xp, fp)
                c = (_scatter(s * (1.0 - t), plan.lo, (plan.n,), _dtype(s))
                     + _scatter(s * t, plan.hi, (plan.n,), _dtype(s)))
                c = cast_like(c, _dtype(xp))
            elif k == 2:
                wlo, whi, lo, hi = plan.weights(x, xp)
                gd = _dtype(g)
                c = _scatter(g * wlo, lo, (plan.n,), gd) + _scatter(g * whi, hi, (plan.n,), gd)
                c = cast_like(c, _dtype(fp))
            elif k == 3:
                c = unbroadcast(anp.sum(g * plan.below), kw["left"])
            elif k == 4:
                c = unbroadcast(anp.sum(g * plan.above), kw["right"])
            else:
                raise NotImplementedError("gradcy.numpy.interp: period has no gradient")
            out.append(c)
        return tuple(out)
    return vjp


def _interp_jvp(argnums, gs, ans, args, kwargs):
    plan, kw = _interp_plan(args, kwargs)
    x, xp, fp = kw["x"], kw["xp"], kw["fp"]
    total = None
    for k, g in zip(argnums, gs):
        if k == 0:
            t = g * plan.slope(x, xp, fp)
        elif k == 1:
            if plan.period is not None:
                raise NotImplementedError("gradcy.numpy.interp: no gradient with respect to "
                                          "xp with period=")
            tt, _ = plan.t(x, xp)
            s = plan.slope(x, xp, fp)
            t = -s * ((1.0 - tt) * anp.take(g, plan.lo) + tt * anp.take(g, plan.hi))
        elif k == 2:
            wlo, whi, lo, hi = plan.weights(x, xp)
            t = wlo * anp.take(g, lo) + whi * anp.take(g, hi)
        elif k == 3:
            t = g * plan.below
        elif k == 4:
            t = g * plan.above
        else:
            raise NotImplementedError("gradcy.numpy.interp: period has no gradient")
        total = t if total is None else total + t
    return total


defvjp_argnums(anp.interp, _interp_vjp, save=(0, 1, 2, 5))
defjvp_argnums(anp.interp, _interp_jvp)


# =============================================================================
# Histograms: the counts are integer constants; the bin edges computed from the data are
# linspace(min, max) of it (traced), edges given as arrays pass through; density divides by
# the traced bin widths. Traced weights have no rule here: bincount has one.
# =============================================================================
def _traced_edges(column, edges, bins, rng):
    """numpy's bin edges `edges` (plain) as a traced function of the data `column`, of `bins`
    given as an array, or of a traced `rng`; the plain edges when none of them is traced."""
    if _onp.ndim(_plain(bins)) == 1:
        return bins if type(bins) is Box else edges
    if rng is not None:
        lo, hi = rng
    elif type(column) is Box and _onp.size(_plain(column)):
        lo, hi = anp.min(column), anp.max(column)
    else:
        return edges
    if type(lo) is not Box and type(hi) is not Box:
        return edges
    if _plain(lo) == _plain(hi):
        lo, hi = lo - 0.5, hi + 0.5
    return anp.linspace(lo, hi, len(edges), dtype=edges.dtype)


def _no_traced_weights(name, weights):
    if type(weights) is Box:
        raise NotImplementedError(
            f"gradcy.numpy.{name}: no gradient with respect to weights; weighted counts are "
            f"gradcy.numpy.bincount(np.digitize(a, edges) - 1, weights), which has one")


def histogram(a, bins=10, range=None, density=None, weights=None):
    """numpy.histogram; the bin edges are traced when they depend on traced values."""
    if not _contains_box([a, bins, range, weights]):
        return _onp.histogram(a, bins, range, density, weights)
    _no_traced_weights("histogram", weights)
    plain = [_plain(a), _plain(bins), _plain_tree(range), None, _plain(weights)]
    n, edges = _onp.histogram(*plain)
    edges_t = _traced_edges(anp.ravel(a) if type(a) is Box else a, edges, bins, range)
    if density and type(edges_t) is Box:
        n = n / anp.diff(edges_t) / n.sum()
    elif density:
        n = _onp.histogram(*plain[:3], True, plain[4])[0]
    return n, edges_t


def histogram_bin_edges(a, bins=10, range=None, weights=None):
    """numpy.histogram_bin_edges, traced like histogram's edges."""
    return histogram(a, bins, range, None, weights)[1]


def histogramdd(sample, bins=10, range=None, density=None, weights=None):
    """numpy.histogramdd; each dimension's bin edges are traced like histogram's."""
    if not _contains_box([sample, bins, range, weights]):
        return _onp.histogramdd(sample, bins, range, density, weights)
    _no_traced_weights("histogramdd", weights)
    plain = [_plain_tree(sample), _plain_tree(bins), _plain_tree(range), None, _plain(weights)]
    hist, edges = _onp.histogramdd(*plain)
    d = len(edges)
    if type(sample) is Box:
        columns = [anp.getitem(sample, (slice(None), i)) for i in _builtins_range(d)] \
            if sample.ndim == 2 else [sample]
    else:
        columns = list(sample) if isinstance(sample, (list, tuple)) else [None] * d
    try:                           # numpy's reading: a sequence gives one entry per dimension
        per_dim_bins = list(bins)
    except TypeError:
        per_dim_bins = [bins] * d
    ranges = range if range is not None else [None] * d
    edges_t = [_traced_edges(c, e, b, r) for c, e, b, r in zip(columns, edges, per_dim_bins,
                                                                 ranges)]
    if density and any(type(e) is Box for e in edges_t):
        total = hist.sum()
        for i, e in enumerate(edges_t):
            shape = [1] * d
            shape[i] = len(_plain(e)) - 1
            hist = hist / anp.reshape(anp.diff(e), tuple(shape))
        hist = hist / total
    elif density:
        hist = _onp.histogramdd(*plain[:3], True, plain[4])[0]
    return hist, edges_t


def histogram2d(x, y, bins=10, range=None, density=None, weights=None):
    """numpy.histogram2d, traced like histogramdd."""
    if not _contains_box([x, y, bins, range, weights]):
        return _onp.histogram2d(x, y, bins, range, density, weights)
    try:
        nb = len(bins)
    except TypeError:
        nb = 1
    if nb != 1 and nb != 2:
        bins = [bins, bins]        # numpy's reading: one array of edges for both dimensions
    hist, edges = histogramdd([x, y], bins, range, density, weights)
    return hist, edges[0], edges[1]


_builtins_range = range


def _plain_tree(v):
    if isinstance(v, (list, tuple)):
        return type(v)(_plain_tree(e) for e in v)
    return _plain(v)


for _name in ("histogram", "histogram_bin_edges", "histogramdd", "histogram2d"):
    _set_namespace(_name, globals()[_name], getattr(_onp, _name))


# bincount(x, weights): a scatter-add of the weights (take is its transpose)
def _bincount_weights_vjp(ans, x, weights=None, minlength=0):
    dtype = _dtype(weights)
    return lambda g: cast_like(anp.take(g, _onp.asarray(_plain(x))), dtype)


defvjp(anp.bincount, None, _bincount_weights_vjp, save=(0,))
defjvp(anp.bincount, None, lambda g, ans, x, weights=None, minlength=0:
       anp.bincount(_onp.asarray(_plain(x)), g, minlength))


# Window constructors: M is a count of points, not a value to differentiate
def _window(name):
    np_fn = getattr(_onp, name)

    def window(M, *args, **kwargs):
        if type(M) is Box:
            raise TypeError(f"gradcy.numpy.{name}: M, the number of points, is traced; it is a "
                            f"count with no gradient. Pass a plain int (e.g. len(x)).")
        return np_fn(M, *args, **kwargs)
    window.__name__ = window.__qualname__ = name
    window.__doc__ = np_fn.__doc__
    _set_namespace(name, window, np_fn)


for _name in ("bartlett", "blackman", "hamming", "hanning"):
    _window(_name)


# =============================================================================
# Non-differentiable: integer, boolean or index results
# =============================================================================
_NONDIFFERENTIABLE = [
    "nanargmax", "nanargmin", "lexsort", "bitwise_count", "isnat", "isdtype", "issubdtype",
    "tril_indices", "triu_indices", "diag_indices", "broadcast_shapes", "common_type",
    "mintypecode", "packbits", "unpackbits", "spacing", "einsum_path", "ix_", "show_runtime",
]
nondifferentiable(*[getattr(anp, _n) for _n in _NONDIFFERENTIABLE
                    if hasattr(getattr(anp, _n, None), "traced")])
