"""Updates at an index: what lands where an index repeats a position, how a traced value casts
into an integer or boolean array, and the functional updates `x.at[idx].set(v)` and friends.

- Repeated positions in an advanced index (buf[[0, 0]] = v, x.at[[0, 0]].set(v)) keep the
  value NumPy writes last (found by writing labels with the same index: kept); the others get
  no gradient. .add, .subtract, .multiply, .divide, .power, .min and .max of x.at[idx] apply
  every update at a repeated position (JAX's semantics, numpy.add.at for .add).
- A traced value written into an integer or boolean array that the dtype rounds is a constant
  (constant_if_cast), as x.astype(int) is.
- x.at[idx] (JAX's spelling, on plain and traced arrays) returns a new array and leaves x as
  it is: the primitives gradcy.numpy.at_set and gradcy.numpy.at_add. at_set is also the step
  the write path (inplace.py) records for a write that makes a new version of a buffer.
- numpy's ufunc.at (add, subtract, multiply, maximum, minimum): gradcy.numpy.add.at(a, idx, v)
  writes a[idx] in place with every update of a repeated position applied (unbuffered, as
  NumPy), recorded like a[idx] = ... for a traced a (the write goes through inplace.py); a
  plain a given a traced v raises TracerArrayConversionError.
"""

import numpy as _np

from .. import _core
from .._core import Box, is_array_value, register_box_method
from ..registry import defjvp, defvjp_direct, primitive
from . import _wrap as anp
from ._util import _plain, unbroadcast

__all__ = ["at"]


# =============================================================================
# Repeated positions: NumPy keeps the value it writes last
# =============================================================================
def _may_repeat(idx):
    """Whether idx may select a position twice (it has an integer array of 2+ elements)."""
    for i in idx if type(idx) is tuple else (idx,):
        if i is None or i is Ellipsis or isinstance(i, (int, _np.integer, slice, bool, _np.bool_)):
            continue
        a = _np.asarray(_plain(i))
        if a.dtype != bool and a.size > 1:
            return True
    return False


def kept(idx, shape):
    """For buf[idx] = v on a buffer of `shape`: None when every selected element lands, else
    a boolean array of the selection's shape, True for the elements NumPy keeps (of those that
    select one position, the one written last). O(selection): the labels array is allocated,
    not filled."""
    if not _may_repeat(idx):
        return None
    labels = _np.empty(shape, _np.intp)
    ids = _np.arange(labels[idx].size, dtype=_np.intp).reshape(labels[idx].shape)
    labels[idx] = ids
    keep = labels[idx] == ids
    return None if keep.all() else keep


def _landing(idx, shape, value):
    """The value to record for buf[idx] = value: when idx repeats a position, the elements
    NumPy overwrites are zeroed (they never land, so the write's VJP gives them no gradient;
    the stored result is the same)."""
    keep = kept(idx, shape)
    if keep is None:
        return value
    zero = _np.zeros((), value.dtype if type(value) is Box else _np.result_type(value))
    return anp.where(keep, value, zero)


def _selected(g, idx):
    """g[idx] as the cotangent of a value written at idx: zero where a later element of the
    same write overwrote it."""
    keep = None if _core.is_basic_index(idx) else kept(idx, g.shape)
    if type(g) is Box:
        gi = anp.getitem(g, idx)
        return gi if keep is None else anp.where(keep, gi, 0.0)
    if is_array_value(g):
        gi = g[idx]  # (a new array: Dask and CuPy indexing do not alias for writes)
        return gi if keep is None else anp.where(keep, gi, 0.0)
    gi = _np.array(g[idx], copy=True)
    if keep is not None:
        gi[~keep] = 0
    return gi


# =============================================================================
# Writes that cast: a traced value into an integer or boolean buffer
# =============================================================================
def constant_if_cast(buf, value, cast=True):
    """The value to write into `buf` (an array, plain or traced): a traced value that buf's
    integer or boolean dtype rounds (a float or complex into an integer buffer, anything but a
    boolean into a boolean one) is a constant, as x.astype(int) is (its derivative is zero);
    its plain values go in, cast by NumPy's own write. Into a floating-point, complex or
    object buffer (float64 into float32 included: a cast that keeps the gradient), and an
    integer value into an integer buffer (integer arithmetic of an integer argument carries
    the gradient), the traced value itself. cast=False: the plain value uncast (numpy.add.at
    casts the sum, not the value)."""
    if type(value) is not Box:
        return value
    dtype = _dtype(buf)
    kind = dtype.kind
    if kind in "fcO":
        return value
    vkind = _dtype(value).kind
    if vkind == "b" or (kind in "iu" and vkind in "iu"):
        return value
    # astype to an integer or boolean dtype: a plain array of NumPy's cast (the one the write
    # makes), and a read of the values that a const_graph replay checks (as _plain's is here)
    return anp.astype(value, dtype) if cast else _plain(value)


def _dtype(a):
    """The dtype of an array (NumPy, Dask, CuPy: read, not computed; traced or not) or
    scalar; not a read of its values."""
    while type(a) is Box:
        a = a._value
    dtype = getattr(a, "dtype", None)
    return dtype if dtype is not None else _np.result_type(a)


# =============================================================================
# Functional updates: x.at[idx].set(v) and friends
# =============================================================================
def _at_set(x, idx, v):
    out = x.copy() if is_array_value(x) else _np.array(x, copy=True)
    out[idx] = v
    return out


def _at_add(x, idx, v):
    out = _np.array(x, copy=True)
    _np.add.at(out, idx, v)
    return out


_set_at = primitive(_at_set, "gradcy.numpy.at_set")
_add_at = primitive(_at_add, "gradcy.numpy.at_add")


def at_set(x, idx, v):
    """A copy of x with x[idx] = v (the at_set primitive); a traced v that x's integer or
    boolean dtype casts is a constant (constant_if_cast)."""
    return _set_at(x, idx, constant_if_cast(x, v))


def at_add(x, idx, v):
    """A copy of x with v added at idx, every update of a repeated position applied (the
    at_add primitive); a traced v that x's integer or boolean dtype casts is a constant."""
    return _add_at(x, idx, constant_if_cast(x, v, cast=False))


defvjp_direct(
    _set_at,
    lambda g, ans, x, idx, v: at_set(g, idx, 0.0),
    None,
    lambda g, ans, x, idx, v: unbroadcast(_selected(g, idx), v),
    save=(1,),
)
defjvp(
    _set_at,
    lambda g, ans, x, idx, v: at_set(g, idx, 0.0),
    None,
    lambda g, ans, x, idx, v: at_set(anp.zeros_like(ans), idx, g),
)
defvjp_direct(
    _add_at,
    lambda g, ans, x, idx, v: g,
    None,
    lambda g, ans, x, idx, v: unbroadcast(anp.getitem(g, idx), v),
    save=(1,),
)
defjvp(
    _add_at,
    lambda g, ans, x, idx, v: g,
    None,
    lambda g, ans, x, idx, v: at_add(anp.zeros_like(ans), idx, g),
)


def _at_apply(op, x, idx, v):
    """x with x[i] = op(x[i], v_k) applied for every element k of the selection in turn: a
    position selected twice gets both updates (JAX's .at semantics), in selection order."""
    shape = _np.shape(x)
    positions = _np.arange(_np.prod(shape, dtype=_np.intp)).reshape(shape)[idx]
    flat = positions.reshape(-1)
    order = _np.argsort(flat, kind="stable")
    ordered = flat[order]
    starts = _np.ones(flat.size, bool)
    starts[1:] = ordered[1:] != ordered[:-1]
    if starts.all():  # no position twice: one update
        return at_set(x, idx, op(anp.getitem(x, idx), v))
    # rank of each element among those that select its position: update round by round
    counter = _np.arange(flat.size)
    rank = _np.empty(flat.size, _np.intp)
    rank[order] = counter - _np.maximum.accumulate(_np.where(starts, counter, 0))
    values = anp.reshape(anp.broadcast_to(v, positions.shape), (-1,))
    out = anp.reshape(x, (-1,))
    for r in range(int(rank.max()) + 1):
        sel = _np.flatnonzero(rank == r)
        at = flat[sel]
        out = at_set(out, at, op(anp.getitem(out, at), anp.getitem(values, sel)))
    return anp.reshape(out, shape)


def _ufunc_at(name, update):
    """numpy.<name>.at(a, indices, b): a[indices] = name(a[indices], b) in place, unbuffered (a
    position selected k times gets all k updates, in order). `update(a, idx, b)` is the traced
    functional form. A traced `a` receives a recorded write (as a[idx] = v does: in place for a
    buffer gradcy.numpy made, a copy on the first write otherwise); a plain `a` takes plain
    values only."""
    ufunc = getattr(_np, name)
    qual = f"gradcy.numpy.{name}.at"

    def at(a, indices, b=None):
        if b is None:
            raise TypeError(
                f"{qual}: the second operand (argument 2) is required for a binary ufunc"
            )
        idx = _plain(indices) if type(indices) is Box else indices
        if type(a) is not Box:
            if type(b) is Box:
                raise _core.TracerArrayConversionError(
                    f"{qual}: argument 0 is a plain numpy array and argument 2 a traced value; "
                    f"writing it into the plain array would drop its gradient. Create the "
                    f"array with gradcy.numpy (zeros, empty, array, copy) inside the "
                    f"differentiated function so that the write is traced, or use the "
                    f"functional form a = a.at[indices].{_AT_METHOD.get(name, name)}(b) on a "
                    f"traced a"
                )
            ufunc.at(a, idx, b)
            return None
        a[idx] = anp.getitem(update(a, idx, b), idx)
        return None

    at.__name__ = "at"
    at.__qualname__ = f"{name}.at"
    at.__doc__ = (
        f"numpy.{name}.at: a[indices] = {name}(a[indices], b) in place, repeated "
        f"positions getting every update; a traced array receives a recorded write."
    )
    return at


_AT_METHOD = {"maximum": "max", "minimum": "min"}


def _install_ufunc_at():
    updates = {
        "add": at_add,
        "subtract": lambda x, idx, v: at_add(x, idx, anp.negative(v)),
        "multiply": lambda x, idx, v: _at_apply(anp.multiply, x, idx, v),
        "maximum": lambda x, idx, v: _at_apply(anp.maximum, x, idx, v),
        "minimum": lambda x, idx, v: _at_apply(anp.minimum, x, idx, v),
    }
    for name, update in updates.items():
        getattr(anp, name).at = _ufunc_at(name, update)


class _AtIndex:
    __slots__ = ("x", "idx")

    def __init__(self, x, idx):
        self.x, self.idx = x, idx

    def set(self, v):
        """A copy of x with x[idx] = v; a position selected twice keeps the value NumPy
        writes last (as x[idx] = v does)."""
        return at_set(self.x, self.idx, v)

    def add(self, v):
        """A copy of x with v added at idx; repeated positions accumulate (numpy.add.at)."""
        return at_add(self.x, self.idx, v)

    def subtract(self, v):
        """A copy of x with v subtracted at idx; repeated positions accumulate."""
        return at_add(self.x, self.idx, -v)

    def multiply(self, v):
        """A copy of x with x[idx] multiplied by v; repeated positions accumulate."""
        return _at_apply(anp.multiply, self.x, self.idx, v)

    def divide(self, v):
        """A copy of x with x[idx] divided by v; repeated positions accumulate."""
        return _at_apply(anp.divide, self.x, self.idx, v)

    def power(self, v):
        """A copy of x with x[idx] raised to v; repeated positions apply each power in turn."""
        return _at_apply(anp.power, self.x, self.idx, v)

    def min(self, v):
        """A copy of x with x[idx] = minimum(x[idx], v), over every v at a position."""
        return _at_apply(anp.minimum, self.x, self.idx, v)

    def max(self, v):
        """A copy of x with x[idx] = maximum(x[idx], v), over every v at a position."""
        return _at_apply(anp.maximum, self.x, self.idx, v)

    def get(self):
        return anp.getitem(self.x, self.idx)


class at:
    """at(x)[idx].set(v): functional updates of plain or traced arrays, as x.at[idx] on
    traced values (JAX's spelling). Each returns a new array; x is unchanged.

    Repeated positions in idx: .set keeps the value NumPy's x[idx] = v writes last; .add,
    .subtract, .multiply, .divide, .power, .min and .max apply every update (JAX's semantics,
    numpy.add.at for .add), unlike NumPy's x[idx] += v, which keeps one."""

    __slots__ = ("x",)

    def __init__(self, x):
        self.x = x

    def __getitem__(self, idx):
        return _AtIndex(self.x, idx)


_install_ufunc_at()
register_box_method("at", at)
