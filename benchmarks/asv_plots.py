"""The asv benchmark history as PNG plots and an index.html that needs no internet.

    python benchmarks/asv_plots.py [RESULTS_DIR] [OUT_DIR]

RESULTS_DIR is asv's results directory (default asv_bench/results: benchmarks.json and one
directory per machine of result files, as `asv run` writes them); OUT_DIR (default
bench-out/asv-plots) receives one PNG per benchmark, its values (time, peak memory or the
tracked quantity) over the commits measured, in commit-date order, one line per parameter
combination (and per machine and environment when there are several), and index.html, which
shows them all grouped by kind, with a table of the numbers, and loads nothing from the
network. asv's own dashboards (`asv publish`) load their JavaScript from the internet; these do
not. Needs matplotlib (pip install -e ".[bench]").
"""

import argparse
import html
import itertools
import json
import math
import os
import re
import sys
from datetime import datetime, timezone

KINDS = [
    ("time", "Time"),
    ("peakmemory", "Peak memory"),
    ("memory", "Memory"),
    ("track", "Tracked values"),
]


# =============================================================================
# Reading asv's results
# =============================================================================
def read_results(results_dir):
    """(benchmarks, commits, series) of an asv results directory.

    benchmarks: {name: asv's metadata (type, unit, param_names, params, ...)};
    commits: [(hash, date in ms)] in commit-date order;
    series: {name: {label: {hash: value}}}, a label per parameter combination (and per
    machine/environment when the results hold several); value None where the benchmark
    failed or was skipped.
    """
    meta_path = os.path.join(results_dir, "benchmarks.json")
    if not os.path.exists(meta_path):
        raise FileNotFoundError(
            f"{meta_path} not found: run asv in asv_bench/ first (asv machine --yes && asv run ...)"
        )
    with open(meta_path) as f:
        benchmarks = {k: v for k, v in json.load(f).items() if isinstance(v, dict)}
    runs = []
    for machine in sorted(os.listdir(results_dir)):
        mdir = os.path.join(results_dir, machine)
        if not os.path.isdir(mdir):
            continue
        for fname in sorted(os.listdir(mdir)):
            if not fname.endswith(".json") or fname == "machine.json":
                continue
            with open(os.path.join(mdir, fname)) as f:
                data = json.load(f)
            if data.get("version") != 2 or "result_columns" not in data:
                raise ValueError(
                    f"{fname}: not an asv results file of format version 2 "
                    f"(asv >= 0.6 writes those)"
                )
            runs.append((machine, data))
    envs = sorted({(m, d.get("env_name", "")) for m, d in runs})
    dates = {}
    series = {}
    for machine, data in runs:
        commit = data["commit_hash"]
        dates[commit] = min(dates.get(commit, data.get("date") or 0), data.get("date") or 0)
        columns = data["result_columns"]
        where = _env_label(machine, data.get("env_name", ""), envs)
        for name, row in data["results"].items():
            entry = dict(zip(columns, row))
            values = entry.get("result")
            params = entry.get("params") or benchmarks.get(name, {}).get("params") or []
            names = benchmarks.get(name, {}).get("param_names") or [""] * len(params)
            combos = list(itertools.product(*params)) if params else [()]
            if values is None:
                values = [None] * len(combos)
            for combo, value in zip(combos, values):
                label = ", ".join(
                    f"{n}={_unquote(v)}" if n else _unquote(v) for n, v in zip(names, combo)
                )
                label = " ".join(x for x in (label, where) if x) or "value"
                if value is not None and (
                    not isinstance(value, (int, float))
                    or isinstance(value, float)
                    and math.isnan(value)
                ):
                    value = None
                series.setdefault(name, {}).setdefault(label, {})[commit] = value
    commits = sorted(dates.items(), key=lambda kv: (kv[1], kv[0]))
    return benchmarks, commits, series


def _unquote(v):
    v = str(v)
    return v[1:-1] if len(v) >= 2 and v[0] == v[-1] and v[0] in "'\"" else v


def _env_label(machine, env, envs):
    """'' when all results come from one machine and environment, else what tells them apart."""
    if len(envs) <= 1:
        return ""
    machines = {m for m, _ in envs}
    parts = [machine] if len(machines) > 1 else []
    names = {e for _, e in envs}
    if len(names) > 1:
        short = {_short_env(e) for e in names}
        parts.append(_short_env(env) if len(short) == len(names) else env)
    return "[" + " ".join(parts) + "]"


def _short_env(env):
    """asv's environment name without its paths, requirements and variables: 'existing',
    'virtualenv-py3.11', ..."""
    parts = env.split("-")
    if len(parts) > 1 and re.fullmatch(r"py\d+(\.\d+)*", parts[1]):
        return f"{parts[0]}-{parts[1]}"
    return parts[0]


# =============================================================================
# Drawing
# =============================================================================
def _scale(unit, values):
    """(factor, unit label) showing values in a readable unit."""
    top = max((abs(v) for v in values), default=0.0)
    if unit == "seconds":
        for factor, label in ((1.0, "s"), (1e3, "ms"), (1e6, "µs")):
            if top * factor >= 1.0:
                return factor, label
        return 1e9, "ns"
    if unit == "bytes":
        for factor, label in ((2.0**-30, "GiB"), (2.0**-20, "MiB"), (2.0**-10, "KiB")):
            if top * factor >= 1.0:
                return factor, label
        return 1.0, "bytes"
    return 1.0, unit or ""


def _filename(name):
    return re.sub(r"[^A-Za-z0-9_.-]+", "_", name) + ".png"


def _commit_label(commit, date_ms):
    day = datetime.fromtimestamp(date_ms / 1000, tz=timezone.utc).strftime("%Y-%m-%d")
    return f"{commit[:8]}\n{day}"


def plot_benchmark(name, meta, commits, lines, path):
    """Draw one benchmark's lines (label -> {commit: value}) against the commits."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    values = [v for line in lines.values() for v in line.values() if v is not None]
    factor, unit = _scale(meta.get("unit", ""), values)
    longest = max((len(label) for label in lines), default=0)
    ncol = math.ceil(len(lines) / 18)  # legend columns of at most 18 entries
    legend_width = max(0.0, longest * 0.065 + 0.6) * ncol
    fig, ax = plt.subplots(figsize=(6.5 + legend_width, 4.2))
    xs = range(len(commits))
    styles = _styles(list(lines))
    for label, line in lines.items():  # in asv's parameter order
        ys = [line.get(c) for c, _ in commits]
        ax.plot(
            xs,
            [math.nan if y is None else y * factor for y in ys],
            ms=4,
            label=label,
            **styles[label],
        )
    positive = [v for v in values if v > 0]
    if positive and len(positive) == len(values) and max(positive) / min(positive) > 100:
        ax.set_yscale("log")
    elif values and min(values) >= 0:
        ax.set_ylim(0, max(values) * factor * 1.12 or 1.0)
    step = max(1, len(commits) // 12)
    ax.set_xticks(list(xs)[::step])
    ax.set_xticklabels([_commit_label(c, d) for c, d in commits][::step], fontsize=7)
    ax.set_xlim(-0.5, len(commits) - 0.5)
    ax.set_ylabel(unit)
    ax.set_title(f"{name} ({meta.get('type', '?')})", fontsize=9)
    ax.grid(alpha=0.3)
    if len(lines) > 1 or next(iter(lines), "value") != "value":
        ax.legend(
            fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0, ncol=ncol
        )
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def _styles(labels):
    """Line styles: with two or more parameters, the first one's value picks the colour and the
    second one's the marker and dash, so that lines sharing a value look alike; otherwise one
    colour per line."""
    import matplotlib.pyplot as plt

    def palette(n):
        return plt.get_cmap("tab10" if n <= 10 else "tab20").colors

    parts = [label.split(", ") for label in labels]
    if all(len(p) >= 2 for p in parts) and len(labels) > 1:
        firsts = list(dict.fromkeys(p[0] for p in parts))
        colours = palette(len(firsts))
        seconds = list(dict.fromkeys(", ".join(p[1:]) for p in parts))
        markers, dashes = "os^Dv<>", ["-", "--", ":", "-."]
        return {
            label: {
                "color": colours[firsts.index(p[0]) % len(colours)],
                "marker": markers[seconds.index(", ".join(p[1:])) % len(markers)],
                "linestyle": dashes[seconds.index(", ".join(p[1:])) % len(dashes)],
            }
            for label, p in zip(labels, parts)
        }
    colours = palette(len(labels))
    return {
        label: {"color": colours[i % len(colours)], "marker": "o"} for i, label in enumerate(labels)
    }


def _fmt(value, meta):
    if value is None:
        return "n/a"
    factor, unit = _scale(meta.get("unit", ""), [value])
    return f"{value * factor:.4g} {unit}".strip()


def write_index(out_dir, benchmarks, commits, series, pngs):
    """index.html: every plot, grouped by kind, each with its numbers; no external resource."""
    parts = [
        "<!DOCTYPE html>",
        "<html><head><meta charset='utf-8'>",
        "<title>gradcy benchmarks over commits</title>",
        "<style>body{font-family:sans-serif;margin:2em;max-width:70em}"
        "table{border-collapse:collapse;font-size:80%;margin-bottom:2em}"
        "td,th{border:1px solid #ccc;padding:2px 6px;text-align:right}"
        "th:first-child,td:first-child{text-align:left}img{max-width:100%}</style>",
        "</head><body>",
        "<h1>gradcy benchmarks over commits</h1>",
        f"<p>{len(series)} benchmarks, {len(commits)} commits "
        f"({html.escape(', '.join(c[:8] for c, _ in commits))}), from asv's results. "
        f"Written by benchmarks/asv_plots.py.</p>",
    ]
    contents = []
    for kind, title in KINDS + [(None, "Other")]:
        known = {k for k, _ in KINDS}
        names = [
            n
            for n in sorted(series)
            if (
                benchmarks.get(n, {}).get("type") == kind
                or kind is None
                and benchmarks.get(n, {}).get("type") not in known
            )
        ]
        if not names:
            continue
        contents.append(f"<li><a href='#{kind or 'other'}'>{title}</a> ({len(names)})</li>")
        parts.append(f"<h2 id='{kind or 'other'}'>{title}</h2>")
        for name in names:
            meta = benchmarks.get(name, {})
            parts.append(f"<h3 id='{html.escape(name)}'>{html.escape(name)}</h3>")
            parts.append(f"<img src='{html.escape(pngs[name])}' alt='{html.escape(name)}'>")
            head = "".join(f"<th>{html.escape(c[:8])}</th>" for c, _ in commits)
            rows = "".join(
                f"<tr><td>{html.escape(label)}</td>"
                + "".join(f"<td>{_fmt(line.get(c), meta)}</td>" for c, _ in commits)
                + "</tr>"
                for label, line in series[name].items()
            )
            parts.append(f"<table><tr><th></th>{head}</tr>{rows}</table>")
    parts.insert(6, "<ul>" + "".join(contents) + "</ul>")
    parts.append("</body></html>")
    path = os.path.join(out_dir, "index.html")
    with open(path, "w") as f:
        f.write("\n".join(parts))
    return path


def draw(results_dir, out_dir):
    """Read the results, write the PNGs and index.html; return the index's path."""
    benchmarks, commits, series = read_results(results_dir)
    if not series:
        raise ValueError(f"no benchmark results in {results_dir}")
    os.makedirs(out_dir, exist_ok=True)
    pngs = {}
    for name in sorted(series):
        pngs[name] = _filename(name)
        plot_benchmark(
            name, benchmarks.get(name, {}), commits, series[name], os.path.join(out_dir, pngs[name])
        )
    return write_index(out_dir, benchmarks, commits, series, pngs)


def main(argv=None):
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "results_dir", nargs="?", default=os.path.join(root, "asv_bench", "results")
    )
    parser.add_argument("out_dir", nargs="?", default=os.path.join(root, "bench-out", "asv-plots"))
    args = parser.parse_args(argv)
    try:
        index = draw(args.results_dir, args.out_dir)
    except (FileNotFoundError, ValueError) as exc:
        print(f"asv_plots: {exc}", file=sys.stderr)
        return 1
    print(f"wrote {index} and its plots; open it in a browser (no internet needed)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
