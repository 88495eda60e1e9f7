"""Every function of gradcy's public API is annotated (its parameters and its return), so that
a user's `mypy --strict` sees types, not untyped calls (tests/typing/check.py runs mypy on a
user's program; this names an unannotated public function directly, without mypy)."""

import inspect
import typing

import pytest

import gradcy
import gradcy.extend
import gradcy.memory
import gradcy.misc

MODULES = (gradcy, gradcy.extend, gradcy.memory, gradcy.differential_operators, gradcy.misc)
# the overloads of a function (Python >= 3.11 records them; on 3.10 its own signature is read)
get_overloads = getattr(typing, "get_overloads", lambda f: [])


def _public_functions():
    for module in MODULES:
        for name in module.__all__:
            obj = getattr(module, name)
            if inspect.isfunction(obj):
                yield pytest.param(obj, id=f"{module.__name__}.{name}")


def _missing(fun):
    """The names of fun's parameters without an annotation, and 'return' if its return has
    none; over each of its overloads if it has them."""
    sigs = [inspect.signature(f) for f in get_overloads(inspect.unwrap(fun))]
    sigs = sigs or [inspect.signature(fun)]
    missing = []
    for sig in sigs:
        missing += [
            p.name for p in sig.parameters.values() if p.annotation is inspect.Parameter.empty
        ]
        if sig.return_annotation is inspect.Signature.empty:
            missing.append("return")
    return sorted(set(missing))


@pytest.mark.parametrize("fun", list(_public_functions()))
def test_public_function_is_annotated(fun):
    assert _missing(fun) == []


def test_the_check_sees_an_unannotated_function():
    def f(x, y: int):
        return y

    assert _missing(f) == ["return", "x"]
    assert len(list(_public_functions())) > 30
