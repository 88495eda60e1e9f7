"""gradcy on Dask arrays (threaded scheduler, small data): the logistic-loss gradient against
dask-glm's hand-written one, and the time gradcy spends building the gradient's graph.

DaskLogistic   grad of sum(logaddexp(0, X @ w) - y * (X @ w)) for NumPy w and Dask X, y
               (200,000 x 10 float64 in 8 row chunks; gradcy computes the result, one
               dask.compute) against dask_glm.families.Logistic.gradient(X.dot(w), X, y)
               computed; and, for gradcy, building the lazy gradient of a Dask w without
               computing it (the tracing overhead on top of Dask's own graph building).

Skipped (n/a) where dask, dask-glm or gradcy.backends is missing.
"""
import warnings

import numpy

from . import common


class DaskLogistic:
    params = [["gradcy", "dask-glm", "gradcy-graph-only"]]
    param_names = ["impl"]
    N, D, CHUNKS = 200_000, 10, 8

    def setup(self, impl):
        try:
            import dask
            import dask.array as da
        except ImportError as exc:
            raise NotImplementedError(f"dask is not installed ({exc})") from exc
        dask.config.set(scheduler="threads")
        rng = numpy.random.default_rng(common.SEED)
        X = rng.standard_normal((self.N, self.D))
        y = (rng.random(self.N) < 0.5).astype(float)
        self.X = da.from_array(X, chunks=(self.N // self.CHUNKS, self.D))
        self.y = da.from_array(y, chunks=self.N // self.CHUNKS)
        self.w = numpy.linspace(-0.5, 0.5, self.D)
        if impl == "dask-glm":
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", FutureWarning)
                    from dask_glm.families import Logistic
            except ImportError as exc:
                raise NotImplementedError(f"dask-glm is not installed ({exc})") from exc
            X_, y_, w_ = self.X, self.y, self.w
            self.fn = lambda: Logistic.gradient(X_.dot(w_), X_, y_).compute()
            return
        common.require("gradcy.backends")
        grad = common.require("gradcy", "grad")
        import gradcy.numpy as gnp

        def loss(w, X, y):
            z = X @ w
            return gnp.sum(gnp.logaddexp(0.0, z) - y * z)
        g = grad(loss)
        X_, y_ = self.X, self.y
        if impl == "gradcy":
            w_ = self.w
        else:
            w_ = da.from_array(self.w)
        self.fn = lambda: g(w_, X_, y_)

    def time_gradient(self, impl):
        self.fn()
