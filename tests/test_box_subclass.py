"""Box subclasses for value types of the user's own (autograd's pattern, as in its example
rkhs.py): ``class PointBox(Box, Point)``, ``PointBox.register(Point)``,
``PointVSpace.register(Point)``, primitives that are methods of Point. Gradients with respect
to a Point are Points, checked against central differences."""

import math

import numpy as onp
import pytest

import gradcy.numpy as np
from gradcy import grad
from gradcy.extend import Box, VSpace, defvjp, primitive, vspace
from gradcy.tracer import getval, isbox


class Point:
    """A point (a, b) of the plane: a value type gradcy does not know."""

    def __init__(self, a, b):
        self.a = a
        self.b = b

    @primitive
    def energy(self, k):
        """k * a**2 + sin(b): a method that is a primitive."""
        return k * self.a**2 + math.sin(self.b)

    def __add__(self, other):
        return vspace(self).add(self, other)

    def __mul__(self, c):
        return vspace(self).scalar_mul(self, c)

    def __repr__(self):
        return f"Point({self.a!r}, {self.b!r})"


defvjp(
    Point.energy,
    lambda ans, p, k: lambda g: Point(g * 2 * k * p.a, g * math.cos(p.b)),
    lambda ans, p, k: lambda g: g * p.a**2,
)


@primitive
def shift(p, c):
    """A primitive returning a Point: (a + c, b * c)."""
    return Point(p.a + c, p.b * c)


defvjp(
    shift,
    lambda ans, p, c: lambda g: Point(g.a, g.b * c),
    lambda ans, p, c: lambda g: g.a + g.b * p.b,
)


class PointBox(Box, Point):
    @property
    def a_value(self):
        return self._value.a


PointBox.register(Point)


class PointVSpace(VSpace):
    def __init__(self, value):
        pass

    def zeros(self):
        return Point(0.0, 0.0)

    def _add(self, x, y):
        return Point(x.a + y.a, x.b + y.b)

    def _scalar_mul(self, x, c):
        return Point(x.a * c, x.b * c)

    def _inner_prod(self, x, y):
        return x.a * y.a + x.b * y.b


PointVSpace.register(Point)


def _fd(f, p, eps=1e-6):
    """Central differences of f at p, as a Point."""
    da = (f(Point(p.a + eps, p.b)) - f(Point(p.a - eps, p.b))) / (2 * eps)
    db = (f(Point(p.a, p.b + eps)) - f(Point(p.a, p.b - eps))) / (2 * eps)
    return Point(da, db)


def _loss(p):
    # the leaf is used three times (its cotangents add through the VSpace), once through a
    # primitive that returns a Point (a traced PointBox in the middle of the graph)
    q = shift(p, 1.5)
    return p.energy(3.0) * np.sin(p.energy(0.5)) + q.energy(2.0) ** 2


def test_traced_point_is_the_registered_subclass():
    seen = []

    def f(p):
        seen.append((type(p), isbox(p), getval(p)))
        q = shift(p, 2.0)
        seen.append((type(q), isbox(q)))
        return p.energy(1.0) + q.energy(1.0)

    p = Point(0.3, -0.7)
    grad(f)(p)
    assert seen[0][:2] == (PointBox, True) and seen[0][2] is p
    assert seen[1] == (PointBox, True)
    assert PointBox in Box.types and Box.type_mappings[Point] is PointBox


def test_grad_wrt_point_matches_finite_differences():
    p = Point(0.4, 1.1)
    g = grad(_loss)(p)
    assert type(g) is Point
    fd = _fd(_loss, p)
    assert g.a == pytest.approx(fd.a, rel=1e-7) and g.b == pytest.approx(fd.b, rel=1e-7)
    # the value is exactly the plain program's
    assert grad(_loss)(p).a == g.a


def test_grad_wrt_other_argument_with_point_constant():
    p = Point(0.4, 1.1)

    def f(k):
        return p.energy(k) * k

    k = 0.7
    eps = 1e-6
    assert grad(f)(k) == pytest.approx((f(k + eps) - f(k - eps)) / (2 * eps), rel=1e-7)


def test_subclass_property_reads_the_value():
    got = []
    grad(lambda p: (got.append(p.a_value), p.energy(1.0))[1])(Point(2.5, 0.0))
    assert got == [2.5]


def test_gradient_of_unused_point_is_vspace_zeros():
    g = grad(lambda p, x: x * 2.0)(Point(1.0, 2.0), 3.0)
    assert type(g) is Point and (g.a, g.b) == (0.0, 0.0)


def test_ordinary_arrays_keep_the_plain_box():
    seen = []
    grad(lambda x: (seen.append(type(x)), np.sum(x**2))[1])(onp.ones(3))
    assert seen == [Box]


def test_register_non_type_raises():
    with pytest.raises(TypeError, match=r"PointBox\.register: value_type must be a class"):
        PointBox.register(Point(1.0, 2.0))


@pytest.mark.parametrize("native", [onp.ndarray, float, onp.float64, tuple, list, dict])
def test_register_subclass_for_natively_traced_type_raises(native):
    with pytest.raises(TypeError, match=r"gradcy traces .* with its own Box"):
        PointBox.register(native)
    assert Box.type_mappings.get(native) is None


def test_box_register_is_a_no_op():
    # autograd's ArrayBox.register(np.ndarray) (ArrayBox is Box in gradcy)
    Box.register(onp.ndarray)
    assert onp.ndarray not in Box.type_mappings


def test_register_on_non_box_class_raises():
    with pytest.raises(TypeError, match="not a subclass of gradcy's Box"):
        Box.register.__func__(Point, Point)


def test_grad_wrt_unregistered_type_names_the_argument_and_the_fix():
    class Other:
        pass

    with pytest.raises(TypeError, match=r"argument 0 is a Other.*MyBox\.register\(T\)"):
        grad(lambda o: 1.0)(Other())


def test_grad_wrt_type_with_a_box_but_no_vspace_raises():
    class NoSpace:
        pass

    class NoSpaceBox(Box):
        pass

    NoSpaceBox.register(NoSpace)
    with pytest.raises(TypeError, match=r"argument 1 is a NoSpace.*MyVSpace\.register\(T\)"):
        grad(lambda x, o: x, argnum=1)(1.0, NoSpace())


def test_vspace_of_traced_point():
    spaces = []
    grad(lambda p: (spaces.append(vspace(p)), p.energy(1.0))[1])(Point(1.0, 2.0))
    assert type(spaces[0]) is PointVSpace
