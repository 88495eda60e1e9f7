"""Writes follow NumPy's semantics (issue 10, items 1, 2 and 12).

Each program is written once, prog(x, m), and run with m = numpy (the reference: plain arrays,
NumPy's own semantics) and with m = gradcy.numpy: the values must agree, and gradcy's reverse
gradient and forward JVPs must equal central differences of the NumPy program; the second
derivatives (reverse over reverse, forward over reverse, forward over forward) must equal
central differences of the first. Programs NumPy runs but gradcy cannot represent raise a
clear error instead. The engine's counters are back to zero after each test (counters.py).
"""

import numpy as onp
import pytest

import gradcy.numpy as np
from gradcy import _core, grad, hessian, make_jvp, make_vjp, value_and_grad
from gradcy.test_util import check_grads

from vjp_harness import central_gradient

COVERED = {"gradcy.numpy.strided_view", "gradcy.numpy.whole_of"}


def check_program(prog, x, order=2):
    """prog(x, m) against NumPy: value, reverse gradient, forward JVPs along every axis, and
    (order 2) the Hessian from reverse over reverse, forward over reverse and forward over
    forward, against central differences."""

    def ref(x):
        return prog(onp.array(x, copy=True), onp)

    def traced(x):
        return prog(x, np)

    x_before = x.copy()
    expected = ref(x)
    numeric = central_gradient(ref, x)
    vjp, value = make_vjp(traced)(x)
    try:
        g = vjp(1.0)
    finally:
        vjp.release()
    onp.testing.assert_allclose(value, expected, rtol=1e-12, atol=1e-12)
    onp.testing.assert_allclose(g, numeric, rtol=1e-6, atol=1e-8)
    onp.testing.assert_allclose(grad(traced)(x), numeric, rtol=1e-6, atol=1e-8)
    for i in range(x.size):
        e = onp.zeros_like(x)
        e.flat[i] = 1.0
        y, jv = make_jvp(traced)(x)(e)
        onp.testing.assert_allclose(y, expected, rtol=1e-12, atol=1e-12)
        onp.testing.assert_allclose(jv, numeric.flat[i], rtol=1e-6, atol=1e-8)
    onp.testing.assert_array_equal(x, x_before)  # the caller's array never changes
    if order < 2:
        return
    gradient = grad(traced)
    h_numeric = onp.stack(
        [central_gradient(lambda z, i=i: gradient(z).flat[i], x).ravel() for i in range(x.size)]
    )
    h = hessian(traced)(x).reshape(x.size, x.size)
    onp.testing.assert_allclose(h, h_numeric, rtol=1e-5, atol=1e-6)
    for i in range(x.size):
        e = onp.zeros_like(x)
        e.flat[i] = 1.0
        _, hv = make_jvp(gradient)(x)(e)  # forward over reverse
        onp.testing.assert_allclose(hv.ravel(), h_numeric[:, i], rtol=1e-5, atol=1e-6)
    check_grads(traced, modes=("fwd",), order=2)(x)  # forward over forward


W3 = onp.array([1.0, 2.0, 3.0])
X2 = onp.array([0.7, -1.3])
X4 = onp.array([0.7, -1.3, 0.4, 1.1])


# =============================================================================
# 1. Repeated positions in advanced-index writes: NumPy keeps the value written last
# =============================================================================
def test_issue_example_repeated_index_set_keeps_the_last_value():
    def f(x, m):
        buf = m.zeros(3)
        buf[[0, 0]] = x
        return m.sum(buf * W3)

    onp.testing.assert_allclose(grad(lambda x: f(x, np))(X2), [0.0, 1.0])
    check_program(lambda x, m: m.sum(m.sin(_set_repeated(x, m)) * W3), X2)


def _set_repeated(x, m):
    buf = m.zeros(3)
    buf[[0, 0]] = x
    return buf


@pytest.mark.parametrize("op", ["+=", "-=", "*=", "/="])
def test_augmented_assignment_with_repeated_index_does_not_accumulate(op):
    def prog(x, m):
        buf = m.ones(3) * 1.5
        buf[2] = x[1]
        buf[0] = x[0]
        v = m.cos(x)
        if op == "+=":
            buf[[0, 2, 0]] += v[:3]
        elif op == "-=":
            buf[[0, 2, 0]] -= v[:3]
        elif op == "*=":
            buf[[0, 2, 0]] *= v[:3]
        else:
            buf[[0, 2, 0]] /= v[:3] + 2.0
        return m.sum(buf * buf * W3)

    check_program(prog, onp.array([0.7, -1.3, 0.4]))


def test_repeated_index_value_read_from_the_buffer_itself():
    # the issue's buf[[1, 1]] = buf[...]: the value is a view of the buffer being written
    def prog(x, m):
        buf = m.zeros(3)
        buf[:2] = x
        buf[[1, 1]] = buf[:2]  # buf[1] = old buf[1]
        buf[[2, 2, 0]] = buf[[0, 1, 1]] * 2.0  # buf[2] = 2 buf[1], buf[0] = 2 buf[1]
        return m.sum(m.sin(buf) * W3)

    from gradcy.numpy.inplace import _FANCY_WRITES_COPY

    if not _FANCY_WRITES_COPY:  # NumPy 1.x writes element by element: buf[1] = new buf[0]
        with pytest.raises(NotImplementedError, match="depends on its write order"):
            grad(lambda x: prog(x, np))(X2)
        return
    check_program(prog, X2)


def test_repeated_rows_of_a_2d_index_array_with_a_broadcast_value():
    def prog(x, m):
        buf = m.zeros((3, 2))
        rows = onp.array([[0, 2], [2, 0]])  # selection (2, 2, 2): rows 0 and 2 twice
        buf[rows] = m.reshape(x, (2, 1, 2)) * onp.array([[1.0], [3.0]])
        return m.sum(m.sin(buf) * onp.arange(1.0, 7.0).reshape(3, 2))

    check_program(prog, X4)


def test_repeated_positions_of_a_tuple_of_index_arrays():
    def prog(x, m):
        buf = m.ones((2, 3))
        buf[[0, 1, 0, 0], [2, 2, 2, 1]] = x  # (0, 2) three times
        buf[[1, 1], [0, 0]] += x[:2] * 3.0
        return m.sum(buf * buf * onp.arange(1.0, 7.0).reshape(2, 3))

    check_program(prog, X4)


def test_repeated_index_with_a_broadcast_scalar_value():
    def prog(x, m):
        buf = m.zeros(4)
        buf[[0, 0, 3]] = x[0] * x[1]  # one scalar broadcast to three slots
        buf[[1, 1]] = x[1:3]
        return m.sum(m.exp(buf) * onp.arange(1.0, 5.0))

    check_program(prog, onp.array([0.7, -1.3, 0.4]))


def test_negative_indices_that_alias_positive_ones():
    def prog(x, m):
        buf = m.zeros(3)
        buf[[0, -3]] = x  # -3 is 0: x[1] lands
        buf[[-1, 2]] += x * 2.0  # one update of buf[2]
        return m.sum(m.sin(buf) * W3)

    check_program(prog, X2)


def test_boolean_masks_select_each_position_once():
    mask = onp.array([True, False, True, True])

    def prog(x, m):
        buf = m.ones(4)
        buf[mask] = x[:3]
        buf[mask] *= x[1:]
        buf[~mask] += x[0]
        return m.sum(buf * buf * onp.arange(1.0, 5.0))

    check_program(prog, X4)


def test_advanced_indices_mixed_with_slices():
    def prog(x, m):
        buf = m.zeros((3, 4))
        buf[[0, 0], 1:3] = m.reshape(x, (2, 2))  # row 0 twice: the second row of x lands
        buf[1:, [3, 3, 0]] = x[:3]  # column 3 twice in each row
        buf[[2, 2], ...] += x[2]
        return m.sum(m.sin(buf) * onp.arange(1.0, 13.0).reshape(3, 4))

    check_program(prog, X4)


def test_repeated_index_write_into_an_input_is_copied_first():
    def prog(x, m):
        x[[0, 0, 2]] = x[[1, 2, 3]] * 3.0  # x[0] = 3 x[2], x[2] = 3 x[3]
        return m.sum(x * x * onp.arange(1.0, 5.0))

    check_program(prog, X4)


@pytest.mark.parametrize("idx", [(slice(1, None),), (Ellipsis, None), (None,)])
def test_augmented_op_on_an_index_of_an_input_writes_the_input(idx):
    def prog(x, m):
        x[idx] *= 1.5 + m.sin(x[idx])  # t = x[idx]; t *= ...; x[idx] = t
        x[idx] += 2.0 * x[idx]
        return m.sum(x * x * onp.arange(1.0, 5.0))

    check_program(prog, X4)


def test_explicit_iop_call_on_a_temporary_view_of_an_input_writes_the_input():
    def prog(x, m):
        x[1:].__iadd__(x[0] * x[0])  # NumPy changes x; nothing writes it back
        return m.sum(m.sin(x) * onp.arange(1.0, 5.0))

    check_program(prog, X4)


# =============================================================================
# The functional .at[]: set keeps NumPy's last value, the others accumulate (JAX)
# =============================================================================
AT_CASES = {
    "set": lambda a, idx, v: _np_set(a, idx, v),
    "add": lambda a, idx, v: _ufunc_at(onp.add, a, idx, v),
    "subtract": lambda a, idx, v: _ufunc_at(onp.subtract, a, idx, v),
    "multiply": lambda a, idx, v: _ufunc_at(onp.multiply, a, idx, v),
    "divide": lambda a, idx, v: _ufunc_at(onp.divide, a, idx, v),
    "power": lambda a, idx, v: _ufunc_at(onp.power, a, idx, v),
    "min": lambda a, idx, v: _ufunc_at(onp.minimum, a, idx, v),
    "max": lambda a, idx, v: _ufunc_at(onp.maximum, a, idx, v),
}


def _np_set(a, idx, v):
    out = a.copy()
    out[idx] = v
    return out


def _ufunc_at(ufunc, a, idx, v):
    out = a.copy()
    ufunc.at(out, idx, v)
    return out


@pytest.mark.parametrize("name", sorted(AT_CASES))
@pytest.mark.parametrize(
    "idx", [[1, 3, 1, 1], ([0, 1, 0], [2, 2, 2]), [-4, 0]], ids=["1d", "tuple", "negative"]
)
def test_at_updates_with_repeated_positions(name, idx):
    shape = (2, 3) if type(idx) is tuple else (4,)
    base = onp.linspace(0.8, 1.6, 6 if type(idx) is tuple else 4).reshape(shape)

    def prog(x, m):
        a = base * m.exp(x[0] * 0.3)  # traced, and > 0 for power
        v = 1.1 + 0.2 * m.sin(x[1:]) if name != "power" else 0.9 + 0.1 * x[1:]
        if m is onp:
            out = AT_CASES[name](a, tuple(idx) if type(idx) is tuple else idx, v[: _n(idx)])
        else:
            out = getattr(np.at(a)[tuple(idx) if type(idx) is tuple else idx], name)(v[: _n(idx)])
        return m.sum(out * out * onp.arange(1.0, 1.0 + out.size).reshape(shape))

    check_program(prog, onp.array([0.2, 0.5, -0.3, 0.8, 0.1]))


def _n(idx):
    return len(idx[0]) if type(idx) is tuple else len(idx)


def test_at_leaves_its_argument_unchanged_and_runs_on_plain_arrays():
    a = onp.array([1.0, 2.0, 3.0])
    onp.testing.assert_array_equal(
        np.at(a)[[0, 0]].multiply(onp.array([2.0, 5.0])), [10.0, 2.0, 3.0]
    )
    onp.testing.assert_array_equal(np.at(a)[[0, 0]].set(onp.array([2.0, 5.0])), [5.0, 2.0, 3.0])
    onp.testing.assert_array_equal(np.at(a)[[2, 2]].max(onp.array([7.0, 4.0])), [1.0, 2.0, 7.0])
    onp.testing.assert_array_equal(a, [1.0, 2.0, 3.0])


# =============================================================================
# 2. Augmented operators and writes on views change the array they view
# =============================================================================
def test_issue_example_augmented_op_on_a_view_changes_the_buffer():
    def prog(x, m):
        buf = m.zeros(3)
        buf[:] = x
        v = buf[:2]
        v *= 10.0
        return m.sum(m.sin(buf) * W3) + m.sum(v * v)

    check_program(prog, onp.array([0.07, -0.13, 0.4]))


def test_augmented_op_on_each_row_while_iterating():
    def prog(x, m):
        buf = m.zeros((3, 2))
        buf[:, 0] = x[:3]
        for row in buf:
            row += x[3]
            row *= x[:2]
        return m.sum(m.sin(buf) * onp.arange(1.0, 7.0).reshape(3, 2))

    check_program(prog, X4)


def test_item_writes_through_views():
    def prog(x, m):
        buf = m.zeros((3, 3))
        a = buf[1:]
        a[0] += x[0]  # buf[1] += x[0] (all of row 1)
        a[1, 2] = x[1] * x[2]  # buf[2, 2]
        a[:, [0, 0]] = x[2:4]  # column 0, rows 1 and 2: x[3] lands
        b = a[0]
        b[1] -= x[3]  # a view of a view: buf[1, 1] (a goes stale)
        return m.sum(m.sin(buf) * onp.arange(1.0, 10.0).reshape(3, 3)) + m.sum(b * buf[2])

    check_program(prog, X4)


def test_writes_through_transposed_strided_and_reversed_views():
    def prog(x, m):
        buf = m.ones((2, 4))
        t = buf.T  # (4, 2), axes swapped
        t[1] = x[:2]  # buf[:, 1]
        t *= 1.5
        s = buf[:, ::-2]  # columns 3 and 1, reversed
        s += m.reshape(x, (2, 2))
        buf[0, ::3] *= x[2:]
        e = buf[:, None, 2]  # a new axis: (2, 1)
        e -= x[3]
        return m.sum(m.sin(buf) * onp.arange(1.0, 9.0).reshape(2, 4))

    check_program(prog, X4)


def test_view_of_a_buffer_whose_box_is_gone():
    def prog(x, m):
        first = m.zeros(4)[1:3]  # nothing else holds the buffer
        first += x[:2]
        first *= x[2]
        rows = list(m.zeros((2, 2)))  # the iteration's buffer is gone too
        rows[0] += x[3]
        rows[1][1] = x[0]
        return m.sum(m.sin(first)) + m.sum(rows[0] * rows[1] + rows[1])

    check_program(prog, X4)


def test_other_views_of_a_region_written_through_a_view_see_the_write():
    x = onp.array([0.5, 1.5])

    def prog(x, m):
        buf = m.zeros(4)
        a = buf[:3]
        b = buf[2:]  # overlaps a at buf[2]
        c = buf[3:]  # does not
        before = m.sum(m.sin(b) * x[1])  # b's old values
        a += x[0]
        return m.sum(c) + m.sum(b * b * x[1]) + before  # NumPy: b sees the write

    check_program(prog, x)

    def gone(x):
        buf = np.zeros(4)
        a, b = buf[:3], buf[2:]
        del buf  # the buffer's Box is gone: the write's new
        a += x[0]  # version cannot be read again, b is refused
        return np.sum(b)

    with pytest.raises(ValueError, match="written to after the view"):
        grad(gone)(x)
    with pytest.raises(ValueError, match="written to after the view"):
        make_jvp(gone)(x)(onp.ones(2))

    def g(x):
        buf = np.zeros(4)
        a, c = buf[:3], buf[3:]
        del buf  # the buffer's Box is gone: a write through a
        a += x[0]  # view still reaches its other views
        return np.sum(c) + np.sum(a)

    onp.testing.assert_allclose(grad(g)(x), [3.0, 0.0])


def test_aliases_of_a_traced_array_see_an_augmented_op():
    def prog(x, m):
        a = m.sin(x)
        b = a  # the same array
        a += 1.0
        a *= x
        c = m.tanh(x[:2] * 3.0)
        d = c
        c /= 2.0
        return m.sum(b * b * W3[:2]) + m.sum(d * W3[1:])

    check_program(prog, X2)


def test_augmented_ops_keep_numpy_shape_and_dtype_rules():
    def f(x):
        a = np.sin(x)
        a += np.ones((2, 2))  # would need a bigger array
        return np.sum(a)

    with pytest.raises(ValueError, match="non-broadcastable output operand"):
        grad(f)(X2)
    with pytest.raises(ValueError):  # NumPy raises too
        a = onp.sin(X2)
        a += onp.ones((2, 2))

    def g(x):
        a = np.sin(x).astype(onp.float32)
        a += x  # float64 into float32: stays float32
        assert a.dtype == onp.float32
        buf = np.zeros(2, dtype=onp.float32)
        buf += x * 2.0
        assert buf.dtype == onp.float32
        return np.sum(a * buf)

    gx = grad(g)(X2)
    ref = onp.sin(X2).astype(onp.float32) + X2.astype(onp.float32)
    onp.testing.assert_allclose(g(X2), onp.sum(ref * (X2 * 2.0).astype(onp.float32)), rtol=1e-6)
    onp.testing.assert_allclose(gx, (onp.cos(X2) + 1) * 2 * X2 + ref * 2.0, rtol=1e-5)

    def h(x):
        a = np.sin(x)
        a += 1j * x  # complex into float: NumPy refuses
        return np.sum(a)

    with pytest.raises(TypeError, match="same_kind"):
        grad(h)(X2)


def test_scalars_are_rebound():
    def prog(x, m):
        s = m.sum(x)  # a NumPy scalar: immutable
        t = s
        s += 1.0
        u = x[0] * 1.0
        u *= x[1]
        return s * t + u

    check_program(prog, X2)


def test_augmented_op_on_an_input_leaves_the_callers_array_alone():
    def prog(x, m):
        x += 1.0  # gradcy works on a new array
        x *= x
        return m.sum(x * W3[:2])

    check_program(prog, X2)


def test_augmented_op_on_a_view_of_an_array_gradcy_does_not_own_writes_it_as_numpy():
    def through_input(x, m):
        v = x[:1]
        v *= x[1]  # NumPy changes x: gradcy changes its copy
        return m.sum(x * x) + m.sum(v)

    def through_output(x, m):
        y = m.sin(x)
        v = y[1:]
        v += 1.0  # NumPy changes y: so does gradcy (issue #23)
        return m.sum(y * y)

    def row_of_output(x, m):
        y = m.outer(x, x)
        for row in y:
            row[0] = 1.0  # NumPy changes y
        return m.sum(y * y)

    def unobserved(x, m):
        v = m.sin(x)[1:]  # nothing else holds sin's output
        v += 1.0
        return m.sum(v * v)

    for prog in (through_input, through_output, row_of_output, unobserved):
        check_program(prog, X2)


def test_write_into_an_array_whose_views_exist_shows_in_them():
    def view_taken_before(x, m):
        a = m.sin(x)
        c = a[:1]  # NumPy: c sees the write below
        a += 1.0
        return m.sum(c * c) + m.sum(a * x)

    def item_write(x, m):
        a = m.sin(x)
        c = a[1:]
        a[1] = 2.0 * x[0]
        return m.sum(c * c)

    def same_array(x, m):
        a = m.sin(x)
        r = m.real(a)  # NumPy returns a itself
        a *= 2.0
        return m.sum(r * r)

    for prog in (view_taken_before, item_write, same_array):
        check_program(prog, X2)

    def read_then_write(x, m):
        h = m.tanh(x)  # tanh saves h; the slice read is saved too
        out = h[0] * m.sin(h[1:])
        h += 1.0  # nothing outside the tape sees h's memory
        h *= h
        del out
        t = m.tanh(x)[1:]  # a view whose base only tanh's record holds
        t *= 3.0
        return m.sum(h * W3[:2]) + m.sum(t)

    check_program(read_then_write, X2)


def test_copy_makes_a_buffer_whose_views_write_through():
    def prog(x, m):
        y = m.copy(m.sin(x))
        v = y[1:]
        v *= 3.0
        return m.sum(y * y * W3[:2])

    check_program(prog, X2)


def test_a_primitive_returning_the_buffer_itself_is_a_view_of_all_of_it():
    x = onp.array([0.5, 1.5])

    def prog(x, m):
        buf = m.zeros(2)
        r = m.real(buf)  # NumPy returns buf itself
        buf[0] = x[0]
        return m.sum(r * r * x[1])  # r sees the write

    check_program(prog, x)


def test_forward_mode_views_see_writes():
    def prog(x, m):
        buf = m.zeros(3)
        buf[:] = x[:3]
        v = buf[1:]
        buf[0] = x[3]  # does not touch v
        v[0] = m.sin(buf[0])  # writes through: buf[1]
        return m.sum(buf * W3) + m.sum(v * v)

    check_program(prog, X4)

    def overwritten(x, m):
        buf = m.zeros(3)
        buf[:] = x[:3]
        v = buf[:2]
        s = m.sum(m.sin(v))  # v's old values
        buf[1] = x[3] * x[0]  # v[1] changes under it
        return s + m.sum(v * v * W3[:2])  # ... and v sees the new value

    check_program(overwritten, X4)


# =============================================================================
# 3. 0-d buffers
# =============================================================================
def test_two_writes_into_a_0d_buffer():
    def prog(x, m):
        buf = m.zeros(())
        buf[...] = x[0]
        buf[...] = buf * x[1]
        return buf * 1.0

    check_program(prog, X2)

    def prog2(x, m):
        buf = m.zeros(())
        buf[()] = x[0]
        buf[()] = m.sin(buf) * x[1]
        buf += x[0]
        buf *= buf
        return m.sum(buf)

    check_program(prog2, X2)


def test_writes_through_a_view_of_a_0d_buffer():
    def prog(x, m):
        buf = m.zeros(())
        v = buf[...]  # a 0-d view of it
        v += x[0]
        v *= x[1]
        w = buf[None]  # shape (1,)
        w[0] -= x[0] * x[0]
        return buf * 2.0 + m.sum(w)

    check_program(prog, X2)


def test_writes_through_reshaped_views():
    def prog(x, m):
        buf = m.zeros(6)
        grid = buf.reshape(2, 3)  # a view of all of it
        grid[0] = x[:3]
        grid *= x[3]
        flat = grid[1].ravel()  # the second row, through two views
        flat += x[:3] * x[:3]
        cube = m.zeros((2, 2, 2))
        rows = cube.reshape(4, 2)[1:3]  # cube[0, 1] and cube[1, 0]: no basic index
        rows -= m.reshape(x, (2, 2))
        rows[1, 1] *= x[0]
        return (
            m.sum(m.sin(buf) * onp.arange(1.0, 7.0))
            + m.sum(cube * cube)
            + m.sum(rows * onp.array([[1.0, 2.0], [3.0, 4.0]]))
        )

    check_program(prog, X4)

    def overwritten(x, m):
        cube = m.zeros((2, 2, 2))
        rows = cube.reshape(4, 2)[1:3]
        rows += x
        cube[1, 0, 1] = 3.0 * x[0]  # one of rows' elements: rows sees it
        return m.sum(rows * rows * W3[1:])

    check_program(overwritten, X2)


def test_writes_into_read_only_views_raise_as_in_numpy():
    def diag(x):
        buf = np.zeros((2, 2))
        d = np.diagonal(buf)
        d += x
        return np.sum(buf)

    def broadcast(x):
        b = np.broadcast_to(np.sin(x), (3, 2))
        b[0] = 1.0
        return np.sum(b)

    for f in (diag, broadcast):
        with pytest.raises(ValueError, match="read-only"):
            grad(f)(X2)
    with pytest.raises(ValueError, match="read-only"):
        d = onp.diagonal(onp.zeros((2, 2)))
        d += X2


@pytest.mark.parametrize("buffer_dtype", [onp.float32, onp.float64])
def test_gradients_keep_the_input_dtype(buffer_dtype):
    def f(x):
        buf = np.zeros((3, 2), dtype=buffer_dtype)
        buf[[0, 0, 2]] = x[:3, None] * 2.0  # repeated row: the second value lands
        v = buf[1:]
        v += x[1:3, None]
        for row in buf:
            row *= x[0]
        a = np.at(buf)[[1, 1], 0].multiply(x[:2])
        return np.sum(a * a)

    x = onp.array([0.7, -1.3, 0.4], dtype=onp.float32)
    g = grad(f)(x)
    assert type(g) is onp.ndarray and g.dtype == onp.float32 and g.shape == x.shape
    t = _core.Tape()  # the leaf's cotangent before any cast
    try:
        b = t.new_leaf(x)
        _core.push_active(t)
        try:
            y = f(b)
        finally:
            _core.pop_active(t)
        out = t.pin(y)
        del y
        raw = t.backward(out, onp.float32(1), True, [b._node])[0]
    finally:
        t.release()
    assert raw.dtype == onp.float32
    y, jv = make_jvp(f)(x)(onp.ones(3, onp.float32))
    assert onp.result_type(jv) == onp.result_type(y) == buffer_dtype  # the output's dtype
    g64 = grad(f)(x.astype(onp.float64))
    onp.testing.assert_allclose(g, g64, rtol=1e-5)
    if buffer_dtype == onp.float64:
        onp.testing.assert_allclose(g64, central_gradient(f, x.astype(onp.float64)), rtol=1e-6)


def test_augmented_assignment_of_a_slot_records_one_write():
    # buf[i] += v: the view buf[i] writes through to the buffer, and Python's write-back of
    # that view over its own slot stores nothing (one write node, not two)
    t = _core.Tape()
    try:
        x = t.new_leaf(onp.array([0.5, 1.5]))
        _core.push_active(t)
        try:
            buf = np.zeros((3, 2))
            for i in range(3):
                buf[i] += x * float(i + 1)
            names = [t.node_info(k)["primitive"] for k in range(len(t))]
        finally:
            _core.pop_active(t)
        assert names.count("gradcy.numpy.setitem") == 3
        onp.testing.assert_allclose(buf._value, [[0.5, 1.5], [1.0, 3.0], [1.5, 4.5]])
        del buf, x
    finally:
        t.release()


# =============================================================================
# Issue 10, "never a wrong gradient": the fuzzer's view_iop, input_view and identity_ops
# =============================================================================
def test_flatten_is_a_copy_that_writes_do_not_reach():
    def prog(x, m):
        b = m.full((2, 2), 0.5)
        v = b.flatten()  # NumPy: a copy (ravel would be a view)
        v *= 1.0 + x[0]
        return m.sum(m.sin(b) * W3[0]) + m.sum(v * x[1])

    check_program(prog, X2)


@pytest.mark.parametrize("view", ["squeeze", "real", "atleast_1d", "ascontiguousarray"])
def test_a_write_through_the_buffer_itself_returned_by_a_primitive_moves_the_buffer(view):
    def prog(x, m):
        b = m.ones(4)
        v = getattr(m, view)(b)  # NumPy: b itself
        v[onp.array([False, False, False, True])] += x[0]
        v[1] = m.sin(x[1])  # a basic index (the core's write)
        v *= 1.0 + 0.5 * x[0]
        return m.sum(b * onp.arange(1.0, 5.0))

    check_program(prog, X2)


def test_augmented_ops_through_a_one_element_strided_view_in_forward_mode():
    def prog(x, m):
        b = m.array([[0.43, 0.91, -0.73], [0.02, 0.77, 0.28]])
        v = b[1, :1:2]  # shape (1,): its root index is all ints
        v -= m.tanh(x[:1])
        v *= 1.0 + 0.3 * m.tanh(x[1])
        return m.sum(m.tanh(b) * W3)

    check_program(prog, X2)


def test_views_of_an_input_taken_before_a_write_into_it_see_the_write():
    def overlapping(x, m):
        v = x[:2]
        s = m.sum(m.sin(v))  # v's old values
        x[0] = 5.0 * x[3]  # NumPy: v[0] changes
        return s + m.sum(v * v * W3[:2])

    def same_array(x, m):
        r = m.real(x)  # NumPy: x itself
        x[onp.array([True, False, True, True])] += x[1] * x[1]
        return m.sum(m.sin(r) * onp.arange(1.0, 5.0))

    def augmented(x, m):
        v = x[1:]
        x *= x[0]  # x changes in place: v sees it
        return m.sum(v * W3)

    def sub_view_after_the_copy(x, m):
        v = x[2:]
        x[0] = 5.0  # v is not touched: it follows x's copy
        w = v[:1]
        x[2] = x[1] * 3.0  # ... so this write reaches w (and v)
        return m.sum(w * w) + m.sum(m.sin(v))

    for f in (overlapping, same_array, augmented, sub_view_after_the_copy):
        check_program(f, X4)

    def untouched(x, m):
        v = x[2:]
        x[0] = m.sin(x[1])  # v does not overlap the write
        x[1] *= 2.0
        return m.sum(v * v) + m.sum(x * x * onp.arange(1.0, 5.0))

    check_program(untouched, X4)


def test_a_view_of_an_input_written_under_nested_differentiation():
    def prog(x, m):
        v = x[2::-1]
        v *= x[3]  # NumPy changes x: gradcy changes its copy
        return m.sum(x * x * onp.arange(1.0, 5.0)) + m.sum(m.sin(v))

    check_program(prog, X4)  # first and second order


def _every_order(f, x):
    """grad, and the second-order modes (hessian, jacobian of grad, forward over reverse, a
    grad of a sum of grads): each a thunk."""
    from gradcy import jacobian

    return {
        "grad": lambda: grad(f)(x),
        "hessian": lambda: hessian(f)(x),
        "jacobian(grad)": lambda: jacobian(grad(f))(x),
        "fwd over rev": lambda: make_jvp(grad(f))(x)(onp.ones(x.shape)),
        "grad of grad": lambda: grad(lambda z: np.sum(grad(f)(z)))(x),
        "third order": lambda: grad(lambda z: np.sum(hessian(f)(z)))(x),
    }


def _y_view_live(x, m):
    y = m.sin(x)
    v = y[1:]
    v *= 3.0  # NumPy changes y too
    return m.sum(y * y)


def _y_reshape_live(x, m):
    y = m.sin(x)
    r = m.reshape(y, (2, 2))
    r += 1.0
    return m.sum(y * x)


def _y_transpose_live(x, m):
    y = m.outer(x[:2], x[2:])
    t = y.T
    t[0] = x[0]
    return m.sum(y * y)


def _y_real_live(x, m):
    y = m.tanh(x)
    r = m.real(y)  # NumPy returns y itself
    r *= 2.0
    return m.sum(y * x)


def _y_0d_live(x, m):
    y = m.sin(x)
    s = m.reshape(y[1:2], ())  # a 0-d view of y
    s *= 2.0
    return m.sum(y * y)


@pytest.mark.parametrize(
    "prog", [_y_view_live, _y_reshape_live, _y_transpose_live, _y_real_live, _y_0d_live]
)
def test_a_write_through_a_view_of_a_computed_array_matches_numpy_in_every_order(prog):
    # NumPy's semantics (issue #23): the write lands in y, whose later uses see it; first
    # order, and every nested mode against the Hessian (itself against central differences)
    check_program(prog, X4)
    f = lambda x: prog(x, np)
    want = hessian(f)(X4)
    modes = _every_order(f, X4)
    for mode in ("jacobian(grad)",):
        onp.testing.assert_allclose(modes[mode](), want, rtol=1e-12)
    g = modes["third order"]()
    numeric = central_gradient(lambda z: onp.sum(hessian(f)(z)), X4)
    onp.testing.assert_allclose(g, numeric, rtol=1e-5, atol=1e-6)


def test_a_write_into_a_computed_array_nothing_else_sees_works_in_every_order():
    def prog(x, m):
        v = m.sin(x)[1:]  # its base: only the tape's records hold it
        v *= 3.0
        t = m.exp(x)  # exp saves its output
        t *= 2.0
        r = m.reshape(m.cos(x), (2, 2)).T
        r += 1.0
        s = m.sum(m.tanh(x))
        s *= 2.0
        for k in range(2):
            t += v[k]
        return m.sum(v * v) + m.sum(t * x) + m.sum(r**2) + s * s

    check_program(prog, X4)
    f = lambda x: prog(x, np)
    want = hessian(f)(X4)
    for mode in ("jacobian(grad)",):
        onp.testing.assert_allclose(_every_order(f, X4)[mode](), want, rtol=1e-12)
    g = grad(lambda z: np.sum(hessian(f)(z)))(X4)  # third order: central differences
    numeric = central_gradient(lambda z: onp.sum(hessian(f)(z)), X4)
    onp.testing.assert_allclose(g, numeric, rtol=1e-5, atol=1e-6)


def test_an_outer_array_written_with_an_inner_value_raises_when_another_name_sees_it():
    def outer(shared):
        def f(x):
            y = np.sin(x)

            def inner(z):
                t = y[1:] if shared else y[1:] * 1.0
                t *= z[0]  # NumPy changes y when t is its view
                return np.sum(t * z[1:])

            return np.sum(grad(inner)(x))

        return f

    with pytest.raises(ValueError, match="that is a view of another array"):
        grad(outer(True))(W3)
    got = grad(outer(False))(W3)  # t is the only name: a new value is NumPy's

    def by_value(x):
        return np.sum(grad(lambda z: np.sum(np.sin(x)[1:] * z[0] * z[1:]))(x))

    onp.testing.assert_allclose(got, grad(by_value)(W3), rtol=1e-12)


def _scale_first(p, q):
    p *= 2.0  # NumPy: q changes too when it is p
    return np.sum(p * q)


def _set_first(p, q):
    p[0] = 5.0
    return np.sum(p * q)


@pytest.mark.parametrize("f", [_scale_first, _set_first])
def test_a_write_into_an_argument_another_argument_shares_raises(f):
    a = onp.array([0.3, 0.7, -0.4])
    z = onp.array(0.5)
    cases = [
        lambda: grad(f, (0, 1))(a, a),
        lambda: grad(f, (0, 1))(a, a[:]),
        lambda: grad(f, (1, 0))(a[1:], a),
        lambda: make_jvp(f, (0, 1))(a, a)((onp.ones(3), onp.ones(3))),
        lambda: grad(lambda t: f(*t))((a, a)),
        lambda: grad(lambda x: np.sum(grad(f, (0, 1))(x, x)[0]))(a),
    ]
    # the other argument not differentiated: the tape never sees it, but NumPy would change it
    cases += [
        lambda: grad(f, 0)(a, a),
        lambda: grad(f, 0)(a, a[:]),
        lambda: grad(lambda x, t: f(x, t[0]), 0)(a, (a,)),
        lambda: make_jvp(f, 0)(a, a)(onp.ones(3)),
    ]
    if f is _scale_first:
        cases.append(lambda: grad(f, (0, 1))(z, z))
    for run in cases:
        with pytest.raises(ValueError, match=r"another argument shares .* Pass a copy"):
            run()
    onp.testing.assert_array_equal(a, [0.3, 0.7, -0.4])
    # a copy: each argument its own array, as NumPy would have them
    gp, gq = grad(f, (0, 1))(a, a.copy())
    p = a.copy()
    f(p, a)
    onp.testing.assert_allclose(gq, p)
    # one argument used twice is one array, and the write reaches both uses
    onp.testing.assert_allclose(grad(lambda x: _scale_first(x, x))(a), 8.0 * a)


def test_augmented_op_on_a_slice_of_a_computed_array():
    def prog(x, m):
        y = m.sin(x)
        y[1:] *= 3.0  # t = y[1:]; t *= 3; y[1:] = t
        y[:2] += m.tanh(y[2:])
        return m.sum(y * onp.arange(1.0, 5.0))

    check_program(prog, X4)


# =============================================================================
# numpy's ufunc.at: unbuffered in-place updates, repeated positions get every update
# =============================================================================
@pytest.mark.parametrize("name", ["add", "subtract", "multiply", "maximum", "minimum"])
def test_ufunc_at_writes_a_traced_buffer_with_repeats_accumulating(name):
    def prog(x, m):
        a = m.zeros(4)
        a[:] = m.sin(x[:4])
        getattr(m, name).at(a, [0, 2, 2, 3, 0, 2], x[4:] * 1.5)
        getattr(m, name).at(a, (slice(1, 3),), x[0])
        return m.sum(m.tanh(a) * onp.arange(1.0, 5.0))

    x = onp.array([0.3, -0.7, 0.4, 1.1, 0.9, -0.2, 1.3, 0.5, 0.6, -1.0])
    check_program(prog, x)


def test_ufunc_at_on_plain_arrays():
    a = onp.zeros(3)
    np.add.at(a, [0, 0, 2], onp.array([1.0, 2.0, 3.0]))  # NumPy's own, untraced
    onp.testing.assert_array_equal(a, [3.0, 0.0, 3.0])

    def f(x):
        np.add.at(a, [0, 0], x)  # a plain array given a traced value
        return np.sum(x)

    with pytest.raises(_core.TracerArrayConversionError, match="gradcy.numpy.add.at"):
        grad(f)(X2)
    onp.testing.assert_array_equal(a, [3.0, 0.0, 3.0])

    def g(x):
        b = onp.zeros(2)
        np.multiply.at(b, [0], 2.0)  # plain values into a plain array: fine
        return np.sum(x) + np.sum(b)

    onp.testing.assert_array_equal(grad(g)(X2), [1.0, 1.0])


def test_augmented_op_on_a_0d_array_keeps_it_an_array_for_its_aliases():
    def prog(x, m):
        y = m.reshape(m.sin(x[:1]), ())  # a 0-d array (NumPy's y -= ... keeps it one)
        y -= 0.5 * m.sin(y)  # a 0-d op gives a NumPy scalar: still an array
        t = y
        y *= 1.5 + m.tanh(t)  # NumPy: t is y, and sees this
        return m.sum(t * 2.0) + m.sum(x * x)

    check_program(prog, X2)


def test_an_output_that_is_a_view_overwritten_after_it_was_taken():
    # the function returns a view whose buffer was written after the view was taken: NumPy
    # returns the new values, and the gradient follows them (it gave 0 before: the old view's
    # node, silently); when the buffer's own traced value is gone, that raises instead
    kept = []

    def alive(x):
        b = np.zeros(())
        kept.append(b)  # the buffer's Box outlives the call
        v = b[...]
        b[...] = x * 2.0
        return v

    def gone(x):
        b = np.zeros(())
        v = b[...]
        b[...] = x * 2.0
        return v

    assert grad(alive)(1.5) == 2.0
    assert make_jvp(alive)(1.5)(1.0) == (3.0, 2.0)
    kept.clear()
    with pytest.raises(ValueError, match="written to after the view"):
        grad(gone)(1.5)
    with pytest.raises(ValueError, match="written to after the view"):
        make_jvp(gone)(1.5)(1.0)


def test_write_with_a_new_axis_through_a_flat_view_across_rows():
    def prog(x, m):
        buf = m.zeros((3, 2))
        buf[:] = m.reshape(m.concatenate([x, x * x, m.sin(x)]), (3, 2))
        flat = m.reshape(buf, (-1,))
        flat[None, 3::1] = m.reshape(x[:1] * flat[:3], (1, 3))  # rows 1 and 2: no basic index
        return m.sum(m.sin(buf) * onp.arange(1.0, 7.0).reshape(3, 2))

    check_program(prog, X2)


def test_an_input_stays_a_buffer_after_an_augmented_op():
    def then_a_view(x, m):
        x += x[0] * 0.5  # the input's copy is written in place ...
        v = x[1:]
        v *= x[0]  # ... so a view of it writes into it
        return m.sum(m.sin(x) * onp.arange(1.0, 5.0))

    def view_taken_before_the_copy(x, m):
        t = x[None, 0::2]  # in the caller's memory (positions 0, 2)
        x[[1, 3]] -= x[0] * 0.6  # the first write: x moves to its copy
        t[0, -1] = m.tanh(x[1])  # ... and a write through t reaches it
        return m.sum(x * x * onp.arange(1.0, 5.0)) + m.sum(t * t)

    check_program(then_a_view, X4)
    check_program(view_taken_before_the_copy, X4)


def test_arguments_sharing_a_block_without_overlapping_are_written():
    def f(u, v, m=np):
        u[0] = v[0] * 2.0  # NumPy: v does not change (no overlap)
        v[1:] *= u[0]
        return m.sum(m.sin(u) * 1.5) + m.sum(v * v)

    a = X4.copy()
    numeric = central_gradient(lambda z: f(z[:1].copy(), z[1:].copy(), onp), X4)
    value, (gu, gv) = value_and_grad(f, (0, 1))(a[:1], a[1:])
    onp.testing.assert_allclose(value, f(X4[:1].copy(), X4[1:].copy(), onp), rtol=1e-12)
    onp.testing.assert_allclose(onp.concatenate([gu, gv]), numeric, rtol=1e-6, atol=1e-8)
    onp.testing.assert_array_equal(a, X4)  # the caller's block never changes
    with pytest.raises(ValueError, match="whose memory another argument shares"):
        grad(f, (0, 1))(a[:2], a[1:])  # these overlap: NumPy would change both


# =============================================================================
# Writes into arrays an operation computed (issue #23): in place, as NumPy; the records that
# hold the array get their own copy of what a write overlaps
# =============================================================================
def test_a_write_into_a_computed_array_is_in_place_and_copies_only_what_records_hold():
    seen = {}

    def prog(x, m):
        t = m.tanh(x)  # tanh's record holds t (its output)
        u = m.outer(x, x)  # outer's record holds x, not u
        if m is np:  # (ids: a reference would be a sharer)
            seen["t"], seen["u"] = id(t._value), id(u._value)
        t[0] = 0.5 * x[1]
        u[1] = x
        if m is np:
            tape = t._tape
            seen["in place"] = id(t._value) == seen["t"] and id(u._value) == seen["u"]
            held = [tape.saved_value(i, -1) for i in range(len(tape))]
            seen["tanh's copy"] = not any(h is t._value for h in held)
        return m.sum(t * t) + m.sum(u * u) + m.sum(t[:, None] * u)

    check_program(prog, X2, order=1)
    assert seen["in place"] and seen["tanh's copy"]


def test_records_holding_one_array_share_one_copy_of_it():
    arrays = []

    def f(x):
        t = np.tanh(x)  # held by tanh's record and sin's
        s = np.sin(t)
        t[1] = 2.0 * x[0]
        tape = t._tape
        held = [tape.saved_value(i, p) for i in range(len(tape)) for p in (-1, 0)]
        arrays.extend(
            h
            for h in held
            if type(h) is onp.ndarray
            and h.shape == (2,)
            and h is not t._value
            and not onp.shares_memory(h, x)
        )
        return np.sum(s) + np.sum(t * t)

    g = grad(f)(X2)
    ref = lambda x: (
        onp.sum(onp.sin(onp.tanh(x))) + onp.sum(onp.array([onp.tanh(x[0]), 2.0 * x[0]]) ** 2)
    )
    onp.testing.assert_allclose(g, central_gradient(ref, X2), rtol=1e-6, atol=1e-8)
    assert len(arrays) == 2 and arrays[0] is arrays[1]  # tanh's output, sin's argument: one


def _whole_view_of_a_gone_array(x, m):
    t = m.reshape(m.sum(x * x), (1, 1))  # a view of an array no traced value holds
    c = t[0:]
    c -= x[0]  # NumPy changes t too
    return m.sum(t * x[1]) + m.sum(c * c)


def _part_view_after_identity(x, m):
    t = m.real(m.outer(x[:2], x[2:]))  # outer's own value is gone: t is it
    c = t[1]
    c *= x[0]
    c2 = t[:, ::-1]
    c2[0] = m.sin(x[1:3])
    return m.sum(t * t) + m.sum(c)


def _split_parts_see_a_write(x, m):
    t = m.sin(m.outer(x, x))
    a, b = m.split(t, 2)  # views of t, from a list output
    r = t[1:3]
    r += 1.0  # NumPy changes a and b too
    return m.sum(a * b) + m.sum(t)


@pytest.mark.parametrize(
    "prog", [_whole_view_of_a_gone_array, _part_view_after_identity, _split_parts_see_a_write]
)
def test_writes_into_views_of_computed_arrays_whose_own_value_is_gone(prog):
    check_program(prog, X4)


def test_a_list_of_views_taken_before_a_write_is_refused_when_used():
    # split's parts are views of b: NumPy shows them the write; gradcy used to differentiate
    # them as they were before it (a silently wrong gradient for the owned buffer)
    def owned(x):
        b = np.zeros(4)
        b[:] = x
        parts = np.split(b, 2)
        b[0] = 3.0 * x[1]
        return np.sum(parts[0] * parts[0])

    def computed(x):
        t = np.sin(x)
        parts = np.split(t, 2)
        t[0] = 3.0 * x[1]
        return np.sum(parts[0] * parts[0])

    for f in (owned, computed):
        with pytest.raises(ValueError, match="written to after the view was taken"):
            grad(f)(X4)

    def unpacked(x, m):  # parts taken out before the write: right
        t = m.sin(x)
        a, b = m.split(t, 2)
        t[0] = 3.0 * x[1]
        return m.sum(a * a) + m.sum(b)

    check_program(unpacked, X4)


class _Registered(onp.ndarray):
    """An ndarray subclass registered for differentiation (as PennyLane's tensor)."""


def test_writes_into_a_registered_subclass_are_refused_and_its_like_buffers_are_plain():
    from gradcy.extend import Box

    Box.register(_Registered)
    x = onp.array([0.1, 0.2, 0.3]).view(_Registered)

    def through_view(x):  # gave a silently wrong gradient
        v = x[::2]
        v += 1.0 * x[0]
        return np.sum(np.sin(x))

    def item(x):
        x[0] = 2.0 * x[1]
        return np.sum(np.sin(x))

    for f in (through_view, item):
        with pytest.raises(
            TypeError,
            match="an ndarray subclass registered for "
            r"differentiation.*numpy.array\(x\)",
        ):
            grad(f)(x)

    def rebound(x, m):  # a += b with no view of a: a new value,
        a = x  # which every name of a sees
        a += 1.0 * x[0]
        t = m.sin(x)
        t *= 2.0
        return m.sum(t)

    ref_rebound = lambda z: rebound(onp.array(z, copy=True), onp)
    onp.testing.assert_allclose(
        grad(lambda z: rebound(z, np))(x),
        central_gradient(ref_rebound, onp.asarray(x)),
        rtol=1e-6,
        atol=1e-8,
    )

    def like(x):  # zeros_like(x): a plain buffer gradcy owns
        b = np.zeros_like(x)
        b[1:] = x[:2] * x[1:]
        return np.sum(b * b) + np.sum(np.sin(x))

    ref = lambda z: onp.sum((z[:2] * z[1:]) ** 2) + onp.sum(onp.sin(z))
    onp.testing.assert_allclose(
        grad(like)(x), central_gradient(ref, onp.asarray(x)), rtol=1e-6, atol=1e-8
    )


def test_whole_of_gradients():
    """whole_of (the array a view holds every element of, made again when its own Box is gone):
    both modes to second order, the view reversed and transposed."""
    from gradcy.numpy.inplace import whole_of
    from gradcy.test_util import check_grads

    x = onp.array([0.3, -1.2, 0.7, 2.0])
    check_grads(
        lambda v: np.sin(whole_of(v[::-1], onp.arange(3, -1, -1))) * v,
        modes=["fwd", "rev"],
        order=2,
    )(x)
    m = onp.arange(6.0).reshape(2, 3) / 7
    pos = onp.array([[0, 3], [1, 4], [2, 5]])
    check_grads(lambda v: np.tanh(whole_of(v.T, pos)), modes=["fwd", "rev"], order=2)(m)
