import atexit
import gc
import os
import shutil
import sys
import tempfile

# one BLAS thread: small LAPACK calls are far slower with a thread pool on a shared 2-core box
for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

# gradcy.jit's kernels are kept in a directory of this run's own, not the user's
# ~/.cache/gradcy/jit: a test sees no kernel an earlier run or another checkout compiled
if "GRADCY_JIT_CACHE" not in os.environ:
    os.environ["GRADCY_JIT_CACHE"] = tempfile.mkdtemp(prefix="gradcy-jit-")
    atexit.register(shutil.rmtree, os.environ["GRADCY_JIT_CACHE"], True)

# every test module's tests end with the engine's counters where they started (counters.py)
from counters import _counters_back_to_zero  # noqa: F401  (autouse fixture)


def pytest_collection_finish(session):
    """Freeze the heap once collection is done. Everything imported and collected so far (test
    modules, parametrisations, NumPy, SciPy, Dask: some 300,000 objects) lives to the end of
    the session, so the leak check's gc.collect() after each test need not traverse it again:
    after the freeze a collection visits only what the tests made since (the suite's run time
    halves). Garbage the tests make is collected as before."""
    gc.collect()
    gc.freeze()


def pytest_terminal_summary(terminalreporter):
    """How many programs the differential fuzzer ran (tests/test_fuzz.py), even under -q."""
    fuzz = sys.modules.get("fuzz_programs")
    if fuzz is not None and fuzz.SESSION.programs:
        for line in fuzz.SESSION.counts_table():
            terminalreporter.write_line(line)
