"""VJPs of elementwise functions: unary and binary ufuncs, maximum/minimum/clip/where."""
import numpy as _onp  # noqa: F401

from ..extend import ArrayMeta, defvjp, primitive  # noqa: F401
from . import numpy_wrapper as anp
from .vjp_util import cast_like, unbroadcast, expand_reduced, shape_dtype  # noqa: F401

# =============================================================================
# Binary ufuncs
# =============================================================================
defvjp(anp.add,
       lambda ans, x, y: lambda g: unbroadcast(g, x),
       lambda ans, x, y: lambda g: unbroadcast(g, y), save=())
defvjp(anp.subtract,
       lambda ans, x, y: lambda g: unbroadcast(g, x),
       lambda ans, x, y: lambda g: unbroadcast(-g, y), save=())
defvjp(anp.multiply,
       lambda ans, x, y: lambda g: unbroadcast(g * y, x),
       lambda ans, x, y: lambda g: unbroadcast(x * g, y), save=(0, 1))
defvjp(anp.divide,
       lambda ans, x, y: lambda g: unbroadcast(g / y, x),
       lambda ans, x, y: lambda g: unbroadcast(-g * x / (y * y), y), save=(0, 1))

# =============================================================================
# Unary ufuncs
# =============================================================================
defvjp(anp.negative, lambda ans, x: lambda g: -g, save=())
defvjp(anp.sin, lambda ans, x: lambda g: g * anp.cos(x), save=(0,))
defvjp(anp.cos, lambda ans, x: lambda g: -g * anp.sin(x), save=(0,))
defvjp(anp.tanh, lambda ans, x: lambda g: g * (1.0 - ans * ans), save=("ans",))
defvjp(anp.exp, lambda ans, x: lambda g: g * ans, save=("ans",))
defvjp(anp.log, lambda ans, x: lambda g: g / x, save=(0,))

