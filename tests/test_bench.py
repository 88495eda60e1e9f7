"""benchmarks/ and examples/demo.py: the hand-written reference gradients against finite
differences and gradcy, the peers harness (memnet variants, driver, progress count, time/RSS
guard) at tiny sizes, and the demo's profile and plot."""

import argparse
import importlib.util
import pathlib
import sys

import numpy as onp
import pytest

import gradcy.numpy as gnp
from gradcy import grad, make_jvp, memory

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))
import peer_workloads as pw
import peers
import reference_gradients as ref

COVERED = set()  # registers no primitive


def _load_demo():
    spec = importlib.util.spec_from_file_location("demo", ROOT / "examples" / "demo.py")
    demo = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(demo)
    return demo


def _data(B, D, seed=0):
    return ref.memnet_inputs(B, D, seed)


def _numeric_grad(f, x, eps=1e-6):
    """Central differences."""
    g = onp.zeros_like(x)
    for k in onp.ndindex(*x.shape):
        e = onp.zeros_like(x)
        e[k] = eps
        g[k] = (f(x + e) - f(x - e)) / (2 * eps)
    return g


def _complex_step_grad(f, x, h=1e-30):
    """Im f(x + ih e_k) / h: exact to rounding for a real-analytic f written with NumPy calls
    that take complex arrays (no cancellation, so small gradients are checked as tightly)."""
    g = onp.zeros_like(x)
    for k in onp.ndindex(*x.shape):
        e = onp.zeros(x.shape, dtype=complex)
        e[k] = 1j * h
        g[k] = f(x + e).imag / h
    return g


# =============================================================================
# reference_gradients.py
# =============================================================================
@pytest.mark.parametrize("name", ["dotchain", "tanhchain"])
def test_chain_hand_gradients_match_finite_differences_and_gradcy(name):
    inputs = {"dotchain": ref.dotchain_inputs, "tanhchain": ref.tanhchain_inputs}[name]
    x, z = inputs(4, seed=3)
    F, hand = getattr(ref, name), getattr(ref, "hand_" + name)
    g = hand(x, z)
    onp.testing.assert_allclose(g, _complex_step_grad(lambda x: F(onp)(x, z), x), rtol=1e-10)
    onp.testing.assert_allclose(g, grad(F(gnp))(x, z), rtol=1e-10, atol=1e-12)
    onp.testing.assert_array_equal(inputs(4, seed=3)[0], x)  # inputs untouched


def test_sinchain_hand_gradient_and_jvp():
    x = onp.array([0.1, -0.5, 0.9])
    v = onp.array([1.0, 2.0, -0.5])
    g = ref.hand_sinchain(x)
    onp.testing.assert_allclose(g, _complex_step_grad(ref.sinchain(onp), x), rtol=1e-10)
    onp.testing.assert_allclose(g, grad(ref.sinchain(gnp))(x), rtol=1e-12)
    value, tangent = ref.hand_jvp_sinchain(x, v)
    g_value, g_tangent = make_jvp(ref.sinchain(gnp))(x)(v)
    assert value == pytest.approx(ref.sinchain(onp)(x), rel=1e-14)
    assert tangent == pytest.approx(float(g @ v), rel=1e-10)
    assert (value, tangent) == pytest.approx((float(g_value), float(g_tangent)), rel=1e-12)


def test_dropped_hand_gradient():
    b, a = onp.arange(4.0).reshape(2, 2), onp.ones((2, 2))
    gb, ga = ref.hand_dropped(b, a)
    ours = grad(ref.dropped(gnp), argnum=(0, 1))(b, a)
    onp.testing.assert_array_equal(gb, onp.ones((2, 2)))
    onp.testing.assert_array_equal(ga, onp.zeros((2, 2)))
    onp.testing.assert_array_equal(ours[0], gb)
    onp.testing.assert_array_equal(ours[1], ga)
    s = memory.stats()
    assert (s["live_tapes"], s["live_nodes"]) == (0, 0)


def test_memnet_hand_gradient_matches_finite_differences():
    W, x = _data(2, 3)
    S = 4
    loss = ref.memnet_inplace(onp)  # plain NumPy runs it as is
    onp.testing.assert_allclose(
        ref.hand_memnet(W, x, S), _numeric_grad(lambda W: loss(W, x, S), W), rtol=1e-6, atol=1e-9
    )
    # the concatenating spelling computes the same loss
    assert ref.memnet_concat(onp)(W, x, S) == pytest.approx(loss(W, x, S))


@pytest.mark.parametrize("B,D,S", [(4, 8, 1), (4, 8, 5), (ref.MEMNET_B, ref.MEMNET_D, 6)])
def test_memnet_hand_gradient_matches_gradcy_in_place_and_concat(B, D, S):
    W, x = _data(B, D, seed=S)
    fns = pw.memnet_functions(gnp)
    hand = ref.hand_memnet(W, x, S)
    for variant in ("memnet_inplace", "memnet_concat"):
        onp.testing.assert_allclose(hand, grad(fns[variant])(W, x, S), rtol=1e-9, atol=1e-12)
    s = memory.stats()
    assert (s["live_tapes"], s["live_nodes"]) == (0, 0)


def test_memnet_hand_gradient_does_not_touch_its_inputs():
    W, x = _data(3, 4)
    W0, x0 = W.copy(), x.copy()
    ref.hand_memnet(W, x, 5)
    onp.testing.assert_array_equal(W, W0)
    onp.testing.assert_array_equal(x, x0)


# =============================================================================
# peer_workloads.py and peers.py
# =============================================================================
def test_memnet_gradcy_cell_uses_the_softmax_primitive():
    from gradcy._core import Tape, pop_active, push_active

    W, x = _data(2, 3)
    t = Tape()
    push_active(t)
    try:
        loss = pw.memnet_functions(gnp)["memnet_inplace"](t.new_leaf(W), x, 3)
        names = [t.node_info(i)["primitive"] for i in range(len(t))]  # loss keeps them
        del loss
    finally:
        pop_active(t)
        t.release()
    assert names.count("gradcy.scipy.special.softmax") == 3  # one per step
    assert "gradcy.numpy.max" not in names and "gradcy.numpy.exp" not in names
    # the other libraries keep the max/exp/sum spelling
    onp.testing.assert_allclose(
        pw.memnet_softmax(onp)(onp.array([[0.0, onp.log(3.0)]])), [[0.25, 0.75]]
    )


@pytest.mark.parametrize("variant", ["memnet_inplace", "memnet_concat"])
def test_memnet_softmax_primitive_and_manual_spelling_agree(variant):
    W, x = _data(4, 8, seed=2)
    spelled = pw.memnet_functions(gnp, softmax=ref.softmax_rows(gnp))[variant]
    prim = pw.memnet_functions(gnp)[variant]
    onp.testing.assert_allclose(grad(prim)(W, x, 5), grad(spelled)(W, x, 5), rtol=1e-12, atol=1e-14)
    onp.testing.assert_allclose(prim(W, x, 5), spelled(W, x, 5), rtol=1e-14)


@pytest.mark.skipif(importlib.util.find_spec("torch") is None, reason="torch not installed")
@pytest.mark.parametrize("variant", ["concat", "inplace"])
def test_memnet_torch_variants_match_hand(variant):
    import torch

    W, x = _data(4, 8)
    g = pw.memnet_torch_grad(torch, W, x, 5, variant).numpy()
    onp.testing.assert_allclose(g, ref.hand_memnet(W, x, 5), rtol=1e-9, atol=1e-12)


@pytest.mark.skipif(importlib.util.find_spec("autograd") is None, reason="autograd not installed")
def test_memnet_autograd_concat_matches_hand():
    import autograd.numpy as anp
    from autograd import grad as agrad

    W, x = _data(4, 8)
    g = agrad(pw.memnet_functions(anp)["memnet_concat"])(W, x, 5)
    onp.testing.assert_allclose(g, ref.hand_memnet(W, x, 5), rtol=1e-9, atol=1e-12)


def test_rows_and_labels():
    assert pw.variants("memnet", "gradcy") == ("inplace", "concat")
    assert pw.variants("dotchain", "gradcy") == (None,)
    assert pw.lib_label("gradcy", "inplace") == "gradcy (in-place)"
    assert pw.lib_label("numpy", "inplace") == "numpy (hand, in-place)"
    assert pw.lib_label("torch", "concat") == "torch (CPU, concat)"
    assert pw.lib_label("gradcy", None) == "gradcy"
    args = argparse.Namespace(S=[3, 7])
    assert peers.cases(["dotchain", "memnet"], args) == [
        ("dotchain", None),
        ("memnet", 3),
        ("memnet", 7),
    ]


def test_driver_runs_memnet_end_to_end(capsys):
    rc = peers.main(
        ["--workloads", "memnet", "--S", "3", "--libs", "numpy,gradcy", "--repeats", "1"]
    )
    assert rc == 0
    out = capsys.readouterr().out
    rows = [line for line in out.splitlines() if line.startswith("| ")]
    names = [line.split("|")[2].strip() for line in rows[1:]]
    assert names == ["numpy (hand, in-place)", "gradcy (in-place)", "gradcy (concat)"]
    assert "memnet: B=4, D=64, S=3" in out
    assert "command: python benchmarks/peers.py --workloads memnet" in out
    assert "checked against gradcy" in out
    assert "n/a" not in "".join(rows) and "GRADIENT DIFFERS" not in out
    assert "memnet targets" in out and "S=3: time" in out


def test_progress_counts_only_the_libraries_that_run(capsys, monkeypatch):
    real = importlib.util.find_spec
    monkeypatch.setattr(
        importlib.util, "find_spec", lambda name, *a: None if name == "autograd" else real(name, *a)
    )
    rc = peers.main(
        ["--workloads", "dropped", "--libs", "numpy,autograd,gradcy", "--repeats", "1", "--quick"]
    )
    assert rc == 0
    captured = capsys.readouterr()
    progress = [
        line.split("]")[0] + "]" for line in captured.err.splitlines() if line.startswith("[")
    ]
    assert progress == ["[1/2]", "[2/2]"]
    assert "not installed (n/a in the table): autograd" in captured.err
    assert '| " | autograd | n/a | | | | | | not installed |' in captured.out


def _worker_args(**kw):
    base = dict(repeats=1, D=10, quick=False, max_seconds=60.0, max_gib=4.0, time_budget=30.0)
    base.update(kw)
    return argparse.Namespace(**base)


def test_guard_stops_a_slow_run():
    r = peers.run_worker(
        "gradcy", "memnet", _worker_args(max_seconds=1e-3), timeout=120, variant="inplace", S=256
    )
    assert r["status"] == "n/a" and r["reason"].startswith("too slow"), r


def test_guard_stops_a_large_run():
    r = peers.run_worker(
        "numpy", "memnet", _worker_args(max_gib=1e-3), timeout=120, variant="inplace", S=512
    )
    assert r["status"] == "n/a" and r["reason"].startswith("too large"), r


def test_unknown_variant_is_reported():
    r = peers.worker(
        "autograd",
        "memnet",
        argparse.Namespace(repeats=1, D=10, quick=False, S=2, variant="inplace"),
    )
    assert r["status"] == "n/a" and "no 'inplace' variant" in r["reason"]


# =============================================================================
# examples/demo.py
# =============================================================================
def test_demo_profiles_the_chain_with_progress_and_plots_it(tmp_path):
    demo = _load_demo()
    printed = []
    runs, prof = demo.profile_chain(
        8, rounds=3, log=lambda *a, **kw: printed.append(a[0] if a else "")
    )
    assert {"gradcy", "hand-written NumPy"} <= set(runs)
    assert all(r["agrees"] for r in runs.values())
    x, z = ref.dotchain_inputs(8)
    onp.testing.assert_array_equal(runs["gradcy"]["gradient"], prof.gradient)
    onp.testing.assert_allclose(prof.gradient, ref.hand_dotchain(x, z), rtol=1e-12)
    # every library timed the same way: one run per round, the order rotating, the median shown
    labels = list(runs)
    names = [p.strip() for p in printed if p.strip() in labels]
    n = len(labels)
    assert names == [labels[(r + k) % n] for r in range(3) for k in range(n)]
    assert [p for p in printed if p.startswith("[round")] == [
        "[round 1/3]",
        "[round 2/3]",
        "[round 3/3]",
    ]
    for r in runs.values():
        assert len(r["all_seconds"]) == 3
        assert r["seconds"] == sorted(r["all_seconds"])[1]
    text = demo.conclusion(runs)
    hand = runs["hand-written NumPy"]
    assert f"gradcy peaks at {runs['gradcy']['peak'] / hand['peak']:.2f}x" in text
    assert f"takes {runs['gradcy']['seconds'] / hand['seconds']:.2f}x its time" in text
    pytest.importorskip("matplotlib")
    path = demo.plot_chain(runs, 8, str(tmp_path / "chain.png"), rounds=3)
    assert pathlib.Path(path).stat().st_size > 0


def test_demo_late_hold_tells_a_released_curve_from_a_held_one():
    demo = _load_demo()
    times = [0.0, 1.0, 2.0, 3.0, 4.0]
    released = dict(times=times, curve=[0.0, 4.0, 2.0, 1.0, 0.0], peak=4.0)
    held = dict(times=times, curve=[0.0, 4.0, 4.0, 4.0, 4.0], peak=4.0)
    assert demo.late_hold(released) == 0.125  # the last quarter (t >= 3): 1 and 0, of 4
    assert demo.late_hold(held) == 1.0
