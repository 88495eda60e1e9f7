"""Array types of other libraries as values and data: dask.array.Array, cupy.ndarray.

These types implement NumPy's dispatch protocols (``__array_function__``,
``__array_ufunc__``), so gradcy's primitives, which call NumPy functions, run on them as they
are: a Dask array builds a lazy graph, a CuPy array runs on the GPU. gradcy never converts
them to ``numpy.ndarray``: zeros and ones are made like their input (``numpy.zeros_like``),
shapes, dtypes and byte counts are read from the object, and the memory counters count the
nbytes each array declares. dask.array and cupy are recognised by their module; other types
with the same protocols are added with `register_array_type`.

The gradient has the type of its input:

- NumPy in, NumPy out. When it depends on Dask data it is a lazy Dask array inside the sweep;
  gradcy computes it at the end (``value_and_grad`` computes the value and every gradient in
  one ``dask.compute``, so the shared graph runs once).
- Dask in, lazy Dask out, with the input's chunks.
- CuPy in, CuPy out.

A mixture gradcy cannot honour without converting between devices (a NumPy argument whose
gradient is a CuPy array, a CuPy argument whose gradient is a Dask array) raises TypeError.
"""

from contextlib import contextmanager as _contextmanager

import numpy as _np

from ._core import Box as _Box
from ._core import is_array_value, register_array_type

__all__ = [
    "is_array_value",
    "register_array_type",
    "is_lazy",
    "zeros_like",
    "ones_like",
    "zeros",
    "broadcast_like",
    "seed_like",
    "match_gradient",
    "compute_pending",
    "graph_size",
    "recording_computes",
]


def is_lazy(x):
    """x is a Dask collection (its values exist once computed)."""
    return hasattr(type(x), "__dask_graph__") and is_array_value(x)


def zeros_like(x):
    """Zeros of x's shape and dtype, of x's array type (Dask: x's chunks)."""
    return _np.zeros_like(x)


def zeros(shape, dtype, like=None):
    """Zeros of `shape` and `dtype` in like's array library: NumPy unless `like` is an array of
    another one (Dask: like's chunks when the shapes agree)."""
    if not is_array_value(like):
        return _np.zeros(shape, dtype)
    if tuple(like.shape) == tuple(shape):
        return _np.zeros_like(like, dtype=dtype)
    return _np.zeros(shape, dtype=dtype, like=like)


def ones_like(x):
    """Ones of x's shape and dtype, of x's array type (Dask: x's chunks)."""
    return _np.ones_like(x)


def seed_like(ans):
    """The seed of a backward pass from a scalar output `ans` of another library (or a traced
    one, whose value is): for a 0-d Dask array a NumPy one of its dtype (its value is known
    without computing it, and the rules' first steps on it -- a negation, a broadcast -- then
    run in NumPy instead of each adding a layer to the graph: at 100 MB of data the client
    spends about as long building a logistic gradient's graph as the workers spend computing
    it), else ones like `ans`."""
    value = ans
    while type(value) is _Box:
        value = value._value
    if is_lazy(value) and value.ndim == 0 and value.dtype.kind in "fc":
        return value.dtype.type(1)
    if type(ans) is _Box and not ans.ndim:
        return _np.ones_like(ans)[()]
    return _np.ones_like(ans)


def broadcast_like(g, shape, like=None):
    """g broadcast to `shape`, as an array of like's library when `like` (an array of that
    shape, or None) is one (Dask: like's chunks, each made from g on its own), else of g's."""
    if is_lazy(like) and tuple(like.shape) == tuple(shape):
        return _dask_broadcast(g, like)
    if is_array_value(like) and not is_array_value(g):
        g = zeros_like(like[(0,) * like.ndim]) + g  # on like's device
    return _np.broadcast_to(g, shape)


def _broadcast_block(g, block_info=None):
    """One block of a scalar g broadcast, contiguous: NumPy's ufuncs run about 1.5x slower on
    a stride-0 view (numpy.broadcast_to) than on a filled block."""
    return _np.full(block_info[None]["chunk-shape"], g, dtype=_np.result_type(g))


def _broadcast_like_block(block, g):
    return _np.full(block.shape, g, dtype=_np.result_type(g))


def _dask_broadcast(g, like):
    """g (a scalar or a 0-d array of any library) broadcast to like's shape and chunks, as a
    blockwise Dask array: each block is made where it is used, so Dask fuses it into the
    tasks that read it (da.broadcast_to makes a task per block of its own)."""
    import dask.array as da

    if _np.ndim(g) != 0:
        if is_lazy(g):  # g's chunks along the axes it keeps: like's (da.broadcast_to's rule)
            lead = like.ndim - g.ndim
            g = g.rechunk(
                tuple(
                    like.chunks[lead + i] if n == like.shape[lead + i] else -1
                    for i, n in enumerate(g.shape)
                )
            )
        return da.broadcast_to(g, like.shape, chunks=like.chunks)
    if not is_lazy(g):
        g = _np.asarray(g)
    dtype = _np.result_type(g)
    if _np.isnan(like.shape).any():
        # chunks of unknown length (a read by a Dask mask, x[x > 0]): each block made as
        # long as like's, which it reads
        return da.map_blocks(
            _broadcast_like_block, like, g, dtype=dtype, meta=_np.empty((0,) * like.ndim, dtype)
        )
    return da.map_blocks(
        _broadcast_block,
        g,
        new_axis=list(range(like.ndim)),
        chunks=like.chunks,
        dtype=dtype,
        meta=_np.empty((0,) * like.ndim, dtype),
    )


def _module(x):
    return type(x).__module__.split(".")[0]


def _mismatch(g, x, fname):
    raise TypeError(
        f"{fname}: the gradient of a {type(x).__module__}.{type(x).__name__} argument came out "
        f"as a {type(g).__module__}.{type(g).__name__}; gradcy does not move arrays between "
        f"array libraries (devices). Pass the arguments and the data as arrays of one library "
        f"(NumPy parameters with Dask data are supported: the gradient is computed)."
    )


def match_gradient(g, x, fname="grad"):
    """The gradient g (an array of any type, or a scalar) given input x when either is an
    array of another library: x's type, shape and dtype (Dask: x's chunks). A lazy gradient
    of a NumPy input stays lazy here; compute_pending computes it."""
    if g is None:
        return zeros_like(x) if is_array_value(x) else None
    if not is_array_value(x):
        # a NumPy (or scalar) input: a Dask gradient is computed later; other types refuse
        if is_lazy(g):
            if _np.iscomplexobj(g) and not _np.iscomplexobj(x):
                g = g.real
            dtype = _np.result_type(x)
            if g.dtype != dtype:
                g = g.astype(dtype)
            shape = _np.shape(x)
            if tuple(g.shape) != tuple(shape):
                g = _np.broadcast_to(g, shape)
            return g
        _mismatch(g, x, fname)
    if is_array_value(g) and _module(g) != _module(x):
        _mismatch(g, x, fname)
    if not is_array_value(g):
        # a gradient that no operation on x's library touched (a constant, a plain ndarray
        # from NumPy-only terms): x's type, added onto zeros made like x
        if isinstance(g, _np.ndarray) and _module(x) == "cupy":
            _mismatch(g, x, fname)
        g = zeros_like(x) + g
    if _np.iscomplexobj(g) and not _np.iscomplexobj(x):
        g = g.real
    if g.dtype != x.dtype:
        g = g.astype(x.dtype)
    if tuple(g.shape) != tuple(x.shape):
        g = zeros_like(x) + g  # broadcast, keeping x's chunks
    if is_lazy(x) and g.chunks != x.chunks:
        g = g.rechunk(x.chunks)
    return g


_recorders = []


@_contextmanager
def recording_computes():
    """A list collecting, while the block runs, the lazy values of each dask.compute gradcy
    makes for NumPy inputs (one tuple per compute): the graphs `grad`, `value_and_grad` and
    `hessian` run, for `graph_size` (benchmarks/dask_glm_compare.py, asv_bench)."""
    graphs = []
    _recorders.append(graphs)
    try:
        yield graphs
    finally:
        _recorders.remove(graphs)


def compute_pending(values, inputs):
    """values with every lazy (Dask) entry whose input (same position in `inputs`; None: no
    input, always computed) is not lazy replaced by its computed value, all in one
    dask.compute so a graph they share runs once. Computed 0-d results become the input's
    scalar type (a Python float input gets a float). Lazy values, computed or returned, are
    over a graph whose blockwise layers are merged into one task per chunk
    (gradcy._dask_ops.fuse_chunks)."""
    for v, x in zip(values, inputs):
        if type(v) is _Box:
            _refuse_recorded_compute(v, x)
    if any(is_lazy(v) for v in values):
        from ._dask_ops import fuse_chunks

        values = fuse_chunks(*values)
    todo = [
        k
        for k, (v, x) in enumerate(zip(values, inputs))
        if is_lazy(v) and not (x is not None and is_lazy(x))
    ]
    if not todo:
        return values
    import dask

    for graphs in _recorders:
        graphs.append(tuple(values[k] for k in todo))
    done = dask.compute(*[values[k] for k in todo])
    out = list(values)
    for k, v in zip(todo, done):
        x = inputs[k]
        if isinstance(x, _np.generic):  # (before float: numpy.float64 is a float)
            v = x.dtype.type(v)
        elif isinstance(x, float):
            v = float(v)
        elif isinstance(x, _np.ndarray) and not isinstance(v, _np.ndarray):
            v = _np.asarray(v, dtype=x.dtype)  # a computed NumPy scalar of a 0-d array
        out[k] = v
    return out


def _refuse_recorded_compute(v, x):
    """A gradient v traced on a const_graph recording (gradcy.misc.const_graph, gradcy.jit)
    whose value is lazy while its input x is not: grad would compute it (dask.compute), which a
    replayed program does not do (it would return the lazy array): refused."""
    if v._tape.recorder is None:
        return
    while type(v) is _Box:
        v = v._value
    while type(x) is _Box:
        x = x._value
    if is_lazy(v) and not (x is not None and is_lazy(x)):
        raise NotImplementedError(
            "const_graph: the gradient of a NumPy argument computed from Dask data is computed "
            "(dask.compute) when grad returns, which a recorded program cannot replay; pass "
            "the argument as a Dask array (its gradient is then a lazy Dask array), or call "
            "the function without const_graph / gradcy.jit"
        )


def graph_size(*collections, data=()):
    """The size of the Dask graph that computing `collections` together runs, as
    ``{"tasks", "layers", "optimized_tasks"}``: the tasks and high-level layers as built, and
    the tasks left after ``dask.optimize`` (elementwise chains fused into one task per block;
    aliases, which run nothing, not counted). Keys of the `data` collections (persisted
    inputs: their chunks are data, not work) are not counted. Exact and independent of the
    machine: what benchmarks/dask_glm_compare.py and the backend tests compare gradcy's
    graphs with a hand-written gradient's by."""
    import dask
    from dask.highlevelgraph import HighLevelGraph

    graphs = [c.__dask_graph__() for c in collections]
    skip = {k for d in data for k in d.__dask_graph__()}
    built = HighLevelGraph.merge(*graphs)
    optimized = HighLevelGraph.merge(*[c.__dask_graph__() for c in dask.optimize(*collections)])
    try:
        from dask._task_spec import Alias
    except ImportError:  # older Dask: no task objects, no aliases
        Alias = ()
    return {
        "tasks": sum(1 for k in built if k not in skip),
        "layers": sum(
            1 for name, layer in built.layers.items() if not all(k in skip for k in layer)
        ),
        "optimized_tasks": sum(
            1 for k, v in dict(optimized).items() if k not in skip and not isinstance(v, Alias)
        ),
    }
