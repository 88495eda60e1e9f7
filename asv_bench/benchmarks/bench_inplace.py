"""Writes into arrays: a memory network written in place and by concatenation.

Each of S steps attends over the whole memory so far (B=4 slots of D=64 wide) and writes one new
slot. In place, the memory is one preallocated buffer and every saved prefix is a view of it; by
concatenation every step makes a new, longer memory, so the saved prefixes add up to O(S^2)
bytes. The hand-written gradient works in place (one buffer, one buffer-sized cotangent).

MemNet        time of one gradient, in place / concat / by hand, S = 64 and 256.
MemNetMemory  tracemalloc peak of gradcy in place and by concat over the hand-written one
              (target: in place near 1; concat grows with S).

The in-place version needs gradcy.numpy.inplace (writes into arrays); at an older commit it is
n/a, and so is concat where einsum has no VJP yet.
"""

import numpy

from . import common

VARIANTS = {"inplace": common.ref.memnet_inplace, "concat": common.ref.memnet_concat}


def _gradcy_memnet(variant):
    """grad of the memory network, checked at S=3 against the hand-written gradient."""
    if variant == "inplace":
        common.require("gradcy.numpy.inplace")
    import gradcy.numpy as gnp
    from gradcy import grad

    g = grad(VARIANTS[variant](gnp))
    W, x = common.memnet_data()
    try:
        small = g(W, x, 3)
    except NotImplementedError as exc:  # MissingVJPError: an op without a VJP here
        raise NotImplementedError(f"memnet {variant} at this commit: {exc}") from exc
    if not numpy.allclose(small, common.ref.hand_memnet(W, x, 3), rtol=1e-9, atol=1e-12):
        raise ValueError(f"gradcy's memnet {variant} gradient differs from the hand-written one")
    return g


class MemNet:
    params = [["inplace", "concat", "hand"], [64, 256]]
    param_names = ["impl", "S"]
    timeout = 120

    def setup(self, impl, S):
        self.W, self.x = common.memnet_data()
        self.fn = common.ref.hand_memnet if impl == "hand" else _gradcy_memnet(impl)

    def time_grad(self, impl, S):
        self.fn(self.W, self.x, S)


class MemNetMemory(common.OneSample):
    params = [["inplace", "concat"]]
    param_names = ["impl"]
    S = 256

    def setup(self, impl):
        self.W, self.x = common.memnet_data()
        self.fn = _gradcy_memnet(impl)

    def track_tracemalloc_peak_ratio(self, impl):
        ours = common.tracemalloc_peak(self.fn, self.W, self.x, self.S)
        theirs = common.tracemalloc_peak(common.ref.hand_memnet, self.W, self.x, self.S)
        return ours / theirs

    track_tracemalloc_peak_ratio.unit = "gradcy / hand-written"
