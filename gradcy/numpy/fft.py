"""numpy.fft as primitives. VJPs are registered in fft_vjps."""
import numpy.fft as _npfft

from .numpy_wrapper import wrap_namespace

wrap_namespace(_npfft.__dict__, globals(), "gradcy.numpy.fft")
