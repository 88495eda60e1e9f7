"""The methods of NumPy's ufuncs on gradcy.numpy's ufuncs: np.add.reduce(x), np.multiply.outer(a,
b), np.maximum.accumulate(x), ... (ufunc.at is indexed_updates').

With no traced argument a method is NumPy's own. On traced values each is a function gradcy
differentiates, with the gradient of what it maps to:
- reduce: add -> sum, multiply -> prod, maximum -> max, minimum -> min, logical_and -> all,
  logical_or -> any (the same keywords; axis defaults to 0, as ufunc.reduce's does); any other
  binary ufunc (subtract, divide, power, logaddexp, ...) along one axis: NumPy's left fold
  ((x[0] op x[1]) op x[2]) ..., one call of the ufunc per element along the axis.
- accumulate: add -> cumsum, multiply -> cumprod; any other binary ufunc: the running left fold,
  one call per element along the axis (maximum.accumulate is a running maximum).
- outer(a, b): the ufunc of a reshaped to a.shape + (1,) * b.ndim and b (broadcasting), so
  every binary ufunc's outer has the gradient of the ufunc itself.
- reduceat and the ufunc.at of ufuncs other than add, subtract, multiply, maximum and minimum
  raise an error naming the method and the differentiable spelling.
"""

import numpy as _np

from .._core import Box, Primitive
from ._util import _plain

_REDUCE_AS = {
    "add": "sum",
    "multiply": "prod",
    "maximum": "max",
    "minimum": "min",
    "logical_and": "all",
    "logical_or": "any",
}
_ACCUMULATE_AS = {"add": "cumsum", "multiply": "cumprod"}
_NO_VALUE = _np._NoValue


def _traced(values):
    return any(type(v) is Box or isinstance(v, Box) for v in values)


def _gnp():
    from .. import numpy as gnp  # (the bound names: front ends and primitives)

    return gnp


def _one_axis(qual, axis, ndim):
    if type(axis) is tuple and len(axis) == 1:
        axis = axis[0]
    if axis is None or type(axis) is tuple:
        if ndim == 1:
            return 0
        raise NotImplementedError(
            f"{qual}: on traced values, axis={axis!r} is supported only for add, multiply, "
            f"maximum, minimum, logical_and and logical_or; reduce one axis at a time "
            f"(an int axis=)"
        )
    if not -ndim <= axis < ndim:
        raise _np.exceptions.AxisError(axis, ndim)
    return axis % ndim


# ufunc name -> (reduce, accumulate) of NumPy's float64 loop, each True where it is the left
# fold NumPy documents (NumPy 2.4's power.reduce and arctan2.reduce of [a, b, c] give
# op(a, c)): probed once per ufunc, on first use with traced values
_FOLDS_AS_DOCUMENTED = {}
_PROBE = _np.array([1.25, 0.75, 1.5])


def _check_documented_fold(qual, name, ufunc, method):
    known = _FOLDS_AS_DOCUMENTED.get(name)
    if known is None:
        with _np.errstate(all="ignore"):
            left = [_PROBE[0]]
            for v in _PROBE[1:]:
                left.append(ufunc(left[-1], v))
            known = (
                bool(_np.array_equal(ufunc.reduce(_PROBE), left[-1], equal_nan=True)),
                bool(_np.array_equal(ufunc.accumulate(_PROBE), left, equal_nan=True)),
            )
        _FOLDS_AS_DOCUMENTED[name] = known
    if not known[method == "accumulate"]:
        raise NotImplementedError(
            f"{qual}: NumPy {_np.__version__}'s {name}.{method} of floats does not compute the "
            f"left fold it documents ({name}(x[0], x[1]), then with x[2], ...), so gradcy "
            f"does not serve it on traced values; write the fold, e.g. "
            f"functools.reduce(np.{name}, x) along the first axis"
        )


def _fold(prim, gnp, array, axis, initial, running):
    """The left fold of binary ufunc `prim` along `axis` (traced), from `initial` if given;
    running: every partial result, stacked along axis (accumulate)."""
    array = gnp.moveaxis(array, axis, 0)
    acc = array[0] if initial is _NO_VALUE else prim(initial, array[0])
    parts = [acc]
    for k in range(1, _np.shape(array)[0]):
        acc = prim(acc, array[k])
        parts.append(acc)
    if running:
        return gnp.moveaxis(gnp.stack(parts), 0, axis)
    return acc


def _make_reduce(name, prim, ufunc):
    qual = f"gradcy.numpy.{name}.reduce"
    target = _REDUCE_AS.get(name)

    def reduce(array, axis=0, dtype=None, out=None, keepdims=False, initial=_NO_VALUE, where=True):
        given = dict(
            axis=axis, dtype=dtype, out=out, keepdims=keepdims, initial=initial, where=where
        )
        if not _traced((array, initial, where)) or ufunc.nin != 2 or ufunc.nout != 1:
            # NumPy's own (and its errors for a unary ufunc or one of two outputs)
            return ufunc.reduce(_plain(array), **{k: _plain(v) for k, v in given.items()})
        gnp = _gnp()
        kwargs = {"axis": axis}
        if dtype is not None:
            kwargs["dtype"] = dtype
        if out is not None:
            kwargs["out"] = out
        if keepdims:
            kwargs["keepdims"] = keepdims
        if initial is not _NO_VALUE:
            kwargs["initial"] = initial
        if where is not True:
            kwargs["where"] = where
        if target is not None:
            if target in ("max", "min") and dtype is not None:
                array = gnp.asarray(array).astype(dtype)
                del kwargs["dtype"]
            return getattr(gnp, target)(array, **kwargs)
        if out is not None or where is not True:
            raise NotImplementedError(
                f"{qual}: out= and where= are not supported on traced values; compute the "
                f"reduction and write or mask its result"
            )
        array = gnp.asarray(array)
        if dtype is not None:
            array = array.astype(dtype)
        if _np.ndim(array) == 0 or _np.size(array) == 0:
            # NumPy's value (or its error) from the plain values; traced: a 0-d array is its
            # own reduction (after initial), an empty one's is initial (a constant without it)
            value = ufunc.reduce(_plain(array), **{k: _plain(v) for k, v in given.items()})
            if _np.ndim(array) == 0:
                return array if initial is _NO_VALUE else prim(initial, array)
            if initial is _NO_VALUE:
                return value
            return gnp.zeros(_np.shape(value), _np.result_type(value)) + initial
        ax = _one_axis(qual, axis, _np.ndim(array))
        _check_documented_fold(qual, name, ufunc, "reduce")
        result = _fold(prim, gnp, array, ax, initial, False)
        return gnp.expand_dims(result, ax) if keepdims else result

    reduce.__name__ = "reduce"
    reduce.__qualname__ = f"{name}.reduce"
    reduce.__doc__ = f"numpy.{name}.reduce, differentiable" + (
        f" (as gradcy.numpy.{target})." if target else " (a left fold along one axis)."
    )
    return reduce


def _make_accumulate(name, prim, ufunc):
    qual = f"gradcy.numpy.{name}.accumulate"
    target = _ACCUMULATE_AS.get(name)

    def accumulate(array, axis=0, dtype=None, out=None):
        if not _traced((array,)) or ufunc.nin != 2 or ufunc.nout != 1:
            return ufunc.accumulate(_plain(array), axis=axis, dtype=dtype, out=out)
        gnp = _gnp()
        if out is not None:
            raise NotImplementedError(
                f"{qual}: out= is not supported on traced values; assign the result "
                f"(out[...] = gradcy.numpy.{name}.accumulate(x))"
            )
        if target is not None:
            return getattr(gnp, target)(array, axis=axis, dtype=dtype)
        array = gnp.asarray(array)
        if dtype is not None:
            array = array.astype(dtype)
        if _np.ndim(array) == 0 or _np.size(array) == 0:
            return ufunc.accumulate(_plain(array), axis=axis)  # (NumPy's value or error)
        ax = _one_axis(qual, axis, _np.ndim(array))
        _check_documented_fold(qual, name, ufunc, "accumulate")
        return _fold(prim, gnp, array, ax, _NO_VALUE, True)

    accumulate.__name__ = "accumulate"
    accumulate.__qualname__ = f"{name}.accumulate"
    accumulate.__doc__ = f"numpy.{name}.accumulate, differentiable" + (
        f" (as gradcy.numpy.{target})." if target else " (a running left fold)."
    )
    return accumulate


def _make_outer(name, prim, ufunc):
    def outer(a, b, /, **kwargs):
        if not _traced((a, b)) or ufunc.nin != 2 or ufunc.nout != 1:
            return ufunc.outer(_plain(a), _plain(b), **kwargs)
        gnp = _gnp()
        a = gnp.reshape(a, _np.shape(a) + (1,) * _np.ndim(b))
        return prim(a, b, **kwargs)

    outer.__name__ = "outer"
    outer.__qualname__ = f"{name}.outer"
    outer.__doc__ = f"numpy.{name}.outer, differentiable ({name} of a[..., None, ...] and b)."
    return outer


def _make_reduceat(name, ufunc):
    qual = f"gradcy.numpy.{name}.reduceat"

    def reduceat(array, indices, axis=0, dtype=None, out=None):
        if not _traced((array,)):
            return ufunc.reduceat(_plain(array), _plain(indices), axis=axis, dtype=dtype, out=out)
        raise NotImplementedError(
            f"{qual}: not differentiable in gradcy; reduce each segment instead, e.g. "
            f"np.stack([np.{name}.reduce(x[i:j], axis=0) for i, j in zip(starts, ends)])"
        )

    reduceat.__name__ = "reduceat"
    reduceat.__qualname__ = f"{name}.reduceat"
    return reduceat


def _make_missing_at(name, ufunc):
    qual = f"gradcy.numpy.{name}.at"

    def at(a, indices, b=None):
        if not _traced((a, b)):
            return ufunc.at(a, _plain(indices)) if b is None else ufunc.at(a, _plain(indices), b)
        raise NotImplementedError(
            f"{qual}: not differentiable in gradcy (ufunc.at is served for add, subtract, "
            f"multiply, maximum and minimum); write a[indices] = np.{name}(a[indices]"
            f"{'' if b is None else ', b'}) (positions not repeated), or use the functional "
            f"form a.at[indices].set(...)"
        )

    at.__name__ = "at"
    at.__qualname__ = f"{name}.at"
    return at


def install_ufunc_methods(namespace):
    """Give every ufunc primitive in `namespace` (gradcy.numpy's) NumPy's ufunc methods and
    attributes (nin, nout, nargs, identity, ntypes, types, signature)."""
    for name, prim in list(namespace.items()):
        ufunc = getattr(_np, name, None)
        if type(prim) is not Primitive or not isinstance(ufunc, _np.ufunc):
            continue
        name = ufunc.__name__  # (NumPy's name: arctan2 for its alias atan2)
        for attr in ("nin", "nout", "nargs", "identity", "ntypes", "types", "signature"):
            setattr(prim, attr, getattr(ufunc, attr))
        prim.reduce = _make_reduce(name, prim, ufunc)
        prim.accumulate = _make_accumulate(name, prim, ufunc)
        prim.outer = _make_outer(name, prim, ufunc)
        prim.reduceat = _make_reduceat(name, ufunc)
        if "at" not in prim.__dict__:
            prim.at = _make_missing_at(name, ufunc)
