"""numpy.random, unchanged: random draws are constants to differentiation."""
from numpy.random import *  # noqa: F401,F403
from numpy.random import get_bit_generator, set_bit_generator, test  # noqa: E402,F401

from ._wrap import wrap_namespace  # noqa: E402,F401  (autograd.numpy.random has it)
