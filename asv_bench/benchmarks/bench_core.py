"""Core-only benchmarks: the tape engine alone, no NumPy work and no operator layer.

A trivial primitive on Python floats (x + 1.0, VJP the identity, nothing saved) is recorded N
times in a chain from one leaf; the tape is then swept (backward from the last node) and
released. This isolates the cost of dispatch, Box creation, node append, the reverse sweep and
release, which every traced NumPy call pays on top of its own work.
"""

from . import common  # (pins the BLAS threads before NumPy is imported)

try:
    from gradcy._core import Tape
    from gradcy.extend import defvjp, primitive
except ImportError:  # an old commit without this API
    Tape = None


def _inc(x):
    return x + 1.0


if Tape is not None:
    inc = primitive(_inc, name="asv_bench.inc")
    defvjp(inc, lambda ans, x: lambda g: g, save=())


def _record(n):
    t = Tape()
    leaf = t.new_leaf(1.0)
    b = leaf
    for _ in range(n):
        b = inc(b)
    return t, leaf, b


class RecordSweepRelease:
    params = [[1_000, 100_000]]
    param_names = ["n_nodes"]

    def setup(self, n):
        if Tape is None:
            raise NotImplementedError("gradcy._core.Tape / gradcy.extend not available")
        try:  # the Tape methods this module calls, at this commit
            t, leaf, b = _record(2)
            t.backward(b._node, 1.0, True, [leaf._node])
            t.release()
        except (TypeError, AttributeError) as exc:
            raise NotImplementedError(f"gradcy._core.Tape differs at this commit: {exc}") from exc

    def time_record_release(self, n):
        t, leaf, b = _record(n)
        t.release()

    def time_record_sweep_release(self, n):
        t, leaf, b = _record(n)
        t.backward(b._node, 1.0, True, [leaf._node])
        t.release()

    def track_live_nodes_after(self, n):
        t, leaf, b = _record(n)
        g = t.backward(b._node, 1.0, True, [leaf._node])
        t.release()
        assert g[0] == 1.0, g
        del t, leaf, b
        return common.core_stats()["live_nodes"]

    track_live_nodes_after.unit = "nodes"

    def peakmem_record_sweep_release(self, n):
        t, leaf, b = _record(n)
        t.backward(b._node, 1.0, True, [leaf._node])
        t.release()
