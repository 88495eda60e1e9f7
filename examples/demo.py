"""gradcy in one minute: train a small network, then look at the memory of one long gradient.

    python examples/demo.py                # train, then profile the 100-dot chain at D=500
    python examples/demo.py --out DIR      # where the memory timeline PNG goes (default bench-out)
    python examples/demo.py --D 1000       # a larger chain
    python examples/demo.py --quick        # fewer epochs, D=200 (a few seconds)

Part 1 trains a 2-layer tanh network on a generated two-moons data set (NumPy's seeded RNG) with
gradcy.value_and_grad and Adam written inline, and prints the loss and accuracy as it goes.

Part 2 takes the gradient of F(x, z) = sum(z) after 100 steps of z = dot(x, z) three ways:
gradcy under gradcy.memory.profile, the same gradient written by hand in NumPy (the forward pass
keeps on a stack exactly what the backward pass needs, the backward pass pops it) and, when
autograd is installed, autograd. The chain, its inputs and the hand-written gradient are the
benchmarks' own (benchmarks/reference_gradients.py in this repository). Each run is traced by
tracemalloc and sampled every 2 ms by a thread, so the three memory curves share one time axis in
the PNG. The PNG needs matplotlib (pip install "gradcy[plot]"); without it the numbers are still
printed.
"""
import argparse
import gc
import os
import pathlib
import sys
import threading
import time
import tracemalloc

import numpy

import gradcy.numpy as gnp
from gradcy import memory, value_and_grad

# the workloads shared with the benchmarks: benchmarks/reference_gradients.py
sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "benchmarks"))
import reference_gradients as ref

SEED = 0
MiB = 2.0 ** 20


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
    return {"W1": rng.standard_normal((n_in, n_hidden)) / numpy.sqrt(n_in),
            "b1": numpy.zeros(n_hidden),
            "W2": rng.standard_normal(n_hidden) / numpy.sqrt(n_hidden),
            "b2": numpy.zeros(())}


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
    log(f"two moons: {len(X)} training points, {len(X_test)} test points; network 2-"
        f"{n_hidden}-1 (tanh), Adam, lr {lr}, batch {batch}; chance is 50%")
    for epoch in range(1, epochs + 1):
        order = rng.permutation(len(X))
        total = 0.0
        for start in range(0, len(X), batch):
            idx = order[start:start + batch]
            value, g = loss_and_grad(params, X[idx], y[idx])
            total += float(value) * len(idx)
            step += 1
            for k in params:
                m[k] = b1 * m[k] + (1 - b1) * g[k]
                v[k] = b2 * v[k] + (1 - b2) * g[k] ** 2
                m_hat = m[k] / (1 - b1 ** step)
                v_hat = v[k] / (1 - b2 ** step)
                params[k] = params[k] - lr * m_hat / (numpy.sqrt(v_hat) + eps)
        if epoch == 1 or epoch % max(1, epochs // 10) == 0 or epoch == epochs:
            log(f"epoch {epoch:3d}  loss {total / len(X):.4f}  train accuracy "
                f"{accuracy(params, X, y):6.1%}  test accuracy "
                f"{accuracy(params, X_test, y_test):6.1%}")
    final_loss = float(loss(params, X, y))
    train_acc, test_acc = accuracy(params, X, y), accuracy(params, X_test, y_test)
    log(f"final: loss {final_loss:.4f}, train accuracy {train_acc:.1%}, test accuracy "
        f"{test_acc:.1%} ({step} gradient steps in {time.perf_counter() - t0:.1f} s)")
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
        self.times.append(seconds)                 # close the curve at the end of the run
        self.bytes.append(self.bytes[-1] if self.bytes else 0.0)
        return result, seconds, peak


def profile_chain(D, log=print):
    """Run the gradient three ways under tracemalloc; returns ({label: dict(times, curve,
    seconds, peak, gradient, agrees)}, gradcy's MemoryProfile)."""
    x, z = ref.dotchain_inputs(D)
    impls = [("gradcy", lambda x, z: memory.profile(ref.dotchain(gnp))(x, z)),
             ("hand-written NumPy", ref.hand_dotchain)]
    try:
        import autograd
        import autograd.numpy as anp
    except ImportError:
        log("autograd is not installed: its curve is left out (pip install autograd)")
    else:
        impls.append((f"autograd {_version('autograd')}".strip(), autograd.grad(ref.dotchain(anp))))

    runs, prof = {}, None
    for k, (label, fn) in enumerate(impls, 1):
        log(f"[{k}/{len(impls)}] {label} ...", end="", flush=True)   # a dot a second, then the time
        sampler = _Sampler(tick=lambda: log(".", end="", flush=True))
        result, seconds, peak = sampler.run(fn, x, z)
        log(f" {seconds:.1f} s")
        if label == "gradcy":
            prof, result = result, result.gradient
        runs[label] = dict(times=sampler.times, curve=sampler.bytes, seconds=seconds,
                           peak=peak, gradient=result)
    hand = runs["hand-written NumPy"]["gradient"]
    for r in runs.values():
        r["agrees"] = bool(numpy.allclose(r["gradient"], hand, rtol=1e-7, atol=0.0))
    return runs, prof


def plot_chain(runs, D, path):
    """Left: memory over time of each run, on the same axes. Right: peaks and wall times."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (ax, bx) = plt.subplots(1, 2, figsize=(12, 4.6), width_ratios=(2.6, 1))
    colors = {"gradcy": "C0", "hand-written NumPy": "C2"}
    styles = {"gradcy": "-", "hand-written NumPy": "--"}
    for label, r in runs.items():
        ax.plot(r["times"], r["curve"], styles.get(label, "-."), lw=2,
                color=colors.get(label, "C3"), label=f"{label} (peak {r['peak']:.0f} MiB)")
    ax.set_xlabel("seconds since the start of the gradient")
    ax.set_ylabel("MiB allocated (tracemalloc)")
    ax.set_title(f"grad of sum(z) after {ref.DOT_STEPS} x  z = dot(x, z), D={D}")
    # the legend goes in a band above the highest peak, where no curve can run
    ax.set_ylim(0, max(r["peak"] for r in runs.values()) * 1.3)
    ax.legend(loc="upper center", ncol=len(runs), fontsize=8, handlelength=1.8,
              columnspacing=1.2, borderaxespad=0.3)
    ax.set_xlim(left=0)

    labels = list(runs)
    peaks = [runs[k]["peak"] for k in labels]
    bars = bx.bar(range(len(labels)), peaks, color=[colors.get(k, "C3") for k in labels])
    for b, k in zip(bars, labels):
        bx.annotate(f"{runs[k]['peak']:.0f} MiB\n{runs[k]['seconds']:.1f} s",
                    (b.get_x() + b.get_width() / 2, b.get_height()),
                    ha="center", va="bottom", fontsize=8)
    bx.set_xticks(range(len(labels)), [k.replace(" NumPy", "\nNumPy") for k in labels],
                  fontsize=8)
    bx.set_ylabel("peak MiB (tracemalloc)")
    bx.set_title("peak memory and wall time")
    bx.set_ylim(0, max(peaks) * 1.25 if peaks else 1)
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
                    "gradient beside a hand-written one (and autograd's).")
    ap.add_argument("--out", default="bench-out", help="directory of the PNG (default bench-out)")
    ap.add_argument("--D", type=int, default=None,
                    help="matrix size of the 100-dot chain (default 500, --quick 200)")
    ap.add_argument("--epochs", type=int, default=None, help="training epochs (default 60, "
                    "--quick 20)")
    ap.add_argument("--quick", action="store_true", help="fewer epochs, D=200 unless given")
    args = ap.parse_args(argv)
    D = args.D or (200 if args.quick else 500)
    epochs = args.epochs or (20 if args.quick else 60)
    t_start = time.perf_counter()

    print("== 1. training with gradcy.grad ==")
    _, final_loss, train_acc, test_acc = train(epochs)

    print()
    print(f"== 2. memory of one gradient: {ref.DOT_STEPS} chained dots, D={D} "
          f"({D * D * 8 / MiB:.1f} MiB per matrix) ==")
    runs, prof = profile_chain(D)
    hand_peak = runs["hand-written NumPy"]["peak"]
    for label, r in runs.items():
        ratio = f"{r['peak'] / hand_peak:.2f}x hand-written" if hand_peak else ""
        same = "same gradient" if r["agrees"] else "GRADIENT DIFFERS from the hand-written one"
        print(f"{label:>20}: peak {r['peak']:7.1f} MiB ({ratio}), {r['seconds']:.2f} s, {same}")
    top = prof.top_site()
    print(f"gradcy engine counters: peak saved + cotangent {prof.peak_bytes / MiB:.1f} MiB"
          + (f", {top[2] / MiB:.1f} MiB of it saved by {top[0]}" if top else ""))

    if _have_matplotlib():
        os.makedirs(args.out, exist_ok=True)
        path = os.path.abspath(os.path.join(args.out, f"memory_dotchain_D{D}.png"))
        plot_chain(runs, D, path)
        print(f"memory timeline: {path}")
    else:
        print("matplotlib is not installed: no PNG. Get it with  pip install \"gradcy[plot]\"  "
              "(or pip install matplotlib)")
    print(f"demo done in {time.perf_counter() - t_start:.0f} s")
    ok = test_acc > 0.9 and all(r["agrees"] for r in runs.values())
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
