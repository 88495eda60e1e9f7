"""autograd 1.9.1's examples, unchanged, under autograd and under gradcy (through the import
alias of tests/autograd_alias), side by side: does each run, are its printed numbers and the
arrays it leaves in its namespace equal, and how long each took.

    python benchmarks/autograd_examples.py [--examples NAME ...] [--timeout S] [--sdist FILE]
                                           [--max-iters N]

The examples come from autograd's sdist (pip download; or --sdist). Each runs as __main__ in
a fresh process, in a scratch copy of the examples folder, with matplotlib's Agg backend,
animation frames not
rendered (plt.draw, plt.pause and draw_idle do nothing; savefig renders), and NumPy's global
random state and unseeded RandomState() seeded with 0 (both backends alike). Examples that
download MNIST get a synthetic
stand-in of the same shapes and dtypes (MNIST_STANDIN below, --mnist-n training images); the
others need no data beyond the files shipped in the sdist. --max-iters N (for the long
examples: deep_gaussian_process, fluidsim, gplvm, ode_net, mixture_variational_inference) caps
every scipy.optimize.minimize at N iterations and every autograd.misc.optimizers run (adam,
sgd, rmsprop) at N steps, under both libraries alike; the examples' code is unchanged.
Prints a table: example, runs unchanged under gradcy, equal to autograd's run, time under
autograd / gradcy.
"""

import argparse
import os
import pickle
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
VERSION = "1.9.1"
HELPERS = {"data.py", "data_mnist.py", "__init__.py"}
# printed text that differs between any two runs (object ids), blanked before comparing
VOLATILE = [re.compile(r"node_\d+")]

MNIST_STANDIN = '''"""Stand-in for autograd's examples/data_mnist.py (which downloads MNIST): random
images and labels of MNIST's shapes and dtypes, generated deterministically."""
import numpy as np

N_TRAIN, N_TEST = {n_train}, {n_test}


def mnist():
    rs = np.random.RandomState(0)
    def images(n):
        return rs.randint(0, 256, size=(n, 28, 28)).astype(np.uint8)
    def labels(n):
        return rs.randint(0, 10, size=n).astype(np.uint8)
    return images(N_TRAIN), labels(N_TRAIN), images(N_TEST), labels(N_TEST)
'''


# =============================================================================
# Worker: one example under one backend, in this process
# =============================================================================
def _numeric_leaves(obj, prefix, out, depth=0):
    import numpy as np

    if depth > 4:
        return
    if isinstance(obj, (np.ndarray, np.generic)) and obj.dtype.kind in "biufc":
        out[prefix] = np.array(obj)
    elif isinstance(obj, (float, int)) and not isinstance(obj, bool):
        out[prefix] = np.array(obj)
    elif isinstance(obj, (list, tuple)) and len(obj) < 1000:
        for i, v in enumerate(obj):
            _numeric_leaves(v, f"{prefix}[{i}]", out, depth + 1)
    elif isinstance(obj, dict) and len(obj) < 1000:
        for k, v in obj.items():
            _numeric_leaves(v, f"{prefix}[{k!r}]", out, depth + 1)


def _cap_iterations(max_iters):
    """Cap scipy.optimize.minimize's maxiter and the optimizers' num_iters at max_iters (the
    examples import them after this runs, so they get the capped versions)."""
    import functools

    import scipy.optimize

    minimize = scipy.optimize.minimize

    @functools.wraps(minimize)
    def capped_minimize(*args, **kwargs):
        options = dict(kwargs.get("options") or {})
        options["maxiter"] = min(options.get("maxiter", max_iters), max_iters)
        kwargs["options"] = options
        return minimize(*args, **kwargs)

    scipy.optimize.minimize = capped_minimize
    optimizers = sys.modules["autograd.misc.optimizers"]
    for name in ("adam", "sgd", "rmsprop"):

        def capped(*args, _run=getattr(optimizers, name), **kwargs):
            kwargs["num_iters"] = min(kwargs.get("num_iters", max_iters), max_iters)
            return _run(*args, **kwargs)

        setattr(optimizers, name, functools.wraps(getattr(optimizers, name))(capped))


def worker(backend, path, outfile, max_iters=None):
    import contextlib
    import io
    import runpy

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.backend_bases import FigureCanvasBase

    # animation frames are not rendered (the examples redraw every iteration, which would
    # time matplotlib rather than the differentiation); savefig still renders
    plt.pause = lambda interval: None
    plt.draw = lambda: None
    FigureCanvasBase.draw_idle = lambda self, *args, **kwargs: None
    if backend == "gradcy":
        sys.path.insert(0, os.path.join(ROOT, "tests"))
        import autograd_alias

        autograd_alias.install()
    for m in (
        "autograd",
        "autograd.numpy",
        "autograd.numpy.random",
        "autograd.misc",
        "autograd.misc.optimizers",
        "autograd.scipy.stats",
        "autograd.scipy.special",
        "autograd.scipy.integrate",
        "autograd.scipy.signal",
    ):
        __import__(m)  # imports are not part of the timing
    if max_iters is not None:
        _cap_iterations(int(max_iters))
    import random

    import numpy

    numpy.random.seed(0)  # examples that draw unseeded: the same draws
    random.seed(0)

    class RandomState(numpy.random.RandomState):  # RandomState() unseeded: seed 0
        def __init__(self, seed=0):
            super().__init__(seed)

    for m in ("numpy.random", "autograd.numpy.random"):
        sys.modules[m].RandomState = RandomState
    buf = io.StringIO()
    result = {"ok": False, "error": None, "stdout": "", "seconds": None, "arrays": {}}
    t0 = time.perf_counter()
    try:
        with contextlib.redirect_stdout(buf):
            ns = runpy.run_path(path, run_name="__main__")
        result["seconds"] = time.perf_counter() - t0
        result["ok"] = True
        for name, value in ns.items():
            if not name.startswith("_"):
                _numeric_leaves(value, name, result["arrays"])
    except BaseException as e:  # SystemExit from an example counts as a failure
        result["seconds"] = time.perf_counter() - t0
        result["error"] = f"{type(e).__name__}: {str(e)[:300]}"
    result["stdout"] = buf.getvalue()
    if backend == "gradcy":
        autograd_alias.check_no_real_autograd()
    with open(outfile, "wb") as f:
        pickle.dump(result, f)


# =============================================================================
# Driver
# =============================================================================
def fetch(sdist, workdir):
    if sdist is None:
        subprocess.run(
            [
                sys.executable,
                "-m",
                "pip",
                "download",
                "-q",
                "--no-binary",
                ":all:",
                "--no-deps",
                f"autograd=={VERSION}",
                "-d",
                workdir,
            ],
            check=True,
        )
        sdist = os.path.join(workdir, f"autograd-{VERSION}.tar.gz")
    with tarfile.open(sdist) as tf:
        tf.extractall(workdir, filter="data")
    return os.path.join(workdir, f"autograd-{VERSION}", "examples")


def list_examples(examples_dir):
    names = []
    for dirpath, _, files in os.walk(examples_dir):
        for f in sorted(files):
            if f.endswith(".py") and f not in HELPERS:
                names.append(os.path.relpath(os.path.join(dirpath, f), examples_dir)[:-3])
    return sorted(names)


def run_one(backend, name, examples_dir, standins, timeout, max_iters=None):
    scratch = tempfile.mkdtemp(prefix=f"ex-{backend}-")
    try:
        ex_copy = os.path.join(scratch, "examples")
        shutil.copytree(examples_dir, ex_copy)
        path = os.path.join(ex_copy, name + ".py")
        out = os.path.join(scratch, "result.pkl")
        env = dict(
            os.environ,
            MPLBACKEND="Agg",
            OMP_NUM_THREADS="1",
            OPENBLAS_NUM_THREADS="1",
            MKL_NUM_THREADS="1",
            PYTHONPATH=os.pathsep.join([standins, os.path.dirname(path), ex_copy]),
        )
        try:
            cap = [] if max_iters is None else ["--max-iters", str(max_iters)]
            subprocess.run(
                [sys.executable, os.path.abspath(__file__), "--worker", backend, path, out] + cap,
                cwd=os.path.dirname(path),
                env=env,
                timeout=timeout,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
                check=False,
            )
        except subprocess.TimeoutExpired:
            return {
                "ok": False,
                "error": f"timeout after {timeout} s",
                "stdout": "",
                "seconds": None,
                "arrays": {},
            }
        if not os.path.exists(out):
            return {
                "ok": False,
                "error": "the worker died",
                "stdout": "",
                "seconds": None,
                "arrays": {},
            }
        with open(out, "rb") as f:
            return pickle.load(f)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


_NUM = re.compile(r"[-+]?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][-+]?\d+)?|nan|inf")


def compare(a, b, rtol):
    """(equal?, detail): the printed numbers and the namespace arrays of two runs."""
    import numpy as np

    ta, tb = a["stdout"], b["stdout"]
    for pat in VOLATILE:
        ta, tb = pat.sub("<id>", ta), pat.sub("<id>", tb)
    worst = 0.0
    # the words between the numbers (number widths may differ: padding is not compared)
    words_a, words_b = (re.sub(r"\s+", " ", _NUM.sub("#", t)) for t in (ta, tb))
    na = [float(x) for x in _NUM.findall(ta)]
    nb = [float(x) for x in _NUM.findall(tb)]
    if words_a != words_b:
        # an iterative optimizer amplifies last-bit differences: how close the start is
        k = min(5, len(na), len(nb))
        start = max(
            (abs(x - y) / max(abs(x), abs(y), 1e-300) for x, y in zip(na[:k], nb[:k])), default=0.0
        )
        return False, (
            f"printed text differs; first {k} printed numbers: max rel. diff {start:.1e}"
        )
    pairs = list(zip(na, nb))
    common = sorted(set(a["arrays"]) & set(b["arrays"]))
    if set(a["arrays"]) != set(b["arrays"]):
        return False, "different names in the namespace"
    for k in common:
        x, y = a["arrays"][k], b["arrays"][k]
        if x.shape != y.shape:
            return False, f"{k}: shape {x.shape} vs {y.shape}"
        pairs.extend(zip(x.ravel().tolist(), y.ravel().tolist()))
    for x, y in pairs:
        if np.isnan(x) and np.isnan(y) or x == y:
            continue
        d = abs(x - y) / max(abs(x), abs(y), 1e-300)
        worst = max(worst, d)
    n = len(pairs)
    k = min(5, len(na))
    start = max(
        (abs(x - y) / max(abs(x), abs(y), 1e-300) for x, y in zip(na[:k], nb[:k])), default=0.0
    )
    detail = f"{n} numbers, max rel. diff {worst:.1e}"
    if worst > rtol and k:
        detail += f"; first {k} printed: {start:.1e}"
    return worst <= rtol, detail


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--worker", nargs=3, help=argparse.SUPPRESS)
    ap.add_argument("--examples", nargs="*", help="names (e.g. tanh fluidsim/wing); default all")
    ap.add_argument("--timeout", type=float, default=900.0, help="seconds per example and backend")
    ap.add_argument("--sdist", help="autograd-1.9.1.tar.gz (default: pip download)")
    ap.add_argument("--mnist-n", type=int, default=600, help="stand-in MNIST training images")
    ap.add_argument("--rtol", type=float, default=1e-6, help="'equal' tolerance")
    ap.add_argument("--stdout-dir", help="save each run's printed output there")
    ap.add_argument("--max-iters", type=int, help="cap optimizer iterations (both libraries)")
    args = ap.parse_args()
    if args.worker:
        worker(*args.worker, max_iters=args.max_iters)
        return
    workdir = tempfile.mkdtemp(prefix="autograd-examples-")
    try:
        examples_dir = fetch(args.sdist, workdir)
        standins = os.path.join(workdir, "standins")
        os.makedirs(standins)
        with open(os.path.join(standins, "data_mnist.py"), "w") as f:
            f.write(MNIST_STANDIN.format(n_train=args.mnist_n, n_test=max(args.mnist_n // 6, 10)))
        names = args.examples or list_examples(examples_dir)
        print(
            f"autograd {VERSION} examples, {time.strftime('%Y-%m-%d %H:%M')}, "
            f"{os.cpu_count()} CPUs, load {' '.join(f'{v:.2f}' for v in os.getloadavg())}; "
            f"MNIST stand-in with {args.mnist_n} training images"
            + (
                ""
                if args.max_iters is None
                else f"; optimizers capped at {args.max_iters} iterations"
            )
            + "\n"
        )
        print(
            "| example | runs unchanged under gradcy | equal to autograd | autograd | gradcy "
            "| gradcy is faster by |"
        )
        print("|---|---|---|---:|---:|---:|")
        summary = {"ran": 0, "equal": 0, "total": 0}
        for name in names:
            a = run_one("autograd", name, examples_dir, standins, args.timeout, args.max_iters)
            g = run_one("gradcy", name, examples_dir, standins, args.timeout, args.max_iters)
            summary["total"] += 1
            if args.stdout_dir:
                os.makedirs(args.stdout_dir, exist_ok=True)
                for backend, r in (("autograd", a), ("gradcy", g)):
                    with open(
                        os.path.join(args.stdout_dir, f"{name.replace('/', '_')}.{backend}.txt"),
                        "w",
                    ) as f:
                        f.write(r["stdout"])
            runs = "yes" if g["ok"] else f"no: {g['error']}"
            if g["ok"]:
                summary["ran"] += 1
            if a["ok"] and g["ok"]:
                eq, detail = compare(a, g, args.rtol)
                summary["equal"] += eq
                equal = f"{'yes' if eq else 'no'} ({detail})"
                speed = f"{a['seconds'] / g['seconds']:.2f}x"
            else:
                equal = "n/a" if g["ok"] else "-"
                if not a["ok"]:
                    equal = f"autograd's run failed: {a['error']}"
                speed = ""
            ta = f"{a['seconds']:.2f} s" if a["seconds"] is not None else "-"
            tg = f"{g['seconds']:.2f} s" if g["seconds"] is not None else "-"
            print(f"| {name} | {runs} | {equal} | {ta} | {tg} | {speed} |", flush=True)
        print(
            f"\n{summary['ran']} of {summary['total']} examples run unchanged under gradcy; "
            f"{summary['equal']} equal to autograd's run (rtol {args.rtol:g})"
        )
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    main()
