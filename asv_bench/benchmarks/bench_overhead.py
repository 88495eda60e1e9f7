"""Per-primitive overhead: small arrays, where the cost is gradcy's own work, not NumPy's.

SinChain: grad of 1000 steps of x = sin(x) * 1.0001 + 0.01 * x on a 3-element array (4000 nodes).
Untraced: gradcy.numpy.sin on a plain array (no differentiation running) against numpy.sin.
PerOp: grad of sum(op(x)) for a few ops and sizes, beside the hand-written gradient.
"""

import numpy

from . import common


class SinChain:
    params = [["gradcy", "hand"]]
    param_names = ["impl"]

    def setup(self, impl):
        self.x = common.vector(3)
        self.fn = (
            common.gradcy_grad(common.ref.sinchain)
            if impl == "gradcy"
            else common.ref.hand_sinchain
        )

    def time_grad(self, impl):
        self.fn(self.x)


class Untraced:
    def setup(self):
        import gradcy.numpy as gnp

        self.x = common.vector(3)
        self.gsin = gnp.sin

    def time_gradcy_sin(self):
        self.gsin(self.x)

    def time_numpy_sin(self):
        numpy.sin(self.x)


def _c(n):
    return common.vector(n, seed=common.SEED + 7)


# op -> (f(m, x, c) written for a NumPy-like module m, hand-written gradient of sum(f) wrt x)
OPS = {
    "sin": (lambda m, x, c: m.sin(x), lambda x, c: numpy.ones_like(numpy.sin(x)) * numpy.cos(x)),
    "tanh": (
        lambda m, x, c: m.tanh(x),
        lambda x, c: (lambda y: numpy.ones_like(y) * (1.0 - y * y))(numpy.tanh(x)),
    ),
    "exp": (
        lambda m, x, c: m.exp(x),
        lambda x, c: (lambda y: numpy.ones_like(y) * y)(numpy.exp(x)),
    ),
    "multiply": (lambda m, x, c: x * c, lambda x, c: numpy.ones_like(x * c) * c),
    "add": (lambda m, x, c: x + c, lambda x, c: numpy.ones_like(x + c)),
}


class PerOp:
    params = [list(OPS), [3, 1000, 100_000]]
    param_names = ["op", "size"]

    def setup(self, op, size):
        import gradcy.numpy as gnp
        from gradcy import grad

        self.x, self.c = common.vector(size), _c(size)
        f, self.hand = OPS[op]
        self.grad = grad(lambda x, c: gnp.sum(f(gnp, x, c)))
        try:
            g = self.grad(self.x, self.c)
        except (NotImplementedError, AttributeError) as exc:  # op not registered at this commit
            raise NotImplementedError(str(exc)) from exc
        if not numpy.allclose(g, self.hand(self.x, self.c)):
            raise ValueError(f"gradcy gradient of {op} differs from the hand-written one")

    def time_gradcy(self, op, size):
        self.grad(self.x, self.c)

    def time_hand(self, op, size):
        self.hand(self.x, self.c)
