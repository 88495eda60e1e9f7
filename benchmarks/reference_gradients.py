"""The benchmark workloads, written once, and their hand-written NumPy gradients.

Every gradcy number is measured beside a hand-written gradient of the same function: the forward
pass keeps on a stack exactly what the backward pass needs and the backward pass pops it. That is
what a careful person would write: the target for memory (ratio 1.0) and the floor for time.

This file is shared by the asv suite (asv_bench/benchmarks/common.py loads it by path, so the
suite of the current tree can measure old commits that lack it), the scripts in this folder
(peers.py, peer_workloads.py, overhead_targets.py, memory_targets.py) and examples/demo.py. It
imports NumPy only.

- the inputs: seeded, so every tool measures the same arrays;
- the functions, for any NumPy-like module m (gradcy.numpy, numpy, autograd.numpy, jax.numpy,
  torch where its names match): sinchain, dotchain, tanhchain, dropped, memnet_inplace,
  memnet_concat, attention_inplace, attention_concat;
- their gradients by hand: hand_sinchain, hand_dotchain, hand_tanhchain, hand_dropped,
  hand_memnet, hand_attention, and the forward-mode derivative hand_jvp_sinchain.
"""

import numpy

SEED = 0
SIN_STEPS = 1000  # x = sin(x) * 1.0001 + 0.01 * x on 3 elements: gradcy's cost per primitive
DOT_STEPS = 100  # z = dot(x, z): the memory of a long chain of large products
TANH_STEPS = 50  # z = tanh(dot(x, z)): two saved buffers per step, one the next step's input
MEMNET_B, MEMNET_D = 4, 64  # the memory network: batch, width of a memory slot


# =============================================================================
# Inputs
# =============================================================================
def dotchain_inputs(D, seed=SEED):
    """(x, z): x symmetric PSD with spectral radius about 1, so DOT_STEPS products stay finite."""
    rng = numpy.random.RandomState(seed)
    a = rng.standard_normal((D, D))
    x = a @ a.T / (4.0 * D)
    z = rng.standard_normal((D, D))
    return x, z


def tanhchain_inputs(D, seed=SEED):
    """(x, z) of the tanh chain: x scaled by 1/sqrt(D), so tanh does not saturate."""
    rng = numpy.random.RandomState(seed)
    x = rng.standard_normal((D, D)) / numpy.sqrt(D)
    z = rng.standard_normal((D, D))
    return x, z


def memnet_inputs(B=MEMNET_B, D=MEMNET_D, seed=SEED):
    """(W, x) of the memory network: W (D, D) scaled by 1/sqrt(D), x the first slot (B, D)."""
    rng = numpy.random.RandomState(seed)
    W = rng.standard_normal((D, D)) / numpy.sqrt(D)
    x = rng.standard_normal((B, D))
    return W, x


def attention_inputs(B=MEMNET_B, D=MEMNET_D, seed=SEED):
    """(W, h0, q, b) of the attention memory network (gradcy issue 13): W (D, D) scaled by
    1/sqrt(D), h0 the first slot (B, D), q the fixed query (D,), b the bias (D,)."""
    rng = numpy.random.RandomState(seed + 13)
    W = rng.standard_normal((D, D)) / numpy.sqrt(D)
    h0 = rng.standard_normal((B, D))
    q = rng.standard_normal(D) / numpy.sqrt(D)
    b = 0.1 * rng.standard_normal(D)
    return W, h0, q, b


# =============================================================================
# The functions, for a NumPy-like module m
# =============================================================================
def sinchain(m):
    def f(x):
        for _ in range(SIN_STEPS):
            x = m.sin(x) * 1.0001 + 0.01 * x
        return m.sum(x)

    return f


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


def dropped(m):
    """f(b, a) computes a value from a, drops it and returns sum(b): nothing may outlive it."""

    def f(b, a):
        y = m.sin(a) * 2.0
        del y
        return m.sum(b)

    return f


def softmax_rows(m):
    """softmax over axis 1 spelled with max, exp and sum (every library has these)."""

    def softmax(scores):
        e = m.exp(scores - m.max(scores, axis=1, keepdims=True))
        return e / m.sum(e, axis=1, keepdims=True)

    return softmax


def _memnet_cell(m, softmax):
    def cell(prefix, W):
        """Attention over the whole prefix (B, n, D) -> the next slot (B, D); the einsums save
        the prefix."""
        q = m.tanh(prefix[:, -1] @ W)
        w = softmax(m.einsum("bsd,bd->bs", prefix, q))
        return m.tanh(m.einsum("bs,bsd->bd", w, prefix) @ W)

    return cell


def memnet_inplace(m, softmax=None):
    """f(W, x, S): the memory network writing step i's output into slot i + 1 of a preallocated
    buffer (every saved prefix is a view of it). softmax(scores) over axis 1, default
    softmax_rows(m)."""
    cell = _memnet_cell(m, softmax or softmax_rows(m))

    def f(W, x, S):
        memory = m.zeros((x.shape[0], S + 1, x.shape[1]))
        memory[:, 0] = x
        for i in range(S):
            memory[:, i + 1] = cell(memory[:, : i + 1], W)
        return m.sum(memory[:, -1]) - m.sum(m.mean(memory, axis=1))

    return f


def memnet_concat(m, softmax=None):
    """The same network growing its memory by concatenation (every saved prefix a new copy,
    O(S^2) bytes in all)."""
    cell = _memnet_cell(m, softmax or softmax_rows(m))

    def f(W, x, S):
        memory = m.expand_dims(x, 1)
        for _ in range(S):
            out = cell(memory, W)
            memory = m.concatenate([memory, m.expand_dims(out, 1)], axis=1)
        return m.sum(memory[:, -1]) - m.sum(m.mean(memory, axis=1))

    return f


def attention_inplace(m):
    """f(W, h0, q, b, S): gradcy issue 13's attention memory network as a user writes it,
    in place: step i attends over the written prefix with the fixed query q and writes
    tanh(read @ W + b) into slot i + 1. Differentiated with respect to W."""

    def f(W, h0, q, b, S):
        B, D = h0.shape
        mem = m.zeros((B, S + 1, D))
        mem[:, 0] = h0
        for i in range(S):
            prefix = mem[:, : i + 1]
            scores = m.einsum("bsd,d->bs", prefix, q)
            w = m.exp(scores - m.max(scores, axis=1, keepdims=True))
            w = w / m.sum(w, axis=1, keepdims=True)
            read = m.einsum("bs,bsd->bd", w, prefix)
            mem[:, i + 1] = m.tanh(m.dot(read, W) + b)
        return m.sum(mem[:, -1]) - m.sum(m.mean(mem, axis=1))

    return f


def attention_concat(m):
    """The same network growing its memory by concatenation (O(S^2) bytes of prefixes)."""

    def f(W, h0, q, b, S):
        mem = m.expand_dims(h0, 1)
        for _i in range(S):
            scores = m.einsum("bsd,d->bs", mem, q)
            w = m.exp(scores - m.max(scores, axis=1, keepdims=True))
            w = w / m.sum(w, axis=1, keepdims=True)
            read = m.einsum("bs,bsd->bd", w, mem)
            out = m.tanh(m.dot(read, W) + b)
            mem = m.concatenate([mem, m.expand_dims(out, 1)], axis=1)
        return m.sum(mem[:, -1]) - m.sum(m.mean(mem, axis=1))

    return f


# =============================================================================
# Hand-written gradients
# =============================================================================
def hand_sinchain(x):
    """d sinchain / dx."""
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


def hand_jvp_sinchain(x, v):
    """(sinchain(x), its derivative along v), forward mode by hand: carry (x, dx) together."""
    dx = v
    for _ in range(SIN_STEPS):
        dx = numpy.cos(x) * 1.0001 * dx + 0.01 * dx
        x = numpy.sin(x) * 1.0001 + 0.01 * x
    return numpy.sum(x), numpy.sum(dx)


def hand_dotchain(x, z):
    """d dotchain / dx: keep each z the backward pass needs, pop it when it is used."""
    stack = []
    for _ in range(DOT_STEPS):
        stack.append(z)
        z = numpy.dot(x, z)
    numpy.sum(z)
    g_z = numpy.ones_like(z)  # d sum(z) / dz
    g_x = None
    while stack:
        z_in = stack.pop()
        t = numpy.dot(g_z, z_in.T)  # z_out = x @ z_in: dx += g z_in^T, dz_in = x^T g
        if g_x is None:
            g_x = t
        else:
            g_x += t
        del t, z_in
        if stack:  # the first z needs no gradient
            g_z = numpy.dot(x.T, g_z)
    return g_x


def hand_tanhchain(x, z):
    """d tanhchain / dx: keep each step's output (tanh's derivative and the next step's input)."""
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
        z_in = stack.pop()
        g_pre = g * (1.0 - out * out)  # out = tanh(pre), pre = x @ z_in
        del g, out
        t = numpy.dot(g_pre, z_in.T)
        if g_x is None:
            g_x = t
        else:
            g_x += t
        del t
        g = numpy.dot(x.T, g_pre) if stack else None
        del g_pre
        out = z_in
        del z_in
    return g_x


def hand_dropped(b, a):
    """(d/db, d/da) of dropped: the dropped value is computed, and contributes nothing."""
    y = numpy.sin(a) * 2.0
    del y
    numpy.sum(b)
    return numpy.ones_like(b), numpy.zeros_like(a)


def _memory(W, h0, S):
    """The memory networks' buffer M (B, S+1, D) of W's and h0's dtype, h0 in slot 0."""
    B, D = h0.shape
    M = numpy.empty((B, S + 1, D), dtype=numpy.result_type(W, h0))
    M[:, 0] = h0
    return M


def _softmax_rows_inplace(s):
    """The softmax of each row of s (B, n), computed in s's own buffer."""
    s -= s.max(axis=1, keepdims=True)
    w = numpy.exp(s, out=s)
    w /= w.sum(axis=1, keepdims=True)
    return w


def _loss_cotangent(M, S):
    """d loss / d M of the memory networks' loss: minus the mean over the S + 1 slots, plus
    the last slot."""
    dM = numpy.full_like(M, -1.0 / (S + 1))
    dM[:, S] += 1.0
    return dM


def hand_memnet(W, x, S):
    """d/dW of memnet_inplace (and memnet_concat), by hand, in place.

    Forward: memory M (B, S+1, D) is preallocated; step i reads the prefix P = M[:, :i+1]
        q = tanh(P[:, -1] @ W)                   (B, D)
        w = softmax(einsum('bsd,bd->bs', P, q))  (B, i+1), over s
        h = einsum('bs,bsd->bd', w, P)           (B, D)
        M[:, i+1] = tanh(h @ W)
    and keeps (q, w, h) on a stack (P and the step's output stay in M, never overwritten).
    loss = sum(M[:, S]) - sum(mean(M, axis=1)).
    Backward: one cotangent buffer dM; step i, in reverse, reads the final cotangent of its
    output slot dM[:, i+1] (only later steps read that slot, and they are done) and adds its
    contributions into the slots it read, dM[:, :i+1], in place.
    """
    M = _memory(W, x, S)
    stack = []
    for i in range(S):
        n = i + 1
        P = M[:, :n]
        q = numpy.tanh(P[:, -1] @ W)
        s = numpy.einsum("bsd,bd->bs", P, q)
        w = _softmax_rows_inplace(s)
        h = numpy.einsum("bs,bsd->bd", w, P)
        numpy.tanh(h @ W, out=M[:, n])
        stack.append((q, w, h))
        del P, q, s, w, h

    dM = _loss_cotangent(M, S)
    dW = numpy.zeros_like(W)
    WT = W.T
    for i in range(S - 1, -1, -1):
        n = i + 1
        q, w, h = stack.pop()
        P = M[:, :n]
        out = M[:, n]
        g_v = dM[:, n] * (1.0 - out * out)  # through out = tanh(v), v = h @ W
        dW += h.T @ g_v
        g_h = g_v @ WT
        g_w = numpy.einsum("bd,bsd->bs", g_h, P)  # h = einsum(w, P)
        g_s = w * (g_w - numpy.sum(g_w * w, axis=1, keepdims=True))  # softmax
        g_q = numpy.einsum("bs,bsd->bd", g_s, P)  # s = einsum(P, q)
        dP = dM[:, :n]  # a view: the slots are updated in place
        dP += numpy.einsum("bs,bd->bsd", w, g_h)
        dP += numpy.einsum("bs,bd->bsd", g_s, q)
        g_u = g_q * (1.0 - q * q)  # q = tanh(u), u = P[:, -1] @ W
        dW += P[:, -1].T @ g_u
        dM[:, i] += g_u @ WT
        del q, w, h, P, out, g_v, g_h, g_w, g_s, g_q, dP, g_u
    return dW


def hand_attention(W, h0, q, b, S):
    """d/dW of attention_inplace (and attention_concat), by hand, in place.

    Forward: memory M (B, S+1, D); step i reads the prefix P = M[:, :i+1]
        w = softmax(einsum('bsd,d->bs', P, q))   (B, i+1)
        r = einsum('bs,bsd->bd', w, P)           (B, D)
        M[:, i+1] = tanh(r @ W + b)
    and keeps (w, r) on a stack: P and the step's output stay in M, never overwritten.
    Backward: one cotangent buffer dM, filled in place from the last step to the first.
    """
    M = _memory(W, h0, S)
    stack = []
    for i in range(S):
        n = i + 1
        P = M[:, :n]
        s = numpy.einsum("bsd,d->bs", P, q)
        w = _softmax_rows_inplace(s)
        r = numpy.einsum("bs,bsd->bd", w, P)
        v = r @ W
        v += b
        numpy.tanh(v, out=M[:, n])
        stack.append((w, r))
        del P, s, w, r, v
    dM = _loss_cotangent(M, S)
    dW = numpy.zeros_like(W)
    WT = W.T
    for i in range(S - 1, -1, -1):
        n = i + 1
        w, r = stack.pop()
        P = M[:, :n]
        out = M[:, n]
        g_v = dM[:, n] * (1.0 - out * out)  # out = tanh(v), v = r @ W + b
        dW += r.T @ g_v
        g_r = g_v @ WT
        g_w = numpy.einsum("bd,bsd->bs", g_r, P)  # r = einsum(w, P)
        g_w -= numpy.sum(g_w * w, axis=1, keepdims=True)
        g_w *= w  # softmax: g_s = w (g_w - <g_w, w>)
        dP = dM[:, :n]  # a view: the slots are updated in place
        dP += numpy.einsum("bs,bd->bsd", w, g_r)
        dP += numpy.einsum("bs,d->bsd", g_w, q)  # s = einsum(P, q)
        del w, r, P, out, g_v, g_r, g_w, dP
    return dW
