"""Compare gradcy with a hand-written NumPy gradient and with autograd, PyTorch (CPU) and JAX.

    python -m gradcy.bench                      # every workload, every importable library
    python -m gradcy.bench --quick              # fewer repeats, smaller sizes (under a minute)
    python -m gradcy.bench --workloads dotchain,tanhchain --libs numpy,gradcy,torch --D 1000

Every (library, workload) pair runs in its own subprocess
(`python -m gradcy.bench --worker LIB WORKLOAD ...`) with the BLAS/OpenMP thread counts pinned to
1 before NumPy is imported, so the libraries cannot disturb each other and the RSS high-water
mark belongs to one workload. Each worker reports:

time         median over --repeats timed runs, per unit (one gradient, one call, one iteration)
tracemalloc  peak bytes allocated during one run (NumPy reports its buffers to tracemalloc; the
             allocations of PyTorch and XLA are invisible to it, so those show "-")
RSS peak     high-water RSS during the timed runs minus the RSS before them (all libraries)

Ratios are to "numpy", the hand-written gradient of the same function (forward pass keeping what
the backward pass needs on a stack, backward pass popping it). Each gradient is checked against
the hand-written one; a library that cannot run a workload is listed as "n/a" with the reason.
"""
import argparse
import datetime
import gc
import importlib.util
import json
import os
import platform
import shlex
import statistics
import subprocess
import sys
import time

LIBS = ("numpy", "gradcy", "autograd", "torch", "jax")
LIB_LABEL = {"numpy": "numpy (hand)", "gradcy": "gradcy", "autograd": "autograd",
             "torch": "torch (CPU)", "jax": "jax (eager)"}
WORKLOADS = ("overhead", "untraced", "dotchain", "tanhchain", "dropped")

OVERHEAD_STEPS = 1000
DOT_STEPS = 100
TANH_STEPS = 50
SEED = 0

THREAD_VARS = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS",
               "VECLIB_MAXIMUM_THREADS", "NUMEXPR_NUM_THREADS", "BLIS_NUM_THREADS")
RESULT_TAG = "GRADCY_BENCH_RESULT "


class Unsupported(Exception):
    """This library cannot run this workload (shown as n/a with the message)."""


# =============================================================================
# Parameters of a run
# =============================================================================
def workload_params(args):
    """Per-workload settings: inner = calls per timed run (time is reported per call)."""
    quick = args.quick
    return {
        "overhead": {"unit": "grad", "inner": 1 if quick else 3, "small": True},
        "untraced": {"unit": "call", "inner": 5000 if quick else 20000, "small": True},
        "dotchain": {"unit": "grad", "inner": 1, "small": False, "D": args.D},
        "tanhchain": {"unit": "grad", "inner": 1, "small": False, "D": args.D},
        "dropped": {"unit": "iter", "inner": 500 if quick else 2000, "small": True},
    }


def workload_label(name, p):
    return {
        "overhead": f"overhead: {OVERHEAD_STEPS} sin steps, 3 elems",
        "untraced": "untraced: sin on 3 elems",
        "dotchain": f"dotchain: {DOT_STEPS} dots, D={p.get('D')}",
        "tanhchain": f"tanhchain: {TANH_STEPS} tanh(dot), D={p.get('D')}",
        "dropped": "dropped: create-and-drop, 2x2",
    }[name]


def make_data(name, p):
    import numpy
    rng = numpy.random.RandomState(SEED)
    if name in ("overhead", "untraced"):
        return (rng.standard_normal(3),)
    if name == "dotchain":
        D = p["D"]
        a = rng.standard_normal((D, D))
        x = a @ a.T / (4.0 * D)          # symmetric PSD, spectral radius about 1: no overflow
        z = rng.standard_normal((D, D))
        return x, z
    if name == "tanhchain":
        D = p["D"]
        x = rng.standard_normal((D, D)) / numpy.sqrt(D)
        z = rng.standard_normal((D, D))
        return x, z
    if name == "dropped":
        return rng.standard_normal((2, 2)), rng.standard_normal((2, 2))  # (b, a)
    raise ValueError(name)


# =============================================================================
# The hand-written NumPy gradients (the baseline)
# =============================================================================
def _hand(name, p):
    import numpy

    if name == "overhead":
        def grad_overhead(x):
            stack = []
            for _ in range(OVERHEAD_STEPS):
                stack.append(x)
                x = numpy.sin(x) * 1.0001 + 0.01 * x
            numpy.sum(x)
            g = numpy.ones_like(x)
            while stack:
                xp = stack.pop()
                g = g * (numpy.cos(xp) * 1.0001 + 0.01)
            return g
        return grad_overhead

    if name == "untraced":
        sin = numpy.sin
        n = p["inner"]

        def calls(x):
            for _ in range(n):
                y = sin(x)
            return y
        return calls

    if name == "dotchain":
        def grad_dotchain(x, z):
            stack = []
            for _ in range(DOT_STEPS):
                stack.append(z)
                z = numpy.dot(x, z)
            numpy.sum(z)
            g_z = numpy.ones_like(z)
            g_x = None
            while stack:
                zp = stack.pop()
                t = numpy.dot(g_z, zp.T)
                if g_x is None:
                    g_x = t
                else:
                    g_x += t
                del t, zp
                if stack:                      # z itself needs no gradient
                    g_z = numpy.dot(x.T, g_z)
            return g_x
        return grad_dotchain

    if name == "tanhchain":
        def grad_tanhchain(x, z):
            stack = [z]
            for _ in range(TANH_STEPS):
                z = numpy.tanh(numpy.dot(x, z))
                stack.append(z)
            del z
            numpy.sum(stack[-1])
            out = stack.pop()
            g = numpy.ones_like(out)
            g_x = None
            while stack:
                zin = stack.pop()
                g_pre = g * (1.0 - out * out)
                del g, out
                t = numpy.dot(g_pre, zin.T)
                if g_x is None:
                    g_x = t
                else:
                    g_x += t
                del t
                g = numpy.dot(x.T, g_pre) if stack else None
                del g_pre
                out = zin
                del zin
            return g_x
        return grad_tanhchain

    if name == "dropped":
        n = p["inner"]

        def loop(b, a):
            for _ in range(n):
                y = numpy.sin(a) * 2.0       # the value f computes and drops
                del y
                numpy.sum(b)
                res = (numpy.ones_like(b), numpy.zeros_like(a))
            return res
        return loop
    raise ValueError(name)


# =============================================================================
# The same functions for NumPy-like modules (gradcy.numpy, autograd.numpy, jax.numpy)
# =============================================================================
def _functions(m):
    def f_overhead(x):
        for _ in range(OVERHEAD_STEPS):
            x = m.sin(x) * 1.0001 + 0.01 * x
        return m.sum(x)

    def f_dotchain(x, z):
        for _ in range(DOT_STEPS):
            z = m.dot(x, z)
        return m.sum(z)

    def f_tanhchain(x, z):
        for _ in range(TANH_STEPS):
            z = m.tanh(m.dot(x, z))
        return m.sum(z)

    def f_dropped(b, a):
        y = m.sin(a) * 2.0
        del y
        return m.sum(b)
    return {"overhead": f_overhead, "dotchain": f_dotchain, "tanhchain": f_tanhchain,
            "dropped": f_dropped}


def _traced_lib(name, p, m, grad, block=lambda r: r, tuple_kw="argnum"):
    fns = _functions(m)
    if name == "untraced":
        sin = m.sin
        n = p["inner"]

        def calls(x):
            for _ in range(n):
                y = sin(x)
            return block(y)
        return calls
    if name == "dropped":
        df = grad(fns["dropped"], **{tuple_kw: (0, 1)})
        n = p["inner"]

        def loop(b, a):
            for _ in range(n):
                res = df(b, a)
            return block(res)
        return loop
    df = grad(fns[name])
    return lambda *args: block(df(*args))


def _gradcy(name, p):
    import gradcy.numpy as gnp
    from gradcy import grad
    return _traced_lib(name, p, gnp, grad)


def _autograd(name, p):
    import autograd.numpy as anp
    from autograd import grad
    return _traced_lib(name, p, anp, grad)


def _jax(name, p):
    import jax
    jax.config.update("jax_enable_x64", True)
    import jax.numpy as jnp

    def block(r):
        return jax.block_until_ready(r)
    run = _traced_lib(name, p, jnp, jax.grad, block=block, tuple_kw="argnums")
    to_dev = jnp.asarray
    if name == "untraced":
        # convert once: the workload is the call on a device array
        return run, lambda args: tuple(to_dev(a) for a in args)
    return run, None


def _torch(name, p):
    import torch
    torch.set_num_threads(1)
    try:
        torch.set_num_interop_threads(1)
    except RuntimeError:
        pass
    tg = torch.autograd.grad
    leaf = torch.from_numpy          # shares memory with the NumPy input: no copy

    if name == "overhead":
        def grad_overhead(xn):
            x0 = leaf(xn).requires_grad_()
            x = x0
            for _ in range(OVERHEAD_STEPS):
                x = torch.sin(x) * 1.0001 + 0.01 * x
            return tg(x.sum(), (x0,))[0]
        return grad_overhead, None
    if name == "untraced":
        sin = torch.sin
        n = p["inner"]

        def calls(x):
            for _ in range(n):
                y = sin(x)
            return y
        return calls, lambda args: tuple(leaf(a) for a in args)
    if name == "dotchain":
        def grad_dotchain(xn, zn):
            x0 = leaf(xn).requires_grad_()
            z = leaf(zn)
            for _ in range(DOT_STEPS):
                z = torch.matmul(x0, z)
            return tg(z.sum(), (x0,))[0]
        return grad_dotchain, None
    if name == "tanhchain":
        def grad_tanhchain(xn, zn):
            x0 = leaf(xn).requires_grad_()
            z = leaf(zn)
            for _ in range(TANH_STEPS):
                z = torch.tanh(torch.matmul(x0, z))
            return tg(z.sum(), (x0,))[0]
        return grad_tanhchain, None
    if name == "dropped":
        n = p["inner"]

        def loop(bn, an):
            for _ in range(n):
                b = leaf(bn).requires_grad_()
                a = leaf(an).requires_grad_()
                y = torch.sin(a) * 2.0
                del y
                gb, ga = tg(b.sum(), (b, a), allow_unused=True)
                if ga is None:
                    ga = torch.zeros_like(a)
                res = (gb, ga)
            return res
        return loop, None
    raise ValueError(name)


def build(lib, name, p):
    """(run, convert): run(*data) does one timed unit of work; convert(data) -> data prepared
    once outside the timing (None: use the NumPy data as is)."""
    if lib == "numpy":
        return _hand(name, p), None
    if lib == "gradcy":
        return _gradcy(name, p), None
    if lib == "autograd":
        return _autograd(name, p), None
    if lib == "torch":
        return _torch(name, p)
    if lib == "jax":
        return _jax(name, p)
    raise Unsupported(f"unknown library {lib!r}")


# =============================================================================
# Worker: one library, one workload, one process
# =============================================================================
def _rss_now():
    try:
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return None


def _maxrss():
    import resource
    r = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return r if sys.platform == "darwin" else r * 1024


def _reset_hwm():
    """Reset the RSS high-water mark (Linux >= 4.0) so it reflects only what follows."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


def _to_numpy(r):
    import numpy
    if isinstance(r, (tuple, list)):
        return [a for e in r for a in _to_numpy(e)]
    if hasattr(r, "detach"):                      # torch
        r = r.detach().cpu().numpy()
    return [numpy.asarray(r, dtype=numpy.float64) if not numpy.iscomplexobj(r)
            else numpy.asarray(r)]


def _fingerprint(r):
    """A few numbers that identify a gradient: (sum, sum of |g|, projection on a fixed vector)."""
    import numpy
    out = []
    for g in _to_numpy(r):
        w = numpy.random.RandomState(123).standard_normal(g.size)
        flat = g.ravel()
        out.append([float(flat.sum()), float(numpy.abs(flat).sum()), float(flat @ w)])
    return out


def _pinned_env(base=None):
    env = dict(os.environ if base is None else base)
    for v in THREAD_VARS:
        env[v] = "1"
    env.setdefault("JAX_PLATFORMS", "cpu")
    env.setdefault("JAX_ENABLE_X64", "1")
    env["XLA_FLAGS"] = (env.get("XLA_FLAGS", "") + " --xla_cpu_multi_thread_eigen=false "
                        "intra_op_parallelism_threads=1").strip()
    env["PYTHONHASHSEED"] = "0"
    return env


def worker(lib, name, args):
    p = workload_params(args)[name]
    inner = p["inner"]
    out = {"lib": lib, "workload": name, "status": "ok", "notes": []}
    try:
        data = make_data(name, p)
        run, convert = build(lib, name, p)
        if convert is not None:
            data = convert(data)
    except Unsupported as exc:
        return dict(out, status="n/a", reason=str(exc))
    except ImportError as exc:
        return dict(out, status="n/a", reason=f"not importable ({exc})")

    core = None
    if lib == "gradcy":
        from gradcy import _core as core

    gc.collect()
    hwm_reset = _reset_hwm()
    rss0 = _rss_now()
    maxrss0 = _maxrss()
    times = []
    try:
        if p["small"]:
            r = run(*data)                       # warm-up (imports, caches, first dispatch)
            del r
        for _ in range(args.repeats):
            gc.collect()
            t0 = time.perf_counter()
            r = run(*data)
            t1 = time.perf_counter()
            times.append((t1 - t0) / inner)
            fp = _fingerprint(r)
            del r
        maxrss = _maxrss()

        trace_peak = None
        if lib in ("numpy", "gradcy", "autograd"):
            import tracemalloc
            gc.collect()
            if core is not None:
                core.reset_peak()
            tracemalloc.start()
            tracemalloc.reset_peak()
            r = run(*data)
            trace_peak = tracemalloc.get_traced_memory()[1]
            tracemalloc.stop()
            del r
        else:
            out["notes"].append("allocations invisible to tracemalloc")
    except Unsupported as exc:
        return dict(out, status="n/a", reason=str(exc))
    except Exception as exc:                     # noqa: BLE001 - reported, never hidden
        msg = str(exc).strip().splitlines()
        return dict(out, status="n/a",
                    reason=f"{type(exc).__name__}: {msg[0][:160] if msg else ''}")

    gc.collect()
    if core is not None:
        st = core.stats()
        if name in ("dotchain", "tanhchain", "overhead"):
            out["notes"].append(f"core peak saved {fmt_bytes(st['peak_saved_bytes'])}")
        if st["live_nodes"] or st["live_tapes"] or name == "dropped":
            out["notes"].append(f"live nodes after: {st['live_nodes']}, "
                                f"live tapes: {st['live_tapes']}")
    if rss0 is None:
        rss0 = maxrss0
    if not hwm_reset:
        out["notes"].append("RSS high-water not resettable: peak includes setup")
    out.update(time=statistics.median(times), times=times, tracemalloc_peak=trace_peak,
               rss_peak=max(0, maxrss - rss0), fingerprint=fp, unit=p["unit"])
    return out


def worker_main(argv):
    ap = argparse.ArgumentParser(prog="python -m gradcy.bench --worker")
    ap.add_argument("lib", choices=LIBS)
    ap.add_argument("workload", choices=WORKLOADS)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--D", type=int, default=500)
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args(argv)
    if "numpy" in sys.modules and any(os.environ.get(v) != "1" for v in THREAD_VARS[:3]):
        # started by hand without pinned threads: NumPy is loaded (gradcy imports it), so
        # start again with the environment pinned before anything is imported
        os.execve(sys.executable, [sys.executable, "-m", "gradcy.bench", "--worker"] + argv,
                  _pinned_env())
    res = worker(args.lib, args.workload, args)
    sys.stdout.write(RESULT_TAG + json.dumps(res) + "\n")
    sys.stdout.flush()


# =============================================================================
# Driver
# =============================================================================
def fmt_time(s):
    if s is None:
        return "n/a"
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("us", 1e-6)):
        if s >= scale:
            return f"{s / scale:.3g} {unit}"
    return f"{s / 1e-9:.3g} ns"


def fmt_bytes(b):
    if b is None:
        return "-"
    for unit, scale in (("GiB", 2 ** 30), ("MiB", 2 ** 20), ("KiB", 2 ** 10)):
        if b >= scale:
            return f"{b / scale:.3g} {unit}"
    return f"{b} B"


def fmt_ratio(v, base, floor=0):
    if v is None or base is None or base <= floor:
        return "-"
    return f"{v / base:.2f}x"


def _version(dist):
    from importlib import metadata
    try:
        return metadata.version(dist)
    except metadata.PackageNotFoundError:
        return None


def _cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "?"


def _loadavg():
    try:
        return ", load average %.2f %.2f %.2f (1/5/15 min)" % os.getloadavg()
    except (OSError, AttributeError):
        return ""


def _git_commit():
    here = os.path.dirname(os.path.abspath(__file__))
    try:
        r = subprocess.run(["git", "-C", here, "rev-parse", "--short", "HEAD"],
                           capture_output=True, text=True, timeout=5)
        if r.returncode == 0:
            dirty = subprocess.run(["git", "-C", here, "status", "--porcelain",
                                    "--untracked-files=no"],
                                   capture_output=True, text=True, timeout=5).stdout.strip()
            return r.stdout.strip() + ("+dirty" if dirty else "")
    except (OSError, subprocess.SubprocessError):
        pass
    return None


def header(argv):
    import numpy
    vers = {name: _version(dist) for name, dist in
            (("gradcy", "gradcy"), ("autograd", "autograd"), ("torch", "torch"),
             ("jax", "jax"))}
    commit = _git_commit()
    lines = [
        f"date: {datetime.datetime.now().astimezone().isoformat(timespec='seconds')}",
        f"machine: {platform.platform()}, {_cpu_model()}, {os.cpu_count()} CPUs, "
        f"Python {platform.python_version()}" + _loadavg(),
        "versions: numpy " + numpy.__version__ + ", " + ", ".join(
            f"{k} {v if v else 'not installed'}" for k, v in vers.items())
        + (f" (gradcy commit {commit})" if commit else ""),
        "threads: OMP/OPENBLAS/MKL_NUM_THREADS=1, torch.set_num_threads(1); one subprocess "
        "per library and workload",
        "command: " + shlex.join(["python", "-m", "gradcy.bench"] + list(argv)),
    ]
    return "\n".join(lines)


def run_worker(lib, name, args, timeout):
    cmd = [sys.executable, "-m", "gradcy.bench", "--worker", lib, name,
           "--repeats", str(args.repeats), "--D", str(args.D)]
    if args.quick:
        cmd.append("--quick")
    base = {"lib": lib, "workload": name, "notes": []}
    try:
        r = subprocess.run(cmd, env=_pinned_env(), capture_output=True, text=True,
                           timeout=timeout)
    except subprocess.TimeoutExpired:
        return dict(base, status="n/a", reason=f"timed out after {timeout:.0f} s")
    for line in reversed(r.stdout.splitlines()):
        if line.startswith(RESULT_TAG):
            return json.loads(line[len(RESULT_TAG):])
    err = [ln for ln in (r.stderr or "").strip().splitlines() if ln.strip()]
    why = err[-1][:160] if err else f"exit code {r.returncode}"
    if r.returncode < 0:
        why = f"killed by signal {-r.returncode} ({why})"
    return dict(base, status="n/a", reason=f"worker failed: {why}")


def _close(fa, fb):
    """Gradient fingerprints equal up to a tolerance scaled by each array's magnitude."""
    if len(fa) != len(fb):
        return False
    for a, b in zip(fa, fb):
        scale = max(b[1], 1e-300)
        for u, v in zip(a, b):
            if not (abs(u - v) <= 1e-6 * scale):
                return False
    return True


def table(results, workloads, libs, params):
    rows = ["| workload | library | time | vs hand | tracemalloc peak | vs hand | RSS peak | "
            "vs hand | notes |",
            "|---|---|---:|---:|---:|---:|---:|---:|---|"]
    for name in workloads:
        p = params[name]
        base = results.get(("numpy", name))
        ok_base = base is not None and base.get("status") == "ok"
        label = f"{workload_label(name, p)} (per {p['unit']})"
        for lib in libs:
            r = results.get((lib, name))
            if r is None:
                continue
            if r.get("status") != "ok":
                rows.append(f"| {label} | {LIB_LABEL[lib]} | n/a | | | | | | "
                            f"{r.get('reason', '')} |")
                label = '"'
                continue
            notes = list(r.get("notes", []))
            if ok_base and lib != "numpy":
                if not _close(r["fingerprint"], base["fingerprint"]):
                    notes.insert(0, "GRADIENT DIFFERS from hand-written")
            bt = base["time"] if ok_base else None
            bm = base["tracemalloc_peak"] if ok_base else None
            brss = base["rss_peak"] if ok_base else None
            rows.append(
                f"| {label} | {LIB_LABEL[lib]} | {fmt_time(r['time'])} | "
                f"{fmt_ratio(r['time'], bt)} | {fmt_bytes(r['tracemalloc_peak'])} | "
                f"{fmt_ratio(r['tracemalloc_peak'], bm)} | {fmt_bytes(r['rss_peak'])} | "
                f"{fmt_ratio(r['rss_peak'], brss, floor=2 ** 20)} | {'; '.join(notes)} |")
            label = '"'
    return "\n".join(rows)


def main(argv=None):
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] == "--worker":
        return worker_main(argv[1:])
    ap = argparse.ArgumentParser(
        prog="python -m gradcy.bench",
        description="Time and peak memory of gradcy against a hand-written NumPy gradient, "
                    "autograd, PyTorch (CPU) and JAX.")
    ap.add_argument("--workloads", default=",".join(WORKLOADS),
                    help=f"comma list of {', '.join(WORKLOADS)} (default: all)")
    ap.add_argument("--libs", default=",".join(LIBS),
                    help=f"comma list of {', '.join(LIBS)} (default: all; numpy, the "
                         f"hand-written baseline, is always run)")
    ap.add_argument("--repeats", type=int, default=None,
                    help="timed runs per library and workload, median reported "
                         "(default 5, --quick 3)")
    ap.add_argument("--D", type=int, default=None,
                    help="matrix size of dotchain and tanhchain (default 500, --quick 200)")
    ap.add_argument("--quick", action="store_true",
                    help="fewer repeats and inner calls, D=200 unless --D is given")
    ap.add_argument("--timeout", type=float, default=None,
                    help="seconds per library and workload before it is reported n/a")
    ap.add_argument("--json", metavar="PATH", help="also write the raw results to PATH")
    args = ap.parse_args(argv)
    if args.repeats is None:
        args.repeats = 3 if args.quick else 5
    if args.D is None:
        args.D = 200 if args.quick else 500
    if args.repeats < 1:
        ap.error("--repeats must be >= 1")
    timeout = args.timeout or (180.0 if args.quick else 600.0)

    workloads = [w.strip() for w in args.workloads.split(",") if w.strip()]
    libs = [l.strip() for l in args.libs.split(",") if l.strip()]
    for w in workloads:
        if w not in WORKLOADS:
            ap.error(f"unknown workload {w!r}; choose from {', '.join(WORKLOADS)}")
    for l in libs:
        if l not in LIBS:
            ap.error(f"unknown library {l!r}; choose from {', '.join(LIBS)}")
    if "numpy" not in libs:
        libs.insert(0, "numpy")
    libs = [l for l in LIBS if l in libs]        # fixed order, baseline first

    params = workload_params(args)
    results = {}
    total = len(workloads) * len(libs)
    k = 0
    t_start = time.perf_counter()
    for name in workloads:
        for lib in libs:
            k += 1
            if importlib.util.find_spec(lib) is None:
                results[(lib, name)] = {"lib": lib, "workload": name, "status": "n/a",
                                        "reason": "not installed", "notes": []}
                continue
            t0 = time.perf_counter()
            print(f"[{k}/{total}] {name} {lib} ...", end="", file=sys.stderr, flush=True)
            r = run_worker(lib, name, args, timeout)
            results[(lib, name)] = r
            status = fmt_time(r["time"]) if r.get("status") == "ok" else "n/a"
            print(f" {status} ({time.perf_counter() - t0:.1f} s)", file=sys.stderr,
                  flush=True)
    print(f"total {time.perf_counter() - t_start:.0f} s", file=sys.stderr)

    print(header(argv))
    print()
    print(table(results, workloads, libs, params))
    print()
    print("time: median of the timed runs, per unit; vs hand: ratio to the hand-written NumPy "
          "gradient; tracemalloc peak: bytes allocated at once during one run (- when the "
          "library's allocations are invisible to tracemalloc); RSS peak: process high-water "
          "RSS during the timed runs minus RSS before them (ratio shown when the hand-written "
          "one is at least 1 MiB).")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"header": header(argv), "results": list(results.values())}, f,
                      indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
