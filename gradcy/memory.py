"""What the engine holds, and when: counters and a memory timeline of one differentiation.

    gradcy.memory.stats()                       # live tapes/nodes, saved bytes now and at peak
    prof = gradcy.memory.profile(f)(x)          # gradient of f at x, with a timeline
    print(prof.summary())                       # peak, and the op and source line holding most
    prof.plot("timeline.png", baseline=hand_written_grad, baseline_args=(x,))

The counters are the core's own (no sampling): saved bytes are the buffers the tape holds for
VJPs (each buffer counted once), cotangent bytes the gradients in flight.
"""

import os
import sys
import time
import tracemalloc
from collections.abc import Callable
from types import FrameType
from typing import Any, TypeAlias

import numpy as _np

from . import _core
from ._tracing import _grad_of, _trace
from ._typing import ArgNum, P

# (op, 'file:line'): where an operation was recorded
Site: TypeAlias = tuple[str, str]
# (step, phase, node, op, saved_bytes, cotangent_bytes, traced_bytes): MemoryProfile.events
Event: TypeAlias = tuple[int, str, int, str, int, int, int]

__all__ = [
    "stats",
    "reset_peak",
    "profile",
    "MemoryProfile",
    "trace_memory",
    "saved_audit",
    "SavedAudit",
]

_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))


def stats() -> dict[str, int]:
    """The engine's memory counters, over all tapes of the process.

    Returns
    -------
    dict
        ``live_tapes`` and ``live_nodes``: differentiations and recorded operations alive now;
        ``saved_bytes``: the bytes of the buffers tapes hold for backward passes (each buffer
        counted once); ``cotangent_bytes``: the bytes of gradients in flight;
        ``peak_saved_bytes`` and ``peak_bytes`` (saved + cotangent): their maxima since the
        start or the last `reset_peak`.

    Examples
    --------
    >>> import gradcy.memory
    >>> s = gradcy.memory.stats()
    >>> sorted(s)
    ['cotangent_bytes', 'live_nodes', 'live_tapes', 'peak_bytes', 'peak_saved_bytes', 'saved_bytes']
    >>> s["live_tapes"], s["saved_bytes"]        # nothing is held between differentiations
    (0, 0)
    """
    return _core.stats()


def reset_peak() -> None:
    """Restart the peak counters of `stats` from what is held now.

    Examples
    --------
    >>> import numpy as onp
    >>> import gradcy.memory
    >>> import gradcy.numpy as np
    >>> from gradcy import grad
    >>> gradcy.memory.reset_peak()
    >>> g = grad(lambda x: np.sum(np.sin(x)))(onp.ones(1000))
    >>> gradcy.memory.stats()["peak_saved_bytes"]       # sin saved its 8000-byte input
    8000
    >>> gradcy.memory.reset_peak()
    >>> gradcy.memory.stats()["peak_saved_bytes"]
    0
    """
    _core.reset_peak()


def _user_line() -> str:
    """file:line of the innermost frame outside the gradcy package."""
    frame: FrameType | None = sys._getframe(2)
    while frame is not None and frame.f_code.co_filename.startswith(_PACKAGE_DIR):
        frame = frame.f_back
    if frame is None:
        return "?"
    return f"{os.path.basename(frame.f_code.co_filename)}:{frame.f_lineno}"


class MemoryProfile:
    """The memory timeline of one differentiation, as returned by `profile`.

    Attributes
    ----------
    gradient
        The gradient computed.
    value
        The function's value.
    elapsed : float
        Seconds the differentiation took (with the profiling).
    events : list of tuple
        One row per event, ``(step, phase, node, op, saved_bytes, cotangent_bytes,
        traced_bytes)``: ``phase`` is ``'forward'`` (an operation was recorded),
        ``'backward'`` (a VJP ran or a saved record was freed during the backward pass) or
        ``'release'`` (a saved record was freed earlier: dead or unreachable values);
        ``traced_bytes`` is tracemalloc's count (0 when tracemalloc is not tracing).
    peak_bytes : int
        The largest saved + cotangent bytes, at event ``peak_step``.
    peak_sites : dict
        ``(op, 'file:line') -> bytes`` held at the peak by the operations recorded there.

    Examples
    --------
    >>> import numpy as onp
    >>> import gradcy.memory
    >>> import gradcy.numpy as np
    >>> prof = gradcy.memory.profile(lambda x: np.sum(np.tanh(x) ** 2))(onp.ones(1000))
    >>> [e[1] for e in prof.events][:3]
    ['forward', 'forward', 'forward']
    >>> prof.peak_bytes >= 16000                  # tanh and the square each saved 8000 bytes
    True
    """

    def __init__(self) -> None:
        self.events: list[Event] = []
        self.gradient: Any = None
        self.value: Any = None
        self.elapsed = 0.0
        self._by_site: dict[Site, int] = {}  # saved bytes held now by nodes recorded there
        self._site_of: dict[int, Site] = {}  # node -> (op, line)
        self._last_saved = 0  # the tape's saved bytes at the previous event
        self.peak_bytes = 0
        self.peak_step = 0
        self.peak_sites: dict[Site, int] = {}  # (op, line) -> bytes held at the peak
        self._phase = "forward"

    # the tape's observer
    def __call__(
        self, event: str, index: int, name: str, saved_bytes: int, cotangent_bytes: int
    ) -> None:
        traced = tracemalloc.get_traced_memory()[0] if tracemalloc.is_tracing() else 0
        step = len(self.events)
        # saved bytes change only at these events, so the difference is this event's share
        delta = saved_bytes - self._last_saved
        self._last_saved = saved_bytes
        if event == "forward":
            site = (name, _user_line())
            self._site_of[index] = site
            self._by_site[site] = self._by_site.get(site, 0) + delta
        elif event == "release":
            held = self._site_of.get(index)
            if held is not None:
                self._by_site[held] = max(0, self._by_site[held] + delta)
            if self._phase == "backward":
                event = "backward"
        self.events.append((step, event, index, name, saved_bytes, cotangent_bytes, traced))
        total = saved_bytes + cotangent_bytes
        if total > self.peak_bytes:
            self.peak_bytes = total
            self.peak_step = step
            self.peak_sites = {k: v for k, v in self._by_site.items() if v}

    def top_site(self) -> tuple[str, str, int] | None:
        """The operation and source line holding the most saved bytes at the peak.

        Returns
        -------
        tuple or None
            ``(op, 'file:line', bytes)``, or None if nothing was saved.

        Examples
        --------
        >>> import numpy as onp
        >>> import gradcy.memory
        >>> import gradcy.numpy as np
        >>> def f(x):
        ...     y = np.dot(x, x)
        ...     return np.sum(np.sin(y))
        >>> op, line, nbytes = gradcy.memory.profile(f)(onp.ones((100, 100))).top_site()
        >>> op, nbytes                                # dot saved both 80000-byte operands once
        ('gradcy.numpy.dot', 80000)
        """
        if not self.peak_sites:
            return None
        (op, line), nbytes = max(self.peak_sites.items(), key=lambda kv: kv[1])
        return op, line, nbytes

    def summary(self) -> str:
        """A few lines of text: the peak, when it happened and what held the most then.

        Examples
        --------
        >>> import numpy as onp
        >>> import gradcy.memory
        >>> import gradcy.numpy as np
        >>> prof = gradcy.memory.profile(lambda x: np.sum(np.tanh(np.dot(x, x))))(onp.eye(100))
        >>> print(prof.summary())
        gradcy memory profile: 3 nodes recorded, ... events, ... ms
        peak saved + cotangent bytes: ... MiB at event ... (...)
        most held at the peak: gradcy.numpy... at ...
        """
        n_fwd = sum(1 for e in self.events if e[1] == "forward")
        lines = [
            f"gradcy memory profile: {n_fwd} nodes recorded, {len(self.events)} events, "
            f"{self.elapsed * 1e3:.1f} ms",
            f"peak saved + cotangent bytes: {_mb(self.peak_bytes)} at event "
            f"{self.peak_step} ({self.events[self.peak_step][1] if self.events else '-'})",
        ]
        top = self.top_site()
        if top:
            lines.append(f"most held at the peak: {top[0]} at {top[1]} ({_mb(top[2])})")
        return "\n".join(lines)

    def plot(
        self,
        path: str,
        baseline: Callable[..., Any] | None = None,
        baseline_args: tuple[Any, ...] = (),
        baseline_label: str = "hand-written NumPy",
        title: str | None = None,
    ) -> str:
        """Draw the timeline to a PNG file (needs matplotlib).

        Parameters
        ----------
        path : str
            The file to write.
        baseline : callable, optional
            A function computing the same gradient by hand (plain NumPy); its tracemalloc
            timeline (`trace_memory`) is drawn beside gradcy's, both against the fraction of their
            run.
        baseline_args : tuple, optional
            The arguments of ``baseline``.
        baseline_label : str, optional
            Its legend entry.
        title : str, optional
            The plot's title.

        Returns
        -------
        str
            ``path``.

        Examples
        --------
        >>> import os, tempfile
        >>> import numpy as onp
        >>> import gradcy.memory
        >>> import gradcy.numpy as np
        >>> prof = gradcy.memory.profile(lambda x: np.sum(np.sin(x) ** 2))(onp.ones(1000))
        >>> by_hand = lambda x: 2 * onp.sin(x) * onp.cos(x)
        >>> path = prof.plot(os.path.join(tempfile.mkdtemp(), "timeline.png"),
        ...                  baseline=by_hand, baseline_args=(onp.ones(1000),))
        >>> os.path.getsize(path) > 0
        True
        """
        try:
            import matplotlib

            matplotlib.use("Agg")
            import matplotlib.pyplot as plt
        except ImportError as exc:
            raise ImportError(
                "MemoryProfile.plot needs matplotlib: pip install 'gradcy[plot]'"
            ) from exc
        fig, ax = plt.subplots(figsize=(8, 4.5))
        n = max(len(self.events) - 1, 1)
        xs = [e[0] / n for e in self.events]
        ax.plot(
            xs,
            [(e[4] + e[5]) / 2**20 for e in self.events],
            label="gradcy: saved + cotangent (engine counters)",
            lw=2,
        )
        if any(e[6] for e in self.events):
            base = self.events[0][6]
            ax.plot(
                xs,
                [(e[6] - base) / 2**20 for e in self.events],
                ls=":",
                label="gradcy: tracemalloc",
            )
        first_bwd = next((e[0] for e in self.events if e[1] == "backward"), None)
        if first_bwd is not None:
            ax.axvspan(first_bwd / n, 1.0, color="0.92", zorder=0, label="backward pass")
        if baseline is not None:
            curve = trace_memory(baseline, *baseline_args)
            m = max(len(curve) - 1, 1)
            ax.plot(
                [i / m for i in range(len(curve))],
                [c / 2**20 for c in curve],
                ls="--",
                label=f"{baseline_label}: tracemalloc",
            )
        ax.set_xlabel("fraction of the run (events)")
        ax.set_ylabel("MiB")
        ax.set_title(title or "Memory held over one differentiation")
        ax.legend(loc="upper left", fontsize=8)
        fig.tight_layout()
        fig.savefig(path, dpi=110)
        plt.close(fig)
        return path


def _mb(n: float) -> str:
    return f"{n / 2**20:.2f} MiB"


def profile(fun: Callable[P, Any], argnum: ArgNum = 0) -> Callable[P, MemoryProfile]:
    """Compute a gradient and record a memory timeline of it.

    Parameters
    ----------
    fun : callable
        A function returning a real scalar, as for `gradcy.grad`.
    argnum : int or tuple of int, optional
        The positional argument(s) to differentiate with respect to (default 0).

    Returns
    -------
    callable
        ``profiled(*args, **kwargs) -> MemoryProfile`` of computing
        ``grad(fun, argnum)(*args, **kwargs)``; the gradient is in its ``gradient`` attribute
        and ``fun``'s value in ``value``. If tracemalloc is running, its counts are recorded
        too.

    Examples
    --------
    >>> import numpy as onp
    >>> import gradcy.memory
    >>> import gradcy.numpy as np
    >>> prof = gradcy.memory.profile(lambda x: np.sum(np.sin(x)))(onp.zeros(3))
    >>> print(prof.gradient, prof.value)
    [1. 1. 1.] 0.0
    >>> prof.top_site()[0]
    'gradcy.numpy.sin'
    """

    def profiled(*args: P.args, **kwargs: P.kwargs) -> MemoryProfile:
        prof = MemoryProfile()
        start = time.perf_counter()
        vjp, ans = _trace(fun, args, kwargs, argnum, "profile", consume=True, observer=prof)
        prof._phase = "backward"
        prof.gradient = _grad_of(vjp, ans, "profile", False)
        prof.value = ans
        prof.elapsed = time.perf_counter() - start
        return prof

    return profiled


def trace_memory(fn: Callable[P, Any], *args: P.args, **kwargs: P.kwargs) -> list[int]:
    """The memory timeline of plain Python/NumPy code, by tracemalloc.

    Parameters
    ----------
    fn : callable
        The function to run, with ``*args`` and ``**kwargs``.

    Returns
    -------
    list of int
        tracemalloc's traced bytes, relative to the start, sampled after every call ``fn``
        makes into C (every NumPy call).

    Examples
    --------
    >>> import numpy as onp
    >>> import gradcy.memory
    >>> samples = gradcy.memory.trace_memory(lambda n: onp.ones(n).sum(), 10 ** 6)
    >>> max(samples) >= 8 * 10 ** 6               # the 8 MB array of ones
    True
    """
    was_tracing = tracemalloc.is_tracing()
    if not was_tracing:
        tracemalloc.start()
    samples: list[int] = []
    base = tracemalloc.get_traced_memory()[0]
    get = tracemalloc.get_traced_memory

    def hook(frame: FrameType, event: str, arg: Any) -> None:
        if event == "c_return":
            samples.append(get()[0] - base)

    sys.setprofile(hook)
    try:
        fn(*args, **kwargs)
    finally:
        sys.setprofile(None)
        if not was_tracing:
            tracemalloc.stop()
    return samples


class SavedAudit:
    """What the saved records of one differentiation hold when its forward pass ends, as
    returned by `saved_audit`.

    Every root buffer held by a saved record is counted once, for the first node (in recording
    order) that holds it, so the rows add up to the tape's saved bytes.

    Attributes
    ----------
    total : int
        Bytes held by saved records at the end of the forward pass (the tape's count).
    by_site : dict
        ``(op, 'file:line') -> [nodes recorded there, bytes held]``.
    by_op : dict
        ``op -> [nodes, bytes]``.
    gradient
        The gradient computed.

    Examples
    --------
    >>> import numpy as onp
    >>> import gradcy.memory
    >>> import gradcy.numpy as np
    >>> a = gradcy.memory.saved_audit(lambda x: np.sum(np.exp(x) * x))(onp.zeros(100))
    >>> a.total, sorted(a.by_op)                  # multiply keeps exp(x) and x: 800 bytes each
    (1600, ['gradcy.numpy.exp', 'gradcy.numpy.multiply', 'gradcy.numpy.sum'])
    >>> print(a.table().splitlines()[0])
           bytes   nodes  op at call site
    """

    def __init__(self) -> None:
        self.total = 0
        self.by_site: dict[Site, list[int]] = {}
        self.by_op: dict[str, list[int]] = {}
        self.gradient: Any = None
        self._sites: dict[int, Site] = {}

    def __call__(
        self, event: str, index: int, name: str, saved_bytes: int, cotangent_bytes: int
    ) -> None:
        if event == "forward":
            self._sites[index] = (name, _user_line())

    def table(self) -> str:
        """The rows as text, biggest first."""
        lines = [f"{'bytes':>12}  {'nodes':>6}  op at call site"]
        for (op, site), (n, b) in sorted(self.by_site.items(), key=lambda kv: -kv[1][1]):
            lines.append(f"{b:>12}  {n:>6}  {op} at {site}")
        lines.append(f"{self.total:>12}  {'':>6}  total")
        return "\n".join(lines)


def _held_roots(record: tuple[Any, Any, Any]) -> list[_np.ndarray[Any, Any]]:
    """The root ndarrays a saved record (ans, args, kwargs) holds."""
    ans, args, kwargs = record
    items = [ans] + list(args) + (list(kwargs.values()) if type(kwargs) is dict else [])
    return [_core.root_buffer(v) for v in items if isinstance(v, _np.ndarray)]


def saved_audit(fun: Callable[P, Any], argnum: ArgNum = 0) -> Callable[P, SavedAudit]:
    """Compute a gradient and report, per operation and call site, the bytes the tape holds for
    the backward pass when the forward pass ends (benchmarks/saved_bytes_audit.py prints them
    beside what a hand-written gradient keeps).

    Returns
    -------
    callable
        ``audited(*args, **kwargs) -> SavedAudit``.

    Examples
    --------
    >>> import numpy as onp
    >>> import gradcy.memory
    >>> import gradcy.numpy as np
    >>> a = gradcy.memory.saved_audit(lambda x: np.sum(np.sin(x) * 2.0))(onp.ones(1000))
    >>> a.total, a.by_op["gradcy.numpy.sin"]          # sin keeps x; * 2.0 keeps nothing of x
    (8000, [1, 8000])
    """

    def audited(*args: P.args, **kwargs: P.kwargs) -> SavedAudit:
        audit = SavedAudit()
        vjp, ans = _trace(fun, args, kwargs, argnum, "saved_audit", consume=True, observer=audit)
        tape = vjp._tape
        seen: set[int] = set()
        for i in range(len(tape)):
            info = tape.node_info(i)
            if info["saved"] is None or i not in audit._sites:
                continue
            site = audit._sites[i]
            fresh = 0
            for root in _held_roots(info["saved"]):
                if id(root) not in seen:
                    seen.add(id(root))
                    fresh += root.nbytes
            for row in (
                audit.by_site.setdefault(site, [0, 0]),
                audit.by_op.setdefault(site[0], [0, 0]),
            ):
                row[0] += 1
                row[1] += fresh
        audit.total = tape.saved_bytes
        tape.observer = None
        audit.gradient = _grad_of(vjp, ans, "saved_audit", False)
        return audit

    return audited
