"""The other ways to differentiate: forward mode, checkpointing, grad of grad, memory profiling.

Each class needs an API that appeared after the first commit; its setup raises
NotImplementedError at a commit without it (asv shows n/a), so the suite runs over the whole
history.

ForwardMode   make_jvp of the 1000-step sin chain (3 elements): forward-mode overhead per
              primitive, beside the tangent carried by hand.
Checkpoint    the tanh chain (D=500) as 5 checkpointed segments of 10 steps against the plain
              chain: time, and the engine's peak saved bytes as a fraction of the plain chain's
              (about 15 of 50 saved matrices: the segment inputs plus one segment recomputed).
HigherOrder   hessian_vector_product of 100 sin steps on 1000 elements (grad of grad).
Profile       gradcy.memory.profile against grad on the sin chain: the observer's overhead.
"""

import numpy

from . import common

CKPT_SEGMENTS = 5  # 5 x 10 = common.ref.TANH_STEPS


class ForwardMode:
    params = [["gradcy", "hand"]]
    param_names = ["impl"]

    def setup(self, impl):
        self.x = common.vector(3)
        self.v = common.vector(3, seed=common.SEED + 3)
        if impl == "hand":
            self.fn = common.ref.hand_jvp_sinchain
            return
        make_jvp = common.require("gradcy", "make_jvp")
        import gradcy.numpy as gnp

        f = common.ref.sinchain(gnp)

        def jvp(x, v):
            return make_jvp(f)(x)(v)

        try:
            ans, t = jvp(self.x, self.v)
        except (NotImplementedError, TypeError, AttributeError) as exc:
            raise NotImplementedError(
                f"forward mode of sin/multiply/add at this commit: {exc}"
            ) from exc
        _, t_hand = common.ref.hand_jvp_sinchain(self.x, self.v)
        if not numpy.allclose(t, t_hand):
            raise ValueError("gradcy's forward-mode tangent differs from the hand-written one")
        self.fn = jvp

    def time_jvp(self, impl):
        self.fn(self.x, self.v)


def _segment(m):
    steps = common.ref.TANH_STEPS // CKPT_SEGMENTS

    def seg(x, z):
        for _ in range(steps):
            z = m.tanh(m.dot(x, z))
        return z

    return seg


def _checkpointed_chain():
    checkpoint = common.require("gradcy", "checkpoint")
    import gradcy.numpy as gnp
    from gradcy import grad

    seg = checkpoint(_segment(gnp))

    def F(x, z):
        for _ in range(CKPT_SEGMENTS):
            z = seg(x, z)
        return gnp.sum(z)

    return grad(F)


class Checkpoint(common.LongRun):
    params = [["plain", "checkpoint"]]
    param_names = ["impl"]

    def setup(self, impl):
        self.x, self.z = common.tanh_data()
        self.fn = (
            _checkpointed_chain()
            if impl == "checkpoint"
            else common.gradcy_grad(common.ref.tanhchain)
        )

    def time_grad(self, impl):
        self.fn(self.x, self.z)


class CheckpointMemory(common.OneSample):
    def setup(self):
        common.require("gradcy._core", "stats", "reset_peak")
        self.x, self.z = common.tanh_data()
        self.ckpt = _checkpointed_chain()
        self.plain = common.gradcy_grad(common.ref.tanhchain)

    def _peak_saved(self, fn):
        common.reset_core_peak()
        fn(self.x, self.z)
        return common.core_stats()["peak_saved_bytes"]

    def track_peak_saved_fraction(self):
        return self._peak_saved(self.ckpt) / self._peak_saved(self.plain)

    track_peak_saved_fraction.unit = "checkpointed / plain"


class HigherOrder:
    def setup(self):
        hvp = common.require("gradcy", "hessian_vector_product")
        import gradcy.numpy as gnp

        def f(x):
            for _ in range(100):
                x = gnp.sin(x) * 1.0001 + 0.01 * x
            return gnp.sum(x)

        self.x = common.vector(1000)
        self.v = common.vector(1000, seed=common.SEED + 3)
        self.hvp = hvp(f)
        try:
            self.hvp(self.x, self.v)
        except (NotImplementedError, TypeError, AttributeError) as exc:
            raise NotImplementedError(
                f"grad of grad of sin/multiply/add at this commit: {exc}"
            ) from exc

    def time_hessian_vector_product(self):
        self.hvp(self.x, self.v)


class Profile:
    params = [["grad", "profile"]]
    param_names = ["impl"]

    def setup(self, impl):
        self.x = common.vector(3)
        if impl == "grad":
            self.fn = common.gradcy_grad(common.ref.sinchain)
        else:
            profile = common.require("gradcy.memory", "profile")
            import gradcy.numpy as gnp

            self.fn = profile(common.ref.sinchain(gnp))

    def time_sinchain(self, impl):
        self.fn(self.x)
