"""One test record per reduction-shaped operator: the functions that take NumPy's axis= (and
keepdims=, dtype=) arguments, whose rules live in gradcy/numpy/reductions.py (sum, mean, prod,
max, min, ptp and their nan variants), statistics.py (var, std, median, average and their nan
variants) and calculus.py (cumsum, cumprod and their nan variants). Read by the checks they
share (reduction_cases.py, run by test_reductions.py, test_statistics.py and test_calculus.py
over their family), the dtype sweep (test_dtype_sweep.py), the property tests
(test_hypothesis.py), the extrema's saved positions (test_saved_sets.py) and the functions
autograd never differentiated (test_numpy_coverage.py).

Fields of a record:
  name      the gradcy.numpy name
  family    the rules' file: "reductions", "statistics" or "calculus" (cumulative: the output
            has the input's shape, axis= is one int, no keepdims=)
  kink      where the function is not differentiable: None (nowhere), "ties" (it picks entries:
            checked on data without ties, ties split evenly) or "constant" (at a group of
            equal entries, as std's square root of 0)
  positive  the derivative checks draw positive data (products of many entries)
  complex   the dtype sweep differentiates it for complex dtypes too
  saved     what its record keeps for the backward pass (argument positions and "ans") when
            called as f(x, 1) with x traced; "ans" of the extrema is a bit mask of positions
  autograd  autograd differentiates it (the others are checked in test_numpy_coverage.py)
  bound     for the property tests' programs: the bound of |output| from the bound b of
            |input| and the number n of entries reduced (None: not drawn there)
The nan variants (nan = True) are those whose name is "nan" + the plain function's.

The quantiles (QUANTILES: quantile, percentile and their nan variants, statistics.py) take q
besides: their records give the range of q the checks draw from (its low end where one q is
needed); they sort real data only, and autograd has none of them.
"""

from dataclasses import dataclass


@dataclass(frozen=True)
class Reduction:
    name: str
    family: str
    saved: tuple
    kink: str = None
    positive: bool = False
    complex: bool = True
    autograd: bool = False
    bound: object = None

    @property
    def nan(self):
        return self.name.startswith("nan")

    @property
    def plain(self):
        """The function without nan handling (the nan variant's reference)."""
        return self.name[3:] if self.nan else self.name

    @property
    def picks(self):
        """It picks entries (max, median, ...): checked on data without ties."""
        return self.kink == "ties"

    @property
    def cumulative(self):
        return self.family == "calculus"


def _r(name, saved=(), **kw):
    return Reduction(name, "reductions", tuple(saved), **kw)


def _s(name, saved=(), **kw):
    return Reduction(name, "statistics", tuple(saved), **kw)


def _c(name, saved=(), **kw):
    return Reduction(name, "calculus", tuple(saved), **kw)


# max and friends keep the chosen positions (a bit mask) in the output's place
RECORDS = [
    _r("sum", autograd=True, bound=lambda b, n: b * n),
    _r("mean", autograd=True, bound=lambda b, n: b),
    _r("prod", ("ans", 0), positive=True, autograd=True, bound=lambda b, n: max(b, 1.0) ** n),
    _r("max", ("ans",), kink="ties", complex=False, autograd=True, bound=lambda b, n: b),
    _r("min", ("ans",), kink="ties", complex=False, autograd=True, bound=lambda b, n: b),
    _r("ptp", (0,), kink="ties", complex=False),
    _r("nansum", (0,)),
    _r("nanmean", (0,)),
    _r("nanprod", ("ans", 0), positive=True),
    _r("nanmax", ("ans",), kink="ties", complex=False),
    _r("nanmin", ("ans",), kink="ties", complex=False),
    _s("var", (0,), autograd=True, bound=lambda b, n: b * b),
    _s("std", ("ans", 0), kink="constant", autograd=True, bound=lambda b, n: b),
    _s("median", ("ans",), kink="ties", complex=False),
    _s("average", (0,)),
    _s("nanvar", (0,)),
    _s("nanstd", ("ans", 0), kink="constant"),
    _s("nanmedian", ("ans",), kink="ties", complex=False),
    _c("cumsum", autograd=True, bound=lambda b, n: b * n),
    _c("cumprod", ("ans", 0), positive=True),
    _c("nancumsum", (0,)),
    _c("nancumprod", ("ans", 0), positive=True),
]
REDUCTION = {r.name: r for r in RECORDS}
assert len(REDUCTION) == len(RECORDS), "one record per operator"


def names(family=None, **facts):
    """The names of the records of `family` (all families if None) whose fields (or properties)
    equal `facts`, in the records' order."""
    return [
        r.name
        for r in RECORDS
        if (family is None or r.family == family)
        and all(getattr(r, k) == v for k, v in facts.items())
    ]


@dataclass(frozen=True)
class Quantile:
    name: str
    q: tuple

    @property
    def nan(self):
        return self.name.startswith("nan")


QUANTILES = [
    Quantile("quantile", (0.2, 0.8)),
    Quantile("nanquantile", (0.2, 0.8)),
    Quantile("percentile", (20.0, 80.0)),
    Quantile("nanpercentile", (20.0, 80.0)),
]
