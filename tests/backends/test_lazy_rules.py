"""Rules of gradcy.numpy.statistics, linalg, fft and gradcy.scipy.special keep a Dask input lazy.

Each program is differentiated at a Dask array under the synchronous scheduler with a callback
that counts the graphs Dask computes: the count stays 0 through grad (no rule converts a value
to NumPy or tests its values), the gradient is a lazy Dask array with the input's chunks, and,
computed on the two-process cluster, it equals the gradient of the same program at the NumPy
array to 1e-12 relative.
"""
import numpy as onp
import pytest
from counters import _counters_back_to_zero, assert_counters_zero  # noqa: F401  (autouse fixture: counters back to zero)

import gradcy.numpy as np
from gradcy import grad

da = pytest.importorskip("dask.array", reason="dask is not installed (pip install -e '.[dask]')")
dask = pytest.importorskip("dask")
from dask.callbacks import Callback

RTOL = 1e-12
_W = onp.arange(1.0, 5.0)


class _Computes(Callback):
    """Counts the graphs a local Dask scheduler starts computing."""

    def __init__(self):
        super().__init__()
        self.count = 0

    def _start(self, dsk):
        self.count += 1


def _indices(x):
    """The integer labels of bincount, of x's library (Dask's bincount takes Dask labels)."""
    idx = onp.array([0, 2, 2, 1, 0, 3])
    return da.from_array(idx, chunks=3) if isinstance(getattr(x, "_value", x), da.Array) else idx


def _special():
    return pytest.importorskip("gradcy.scipy.special", reason="scipy is not installed")


PROGRAMS = {
    "std": lambda x: np.sum(np.std(x, axis=0) * _W),
    "std_constant_column": lambda x: np.sum(np.std(x * onp.array([1.0, 0.0, 1.0, 1.0]),
                                                   axis=0) * _W),
    "nanstd": lambda x: np.sum(np.nanstd(x, axis=1) ** 3),
    "nanvar": lambda x: np.sum(np.nanvar(x, axis=0) * _W),
    "average_returned": lambda x: np.sum(np.average(x, axis=0, weights=np.arange(1.0, 7.0),
                                                    returned=True)[0] * _W),
    "bincount_weights": lambda x: np.sum(np.bincount(_indices(x), x[:, 0], 4) ** 2),
    "fft_padded": lambda x: np.sum(np.abs(np.fft.fft(x, 7, axis=1)) ** 2),
    "fft_truncated": lambda x: np.sum(np.real(np.fft.fft(x, 3, axis=1)) * onp.arange(3.0)),
    "norm_inf": lambda x: np.linalg.norm(x, np.inf),
    "norm_1": lambda x: np.linalg.norm(x, 1),
    "norm_max_abs": lambda x: np.linalg.norm(x.ravel(), np.inf),
    "softmax": lambda x: np.sum(_special().softmax(x, axis=1) * _W),
    "log_softmax": lambda x: np.sum(_special().log_softmax(x, axis=1) * _W),
}


def _data(name):
    x = onp.random.RandomState(7).standard_normal((6, 4))
    if name.startswith("nan"):
        x[1, 2] = onp.nan
    return x


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_rule_keeps_dask_lazy(name, dask_client):
    f = PROGRAMS[name]
    xn = _data(name)
    xd = da.from_array(xn, chunks=(3, 4))
    counter = _Computes()
    with dask.config.set(scheduler="sync"), counter:
        g = grad(f)(xd)
    assert counter.count == 0, f"{name}: Dask computed {counter.count} graph(s) inside grad"
    assert isinstance(g, da.Array) and g.chunks == xd.chunks and g.dtype == xd.dtype
    expected = grad(f)(xn)
    got = dask_client.compute(g).result()      # on the two-process cluster
    assert type(got) is onp.ndarray and type(expected) is onp.ndarray
    onp.testing.assert_allclose(got, expected, rtol=RTOL, atol=1e-300)


def test_softmax_forward_stays_lazy():
    special = _special()
    xn = _data("softmax")
    xd = da.from_array(xn, chunks=(3, 4))
    counter = _Computes()
    with dask.config.set(scheduler="sync"), counter:
        s, ls = special.softmax(xd, axis=1), special.log_softmax(xd, axis=1)
        assert counter.count == 0
        onp.testing.assert_allclose(s.compute(), special.softmax(xn, axis=1), rtol=RTOL)
        onp.testing.assert_allclose(ls.compute(), special.log_softmax(xn, axis=1), rtol=RTOL)
    assert isinstance(s, da.Array) and isinstance(ls, da.Array)
