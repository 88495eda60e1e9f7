"""Shared inputs and hand-written reference gradients of the asv suite.

Inputs are seeded and cached per process (asv runs each benchmark in its own process), and
read-only, so a library that writes into its inputs fails loudly instead of skewing the next
sample. The BLAS/OpenMP thread counts are pinned to 1 before NumPy is imported (asv.conf.json
sets them too, except with --python=same).

The hand-written gradients keep on a stack exactly what the backward pass needs and pop it: the
memory a careful person would use, and the baseline every gradcy number is compared with.
"""
import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import functools  # noqa: E402
import gc  # noqa: E402
import tracemalloc  # noqa: E402

import numpy  # noqa: E402

SEED = 0
D = 500            # matrix size of the chains
DOT_STEPS = 100    # z = dot(x, z), 100 times (autograd-backward-memory.txt)
TANH_STEPS = 50    # z = tanh(dot(x, z)), 50 times
SIN_STEPS = 1000   # x = sin(x) * 1.0001 + 0.01 * x on 3 elements: per-primitive overhead


def _readonly(*arrays):
    for a in arrays:
        a.flags.writeable = False
    return arrays if len(arrays) > 1 else arrays[0]


@functools.lru_cache(maxsize=None)
def dot_data(d=D):
    """x symmetric PSD with spectral radius about 1 (100 products stay finite), z random."""
    rng = numpy.random.RandomState(SEED)
    a = rng.standard_normal((d, d))
    x = a @ a.T / (4.0 * d)
    z = rng.standard_normal((d, d))
    return _readonly(x, z)


@functools.lru_cache(maxsize=None)
def tanh_data(d=D):
    rng = numpy.random.RandomState(SEED + 1)
    x = rng.standard_normal((d, d)) / numpy.sqrt(d)
    z = rng.standard_normal((d, d))
    return _readonly(x, z)


@functools.lru_cache(maxsize=None)
def vector(n, seed=SEED):
    """A seeded float64 vector of n elements in (-2, 2) (valid for every per-op benchmark)."""
    rng = numpy.random.RandomState(seed)
    return _readonly(rng.uniform(-2.0, 2.0, n))


@functools.lru_cache(maxsize=None)
def small_pair():
    """(b, a): the 2x2 arrays of the create-and-drop loop."""
    rng = numpy.random.RandomState(SEED + 2)
    return _readonly(rng.standard_normal((2, 2)), rng.standard_normal((2, 2)))


# =============================================================================
# The functions, written once for any NumPy-like module (gradcy.numpy, numpy)
# =============================================================================
def dotchain(m):
    def F(x, z):
        for _ in range(DOT_STEPS):
            z = m.dot(x, z)
        return m.sum(z)
    return F


def tanhchain(m):
    def F(x, z):
        for _ in range(TANH_STEPS):
            z = m.tanh(m.dot(x, z))
        return m.sum(z)
    return F


def sinchain(m):
    def f(x):
        for _ in range(SIN_STEPS):
            x = m.sin(x) * 1.0001 + 0.01 * x
        return m.sum(x)
    return f


def dropped(m):
    def f(b, a):
        y = m.sin(a) * 2.0      # a traced value computed from a, then dropped
        del y
        return m.sum(b)
    return f


# =============================================================================
# Hand-written gradients
# =============================================================================
def hand_dotchain(x, z):
    stack = []
    for _ in range(DOT_STEPS):
        stack.append(z)
        z = numpy.dot(x, z)
    numpy.sum(z)
    g_z = numpy.ones_like(z)
    g_x = None
    while stack:
        zp = stack.pop()
        t = numpy.dot(g_z, zp.T)
        if g_x is None:
            g_x = t
        else:
            g_x += t
        del t, zp
        if stack:                   # z needs no gradient
            g_z = numpy.dot(x.T, g_z)
    return g_x


def hand_tanhchain(x, z):
    stack = [z]
    for _ in range(TANH_STEPS):
        z = numpy.tanh(numpy.dot(x, z))
        stack.append(z)
    del z
    numpy.sum(stack[-1])
    out = stack.pop()
    g = numpy.ones_like(out)
    g_x = None
    while stack:
        zin = stack.pop()
        g_pre = g * (1.0 - out * out)
        del g, out
        t = numpy.dot(g_pre, zin.T)
        if g_x is None:
            g_x = t
        else:
            g_x += t
        del t
        g = numpy.dot(x.T, g_pre) if stack else None
        del g_pre
        out = zin
        del zin
    return g_x


def hand_sinchain(x):
    stack = []
    for _ in range(SIN_STEPS):
        stack.append(x)
        x = numpy.sin(x) * 1.0001 + 0.01 * x
    numpy.sum(x)
    g = numpy.ones_like(x)
    while stack:
        xp = stack.pop()
        g = g * (numpy.cos(xp) * 1.0001 + 0.01)
    return g


def hand_dropped(b, a):
    y = numpy.sin(a) * 2.0
    del y
    numpy.sum(b)
    return numpy.ones_like(b), numpy.zeros_like(a)


# =============================================================================
# Implementations by name, and measurement helpers
# =============================================================================
def gradcy_grad(make, argnum=0):
    """grad of make(gradcy.numpy), imported lazily (asv discovers benchmarks without it)."""
    import gradcy.numpy as gnp
    from gradcy import grad
    return grad(make(gnp), argnum=argnum)


def core_stats():
    from gradcy import _core
    return _core.stats()


def reset_core_peak():
    from gradcy import _core
    _core.reset_peak()


def tracemalloc_peak(fn, *args):
    """Peak bytes allocated at once while fn(*args) runs (NumPy reports its buffers to
    tracemalloc; inputs allocated before are not counted)."""
    gc.collect()
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        r = fn(*args)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    del r
    return peak
