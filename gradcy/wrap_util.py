"""Building n-ary differential operators from unary ones (autograd.wrap_util's API).

    @unary_to_nary
    def my_op(fun, x, *op_args): ...        # fun is a function of one value x

    my_op(f, argnum=1)(a, b, c)             # my_op applied to lambda x: f(a, x, c), at x=b

argnum may be an int or a tuple/list of ints (then x is the tuple of those arguments).
"""

from collections.abc import Callable
from typing import Any

import numpy as _np

from .util import subvals

__all__ = ["unary_to_nary", "wraps", "wrap_nary_f", "get_name", "get_doc", "subvals"]


def get_name(f):
    """f.__name__, or "[unknown name]"."""
    return getattr(f, "__name__", "[unknown name]")


def get_doc(f):
    return getattr(f, "__doc__", "")


def wraps(fun, namestr="{fun}", docstr="{doc}", **kwargs):
    """A decorator that names the decorated function after `fun` (namestr and docstr are
    format strings with the fields fun, doc and the given keywords); a function whose
    attributes cannot be set is returned unchanged."""

    def _wraps(f):
        try:
            f.__name__ = namestr.format(fun=get_name(fun), **kwargs)
            f.__doc__ = docstr.format(fun=get_name(fun), doc=get_doc(fun), **kwargs)
        except (AttributeError, TypeError):
            pass
        return f

    return _wraps


def wrap_nary_f(fun, op, argnum):
    """Names an n-ary operator's result "{op}_of_{fun}_wrt_argnum_{argnum}"."""
    return wraps(
        fun,
        "{op}_of_{fun}_wrt_argnum_{argnum}",
        "    {op} of function {fun} with respect to argument number {argnum}. It takes\n"
        "    the same arguments as {fun} and returns the {op}.\n    ",
        op=get_name(op),
        argnum=argnum,
    )


def unary_to_nary(unary_operator: Callable[..., Any]) -> Callable[..., Any]:
    """Turn unary_operator(fun, x, *op_args, **op_kwargs) into
    nary_operator(fun, argnum=0, *op_args, **op_kwargs)(*args, **kwargs)."""

    @wraps(unary_operator)
    def nary_operator(fun, argnum=0, *nary_op_args, **nary_op_kwargs):
        if type(argnum) not in (int, tuple, list):
            raise TypeError(
                f"{get_name(unary_operator)}: argnum must be an int or a tuple of "
                f"ints, got {argnum!r}"
            )

        @wrap_nary_f(fun, unary_operator, argnum)
        def nary_f(*args, **kwargs):
            multi = not isinstance(argnum, int)

            @wraps(fun)
            def unary_f(x):
                subargs = subvals(args, zip(argnum, x) if multi else [(argnum, x)])
                return fun(*subargs, **kwargs)

            try:
                x = tuple(args[i] for i in argnum) if multi else args[argnum]
            except IndexError:
                _check_argnum(args, argnum, get_name(unary_operator))
                raise
            return unary_operator(unary_f, x, *nary_op_args, **nary_op_kwargs)

        return nary_f

    return nary_operator


def _check_argnum(args, argnum, fname, besides=""):
    """Raise an error naming argnum and the number of positional arguments unless every
    entry of argnum (an int, or a tuple/list of ints) indexes one of args (`besides`: what
    else the call was given, for the error)."""
    n = len(args)
    multi = type(argnum) is tuple or type(argnum) is list
    for i in argnum if multi else (argnum,):
        if isinstance(i, bool) or not isinstance(i, (int, _np.integer)):
            raise TypeError(
                f"{fname}: argnum must be an int or a tuple of ints, got "
                f"{argnum!r}; to differentiate by name use grad_named"
            )
        if not -n <= i < n:
            raise IndexError(
                f"{fname}: argnum={argnum!r} but the function was called with {n} "
                f"positional argument{'' if n == 1 else 's'}{besides}; argnum "
                f"counts positional arguments from 0 (arguments passed by "
                f"keyword are not differentiated)"
            )
