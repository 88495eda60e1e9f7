"""One test record per operator of numpy.linalg (gradcy/numpy/linalg.py), read by test_linalg.py
(the family's primitives and their saved sets) and the dtype sweep (test_dtype_sweep.py); the
checks of many shapes, orders and batches of one function stay in test_linalg.py.

Fields of a record:
  name     the gradcy.numpy.linalg name
  call     the representative call, a function of the operands (NumPy's result: an array or
           a tuple)
  shapes   the operands' shapes for it
  kinds    per operand, the matrices it is drawn from (draw()): "uniform" (entries in
           [0.3, 0.9]), "wellcond" (random + 1.5 I), "spd" (Hermitian positive definite) or
           "sym" (Hermitian, distinct eigenvalues)
  outputs  the tuple outputs the dtype sweep differentiates (None: the result is one array)
  saved    what its record keeps for the backward pass ("ans", operand positions), whichever
           one operand is traced
  numpy2   new in NumPy 2: checked where the installed NumPy has it
All take float32, float64, complex64 and complex128 (numpy.linalg has no float16 loops).
"""

from dataclasses import dataclass

import numpy as onp

import gradcy.numpy as np


def wellcond(rs, n, m=None, complex_=False):
    """A well-conditioned n x m matrix: small random entries plus 1.5 on the diagonal."""
    m = n if m is None else m
    a = 0.3 * rs.uniform(-1, 1, (n, m)) + 1.5 * onp.eye(n, m)
    if complex_:
        a = a + 0.2j * rs.uniform(-1, 1, (n, m))
    return a


def spd(rs, n, complex_=False):
    """A symmetric (Hermitian) positive definite n x n matrix."""
    a = rs.uniform(-1, 1, (n, n))
    if complex_:
        a = a + 0.3j * rs.uniform(-1, 1, (n, n))
    return a @ a.conj().T + n * onp.eye(n)


def sym(rs, n, complex_=False):
    """A symmetric (Hermitian) n x n matrix with well-separated eigenvalues."""
    a = rs.uniform(-1, 1, (n, n))
    if complex_:
        a = a + 0.3j * rs.uniform(-1, 1, (n, n))
    return a + a.conj().T + onp.diag(onp.arange(n) * 2.0)


def draw(kind, rs, shape, complex_=False):
    """Seeded float64 (complex128) data of the kind and shape."""
    if kind == "wellcond":
        return wellcond(rs, shape[-2], shape[-1], complex_)
    if kind == "spd":
        return spd(rs, shape[-1], complex_)
    if kind == "sym":
        return sym(rs, shape[-1], complex_)
    x = rs.uniform(0.3, 0.9, shape)
    return x + 0.1j * rs.uniform(-1, 1, shape) if complex_ else x


@dataclass(frozen=True)
class Linalg:
    name: str
    call: object
    shapes: tuple
    kinds: tuple
    saved: frozenset
    outputs: tuple = None
    numpy2: bool = False


def _la(name, *args, **kw):
    """np.linalg.<name>(*operands, *args, **kw)."""
    return lambda *ops: getattr(np.linalg, name)(*ops, *args, **kw)


def _rec(name, call, shapes, kinds, saved, **kw):
    return Linalg(name, call, tuple(shapes), tuple(kinds), frozenset(saved), **kw)


SQUARE = ((3, 3),)
RECORDS = [
    _rec("det", _la("det"), SQUARE, ["wellcond"], {"ans", 0}),
    _rec("slogdet", _la("slogdet"), SQUARE, ["wellcond"], {"ans", 0}, outputs=(1,)),
    _rec("inv", _la("inv"), SQUARE, ["wellcond"], {"ans"}),
    _rec("matrix_power", _la("matrix_power", 3), SQUARE, ["uniform"], {0}),
    _rec("pinv", _la("pinv"), [(3, 2)], ["wellcond"], {"ans", 0}),
    _rec("norm", _la("norm"), [(2, 3)], ["uniform"], {"ans", 0}),
    _rec("vector_norm", _la("vector_norm"), [(3,)], ["uniform"], {"ans", 0}, numpy2=True),
    _rec("matrix_norm", _la("matrix_norm"), [(2, 3)], ["uniform"], {"ans", 0}, numpy2=True),
    _rec("cholesky", _la("cholesky"), SQUARE, ["spd"], {"ans"}),
    _rec("eigh", _la("eigh"), SQUARE, ["sym"], {"ans"}, outputs=(0, 1)),
    _rec("eigvalsh", _la("eigvalsh"), SQUARE, ["sym"], {0}),
    _rec("eig", _la("eig"), SQUARE, ["sym"], {"ans"}, outputs=(0, 1)),
    _rec("eigvals", _la("eigvals"), SQUARE, ["sym"], {"ans", 0}),
    _rec("qr", _la("qr"), [(3, 2)], ["wellcond"], {"ans"}, outputs=(0, 1)),
    _rec(
        "svd",
        _la("svd", full_matrices=False),
        [(3, 2)],
        ["wellcond"],
        {"ans"},
        outputs=(0, 1, 2),
    ),
    # (gradcy serves svdvals on NumPy 1 too: not numpy2)
    _rec("svdvals", _la("svdvals"), [(3, 2)], ["wellcond"], {0}),
    _rec("solve", _la("solve"), [(3, 3), (3, 2)], ["wellcond", "uniform"], {"ans", 0}),
    _rec("lstsq", _la("lstsq"), [(3, 2), (3,)], ["wellcond", "uniform"], {0, 1}, outputs=(0,)),
    _rec(
        "tensorinv",
        lambda a: np.linalg.tensorinv(np.reshape(a, (2, 2, 4)), ind=2),
        [(4, 4)],
        ["wellcond"],
        {"ans"},
    ),
    _rec(
        "tensorsolve",
        lambda a, b: np.linalg.tensorsolve(np.reshape(a, (2, 2, 4)), b),
        [(4, 4), (2, 2)],
        ["wellcond", "uniform"],
        {"ans", 0},
    ),
]
RECORDS = [r for r in RECORDS if not r.numpy2 or hasattr(onp.linalg, r.name)]
LINALG = {r.name: r for r in RECORDS}
assert len(LINALG) == len(RECORDS), "one record per operator"
