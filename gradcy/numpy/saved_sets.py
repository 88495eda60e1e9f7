"""The compact records saved sets keep, and their readers.

What a recorded call keeps for its backward pass is declared in the statement that registers the
primitive's rule, in its family file: ``save=`` (gradcy.registry) lists what the rules read, or
says it per argument, or names a saver that keeps a compact record of its own, so that a call
keeps only what the rules of its *traced* arguments read:

- products (multiply, divide in elementwise.py; dot, matmul, einsum in products.py): per
  argument, the rule of an argument reads the other arguments, so a call with one traced
  argument keeps only the others (``0.01 * x`` keeps nothing of x; ``einsum('bsd,d->bs',
  prefix, q)`` with q constant keeps q, not the prefix); divide's rule for x reads y only, its
  rule for y reads x and y;
- max, min, nanmax, nanmin (reductions.py): the positions that attain the extremum, as a bit
  mask (one bit per element of the input, ``numpy.packbits``) in place of the input and the
  output: 1/64 of a float64 input. The rules read the mask back with `unpack_positions`;
- maximum, minimum, fmax, fmin (elementwise.py): three bit masks of the output's shape
  (x == out, y == out, x == y) as a `Positions` record in place of x, y and the output:
  ``maximum(x, 0.0)`` keeps 3 bits per element instead of two float64 arrays;
- sort, partition (sorting.py): the permutation that sorts (argsort / argpartition, computed
  once in the forward pass) in the smallest integer type that holds the axis length (int16 up
  to 32767) in place of the input;
- median, nanmedian (statistics.py): the bit masks of the entries equal to the lower and the
  upper middle order statistics (a `Positions` record of two masks of the input's shape).

The same statement marks the cheap elementwise ops ``recomputable=True`` (add, subtract,
multiply, divide, negative, exp, tanh, sin, cos, square, sqrt, log, reciprocal, absolute): with
``gradcy.grad(f, recompute="elementwise")`` a consumer that would keep their output keeps a
stand-in, and the backward pass makes the output again.

A buffer held by several records is counted and kept once (the tape's hold table), so a
value that another node keeps anyway costs nothing more: tanh's or exp's output written into an
owned buffer is read back from the buffer's slot (the write path, gradcy/_core.pyx).

What a call keeps: ``prim.saved_set(argnums)``; what a whole program keeps against a hand-written
gradient: benchmarks/saved_bytes_audit.py.
"""

import numpy as _onp

from ._util import unpack_positions

__all__ = ["unpack_positions", "Positions", "extremum_masks", "median_masks"]


class Positions(_onp.ndarray):
    """Bit masks (numpy.packbits) a saved record keeps in place of the values they were
    chosen from; ``out_shape`` is the shape of one mask. An ndarray, so the tape counts it."""

    _gradcy_plain = True  # arrays made from it are plain arrays to the rules (_tape.pyx)


def extremum_masks(packed):
    """(x == out, y == out, x == y) of a Positions record of maximum/minimum."""
    return unpack_positions(packed, (3,) + packed.out_shape)


def median_masks(packed):
    """(x == lower middle, x == upper middle) of a Positions record of median."""
    return unpack_positions(packed, (2,) + packed.out_shape)
