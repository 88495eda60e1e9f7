"""Type errors mypy must find in a user's program (tests/typing/check.py): each line marked
``# E: text`` must get an error whose message holds ``text``, and no other line may get one.
Without gradcy's annotations (grad typed as returning Any) these lines pass unnoticed. The texts
leave out what NumPy's stubs spell differently between versions (an array's shape type)."""

from typing import Any

import numpy as onp
from numpy.typing import NDArray

import gradcy.memory
import gradcy.numpy as np
from gradcy import grad, make_vjp, value_and_grad
from gradcy.extend import defvjp, primitive

Array = NDArray[onp.float64]


def loss(w: Array, scale: float) -> onp.floating[Any]:
    return np.mean(w * w) * scale


@primitive
def cube(x: float) -> float:
    return x**3


w = np.ones(3)
g: str = grad(loss)(w, 2.0)  # E: (expression has type "ndarray[
grad(loss)(w, "2.0")  # E: Argument 2 has incompatible type "str"; expected "float"
grad(loss)(w)  # E: Too few arguments
value, _ = value_and_grad(loss)(w, 2.0)
print(value.upper())  # E: "floating[Any]" has no attribute "upper"
make_vjp(loss)(w, 2.0)[0].release(1)  # E: Too many arguments for "release" of "VJP"
cube("x")  # E: Argument 1 to "__call__" of "Primitive" has incompatible type "str"; expected "fl
defvjp(cube, save=3)  # E: Argument "save" to "defvjp" has incompatible type "int"
defvjp(loss, None)  # E: Argument 1 to "defvjp" has incompatible type "Callable[
np.tanh(w, 1, 2, 3)  # E: No overload variant of "__call__"
gradcy.memory.stats()["live_tapes"].upper()  # E: "int" has no attribute "upper"
gradcy.memory.profile(loss)(w)  # E: Too few arguments
np.at(w)[0].set(1.0).no_such_method()  # E: has no attribute "no_such_method"
