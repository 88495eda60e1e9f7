"""numpy.random, unchanged: random draws are constants to differentiation."""
from numpy.random import *  # noqa: F401,F403
