"""One test record per operator that moves entries without arithmetic: the reshapes, axis
permutations, splits, flips, pads, tiles and triangles of gradcy/numpy/manipulation.py and the
gathers of indexing.py (take, take_along_axis, compress). Read by test_manipulation.py and
test_indexing.py (their primitives and saved sets) and the dtype sweep (test_dtype_sweep.py);
the checks of many arguments of one function stay in its test file.

Fields of a record:
  name     the primitive's name under gradcy.numpy ("gradcy.numpy." + name)
  family   the rules' file: "manipulation" or "indexing"
  call     the representative call, a function of the differentiated array x
  shape    x's shape for it
  saved    the arguments its record keeps as given (the index arrays, split points, repeats...;
           x itself only for compress's condition at 0); x's buffer is never kept
  argnum   x's position among the primitive's arguments
  output   the element of a list result the dtype sweep differentiates (None: one array)
  scalar   it takes scalars (Python and NumPy ones, 0-d arrays) as well
"""

from dataclasses import dataclass

import numpy as onp

import gradcy.numpy as np
from vjp_harness import primitives_with_vjps


@dataclass(frozen=True)
class Moves:
    name: str
    family: str
    call: object
    shape: tuple = (2, 3)
    saved: tuple = ()
    argnum: int = 0
    output: int = None
    scalar: bool = False

    @property
    def primitive(self):
        return primitives_with_vjps()["gradcy.numpy." + self.name]


def _m(name, call, **kw):
    return Moves(name, "manipulation", call, **kw)


def _i(name, call, **kw):
    return Moves(name, "indexing", call, **kw)


RECORDS = [
    _m("reshape", lambda x: np.reshape(x, (-1, 1)), scalar=True),
    _m("ravel", lambda x: np.ravel(x), scalar=True),
    _m("transpose", lambda x: np.transpose(x), scalar=True),
    _m("swapaxes", lambda x: np.swapaxes(x, 0, 2), shape=(2, 3, 2)),
    _m("moveaxis", lambda x: np.moveaxis(x, 0, -1), shape=(2, 3, 2)),
    _m("rollaxis", lambda x: np.rollaxis(x, 2), shape=(2, 3, 2)),
    _m("squeeze", lambda x: np.squeeze(x), shape=(2, 1, 3), scalar=True),
    _m("expand_dims", lambda x: np.expand_dims(x, 0), scalar=True),
    _m("atleast_1d", lambda x: np.atleast_1d(x), scalar=True),
    _m("atleast_2d", lambda x: np.atleast_2d(x), scalar=True),
    _m("atleast_3d", lambda x: np.atleast_3d(x), scalar=True),
    _m("broadcast_to", lambda x: np.broadcast_to(x, (2,) + np.shape(x)), scalar=True),
    _m("copy", lambda x: np.copy(x), scalar=True),
    _m("repeat", lambda x: np.repeat(x, 2), saved=(1,), scalar=True),
    _m("tile", lambda x: np.tile(x, (2, 1)), saved=(1,), scalar=True),
    _m("flip", lambda x: np.flip(x, 0)),
    _m("fliplr", lambda x: np.fliplr(x)),
    _m("flipud", lambda x: np.flipud(x)),
    _m("roll", lambda x: np.roll(x, 1, axis=1), saved=(1,)),
    _m("rot90", lambda x: np.rot90(x)),
    _m("pad", lambda x: np.pad(x, ((1, 0), (0, 2))), saved=(1,)),
    _m("diag", lambda x: np.diag(x), shape=(3,)),
    _m("tril", lambda x: np.tril(x), shape=(3, 3)),
    _m("triu", lambda x: np.triu(x, 1), shape=(3, 3)),
    _m("split", lambda x: np.split(x, 3, axis=1), saved=(1,), output=1),
    _m("array_split", lambda x: np.array_split(x, 2, axis=1), saved=(1,), output=0),
    _m("hsplit", lambda x: np.hsplit(x, 3), saved=(1,), output=0),
    _m("vsplit", lambda x: np.vsplit(x, 2), saved=(1,), output=1),
    _m("dsplit", lambda x: np.dsplit(x, 2), shape=(2, 3, 2), saved=(1,), output=0),
    _i("take", lambda x: np.take(x, [0, 2, 2]), saved=(1,)),
    _i(
        "take_along_axis",
        lambda x: np.take_along_axis(x, onp.array([[0, 2], [1, 1]]), axis=1),
        saved=(1,),
    ),
    _i("compress", lambda x: np.compress([True, False, True], x, axis=1), saved=(0,), argnum=1),
]
MOVES = {r.name: r for r in RECORDS}
assert len(MOVES) == len(RECORDS), "one record per operator"


def of_family(family):
    return [r for r in RECORDS if r.family == family]
