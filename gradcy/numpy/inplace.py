"""Writes into arrays: `buf[idx] = value`, augmented assignment and writes through views.

How a write is recorded
-----------------------
Inside a differentiation, gradcy.numpy's array constructors (zeros, empty, ones, full, the
*_like ones, array, copy: constructors.py) return a buffer the tape owns, as a constant traced
value. Writing a value into it mutates the buffer in place and records one write node: the
buffer's Box moves to the new version. The write saves only the index and metadata, so its VJP
costs O(slot): it reads the slot's cotangent out of the buffer's cotangent and zeroes the slot
in place, and reads of the buffer (x[idx]) send back sparse cotangents that are added into that
same array in place; the cotangent of a basic-index view goes straight into it (the engine adds
into the region of the parent's slot, so a view has no slot of its own). One buffer-sized
cotangent exists per buffer per backward pass. A written value that its op saved as output
(tanh, exp) is read back from the slot, so it is not kept twice. Writes with a basic index are
decided and recorded in the core (_core.setitem_fast); this module handles the rest (copy on
the first write, advanced indices, forward mode, writes through views, augmented assignment,
nested differentiation) and the bookkeeping hooks. Forward mode writes in place too (nothing is
saved; views are tracked the same way).

Under nested differentiation (hessian, forward over reverse, a grad inside a grad) an outer
trace may hold the buffer's memory, so a write makes a new version instead (a copy, .at[].set)
and the buffer's Box moves to it; earlier versions stay registered while they live, so views of
them are still views of the buffer.

What follows NumPy, and what raises
-----------------------------------
- A write into an array the tape does not own (an input, the output of another operation)
  copies it first, once; the user's arrays never change.
- Values saved for a backward pass keep the values they had when saved: a write that overlaps
  a saved view preserves a copy of that view (counted in the memory counters); a write that
  overlaps no saved region copies nothing.
- A traced view of the buffer taken before a write that overlaps it becomes stale: it shows
  the new values (NumPy memory), and its next use takes it again from the buffer's current
  version (_resolve_stale: its Box moves to a new node reading that version; uses recorded
  before the write keep the old node, so each gets the gradient of the values it read). When
  that version is out of reach (the buffer's own Box is gone, or the view is no strided view
  of it) the use raises. A primitive that returns the buffer itself (real, squeeze) counts as
  a view of all of it.
- Writes through a view of a buffer (v = buf[0]; v[1] = x; v *= 2; for row in buf: row += 1)
  go into the buffer, as in NumPy: the buffer's Box moves to the new version and the view
  becomes a view of it; other views it overlaps go stale (and are taken again when used).
  When the buffer's own Box is gone, only its views can see it: the view gets the new values,
  the views it overlaps go stale and raise when used.
  A view that is no basic index of the buffer (a reshape that merges axes) raises.
- Repeated positions in an advanced index (buf[[0, 0]] = v, buf[[0, 0]] += v) keep the value
  NumPy writes last; the others get no gradient (indexed_updates.py: kept, _landing, and the
  functional x.at[idx] updates, which apply every update at a repeated position).
- Augmented assignment (a += b, a *= b, ...) on a traced array changes that array, as in
  NumPy, with NumPy's shape and same_kind casting rules: every name bound to it sees the new
  value (the Box moves to it). Python and NumPy scalars are immutable and are rebound, and so
  is a value whose result is traced by an inner differentiation.
- An array an operation computed (t = sin(x)) is written in place, as NumPy writes it, once
  a write reaches its memory (t[i] = v with nothing but the tape's records holding it, or a
  write through a view of it, or into it while views of it are around): it becomes a buffer
  the tape owns (_own_computed). Every traced view of such an array is noted as it is
  recorded (Tape.computed, with the traced values that are the array itself), so the write
  stales them as any buffer's; the records holding its memory get their own copy of what a
  write overlaps (copy on write for the records, measured against copying the array whole in
  benchmarks/write_copy_targets.py). When the array's own traced values are gone, a view
  holding all of it makes one (whole_of); otherwise the write raises. a += b with no view of
  a around rebinds a to the new array (nothing else sees its memory). A list of views
  (split) is stale as a whole once a write overlaps one of them. An array of a registered
  ndarray subclass is never written: a write raises.
- An array the tape does not own otherwise is never written: a += b and a[i] = v move its Box
  to a new array. When something NumPy would show the change through still references its
  memory (an untracked view of it, or, when it is a view, the array it views) that raises;
  references held by the tape's saved records do not count (they keep their values). An
  input is exempt: gradcy works on a copy, which the tape owns (made
  by the input's first write, x[i] = v, x += v or a write through a view of x, which then
  writes into the copy; x's Box moves to it). Under nested differentiation the same holds,
  counting the saved records of every nested trace (they hold outer Boxes of the array and
  its views; a user's name is an innermost Box); a write into an input's memory that cannot
  go into its copy (the input's Box is gone) is refused there. An outer array written with
  a value an inner
  differentiation traces is rebound to the new value only when nothing else would see it.
- A write into a differentiated argument whose memory another argument shares (f(a, a),
  f(a, a[1:]), a tuple holding a twice, differentiated or not) raises: NumPy would change
  both, and gradcy never writes the caller's arrays; pass a copy. Differentiated arguments
  in one block that do not overlap (f(a[:1], a[1:])) are written like any input (views
  taken of that block before the write are refused when used).
  gradcy.numpy.copy of a traced value (and array of one), and ndarray.flatten, are buffers the
  tape owns.
- Views of an input (x[:2], x.T, real(x), which NumPy answers with x itself) are tracked like
  views of a buffer: the first write into the input moves them to its copy, and those the
  write overlaps (then or later) become stale and are taken again from the copy when used,
  as NumPy shows them the new values; a write through one goes into the copy.
- numpy's ufunc.at (gradcy.numpy.add.at(a, idx, v), indexed_updates.py) writes a[idx] as
  a[idx] = ... does.

Regions are per-dimension index ranges of the buffer (steps and advanced indices widen them to a
conservative hull), so checks are cheap and never miss an overlap.
"""

import builtins as _builtins
import dis as _dis
import sys
import weakref as _weakref
from array import array as _array

import numpy as _np

from .. import _core
from .. import _write as _write_module
from .._core import Box, OwnedBuffer, is_array_value, register_box_method, transfer_box
from ..registry import defjvp, defvjp_direct, defvjp_write, primitive
from . import _wrap as anp
from ._util import _unwrap, unbroadcast
from .indexed_updates import _dtype, _landing, at_set, constant_if_cast

__all__ = ["OwnedBuffer"]


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
            return None  # advanced index: the whole buffer, conservatively
        dim += 1
    while dim < len(shape):
        out.append((0, shape[dim]))
        dim += 1
    return tuple(out)


_overlap = _core.regions_overlap
_hull = _core.region_hull  # _hull((), r) is r: the hull of nothing grows from empty


def _before_write(tape, info, r):
    """Values saved for the backward pass keep their values through a write to region r: an
    overlapped one is replaced by a copy of itself (before the write changes the memory), one
    copy for all the records that hold the same array."""
    if info.saved and info.saved_hull != () and _overlap(info.saved_hull, r):
        keep, hull, saved = _array("q"), (), info.saved
        copies = {}  # id -> (array, its copy): one for all its records
        for k in range(0, len(saved), 2):
            node, position = saved[k], saved[k + 1]
            released, _, _, _ = tape.node_flags(node)
            if released:
                continue
            value = tape.saved_value(node, position)
            if type(value) is not _np.ndarray or _core.root_buffer(value) is not info.root:
                continue  # already replaced by a copy of its own
            sr = info.region_of(value)
            if _overlap(sr, r):
                pair = copies.get(id(value))
                if pair is None:
                    pair = copies[id(value)] = (value, _np.array(value, copy=True))
                tape.replace_saved(node, position, pair[1])
                continue  # the copy is the records' own: no longer in the buffer
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


def _resolve_stale(box):
    """box is a stale view (a traced view whose memory a write changed after it was taken):
    NumPy shows it the new values, so it moves to the same view of the buffer's current
    version (a new node reading that version); the uses recorded before the write keep the
    old node, which reads the version they saw. False (the stale-view error is raised) when
    the current version is not reachable: the buffer's own Box is gone (only its views see its
    memory), the input was replaced whole by a new array, or the view is no strided view of
    the buffer."""
    tape = box._tape
    plain = _unwrap(box._value)
    if type(plain) is not _np.ndarray or tape.released:
        return False
    info = tape.owned_info(plain)
    if info is not None:
        root = _core.root_buffer(plain)  # the buffer, or an earlier version (same layout)
    else:  # a view of an input: its copy is the buffer
        entry = tape.input_entry(plain)
        if entry is None or entry.target is None or entry.root is None:
            return False
        info, root = entry.target, entry.root
    buf = info.box() if info.box is not None else None
    if (
        buf is None
        or _unwrap(buf._value) is not info.root
        or _unwrap(buf._value).shape != root.shape
    ):
        return False
    whole = _root_index(plain, root)
    if whole is None:
        return False
    transfer_box(box, whole[2](buf))
    return True


def _own_input(view, plain):
    """view (a traced value in an input's memory, not the input's own Box) is about to be
    written: as NumPy would change the input, the input is copied (its first write; done
    already when an earlier write made the copy), its Box moving to the copy, a buffer the
    tape owns, and view moves to the same view of the copy's current version. Returns the
    copy's OwnedBuffer, or None (nothing done: the write refuses as before) when the input's
    Box is gone or unknown, another argument shares its memory, or view is no strided view
    of it."""
    tape = view._tape
    entry = tape.input_entry(plain)
    if entry is None or entry.root is None:
        return None
    whole = _root_index(plain, entry.root)
    if whole is None:
        return None
    if entry.target is not None:  # copied by an earlier write: view follows it
        info = entry.target
        box = info.box() if info.box is not None else None
        if box is None or _unwrap(box._value) is not info.root:
            return None
    else:
        box = entry.box() if entry.box is not None else None
        if (
            box is None
            or box is view
            or box._tape is not tape
            or _unwrap(box._value) is not entry.root
            or entry.site != 1
        ):
            return None
        root = entry.root
        transfer_box(box, anp.copy(box))
        info = _register(tape, box, type(box._value) is Box)
        _input_written(box, root, info)
    transfer_box(view, whole[2](box))
    return info


def _input_written(box, plain, info=None):
    """box (an input, whose ndarray `plain` gradcy never writes) gets a new array that a write
    changes: the traced views of the input taken before (which NumPy would show the write)
    become views of `info`, the input's copy that the write goes into, so that the write
    makes those it overlaps stale (True: they moved there); without `info` (a new array
    replaces the input whole), all of them go stale. Only box's own trace is told: an outer
    trace's values of those views are the saved records of this one (the input's memory never
    changes, so they keep their values)."""
    entry = box._tape.input_entry(plain)
    if entry is None or entry.target is not None:
        return False
    if info is not None and entry.root is plain:
        info.views.update(entry.views)
        info.view_hull = _hull(info.view_hull, entry.view_hull)
        entry.target = info  # later views of the input's memory: views of info
        entry.views, entry.view_hull = {}, ()
        return True
    _after_write(box._tape, entry, None)
    return False


def _own_computed(box, plain=None):
    """box (a traced value whose ndarray is `plain`) is about to be written, and is, or is a
    view of, an array t that an operation computed (neither a buffer the tape owns nor an
    input's memory). NumPy writes into t's memory, which t and its views show. When t's traced
    views were noted (Tape.computed), or when `plain` is t itself and nothing but the tape's
    saved records references it (direct: the caller checked that), t becomes a buffer the
    tape owns, written in place: its views are tracked as any buffer's, and a record that
    holds t's memory gets its own copy of what it holds just before a write overlaps it
    (_before_write): copy on write for the records, so that t itself is never copied. Under
    nested differentiation t is functional (writes make new versions). Returns t's
    OwnedBuffer, or None (nothing done)."""
    found = _write_module.computed_owner(box)
    if found is None:
        if plain is None:
            return None
        root, owner = plain, box  # t itself, no views of it noted
    else:
        root, owner = found
        if _unwrap(box._value) is root:
            owner = box  # t itself written (or real(t), ...): its Box
    info = OwnedBuffer(root, _site())
    if owner is not None:
        info.box = _weakref.ref(owner)
    else:
        # t's own traced value is gone (or t never had one: reshape of a scalar, an
        # operation's internal array), but box, one of its views, holds every element of t
        # once: t's Box is made from it (whole_of), and held by the buffer's record, as
        # nothing else holds it (the weak references of other buffers are called the same way)
        pos = _whole_positions(_unwrap(box._value), root)
        if pos is None:
            return None
        owner = whole_of(box, pos)
        info.box = lambda owner=owner: owner
    info.functional = type(owner._value) is Box or _nested(box._tape)
    return _write_module.adopt(box, root, info)


def _site():
    pkg = __name__.rsplit(".", 2)[0]
    frame = sys._getframe(2)
    while frame is not None and frame.f_globals.get("__name__", "").startswith(pkg):
        frame = frame.f_back
    return "?" if frame is None else f"{frame.f_code.co_filename}:{frame.f_lineno}"


def _nested(tape):
    """Whether another differentiation is active around `tape` (this thread): it may hold the
    memory of tape's buffers, so writes into them make new versions instead."""
    stack = getattr(_core._active, "stack", None)
    return stack is not None and len(stack) > 1


def _register(tape, box, functional=False):
    """Make box's value (a fresh ndarray only box holds, or an outer trace's value of one) a
    buffer the tape owns. Functional: writes into it make a new version (nested
    differentiation), its Box moving to each."""
    info = OwnedBuffer(_unwrap(box._value), _site())
    info.box = _weakref.ref(box)
    info.functional = functional or _nested(tape)
    tape.register_owned(info.root, info)
    return info


_VERSIONS = {}  # id -> weak reference to an earlier version of a functional buffer


def _adopt(tape, info, box):
    """After a functional write, box's new value is the buffer's current version. Earlier
    versions stay registered while they live: views of them are views of the buffer."""
    old, new = info.root, _unwrap(box._value)

    def forget(ref, owned=tape.owned, key=id(old), info=info):
        _VERSIONS.pop(id(ref), None)
        if owned.get(key) is info:
            del owned[key]

    ref = _weakref.ref(old, forget)
    _VERSIONS[id(ref)] = ref
    info.root = new
    tape.register_owned(new, info)


def own(tape, array):
    """Register a fresh array as a buffer of `tape`; returns its constant Box."""
    box = tape.new_constant(array)
    _register(tape, box)
    return box


def _functional_write(tape, info, box, idx, value):
    """box[idx] = value as a new version of the buffer (nested differentiation)."""
    r = region(idx, _unwrap(box._value).shape)
    transfer_box(box, at_set(box, idx, value))
    _adopt(tape, info, box)
    info.functional = True
    _after_write(tape, info, r)


# =============================================================================
# The write primitive and its rules
# =============================================================================
write = primitive(_core.write_into, "gradcy.numpy.setitem")


def _write_vjp(argnums, g, g_owned, ans, args, kwargs):
    _, idx, value = args
    if type(g) is Box:  # higher order: stay functional and traced
        return [
            at_set(g, idx, 0.0) if a == 0 else unbroadcast(anp.getitem(g, idx), value)
            for a in argnums
        ]
    g_value = None
    try:
        if 2 in argnums:  # (a value with repeated positions was masked when recorded)
            g_value = unbroadcast(_np.array(g[idx], copy=True), value)
        if 0 in argnums:
            if not g_owned:
                g = g.copy()
            g[idx] = 0  # O(slot): the rest of the buffer's cotangent passes through
    except TypeError:
        if type(g) is _np.ndarray:
            raise
        # a 0-d buffer's cotangent may come as a scalar
        return _write_vjp(argnums, _np.array(g), True, ans, args, kwargs)
    return [g if a == 0 else g_value for a in argnums]


defvjp_write(write, _write_vjp, save=(1,))  # the index; buffer and value as metadata
defjvp(
    write,
    lambda g, ans, buf, idx, value: at_set(g, idx, 0.0),
    None,
    lambda g, ans, buf, idx, value: at_set(anp.zeros_like(ans), idx, g),
)


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
    buf, value = _unwrap(buf), _unwrap(value)
    if (
        type(buf) is not _np.ndarray
        or type(value) is not _np.ndarray
        or region(idx, buf.shape) is not None
        or not _np.may_share_memory(buf, value)
    ):
        return  # a basic index (NumPy copies), or no memory in common
    if (
        buf.itemsize == value.itemsize
        and not _np.isin(_element_offsets(buf)[idx], _element_offsets(value)).any()
    ):
        return
    raise NotImplementedError(
        f"gradcy.numpy.setitem: the value written (argument 2) reads elements of the buffer "
        f"that the advanced index writes; NumPy {_np.__version__} writes them one by one "
        f"without copying the value first, so the result depends on its write order, which "
        f"gradcy does not follow. Write a copy: buf[idx] = value.copy()"
    )


def _nested_check(tape, value):
    if type(value) is Box and value._tape is not tape and value._tape.trace_id > tape.trace_id:
        raise NotImplementedError(
            "gradcy: writing a value traced by an inner differentiation into a buffer of an "
            "outer one is not supported; use the functional form buf = buf.at[idx].set(value)"
        )


def _is_buffer_box(info, box):
    """Whether box (whose value is the buffer's array) is the buffer's own Box, not another
    traced value that is the same array (real, squeeze, atleast_2d of the buffer: a view of
    all of it). When the buffer's Box is gone, box becomes it."""
    buf = info.box() if info.box is not None else None
    if buf is None:
        info.box = _weakref.ref(box)
        return True
    return buf is box


def _subclass_write(plain, what):
    return TypeError(
        f"gradcy: {what} on a traced {type(plain).__module__}.{type(plain).__name__} "
        f"{plain.shape} (an ndarray subclass registered for differentiation): writes into "
        f"arrays of a subclass are not traced (NumPy would change the array and its views), "
        f"so they would give a wrong gradient. Convert it to a plain array first "
        f"(x = gradcy.numpy.array(x), a buffer gradcy owns), or write the result to a new "
        f"name (v = v * 2)."
    )


def _seen_elsewhere(box, plain):
    """Whether NumPy would show a write into `plain` (box's array, of an ndarray subclass) through
    another traced value: it is a view (of an input or of another array), or a traced view of
    it is alive."""
    tape = box._tape
    entry = tape.input_entry(plain)
    if entry is not None:
        if entry.root is not plain:
            return True
    else:
        base = plain.base
        # (a subclass's ufunc result is often a view of an array only it holds: its base's
        # holders are base's own reference and getrefcount's argument)
        if base is not None and (not isinstance(base, _np.ndarray) or sys.getrefcount(base) > 3):
            return True
        del base
        if tape.computed is not None:
            entry = tape.computed.get(id(_core.root_buffer(plain)))
    return entry is not None and _builtins.any(
        tape.node_flags(n)[1] for n in entry.views if n != box._node
    )


def _box_setitem(box, idx, value):
    tape = box._tape
    _nested_check(tape, value)
    if not _FANCY_WRITES_COPY:
        _refuse_order_dependent_write(box, idx, value)
    plain = _unwrap(box._value)
    if isinstance(plain, _np.ndarray) and type(plain) is not _np.ndarray:
        raise _subclass_write(plain, "item assignment")
    value = constant_if_cast(plain, value)  # (a write into an integer or boolean buffer)
    if is_array_value(plain):
        # a Dask / CuPy array: its own item assignment on a copy (lazy for Dask), recorded as
        # at_set; the Box moves to the new version as for a NumPy buffer
        transfer_box(box, at_set(box, idx, value))
        return
    info = tape.owned_info(plain) if type(plain) is _np.ndarray else None
    if info is None and type(plain) is _np.ndarray:
        if tape.input_entry(plain) is not None:
            info = _own_input(box, plain)  # a view of an input: the write reaches its copy
            plain = _unwrap(box._value)
        else:  # an array an operation computed, or a view of
            info = _own_computed(box)  # one: written in place from now on
    if info is not None and (plain is not info.root or not _is_buffer_box(info, box)):
        _write_view(box, info, plain, idx, value)
        return
    nested = type(box._value) is Box or (
        type(value) is Box and (value._tape is not tape or type(value._value) is Box)
    )
    if info is None:
        _check_unshared(box, plain, "item assignment")  # (plain: one local here)
        if nested or _nested(tape):  # a new version: the copy on the first write
            transfer_box(box, at_set(box, idx, value))
            info = _register(tape, box, True)
            if _input_written(box, plain, info):
                _after_write(tape, info, region(idx, plain.shape))
            return
        if type(plain) is _np.ndarray and plain.base is None and tape.input_entry(plain) is None:
            # an array an operation computed that nothing but the tape's saved records holds
            # (checked above): owned and written in place, the records holding it copying what
            # the write overlaps (measured against copying it whole: docs/tutorial.md)
            info = _own_computed(box, plain)
        else:
            copied = anp.copy(box)  # copy on the first write: inputs never change
            transfer_box(box, copied)
            info = _register(tape, box)
            _input_written(box, plain, info)
    elif nested or info.functional:
        _functional_write(tape, info, box, idx, value)
        return
    if _core.setitem_fast(box, idx, value):  # a basic index: the core records it
        return
    # an advanced index, a scalar slot or forward mode: its region is a hull from the index
    value = _landing(idx, box._value.shape, value)
    r = region(idx, box._value.shape)
    _before_write(tape, info, r)
    transfer_box(box, write(box, idx, value))
    _after_write(tape, info, r)


# =============================================================================
# Writes through views of a buffer
# =============================================================================
def _root_index(view, root):
    """How ndarray `view`, in C-contiguous `root`'s memory, is a basic index of root: (idx,
    to_root, from_root): root[idx] holds view's elements; to_root(v) turns a traced value of
    view's shape (or one that broadcasts to it) into root[idx]'s shape, from_root(b) is the
    view again, taken from b (the buffer's Box, or an array of root's layout). None when view
    repeats elements (zero strides) or is not in root's memory."""
    return _strided_index(view, root) or _block_index(view, root) or _element_index(view, root)


def _offset(view, root):
    """view's first element as a flat index into root, or None."""
    off = view.__array_interface__["data"][0] - root.__array_interface__["data"][0]
    return off // root.itemsize if off >= 0 and root.itemsize and not off % root.itemsize else None


def _shaped(v, shape):
    return anp.broadcast_to(v, shape) if _np.shape(v) != shape else v


def _element_index(view, root):
    """_root_index for any other view without repeated elements (a reshape across rows): the
    positions of its elements as index arrays; the view is taken again by its strides."""
    off = _offset(view, root)
    if (
        off is None
        or root.ndim == 0
        or not root.flags.c_contiguous
        or any((st == 0 and n > 1) or st % root.itemsize for st, n in zip(view.strides, view.shape))
    ):
        return None
    idx = _positions(off, view.shape, view.strides, root.itemsize, root.shape)
    if idx is None:
        return None
    return (
        idx,
        lambda v: _shaped(v, view.shape),
        lambda b: strided_view(b, off, view.shape, view.strides),
    )


def _positions(off, shape, strides, itemsize, root_shape):
    """The index arrays of the elements of the view with flat offset `off`, `shape` and byte
    `strides` into a C-contiguous array of root_shape; None when one lies outside it."""
    pos = _np.full(shape, off, _np.intp)
    for k, (n, st) in enumerate(zip(shape, strides)):
        pos += (_np.arange(n) * (st // itemsize)).reshape((n,) + (1,) * (len(shape) - k - 1))
    if pos.size and (pos.min() < 0 or pos.max() >= _np.prod(root_shape, dtype=_np.intp)):
        return None
    return _np.unravel_index(pos, root_shape)


def _strided_view(buf, off, shape, strides):
    """The view of C-contiguous ndarray buf that starts at flat element `off` with `shape` and
    byte `strides`."""
    return _np.ndarray(shape, buf.dtype, buffer=buf, offset=off * buf.itemsize, strides=strides)


def _scatter_view(g, ans, buf, off, shape, strides):
    """The cotangent of strided_view(buf, ...) for its cotangent g: g at its elements."""
    idx = _positions(off, shape, strides, _np.dtype(buf.dtype).itemsize, buf.shape)
    if type(g) is Box:
        return at_set(_np.zeros(buf.shape, g.dtype), idx, g)
    out = _np.zeros(buf.shape, _np.result_type(g))
    out[idx] = g
    return out


strided_view = primitive(_strided_view, "gradcy.numpy.strided_view")
defvjp_direct(strided_view, _scatter_view, None, None, None, save=(1, 2, 3))
defjvp(
    strided_view,
    lambda g, ans, buf, off, shape, strides: anp.getitem(
        g, _positions(off, shape, strides, buf.itemsize, buf.shape)
    ),
    None,
    None,
    None,
)


def _whole_positions(view, root):
    """The flat index into C-contiguous ndarray `root` of each element of `view`, an array in
    its memory, when view holds every element of root once (so root is a function of view);
    else None."""
    off = _offset(view, root)
    if (
        off is None
        or view.size != root.size
        or not root.flags.c_contiguous
        or any(st % root.itemsize for st in view.strides)
    ):
        return None
    pos = _np.full(view.shape, off, _np.intp)
    for k, (n, st) in enumerate(zip(view.shape, view.strides)):
        pos += (_np.arange(n) * (st // root.itemsize)).reshape((n,) + (1,) * (view.ndim - k - 1))
    if pos.size and (pos.min() < 0 or pos.max() >= root.size or _np.unique(pos).size != root.size):
        return None
    return pos


def _whole_of(view, pos):
    """The ndarray whose memory `view` is in and all of whose elements it holds (flat
    positions `pos`, _whole_positions): that array itself."""
    return _core.root_buffer(view)


def _whole_of_vjp(g, ans, view, pos):
    if type(g) is Box:
        return anp.getitem(anp.reshape(g, (-1,)), pos)
    return _np.asarray(g).reshape(-1)[pos]


def _whole_of_jvp(g, ans, view, pos):
    flat = at_set(anp.zeros(ans.size, _dtype(g)), pos, g)
    return anp.reshape(flat, ans.shape)


whole_of = primitive(_whole_of, "gradcy.numpy.whole_of")
defvjp_direct(whole_of, _whole_of_vjp, None, save=(1,))
defjvp(whole_of, _whole_of_jvp, None)


def _block_index(view, root):
    """_root_index for a C-ordered run of root's memory that is a basic index of root (a
    reshape of whole rows, buf.reshape(2, 3) or buf[1].ravel())."""
    off = _offset(view, root)
    if off is None or not (view.flags.c_contiguous and root.flags.c_contiguous):
        return None
    shape, size, idx = root.shape, view.size, None
    if root.ndim == 0:
        idx = Ellipsis if size == 1 else None
    for d in range(root.ndim):
        inner = int(_np.prod(shape[d + 1 :], dtype=_np.intp))
        if off % inner or size % inner:
            continue
        a, n = (off // inner) % shape[d], size // inner
        if a + n <= shape[d]:
            outer = _np.unravel_index(off // (inner * shape[d]), shape[:d])
            idx = tuple(int(i) for i in outer) + (slice(a, a + n),)
            break
    if idx is None:
        return None
    target = root[idx + (Ellipsis,) if idx is not Ellipsis else Ellipsis]
    check = view.reshape(target.shape)
    if check.__array_interface__["data"][0] != target.__array_interface__["data"][0] or any(
        a != b for a, b, n in zip(check.strides, target.strides, check.shape) if n > 1
    ):
        return None
    return (
        idx,
        lambda v: anp.reshape(_shaped(v, view.shape), target.shape),
        lambda b: anp.reshape(anp.getitem(b, idx), view.shape),
    )


def _strided_index(view, root):
    """_root_index for a view whose every axis steps along one axis of root (slices, ints,
    new axes, transposes)."""
    item = root.itemsize
    off = _offset(view, root)
    if not root.flags.c_contiguous or off is None or root.ndim == 0:
        return None
    rstrides = [st // item for st in root.strides]
    lo = []
    for rs in rstrides:
        k = off // rs if rs else 0
        lo.append(k)
        off -= k * rs
    axis_of, step_of = {}, {}  # view axis -> root axis, step
    for k, (n, vs) in enumerate(zip(view.shape, view.strides)):
        if n == 1:
            continue
        if vs % item or vs == 0:
            return None
        vs //= item
        for d, rs in enumerate(rstrides):
            if rs and vs % rs == 0 and abs(vs // rs) < root.shape[d]:
                if d in axis_of.values():
                    return None
                axis_of[k], step_of[k] = d, vs // rs
                break
        else:
            return None
    idx = list(lo)
    for k, d in axis_of.items():
        q, n = step_of[k], view.shape[k]
        stop = lo[d] + q * n
        idx[d] = slice(lo[d], stop if stop >= 0 else None, q)
    idx = tuple(idx)
    try:
        target = root[idx + (Ellipsis,)]  # an array even when idx is all ints
    except IndexError:
        return None
    kept_axes = [k for k in range(view.ndim) if view.shape[k] != 1]
    order = sorted(kept_axes, key=lambda k: axis_of[k])
    perm = [kept_axes.index(k) for k in order]
    squeezed = tuple(view.shape[k] for k in kept_axes)
    identity_perm = perm == sorted(perm)
    check = view.reshape(squeezed)
    if not identity_perm:
        check = check.transpose(perm)
    if (
        check.shape != target.shape
        or check.__array_interface__["data"][0] != target.__array_interface__["data"][0]
        or any(a != b for a, b, n in zip(check.strides, target.strides, check.shape) if n > 1)
    ):
        return None
    inverse = [perm.index(i) for i in range(len(perm))]

    def to_root(v):
        v = _shaped(v, view.shape)
        if squeezed != view.shape:
            v = anp.reshape(v, squeezed)
        return v if identity_perm else anp.transpose(v, perm)

    def from_root(b):
        s = anp.getitem(b, idx + (Ellipsis,))  # a view even when idx is all ints
        if not identity_perm:
            s = anp.transpose(s, inverse)
        return s if squeezed == view.shape else anp.reshape(s, view.shape)

    return idx, to_root, from_root


def _sub_view_index(idx):
    """A basic index that selects the same elements as idx but always returns a view."""
    if type(idx) is not tuple:
        idx = (idx,)
    return idx if Ellipsis in idx else idx + (Ellipsis,)


def _unmappable(view, info):
    return TypeError(
        f"gradcy: writing into a view {view.shape} of a {info.describe()} whose elements "
        f"repeat (zero strides) or lie outside it: write into the buffer itself instead "
        f"(buf[i, j] = v)"
    )


def _write_view(view, info, v, idx, value):
    """view[idx] = value for a traced view of a buffer the tape owns (v: its plain value): the
    write goes into the buffer (whose Box moves to the new version) and `view` becomes a view
    of that version."""
    tape = view._tape
    _check_writeable(v)
    if v.size == 0:
        return
    buf = info.box() if info.box is not None else None
    if idx is Ellipsis and buf is not None:
        vidx = _core.view_index(view, buf)
        if vidx is not None:  # view = buf[vidx], of buf as it is: the common case
            buf[vidx] = value
            transfer_box(view, anp.getitem(buf, vidx))
            return
    root = _core.root_buffer(v)  # the buffer, or an earlier version (same layout)
    whole = _root_index(v, root)
    if whole is None:
        raise _unmappable(v, info)
    ridx, _, from_root = whole
    if buf is None or _unwrap(buf._value) is not info.root:
        # the buffer's own Box is gone: only its views see its memory. The view gets the new
        # values (a new array); the views it overlaps would see them in NumPy: they go stale
        new = at_set(view, idx, value)
        _after_write(tape, info, info.region_of(v))
        transfer_box(view, new)
        return
    if idx is Ellipsis:
        buf[ridx] = whole[1](value)
    elif _core.is_basic_index(idx):
        part = _root_index(v[_sub_view_index(idx)], root)
        if part is None:
            raise _unmappable(v, info)
        buf[part[0]] = part[1](value)
    else:  # an advanced index: the view's new values, written whole
        buf[ridx] = whole[1](at_set(view, idx, value))
    transfer_box(view, from_root(buf))


# =============================================================================
# Augmented assignment: a += b, a *= b, ...
# =============================================================================
_IOP = {"true_divide": "divide", "mod": "remainder"}


def _check_writeable(plain):
    if not plain.flags.writeable:
        raise ValueError(
            f"gradcy: assignment destination is read-only (a traced array "
            f"{plain.shape} NumPy made read-only: diagonal, broadcast_to, ...), "
            f"as in NumPy; copy it first (gradcy.numpy.copy)"
        )


def _refs_in_callee(x):
    return sys.getrefcount(x)


def _call_refs():
    """The references a Python-to-Python call adds to an object it passes as an argument:
    the callee's parameter, and on Python 3.10 also the caller's evaluation stack until the
    call returns (3.11+ moves the argument into the callee's frame). Measured once, by the
    call pattern _check_unshared's callers use, on an object nothing else holds."""
    probe = object()
    return _refs_in_callee(probe) - sys.getrefcount(probe)


_CALL_REFS = _call_refs()


def _check_unshared(box, plain, what, caller_refs=1):
    """Raise when NumPy would show a write into box's array (plain: its ndarray, which gradcy
    does not own; the caller's frames hold caller_refs references to it besides this argument)
    through another object: a traced view of it or the same array as another traced value, or,
    when it is a view itself, the array it views held by anything else; or when NumPy made it
    read-only. References held by the tape's saved records do not count: gradcy never writes
    into this memory, so they keep their values. An input is exempt: gradcy works on a copy
    and never changes the caller's array (views of an input taken before a write into it keep
    the old values), unless another differentiated input shares its memory (raises). Under
    nested differentiation, every nested trace's saved records count."""
    shared = _core.untracked_sharers(box, caller_refs + _CALL_REFS)
    if shared == 1:
        raise ValueError(
            f"gradcy: {what} on a traced array {plain.shape} whose memory another traced value "
            f"shares (a view of it taken before, or the same array returned by real, squeeze, "
            f"...): NumPy would change that value too, and gradcy writes only into arrays it "
            f"created. Take the view after the write, write the result to a new array "
            f"(a = a + b), or create the array with gradcy.numpy (zeros, empty, array, copy) so "
            f"that writes reach its views."
        )
    if shared == 2:
        raise ValueError(
            f"gradcy: {what} on a traced array {plain.shape} that is a view of another "
            f"array (a slice, .T, reshape, ... of it): NumPy would change that array too, and "
            f"gradcy writes only into arrays it created. Write the result to a new array "
            f"(v = v * 2), or create the array with gradcy.numpy (zeros, empty, array, copy) so "
            f"that writes through its views reach it."
        )
    if shared == 3:
        _check_writeable(plain)
    if shared == 4:
        raise ValueError(
            f"gradcy: {what} on a differentiated argument {plain.shape} whose memory another "
            f"argument shares (the same array passed twice, or an array and a view of it): "
            f"NumPy would change both, and gradcy never writes the caller's arrays. Pass a "
            f"copy (f(a, a.copy())), or write the result to a new array (a = a * 2)."
        )


def _inplace_result(result, value, op):
    """NumPy's rules for `value op= other`: the result keeps value's shape and dtype (cast
    with same_kind)."""
    r = _unwrap(result)
    if type(r) is not _np.ndarray or r.shape != value.shape:
        shape = _np.shape(r)
        if shape != value.shape:
            raise ValueError(
                f"gradcy: non-broadcastable output operand with shape "
                f"{value.shape} doesn't match the broadcast shape {shape} ({op} "
                f"in place)"
            )
    rdtype = _np.result_type(r) if type(r) is not _np.ndarray else r.dtype
    if rdtype != value.dtype:
        if not _np.can_cast(rdtype, value.dtype, "same_kind"):
            raise TypeError(
                f"gradcy: Cannot cast ufunc '{op}' output from {rdtype!r} to "
                f"{value.dtype!r} with casting rule 'same_kind'"
            )
        result = anp.astype(result, value.dtype)
    if type(_unwrap(result)) is not _np.ndarray:
        result = anp.array(result)  # a NumPy scalar from a 0-d array's op: it stays an array
    return result


_IOP_FN = {}


def _box_iop(box, op, other):
    """box op= other, with NumPy's semantics (see the module docstring)."""
    entry = _IOP_FN.get(op)
    if entry is None:
        entry = _IOP_FN[op] = (getattr(anp, _IOP.get(op, op)), f"{op} in place")
    result = entry[0](box, other)
    plain = box._value
    if type(plain) is not _np.ndarray:
        plain = _unwrap(plain)
        if type(plain) is not _np.ndarray:
            if isinstance(plain, _np.ndarray):
                # an array of a registered ndarray subclass: a new value that every name of
                # box sees (box moves to it), unless NumPy would show the write through
                # another traced value (a view), which gradcy does not trace for a subclass
                if _seen_elsewhere(box, plain):
                    raise _subclass_write(plain, entry[1])
                if _np.shape(_unwrap(result)) != plain.shape:
                    _inplace_result(result, plain, op)  # (raises NumPy's error)
                transfer_box(box, result)
                return box
            return result  # Python and NumPy scalars are immutable: a new value
    tape = box._tape
    if result._tape is not tape:
        # traced by an inner differentiation: a new value, unless NumPy would show the write
        # through another name (the outer trace cannot hold the inner one's value)
        if not _temporary_target(box):
            if tape.owned_info(plain) is not None:
                _nested_check(tape, result)
            _check_unshared(box, plain, entry[1])
        return result
    r = result._value
    if type(r) is not _np.ndarray or r.shape != plain.shape or r.dtype != plain.dtype:
        result = _inplace_result(result, plain, op)
    del r
    info = tape.owned_info(plain)
    if info is not None:
        if info.root is plain:
            _box_setitem(box, Ellipsis, result)  # in place, as NumPy does
        else:
            _write_view(box, info, plain, Ellipsis, result)
        return box
    if _temporary_target(box):
        return result  # x[idx] op= v: Python writes the new value back (x[idx] = t)
    views = tape.input_entry(plain)
    if views is not None and views.target is None and views.root is plain:
        # an input: a write into its copy (the first), which the tape owns from then on, so
        # that its traced views, and those taken later, see this change and later ones
        _box_setitem(box, Ellipsis, result)
        return box
    if views is not None:
        info = _own_input(box, plain)  # a view of an input: the write reaches its copy
        if info is not None:
            _write_view(box, info, _unwrap(box._value), Ellipsis, result)
            return box
    else:
        info = _own_computed(box)  # an array an operation computed whose views
        if info is not None:  # were taken, or one of those views
            if info.root is plain and _is_buffer_box(info, box):
                _box_setitem(box, Ellipsis, result)
            else:
                _write_view(box, info, plain, Ellipsis, result)
            return box
    _check_unshared(box, plain, entry[1])
    _input_written(box, plain)
    transfer_box(box, result)
    return box


_BINARY_OP = _dis.opmap.get("BINARY_OP")
_INPLACE_ARG = 13 if sys.version_info >= (3, 11) else None  # NB_INPLACE_ADD: BINARY_OP's
# in-place arguments start here


def _temporary_target(box):
    """Whether box (not a buffer the tape owns) is the target of an augmented assignment that
    only the interpreter's stack holds: the temporary t of x[idx] op= v (t = x[idx];
    t = t.__iop__(v); x[idx] = t) or of obj.a op= v. Python writes the result back, and that
    write records it (copying an input on the first write, checking sharers otherwise), so the
    result can be a new value. Holders: the caller's stack, our caller's argument, this
    argument, getrefcount's. The caller's instruction must be an augmented operator (not an
    explicit t.__iadd__(v) call, which writes nothing back)."""
    # 4 holders where a call moves its argument (3.11+); one more where the caller's stack
    # keeps it through the call (3.10): _CALL_REFS measures that
    if sys.getrefcount(box) > 4 + (_CALL_REFS - 1):
        return False
    frame = sys._getframe(2)  # _box_iop is called from Box.__iop__ (C, no frame)
    code, i = frame.f_code.co_code, frame.f_lasti
    if _INPLACE_ARG is not None:
        return code[i] == _BINARY_OP and code[i + 1] >= _INPLACE_ARG
    return _dis.opname[code[i]].startswith("INPLACE_")


register_box_method("__setitem__", _box_setitem)
register_box_method("__iop__", _box_iop)
# buf[basic index] = value into an owned buffer is decided and recorded in the core; the rest
# comes to _box_setitem
_core.install_hooks(write=write, before_write=_before_write, after_write=_after_write)
_write_module.install_stale_resolver(_resolve_stale)
