"""The type variables and aliases of gradcy's annotations (one place, imported by the modules
of the public API: differential operators, extend, memory).

``grad(f)`` keeps ``f``'s parameters (a ParamSpec) and, for the default ``argnum=0``, gives
the gradient the type of the first parameter (a gradient has the type of its input);
``value_and_grad(f)`` gives the value ``f``'s return type. Other ``argnum`` values type the
gradient as ``Any`` (which parameter a runtime int names is not a static fact).

Limits (mypy's, for an overloaded function passed as ``f``): mypy binds ``f``'s first overload.
A NumPy ufunc (``np.tanh``: its ``__call__`` is overloaded, the first for scalars) has an
overload of its own, typed ``Callable[..., Any]``; for another overloaded function (``np.sum``)
the first overload's parameter types hold, so wrap it (``lambda x: np.sum(x)``) for others.
"""

from collections.abc import Callable
from typing import Any, Literal, ParamSpec, TypeAlias, TypeVar

P = ParamSpec("P")
T = TypeVar("T")  # the type of the differentiated (first) argument
R = TypeVar("R")  # the return type of the differentiated function
A = TypeVar("A")  # an auxiliary value (grad_and_aux)
F = TypeVar("F", bound=Callable[..., Any])

ArgNum: TypeAlias = int | tuple[int, ...]
# grad's recompute policy (None: the process default)
Recompute: TypeAlias = Literal["elementwise", "none"] | bool | None
