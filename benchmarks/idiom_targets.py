"""The idiom table's targets (gradcy/_fuse.pyx, gradcy.numpy.fusion.IDIOMS), side by side in one
process (one BLAS thread): for each idiom written out with NumPy operations, the bytes the tape
holds after the forward pass and the time of one gradient, fused (the default), unfused
(gradcy._core.set_fusion(False)) and by hand (the NumPy forward pass and its hand-written
gradient); and the matcher's cost on a program that never matches (the sin chain, fused vs
unfused: the matcher runs on each of its 1000 adds).

    python benchmarks/idiom_targets.py [--shape 128,256] [--repeats 31] [--rounds 5]

The loss is sum(idiom(x) * C) for each idiom (C fixed), so the gradient of the idiom's output
is C. Hand-written bytes: what the hand-written gradient keeps between its forward and backward
passes (the output; for logsumexp exp(x - m) and its sum; for softplus exp(x)), without C,
which both keep. The bytes are also given for sum(idiom(x) ** 2), whose square keeps the
output too (time: the first loss only). Times:
per round, the implementations alternate (hand, fused, unfused, ...) `--repeats` times and the
median of each is taken (CPU time of the process: what the other processes of a loaded machine
take is not counted); the table gives the medians over rounds of the ratios to hand-written.

The matcher's cost across builds (before/after a change to the table): run
`PYTHONPATH=<build> python benchmarks/idiom_targets.py --only-overhead` for each build in turn,
several times, and compare the medians of the "table on" ratios.
"""

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = "1"

import argparse
import statistics
import sys
import time

import numpy as onp

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import reference_gradients as ref

import gradcy.memory
import gradcy.numpy as gnp
from gradcy import _core, grad, make_vjp


# =============================================================================
# The idioms as a user writes them (m: a NumPy-like module) and their gradients by hand
# =============================================================================
def _lse(m, x):
    mx = m.max(x, axis=1, keepdims=True)
    return m.log(m.sum(m.exp(x - mx), axis=1, keepdims=True)) + mx


IDIOMS = {
    "softmax": lambda m, x: (lambda e: e / m.sum(e, axis=1, keepdims=True))(
        m.exp(x - m.max(x, axis=1, keepdims=True))
    ),
    "logsumexp": _lse,
    "log_softmax": lambda m, x: x - _lse(m, x),
    "sigmoid": lambda m, x: 1 / (1 + m.exp(-x)),
    "softplus": lambda m, x: m.log(1 + m.exp(x)),
    "softplus (log1p)": lambda m, x: m.log1p(m.exp(x)),
    "tanh (exp(x), exp(-x))": lambda m, x: (m.exp(x) - m.exp(-x)) / (m.exp(x) + m.exp(-x)),
    "tanh (exp(-2x))": lambda m, x: (1 - m.exp(-2 * x)) / (1 + m.exp(-2 * x)),
}


def hand(name, x, C):
    """The forward pass of sum(idiom(x) * C) and its hand-written gradient: (gradient, bytes
    kept for the backward pass besides C). Each operand of an exp and a division is a named
    array: NumPy 2.4 reuses a temporary operand as the output (exp(x - m), 1 / (1 + e) written
    inline), and its in-place exp and division are 10-30x slower than into a new array on this
    machine."""
    if name == "softmax":
        z = x - x.max(axis=1, keepdims=True)
        e = onp.exp(z)
        w = e / e.sum(axis=1, keepdims=True)
        (w * C).sum()
        return w * (C - (C * w).sum(axis=1, keepdims=True)), w.nbytes
    if name == "logsumexp":
        mx = x.max(axis=1, keepdims=True)
        z = x - mx
        e = onp.exp(z)
        s = e.sum(axis=1, keepdims=True)
        ((onp.log(s) + mx) * C).sum()
        return e * (C / s), e.nbytes + s.nbytes
    if name == "log_softmax":
        mx = x.max(axis=1, keepdims=True)
        z = x - mx
        e = onp.exp(z)
        out = x - (onp.log(e.sum(axis=1, keepdims=True)) + mx)
        (out * C).sum()
        p = onp.exp(out)
        return C - p * C.sum(axis=1, keepdims=True), out.nbytes
    if name == "sigmoid":
        n = -x
        e = onp.exp(n)
        d = 1 + e
        s = 1 / d
        (s * C).sum()
        return C * s * (1 - s), s.nbytes
    if name.startswith("softplus"):
        e = onp.exp(x)
        (onp.log1p(e) * C).sum()
        d = 1 + e
        q = e / d
        return C * q, e.nbytes
    n = -x
    ep, en = onp.exp(x), onp.exp(n)
    num, den = ep - en, ep + en
    t = num / den
    (t * C).sum()
    return C * (1 - t * t), t.nbytes


def inputs(name, shape, seed=ref.SEED):
    rng = onp.random.RandomState(seed)
    x = rng.standard_normal(shape)
    C = rng.standard_normal((shape[0], 1) if name == "logsumexp" else shape)
    return x, C


def loss(name, C):
    return lambda x: gnp.sum(IDIOMS[name](gnp, x) * C)


def square_loss(name):
    return lambda x: gnp.sum(IDIOMS[name](gnp, x) ** 2)


def hand_square_bytes(name, x, hand_bytes):
    """What the hand-written gradient of sum(idiom(x) ** 2) keeps: the output (the square's
    input), and what the idiom's gradient keeps besides it."""
    if name == "logsumexp":
        return hand_bytes + x.shape[0] * x.itemsize
    return hand_bytes + (x.nbytes if name.startswith("softplus") else 0)


def saved_after_forward(f, x, fused):
    old = _core.set_fusion(fused)
    try:
        vjp, _ = make_vjp(f)(x)
        try:
            return gradcy.memory.stats()["saved_bytes"]
        finally:
            vjp.release()
    finally:
        _core.set_fusion(old)


def timed(fn, fused=True, clock=time.process_time):
    old = _core.set_fusion(fused)
    try:
        t0 = clock()
        fn()
        return clock() - t0
    finally:
        _core.set_fusion(old)


def measure(name, shape, repeats, rounds):
    x, C = inputs(name, shape)
    f = loss(name, C)
    g = grad(f)
    want, hand_bytes = hand(name, x, C)
    for fused in (True, False):
        old = _core.set_fusion(fused)
        try:
            if not onp.allclose(g(x), want, rtol=1e-10, atol=1e-12):
                raise SystemExit(
                    f"{name}: the gradient (fused={fused}) differs from the hand-written one"
                )
        finally:
            _core.set_fusion(old)
    saved = {k: saved_after_forward(f, x, k == "fused") - C.nbytes for k in ("fused", "unfused")}
    sq = square_loss(name)
    saved.update(
        {k + " sq": saved_after_forward(sq, x, k == "fused") for k in ("fused", "unfused")}
    )
    ratios = {"fused": [], "unfused": []}
    for _ in range(rounds):
        ts = {"hand": [], "fused": [], "unfused": []}
        for _ in range(repeats):
            ts["hand"].append(timed(lambda: hand(name, x, C)))
            ts["fused"].append(timed(lambda: g(x), True))
            ts["unfused"].append(timed(lambda: g(x), False))
        h = statistics.median(ts["hand"])
        for k in ratios:
            ratios[k].append(statistics.median(ts[k]) / h)
    return (
        (hand_bytes, hand_square_bytes(name, x, hand_bytes)),
        saved,
        {k: statistics.median(v) for k, v in ratios.items()},
    )


def matcher_overhead(repeats, rounds):
    """The sin chain's gradient (1000 adds: the logsumexp matcher runs on each) with the table
    on and off, as ratios to the hand-written gradient."""
    x = onp.array([0.1, 0.5, 0.9])
    g = grad(ref.sinchain(gnp))
    ratios = {"on": [], "off": []}
    for _ in range(rounds):
        ts = {"hand": [], "on": [], "off": []}
        for _ in range(repeats):
            ts["hand"].append(timed(lambda: ref.hand_sinchain(x)))
            ts["on"].append(timed(lambda: g(x), True))
            ts["off"].append(timed(lambda: g(x), False))
        h = statistics.median(ts["hand"])
        for k in ratios:
            ratios[k].append(statistics.median(ts[k]) / h)
    return {k: statistics.median(v) for k, v in ratios.items()}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--shape", default="128,256", help="rows,columns of x")
    ap.add_argument("--repeats", type=int, default=31, help="timed runs per round")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--no-overhead", action="store_true", help="skip the sin chain")
    ap.add_argument(
        "--only-overhead",
        action="store_true",
        help="the sin chain only (run it once per build to compare builds)",
    )
    args = ap.parse_args(argv)
    shape = tuple(int(s) for s in args.shape.split(","))
    print(
        f"date: {time.strftime('%Y-%m-%d %H:%M')}, numpy {onp.__version__}, x {shape} "
        f"float64, loss sum(idiom(x) * C), {args.rounds} rounds of {args.repeats}\n"
    )
    print(
        "| idiom | saved bytes, sum(y * C): hand / unfused / fused | sum(y ** 2): hand / "
        "unfused / fused | time vs hand: unfused | fused |"
    )
    print("|---|---|---|---:|---:|")
    for name in [] if args.only_overhead else IDIOMS:
        (hb, hsq), saved, r = measure(name, shape, args.repeats, args.rounds)
        print(
            f"| {name} | {hb:,} / {saved['unfused']:,} / {saved['fused']:,} | "
            f"{hsq:,} / {saved['unfused sq']:,} / {saved['fused sq']:,} | "
            f"{r['unfused']:.2f}x | {r['fused']:.2f}x |",
            flush=True,
        )
    if not args.no_overhead:
        r = matcher_overhead(max(3, args.repeats // 3), args.rounds)
        print(
            f"\nsin chain (1000 steps, 3 elements), CPU time vs hand-written: table on "
            f"{r['on']:.3f}x, off {r['off']:.3f}x"
        )


if __name__ == "__main__":
    main()
