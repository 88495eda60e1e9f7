"""gradcy's gradient and Hessian of the logistic loss on a Dask cluster against dask-glm's
hand-written ones (dask_glm.families.Logistic.gradient / .hessian, dask-glm 0.4.0).

    python benchmarks/dask_glm_compare.py                   # 1 GB of X, persisted
    python benchmarks/dask_glm_compare.py --gb 3 --no-persist --repeats 3

Same LocalCluster (2 worker processes x 1 thread, --memory-limit each), same data (X: n x d
float64 of --gb GB, generated chunk-wise by dask.array.random and persisted on the workers
unless --no-persist), same point w. Measured, interleaved, medians of --repeats:

- gradient: gradcy ``grad(loss)(w, X, y)`` (loss: dask-glm's own formula,
  sum(z + log1p(exp(-z))) - y . z with z = X @ w; --loss logaddexp for logaddexp(0, z) - y z)
  with NumPy w (gradcy computes the Dask gradient,
  one dask.compute) against ``Logistic.gradient(X.dot(w), X, y).compute()``;
- value and gradient: gradcy ``value_and_grad(loss)(w, X, y)`` (one dask.compute) against
  dask-glm's ``pointwise_loss`` and ``gradient`` in one ``dask.compute`` (what its lbfgs does);
- Hessian-vector product: gradcy ``hessian_vector_product(loss)`` at a Dask w and v (lazy,
  computed) against ``Logistic.hessian(X.dot(w), X).compute()`` (the d x d Hessian dask-glm's
  newton computes per step; times @ v is free);
- with --hessian also gradcy's full ``hessian(loss)`` (d Hessian-vector products in one graph).

Also: the largest resident memory of any worker, sampled every 0.2 s by a thread, against the
limit, and the relative difference of the results (target: gradient time <= 1.2x dask-glm's,
no worker over its limit, results equal to 1e-12 relative).
"""
import argparse
import statistics
import sys
import threading
import time
import warnings

import numpy as onp


def _rss():
    import psutil
    return psutil.Process().memory_info().rss


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--gb", type=float, default=1.0, help="size of X in GB (default 1)")
    ap.add_argument("--d", type=int, default=20)
    ap.add_argument("--chunk-mb", type=float, default=64.0)
    ap.add_argument("--memory-limit", default="1.5GB")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--loss", default="loglike", choices=["loglike", "logaddexp"],
                    help="loglike: dask-glm's formula z + log1p(exp(-z)) - y z (default); "
                         "logaddexp: logaddexp(0, z) - y z")
    ap.add_argument("--no-hessian", action="store_true", help="skip the Hessian comparisons")
    ap.add_argument("--hessian", action="store_true", help="also gradcy's full hessian")
    ap.add_argument("--no-persist", action="store_true",
                    help="regenerate X on every evaluation instead of keeping it on the workers")
    args = ap.parse_args()
    try:
        import dask
        import dask.array as da
        from dask.utils import parse_bytes
        from distributed import Client, LocalCluster, wait
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", FutureWarning)
            from dask_glm.families import Logistic
    except ImportError as exc:
        sys.exit(f"dask_glm_compare.py needs dask, distributed, psutil and dask-glm==0.4.0 "
                 f"(pip install -e '.[dask-glm]'): {exc}")
    import gradcy.numpy as np
    from gradcy import grad, hessian, hessian_vector_product, value_and_grad

    def loss(w, X, y):
        """dask-glm's Logistic.pointwise_loss, written in gradcy.numpy."""
        z = X @ w
        return np.sum(z + np.log1p(np.exp(-z))) - np.dot(y, z)

    def loss_logaddexp(w, X, y):
        """The same loss through numpy.logaddexp (about 4x slower per element than exp)."""
        z = X @ w
        return np.sum(np.logaddexp(0.0, z) - y * z)
    if args.loss == "logaddexp":
        loss = loss_logaddexp

    cluster = LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                           memory_limit=args.memory_limit, dashboard_address=None)
    client = Client(cluster)
    limit = parse_bytes(args.memory_limit)
    n = int(args.gb * 1e9 / (8 * args.d))
    rows = max(1000, int(args.chunk_mb * 1e6 / (8 * args.d)))
    rs = da.random.RandomState(0)
    X = rs.standard_normal((n, args.d), chunks=(rows, args.d))
    y = (rs.random_sample(n, chunks=rows) < 0.5).astype(float)
    if not args.no_persist:
        X, y = client.persist([X, y])
        wait([X, y])
    w = onp.linspace(-0.5, 0.5, args.d)
    print(f"X {X.shape} float64 {X.nbytes / 1e9:.2f} GB in {X.numblocks[0]} chunks, "
          f"{'persisted' if not args.no_persist else 'regenerated per evaluation'}; "
          f"2 workers x 1 thread, memory limit {args.memory_limit} each; dask {dask.__version__}")

    peak = [0]
    stop = threading.Event()

    def sample():
        while not stop.is_set():
            try:
                peak[0] = max(peak[0], max(client.run(_rss).values()))
            except Exception:
                pass
            stop.wait(0.2)
    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()

    wd = da.from_array(w)
    v = onp.cos(onp.arange(args.d))
    vd = da.from_array(v)

    def glm_value_and_grad():
        z = X.dot(w)
        return dask.compute(Logistic.pointwise_loss(w, X, y), Logistic.gradient(z, X, y))

    runs = {
        "gradcy grad": lambda: grad(loss)(w, X, y),
        "dask-glm gradient": lambda: Logistic.gradient(X.dot(w), X, y).compute(),
        "gradcy value_and_grad": lambda: value_and_grad(loss)(w, X, y)[1],
        "dask-glm value_and_grad": lambda: glm_value_and_grad()[1],
    }
    if not args.no_hessian:
        runs["gradcy hvp"] = lambda: hessian_vector_product(loss)(wd, X, y, vd).compute()
        runs["dask-glm hessian"] = lambda: Logistic.hessian(X.dot(w), X).compute()
    if args.hessian:
        runs["gradcy hessian"] = lambda: hessian(loss)(wd, X, y).compute()
    results, times = {}, {k: [] for k in runs}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        for _ in range(args.repeats):
            for name, fn in runs.items():
                t0 = time.perf_counter()
                results[name] = onp.asarray(fn())
                times[name].append(time.perf_counter() - t0)
    stop.set()
    sampler.join()
    workers = len(client.scheduler_info()["workers"])

    def rel(a, b):
        return float(onp.max(onp.abs(a - b)) / onp.max(onp.abs(b)))

    med = {k: statistics.median(v) for k, v in times.items()}
    print(f"| computation | median s ({args.repeats} runs) | vs dask-glm |")
    print("|---|---:|---:|")
    pairs = [("grad", "dask-glm gradient"), ("value_and_grad", "dask-glm value_and_grad")]
    if not args.no_hessian:
        pairs.append(("hvp", "dask-glm hessian"))
    if args.hessian:
        pairs.append(("hessian", "dask-glm hessian"))
    for what, other in pairs:
        print(f"| gradcy {what} | {med['gradcy ' + what]:.3f} | "
              f"{med['gradcy ' + what] / med[other]:.2f}x |")
        print(f"| {other} | {med[other]:.3f} | 1.00x |")
    print(f"loss: {args.loss}; gradient max relative difference "
          f"{rel(results['gradcy grad'], results['dask-glm gradient']):.1e}, value_and_grad's "
          f"{rel(results['gradcy value_and_grad'], results['dask-glm gradient']):.1e}")
    if not args.no_hessian:
        print(f"hvp max relative difference (vs dask-glm's hessian @ v) "
              f"{rel(results['gradcy hvp'], results['dask-glm hessian'] @ v):.1e}")
    if args.hessian:
        print(f"hessian max relative difference "
              f"{rel(results['gradcy hessian'], results['dask-glm hessian']):.1e}")
    print(f"largest worker RSS sampled: {peak[0] / 1e9:.2f} GB of {limit / 1e9:.2f} GB limit; "
          f"workers alive at the end: {workers} of 2")
    client.close()
    cluster.close()


if __name__ == "__main__":
    main()
