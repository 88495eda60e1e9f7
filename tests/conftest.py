import gc
import os
import sys

# one BLAS thread: small LAPACK calls are far slower with a thread pool on a shared 2-core box
for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

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
