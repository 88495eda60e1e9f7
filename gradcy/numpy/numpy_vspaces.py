"""autograd.numpy.numpy_vspaces's names: the vector spaces of arrays and of numpy.linalg's
result tuples (gradcy.vspace defines them)."""

from ..vspace import ArrayVSpace, ComplexArrayVSpace, NamedTupleVSpace, VSpace

__all__ = [
    "ArrayVSpace",
    "ComplexArrayVSpace",
    "NamedTupleVSpace",
    "VSpace",
    "EigResultVSpace",
    "EighResultVSpace",
    "QRResultVSpace",
    "SlogdetResultVSpace",
    "SVDResultVSpace",
]

# numpy.linalg's named results (EigResult, SVDResult, ...) are named tuples: one space for all
EigResultVSpace = EighResultVSpace = QRResultVSpace = NamedTupleVSpace
SlogdetResultVSpace = SVDResultVSpace = NamedTupleVSpace
