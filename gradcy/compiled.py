"""gradcy.jit: record a function once, then run it as native code (Numba kernels for its
elementwise runs, NumPy calls for the rest) at each call, guarded as const_graph is."""

import warnings
from collections.abc import Callable
from functools import partial
from typing import Any

import numpy as np

from . import _codegen
from ._core import Box
from .misc import tracers
from ._typing import R
from .wrap_util import wraps

__all__ = ["jit"]

_missing_warned = []


def _compiler(name):
    """The compile hook of const_graph_unary: the program with its kernels, checked once at the
    recording's inputs against the recorded value (a kernel that Numba cannot compile, or
    whose output differs beyond rounding, leaves the NumPy replay of the program in place,
    with a warning)."""

    def compile_recorded(prog, leaves, value):
        if any(type(v) is Box for v in leaves):
            # recorded under an outer differentiation (grad(jit(f))): the NumPy replay, whose
            # calls that differentiation traces (a native kernel would drop the gradient)
            return prog
        try:
            fast = _codegen.compile_program(prog, leaves)
            if fast is prog:
                return prog
            with np.errstate(all="ignore"):
                got = fast.replay(leaves)
        except Exception as e:  # Numba's typing and lowering errors, mostly
            warnings.warn(
                f"gradcy.jit: {name} runs as NumPy calls: a kernel did not compile "
                f"({type(e).__name__}: {str(e).splitlines()[0] if str(e) else ''})",
                RuntimeWarning,
                stacklevel=4,
            )
            return prog
        if not _close(got, value):
            warnings.warn(
                f"gradcy.jit: {name} runs as NumPy calls: its compiled program "
                f"disagreed with the recording",
                RuntimeWarning,
                stacklevel=4,
            )
            return prog
        return fast

    return compile_recorded


def _close(got, want):
    """got equals want within rounding, with the same structure, types, shapes and dtypes."""
    if isinstance(want, (tuple, list)):
        return type(got) is type(want) and len(got) == len(want) and all(map(_close, got, want))
    if isinstance(want, dict):
        return (
            type(got) is type(want)
            and got.keys() == want.keys()
            and all(_close(got[k], want[k]) for k in want)
        )
    if type(got) is not type(want):
        return False
    g, w = np.asarray(got), np.asarray(want)
    if g.shape != w.shape or g.dtype != w.dtype:
        return False
    if g.dtype.kind not in "fc":
        return bool(np.array_equal(g, w))
    tol = 64 * np.finfo(g.dtype).eps
    with np.errstate(all="ignore"):
        return bool(np.allclose(g, w, rtol=tol, atol=tol, equal_nan=True))


def jit(fun: Callable[..., R], *args: Any, **kwargs: Any) -> Callable[..., R]:
    """Compile ``fun`` from its recording: record once, then run native code at each call.

    The first call at a signature records ``fun`` as :func:`gradcy.misc.const_graph` does (the
    forward and backward pass of ``jit(grad(f))`` as one straight-line program of NumPy calls)
    and compiles the program: each run of consecutive elementwise operations on arrays of one
    shape (``sin``, ``*``, ``tanh``, ``where``, comparisons... forward and backward alike)
    becomes one Numba loop over the data, with no temporaries; then the runs of steps Numba can
    run (those kernels, products of 2-d arrays as BLAS calls, NumPy's own SIMD loops of
    ``tanh``, ``exp``..., in-place gradient accumulations, basic indexing, writes, axis sums)
    that a loop of ``fun`` repeats become native functions, one per distinct repeat, so the
    program's per-step Python dispatch is gone; a sum of two ``einsum`` outer products (the
    cotangents of a product's operand) is one kernel; an ``einsum`` that is a (batched)
    matrix or matrix-vector product is one ``matmul`` (BLAS) where the result stays within the
    compile check's rounding; anything else stays the NumPy call it was. The buffers follow
    the recording's lifetimes, as a hand-written gradient's would: a value written into a
    buffer is read back from it, and a view the backward pass reads again is taken again there
    rather than kept. Later calls run the compiled program. Kernels and native functions are
    kept on disk (Numba's ``cache=True``, each file sealed by its SHA-256, under
    ``$GRADCY_JIT_CACHE``, default ``~/.cache/gradcy/jit``; empty: off), so a later process
    loads them instead of compiling them again. The guards are
    const_graph's: the structure, types, shapes and dtypes of the arguments and every value
    Python code read from a traced value (a branch, ``int(x)``, the shape of ``x[x > 0]``)
    are checked at each call, and a call where one differs records and compiles again (the last
    16 programs are kept): a stale program never runs. Values that do not depend on the
    arguments (globals, closures, random draws) are the first call's.

    Called with values an outer differentiation traces (``grad(jit(f))``), ``jit`` runs the
    NumPy replay, which that differentiation follows, as ``const_graph``'s.

    Numba is an optional dependency (``pip install gradcy[jit]``); without it ``jit`` runs the
    NumPy replay of :func:`~gradcy.misc.const_graph` and warns once. A recorded write into a
    buffer (``memory[:, i] = h`` in a function differentiated by ``grad``) is made in the
    buffer where no value still to be read sees the written elements (else on a copy, as
    const_graph does); a function whose own value depends on a write cannot be replayed:
    ``jit`` warns once and runs it eagerly.
    The results equal eager gradcy's within rounding: ``+ - * /`` and comparisons give NumPy's
    bits, while ``sin``, ``tanh``, ``exp`` and the like call the C library's functions, which
    may differ from NumPy's in the last place.

    Parameters
    ----------
    fun : callable
        The function, for instance ``grad(loss)`` or ``value_and_grad(loss)``.
    *args, **kwargs
        Bound to ``fun`` first (as ``functools.partial``).

    Returns
    -------
    callable
        ``fast_fun(*xs)``: ``fun(*args, *xs, **kwargs)``, compiled at its first call per
        signature; arguments by position only.

    Examples
    --------
    >>> import numpy as onp
    >>> import gradcy.numpy as np
    >>> from gradcy import grad, jit
    >>> def loss(x):
    ...     for _ in range(3):
    ...         x = np.sin(x) * 1.0001 + 0.01 * x
    ...     return np.sum(x)
    >>> fast = jit(grad(loss))
    >>> x = onp.array([0.1, 0.2, 0.3])
    >>> bool(onp.allclose(fast(x), grad(loss)(x)))      # records and compiles
    True
    >>> y = onp.array([-0.5, 1.0, 2.0])
    >>> bool(onp.allclose(fast(y), grad(loss)(y)))      # runs the compiled program
    True
    """
    name = getattr(fun, "__name__", type(fun).__name__)
    partial_fun = partial(fun, *args, **kwargs)
    if _codegen.numba_module() is None:
        if not _missing_warned:
            _missing_warned.append(True)
            warnings.warn(
                "gradcy.jit: numba is not installed (pip install gradcy[jit]); "
                "running the NumPy replay (const_graph) instead",
                RuntimeWarning,
                stacklevel=2,
            )
        compile_hook = None
    else:
        compile_hook = _compiler(name)
    cached = tracers.const_graph_unary(lambda xs: partial_fun(*xs), compile=compile_hook)
    eager = []

    @wraps(fun)
    def _fun(*xs, **kw):
        if kw:
            raise tracers._positional_only("gradcy.jit", kw, "compiled")
        if eager:
            return partial_fun(*xs)
        try:
            return cached(xs)
        except tracers.ReplayedWriteError:
            warnings.warn(
                f"gradcy.jit: {name} writes into arrays, which a recorded program "
                f"cannot replay; running it eagerly",
                RuntimeWarning,
                stacklevel=2,
            )
            eager.append(True)
            return partial_fun(*xs)
        except (NotImplementedError, ValueError) as e:
            msg = str(e)
            if not msg.startswith("const_graph: "):
                raise
            # the recording's errors, under the name the user called
            raise type(e)("gradcy.jit: " + msg[len("const_graph: ") :]) from e

    _fun.programs = cached.programs
    return _fun
