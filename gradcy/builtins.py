"""Python's container constructors and type queries, usable on traced values.

    from gradcy.builtins import tuple, list, dict, isinstance, type

gradcy traces the leaves of a container, not the container: a tuple/list/dict whose elements
are traced values is an ordinary Python container, and the differentiation operators accept one
as input or output (grad of a function returning a dict, of a dict argument, ...). So the
constructors here build plain containers; they accept traced sequences (a traced value holding
a tuple, e.g. the result of gradcy.numpy.linalg.eigh), whose elements they take one by one.

isinstance and type look through traced values: isinstance(x, np.ndarray) is True for a traced
array, type(x) is the type of the plain value. The classes tuple, list and dict answer
isinstance for plain containers and for traced values holding one.
"""
import builtins as _b

from ._core import Box

__all__ = ["tuple", "list", "dict", "isinstance", "type", "getval"]

_tuple, _list, _dict, _type, _isinstance = _b.tuple, _b.list, _b.dict, _b.type, _b.isinstance


def getval(x):
    """The plain value under any number of tracing levels."""
    while _type(x) is Box:
        x = x._value
    return x


def isinstance(obj, classinfo):
    """isinstance(obj, classinfo) of the plain value of obj."""
    return _isinstance(getval(obj), classinfo)


def type(obj):
    """The type of the plain value of obj (one-argument form only)."""
    return _type(getval(obj))


def _elements(xs):
    if _type(xs) is Box:
        return [xs[i] for i in range(len(xs))]   # one container_take/getitem per element
    return xs


class _ContainerMeta(_type):
    """isinstance(v, <gradcy tuple/list/dict>) holds for plain containers of that kind and for
    traced values holding one."""
    def __instancecheck__(cls, instance):
        return _isinstance(getval(instance), cls._plain)

    def __subclasscheck__(cls, subclass):
        return _b.issubclass(subclass, cls._plain)


class tuple(_tuple, metaclass=_ContainerMeta):
    """tuple(xs): a plain tuple of the elements of xs (which may be traced)."""
    _plain = _tuple

    def __new__(cls, xs=()):
        return _tuple(_elements(xs))


class list(_list, metaclass=_ContainerMeta):
    """list(xs): a plain list of the elements of xs (which may be traced)."""
    _plain = _list

    def __new__(cls, xs=()):
        return _list(_elements(xs))


class dict(_dict, metaclass=_ContainerMeta):
    """dict(...): a plain dict (same arguments as the builtin); values may be traced."""
    _plain = _dict

    def __new__(cls, *args, **kwargs):
        if args and _type(args[0]) is Box:
            args = (_elements(args[0]),) + args[1:]
        return _dict(*args, **kwargs)
