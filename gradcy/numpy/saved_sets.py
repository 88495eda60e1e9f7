"""Saved sets decided per call: what a recorded call keeps for its backward pass.

A rule's `save=` (gradcy.extend.defvjp) says what the rules of a primitive read. Here some
primitives say it per argument, or keep a compact record of their own, so that a call keeps
only what the rules of its *traced* arguments read:

- products (multiply, divide, dot, matmul, einsum): the rule of an argument reads the other
  arguments, so a call with one traced argument keeps only the others (``0.01 * x`` keeps
  nothing of x; ``einsum('bsd,d->bs', prefix, q)`` with q constant keeps q, not the prefix);
  divide's rule for x reads y only, its rule for y reads x and y;
- max, min, nanmax, nanmin (amax, amin): the positions that attain the extremum, as a bit mask
  (one bit per element of the input, ``numpy.packbits``) in place of the input and the output:
  1/64 of a float64 input. The rules read the mask back with `unpack_positions`;
- maximum, minimum, fmax, fmin: three bit masks of the output's shape (x == out, y == out,
  x == y) as a `Positions` record in place of x, y and the output: ``maximum(x, 0.0)`` keeps
  3 bits per element instead of two float64 arrays;
- sort, partition: the permutation that sorts (argsort / argpartition, computed once in the
  forward pass) in the smallest integer type that holds the axis length (int16 up to 32767)
  in place of the input;
- median, nanmedian: the bit masks of the entries equal to the lower and the upper middle
  order statistics (a `Positions` record of two masks of the input's shape).

A buffer held by several records is counted and kept once (the tape's hold table), so a
value that another node keeps anyway costs nothing more: tanh's or exp's output written into an
owned buffer is read back from the buffer's slot (the write path, gradcy/_core.pyx).

What a call keeps: ``prim.saved_set(argnums)``; what a whole program keeps against a hand-written
gradient: benchmarks/saved_bytes_audit.py.
"""
import numpy as _onp

from .._core import meta_of
from . import _wrap as anp
from ._util import unpack_positions
from .reductions import _axes, _chooser_mask

__all__ = ["unpack_positions", "register", "Positions"]

_ndarray = _onp.ndarray
_NoValue = _onp._NoValue
_add_reduce = _onp.add.reduce
_packbits = getattr(_onp.packbits, "_implementation", _onp.packbits)   # plain: no dispatch


class Positions(_onp.ndarray):
    """Bit masks (numpy.packbits) a saved record keeps in place of the values they were
    chosen from; ``out_shape`` is the shape of one mask. An ndarray, so the tape counts it."""

    _gradcy_plain = True    # arrays made from it are plain arrays to the rules (_tape.pyx)


def _elementwise_extremum_save(argnums, ans, args, kwargs):
    if kwargs or len(args) != 2 or type(ans) is not _ndarray or ans.dtype.kind not in "fc":
        return ans, args
    x, y = args
    for v in (x, y):
        if not (type(v) is _ndarray or type(v) in (float, int) or isinstance(v, _onp.generic)):
            return ans, args          # a traced outer value (nested), a list: everything
    shape = ans.shape
    masks = _onp.empty((3,) + shape, dtype=bool)
    _onp.equal(x, ans, out=masks[0, ...])
    _onp.equal(y, ans, out=masks[1, ...])
    _onp.equal(x, y, out=masks[2, ...])
    packed = _onp.packbits(masks, axis=None).view(Positions)
    packed.out_shape = shape
    return packed, (meta_of(x), meta_of(y))


def extremum_masks(packed):
    """(x == out, y == out, x == y) of a Positions record of maximum/minimum."""
    return unpack_positions(packed, (3,) + packed.out_shape)


def _small_index(perm, n):
    return perm.astype(_onp.int16 if n <= 32767 else _onp.int32 if n < 2 ** 31 else perm.dtype,
                       copy=False)


_SORT_ARGS = ("axis", "kind", "order", "stable")
_PARTITION_ARGS = ("kth", "axis", "kind", "order")


def _order_save(names, order):
    """save_fn of sort/partition: the permutation (small integers) in place of the input, read
    by the rule; order(a, axis, opts) computes it. Other inputs keep their arguments."""
    def save(argnums, ans, args, kwargs):
        a = args[0]
        opts = dict(zip(names, args[1:]))
        opts.update(kwargs)
        if type(a) is not _ndarray or a.ndim == 0 or opts.get("order") is not None:
            return ans, args
        axis = opts.get("axis", -1)
        perm = order(a, axis, opts)
        return (_small_index(perm, a.size if axis is None else a.shape[axis]),
                (meta_of(a),) + args[1:])
    return save


_sort_save = _order_save(_SORT_ARGS,
                         lambda a, axis, opts: _onp.argsort(a, axis=axis, kind="stable"))
_partition_save = _order_save(_PARTITION_ARGS, lambda a, axis, opts: _onp.argpartition(
    a, opts["kth"], axis=axis, kind=opts.get("kind", "introselect")))


_MEDIAN_ARGS = ("axis", "out", "overwrite_input", "keepdims")


def _median_saver(nan):
    def save(argnums, ans, args, kwargs):
        a = args[0]
        if type(a) is not _ndarray or a.dtype.kind != "f":
            return ans, args
        opts = dict(zip(_MEDIAN_ARGS, args[1:]))
        opts.update(kwargs)
        axes = _axes(a.ndim, opts.get("axis"))
        ax = None if len(axes) == a.ndim else axes
        quantile = _onp.nanquantile if nan else _onp.quantile
        masks = _onp.empty((2,) + a.shape, dtype=bool)
        for k, method in enumerate(("lower", "higher")):
            _onp.equal(a, quantile(a, 0.5, axis=ax, keepdims=True, method=method),
                       out=masks[k, ...])
        packed = _onp.packbits(masks, axis=None).view(Positions)
        packed.out_shape, packed.value_dtype = a.shape, a.dtype
        return packed, (meta_of(a),) + args[1:]
    return save


def median_masks(packed):
    """(x == lower middle, x == upper middle) of a Positions record of median."""
    return unpack_positions(packed, (2,) + packed.out_shape)


def _pack_positions(mask):
    return _onp.packbits(mask, axis=None)


# cheap elementwise ops: with recompute on (gradcy.grad(f, recompute="elementwise")), a
# consumer that would keep the output of one of them keeps a stand-in instead, when the op's own
# record holds all its inputs; the output is made again in the backward pass
RECOMPUTABLE = ("add", "subtract", "multiply", "divide", "negative", "exp", "tanh", "sin",
                "cos", "square", "sqrt", "log", "reciprocal", "absolute")

_AXIS_KEEPDIMS = frozenset(("axis", "keepdims"))
_EXTREMUM_ARGS = ("axis", "out", "keepdims", "initial", "where")


def _extremum_saver(nan_picks):
    def save(argnums, ans, args, kwargs):
        x = args[0]
        if type(x) is not _ndarray or not (type(ans) is _ndarray or _onp.isscalar(ans)):
            return ans, args          # a traced outer value (nested) or a scalar: everything
        if (len(args) == 1 and type(ans) is _ndarray and x.dtype.kind == "f"
                and kwargs.keys() <= _AXIS_KEEPDIMS and kwargs.get("keepdims") is True
                and type(kwargs.get("axis")) is int):
            # the common case first (a softmax's max over one axis, keepdims): no nan maximum
            # (a nan, or +inf beside -inf, makes the sum nan: then the general path)
            total = _add_reduce(ans, None)
            if total == total:
                return _packbits(x == ans, None), (meta_of(x),)
        opts = dict(zip(_EXTREMUM_ARGS, args[1:]))
        opts.update(kwargs)
        axes = _axes(x.ndim, opts.get("axis"))
        where = opts.get("where")
        if type(where) is not _ndarray and where is not None and where is not _NoValue:
            return ans, args
        mask = _chooser_mask(x, ans, axes, opts.get("keepdims", False), where, nan_picks)
        return _pack_positions(mask), (meta_of(x),) + args[1:]
    return save


def register():
    """Install the per-call saved sets (run once, after the rule tables are imported)."""
    per_arg = {
        anp.multiply: {0: (1,), 1: (0,)},
        anp.divide: {0: (1,), 1: (0, 1)},
        anp.dot: {0: (1,), 1: (0,)},
        anp.matmul: {0: (1,), 1: (0,)},
        anp.einsum: {k: ("others",) for k in range(8)},
    }
    for prim, spec in per_arg.items():
        prim.set_saved(spec)
    for prim in RECOMPUTABLE:
        getattr(anp, prim).recomputable = True
    for prim in (anp.max, anp.min):
        prim.save_fn = _extremum_saver(True)
    for prim in (anp.maximum, anp.minimum, anp.fmax, anp.fmin):
        prim.save_fn = _elementwise_extremum_save
    anp.median.save_fn = _median_saver(False)
    anp.nanmedian.save_fn = _median_saver(True)
    anp.sort.save_fn = _sort_save
    anp.partition.save_fn = _partition_save
    for prim in (anp.nanmax, anp.nanmin):
        prim.save_fn = _extremum_saver(False)
