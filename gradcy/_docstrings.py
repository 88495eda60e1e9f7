"""Docstring sections written once and shared by several functions (numpydoc).

`fill` replaces each line ``{name}`` of a docstring by a section written once, indented as the
line is; `operator_doc` is the differential operators' (their ``fun`` and ``argnum``
parameters and the head of their Returns section):

    @operator_doc("scalar", "int")
    def hessian(fun, argnum=0):
        \"\"\"The Hessian of a scalar-valued function.

        {fun and argnum}
            ``hessian_fun(*args, **kwargs)``: ...
        \"\"\"
"""

from collections.abc import Callable

from ._typing import F

__all__ = ["fill", "operator_doc"]


def fill(sections: dict[str, str]) -> Callable[[F], F]:
    """A decorator: each docstring line ``{name}`` (for a key ``name`` of `sections`) becomes
    ``sections[name]``, a text written without indentation, indented as the line is. Raises
    if the docstring has none of the lines (a docstring of None, under python -OO, is kept)."""

    def decorate(f):
        doc = f.__doc__
        if doc is None:
            return f
        found = False
        for name, text in sections.items():
            marker = "{" + name + "}\n"
            at = doc.find(marker)
            while at >= 0:
                indent = doc[doc.rfind("\n", 0, at) + 1 : at]
                block = "".join(f"{indent}{line}\n" if line else "\n" for line in text.split("\n"))
                doc = doc[: at - len(indent)] + block + doc[at + len(marker) :]
                found = True
                at = doc.find(marker)
        if not found:
            raise ValueError(
                f"fill: {f.__name__}'s docstring has none of the lines "
                f"{['{' + name + '}' for name in sections]}"
            )
        f.__doc__ = doc
        return f

    return decorate


# what an operator's fun is, by kind
FUN = {
    "scalar": "A function returning a real scalar.",
    "array": "A function with a floating-point (array) output.",
    "any": "The function to differentiate.",
}
# an operator's argnum: its type and meaning, by kind
ARGNUM = {
    "int": ("int", "The positional argument to differentiate with respect to (default 0)."),
    "ints": (
        "int or tuple of int",
        "The positional argument(s) to differentiate with respect to (default 0).",
    ),
}


def operator_doc(fun: str, argnum: str) -> Callable[[F], F]:
    """`fill` of the ``{fun and argnum}`` line for a ``fun`` of kind `fun` (a key of FUN) and an
    ``argnum`` of kind `argnum` (a key of ARGNUM)."""
    argnum_type, argnum_text = ARGNUM[argnum]
    return fill(
        {
            "fun and argnum": f"Parameters\n----------\nfun : callable\n    {FUN[fun]}\n"
            f"argnum : {argnum_type}, optional\n    {argnum_text}\n\n"
            f"Returns\n-------\ncallable"
        }
    )
