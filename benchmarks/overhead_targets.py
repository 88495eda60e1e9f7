"""gradcy's speed targets, measured side by side: runs interleaved in one process (one BLAS
thread), so every library sees the same machine load, and medians of the ratios.

    python benchmarks/overhead_targets.py [--rounds 15]

- overhead: grad of f(x) = sum after 1000 x = sin(x) * 1.0001 + 0.01 * x on 3 elements, against
  the hand-written NumPy gradient (reference_gradients.hand_sinchain), autograd 1.9.1 and
  PyTorch eager;
- untraced: gradcy.numpy.sin(x) against numpy.sin(x) on 3 elements;
- dotchain: grad of the 100-step z = dot(x, z) chain (D=500) against the hand-written gradient;
- dropped: the create-and-drop loop (grad of reference_gradients.dropped with respect to both
  arguments, 2x2) against its hand-written floor: the same loop in plain NumPy with the
  hand-written gradient (reference_gradients.hand_dropped: the forward pass as the user wrote
  it, then the gradients ones_like(b) and zeros_like(a)). Also printed: against the plain NumPy
  forward pass alone (no gradient), a lower floor that no gradient can reach.

Targets (gradcy issue 13): overhead <= 1.5x and dropped <= 1.4x the hand-written floor.
"""

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = "1"

import argparse
import statistics
import sys
import time
import timeit

import numpy as onp

import gradcy.numpy as gnp
import reference_gradients as ref
from gradcy import grad


def once(fn):
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def interleaved_medians(runs, rounds):
    """{name: median seconds of one call}, the runs interleaved round by round."""
    times = {k: [] for k in runs}
    for _ in range(rounds):
        for k, fn in runs.items():
            times[k].append(once(fn))
    return {k: statistics.median(v) for k, v in times.items()}


def print_context():
    """The line that dates a table: date, CPUs, load, NumPy, the command."""
    print(
        f"date: {time.strftime('%Y-%m-%d %H:%M')}, {os.cpu_count()} CPUs, load "
        f"{' '.join(f'{v:.2f}' for v in os.getloadavg())}, numpy {onp.__version__}, "
        f"command: python {' '.join(sys.argv)}\n"
    )


def sinchain_runs(x):
    """{name: a call computing the gradient of the 1000-step sin chain at x}: the hand-written
    gradient ("hand"), gradcy, and autograd and PyTorch eager ("torch", one thread) when they
    are installed. Also the docs' peers chart (docs/_ext/gradcy_figures.py)."""
    runs = {"hand": lambda: ref.hand_sinchain(x), "gradcy": lambda: grad(ref.sinchain(gnp))(x)}
    try:
        import autograd
        import autograd.numpy as anp

        ag = autograd.grad(ref.sinchain(anp))
        runs["autograd"] = lambda: ag(x)
    except ImportError:
        pass
    try:
        import torch

        torch.set_num_threads(1)
        tf = ref.sinchain(torch)

        def torch_grad():
            t = torch.tensor(x, requires_grad=True)
            tf(t).backward()
            return t.grad

        runs["torch"] = torch_grad
    except ImportError:
        pass
    return runs


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=15)
    ap.add_argument("--D", type=int, default=500)
    args = ap.parse_args()
    x = onp.array([0.1, 0.5, 0.9])
    runs = sinchain_runs(x)
    assert onp.allclose(runs["gradcy"](), runs["hand"]())
    med = interleaved_medians(runs, args.rounds)
    print_context()
    print(
        "| overhead workload (1000 steps, 3 elements) | median ms | vs hand-written | "
        "gradcy is faster by |"
    )
    print("|---|---:|---:|---:|")
    for k, v in med.items():
        faster = "" if k == "gradcy" else f"{v / med['gradcy']:.2f}x"
        print(f"| {k} | {v * 1e3:.2f} | {v / med['hand']:.2f}x | {faster} |")
    # untraced calls, interleaved
    glb = {"gnp": gnp, "onp": onp, "x": x}
    ratios = []
    for _ in range(args.rounds):
        t_np = min(timeit.repeat("onp.sin(x)", globals=glb, number=20000, repeat=3))
        t_g = min(timeit.repeat("gnp.sin(x)", globals=glb, number=20000, repeat=3))
        ratios.append(t_g / t_np)
    print(
        f"\nuntraced gradcy.numpy.sin / numpy.sin on 3 elements: "
        f"{statistics.median(ratios):.3f} (median of {args.rounds} interleaved rounds)"
    )
    b, a = onp.random.RandomState(ref.SEED).standard_normal((2, 2, 2))
    dd = grad(ref.dropped(gnp), argnum=(0, 1))
    n = 2000

    def loop(fn):
        t0 = time.perf_counter()
        for _ in range(n):
            fn(b, a)
        return (time.perf_counter() - t0) / n

    fwd = ref.dropped(onp)
    r, rf = [], []
    for _ in range(args.rounds):
        t_g, t_h, t_f = loop(dd), loop(ref.hand_dropped), loop(fwd)
        r.append(t_g / t_h)
        rf.append(t_g / t_f)
    print(
        f"create-and-drop (2x2): gradcy / hand-written floor (the loop in plain NumPy with "
        f"the hand-written gradient) time {statistics.median(r):.3f}; gradcy / the plain "
        f"NumPy forward pass alone {statistics.median(rf):.3f} (medians of {args.rounds} "
        f"interleaved rounds of {n} iterations)"
    )
    X, Z = ref.dotchain_inputs(args.D)
    dg = grad(ref.dotchain(gnp))
    assert onp.allclose(dg(X, Z), ref.hand_dotchain(X, Z))
    r = [once(lambda: dg(X, Z)) / once(lambda: ref.hand_dotchain(X, Z)) for _ in range(3)]
    print(
        f"dot chain D={args.D}: gradcy / hand-written time {statistics.median(r):.3f} "
        f"(median of 3 interleaved pairs)"
    )


if __name__ == "__main__":
    main()
