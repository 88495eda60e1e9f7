"""gradcy's gradient and Hessian of the logistic loss on a Dask cluster against dask-glm's
hand-written ones (dask_glm.families.Logistic.gradient / .hessian, dask-glm 0.4.0), over a sweep
of data sizes.

    python benchmarks/dask_glm_compare.py                          # 0.1, 0.4, 1 and 4 GB of X
    python benchmarks/dask_glm_compare.py --sizes 0.1,0.4 --repeats 9
    python benchmarks/dask_glm_compare.py --gb 1                   # one size
    python benchmarks/dask_glm_compare.py --gb 0.1 --no-hessian --split   # client vs workers

Same LocalCluster (2 worker processes x 1 thread, --memory-limit each), same data (X: n x d
float64 of each size, in chunks of --chunk-mb MB, generated chunk-wise by dask.array.random;
persisted on the workers when it fits in --persist-gb, else regenerated on every evaluation:
out of core), same point w. Measured, alternating in one process, medians of --repeats:

- gradient: gradcy ``grad(loss)(w, X, y)`` (loss: dask-glm's own formula,
  sum(z + log1p(exp(-z))) - y . z with z = X @ w; --loss logaddexp for logaddexp(0, z) - y z)
  with NumPy w (gradcy computes the Dask gradient, one dask.compute) against
  ``Logistic.pointwise_gradient(w, X, y).compute()``;
- value and gradient: gradcy ``value_and_grad(loss)(w, X, y)`` (one dask.compute) against
  dask-glm's ``pointwise_loss`` and ``pointwise_gradient`` in one ``dask.compute`` (what its
  lbfgs does);
- Hessian-vector product: gradcy ``hessian_vector_product(loss)`` at a Dask w and v (lazy,
  computed) against ``Logistic.hessian(X.dot(w), X).compute()`` (the d x d Hessian dask-glm's
  newton computes per step; times @ v is free);
- Hessian: gradcy's full ``hessian(loss)`` at the NumPy w (forward mode over the gradient with
  the d unit tangents as one batch: one graph, one compute) against the same
  ``Logistic.hessian``.

For each, the graph's size (exact, independent of the load: gradcy.backends.graph_size, tasks
after dask.optimize, not counting the persisted chunks of X and y) beside dask-glm's, and for
the gradient also the tasks and layers as built (what the client makes and Dask optimizes on
every call); and the
largest resident memory of any worker, sampled every 0.2 s by a thread, against the limit.
Targets: gradient and value_and_grad <= 1.2x dask-glm's time, the Hessian-vector product <=
1.0x, the full Hessian <= 2x; graphs no larger; results equal to 1e-12 relative.
"""

import argparse
import dataclasses
import os
import statistics
import sys
import threading
import time
import warnings
from collections.abc import Callable

import numpy as onp


def _rss():
    import psutil

    return psutil.Process().memory_info().rss


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "--sizes",
        default="0.1,0.4,1,4",
        help="sizes of X in GB, comma-separated (default 0.1,0.4,1,4)",
    )
    ap.add_argument("--gb", type=float, default=None, help="one size of X in GB (for --sizes)")
    ap.add_argument("--d", type=int, default=20)
    ap.add_argument(
        "--chunk-mb",
        type=float,
        default=32.0,
        help="MB of X per chunk (default 32: 200,000 rows of 20 float64)",
    )
    ap.add_argument("--memory-limit", default="1.5GB")
    ap.add_argument(
        "--persist-gb",
        type=float,
        default=1.2,
        help="largest X kept on the workers (default 1.2); larger ones are "
        "regenerated on every evaluation (out of core)",
    )
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument(
        "--loss",
        default="loglike",
        choices=["loglike", "logaddexp"],
        help="loglike: dask-glm's formula z + log1p(exp(-z)) - y z (default); "
        "logaddexp: logaddexp(0, z) - y z",
    )
    ap.add_argument(
        "--no-hessian",
        action="store_true",
        help="skip the Hessian comparisons (Hessian-vector product, full Hessian)",
    )
    ap.add_argument(
        "--no-persist", action="store_true", help="regenerate X on every evaluation at every size"
    )
    ap.add_argument(
        "--split",
        action="store_true",
        help="also time computing each gradient's graph built once (gradcy's as "
        "grad computes it, dask-glm's), so the client's building time is the "
        "end-to-end time minus it",
    )
    args = ap.parse_args()
    sizes = [args.gb] if args.gb is not None else [float(t) for t in args.sizes.split(",")]
    try:
        import dask
        import dask.array
        import psutil  # noqa: F401 (the workers' memory, sampled by _rss)
        from dask.utils import parse_bytes
        from distributed import Client, LocalCluster

        with warnings.catch_warnings():
            warnings.simplefilter("ignore", FutureWarning)
            import dask_glm.families  # noqa: F401 (_one_size's Logistic)
    except ImportError as exc:
        sys.exit(
            f"dask_glm_compare.py needs dask, distributed, psutil and dask-glm==0.4.0 "
            f"(pip install -e '.[dask-glm]'): {exc}"
        )
    import gradcy.numpy as np

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

    cluster = LocalCluster(
        n_workers=2,
        threads_per_worker=1,
        processes=True,
        memory_limit=args.memory_limit,
        dashboard_address=None,
    )
    client = Client(cluster)
    limit = parse_bytes(args.memory_limit)
    print(
        f"2 workers x 1 thread, memory limit {args.memory_limit} each; dask "
        f"{dask.__version__}; loss {args.loss}; medians of {args.repeats} alternating runs"
    )
    run = Run(args=args, client=client, loss=loss, limit=limit)
    rows_out = [_one_size(gb, run) for gb in sizes]
    client.close()
    cluster.close()
    print()
    print(
        "| X | chunks | grad tasks gradcy / dask-glm | grad as built: tasks, layers | grad "
        "| value_and_grad tasks | value_and_grad | hvp tasks / dask-glm hessian | hvp "
        "| hessian tasks | hessian | load |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|")
    for r in rows_out:
        print("| " + " | ".join(r) + " |")


@dataclasses.dataclass(frozen=True)
class Run:
    """What every size's measurement shares: the parsed options, the cluster's client, the
    loss gradcy differentiates and each worker's memory limit in bytes."""

    args: argparse.Namespace
    client: object
    loss: Callable
    limit: int


def _one_size(gb, run):
    """Times and graph sizes at one size of X; the table's row."""
    import dask
    import dask.array as da
    from distributed import wait

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        from dask_glm.families import Logistic
    from gradcy import grad, hessian, hessian_vector_product, value_and_grad
    from gradcy.backends import graph_size, recording_computes

    args, client, loss, limit = run.args, run.client, run.loss, run.limit
    n = int(gb * 1e9 / (8 * args.d))
    rows = max(1000, int(args.chunk_mb * 1e6 / (8 * args.d)))
    rs = da.random.RandomState(0)
    X = rs.standard_normal((n, args.d), chunks=(rows, args.d))
    y = (rs.random_sample(n, chunks=rows) < 0.5).astype(float)
    persist = not args.no_persist and gb <= args.persist_gb
    data = ()
    if persist:
        X, y = client.persist([X, y])
        wait([X, y])
        data = (X, y)
    w = onp.linspace(-0.5, 0.5, args.d)
    print(
        f"X {X.shape} float64 {X.nbytes / 1e9:.2f} GB in {X.numblocks[0]} chunks, "
        f"{'persisted' if persist else 'regenerated per evaluation (out of core)'}",
        flush=True,
    )

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
        return dask.compute(Logistic.pointwise_loss(w, X, y), Logistic.pointwise_gradient(w, X, y))

    runs = {
        "gradcy grad": lambda: grad(loss)(w, X, y),
        "dask-glm gradient": lambda: Logistic.pointwise_gradient(w, X, y).compute(),
        "gradcy value_and_grad": lambda: value_and_grad(loss)(w, X, y)[1],
        "dask-glm value_and_grad": lambda: glm_value_and_grad()[1],
    }
    if not args.no_hessian:
        runs["gradcy hvp"] = lambda: hessian_vector_product(loss)(wd, X, y, vd).compute()
        runs["dask-glm hessian"] = lambda: Logistic.hessian(X.dot(w), X).compute()
        runs["gradcy hessian"] = lambda: hessian(loss)(w, X, y)

    # graph sizes (exact): the graphs gradcy computes, captured once, beside dask-glm's
    with recording_computes() as computes:
        grad(loss)(w, X, y)
    if args.split:
        graph = computes[0]
        glm_built = Logistic.pointwise_gradient(w, X, y)
        runs["gradcy grad, graph built"] = lambda: dask.compute(*graph)[0]
        runs["dask-glm gradient, graph built"] = lambda: glm_built.compute()
    mine = graph_size(*computes[0], data=data)
    theirs = graph_size(Logistic.pointwise_gradient(w, X, y), data=data)
    tasks = {"grad": mine["optimized_tasks"], "glm grad": theirs["optimized_tasks"]}
    built = f"{mine['tasks']} / {theirs['tasks']}, {mine['layers']} / {theirs['layers']}"
    with recording_computes() as computes:
        value_and_grad(loss)(w, X, y)
    tasks["vag"] = graph_size(*computes[0], data=data)["optimized_tasks"]
    tasks["glm vag"] = graph_size(
        Logistic.pointwise_loss(w, X, y), Logistic.pointwise_gradient(w, X, y), data=data
    )["optimized_tasks"]
    if not args.no_hessian:
        tasks["hvp"] = graph_size(hessian_vector_product(loss)(wd, X, y, vd), data=data)[
            "optimized_tasks"
        ]
        tasks["glm hessian"] = graph_size(Logistic.hessian(X.dot(w), X), data=data)[
            "optimized_tasks"
        ]
        with recording_computes() as computes:
            hessian(loss)(w, X, y)
        tasks["hessian"] = graph_size(*computes[0], data=data)["optimized_tasks"]

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
    load = "/".join(f"{a:.1f}" for a in os.getloadavg())
    workers = len(client.scheduler_info()["workers"])

    def rel(a, b):
        return float(onp.max(onp.abs(a - b)) / onp.max(onp.abs(b)))

    med = {k: statistics.median(t) for k, t in times.items()}
    print("| computation | median s | vs dask-glm | tasks (optimized) |")
    print("|---|---:|---:|---:|")
    pairs = [
        ("grad", "dask-glm gradient", "grad", "glm grad"),
        ("value_and_grad", "dask-glm value_and_grad", "vag", "glm vag"),
    ]
    if not args.no_hessian:
        pairs.append(("hvp", "dask-glm hessian", "hvp", "glm hessian"))
        pairs.append(("hessian", "dask-glm hessian", "hessian", "glm hessian"))
    ratio = {}
    for what, other, t_mine, t_other in pairs:
        ratio[what] = med["gradcy " + what] / med[other]
        print(
            f"| gradcy {what} | {med['gradcy ' + what]:.3f} | {ratio[what]:.2f}x | "
            f"{tasks.get(t_mine, '')} |"
        )
        print(f"| {other} | {med[other]:.3f} | 1.00x | {tasks.get(t_other, '')} |")
    if args.split:
        for name in ("gradcy grad", "dask-glm gradient"):
            m = med[name + ", graph built"]
            print(
                f"{name}: computing the graph built once {m:.3f} s; building it "
                f"{med[name] - m:.3f} s (end to end minus computing)"
            )
    print(f"gradient's graph as built, gradcy / dask-glm: tasks {built.replace(', ', '; layers ')}")
    print(
        f"gradient max relative difference "
        f"{rel(results['gradcy grad'], results['dask-glm gradient']):.1e}, value_and_grad's "
        f"{rel(results['gradcy value_and_grad'], results['dask-glm gradient']):.1e}"
    )
    if not args.no_hessian:
        print(
            f"hvp max relative difference (vs dask-glm's hessian @ v) "
            f"{rel(results['gradcy hvp'], results['dask-glm hessian'] @ v):.1e}"
        )
    if not args.no_hessian:
        print(
            f"hessian max relative difference "
            f"{rel(results['gradcy hessian'], results['dask-glm hessian']):.1e}"
        )
    print(
        f"largest worker RSS sampled: {peak[0] / 1e9:.2f} GB of {limit / 1e9:.2f} GB limit; "
        f"workers alive: {workers} of 2; load average {load}",
        flush=True,
    )
    client.cancel([X, y])
    na = "n/a"
    return [
        f"{X.nbytes / 1e9:.2f} GB{'' if persist else ' (out of core)'}",
        str(X.numblocks[0]),
        f"{tasks['grad']} / {tasks['glm grad']}",
        built,
        f"{ratio['grad']:.2f}x",
        f"{tasks['vag']} / {tasks['glm vag']}",
        f"{ratio['value_and_grad']:.2f}x",
        f"{tasks['hvp']} / {tasks['glm hessian']}" if "hvp" in tasks else na,
        f"{ratio['hvp']:.2f}x" if "hvp" in ratio else na,
        f"{tasks['hessian']} / {tasks['glm hessian']}" if "hessian" in tasks else na,
        f"{ratio['hessian']:.2f}x" if "hessian" in ratio else na,
        load,
    ]


if __name__ == "__main__":
    main()
