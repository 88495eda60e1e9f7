"""Vector spaces of values: what a gradient of a value looks like.

vspace(value) describes the space a value lives in (an array's shape and dtype, or a container
of such spaces) and builds elements of it: zeros(), ones(), randn(), standard_basis(). Its
operations (add, scalar_mul, inner_prod, covector, flatten, unflatten) are written with
gradcy.numpy, so they are differentiable when applied to traced values.

SparseObject(vs, mut_add) is a cotangent held lazily: `mut_add(dense)` adds it into a dense
element `dense` of `vs` (in place when it can) and returns the sum. A VJP rule may return one
(e.g. the cotangent of one element of a large container); the tape adds it into the dense
cotangent of the value, or materializes it (np.asarray) where a dense value is needed.
"""

from typing import Any

import numpy as _np

from ._core import Box
from ._pytree import flatten

__all__ = [
    "vspace",
    "VSpace",
    "ArrayVSpace",
    "ComplexArrayVSpace",
    "ContainerVSpace",
    "SequenceVSpace",
    "ListVSpace",
    "TupleVSpace",
    "DictVSpace",
    "NamedTupleVSpace",
    "SparseObject",
    "container_cotangent",
]


def _getval(x):
    while type(x) is Box:
        x = x._value
    return x


def vspace(value: Any) -> "VSpace":
    """The vector space of `value` (an array, scalar, tuple/list/dict of these, a traced value,
    or a SparseObject)."""
    maker = VSpace.mappings.get(type(value))
    if maker is not None:
        return maker(value)
    if isinstance(value, Box):  # (a registered Box subclass too)
        return vspace(value._value)
    if isinstance(value, tuple) and hasattr(type(value), "_fields"):
        return NamedTupleVSpace(value)
    for base, maker in _BASE_MAKERS:
        if isinstance(value, base):
            return maker(value)
    raise TypeError(
        f"vspace: no vector space for a value of type {type(value).__name__} "
        f"({value!r}); expected a float or complex array or scalar, or a "
        f"tuple/list/dict of these"
    )


class VSpace:
    """A vector space. Subclasses define zeros/ones/randn/standard_basis and the underscore
    operations; the public operations below are those of autograd's VSpace."""

    mappings: dict[type, Any] = {}  # value type -> VSpace class or maker
    iscomplex = False

    def __init__(self, value):
        pass

    # ---- elements -----------------------------------------------------------------------
    def zeros(self):
        raise NotImplementedError(repr(self))

    def ones(self):
        raise NotImplementedError(repr(self))

    def randn(self):
        raise NotImplementedError(repr(self))

    def standard_basis(self):
        raise NotImplementedError(repr(self))

    # ---- operations ---------------------------------------------------------------------
    def add(self, x, y):
        return self._add(x, y)

    def mut_add(self, x_prev, x_new):
        """x_prev + x_new, in place into x_prev when it is a plain array (None = zeros)."""
        if x_prev is None:
            x_prev = self.zeros()
        if type(x_new) is SparseObject:
            return x_new.mut_add(x_prev)
        return self._mut_add(x_prev, x_new)

    def scalar_mul(self, x, a):
        return self._scalar_mul(x, a)

    def inner_prod(self, x, y):
        """The real inner product <x, y> (for complex spaces, Re(sum(conj(x) * y)))."""
        return self._inner_prod(x, y)

    def covector(self, x):
        """The element paired with x by the inner product (conj(x) for complex spaces)."""
        return self._covector(x)

    def flatten(self, x):
        """x as a 1-D array (differentiable)."""
        return flatten(x)[0]

    def unflatten(self, v):
        """The element of this space whose flatten() is the 1-D array v (differentiable)."""
        return flatten(self.zeros())[1](v)

    def examples(self):
        """A few elements (zeros, ones, a random one), for tests."""
        return [self.zeros(), self.ones(), self.randn()]

    # ---- defaults -----------------------------------------------------------------------
    def _add(self, x, y):
        return x + y

    def _mut_add(self, x, y):
        if type(y) is SparseObject:
            return y.mut_add(x)
        if type(x) is _np.ndarray and type(y) is not Box and x.flags.writeable:
            x += y
            return x
        return x + y

    def _scalar_mul(self, x, a):
        return x * a

    def _inner_prod(self, x, y):
        raise NotImplementedError(repr(self))

    def _covector(self, x):
        return x

    # ---- identity -----------------------------------------------------------------------
    def __eq__(self, other):
        return type(self) is type(other) and vars(self) == vars(other)

    def __ne__(self, other):
        return not self == other

    def __hash__(self):
        return hash((type(self), repr(self)))

    def __repr__(self):
        return f"{type(self).__name__}({vars(self)})"

    @classmethod
    def register(cls, value_type, vspace_maker=None):
        """Make vspace(v) for values of exactly `value_type` return vspace_maker(v) (default:
        this class)."""
        VSpace.mappings[value_type] = vspace_maker if vspace_maker is not None else cls


# =============================================================================
# Arrays and scalars
# =============================================================================
class ArrayVSpace(VSpace):
    """Real arrays and scalars of one shape and dtype."""

    def __init__(self, value):
        value = _np.asarray(_getval(value))
        self.shape = value.shape
        self.dtype = value.dtype

    @property
    def size(self):
        return int(_np.prod(self.shape, dtype=_np.int64))

    @property
    def ndim(self):
        return len(self.shape)

    def zeros(self):
        return _np.zeros(self.shape, self.dtype)

    def ones(self):
        return _np.ones(self.shape, self.dtype)

    def randn(self):
        return _np.asarray(_np.random.randn(*self.shape)).astype(self.dtype)

    def standard_basis(self):
        for idx in _np.ndindex(*self.shape):
            e = _np.zeros(self.shape, self.dtype)
            e[idx] = 1
            yield e

    def _inner_prod(self, x, y):
        return _np.dot(_np.ravel(x), _np.ravel(y))


class ComplexArrayVSpace(ArrayVSpace):
    """Complex arrays and scalars: a real space of twice the size."""

    iscomplex = True

    @property
    def size(self):
        return 2 * int(_np.prod(self.shape, dtype=_np.int64))

    def ones(self):
        return _np.full(self.shape, 1 + 1j, self.dtype)

    def randn(self):
        re = _np.asarray(_np.random.randn(*self.shape)).astype(self.dtype)
        im = _np.asarray(_np.random.randn(*self.shape)).astype(self.dtype)
        return re + 1j * im

    def standard_basis(self):
        for idx in _np.ndindex(*self.shape):
            for unit in (1.0, 1.0j):
                e = _np.zeros(self.shape, self.dtype)
                e[idx] = unit
                yield e

    def _inner_prod(self, x, y):
        return _np.real(_np.dot(_np.conj(_np.ravel(x)), _np.ravel(y)))

    def _covector(self, x):
        return _np.conj(x)


def _array_vspace(x):
    return ComplexArrayVSpace(x) if _np.iscomplexobj(x) else ArrayVSpace(x)


VSpace.register(_np.ndarray, _array_vspace)
for _t in (float, _np.float64, _np.float32, _np.float16, _np.longdouble):
    ArrayVSpace.register(_t)
for _c in (complex, _np.complex128, _np.complex64, _np.clongdouble):
    ComplexArrayVSpace.register(_c)


# =============================================================================
# Containers
# =============================================================================
class ContainerVSpace(VSpace):
    """The product of the spaces of a container's elements; `shape` is the container of those
    spaces."""

    def __init__(self, value):
        self.shape = self._map_values(vspace, self._elements(value))

    def _elements(self, value):
        value = _getval(value)
        return value

    @property
    def size(self):
        return sum(vs.size for vs in self._values(self.shape))

    def zeros(self):
        return self._map(lambda vs: vs.zeros())

    def ones(self):
        return self._map(lambda vs: vs.ones())

    def randn(self):
        return self._map(lambda vs: vs.randn())

    def standard_basis(self):
        zero = self.zeros()
        for k, vs in self._items(self.shape):
            for e in vs.standard_basis():
                yield self._subval(zero, k, e)

    def _add(self, xs, ys):
        return self._map(lambda vs, x, y: vs._add(x, y), xs, ys)

    def _mut_add(self, xs, ys):
        return self._map(lambda vs, x, y: vs._mut_add(x, y), xs, ys)

    def _scalar_mul(self, xs, a):
        return self._map(lambda vs, x: vs._scalar_mul(x, a), xs)

    def _inner_prod(self, xs, ys):
        total = 0.0
        for p in self._values(self._map(lambda vs, x, y: vs._inner_prod(x, y), xs, ys)):
            total = total + p
        return total

    def _covector(self, xs):
        return self._map(lambda vs, x: vs._covector(x), xs)


class SequenceVSpace(ContainerVSpace):
    seq_type: type = tuple

    def _map_values(self, f, value):
        return self.seq_type([f(v) for v in value])

    def _values(self, x):
        return x

    def _items(self, x):
        return enumerate(x)

    def _elems(self, x):
        if type(x) is Box:  # a traced sequence: its elements, traced
            return [x[i] for i in range(len(x))]
        return x

    def _map(self, f, *xs):
        xs = [self._elems(x) for x in xs]
        return self.seq_type([f(vs, *[x[i] for x in xs]) for i, vs in enumerate(self.shape)])

    def _subval(self, xs, i, v):
        out = list(xs)
        out[i] = v
        return self.seq_type(out)


class ListVSpace(SequenceVSpace):
    seq_type = list


class TupleVSpace(SequenceVSpace):
    seq_type = tuple


class NamedTupleVSpace(SequenceVSpace):
    """Named tuples (numpy.linalg's EighResult, SVDResult, ...)."""

    def __init__(self, value):
        value = _getval(value)
        self.seq_type = type(value)
        self.shape = [vspace(v) for v in value]

    def _map(self, f, *xs):
        xs = [self._elems(x) for x in xs]
        return self.seq_type(*[f(vs, *[x[i] for x in xs]) for i, vs in enumerate(self.shape)])

    def _subval(self, xs, i, v):
        out = list(xs)
        out[i] = v
        return self.seq_type(*out)


class DictVSpace(ContainerVSpace):
    def _map_values(self, f, value):
        return {k: f(v) for k, v in value.items()}

    def _values(self, x):
        return x.values()

    def _items(self, x):
        return x.items()

    def _map(self, f, *xs):
        return {k: f(vs, *[x[k] for x in xs]) for k, vs in self.shape.items()}

    def _subval(self, xs, k, v):
        out = dict(xs)
        out[k] = v
        return out


ListVSpace.register(list)
TupleVSpace.register(tuple)
DictVSpace.register(dict)

# scalar and array types not registered exactly (subclasses, other numpy scalar types)
_BASE_MAKERS = [
    (_np.ndarray, _array_vspace),
    (_np.floating, ArrayVSpace),
    (_np.complexfloating, ComplexArrayVSpace),
    (list, ListVSpace),
    (tuple, TupleVSpace),
    (dict, DictVSpace),
]


# =============================================================================
# Sparse cotangents
# =============================================================================
class SparseObject:
    """A cotangent in space `vs`, represented by `mut_add(dense)`: a function that adds it into
    a dense element of vs (in place when it can) and returns the result.

    The tape accumulates it like any cotangent: adding it to a dense cotangent (either order)
    calls mut_add on a fresh copy, so no array the caller owns is modified; np.asarray(obj)
    (and obj.densify()) give the dense value, which is what reaches a leaf's gradient."""

    __slots__ = ("vs", "mut_add")

    def __init__(self, vs, mut_add):
        self.vs = vs
        self.mut_add = mut_add

    def densify(self):
        """The dense cotangent."""
        return self.mut_add(self.vs.zeros())

    # array-like metadata of the dense value (for rules that read g.shape / g.dtype)
    @property
    def shape(self):
        return self.vs.shape

    @property
    def dtype(self):
        return self.vs.dtype

    @property
    def ndim(self):
        return self.vs.ndim

    def __array__(self, dtype=None, copy=None):
        dense = _np.asarray(self.densify())
        return dense if dtype is None else dense.astype(dtype)

    def __add__(self, other):
        if other is None:
            return self.densify()
        if type(other) is SparseObject:
            return other.mut_add(self.densify())
        if type(other) is Box:
            # traced dense cotangent (higher-order differentiation): add the dense value as a
            # constant through the traced add, which keeps the dependence on `other`
            return _np.add(other, self.densify())
        return self.mut_add(self.vs.mut_add(None, other))  # into a fresh copy of `other`

    __radd__ = __add__

    def __repr__(self):
        return f"SparseObject({self.vs!r})"


VSpace.register(SparseObject, lambda x: x.vs)


# =============================================================================
# The cotangent of a container value, as a VJP written for autograd receives it
# =============================================================================
def _zeros_of(value):
    """Zeros of the space of `value` (an ArrayMeta where a record kept only shape and dtype)."""
    value = _getval(value)
    if type(value).__name__ == "ArrayMeta":
        return _np.zeros(value.shape, value.dtype)
    return vspace(value).zeros()


def _recording(x):
    """x is traced by a differentiation that is recording (not released, not in its backward
    pass): an outer differentiation of a higher-order one."""
    return isinstance(x, Box) and not (x._tape.released or x._tape.sweeping)


def container_cotangent(g, ans):
    """The cotangent g of the container value `ans` as a VJP written for autograd's API receives
    it. gradcy's own rules take a container cotangent as a list or tuple with None for each
    element no cotangent reached; autograd's VJPs get an element of vspace(ans): the container
    type of `ans`, dense (zeros for those elements), and, when an element is traced by an outer
    differentiation that is recording (a higher-order derivative), one traced container (a
    SequenceBox / DictBox, as autograd's container_untake and sparse_add leave it), which
    libraries tell apart from a plain container (PennyLane's VJPs convert a plain container of
    traced values to plain values). A SparseObject (one element's cotangent) is made dense
    first, as autograd adds it into zeros before a VJP reads it."""
    if type(g) is SparseObject:
        g = g.densify()
    a = _getval(ans)
    if isinstance(a, dict) and type(g) is dict:
        keys = list(a)
        values = [container_cotangent(g.get(k), a[k]) for k in keys]
        if any(_recording(v) for v in values):
            from .builtins import make_dict

            return make_dict(tuple(keys), *values)
        return dict(zip(keys, values))
    if isinstance(a, (tuple, list)) and type(g) in (tuple, list) and len(g) == len(a):
        values = [container_cotangent(gi, ai) for gi, ai in zip(g, a)]
        seq_type = type(a)
        if hasattr(seq_type, "_fields"):  # a named tuple (EighResult, ...)
            return seq_type(*values)
        if seq_type is not tuple and seq_type is not list:
            seq_type = tuple if isinstance(a, tuple) else list
        if any(_recording(v) for v in values):
            from .builtins import make_sequence

            return make_sequence(seq_type, *values)
        return seq_type(values)
    if g is None:
        if _no_space(a):  # an integer or bool scalar gets zeros as an integer array does
            return _np.zeros_like(a) if isinstance(a, (int, _np.generic)) else None
        return _zeros_of(ans)
    return g


def _no_space(a):
    """An element of a container output no cotangent can reach (a Python or NumPy integer or
    bool scalar, None, a string): it has no vector space (autograd raises for it; an integer
    array's zeros are integer zeros)."""
    return (
        a is None
        or isinstance(a, (bool, int, str, _np.integer, _np.bool_))
        and type(a) not in VSpace.mappings
    )
