"""numpy.random, unchanged: random draws are constants to differentiation."""
from numpy.random import *
from numpy.random import get_bit_generator, set_bit_generator, test

from ._wrap import wrap_namespace  # (autograd.numpy.random has it)
