"""Shared inputs and measurement helpers of the asv suite.

The workloads and their hand-written reference gradients are benchmarks/reference_gradients.py
at the top of the repository, shared with the benchmark scripts and the demo; this module loads
it by path as `ref`. asv imports the suite from the current tree (asv_bench/) whatever commit it
measures, so that path is the current tree's, and it works for old commits that lack the file.

Inputs are seeded and cached per process (asv runs each benchmark in its own process), and
read-only, so a library that writes into its inputs fails loudly instead of skewing the next
sample. The BLAS/OpenMP thread counts are pinned to 1 before NumPy is imported (asv.conf.json
sets them too, except with --python=same).
"""

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import functools
import gc
import importlib.util
import pathlib
import tracemalloc

import numpy


def _load_by_path(path):
    spec = importlib.util.spec_from_file_location(path.stem, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


ref = _load_by_path(
    pathlib.Path(__file__).resolve().parents[2] / "benchmarks" / "reference_gradients.py"
)

SEED = ref.SEED
D = 500  # matrix size of the chains


def _readonly(*arrays):
    for a in arrays:
        a.flags.writeable = False
    return arrays if len(arrays) > 1 else arrays[0]


@functools.cache
def dot_data(d=D):
    return _readonly(*ref.dotchain_inputs(d, seed=SEED))


@functools.cache
def tanh_data(d=D):
    return _readonly(*ref.tanhchain_inputs(d, seed=SEED + 1))


@functools.cache
def memnet_data():
    """(W, x) of the memory network."""
    return _readonly(*ref.memnet_inputs(seed=SEED + 4))


@functools.cache
def attention_data():
    """(W, h0, q, b) of the attention memory network (gradcy issue 13); None at a commit
    whose reference_gradients.py lacks it."""
    if not hasattr(ref, "attention_inputs"):
        raise NotImplementedError("reference_gradients.py has no attention network here")
    return _readonly(*ref.attention_inputs())


@functools.cache
def vector(n, seed=SEED):
    """A seeded float64 vector of n elements in (-2, 2) (valid for every per-op benchmark)."""
    rng = numpy.random.RandomState(seed)
    return _readonly(rng.uniform(-2.0, 2.0, n))


@functools.cache
def small_pair():
    """(b, a): the 2x2 arrays of the create-and-drop loop."""
    rng = numpy.random.RandomState(SEED + 2)
    return _readonly(rng.standard_normal((2, 2)), rng.standard_normal((2, 2)))


# =============================================================================
# Measurement helpers
# =============================================================================
class LongRun:
    """asv settings of a benchmark whose one call takes a second or more: one call per
    sample, 1 to 3 samples within 10 s, no warm-up."""

    number = 1
    repeat = (1, 3, 10.0)
    warmup_time = 0
    timeout = 120


class OneSample(LongRun):
    """asv settings of a track_ benchmark: one sample of one call."""

    repeat = 1


def require(module, *names):
    """Import gradcy's `module` and return its attributes `names`; raise NotImplementedError
    (asv's "skip this benchmark", shown as n/a) when the commit being measured lacks them, so
    the suite runs over the whole history."""
    try:
        mod = importlib.import_module(module)
    except ImportError as exc:
        raise NotImplementedError(f"{module} is not in this commit ({exc})") from exc
    if not names:
        return mod
    missing = [n for n in names if not hasattr(mod, n)]
    if missing:
        raise NotImplementedError(f"{module} has no {', '.join(missing)} in this commit")
    return [getattr(mod, n) for n in names] if len(names) != 1 else getattr(mod, names[0])


def gradcy_grad(make, argnum=0):
    """grad of make(gradcy.numpy), imported lazily (asv discovers benchmarks without it)."""
    import gradcy.numpy as gnp
    from gradcy import grad

    return grad(make(gnp), argnum=argnum)


def core_stats():
    return require("gradcy._core", "stats")()


def reset_core_peak():
    require("gradcy._core", "reset_peak")()


def tracemalloc_peak(fn, *args):
    """Peak bytes allocated at once while fn(*args) runs (NumPy reports its buffers to
    tracemalloc; inputs allocated before are not counted)."""
    gc.collect()
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        r = fn(*args)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    del r
    return peak
