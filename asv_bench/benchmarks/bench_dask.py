"""gradcy on Dask arrays against dask-glm's hand-written logistic gradient and Hessian, at the
smallest size of benchmarks/dask_glm_compare.py's sweep (100 MB of X: 625,000 x 20 float64 in
chunks of 200,000 rows, held in memory), on the threaded scheduler (one process, as asv runs).

DaskLogistic   time_gradient: gradcy grad(loss)(w, X, y) (NumPy w, Dask X and y; gradcy computes
               the gradient, one dask.compute) against Logistic.pointwise_gradient(w, X, y)
               computed; time_value_and_grad: value_and_grad against pointwise_loss and
               pointwise_gradient in one dask.compute; time_hessian_vector_product: gradcy's
               Hessian-vector product (Dask w and v) against Logistic.hessian (dask-glm's newton
               step); time_hessian: gradcy's full d x d hessian (forward mode over the gradient,
               the d unit tangents as one batch: one graph) against Logistic.hessian;
               track_gradient_tasks, track_hessian_tasks: the tasks of the gradient's and the
               Hessian's graphs after dask.optimize (exact), each implementation's own;
               track_gradient_layers: the layers of the gradient's graph as built (what the
               client makes on every call, exact).

loss is dask-glm's Logistic.pointwise_loss written in gradcy.numpy. Skipped (n/a) where dask,
dask-glm or gradcy.backends is missing.
"""

import warnings

import numpy

from . import common


class DaskLogistic:
    params = [["gradcy", "dask-glm"]]
    param_names = ["impl"]
    N, D, ROWS = 625_000, 20, 200_000
    timeout = 300

    def setup(self, impl):
        try:
            import dask
            import dask.array as da
        except ImportError as exc:
            raise NotImplementedError(f"dask is not installed ({exc})") from exc
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", FutureWarning)
                from dask_glm.families import Logistic
        except ImportError as exc:
            raise NotImplementedError(f"dask-glm is not installed ({exc})") from exc
        backends = common.require("gradcy.backends")
        gradcy = common.require("gradcy")
        import gradcy.numpy as gnp

        dask.config.set(scheduler="threads")
        rng = numpy.random.default_rng(common.SEED)
        X = da.from_array(rng.standard_normal((self.N, self.D)), chunks=(self.ROWS, self.D))
        y = da.from_array((rng.random(self.N) < 0.5).astype(float), chunks=self.ROWS)
        w = numpy.linspace(-0.5, 0.5, self.D)
        wd, vd = da.from_array(w), da.from_array(numpy.cos(numpy.arange(self.D)))

        def loss(w, X, y):
            z = X @ w
            return gnp.sum(z + gnp.log1p(gnp.exp(-z))) - gnp.dot(y, z)

        if impl == "dask-glm":
            self.gradient = lambda: Logistic.pointwise_gradient(w, X, y).compute()
            self.value_and_grad = lambda: dask.compute(
                Logistic.pointwise_loss(w, X, y), Logistic.pointwise_gradient(w, X, y)
            )
            self.hvp = self.hessian = lambda: Logistic.hessian(X.dot(w), X).compute()
            self.gradient_graph = lambda: (Logistic.pointwise_gradient(w, X, y),)
            self.hessian_graph = lambda: (Logistic.hessian(X.dot(w), X),)
        else:
            grad = gradcy.grad(loss)
            vag = gradcy.value_and_grad(loss)
            hvp = gradcy.hessian_vector_product(loss)
            hess = gradcy.hessian(loss)
            self.gradient = lambda: grad(w, X, y)
            self.value_and_grad = lambda: vag(w, X, y)
            self.hvp = lambda: hvp(wd, X, y, vd).compute()
            self.hessian = lambda: hess(w, X, y)

            def recorded(fn):
                def graph():
                    with backends.recording_computes() as computes:
                        fn(w, X, y)
                    return computes[0]

                return graph

            self.gradient_graph = recorded(grad)
            self.hessian_graph = recorded(hess)
        self.graph_size = backends.graph_size

    def time_gradient(self, impl):
        self.gradient()

    def time_value_and_grad(self, impl):
        self.value_and_grad()

    def time_hessian_vector_product(self, impl):
        self.hvp()

    def time_hessian(self, impl):
        self.hessian()

    def track_gradient_tasks(self, impl):
        return self.graph_size(*self.gradient_graph())["optimized_tasks"]

    track_gradient_tasks.unit = "tasks"

    def track_gradient_layers(self, impl):
        return self.graph_size(*self.gradient_graph())["layers"]

    track_gradient_layers.unit = "layers"

    def track_hessian_tasks(self, impl):
        return self.graph_size(*self.hessian_graph())["optimized_tasks"]

    track_hessian_tasks.unit = "tasks"
