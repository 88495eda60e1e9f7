"""The dtype contract, swept over the whole operator table.

For every primitive with a VJP (found by walking gradcy's modules, as tests/test_registry.py
does), SPECS holds one or more representative calls (one per differentiated argument, and per
output for the functions that return tuples). Each is run for the input dtypes float16, float32,
float64, complex64, complex128 (the ones the function accepts: real-only functions skip complex,
LAPACK-backed ones skip float16) and the input kinds

    pyfloat   a Python float (complex for the complex dtypes; float64/complex128 only)
    npscalar  a NumPy scalar such as np.float32(0.5)
    0d        a 0-d ndarray
    nd        an n-d ndarray (small shapes)

(scalar kinds only where the function takes scalars), checking

  * make_vjp (and grad for real scalar outputs): the gradient has exactly the input's type,
    dtype and shape (Python float in -> float out, 0-d array in -> 0-d array out, float32 in
    -> float32 out);
  * the raw cotangent the tape delivers to the input (vjp_harness.raw_cotangent, before the
    front end's cast) has the input's dtype and shape: no float64 leak inside the backward
    pass;
  * make_jvp: the tangent has the output's type, dtype and shape (and so does the tangent
    on the forward tape); the traced call actually records the primitive the case is for.

test_every_primitive_has_a_sweep_entry fails when a primitive with a VJP has neither a spec
nor an entry in SKIPPED (so new primitives must be added here), when a spec or skip names a
primitive that does not exist, and when a differentiable argument of a primitive is swept by
no spec.
"""

import warnings
import zlib

import numpy as onp
import pytest

import gradcy.numpy as gnp
from gradcy import grad, make_jvp, make_vjp
from gradcy._core import Box, Tape
from gradcy._arguments import match_input
from gradcy.differential_operators import pack_outputs
from gradcy.misc.fixed_points import fixed_point
from gradcy.numpy import _wrap as W
from gradcy.numpy import fft as gfft, indexed_updates, indexing, inplace, products
from op_records.elementwise import ELEMENTWISE
from op_records.fft import RECORDS as FFT_RECORDS
from op_records.linalg import RECORDS as LINALG_RECORDS, draw as la_draw, spd, wellcond
from op_records.manipulation import RECORDS as MOVES_RECORDS
from op_records.products import RECORDS as PRODUCT_RECORDS
from op_records.sorting import RECORDS as SORTING_RECORDS
from op_records.reductions import QUANTILES, RECORDS as REDUCTION_RECORDS
from vjp_harness import NEP50, dtype_ok, primitives_with_vjps, raw_cotangent

try:
    import gradcy.scipy.integrate as gsi
    import gradcy.scipy.linalg as gsla
    import gradcy.scipy.signal as gss
    import gradcy.scipy.special as gsp
    import gradcy.scipy.stats as gst

    HAVE_SCIPY = True
except ImportError:  # optional extra
    HAVE_SCIPY = False

# This module registers no primitive and checks no derivative values, so it vouches for none in
# tests/test_registry.py (whose COVERED sets mean "numerically checked somewhere").
COVERED = set()

F16, F32, F64 = onp.dtype(onp.float16), onp.dtype(onp.float32), onp.dtype(onp.float64)
C64, C128 = onp.dtype(onp.complex64), onp.dtype(onp.complex128)
ALL = (F16, F32, F64, C64, C128)
REAL = (F16, F32, F64)
LAPACK = (F32, F64, C64, C128)  # numpy.linalg has no float16 loops
LAPACK_REAL = (F32, F64)
KINDS = ("pyfloat", "npscalar", "0d", "nd")


# =============================================================================
# Discovery (as tests/test_registry.py)
# =============================================================================
# =============================================================================
# Constants of the case's dtype
# =============================================================================
class Consts:
    """Constant arguments of a case, in the dtype of the differentiated input (float64 for a
    Python float, complex128 for a Python complex): K(shape, lo, hi) is seeded uniform data
    (with a small imaginary part for complex dtypes); K.spd(n), K.wellcond(n) structured
    matrices."""

    def __init__(self, dtype):
        self.dt = dtype
        self.complex = dtype.kind == "c"
        self._rs = onp.random.RandomState(1234)

    def _cast(self, v, imag=0.1):
        if self.complex:
            v = v + 1j * imag * self._rs.uniform(-1, 1, onp.shape(v))
        return onp.asarray(v, self.dt)

    def __call__(self, shape, lo=0.3, hi=0.9):
        return self._cast(self._rs.uniform(lo, hi, shape))

    def real(self, shape, lo=0.3, hi=0.9):
        """Real data of the real dtype matching the case's precision."""
        return onp.asarray(self._rs.uniform(lo, hi, shape), _real_dtype(self.dt))

    def wellcond(self, n, m=None):
        return onp.asarray(wellcond(self._rs, n, m, self.complex), self.dt)

    def spd(self, n):
        return onp.asarray(spd(self._rs, n, self.complex), self.dt)

    def of(self, kind, shape):
        """Data of a linalg record's kind (op_records/linalg.py draw())."""
        if kind == "uniform":
            return self(shape)
        return onp.asarray(la_draw(kind, self._rs, shape, self.complex), self.dt)


def _pick(result, k):
    """Output k of a tuple result (all of it for k None)."""
    return result if k is None else result[k]


def _real_dtype(dt):
    return onp.dtype(dt.char.lower()) if dt.kind == "c" else dt


# =============================================================================
# The table
# =============================================================================
class Spec:
    """One representative call: fn(x, K) with x the differentiated input (argument `argnum` of
    primitive `prim`), K the constants of the case's dtype. `shape` is x's n-d shape; x is
    drawn uniform in [lo, hi] or by gen(rs, shape, complex)."""

    __slots__ = ("prim", "label", "fn", "argnum", "shape", "lo", "hi", "kinds", "dtypes", "gen")

    def __init__(self, prim, label, fn, argnum, shape, lo, hi, kinds, dtypes, gen):
        self.prim, self.label, self.fn, self.argnum = prim, label, fn, argnum
        self.shape, self.lo, self.hi, self.kinds = shape, lo, hi, kinds
        self.dtypes, self.gen = dtypes, gen

    @property
    def id(self):
        return self.prim + self.label


SPECS = []
# functions new in NumPy 2: swept where the installed NumPy has them (1.26 names trapezoid trapz)
NUMPY2_NAMES = {
    "matrix_transpose",
    "unstack",
    "cumulative_sum",
    "cumulative_prod",
    "matvec",
    "vecmat",
    "vecdot",
    "linalg.vector_norm",
    "linalg.matrix_norm",
}
TRAPEZOID = "trapezoid" if hasattr(onp, "trapezoid") else "trapz"


def _numpy_has(name):
    mod, _, attr = name.rpartition(".")
    return hasattr(getattr(onp, mod) if mod else onp, attr)


def add(
    prim,
    fn,
    *,
    argnum=0,
    label=None,
    shape=(2, 3),
    lo=0.3,
    hi=0.9,
    scalar=True,
    dtypes=ALL,
    gen=None,
    kinds=None,
):
    """A spec; scalar=False: n-d input only (kinds: an explicit subset of KINDS)."""
    if prim in NUMPY2_NAMES and not _numpy_has(prim):
        return
    if not prim.startswith("gradcy."):
        prim = "gradcy.numpy." + prim
    if label is None:
        label = f"@{argnum}" if argnum else ""
    if kinds is None:
        kinds = KINDS if scalar else ("nd",)
    SPECS.append(
        Spec(prim, label, fn, argnum, tuple(shape), lo, hi, tuple(kinds), tuple(dtypes), gen)
    )


def gen_wellcond(rs, shape, complex_):
    return wellcond(rs, shape[-2], shape[-1], complex_)


def gen_spd(rs, shape, complex_):
    return spd(rs, shape[-1], complex_)


def gen_lower(rs, shape, complex_):
    return onp.tril(wellcond(rs, shape[-2], shape[-1], complex_))


# ---- elementwise: each operator's record (tests/op_records.py) gives its range, whether it
# is differentiated for complex dtypes, and which arguments; two arguments broadcast against a
# (3,) constant
for _r in ELEMENTWISE.values():
    _f, (_lo, _hi) = getattr(gnp, _r.name), _r.sweep
    _dt = ALL if _r.complex else REAL
    if _r.integer or _r.nargs > 2:
        continue
    if _r.nargs == 1:
        add(_r.name, lambda x, K, f=_f: f(x), lo=_lo, hi=_hi, dtypes=_dt)
        continue
    _swept = _r.swept or (0, 1)
    if 0 in _swept:
        add(
            _r.name,
            lambda x, K, f=_f, lo=_lo, hi=_hi: f(x, K((3,), lo, hi)),
            shape=(2, 1),
            lo=_lo,
            hi=_hi,
            dtypes=_dt,
        )
    if 1 in _swept:
        add(
            _r.name,
            lambda x, K, f=_f, lo=_lo, hi=_hi: f(K((2, 3), lo, hi), x),
            argnum=1,
            shape=(3,),
            lo=_lo,
            hi=_hi,
            dtypes=_dt,
        )
add("ldexp", lambda x, K: gnp.ldexp(x, onp.array([1, 2, 3])), shape=(2, 1), dtypes=REAL)
_COND = onp.array([True, False, True])
add("where", lambda x, K: gnp.where(_COND, x, K((3,))), argnum=1, shape=(2, 1))
add("where", lambda x, K: gnp.where(_COND, K((2, 3)), x), argnum=2, shape=(3,))
add("clip", lambda x, K: gnp.clip(x, 0.4, 0.8), shape=(2, 3), lo=0.2, hi=1.0, dtypes=REAL)
add("full", lambda x, K: gnp.full((2, 3), x), argnum=1, shape=(3,))
add("full_like", lambda x, K: gnp.full_like(K((2, 3)), x), argnum=1, shape=(3,))
add(
    "clip",
    lambda x, K: gnp.clip(K((2, 3), 0.0, 1.0), x, K((3,), 0.8, 0.9)),
    argnum=1,
    shape=(3,),
    lo=0.2,
    hi=0.4,
    dtypes=REAL,
)
add(
    "clip",
    lambda x, K: gnp.clip(K((2, 3), 0.0, 1.0), K((3,), 0.1, 0.2), x),
    argnum=2,
    shape=(3,),
    lo=0.6,
    hi=0.8,
    dtypes=REAL,
)


# ---- reductions: axis 1 of a (2, 3) array, axis None for scalars ----------------------------
def _ax(x):
    return 1 if gnp.ndim(x) >= 2 else None


# each operator's record (tests/op_records/reductions.py) says whether it is differentiated for
# complex dtypes; all but the cumulative ones take keepdims=
for _r in REDUCTION_RECORDS:
    _f, _dt = getattr(gnp, _r.name), ALL if _r.complex else REAL
    add(_r.name, lambda x, K, f=_f: f(x, _ax(x)), dtypes=_dt)
    if not _r.cumulative:
        add(
            _r.name,
            lambda x, K, f=_f: f(x, axis=0, keepdims=True),
            label=":keepdims",
            shape=(2, 3),
            scalar=False,
            dtypes=_dt,
        )
add("var", lambda x, K: gnp.var(x, 1, ddof=1), label=":ddof", scalar=False)
add("average", lambda x, K: gnp.average(K(gnp.shape(x)), _ax(x), x), argnum=2)
for _r in SORTING_RECORDS:  # tests/op_records/sorting.py
    add(_r.name, lambda x, K, r=_r: r.call(x), shape=_r.shape, scalar=False, dtypes=REAL)

# ---- shapes and indexing: each operator's record (tests/op_records/manipulation.py), then the
# other calls and the internal primitives
for _r in MOVES_RECORDS:
    add(
        _r.name,
        lambda x, K, r=_r: _pick(r.call(x), r.output),
        argnum=_r.argnum,
        shape=_r.shape,
        scalar=_r.scalar,
    )
add("repeat", lambda x, K: gnp.repeat(x, [1, 2], axis=0), label=":axis", scalar=False)
add("diag", lambda x, K: gnp.diag(x, 1), label=":2d", shape=(3, 3), scalar=False)
add("make_diagonal", lambda x, K: gnp.make_diagonal(x, 0, -1, -2), shape=(2, 3), scalar=False)
add("_wrap.container_take", lambda x, K: gnp.split(x, 2)[1], shape=(4,), scalar=False)
add("_wrap.getitem", lambda x, K: x[1:, ::2], scalar=False)
add("_wrap.getitem", lambda x, K: x[[0, 1, 1]], label=":fancy", shape=(3,), scalar=False)
add("_wrap.getitem", lambda x, K: x[()], label=":0d", kinds=("npscalar", "0d"))
add("_wrap.astype", lambda x, K: W.astype(x, C128 if gnp.iscomplexobj(x) else F64), label=":up")
add("_wrap.astype", lambda x, K: W.astype(x, C64 if gnp.iscomplexobj(x) else F32), label=":down")
add("_wrap.array_from_args", lambda x, K: gnp.array([x, K(gnp.shape(x))]))
add("_wrap.array_from_args", lambda x, K: gnp.array([K(gnp.shape(x)), x]), argnum=1)
add(
    "_wrap.concatenate_args",
    lambda x, K: gnp.concatenate([x, K((1, 3))]),
    argnum=1,
    shape=(2, 3),
    scalar=False,
)
add(
    "_wrap.concatenate_args", lambda x, K: gnp.stack([K(gnp.shape(x)), x]), label=":stack", argnum=2
)
add(
    "indexing.untake",
    lambda x, K: indexing.untake(x, [0, 0, 2], (4,), onp.dtype(x.dtype)),
    shape=(3,),
    scalar=False,
)
add(
    "indexing.unrepeat",
    lambda x, K: indexing.unrepeat(x, 3, None, (2, 2)),
    shape=(12,),
    scalar=False,
)
add(
    "products.diagonal_scatter",
    lambda x, K: products.diagonal_scatter(x, (3, 3), onp.dtype(x.dtype)),
    shape=(3,),
    scalar=False,
)
add("at_add", lambda x, K: indexed_updates.at_add(x, [0, 2, 2], K((3,))), shape=(4,), scalar=False)
add("at_add", lambda x, K: indexed_updates.at_add(K((4,)), [0, 2, 2], x), argnum=2, shape=(3,))
add("at_set", lambda x, K: indexed_updates.at_set(x, [0, 2], K((2,))), shape=(4,), scalar=False)
add("at_set", lambda x, K: indexed_updates.at_set(K((4,)), [0, 2], x), argnum=2, shape=(2,))
add(
    "strided_view",
    lambda x, K: inplace.strided_view(x, 1, (2,), (2 * x.itemsize,)),
    shape=(4,),
    scalar=False,
)
add(
    "whole_of",
    lambda x, K: inplace.whole_of(x[::-1], onp.arange(3, -1, -1)),
    shape=(4,),
    scalar=False,
)
add(
    "gradcy.differential_operators.pack_outputs", lambda x, K: pack_outputs(x, K((2,)))[0], label=""
)
# a gradient converted to its input's kind (a scalar broadcast to a (2, 3) input's shape)
add("gradcy.grad.match_input", lambda x, K: match_input(x, K((2, 3))))

# ---- the rest of gradcy.numpy (statistics, polynomials, ranges, selections, ...) -----------
for _n in ("asanyarray", "ascontiguousarray", "asfortranarray", "asarray_chkfinite", "require"):
    add(_n, lambda x, K, f=getattr(gnp, _n): f(x))
add("real_if_close", lambda x, K: gnp.real_if_close(x))
add("append", lambda x, K: gnp.append(x, K((3,))))
add("append", lambda x, K: gnp.append(K((2, 3)), x), argnum=1)
add("broadcast_arrays", lambda x, K: gnp.broadcast_arrays(x, K((3,)))[0], shape=(2, 1))
add("broadcast_arrays", lambda x, K: gnp.broadcast_arrays(K((2, 1)), x)[1], argnum=1, shape=(3,))
add("choose", lambda x, K: gnp.choose(onp.array([0, 1, 0]), x), argnum=1, scalar=False)
add(
    "choose",
    lambda x, K: gnp.choose(onp.array([0, 1, 0]), [x, K((3,))]),
    label=":list",
    argnum=1,
    shape=(3,),
    scalar=False,
)
add(
    "select",
    lambda x, K: gnp.select(
        [onp.array([True, False, False]), onp.array([False, True, False])], [x, K((3,))], 0.5
    ),
    argnum=1,
    shape=(3,),
    scalar=False,
)
add("select", lambda x, K: gnp.select([onp.array([True, False, False])], [K((3,))], x), argnum=2)
for _n in ("convolve", "correlate"):
    _f = getattr(gnp, _n)
    add(_n, lambda x, K, f=_f: f(x, K((4,)), "full"), shape=(3,), scalar=False)
    add(_n, lambda x, K, f=_f: f(K((4,)), x, "full"), argnum=1, shape=(3,), scalar=False)
add("cov", lambda x, K: gnp.cov(x), scalar=False)
add("cov", lambda x, K: gnp.cov(K((3,)), x), label=":y", argnum=1, shape=(3,), scalar=False)
add("corrcoef", lambda x, K: gnp.corrcoef(x), scalar=False, dtypes=REAL)  # complex: no rule
for _n in ("cumulative_sum", "cumulative_prod"):
    _f = getattr(gnp, _n, None)
    add(_n, lambda x, K, f=_f: f(x, axis=1), scalar=False)
    add(
        _n,
        lambda x, K, f=_f: f(x, include_initial=True),
        label=":initial",
        shape=(3,),
        scalar=False,
    )
add("delete", lambda x, K: gnp.delete(x, [0], axis=1), scalar=False)
add("diagflat", lambda x, K: gnp.diagflat(x), shape=(2, 2))
add("diff", lambda x, K: gnp.diff(x, 1, 1), scalar=False)
add("diff", lambda x, K: gnp.diff(K((2, 3)), 1, -1, x), argnum=3, shape=(2, 1), scalar=False)
add(
    "diff",
    lambda x, K: gnp.diff(K((2, 3)), 1, -1, K((2, 1)), x),
    argnum=4,
    shape=(2, 1),
    scalar=False,
)
add(
    "divmod",
    lambda x, K: gnp.divmod(x, K((3,), 0.2, 0.3))[1],
    label="[1]",
    shape=(2, 1),
    dtypes=REAL,
)
add(
    "divmod",
    lambda x, K: gnp.divmod(x, K((3,), 0.2, 0.3))[0],
    label="[0]",
    shape=(2, 1),
    dtypes=REAL,
)
add(
    "divmod",
    lambda x, K: gnp.divmod(K((2, 3)), x)[1],
    label="@1[1]",
    argnum=1,
    shape=(3,),
    lo=0.2,
    hi=0.3,
    dtypes=REAL,
)
add("ediff1d", lambda x, K: gnp.ediff1d(x), scalar=False)
add("ediff1d", lambda x, K: gnp.ediff1d(K((3,)), x), argnum=1)
add("ediff1d", lambda x, K: gnp.ediff1d(K((3,)), None, x), argnum=2)
add(
    "extract",
    lambda x, K: gnp.extract(onp.array([[True, False, True], [False, True, True]]), x),
    argnum=1,
    scalar=False,
)
add("frexp", lambda x, K: gnp.frexp(x)[0], label="[0]", dtypes=REAL)
add("modf", lambda x, K: gnp.modf(x)[0], label="[0]", lo=1.2, hi=1.9, dtypes=REAL)
add("nextafter", lambda x, K: gnp.nextafter(x, K((3,))), shape=(2, 1), dtypes=REAL)
for _n in ("linspace", "logspace", "geomspace"):
    _f = getattr(gnp, _n)
    add(
        _n,
        lambda x, K, f=_f: f(x, K((2,), 2.0, 3.0), 4),
        shape=(2,),
        lo=0.5,
        hi=1.0,
        dtypes=REAL if _n == "geomspace" else ALL,
    )
    add(
        _n,
        lambda x, K, f=_f: f(K((2,), 0.5, 1.0), x, 4),
        argnum=1,
        shape=(2,),
        lo=2.0,
        hi=3.0,
        dtypes=REAL if _n == "geomspace" else ALL,
    )
add("gradient", lambda x, K: gnp.gradient(x), shape=(4,), scalar=False)
add("i0", lambda x, K: gnp.i0(x), dtypes=REAL)
add("insert", lambda x, K: gnp.insert(x, 1, K((3,)), axis=0), scalar=False)
add("insert", lambda x, K: gnp.insert(K((2, 3)), 1, x, axis=0), argnum=2, shape=(3,))
_XP = onp.array([0.0, 0.4, 1.0])
add("interp", lambda x, K: gnp.interp(x, _XP, K((3,))), lo=0.1, hi=0.9, dtypes=REAL)
add(
    "interp",
    lambda x, K: gnp.interp(K((2,), 0.1, 0.9), x, K((3,))),
    argnum=1,
    shape=(3,),
    gen=lambda rs, shape, c: onp.sort(rs.uniform(0, 1, shape)) + onp.arange(3) * 0.3,
    scalar=False,
    dtypes=REAL,
)
add(
    "interp",
    lambda x, K: gnp.interp(K((2,), 0.1, 0.9), _XP, x),
    argnum=2,
    shape=(3,),
    scalar=False,
    dtypes=REAL,
)
add(
    "bincount",
    lambda x, K: gnp.bincount(onp.array([0, 2, 2]), x),
    argnum=1,
    shape=(3,),
    scalar=False,
    dtypes=REAL,
)
add("meshgrid", lambda x, K: gnp.meshgrid(x, K((3,)))[0], shape=(2,), scalar=False)
add("meshgrid", lambda x, K: gnp.meshgrid(K((3,)), x)[1], argnum=1, shape=(2,), scalar=False)
for _r in QUANTILES:  # tests/op_records/reductions.py: the range of q
    _f, _q = getattr(gnp, _r.name), _r.q
    add(_r.name, lambda x, K, f=_f, q=_q: f(x, q[0], axis=_ax(x)), dtypes=REAL)
    add(
        _r.name,
        lambda x, K, f=_f: f(K((2, 3)), x, axis=1),
        argnum=1,
        shape=(2,),
        lo=_q[0],
        hi=_q[1],
        dtypes=REAL,
    )
for _n in ("polyadd", "polysub", "polymul"):
    _f = getattr(gnp, _n)
    add(_n, lambda x, K, f=_f: f(x, K((2,))), shape=(3,), scalar=False)
    add(_n, lambda x, K, f=_f: f(K((3,)), x), argnum=1, shape=(2,), scalar=False)
add("polyder", lambda x, K: gnp.polyder(x), shape=(4,), scalar=False)
add("polyint", lambda x, K: gnp.polyint(x), shape=(3,), scalar=False)
add("polyval", lambda x, K: gnp.polyval(x, K((2,))), shape=(3,), scalar=False)
add("polyval", lambda x, K: gnp.polyval(K((3,)), x), argnum=1)
add("resize", lambda x, K: gnp.resize(x, (4, 2)), scalar=False)
add("sort_complex", lambda x, K: gnp.sort_complex(x), shape=(3,), scalar=False)
add(TRAPEZOID, lambda x, K: getattr(gnp, TRAPEZOID)(x), scalar=False)
add(
    TRAPEZOID,
    lambda x, K: getattr(gnp, TRAPEZOID)(K((2, 3)), x),
    argnum=1,
    shape=(3,),
    gen=lambda rs, shape, c: onp.arange(3.0) + rs.uniform(0, 0.5, 3),
    scalar=False,
    dtypes=REAL,
)
add(
    TRAPEZOID,
    lambda x, K: getattr(gnp, TRAPEZOID)(K((2, 3)), None, x),
    argnum=2,
    kinds=("pyfloat", "npscalar", "0d"),
)
add(
    "trim_zeros",
    lambda x, K: gnp.trim_zeros(x),
    shape=(4,),
    scalar=False,
    gen=lambda rs, shape, c: onp.array([0.0, 0.5, 0.7, 0.0]),
)
add("unstack", lambda x, K: gnp.unstack(x)[1], scalar=False)
add(
    "unwrap",
    lambda x, K: gnp.unwrap(x),
    shape=(4,),
    scalar=False,
    dtypes=REAL,
    gen=lambda rs, shape, c: onp.array([0.0, 3.0, 6.5, 1.0]),
)
add("vander", lambda x, K: gnp.vander(x), shape=(3,), scalar=False)

# ---- products ---------------------------------------------------------------------------------
# each operator's record (tests/op_records/products.py): its representative call, every
# operand differentiated in turn with the others constants
for _r in PRODUCT_RECORDS:
    for _i, (_argnum, _shape) in enumerate(zip(_r.operands, _r.shapes)):
        add(
            _r.name,
            lambda x, K, r=_r, i=_i: r.call(
                *[x if j == i else K(s) for j, s in enumerate(r.shapes)]
            ),
            argnum=_argnum,
            shape=_shape,
            scalar=False,
        )
add("dot", lambda x, K: gnp.dot(x, K((3,))), label=":scalar", shape=(), scalar=True)

# ---- numpy.linalg: each operator's record (tests/op_records/linalg.py), every operand and
# every tuple output it lists differentiated in turn, the other operands constants of their kind
LA = gnp.linalg
for _r in LINALG_RECORDS:
    for _i, (_kind, _shape) in enumerate(zip(_r.kinds, _r.shapes)):
        for _k in _r.outputs or (None,):
            add(
                "linalg." + _r.name,
                lambda x, K, r=_r, i=_i, k=_k: _pick(
                    r.call(
                        *[
                            x if j == i else K.of(kd, s)
                            for j, (kd, s) in enumerate(zip(r.kinds, r.shapes))
                        ]
                    ),
                    k,
                ),
                argnum=_i,
                label=(f"@{_i}" if _i else "")
                + ("" if _k is None or len(_r.outputs) == 1 else f"[{_k}]"),
                shape=_shape,
                gen=None
                if _kind == "uniform"
                else lambda rs, shape, c, kind=_kind: la_draw(kind, rs, shape, c),
                scalar=False,
                dtypes=LAPACK,
            )
add("linalg.norm", lambda x, K: LA.norm(x, axis=1), label=":axis", scalar=False, dtypes=LAPACK)

# ---- numpy.fft ----------------------------------------------------------------------------
FFT = gnp.fft
for _r in FFT_RECORDS:  # tests/op_records/fft.py
    add(
        "fft." + _r.name,
        lambda x, K, f=getattr(FFT, _r.name): f(x),
        shape=_r.shape,
        scalar=False,
        dtypes=ALL if _r.complex else REAL,
    )
add("fft.fft", lambda x, K: FFT.fft(x, 6, axis=0), label=":n", shape=(4, 2), scalar=False)
add("fft._truncate_pad", lambda x, K: gfft._truncate_pad(x, (6,)), shape=(4,), scalar=False)

# ---- implicit functions -------------------------------------------------------------------
add(
    "gradcy.misc.fixed_points.fixed_point",
    lambda x, K: fixed_point(
        lambda a: lambda z: 0.5 * z + a,
        x,
        onp.zeros_like(K(gnp.shape(x))),
        lambda u, v: gnp.max(gnp.abs(u - v)),
        1e-3,
    ),
    label="",
    argnum=5,
)


# ---- scipy ------------------------------------------------------------------------------------
if HAVE_SCIPY:
    for _n, _lo, _hi in [
        ("digamma", 0.5, 2.0),
        ("psi", 0.5, 2.0),
        ("erf", 0.3, 0.9),
        ("erfc", 0.3, 0.9),
        ("erfinv", 0.2, 0.8),
        ("erfcinv", 0.3, 0.8),
        ("expit", 0.3, 0.9),
        ("gamma", 0.5, 2.0),
        ("gammaln", 0.5, 2.0),
        ("i0", 0.3, 0.9),
        ("i1", 0.3, 0.9),
        ("j0", 0.3, 0.9),
        ("j1", 0.3, 0.9),
        ("y0", 0.5, 2.0),
        ("y1", 0.5, 2.0),
        ("logit", 0.2, 0.8),
        ("rgamma", 0.5, 2.0),
    ]:
        add(
            "gradcy.scipy.special." + _n,
            lambda x, K, f=getattr(gsp, _n): f(x),
            lo=_lo,
            hi=_hi,
            dtypes=REAL,
        )
    for _n in ("beta", "betaln"):
        add(
            "gradcy.scipy.special." + _n,
            lambda x, K, f=getattr(gsp, _n): f(x, K((3,), 1, 2)),
            shape=(2, 1),
            lo=1.0,
            hi=2.0,
            dtypes=REAL,
        )
        add(
            "gradcy.scipy.special." + _n,
            lambda x, K, f=getattr(gsp, _n): f(K((2, 3), 1, 2), x),
            argnum=1,
            shape=(3,),
            lo=1.0,
            hi=2.0,
            dtypes=REAL,
        )
    add(
        "gradcy.scipy.special.betainc",
        lambda x, K: gsp.betainc(K((3,), 1, 2), K((3,), 1, 2), x),
        argnum=2,
        shape=(2, 3),
        lo=0.2,
        hi=0.8,
        dtypes=REAL,
    )
    for _n in ("gammainc", "gammaincc", "iv", "ive", "jv"):
        add(
            "gradcy.scipy.special." + _n,
            lambda x, K, f=getattr(gsp, _n): f(K((3,), 1, 2), x),
            argnum=1,
            shape=(2, 3),
            lo=0.5,
            hi=2.0,
            dtypes=REAL,
        )
    for _n in ("jn", "yn", "polygamma"):
        add(
            "gradcy.scipy.special." + _n,
            lambda x, K, f=getattr(gsp, _n): f(1, x),
            argnum=1,
            lo=0.5,
            hi=2.0,
            dtypes=REAL,
        )
    add(
        "gradcy.scipy.special.multigammaln",
        lambda x, K: gsp.multigammaln(x, 2),
        lo=2.0,
        hi=3.0,
        dtypes=REAL,
    )
    add("gradcy.scipy.special.logsumexp", lambda x, K: gsp.logsumexp(x, _ax(x)), dtypes=REAL)
    add(
        "gradcy.scipy.special.logsumexp",
        lambda x, K: gsp.logsumexp(K(gnp.shape(x)), _ax(x), x),
        argnum=2,
        dtypes=REAL,
    )
    for _n in ("softmax", "log_softmax"):
        add(
            "gradcy.scipy.special." + _n, lambda x, K, f=getattr(gsp, _n): f(x, _ax(x)), dtypes=REAL
        )

    # scipy.stats: each argument with a rule, the others constants of the case's dtype
    def _stats_specs(mod, names, domains, argnums_of):
        for name in names:
            f = getattr(getattr(gst, mod), name)
            for k in argnums_of[name]:

                def fn(x, K, f=f, k=k):
                    args = [K((3,), lo, hi) for lo, hi in domains]
                    args[k] = x
                    return f(*args)

                lo, hi = domains[k]
                add(
                    f"gradcy.scipy.stats.{mod}.{name}",
                    fn,
                    argnum=k,
                    shape=(2, 3),
                    lo=lo,
                    hi=hi,
                    dtypes=REAL,
                )

    _ALL3, _ALL4 = (0, 1, 2), (0, 1, 2, 3)
    _stats_specs(
        "norm",
        ["pdf", "cdf", "logpdf", "logcdf", "sf", "logsf"],
        [(-1, 1), (-0.5, 0.5), (0.5, 2)],
        {n: _ALL3 for n in ["pdf", "cdf", "logpdf", "logcdf", "sf", "logsf"]},
    )
    _stats_specs(
        "t",
        ["pdf", "logpdf", "cdf", "logcdf"],
        [(-1, 1), (2, 5), (-0.5, 0.5), (0.5, 2)],
        {"pdf": _ALL4, "logpdf": _ALL4, "cdf": (0, 2, 3), "logcdf": (0, 2, 3)},
    )
    _stats_specs(
        "beta",
        ["pdf", "logpdf", "cdf"],
        [(0.2, 0.8), (1.5, 3), (1.5, 3)],
        {"pdf": _ALL3, "logpdf": _ALL3, "cdf": (0,)},
    )
    _stats_specs(
        "chi2",
        ["pdf", "logpdf", "cdf"],
        [(0.5, 2), (2, 4)],
        {"pdf": (0, 1), "logpdf": (0, 1), "cdf": (0,)},
    )
    _stats_specs(
        "gamma",
        ["pdf", "logpdf", "cdf"],
        [(0.5, 2), (1.5, 3)],
        {"pdf": (0, 1), "logpdf": (0, 1), "cdf": (0,)},
    )
    for _n in ("pmf", "logpmf", "cdf"):
        add(
            f"gradcy.scipy.stats.poisson.{_n}",
            lambda x, K, f=getattr(gst.poisson, _n): f(onp.array([0, 1, 3]), x),
            argnum=1,
            shape=(2, 3),
            lo=0.5,
            hi=2.0,
            dtypes=REAL,
        )
    _SIMPLEX = onp.array([0.2, 0.3, 0.5])
    for _n in ("pdf", "logpdf"):
        _f = getattr(gst.dirichlet, _n)
        add(
            f"gradcy.scipy.stats.dirichlet.{_n}",
            lambda x, K, f=_f: f(x, K((3,), 1.5, 3)),
            shape=(3,),
            scalar=False,
            dtypes=REAL,
            gen=lambda rs, shape, c: _SIMPLEX,
        )
        add(
            f"gradcy.scipy.stats.dirichlet.{_n}",
            lambda x, K, f=_f: f(onp.asarray(_SIMPLEX, K.dt), x),
            argnum=1,
            shape=(3,),
            lo=1.5,
            hi=3.0,
            scalar=False,
            dtypes=REAL,
        )
    _MVN = gst.multivariate_normal
    for _n in ("pdf", "logpdf"):
        _f = getattr(_MVN, _n)
        add(
            f"gradcy.scipy.stats.multivariate_normal.{_n}",
            lambda x, K, f=_f: f(x, K((2,), -0.5, 0.5), K.spd(2)),
            shape=(2,),
            lo=-1,
            hi=1,
            scalar=False,
            dtypes=LAPACK_REAL,
        )
        add(
            f"gradcy.scipy.stats.multivariate_normal.{_n}",
            lambda x, K, f=_f: f(K((2,), -1, 1), x, K.spd(2)),
            argnum=1,
            shape=(2,),
            lo=-0.5,
            hi=0.5,
            scalar=False,
            dtypes=LAPACK_REAL,
        )
        add(
            f"gradcy.scipy.stats.multivariate_normal.{_n}",
            lambda x, K, f=_f: f(K((2,), -1, 1), K((2,), -0.5, 0.5), x),
            argnum=2,
            shape=(2, 2),
            gen=gen_spd,
            scalar=False,
            dtypes=LAPACK_REAL,
        )
    add(
        "gradcy.scipy.stats.multivariate_normal.entropy",
        lambda x, K: _MVN.entropy(K((2,), -0.5, 0.5), x),
        argnum=1,
        shape=(2, 2),
        gen=gen_spd,
        scalar=False,
        dtypes=LAPACK_REAL,
    )

    add(
        "gradcy.scipy.linalg.cho_factor",
        lambda x, K: gsla.cho_factor(x)[0],
        shape=(3, 3),
        gen=gen_spd,
        scalar=False,
        dtypes=LAPACK_REAL,
    )
    add(
        "gradcy.scipy.linalg.cho_factor",
        lambda x, K: gsla.cho_factor(x, lower=True)[0],
        label=":lower",
        shape=(3, 3),
        gen=gen_spd,
        scalar=False,
        dtypes=LAPACK_REAL,
    )

    def _banded(rs, shape, complex_):
        ab = 0.3 * rs.uniform(-1, 1, shape)
        ab[1] += 3.0
        if complex_:
            ab = ab + 0.1j * rs.uniform(-1, 1, shape)
        return ab

    add(
        "gradcy.scipy.linalg.solve_banded",
        lambda x, K: gsla.solve_banded((1, 1), x, K((4,))),
        argnum=1,
        shape=(3, 4),
        gen=_banded,
        scalar=False,
        dtypes=LAPACK,
    )
    add(
        "gradcy.scipy.linalg.solve_banded",
        lambda x, K: gsla.solve_banded(
            (1, 1), onp.asarray(_banded(onp.random.RandomState(0), (3, 4), K.complex), K.dt), x
        ),
        argnum=2,
        shape=(4,),
        scalar=False,
        dtypes=LAPACK,
    )
    add(
        "gradcy.scipy.linalg.solve_sylvester",
        lambda x, K: gsla.solve_sylvester(x, K.wellcond(2), K((2, 2))),
        shape=(2, 2),
        gen=gen_wellcond,
        scalar=False,
        dtypes=LAPACK,
    )
    add(
        "gradcy.scipy.linalg.solve_sylvester",
        lambda x, K: gsla.solve_sylvester(K.wellcond(2), x, K((2, 2))),
        argnum=1,
        shape=(2, 2),
        gen=gen_wellcond,
        scalar=False,
        dtypes=LAPACK,
    )
    add(
        "gradcy.scipy.linalg.solve_sylvester",
        lambda x, K: gsla.solve_sylvester(K.wellcond(2), K.wellcond(2), x),
        argnum=2,
        shape=(2, 2),
        scalar=False,
        dtypes=LAPACK,
    )
    add(
        "gradcy.scipy.linalg.solve_triangular",
        lambda x, K: gsla.solve_triangular(x, K((3,)), lower=True),
        shape=(3, 3),
        gen=gen_lower,
        scalar=False,
        dtypes=LAPACK,
    )
    add(
        "gradcy.scipy.linalg.solve_triangular",
        lambda x, K: gsla.solve_triangular(onp.tril(K.wellcond(3)), x, lower=True),
        argnum=1,
        shape=(3,),
        scalar=False,
        dtypes=LAPACK,
    )
    add(
        "gradcy.scipy.linalg.sqrtm",
        lambda x, K: gsla.sqrtm(x),
        shape=(2, 2),
        gen=gen_spd,
        scalar=False,
        dtypes=LAPACK,
    )
    add(
        "gradcy.scipy.signal.convolve",
        lambda x, K: gss.convolve(x, K((4,))),
        shape=(3,),
        scalar=False,
    )
    add(
        "gradcy.scipy.signal.convolve",
        lambda x, K: gss.convolve(K((4,)), x),
        argnum=1,
        shape=(3,),
        scalar=False,
    )
    add(
        "gradcy.scipy.signal.windows",
        lambda x, K: gss._windows(x, (2,)),
        shape=(2, 3),
        scalar=False,
    )
    add(
        "gradcy.scipy.signal.unwindows",
        lambda x, K: gss._unwindows(x, (2, 3), (2,)),
        shape=(2, 2, 2),
        scalar=False,
    )
    _T = onp.array([0.0, 0.3, 0.6])
    add(
        "gradcy.scipy.integrate.odeint",
        lambda x, K: gsi.odeint(lambda y, t: -y, x, _T),
        label="",
        argnum=1,
        shape=(2,),
        scalar=False,
        dtypes=REAL,
    )
    add(
        "gradcy.scipy.integrate.odeint",
        lambda x, K: gsi.odeint(lambda y, t, th: -th * y, K((2,)), _T, args=(x,)),
        label=":args",
        argnum=3,
        shape=(2,),
        scalar=True,
        dtypes=REAL,
    )

# Primitives with a VJP that the sweep does not build, and why.
SKIPPED = {
    "gradcy.builtins.make_sequence": "builds a traced tuple or list (autograd's SequenceBox) of "
    "its elements: no array output of its own; each element "
    "keeps its dtype, checked in test_drop_in.py",
    "gradcy.builtins.make_dict": "builds a traced dict (autograd's DictBox): no array output of "
    "its own, checked in test_drop_in.py",
    "gradcy.core.sparse_add": "autograd.core's sum of a dense value and a SparseObject (not an "
    "array): identity rules, checked in test_autograd_parity.py",
    "gradcy.numpy.softmax (fused exp, sum, divide)": (
        "recorded only by reverse-mode tapes in place of a written-out softmax (the sweep finds "
        "primitives on a forward-mode tape): float16/32/64 checked in test_fusion.py"
    ),
}
# the other fused idioms likewise (gradcy.numpy.fusion.IDIOMS): dtypes checked in test_idioms.py
SKIPPED.update(
    {
        f"gradcy.numpy.{_n}": "recorded only by reverse-mode tapes in place of the idiom written "
        "out: float16/32/64 checked in test_idioms.py"
        for _n in (
            "logsumexp (fused max, subtract, exp, sum, log, add)",
            "log_softmax (fused exp, sum, log, subtract)",
            "sigmoid (fused negative, exp, add, divide)",
            "softplus (fused exp, add, log)",
            "tanh (fused exp, subtract, add, divide)",
        )
    }
)
# Primitives whose differentiable arguments are not all swept one by one, and why.
ARGS_SAMPLED = {
    "gradcy.numpy.meshgrid": "one rule for its 32 argument positions; positions 0 and 1 swept",
}


# =============================================================================
# The checks
# =============================================================================
def _input(spec, dtype, kind):
    """The differentiated input of a case, seeded by the case's id."""
    rs = onp.random.RandomState(zlib.crc32(f"{spec.id}-{dtype}-{kind}".encode()))
    shape = spec.shape if kind == "nd" else ()
    if spec.gen is not None and kind == "nd":
        vals = onp.asarray(spec.gen(rs, shape, dtype.kind == "c"))
    else:
        vals = rs.uniform(spec.lo, spec.hi, shape)
        if dtype.kind == "c":
            vals = vals + 0.1j * rs.uniform(-1, 1, shape)
    if kind == "pyfloat":
        return complex(vals) if dtype.kind == "c" else float(vals)
    if kind == "npscalar":
        return dtype.type(vals)
    return onp.asarray(vals, dtype)


def _cases():
    for spec in SPECS:
        for dt in spec.dtypes:
            for kind in spec.kinds:
                if kind == "pyfloat" and dt not in (F64, C128):
                    continue
                yield pytest.param(spec, dt, kind, id=f"{spec.id}-{dt.name}-{kind}")


def _describe(v):
    return f"{type(v).__name__} dtype={onp.result_type(v)} shape={onp.shape(v)}"


def _same_kind(out, like, what):
    """out has the type, dtype and shape of `like` (an ndarray, NumPy scalar or Python
    scalar)."""
    if isinstance(like, onp.ndarray):
        assert isinstance(out, onp.ndarray), f"{what}: {_describe(out)}, expected ndarray"
        assert out.dtype == like.dtype and out.shape == like.shape, (
            f"{what}: {_describe(out)}, expected {_describe(like)}"
        )
    else:
        assert type(out) is type(like), f"{what}: {_describe(out)}, expected {_describe(like)}"


def _ones_like(v):
    """Ones with the type, dtype and shape of v."""
    if isinstance(v, onp.ndarray):
        return onp.ones(v.shape, v.dtype)
    if isinstance(v, onp.generic):
        return v.dtype.type(1)
    return type(v)(1)


@pytest.mark.parametrize("spec,dtype,kind", list(_cases()))
def test_dtype_contract(spec, dtype, kind):
    check_case(spec, dtype, kind)


def check_case(spec, dtype, kind):
    """The checks of one case (AssertionError naming what broke the contract)."""
    x = _input(spec, dtype, kind)
    K = Consts(onp.dtype(onp.result_type(x)))

    def f(z):
        return spec.fn(z, K)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # ComplexWarning and the like from the plain call
        plain = f(x)
    assert not isinstance(plain, (tuple, list)), "the sweep needs one output"
    xdtype = onp.result_type(x)
    xshape = onp.shape(x)

    # the raw cotangent on the tape: no float64 leak inside the backward pass
    c = raw_cotangent(f, (x,), 0)
    if c is not None:
        assert onp.shape(c) == xshape, (
            f"raw cotangent: shape {onp.shape(c)}, input {xshape} ({_describe(c)})"
        )
        assert dtype_ok(c, xdtype), (
            f"raw cotangent: dtype {onp.result_type(c)} leaked into a {xdtype} input "
            f"({_describe(c)})"
        )

    # the front end: make_vjp (and grad for real scalar outputs)
    vjp, ans = make_vjp(f)(x)
    try:
        out = vjp(_ones_like(ans))
    finally:
        vjp.release()
    _same_kind(out, x, "make_vjp gradient")
    if onp.ndim(ans) == 0 and not onp.iscomplexobj(ans):
        _same_kind(grad(f)(x), x, "grad")

    # forward mode: on the tape (checking the primitive is what the case records) ...
    v = _ones_like(x)
    recorded = set()
    tape = Tape(True)
    tape.observer = lambda event, i, name, *rest: recorded.add(name)
    try:
        y = f(tape.new_leaf(x, v))
        assert type(y) is Box, "the output does not depend on the input"
        t = tape.tangent(y)
        yv = y._value
        if t is not None:
            assert onp.shape(t) == onp.shape(yv) and onp.result_type(t) == onp.result_type(yv), (
                f"tangent on the tape: {_describe(t)}, output {_describe(yv)}"
            )
    finally:
        tape.release()
    assert spec.prim in recorded, (
        f"the case does not record {spec.prim} (recorded: {sorted(recorded)})"
    )
    if kind == "npscalar" and dtype in (F64, C128):
        # downstream of a Python-float input, a NumPy-scalar value carries a Python-scalar
        # tangent (arctan(x) for x a float): rules must take it
        tape = Tape(True)
        try:
            y = f(tape.new_leaf(x, complex(1) if dtype == C128 else 1.0))
            t = tape.tangent(y)
            if t is not None:
                assert onp.shape(t) == onp.shape(y._value), (
                    f"tangent from a Python-scalar tangent: {_describe(t)}, output "
                    f"{_describe(y._value)}"
                )
        finally:
            tape.release()
    # ... and through make_jvp
    y, t = make_jvp(f)(x)(v)
    _same_kind(t, y, "make_jvp tangent")
    _same_kind(y, plain, "make_jvp output")


def test_the_sweep_catches_a_leak():
    """A rule that widens a float32 cotangent to float64 (hidden by make_vjp's final cast) and a
    case that does not record its primitive both fail the checks."""
    from gradcy.extend import defjvp, defvjp_direct, primitive

    leaky = primitive(onp.sin, "leaky_sin")
    defvjp_direct(leaky, lambda g, ans, x: g * gnp.cos(gnp.astype(x, F64)), save=(0,))
    defjvp(leaky, lambda g, ans, x: g * gnp.cos(x))
    spec = Spec("leaky_sin", "", lambda x, K: leaky(x), 0, (2, 3), 0.3, 0.9, KINDS, REAL, None)
    check_case(spec, F64, "nd")
    # (NumPy 1.x widens float32 scalars by a Python float itself: there, arrays only)
    for kind in ("npscalar", "0d", "nd") if NEP50 else ("nd",):
        with pytest.raises(AssertionError, match="raw cotangent: dtype float64 leaked"):
            check_case(spec, F32, kind)
    spec.fn = lambda x, K: gnp.cos(x)
    with pytest.raises(AssertionError, match="does not record leaky_sin"):
        check_case(spec, F64, "nd")


# =============================================================================
# Completeness of the table
# =============================================================================
def test_every_primitive_has_a_sweep_entry():
    prims = primitives_with_vjps()
    specced = {s.prim for s in SPECS}
    missing = sorted(set(prims) - specced - set(SKIPPED))
    assert not missing, (
        f"primitives with a VJP but no dtype-sweep spec and no SKIPPED "
        f"entry (add one in tests/test_dtype_sweep.py): {missing}"
    )
    unknown = sorted((specced | set(SKIPPED)) - set(prims))
    assert not unknown, f"specs or skips for primitives that do not exist: {unknown}"
    both = sorted(specced & set(SKIPPED))
    assert not both, f"both specced and skipped: {both}"
    # every argument with a rule is swept (primitives with one rule for all arguments excepted)
    unswept = []
    for name, p in prims.items():
        if name in SKIPPED or name in ARGS_SAMPLED or p.vjp_argnums is not None:
            continue
        ruled = {k for k, rule in p.vjpmakers.items() if rule is not None}
        swept = {s.argnum for s in SPECS if s.prim == name}
        unswept += [f"{name} argument {k}" for k in sorted(ruled - swept)]
    assert not unswept, f"arguments with a VJP that no spec differentiates: {unswept}"
