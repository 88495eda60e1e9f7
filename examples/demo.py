"""gradcy in one minute: train a small network, then look at the memory of one long gradient.

    python examples/demo.py                # train, then profile the 100-dot chain at D=500
    python examples/demo.py --out DIR      # where the memory timeline PNG goes (default bench-out)
    python examples/demo.py --D 1000       # a larger chain
    python examples/demo.py --quick        # fewer epochs, D=200 (a few seconds)
    python examples/demo.py --rounds 5     # five timed runs of each gradient (default 3)

Part 1 trains a 2-layer tanh network on a generated two-moons data set (NumPy's seeded RNG) with
gradcy.value_and_grad and Adam written inline, and prints the loss and accuracy as it goes.

Part 2 takes the gradient of F(x, z) = sum(z) after 100 steps of z = dot(x, z) three ways:
gradcy's grad, the same gradient written by hand in NumPy (the forward pass keeps on a stack
exactly what the backward pass needs, the backward pass pops it) and, when autograd is installed,
autograd's grad. The chain, its inputs and the hand-written gradient are the benchmarks' own
(benchmarks/reference_gradients.py in this repository). Each library is timed the same way: one
untimed warm-up call each (imports and first-call costs are paid there), then --rounds rounds of
one run each in rotating order, each run traced by tracemalloc and sampled every 2 ms by a
thread; the time shown is the median of the rounds, the memory curve that of the last round, so
the curves share one time axis in the PNG. The PNG's title says what to conclude: each peak and
time as a multiple of the hand-written gradient's. The PNG needs matplotlib (pip install
"gradcy[demo]", which also brings autograd); without it the numbers are still printed.

BLAS runs one thread (OMP/OPENBLAS/MKL_NUM_THREADS=1 unless set), as in the benchmarks: on a
busy machine a BLAS thread pool makes the matrix products of every library several times slower
and their times noisy.
"""

import os

os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("MKL_NUM_THREADS", "1")

import argparse
import gc
import pathlib
import statistics
import sys
import threading
import time
import tracemalloc

import numpy

import gradcy.numpy as gnp
from gradcy import grad, memory, value_and_grad

# the workloads shared with the benchmarks: benchmarks/reference_gradients.py
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "benchmarks"))
import reference_gradients as ref

SEED = 0
MiB = 2.0**20


# =============================================================================
# Part 1: a small network on two moons
# =============================================================================
def two_moons(n, noise, rng):
    """n points in two interleaved half circles; labels 0 (upper moon) and 1 (lower moon)."""
    n0 = n // 2
    n1 = n - n0
    t0 = rng.uniform(0.0, numpy.pi, n0)
    t1 = rng.uniform(0.0, numpy.pi, n1)
    upper = numpy.stack([numpy.cos(t0), numpy.sin(t0)], axis=1)
    lower = numpy.stack([1.0 - numpy.cos(t1), 0.5 - numpy.sin(t1)], axis=1)
    X = numpy.concatenate([upper, lower]) + noise * rng.standard_normal((n, 2))
    y = numpy.concatenate([numpy.zeros(n0), numpy.ones(n1)])
    order = rng.permutation(n)
    return X[order], y[order]


def init_params(n_in, n_hidden, rng):
    return {
        "W1": rng.standard_normal((n_in, n_hidden)) / numpy.sqrt(n_in),
        "b1": numpy.zeros(n_hidden),
        "W2": rng.standard_normal(n_hidden) / numpy.sqrt(n_hidden),
        "b2": numpy.zeros(()),
    }


def logits(params, X):
    """Written with gradcy.numpy: the same code runs on arrays and, inside grad, on traced
    values."""
    h = gnp.tanh(gnp.dot(X, params["W1"]) + params["b1"])
    return gnp.dot(h, params["W2"]) + params["b2"]


def loss(params, X, y):
    """Mean binary cross-entropy of the logits, in the overflow-free form log(1 + e^s) - y s."""
    s = logits(params, X)
    return gnp.mean(gnp.logaddexp(0.0, s) - y * s)


def accuracy(params, X, y):
    return float(numpy.mean((numpy.asarray(logits(params, X)) > 0) == (y > 0.5)))


def train(epochs, batch=64, lr=0.02, n_hidden=32, log=print):
    """Minibatch Adam; returns (params, final train loss, train accuracy, test accuracy)."""
    rng = numpy.random.RandomState(SEED)
    X, y = two_moons(1024, 0.15, rng)
    X_test, y_test = two_moons(1024, 0.15, rng)
    params = init_params(2, n_hidden, rng)
    loss_and_grad = value_and_grad(loss)

    # Adam (Kingma & Ba), written out: first and second moment per parameter
    b1, b2, eps = 0.9, 0.999, 1e-8
    m = {k: numpy.zeros_like(v) for k, v in params.items()}
    v = {k: numpy.zeros_like(v) for k, v in params.items()}
    step = 0
    t0 = time.perf_counter()
    log(
        f"two moons: {len(X)} training points, {len(X_test)} test points; network 2-"
        f"{n_hidden}-1 (tanh), Adam, lr {lr}, batch {batch}; chance is 50%"
    )
    for epoch in range(1, epochs + 1):
        order = rng.permutation(len(X))
        total = 0.0
        for start in range(0, len(X), batch):
            idx = order[start : start + batch]
            value, g = loss_and_grad(params, X[idx], y[idx])
            total += float(value) * len(idx)
            step += 1
            for k in params:
                m[k] = b1 * m[k] + (1 - b1) * g[k]
                v[k] = b2 * v[k] + (1 - b2) * g[k] ** 2
                m_hat = m[k] / (1 - b1**step)
                v_hat = v[k] / (1 - b2**step)
                params[k] = params[k] - lr * m_hat / (numpy.sqrt(v_hat) + eps)
        if epoch == 1 or epoch % max(1, epochs // 10) == 0 or epoch == epochs:
            log(
                f"epoch {epoch:3d}  loss {total / len(X):.4f}  train accuracy "
                f"{accuracy(params, X, y):6.1%}  test accuracy "
                f"{accuracy(params, X_test, y_test):6.1%}"
            )
    final_loss = float(loss(params, X, y))
    train_acc, test_acc = accuracy(params, X, y), accuracy(params, X_test, y_test)
    log(
        f"final: loss {final_loss:.4f}, train accuracy {train_acc:.1%}, test accuracy "
        f"{test_acc:.1%} ({step} gradient steps in {time.perf_counter() - t0:.1f} s)"
    )
    return params, final_loss, train_acc, test_acc


# =============================================================================
# Part 2: memory of the 100-dot chain
# =============================================================================
def _version(dist):
    from importlib import metadata

    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return ""


class _Sampler:
    """tracemalloc's traced bytes every `interval` seconds, from a thread, with timestamps.

    NumPy releases the GIL inside BLAS, so samples keep coming during the large products; the
    peak comes from tracemalloc's own high-water mark, which misses nothing. tick(), when
    given, is called about once a second (a progress mark for runs that take seconds)."""

    def __init__(self, interval=0.002, tick=None):
        self.interval = interval
        self.tick = tick
        self.times, self.bytes = [], []
        self._stop = threading.Event()

    def _run(self, t0, base):
        get = tracemalloc.get_traced_memory
        next_tick = 1.0
        while not self._stop.is_set():
            now = time.perf_counter() - t0
            self.times.append(now)
            self.bytes.append((get()[0] - base) / MiB)
            if self.tick is not None and now >= next_tick:
                self.tick()
                next_tick += 1.0
            self._stop.wait(self.interval)

    def run(self, fn, *args):
        """fn(*args) under tracemalloc; returns (result, seconds, peak MiB)."""
        gc.collect()
        tracemalloc.start()
        try:
            base = tracemalloc.get_traced_memory()[0]
            tracemalloc.reset_peak()
            t0 = time.perf_counter()
            thread = threading.Thread(target=self._run, args=(t0, base), daemon=True)
            thread.start()
            try:
                result = fn(*args)
            finally:
                seconds = time.perf_counter() - t0
                self._stop.set()
                thread.join()
            peak = (tracemalloc.get_traced_memory()[1] - base) / MiB
        finally:
            tracemalloc.stop()
        self.times.append(seconds)  # close the curve at the end of the run
        self.bytes.append(self.bytes[-1] if self.bytes else 0.0)
        return result, seconds, peak


def chain_gradients():
    """[(label, gradient function of (x, z))]: gradcy's grad, the hand-written gradient and,
    when it is installed, autograd's grad, all of the same chain (reference_gradients)."""
    impls = [("gradcy", grad(ref.dotchain(gnp))), ("hand-written NumPy", ref.hand_dotchain)]
    try:
        import autograd
        import autograd.numpy as anp
    except ImportError:
        return impls
    return impls + [(f"autograd {_version('autograd')}".strip(), autograd.grad(ref.dotchain(anp)))]


def profile_chain(D, rounds=3, log=print):
    """Time and trace the gradient of the chain each way, the same fair way for each library.

    First one untimed warm-up call each (at D=8: imports, first-call caches and the allocator's
    first pages are paid there, not in a timed run); then `rounds` rounds, each calling every
    gradient once under tracemalloc and the 2 ms sampler, the order rotating from round to round
    so that no library always runs first. A library's time is the median of its rounds, its peak
    the largest of its rounds, its memory curve that of its last round. Then gradcy once more
    under gradcy.memory.profile (untimed) for the engine's own counters.

    Returns ({label: dict(times, curve, seconds, all_seconds, peak, gradient, agrees)},
    gradcy's MemoryProfile)."""
    x, z = ref.dotchain_inputs(D)
    impls = chain_gradients()
    if len(impls) == 2:
        log("autograd is not installed: its curve is left out (pip install autograd)")
    warm = ref.dotchain_inputs(8)
    for _, fn in impls:
        fn(*warm)
    runs = {label: dict(all_seconds=[], peaks=[]) for label, _ in impls}
    n = len(impls)
    for r in range(rounds):
        log(f"[round {r + 1}/{rounds}]", end="", flush=True)
        for label, fn in impls[r % n :] + impls[: r % n]:
            log(f" {label} ", end="", flush=True)  # a dot a second, then the time
            sampler = _Sampler(tick=lambda: log(".", end="", flush=True))
            result, seconds, peak = sampler.run(fn, x, z)
            log(f"{seconds:.2f} s", end="", flush=True)
            run = runs[label]
            run["all_seconds"].append(seconds)
            run["peaks"].append(peak)
            run.update(times=sampler.times, curve=sampler.bytes, gradient=result)
        log("")
    hand = runs["hand-written NumPy"]["gradient"]
    for r in runs.values():
        r["seconds"] = statistics.median(r["all_seconds"])
        r["peak"] = max(r.pop("peaks"))
        r["agrees"] = bool(numpy.allclose(r["gradient"], hand, rtol=1e-7, atol=0.0))
    prof = memory.profile(ref.dotchain(gnp))(x, z)
    return runs, prof


def _ratio(value, hand):
    return f"{value / hand:.2f}x" if hand > 0 else "n/a"


def late_hold(run):
    """The mean memory of the last quarter of a run, as a fraction of its peak: near 0 for a
    gradient that releases what it saved as the backward pass goes, near 1 for one that holds
    everything to the end."""
    t, m = numpy.asarray(run["times"]), numpy.asarray(run["curve"])
    late = m[t >= 0.75 * t[-1]] if len(t) else m
    return float(late.mean() / run["peak"]) if len(late) and run["peak"] > 0 else 0.0


def conclusion(runs):
    """The sentences a reader should take from the chart, from its numbers: each library's
    peak and median time as multiples of the hand-written gradient's, and how much of its peak
    each still holds in the last quarter of its run."""
    hand = runs["hand-written NumPy"]
    parts = []
    for label, r in runs.items():
        if label == "hand-written NumPy":
            continue
        parts.append(
            f"{label.split()[0]} peaks at {_ratio(r['peak'], hand['peak'])} its memory "
            f"and takes {_ratio(r['seconds'], hand['seconds'])} its time"
        )
    held = ", ".join(f"{label.split()[0]} {late_hold(r):.0%}" for label, r in runs.items())
    return (
        "Against the hand-written gradient: " + "; ".join(parts) + ".\n"
        f"Share of its peak each still holds in the last quarter of its run: {held}."
    )


def plot_chain(runs, D, path, rounds=None):
    """Left: memory over time of each library's last run, on the same axes. Right: each peak
    and median time as a multiple of the hand-written gradient's. The title is the
    conclusion (conclusion(runs))."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (ax, bx) = plt.subplots(1, 2, figsize=(12, 4.8), width_ratios=(2.3, 1))
    colors = {"gradcy": "C0", "hand-written NumPy": "C2"}
    styles = {"gradcy": "-", "hand-written NumPy": "--"}
    for label, r in runs.items():
        ax.plot(
            r["times"],
            r["curve"],
            styles.get(label, "-."),
            lw=2,
            color=colors.get(label, "C3"),
            label=f"{label} (peak {r['peak']:.0f} MiB)",
        )
    ax.set_xlabel("seconds since the start of the gradient (one run each)")
    ax.set_ylabel("MiB allocated (tracemalloc)")
    ax.set_title(
        f"memory during grad of sum(z) after {ref.DOT_STEPS} x  z = dot(x, z), D={D}", fontsize=10
    )
    # the legend goes in a band above the highest peak, where no curve can run
    ax.set_ylim(0, max(r["peak"] for r in runs.values()) * 1.3)
    ax.legend(
        loc="upper center",
        ncol=len(runs),
        fontsize=8,
        handlelength=1.8,
        columnspacing=1.2,
        borderaxespad=0.3,
    )
    ax.set_xlim(left=0)

    hand = runs["hand-written NumPy"]
    labels = list(runs)
    width = 0.38
    pos = numpy.arange(len(labels))
    peaks = [runs[k]["peak"] / max(hand["peak"], 1e-12) for k in labels]
    times = [runs[k]["seconds"] / max(hand["seconds"], 1e-12) for k in labels]
    for offset, values, hatch, what in (
        (-width / 2, peaks, None, "peak memory"),
        (width / 2, times, "//", "time (median)"),
    ):
        bars = bx.bar(
            pos + offset,
            values,
            width,
            label=what,
            hatch=hatch,
            edgecolor="white",
            color=[colors.get(k, "C3") for k in labels],
        )
        for b, v in zip(bars, values):
            bx.annotate(
                f"{v:.2f}x",
                (b.get_x() + b.get_width() / 2, b.get_height()),
                ha="center",
                va="bottom",
                fontsize=8,
            )
    bx.axhline(1.0, color="0.4", lw=0.8)
    bx.set_xticks(pos, [k.replace(" NumPy", "\nNumPy") for k in labels], fontsize=8)
    bx.set_ylabel("multiple of the hand-written gradient")
    timed = f"median of {rounds} interleaved runs" if rounds else "median of the runs"
    bx.set_title(f"solid: peak memory; hatched: time\n({timed}, after a warm-up)", fontsize=9)
    bx.set_ylim(0, max(peaks + times) * 1.2)
    fig.suptitle(conclusion(runs), fontsize=10, wrap=True)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def _have_matplotlib():
    try:
        import matplotlib  # noqa: F401  (availability check: ImportError without matplotlib)
    except ImportError:
        return False
    return True


def main(argv=None):
    ap = argparse.ArgumentParser(
        prog="python examples/demo.py",
        description="Train a small network with gradcy, then profile the memory of a long "
        "gradient beside a hand-written one (and autograd's).",
    )
    ap.add_argument("--out", default="bench-out", help="directory of the PNG (default bench-out)")
    ap.add_argument(
        "--D",
        type=int,
        default=None,
        help="matrix size of the 100-dot chain (default 500, --quick 200)",
    )
    ap.add_argument(
        "--epochs", type=int, default=None, help="training epochs (default 60, --quick 20)"
    )
    ap.add_argument(
        "--rounds",
        type=int,
        default=3,
        help="timed runs of each gradient, interleaved (default 3; the median is shown)",
    )
    ap.add_argument("--quick", action="store_true", help="fewer epochs, D=200 unless given")
    args = ap.parse_args(argv)
    D = args.D or (200 if args.quick else 500)
    epochs = args.epochs or (20 if args.quick else 60)
    t_start = time.perf_counter()

    print("== 1. training with gradcy.grad ==")
    _, final_loss, train_acc, test_acc = train(epochs)

    print()
    print(
        f"== 2. memory of one gradient: {ref.DOT_STEPS} chained dots, D={D} "
        f"({D * D * 8 / MiB:.1f} MiB per matrix) =="
    )
    print(
        f"each gradient once to warm up (D=8, untimed), then {args.rounds} rounds of one run "
        "each, in rotating order, under tracemalloc:"
    )
    runs, prof = profile_chain(D, rounds=args.rounds)
    hand = runs["hand-written NumPy"]
    print(f"{'':>20}  peak memory            time (median of {args.rounds})")
    for label, r in runs.items():
        same = "same gradient" if r["agrees"] else "GRADIENT DIFFERS from the hand-written one"
        print(
            f"{label:>20}: {r['peak']:7.1f} MiB "
            f"({_ratio(r['peak'], hand['peak'])} hand-written)  "
            f"{r['seconds']:6.2f} s ({_ratio(r['seconds'], hand['seconds'])})  {same}"
        )
    print(conclusion(runs))
    top = prof.top_site()
    print(
        f"gradcy engine counters: peak saved + cotangent {prof.peak_bytes / MiB:.1f} MiB"
        + (f", {top[2] / MiB:.1f} MiB of it saved by {top[0]}" if top else "")
    )

    if _have_matplotlib():
        os.makedirs(args.out, exist_ok=True)
        path = os.path.abspath(os.path.join(args.out, f"memory_dotchain_D{D}.png"))
        plot_chain(runs, D, path, rounds=args.rounds)
        print(f"memory timeline: {path}")
    else:
        print(
            'matplotlib is not installed: no PNG. Get it with  pip install "gradcy[demo]"  '
            "(or pip install matplotlib)"
        )
    print(f"demo done in {time.perf_counter() - t_start:.0f} s")
    ok = test_acc > 0.9 and all(r["agrees"] for r in runs.values())
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
