"""Writes into arrays: `buf[idx] = value`, augmented assignment, and the functional `.at[]`.

How a write is recorded
-----------------------
Inside a differentiation, gradcy.numpy's array constructors (zeros, empty, ones, full, the
*_like ones, array, copy) return a buffer the tape owns, as a constant traced value. Writing a
value into it mutates the buffer in place and records one write node: the buffer's Box moves to
the new version. The write saves only the index and metadata, so its VJP costs O(slot): it
reads the slot's cotangent out of the buffer's cotangent and zeroes the slot in place, and
reads of the buffer (x[idx]) send back sparse cotangents that are added into that same array in
place; the cotangent of a basic-index view goes straight into it (the engine adds into the
region of the parent's slot, so a view has no slot of its own). One buffer-sized cotangent
exists per buffer per backward pass. A written value that its op saved as output (tanh, exp)
is read back from the slot, so it is not kept twice. Writes with a basic index are decided and
recorded in the core (_core.setitem_fast); this module handles the rest (copy on the first
write, advanced indices, forward mode and nested differentiation) and the bookkeeping hooks.

What stays correct under aliasing
---------------------------------
- A write into an array the tape does not own (an input, the output of another operation)
  copies it first, once; the user's arrays never change.
- Values saved for a backward pass keep the values they had when saved: a write that overlaps
  a saved view preserves a copy of that view (counted in the memory counters); a write that
  overlaps no saved region copies nothing.
- A traced view of the buffer taken before a write that overlaps it becomes stale: using it
  raises (NumPy would show it the new values while the graph records the old ones).
- Writing through a view of a buffer (v = buf[0]; v[1] = x) raises: write into the buffer with
  the full index instead. `buf[i] += x` works (Python writes it back through buf).

Regions are per-dimension index ranges of the buffer (steps and advanced indices widen them to a
conservative hull), so checks are cheap and never miss an overlap.
"""
import builtins as _builtins
import sys
from array import array as _array

import numpy as _np

from .. import _core
from .._core import (Box, OwnedBuffer, active_tape, layout_region,  # noqa: F401
                     register_box_method, transfer_box)
from ..registry import defjvp, defvjp_direct, primitive
from . import numpy_wrapper as anp
from .vjp_util import unbroadcast

__all__ = ["at", "OwnedBuffer"]


# =============================================================================
# Regions: per-dimension [start, stop) ranges of a buffer; None means "all of it"
# =============================================================================
def region(idx, shape):
    """The index ranges of `shape` that `idx` touches (a hull), or None when unknown."""
    if not isinstance(idx, tuple):
        idx = (idx,)
    n_real = _builtins.sum(1 for i in idx if i is not None and i is not Ellipsis)
    out, dim = [], 0
    for i in idx:
        if i is Ellipsis:
            for _ in range(len(shape) - n_real):
                out.append((0, shape[dim]))
                dim += 1
            continue
        if i is None:
            continue
        if dim >= len(shape):
            return None
        n = shape[dim]
        if isinstance(i, (int, _np.integer)):
            k = int(i) + n if i < 0 else int(i)
            out.append((k, k + 1))
        elif isinstance(i, slice):
            start, stop, step = i.indices(n)
            if step > 0:
                out.append((start, _builtins.max(start, stop)))
            else:
                out.append((stop + 1, start + 1) if start > stop else (0, 0))
        else:
            return None             # advanced index: the whole buffer, conservatively
        dim += 1
    while dim < len(shape):
        out.append((0, shape[dim]))
        dim += 1
    return tuple(out)


_overlap = _core.regions_overlap
_hull = _core.region_hull        # _hull((), r) is r: the hull of nothing grows from empty


def _before_write(tape, info, r):
    """Values saved for the backward pass keep their values through a write to region r: an
    overlapped one is replaced by a copy of itself (before the write changes the memory)."""
    if info.saved and info.saved_hull != () and _overlap(info.saved_hull, r):
        keep, hull, saved = _array("q"), (), info.saved
        for k in range(0, len(saved), 2):
            node, position = saved[k], saved[k + 1]
            released, _, _, _ = tape.node_flags(node)
            if released:
                continue
            value = tape.saved_value(node, position)
            if type(value) is not _np.ndarray or _core.root_buffer(value) is not info.root:
                continue               # already replaced by a copy of its own
            sr = info.region_of(value)
            if _overlap(sr, r):
                tape.replace_saved(node, position, _np.array(value, copy=True))
                continue               # the copy is the node's own: no longer in the buffer
            keep.append(node)
            keep.append(position)
            hull = _hull(hull, sr)
        info.saved, info.saved_hull = keep, hull


def _after_write(tape, info, r):
    """Traced views whose memory a write to region r changed become stale (using one raises).
    Run after the write is recorded: the written value may itself be such a view
    (buf[1:] = buf[:-1]); NumPy copies overlapping memory, so the write reads it intact."""
    if info.views and info.view_hull != () and _overlap(info.view_hull, r):
        hull = ()
        for node in list(info.views):
            vr = info.views[node]
            released, alive, _, _ = tape.node_flags(node)
            if not alive:
                del info.views[node]
                continue
            if _overlap(vr, r):
                tape.mark_stale(node)
                del info.views[node]
                continue
            hull = _hull(hull, vr)
        info.view_hull = hull


def _site():
    pkg = __name__.rsplit(".", 2)[0]
    frame = sys._getframe(2)
    while frame is not None and frame.f_globals.get("__name__", "").startswith(pkg):
        frame = frame.f_back
    return "?" if frame is None else f"{frame.f_code.co_filename}:{frame.f_lineno}"


def own(tape, array):
    """Register a fresh array as a buffer of `tape`; returns its constant Box."""
    tape.register_owned(array, OwnedBuffer(array, _site()))
    return tape.new_constant(array)


# =============================================================================
# The write primitive and its rules
# =============================================================================
write = primitive(_core.write_into, "gradcy.numpy.setitem")
write.set_saved((1,))            # the index; buffer and value as metadata


def _write_vjp(argnums, g, g_owned, ans, args, kwargs):
    _, idx, value = args
    if type(g) is Box:           # higher order: stay functional and traced
        return [at_set(g, idx, 0.0) if a == 0 else unbroadcast(anp.getitem(g, idx), value)
                for a in argnums]
    g_value = None
    if 2 in argnums:
        g_value = unbroadcast(_np.array(g[idx], copy=True), value)
    if 0 in argnums:
        if not g_owned:
            g = g.copy()
        g[idx] = 0               # O(slot): the rest of the buffer's cotangent passes through
    return [g if a == 0 else g_value for a in argnums]


write.write_vjp = _write_vjp
defjvp(write,
       lambda g, ans, buf, idx, value: at_set(g, idx, 0.0),
       None,
       lambda g, ans, buf, idx, value: at_set(anp.zeros_like(ans), idx, g))


def _copies_overlapping_fancy_writes():
    """Whether this NumPy reads the value of buf[int array] = value before writing, when value
    overlaps buf (NumPy 2 does; NumPy 1.x writes element by element, reading written ones)."""
    b = _np.arange(3.0)
    b[[1, 2]] = b[:2]
    return b[2] == 1.0


_FANCY_WRITES_COPY = _copies_overlapping_fancy_writes()


def _element_offsets(a):
    """The address of every element of ndarray a, in a's shape."""
    o = _np.asarray(a.__array_interface__["data"][0], dtype=_np.intp)
    for k, (n, s) in enumerate(zip(a.shape, a.strides)):
        o = o + (_np.arange(n, dtype=_np.intp) * s).reshape((n,) + (1,) * (a.ndim - k - 1))
    return _np.broadcast_to(o, a.shape)


def _refuse_order_dependent_write(buf, idx, value):
    """Under a NumPy whose buf[advanced idx] = value reads elements of value it has already
    written (NumPy 1.x), raise when value is memory of an element that idx writes: the result
    then depends on NumPy's write order, which gradcy does not follow."""
    buf, value = _plain(buf), _plain(value)
    if (type(buf) is not _np.ndarray or type(value) is not _np.ndarray
            or region(idx, buf.shape) is not None or not _np.may_share_memory(buf, value)):
        return                   # a basic index (NumPy copies), or no memory in common
    if buf.itemsize == value.itemsize and not _np.isin(
            _element_offsets(buf)[idx], _element_offsets(value)).any():
        return
    raise NotImplementedError(
        f"gradcy.numpy.setitem: the value written (argument 2) reads elements of the buffer "
        f"that the advanced index writes; NumPy {_np.__version__} writes them one by one "
        f"without copying the value first, so the result depends on its write order, which "
        f"gradcy does not follow. Write a copy: buf[idx] = value.copy()")


def _box_setitem(box, idx, value):
    tape = box._tape
    if type(value) is Box and value._tape is not tape and value._tape.trace_id > tape.trace_id:
        raise NotImplementedError(
            "gradcy: writing a value traced by an inner differentiation into a buffer of an "
            "outer one is not supported; use the functional form buf = buf.at[idx].set(value)")
    if not _FANCY_WRITES_COPY:
        _refuse_order_dependent_write(box, idx, value)
    if tape.forward or type(box._value) is Box or (type(value) is Box and value._tape is not tape):
        # forward mode and nested differentiation: the functional form (a copy per write)
        transfer_box(box, at_set(box, idx, value))
        return
    info = tape.owned_info(box._value)
    if info is None or info.root is not box._value:
        if info is not None:
            raise TypeError(
                f"gradcy: writing into a view of a {info.describe()}; write into the buffer "
                f"itself with the full index (buf[i, j] = v rather than buf[i][j] = v)")
        copied = anp.copy(box)                    # copy on the first write: inputs never change
        own(tape, copied._value)
        transfer_box(box, copied)
        info = tape.owned_info(box._value)
    if _core.setitem_fast(box, idx, value):       # a basic index: the core records it
        return
    # an advanced index (or a scalar slot): its region is a hull from the index itself
    r = region(idx, box._value.shape)
    _before_write(tape, info, r)
    transfer_box(box, write(box, idx, value))
    _after_write(tape, info, r)


def _box_iop(box, op, other):
    info = box._tape.owned_info(box._value) if type(box._value) is not Box else None
    result = getattr(anp, {"true_divide": "divide", "mod": "remainder"}.get(op, op))(box, other)
    if info is not None and info.root is box._value and not box._tape.forward:
        _box_setitem(box, Ellipsis, result)       # in place, as NumPy does
        return box
    return result                                 # a new value (views write back via buf[i])


# =============================================================================
# Functional updates: x.at[idx].set(v) and friends
# =============================================================================
def _at_set(x, idx, v):
    out = _np.array(x, copy=True)
    out[idx] = v
    return out


def _at_add(x, idx, v):
    out = _np.array(x, copy=True)
    _np.add.at(out, idx, v)
    return out


at_set = primitive(_at_set, "gradcy.numpy.at_set")
at_add = primitive(_at_add, "gradcy.numpy.at_add")
defvjp_direct(at_set,
              lambda g, ans, x, idx, v: at_set(g, idx, 0.0),
              None,
              lambda g, ans, x, idx, v: unbroadcast(anp.getitem(g, idx), v),
              save=(1,))
defjvp(at_set,
       lambda g, ans, x, idx, v: at_set(g, idx, 0.0),
       None,
       lambda g, ans, x, idx, v: at_set(anp.zeros_like(ans), idx, g))
defvjp_direct(at_add,
              lambda g, ans, x, idx, v: g,
              None,
              lambda g, ans, x, idx, v: unbroadcast(anp.getitem(g, idx), v),
              save=(1,))
defjvp(at_add,
       lambda g, ans, x, idx, v: g,
       None,
       lambda g, ans, x, idx, v: at_add(anp.zeros_like(ans), idx, g))


class _AtIndex:
    __slots__ = ("x", "idx")

    def __init__(self, x, idx):
        self.x, self.idx = x, idx

    def set(self, v):
        """A copy of x with x[idx] = v."""
        return at_set(self.x, self.idx, v)

    def add(self, v):
        """A copy of x with v added at idx (repeated indices accumulate)."""
        return at_add(self.x, self.idx, v)

    def subtract(self, v):
        return at_add(self.x, self.idx, -v)

    def multiply(self, v):
        """A copy of x with x[idx] multiplied by v (unique indices)."""
        return at_set(self.x, self.idx, anp.getitem(self.x, self.idx) * v)

    def divide(self, v):
        return at_set(self.x, self.idx, anp.getitem(self.x, self.idx) / v)

    def power(self, v):
        return at_set(self.x, self.idx, anp.getitem(self.x, self.idx) ** v)

    def min(self, v):
        return at_set(self.x, self.idx, anp.minimum(anp.getitem(self.x, self.idx), v))

    def max(self, v):
        return at_set(self.x, self.idx, anp.maximum(anp.getitem(self.x, self.idx), v))

    def get(self):
        return anp.getitem(self.x, self.idx)


class at:
    """at(x)[idx].set(v): functional updates of plain or traced arrays, as x.at[idx] on
    traced values (JAX's spelling). Each returns a new array; x is unchanged."""

    __slots__ = ("x",)

    def __init__(self, x):
        self.x = x

    def __getitem__(self, idx):
        return _AtIndex(self.x, idx)


# =============================================================================
# Array constructors: inside a differentiation they return a buffer the tape owns
# =============================================================================
def _plain(a):
    """A constructor's argument without its tracing (shapes and prototypes are constants)."""
    while type(a) is Box:
        a = a._value
    return a


def _owning(name, make, traced=None):
    """A constructor that, inside a differentiation, returns a buffer the tape owns. `traced`
    (full, full_like) is the primitive to use when a fill value is itself traced."""
    def constructor(*args, **kwargs):
        if traced is not None and (_builtins.any(type(a) is Box for a in args[1:])
                                   or type(kwargs.get("fill_value")) is Box):
            return traced(*args, **kwargs)
        plain = [_plain(a) for a in args]
        tape = active_tape()
        if tape is None or tape.released:
            return make(*plain, **kwargs)
        out = make(*plain, **kwargs)
        if type(out) is not _np.ndarray:
            return out
        if out.base is not None:   # e.g. array(x, copy=False) returning a view of x
            out = out.copy()
        return own(tape, out)
    constructor.__name__ = name
    constructor.__qualname__ = name
    constructor.__doc__ = (f"numpy.{name}; inside a differentiation the result is a buffer the "
                           f"differentiation owns, so traced values can be written into it.")
    return constructor


def install_constructors(g):
    """Put the owning constructors into namespace `g` (the gradcy.numpy package; the
    primitives of the same names stay in numpy_wrapper, where their rules are registered)."""
    for name in ["zeros", "ones", "empty", "full", "zeros_like", "ones_like", "empty_like",
                 "full_like", "identity", "eye"]:
        make = getattr(_np, name)
        wrapped = _owning(name, make, getattr(anp, name) if name in ("full", "full_like")
                          else None)
        g[name] = wrapped
        _core.register_numpy_override(make, wrapped)
    plain_array, plain_copy = anp.array, anp.copy_

    def array(obj, *args, **kwargs):
        if type(obj) is Box or anp._contains_box(obj):
            return plain_array(obj, *args, **kwargs)
        return _owning("array", _np.array)(obj, *args, **kwargs)

    def copy(a, *args, **kwargs):
        if type(a) is Box:
            return plain_copy(a, *args, **kwargs)
        return _owning("copy", _np.copy)(a, *args, **kwargs)

    array.__doc__ = plain_array.__doc__
    g["array"] = array
    g["copy"] = copy


register_box_method("__setitem__", _box_setitem)
register_box_method("__iop__", _box_iop)
register_box_method("at", at)
# buf[basic index] = value into an owned buffer is decided and recorded in the core; the rest
# comes to _box_setitem
_core.set_write_primitive(write, _before_write, _after_write)
