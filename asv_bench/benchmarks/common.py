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
MEMNET_B, MEMNET_D = 4, 64   # the memory network: batch, width of a slot


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
def memnet_data():
    """(W, x) of the memory network."""
    rng = numpy.random.RandomState(SEED + 4)
    W = rng.standard_normal((MEMNET_D, MEMNET_D)) / numpy.sqrt(MEMNET_D)
    x = rng.standard_normal((MEMNET_B, MEMNET_D))
    return _readonly(W, x)


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


def _memnet_cell(m, prefix, W):
    """Attention over the whole prefix (B, n, D) -> the next slot (B, D)."""
    q = m.tanh(prefix[:, -1] @ W)
    scores = m.einsum("bsd,bd->bs", prefix, q)
    e = m.exp(scores - m.max(scores, axis=1, keepdims=True))
    w = e / m.sum(e, axis=1, keepdims=True)
    return m.tanh(m.einsum("bs,bsd->bd", w, prefix) @ W)


def memnet_inplace(m):
    """The memory network writing each step into a preallocated buffer (S + 1 slots)."""
    def f(W, x, S):
        memory = m.zeros((x.shape[0], S + 1, x.shape[1]))
        memory[:, 0] = x
        for i in range(S):
            memory[:, i + 1] = _memnet_cell(m, memory[:, :i + 1], W)
        return m.sum(memory[:, -1]) - m.sum(m.mean(memory, axis=1))
    return f


def memnet_concat(m):
    """The same network growing its memory by concatenation (each saved prefix a new copy)."""
    def f(W, x, S):
        memory = m.expand_dims(x, 1)
        for i in range(S):
            out = _memnet_cell(m, memory, W)
            memory = m.concatenate([memory, m.expand_dims(out, 1)], axis=1)
        return m.sum(memory[:, -1]) - m.sum(m.mean(memory, axis=1))
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


def hand_memnet(W, x, S):
    """d/dW of memnet_*, by hand and in place: the forward pass fills one buffer and keeps each
    step's (q, w, h); the backward pass walks the steps in reverse with one buffer-sized
    cotangent, reading the final cotangent of a step's output slot and adding into the slots
    the step read."""
    B, D = x.shape
    M = numpy.empty((B, S + 1, D))
    M[:, 0] = x
    stack = []
    for i in range(S):
        P = M[:, :i + 1]
        q = numpy.tanh(P[:, -1] @ W)
        s = numpy.einsum("bsd,bd->bs", P, q)
        s -= s.max(axis=1, keepdims=True)
        w = numpy.exp(s, out=s)
        w /= w.sum(axis=1, keepdims=True)
        h = numpy.einsum("bs,bsd->bd", w, P)
        numpy.tanh(h @ W, out=M[:, i + 1])
        stack.append((q, w, h))
    dM = numpy.full_like(M, -1.0 / (S + 1))      # d loss / d M: minus the mean over slots ...
    dM[:, S] += 1.0                              # ... plus the last slot
    dW = numpy.zeros_like(W)
    for i in range(S - 1, -1, -1):
        q, w, h = stack.pop()
        P = M[:, :i + 1]
        out = M[:, i + 1]
        g_v = dM[:, i + 1] * (1.0 - out * out)         # out = tanh(h @ W)
        dW += h.T @ g_v
        g_h = g_v @ W.T
        g_w = numpy.einsum("bd,bsd->bs", g_h, P)       # h = einsum(w, P)
        dP = numpy.einsum("bs,bd->bsd", w, g_h)
        g_s = w * (g_w - numpy.sum(g_w * w, axis=1, keepdims=True))   # softmax
        dP += numpy.einsum("bs,bd->bsd", g_s, q)       # scores = einsum(P, q)
        g_q = numpy.einsum("bs,bsd->bd", g_s, P)
        g_u = g_q * (1.0 - q * q)                      # q = tanh(P[:, -1] @ W)
        dW += P[:, -1].T @ g_u
        dP[:, -1] += g_u @ W.T
        dM[:, :i + 1] += dP
    return dW


def hand_jvp_sinchain(x, v):
    """The forward-mode derivative of sinchain along v, by hand: carry (x, dx) together."""
    dx = v
    for _ in range(SIN_STEPS):
        dx = numpy.cos(x) * 1.0001 * dx + 0.01 * dx
        x = numpy.sin(x) * 1.0001 + 0.01 * x
    return numpy.sum(x), numpy.sum(dx)


# =============================================================================
# Implementations by name, and measurement helpers
# =============================================================================
def require(module, *names):
    """Import gradcy's `module` and return its attributes `names`; raise NotImplementedError
    (asv's "skip this benchmark", shown as n/a) when the commit being measured lacks them, so
    the suite runs over the whole history."""
    import importlib
    try:
        mod = importlib.import_module(module)
    except ImportError as exc:
        raise NotImplementedError(f"{module} is not in this commit ({exc})")
    if not names:
        return mod
    missing = [n for n in names if not hasattr(mod, n)]
    if missing:
        raise NotImplementedError(f"{module} has no {', '.join(missing)} in this commit")
    return [getattr(mod, n) for n in names] if len(names) != 1 else getattr(mod, names[0])


def gradcy_grad(make, argnum=0):
    """grad of make(gradcy.numpy), imported lazily (asv discovers benchmarks without it)."""
    import gradcy.numpy as gnp
    from gradcy import grad
    return grad(make(gnp), argnum=argnum)


def core_stats():
    return require("gradcy._core", "stats")()


def reset_core_peak():
    require("gradcy._core", "reset_peak")()


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
