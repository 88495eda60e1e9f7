"""gradcy.jit's four workloads (benchmarks/jit_compare.py, loaded by path): the 1000-step sin
chain, the tanh RNN (T=100), the MLP training step and the memory network with slot writes
(S=256), each as the hand-written NumPy gradient, gradcy.jit and JAX's jit (n/a where JAX is
not installed; the memory network runs JAX's concatenating spelling, its arrays being
immutable). time_call and peakmem_call are the steady state (setup makes the first, compiling
call); track_compile_seconds is the first call's time, recording and compiling, with an empty
kernel cache (GRADCY_JIT_CACHE set to a fresh directory); JitCompileCache times the sin chain's
and the RNN's first call in fresh processes, cold (empty cache) and warm (kernels and native
segments loaded from disk).
"""

import inspect
import pathlib
import sys
import time

from . import common

_BENCH = pathlib.Path(__file__).resolve().parents[2] / "benchmarks"
_compare = []


def _jit_compare():
    """benchmarks/jit_compare.py (with reference_gradients.py beside it importable)."""
    if not _compare:
        if str(_BENCH) not in sys.path:
            sys.path.insert(0, str(_BENCH))
        _compare.append(common._load_by_path(_BENCH / "jit_compare.py"))
    return _compare[0]


_LABELS = {
    "sinchain": ("numpy (hand)", "gradcy.jit", "jax.jit"),
    "rnn": ("numpy (hand)", "gradcy.jit", "jax.jit"),
    "mlp": ("numpy (hand)", "gradcy.jit", "jax.jit"),
    "memnet": ("numpy (hand, in-place)", "gradcy.jit (in-place)", "jax.jit (concat)"),
}
_IMPLS = ("hand", "gradcy.jit", "jax.jit")


def _variant(workload, impl):
    """(function, arguments, seconds of its first call) of one variant."""
    common.require("gradcy", "jit")
    try:
        import numba  # noqa: F401
    except ImportError as exc:
        raise NotImplementedError("numba is not installed (pip install gradcy[jit])") from exc
    vs = _jit_compare().variants(workload, 256)
    label = _LABELS[workload][_IMPLS.index(impl)]
    if label not in vs:
        raise NotImplementedError(f"{label}: not installed")
    fun, args, _ = vs[label]
    t0 = time.perf_counter()
    _jit_compare()._block(fun(*args))
    return fun, args, time.perf_counter() - t0


class JitWorkloads:
    params = [list(_LABELS), list(_IMPLS)]
    param_names = ["workload", "impl"]
    number = 1
    repeat = (3, 10, 20.0)
    warmup_time = 0
    timeout = 600

    def setup(self, workload, impl):
        self.fun, self.args, self.first = _variant(workload, impl)
        self.block = _jit_compare()._block

    def time_call(self, workload, impl):
        self.block(self.fun(*self.args))

    def peakmem_call(self, workload, impl):
        self.block(self.fun(*self.args))


class JitCompile(common.OneSample):
    params = [list(_LABELS), ["gradcy.jit", "jax.jit"]]
    param_names = ["workload", "impl"]
    timeout = 600

    def setup(self, workload, impl):
        import os
        import tempfile

        # (cold: a fresh, empty kernel cache on disk)
        os.environ["GRADCY_JIT_CACHE"] = tempfile.mkdtemp(prefix="gradcy-jit-asv-")
        # in setup, so that a variant that cannot run (JAX or Numba not installed) is skipped
        self.compile_seconds = _variant(workload, impl)[2]

    def track_compile_seconds(self, workload, impl):
        return self.compile_seconds

    track_compile_seconds.unit = "seconds"


class JitCompileCache(common.OneSample):
    """The first gradcy.jit call of the sin chain and of the RNN in fresh processes (numba
    imported before the clock): cold, an empty cache; warm, its kernels and native segments
    loaded from the cache on disk."""

    timeout = 600
    params = (["sinchain", "rnn"],)
    param_names = ["workload"]

    def setup(self, workload):
        common.require("gradcy", "jit")
        compile_times = getattr(_jit_compare(), "compile_times", None)
        if compile_times is None:
            raise NotImplementedError("jit_compare.compile_times is not in this commit")
        if "workload" in inspect.signature(compile_times).parameters:
            self.cold, self.warm, _ = compile_times(workload, repeats=1)
        elif workload == "sinchain":  # (commits whose compile_times timed the sin chain only)
            self.cold, self.warm, _ = compile_times(repeats=1)
        else:
            raise NotImplementedError(f"jit_compare.compile_times has no {workload} here")

    def track_cold_seconds(self, workload):
        return self.cold

    def track_warm_seconds(self, workload):
        return self.warm

    track_cold_seconds.unit = "seconds"
    track_warm_seconds.unit = "seconds"
