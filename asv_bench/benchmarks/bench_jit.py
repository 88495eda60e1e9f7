"""gradcy.jit's four workloads (benchmarks/jit_compare.py, loaded by path): the 1000-step sin
chain, the tanh RNN (T=100), the MLP training step and the memory network with slot writes
(S=256), each as the hand-written NumPy gradient, gradcy.jit and JAX's jit (n/a where JAX is
not installed; the memory network runs JAX's concatenating spelling, its arrays being
immutable). time_call and peakmem_call are the steady state (setup makes the first, compiling
call); track_compile_seconds is the first call's time, recording and compiling, with an empty
kernel cache (GRADCY_JIT_CACHE set to a fresh directory); JitCompileCache times the sin chain's
first call in fresh processes, cold (empty cache) and warm (kernel loaded from disk).
"""

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
    """The sin chain's first gradcy.jit call in fresh processes (numba imported before the
    clock): cold, an empty kernel cache; warm, the kernel loaded from the cache on disk."""

    timeout = 600

    def setup(self):
        common.require("gradcy", "jit")
        if not hasattr(_jit_compare(), "compile_times"):
            raise NotImplementedError("jit_compare.compile_times is not in this commit")
        self.cold, self.warm, _ = _jit_compare().compile_times(repeats=1)

    def track_sinchain_cold_seconds(self):
        return self.cold

    def track_sinchain_warm_seconds(self):
        return self.warm

    track_sinchain_cold_seconds.unit = "seconds"
    track_sinchain_warm_seconds.unit = "seconds"
