"""What benchmarks/peers.py measures: each workload written for each library.

numpy is the hand-written gradient (benchmarks/reference_gradients.py); gradcy, autograd and
JAX run the functions of reference_gradients.py on their NumPy-like modules; PyTorch has its own
spelling here (torch.matmul, requires_grad leaves). build(lib, workload, params, variant) gives
the worker one timed unit of work.

memnet is written two ways, each a row: in place (memory = zeros((B, S + 1, D));
memory[:, i + 1] = cell(memory[:, :i + 1], W)) and by concatenation. The cell's softmax is one
primitive in gradcy (gradcy.scipy.special.softmax) and PyTorch (torch.softmax); autograd and JAX
spell it with max, exp and sum. PyTorch rejects the plain in-place version (the buffer's
version counter changes after the prefix is saved), so its in-place row clones each read.

attention is gradcy issue 13's network as a user writes it (reference_gradients.
attention_inplace): every library spells the softmax with max, exp and sum, and writes in place
where it can (gradcy; PyTorch with a clone of each read) beside the concatenating version.
"""

import numpy

import reference_gradients as ref

LIBS = ("numpy", "gradcy", "autograd", "torch", "jax")
LIB_LABEL = {
    "numpy": "numpy (hand)",
    "gradcy": "gradcy",
    "autograd": "autograd",
    "torch": "torch (CPU)",
    "jax": "jax (eager)",
}
WORKLOADS = ("overhead", "untraced", "dotchain", "tanhchain", "dropped", "memnet", "attention")

# Rows per library: most workloads have one way of writing them (variant None); memnet has the
# in-place and the concatenating one.
VARIANTS = {
    "memnet": {
        "numpy": ("inplace",),
        "gradcy": ("inplace", "concat"),
        "autograd": ("concat",),
        "torch": ("concat", "inplace"),
        "jax": ("concat",),
    },
    "attention": {
        "numpy": ("inplace",),
        "gradcy": ("inplace", "recompute", "concat"),
        "autograd": ("concat",),
        "torch": ("concat", "inplace"),
        "jax": ("concat",),
    },
}
VARIANT_LABEL = {
    "inplace": "in-place",
    "concat": "concat",
    "recompute": "in-place, recompute='elementwise'",
}


class Unsupported(Exception):
    """This library cannot run this workload (shown as n/a with the message)."""


def variants(name, lib):
    return VARIANTS.get(name, {}).get(lib, (None,))


def lib_label(lib, variant):
    base = LIB_LABEL[lib]
    if variant is None:
        return base
    v = VARIANT_LABEL[variant]
    if lib == "numpy":
        return f"numpy (hand, {v})"
    if lib == "torch" and variant == "inplace":
        v = "in-place, clone of each read"
    if base.endswith(")"):
        return f"{base[:-1]}, {v})"
    return f"{base} ({v})"


# =============================================================================
# Parameters of a run
# =============================================================================
def workload_params(args):
    """Per-workload settings: inner = calls per timed run (time is reported per call)."""
    quick = args.quick
    return {
        "overhead": {"unit": "grad", "inner": 1 if quick else 3, "small": True},
        "untraced": {"unit": "call", "inner": 5000 if quick else 20000, "small": True},
        "dotchain": {"unit": "grad", "inner": 1, "small": False, "D": args.D},
        "tanhchain": {"unit": "grad", "inner": 1, "small": False, "D": args.D},
        "dropped": {"unit": "iter", "inner": 500 if quick else 2000, "small": True},
        "memnet": {
            "unit": "grad",
            "inner": 1,
            "small": False,
            "S": getattr(args, "S", None),
            "B": ref.MEMNET_B,
            "D": ref.MEMNET_D,
        },
        "attention": {
            "unit": "grad",
            "inner": 1,
            "small": False,
            "S": getattr(args, "S", None),
            "B": ref.MEMNET_B,
            "D": ref.MEMNET_D,
        },
    }


def workload_label(name, p):
    return {
        "overhead": f"overhead: {ref.SIN_STEPS} sin steps, 3 elems",
        "untraced": "untraced: sin on 3 elems",
        "dotchain": f"dotchain: {ref.DOT_STEPS} dots, D={p.get('D')}",
        "tanhchain": f"tanhchain: {ref.TANH_STEPS} tanh(dot), D={p.get('D')}",
        "dropped": "dropped: create-and-drop, 2x2",
        "memnet": f"memnet: B={p.get('B')}, D={p.get('D')}, S={p.get('S')}",
        "attention": f"attention: B={p.get('B')}, D={p.get('D')}, S={p.get('S')}",
    }[name]


def make_data(name, p):
    if name == "dotchain":
        return ref.dotchain_inputs(p["D"])
    if name == "tanhchain":
        return ref.tanhchain_inputs(p["D"])
    if name == "memnet":
        return ref.memnet_inputs(p["B"], p["D"])
    if name == "attention":
        return ref.attention_inputs(p["B"], p["D"])
    rng = numpy.random.RandomState(ref.SEED)
    if name in ("overhead", "untraced"):
        return (rng.standard_normal(3),)
    if name == "dropped":
        return rng.standard_normal((2, 2)), rng.standard_normal((2, 2))  # (b, a)
    raise ValueError(name)


# =============================================================================
# The hand-written NumPy gradients (the baseline) and the traced libraries
# =============================================================================
def _untraced(sin, n, block=lambda r: r):
    """n calls of sin(x), outside any differentiation: the price of the wrapper."""

    def calls(x):
        for _ in range(n):
            y = sin(x)
        return block(y)

    return calls


def _hand(name, p):
    if name == "untraced":
        return _untraced(numpy.sin, p["inner"])
    if name == "dropped":
        n = p["inner"]

        def loop(b, a):
            for _ in range(n):
                res = ref.hand_dropped(b, a)
            return res

        return loop
    if name == "memnet":
        S = p["S"]
        return lambda W, x: ref.hand_memnet(W, x, S)
    if name == "attention":
        S = p["S"]
        return lambda W, h0, q, b: ref.hand_attention(W, h0, q, b, S)
    return {
        "overhead": ref.hand_sinchain,
        "dotchain": ref.hand_dotchain,
        "tanhchain": ref.hand_tanhchain,
    }[name]


def memnet_softmax(m):
    """The softmax over axis 1 the memnet cell uses for module m: gradcy's softmax primitive
    (gradcy.scipy.special.softmax, one node that saves only its output) for gradcy.numpy, as
    PyTorch's row uses torch.softmax; the max/exp/sum spelling for the others (autograd has no
    softmax), and for gradcy without SciPy."""
    if getattr(m, "__name__", "") == "gradcy.numpy":
        try:
            from gradcy.scipy.special import softmax
        except ImportError:
            pass
        else:
            return lambda scores: softmax(scores, axis=1)
    return ref.softmax_rows(m)


def memnet_functions(m, softmax=None):
    """{"memnet_inplace": f, "memnet_concat": f} for a NumPy-like module m, f(W, x, S) -> loss;
    softmax(scores) over axis 1, default memnet_softmax(m)."""
    softmax = softmax or memnet_softmax(m)
    return {
        "memnet_inplace": ref.memnet_inplace(m, softmax),
        "memnet_concat": ref.memnet_concat(m, softmax),
    }


def _functions(m):
    fns = {
        "overhead": ref.sinchain(m),
        "dotchain": ref.dotchain(m),
        "tanhchain": ref.tanhchain(m),
        "dropped": ref.dropped(m),
    }
    fns.update(memnet_functions(m))
    fns.update(
        {"attention_inplace": ref.attention_inplace(m), "attention_concat": ref.attention_concat(m)}
    )
    return fns


def _traced_lib(name, p, m, grad, block=lambda r: r, tuple_kw="argnum", variant=None):
    fns = _functions(m)
    if name == "memnet":
        dmem = grad(fns["memnet_" + variant])
        S = p["S"]
        return lambda W, x: block(dmem(W, x, S))
    if name == "attention":
        datt = (
            grad(fns["attention_inplace"], recompute="elementwise")
            if variant == "recompute"
            else grad(fns["attention_" + variant])
        )
        S = p["S"]
        return lambda W, h0, q, b: block(datt(W, h0, q, b, S))
    if name == "untraced":
        return _untraced(m.sin, p["inner"], block)
    if name == "dropped":
        df = grad(fns["dropped"], **{tuple_kw: (0, 1)})
        n = p["inner"]

        def loop(b, a):
            for _ in range(n):
                res = df(b, a)
            return block(res)

        return loop
    df = grad(fns[name])
    return lambda *args: block(df(*args))


# Each library is imported in the worker that runs it only: the others are optional, and the
# hand-written baseline's process does not hold gradcy.
def _gradcy(name, p, variant=None):
    import gradcy.numpy as gnp
    from gradcy import grad

    return _traced_lib(name, p, gnp, grad, variant=variant)


def _autograd(name, p, variant=None):
    import autograd.numpy as anp
    from autograd import grad

    if variant == "inplace":
        raise Unsupported("autograd does not support assignment into arrays")
    return _traced_lib(name, p, anp, grad, variant=variant)


def _jax(name, p, variant=None):
    import jax

    jax.config.update("jax_enable_x64", True)
    import jax.numpy as jnp

    def block(r):
        return jax.block_until_ready(r)

    if variant == "inplace":
        raise Unsupported("jax arrays are immutable (use .at[].set)")
    run = _traced_lib(name, p, jnp, jax.grad, block=block, tuple_kw="argnums", variant=variant)
    to_dev = jnp.asarray
    if name == "untraced":
        # convert once: the workload is the call on a device array
        return run, lambda args: tuple(to_dev(a) for a in args)
    return run, None


def memnet_torch_grad(torch, Wn, xn, S, variant):
    """d/dW of the memory network in PyTorch. concat: torch.cat per step; inplace: a
    preallocated memory written with memory[:, i + 1] = out, each read cloned (without the
    clone, backward fails: the prefix saved by einsum is modified by later writes)."""
    W = torch.from_numpy(Wn).requires_grad_()
    x = torch.from_numpy(xn)

    def cell(prefix):
        q = torch.tanh(prefix[:, -1] @ W)
        scores = torch.einsum("bsd,bd->bs", prefix, q)
        w = torch.softmax(scores, dim=1)
        return torch.tanh(torch.einsum("bs,bsd->bd", w, prefix) @ W)

    if variant == "concat":
        memory = x.unsqueeze(1)
        for _ in range(S):
            out = cell(memory)
            memory = torch.cat([memory, out.unsqueeze(1)], dim=1)
    else:
        memory = torch.zeros((x.shape[0], S + 1, x.shape[1]), dtype=x.dtype)
        memory[:, 0] = x
        for i in range(S):
            out = cell(memory[:, : i + 1].clone())
            memory[:, i + 1] = out
    loss = memory[:, -1].sum() - memory.mean(dim=1).sum()
    return torch.autograd.grad(loss, (W,))[0]


def attention_torch_grad(torch, Wn, h0n, qn, bn, S, variant):
    """d/dW of the attention network in PyTorch (softmax spelled with max, exp and sum, as
    the user wrote it). inplace: each read of the memory cloned (see memnet_torch_grad)."""
    W = torch.from_numpy(Wn).requires_grad_()
    h0, q, b = torch.from_numpy(h0n), torch.from_numpy(qn), torch.from_numpy(bn)

    def cell(prefix):
        scores = torch.einsum("bsd,d->bs", prefix, q)
        w = torch.exp(scores - scores.max(dim=1, keepdim=True)[0])
        w = w / w.sum(dim=1, keepdim=True)
        return torch.tanh(torch.einsum("bs,bsd->bd", w, prefix) @ W + b)

    if variant == "concat":
        mem = h0.unsqueeze(1)
        for _ in range(S):
            mem = torch.cat([mem, cell(mem).unsqueeze(1)], dim=1)
    else:
        mem = torch.zeros((h0.shape[0], S + 1, h0.shape[1]), dtype=h0.dtype)
        mem[:, 0] = h0
        for i in range(S):
            mem[:, i + 1] = cell(mem[:, : i + 1].clone())
    loss = mem[:, -1].sum() - mem.mean(dim=1).sum()
    return torch.autograd.grad(loss, (W,))[0]


def _torch(name, p, variant=None):
    import torch

    torch.set_num_threads(1)
    try:
        torch.set_num_interop_threads(1)
    except RuntimeError:
        pass
    tg = torch.autograd.grad
    leaf = torch.from_numpy  # shares memory with the NumPy input: no copy

    if name == "overhead":
        f = ref.sinchain(torch)

        def grad_overhead(xn):
            x0 = leaf(xn).requires_grad_()
            return tg(f(x0), (x0,))[0]

        return grad_overhead, None
    if name == "untraced":
        return _untraced(torch.sin, p["inner"]), lambda args: tuple(leaf(a) for a in args)
    if name == "dotchain":

        def grad_dotchain(xn, zn):
            x0 = leaf(xn).requires_grad_()
            z = leaf(zn)
            for _ in range(ref.DOT_STEPS):
                z = torch.matmul(x0, z)
            return tg(z.sum(), (x0,))[0]

        return grad_dotchain, None
    if name == "tanhchain":

        def grad_tanhchain(xn, zn):
            x0 = leaf(xn).requires_grad_()
            z = leaf(zn)
            for _ in range(ref.TANH_STEPS):
                z = torch.tanh(torch.matmul(x0, z))
            return tg(z.sum(), (x0,))[0]

        return grad_tanhchain, None
    if name == "dropped":
        n = p["inner"]

        def loop(bn, an):
            for _ in range(n):
                b = leaf(bn).requires_grad_()
                a = leaf(an).requires_grad_()
                y = torch.sin(a) * 2.0
                del y
                gb, ga = tg(b.sum(), (b, a), allow_unused=True)
                if ga is None:
                    ga = torch.zeros_like(a)
                res = (gb, ga)
            return res

        return loop, None
    if name == "memnet":
        S = p["S"]
        return (lambda Wn, xn: memnet_torch_grad(torch, Wn, xn, S, variant)), None
    if name == "attention":
        S = p["S"]
        return (
            lambda Wn, h0n, qn, bn: attention_torch_grad(torch, Wn, h0n, qn, bn, S, variant)
        ), None
    raise ValueError(name)


def build(lib, name, p, variant=None):
    """(run, convert): run(*data) does one timed unit of work; convert(data) -> data prepared
    once outside the timing (None: use the NumPy data as is)."""
    if variant not in variants(name, lib):
        raise Unsupported(f"no {variant!r} variant of {name} for {lib}")
    if lib == "numpy":
        return _hand(name, p), None
    if lib == "gradcy":
        return _gradcy(name, p, variant), None
    if lib == "autograd":
        return _autograd(name, p, variant), None
    if lib == "torch":
        return _torch(name, p, variant)
    if lib == "jax":
        return _jax(name, p, variant)
    raise Unsupported(f"unknown library {lib!r}")
