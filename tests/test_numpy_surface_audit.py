"""An audit of NumPy's surface under tracing.

(a) Every public function of numpy, numpy.linalg and numpy.fft with an `out` parameter, and the
    functions and methods that write into an argument (put, putmask, place, put_along_axis,
    fill_diagonal, copyto, nan_to_num(copy=False), ufunc.at, item assignment, fill), is called
    with traced values writing into a plain array and into a buffer gradcy owns, through numpy's
    name and gradcy.numpy's, by keyword and by position. The differentiated program reads the
    written buffer, so a write that drops the gradient shows: each call either gives the
    gradient of central differences or raises a clear gradcy error.
(b) Every function gradcy registers as non-differentiable (a primitive with traced=False in
    gradcy.numpy, .linalg, .fft and gradcy.scipy.special) is run on a float input and on that
    input perturbed by 1e-7: its float outputs must not move (a function that passes input
    values through needs a VJP, or an error).

Both parts enumerate their functions from NumPy and gradcy themselves, so a new function
without a spec fails the completeness checks. The counts of what ran are printed (-s) and
checked against the enumeration.
"""

import types
import warnings

import numpy as onp
import pytest

import gradcy
import gradcy.numpy as gnp
import gradcy.numpy.fft
import gradcy.numpy.linalg  # noqa: F401  (binds the submodule attribute gradcy.numpy.linalg)
import gradcy.scipy.special as gsp
from gradcy import TracerArrayConversionError, grad
from gradcy._core import Primitive
from gradcy.numpy.numpy_wrapper import parameters
from vjp_harness import central_gradient

RNG = onp.random.RandomState(7)
X0 = RNG.uniform(0.15, 0.85, size=(3, 4))  # distinct, away from 0.5 and integers
C = onp.linspace(0.31, 0.93, 12).reshape(3, 4)  # a second operand, no ties with X0
MASK = X0 > 0.5
W_READ = RNG.normal(size=64)  # weights the program reads buffers with

_MODULES = [
    ("numpy", onp, gnp),
    ("numpy.linalg", onp.linalg, gnp.linalg),
    ("numpy.fft", onp.fft, gnp.fft),
]


# =============================================================================
# (a) out= and writes into arguments
# =============================================================================
def _out_functions():
    """(module, name) of every public function with an `out` parameter (ufuncs included)."""
    found = []
    for modname, mod, _ in _MODULES:
        for name in sorted(dir(mod)):
            obj = getattr(mod, name)
            if (
                name.startswith("_")
                or isinstance(obj, (types.ModuleType, type))
                or not callable(obj)
            ):
                continue
            if isinstance(obj, onp.ufunc):
                found.append((modname, name))
                continue
            # NumPy 1.x C functions (dot) have no signature to inspect: `parameters` reads it
            # from their docstring then
            if "out" in [p.name for p in parameters(obj) or ()]:
                found.append((modname, name))
    return found


OUT_FUNCTIONS = _out_functions()

# functions with out= whose arguments are not float values (nothing to trace)
NO_FLOAT_VALUES = {
    "busday_count": "dates",
    "busday_offset": "dates",
    "is_busday": "dates",
    "isnat": "datetimes",
}


def _ints(x):
    return (x * 10).astype(int)  # an integer value traced through astype


def _ufunc_candidates(n):
    """Argument lists tried in order for an n-input ufunc; the first numpy accepts is used."""
    rest = (C,) * (n - 1)
    return [
        lambda x: (x,) + rest,
        lambda x: (x + 1.5,) + rest,  # arccosh's domain
        lambda x: (x, C.T) if n == 2 else None,  # matmul, vecmat
        lambda x: (x, C[0]) if n == 2 else None,  # matvec
        lambda x: (x, 2) if n == 2 else None,  # ldexp
        lambda x: (_ints(x),) + (3,) * (n - 1),
    ]  # integer-only ufuncs


# name -> (args of x, kwargs) for the functions with out= that are not ufuncs
SPECS = {
    "choose": lambda x: ((onp.array([0, 2, 1, 0]), x), {}),
    "clip": lambda x: ((x, 0.3, 0.7), {}),
    "compress": lambda x: ((onp.array([True, False, True]), x), {"axis": 0}),
    "concat": lambda x: (([x, C],), {}),
    "concatenate": lambda x: (([x, C],), {}),
    "stack": lambda x: (([x, C],), {}),
    "cumulative_prod": lambda x: ((x,), {"axis": 0}),
    "cumulative_sum": lambda x: ((x,), {"axis": 1}),
    "dot": lambda x: ((x, C.T), {}),
    "einsum": lambda x: (("ij,kj->ik", x, C), {}),
    "outer": lambda x: ((x, C[0]), {}),
    "take": lambda x: ((x, [0, 5, 7]), {}),
    "percentile": lambda x: ((x, 30.0), {}),
    "nanpercentile": lambda x: ((x, 30.0), {}),
    "quantile": lambda x: ((x, 0.3), {}),
    "nanquantile": lambda x: ((x, 0.3), {}),
    "round": lambda x: ((x, 1), {}),
    "around": lambda x: ((x, 1), {}),
    "multi_dot": lambda x: (([x, C.T, C],), {}),
}


def _spec(modname, name):
    """(args builder, result) for a function with out=, checked to run in plain numpy. A
    DeprecationWarning of numpy's own is no reason to skip an argument list (the function is
    audited while NumPy still has it; `_numpy_deprecates` tells which ones warn)."""
    fn = getattr(dict((m, mod) for m, mod, _ in _MODULES)[modname], name)
    builders = (
        [lambda x, b=b: (b(x), {}) for b in _ufunc_candidates(fn.nin)]
        if isinstance(fn, onp.ufunc)
        else [SPECS.get(name, lambda x: ((x,), {}))]
    )
    for build in builders:
        args, kwargs = build(X0)
        if args is None:
            continue
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("error")
                warnings.simplefilter("ignore", DeprecationWarning)
                result = fn(*args, **kwargs)
        except (TypeError, ValueError, RuntimeWarning, onp.exceptions.ComplexWarning):
            continue
        return build, result
    raise AssertionError(f"{modname}.{name}: no argument list numpy accepts; add a spec")


def _warnings_of(call):
    """The (category, message) of the warnings `call()` emits."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        call()
    return sorted({(w.category, str(w.message)) for w in caught}, key=str)


def _numpy_deprecates(modname, name):
    """Whether numpy's own call of the function (with its spec's arguments) warns that it is
    deprecated (numpy.round_ in NumPy 1.25+, numpy.fix in 2.5)."""
    fn = getattr(dict((m, mod) for m, mod, _ in _MODULES)[modname], name)
    build, _ = _spec(modname, name)
    args, kwargs = build(X0)
    return any(
        issubclass(c, DeprecationWarning) for c, _ in _warnings_of(lambda: fn(*args, **kwargs))
    )


def _read(buffers):
    """A float scalar that reads every written buffer (real and imaginary parts)."""
    total = 0.0
    k = 0
    for d in buffers:
        n = int(onp.size(d))
        w = W_READ[k : k + n].reshape(onp.shape(d)) if n else 0.0
        k += n
        v = 1.0 * d
        total = total + gnp.sum(gnp.real(v) * w) + 0.5 * gnp.sum(gnp.imag(v) * w)
    return total


def _make_outs(result, owned):
    results = result if isinstance(result, tuple) else (result,)
    make = gnp.zeros if owned else onp.zeros
    return tuple(make(onp.shape(r), onp.result_type(r)) for r in results)


def _positional_out(fn, args, kwargs, out):
    """fn's arguments with out passed by position, or None when out cannot go there."""
    if isinstance(fn, onp.ufunc):
        return (args + tuple(out)), kwargs
    params = parameters(fn)
    names = [p.name for p in params]
    pos = names.index("out")
    if params[pos].kind is not params[pos].POSITIONAL_OR_KEYWORD or len(args) > pos:
        return None
    kwargs = dict(kwargs)
    filled = list(args)
    for p in params[len(args) : pos]:
        if p.kind is p.VAR_POSITIONAL:
            return None
        filled.append(kwargs.pop(p.name, p.default))
    return tuple(filled) + (out[0],), kwargs


def _numpy_writes_out(fn, build):
    args, kwargs = build(X0)
    result = fn(*args, **kwargs)
    outs = _make_outs(result, False)
    returned = fn(*args, out=outs if len(outs) > 1 else outs[0], **kwargs)
    return all(
        onp.array_equal(o, r)
        for o, r in zip(outs, result if isinstance(result, tuple) else (result,))
    ) and (returned is outs[0] or returned == outs or returned is outs)


def _program(modname, name, build, result, via, owned, positional):
    np_fn = getattr(dict((m, mod) for m, mod, _ in _MODULES)[modname], name)
    g_fn = getattr(dict((m, g) for m, _, g in _MODULES)[modname], name)
    fn = np_fn if via == "numpy" else g_fn

    def program(x):
        args, kwargs = build(x)
        outs = _make_outs(result, owned)
        if positional:
            args, kwargs = _positional_out(np_fn, args, kwargs, outs)
            fn(*args, **kwargs)
        else:
            fn(*args, out=outs if len(outs) > 1 else outs[0], **kwargs)
        return _read(outs)

    return program


def _clear(e):
    """A clear error: gradcy's own, naming what to do."""
    return isinstance(e, TracerArrayConversionError) or (
        isinstance(e, (TypeError, ValueError, NotImplementedError)) and "gradcy" in str(e)
    )


def _audit(program, x=X0):
    """'traced' (gradient equals central differences) or 'raised' (a clear error); any other
    outcome fails the test."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            g = grad(program)(x.copy())
    except Exception as e:  # (any exception is classified)
        assert _clear(e), f"unclear error {type(e).__name__}: {e}"
        return "raised"
    ref = central_gradient(program, x)
    assert onp.allclose(g, ref, rtol=1e-5, atol=1e-6), f"gradient {g} != differences {ref}"
    return "traced"


AUDITED = {}  # test id -> outcome (counted by the summary test)
_CASES = [(m, n) for m, n in OUT_FUNCTIONS if n not in NO_FLOAT_VALUES]
_PATHS = ["numpy-kw", "numpy-pos", "gradcy-kw", "gradcy-pos", "owned-kw", "owned-pos"]


@pytest.mark.filterwarnings("ignore:Passing more than 2 positional arguments:DeprecationWarning")
@pytest.mark.parametrize("modname,name", _CASES, ids=[f"{m}.{n}" for m, n in _CASES])
def test_out_parameter(modname, name):
    build, result = _spec(modname, name)
    with warnings.catch_warnings():
        if _numpy_deprecates(modname, name):  # numpy warns on each call; audit it anyway
            warnings.simplefilter("ignore", DeprecationWarning)
        _audit_out_parameter(modname, name, build, result)


def _audit_out_parameter(modname, name, build, result):
    np_fn = getattr(dict((m, mod) for m, mod, _ in _MODULES)[modname], name)
    ran = 0
    for path in _PATHS:
        via, how = path.split("-")
        positional = how == "pos"
        if positional and _positional_out(np_fn, *build(X0), _make_outs(result, False)) is None:
            continue
        program = _program(
            modname,
            name,
            build,
            result,
            "numpy" if via == "numpy" else "gradcy",
            via == "owned",
            positional,
        )
        try:
            outcome = _audit(program)
        except AssertionError as e:
            raise AssertionError(f"{modname}.{name} ({path}): {e}") from None
        if via == "owned":
            # a buffer gradcy owns receives a traced write, unless numpy itself does not write
            # the result into out= (then gradcy raises: the buffer would not hold it)
            assert outcome == ("traced" if _numpy_writes_out(np_fn, build) else "raised"), (
                f"{modname}.{name} ({path}): {outcome}"
            )
        AUDITED[f"{modname}.{name}[{path}]"] = outcome
        ran += 1
    assert ran >= 3


def test_every_out_function_is_audited():
    names = {n for _, n in OUT_FUNCTIONS}
    assert set(NO_FLOAT_VALUES) <= names
    # the specs of functions this NumPy has (concat, cumulative_sum are NumPy 2's)
    assert {n for n in SPECS if hasattr(onp, n)} - {"multi_dot"} <= names
    assert ("numpy.linalg", "multi_dot") in OUT_FUNCTIONS
    # the enumeration found numpy's out= functions (ufuncs, reductions, linalg, fft)
    for expected in [
        ("numpy", "add"),
        ("numpy", "sum"),
        ("numpy", "dot"),
        ("numpy", "cumsum"),
        ("numpy", "clip"),
        ("numpy", "einsum"),
        ("numpy", "take"),
        ("numpy", "concatenate"),
    ] + ([("numpy.fft", "fft")] if onp.lib.NumpyVersion(onp.__version__) >= "2.0.0" else []):
        assert expected in OUT_FUNCTIONS


def test_deprecated_functions_warn_as_numpy_does():
    """A function NumPy deprecates (it warns on each call) is still audited above; gradcy's
    call warns as numpy's does, traced or not, and adds no warning of its own."""
    deprecated = [(m, n) for m, n in _CASES if _numpy_deprecates(m, n)]
    if not deprecated:
        pytest.skip(f"NumPy {onp.__version__} deprecates none of its functions with out=")
    for modname, name in deprecated:
        np_fn = getattr(dict((m, mod) for m, mod, _ in _MODULES)[modname], name)
        g_fn = getattr(dict((m, g) for m, _, g in _MODULES)[modname], name)
        build, _ = _spec(modname, name)
        args, kwargs = build(X0)
        want = _warnings_of(lambda: np_fn(*args, **kwargs))
        assert want and _warnings_of(lambda: g_fn(*args, **kwargs)) == want, name

        def program(x):
            a, k = build(x)
            return _read([g_fn(*a, **k)])

        # (numpy.fix, deprecated in NumPy 2.5, is piecewise constant: grad also warns, as
        # autograd does, that the output does not depend on the input)
        got = [
            w
            for w in _warnings_of(lambda: grad(program)(X0.copy()))
            if not w[1].startswith("Output seems independent of input")
        ]
        assert got == want, name


# ---- functions and methods that write into an argument -----------------------------------
def _w_put(np_, d, x):
    np_.put(d, [1, 5, 7], x[0, :3])


def _w_put_wrap(np_, d, x):
    np_.put(d, [-1, 13], x[1, :2], mode="wrap")


def _w_putmask(np_, d, x):
    np_.putmask(d, MASK, x)


def _w_place(np_, d, x):
    np_.place(d, MASK, x[2])


def _w_put_along_axis(np_, d, x):
    np_.put_along_axis(d, onp.array([[2], [0], [3]]), x[:, 1:2], axis=1)


def _w_put_along_axis_none(np_, d, x):
    np_.put_along_axis(
        d.reshape(-1) if type(d) is onp.ndarray else d, onp.array([3, 8]), x[0, :2], axis=None
    )


def _w_fill_diagonal(np_, d, x):
    np_.fill_diagonal(d, x[0, :3])


def _w_copyto(np_, d, x):
    np_.copyto(d, x)


def _w_copyto_where(np_, d, x):
    np_.copyto(d, x, where=MASK)


def _w_add_at(np_, d, x):
    onp.add.at(d, [0, 1], x[0, :2])  # gradcy.numpy's ufuncs have no .at


def _w_setitem(np_, d, x):
    d[...] = x


def _w_setitem_element(np_, d, x):
    d[1, 2] = x[0, 0]


def _w_setitem_slice_iadd(np_, d, x):
    d[0, :2] += x[0, :2]


def _w_fill(np_, d, x):
    d.fill(x[1, 1])


WRITERS = {  # name -> (write(np_module, buffer, x), buffer shape, written by gradcy when owned)
    "put": (_w_put, (3, 4), True),
    "put(mode=wrap)": (_w_put_wrap, (3, 4), True),
    "putmask": (_w_putmask, (3, 4), True),
    "place": (_w_place, (3, 4), True),
    "put_along_axis": (_w_put_along_axis, (3, 4), True),
    "put_along_axis(axis=None)": (_w_put_along_axis_none, (12,), True),
    "fill_diagonal": (_w_fill_diagonal, (3, 3), True),
    "copyto": (_w_copyto, (3, 4), True),
    "copyto(where=)": (_w_copyto_where, (3, 4), True),
    "add.at": (_w_add_at, (3, 4), False),
    "d[...] = x": (_w_setitem, (3, 4), True),
    "d[i, j] = x[k]": (_w_setitem_element, (3, 4), True),
    "d[i, :2] += x": (_w_setitem_slice_iadd, (3, 4), True),
    "d.fill": (_w_fill, (3, 4), True),
}


@pytest.mark.parametrize("name", sorted(WRITERS))
@pytest.mark.parametrize("via", ["numpy", "gradcy"])
@pytest.mark.parametrize("owned", [False, True], ids=["plain", "owned"])
def test_writes_into_an_argument(name, via, owned):
    write, shape, traced_when_owned = WRITERS[name]
    np_ = onp if via == "numpy" else gnp

    def program(x):
        d = gnp.zeros(shape) if owned else onp.zeros(shape)
        write(np_, d, x)
        return _read([d])

    outcome = _audit(program)
    if owned and traced_when_owned:
        assert outcome == "traced"
    if not owned:
        assert outcome == "raised"  # traced values never go into a plain array
    AUDITED[f"write {name}[{via}, {'owned' if owned else 'plain'}]"] = outcome


@pytest.mark.parametrize("via", ["numpy", "gradcy"])
def test_nan_to_num_copy_false_writes_into_its_argument(via):
    np_ = onp if via == "numpy" else gnp
    x0 = X0.copy()
    keep = x0.copy()

    def program(x):
        y = gnp.where(x > 0.5, x, onp.inf)
        z = np_.nan_to_num(y, copy=False, posinf=2.0)
        return _read([y]) + 0.5 * _read([z])  # y itself holds the result, like numpy's

    assert _audit(program, x0) == "traced"
    grad(lambda x: gnp.sum(np_.nan_to_num(x, copy=False)))(x0)
    onp.testing.assert_array_equal(x0, keep)  # the caller's input is never written
    AUDITED[f"write nan_to_num(copy=False)[{via}]"] = "traced"


# =============================================================================
# (b) non-differentiable functions do not pass input values through
# =============================================================================
def _nondifferentiable():
    found = {}
    for _prefix, mod in [
        ("numpy", gnp),
        ("numpy.linalg", gnp.linalg),
        ("numpy.fft", gnp.fft),
        ("scipy.special", gsp),
    ]:
        for name in sorted(dir(mod)):
            p = getattr(mod, name)
            if isinstance(p, Primitive) and not p.traced:
                found.setdefault(p.name, p)
    return found


NONDIFF = _nondifferentiable()
S44 = X0.T @ X0 + onp.eye(4) * 0.1  # a square float matrix
SORTED = onp.sort(C.reshape(-1))

# gradcy name -> args with `x` the float input (x has X0's shape unless said)
NONDIFF_SPECS = {
    "allclose": lambda x: (x, C),
    "array_equal": lambda x: (x, C),
    "array_equiv": lambda x: (x, C),
    "isclose": lambda x: (x, C),
    "isin": lambda x: (x, C),
    "argpartition": lambda x: (x, 1),
    "digitize": lambda x: (x, SORTED),
    "searchsorted": lambda x: (SORTED, x),
    "floor_divide": lambda x: (x, C),
    "equal": lambda x: (x, C),
    "not_equal": lambda x: (x, C),
    "greater": lambda x: (x, C),
    "greater_equal": lambda x: (x, C),
    "less": lambda x: (x, C),
    "less_equal": lambda x: (x, C),
    "logical_and": lambda x: (x, C),
    "logical_or": lambda x: (x, C),
    "logical_xor": lambda x: (x, C),
    "may_share_memory": lambda x: (x, C),
    "shares_memory": lambda x: (x, C),
    "can_cast": lambda x: (x, onp.float32),
    "lexsort": lambda x: ((x[0], x[1]),),
    "gradcy.numpy.round": lambda x: (x, 1),
    "in1d": lambda x: (x, C),
    "einsum_path": lambda x: ("ij,kj->ik", x, C),
    "diag_indices_from": lambda x: (S44 + x[0, 0],),
    "tril_indices_from": lambda x: (S44 + x[0, 0],),
    "triu_indices_from": lambda x: (S44 + x[0, 0],),
    "matrix_rank": lambda x: (S44 + x[0, 0],),
}
# functions whose arguments cannot be float values (counts, shapes, dtypes, integers, dates)
NO_FLOAT_INPUT = {
    "bitwise_and",
    "bitwise_count",
    "bitwise_not",
    "bitwise_or",
    "bitwise_xor",
    "gcd",
    "lcm",
    "invert",
    "left_shift",
    "right_shift",
    "packbits",
    "unpackbits",
    "ravel_multi_index",
    "unravel_index",
    "ix_",
    "broadcast_shapes",
    "diag_indices",
    "indices",
    "isdtype",
    "issubdtype",
    "mask_indices",
    "mintypecode",
    "promote_types",
    "tri",
    "tril_indices",
    "triu_indices",
    "isnat",
    "show_runtime",
}


def _float_leaves(out):
    if isinstance(out, (tuple, list)):
        for o in out:
            yield from _float_leaves(o)
        return
    if isinstance(out, (float, complex, onp.floating, onp.complexfloating)) or (
        isinstance(out, onp.ndarray) and out.dtype.kind in "fc"
    ):
        yield onp.asarray(out)


@pytest.mark.parametrize("full", sorted(NONDIFF), ids=sorted(NONDIFF))
def test_nondifferentiable_output_does_not_follow_its_input(full):
    p = NONDIFF[full]
    short = full.rsplit(".", 1)[-1]
    if short in NO_FLOAT_INPUT:
        AUDITED[f"nondiff {full}"] = "no float input"
        return
    build = NONDIFF_SPECS.get(full, NONDIFF_SPECS.get(short, lambda x: (x,)))
    delta = 1e-7 * RNG.choice([-1.0, 1.0], size=X0.shape)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        before = list(_float_leaves(p(*build(X0))))
        after = list(_float_leaves(p(*build(X0 + delta))))
    assert len(before) == len(after)
    for b, a in zip(before, after):
        assert onp.array_equal(b, a, equal_nan=True), (
            f"{full} is registered non-differentiable but its float output follows its input; "
            f"give it a VJP or make it raise"
        )
    AUDITED[f"nondiff {full}"] = "constant"


def test_nondifferentiable_lists_are_covered():
    shorts = {n.rsplit(".", 1)[-1] for n in NONDIFF}
    # the listed functions that this NumPy has (in1d is gone in NumPy 2.4, isdtype and
    # bitwise_count are NumPy 2's)
    present = {
        n
        for n in set(NONDIFF_SPECS) | NO_FLOAT_INPUT
        if any(hasattr(mod, n.rsplit(".", 1)[-1]) for _, mod, _ in _MODULES)
    }
    assert present & set(NONDIFF_SPECS) <= shorts | set(NONDIFF)
    assert present & NO_FLOAT_INPUT <= shorts | {"isnat"}
    assert len(NONDIFF) > 80


def test_summary():
    """How many calls each part checked (pytest -s shows the counts); runs last in the module."""
    counts = {}
    for key, outcome in AUDITED.items():
        part = "b" if key.startswith("nondiff") else "a"
        counts.setdefault(part, {}).setdefault(outcome, 0)
        counts[part][outcome] += 1
    print(
        f"\nsurface audit (a): {len(_CASES)} functions with out= "
        f"({len(NO_FLOAT_VALUES)} without float values skipped), {len(WRITERS)} writers + "
        f"nan_to_num; calls: {counts.get('a')}"
    )
    print(f"surface audit (b): {len(NONDIFF)} non-differentiable functions: {counts.get('b')}")
    if len(AUDITED) >= len(_CASES) * 3 + len(NONDIFF):  # the whole module ran
        assert counts["a"]["raised"] > 0 and counts["a"]["traced"] > 0
        assert sum(counts["b"].values()) == len(NONDIFF)
