"""benchmarks/asv_plots.py on a small asv results directory written here: what it reads (the
values of each parameter combination, commits in commit-date order, failures as gaps) and what
it writes (a PNG per benchmark, an index.html that loads nothing from the network)."""

import json
import pathlib
import re
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
import asv_plots

COLUMNS = [
    "result",
    "params",
    "version",
    "started_at",
    "duration",
    "stats_ci_99_a",
    "stats_ci_99_b",
    "stats_q_25",
    "stats_q_75",
    "stats_number",
    "stats_repeat",
    "samples",
    "profile",
]
BENCHMARKS = {
    "bench_a.Chain.time_grad": {
        "type": "time",
        "unit": "seconds",
        "param_names": ["impl"],
        "params": [["'gradcy'", "'hand'"]],
    },
    "bench_a.Chain.peakmem_grad": {
        "type": "peakmemory",
        "unit": "bytes",
        "param_names": [],
        "params": [],
    },
    "bench_b.Ops.track_ratio": {
        "type": "track",
        "unit": "gradcy / hand",
        "param_names": ["op", "size"],
        "params": [["'sin'", "'exp'"], ["3", "1000"]],
    },
    "version": 2,
}
# commit -> (commit date in ms, results); the file names do not follow the dates
RUNS = {
    "bbbbbbbb22222222": (
        2_000_000_000_000,
        {
            "bench_a.Chain.time_grad": [[0.002, 0.001], [["'gradcy'", "'hand'"]]],
            "bench_a.Chain.peakmem_grad": [[3 * 2**20], []],
            "bench_b.Ops.track_ratio": [[1.5, None, 2.5, 3.5], [["'sin'", "'exp'"], ["3", "1000"]]],
        },
    ),
    "aaaaaaaa11111111": (
        1_000_000_000_000,
        {
            "bench_a.Chain.time_grad": [[0.004, 0.001], [["'gradcy'", "'hand'"]]],
            "bench_a.Chain.peakmem_grad": [[2 * 2**20], []],
            "bench_b.Ops.track_ratio": [None, [["'sin'", "'exp'"], ["3", "1000"]]],  # failed
        },
    ),
}


def write_results(root):
    results = root / "results"
    (results / "box").mkdir(parents=True)
    (results / "benchmarks.json").write_text(json.dumps(BENCHMARKS))
    (results / "box" / "machine.json").write_text(json.dumps({"machine": "box", "version": 1}))
    for _i, (commit, (date, rows)) in enumerate(sorted(RUNS.items())[::-1]):
        data = {
            "commit_hash": commit,
            "env_name": "existing-py",
            "date": date,
            "params": {"machine": "box"},
            "python": "3.11",
            "requirements": {},
            "env_vars": {},
            "result_columns": COLUMNS,
            "version": 2,
            "results": {name: row + ["v", 0, 1.0] for name, row in rows.items()},
            "durations": {},
        }
        (results / "box" / f"{commit[:8]}-existing-py.json").write_text(json.dumps(data))
    return results


def test_reads_values_in_commit_date_order(tmp_path):
    benchmarks, commits, series = asv_plots.read_results(write_results(tmp_path))
    assert [c for c, _ in commits] == ["aaaaaaaa11111111", "bbbbbbbb22222222"]
    assert set(benchmarks) == set(BENCHMARKS) - {"version"}
    assert series["bench_a.Chain.time_grad"] == {
        "impl=gradcy": {"aaaaaaaa11111111": 0.004, "bbbbbbbb22222222": 0.002},
        "impl=hand": {"aaaaaaaa11111111": 0.001, "bbbbbbbb22222222": 0.001},
    }
    assert series["bench_a.Chain.peakmem_grad"] == {
        "value": {"aaaaaaaa11111111": 2 * 2**20, "bbbbbbbb22222222": 3 * 2**20}
    }
    # the parameter combinations in asv's order (the product of the parameter lists); a
    # failed run and a failed combination are None
    ratio = series["bench_b.Ops.track_ratio"]
    assert list(ratio) == [
        "op=sin, size=3",
        "op=sin, size=1000",
        "op=exp, size=3",
        "op=exp, size=1000",
    ]
    assert ratio["op=sin, size=1000"] == {"aaaaaaaa11111111": None, "bbbbbbbb22222222": None}
    assert ratio["op=exp, size=3"] == {"aaaaaaaa11111111": None, "bbbbbbbb22222222": 2.5}


def test_units_are_scaled():
    assert asv_plots._scale("seconds", [0.002, 0.004]) == (1e3, "ms")
    assert asv_plots._scale("seconds", [3e-6]) == (1e6, "µs")
    assert asv_plots._scale("bytes", [3 * 2**20]) == (2.0**-20, "MiB")
    assert asv_plots._scale("gradcy / hand", [2.5]) == (1.0, "gradcy / hand")


def test_draws_pngs_and_an_offline_index(tmp_path):
    pytest.importorskip("matplotlib")
    out = tmp_path / "plots"
    assert asv_plots.main([str(write_results(tmp_path)), str(out)]) == 0
    pngs = sorted(p.name for p in out.glob("*.png"))
    assert pngs == sorted(asv_plots._filename(n) for n in BENCHMARKS if n != "version")
    import matplotlib.image

    for name in pngs:
        assert (out / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
        height, width = matplotlib.image.imread(out / name).shape[:2]
        assert width > 400 and height > 200
    page = (out / "index.html").read_text()
    assert sorted(re.findall(r"<img src='([^']+)'", page)) == pngs
    # no resource from elsewhere: every src/href is a file beside it or an anchor
    for ref in re.findall(r"(?:src|href)=['\"]([^'\"]+)['\"]", page):
        assert ref.startswith("#") or (out / ref).exists(), ref
    assert "<h2 id='time'>Time</h2>" in page and "<h2 id='peakmemory'>Peak memory</h2>" in page
    assert "<td>4 ms</td>" in page and "<td>3 MiB</td>" in page and "<td>n/a</td>" in page


def test_missing_results_is_an_error(tmp_path, capsys):
    assert asv_plots.main([str(tmp_path / "nothing"), str(tmp_path / "out")]) == 1
    assert "benchmarks.json not found" in capsys.readouterr().err


def test_environments_are_told_apart_by_short_names(tmp_path):
    results = write_results(tmp_path)
    other = json.loads((results / "box" / "bbbbbbbb-existing-py.json").read_text())
    other["env_name"] = "virtualenv-py3.11-Cython-numpy-OMP_NUM_THREADS1"
    other["results"] = {"bench_a.Chain.time_grad": [[0.003, 0.002], [["'gradcy'", "'hand'"]]]}
    (results / "box" / "bbbbbbbb-virtualenv.json").write_text(json.dumps(other))
    _, commits, series = asv_plots.read_results(results)
    assert len(commits) == 2
    assert series["bench_a.Chain.time_grad"]["impl=gradcy [virtualenv-py3.11]"] == {
        "bbbbbbbb22222222": 0.003
    }
    assert series["bench_a.Chain.time_grad"]["impl=gradcy [existing]"] == {
        "aaaaaaaa11111111": 0.004,
        "bbbbbbbb22222222": 0.002,
    }
