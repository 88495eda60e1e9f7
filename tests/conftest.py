import os
import sys

# one BLAS thread: small LAPACK calls are far slower with a thread pool on a shared 2-core box
for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")


def pytest_terminal_summary(terminalreporter):
    """How many programs the differential fuzzer ran (tests/test_fuzz.py), even under -q."""
    fuzz = sys.modules.get("fuzz_programs")
    if fuzz is not None and fuzz.SESSION.programs:
        for line in fuzz.SESSION.counts_table():
            terminalreporter.write_line(line)
