"""gradcy.jit with Numba: what it compiles (kernels, rolled loops, NumPy calls for the rest),
that a replay equals eager gradcy at fresh inputs, and that its guards record again where
const_graph's do (never a stale replay)."""

import operator
import warnings

import numpy as onp
import pytest

pytest.importorskip("numba")

import gradcy
import gradcy.extend
import gradcy.numpy as gnp
from gradcy import _buffer_plan, _codegen, _segments, grad, jit, value_and_grad
from gradcy.misc import tracers


@pytest.fixture
def recordings(monkeypatch):
    """The list of recordings made while the test runs (one entry per _record call)."""
    made = []
    record = tracers._record

    def counting(fun, x):
        made.append(x)
        return record(fun, x)

    monkeypatch.setattr(tracers, "_record", counting)
    return made


def _names(fast):
    """The names of the steps of the most recent program of a jit function, those of each
    native segment's steps in its place."""
    out = []
    for s in fast.programs[0][1].steps:
        out.extend(getattr(s[0], "step_names", None) or (getattr(s[0], "__name__", ""),))
    return out


def _kernels(fast):
    """The kernel calls of the most recent program of a jit function."""
    return [n for n in _names(fast) if n == "run_kernel"]


def _close(got, want, rtol=1e-13):
    got = got if isinstance(got, tuple) else (got,)
    want = want if isinstance(want, tuple) else (want,)
    assert len(got) == len(want)
    for g, w in zip(got, want):
        assert type(g) is type(w) and onp.shape(g) == onp.shape(w)
        assert onp.result_type(g) == onp.result_type(w)
        assert onp.allclose(g, w, rtol=rtol, atol=1e-300, equal_nan=True), (g, w)


def sin_chain(x, steps=40):
    for _ in range(steps):
        x = gnp.sin(x) * 1.0001 + 0.01 * x
    return gnp.sum(x)


def test_sin_chain_is_one_kernel_with_its_steps_rolled_into_loops(recordings):
    fast = jit(grad(sin_chain))
    rs = onp.random.RandomState(0)
    x = rs.randn(3)
    _close(fast(x), grad(sin_chain)(x))
    kernels = _kernels(fast)
    assert len(kernels) == 1 and len(fast.programs[0][1].steps) == 1
    source = next(iter(_codegen._kernels))
    for src in _codegen._kernels:
        if "np.cos" in src and "np.sin" in src:
            source = src
    # the forward and the backward repeats are loops (the backward reads the forward's
    # values, saved in an array, in reverse order)
    assert source.count("for r") == 2 and "- 1 * r" in source, source
    assert source.count("np.sin") == 1, source
    for _ in range(4):
        x = rs.randn(3) * 2
        _close(fast(x), grad(sin_chain)(x))
    assert len(recordings) == 1


def rnn(Wh, Wx, b, xs):
    h = gnp.zeros((xs.shape[1], Wh.shape[0]))
    for t in range(xs.shape[0]):
        h = gnp.tanh(xs[t] @ Wx + h @ Wh + b)
    return gnp.sum(h**2)


def test_rnn_gradient_keeps_products_as_numpy_calls(recordings):
    rs = onp.random.RandomState(1)
    args = (rs.randn(5, 5) * 0.4, rs.randn(3, 5), rs.randn(5), rs.randn(6, 4, 3))
    fast = jit(value_and_grad(rnn, (0, 1, 2)))
    want = value_and_grad(rnn, (0, 1, 2))(*args)
    got = fast(*args)
    assert type(got) is tuple and type(got[1]) is tuple
    _close(got[0], want[0])
    _close(got[1], want[1])
    names = _names(fast)
    assert "matmul" in names and "run_kernel" in names
    assert "tanh" not in names  # every tanh is in a kernel (20 elements)
    # the gradient accumulations write into the dead sum's buffer
    assert any(n.startswith("add_into_") for n in names)
    for _ in range(3):
        new = tuple(a * rs.uniform(0.5, 1.5, a.shape) for a in args)
        got, want = fast(*new), value_and_grad(rnn, (0, 1, 2))(*new)
        _close(got[0], want[0], 1e-12)
        _close(got[1], want[1], 1e-12)
    assert len(recordings) == 1


def test_rnn_runs_as_native_segments_shared_by_the_loop_bit_for_bit(recordings):
    # T=30: the steps between the NumPy calls run as Numba functions (products as BLAS
    # calls, tanh through NumPy's own loop on 64 elements); the repeats of the loop share
    # compiled segments
    rs = onp.random.RandomState(2)
    args = (rs.randn(8, 8) * 0.4, rs.randn(3, 8), rs.randn(8), rs.randn(30, 8, 3))
    fast = jit(grad(rnn, (0, 1, 2)))
    fast(*args)
    steps = fast.programs[0][1].steps
    segments = [s[0] for s in steps if getattr(s[0], "step_names", None)]
    assert len(segments) >= 3 and len({id(f) for f in segments}) < len(segments)
    # the loop's repeats run in segments; the first and last repeats (one-off code, not
    # worth a compile) and the segments' glue (their outputs unpacked) stay Python calls
    inside = sum(len(f.step_names) for f in segments)
    outside = [s for s in steps if not getattr(s[0], "step_names", None)]
    outside = [s for s in outside if getattr(s[0], "__name__", "") != "getitem"]
    assert inside > 4 * len(outside), (inside, len(outside))
    for _ in range(3):
        new = tuple(a * rs.uniform(0.5, 1.5, a.shape) for a in args)
        got, want = fast(*new), grad(rnn, (0, 1, 2))(*new)
        for g, w in zip(got, want):
            assert type(g) is onp.ndarray and g.dtype == w.dtype
            onp.testing.assert_array_equal(g, w)
    assert len(recordings) == 1


def test_no_segments_where_numpy_calls_would_stay_most_of_the_program():
    # each repeat's einsums (which stay NumPy calls) cut the loop into short native runs:
    # their compile would buy little, so none is made
    def f(Wh, xs):
        h = gnp.zeros((xs.shape[1], Wh.shape[0]))
        for t in range(xs.shape[0]):
            a = gnp.einsum("bi,ij->bj", h, Wh)
            h = gnp.tanh(gnp.einsum("bi,ij->bj", xs[t], Wh) + a) @ Wh
            h = gnp.einsum("bi,ij->bj", h, Wh)
        return gnp.sum(h**2)

    rs = onp.random.RandomState(3)
    args = (rs.randn(8, 8) * 0.3, rs.randn(20, 8, 8))
    fast = jit(grad(f))
    _close(fast(*args), grad(f)(*args))
    steps = fast.programs[0][1].steps
    assert not [s for s in steps if getattr(s[0], "step_names", None)]
    products = ("einsum", "einsum_matmul")  # (an einsum, or the matrix product it is)
    assert sum(getattr(s[0], "__name__", "") in products for s in steps) >= 60


def test_a_branch_on_a_value_records_each_branch_never_stale(recordings):
    def f(x):
        y = gnp.exp(x) * 2.0
        if gnp.sum(y) > 10.0:
            return gnp.sum(gnp.sin(y) * y)
        return gnp.sum(gnp.cos(y) - y)

    fast = jit(grad(f))
    small, big = onp.array([0.1, 0.2]), onp.array([1.5, 2.0])
    for x in (small, big, small * 0.5, big * 1.1, small):
        _close(fast(x), grad(f)(x))
    assert len(recordings) == 2


def test_shapes_and_dtypes_record_again():
    fast = jit(grad(lambda x: gnp.sum(gnp.tanh(x) * x * 3.0)))
    for x in (onp.ones(3), onp.ones((2, 3)), onp.ones(3, onp.float32), onp.ones(4)):
        got = fast(x * 0.3)
        assert got.dtype == x.dtype and got.shape == x.shape
        _close(got, grad(lambda x: gnp.sum(gnp.tanh(x) * x * 3.0))(x * 0.3), 1e-6)
    assert len(fast.programs) == 4


def test_float32_stays_float32_and_operands_broadcast():
    def f(x, y):
        z = gnp.sin(x) * y + 0.5 * x - y / 3.0  # (4, 3) from (4, 1) and (3,)
        return gnp.sum(gnp.maximum(z, 0.1) * z)

    g = grad(f, (0, 1))
    fast = jit(g)
    rs = onp.random.RandomState(2)
    for dtype, rtol in ((onp.float64, 1e-13), (onp.float32, 1e-5)):
        for _ in range(3):
            x, y = rs.randn(4, 1).astype(dtype), rs.randn(3).astype(dtype)
            got = fast(x, y)
            assert [a.dtype for a in got] == [onp.dtype(dtype)] * 2
            _close(got, g(x, y), rtol)
    assert _kernels(fast)


def test_masks_nan_inf_and_division_by_zero_as_numpy():
    def f(x):
        y = gnp.where(x > 0, x / (x - 1.0), -x)  # x == 1: inf, as NumPy
        return gnp.sum(gnp.maximum(y, gnp.sqrt(x)))  # sqrt(-1): nan

    fast = jit(f)
    x = onp.array([0.5, 2.0, -1.0, 3.0])
    with onp.errstate(all="ignore"):
        fast(x)
        for x in (
            onp.array([1.0, 2.0, 0.25, 3.0]),
            onp.array([-1.0, 0.5, 2.0, 4.0]),
            onp.array([0.3, 0.5, 2.0, 4.0]),
        ):
            _close(fast(x), f(x))


def test_a_primitive_the_generator_does_not_know_runs_as_its_numpy_call():
    @gradcy.extend.primitive
    def cube(x):
        return x**3

    gradcy.extend.defvjp(cube, lambda ans, x: lambda g: g * 3 * x**2)

    def f(x):
        y = gnp.sin(x) * 2.0 + 1.0
        return gnp.sum(gnp.tanh(cube(y)) * y)

    fast = jit(grad(f))
    rs = onp.random.RandomState(3)
    for _ in range(3):
        x = rs.randn(5)
        _close(fast(x), grad(f)(x))
    names = _names(fast)
    assert "cube" in names and names.count("run_kernel") >= 2


def test_plain_function_and_containers():
    def f(x, y):
        return {"a": gnp.tanh(x) * y, "b": (gnp.exp(y) - 1.0,)}

    fast = jit(f)
    rs = onp.random.RandomState(4)
    for _ in range(3):
        x, y = rs.randn(2, 3), rs.randn(2, 3)
        got, want = fast(x, y), f(x, y)
        assert set(got) == {"a", "b"} and type(got["b"]) is tuple
        _close(got["a"], want["a"])
        _close(got["b"][0], want["b"][0])


def test_writes_run_eagerly_with_one_warning():
    def f(x):
        buf = gnp.zeros(3)
        buf[1] = gnp.sum(x * x)
        return gnp.sum(buf * 2.0)

    fast = jit(f)  # (its gradient reads the written slot: no write to replay)
    x = onp.array([1.0, 2.0, 3.0])
    with pytest.warns(RuntimeWarning, match="writes into arrays"):
        got = fast(x)
    assert onp.array_equal(got, f(x))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert onp.array_equal(fast(x * 2), f(x * 2))
    fast = jit(grad(f))
    assert onp.array_equal(fast(x), grad(f)(x)) and fast.programs


def test_keyword_arguments_raise_naming_jit():
    fast = jit(lambda x: gnp.sum(gnp.sin(x)))
    with pytest.raises(
        TypeError, match="gradcy.jit: the compiled function takes its arguments by position only"
    ):
        fast(x=onp.ones(2))


def test_a_kernel_numba_cannot_compile_leaves_the_numpy_replay(monkeypatch):
    """A kernel that fails to compile (simulated: its source is broken) warns and runs the
    program's NumPy calls."""
    real = _codegen._emit
    monkeypatch.setattr(_codegen, "_emit", lambda *a: real(*a) + "\n undefined_name()")
    monkeypatch.setattr(_codegen, "_kernels", {})

    def f(x):
        return gnp.sum(gnp.sin(x) * 3.0 + x)

    fast = jit(grad(f))
    x = onp.array([0.3, 0.4])
    with pytest.warns(RuntimeWarning, match="runs as NumPy calls: a kernel did not compile"):
        fast(x)
    assert not _kernels(fast)
    assert onp.array_equal(fast(x * 2), grad(f)(x * 2))


def test_numpys_simd_functions_stay_numpy_calls_on_large_arrays():
    """tanh of 64 elements or more is NumPy's (SIMD) call, between kernels; the gradient's
    bits are const_graph's where the kernels use exact operations."""

    def f(x):
        y = gnp.tanh(x * 2.0 + 1.0)
        return gnp.sum(y * y - x)

    fast = jit(grad(f))
    slow = tracers.const_graph(grad(f))
    rs = onp.random.RandomState(6)
    for _ in range(3):
        x = rs.randn(8, 16)
        got = fast(x)
        assert onp.array_equal(got, slow(x)) and onp.array_equal(got, grad(f)(x))
    names = _names(fast)
    assert "tanh" in names and names.count("run_kernel") >= 2


def memory_network(W, x, S=12):
    """Slot writes into a preallocated buffer; each step reads the prefix written so far."""
    memory = gnp.zeros((x.shape[0], S + 1, x.shape[1]))
    memory[:, 0] = x
    for i in range(S):
        prefix = memory[:, : i + 1]
        h = gnp.tanh(gnp.sum(prefix, axis=1) @ W)
        memory[:, i + 1] = h * 0.5
    return gnp.sum(memory[:, -1] ** 2) + gnp.sum(gnp.mean(memory, axis=1))


def test_slot_writes_go_into_the_buffer_when_no_live_value_sees_them():
    import tracemalloc

    rs = onp.random.RandomState(8)
    W, x = rs.randn(8, 8) * 0.3, rs.randn(3, 8)
    g = grad(memory_network)
    fast = jit(g)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        _close(fast(W, x), g(W, x))
    names = _names(fast)
    # every write but the first (a copy of the zeros constant) is made in place: the forward's
    # 12, and the backward's 11 zeroings of a written slot's cotangent, whose read of the slot
    # (the written value's cotangent) moves before it as a copy of the slot
    assert names.count("_at_set") == 1 and names[0] == "_at_set"
    assert names.count("_set_into") == 23 and names.count("_take_copy") == 11, names
    # the prefixes' gradients are added into the cotangent buffer, not each into a zero array
    # of the buffer's shape first (the loss's read: into a copy of the constant it is added to)
    assert names.count("untake") == 0 and names.count("_add_at") == 11, names
    assert names.count("_copy_add_at") == 1, names
    for _ in range(3):
        W2, x2 = rs.randn(8, 8) * 0.3, rs.randn(3, 8)
        _close(fast(W2, x2), g(W2, x2), 1e-12)
    # no copy of the buffer per write: the peak is a few buffers, not one per slot
    buffer = 3 * 13 * 8 * 8 * 8  # bytes
    tracemalloc.start()
    try:
        fast(W, x)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 3 * buffer, peak  # (12 copies without the in-place writes)


def test_a_write_over_values_the_backward_pass_reads_stays_a_copy():
    def f(x):
        buf = gnp.zeros((2, 4))
        buf[0] = x
        p = buf[:, :2]  # sin saves this view of the buffer for its gradient
        h = gnp.sum(gnp.sin(p))
        buf[:, 1] = h  # ... and this write changes what it saw
        return gnp.sum(buf * buf) + h

    fast = jit(grad(f))
    rs = onp.random.RandomState(9)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # (compiled, not left to the NumPy replay)
        for _ in range(3):
            x = rs.randn(4)
            _close(fast(x), grad(f)(x))
    names = _names(fast)
    # the two forward writes stay copies; the backward's zeroing of the written slot's
    # cotangent is made in place, after a copy of the slot it reads
    assert names.count("_at_set") == 2 and names.count("_set_into") == 1, names
    assert names.index("_take_copy") < names.index("_set_into"), names


_CACHED_RUN = """
import sys
import numpy as onp
import gradcy.numpy as gnp
from gradcy import _codegen, grad, jit

def f(x):
    for _ in range(30):
        x = gnp.sin(x) * 1.0001 + 0.01 * x
    return gnp.sum(x)

x = onp.array([0.1, -0.7, 2.0])
fast = jit(grad(f))
got = fast(x)
kernels = [k for k in _codegen._kernels.values() if hasattr(k, "stats")]
assert len(kernels) == 1
stats = kernels[0].stats
print(sum(stats.cache_hits.values()), sum(stats.cache_misses.values()),
      onp.array_equal(got, grad(f)(x)) or abs(got - grad(f)(x)).max() < 1e-13)
"""


_SEGMENTS_RUN = """
import hashlib
import numpy as onp
import gradcy.numpy as gnp
from gradcy import _codegen, grad, jit

def rnn(Wh, Wx, b, xs):
    h = gnp.zeros((xs.shape[1], Wh.shape[0]))
    for t in range(xs.shape[0]):
        h = gnp.tanh(xs[t] @ Wx + h @ Wh + b)
    return gnp.sum(h**2)

rs = onp.random.RandomState(2)
args = (rs.randn(8, 8) * 0.4, rs.randn(3, 8), rs.randn(8), rs.randn(30, 8, 3))
fast = jit(grad(rnn, (0, 1, 2)))
got = fast(*args)
segments = {id(s[0]) for s in fast.programs[0][1].steps if getattr(s[0], "step_names", None)}
want = grad(rnn, (0, 1, 2))(*args)
assert all(onp.allclose(g, w, rtol=1e-12, atol=0) for g, w in zip(got, want))
print(_codegen.native_compiles(), len(segments),
      hashlib.sha256(b"".join(g.tobytes() for g in got)).hexdigest())
"""


def _run_in_a_process(src, cache):
    import os
    import subprocess
    import sys

    out = subprocess.run(
        [sys.executable, "-W", "error::RuntimeWarning", "-c", src],
        env=dict(os.environ, GRADCY_JIT_CACHE=cache),
        capture_output=True,
        text=True,
        cwd=os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
    )
    assert out.returncode == 0, out.stderr
    return out.stdout.split()


def test_native_segments_compile_once_across_processes_through_the_disk_cache(tmp_path):
    """A native segment (and the kernels and NumPy loop calls it runs) is cached on disk as a
    kernel is: a second process compiles nothing. Cache files that no longer match their seal
    (corrupted), and a source file that is not what its name says, are ignored: what they
    held compiles again, to the same bits."""
    import glob
    import os

    cache = str(tmp_path / "jit")
    compiles, n_segments, bits = _run_in_a_process(_SEGMENTS_RUN, cache)
    assert int(compiles) > int(n_segments) >= 2
    assert _run_in_a_process(_SEGMENTS_RUN, cache) == ["0", n_segments, bits]
    data = sorted(glob.glob(os.path.join(cache, "__pycache__", "gradcy_segment_*.nbc")))
    assert len(data) == int(n_segments)  # (one compiled signature each)
    for path in data:  # bytes flipped in the compiled code of every segment
        with open(path, "r+b") as fh:
            b = bytearray(fh.read())
            for i in range(64, len(b), 61):
                b[i] ^= 0x5A
            fh.seek(0)
            fh.write(b)
    (kernel_index,) = glob.glob(os.path.join(cache, "__pycache__", "gradcy_kernel_*.nbi"))[:1]
    with open(kernel_index, "r+b") as fh:  # a kernel's index cut short
        fh.truncate(7)
    (source,) = glob.glob(os.path.join(cache, "gradcy_segment_*.py"))[:1]
    with open(source, "w") as fh:
        fh.write("def segment(:\n")
    assert _run_in_a_process(_SEGMENTS_RUN, cache) == [str(int(n_segments) + 1), n_segments, bits]
    assert _run_in_a_process(_SEGMENTS_RUN, cache) == ["0", n_segments, bits]


def test_kernels_compile_once_across_processes_through_the_disk_cache(tmp_path):
    # a kernel's compiled code is kept on disk, keyed by its source: a second process loads
    # it (a cache hit) instead of compiling it again; an empty GRADCY_JIT_CACHE turns it off
    import os
    import subprocess
    import sys

    def run(cache):
        env = dict(os.environ, GRADCY_JIT_CACHE=cache)
        out = subprocess.run(
            [sys.executable, "-c", _CACHED_RUN],
            env=env,
            capture_output=True,
            text=True,
            cwd=os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
        )
        assert out.returncode == 0, out.stderr
        return out.stdout.split()

    cache = str(tmp_path / "jit")
    assert run(cache) == ["0", "1", "True"]  # compiled (a miss), written to the cache
    assert [f for f in os.listdir(cache) if f.endswith(".py")]
    assert run(cache) == ["1", "0", "True"]  # loaded from disk
    assert run("") == ["0", "1", "True"]  # no disk cache: compiled again


def memory_network_tanh(W, x, S=6):
    """Each step's output, tanh's, written into its slot as it is (tanh's derivative reads it);
    the backward pass reads the prefixes (the memory lives until its end)."""
    memory = gnp.zeros((x.shape[0], S + 1, x.shape[1]))
    memory[:, 0] = x
    for i in range(S):
        prefix = memory[:, : i + 1]
        memory[:, i + 1] = gnp.tanh(gnp.sum(prefix * prefix, axis=1) @ W)
    return gnp.sum(memory[:, -1]) - gnp.sum(gnp.mean(memory, axis=1))


def _planned(monkeypatch, fun, *args):
    """The planned NumPy program of jit(fun) (native segments off) and the jit function."""
    monkeypatch.setattr(_segments, "_native_program", lambda *a: None)
    fast = jit(fun)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        _close(fast(*args), fun(*args))
    return fast.programs[0][1].steps, fast


def _values_kept_after_writes(steps):
    """(writes of a value, the number of those whose value slot is read after the write)."""
    writes = kept = 0
    for k, step in enumerate(steps):
        v = dict(step[2]).get(2)
        if step[0] is _codegen._set_into and v is not None:
            writes += 1
            kept += any(s == v for later in steps[k + 1 :] for _, s in later[2])
    return writes, kept


def test_a_written_value_is_read_back_from_its_buffer(monkeypatch):
    """tanh's outputs written into the memory are read by tanh's derivative from the memory
    (a view of the slot taken at that read), not kept as one array per step."""
    rs = onp.random.RandomState(11)
    W, x = rs.randn(5, 5) * 0.4, rs.randn(2, 5)
    g = grad(memory_network_tanh)
    steps, fast = _planned(monkeypatch, g, W, x)
    # 5 writes of a value (cell 5's is not recorded: the loss's derivative does not read
    # the memory's values); only cell 0's value is kept: the backward pass reads it after
    # its last read of the memory (a view would keep the memory alive longer than it)
    assert _values_kept_after_writes(steps) == (5, 1)
    for _ in range(3):
        W2, x2 = rs.randn(5, 5) * 0.4, rs.randn(2, 5)
        _close(fast(W2, x2), g(W2, x2), 1e-12)
    monkeypatch.undo()
    fast = jit(g)  # (with native segments)
    for _ in range(2):
        W2, x2 = rs.randn(5, 5) * 0.4, rs.randn(2, 5)
        _close(fast(W2, x2), g(W2, x2), 1e-12)


def test_a_value_whose_region_is_written_again_is_kept(monkeypatch):
    def f(x):
        buf = gnp.zeros((3, 4))
        buf[0] = x
        row = buf[0]  # read by the backward pass after h (the buffer lives that long)
        h = gnp.tanh(row * row)
        buf[1] = h
        buf[1] = 2.0 * x  # overwrites h's region while h is still to be read
        return gnp.sum(buf * buf) + gnp.sum(h * h)

    rs = onp.random.RandomState(12)
    steps, fast = _planned(monkeypatch, grad(f), rs.randn(4))
    assert sum(1 for s in steps if s[0] is _codegen._set_into) >= 1
    # (h's write keeps h; the value of the write over it, 2 * x, is read by nothing later)
    assert _values_kept_after_writes(steps) == (2, 1)
    for _ in range(3):
        x = rs.randn(4)
        _close(fast(x), grad(f)(x))


def test_a_sum_of_outer_product_einsums_is_one_kernel(monkeypatch):
    """add(einsum('bs,bd->bsd', ...), einsum(...)), each product read by the add only (a
    memory network's prefix cotangents), runs as one kernel: one array of the output's size,
    not three. An einsum that sums over an index (a matrix product: np.matmul), or whose
    result is read elsewhere, stays."""

    def f(a, b, c, d):
        s = gnp.einsum("bs,bd->bsd", a, b) + gnp.einsum("bs,bd->bsd", c, d)
        kept = gnp.einsum("bs,bd->bsd", a, d)  # read twice: stays an einsum
        summed = gnp.einsum("bs,bsd->bd", c, s)  # sums over s: stays an einsum
        return gnp.sum(gnp.sin(s) * kept) + gnp.sum(summed) + gnp.sum(kept + kept * 2.0)

    rs = onp.random.RandomState(13)
    args = [rs.randn(2, 3), rs.randn(2, 4), rs.randn(2, 3), rs.randn(2, 4)]
    steps, fast = _planned(monkeypatch, f, *args)
    names = [getattr(step[0], "__name__", "") for step in steps]
    assert names.count("einsum") == 1 and names.count("einsum_matmul") == 1, names
    expanded = [s for s in steps if s[0] is operator.getitem and None in s[1][1]]
    assert len(expanded) == 4, names  # (a[:, :, None], b[:, None, :] of each product)
    adds = [
        step
        for step in steps
        if getattr(step[0], "__name__", "") == "run_kernel" and len(step[2]) == 4
    ]
    assert len(adds) == 1, names  # both products and their sum, from the 4 expanded operands
    for _ in range(3):
        xs = [rs.randn(2, 3), rs.randn(2, 4), rs.randn(2, 3), rs.randn(2, 4)]
        _close(fast(*xs), f(*xs), 1e-12)
    g = grad(f, (0, 1, 2, 3))  # (the backward pass's cotangents: the same pattern)
    fast_g = jit(g)
    _close(fast_g(*args), g(*args), 1e-12)
    xs = [rs.randn(2, 3), rs.randn(2, 4), rs.randn(2, 3), rs.randn(2, 4)]
    _close(fast_g(*xs), g(*xs), 1e-12)


def _long_lived_views(steps):
    """The views (getitem results) read again _VIEW_GAP steps or more after their previous
    read (or their making): each is an object kept alive across the gap."""
    made, prev, long = {}, {}, set()
    for k, step in enumerate(steps):
        for _, s in step[2]:
            if s in made and k - prev[s] >= _buffer_plan._VIEW_GAP:
                long.add(s)
            prev[s] = k
        if getattr(step[0], "__name__", "") == "getitem":
            made[step[4]] = prev[step[4]] = k
    return long


def test_views_read_again_in_the_backward_pass_are_taken_again_there(monkeypatch):
    """The prefixes (memory[:, :i+1]) the backward pass reads are views taken at that read,
    from the memory, not one view per step kept from the forward pass."""
    rs = onp.random.RandomState(14)
    W, x = rs.randn(5, 5) * 0.4, rs.randn(2, 5)
    g = grad(memory_network_tanh)
    steps, fast = _planned(monkeypatch, g, W, x)
    assert _long_lived_views(steps) == set()
    for _ in range(3):
        W2, x2 = rs.randn(5, 5) * 0.4, rs.randn(2, 5)
        _close(fast(W2, x2), g(W2, x2), 1e-12)


def test_a_view_whose_region_is_written_in_between_replays_right(monkeypatch):
    """The write over a view still to be read is a copy (the view stays on the old version),
    so the view taken again reads the values it read."""

    def f(x):
        buf = gnp.zeros((2, 4))
        buf[0] = x
        p = buf[0]  # sin reads this view in the backward pass
        y = gnp.sum(gnp.sin(p) * 3.0) + gnp.sum(x * x) * 2.0
        buf[0] = x * 0.5  # a write into p's region (p is not read in between)
        return y + gnp.sum(buf * buf)

    rs = onp.random.RandomState(15)
    steps, fast = _planned(monkeypatch, grad(f), rs.randn(4))
    for _ in range(3):
        x = rs.randn(4)
        _close(fast(x), grad(f)(x))


def test_outer_products_stay_einsums_across_a_write_into_their_operands(monkeypatch):
    def f(x, y):
        buf = gnp.zeros((2, 3))
        buf[0] = x
        e1 = gnp.einsum("s,d->sd", buf[0], y)  # reads a view of buf's row 0 ...
        buf[0] = y * 2.0  # ... which is written here, in place (the view is dead)
        e2 = gnp.einsum("s,d->sd", y, x)
        return gnp.sum(gnp.sin(e1 + e2)) + gnp.sum(buf * x)  # (the write is recorded)

    g = grad(f)  # (a write is replayed in a derivative's program)
    rs = onp.random.RandomState(16)
    steps, fast = _planned(monkeypatch, g, rs.randn(3), rs.randn(3))
    names = [getattr(step[0], "__name__", "") for step in steps]
    assert names.count("_set_into") == 1 and names.count("einsum") >= 2, names
    for _ in range(3):
        x, y = rs.randn(3), rs.randn(3)
        _close(fast(x, y), g(x, y))


def test_einsums_that_are_matrix_products_run_as_matmul(monkeypatch):
    """An einsum of two float arrays that is a (batched) matrix product, vector product or
    dot runs as one np.matmul on transposed views; the result has einsum's shape, dtype and
    C order and its values within rounding. Outer products, traces and a letter summed in
    one operand only stay einsums."""
    specs = {
        "bsd,bd->bs": True,  # a memory network's attention scores (matrix @ vector)
        "bs,bsd->bd": True,  # and its read (vector @ matrix)
        "ij,kj->ki": True,  # (a transposed output: into a C-ordered buffer)
        "bi,bi->b": True,  # (a batched dot)
        "sbd,bd->sb": True,  # (a batch letter not first)
        "i,j->ij": False,  # an outer product: nothing summed
        "ii,ij->j": False,  # a repeated letter
        "ab,cb->": False,  # no output letter (a scalar)
        "abc,bc->a": False,  # two letters summed
    }
    shapes = {"b": 3, "s": 4, "d": 5, "i": 2, "j": 6, "k": 3, "a": 2, "c": 3}
    rs = onp.random.RandomState(21)
    args = []
    for spec in specs:
        ins = spec.split("->")[0].split(",")
        args += [rs.randn(*[shapes[c] for c in t]) for t in ins]
    args = [a.astype(onp.float32) if k in (8, 9) else a for k, a in enumerate(args)]  # (sbd,bd)

    def f(*xs):
        total = 0.0
        for k, spec in enumerate(specs):
            total = total + gnp.sum(gnp.sin(gnp.einsum(spec, xs[2 * k], xs[2 * k + 1])))
        return total

    steps, fast = _planned(monkeypatch, f, *args)
    lowered = {s[0].subscripts for s in steps if getattr(s[0], "__name__", "") == "einsum_matmul"}
    assert lowered == {spec for spec, yes in specs.items() if yes}, lowered
    for _ in range(2):
        xs = [a * rs.uniform(0.5, 1.5, a.shape).astype(a.dtype) for a in args]
        got, want = fast(*xs), f(*xs)
        assert type(got) is type(want) and onp.result_type(got) == onp.result_type(want)
        assert onp.allclose(got, want, rtol=1e-5, atol=1e-5)  # (a float32 product)
    for spec, yes in specs.items():
        ins = spec.split("->")[0].split(",")
        ops = [rs.randn(*[shapes[c] for c in t]) for t in ins]
        fun = _buffer_plan._einsum_matmul(spec)
        assert (fun is not None) == yes, spec
        if yes:
            got, want = fun(spec, *ops), onp.einsum(spec, *ops)
            assert got.shape == want.shape and got.dtype == want.dtype
            assert got.flags.c_contiguous and got.base is None  # (one object, as einsum's)
            _close(got, want)


def test_einsums_lowered_only_where_the_result_stays_within_rounding(monkeypatch):
    """Where lowering every einsum moves the program's result beyond the check gradcy.jit makes
    (a recurrence amplifies BLAS's other rounding), the einsums from the earliest point where
    it stays within are lowered: here a forward product made wrong on purpose stays an
    einsum in every step, and every backward one (after them all) is lowered."""
    real = _buffer_plan._einsum_matmul

    def off(spec):
        f = real(spec)
        if spec != "ij,bj->bi" or f is None:
            return f
        return lambda *a: f(*a) * (1.0 + 1e-9)  # (the forward product, wrong in the 9th digit)

    monkeypatch.setattr(_buffer_plan, "_einsum_matmul", off)

    def f(W, x):
        for _ in range(6):
            x = gnp.tanh(gnp.einsum("ij,bj->bi", W, x))
        return gnp.sum(x**2)

    rs = onp.random.RandomState(22)
    W, x = rs.randn(4, 4) * 0.5, rs.randn(3, 4)
    g = grad(f, (0, 1))
    steps, fast = _planned(monkeypatch, g, W, x)
    specs = [
        (getattr(s[0], "__name__", ""), s[1][0])
        for s in steps
        if getattr(s[0], "__name__", "") in ("einsum", "einsum_matmul")
    ]
    forward = [name for name, spec in specs if spec == "ij,bj->bi"]
    backward = [name for name, spec in specs if spec != "ij,bj->bi"]
    assert forward == ["einsum"] * 6 and backward == ["einsum_matmul"] * 12, specs
    for _ in range(2):
        W2, x2 = rs.randn(4, 4) * 0.5, rs.randn(3, 4)
        _close(fast(W2, x2), g(W2, x2))


def test_an_untake_also_read_inside_a_container_is_not_folded_into_the_add(monkeypatch):
    """add(a, untake(g, idx, ...)) becomes a[idx] += g only where the add is untake's one
    reader: here np.polyval also reads it (inside its list of coefficients), so it stays."""
    from gradcy.numpy.indexing import untake

    def f(x):
        a = gnp.sin(x)  # (a fresh array, read last by the add)
        u = untake(x[:2] * 2.0, (slice(0, 2),), (4,), x.dtype)
        s = a + u  # (no kernel: the steps around it are of other shapes)
        return gnp.sum(gnp.polyval([u, s], gnp.cos(x)))

    rs = onp.random.RandomState(23)
    steps, fast = _planned(monkeypatch, f, rs.randn(4))
    assert "untake" in [getattr(s[0], "__name__", "") for s in steps]
    for _ in range(3):
        x = rs.randn(4)
        assert onp.array_equal(fast(x), f(x))


def test_the_output_read_again_inside_its_kernel_is_still_written():
    """The program's output is read after its last step even where a step of the same fused
    run reads it too (a branch on a value computed from it): the kernel writes it out."""

    def f(x):
        y = gnp.sin(x) * 2.0
        z = gnp.cos(y) + y
        if gnp.sum(z) > -100.0:  # (the recording keeps z's steps for this guard)
            return y
        return x

    fast = jit(f)
    x = onp.linspace(-1.0, 1.0, 5)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert onp.array_equal(fast(x), f(x))
    assert _kernels(fast)
    for scale in (0.5, 2.0):
        assert onp.array_equal(fast(x * scale), f(x * scale))


def test_a_program_of_no_steps_compiles():
    """jit of a function that returns its argument (a recording of no step) runs without a
    warning and gives the argument back."""
    x = onp.arange(3.0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert onp.array_equal(jit(lambda x: x)(x), x)
        assert jit(grad(lambda x: x * 1.0))(2.0) == 1.0
