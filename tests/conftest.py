import os

# one BLAS thread: small LAPACK calls are far slower with a thread pool on a shared 2-core box
for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")
