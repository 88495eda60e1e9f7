"""gradcy beside a hand-written NumPy gradient, autograd, PyTorch (CPU) and JAX, now.

    python benchmarks/peers.py                  # every workload, every importable library
    python benchmarks/peers.py --quick          # fewer repeats, smaller sizes (a few minutes)
    python benchmarks/peers.py --workloads dotchain,tanhchain --libs numpy,gradcy,torch --D 1000
    python benchmarks/peers.py --workloads memnet --S 64,256,1024   # the memory network
    python benchmarks/peers.py --workloads attention --S 64,256,1024   # gradcy issue 13

Every (library, workload) pair runs in its own subprocess
(`python benchmarks/peers.py --worker LIB WORKLOAD ...`) with the BLAS/OpenMP thread counts
pinned to 1 before NumPy is imported, so the libraries cannot disturb each other and the RSS
high-water mark belongs to one workload. What each library runs is peer_workloads.py; the
hand-written gradients are reference_gradients.py. Each worker reports:

time         median over --repeats timed runs, per unit (one gradient, one call, one iteration);
             a memnet gradient that takes under 0.1 s is repeated until 0.5 s has been timed
             (at most 51 runs), since a few short runs are noisy on a shared machine
tracemalloc  peak bytes allocated during one run (NumPy reports its buffers to tracemalloc; the
             allocations of PyTorch and XLA are invisible to it, so those show "-")
RSS peak     high-water RSS during the timed runs minus the RSS before them (all libraries)

Ratios are to "numpy", the hand-written gradient of the same function. Each gradient is checked
against the hand-written one; a library that cannot run a workload is listed as "n/a" with the
reason, and a library that is not installed is left out of the run (and of the progress count).
A memnet run that goes over --max-seconds for one gradient or --max-gib of RSS is stopped and
shown as n/a.
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
import threading
import time
import tracemalloc

import numpy

import reference_gradients as ref
from peer_workloads import (
    LIBS,
    WORKLOADS,
    Unsupported,
    build,
    lib_label,
    make_data,
    memnet_functions,
    variants,
    workload_label,
    workload_params,
)

STEPPED = ("memnet", "attention")  # workloads run once per --S, under the run guard
MIN_TIMED_SECONDS = 0.5  # memnet: repeat a short gradient until this much has been timed ...
MAX_SHORT_RUNS = 51  # ... up to this many runs
MEMNET_S = (64, 256, 1024)  # steps (one row group each); --quick: the first two
MEMNET_MAX_SECONDS = 60.0  # one gradient slower than this: n/a (too slow)
MEMNET_MAX_GIB = 4.0  # RSS above this: n/a (too large)
MEMNET_TIME_BUDGET = 30.0  # stop repeating once the timed runs have taken this long

THREAD_VARS = (
    "OMP_NUM_THREADS",
    "OPENBLAS_NUM_THREADS",
    "MKL_NUM_THREADS",
    "VECLIB_MAXIMUM_THREADS",
    "NUMEXPR_NUM_THREADS",
    "BLIS_NUM_THREADS",
)
RESULT_TAG = "GRADCY_BENCH_RESULT "
SCRIPT = os.path.abspath(__file__)


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
    if isinstance(r, (tuple, list)):
        return [a for e in r for a in _to_numpy(e)]
    if hasattr(r, "detach"):  # torch
        r = r.detach().cpu().numpy()
    return [
        numpy.asarray(r, dtype=numpy.float64) if not numpy.iscomplexobj(r) else numpy.asarray(r)
    ]


def _fingerprint(r):
    """A few numbers that identify a gradient: (sum, sum of |g|, projection on a fixed vector)."""
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
    env["XLA_FLAGS"] = (
        env.get("XLA_FLAGS", "") + " --xla_cpu_multi_thread_eigen=false "
        "intra_op_parallelism_threads=1"
    ).strip()
    env["PYTHONHASHSEED"] = "0"
    return env


class _Guard:
    """Stops a worker whose run goes over a time or RSS limit: a daemon thread polls while a
    run is in progress and, on a breach, writes the result (n/a, or the timed results without
    the tracemalloc peak when only that slower run went over) and exits the process.

    It polls rarely (every 0.25 s): each wake-up takes the GIL from the measured thread, and
    at a 20 ms period that alone slowed a 5 ms NumPy gradient (which releases the GIL in
    every BLAS call) to about 10 ms."""

    def __init__(self, out, max_seconds, max_bytes, poll=0.25):
        self.out = out
        self.max_seconds = max_seconds
        self.max_bytes = max_bytes
        self.poll = poll
        self.phase = None
        self.t0 = 0.0
        self.partial = None  # the result so far, once the timed runs are done
        self.factor = 1.0
        threading.Thread(target=self._watch, daemon=True).start()

    def start(self, phase, factor=1.0):
        self.factor = factor
        self.t0 = time.perf_counter()
        self.phase = phase

    def stop(self):
        # checked here too, so a run shorter than one poll period is still judged
        breach = self._breach()
        self.phase = None
        if breach is not None:
            self._report(breach)

    def _breach(self):
        phase = self.phase
        if phase is None:
            return None
        if self.max_bytes:
            rss = _rss_now()
            if rss is not None and rss > self.max_bytes:
                return phase, (
                    f"too large: RSS above {fmt_bytes(self.max_bytes)} in one "
                    f"{'gradient' if phase == 'run' else phase + ' run'}"
                )
        if self.max_seconds and time.perf_counter() - self.t0 > self.max_seconds * self.factor:
            return phase, (
                f"too slow: one "
                f"{'gradient' if phase == 'run' else phase + ' run'} took more "
                f"than {self.max_seconds * self.factor:g} s"
            )
        return None

    def _watch(self):
        while True:
            time.sleep(self.poll)
            breach = self._breach()
            if breach is not None:
                self._report(breach)

    def _report(self, breach):
        """Write the result of a run stopped by `breach` and exit the process."""
        phase, reason = breach
        if phase == "tracemalloc" and self.partial is not None:
            res = dict(self.partial)
            res["notes"] = list(res["notes"]) + [f"tracemalloc peak not measured: {reason}"]
        else:
            res = dict(self.out, status="n/a", reason=reason)
        sys.stdout.write(RESULT_TAG + json.dumps(res) + "\n")
        sys.stdout.flush()
        os._exit(0)


def _check_memnet_hand(data, p):
    """The hand-written memnet gradient must match gradcy's (in-place and concat agree with
    each other in tests/test_bench.py). gradcy is imported here, after the baseline's
    measurements, so that they do not hold it."""
    import gradcy.numpy as gnp
    from gradcy import grad

    W, x = data
    ours = ref.hand_memnet(W, x, p["S"])
    theirs = grad(memnet_functions(gnp)["memnet_inplace"])(W, x, p["S"])
    numpy.testing.assert_allclose(
        ours,
        theirs,
        rtol=1e-9,
        atol=1e-12,
        err_msg="hand-written memnet gradient differs from gradcy's",
    )


def worker(lib, name, args):
    p = workload_params(args)[name]
    variant = getattr(args, "variant", None) or variants(name, lib)[0]
    inner = p["inner"]
    out = {
        "lib": lib,
        "variant": variant,
        "workload": name,
        "S": p.get("S"),
        "status": "ok",
        "notes": [],
    }
    try:
        data = make_data(name, p)
        run, convert = build(lib, name, p, variant)
        if convert is not None:
            data = convert(data)
    except Unsupported as exc:
        return dict(out, status="n/a", reason=str(exc))
    except ImportError as exc:
        return dict(out, status="n/a", reason=f"not importable ({exc})")

    core = None
    if lib == "gradcy":
        from gradcy import _core as core

    guard = None
    budget = None
    if name in STEPPED:
        max_gib = getattr(args, "max_gib", MEMNET_MAX_GIB)
        guard = _Guard(
            out,
            getattr(args, "max_seconds", MEMNET_MAX_SECONDS),
            int(max_gib * 2**30) if max_gib else None,
        )
        budget = getattr(args, "time_budget", MEMNET_TIME_BUDGET)

    def timed(r_phase, factor=1.0):
        if guard is not None:
            guard.start(r_phase, factor)
        try:
            return run(*data)
        finally:
            if guard is not None:
                guard.stop()

    gc.collect()
    hwm_reset = _reset_hwm()
    rss0 = _rss_now()
    maxrss0 = _maxrss()
    times = []
    try:
        if p["small"]:
            r = run(*data)  # warm-up (imports, caches, first dispatch)
            del r
        elif name in STEPPED:  # warm-up at S=2: lazy imports, first dispatch
            r = build(lib, name, dict(p, S=2), variant)[0](*data)
            del r
        n_runs = args.repeats
        k = 0
        while k < n_runs:
            gc.collect()
            t0 = time.perf_counter()
            r = timed("run")
            t1 = time.perf_counter()
            times.append((t1 - t0) / inner)
            fp = _fingerprint(r)
            del r
            k += 1
            if k == 1 and name in STEPPED and not getattr(args, "quick", False):
                # short runs are noisy on a shared machine: at least MIN_TIMED_SECONDS of them
                n_runs = max(n_runs, min(MAX_SHORT_RUNS, int(MIN_TIMED_SECONDS / (t1 - t0))))
            if budget and len(times) < n_runs and sum(times) + times[-1] > budget:
                out["notes"].append(f"{len(times)} of {n_runs} runs (time budget {budget:.0f} s)")
                break
        maxrss = _maxrss()

        trace_peak = None
        if lib in ("numpy", "gradcy", "autograd"):
            if guard is not None:
                guard.partial = dict(
                    out,
                    time=statistics.median(times),
                    times=times,
                    tracemalloc_peak=None,
                    rss_peak=max(0, maxrss - (rss0 or maxrss0)),
                    fingerprint=fp,
                    unit=p["unit"],
                )
            gc.collect()
            if core is not None:
                core.reset_peak()
            tracemalloc.start()
            tracemalloc.reset_peak()
            r = timed("tracemalloc", factor=3.0)  # tracing slows the Python-heavy libraries
            trace_peak = tracemalloc.get_traced_memory()[1]
            tracemalloc.stop()
            del r
        else:
            out["notes"].append("allocations invisible to tracemalloc")
        if lib == "numpy" and name == "memnet":
            _check_memnet_hand(data, p)
            out["notes"].append("checked against gradcy (allclose, rtol 1e-9)")
    except Unsupported as exc:
        return dict(out, status="n/a", reason=str(exc))
    except Exception as exc:  # reported, never hidden
        msg = str(exc).strip().splitlines()
        if isinstance(exc, AssertionError):
            msg = [" ".join(line.strip() for line in msg[:4])]
        return dict(
            out, status="n/a", reason=f"{type(exc).__name__}: {msg[0][:300] if msg else ''}"
        )

    gc.collect()
    if core is not None:
        st = core.stats()
        if name in ("dotchain", "tanhchain", "overhead") + STEPPED:
            out["notes"].append(f"core peak saved {fmt_bytes(st['peak_saved_bytes'])}")
        if st["live_nodes"] or st["live_tapes"] or name == "dropped":
            out["notes"].append(
                f"live nodes after: {st['live_nodes']}, live tapes: {st['live_tapes']}"
            )
    if rss0 is None:
        rss0 = maxrss0
    if not hwm_reset:
        out["notes"].append("RSS high-water not resettable: peak includes setup")
    out.update(
        time=statistics.median(times),
        times=times,
        tracemalloc_peak=trace_peak,
        rss_peak=max(0, maxrss - rss0),
        fingerprint=fp,
        unit=p["unit"],
    )
    return out


def worker_main(argv):
    ap = argparse.ArgumentParser(prog="python benchmarks/peers.py --worker")
    ap.add_argument("lib", choices=LIBS)
    ap.add_argument("workload", choices=WORKLOADS)
    ap.add_argument("--variant", default=None)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--D", type=int, default=500)
    ap.add_argument("--S", type=int, default=MEMNET_S[0])
    ap.add_argument("--max-seconds", type=float, default=MEMNET_MAX_SECONDS)
    ap.add_argument("--max-gib", type=float, default=MEMNET_MAX_GIB)
    ap.add_argument("--time-budget", type=float, default=MEMNET_TIME_BUDGET)
    ap.add_argument("--quick", action="store_true")
    args = ap.parse_args(argv)
    if "numpy" in sys.modules and any(os.environ.get(v) != "1" for v in THREAD_VARS[:3]):
        # started by hand without pinned threads: NumPy is loaded (this file imports it), so
        # start again with the environment pinned before anything is imported
        os.execve(sys.executable, [sys.executable, SCRIPT, "--worker"] + argv, _pinned_env())
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
    for unit, scale in (("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10)):
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
        return ", load average {:.2f} {:.2f} {:.2f} (1/5/15 min)".format(*os.getloadavg())
    except (OSError, AttributeError):
        return ""


def _git_commit():
    here = os.path.dirname(os.path.abspath(__file__))
    try:
        r = subprocess.run(
            ["git", "-C", here, "rev-parse", "--short", "HEAD"],
            capture_output=True,
            text=True,
            timeout=5,
        )
        if r.returncode == 0:
            dirty = subprocess.run(
                ["git", "-C", here, "status", "--porcelain", "--untracked-files=no"],
                capture_output=True,
                text=True,
                timeout=5,
            ).stdout.strip()
            return r.stdout.strip() + ("+dirty" if dirty else "")
    except (OSError, subprocess.SubprocessError):
        pass
    return None


def header(argv):
    vers = {
        name: _version(dist)
        for name, dist in (
            ("gradcy", "gradcy"),
            ("autograd", "autograd"),
            ("torch", "torch"),
            ("jax", "jax"),
        )
    }
    commit = _git_commit()
    lines = [
        f"date: {datetime.datetime.now().astimezone().isoformat(timespec='seconds')}",
        f"machine: {platform.platform()}, {_cpu_model()}, {os.cpu_count()} CPUs, "
        f"Python {platform.python_version()}" + _loadavg(),
        "versions: numpy "
        + numpy.__version__
        + ", "
        + ", ".join(f"{k} {v if v else 'not installed'}" for k, v in vers.items())
        + (f" (gradcy commit {commit})" if commit else ""),
        "threads: OMP/OPENBLAS/MKL_NUM_THREADS=1, torch.set_num_threads(1); one subprocess "
        "per library and workload",
        "command: " + shlex.join(["python", "benchmarks/peers.py"] + list(argv)),
    ]
    return "\n".join(lines)


def run_worker(lib, name, args, timeout, variant=None, S=None):
    cmd = [
        sys.executable,
        SCRIPT,
        "--worker",
        lib,
        name,
        "--repeats",
        str(args.repeats),
        "--D",
        str(args.D),
    ]
    if variant is not None:
        cmd += ["--variant", variant]
    if S is not None:
        cmd += ["--S", str(S)]
    for opt in ("max_seconds", "max_gib", "time_budget"):
        if getattr(args, opt, None) is not None:
            cmd += ["--" + opt.replace("_", "-"), str(getattr(args, opt))]
    if args.quick:
        cmd.append("--quick")
    base = {"lib": lib, "variant": variant, "workload": name, "S": S, "notes": []}
    try:
        r = subprocess.run(cmd, env=_pinned_env(), capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return dict(base, status="n/a", reason=f"timed out after {timeout:.0f} s")
    for line in reversed(r.stdout.splitlines()):
        if line.startswith(RESULT_TAG):
            return json.loads(line[len(RESULT_TAG) :])
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


def cases(workloads, args):
    """(workload, S) pairs in run order: memnet once per --S, the others once (S None)."""
    out = []
    for name in workloads:
        if name in STEPPED:
            out += [(name, S) for S in args.S]
        else:
            out.append((name, None))
    return out


def case_params(params, name, S):
    p = dict(params[name])
    if S is not None:
        p["S"] = S
    return p


def table(results, case_list, libs, params):
    rows = [
        "| workload | library | time | vs hand | tracemalloc peak | vs hand | RSS peak | "
        "vs hand | notes |",
        "|---|---|---:|---:|---:|---:|---:|---:|---|",
    ]
    for name, S in case_list:
        p = case_params(params, name, S)
        base = results.get(("numpy", variants(name, "numpy")[0], name, S))
        ok_base = base is not None and base.get("status") == "ok"
        label = f"{workload_label(name, p)} (per {p['unit']})"
        for lib, variant in ((lb, v) for lb in libs for v in variants(name, lb)):
            r = results.get((lib, variant, name, S))
            if r is None:
                continue
            if r.get("status") != "ok":
                rows.append(
                    f"| {label} | {lib_label(lib, variant)} | n/a | | | | | | "
                    f"{r.get('reason', '')} |"
                )
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
                f"| {label} | {lib_label(lib, variant)} | {fmt_time(r['time'])} | "
                f"{fmt_ratio(r['time'], bt)} | {fmt_bytes(r['tracemalloc_peak'])} | "
                f"{fmt_ratio(r['tracemalloc_peak'], bm)} | {fmt_bytes(r['rss_peak'])} | "
                f"{fmt_ratio(r['rss_peak'], brss, floor=2**20)} | {'; '.join(notes)} |"
            )
            label = '"'
    return "\n".join(rows)


def _ratio_text(a, b):
    return "-" if a is None or b is None or not b else f"{a / b:.2f}x"


def attention_summary(results, Ss):
    """The attention targets (gradcy issue 13): gradcy in place against the hand-written
    gradient, time <= 1.4x and tracemalloc peak <= 1.3x."""
    lines = ["attention targets (gradcy in-place against the hand-written gradient):"]
    for S in Ss:
        hand = results.get(("numpy", "inplace", "attention", S))
        for variant in ("inplace", "recompute"):
            gin = results.get(("gradcy", variant, "attention", S))
            if not (hand and gin and hand.get("status") == "ok" and gin.get("status") == "ok"):
                lines.append(f"  S={S} {variant}: n/a")
                continue
            t = gin["time"] / hand["time"]
            m = (
                gin["tracemalloc_peak"] / hand["tracemalloc_peak"]
                if gin["tracemalloc_peak"] and hand["tracemalloc_peak"]
                else None
            )
            lines.append(
                f"  S={S} {variant}: time {t:.2f}x hand ({'ok' if t <= 1.4 else 'MISSES'} "
                f"<= 1.4x); "
                + (
                    "peak n/a"
                    if m is None
                    else f"peak {m:.2f}x hand ({'ok' if m <= 1.3 else 'MISSES'} <= 1.3x)"
                )
            )
    return "\n".join(lines)


def memnet_summary(results, Ss):
    """The memnet targets: gradcy in place against the hand-written gradient (time, peak),
    against gradcy's concatenating version (time) and against PyTorch's (RSS peak)."""

    def get(lib, variant, S):
        r = results.get((lib, variant, "memnet", S))
        return r if r is not None and r.get("status") == "ok" else None

    lines = [
        "memnet targets (gradcy in-place; peak = tracemalloc peak where both have one, "
        "RSS peak against torch):"
    ]
    for S in Ss:
        hand, gin, gcat = (
            get("numpy", "inplace", S),
            get("gradcy", "inplace", S),
            get("gradcy", "concat", S),
        )
        tcat = get("torch", "concat", S)
        if gin is None:
            lines.append(f"  S={S}: gradcy in-place n/a")
            continue
        parts = []
        if hand is not None:
            t = gin["time"] / hand["time"]
            parts.append(f"time {t:.2f}x hand ({'ok' if t <= 1.5 else 'MISSES'} <= 1.5x)")
            m = _ratio_text(gin["tracemalloc_peak"], hand["tracemalloc_peak"])
            ok = (
                gin["tracemalloc_peak"] is not None
                and hand["tracemalloc_peak"]
                and gin["tracemalloc_peak"] <= 1.5 * hand["tracemalloc_peak"]
            )
            parts.append(f"peak {m} hand ({'ok' if ok else 'MISSES'} <= 1.5x)")
        if gcat is not None:
            t = gin["time"] / gcat["time"]
            parts.append(f"time {t:.2f}x gradcy concat ({'ok' if t <= 1.0 else 'MISSES'} <= 1x)")
        if tcat is not None and gin["rss_peak"]:
            f = tcat["rss_peak"] / gin["rss_peak"]
            parts.append(
                f"RSS peak {f:.1f}x below torch concat"
                + (f" ({'ok' if f >= 10 else 'MISSES'} >= 10x)" if S >= 1024 else "")
            )
        lines.append(f"  S={S}: " + "; ".join(parts))
    return "\n".join(lines)


def main(argv=None):
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] == "--worker":
        return worker_main(argv[1:])
    ap = argparse.ArgumentParser(
        prog="python benchmarks/peers.py",
        description="Time and peak memory of gradcy against a hand-written NumPy gradient, "
        "autograd, PyTorch (CPU) and JAX.",
    )
    ap.add_argument(
        "--workloads",
        default=",".join(WORKLOADS),
        help=f"comma list of {', '.join(WORKLOADS)} (default: all)",
    )
    ap.add_argument(
        "--libs",
        default=",".join(LIBS),
        help=f"comma list of {', '.join(LIBS)} (default: all; numpy, the "
        f"hand-written baseline, is always run)",
    )
    ap.add_argument(
        "--repeats",
        type=int,
        default=None,
        help="timed runs per library and workload, median reported (default 5, --quick 3)",
    )
    ap.add_argument(
        "--D",
        type=int,
        default=None,
        help="matrix size of dotchain and tanhchain (default 500, --quick 200)",
    )
    ap.add_argument(
        "--S",
        default=None,
        help="comma list of memnet step counts, one row group each (default "
        f"{','.join(map(str, MEMNET_S))}, --quick "
        f"{','.join(map(str, MEMNET_S[:2]))})",
    )
    ap.add_argument(
        "--max-seconds",
        type=float,
        default=MEMNET_MAX_SECONDS,
        help="memnet: a run whose one gradient takes longer is stopped and shown "
        "n/a (too slow) (default %(default)s)",
    )
    ap.add_argument(
        "--max-gib",
        type=float,
        default=MEMNET_MAX_GIB,
        help="memnet: a run whose RSS goes above this many GiB is stopped and shown "
        "n/a (too large) (default %(default)s)",
    )
    ap.add_argument(
        "--time-budget",
        type=float,
        default=MEMNET_TIME_BUDGET,
        help="memnet: stop repeating once the timed runs have taken this many "
        "seconds (at least one run; default %(default)s)",
    )
    ap.add_argument(
        "--quick",
        action="store_true",
        help="fewer repeats and inner calls, D=200 unless --D is given",
    )
    ap.add_argument(
        "--timeout",
        type=float,
        default=None,
        help="seconds per library and workload before it is reported n/a",
    )
    ap.add_argument("--json", metavar="PATH", help="also write the raw results to PATH")
    args = ap.parse_args(argv)
    if args.repeats is None:
        args.repeats = 3 if args.quick else 5
    if args.D is None:
        args.D = 200 if args.quick else 500
    if args.repeats < 1:
        ap.error("--repeats must be >= 1")
    try:
        args.S = (
            [int(v) for v in args.S.split(",") if v.strip()]
            if args.S is not None
            else list(MEMNET_S[:2] if args.quick else MEMNET_S)
        )
    except ValueError:
        ap.error("--S takes a comma list of integers")
    if not args.S or min(args.S) < 1:
        ap.error("--S must list step counts >= 1")
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
    libs = [l for l in LIBS if l in libs]  # fixed order, baseline first

    params = workload_params(args)
    case_list = cases(workloads, args)
    jobs = [(lib, v, name, S) for name, S in case_list for lib in libs for v in variants(name, lib)]
    missing = [lib for lib in libs if importlib.util.find_spec(lib) is None]
    if missing:
        print(f"not installed (n/a in the table): {', '.join(missing)}", file=sys.stderr)
    results = {
        (lib, variant, name, S): {
            "lib": lib,
            "variant": variant,
            "workload": name,
            "S": S,
            "status": "n/a",
            "reason": "not installed",
            "notes": [],
        }
        for lib, variant, name, S in jobs
        if lib in missing
    }
    runs = [job for job in jobs if job[0] not in missing]
    t_start = time.perf_counter()
    for k, (lib, variant, name, S) in enumerate(runs, 1):
        t0 = time.perf_counter()
        what = " ".join(str(w) for w in (name, f"S={S}" if S else None, lib, variant) if w)
        print(f"[{k}/{len(runs)}] {what} ...", end="", file=sys.stderr, flush=True)
        r = run_worker(lib, name, args, timeout, variant=variant, S=S)
        results[(lib, variant, name, S)] = r
        status = fmt_time(r["time"]) if r.get("status") == "ok" else "n/a"
        print(f" {status} ({time.perf_counter() - t0:.1f} s)", file=sys.stderr, flush=True)
    print(f"total {time.perf_counter() - t_start:.0f} s", file=sys.stderr)

    print(header(argv))
    print()
    print(table(results, case_list, libs, params))
    print()
    if "memnet" in workloads:
        print(memnet_summary(results, args.S))
        print()
    if "attention" in workloads:
        print(attention_summary(results, args.S))
        print()
    print(
        "time: median of the timed runs, per unit; vs hand: ratio to the hand-written NumPy "
        "gradient; tracemalloc peak: bytes allocated at once during one run (- when the "
        "library's allocations are invisible to tracemalloc); RSS peak: process high-water "
        "RSS during the timed runs minus RSS before them (ratio shown when the hand-written "
        "one is at least 1 MiB)."
    )
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"header": header(argv), "results": list(results.values())}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
