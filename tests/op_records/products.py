"""One test record per operator of the products family (gradcy/numpy/products.py): the
products of two arrays and the diagonal and transpose views. Read by the family's shared checks
(test_products.py: saved sets, mixed precision, complex values, forward mode), the dtype sweep
(test_dtype_sweep.py) and the functions autograd never differentiated
(test_numpy_coverage.py); the checks of many shapes of one product stay in test_products.py.

Fields of a record:
  name      the gradcy.numpy name
  call      the representative call, a function of the operands
  shapes    the operands' shapes for it (two for a product, one for a view)
  operands  the positions of the operands among the primitive's arguments (einsum's come after
            its subscripts)
  saved     the primitive's saved spec (what its record keeps)
  autograd  autograd differentiates it
  numpy2    new in NumPy 2: checked where the installed NumPy has it
"""

from dataclasses import dataclass

import numpy as onp

import gradcy.numpy as np


@dataclass(frozen=True)
class Product:
    name: str
    call: object
    shapes: tuple
    saved: tuple = (0, 1)
    operands: tuple = (0, 1)
    autograd: bool = True
    numpy2: bool = False

    @property
    def bilinear(self):
        return len(self.shapes) == 2


def _call(name, *args):
    """np.<name>(a, b, *args), looked up when called (NumPy 2's names may be missing)."""
    return lambda *ops: getattr(np, name)(*ops, *args)


RECORDS = [
    Product("dot", _call("dot"), ((2, 3), (3, 2))),
    Product("matmul", _call("matmul"), ((2, 2, 3), (3, 2))),
    Product("tensordot", _call("tensordot", 1), ((2, 3), (3, 2))),
    Product(
        "einsum",
        lambda a, b: np.einsum("ij,jk->ik", a, b),
        ((2, 3), (3, 2)),
        saved=("args",),
        operands=(1, 2),
    ),
    Product("inner", _call("inner"), ((2, 3), (3,))),
    Product("outer", _call("outer"), ((2,), (3,)), autograd=False),
    Product("vdot", _call("vdot"), ((2, 3), (6,)), autograd=False),
    Product("kron", _call("kron"), ((2,), (2, 2)), autograd=False),
    Product("cross", _call("cross"), ((2, 3), (3,))),
    Product("vecdot", _call("vecdot"), ((2, 3), (3,)), autograd=False, numpy2=True),
    Product("matvec", _call("matvec"), ((2, 3), (3,)), autograd=False, numpy2=True),
    Product("vecmat", _call("vecmat"), ((3,), (2, 3, 2)), autograd=False, numpy2=True),
    Product("trace", _call("trace", 1), ((3, 3),), saved=(), operands=(0,)),
    Product("diagonal", _call("diagonal", -1), ((3, 3),), saved=(), operands=(0,)),
    Product(
        "matrix_transpose",
        _call("matrix_transpose"),
        ((2, 3),),
        saved=(),
        operands=(0,),
        autograd=False,
        numpy2=True,
    ),
]
RECORDS = [r for r in RECORDS if not r.numpy2 or hasattr(onp, r.name)]
PRODUCT = {r.name: r for r in RECORDS}
assert len(PRODUCT) == len(RECORDS), "one record per operator"
BILINEAR = [r for r in RECORDS if r.bilinear]
