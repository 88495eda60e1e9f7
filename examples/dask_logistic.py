"""Logistic regression on a Dask array larger than a worker's memory, fitted with gradcy.

    python examples/dask_logistic.py                     # 4 GB of float64, 2 workers x 1.5 GB
    python examples/dask_logistic.py --gb 0.2 --method newton-cg
    python examples/dask_logistic.py --gb 0.5 --no-dask-glm

The design matrix X (n x d, float64, --gb gigabytes) and the labels y are generated chunk by
chunk with dask.array.random, so no process ever holds them: each evaluation regenerates the
chunks on the workers (seeded, so every evaluation sees the same data), streams them through the
graph and keeps only per-chunk partial sums. The loss is written once, in gradcy.numpy:

    loss(w, X, y) = sum(logaddexp(0, X @ w) - y * (X @ w))

and gradcy differentiates it on the Dask arrays as they are: ``value_and_grad(loss)`` with a
Dask parameter gives a lazy value and a lazy gradient (chunks of the parameter), which the
example computes together on the cluster with distributed's progress bar; Newton-CG gets its
Hessian-vector products from ``hessian_vector_product``. scipy.optimize.minimize drives the
fit (L-BFGS-B by default). The optimum is compared with dask-glm 0.4's own lbfgs and newton
on the same cluster and data (when dask-glm is installed: pip install dask-glm==0.4.0).

Needs: pip install -e ".[dask]" scipy (and dask-glm==0.4.0 for the comparison).
"""
import argparse
import sys
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


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--gb", type=float, default=4.0, help="size of X in GB (default 4)")
    ap.add_argument("--d", type=int, default=20, help="features (default 20)")
    ap.add_argument("--chunk-mb", type=float, default=64.0, help="chunk size in MB")
    ap.add_argument("--memory-limit", default="1.5GB", help="per worker (default 1.5GB)")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--method", default="L-BFGS-B", choices=["L-BFGS-B", "newton-cg"])
    ap.add_argument("--maxiter", type=int, default=50)
    ap.add_argument("--no-dask-glm", action="store_true", help="skip the dask-glm comparison")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()

    try:
        import dask.array as da
        from distributed import Client, LocalCluster, progress
        from scipy.optimize import minimize
    except ImportError as exc:
        sys.exit(f"dask_logistic.py needs dask, distributed and scipy "
                 f"(pip install -e '.[dask]' scipy): {exc}")
    import gradcy.numpy as np
    from gradcy import hessian_vector_product, value_and_grad

    def loss(w, X, y):
        z = X @ w
        return np.sum(np.logaddexp(0.0, z) - y * z)

    cluster = LocalCluster(n_workers=args.workers, threads_per_worker=1, processes=True,
                           memory_limit=args.memory_limit, dashboard_address=None)
    client = Client(cluster)
    X, y, beta = make_data(da, args.gb, args.d, args.chunk_mb, args.seed)
    print(f"X: {X.shape} float64, {X.nbytes / 1e9:.2f} GB in {X.numblocks[0]} chunks of "
          f"{X.chunks[0][0]} rows; {args.workers} workers x {args.memory_limit}")

    def run(*lazy):
        """Compute lazy results on the cluster together, with distributed's progress bar."""
        futures = client.compute(list(lazy))
        progress(futures, notebook=False)
        print()
        return client.gather(futures)

    chunks = ((args.d,),)
    evaluations = []

    def fun(w):
        # a Dask parameter: the value and the gradient come back lazy, as one graph
        v, g = value_and_grad(loss)(da.from_array(w, chunks=chunks), X, y)
        v, g = run(v, g)
        evaluations.append(float(v))
        print(f"  eval {len(evaluations)}: loss {float(v):.10g}  |grad| "
              f"{onp.linalg.norm(g):.3g}")
        return float(v), onp.asarray(g, dtype=onp.float64)

    def hessp(w, p):
        (h,) = run(hessian_vector_product(loss)(da.from_array(w, chunks=chunks), X, y,
                                                da.from_array(p, chunks=chunks)))
        return onp.asarray(h, dtype=onp.float64)

    w0 = onp.zeros(args.d)
    t0 = time.perf_counter()
    res = minimize(fun, w0, jac=True, method=args.method,
                   hessp=hessp if args.method == "newton-cg" else None,
                   options={"maxiter": args.maxiter})
    t_gradcy = time.perf_counter() - t0
    print(f"gradcy + scipy {args.method}: {res.nit} iterations, {len(evaluations)} evaluations, "
          f"{t_gradcy:.1f} s, converged: {res.success} ({res.message})")
    print(f"  w = {onp.array2string(res.x, precision=5)}")
    print(f"  true coefficients = {onp.array2string(beta, precision=3)}")

    if not args.no_dask_glm:
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", FutureWarning)
                from dask_glm.algorithms import lbfgs, newton
        except ImportError as exc:
            print(f"dask-glm not installed ({exc}); pip install dask-glm==0.4.0 to compare")
        else:
            for name, solver in (("lbfgs", lbfgs), ("newton", newton)):
                t0 = time.perf_counter()
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", FutureWarning)
                    b = onp.asarray(solver(X, y, max_iter=args.maxiter))
                dt = time.perf_counter() - t0
                rel = onp.linalg.norm(b - res.x) / onp.linalg.norm(b)
                print(f"dask-glm {name}: {dt:.1f} s, w = {onp.array2string(b, precision=5)}; "
                      f"|w_gradcy - w_dask_glm| / |w_dask_glm| = {rel:.2e}")
    client.close()
    cluster.close()


if __name__ == "__main__":
    main()
