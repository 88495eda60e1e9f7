"""The docstring sections the differential operators share (numpydoc).

A docstring line ``{fun and argnum}`` becomes, through the decorator `operator_doc`, the
Parameters section for ``fun`` and ``argnum`` and the head of the Returns section (a callable):

    @operator_doc("scalar", "int")
    def hessian(fun, argnum=0):
        \"\"\"The Hessian of a scalar-valued function.

        {fun and argnum}
            ``hessian_fun(*args, **kwargs)``: ...
        \"\"\"
"""

__all__ = ["operator_doc"]

MARKER = "    {fun and argnum}\n"

# what fun is, by kind
FUN = {"scalar": "A function returning a real scalar.",
       "array": "A function with a floating-point (array) output.",
       "any": "The function to differentiate."}
# argnum's type and meaning, by kind
ARGNUM = {"int": ("int", "The positional argument to differentiate with respect to "
                         "(default 0)."),
          "ints": ("int or tuple of int", "The positional argument(s) to differentiate with "
                                          "respect to (default 0).")}


def operator_doc(fun, argnum):
    """A decorator that fills the ``{fun and argnum}`` line of the function's docstring for a
    ``fun`` of kind `fun` (a key of FUN) and an ``argnum`` of kind `argnum` (a key of ARGNUM)."""
    argnum_type, argnum_text = ARGNUM[argnum]
    lines = ["Parameters", "----------", "fun : callable", f"    {FUN[fun]}",
             f"argnum : {argnum_type}, optional", f"    {argnum_text}", "", "Returns", "-------",
             "callable"]
    section = "".join(f"    {line}\n" if line else "\n" for line in lines)

    def fill(f):
        if f.__doc__ is None:           # python -OO
            return f
        if MARKER not in f.__doc__:
            raise ValueError(f"operator_doc: {f.__name__}'s docstring has no line "
                             f"{MARKER.strip()!r}")
        f.__doc__ = f.__doc__.replace(MARKER, section)
        return f
    return fill
