"""gradcy.bench: the memnet workload (hand-written in-place gradient, its variants, the driver
and the time/RSS guard) at tiny sizes."""
import argparse
import importlib.util

import numpy as onp
import pytest

import gradcy.numpy as gnp
from gradcy import bench, grad, memory

COVERED = set()          # registers no primitive


def _data(B, D, seed=0):
    rs = onp.random.RandomState(seed)
    return rs.standard_normal((D, D)) / onp.sqrt(D), rs.standard_normal((B, D))


def test_memnet_hand_gradient_matches_finite_differences():
    W, x = _data(2, 3)
    S = 4
    loss = bench.memnet_functions(onp)["memnet_inplace"]      # plain NumPy runs it as is
    eps = 1e-6
    numeric = onp.zeros_like(W)
    for k in onp.ndindex(*W.shape):
        e = onp.zeros_like(W)
        e[k] = eps
        numeric[k] = (loss(W + e, x, S) - loss(W - e, x, S)) / (2 * eps)
    onp.testing.assert_allclose(bench.memnet_hand_grad(W, x, S), numeric, rtol=1e-6,
                                atol=1e-9)
    # the concatenating spelling computes the same loss
    assert bench.memnet_functions(onp)["memnet_concat"](W, x, S) == pytest.approx(loss(W, x, S))


@pytest.mark.parametrize("B,D,S", [(4, 8, 1), (4, 8, 5), (bench.MEMNET_B, bench.MEMNET_D, 6)])
def test_memnet_hand_gradient_matches_gradcy_in_place_and_concat(B, D, S):
    W, x = _data(B, D, seed=S)
    fns = bench.memnet_functions(gnp)
    hand = bench.memnet_hand_grad(W, x, S)
    for variant in ("memnet_inplace", "memnet_concat"):
        onp.testing.assert_allclose(hand, grad(fns[variant])(W, x, S), rtol=1e-9, atol=1e-12)
    s = memory.stats()
    assert (s["live_tapes"], s["live_nodes"]) == (0, 0)


def test_memnet_gradcy_cell_uses_the_softmax_primitive():
    from gradcy._core import Tape, pop_active, push_active
    W, x = _data(2, 3)
    t = Tape()
    push_active(t)
    try:
        loss = bench.memnet_functions(gnp)["memnet_inplace"](t.new_leaf(W), x, 3)
        names = [t.node_info(i)["primitive"] for i in range(len(t))]      # loss keeps them
        del loss
    finally:
        pop_active(t)
        t.release()
    assert names.count("gradcy.scipy.special.softmax") == 3          # one per step
    assert "gradcy.numpy.max" not in names and "gradcy.numpy.exp" not in names
    # the other libraries keep the max/exp/sum spelling
    onp.testing.assert_allclose(bench.memnet_softmax(onp)(onp.array([[0.0, onp.log(3.0)]])),
                                [[0.25, 0.75]])


@pytest.mark.parametrize("variant", ["memnet_inplace", "memnet_concat"])
def test_memnet_softmax_primitive_and_manual_spelling_agree(variant):
    W, x = _data(4, 8, seed=2)
    spelled = bench.memnet_functions(gnp, softmax=lambda s: (
        lambda e: e / gnp.sum(e, axis=1, keepdims=True))(
        gnp.exp(s - gnp.max(s, axis=1, keepdims=True))))[variant]
    prim = bench.memnet_functions(gnp)[variant]
    onp.testing.assert_allclose(grad(prim)(W, x, 5), grad(spelled)(W, x, 5), rtol=1e-12,
                                atol=1e-14)
    onp.testing.assert_allclose(prim(W, x, 5), spelled(W, x, 5), rtol=1e-14)


def test_memnet_hand_gradient_does_not_touch_its_inputs():
    W, x = _data(3, 4)
    W0, x0 = W.copy(), x.copy()
    bench.memnet_hand_grad(W, x, 5)
    onp.testing.assert_array_equal(W, W0)
    onp.testing.assert_array_equal(x, x0)


@pytest.mark.skipif(importlib.util.find_spec("torch") is None, reason="torch not installed")
@pytest.mark.parametrize("variant", ["concat", "inplace"])
def test_memnet_torch_variants_match_hand(variant):
    import torch
    W, x = _data(4, 8)
    g = bench.memnet_torch_grad(torch, W, x, 5, variant).numpy()
    onp.testing.assert_allclose(g, bench.memnet_hand_grad(W, x, 5), rtol=1e-9, atol=1e-12)


@pytest.mark.skipif(importlib.util.find_spec("autograd") is None,
                    reason="autograd not installed")
def test_memnet_autograd_concat_matches_hand():
    import autograd.numpy as anp
    from autograd import grad as agrad
    W, x = _data(4, 8)
    g = agrad(bench.memnet_functions(anp)["memnet_concat"])(W, x, 5)
    onp.testing.assert_allclose(g, bench.memnet_hand_grad(W, x, 5), rtol=1e-9, atol=1e-12)


def test_rows_and_labels():
    assert bench.variants("memnet", "gradcy") == ("inplace", "concat")
    assert bench.variants("dotchain", "gradcy") == (None,)
    assert bench.lib_label("gradcy", "inplace") == "gradcy (in-place)"
    assert bench.lib_label("numpy", "inplace") == "numpy (hand, in-place)"
    assert bench.lib_label("torch", "concat") == "torch (CPU, concat)"
    assert bench.lib_label("gradcy", None) == "gradcy"
    args = argparse.Namespace(S=[3, 7])
    assert bench.cases(["dotchain", "memnet"], args) == [
        ("dotchain", None), ("memnet", 3), ("memnet", 7)]


def test_driver_runs_memnet_end_to_end(capsys):
    rc = bench.main(["--workloads", "memnet", "--S", "3", "--libs", "numpy,gradcy",
                     "--repeats", "1"])
    assert rc == 0
    out = capsys.readouterr().out
    rows = [line for line in out.splitlines() if line.startswith("| ")]
    names = [line.split("|")[2].strip() for line in rows[1:]]
    assert names == ["numpy (hand, in-place)", "gradcy (in-place)", "gradcy (concat)"]
    assert "memnet: B=4, D=64, S=3" in out
    assert "checked against gradcy" in out
    assert "n/a" not in "".join(rows) and "GRADIENT DIFFERS" not in out
    assert "memnet targets" in out and "S=3: time" in out


def _worker_args(**kw):
    base = dict(repeats=1, D=10, quick=False, max_seconds=60.0, max_gib=4.0, time_budget=30.0)
    base.update(kw)
    return argparse.Namespace(**base)


def test_guard_stops_a_slow_run():
    r = bench.run_worker("gradcy", "memnet", _worker_args(max_seconds=1e-3), timeout=120,
                         variant="inplace", S=256)
    assert r["status"] == "n/a" and r["reason"].startswith("too slow"), r


def test_guard_stops_a_large_run():
    r = bench.run_worker("numpy", "memnet", _worker_args(max_gib=1e-3), timeout=120,
                         variant="inplace", S=512)
    assert r["status"] == "n/a" and r["reason"].startswith("too large"), r


def test_unknown_variant_is_reported():
    r = bench.worker("autograd", "memnet", argparse.Namespace(
        repeats=1, D=10, quick=False, S=2, variant="inplace"))
    assert r["status"] == "n/a" and "no 'inplace' variant" in r["reason"]
