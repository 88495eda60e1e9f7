"""numpy.fft as primitives. VJPs are registered in fft_vjps."""
import numpy.fft as _npfft

from .numpy_wrapper import wrap_namespace

wrap_namespace(_npfft.__dict__, globals(), "gradcy.numpy.fft")


# autograd's names in this module (views of the rules above; gradcy._autograd_rules)
from .._autograd_rules import export as _export  # noqa: E402

_export(globals())
