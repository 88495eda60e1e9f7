"""gradcy's memory targets, measured side by side in one process with one BLAS thread.

    python benchmarks/memory_targets.py [--D 500,1000] [--repeats 3] [--S 64,256,1024]

For each workload it prints gradcy against the hand-written NumPy gradient of the same function:
tracemalloc peak (NumPy reports its buffers to tracemalloc), the peak difference in DxD buffers,
the area under the memory-time curve of the backward pass (tracemalloc sampled at every NumPy
call, from the peak to the end), and the median time of untraced runs. Then the
create-and-drop loop against PyTorch and the memory network (in place and concatenated, against
the hand-written in-place gradient), all interleaved round by round so that every variant sees
the same machine load. The workloads and hand-written gradients are reference_gradients.py.
"""

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = "1"

import argparse
import gc
import statistics
import sys
import time
import tracemalloc

import numpy as onp

import gradcy.numpy as np
import reference_gradients as ref
from gradcy import checkpoint, grad, memory
from peer_workloads import memnet_functions


# ---------------------------------------------------------------------------- workloads
def _segment(x, z):
    for _ in range(10):
        z = np.dot(x, z)
    return z


segment = checkpoint(_segment)


def dot_chain_checkpointed(x, z):
    for _ in range(10):
        z = segment(x, z)
    return np.sum(z)


def drop_loop_gradcy(n):
    a = onp.zeros((2, 2))
    b = onp.zeros((2, 2))

    def f(b, a):
        t = a * 2.0
        del t
        return np.sum(b)

    g = grad(f, argnum=(0, 1))
    t0 = time.perf_counter()
    for _ in range(n):
        g(b, a)
    return (time.perf_counter() - t0) / n


def drop_loop_torch(n):
    import torch

    torch.set_num_threads(1)
    t0 = time.perf_counter()
    for _ in range(n):
        a = torch.zeros((2, 2), requires_grad=True)
        b = torch.zeros((2, 2), requires_grad=True)
        t = a * 2.0
        del t
        torch.autograd.grad(b.sum(), (b, a), allow_unused=True)
    return (time.perf_counter() - t0) / n


# ---------------------------------------------------------------------------- measurement
def timeline(fn, *args):
    """(peak bytes, [(t, bytes)]) of one call, tracemalloc sampled after every C call."""
    gc.collect()
    tracemalloc.start()
    tracemalloc.reset_peak()
    base = tracemalloc.get_traced_memory()[0]
    samples = []
    get = tracemalloc.get_traced_memory
    clock = time.perf_counter

    def hook(frame, event, arg):
        if event == "c_return":
            samples.append((clock(), get()[0] - base))

    sys.setprofile(hook)
    try:
        fn(*args)
    finally:
        sys.setprofile(None)
        peak = tracemalloc.get_traced_memory()[1] - base
        tracemalloc.stop()
    return peak, samples


def backward_area(samples):
    """Integral of memory over time from the peak sample to the end (MB * s)."""
    if not samples:
        return 0.0
    k = max(range(len(samples)), key=lambda i: samples[i][1])
    area = 0.0
    for (t0, m0), (t1, _) in zip(samples[k:], samples[k + 1 :]):
        area += m0 * (t1 - t0)
    return area / 2**20


def median_time(fn, args, repeats):
    times = []
    for _ in range(repeats):
        gc.collect()
        t0 = time.perf_counter()
        fn(*args)
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def compare(name, gradcy_fn, hand_fn, args, buf_bytes, repeats):
    g1, g2 = gradcy_fn(*args), hand_fn(*args)
    assert onp.allclose(g1, g2, rtol=1e-8, atol=1e-8), f"{name}: gradients differ"
    p_g, s_g = timeline(gradcy_fn, *args)
    p_h, s_h = timeline(hand_fn, *args)
    a_g, a_h = backward_area(s_g), backward_area(s_h)
    # interleave the timed runs so both see the same machine load
    t_g, t_h = [], []
    for _ in range(repeats):
        t_g.append(median_time(gradcy_fn, args, 1))
        t_h.append(median_time(hand_fn, args, 1))
    t_g, t_h = statistics.median(t_g), statistics.median(t_h)
    print(
        f"| {name} | {p_g / 2**20:.1f} | {p_h / 2**20:.1f} | {(p_g - p_h) / buf_bytes:+.2f} | "
        f"{a_g / a_h:.3f} | {t_g * 1e3:.0f} | {t_h * 1e3:.0f} | {t_g / t_h:.3f} |"
    )
    return p_g, t_g


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "--D", default="500,1000", help="matrix sizes (comma list; empty: skip the chains)"
    )
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--drop-iters", type=int, default=70000)
    ap.add_argument("--drop-rounds", type=int, default=7)
    ap.add_argument(
        "--S", default="64,256,1024", help="memory network step counts (comma list; empty: skip)"
    )
    ap.add_argument("--memnet-repeats", type=int, default=21)
    args = ap.parse_args()
    print(
        f"date: {time.strftime('%Y-%m-%d %H:%M')}  numpy {onp.__version__}  "
        f"cpus {os.cpu_count()}  command: python {' '.join(sys.argv)}\n"
    )
    print(
        "| workload | gradcy peak MiB | hand peak MiB | peak diff (DxD buffers) | "
        "backward area ratio | gradcy ms | hand ms | time ratio |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    dot_chain = grad(ref.dotchain(np))
    for D in [int(d) for d in args.D.split(",") if d]:
        x, z = ref.dotchain_inputs(D)
        buf = z.nbytes
        compare(
            f"dot chain {ref.DOT_STEPS}, D={D}",
            dot_chain,
            ref.hand_dotchain,
            (x, z),
            buf,
            args.repeats,
        )
        xt, zt = ref.tanhchain_inputs(D)
        compare(
            f"tanh(dot) chain {ref.TANH_STEPS}, D={D}",
            grad(ref.tanhchain(np)),
            ref.hand_tanhchain,
            (xt, zt),
            buf,
            args.repeats,
        )
        p_plain, _ = timeline(dot_chain, x, z)
        p_ck, _ = timeline(grad(dot_chain_checkpointed), x, z)
        t_plain = median_time(dot_chain, (x, z), args.repeats)
        t_ck = median_time(grad(dot_chain_checkpointed), (x, z), args.repeats)
        print(
            f"| checkpointed dot chain (10 x 10), D={D} | {p_ck / 2**20:.1f} | "
            f"{p_plain / 2**20:.1f} (not checkpointed) | peak ratio {p_ck / p_plain:.3f} | - | "
            f"{t_ck * 1e3:.0f} | {t_plain * 1e3:.0f} | {t_ck / t_plain:.3f} |"
        )
    n = args.drop_iters
    try:
        import torch  # noqa: F401  (availability check: ImportError without torch)
    except ImportError:
        g_it = drop_loop_gradcy(n)
        torch_note = "torch not installed"
    else:
        g_its, t_its = [], []
        for _ in range(args.drop_rounds):  # interleaved rounds, medians
            g_its.append(drop_loop_gradcy(n // args.drop_rounds))
            t_its.append(drop_loop_torch(n // args.drop_rounds // 4))
        g_it, t_it = statistics.median(g_its), statistics.median(t_its)
        torch_note = (
            f"{t_it * 1e6:.1f} us/iter, gradcy {t_it / g_it:.1f}x faster "
            f"(medians of {args.drop_rounds} interleaved rounds)"
        )
    print(
        f"\ncreate-and-drop loop: gradcy {g_it * 1e6:.1f} us/iter; torch {torch_note}; "
        f"live nodes after: {memory.stats()['live_nodes']}"
    )
    if args.S:
        memnet([int(v) for v in args.S.split(",")], args.memnet_repeats)


def memnet(steps, repeats):
    """The memory network (peers.py's workload): gradcy in place and concatenated against
    the hand-written in-place gradient; time medians over interleaved rounds, tracemalloc
    peaks of one run each."""
    fns = memnet_functions(np)
    inplace, concat = grad(fns["memnet_inplace"]), grad(fns["memnet_concat"])
    W, x = ref.memnet_inputs()
    print(
        f"\n| memnet B={ref.MEMNET_B}, D={ref.MEMNET_D} | hand ms | in place ms | ratio "
        "| concat ms | in place / concat "
        "| hand peak MiB | in place peak MiB | ratio |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for S in steps:
        args = (W, x, S)
        g_in = inplace(*args)
        assert onp.allclose(g_in, ref.hand_memnet(*args), rtol=1e-9, atol=1e-12)
        assert onp.allclose(g_in, concat(*args), rtol=1e-9, atol=1e-12)
        t = {"hand": [], "in": [], "cat": []}
        fns = {"hand": ref.hand_memnet, "in": inplace, "cat": concat}
        n = repeats if S <= 256 else max(3, repeats // 4)
        for r in range(n):
            # alternate the order within a round, so that no variant always runs first
            for k in ("hand", "in", "cat") if r % 2 == 0 else ("cat", "in", "hand"):
                t[k].append(median_time(fns[k], args, 1))
        th, ti, tc = (statistics.median(t[k]) for k in ("hand", "in", "cat"))
        p_h, p_i = peak_of(ref.hand_memnet, args), peak_of(inplace, args)
        print(
            f"| S={S} | {th * 1e3:.2f} | {ti * 1e3:.2f} | {ti / th:.2f}x | {tc * 1e3:.2f} | "
            f"{ti / tc:.2f}x | {p_h / 2**20:.2f} | {p_i / 2**20:.2f} | {p_i / p_h:.2f}x |"
        )


def peak_of(fn, args):
    """tracemalloc peak of one call (no per-call sampling: plain peak)."""
    gc.collect()
    tracemalloc.start()
    tracemalloc.reset_peak()
    base = tracemalloc.get_traced_memory()[0]
    try:
        fn(*args)
    finally:
        peak = tracemalloc.get_traced_memory()[1] - base
        tracemalloc.stop()
    return peak


if __name__ == "__main__":
    main()
