"""gradcy on CuPy arrays (GPU): the backend tests on the device, and a benchmark against the
same code on NumPy.

    python benchmarks/gpu.py                 # tests, then the benchmark
    python benchmarks/gpu.py --bench-only
    python benchmarks/gpu.py --tests-only

Tests: tests/backends/test_backends.py with the cupy cases (they skip without a GPU).
Benchmark, each on NumPy (CPU) and CuPy (GPU), medians of --repeats:

- sin chain: grad of sum(x) after 1000 steps x = sin(x) * 1.0001 + 0.01 * x, --n elements;
- MLP step: value_and_grad of the mean squared error of tanh(X @ W1) @ W2 with respect to
  (W1, W2), X of --batch x --width.

Reported: time; peak device memory, as CuPy's memory pool total_bytes after a run whose pool
was emptied before it (the pool only grows during a run, so that is the run's high-water mark);
and gradcy's own peak_bytes counter (saved + cotangent bytes, from the arrays' declared nbytes)
on NumPy and on CuPy. The CuPy gradient of the sin chain is checked against NumPy's.
Exits with a message when cupy or a GPU is missing.
"""

import argparse
import os
import statistics
import subprocess
import sys
import time

import numpy as onp


def _cupy():
    try:
        import cupy

        cupy.cuda.runtime.getDeviceCount()
        return cupy
    except Exception as exc:  # not installed, or no device / driver
        sys.exit(
            f"benchmarks/gpu.py needs cupy and a CUDA GPU (pip install -e '.[cupy]' on a "
            f"machine with one): {type(exc).__name__}: {exc}"
        )


def sin_chain(np, steps=1000):
    def f(x):
        for _ in range(steps):
            x = np.sin(x) * 1.0001 + 0.01 * x
        return np.sum(x)

    return f


def mlp(np):
    def f(W1, W2, X, y):
        return np.mean((np.tanh(X @ W1) @ W2 - y) ** 2)

    return f


def measure(fn, sync, repeats, pool=None):
    """(median seconds, peak pool bytes or None, gradcy peak_bytes) of fn()."""
    import gradcy.memory as gm

    fn()  # warm up (kernels compiled, pool filled)
    sync()
    times, peak_pool = [], None
    for _ in range(repeats):
        if pool is not None:
            pool.free_all_blocks()
        gm.reset_peak()
        t0 = time.perf_counter()
        fn()
        sync()
        times.append(time.perf_counter() - t0)
        if pool is not None:
            peak_pool = max(peak_pool or 0, pool.total_bytes())
    return statistics.median(times), peak_pool, gm.stats()["peak_bytes"]


def bench(args):
    cupy = _cupy()
    import gradcy.numpy as np
    from gradcy import grad, value_and_grad

    pool = cupy.get_default_memory_pool()
    rng = onp.random.default_rng(0)
    x = rng.standard_normal(args.n)
    X = rng.standard_normal((args.batch, args.width))
    y = rng.standard_normal((args.batch, 1))
    W1 = rng.standard_normal((args.width, args.width)) / args.width**0.5
    W2 = rng.standard_normal((args.width, 1))
    g_sin = grad(sin_chain(np))
    g_mlp = value_and_grad(mlp(np), argnum=(0, 1))
    dev = {k: cupy.asarray(v) for k, v in dict(x=x, X=X, y=y, W1=W1, W2=W2).items()}
    sync = cupy.cuda.Device().synchronize
    rows = []
    for name, cpu, gpu in (
        ("sin chain 1000 steps", lambda: g_sin(x), lambda: g_sin(dev["x"])),
        (
            "MLP step",
            lambda: g_mlp(W1, W2, X, y),
            lambda: g_mlp(dev["W1"], dev["W2"], dev["X"], dev["y"]),
        ),
    ):
        t_cpu, _, p_cpu = measure(cpu, lambda: None, args.repeats)
        t_gpu, pool_gpu, p_gpu = measure(gpu, sync, args.repeats, pool)
        rows.append((name, t_cpu, t_gpu, p_cpu, p_gpu, pool_gpu))
    # the same numbers: gradients on the device equal NumPy's
    onp.testing.assert_allclose(cupy.asnumpy(g_sin(dev["x"])), g_sin(x), rtol=1e-10)
    print(
        f"GPU: {cupy.cuda.runtime.getDeviceProperties(0)['name'].decode()}, cupy "
        f"{cupy.__version__}; sin chain n={args.n}, MLP {args.batch}x{args.width}"
    )
    print(
        "| workload | NumPy ms | CuPy ms | speed-up | gradcy peak bytes NumPy / CuPy | "
        "CuPy pool peak MB |"
    )
    print("|---|---:|---:|---:|---:|---:|")
    for name, t_cpu, t_gpu, p_cpu, p_gpu, pool_gpu in rows:
        print(
            f"| {name} | {1e3 * t_cpu:.1f} | {1e3 * t_gpu:.1f} | {t_cpu / t_gpu:.2f}x | "
            f"{p_cpu} / {p_gpu} | {pool_gpu / 1e6:.1f} |"
        )


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bench-only", action="store_true")
    ap.add_argument("--tests-only", action="store_true")
    ap.add_argument("--n", type=int, default=1_000_000, help="sin chain elements")
    ap.add_argument("--batch", type=int, default=4096)
    ap.add_argument("--width", type=int, default=1024)
    ap.add_argument("--repeats", type=int, default=5)
    args = ap.parse_args()
    _cupy()
    if not args.bench_only:
        here = os.path.dirname(os.path.abspath(__file__))
        rc = subprocess.call(
            [
                sys.executable,
                "-m",
                "pytest",
                "-q",
                "-rs",
                "-k",
                "cupy",
                os.path.join(here, "..", "tests", "backends"),
            ]
        )
        if rc:
            sys.exit(rc)
    if not args.tests_only:
        bench(args)


if __name__ == "__main__":
    main()
