"""gradcy.jit at fresh inputs against eager gradcy, on the differential fuzzer's programs
(tests/fuzz_programs.py, driven as tests/test_const_graph_fuzz.py drives const_graph) and on
the dtype sweep's calls of every primitive (tests/test_dtype_sweep.py's SPECS, float64 arrays).

Each program is compiled by jit(prog) and jit(grad(prog, (0, 1))) at the generator's inputs,
then called at fresh inputs (the sign flip, the inputs scaled by -0.5, two random draws). Each
call must give the value and gradients of eager gradcy within rounding (1e-12 relative; a
kernel calls the C library's sin, tanh, exp..., which may differ from NumPy's in the last
place), with their types, shapes and dtypes; where the program's kernels compute with + - * /,
comparisons, where, maximum and minimum only, it must equal const_graph's NumPy replay bit for
bit. A function that writes into arrays runs eagerly (with a warning); errors are those of
const_graph (fuzz_programs._documented, or an error naming const_graph). Numba compiles each
new kernel (0.1-0.5 s), so a sample of the programs runs here:
GRADCY_JIT_FUZZ=320 python -m pytest tests/test_jit_fuzz.py runs as many as
test_const_graph_fuzz.py does.
"""

import os
import re
import warnings

import numpy as onp
import pytest

pytest.importorskip("numba")

import fuzz_programs as fp
import gradcy
import gradcy.numpy as gnp
from gradcy import jit
from gradcy.misc import tracers
from test_const_graph_fuzz import _close, _eager, _fresh_inputs, _leaves, _same

PROGRAMS = int(os.environ.get("GRADCY_JIT_FUZZ", "24"))
# numba calls NumPy's own loops for none of these: the bits of a kernel that uses only them
# equal NumPy's
_EXACT_CALLS = {
    "np.float64",
    "np.float32",
    "np.bool_",
    "np.empty",
    "np.maximum",
    "np.minimum",
    "np.fmax",
    "np.fmin",
    "np.isnan",
    "np.isinf",
    "np.isfinite",
    "np.floor",
    "np.ceil",
    "np.trunc",
    "np.copysign",
    "np.sqrt",
    # (a native segment's in-place arithmetic; its products, sums and libm calls are not here)
    "np.add",
    "np.subtract",
    "np.multiply",
    "np.true_divide",
    "np.negative",
}


def _kernel_sources(fast):
    return [
        src
        for entry in fast.programs
        for s in entry[1].steps
        for src in ((s[0].source,) if getattr(s[0], "source", None) is not None else ())
        + getattr(s[0], "sources", ())
    ]


def _exact(sources):
    return all(set(re.findall(r"np\.\w+", src)) <= _EXACT_CALLS for src in sources)


def _call(fun, x, y):
    """fun at copies of (x, y); a program left to the NumPy replay because its compiled form
    disagreed with the recording, or did not compile, fails."""
    with onp.errstate(all="ignore"), warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")
        out = fun((fp._copy(x), fp._copy(y)))
    fallbacks = [str(w.message) for w in seen if "runs as NumPy calls" in str(w.message)]
    assert not fallbacks, fallbacks
    return out


def _numpy_replay(slow, x, y):
    """const_graph's replay, or None where it refuses (a write: jit runs it eagerly)."""
    try:
        return _call(slow, x, y)
    except NotImplementedError:
        return None


def _check_program(seed, stats):
    prog = fp.generate(seed, ())
    fn = prog.fn()

    def value(x, y):
        return fn(gnp, x, y)

    for name, f in (("value", value), ("grad", gradcy.grad(value, (0, 1)))):
        fast = jit(lambda xs, f=f: f(*xs))
        slow = tracers.const_graph_unary(lambda xs, f=f: f(*xs))
        want, err = _eager(f, prog.x, prog.y)
        if err is not None:
            stats["eager raises"] += 1
            continue
        try:
            got = _call(fast, prog.x, prog.y)
        except Exception as e:
            documented = [(t, m) for t, m in fp._documented() if isinstance(e, t) and m in str(e)]
            assert documented or (
                isinstance(e, (NotImplementedError, ValueError))
                and str(e).startswith(("const_graph: ", "gradcy.jit: "))
            ), (seed, prog.source(), e)
            stats["refused"] += 1
            continue
        assert _close(got, want), (seed, name, "recording", prog.source(), got, want)
        _numpy_replay(slow, prog.x, prog.y)
        for x, y in _fresh_inputs(prog.x, prog.y, seed):
            want, err = _eager(f, x, y)
            if err is not None:
                continue
            got = _call(fast, x, y)
            assert _close(got, want), (seed, name, prog.source(), x, y, got, want)
            sources = _kernel_sources(fast)
            numpy_replay = _numpy_replay(slow, x, y)
            if numpy_replay is not None and sources and _exact(sources):
                assert _same(got, numpy_replay), (seed, name, prog.source(), sources)
                stats["bit for bit"] += 1
            stats["calls"] += 1
            stats["with kernels"] += bool(sources)
        stats["recordings"] += len(fast.programs)


def test_jit_replays_of_the_fuzzers_programs_match_eager_gradcy():
    stats = dict.fromkeys(
        ("calls", "with kernels", "bit for bit", "recordings", "refused", "eager raises"), 0
    )
    for seed in range(PROGRAMS):
        _check_program(seed, stats)

    assert stats["calls"] >= 3 * PROGRAMS, stats
    assert stats["with kernels"] >= stats["calls"] // 3, stats
    assert stats["bit for bit"] >= 1, stats


# =============================================================================
# The dtype sweep's calls of every primitive
# =============================================================================
def _sweep_specs():
    import test_dtype_sweep as sweep

    return [s for s in sweep.SPECS if sweep.F64 in s.dtypes and "nd" in s.kinds]


@pytest.mark.parametrize("chunk", range(4))
def test_jit_of_every_primitives_sweep_call_matches_eager(chunk):
    import test_dtype_sweep as sweep

    specs = _sweep_specs()
    specs = specs[chunk::4]
    compiled = 0
    for spec in specs:
        x = sweep._input(spec, sweep.F64, "nd")

        def loss(z, spec=spec):
            # (the constants drawn anew at each call are the same draws: Consts is seeded)
            y = spec.fn(z, sweep.Consts(onp.dtype(onp.float64)))
            y = gnp.real(y) if onp.iscomplexobj(y) else y
            return gnp.sum(gnp.tanh(y) * 1.5 + y * y)

        for f in (loss, gradcy.grad(loss)):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                want0, err = _eager(lambda a, b, f=f: f(a), x, None)
                if err is not None:
                    continue
                fast = jit(f)
                try:
                    fast(fp._copy(x))
                except Exception as e:
                    assert str(e).startswith(("const_graph: ", "gradcy.jit: ")) or isinstance(
                        e, NotImplementedError
                    ), (spec.id, e)
                    continue
                rs = onp.random.RandomState(7)
                for scale in (0.9, 1.1):
                    x2 = (
                        onp.asarray(x * scale + 0.01 * rs.uniform(-1, 1, onp.shape(x)), x.dtype)
                        if spec.gen is None
                        else x * scale
                    )
                    want, err = _eager(lambda a, b, f=f: f(a), x2, None)
                    if err is not None:
                        continue
                    got = fast(fp._copy(x2))
                    g, w = _leaves(got), _leaves(want)
                    assert len(g) == len(w) and all(
                        a.shape == b.shape
                        and a.dtype == b.dtype
                        and onp.allclose(a, b, rtol=1e-11, atol=1e-13, equal_nan=True)
                        for a, b in zip(g, w)
                    ), (spec.id, got, want)
                compiled += bool(_kernel_sources(fast))
    assert compiled >= len(specs) // 2, (compiled, len(specs))
