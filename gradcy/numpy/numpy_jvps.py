"""autograd.numpy.numpy_jvps's names. gradcy registers each primitive's forward-mode rules
next to its reverse-mode rules (numpy_vjps and the modules it imports); importing this module
registers nothing new."""
from . import numpy_vjps  # noqa: F401


# autograd's names in this module (views of the rules above; gradcy._autograd_rules)
from .._autograd_rules import export as _export  # noqa: E402

_export(globals())
