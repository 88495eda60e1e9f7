"""gradcy.jit beside the hand-written NumPy gradient, eager gradcy and JAX's jit, in one process.

    python benchmarks/jit_compare.py [--workloads sinchain,rnn,mlp,memnet] [--rounds 7]
                                     [--S 256] [--cython] [--compile]

One core, one BLAS thread (set before NumPy loads). For each workload: the compile time (the
first call of gradcy.jit, which records and compiles, and of jax.jit), the steady-state time
(median over rounds, the variants interleaved in each round so every one sees the same load)
as a ratio to the hand-written gradient, and the tracemalloc peak of one call (NumPy reports
its buffers to tracemalloc; JAX's XLA buffers are not seen, so its peak is n/a). Each result
is checked against the hand-written one first.

Workloads:
  sinchain  1000 steps of x = sin(x) * 1.0001 + 0.01 * x on 3 elements, d/dx of sum
            (reference_gradients.sinchain / hand_sinchain)
  rnn       a tanh RNN, T=100, batch 16, 8 inputs, 32 hidden: h = tanh(x_t @ Wx + h @ Wh + b),
            loss = sum(h_T ** 2), d/d(Wh, Wx, b)
  mlp       one training step of a 64-256-256-10 tanh MLP, batch 128, softmax cross-entropy
            (log-sum-exp written out): value_and_grad and the SGD update, in one function
  memnet    the seeds' memory network with slot writes (reference_gradients.memnet_inplace),
            S slots; gradcy.jit compiles the gradient of the in-place spelling (its recording
            holds the writes as functional steps) and of the concatenating one; JAX runs the
            concatenating spelling (its arrays are immutable), for S <= 32 only (its
            compile took 77 s at S=32)
--cython: the sin chain's compiled kernel translated to Cython and built at run time (the
other native code generator the issue names): its build time and its run time beside Numba's.
--compile: the first call of gradcy.jit of the sin chain and of the RNN in fresh processes
(numba imported before the clock starts), cold (an empty GRADCY_JIT_CACHE) then warm (the
kernels and native segments loaded from it on disk), median of 3 each, beside jax.jit's.
"""

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS", "XLA_FLAGS_THREADS"):
    os.environ[_var] = "1"
os.environ.setdefault(
    "XLA_FLAGS", "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1"
)

import argparse
import gc
import statistics
import sys
import time
import tracemalloc
import warnings

import numpy

import reference_gradients as ref

RNN_T, RNN_B, RNN_I, RNN_H = 100, 16, 8, 32
MLP_B, MLP_SIZES = 128, (64, 256, 256, 10)
LR = 0.01
# jax.jit compiles the memory network's steps one by one (each prefix has its own shape): 77 s
# at S=32 here, so its row is left out above this many slots
JAX_MEMNET_MAX_S = 32


# =============================================================================
# The RNN and the MLP step, for a NumPy-like module m, and their hand-written gradients
# =============================================================================
def rnn(m):
    def f(Wh, Wx, b, xs):
        h = m.zeros((xs.shape[1], Wh.shape[0]))
        for t in range(xs.shape[0]):
            h = m.tanh(xs[t] @ Wx + h @ Wh + b)
        return m.sum(h**2)

    return f


def rnn_inputs(seed=0):
    rs = numpy.random.RandomState(seed)
    return (
        rs.standard_normal((RNN_H, RNN_H)) / numpy.sqrt(RNN_H),
        rs.standard_normal((RNN_I, RNN_H)) / numpy.sqrt(RNN_I),
        0.1 * rs.standard_normal(RNN_H),
        rs.standard_normal((RNN_T, RNN_B, RNN_I)),
    )


def hand_rnn(Wh, Wx, b, xs):
    hs = [numpy.zeros((xs.shape[1], Wh.shape[0]))]
    for t in range(xs.shape[0]):
        hs.append(numpy.tanh(xs[t] @ Wx + hs[-1] @ Wh + b))
    dh = 2.0 * hs[-1]
    dWh, dWx, db = numpy.zeros_like(Wh), numpy.zeros_like(Wx), numpy.zeros_like(b)
    WhT = Wh.T
    for t in range(xs.shape[0] - 1, -1, -1):
        h = hs.pop()
        da = dh * (1.0 - h * h)
        dWx += xs[t].T @ da
        dWh += hs[-1].T @ da
        db += da.sum(axis=0)
        dh = da @ WhT
    return dWh, dWx, db


def mlp_loss(m):
    def loss(W1, b1, W2, b2, W3, b3, x, y):
        h1 = m.tanh(x @ W1 + b1)
        h2 = m.tanh(h1 @ W2 + b2)
        z = h2 @ W3 + b3
        mx = m.max(z, axis=1, keepdims=True)
        lse = m.log(m.sum(m.exp(z - mx), axis=1, keepdims=True)) + mx
        return m.mean(m.sum((lse - z) * y, axis=1))

    return loss


def mlp_step(m, value_and_grad, argkw):
    vg = value_and_grad(mlp_loss(m), **{argkw: (0, 1, 2, 3, 4, 5)})

    def step(W1, b1, W2, b2, W3, b3, x, y):
        params = (W1, b1, W2, b2, W3, b3)
        loss, grads = vg(*params, x, y)
        return (loss,) + tuple(p - LR * g for p, g in zip(params, grads))

    return step


def mlp_inputs(seed=0):
    rs = numpy.random.RandomState(seed)
    params = []
    for a, b in zip(MLP_SIZES[:-1], MLP_SIZES[1:]):
        params += [rs.standard_normal((a, b)) / numpy.sqrt(a), 0.1 * rs.standard_normal(b)]
    x = rs.standard_normal((MLP_B, MLP_SIZES[0]))
    y = numpy.eye(MLP_SIZES[-1])[rs.randint(0, MLP_SIZES[-1], MLP_B)]
    return tuple(params) + (x, y)


def hand_mlp_step(W1, b1, W2, b2, W3, b3, x, y):
    h1 = numpy.tanh(x @ W1 + b1)
    h2 = numpy.tanh(h1 @ W2 + b2)
    z = h2 @ W3 + b3
    mx = z.max(axis=1, keepdims=True)
    e = numpy.exp(z - mx)
    s = e.sum(axis=1, keepdims=True)
    lse = numpy.log(s) + mx
    n = x.shape[0]
    loss = numpy.mean(numpy.sum((lse - z) * y, axis=1))
    # d loss / d z = (softmax(z) * sum(y) - y) / n
    e /= s
    dz = (e * y.sum(axis=1, keepdims=True) - y) / n
    dW3, db3 = h2.T @ dz, dz.sum(axis=0)
    da2 = (dz @ W3.T) * (1.0 - h2 * h2)
    dW2, db2 = h1.T @ da2, da2.sum(axis=0)
    da1 = (da2 @ W2.T) * (1.0 - h1 * h1)
    dW1, db1 = x.T @ da1, da1.sum(axis=0)
    params = (W1, b1, W2, b2, W3, b3)
    grads = (dW1, db1, dW2, db2, dW3, db3)
    return (loss,) + tuple(p - LR * g for p, g in zip(params, grads))


# =============================================================================
# The variants of each workload
# =============================================================================
def _jax():
    try:
        import jax
    except ImportError:
        return None
    jax.config.update("jax_enable_x64", True)
    return jax


def variants(name, S):
    """{label: (function, arguments, compiled?)}; the first is the hand-written baseline."""
    import gradcy
    import gradcy.numpy as gnp

    jax = _jax()
    out = {}
    if name == "sinchain":
        x = numpy.random.RandomState(ref.SEED).standard_normal(3)
        out["numpy (hand)"] = (ref.hand_sinchain, (x,), False)
        out["gradcy (eager)"] = (gradcy.grad(ref.sinchain(gnp)), (x,), False)
        out["gradcy.jit"] = (gradcy.jit(gradcy.grad(ref.sinchain(gnp))), (x,), True)
        if jax:
            out["jax.jit"] = (jax.jit(jax.grad(ref.sinchain(jax.numpy))), (x,), True)
    elif name == "rnn":
        args = rnn_inputs()
        out["numpy (hand)"] = (hand_rnn, args, False)
        out["gradcy (eager)"] = (gradcy.grad(rnn(gnp), (0, 1, 2)), args, False)
        out["gradcy.jit"] = (gradcy.jit(gradcy.grad(rnn(gnp), (0, 1, 2))), args, True)
        if jax:
            out["jax.jit"] = (jax.jit(jax.grad(rnn(jax.numpy), (0, 1, 2))), args, True)
    elif name == "mlp":
        args = mlp_inputs()
        out["numpy (hand)"] = (hand_mlp_step, args, False)
        step = mlp_step(gnp, gradcy.value_and_grad, "argnum")
        out["gradcy (eager)"] = (step, args, False)
        out["gradcy.jit"] = (gradcy.jit(mlp_step(gnp, gradcy.value_and_grad, "argnum")), args, True)
        if jax:
            out["jax.jit"] = (
                jax.jit(mlp_step(jax.numpy, jax.value_and_grad, "argnums")),
                args,
                True,
            )
    elif name == "memnet":
        W, x = ref.memnet_inputs()
        out["numpy (hand, in-place)"] = (lambda W, x: ref.hand_memnet(W, x, S), (W, x), False)
        fi = ref.memnet_inplace(gnp)
        fc = ref.memnet_concat(gnp)
        out["gradcy (eager, in-place)"] = (lambda W, x: gradcy.grad(fi)(W, x, S), (W, x), False)
        out["gradcy.jit (in-place)"] = (gradcy.jit(gradcy.grad(fi), S=S), (W, x), True)
        out["gradcy.jit (concat)"] = (gradcy.jit(gradcy.grad(fc), S=S), (W, x), True)
        if jax and S <= JAX_MEMNET_MAX_S:
            fj = ref.memnet_concat(jax.numpy)
            out["jax.jit (concat)"] = (jax.jit(jax.grad(lambda W, x: fj(W, x, S))), (W, x), True)
    return out


def _block(r):
    if hasattr(r, "block_until_ready"):
        r.block_until_ready()
    elif isinstance(r, (tuple, list)):
        for e in r:
            _block(e)
    return r


def _plain(r):
    if isinstance(r, (tuple, list)):
        return [v for e in r for v in _plain(e)]
    return [numpy.asarray(r)]


def _peak(fun, args):
    gc.collect()
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        base = tracemalloc.get_traced_memory()[0]
        _block(fun(*args))
        return tracemalloc.get_traced_memory()[1] - base
    finally:
        tracemalloc.stop()


def measure(name, S, rounds):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        vs = variants(name, S)
        labels = list(vs)
        compile_s, results = {}, {}
        for label in labels:
            fun, args, compiled = vs[label]
            t0 = time.perf_counter()
            results[label] = _plain(_block(fun(*args)))
            if compiled:
                compile_s[label] = time.perf_counter() - t0
        want = results[labels[0]]
        err = {}
        for label in labels[1:]:
            got = results[label]
            assert len(got) == len(want), (name, label)
            err[label] = max(
                float(numpy.max(numpy.abs(g - w)) / (numpy.max(numpy.abs(w)) or 1))
                for g, w in zip(got, want)
            )
        # calls per timed unit, per variant: about 20 ms of it
        inner = {}
        for label in labels:
            fun, args, _ = vs[label]
            t0 = time.perf_counter()
            _block(fun(*args))
            inner[label] = max(1, int(0.02 / max(time.perf_counter() - t0, 1e-7)))
        times = {label: [] for label in labels}
        for r in range(rounds):
            order = labels[r % len(labels) :] + labels[: r % len(labels)]
            for label in order:
                fun, args, _ = vs[label]
                n = inner[label]
                gc.collect()
                t0 = time.perf_counter()
                for _ in range(n):
                    _block(fun(*args))
                times[label].append((time.perf_counter() - t0) / n)
        peaks = {
            label: (None if label.startswith("jax") else _peak(vs[label][0], vs[label][1]))
            for label in labels
        }
    med = {label: statistics.median(times[label]) for label in labels}
    best = {label: min(times[label]) for label in labels}
    return labels, compile_s, med, best, peaks, err


def cython_prototype():
    """The sin chain's Numba kernel source, translated to Cython (typed doubles, libc's sin and
    cos), built at run time: (build seconds, run seconds per call, Numba's run seconds)."""
    import importlib.util
    import re
    import subprocess
    import tempfile

    import gradcy
    import gradcy.numpy as gnp
    from gradcy import _codegen

    fast = gradcy.jit(gradcy.grad(ref.sinchain(gnp)))
    x = numpy.random.RandomState(ref.SEED).standard_normal(3)
    fast(x)
    step = fast.programs[0][1].steps[0][0]
    src = step.source
    names = sorted(
        set(re.findall(r"\b([tuc]\d+(?:_\d+)?)\b", src)) - {"c0"} if "c0[" not in src else set()
    )
    arrays = sorted(set(re.findall(r"\b(s\d+_\d+)\b", src)))
    body = src.replace("np.float64(", "(").replace("np.sin(", "sin(").replace("np.cos(", "cos(")
    body = re.sub(
        r"s(\d+)_(\d+) = np\.empty\((\d+), np\.float64\)", r"s\1_\2 = numpy.empty(\3)", body
    )
    lines = body.splitlines()
    decl = [" cdef Py_ssize_t i0, " + ", ".join(sorted(set(re.findall(r"\b(r\d+)\b", src))))]
    decl += [f" cdef double {', '.join(names)}"] if names else []
    decl += [f" cdef double[::1] {', '.join(arrays)}"] if arrays else []
    head = lines[0].replace("def kernel(a0, o0):", "def kernel(double[::1] a0, double[::1] o0):")
    pyx = (
        "# cython: boundscheck=False, wraparound=False, cdivision=True\n"
        "import numpy\nfrom libc.math cimport sin, cos\n\n"
        + "\n".join([head] + decl + lines[1:])
        + "\n"
    )
    tmp = tempfile.mkdtemp(prefix="gradcy-cython-proto-")
    with open(os.path.join(tmp, "proto.pyx"), "w") as fh:
        fh.write(pyx)
    with open(os.path.join(tmp, "setup.py"), "w") as fh:
        fh.write(
            "from setuptools import setup\nfrom Cython.Build import cythonize\n"
            "setup(ext_modules=cythonize('proto.pyx', quiet=True))\n"
        )
    t0 = time.perf_counter()
    subprocess.run(
        [sys.executable, "setup.py", "-q", "build_ext", "--inplace"],
        cwd=tmp,
        check=True,
        capture_output=True,
    )
    build = time.perf_counter() - t0
    so = [f for f in os.listdir(tmp) if f.startswith("proto") and f.endswith(".so")][0]
    spec = importlib.util.spec_from_file_location("proto", os.path.join(tmp, so))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    o = numpy.empty(3)
    mod.kernel(x, o)
    assert numpy.allclose(o, fast(x), rtol=1e-13)
    jitted = _codegen._kernels[src]
    o2 = numpy.empty(3)

    def per_call(f, *a):
        ts = []
        for _ in range(7):
            t0 = time.perf_counter()
            for _ in range(200):
                f(*a)
            ts.append((time.perf_counter() - t0) / 200)
        return statistics.median(ts)

    return build, per_call(mod.kernel, x, o), per_call(jitted, x, o2)


_FIRST_CALL = """
import os, sys, time
sys.path.insert(0, {here!r})
import jit_compare as jc  # (one thread, before NumPy loads)
import numpy, numba
import reference_gradients as ref
kind, workload = sys.argv[1:3]
if workload == "sinchain":
    args = (numpy.random.RandomState(ref.SEED).standard_normal(3),)
    make, argnum = ref.sinchain, 0
else:
    args = jc.rnn_inputs()
    make, argnum = jc.rnn, (0, 1, 2)
if kind == "jax":
    import jax
    jax.config.update("jax_enable_x64", True)
    t0 = time.perf_counter()
    jax.block_until_ready(jax.jit(jax.grad(make(jax.numpy), argnum))(*args))
else:
    import gradcy, gradcy.numpy as gnp
    t0 = time.perf_counter()
    gradcy.jit(gradcy.grad(make(gnp), argnum))(*args)
print(time.perf_counter() - t0)
"""


def compile_times(workload, repeats=3):
    """(cold, warm, jax) first-call seconds of a workload (sinchain, rnn), each a median over
    fresh processes; cold: an empty GRADCY_JIT_CACHE per process, warm: one filled before."""
    import subprocess
    import tempfile

    src = _FIRST_CALL.format(here=os.path.dirname(os.path.abspath(__file__)))

    def first_call(kind, cache):
        env = dict(os.environ, GRADCY_JIT_CACHE=cache)
        out = subprocess.run(
            [sys.executable, "-c", src, kind, workload],
            env=env,
            capture_output=True,
            text=True,
            check=True,
        )
        return float(out.stdout.split()[-1])

    cold = [first_call("gradcy", tempfile.mkdtemp(prefix="gradcy-jit-")) for _ in range(repeats)]
    warm_dir = tempfile.mkdtemp(prefix="gradcy-jit-")
    first_call("gradcy", warm_dir)
    warm = [first_call("gradcy", warm_dir) for _ in range(repeats)]
    jax = [first_call("jax", "") for _ in range(repeats)] if _jax() else None
    med = statistics.median
    return med(cold), med(warm), (med(jax) if jax else None)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--workloads", default="sinchain,rnn,mlp,memnet")
    p.add_argument("--rounds", type=int, default=7)
    p.add_argument("--S", type=int, default=256, help="memory slots of memnet (default 256)")
    p.add_argument(
        "--cython",
        action="store_true",
        help="also build the sin chain's kernel with Cython and time it",
    )
    p.add_argument(
        "--compile",
        action="store_true",
        help="also time the first call (sin chain, RNN) in fresh processes, cold and warm",
    )
    args = p.parse_args(argv)
    import numba

    print(
        f"gradcy.jit ({'numba ' + numba.__version__}), numpy {numpy.__version__}, one "
        f"thread; ratios are steady-state medians over {args.rounds} interleaved rounds, "
        f"to the hand-written gradient"
    )
    print()
    print(
        "| workload | variant | compile (first call) | time / call (median) | ratio to hand "
        "(median) | ratio (best round) | peak (tracemalloc) | max rel. diff to hand |"
    )
    print("|---|---|---:|---:|---:|---:|---:|---:|")
    for name in args.workloads.split(","):
        labels, comp, med, best, peaks, err = measure(name, args.S, args.rounds)
        base, base_best = med[labels[0]], best[labels[0]]
        for label in labels:
            c = f"{comp[label]:.2f} s" if label in comp else ""
            pk = "n/a (XLA)" if peaks[label] is None else f"{peaks[label] / 2**20:.2f} MiB"
            e = f"{err[label]:.1e}" if label in err else ""
            wl = name + (f" S={args.S}" if name == "memnet" else "")
            print(
                f"| {wl} | {label} | {c} | {med[label] * 1e3:.3f} ms | "
                f"{med[label] / base:.3f}x | {best[label] / base_best:.3f}x | {pk} | {e} |",
                flush=True,
            )
    if args.compile:
        print()
        for workload, label in (("sinchain", "sin chain"), ("rnn", "RNN T=100")):
            cold, warm, jx = compile_times(workload)
            print(
                f"{label}, first call in a fresh process (median of 3): gradcy.jit cold "
                f"{cold:.2f} s, warm (kernels and segments cached on disk) {warm:.2f} s"
                + ("" if jx is None else f"; jax.jit {jx:.2f} s")
            )
    if args.cython:
        build, cy, nb = cython_prototype()
        print()
        print(
            f"sin chain kernel: Cython build {build:.2f} s, run {cy * 1e6:.1f} us; "
            f"Numba run {nb * 1e6:.1f} us (its compile is in gradcy.jit's first call above)"
        )


if __name__ == "__main__":
    main()
