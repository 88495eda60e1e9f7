"""Gradient checks of numpy.fft (gradcy/numpy/fft.py): reverse and forward mode to second
order, real and complex inputs, n/s padding and truncation, axes, every norm; the dtype
contract (float32 and complex64 stay so); and that no rule keeps an array on the tape."""

import warnings

import numpy as onp
import pytest

import gradcy.numpy as np
import gradcy.numpy.fft as fft
import gradcy.numpy.fft as FV
import gradcy
from gradcy import MissingJVPError, grad, make_jvp, make_vjp
from gradcy._core import ArrayMeta, Tape
from gradcy.test_util import check_grads
from op_records.fft import RECORDS
from vjp_harness import raw_cotangent

_PRIMS = [getattr(fft, r.name) for r in RECORDS] + [FV._truncate_pad]
COVERED = {p.name for p in _PRIMS}


def _data(*shape, seed=0, complex_=False):
    rs = onp.random.RandomState(seed + sum(shape))
    x = rs.randn(*shape)
    return x + 1j * rs.randn(*shape) if complex_ else x


R1E, R1O = _data(6), _data(5)
R2, R3 = _data(4, 5), _data(2, 3, 4)
C1E, C1O = _data(6, complex_=True), _data(5, complex_=True)
C2, C3 = _data(4, 5, complex_=True), _data(2, 3, 4, complex_=True)

# (id, function, input); each function is checked on its input
CASES = [
    # complex transforms
    ("fft", lambda a: fft.fft(a), R1E),
    ("fft-c", lambda a: fft.fft(a), C1O),
    ("fft-pad-axis0-ortho", lambda a: fft.fft(a, 8, 0, "ortho"), C2),
    ("fft-trunc-forward", lambda a: fft.fft(a, n=3, norm="forward"), R2),
    ("fft-same-n-backward", lambda a: fft.fft(a, n=5, axis=-1, norm="backward"), C2),
    ("ifft", lambda a: fft.ifft(a), C1E),
    ("ifft-real-pad", lambda a: fft.ifft(a, n=9, norm="ortho"), R1E),
    ("ifft-trunc-axis0", lambda a: fft.ifft(a, n=2, axis=0, norm="forward"), C2),
    ("fft2", lambda a: fft.fft2(a), R3),
    ("fft2-s-axes", lambda a: fft.fft2(a, s=(3, 8), axes=(0, 2)), C3),
    ("ifft2-ortho", lambda a: fft.ifft2(a, norm="ortho"), C2),
    ("ifft2-s", lambda a: fft.ifft2(a, (5, 3), norm="forward"), R2),
    ("fftn", lambda a: fft.fftn(a), C3),
    ("fftn-s-axes", lambda a: fft.fftn(a, s=(2, 5), axes=(2, 0)), R3),
    ("fftn-repeated-axis", lambda a: fft.fftn(a, s=(4, 7), axes=(1, 1)), C2),
    ("fftn-repeated-axis-nos", lambda a: fft.fftn(a, axes=(0, -2), norm="ortho"), R2),
    ("fftn-s-no-axes", lambda a: fft.fftn(a, s=(2, 6)), C3),
    ("ifftn-neg-axis", lambda a: fft.ifftn(a, s=(5,), axes=(-2,), norm="ortho"), C3),
    ("ifftn-s-minus1", lambda a: fft.ifftn(a, s=(-1, 3), axes=(0, 1)), R2),
    # real transforms
    ("rfft-even", lambda a: fft.rfft(a), R1E),
    ("rfft-odd", lambda a: fft.rfft(a), R1O),
    ("rfft-pad-odd", lambda a: fft.rfft(a, 7), R2),
    ("rfft-axis0-ortho", lambda a: fft.rfft(a, 4, axis=0, norm="ortho"), R2),
    ("rfft-n1", lambda a: fft.rfft(a, n=1, norm="forward"), R1E),
    ("rfft-n2", lambda a: fft.rfft(a, n=2), R1O),
    ("rfft2-forward", lambda a: fft.rfft2(a, norm="forward"), R3),
    ("rfftn", lambda a: fft.rfftn(a), R3),
    ("rfftn-s-axes", lambda a: fft.rfftn(a, s=(3, 5), axes=(0, 2)), R3),
    ("rfftn-s-minus1", lambda a: fft.rfftn(a, s=(-1, 8), axes=(0, 1), norm="ortho"), R2),
    ("rfftn-s-no-axes", lambda a: fft.rfftn(a, s=(4, 3)), R3),
    ("irfft", lambda a: fft.irfft(a), C1E),
    ("irfft-odd-n", lambda a: fft.irfft(a, 9), C2),
    ("irfft-axis0-ortho", lambda a: fft.irfft(a, 4, axis=0, norm="ortho"), C2),
    ("irfft-n1", lambda a: fft.irfft(a, n=1), C1O),
    ("irfft-real-input", lambda a: fft.irfft(a, n=7, norm="forward"), R2),
    ("irfft2", lambda a: fft.irfft2(a), C3),
    ("irfftn-s-axes", lambda a: fft.irfftn(a, s=(5, 7), axes=(0, 2)), C3),
    ("irfftn-forward", lambda a: fft.irfftn(a, norm="forward"), C2),
    ("hfft", lambda a: fft.hfft(a, 7), C2),
    ("hfft-real-ortho", lambda a: fft.hfft(a, norm="ortho"), R1O),
    ("hfft-axis0-forward", lambda a: fft.hfft(a, axis=0, norm="forward"), C2),
    ("ihfft", lambda a: fft.ihfft(a, 5), R1E),
    ("ihfft-forward", lambda a: fft.ihfft(a, norm="forward"), R2),
    ("ihfft-axis0-pad", lambda a: fft.ihfft(a, n=8, axis=0, norm="ortho"), R2),
    # shifts
    ("fftshift", lambda a: fft.fftshift(a), R2),
    ("fftshift-c-axes", lambda a: fft.fftshift(a, axes=1), C2),
    ("ifftshift", lambda a: fft.ifftshift(a), R3),
    ("ifftshift-axes", lambda a: fft.ifftshift(a, (0, 2)), C3),
    # the pad/truncation helper
    ("truncate_pad", lambda a: FV._truncate_pad(a, (6, 3)), R2),
    ("truncate_pad-c", lambda a: FV._truncate_pad(a, (1, 4, 6)), C3),
]


NUMPY2 = onp.lib.NumpyVersion(onp.__version__) >= "2.0.0"


def _numpy_takes(fun, x):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        try:
            fun(x)  # plain values: NumPy's own call
        except ValueError:
            return False
    return True


# s=-1 (the input's length along that axis) is new in NumPy 2: cases NumPy rejects are left out
CASES = [c for c in CASES if _numpy_takes(c[1], c[2])]
_IDS = [c[0] for c in CASES]


@pytest.fixture(autouse=True)
def _quiet():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        yield


@pytest.mark.parametrize("name,fun,x", CASES, ids=_IDS)
def test_rev(name, fun, x):
    check_grads(fun, modes=("rev",), order=2)(x)


@pytest.mark.parametrize("name,fun,x", CASES, ids=_IDS)
def test_fwd(name, fun, x):
    check_grads(fun, modes=("fwd",), order=2)(x)


@pytest.mark.parametrize("name,fun,x", CASES, ids=_IDS)
def test_fwd_rev_mixed(name, fun, x):
    """Forward over reverse and reverse over forward (needs the JVPs of the operators the
    rules use: real, conjugate, multiply...)."""
    try:
        check_grads(fun, modes=("fwd", "rev"), order=2)(x)
    except MissingJVPError as e:
        if "gradcy.numpy.fft" in str(e):
            raise
        pytest.skip(f"a JVP outside numpy.fft is missing: {e}")


def _single(x):
    return x.astype(onp.complex64 if x.dtype.kind == "c" else onp.float32)


@pytest.mark.parametrize("name,fun,x", CASES, ids=_IDS)
def test_dtype_contract(name, fun, x):
    """float32 and complex64 inputs: the cotangent (at the tape level and as returned) and the
    tangent keep single precision."""
    x = _single(x)
    c = raw_cotangent(fun, (x,), 0)
    assert c.shape == x.shape and c.dtype == x.dtype, (c.shape, c.dtype)
    vjp, y = make_vjp(fun)(x)
    try:
        y = onp.asarray(y)
        # NumPy's own dtype: single precision (NumPy 1.x's numpy.fft computes in double)
        assert y.dtype == onp.asarray(fun(x)).dtype
        assert y.dtype in (onp.float32, onp.complex64) or not NUMPY2
        out = vjp(onp.ones(y.shape, y.dtype))
    finally:
        vjp.release()
    assert type(out) is onp.ndarray and out.dtype == x.dtype and out.shape == x.shape
    yy, t = make_jvp(fun)(x)(onp.ones_like(x))
    assert onp.asarray(t).dtype == onp.asarray(yy).dtype == y.dtype
    assert onp.shape(t) == y.shape


def _saved_record(fun, x):
    t = Tape()
    try:
        y = fun(t.new_leaf(x))
        info = t.node_info(y._node)
        return info["saved"]
    finally:
        t.release()


def _arrays_in(obj):
    if isinstance(obj, onp.ndarray):
        return 1
    if isinstance(obj, (tuple, list)):
        return sum(_arrays_in(o) for o in obj)
    if isinstance(obj, dict):
        return sum(_arrays_in(o) for o in obj.values())
    return 0


@pytest.mark.parametrize("name,fun,x", CASES, ids=_IDS)
def test_saves_no_array(name, fun, x):
    ans, args, kwargs = _saved_record(fun, x)
    assert type(ans) is ArrayMeta
    assert type(args[0]) is ArrayMeta and args[0].shape == x.shape
    assert _arrays_in((ans, args, kwargs)) == 0


@pytest.mark.parametrize("prim", _PRIMS, ids=[p.name for p in _PRIMS])
def test_saved_spec_is_empty(prim):
    assert prim.saved_spec == ()


# =============================================================================
# Values against independent results
# =============================================================================
@pytest.mark.parametrize("norm,scale", [(None, 1.0), ("ortho", None), ("forward", None)])
def test_parseval_gradient(norm, scale):
    """sum |fft(x)|^2 = c * sum |x|^2, so its gradient is 2 c x (c = N, 1, 1/N)."""
    x = _data(8, 3)
    n = x.shape[-1]
    c = {None: n, "ortho": 1.0, "forward": 1.0 / n}[norm]
    g = grad(lambda a: np.sum(np.abs(fft.fft(a, norm=norm)) ** 2))(x)
    onp.testing.assert_allclose(g, 2 * c * x, rtol=1e-10, atol=1e-12)


@pytest.mark.parametrize("n", [6, 7])
def test_irfft_of_rfft_is_identity(n):
    """irfft(rfft(x, n), n) is x (padded/truncated to n): its VJP is the pad's transpose."""
    x = _data(3, 5)
    w = _data(3, n, seed=3)
    g = grad(lambda a: np.sum(w * fft.irfft(fft.rfft(a, n), n)))(x)
    expected = onp.zeros_like(x)
    k = min(n, x.shape[-1])
    expected[:, :k] = w[:, :k]
    onp.testing.assert_allclose(g, expected, rtol=1e-10, atol=1e-12)


def _autograd():
    ag = pytest.importorskip("autograd")
    import autograd.numpy as agnp

    return ag, agnp


@pytest.mark.parametrize("which", ["fft", "rfft", "irfft", "fft2", "rfftn", "fftshift"])
def test_matches_autograd(which):
    ag, agnp = _autograd()
    xr, xc = _data(4, 6), _data(4, 6, complex_=True)
    cases = {
        "fft": (lambda f, a: f.fft(a, 8, norm="ortho"), xc),
        "rfft": (lambda f, a: f.rfft(a, axis=0), xr),
        "irfft": (lambda f, a: f.irfft(a, 6), xc),
        "fft2": (lambda f, a: f.fft2(a, s=(3, 6)), xr),
        "rfftn": (lambda f, a: f.rfftn(a, norm="ortho"), xr),
        "fftshift": (lambda f, a: f.fftshift(a, axes=0), xc),
    }
    body, x = cases[which]
    w = _data(*body(onp.fft, x).shape, seed=5, complex_=True)

    def loss(f, m):
        def fun(a):
            y = body(f, a)
            return m.sum(m.real(y * w)) + m.sum(m.abs(y) ** 2)

        return fun

    ours = grad(loss(fft, np))(x)
    theirs = ag.grad(loss(agnp.fft, agnp))(x)
    assert ours.dtype == x.dtype
    onp.testing.assert_allclose(ours, theirs, rtol=1e-10, atol=1e-12)


def test_repeated_axis_real_transform_raises():
    with pytest.raises(NotImplementedError, match="repeated"):
        grad(lambda a: np.sum(np.abs(fft.rfftn(a, axes=(1, 1)))))(R2)


@pytest.mark.skipif(not NUMPY2, reason="numpy.fft's out= is new in NumPy 2")
def test_out_into_plain_array_raises_and_into_traced_buffer_traces():
    x = _data(4)
    buf = onp.empty(4, complex)
    with pytest.raises(gradcy.TracerArrayConversionError, match="fft.fft: out= is a plain"):
        make_jvp(lambda a: fft.fft(a, out=buf))(x)(onp.ones(4))

    def into_buffer(a):
        b = np.zeros(4, complex)
        fft.fft(a, out=b)
        return b

    y, t = make_jvp(into_buffer)(x)(onp.ones(4))
    onp.testing.assert_allclose(t, onp.fft.fft(onp.ones(4)))
    onp.testing.assert_allclose(y, onp.fft.fft(x))
