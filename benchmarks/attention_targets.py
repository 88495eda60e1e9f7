"""The attention memory network's targets (gradcy issue 13), side by side: the hand-written
gradient and gradcy (default, and recompute="elementwise") alternate in one process (one BLAS
thread), so they see the same machine load; one gradcy build or several, round by round.

    python benchmarks/attention_targets.py [--S 64,256,1024] [--rounds 7]
    python benchmarks/attention_targets.py --python /work/venv/bin/python --python .venv/bin/python
    python benchmarks/attention_targets.py --torch    # PyTorch's gradients in the same rounds

Each round runs one worker process per (interpreter, S); the interpreters alternate within a
round, so a before/after comparison of two builds sees the same load too. A worker checks the
gradients on a short run, times `--inner` gradients of each implementation in turn (hand,
default, recompute, hand, ...; default 7, 3 and 1 for S up to 64, 256 and above) and takes per
implementation the median, then one tracemalloc peak per implementation. The table gives the
medians over the rounds of the per-round ratios to the hand-written gradient.
Targets at S=256 and S=1024: time <= 1.4x, peak <= 1.3x. With --torch, PyTorch (CPU, one
thread; peer_workloads.attention_torch_grad: by concatenation, and in place with a clone of each
read) takes its turn in the same rounds, time only (tracemalloc does not see its allocations).
"""

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = "1"

import argparse
import json
import statistics
import subprocess
import sys
import time
import tracemalloc

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
TAG = "ATTENTION_TARGETS "
MODES = ("hand", "default", "recompute")


def worker(S, inner, with_torch):
    import numpy

    import gradcy.numpy as gnp
    import reference_gradients as ref
    from gradcy import grad

    data = ref.attention_inputs()
    f = ref.attention_inplace(gnp)
    fns = {
        "hand": ref.hand_attention,
        "default": grad(f),
        "recompute": grad(f, recompute="elementwise"),
    }
    if with_torch:
        import torch

        from peer_workloads import attention_torch_grad

        torch.set_num_threads(1)

        def torch_grad(variant):
            return lambda *a: attention_torch_grad(torch, *a, variant).numpy()

        fns["torch_concat"], fns["torch_inplace"] = torch_grad("concat"), torch_grad("inplace")
    small = min(S, 16)  # the gradients are checked on a short run
    want = ref.hand_attention(*data, small)
    for m in list(fns)[1:]:
        if not numpy.allclose(fns[m](*data, small), want, rtol=1e-9, atol=1e-12):
            raise SystemExit(f"the {m} gradient differs from the hand-written one")
    times = {m: [] for m in fns}
    for _ in range(inner):
        for m in fns:
            t0 = time.perf_counter()
            fns[m](*data, S)
            times[m].append(time.perf_counter() - t0)
    peaks = {}
    for m in MODES:
        tracemalloc.start()
        fns[m](*data, S)
        peaks[m] = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    print(
        TAG
        + json.dumps({"time": {m: statistics.median(v) for m, v in times.items()}, "peak": peaks})
    )


def run(python, S, inner, with_torch):
    r = subprocess.run(
        [python, os.path.abspath(__file__), "--worker", str(S), "--inner", str(inner)]
        + ["--torch"] * with_torch,
        capture_output=True,
        text=True,
    )
    for line in r.stdout.splitlines():
        if line.startswith(TAG):
            return json.loads(line[len(TAG) :])
    raise RuntimeError(f"{python} S={S}: {r.stderr.strip()[-400:]}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--S", default="64,256,1024")
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument(
        "--inner",
        type=int,
        default=0,
        help="gradients per implementation per round (default: by S)",
    )
    ap.add_argument(
        "--python",
        action="append",
        help="interpreter(s) to compare (default: this one); give it twice for a before/after run",
    )
    ap.add_argument("--torch", action="store_true", help="PyTorch's gradients too (time)")
    ap.add_argument("--worker", type=int)
    args = ap.parse_args()
    if args.worker is not None:
        worker(args.worker, args.inner or 3, args.torch)
        return
    pythons = args.python or [sys.executable]
    Ss = [int(s) for s in args.S.split(",")]
    res = {(p, S): [] for p in pythons for S in Ss}
    for k in range(args.rounds):
        for S in Ss:
            inner = args.inner or (7 if S <= 64 else 3 if S <= 256 else 1)
            for p in pythons if k % 2 == 0 else pythons[::-1]:
                res[p, S].append(run(p, S, inner, args.torch))
        print(f"round {k + 1}/{args.rounds} done", file=sys.stderr, flush=True)
    print(
        f"date: {time.strftime('%Y-%m-%d %H:%M')} UTC, {os.cpu_count()} CPUs, load "
        f"{' '.join(f'{v:.2f}' for v in os.getloadavg())}; command: python "
        f"{' '.join(sys.argv)}\n"
    )
    print(
        "| build | S | hand ms | hand peak MiB | mode | time ratio | peak ratio | "
        "targets (time <= 1.4x, peak <= 1.3x) |"
    )
    print("|---|---:|---:|---:|---|---:|---:|---|")
    for p in pythons:
        for S in Ss:
            rs = res[p, S]
            ht = statistics.median(r["time"]["hand"] for r in rs)
            hp = statistics.median(r["peak"]["hand"] for r in rs)
            for m in list(rs[0]["time"])[1:]:
                t = statistics.median(r["time"][m] / r["time"]["hand"] for r in rs)
                if m not in rs[0]["peak"]:
                    print(
                        f"| {p} | {S} | {ht * 1e3:.1f} | {hp / 2**20:.2f} | {m} | {t:.2f}x | - | |"
                    )
                    continue
                pk = statistics.median(r["peak"][m] / r["peak"]["hand"] for r in rs)
                ok = ("met" if t <= 1.4 and pk <= 1.3 else "missed") if S >= 256 else ""
                print(
                    f"| {p} | {S} | {ht * 1e3:.1f} | {hp / 2**20:.2f} | {m} | {t:.2f}x | "
                    f"{pk:.2f}x | {ok} |"
                )


if __name__ == "__main__":
    main()
