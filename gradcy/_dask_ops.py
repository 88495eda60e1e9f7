"""numpy.dot, numpy.sum and elementwise rules of Dask arrays as smaller graphs, built in
less client time.

The logistic gradient a Dask user fits many times (``X @ w``, ``sum``, ``dot(y, z)`` forward,
``dot(g, X)`` backward) spends as long in the client building its graph as the workers spend
computing it at 100 MB of data: Dask's own dot and sum are generic (tensordot, a reduction
tree, each argument tokenized and its meta computed by calling the function), about 0.6 to
1.2 ms each. The cases below are the ones a tall-and-skinny problem makes -- the contracted or
summed axis chunked, every other axis in one chunk -- built as one blockwise layer (a block's
dot or sum per chunk, no concatenation) and, for a contraction over the chunked axis, a tree of
tasks adding the partial results as Dask's reductions do (``split_every``): the same values as
Dask's (each block's product by NumPy, the partials added), about a fifth of the client time,
two layers instead of four to six. Layers are named here, from what determines them, not by
Dask's tokenizing of every function and operand.

An elementwise rule (a VJP of an elementwise function) on Dask arrays of one shape and chunks is
one blockwise layer running the rule on each chunk (NumPy's own operations, so the same
values), where Dask's operators would make a layer per operation (``g / (x + 1.0)``: two), each
inspecting its function's signature to compute a meta.

Before a gradient is computed (or a lazy one returned), `fuse_chunks` merges the blockwise
layers feeding one another into one task per chunk, also a value several of them read (which
Dask's own fusion leaves a task of its own), and in that task a ufunc step whose operand is a
temporary of the task's own, read by that step alone, writes its result into it (`_Into`):
fewer tasks, fewer arrays allocated per chunk, the same NumPy loops and values. Nothing from
outside the task (a persisted chunk of X, shared by other tasks) is written.

Each function returns None where its case does not apply; the caller then calls NumPy's
function (Dask's, through dispatch) as it would have.
"""

import numpy as _np

_FLOATS = "fc"
_SCALARS = (int, float, complex, bool, type(None))


def is_dask(x):
    """x is a dask.array.Array (checked by module: dask is imported only when one exists)."""
    return type(x).__module__.startswith("dask.") and hasattr(type(x), "__dask_graph__")


def _meta(ndim, dtype):
    return _np.empty((0,) * ndim, dtype)


def _fn_key(fn):
    """What identifies fn in a layer's name: a `_Rule`'s own token, else its module and name
    (tokenizing a function or a ufunc itself pickles it: about 50 us)."""
    if type(fn) is _Rule:
        return fn.__dask_tokenize__()
    return (
        getattr(fn, "__module__", None),
        getattr(fn, "__qualname__", None) or getattr(fn, "__name__", None),
    )


def _blockwise(fn, out_ind, *args, label=None, **kwargs):
    """dask.array.blockwise(fn, out_ind, *args, **kwargs) named here from what determines
    the layer (fn, the indices, the Dask operands' names, the other operands, the keywords)
    instead of by Dask, which tokenizes fn and every operand (the Dask arrays too) on each
    call: about a third of the client's time of the call."""
    import dask.array as da
    from dask.base import tokenize

    token = tokenize(
        _fn_key(fn),
        out_ind,
        [a.name if is_dask(a) else a for a in args],
        {k: v for k, v in kwargs.items() if k != "meta"},
    )
    label = (label or getattr(fn, "__name__", None) or "blockwise").lstrip("_")
    return da.blockwise(fn, out_ind, *args, name=f"{label}-{token}", **kwargs)


def _block_dot(a, b):
    # (the contracted axis is one chunk: blockwise without concatenation, whose layers Dask
    # fuses with the elementwise ones around them, hands its blocks along it as a list of one)
    if type(a) is list:
        (a,) = a
    if type(b) is list:
        (b,) = b
    return _np.dot(a, b)


def _block_partial(a, b):
    return _np.dot(a, b)[None]


def _block_sum(x):
    return _np.sum(x, keepdims=True)


def _flat(keys):
    while keys and type(keys[0]) is list:
        keys = [k for sub in keys for k in sub]
    return keys


def _add_partials(parts, shape=None):
    """The sum of the partial results (the blocks of a blockwise layer, or the sums of a
    level of the tree below) as one array, of `shape` if given."""
    total = parts[0]
    for p in parts[1:]:
        total = total + p
    if shape is None:
        return total
    # (a 0-d result as a NumPy scalar, as Dask's own sum and dot compute it)
    return total.reshape(shape) if shape else total.reshape(())[()]


def _split_every():
    """How many partials one task adds: Dask's own setting for its reductions' trees
    (``dask.config`` "split_every", default 4), an integer of at least 2."""
    import dask

    n = dask.config.get("split_every", None)
    return max(int(n), 2) if isinstance(n, int) and not isinstance(n, bool) else 4


def _aggregate(partials, shape, dtype, prefix):
    """A one-chunk Dask array of `shape`: the partial blocks of `partials` added as Dask's
    own reductions add theirs, in a tree whose tasks each add at most `_split_every()`
    (125 partials, split_every 4: 32 + 8 + 2 + 1 tasks); the names made from the partials'
    own, already a token of the inputs."""
    import dask.array as da
    from dask.highlevelgraph import HighLevelGraph

    name = f"{prefix}-{partials.name}"
    keys = _flat(partials.__dask_keys__())
    every = _split_every()
    graph, level = {}, 0
    while len(keys) > every:
        level_name = f"{name}-{level}"
        groups = [keys[i : i + every] for i in range(0, len(keys), every)]
        keys = [(level_name, i) for i in range(len(groups))]
        for key, group in zip(keys, groups):
            graph[key] = (_add_partials, group)
        level += 1
    key = (name,) + (0,) * len(shape)
    graph[key] = (_add_partials, keys, shape)
    graph = HighLevelGraph.from_collections(name, graph, dependencies=[partials])
    return da.Array(graph, name, tuple((n,) for n in shape), meta=_meta(len(shape), dtype))


def _small(b):
    """b is a plain value small enough to travel inside each task (a 1-d or 2-d ndarray or a
    Dask array of one chunk): the operand of a tall matrix's product with vectors."""
    if type(b) is _np.ndarray:
        return 1 <= b.ndim <= 2
    return is_dask(b) and 1 <= b.ndim <= 2 and all(n == 1 for n in b.numblocks)


def dot(a, b):
    """numpy.dot(a, b) for Dask operands of at most 2 dimensions in these cases, else None:
    a tall matrix chunked by rows times a small vector or matrix (one product per chunk of
    rows); a vector or a short wide matrix times a vector or a tall matrix, chunked alike
    along the contracted axis and in one chunk along the others (a product per chunk, then
    their sum)."""
    if not (is_dask(a) or is_dask(b)):
        return None
    ta, tb = getattr(a, "dtype", None), getattr(b, "dtype", None)
    if ta is None or tb is None or ta.kind not in _FLOATS or tb.kind not in _FLOATS:
        return None

    dtype = _np.result_type(ta, tb)
    if is_dask(a) and a.ndim == 2 and a.numblocks[1] == 1 and _small(b):
        if b.shape[0] != a.shape[1]:
            return None
        out = "ik"[: b.ndim]
        return _blockwise(
            _block_dot,
            out,
            a,
            "ij",
            b,
            "jk"[: b.ndim] if is_dask(b) else None,
            dtype=dtype,
            meta=_meta(b.ndim, dtype),
            # not concatenated (a one-chunk Dask b comes as a list of one block): a layer
            # Dask fuses with the elementwise ones on each chunk, one task per chunk for the
            # whole gradient, also for a Dask w (forward over reverse: the logistic
            # Hessian-vector product in 4 chunks was 11 tasks, 15 with this layer
            # concatenated; dot_t's layer is not concatenated either, so fuse_chunks merges
            # it with the chain reading it: 7 tasks)
            concatenate=None,
            new_axes={} if is_dask(b) or b.ndim == 1 else {"k": b.shape[1]},
        )
    if not (is_dask(a) and is_dask(b)) or not (1 <= a.ndim <= 2 and 1 <= b.ndim <= 2):
        return None
    if a.shape[-1] != b.shape[0] or a.chunks[-1] != b.chunks[0]:
        return None
    if a.numblocks[:-1] != (1,) * (a.ndim - 1) or b.numblocks[1:] != (1,) * (b.ndim - 1):
        return None
    ia, ib = "i"[: a.ndim - 1], "k"[: b.ndim - 1]
    partials = _blockwise(
        _block_partial,
        "j" + ia + ib,
        a,
        ia + "j",
        b,
        "j" + ib,
        adjust_chunks={"j": 1},
        dtype=dtype,
        meta=_meta(1 + len(ia) + len(ib), dtype),
    )
    return _aggregate(partials, a.shape[:-1] + b.shape[1:], dtype, "dot")


def _block_dot_t(a, v):
    if type(a) is list:  # (see _block_dot's)
        (a,) = a
    if type(v) is list:
        (v,) = v
    return _np.dot(a, v.T).T


def dot_t(a, v):
    """numpy.dot(a, v.T).T -- a tall matrix's products with a batch of vectors (v: B x d),
    batch first -- as one blockwise layer (a product per chunk of rows of a) when a is a
    floating Dask matrix chunked by rows only and v a one-chunk Dask matrix; else None."""
    if not (is_dask(a) and a.ndim == 2 and a.numblocks[1] == 1):
        return None
    # (v a Dask array only: with a NumPy v as a constant and a new axis, the graph after
    # dask.optimize gave wrong values in tests/backends/test_backends.py's
    # test_hessian_vector_product; cause not investigated)
    if not (is_dask(v) and _small(v) and v.ndim == 2 and v.shape[1] == a.shape[1]):
        return None
    if a.dtype.kind not in _FLOATS or v.dtype.kind not in _FLOATS:
        return None

    dtype = _np.result_type(a.dtype, v.dtype)
    return _blockwise(
        _block_dot_t,
        "ki",
        a,
        "ij",
        v,
        "kj",
        dtype=dtype,
        meta=_meta(2, dtype),
        concatenate=None,  # (see dot's)
    )


def total(a):
    """numpy.sum(a) (every axis, no other argument) of a floating Dask array, else None: each
    chunk's sum, then their sum."""
    if not is_dask(a) or a.dtype.kind not in _FLOATS or a.ndim == 0:
        return None

    ind = tuple(range(a.ndim))
    partials = _blockwise(
        _block_sum,
        ind,
        a,
        ind,
        adjust_chunks={i: 1 for i in ind},
        dtype=a.dtype,
        meta=_meta(a.ndim, a.dtype),
    )
    return _aggregate(partials, (), a.dtype, "sum")


_RULES = []  # the rules on_chunks wrapped, in the order gradcy.numpy's import wraps them


def _fingerprint(rule):
    code = getattr(rule, "__code__", None)
    return (
        getattr(rule, "__module__", None),
        getattr(rule, "__qualname__", None),
        None if code is None else code.co_firstlineno,
    )


def _registered(index, fingerprint):
    """The rule on_chunks wrapped as `index` (in a worker: after importing gradcy.numpy, which
    wraps them all in one order), checked against its fingerprint."""
    import gradcy.numpy  # noqa: F401 (wraps the rules)

    rule = _RULES[index] if index < len(_RULES) else None
    if rule is None or _fingerprint(rule) != fingerprint:
        raise RuntimeError(
            f"gradcy: the elementwise rule {fingerprint} of a Dask task is not this process's "
            f"rule {index}; run the same gradcy version in the client and the workers"
        )
    return rule


class _Rule:
    """A rule run on one chunk of each operand: the operands it does not read (an unsaved
    argument or output, whose shape and dtype it may read) are stand-ins of the chunk's shape
    and the array's dtype, so the layer does not depend on their chunks (nor computes them).
    Pickled by reference (its index among the wrapped rules): the task a worker receives
    holds no copy of the rule's code (cloudpickle's, about 3 KB and 0.2 ms a task)."""

    __slots__ = ("rule", "standins", "index")

    def __init__(self, rule, standins, index=None):
        self.rule = rule
        self.standins = standins  # ((position, dtype), ...)
        self.index = index

    def __call__(self, *ops):
        if self.standins:
            ops = list(ops)
            shape = ops[0].shape  # g's chunk
            for pos, dtype in self.standins:
                ops[pos] = _np.broadcast_to(_np.empty((), dtype), shape)
        return self.rule(*ops)

    def __reduce__(self):
        if self.index is None:
            return (_Rule, (self.rule, self.standins))
        return (
            _rule_on_chunk,
            (self.index, _fingerprint(self.rule), self.standins),
        )

    def __dask_tokenize__(self):
        return (_fingerprint(self.rule), id(self.rule), self.standins)


def _rule_on_chunk(index, fingerprint, standins):
    return _Rule(_registered(index, fingerprint), standins, index)


def _plain_constant(o):
    return (
        type(o) in _SCALARS
        or isinstance(o, _np.generic)
        or (type(o) is _np.ndarray and o.ndim == 0)
    )


def elementwise(fn, *operands, reads=None, name=None, index=None):
    """fn(*operands) as one blockwise layer over the Dask operands, chunk by chunk, when they
    all have one shape and chunks, every other operand is a number, None or a 0-d array (passed
    to every chunk as it is) and fn of their metas (empty chunks) is an array of their number
    of dimensions; else None. reads: the positions of the operands fn reads the values of
    (default all); the others, when Dask arrays, reach fn as stand-ins (`_Rule`). The first
    operand is read. index: fn's among the rules on_chunks wrapped (pickled by reference)."""
    like = None
    for o in operands:
        if is_dask(o):
            if like is None:
                like = o
            elif o.shape != like.shape or o.chunks != like.chunks:
                return None
        elif not _plain_constant(o):
            return None
    if like is None:
        return None
    ind = tuple(range(like.ndim))
    args, metas, standins = [], [], []
    for k, o in enumerate(operands):
        if not is_dask(o):
            args += [o, None]
            metas.append(o)
        elif reads is None or k in reads:
            args += [o, ind]
            metas.append(o._meta)
        else:
            if k == 0:  # (a stand-in takes the shape of the first operand's chunk)
                return None
            standins.append((k, o.dtype))
            args += [None, None]
            metas.append(None)
    f = _Rule(fn, tuple(standins), index) if standins or index is not None else fn
    meta = f(*metas)
    if type(meta) is not _np.ndarray or meta.ndim != like.ndim:
        return None
    return _blockwise(
        f, ind, *args, dtype=meta.dtype, meta=meta, label=name or getattr(fn, "__name__", None)
    )


def on_chunks(rule, reads=None):
    """rule(g, ans, *args) (an elementwise function's VJP) that runs as one blockwise layer
    (`elementwise`) when g is a Dask array and the case applies, else as it is. reads: what
    the rule reads the values of besides g ("ans", argument indices; default all)."""
    pos = None
    if reads is not None:
        pos = {0} | {1 if r == "ans" else 2 + r for r in reads}
    label = f"vjp-{getattr(rule, '__module__', 'gradcy').rsplit('.', 1)[-1]}"
    index = len(_RULES)
    _RULES.append(rule)

    def chunkwise(g, ans, *args, **kwargs):
        if type(g) is not _np.ndarray and not kwargs and is_dask(g):
            r = elementwise(rule, g, ans, *args, reads=pos, name=label, index=index)
            if r is not None:
                return r
        return rule(g, ans, *args, **kwargs)

    chunkwise.__name__ = getattr(rule, "__name__", "rule")
    chunkwise.__qualname__ = getattr(rule, "__qualname__", "rule")
    chunkwise.__wrapped__ = rule
    return chunkwise


_OPERATORS = {
    _np.negative: lambda a: -a,
    _np.multiply: lambda a, b: a * b,
    _np.true_divide: lambda a, b: a / b,
    _np.add: lambda a, b: a + b,
    _np.subtract: lambda a, b: a - b,
}


def arith(ufunc, *operands):
    """The operator of `ufunc` (negative, multiply, true_divide, add, subtract) on operands:
    one blockwise layer (`elementwise`) when a Dask operand's case applies (about a quarter of
    the client time of Dask's operator), else the operator itself (Python numbers stay Python
    numbers: weak in NumPy's promotion)."""
    op = _OPERATORS[ufunc]
    if any(is_dask(o) for o in operands):
        r = elementwise(ufunc, *operands)
        if r is not None:
            return r
    return op(*operands)


def _scale_block(base, scale):
    return base * scale


def scale_batch(base, scale):
    """base * scale for a batch's data (shape (B,) + item) and a scale of the item's shape:
    one blockwise layer when both are Dask arrays, the batch axis in one chunk and the item's
    chunks the scale's, else the operator."""
    if (
        is_dask(base)
        and is_dask(scale)
        and base.ndim == scale.ndim + 1
        and base.numblocks[0] == 1
        and base.chunks[1:] == scale.chunks
    ):
        ind = tuple(range(base.ndim))
        meta = _scale_block(base._meta, scale._meta)
        if type(meta) is _np.ndarray and meta.ndim == base.ndim:
            return _blockwise(
                _scale_block, ind, base, ind, scale, ind[1:], dtype=meta.dtype, meta=meta
            )
    return base * scale


def multiply(a, b):
    """a * b: one blockwise layer (`elementwise`) when a Dask operand's case applies."""
    if not (is_dask(a) or is_dask(b)):
        return a * b
    r = elementwise(_np.multiply, a, b)
    return a * b if r is None else r


def _contracts(layer):
    out = set(layer.output_indices)
    return any(i not in out for _, ind in layer.indices if ind for i in ind)


class _Into:
    """ufunc(*args) written into args[pos] -- a chunk-local temporary that only this call reads
    (`_in_place`) -- when the result has its shape and dtype: the other operands of its dtype
    and broadcasting to its shape, or Python numbers (weak in NumPy's promotion), so the call
    runs NumPy's same loop with the same values, without allocating; else ufunc(*args)."""

    __slots__ = ("ufunc", "pos")

    def __init__(self, ufunc, pos):
        self.ufunc = ufunc
        self.pos = pos

    def __call__(self, *args):
        a = args[self.pos]
        if type(a) is _np.ndarray and a.dtype.kind in _FLOATS and a.flags.writeable:
            for o in args:
                if o is a or type(o) is float or type(o) is int:
                    continue
                if type(o) is not _np.ndarray or o.dtype != a.dtype or o.ndim > a.ndim:
                    break
                if _np.broadcast_shapes(o.shape, a.shape) != a.shape:
                    break
            else:
                return self.ufunc(*args, out=a)
        return self.ufunc(*args)

    def __reduce__(self):
        return (_Into, (self.ufunc, self.pos))


def _fresh(task):
    """task's result is a new array (or number) nothing else holds: a ufunc's, a product's."""
    f = task.func
    return (
        (type(f) is _np.ufunc and f.nout == 1)
        or type(f) is _Into
        or f is _block_dot
        or f is _scale_block
    )


def _in_place(layer):
    """layer (a merged blockwise layer, one fused task per chunk) with each ufunc step that
    reads a temporary of the chunk's -- made by a step of the task (`_fresh`), read by that
    step only, once -- writing its result into it (`_Into`): fewer arrays allocated per chunk.
    Nothing from outside the task (a chunk of X or y, persisted and shared) is written."""
    from dask._task_spec import Task, TaskRef

    task = layer.task
    if getattr(task.func, "__name__", None) != "_execute_subgraph":
        return layer
    inner, outkey = task.args[0], task.args[1]
    readers = {}
    for t in inner.values():
        for k in t.dependencies:
            readers[k] = readers.get(k, 0) + 1
    owned = {k for k, t in inner.items() if k != outkey and readers.get(k) == 1 and _fresh(t)}
    steps, changed = [], False
    for t in inner.values():
        f = t.func
        if type(f) is _np.ufunc and f.nout == 1 and not t.kwargs:
            refs = [type(a) is TaskRef for a in t.args]
            if all(r or not hasattr(a, "dependencies") for r, a in zip(refs, t.args)):
                keys = [a.key if r else None for r, a in zip(refs, t.args)]
                pos = next(
                    (i for i, k in enumerate(keys) if k in owned and keys.count(k) == 1), None
                )
                if pos is not None:
                    t = Task(t.key, _Into(f, pos), *t.args)
                    changed = True
        steps.append(t)
    if changed:
        layer.task = Task.fuse(*steps, key=task.key)
    return layer


# the most layers one merge takes: Dask's rewrite_blockwise costs about the cube of a merge's
# size (a 100-step elementwise chain's 1,000 layers took 200 s as one merge); a longer chain is
# merged in runs of this many, each run one task per chunk
_MAX_MERGED = 32


def _fused_graph(graph, keep):
    """graph (a HighLevelGraph) with each blockwise layer merged with the blockwise layers
    feeding it that feed nothing else (`fuse_chunks`), the layers named in `keep` (wanted
    outputs) kept as layers; the same graph when nothing merges."""
    from dask.blockwise import Blockwise, rewrite_blockwise
    from dask.highlevelgraph import HighLevelGraph

    layers, deps = dict(graph.layers), {k: set(v) for k, v in graph.dependencies.items()}
    readers = {}
    for name, ds in deps.items():
        for d in ds:
            readers.setdefault(d, set()).add(name)

    def joins(name, root, fused):
        layer = layers.get(name)
        return (
            type(layer) is Blockwise
            and name not in keep
            and layer.concatenate == root.concatenate
            and layer.annotations == root.annotations  # (a user's dask.annotate: kept apart)
            and readers.get(name, set()) <= fused
            # (Dask's own rules: a layer reading a value twice, or contracting an axis of it,
            # does not merge with it; a contraction would name its axes anew, and the value
            # would be computed twice, once per naming)
            and all(
                sum(k == name for k, ind in layers[r].indices if ind) == 1
                and not _contracts(layers[r])
                for r in readers[name]
            )
        )

    changed_graph = False
    order = list(graph._toposort_layers())[::-1]  # readers before what they read
    for name in order:
        root = layers.get(name)
        if type(root) is not Blockwise:
            continue
        fused = {name}
        frontier = set() if _contracts(root) else set(deps[name])
        grew = True
        while grew and len(fused) < _MAX_MERGED:
            grew = False
            for d in sorted(frontier - fused):
                if len(fused) < _MAX_MERGED and joins(d, root, fused):
                    fused.add(d)
                    if not _contracts(layers[d]):
                        frontier |= deps[d]
                    grew = True
        if len(fused) == 1:
            continue
        layers[name] = _in_place(rewrite_blockwise([layers[n] for n in fused]))
        deps[name] = {d for n in fused for d in deps[n] if d not in fused}
        for n in fused - {name}:
            del layers[n], deps[n]
        for d in deps[name]:
            readers[d] = (readers[d] - fused) | {name}
        changed_graph = True
    return HighLevelGraph(layers, deps) if changed_graph else graph


def fuse_chunks(*arrays):
    """arrays (Dask arrays) over one graph whose blockwise layers are merged with those feeding
    them where every layer they feed is in the merge, also a value several of them read (the
    tangent ``X @ v`` of a Hessian-vector product, read by each step of the tangent's chain):
    one task per chunk computing the whole chain, each shared value once. Dask's own fusion
    (``dask.optimize``) merges only a chain whose every value has one reader, leaving a
    shared value a task of its own per chunk, whose result may travel between workers. Other
    values are returned as they are."""
    from dask.highlevelgraph import HighLevelGraph

    lazy = [a for a in arrays if is_dask(a)]
    if not lazy:
        return arrays
    graph = HighLevelGraph.merge(*[a.__dask_graph__() for a in lazy])
    fused = _fused_graph(graph, {a.name for a in lazy})
    if fused is graph:
        return arrays
    # (each array's graph its own layers: Dask's compute of several arrays sharing one graph
    # object with layers of the others lost a wanted layer)
    return tuple(
        type(a)(fused.cull_layers([a.name]), a.name, a.chunks, meta=a._meta) if is_dask(a) else a
        for a in arrays
    )
