"""A batch of tangents of one value, carried through forward mode as one value.

`BatchedTangent` holds B tangents stacked on a leading axis (``data.shape == (B,) + shape``)
and presents itself to the JVP rules as one tangent of ``shape``: ``.shape``, ``.ndim`` and
``.dtype`` are those of each tangent, and NumPy's dispatch protocols (``__array_ufunc__``,
``__array_function__``) apply each NumPy function to all B tangents at once. The rules need no
change: a JVP rule is linear in its tangent and written with NumPy functions, so
``rule(batch)`` is the batch of ``rule(tangent)``.

- Elementwise ufuncs, reductions (``sum``, ``mean``, ``ufunc.reduce``), ``matmul``, ``dot``,
  reshapes, transposes and broadcasts run once on ``data``: with a matrix operand, ``A @ v``
  for B vectors v is one matrix product ``A @ V.T`` (on Dask: one blockwise product per chunk
  of A, not B of them).
- Any other function runs once per tangent and the results are stacked (``numpy.stack``, which
  Dask arrays dispatch too); answers that are not values (shapes, dtypes, flags) must agree
  across the batch and are returned once.

Converting a batch to one array (``numpy.asarray``) raises TypeError: a rule that needs a
plain array cannot be batched, and the caller (`gradcy.hessian`, `make_jvp`'s ``jvp.batch``)
falls back to one forward pass per tangent.
"""

import numbers

import numpy as _np

from . import _dask_ops, backends

__all__ = ["BatchedTangent", "BatchingError"]


class BatchingError(TypeError):
    """A JVP rule used a batch of tangents as one plain array; the caller runs the tangents
    one at a time instead."""


def _dtype_of(v):
    """v's dtype, or v itself for a Python scalar (whose type NumPy's promotion ignores)."""
    return v.dtype if hasattr(v, "dtype") else v


def _plain(v):
    """v is a plain value a batch's scale may absorb: a NumPy or Dask array or a number."""
    return (
        isinstance(v, (_np.ndarray, _np.generic, numbers.Number))
        and not isinstance(v, bool)
        or backends.is_array_value(v)
    )


def _scale_of(x):
    return 1.0 if x._scale is None else x._scale


def _scaled(ufunc, inputs):
    """The products, quotients, negations and sums that keep a batch's product with plain
    values unformed (None: the operation forms it)."""
    if ufunc is _np.negative:
        (x,) = inputs
        return BatchedTangent(x._base, _dask_ops.arith(_np.negative, _scale_of(x)))
    a, b = inputs
    if ufunc is _np.multiply:
        if type(b) is BatchedTangent:
            a, b = b, a
        if type(b) is BatchedTangent or not _plain(b) or _np.ndim(b) > a._base.ndim - 1:
            return None
        return BatchedTangent(a._base, _dask_ops.arith(_np.multiply, _scale_of(a), b))
    if ufunc is _np.true_divide:
        if type(b) is BatchedTangent or not _plain(b) or _np.ndim(b) > a._base.ndim - 1:
            return None
        return BatchedTangent(a._base, _dask_ops.arith(_np.true_divide, _scale_of(a), b))
    # add, subtract: two batches of the same tangents
    if (
        type(a) is not BatchedTangent
        or type(b) is not BatchedTangent
        or a._base is not b._base
        or (a._scale is None and b._scale is None)
    ):
        return None
    sa, sb = _scale_of(a), _scale_of(b)
    if _dask_ops.is_dask(sa) or _dask_ops.is_dask(sb):
        return BatchedTangent(a._base, _dask_ops.arith(ufunc, sa, sb))
    return BatchedTangent(a._base, ufunc(sa, sb))  # (NumPy's scalars, as before)


_SCALING = (_np.negative, _np.multiply, _np.true_divide, _np.add, _np.subtract)


def _lift(x, nd):
    """The batch's data with length-1 axes after the batch axis, so that its tangents have `nd`
    axes and broadcast against plain operands (which align on the right)."""
    d = x.data
    k = nd - (d.ndim - 1)
    if k > 0:
        d = d.reshape((d.shape[0],) + (1,) * k + tuple(d.shape[1:]))
    return d


def _item_ndim(x):
    return x.data.ndim - 1 if type(x) is BatchedTangent else _np.ndim(x)


def _shift_axis(axis, nd):
    """A tangent's axis (or axes, None: all) as an axis of the batch's data."""
    if axis is None:
        return tuple(range(1, nd + 1))
    if isinstance(axis, (tuple, list)):
        return tuple(_np_axis(a, nd) + 1 for a in axis)
    return _np_axis(axis, nd) + 1


def _np_axis(a, nd):
    a = int(a)
    if not -nd <= a < max(nd, 1):
        raise (
            _np.exceptions.AxisError(a, nd)
            if hasattr(_np, "exceptions")
            else ValueError(f"axis {a} is out of bounds for an array of dimension {nd}")
        )
    return a % nd if nd else 0


def _is_metadata(r):
    """r describes its arguments (a shape, a dtype, a flag) rather than being a value."""
    if isinstance(r, (bool, _np.dtype, type, str)) or r is None:
        return True
    if isinstance(r, numbers.Integral) and not isinstance(r, _np.generic):
        return True
    if isinstance(r, tuple) and all(isinstance(e, numbers.Integral) for e in r):
        return True
    return False


def _stack(results, fname):
    """The per-tangent results of one function as a batch (containers elementwise)."""
    first = results[0]
    if _is_metadata(first):
        if any(not _same(r, first) for r in results[1:]):
            raise BatchingError(f"{fname} gave different answers for the tangents of a batch")
        return first
    if isinstance(first, (tuple, list)):
        return type(first)(_stack([r[i] for r in results], fname) for i in range(len(first)))
    return BatchedTangent(
        _np.stack([_np.asarray(r) if isinstance(r, numbers.Number) else r for r in results])
    )


def _same(a, b):
    try:
        return bool(a == b)
    except Exception:
        return a is b


def _per_tangent(fn, args, kwargs, fname):
    """fn applied to each tangent of the batches among args and kwargs, stacked."""
    n = _batch_size(list(args) + list(kwargs.values()))
    if n is None:
        return fn(*args, **kwargs)
    results = []
    for b in range(n):
        results.append(fn(*[_at(a, b) for a in args], **{k: _at(v, b) for k, v in kwargs.items()}))
    return _stack(results, fname)


def _batch_size(values):
    """B of the first batch among values (searched in tuples and lists), or None."""
    for a in values:
        if type(a) is BatchedTangent:
            return a.batch_size
        if isinstance(a, (tuple, list)):
            n = _batch_size(a)
            if n is not None:
                return n
    return None


def _at(a, b):
    if type(a) is BatchedTangent:
        return a.data[b]
    if isinstance(a, (tuple, list)) and _batch_size(a) is not None:
        return type(a)(_at(e, b) for e in a)
    return a


def _moveaxis(d, src, dst):
    return _np.moveaxis(d, src, dst)


def _basis(t, plain, axis):
    """The product of the standard basis `t` (a batch of the unit vectors, unscaled) with a
    plain array contracted over the plain array's `axis`: that axis moved to the front, a
    view (for Dask no task), cast to the product's dtype. None when t is not such a batch."""
    if not t._eye or t._scale is not None or _np.ndim(plain) < 1:
        return None
    out = _np.moveaxis(plain, axis, 0)
    dtype = _np.result_type(_dtype_of(plain), t._base.dtype)
    return BatchedTangent(out if out.dtype == dtype else out.astype(dtype))


def _unit_product(a, b):
    """a @ b (or numpy.dot(a, b)) where the batch is the unit vectors: columns or rows of the
    plain operand picked (_basis); (False, None) if neither operand is such a batch, and
    (True, None) where no batch rule applies (both are batches)."""
    if type(a) is BatchedTangent and type(b) is BatchedTangent:
        return True, None
    if type(b) is BatchedTangent and b._eye:
        return True, _basis(b, a, -1)
    if type(a) is BatchedTangent and a._eye:
        return True, _basis(a, b, -2 if _np.ndim(b) >= 2 else -1)
    return False, None


def _plain_dot(a, b):
    """numpy.dot of plain values (a batch's data), on Dask arrays of a tall problem's shapes as
    a blockwise product per chunk (gradcy._dask_ops.dot), else NumPy's (Dask's)."""
    r = _dask_ops.dot(a, b)
    return _np.dot(a, b) if r is None else r


def _plain_matmul(a, b):
    """numpy.matmul of plain values: on Dask arrays of at most 2 dimensions (where it is
    numpy.dot) of a tall problem's shapes gradcy._dask_ops.dot's, else NumPy's (Dask's)."""
    r = _dask_ops.dot(a, b) if 1 <= _np.ndim(a) <= 2 and 1 <= _np.ndim(b) <= 2 else None
    return _np.matmul(a, b) if r is None else r


def _matmul(a, b):
    """a @ b with one of them a batch."""
    done, out = _unit_product(a, b)
    if done:
        return out
    if type(b) is BatchedTangent:
        kb, na = b.data.ndim - 1, _np.ndim(a)
        if kb == 1 and na >= 1:
            if na == 1:
                return BatchedTangent(_plain_matmul(b.data, a))
            return BatchedTangent(_moveaxis(_plain_matmul(a, b.data.T), -1, 0))
        if kb >= 2:
            return BatchedTangent(_plain_matmul(a, _lift(b, max(kb, na))))
        return None
    ka, nb = a.data.ndim - 1, _np.ndim(b)
    if ka == 1 and nb >= 1:
        out = _plain_matmul(a.data, b)
        return BatchedTangent(out if nb <= 2 else _moveaxis(out, -2, 0))
    if ka >= 2 and nb >= 1:
        return BatchedTangent(_plain_matmul(_lift(a, max(ka, nb)), b))
    return None


def _dot(a, b):
    """numpy.dot(a, b) with one of them a batch."""
    done, out = _unit_product(a, b)
    if done:
        return out
    x, p = (a, b) if type(a) is BatchedTangent else (b, a)
    if (
        type(p) is not BatchedTangent
        and x.ndim == 1
        and _np.ndim(p) == 1
        and x._thunk is None
        and _to_scalars(x)
        and _dtype_of(p) is not p
        and _np.dtype(_dtype_of(p)).kind in _FLOATS
    ):
        # a vector's product with a batch of vectors: one number per tangent (built when read)
        return BatchedTangent._pending(
            lambda: _dot_now(a, b).data, x.batch_size, _np.result_type(x.dtype, _dtype_of(p))
        )
    return _dot_now(a, b)


def _dot_now(a, b):
    if type(a) is BatchedTangent:
        if a.data.ndim >= 2 and _np.ndim(b) >= 1:
            return BatchedTangent(_plain_dot(a.data, b))
        return None
    na, kb = _np.ndim(a), b.data.ndim - 1
    if na >= 1 and kb == 1:
        out = _dask_ops.dot_t(a, b.data) if na == 2 else None
        if out is not None:  # (one layer on Dask instead of two transposes and a product)
            return BatchedTangent(out)
        return BatchedTangent(_moveaxis(_plain_dot(a, b.data.T), -1, 0))
    if na >= 1 and kb >= 2:
        return BatchedTangent(_moveaxis(_np.tensordot(a, b.data, axes=([-1], [-2])), na - 1, 0))
    return None


def _to_scalars(x):
    """x is a batch on Dask data of a floating dtype whose reduction to one number per
    tangent may wait (`BatchedTangent._pending`)."""
    return (
        type(x) is BatchedTangent
        and x.dtype.kind in _FLOATS
        and (x._thunk is not None or backends.is_lazy(x._b))
    )


_FLOATS = "fc"


def _reduction(func):
    def run(x, axis=None, *args, **kwargs):
        if (
            type(x) is not BatchedTangent
            or kwargs.get("out") is not None
            or any(type(a) is BatchedTangent for a in args)
        ):
            return None
        if (
            not args
            and all(
                (k == "keepdims" and v in (False, _np._NoValue)) or (k == "dtype" and v is None)
                for k, v in kwargs.items()
            )
            and axis is None
            and x._thunk is None
            and _to_scalars(x)
        ):
            # a tangent of one number per tangent, of x's dtype (a floating sum or mean)
            return BatchedTangent._pending(
                lambda: func(x.data, _shift_axis(None, x.ndim)), x.batch_size, x.dtype
            )
        return BatchedTangent(func(x.data, _shift_axis(axis, x.ndim), *args, **kwargs))

    return run


def _reshape(x, shape=None, *args, **kwargs):
    if "newshape" in kwargs:
        shape = kwargs.pop("newshape")
    if type(x) is not BatchedTangent or args or kwargs.get("order", "C") != "C":
        return None
    return x.reshape(shape)


def _transpose(x, axes=None):
    if type(x) is not BatchedTangent:
        return None
    return x.transpose(axes)


def _broadcast_to(x, shape, subok=False):
    if type(x) is not BatchedTangent:
        return None
    shape = (shape,) if isinstance(shape, numbers.Integral) else tuple(shape)
    d = _lift(x, len(shape))
    return BatchedTangent(_np.broadcast_to(d, (d.shape[0],) + shape))


def _where(cond, x=None, y=None):
    if x is None or y is None or type(cond) is BatchedTangent:
        return None
    nd = max(_item_ndim(v) for v in (cond, x, y))
    return BatchedTangent(
        _np.where(cond, *[_lift(v, nd) if type(v) is BatchedTangent else v for v in (x, y)])
    )


def _like(func):
    def run(x, *args, **kwargs):
        if type(x) is not BatchedTangent or "shape" in kwargs or args and func is not _np.full_like:
            return None
        return BatchedTangent(func(x.data, *args, **kwargs))

    return run


def _moveaxis_f(x, source, destination):
    if type(x) is not BatchedTangent:
        return None
    nd = x.ndim
    src = _shift_axis(source if isinstance(source, (tuple, list)) else source, nd)
    dst = _shift_axis(destination if isinstance(destination, (tuple, list)) else destination, nd)
    return BatchedTangent(_np.moveaxis(x.data, src, dst))


def _expand_dims(x, axis):
    if type(x) is not BatchedTangent:
        return None
    axes = axis if isinstance(axis, (tuple, list)) else (axis,)
    nd = x.ndim + len(axes)
    return BatchedTangent(_np.expand_dims(x.data, tuple(_np_axis(a, nd) + 1 for a in axes)))


def _squeeze(x, axis=None):
    if type(x) is not BatchedTangent:
        return None
    if axis is None:
        axis = tuple(i for i, n in enumerate(x.shape) if n == 1)
    return BatchedTangent(_np.squeeze(x.data, _shift_axis(axis, x.ndim)))


def _real(x):
    return BatchedTangent(x.data.real) if type(x) is BatchedTangent else None


def _imag(x):
    return BatchedTangent(x.data.imag) if type(x) is BatchedTangent else None


_FUNCTIONS = {
    _np.sum: _reduction(_np.sum),
    _np.mean: _reduction(_np.mean),
    _np.dot: _dot,
    _np.reshape: _reshape,
    _np.transpose: _transpose,
    _np.broadcast_to: _broadcast_to,
    _np.where: _where,
    _np.zeros_like: _like(_np.zeros_like),
    _np.ones_like: _like(_np.ones_like),
    _np.empty_like: _like(_np.empty_like),
    _np.moveaxis: _moveaxis_f,
    _np.expand_dims: _expand_dims,
    _np.squeeze: _squeeze,
    _np.real: _real,
    _np.imag: _imag,
}


def _deferred(ufunc, inputs):
    """A negation, sum, difference, product or quotient of batches of one number per tangent
    (0-d items) on Dask data and plain numbers, one of them not yet built: not built either
    (`BatchedTangent._pending`); None when the case does not apply."""
    n, pending, dtypes = None, False, []
    for x in inputs:
        if type(x) is BatchedTangent:
            if x.ndim != 0 or not _to_scalars(x) or (n is not None and x.batch_size != n):
                return None
            n, pending = x.batch_size, pending or x._thunk is not None
            dtypes.append(x.dtype)
        elif _plain(x) and _np.ndim(x) == 0 and not backends.is_array_value(x):
            dtypes.append(_dtype_of(x))
        else:
            return None
    if not pending:
        return None
    dtype = _np.result_type(*dtypes)
    if dtype.kind not in _FLOATS:
        return None
    return BatchedTangent._pending(lambda: _ufunc_now(ufunc, "__call__", inputs, {}).data, n, dtype)


def _ufunc_now(ufunc, method, inputs, kwargs):
    """A ufunc's method applied to inputs among which are batches."""
    if method == "__call__":
        if not kwargs and ufunc in _SCALING:
            out = _scaled(ufunc, inputs)
            if out is not None:
                return out
        if ufunc is _np.matmul and not kwargs:
            out = _matmul(*inputs)
            if out is not None:
                return out
        elif ufunc.signature is None:
            nd = max(_item_ndim(x) for x in inputs)
            where = kwargs.get("where", True)
            if type(where) is not BatchedTangent:
                out = ufunc(
                    *[_lift(x, nd) if type(x) is BatchedTangent else x for x in inputs],
                    **kwargs,
                )
                if isinstance(out, tuple):
                    return tuple(BatchedTangent(o) for o in out)
                return BatchedTangent(out)
    elif (
        method in ("reduce", "accumulate")
        and len(inputs) == 1
        and type(inputs[0]) is BatchedTangent
        and "where" not in kwargs
    ):
        x = inputs[0]
        axis = kwargs.pop("axis", 0)
        if method == "accumulate" and axis is None:
            axis = 0
        return BatchedTangent(
            getattr(ufunc, method)(x.data, axis=_shift_axis(axis, x.ndim), **kwargs)
        )
    return _per_tangent(getattr(ufunc, method), inputs, kwargs, f"numpy.{ufunc.__name__}.{method}")


class BatchedTangent:
    """B tangents of a value, as one: ``data`` has shape ``(B,) + shape`` (an array of any
    library: NumPy, Dask, ...).

    A batch multiplied by plain arrays keeps the product unformed: ``BatchedTangent(data,
    scale)`` stands for ``data * scale`` (``scale`` broadcast over the batch), so a chain of
    products, quotients, negations and sums of batches with the same ``data`` (the tangents
    of an elementwise function: ``dz * f'(z) * g'(f(z)) + dz * h'(z)``) costs operations on
    the value's shape, and the batch is multiplied once, when an operation needs it (a matrix
    product, a reduction) -- as a hand-written Hessian scales X by the curvature once."""

    __slots__ = ("_b", "_scale", "_eye", "_thunk", "_meta")
    __array_priority__ = 1000  # ndarray's operators defer to this type's

    def __init__(self, data, scale=None, eye=False):
        self._b = data
        self._scale = scale
        self._thunk = self._meta = None
        # data is the standard basis of a 1-D value (data[b] the b-th unit vector): a matrix
        # product with it selects, it does not multiply
        self._eye = eye and scale is None and data.ndim == 2 and data.shape[0] == data.shape[1]

    @classmethod
    def _pending(cls, thunk, batch_size, dtype):
        """A batch of B scalar tangents (0-d items) on Dask data, not yet built: thunk()
        builds its data the first time anything reads it (`_base`, `data`). A tangent nobody
        reads (the loss value's, in forward mode over a gradient: the gradient discards the
        value) costs no graph."""
        self = cls.__new__(cls)
        self._b = self._scale = None
        self._eye = False
        self._thunk = thunk
        self._meta = (batch_size, _np.dtype(dtype))
        return self

    @property
    def _base(self):
        if self._thunk is not None:
            thunk, self._thunk = self._thunk, None
            self._b = thunk()
            self._meta = None
        return self._b

    @property
    def data(self):
        """The tangents as one array of shape (B,) + shape."""
        base = self._base
        if self._scale is not None:
            scale = self._scale
            nd = max(base.ndim - 1, _np.ndim(scale))
            k = nd - (base.ndim - 1)
            if k > 0:
                base = base.reshape((base.shape[0],) + (1,) * k + tuple(base.shape[1:]))
            self._b, self._scale = _dask_ops.scale_batch(base, scale), None
        return self._b

    # -- what a rule sees: one tangent -------------------------------------------------
    @property
    def shape(self):
        if self._thunk is not None:
            return ()
        item = tuple(self._b.shape[1:])
        if self._scale is None:
            return item
        return tuple(_np.broadcast_shapes(item, _np.shape(self._scale)))

    @property
    def ndim(self):
        return len(self.shape)

    @property
    def size(self):
        return int(_np.prod(self.shape))

    @property
    def dtype(self):
        if self._thunk is not None:
            return self._meta[1]
        if self._scale is None:
            return self._b.dtype
        return _np.result_type(self._b.dtype, _dtype_of(self._scale))

    @property
    def batch_size(self):
        """B, the number of tangents."""
        if self._thunk is not None:
            return self._meta[0]
        return self._b.shape[0]

    def __len__(self):
        if not self.shape:
            raise TypeError("len() of a 0-d tangent")
        return self.shape[0]

    def __repr__(self):
        return f"BatchedTangent({self.data!r})"

    def __array__(self, dtype=None, copy=None):
        raise BatchingError("a JVP rule converted a batch of tangents to one array")

    def __bool__(self):
        raise BatchingError("a JVP rule took the truth value of a batch of tangents")

    def __float__(self):
        raise BatchingError("a JVP rule converted a batch of tangents to a float")

    def __complex__(self):
        raise BatchingError("a JVP rule converted a batch of tangents to a complex")

    # -- NumPy's protocols --------------------------------------------------------------
    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        if kwargs.get("out") is not None:
            return NotImplemented
        if method == "__call__" and not kwargs and ufunc in _SCALING:
            out = _deferred(ufunc, inputs)
            if out is not None:
                return out
        return _ufunc_now(ufunc, method, inputs, kwargs)

    def __array_function__(self, func, types, args, kwargs):
        rule = _FUNCTIONS.get(func)
        if rule is not None:
            out = rule(*args, **kwargs)
            if out is not None:
                return out
        return _per_tangent(func, args, kwargs, f"numpy.{func.__name__}")

    # -- methods and operators a rule may use -----------------------------------------
    def reshape(self, *shape, order="C"):
        if len(shape) == 1 and not isinstance(shape[0], numbers.Integral):
            shape = shape[0]
        shape = tuple(shape)
        if order != "C":
            return _per_tangent(lambda x: x.reshape(shape, order=order), (self,), {}, "reshape")
        if -1 in shape:
            known = int(_np.prod([n for n in shape if n != -1]))
            shape = tuple(self.size // max(known, 1) if n == -1 else n for n in shape)
        return BatchedTangent(self.data.reshape((self.batch_size,) + shape))

    def transpose(self, *axes):
        if len(axes) == 1 and (axes[0] is None or isinstance(axes[0], (tuple, list))):
            axes = axes[0]
        nd = self.ndim
        if not axes:
            axes = tuple(range(nd))[::-1]
        return BatchedTangent(self.data.transpose((0,) + tuple(_np_axis(a, nd) + 1 for a in axes)))

    @property
    def T(self):
        return self.transpose()

    @property
    def real(self):
        return BatchedTangent(self.data.real)

    @property
    def imag(self):
        return BatchedTangent(self.data.imag)

    def conj(self):
        return _np.conjugate(self)

    conjugate = conj

    def astype(self, dtype, *args, **kwargs):
        return BatchedTangent(self.data.astype(dtype, *args, **kwargs))

    def copy(self):
        return BatchedTangent(self.data.copy())

    def ravel(self, order="C"):
        return self.reshape((self.size,), order=order)

    flatten = ravel

    def squeeze(self, axis=None):
        return _squeeze(self, axis)

    def swapaxes(self, a, b):
        return _np.swapaxes(self, a, b)

    def sum(self, axis=None, dtype=None, keepdims=False):
        return _np.sum(self, axis=axis, dtype=dtype, keepdims=keepdims)

    def mean(self, axis=None, dtype=None, keepdims=False):
        return _np.mean(self, axis=axis, dtype=dtype, keepdims=keepdims)

    def dot(self, other):
        return _np.dot(self, other)

    def __getitem__(self, idx):
        if type(idx) is BatchedTangent:
            raise BatchingError("a batch of tangents used as an index")
        if not isinstance(idx, tuple):
            idx = (idx,)
        return BatchedTangent(self.data[(slice(None),) + idx])

    def __neg__(self):
        return _np.negative(self)

    def __pos__(self):
        return self

    def __abs__(self):
        return _np.absolute(self)


def _binary(ufunc):
    def op(self, other):
        return ufunc(self, other)

    def rop(self, other):
        return ufunc(other, self)

    return op, rop


for _name, _uf in [
    ("add", _np.add),
    ("sub", _np.subtract),
    ("mul", _np.multiply),
    ("truediv", _np.true_divide),
    ("pow", _np.power),
    ("matmul", _np.matmul),
    ("floordiv", _np.floor_divide),
    ("mod", _np.remainder),
]:
    _op, _rop = _binary(_uf)
    setattr(BatchedTangent, f"__{_name}__", _op)
    setattr(BatchedTangent, f"__r{_name}__", _rop)
for _name, _uf in [
    ("eq", _np.equal),
    ("ne", _np.not_equal),
    ("lt", _np.less),
    ("le", _np.less_equal),
    ("gt", _np.greater),
    ("ge", _np.greater_equal),
]:
    setattr(BatchedTangent, f"__{_name}__", _binary(_uf)[0])
BatchedTangent.__hash__ = None
del _name, _uf, _op, _rop
