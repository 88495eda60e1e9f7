"""One test record per elementwise operator, read by every test that needs a fact about it (as
JAX's LAX_GRAD_OPS is): the derivative checks (test_elementwise.py), the dtype sweep
(test_dtype_sweep.py), the C rules' comparison (test_elementwise_fast.py) and the property
tests' programs (test_hypothesis.py). A new operator is one record here; a fact about an
operator is written once.

Fields of a record:
  name     the gradcy.numpy name
  inputs   per argument, how the derivative checks draw it: "normal" (standard normal),
           "nonzero" (|x| in [0.3, 1.5], either sign) or (lo, hi) (uniform)
  sweep    (lo, hi): the dtype sweep's range, where the function is smooth in float16 and, if
           `complex`, for complex inputs near the real axis
  complex  the sweep differentiates it for complex dtypes too
  swept    the arguments the dtype sweep differentiates
  saved    what its record keeps for the backward pass: argument positions and "ans"
  fast     the arguments whose VJP is a C ElementwiseRule (gradcy._rules)
  integer  the arguments that take integers (not differentiated, not drawn as floats)
  grows    for the property tests' programs: the bound of |output| from the bounds of
           |arguments| (one per argument), each argument in its domain and, where that is not
           "normal", at least 0.5 away from zero (None: not drawn there)
  picks    the output is one of the arguments' entries (maximum, where): broadcast copies of
           an argument make equal entries, where later extrema are not differentiable
"""

import math
from dataclasses import dataclass

import numpy as onp

from vjp_harness import rand


def away_from_zero(*shape, seed=0):
    """Seeded float64 data with |x| in [0.3, 1.5], either sign."""
    rs = onp.random.RandomState(seed + 7)
    return rs.choice([-1.0, 1.0], size=shape) * rs.uniform(0.3, 1.5, size=shape)


@dataclass(frozen=True)
class Elementwise:
    name: str
    inputs: tuple
    saved: frozenset
    sweep: tuple = (0.3, 0.9)
    complex: bool = True
    swept: tuple = None
    fast: tuple = ()
    integer: tuple = ()
    grows: object = None
    picks: bool = False

    @property
    def nargs(self):
        return len(self.inputs)

    def draw(self, arg, shape, seed):
        """Seeded float64 data for argument `arg` of the derivative checks."""
        kind = self.inputs[arg]
        if kind == "normal":
            return rand(*shape, seed=seed)
        if kind == "nonzero":
            return away_from_zero(*shape, seed=seed)
        return rand(*shape, seed=seed, low=kind[0], high=kind[1])


def _unary(name, saved=(), inputs="normal", **kw):
    return Elementwise(name, (inputs,), frozenset(saved), **kw)


def _binary(name, saved=(), x="normal", y="normal", **kw):
    return Elementwise(name, (x, y), frozenset(saved), **kw)


POSITIVE = (0.4, 2.0)
UNIT = (-0.8, 0.8)

RECORDS = [
    _unary("negative", fast=(0,), grows=lambda b: b),
    _unary("positive"),
    _unary("sqrt", {"ans"}, POSITIVE, grows=math.sqrt),
    _unary("cbrt", {"ans"}, "nonzero", complex=False, grows=lambda b: b ** (1 / 3)),
    _unary("square", {0}, grows=lambda b: b * b),
    _unary("reciprocal", {"ans"}, POSITIVE, grows=lambda b: 2.0),
    _unary("exp", {"ans"}, fast=(0,), grows=math.exp),
    _unary("exp2", {"ans"}, grows=lambda b: 2.0**b),
    _unary("expm1", {"ans"}, grows=math.exp),
    _unary("log", {0}, POSITIVE, grows=lambda b: max(math.log(b), 0.7)),
    _unary("log2", {0}, POSITIVE, grows=lambda b: max(math.log2(b), 1.0)),
    _unary("log10", {0}, POSITIVE),
    _unary("log1p", {0}, (-0.6, 2.0), grows=math.log1p),
    _unary("sin", {0}, fast=(0,), grows=lambda b: 1.0),
    _unary("cos", {0}, fast=(0,), grows=lambda b: 1.0),
    _unary("tan", {"ans"}, (-1.2, 1.2)),
    _unary("arcsin", {0}, UNIT, sweep=(0.2, 0.8)),
    _unary("arccos", {0}, UNIT, sweep=(0.2, 0.8)),
    _unary("arctan", {0}, sweep=(0.2, 0.9), grows=lambda b: 1.6),
    _unary("sinh", {0}, fast=(0,), grows=math.sinh),
    _unary("cosh", {0}, fast=(0,), grows=math.cosh),
    _unary("tanh", {"ans"}, fast=(0,), grows=lambda b: 1.0),
    _unary("arcsinh", {0}, sweep=(0.2, 0.9), grows=math.asinh),
    _unary("arccosh", {0}, (1.3, 3.0), sweep=(1.2, 2.0)),
    _unary("arctanh", {0}, UNIT, sweep=(0.2, 0.8)),
    _unary("absolute", {0}, "nonzero", grows=lambda b: b),
    _unary("fabs", {0}, "nonzero", complex=False),
    _unary("sinc", {0}, "nonzero"),
    _unary("deg2rad", complex=False),
    _unary("rad2deg", complex=False),
    _unary("degrees", complex=False),
    _unary("radians", complex=False),
    _unary("conjugate"),
    _unary("real"),
    _unary("imag"),
    _unary("angle", {0}, "nonzero"),
    _unary("nan_to_num", {0}),
    _binary("add", fast=(0, 1), grows=lambda b, c: b + c),
    _binary("subtract", fast=(0, 1), grows=lambda b, c: b + c),
    _binary("multiply", {0, 1}, fast=(0, 1), grows=lambda b, c: b * c),
    _binary("divide", {0, 1}, y="nonzero", fast=(0,), grows=lambda b, c: 2 * b),
    _binary("power", {0, 1}, x=(0.5, 2.0), sweep=(0.5, 1.5), grows=lambda b, c: max(b, 2.0) ** c),
    _binary("float_power", {0, 1}, x=(0.5, 2.0), sweep=(0.5, 1.5)),
    _binary("logaddexp", {"ans", 0, 1}, complex=False, grows=lambda b, c: max(b, c) + 0.7),
    _binary("logaddexp2", {"ans", 0, 1}, complex=False),
    _binary("arctan2", {0, 1}, x="nonzero", y="nonzero", complex=False, grows=lambda b, c: 3.2),
    _binary(
        "hypot", {"ans", 0, 1}, x="nonzero", y="nonzero", complex=False, grows=lambda b, c: b + c
    ),
    # maximum and friends keep bit masks (a Positions array) in the output's place
    _binary("maximum", {"ans"}, complex=False, grows=lambda b, c: max(b, c), picks=True),
    _binary("minimum", {"ans"}, complex=False, grows=lambda b, c: max(b, c), picks=True),
    _binary("fmax", {"ans"}, complex=False, picks=True),
    _binary("fmin", {"ans"}, complex=False, picks=True),
    _binary("fmod", {0, 1}, y="nonzero", complex=False),
    _binary("remainder", {0, 1}, y="nonzero", complex=False),
    _binary("copysign", {0, 1}, x="nonzero", complex=False, swept=(0,)),
    _binary("heaviside", {0}, x="nonzero", complex=False, swept=(1,)),
    _binary("ldexp", {1}, complex=False, integer=(1,)),
    Elementwise("clip", ("normal",) * 3, frozenset({0, 1, 2}), complex=False, picks=True),
    Elementwise("where", ("normal",) * 3, frozenset({0}), picks=True),
]
ELEMENTWISE = {r.name: r for r in RECORDS}
assert len(ELEMENTWISE) == len(RECORDS), "one record per operator"

# the names each generic check runs over
UNARY = [r.name for r in RECORDS if r.nargs == 1]
BINARY = [r.name for r in RECORDS if r.nargs == 2]
FAST = [r.name for r in RECORDS if r.fast]
