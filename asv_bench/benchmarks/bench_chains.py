"""Long chains of large matrix products: the memory of a long gradient.

grad wrt x of F(x, z) = sum(z) after 100 steps of z = dot(x, z) (DotChain) or 50 steps of
z = tanh(dot(x, z)) (TanhChain), D=500, beside the hand-written NumPy gradient of the same
function. time_ and peakmem_ compare the two implementations; the *Memory classes track what
the engine holds: its own peak of saved bytes, and the tracemalloc peak of gradcy divided by
that of the hand-written gradient (1.0 is the target: no more memory than a careful person).
"""

from . import common


class _Dot:
    """The dot chain: its inputs, its function of a NumPy-like module, its gradient by hand."""

    data = staticmethod(common.dot_data)
    make = staticmethod(common.ref.dotchain)
    hand = staticmethod(common.ref.hand_dotchain)


class _Tanh:
    """The tanh chain, likewise."""

    data = staticmethod(common.tanh_data)
    make = staticmethod(common.ref.tanhchain)
    hand = staticmethod(common.ref.hand_tanhchain)


class _Chain(common.LongRun):
    params = [["gradcy", "hand"]]
    param_names = ["impl"]

    def setup(self, impl):
        self.x, self.z = type(self).data()
        self.fn = common.gradcy_grad(type(self).make) if impl == "gradcy" else type(self).hand

    def time_grad(self, impl):
        self.fn(self.x, self.z)

    def peakmem_grad(self, impl):
        self.fn(self.x, self.z)


class DotChain(_Dot, _Chain):
    pass


class TanhChain(_Tanh, _Chain):
    pass


class _ChainMemory(common.OneSample):
    def setup(self):
        common.require("gradcy._core", "stats", "reset_peak")
        self.x, self.z = type(self).data()
        self.grad = common.gradcy_grad(type(self).make)

    def track_core_peak_saved_bytes(self):
        common.reset_core_peak()
        self.grad(self.x, self.z)
        return common.core_stats()["peak_saved_bytes"]

    track_core_peak_saved_bytes.unit = "bytes"

    def track_tracemalloc_peak_ratio(self):
        ours = common.tracemalloc_peak(self.grad, self.x, self.z)
        theirs = common.tracemalloc_peak(type(self).hand, self.x, self.z)
        return ours / theirs

    track_tracemalloc_peak_ratio.unit = "gradcy / hand-written"


class DotChainMemory(_Dot, _ChainMemory):
    pass


class TanhChainMemory(_Tanh, _ChainMemory):
    pass
