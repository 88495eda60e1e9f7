"""The attention memory network of gradcy issue 13, as a user writes it: S steps, each attending
over the written prefix of a preallocated memory (B=4 slots of D=64) with a fixed query, the
softmax spelled with max, exp and sum, and tanh(read @ W + b) written into the next slot.

Attention        time of one gradient: gradcy in place, gradcy by concatenation, and the
                 hand-written gradient (which keeps only the weights and the read per step),
                 S = 64, 256, 1024.
AttentionMemory  tracemalloc peak of one gradient, and its ratio to the hand-written one
                 (issue 13's target: <= 1.3 at S = 256 and 1024; time <= 1.4).

n/a at commits without the workload (reference_gradients.attention_inputs) or writes into
arrays (gradcy.numpy.inplace).
"""

import numpy

from . import common


def _impl(impl):
    """The gradient function of `impl`, checked at S=3 against the hand-written gradient."""
    data = common.attention_data()
    if impl == "hand":
        return common.ref.hand_attention
    if impl == "inplace":
        common.require("gradcy.numpy.inplace")
    make = {"inplace": common.ref.attention_inplace, "concat": common.ref.attention_concat}[impl]
    g = common.gradcy_grad(make)
    try:
        small = g(*data, 3)
    except NotImplementedError as exc:
        raise NotImplementedError(f"attention {impl} at this commit: {exc}") from exc
    if not numpy.allclose(small, common.ref.hand_attention(*data, 3), rtol=1e-9, atol=1e-12):
        raise ValueError(f"gradcy's attention {impl} gradient differs from the hand-written one")
    return g


class Attention:
    params = [["inplace", "concat", "hand"], [64, 256, 1024]]
    param_names = ["impl", "S"]
    timeout = 300

    def setup(self, impl, S):
        self.data = common.attention_data()
        self.fn = _impl(impl)

    def time_grad(self, impl, S):
        self.fn(*self.data, S)


class AttentionMemory:
    params = [["inplace", "concat", "hand"], [64, 256, 1024]]
    param_names = ["impl", "S"]
    number = 1
    repeat = 1
    warmup_time = 0
    timeout = 300

    def setup(self, impl, S):
        self.data = common.attention_data()
        self.fn = _impl(impl)

    def track_tracemalloc_peak(self, impl, S):
        return common.tracemalloc_peak(self.fn, *self.data, S)

    track_tracemalloc_peak.unit = "bytes"

    def track_tracemalloc_peak_ratio(self, impl, S):
        ours = common.tracemalloc_peak(self.fn, *self.data, S)
        theirs = common.tracemalloc_peak(common.ref.hand_attention, *self.data, S)
        return ours / theirs

    track_tracemalloc_peak_ratio.unit = "impl / hand-written"
