"""Copy on write for the records against copying the array whole: the first write into an array
an operation computed (issue #23), measured side by side in one process with one BLAS thread.

    python benchmarks/write_copy_targets.py [--n 500] [--repeats 7]

A write into t = f(x), an array gradcy did not create, either copies t whole and writes the copy
(gradcy before issue #23, the "copy" column), or writes t in place, each record that holds t's
memory getting its own copy of what it holds just before the write overlaps it ("in place", what
gradcy does). For each program: the tracemalloc peak of one gradient and the median time of
interleaved rounds, in place over copy (a ratio <= 1 is the better choice); the peak of the
forward pass alone (make_vjp), where the write's copies are made, beside it. The copy variant is
the old path, put back by replacing gradcy.numpy.inplace._own_computed for a direct write (a
write through a view has no copy variant: it was refused before).
"""

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[_var] = "1"

import argparse
import contextlib
import statistics
import time
import tracemalloc

import numpy as onp

import gradcy.numpy as np
from gradcy import grad, make_vjp
from gradcy.numpy import inplace


def held_by_its_op(x):
    t = np.tanh(x)  # tanh saves its output: the record holds t
    t[0] = 0.0
    return np.sum(t * t)


def held_twice(x):
    t = np.tanh(x)  # tanh's record and mul's hold the same array
    u = t * x
    t[:, 0] = 1.0
    return np.sum(u) + np.sum(t * t)


def not_held(x):
    t = x @ x  # matmul saves x, not its output
    t[0] = 0.0
    return np.sum(t * t)


def held_apart(x):
    t = np.sin(x)
    u = t[0] * x[0]  # mul holds t's first row only
    t[1:] = 0.5 * t[1:]  # no overlap: nothing is copied in place
    return np.sum(u) + np.sum(t * t)


def through_a_view(x):
    t = np.tanh(x)  # refused before issue #23: no copy variant
    v = t[1:]
    v *= 2.0
    return np.sum(t * t)


PROGRAMS = (held_by_its_op, held_twice, not_held, held_apart)


@contextlib.contextmanager
def copy_whole():
    """gradcy's write before issue #23: a direct write into a computed array copies it."""
    own = inplace._own_computed

    def copying(box, plain=None):
        if inplace._plain(box._value).base is not None:
            return own(box)  # a write through a view
        inplace.transfer_box(box, inplace.anp.copy(box))
        return inplace._register(box._tape, box)

    inplace._own_computed = copying
    try:
        yield
    finally:
        inplace._own_computed = own


def peak(g, x):
    tracemalloc.start()
    tracemalloc.reset_peak()
    base = tracemalloc.get_traced_memory()[0]
    g(x)
    p = tracemalloc.get_traced_memory()[1] - base
    tracemalloc.stop()
    return p


def forward(prog):
    """The forward pass alone (make_vjp): what it holds at its peak is the write's cost."""

    def run(x):
        vjp, _ = make_vjp(prog)(x)
        vjp.release()

    return run


def timed(g, x):
    t0 = time.perf_counter()
    g(x)
    return time.perf_counter() - t0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n", type=int, default=500)
    ap.add_argument("--repeats", type=int, default=7)
    a = ap.parse_args()
    x = onp.random.RandomState(0).uniform(-1, 1, (a.n, a.n))
    mb = x.nbytes / 2**20
    print(
        f"x: {a.n}x{a.n} float64 ({mb:.1f} MB); peaks in MB, times: median of "
        f"{a.repeats} interleaved rounds"
    )
    print(
        f"{'program':<16} {'peak in place':>14} {'peak copy':>10} {'ratio':>6} "
        f"{'fwd peak in place':>18} {'fwd peak copy':>14} {'time ratio':>11}"
    )
    for prog in PROGRAMS:
        g = grad(prog)
        with copy_whole():
            want = g(x)
        onp.testing.assert_allclose(g(x), want, rtol=1e-12)
        p_in, f_in = peak(g, x), peak(forward(prog), x)
        with copy_whole():
            p_copy, f_copy = peak(g, x), peak(forward(prog), x)
        t_in, t_copy = [], []
        for _ in range(a.repeats):
            t_in.append(timed(g, x))
            with copy_whole():
                t_copy.append(timed(g, x))
        ratio = statistics.median(t_in) / statistics.median(t_copy)
        print(
            f"{prog.__name__:<16} {p_in / 2**20:>14.1f} {p_copy / 2**20:>10.1f} "
            f"{p_in / p_copy:>6.2f} {f_in / 2**20:>18.1f} {f_copy / 2**20:>14.1f} "
            f"{ratio:>11.2f}"
        )
    g = grad(through_a_view)
    print(
        f"{'through_a_view':<16} {peak(g, x) / 2**20:>14.1f} {'refused':>10} {'':>6} "
        f"{peak(forward(through_a_view), x) / 2**20:>18.1f} {'refused':>14}"
    )


if __name__ == "__main__":
    main()
