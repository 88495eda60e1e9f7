"""Logistic regression on a Dask array larger than a worker's memory, fitted with gradcy.

    python examples/dask_logistic.py                      # 0.2 GB: a quick run
    python examples/dask_logistic.py --gb 4               # 4 GB of float64, 2 workers x 1.5 GB
    python examples/dask_logistic.py --gb 0.5 --method newton-cg --no-dask-glm

The design matrix X (n x d, float64, --gb gigabytes) and the labels y are generated chunk by
chunk with dask.array.random and never persisted: each evaluation regenerates the chunks on the
workers (seeded, so every evaluation sees the same data), streams them through the graph and
keeps only per-chunk partial sums, so X may be larger than the workers' memory together. The
loss is written once, in gradcy.numpy (dask-glm's Logistic.pointwise_loss formula):

    loss(w, X, y) = sum(z + log1p(exp(-z))) - y . z,    z = X @ w

and gradcy differentiates it on the Dask arrays as they are. Steps, each computed on the
cluster with distributed's progress bar:

1. the gradient at w0 from ``grad(loss)`` against dask-glm 0.4's hand-written
   ``Logistic.gradient`` (time of each, --repeats alternating runs, and the relative
   difference);
2. a fit by scipy.optimize.minimize with gradcy's derivatives: L-BFGS-B on ``value_and_grad``
   (value and gradient in one dask.compute), or Newton-CG on ``hessian_vector_product``;
3. dask-glm's own ``lbfgs`` and ``newton`` on the same cluster and data, and the difference of
   the optima;
4. the largest resident memory of any worker (sampled every 0.2 s) against the limit, and the
   workers' memory warnings (spilling, pausing, restarts) from their logs.

Needs: pip install -e ".[dask]" (Dask, distributed, SciPy, psutil); for the dask-glm steps
pip install -e ".[dask-glm]" (or run with --no-dask-glm).
"""

import argparse
import statistics
import sys
import threading
import time
import warnings

import numpy as onp


def make_data(da, gb, d, chunk_mb, seed):
    """X (n x d) and y generated chunk-wise; the true coefficients."""
    n = int(gb * 1e9 / (8 * d))
    rows = max(1000, int(chunk_mb * 1e6 / (8 * d)))
    rs = da.random.RandomState(seed)
    X = rs.standard_normal((n, d), chunks=(rows, d))
    beta = onp.linspace(-1.0, 1.0, d)
    u = rs.random_sample(n, chunks=rows)
    y = (u < 1.0 / (1.0 + da.exp(-(X @ beta)))).astype(onp.float64)
    return X, y, beta


def _rss():
    import psutil

    return psutil.Process().memory_info().rss


class MemoryWatch:
    """The largest RSS of any worker, sampled every 0.2 s on a thread."""

    def __init__(self, client):
        self.client, self.peak = client, 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self):
        while not self._stop.is_set():
            try:
                self.peak = max(self.peak, max(self.client.run(_rss).values()))
            except Exception:
                pass
            self._stop.wait(0.2)

    def stop(self):
        self._stop.set()
        self._thread.join()
        return self.peak


_MEMORY_WORDS = ("memory", "spill", "pausing", "paused", "restart", "killed")


def memory_warnings(client):
    """The workers' and nannies' log lines about memory (spilling, pausing, restarts)."""
    lines = []
    for logs in (client.get_worker_logs(), client.get_worker_logs(nanny=True)):
        for addr, entries in logs.items():
            for level, msg in entries:
                if level in ("WARNING", "ERROR", "CRITICAL") and any(
                    w in msg.lower() for w in _MEMORY_WORDS
                ):
                    lines.append(f"{addr} {level}: {msg.splitlines()[0][:160]}")
    return lines


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--gb", type=float, default=0.2, help="size of X in GB (default 0.2)")
    ap.add_argument("--d", type=int, default=20, help="features (default 20)")
    ap.add_argument("--chunk-mb", type=float, default=64.0, help="chunk size in MB")
    ap.add_argument("--memory-limit", default="1.5GB", help="per worker (default 1.5GB)")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--method", default="L-BFGS-B", choices=["L-BFGS-B", "newton-cg"])
    ap.add_argument("--maxiter", type=int, default=100)
    ap.add_argument(
        "--repeats",
        type=int,
        default=3,
        help="alternating gradient timings, gradcy vs dask-glm (default 3)",
    )
    ap.add_argument(
        "--dask-glm",
        default="both",
        choices=["both", "newton", "lbfgs"],
        help="dask-glm's solvers to compare with (default both)",
    )
    ap.add_argument("--no-dask-glm", action="store_true", help="skip the dask-glm comparison")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()

    try:
        import dask.array as da
        from distributed import Client, LocalCluster, progress
        from scipy.optimize import minimize
    except ImportError as exc:
        sys.exit(
            f"dask_logistic.py needs dask, distributed, scipy and psutil "
            f"(pip install -e '.[dask]'): {exc}"
        )
    Logistic = None
    if not args.no_dask_glm:
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", FutureWarning)
                from dask_glm.algorithms import lbfgs, newton
                from dask_glm.families import Logistic
        except ImportError as exc:
            print(f"dask-glm not installed ({exc}); pip install -e '.[dask-glm]' to compare")
    import gradcy.numpy as np
    from gradcy import grad, hessian_vector_product, value_and_grad

    def loss(w, X, y):
        z = X @ w
        return np.sum(z + np.log1p(np.exp(-z))) - np.dot(y, z)

    cluster = LocalCluster(
        n_workers=args.workers,
        threads_per_worker=1,
        processes=True,
        memory_limit=args.memory_limit,
        dashboard_address=None,
    )
    client = Client(cluster)
    watch = MemoryWatch(client)
    X, y, beta = make_data(da, args.gb, args.d, args.chunk_mb, args.seed)
    print(
        f"X: {X.shape} float64, {X.nbytes / 1e9:.2f} GB in {X.numblocks[0]} chunks of "
        f"{X.chunks[0][0]} rows, generated per evaluation; {args.workers} workers x "
        f"{args.memory_limit}"
    )

    def run(*lazy):
        """Compute lazy results on the cluster together, with distributed's progress bar."""
        futures = client.compute(list(lazy))
        progress(futures, notebook=False)
        print()
        return client.gather(futures)

    # 1. the gradient at w0, gradcy against dask-glm's hand-written one
    w0 = onp.zeros(args.d)
    if Logistic is not None and args.repeats > 0:
        times = {"gradcy grad": [], "dask-glm gradient": []}
        for _ in range(args.repeats):
            t0 = time.perf_counter()
            (lazy,) = [grad(loss)(da.from_array(w0, chunks=-1), X, y)]
            (g_gradcy,) = run(lazy)
            times["gradcy grad"].append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", FutureWarning)
                (g_glm,) = run(Logistic.gradient(X.dot(w0), X, y))
            times["dask-glm gradient"].append(time.perf_counter() - t0)
        med = {k: statistics.median(v) for k, v in times.items()}
        rel = onp.max(onp.abs(g_gradcy - g_glm)) / onp.max(onp.abs(g_glm))
        print(
            f"gradient at w0, median of {args.repeats}: gradcy {med['gradcy grad']:.2f} s, "
            f"dask-glm {med['dask-glm gradient']:.2f} s "
            f"({med['gradcy grad'] / med['dask-glm gradient']:.2f}x); "
            f"max relative difference {rel:.1e}"
        )

    # 2. the fit with gradcy's derivatives
    evaluations = []

    def fun(w):
        # a Dask parameter: the value and the gradient come back lazy, as one graph
        v, g = value_and_grad(loss)(da.from_array(w, chunks=-1), X, y)
        v, g = run(v, g)
        evaluations.append(float(v))
        print(f"  eval {len(evaluations)}: loss {float(v):.12g}  |grad| {onp.linalg.norm(g):.3g}")
        return float(v), onp.asarray(g, dtype=onp.float64)

    def hessp(w, p):
        (h,) = run(
            hessian_vector_product(loss)(
                da.from_array(w, chunks=-1), X, y, da.from_array(p, chunks=-1)
            )
        )
        return onp.asarray(h, dtype=onp.float64)

    n = X.shape[0]
    t0 = time.perf_counter()
    if args.method == "newton-cg":
        res = minimize(
            fun,
            w0,
            jac=True,
            method="newton-cg",
            hessp=hessp,
            options={"maxiter": args.maxiter, "xtol": 1e-10},
        )
    else:
        # the loss is a sum over n rows: a gradient tolerance relative to n
        res = minimize(
            fun,
            w0,
            jac=True,
            method="L-BFGS-B",
            options={"maxiter": args.maxiter, "gtol": 1e-9 * n, "ftol": 1e-15},
        )
    t_fit = time.perf_counter() - t0
    print(
        f"gradcy + scipy {args.method}: {res.nit} iterations, {len(evaluations)} "
        f"evaluations, {t_fit:.1f} s, converged: {res.success} ({res.message})"
    )
    print(f"  w = {onp.array2string(res.x, precision=5)}")
    print(f"  true coefficients = {onp.array2string(beta, precision=3)}")

    # 3. dask-glm's own solvers
    if Logistic is not None:
        # newton's tol: on the change of w; lbfgs's: on the gradient, absolute (the loss is a
        # sum over n rows, so it is scaled like the gradient tolerance above)
        solvers = {"newton": (newton, 1e-8), "lbfgs": (lbfgs, 1e-9 * n)}
        for name in ("newton", "lbfgs") if args.dask_glm == "both" else (args.dask_glm,):
            solver, tol = solvers[name]
            t0 = time.perf_counter()
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", FutureWarning)
                b = onp.asarray(solver(X, y, max_iter=args.maxiter, tol=tol))
            dt = time.perf_counter() - t0
            rel = onp.linalg.norm(b - res.x) / onp.linalg.norm(b)
            print(
                f"dask-glm {name}: {dt:.1f} s, w = {onp.array2string(b, precision=5)}; "
                f"|w_gradcy - w_dask_glm| / |w_dask_glm| = {rel:.2e}"
            )

    # 4. memory
    peak = watch.stop()
    alive = len(client.scheduler_info()["workers"])
    print(
        f"largest worker RSS sampled: {peak / 1e9:.2f} GB (limit {args.memory_limit}); "
        f"workers alive: {alive} of {args.workers}"
    )
    lines = memory_warnings(client)
    print(f"worker memory warnings: {len(lines)}")
    for line in lines[:10]:
        print("  " + line)
    client.close()
    cluster.close()


if __name__ == "__main__":
    main()
