"""gradcy.jit's buffer plan: passes over a recorded program (after gradcy._codegen's fusion of
elementwise runs) that decide where each value lives, so that the compiled program allocates
what a careful hand-written gradient would.

- `_outer_product_sums`: a sum of outer-product einsums as one fused loop at the add;
- `_transposes`, `_accumulations`, `_writes_in_place`, `_reuse_buffers`: gradient sums made
  in place into buffers the program owns, writes into fresh cotangents made in their buffer,
  temporaries reused;
- `_values_in_buffers`: a value written into a buffer and read again is read back from the
  buffer, not kept as an array of its own;
- `_views_at_reads`: a view read again much later is taken again at that read.

Each pass takes and returns the planned steps (tracers._Program's step tuples) with the
probe's `_Meta` of every slot; gradcy._codegen.compile_program runs them in order.
"""

import bisect
import operator

import numpy as np

from ._codegen import _FLOATS, _Meta, _basic, _set_into
from .misc.tracers import _slots_in


def _readers(steps):
    """slot -> the indexes of the steps that read it, in order; a read nested in a container
    argument adds -1 after its step (such a read is never moved or redirected)."""
    readers = {}
    for k, step in enumerate(steps):
        for _, s in step[2]:
            readers.setdefault(s, []).append(k)
        for pos in step[7]:
            for s in _slots_in(step[1][pos]):
                readers.setdefault(s, []).extend((k, -1))
    return readers


def _last_reads(steps, out=None):
    """slot -> the index of the last step that reads it (through a link or inside a container
    argument); the program's output `out`, if given, is read after the last step."""
    last = {}
    for k, step in enumerate(steps):
        for _, s in step[2]:
            last[s] = k
        for pos in step[7]:
            for s in _slots_in(step[1][pos]):
                last[s] = k
    if out is not None:
        last[out] = len(steps)
    return last


def _outer_axes(spec, out):
    """The axes to insert into an operand of einsum subscripts `spec` so that it broadcasts
    to the output `out` with its letters in place, or None (a letter out of out's order)."""
    pos = [out.find(c) for c in spec]
    if -1 in pos or pos != sorted(pos) or len(set(spec)) != len(spec):
        return None
    return tuple(a for a in range(len(out)) if a not in pos)


def _outer_product_sums(steps, meta, prog, n_slots):
    """add(einsum(A), einsum(B)) of two einsums that sum over nothing (each output element one
    product: 'bs,bd->bsd', the cotangents of a product's operand), each read by the add only,
    as multiply(a[..., None, ...], b[..., None, ...]) computed at the add: the three steps then
    fuse into one kernel, with one result of the output's size instead of three (a memory
    network's backward pass, at each step, the gradient of the prefix it attended over).
    The values are the einsums' (one rounding per product), up to the sign of a zero."""
    from .numpy import einsum

    fun_einsum = getattr(einsum, "fun", None)
    if fun_einsum is None:
        return steps, n_slots
    readers = _readers(steps)
    producer = {step[4]: k for k, step in enumerate(steps)}
    mutated = {s for step in steps if step[0] is _set_into for p, s in step[2] if p == 0}
    # writes made so far, by step: the einsums' operands (views of a buffer, maybe) must see no
    # write between the einsum and the add, where their products are now computed
    writes = [0]
    for step in steps:
        writes.append(writes[-1] + (step[0] is _set_into))

    def outer(k, out_meta):
        """The (operand slots, axes to insert) of einsum step k, or None."""
        fun, args, links, kwargs, slot, _d, guards, nested = steps[k]
        if (
            fun is not fun_einsum
            or guards
            or nested
            or kwargs not in (None, {"optimize": False})
            or len(args) != 3
            or type(args[0]) is not str
            or dict(links).keys() != {1, 2}
            or readers.get(slot) is None
            or len(readers[slot]) != 1
        ):
            return None
        spec = args[0].replace(" ", "")
        if spec.count("->") != 1 or "." in spec:
            return None
        ins, out = spec.split("->")
        ins = ins.split(",")
        if len(ins) != 2 or set(out) != set(ins[0]) | set(ins[1]) or len(set(out)) != len(out):
            return None
        linked = dict(links)
        result = []
        for q, sub in enumerate(ins):
            axes = _outer_axes(sub, out)
            m = meta[linked[q + 1]]
            if (
                axes is None
                or m.type is not np.ndarray
                or m.dtype != out_meta.dtype
                or len(m.shape) != len(sub)
                or linked[q + 1] in mutated
            ):
                return None
            result.append((linked[q + 1], axes))
        mk = meta[slot]
        if mk.type is not np.ndarray or mk.shape != out_meta.shape or mk.dtype != out_meta.dtype:
            return None
        return result

    gone, at = set(), {}
    for k, step in enumerate(steps):
        fun, args, links, kwargs, slot, _d, guards, nested = step
        if fun is not np.add or kwargs or guards or nested or len(links) != 2:
            continue
        m = meta[slot]
        if m.type is not np.ndarray or m.dtype not in _FLOATS:
            continue
        parts = []
        for _, s in sorted(links):
            j = producer.get(s)
            o = (
                outer(j, m)
                if j is not None and j not in gone and writes[k] == writes[j + 1]
                else None
            )
            if o is None:
                break
            parts.append(o)
        if len(parts) != 2 or links[0][1] == links[1][1]:
            continue
        new = []
        products = []
        for o in parts:
            views = []
            for s, axes in o:
                v = n_slots
                n_slots += 1
                shape = list(meta[s].shape)
                for a in axes:
                    shape.insert(a, 1)
                meta.append(_Meta(np.empty(tuple(shape), meta[s].dtype)))
                # (a[:, :, None]: the view expand_dims makes, without its Python call)
                idx = tuple(None if a in axes else slice(None) for a in range(len(shape)))
                new.append((operator.getitem, (None, idx), ((0, s),), None, v, (), (), ()))
                views.append(v)
            p = n_slots
            n_slots += 1
            meta.append(_Meta(np.empty(m.shape, m.dtype)))
            products.append(
                (np.multiply, (None, None), ((0, views[0]), (1, views[1])), None, p, (), (), ())
            )
        new.extend(products)
        new.append(
            (
                np.add,
                (None, None),
                ((0, products[0][4]), (1, products[1][4])),
                None,
                slot,
                (),
                step[6],
                (),
            )
        )
        for _, s in links:
            gone.add(producer[s])
        at[k] = new
    if not at:
        return steps, n_slots
    out = []
    for k, step in enumerate(steps):
        if k in gone:
            continue
        out.extend(at.get(k, (step,)))
    return out, n_slots


def _T(a):
    return a.T


def _transposes(steps, meta):
    """numpy.matrix_transpose of a 2-d array as its .T (the same view, without the ~1.5 us of
    NumPy's Python-level dispatch)."""
    out = []
    for step in steps:
        if (
            step[0] is _matrix_transpose
            and len(step[1]) == 1
            and step[2]
            and not step[3]
            and meta[step[2][0][1]].type is np.ndarray
            and len(meta[step[2][0][1]].shape) == 2
        ):
            step = (_T,) + step[1:]
        out.append(step)
    return out


_matrix_transpose = getattr(np, "matrix_transpose", None)

# einsum subscripts -> the function that computes that einsum as one np.matmul, or None
_EINSUM_MATMULS = {}


def _einsum_matmul(spec):
    """A function f(spec, x0, x1) computing the two-operand einsum `spec` (explicit output,
    no repeated letter, no '...') as one batched matrix product, np.matmul, which calls BLAS
    per matrix where einsum runs its own sum-of-products loop (a memory network's
    'bsd,bd->bs' and 'bs,bsd->bd' at 4 x 128 x 64: 4.5 against 10 us); None where spec is
    not such a product: the letters of both operands and the output are its batch axes,
    exactly one letter of both operands is summed over, and each operand has at most one
    letter of its own. The operands are passed as transposed views (no copy); the result is a
    new C-ordered array, as einsum's is."""
    if spec not in _EINSUM_MATMULS:
        _EINSUM_MATMULS[spec] = _make_einsum_matmul(spec)
    return _EINSUM_MATMULS[spec]


def _make_einsum_matmul(spec):
    s = spec.replace(" ", "")
    if s.count("->") != 1 or "." in s:
        return None
    ins, out = s.split("->")
    ins = ins.split(",")
    if len(ins) != 2 or not out or not all(t.isalpha() for t in ins + [out]):
        return None
    if any(len(set(t)) != len(t) for t in ins + [out]) or not set(out) <= set(ins[0] + ins[1]):
        return None
    a, b = ins
    summed = [c for c in a if c not in out]
    if len(summed) != 1 or summed[0] not in b or any(c not in a + out for c in b):
        return None
    batch = [c for c in out if c in a and c in b]
    left = [c for c in out if c in a and c not in b]
    right = [c for c in out if c in b and c not in a]
    if len(left) > 1 or len(right) > 1:
        return None
    x, y = "x0", "x1"
    if right and not left:  # (matrix @ vector: about 5% faster than vector @ matrix)
        a, b, left, right, x, y = b, a, right, left, y, x

    def operand(name, sub, order, new_axis):
        perm = [sub.index(c) for c in order]
        text = name if perm == list(range(len(sub))) else f"{name}.transpose({tuple(perm)})"
        return text + ("" if new_axis is None else f"[{new_axis}]")

    nb = len(batch)
    ta = operand(x, a, batch + left + summed, None if left else "..., None, :")
    tb = operand(y, b, batch + summed + right, None if right else "..., None")
    made = batch + left + right
    lines = ["def einsum_matmul(spec, x0, x1):"]
    if made == list(out) and left and right:
        lines.append(f" return matmul({ta}, {tb})")
    else:
        # into a new C-ordered array through its view in matmul's axis order (the result is
        # that array, not a view: a value the backward pass keeps is one object, as einsum's)
        sizes = [f"{x}.shape[{a.index(c)}]" if c in a else f"{y}.shape[{b.index(c)}]" for c in out]
        perm = tuple(out.index(c) for c in made)
        view = "o" if perm == tuple(range(len(out))) else f"o.transpose({perm})"
        idx = ", ".join([":"] * nb + [":" if left else "None", ":" if right else "None"])
        lines.append(f" o = empty(({', '.join(sizes)},), result_type({x}, {y}))")
        lines.append(f" matmul({ta}, {tb}, out={view}[{idx}])")
        lines.append(" return o")
    ns = {"matmul": np.matmul, "empty": np.empty, "result_type": np.result_type}
    exec(compile("\n".join(lines), f"<gradcy.jit einsum {spec!r}>", "exec"), ns)
    f = ns["einsum_matmul"]
    f.subscripts = spec
    return f


def _einsums_as_matmuls(steps, meta):
    """{step index: the step as a matrix product} of the steps einsum(spec, x, y) of two float
    arrays of the result's dtype whose spec _einsum_matmul writes as one (the values of
    einsum's within rounding: BLAS sums in its own order)."""
    from .numpy import einsum

    fun_einsum = getattr(einsum, "fun", None)
    out = {}
    if fun_einsum is None:
        return out
    for k, step in enumerate(steps):
        fun, args, links, kwargs, slot, _d, guards, nested = step
        if (
            fun is not fun_einsum
            or guards
            or nested
            or (kwargs and set(kwargs) != {"optimize"})
            or len(args) != 3
            or type(args[0]) is not str
        ):
            continue
        f = _einsum_matmul(args[0])
        linked = dict(links)
        ms = [_Meta(args[p]) if p not in linked else _meta_of(meta, linked[p]) for p in (1, 2)]
        m = _meta_of(meta, slot)
        if (
            f is not None
            and None not in ms
            and m is not None
            and m.type is np.ndarray
            and m.dtype in _FLOATS
            and all(x.type is np.ndarray and x.dtype == m.dtype for x in ms)
            and _same_sizes(args[0], ms[0].shape, ms[1].shape)
        ):
            out[k] = (f, args, links, None) + step[4:]
    return out


def _meta_of(meta, s):
    """The _Meta of slot s, or None for a slot made after the probe (a native segment's tuple
    of outputs, a kernel's)."""
    return meta[s] if s < len(meta) else None


def _same_sizes(spec, shape0, shape1):
    """Each letter of the einsum spec has one size in both operands (einsum broadcasts a
    length-1 axis against a longer one; matmul does not)."""
    ins = spec.replace(" ", "").split("->")[0].split(",")
    if len(ins[0]) != len(shape0) or len(ins[1]) != len(shape1):
        return False
    size = dict(zip(ins[0], shape0))
    return all(size.get(c, n) == n for c, n in zip(ins[1], shape1))


_INTO = {}


def _into(ufunc, pos):
    """ufunc(a, b) computed into its operand at pos (a buffer nothing else holds)."""
    f = _INTO.get((ufunc, pos))
    if f is None:
        if pos == 0:

            def f(a, b):
                return ufunc(a, b, out=a)
        else:

            def f(a, b):
                return ufunc(a, b, out=b)

        f.__name__ = f"{ufunc.__name__}_into_{pos}"
        f.ufunc, f.pos = ufunc, pos
        _INTO[(ufunc, pos)] = f
    return f


_REUSABLE = (np.add, np.subtract, np.multiply, np.true_divide)


def _add_at(a, g, idx):
    """a + untake(g, idx): g added into a's own buffer at idx (a is dead after it)."""
    a[idx] += g
    return a


def _copy_add_at(c, g, idx):
    """c + untake(g, idx) for a constant array c: a copy of c with g added at idx."""
    a = c.copy()
    a[idx] += g
    return a


def _take_copy(a, idx):
    """a[idx] as a new array (read before a's buffer is written)."""
    return a[idx].copy()


def _fresh_slots(steps, meta):
    """(slots holding an array a step of the program made (a ufunc's, a kernel's, at_set's
    copy), whether each slot is read by ufuncs and kernels only, the last step reading it)."""
    from .numpy.indexed_updates import _at_set  # (a copy with the write made)

    fresh, readers_ok = set(), {}
    for fun, args, links, kwargs, slot, _d, _g, nested in steps:
        elementwise = isinstance(fun, np.ufunc) or getattr(fun, "source", None) is not None
        for _, s in links:
            readers_ok[s] = readers_ok.get(s, True) and elementwise and not nested
        for pos in nested:
            for s in _slots_in(args[pos]):
                readers_ok[s] = False
        if not kwargs and (
            isinstance(fun, np.ufunc)
            and fun.nout == 1
            or fun is _at_set
            or fun is _copy_add_at
            or fun is _add_at
            and args[0] is None
            and any(p == 0 and s in fresh for p, s in links)
            or getattr(fun, "source", None) is not None
        ):
            m = meta[slot] if slot < len(meta) else None
            if m is not None and m.type is np.ndarray:
                fresh.add(slot)
    return fresh, readers_ok, _last_reads(steps)


def _accumulations(steps, meta, prog):
    """add(a, untake(g, idx, shape, dtype)), the gradient of a read x[idx] accumulated into a
    cotangent, as a[idx] += g where a is a dead fresh array of the result's shape and dtype
    and idx repeats no position: no zero array of the whole shape per read (a memory
    network's backward pass reads a prefix of its buffer at each step)."""
    from .numpy import indexing

    untake = getattr(indexing.untake, "fun", None)
    if untake is None:
        return steps
    fresh, readers_ok, last = _fresh_slots(steps, meta)
    readers = _readers(steps)  # (a read inside a container counts: such a u stays)
    drop, replace = set(), {}
    for k, (fun, args, links, kwargs, u, _d, _g, nested) in enumerate(steps):
        if (
            fun is not untake
            or kwargs
            or nested
            or len(args) != 4
            or len(links) != 1
            or links[0][0] != 0
            or u == prog.out
            or u >= len(meta)
        ):
            continue
        g_slot, idx = links[0][1], args[1]
        mu, mg = meta[u], meta[g_slot]
        if (
            mu.type is not np.ndarray
            or mu.dtype not in _FLOATS
            or mg.dtype != mu.dtype
            or not indexing._no_repeats(idx)
            or len(readers.get(u, ())) != 1
        ):
            continue
        k2 = readers[u][0]
        f2, args2, links2, kw2, out2 = steps[k2][:5]
        if (
            f2 is not np.add
            or kw2
            or len(args2) != 2
            or len(links2) not in (1, 2)
            or steps[k2][7]
            or out2 >= len(meta)
            or k2 in replace
        ):
            continue
        if len(links2) == 1 and links2[0][1] == u:
            # constant + untake(g, idx): a copy of the constant with g added at idx (no zero
            # array of the whole shape)
            c = args2[1 - links2[0][0]]
            mo = meta[out2]
            if (
                type(c) is np.ndarray
                and mo.type is np.ndarray
                and c.shape == mu.shape == mo.shape
                and c.dtype == mu.dtype == mo.dtype
            ):
                drop.add(k)
                replace[k2] = (
                    _copy_add_at,
                    (c, None, idx),
                    ((1, g_slot),),
                    None,
                    out2,
                    (),
                    steps[k2][6],
                    (),
                )
            continue
        (p0, s0), (p1, s1) = sorted(links2)
        a = s1 if s0 == u else s0 if s1 == u else None
        if a is None or a == u:
            continue
        ma, mo = meta[a], meta[out2]
        if (
            a in fresh
            and a != prog.out
            and last.get(a) == k2
            and readers_ok.get(a)
            and ma.type is np.ndarray
            and ma.shape == mu.shape == mo.shape
            and ma.dtype == mu.dtype == mo.dtype
            and not any(steps[j][0] is _set_into for j in range(k, k2))
        ):
            drop.add(k)
            replace[k2] = (
                _add_at,
                (None, None, idx),
                ((0, a), (1, g_slot)),
                None,
                out2,
                (),
                steps[k2][6],
                (),
            )
    if not replace:
        return steps
    return [replace.get(k, step) for k, step in enumerate(steps) if k not in drop]


def _writes_in_place(steps, meta, prog):
    """at_set(b, idx, v) (a copy of b with the write made) as the write into b's own buffer
    where b is a fresh array read before only by ufuncs and kernels (no view of it exists)
    and after only as b[idx2] for basic indexes idx2: those reads move before the write, as
    copies of the (small) regions they read. A memory network's backward pass zeroes the
    cotangent of each written slot after reading it: one buffer, not a copy per write."""
    from .numpy import _wrap
    from .numpy.indexed_updates import _at_set

    getitems = (operator.getitem, getattr(_wrap.getitem, "fun", None))
    fresh, _readers_ok, _last = _fresh_slots(steps, meta)
    readers = _readers(steps)
    moves = {}
    for k, (fun, args, links, kwargs, _slot, _d, _g, nested) in enumerate(steps):
        if fun is not _at_set or kwargs or nested or len(args) != 3:
            continue
        linked = dict(links)
        b = linked.get(0)
        if (
            b is None
            or 1 in linked
            or not _basic(args[1])
            or b not in fresh
            or b == prog.out
            or b >= len(meta)
            or meta[b].type is not np.ndarray
            or sum(1 for _, s in links if s == b) != 1
        ):
            continue
        later, ok = [], True
        for j in readers.get(b, ()):
            if j == k:
                continue
            if j < k and j >= 0:
                f = steps[j][0]
                elementwise = isinstance(f, np.ufunc) or getattr(f, "source", None) is not None
                ok = ok and elementwise and not steps[j][7]
                continue
            if j < 0 or j in later:
                ok = False
                break
            f2, a2, l2, kw2, s2, _d2, g2, n2 = steps[j]
            if (
                f2 in getitems
                and not kw2
                and not n2
                and not g2
                and len(a2) == 2
                and l2 == ((0, b),)
                and _basic(a2[1])
                and s2 < len(meta)
                and meta[s2].type is np.ndarray
            ):
                later.append(j)
            else:
                ok = False
        if ok:
            moves[k] = later
    if not moves:
        return steps
    moved = {j for js in moves.values() for j in js}
    out = []
    for k, step in enumerate(steps):
        if k in moved:
            continue
        if k in moves:
            for j in moves[k]:
                out.append((_take_copy,) + steps[j][1:])
            step = (_set_into,) + step[1:]
        out.append(step)
    return out


def _reuse_buffers(steps, meta, prog):
    """The buffer plan: a binary NumPy call whose operand is a fresh array (made by a ufunc,
    matmul or a kernel of the program) of the result's shape and dtype, read by ufuncs and
    kernels only and for the last time here, writes its result into that operand's buffer
    (out=) instead of a new one: gradient accumulations (dW = dW + h.T @ g) become the
    in-place updates a hand-written gradient makes."""
    fresh, readers_ok, last = _fresh_slots(steps, meta)
    out = []
    for k, step in enumerate(steps):
        fun, args, links, kwargs, slot = step[:5]
        if fun in _REUSABLE and not kwargs and len(args) == 2 and slot < len(meta):
            m = meta[slot]
            for pos, s in links:
                om = meta[s]
                if (
                    s in fresh
                    and s != prog.out
                    and last.get(s) == k
                    and readers_ok.get(s)
                    and om.type is np.ndarray
                    and om.shape == m.shape
                    and om.dtype == m.dtype
                    and m.type is np.ndarray
                    and sum(1 for _, s2 in links if s2 == s) == 1
                ):
                    step = (_into(fun, pos),) + step[1:]
                    break
        out.append(step)
    return out


def _mutated(step):
    """The position of the argument whose buffer the planned step writes into, or None."""
    fun = step[0]
    if fun is _set_into or fun is _add_at:
        return 0
    return getattr(fun, "pos", None) if getattr(fun, "ufunc", None) is not None else None


def _values_in_buffers(steps, meta, prog, n_slots):
    """A value written into a buffer in place (_set_into(buf, idx, v), v of buf[idx]'s shape
    and dtype, so the region holds v's exact bits) and read again later is read from the
    buffer, as a view buf[idx] taken right after the write: v itself dies at the write. A
    memory network's backward pass reads each step's output (tanh's, for its derivative) from
    the memory, as a hand-written gradient does, instead of keeping a copy of it per step.
    Only where no later write into the buffer touches the region before v's last read, and
    the buffer is read (or viewed) at least that late anyway (the view never keeps a buffer
    alive longer than the program did). Returns (steps, n_slots)."""
    # the slots that share a buffer: a write's result is its target; a view shares its base's
    parent = {}

    def find(s):
        while parent.get(s, s) != s:
            s = parent[s]
        return s

    from .numpy import _wrap

    getitems = (operator.getitem, getattr(_wrap.getitem, "fun", None))
    for step in steps:
        pos = _mutated(step)
        if pos is not None:
            for p, s in step[2]:
                if p == pos:
                    parent[find(step[4])] = find(s)
        elif step[0] in getitems and _basic(step[1][1]) and step[2] and step[2][0][0] == 0:
            parent[find(step[4])] = find(step[2][0][1])
    readers = _readers(steps)
    buffer_last = {}
    for s, k in _last_reads(steps).items():
        r = find(s)
        buffer_last[r] = max(buffer_last.get(r, -1), k)
    redirect, inserts = {}, {}
    by_class = _mutations_by_buffer(steps, find)
    for k, step in enumerate(steps):
        fun, args, links, kwargs, slot = step[:5]
        if fun is not _set_into or kwargs or step[7] or len(args) != 3:
            continue
        linked = dict(links)
        v, b = linked.get(2), linked.get(0)
        idx = args[1]
        if v is None or b is None or 1 in linked or v == prog.out or not _basic(idx):
            continue
        later = [j for j in readers.get(v, ()) if j != k]
        if not later or any(j < 0 for j in later) or min(later) < k:
            continue
        if any(dict(steps[j][2]).get(_mutated(steps[j])) == v for j in later):
            continue  # (a step writes into v's buffer: the buffer's region must not be)
        mv, mb = meta[v], meta[b]
        if mv.type is not np.ndarray or mb.type is not np.ndarray or mv.dtype != mb.dtype:
            continue
        try:
            probe = np.lib.stride_tricks.as_strided(
                np.zeros(1, np.uint8), mb.shape, (0,) * len(mb.shape)
            )
            if probe[idx].shape != mv.shape:
                continue
        except (IndexError, TypeError, ValueError):
            continue
        end, root = max(later), find(b)
        if buffer_last.get(root, -1) < end:
            continue
        ok = True
        for _j, later_step in _between(by_class.get(root, ()), k, end):
            if later_step[0] is not _set_into or not _disjoint(mb.shape, idx, later_step[1][1]):
                ok = False
                break
        if not ok:
            continue
        view = n_slots
        n_slots += 1
        meta.append(_Meta(np.empty(mv.shape, mv.dtype)))
        inserts[k] = (operator.getitem, (None, idx), ((0, slot),), None, view, (), (), ())
        for j in later:
            redirect.setdefault(j, {})[v] = view
    if not inserts:
        return steps, n_slots
    out = []
    for k, step in enumerate(steps):
        r = redirect.get(k)
        if r:
            step = step[:2] + (tuple((p, r.get(s, s)) for p, s in step[2]),) + step[3:]
        out.append(step)
        if k in inserts:
            out.append(inserts[k])
    return out, n_slots


# a view read again this many steps or more after its previous read is taken again there
_VIEW_GAP = 8


def _views_at_reads(steps, meta, prog, n_slots):
    """A basic view of a buffer (x[:, :i], x[:, -1], a chain of them) read again much later
    (the backward pass's read of a memory network's prefixes) is taken again at that read,
    from the array it views, instead of being kept alive in between: the array is alive
    anyway (the view holds it), so a program that keeps a view per step keeps one array
    instead. Only where the region it views is not written in between (the array a write
    chain's version, or an input, which nothing writes) and no step writes into the view.
    Returns (steps, n_slots)."""
    from .numpy import _wrap
    from .numpy.indexed_updates import _at_set

    getitems = (operator.getitem, getattr(_wrap.getitem, "fun", None))
    producer, path = {}, {}
    parent = {}

    def find(s):
        while parent.get(s, s) != s:
            s = parent[s]
        return s

    for k, step in enumerate(steps):
        fun, args, links, kwargs, slot, _d, guards, nested = step
        producer[slot] = k
        pos = _mutated(step)
        if pos is not None:
            for p, t in links:
                if p == pos:
                    parent[find(slot)] = find(t)
        if (
            fun in getitems
            and not kwargs
            and not guards
            and not nested
            and len(args) == 2
            and links == ((0, links[0][1]),)
            and _basic(args[1])
        ):
            base = links[0][1]
            parent[find(slot)] = find(base)
            if base in path:
                r, idxs, slots = path[base]
                path[slot] = (r, idxs + (args[1],), slots + (slot,))
            elif base < prog.n_inputs or steps[producer[base]][0] in (_set_into, _at_set):
                path[slot] = (base, (args[1],), (slot,))
    readers = _readers(steps)
    by_class = _mutations_by_buffer(steps, find)
    retake, redirect, drop = {}, {}, set()
    for v, (root, idxs, slots) in path.items():
        k = producer[v]
        rs = sorted(set(readers.get(v, ())))
        if not rs or rs[0] < 0 or v == prog.out or steps[k][6]:
            continue
        if any(dict(steps[j][2]).get(_mutated(steps[j])) == v for j in rs):
            continue
        groups, prev = [], k
        for j in rs:
            if j - prev >= _VIEW_GAP or not groups:
                groups.append([j])
            else:
                groups[-1].append(j)
            prev = j
        keep_first = groups[0][0] - k < _VIEW_GAP
        far = groups[1:] if keep_first else groups
        if not far:
            continue
        end = far[-1][-1]
        mr = meta[root]
        if mr.type is not np.ndarray:
            continue
        try:
            z = np.empty(mr.shape, np.uint8)
            region = z
            for idx in idxs:
                region = region[idx]
        except (IndexError, TypeError, ValueError):
            continue
        rc, ok = find(root), True
        for _j, step in _between(by_class.get(rc, ()), k, end):
            if step[0] is not _set_into or not _basic(step[1][1]):
                ok = False
                break
            try:
                if np.shares_memory(region, z[step[1][1]]):
                    ok = False
                    break
            except (IndexError, TypeError, ValueError):
                ok = False
                break
        if not ok:
            continue
        for group in far:
            src, chain = root, []
            for idx, orig in zip(idxs, slots):
                new = n_slots
                n_slots += 1
                meta.append(meta[orig])
                chain.append((operator.getitem, (None, idx), ((0, src),), None, new, (), (), ()))
                src = new
            retake.setdefault(group[0], []).append(chain)
            for j in group:
                redirect.setdefault(j, {})[v] = src
        if not keep_first:
            drop.add(k)
    if not retake:
        return steps, n_slots
    out = []
    for k, step in enumerate(steps):
        if k in drop:
            continue
        for chain in retake.get(k, ()):
            out.extend(chain)
        r = redirect.get(k)
        if r:
            step = step[:2] + (tuple((p, r.get(t, t)) for p, t in step[2]),) + step[3:]
        out.append(step)
    return out, n_slots


def _mutations_by_buffer(steps, find):
    """{buffer class root: ([step indexes], [steps])} of the steps that write into a buffer
    (a slot of the class: find(slot) is its root), in program order."""
    out = {}
    for k, step in enumerate(steps):
        pos = _mutated(step)
        if pos is None:
            continue
        t = dict(step[2]).get(pos)
        if t is None:
            continue
        ks, ss = out.setdefault(find(t), ([], []))
        ks.append(k)
        ss.append(step)
    return out


def _between(entry, k, end):
    """The (index, step) pairs of a _mutations_by_buffer entry with k < index <= end."""
    if not entry:
        return ()
    ks, ss = entry
    lo, hi = bisect.bisect_right(ks, k), bisect.bisect_right(ks, end)
    return zip(ks[lo:hi], ss[lo:hi])


def _disjoint(shape, idx, idx2):
    """The basic indexes idx and idx2 of an array of `shape` select no common element."""
    if not _basic(idx2):
        return False
    try:
        z = np.empty(shape, np.uint8)
        return not np.shares_memory(z[idx], z[idx2])
    except (IndexError, TypeError, ValueError):
        return False
