"""The saved-bytes audit: what gradcy's tape holds for the backward pass when the forward pass
ends, per primitive and per call site, beside what a hand-written gradient of the same program
must keep (the arrays its backward pass reads that its forward pass made).

    python benchmarks/saved_bytes_audit.py [--S 64,256] [--D 100] [--recompute] [--no-fusion]

A regression in what a rule saves shows up here as a number (tests/test_saved_sets.py asserts
exact counts on small programs). Bytes are of root buffers, each counted once, for the first
node that holds it (gradcy.memory.saved_audit); the inputs a program reads (W, q, ...) are the
caller's arrays and are listed apart: both gradients read them. The idioms of the fusion table
(gradcy.numpy.fusion.IDIOMS, written out as in benchmarks/idiom_targets.py) are audited too;
--no-fusion shows them recorded as written.
"""

import argparse
import os
import sys
import time

import numpy as onp

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import reference_gradients as ref
from idiom_targets import IDIOMS, hand, inputs, loss

import gradcy.memory
import gradcy.numpy as np


def _nbytes(*arrays):
    return sum(a.nbytes for a in arrays)


def programs(Ss, D):
    """(name, function, args, argnum, hand-written bytes, input bytes) per program."""
    out = []
    x = onp.array([0.1, 0.5, 0.9])
    # sin chain: the hand-written gradient keeps every step's input
    out.append(
        ("sinchain (1000 steps, 3 elems)", ref.sinchain(np), (x,), 0, ref.SIN_STEPS * x.nbytes, 0)
    )
    xt, zt = ref.tanhchain_inputs(D)
    # tanh chain: every step's output (the last one is the loss's input)
    out.append(
        (
            f"tanhchain (D={D})",
            ref.tanhchain(np),
            (xt, zt),
            0,
            ref.TANH_STEPS * zt.nbytes,
            _nbytes(xt, zt),
        )
    )
    for S in Ss:
        W, h0, q, b = ref.attention_inputs()
        B, Dm = h0.shape
        mem = B * (S + 1) * Dm * 8
        ws = sum(B * (i + 1) * 8 for i in range(S))
        reads = S * B * Dm * 8
        out.append(
            (
                f"attention in place (B={B}, D={Dm}, S={S})",
                ref.attention_inplace(np),
                (W, h0, q, b, S),
                0,
                mem + ws + reads,
                _nbytes(W, q),
            )
        )
    for name in IDIOMS:
        x, C = inputs(name, (64, 128))
        out.append(
            (
                f"{name} written out, sum(y * C), x (64, 128)",
                loss(name, C),
                (x,),
                0,
                hand(name, x, C)[1],
                C.nbytes,
            )
        )
    return out


def audit(name, fun, args, argnum, hand, inputs):
    t0 = time.perf_counter()
    a = gradcy.memory.saved_audit(fun, argnum)(*args)
    dt = time.perf_counter() - t0
    lines = [
        f"## {name}",
        "",
        f"saved by gradcy {a.total:,} B (inputs among them: up to {inputs:,} B); "
        f"a hand-written gradient keeps {hand:,} B; ratio "
        f"{(a.total - inputs) / hand:.2f} without inputs ({dt * 1e3:.0f} ms)",
        "",
        "| primitive | nodes | bytes saved |",
        "|---|---:|---:|",
    ]
    for op, (n, b) in sorted(a.by_op.items(), key=lambda kv: -kv[1][1]):
        lines.append(f"| {op} | {n} | {b:,} |")
    lines += ["", "| primitive at call site | nodes | bytes saved |", "|---|---:|---:|"]
    for (op, site), (n, b) in sorted(a.by_site.items(), key=lambda kv: -kv[1][1]):
        if b:
            lines.append(f"| {op} at {site} | {n} | {b:,} |")
    return "\n".join(lines)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--S", default="64,256", help="attention step counts (comma list)")
    ap.add_argument("--D", type=int, default=100, help="tanh chain size")
    ap.add_argument(
        "--recompute",
        action="store_true",
        help="with recompute='elementwise' (gradcy._core.set_recompute_default)",
    )
    ap.add_argument(
        "--no-fusion",
        action="store_true",
        help="idioms recorded as written (gradcy._core.set_fusion(False))",
    )
    args = ap.parse_args(argv)
    if args.no_fusion:
        from gradcy import _core

        _core.set_fusion(False)
    if args.recompute:
        from gradcy import _core

        _core.set_recompute_default(True)
    Ss = [int(s) for s in args.S.split(",") if s]
    print(f"date: {time.strftime('%Y-%m-%d %H:%M')}, numpy {onp.__version__}\n")
    for prog in programs(Ss, args.D):
        print(audit(*prog))
        print()


if __name__ == "__main__":
    main()
