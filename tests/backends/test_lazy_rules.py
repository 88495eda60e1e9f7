"""Rules of gradcy.numpy (statistics with the order statistics, linalg, fft, diagonal/trace,
repeat) and gradcy.scipy (special, signal.convolve) keep a Dask input lazy; those Dask cannot
express raise a clear error.

Each program is differentiated at a Dask array under the synchronous scheduler with a callback
that counts the graphs Dask computes: the count stays 0 through grad (no rule converts a value
to NumPy or tests its values), the gradient is a lazy Dask array with the input's chunks, and,
computed on the two-process cluster, it equals the gradient of the same program at the NumPy
array to 1e-12 relative.
"""

import os
import traceback

import numpy as onp
import pytest

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


def _signal():
    return pytest.importorskip("gradcy.scipy.signal", reason="scipy is not installed")


def _weights_like(x, w):
    """cov's weights w, of x's library (Dask: two chunks)."""
    return da.from_array(w, chunks=2) if isinstance(getattr(x, "_value", x), da.Array) else w


_FW = onp.array([1, 3, 1, 2])
_AW = onp.array([0.5, 2.0, 1.0, 1.5])
_Q3 = [0.2, 0.5, 0.9]
_ARANGE = onp.arange(24.0).reshape(6, 4)
_COND = onp.array([[True, False, True, False]] * 6)


PROGRAMS = {
    "std": lambda x: np.sum(np.std(x, axis=0) * _W),
    "std_constant_column": lambda x: np.sum(
        np.std(x * onp.array([1.0, 0.0, 1.0, 1.0]), axis=0) * _W
    ),
    "nanstd": lambda x: np.sum(np.nanstd(x, axis=1) ** 3),
    "nanvar": lambda x: np.sum(np.nanvar(x, axis=0) * _W),
    "average_returned": lambda x: np.sum(
        np.average(x, axis=0, weights=np.arange(1.0, 7.0), returned=True)[0] * _W
    ),
    "bincount_weights": lambda x: np.sum(np.bincount(_indices(x), x[:, 0], 4) ** 2),
    "fft_padded": lambda x: np.sum(np.abs(np.fft.fft(x, 7, axis=1)) ** 2),
    "fft_truncated": lambda x: np.sum(np.real(np.fft.fft(x, 3, axis=1)) * onp.arange(3.0)),
    "norm_inf": lambda x: np.linalg.norm(x, np.inf),
    "norm_1": lambda x: np.linalg.norm(x, 1),
    "norm_max_abs": lambda x: np.linalg.norm(x.ravel(), np.inf),
    "softmax": lambda x: np.sum(_special().softmax(x, axis=1) * _W),
    "log_softmax": lambda x: np.sum(_special().log_softmax(x, axis=1) * _W),
    # order statistics: x is chunked (3, 2), so every rule rechunks along its reduced axes
    "median": lambda x: np.sum(np.median(x, axis=0) * _W),
    "median_ties_keepdims": lambda x: np.sum(np.median(x, axis=1, keepdims=True) ** 3),
    "median_axes": lambda x: np.median(x[:, :3], axis=(0, 1)),
    "nanmedian": lambda x: np.sum(np.nanmedian(x, axis=0) * _W),
    "nanmedian_ties": lambda x: np.sum(np.nanmedian(x, axis=1) ** 2),
    "quantile": lambda x: np.sum(np.quantile(x, _Q3, axis=0) * _W),
    "quantile_lower_ties": lambda x: np.sum(np.quantile(x, 0.3, axis=1, method="lower") ** 2),
    "quantile_axes": lambda x: np.sum(np.quantile(x, [0.25, 0.75], axis=(0, 1)) * [1.0, 3.0]),
    "percentile_hazen": lambda x: np.sum(
        np.percentile(x, [10.0, 60.0], axis=0, method="hazen") * _W
    ),
    "nanquantile": lambda x: np.sum(np.nanquantile(x, _Q3, axis=0) * _W),
    "nanpercentile_keepdims": lambda x: np.sum(
        np.nanpercentile(x, 75.0, axis=1, keepdims=True) ** 2
    ),
    # cov's weights as Dask arrays (Dask's own cov computes once: `fact <= 0`)
    "cov_fweights": lambda x: np.sum(np.cov(x, fweights=_weights_like(x, _FW)) ** 2),
    "cov_aweights": lambda x: np.sum(np.cov(x, aweights=_weights_like(x, _AW)) ** 2),
    "cov_both_weights_ddof0": lambda x: np.sum(
        np.cov(x, ddof=0, fweights=_weights_like(x, _FW), aweights=_weights_like(x, _AW)) ** 2
    ),
    # scipy.signal.convolve: the windows' adjoint, and scipy's form on Dask
    "convolve_axes": lambda x: np.sum(
        _signal().convolve(x, onp.arange(6.0).reshape(2, 3), axes=([0, 1], [0, 1])) ** 2
    ),
    "convolve_valid_dot": lambda x: np.sum(
        _signal().convolve(
            x, onp.arange(8.0).reshape(2, 4), axes=([0], [0]), dot_axes=([1], [1]), mode="valid"
        )
        ** 2
    ),
    "convolve_same": lambda x: np.sum(_signal().convolve(x, onp.ones((3, 2)), "same") ** 2),
    # diagonal and trace: the cotangent on the diagonal of a padded square (no item writes)
    "diagonal_trace": lambda x: np.trace(x, offset=-2),
    "diagonal_3d": lambda x: np.sum(np.diagonal(np.reshape(x, (2, 3, 4)), 1, 2, 1) ** 2),
    "diagonal_trace_3d": lambda x: np.sum(np.trace(np.reshape(x, (2, 3, 4)), 0, 0, 2) ** 2),
    "diagonal_empty": lambda x: np.sum(np.diagonal(x, 7)) + np.sum(x),
    # repeat's transpose (unrepeat) and tile, through it
    "repeat": lambda x: np.sum(np.repeat(x, 2, axis=0) ** 2 * onp.arange(12.0)[:, None]),
    "repeat_tile": lambda x: np.sum(np.tile(x, (2, 3)) ** 2 * onp.arange(12.0)[:, None]),
    # reads by one integer array along one axis: the transpose per block of whole rows
    "take_rows": lambda x: np.sum(np.take(x, [0, 2, 2, -1], axis=0) ** 2 * _W),
    "take_columns": lambda x: np.sum(np.take(x, [3, 1, 1], axis=1) ** 2),
    "take_getitem_rows": lambda x: np.sum(x[[0, 1, 1, 5]] ** 3),
    "take_getitem_columns": lambda x: np.sum(x[..., [3, 1, 1]] ** 2),
    "take_compress": lambda x: np.sum(np.compress([True, False, True, True], x, axis=1) ** 2),
    "take_gradient": lambda x: np.sum(np.gradient(x, axis=0) ** 2),
    "take_select_numpy_conditions": lambda x: np.sum(
        np.select([_COND, ~_COND], [x, x**2], 0.0) ** 2
    ),
    # cumprod: no test for zeros (the rule with zeros, equal to the one without where none)
    "cumprod": lambda x: np.sum(np.cumprod(x, axis=0) * _ARANGE),
    "cumprod_zeros": lambda x: np.sum(np.cumprod(x, axis=0) * _ARANGE),
    "cumprod_zeros_flat": lambda x: np.sum(np.cumprod(x) * _ARANGE.ravel()),
    "nancumprod_zeros": lambda x: np.sum(np.nancumprod(x, axis=1) * _ARANGE),
    # reductions that pick or multiply: max/min (ties split), ptp, prod with zeros, nanmean
    "max_axis": lambda x: np.sum(np.max(x, axis=0) * _W),
    "max_ties": lambda x: np.sum(np.max(x, axis=1, keepdims=True) ** 3),
    "min_all": lambda x: np.min(x) * 3.0,
    "nanmax": lambda x: np.sum(np.nanmax(x, axis=0) * _W),
    "nanmin_ties": lambda x: np.sum(np.nanmin(x, axis=1) ** 2),
    "ptp": lambda x: np.sum(np.ptp(x, axis=0) * _W),
    "prod_zeros": lambda x: np.sum(np.prod(x, axis=0) * _W),
    "prod": lambda x: np.sum(np.prod(x, axis=1) ** 2),
    "nanprod": lambda x: np.sum(np.nanprod(x, axis=0) * _W),
    "nanmean": lambda x: np.sum(np.nanmean(x, axis=1) ** 2),
    # qr of a tall-and-skinny matrix (Dask's qr takes no mode; its signs are its own, so the
    # program depends on squares only)
    "qr": lambda x: np.sum(np.linalg.qr(x)[0] ** 2 * _ARANGE) + np.sum(np.linalg.qr(x)[1] ** 2),
    # a written-out softmax (fused on NumPy arrays only; on Dask each op's rule runs)
    "softmax_written_out": lambda x: np.sum(_written_softmax(x) * _W),
}


def _written_softmax(x):
    e = np.exp(x - np.max(x, axis=1, keepdims=True))
    return e / np.sum(e, axis=1, keepdims=True)


# chunks of the Dask input other than (3, 4)
_CHUNKS = {
    name: (3, 2)
    for name in PROGRAMS
    if name.startswith(
        (
            "median",
            "nanmedian",
            "quantile",
            "percentile",
            "nanquantile",
            "nanpercentile",
            "cov",
            "convolve",
            "diagonal",
            "repeat",
            "cumprod",
            "nancumprod",
            "take",
            "max",
            "min",
            "nanmax",
            "nanmin",
            "ptp",
            "prod",
            "nanprod",
            "nanmean",
        )
    )
}
# graphs Dask's own forward computes (numpy.cov on Dask tests `fact <= 0`); the rules add none
_DASK_FORWARD_COMPUTES = {"cov_fweights": 1, "cov_aweights": 1, "cov_both_weights_ddof0": 1}


def _data(name):
    x = onp.random.RandomState(7).standard_normal((6, 4))
    if "ties" in name:  # equal entries in every column and most rows
        x = onp.round(x)
    if "zeros" in name:  # two zeros in column 1, one in column 3 and row 3
        x[2, 1] = x[4, 1] = x[3, 3] = 0.0
    if name.startswith("nan"):
        x[1, 2] = onp.nan
    return x


def _count_computes(f, x):
    counter = _Computes()
    with dask.config.set(scheduler="sync"), counter:
        out = f(x)
    return counter.count, out


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_rule_keeps_dask_lazy(name, dask_client):
    f = PROGRAMS[name]
    xn = _data(name)
    xd = da.from_array(xn, chunks=_CHUNKS.get(name, (3, 4)))
    forward, _ = _count_computes(f, xd)
    assert forward == _DASK_FORWARD_COMPUTES.get(name, 0)
    count, g = _count_computes(grad(f), xd)
    assert count == forward, f"{name}: Dask computed {count - forward} graph(s) in the rules"
    assert isinstance(g, da.Array) and g.chunks == xd.chunks and g.dtype == xd.dtype
    expected = grad(f)(xn)
    got = dask_client.compute(g).result()  # on the two-process cluster
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


# forward mode and second order: tangents and Hessian-vector products
SECOND_ORDER = {
    "cumprod_zeros": lambda x: np.cumprod(x, axis=0) * _ARANGE,
    "nancumprod_zeros": lambda x: np.nancumprod(x, axis=1) * _ARANGE,
    "median": lambda x: np.median(x, axis=0) ** 3,
    "nanmedian_ties": lambda x: np.nanmedian(x, axis=1) ** 3,
    "quantile": lambda x: np.quantile(x, [0.2, 0.7], axis=0) ** 3,
    "nanpercentile_weibull": lambda x: (
        np.nanpercentile(x, [20.0, 70.0], axis=1, method="weibull") ** 3
    ),
}


@pytest.mark.parametrize("name", sorted(SECOND_ORDER))
def test_jvp_and_hvp_stay_lazy(name):
    from gradcy import make_jvp

    f = SECOND_ORDER[name]
    xn, vn = _data(name), onp.random.RandomState(8).standard_normal((6, 4))
    xd, vd = da.from_array(xn, chunks=(3, 2)), da.from_array(vn, chunks=(3, 2))

    def hvp(x, v):
        return grad(lambda y: np.sum(grad(lambda z: np.sum(f(z)))(y) * v))(x)

    count, (t, h) = _count_computes(lambda x: (make_jvp(f)(x)(vd)[1], hvp(x, vd)), xd)
    assert count == 0
    assert isinstance(t, da.Array) and isinstance(h, da.Array) and h.chunks == xd.chunks
    onp.testing.assert_allclose(t.compute(), make_jvp(f)(xn)(vn)[1], rtol=RTOL, atol=1e-300)
    onp.testing.assert_allclose(h.compute(), hvp(xn, vn), rtol=RTOL, atol=1e-300)


@pytest.mark.parametrize("fun", [np.quantile, np.nanquantile])
def test_quantile_gradient_in_q_of_dask_data(fun):
    """q a NumPy array, the data Dask: q's gradient depends on the data, so grad computes it
    once at the end (one graph), a NumPy array equal to the NumPy program's."""
    xn = _data("quantile")
    xd = da.from_array(xn, chunks=(3, 2))
    q = onp.array([0.2, 0.45, 0.7])

    def f(q, x):
        return np.sum(fun(x, q, axis=0) ** 2 * _W)

    count, gq = _count_computes(lambda q: grad(f)(q, xd), q)
    assert count == 1 and type(gq) is onp.ndarray
    onp.testing.assert_allclose(gq, grad(f)(q, xn), rtol=RTOL)


def test_eigvals_of_dask_refuses():
    """Dask has no eig: eigvals' rule would compute the matrix's eigenvectors in memory."""
    xd = da.from_array(_data("eigvals")[:4], chunks=2)
    with (
        pytest.warns(FutureWarning),
        pytest.raises(
            NotImplementedError,
            match=r"gradcy\.numpy\.linalg\.eigvals: no gradient for "
            r"argument 0 \(a\) as a dask\.array.*a\.compute\(\)",
        ),
    ):
        grad(lambda x: np.sum(np.real(np.linalg.eigvals(x))))(xd)


@pytest.mark.parametrize(
    "fun",
    [
        lambda x: np.sum(np.median(x, axis=0) ** 2),
        lambda x: np.sum(np.quantile(x, [0.3, 0.6], axis=1) ** 2),
        lambda x: np.sum(np.nanpercentile(x, 40.0, axis=0, method="nearest") ** 2),
    ],
    ids=["median", "quantile", "nanpercentile_nearest"],
)
def test_order_statistics_float32_dask(fun):
    """float32 in, float32 out: the weights of each block are made in the input's dtype."""
    xn = _data("float32").astype(onp.float32)
    xd = da.from_array(xn, chunks=(3, 2))
    count, g = _count_computes(grad(fun), xd)
    assert count == 0 and g.dtype == onp.float32 and g.chunks == xd.chunks
    expected = grad(fun)(xn)
    assert expected.dtype == onp.float32
    onp.testing.assert_array_equal(g.compute(), expected)


@pytest.mark.parametrize(
    "fun",
    [
        lambda x: np.sum(np.select([x > 0.5, x < -0.5], [x, x**2], 0.0)),
        lambda x: np.sum(np.extract(x > 0, x)),
        lambda x: np.sum(np.choose((x > 0).astype(int), [x, x**2])),
    ],
    ids=["select", "extract", "choose"],
)
def test_selection_by_dask_values_refuses(fun):
    """Positions chosen by Dask values (conditions, indices): the derivative would scatter to
    positions Dask has not computed; a clear error naming the function and the fixes (was a
    TypeError from inside numpy.add.at)."""
    xd = da.from_array(_data("select"), chunks=(3, 2))
    with pytest.raises(
        NotImplementedError,
        match=r"gradcy\.numpy\.(select|extract|choose): the "
        r"positions .* depend on Dask values.*"
        r"gradcy\.numpy\.where",
    ):
        grad(fun)(xd)


def test_scatter_add_of_dask_refuses():
    """The VJP of a read by several integer arrays (diag's (rows, cols)) adds at the positions
    read (numpy.add.at), which Dask has not: a clear error, not Dask's TypeError from inside
    add.at."""
    xd = da.from_array(_data("diag"), chunks=(3, 2))
    with pytest.raises(
        NotImplementedError,
        match=r"gradcy\.numpy\.untake \(the VJP of take, "
        r".*numpy\.add\.at.*one such integer array",
    ):
        grad(lambda x: np.sum(np.diag(x) ** 2))(xd)


_D = onp.random.RandomState(9).standard_normal((6, 6))
_D1 = onp.random.RandomState(10).standard_normal(72)
DATA_PROGRAMS = {  # (program of a NumPy x and data d, data); Dask's repeat takes neither form
    "repeat_array_repeats": (lambda x, d: np.sum(np.repeat(x, [1, 0, 3, 2], axis=1) ** 2 * d), _D),
    "repeat_flat": (lambda x, d: np.sum(np.repeat(x, 3) * d), _D1),
}


@pytest.mark.parametrize("name", sorted(DATA_PROGRAMS))
def test_numpy_input_dask_data_computes_once(name):
    """A NumPy parameter with Dask data: unrepeat's rule takes the Dask cotangent as it is
    (blocks of whole rows), and grad computes the gradient once at the end."""
    f, dn = DATA_PROGRAMS[name]
    dd = da.from_array(dn, chunks=5)
    xn = _data(name)
    starts = []

    class Sites(Callback):  # the function of gradcy.backends each compute starts from
        def _start(self, dsk):
            starts.append(
                [
                    fr.name
                    for fr in traceback.extract_stack()
                    if fr.filename.endswith(os.path.join("gradcy", "backends.py"))
                ]
            )

    with dask.config.set(scheduler="sync"), Sites():
        g = grad(lambda x: f(x, dd))(xn)
    assert starts == [["compute_pending"]] and type(g) is onp.ndarray
    onp.testing.assert_allclose(g, grad(lambda x: f(x, dn))(xn), rtol=RTOL)
