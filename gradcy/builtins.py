"""Python's container constructors and type queries, usable on traced values (autograd's
autograd.builtins).

    from gradcy.builtins import tuple, list, dict, isinstance, type

As in autograd, ``tuple(xs)`` / ``list(xs)`` whose elements include traced values build a
traced container: one traced value holding the plain container (a ``SequenceBox`` for
isinstance), which a primitive takes as one argument (its VJP for that argument returns a
container of cotangents). Without traced elements they build plain containers. ``dict(...)``
builds a plain dict. gradcy also traces plain containers of traced values (the differentiation
operators accept one as input or output), so both forms differentiate.

isinstance and type look through traced values: isinstance(x, np.ndarray) is True for a traced
array, type(x) is the type of the plain value. The classes tuple, list and dict answer
isinstance for plain containers and for traced values holding one.
"""

import builtins as _b

from ._core import Box

__all__ = ["tuple", "list", "dict", "isinstance", "type", "getval", "SequenceBox", "DictBox"]

_tuple, _list, _dict, _type, _isinstance = _b.tuple, _b.list, _b.dict, _b.type, _b.isinstance


def getval(x):
    """The plain value of ``x`` under any number of tracing levels (``x`` itself if it is not
    traced). Derivatives do not flow through the result.

    Examples
    --------
    >>> from gradcy import grad
    >>> from gradcy.builtins import getval
    >>> def f(x):
    ...     print(type(getval(x)).__name__, getval(x))
    ...     return x * 3.0
    >>> grad(f)(2.0)
    float 2.0
    3.0
    """
    while _type(x) is Box:
        x = x._value
    return x


def isinstance(obj, classinfo):
    """``isinstance`` of the plain value of ``obj``: a traced array is an ``ndarray``, a traced
    float a ``float``.

    Examples
    --------
    >>> import numpy as onp
    >>> import gradcy.numpy as np
    >>> from gradcy import grad
    >>> from gradcy.builtins import isinstance
    >>> def f(x):
    ...     return np.sum(x ** 2) if isinstance(x, np.ndarray) else x ** 2
    >>> print(grad(f)(onp.array([1.0, 2.0])), grad(f)(3.0))
    [2. 4.] 6.0
    """
    return _isinstance(getval(obj), classinfo)


def type(obj):
    """The type of the plain value of ``obj`` (the one-argument form of ``type``).

    Examples
    --------
    >>> import numpy as onp
    >>> from gradcy import grad
    >>> from gradcy.builtins import type
    >>> seen = []
    >>> def f(x):
    ...     seen.append(type(x))
    ...     return x * 2.0
    >>> print(grad(f)(onp.float32(1.0)), seen)
    2.0 [<class 'numpy.float32'>]
    """
    return _type(getval(obj))


def _elements(xs):
    if _type(xs) is Box:
        return [xs[i] for i in range(len(xs))]  # one container_take/getitem per element
    return xs


class _ContainerMeta(_type):
    """isinstance(v, <gradcy tuple/list/dict>) holds for plain containers of that kind and for
    traced values holding one."""

    def __instancecheck__(cls, instance):
        return _isinstance(getval(instance), cls._plain)

    def __subclasscheck__(cls, subclass):
        return _b.issubclass(subclass, cls._plain)


def _traced(x):
    return _type(x) is Box or _isinstance(x, Box)


def _sequence_new(cls, xs=()):
    """gradcy.builtins.tuple(xs) / list(xs): a traced tuple / list when an element of xs is
    traced (as autograd's), else a plain one."""
    elements = _elements(xs)
    for e in elements:
        # (under forward mode, at any level, the container stays plain: gradcy differentiates
        # a plain container of traced values as well; a traced container is reverse mode's)
        if _traced(e) and not _under_forward_mode(e):
            return make_sequence(cls._plain, *elements)
    return cls._plain(elements)


def _under_forward_mode(x):
    """x is traced by a forward-mode differentiation at some level."""
    while _type(x) is Box or _isinstance(x, Box):
        if x._tape.forward:
            return True
        x = x._value
    return False


class tuple(_tuple, metaclass=_ContainerMeta):
    """``tuple(xs)``: the tuple of the elements of ``xs`` (which may be a traced value holding
    a tuple, e.g. the result of ``gradcy.numpy.linalg.eigh``): traced (one traced value holding
    the tuple) when an element is traced, else plain.
    ``isinstance(v, gradcy.builtins.tuple)`` holds for plain tuples and for traced values
    holding one.

    Examples
    --------
    >>> import numpy as onp
    >>> from gradcy import grad, numpy as np
    >>> from gradcy.builtins import tuple
    >>> def f(a):
    ...     w, v = tuple(np.linalg.eigh(a))      # eigenvalues, eigenvectors
    ...     return np.sum(w)                     # the trace
    >>> print(grad(f)(onp.diag([1.0, 2.0])))
    [[1. 0.]
     [0. 1.]]
    """

    _plain = _tuple
    __new__ = _sequence_new


class list(_list, metaclass=_ContainerMeta):
    """``list(xs)``: the list of the elements of ``xs`` (which may be a traced value holding
    a sequence), traced when an element is traced, else plain;
    ``isinstance(v, gradcy.builtins.list)`` holds for plain lists and for traced values
    holding one.

    Examples
    --------
    >>> import gradcy
    >>> from gradcy.builtins import list
    >>> def f(a):
    ...     parts = list(gradcy.numpy.linalg.eigh(a))    # a traced list, as autograd's
    ...     return gradcy.numpy.sum(parts[0] ** 2)       # the sum of squared eigenvalues
    >>> print(gradcy.grad(f)(gradcy.numpy.diag([1.0, 2.0])))
    [[2. 0.]
     [0. 4.]]
    """

    _plain = _list
    __new__ = _sequence_new


class dict(_dict, metaclass=_ContainerMeta):
    """``dict(...)``: a plain dict, with the arguments of the builtin; its values may be
    traced (gradcy traces a plain dict of traced values; autograd makes a DictBox: a traced
    dict is made with ``make_dict(keys, *values)``).

    Examples
    --------
    >>> from gradcy import grad, numpy as np
    >>> from gradcy.builtins import dict
    >>> def f(x):
    ...     d = dict(a=x, b=2.0 * x)
    ...     return np.sum(d["a"] * d["b"])
    >>> print(grad(f)(np.array([1.0, 2.0])))
    [4. 8.]
    """

    _plain = _dict

    def __new__(cls, *args, **kwargs):
        if args and _type(args[0]) is Box:
            args = (_elements(args[0]),) + args[1:]
        return _dict(*args, **kwargs)


# =============================================================================
# Traced containers (autograd's SequenceBox / DictBox) and autograd.builtins's other names.
# A traced container is a Box whose plain value is a tuple, list or dict; SequenceBox and
# DictBox answer isinstance for those (a Box of an array is neither). The sequence operations
# other than make_sequence are plain functions that work on traced elements; their rules
# below are the index bookkeeping autograd's have.
# =============================================================================
from .registry import defjvp, defjvp_argnum, defjvp_argnums, defvjp, defvjp_argnum
from .registry import defvjp_argnums_direct
from .registry import notrace_primitive, primitive
from .util import subvals
from .vspace import (
    ContainerVSpace,
    DictVSpace,
    ListVSpace,
    NamedTupleVSpace,
    SequenceVSpace,
    SparseObject,
    TupleVSpace,
    VSpace,
    vspace,
)

TupleMeta = ListMeta = DictMeta = _ContainerMeta


class _BoxKindMeta(_type):
    """isinstance(v, SequenceBox / DictBox): v is a traced value holding a tuple or list /
    a dict (at any tracing depth)."""

    def __instancecheck__(cls, instance):
        return _traced(instance) and _isinstance(getval(instance), cls._holds)

    def __subclasscheck__(cls, subclass):
        return subclass is cls


class SequenceBox(metaclass=_BoxKindMeta):
    """isinstance(x, SequenceBox): x is a traced tuple or list (as ``tuple(xs)`` of traced
    elements makes). Build one with gradcy.builtins.tuple / list.

    Examples
    --------
    >>> from gradcy import grad, numpy as np
    >>> from gradcy.builtins import SequenceBox, tuple
    >>> def f(x):
    ...     t = tuple([x, 2.0 * x])
    ...     print(isinstance(t, SequenceBox), isinstance(x, SequenceBox))
    ...     return np.sum(t[0] * t[1])
    >>> print(grad(f)(np.array([1.0, 2.0])))
    True False
    [4. 8.]
    """

    _holds = (_tuple, _list)

    def __new__(cls, *args, **kwargs):
        raise TypeError(
            f"gradcy: {cls.__name__} is not constructed directly; "
            f"gradcy.builtins.tuple(xs) / list(xs) of traced elements make one"
        )


class DictBox(metaclass=_BoxKindMeta):
    """isinstance(x, DictBox): x is a traced dict, as ``make_dict(keys, *values)`` with
    traced values makes (``dict(...)`` makes a plain dict of traced values).

    Examples
    --------
    >>> from gradcy import grad, numpy as np
    >>> from gradcy.builtins import DictBox, make_dict
    >>> def f(x):
    ...     d = make_dict(("a", "b"), x, 2.0 * x)
    ...     print(isinstance(d, DictBox), isinstance(x, DictBox))
    ...     return np.sum(x ** 2)
    >>> print(grad(f)(np.array([1.0, 2.0])))
    True False
    [2. 4.]
    """

    _holds = (_dict,)
    __new__ = SequenceBox.__new__


def container_untake(x, idx, vs):
    """The element of the container space vs that is x at idx (an index or a slice) and zero
    elsewhere, as a SparseObject."""

    def mut_add(A):
        A = _list(A) if not _isinstance(A, _dict) else _dict(A)
        if _isinstance(idx, slice):
            for k, v in zip(range(*idx.indices(len(A))), x):
                A[k] = _add_element(vs.shape[k], A[k], v)
        else:
            A[idx] = _add_element(vs.shape[idx], A[idx], x)
        return vs.seq_type(A) if hasattr(vs, "seq_type") and vs.seq_type is not _list else A

    return SparseObject(vs, mut_add)


def _add_element(vs, a, x):
    """a + x in the space vs of a container's element: x None (zero), a SparseObject, or
    dense; a container element is added element by element (+ would concatenate tuples)."""
    if x is None:
        return a
    if type(x) is SparseObject:
        return x.mut_add(vs.mut_add(None, a))  # (into a copy of a)
    if _isinstance(vs, ContainerVSpace):
        return vs._map(_add_element, a, x)
    return a + x


def sequence_extend_right(seq, *elts):
    """seq followed by elts (same sequence type)."""
    return seq + _type(seq)(elts)


def sequence_extend_left(seq, *elts):
    """elts followed by seq (same sequence type)."""
    return _type(seq)(elts) + seq


def grad_sequence_extend_right(argnum, ans, args, kwargs):
    seq = args[0]
    return lambda g: g[: len(seq)] if argnum == 0 else g[len(seq) + argnum - 1]


def grad_sequence_extend_left(argnum, ans, args, kwargs):
    n = len(args) - 1
    return lambda g: g[n:] if argnum == 0 else g[argnum - 1]


@primitive
def make_sequence(seq_type, *args):
    """seq_type(args): traced when an element of args is traced."""
    return seq_type(args)


def _element_cotangent(g, key, x):
    """The cotangent of element `key` of a container cotangent g (None: zero) for element
    value x."""
    if type(g) is SparseObject:  # (a single read of a traced dict: one element's)
        g = g.densify()
    out = None if g is None else g[key]
    return vspace(x).zeros() if out is None else out


defvjp_argnums_direct(
    make_sequence,
    lambda argnums, g, g_owned, ans, args, kwargs: _tuple(
        [_element_cotangent(g, k - 1, args[k]) for k in argnums]
    ),
)


@primitive
def make_dict(keys, *values):
    """The dict of keys and values: traced when a value is traced."""
    return _dict(zip(keys, values))


defvjp_argnums_direct(
    make_dict,
    lambda argnums, g, g_owned, ans, args, kwargs: _tuple(
        [_element_cotangent(g, args[0][k - 1], args[k]) for k in argnums]
    ),
)


def fwd_grad_make_sequence(argnum, g, ans, seq_type, *args, **kwargs):
    """The tangent of make_sequence for a tangent g of element argnum - 1."""
    return container_untake(g, argnum - 1, vspace(ans))


def _container_tangent(argnums, gs, ans, keys):
    """The tangent of a traced container: each element's tangent (zero for elements whose
    argument has none); keys[i] is the element of argument position i + 1."""
    given = dict(zip(argnums, gs))
    if _isinstance(ans, _dict):
        return {
            k: given[i + 1] if i + 1 in given else vspace(ans[k]).zeros()
            for i, k in enumerate(keys)
        }
    return _type(ans)(
        [given[i + 1] if i + 1 in given else vspace(v).zeros() for i, v in enumerate(ans)]
    )


defjvp_argnums(
    make_sequence,
    lambda argnums, gs, ans, args, kwargs: _container_tangent(argnums, gs, ans, range(len(ans))),
)
defjvp_argnums(
    make_dict, lambda argnums, gs, ans, args, kwargs: _container_tangent(argnums, gs, ans, args[0])
)
