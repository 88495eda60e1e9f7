"""const_graph's replay against the hand-written gradient and plain grad, interleaved in one
process (medians of rounds), on the overhead workload: the gradient of 1000 steps
x = sin(x) * 1.0001 + 0.01 * x on 3 elements.

    python benchmarks/const_graph_chain.py [--rounds 15]

const_graph(grad(f)) records the forward and backward pass once (its first call), then each
call replays them as plain NumPy calls, without tracing or dispatch: a Python function compiled
from the recording (one line per NumPy call), or, for programs longer than
gradcy.misc.tracers._MAX_COMPILED_STEPS, a step interpreter (its row below: the same program
recorded with that limit set to 0).
"""

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = "1"

import argparse
import sys
import time

import numpy as onp

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import reference_gradients as ref

import gradcy.numpy as gnp
from gradcy import grad
from gradcy.misc import const_graph, tracers
from overhead_targets import interleaved_medians, print_context  # (one timer)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=15)
    args = ap.parse_args()
    x = onp.array([0.1, 0.5, 0.9])
    g = grad(ref.sinchain(gnp))
    t0 = time.perf_counter()
    replay = const_graph(g)
    replay(x)
    record = time.perf_counter() - t0
    limit, tracers._MAX_COMPILED_STEPS = tracers._MAX_COMPILED_STEPS, 0
    try:
        interpreted = const_graph(g)
        interpreted(x)
    finally:
        tracers._MAX_COMPILED_STEPS = limit
    runs = {
        "hand-written NumPy": lambda: ref.hand_sinchain(x),
        "gradcy grad": lambda: g(x),
        "const_graph(grad) replay": lambda: replay(x),
        "const_graph(grad) replay, step interpreter": lambda: interpreted(x),
    }
    x2 = onp.array([-0.3, 0.2, 1.4])
    for fn in (replay, interpreted, g):
        assert onp.allclose(fn(x2), ref.hand_sinchain(x2), rtol=1e-12)
    med = interleaved_medians(runs, args.rounds)
    print_context()
    print("| 1000 steps, 3 elements (forward + backward) | median ms | vs hand-written |")
    print("|---|---:|---:|")
    for k, v in med.items():
        print(f"| {k} | {v * 1e3:.2f} | {v / med['hand-written NumPy']:.2f}x |")
    print(f"\nrecording (the first const_graph call: traced, then compiled): {record * 1e3:.1f} ms")


if __name__ == "__main__":
    main()
