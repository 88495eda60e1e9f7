"""Sphinx extension: the site's figures, drawn at build time from the benchmark code.

When the builder starts, before any page is read, this measures and draws (small sizes, so the
build stays fast) into docs/_generated/:

- memory_timeline.png: examples/demo.py's profile_chain and plot_chain (the 100-step dot chain
  at D=DOT_D): gradcy's memory over time beside the hand-written gradient's and autograd's,
  each timed after a warm-up, medians of interleaved runs;
- peers_overhead.png: the cost per primitive, the 1000-step sin chain on 3 elements
  (benchmarks/overhead_targets.py: sinchain_runs, interleaved_medians), gradcy beside the
  hand-written gradient and whichever of autograd and PyTorch are installed.

The pages show them with a figure directive (``_generated/NAME.png``). Without matplotlib the
build fails with the extra to install (the docs extra has it).
"""

import importlib.util
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOT_D = 150  # the dot chain's matrix size: 0.17 MiB per matrix, about 17 MiB saved
DOT_ROUNDS = 5
SIN_ROUNDS = 9  # the sin chain's interleaved rounds (autograd's gradient: ~0.1 s each)
LABELS = {
    "hand": "hand-written NumPy",
    "gradcy": "gradcy",
    "autograd": "autograd",
    "torch": "PyTorch eager",
}
COLORS = {"hand": "C2", "gradcy": "C0", "autograd": "C3", "torch": "C1"}


def _load(name, path):
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _benchmarks_on_path():
    path = str(ROOT / "benchmarks")
    if path not in sys.path:
        sys.path.insert(0, path)


def memory_timeline(out):
    _benchmarks_on_path()
    demo = _load("gradcy_docs_demo", ROOT / "examples" / "demo.py")
    runs, _ = demo.profile_chain(DOT_D, rounds=DOT_ROUNDS, log=lambda *a, **k: None)
    if not all(r["agrees"] for r in runs.values()):
        raise RuntimeError(
            "docs figure: a gradient of the dot chain differs from the hand-written one"
        )
    return demo.plot_chain(runs, DOT_D, str(out), rounds=DOT_ROUNDS)


def _version(dist):
    from importlib import metadata

    try:
        return " " + metadata.version(dist)
    except metadata.PackageNotFoundError:
        return ""


def peers_overhead(out):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy

    _benchmarks_on_path()
    overhead = _load("gradcy_docs_overhead", ROOT / "benchmarks" / "overhead_targets.py")
    x = numpy.array([0.1, 0.5, 0.9])
    runs = overhead.sinchain_runs(x)
    for fn in runs.values():  # warm-up: imports and first calls are not timed
        fn()
    med = overhead.interleaved_medians(runs, SIN_ROUNDS)
    names = sorted(med, key=med.get)
    ratios = [med[k] / med["hand"] for k in names]
    labels = [LABELS[k] + (_version(k) if k in ("autograd", "torch") else "") for k in names]

    fig, ax = plt.subplots(figsize=(8, 0.55 * len(names) + 1.6))
    bars = ax.barh(range(len(names)), ratios, color=[COLORS[k] for k in names])
    for b, k, r in zip(bars, names, ratios):
        ax.annotate(
            f" {r:.2f}x  ({med[k] * 1e3:.1f} ms)",
            (b.get_width(), b.get_y() + b.get_height() / 2),
            va="center",
            fontsize=9,
        )
    ax.set_yticks(range(len(names)), labels)
    ax.invert_yaxis()
    ax.axvline(1.0, color="0.4", lw=0.8)
    ax.set_xlim(0, max(ratios) * 1.3)
    ax.set_xlabel(
        f"time of one gradient / the hand-written gradient's\n(medians of "
        f"{SIN_ROUNDS} interleaved rounds, after a warm-up)",
        fontsize=9,
    )
    others = [k for k in names if k not in ("hand", "gradcy")]
    faster = ", ".join(f"{med[k] / med['gradcy']:.1f}x faster than {LABELS[k]}" for k in others)
    ax.set_title(
        f"1000 steps x = sin(x)*1.0001 + 0.01*x on 3 elements: the cost per primitive\n"
        f"gradcy takes {med['gradcy'] / med['hand']:.2f}x the hand-written time"
        + (f" and is {faster}" if faster else ""),
        fontsize=10,
    )
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    plt.close(fig)
    return out


FIGURES = {"memory_timeline.png": memory_timeline, "peers_overhead.png": peers_overhead}


def generate(app):
    try:
        import matplotlib  # noqa: F401  (the figures need it: say which extra brings it)
    except ImportError as exc:
        raise RuntimeError('the docs figures need matplotlib: pip install -e ".[docs]"') from exc
    out = Path(app.srcdir) / "_generated"
    out.mkdir(exist_ok=True)
    for name, draw in FIGURES.items():
        t0 = time.perf_counter()
        draw(out / name)
        print(f"gradcy docs: {name} drawn in {time.perf_counter() - t0:.1f} s")


def setup(app):
    app.connect("builder-inited", generate)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
