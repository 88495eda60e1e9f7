"""The differentiation operators: grad, value_and_grad, make_vjp, jacobian, hessian, ...

Each call opens its own Tape (no global trace state, so threads and nested calls are
independent), boxes the inputs, runs the function, sweeps, and releases the tape on the way
out, also when the function raises. Only make_vjp hands its tape to the caller (inside the VJP
function it returns), because that function may be called many times.

Threads: any thread may apply operations to a differentiation's traced values while that
differentiation's function runs (they are recorded on its tape); an operation that ends after
the function returned and the backward pass started, or after the tape was released, raises
(RuntimeError, EscapedValueError) and records nothing. Array constructors attach to the
differentiations of their own thread only.
"""
import inspect
from functools import wraps

import numpy as _np

from . import _core, backends
from ._core import Box, Tape
from ._core import grad_fast as _grad_fast
from .registry import defjvp_argnums, defvjp_argnum, defvjp_argnums, primitive
from .vspace import VSpace, vspace
from .wrap_util import _check_argnum, unary_to_nary, wrap_nary_f

__all__ = ["grad", "value_and_grad", "grad_and_aux", "elementwise_grad", "make_vjp",
           "vector_jacobian_product", "jacobian", "hessian", "hessian_vector_product",
           "hessian_tensor_product", "tensor_jacobian_product", "holomorphic_grad",
           "multigrad_dict", "grad_named", "checkpoint", "make_jvp", "deriv", "make_hvp",
           "make_ggnvp", "VJP"]


# =============================================================================
# Containers of inputs and gradients
# =============================================================================
def _first(vals):
    return vals[0]


def tree_flatten(x):
    """The leaves of nested tuples/lists/dicts, and a function that rebuilds the structure."""
    t = type(x)
    if t is _np.ndarray or t is float or t is Box:
        return [x], _first
    if t is tuple or t is list:
        for e in x:
            if isinstance(e, (tuple, list, dict)):
                break
        else:
            return list(x), t        # a flat tuple/list is rebuilt by its own constructor
    if isinstance(x, (tuple, list)):
        parts = [tree_flatten(e) for e in x]
        leaves = [leaf for p in parts for leaf in p[0]]
        sizes = [len(p[0]) for p in parts]
        kind = type(x)

        def unflatten(vals):
            out, i = [], 0
            for (_, unf), n in zip(parts, sizes):
                out.append(unf(vals[i:i + n]))
                i += n
            return kind(out) if kind in (tuple, list) else kind(*out)
        return leaves, unflatten
    if isinstance(x, dict):
        keys = list(x.keys())
        parts = [tree_flatten(x[k]) for k in keys]
        sizes = [len(p[0]) for p in parts]
        kind = type(x)

        def unflatten(vals):
            out, i = kind(), 0
            for k, (_, unf), n in zip(keys, parts, sizes):
                out[k] = unf(vals[i:i + n])
                i += n
            return out
        return leaves_of(parts), unflatten
    return [x], lambda vals: vals[0]


def leaves_of(parts):
    return [leaf for p in parts for leaf in p[0]]


def _is_float_leaf(x):
    """The common valid inputs, decided without dtype machinery."""
    t = type(x)
    return ((t is _np.ndarray and x.dtype.kind in "fc") or t is float or t is complex)


def _check_leaf(x, fname, argnum):
    value = x._value if isinstance(x, Box) else x
    while isinstance(value, Box):
        value = value._value
    if type(value) in _box_subclass_types():
        return          # a type of the user's own, with a Box subclass and a VSpace
    if isinstance(value, (bool, _np.bool_)) or (
            isinstance(value, (int, _np.integer)) and not isinstance(value, bool)):
        raise TypeError(f"{fname}: argument {argnum} is an integer ({type(value).__name__}); "
                        f"gradients are defined for floating-point and complex inputs. Pass a "
                        f"float (e.g. {value!r}.0 or float(x)).")
    if isinstance(value, _np.ndarray) or isinstance(value, _np.generic):
        if not _np.issubdtype(value.dtype, _np.inexact):
            raise TypeError(f"{fname}: argument {argnum} has dtype {value.dtype}; gradients are "
                            f"defined for floating-point and complex inputs. Pass "
                            f"x.astype(float) instead.")
    elif backends.is_array_value(value):
        if _np.dtype(value.dtype).kind not in "fc":
            raise TypeError(f"{fname}: argument {argnum} has dtype {value.dtype}; gradients are "
                            f"defined for floating-point and complex inputs. Pass "
                            f"x.astype(float) instead.")
    elif not isinstance(value, (float, complex)):
        raise TypeError(f"{fname}: argument {argnum} is a {type(value).__name__}; expected a "
                        f"float, complex, numpy array, or tuple/list/dict of these (a type of "
                        f"your own needs a Box subclass, MyBox.register(T), and a VSpace, "
                        f"MyVSpace.register(T)).")


def _box_subclass_types():
    """The value types registered with a Box subclass (Box.register) that have a VSpace."""
    return [t for t in Box.type_mappings if t in VSpace.mappings]


def _zeros_like(x):
    if backends.is_array_value(x):
        return _np.zeros_like(x)
    if type(x) is Box:
        return _np.zeros(x.shape, x.dtype)
    if isinstance(x, _np.ndarray):
        return _np.zeros(x.shape, x.dtype)
    if isinstance(x, _np.generic):
        return x.dtype.type(0)
    if type(x) in _box_subclass_types():
        return vspace(x).zeros()
    return type(x)(0)


def _match_input(g, x):
    """The gradient g given the type, dtype and shape of input x (Python float in, float out;
    0-d array in, 0-d array out; float32 in, float32 out)."""
    if g is None:
        return _zeros_like(x)
    if type(x) is _np.ndarray and type(g) is _np.ndarray and g.dtype == x.dtype and (
            g.shape == x.shape):
        # a broadcast view (the cotangent of a sum) is handed out as an array of its own
        return g if g.flags.writeable else g.copy()
    if type(g) is Box:
        return g
    if type(x) is Box:
        return g
    if backends.is_array_value(g) or backends.is_array_value(x):
        return backends.match_gradient(g, x)
    if isinstance(x, _np.ndarray):
        g = _np.asarray(g)
        if _np.iscomplexobj(g) and not _np.iscomplexobj(x):
            g = g.real
        if g.dtype != x.dtype:
            g = g.astype(x.dtype)
        if g.shape != x.shape:
            g = _np.broadcast_to(g, x.shape)
        return g if g.flags.writeable else g.copy()
    if isinstance(x, _np.generic):
        if _np.iscomplexobj(g) and not _np.iscomplexobj(x):
            g = _np.real(g)
        return x.dtype.type(g)
    if isinstance(x, float):
        return float(_np.real(g))
    if isinstance(x, complex):
        return complex(g)
    return g


# =============================================================================
# The VJP of one traced call
# =============================================================================
class VJP:
    """The vector-Jacobian product of one traced call, as returned by `gradcy.make_vjp`.

    ``vjp(g)`` returns the cotangent of the differentiated argument(s) for a cotangent ``g``
    of the output (same structure as the output). The object holds the call's tape, and with
    it every buffer saved for the backward pass, until `release` is called or the object is
    dropped.
    """

    __slots__ = ("_tape", "_out", "_leaves", "_inputs", "_unflatten", "_consume", "_fname",
                 "_packed")

    def __init__(self, tape, out, leaves, inputs, unflatten, consume, fname):
        self._tape = tape
        self._out = out            # index of the output node, or None if independent of inputs
        self._leaves = leaves      # node indices of the input leaves
        self._inputs = inputs      # the plain input leaves (for type/dtype/shape of gradients)
        self._unflatten = unflatten
        self._consume = consume
        self._fname = fname
        self._packed = False       # the output was a container: g is flattened the same way

    def __call__(self, g):
        cots = self._cotangents(g)
        return self._unflatten(backends.compute_pending(cots, self._inputs))

    def _cotangents(self, g):
        """The matched cotangents of the input leaves (flat; Dask ones of NumPy inputs not
        computed yet)."""
        tape = self._tape
        if tape is None or tape.released:
            raise _core.EscapedValueError(
                f"{self._fname}: this VJP function was already used or released; call "
                f"make_vjp again")
        try:
            if self._out is None:
                cots = [None] * len(self._leaves)
            else:
                if self._packed:
                    g = tuple(tree_flatten(g)[0])
                cots = tape.backward(self._out, g, self._consume, self._leaves)
        finally:
            if self._consume:
                self.release()
        return [_match_input(c, x) for c, x in zip(cots, self._inputs)]

    def release(self):
        """Free the tape and the buffers it saved now (idempotent); later calls raise
        `gradcy.EscapedValueError`.
        """
        tape, self._tape = self._tape, None
        if tape is not None:
            tape.release()


def _differentiated_leaves(args, argnum, fname):
    """(leaves, unflatten) of the differentiated argument(s), after checking every leaf is a
    float or complex value (the error names the offending argument)."""
    multi = type(argnum) is tuple or type(argnum) is list
    try:
        x = tuple([args[i] for i in argnum]) if multi else args[argnum]
    except (IndexError, TypeError):
        _check_argnum(args, argnum, fname)
        raise
    leaves, unflatten = tree_flatten(x)
    if not all([_is_float_leaf(leaf) for leaf in leaves]):
        for i in (argnum if multi else (argnum,)):
            for leaf in tree_flatten(args[i])[0]:
                _check_leaf(leaf, fname, i)
    return leaves, unflatten


def _note_shared_arguments(tape, args, kwargs, argnum):
    """A plain ndarray passed beside the differentiated ones (not differentiated, top level or
    in a tuple/list/dict) whose memory a differentiated input is in: that input is marked as
    shared, so a write into it raises (NumPy would change the other argument too, which gradcy
    never writes)."""
    diff = set(argnum) if type(argnum) is tuple or type(argnum) is list else {argnum}
    diff = {i % len(args) for i in diff}
    others = [a for i, a in enumerate(args) if i not in diff] + list(kwargs.values())
    while others:
        a = others.pop()
        if type(a) is tuple or type(a) is list:
            others.extend(a)
        elif type(a) is dict:
            others.extend(a.values())
        elif type(a) is _np.ndarray:
            entry = tape.input_entry(a)
            if entry is not None:
                entry.site = (entry.site or 1) + 1
                if entry.root is not a:
                    entry.root = None


def _call_traced(tape, fun, args, kwargs, argnum, traced_x):
    """fun(*args) with args[argnum] replaced by traced_x, with `tape` this thread's active
    differentiation while it runs (array constructors hand out buffers it owns)."""
    new_args = list(args)
    if type(argnum) is tuple or type(argnum) is list:
        for i, a in zip(argnum, traced_x):
            new_args[i] = a
    else:
        new_args[argnum] = traced_x
    del traced_x
    if tape.inputs is not None:
        _note_shared_arguments(tape, args, kwargs, argnum)
    _core.push_active(tape)
    try:
        return fun(*new_args, **kwargs)
    finally:
        _core.pop_active(tape)


def _trace(fun, args, kwargs, argnum, fname, consume, observer=None, recompute=None):
    """Run fun with args[argnum] traced; returns (VJP, plain output value)."""
    leaves, unflatten = _differentiated_leaves(args, argnum, fname)
    tape = Tape()
    if observer is not None:
        tape.observer = observer
    if recompute is not None:
        tape.recompute = recompute
    try:
        boxes = [tape.new_leaf(v) for v in leaves]
        leaf_nodes = [b._node for b in boxes]
        out = _call_traced(tape, fun, args, kwargs, argnum, unflatten(boxes))
        del boxes
    except BaseException:
        tape.release()
        raise
    return _finish_trace(tape, out, leaves, leaf_nodes, unflatten, fname, consume)


def _finish_trace(tape, out, leaves, leaf_nodes, unflatten, fname, consume):
    """(VJP, plain output value) of a traced call whose function has returned `out`."""
    try:
        out_node, ans, out_structure = _output(tape, out, fname)
        del out
    except BaseException:
        tape.release()
        raise
    vjp = VJP(tape, out_node, leaf_nodes, leaves, unflatten, consume, fname)
    vjp._packed = out_structure is not None
    return vjp, ans


def _finish_grad(fname, with_value, tape, out, leaves, leaf_nodes, multi):
    """The rest of grad / value_and_grad after _core.grad_fast ran the function."""
    vjp, ans = _finish_trace(tape, out, leaves, leaf_nodes, tuple if multi else _first, fname,
                             True)
    return _grad_of(vjp, ans, fname, with_value)


def _grad_of(vjp, ans, fname, with_value):
    """The gradient (with_value: (ans, gradient)) from a consuming VJP of a scalar output;
    the VJP's tape is released also when the output is not a real scalar."""
    try:
        _check_scalar_output(ans, fname)
    except BaseException:
        vjp.release()
        raise
    if not backends.is_array_value(ans):
        g = vjp(_ones_like(ans))
        return (ans, g) if with_value else g
    # arrays of other libraries: Dask gradients of NumPy inputs (and with them the value) are
    # computed together, so the graph they share runs once
    unflatten, inputs = vjp._unflatten, vjp._inputs
    cots = vjp._cotangents(_ones_like(ans))
    if with_value and not any(backends.is_lazy(x) for x in inputs):
        *cots, ans = backends.compute_pending(cots + [ans], inputs + [None])
        return ans, unflatten(cots)
    g = unflatten(backends.compute_pending(cots, inputs))
    return (ans, g) if with_value else g


@primitive
def pack_outputs(*values):
    """The leaves of a function's container output as one traced tuple (one output node)."""
    return values


defvjp_argnum(pack_outputs, lambda argnum, ans, args, kwargs: lambda g: g[argnum], save=())


def _pack_outputs_jvp(argnums, gs, ans, args, kwargs):
    tangents = dict(zip(argnums, gs))
    return tuple(tangents[i] if i in tangents else _zeros_like(a) for i, a in enumerate(args))


defjvp_argnums(pack_outputs, _pack_outputs_jvp)


def _output(tape, out, fname):
    """(output node or None, plain output value, structure) of a traced call's result."""
    if out is None:
        raise TypeError(f"{fname}: the differentiated function returned None; it must return "
                        f"its output (a scalar for grad)")
    if type(out) is Box and out._tape is tape:
        return tape.pin(out), out._value, None
    if isinstance(out, (tuple, list, dict)) and _contains_tape_box(out, tape):
        leaves, unflatten = tree_flatten(out)
        packed = pack_outputs(*leaves)
        values = [leaf._value if type(leaf) is Box and leaf._tape is tape else leaf
                  for leaf in leaves]
        return tape.pin(packed), unflatten(values), unflatten
    return None, out, None


def _contains_tape_box(obj, tape):
    if type(obj) is Box:
        return obj._tape is tape
    if isinstance(obj, (tuple, list)):
        return any(_contains_tape_box(e, tape) for e in obj)
    if isinstance(obj, dict):
        return any(_contains_tape_box(e, tape) for e in obj.values())
    return False


_SCALAR_ONES = _core.SCALAR_SEEDS      # the seed of a real scalar output, by its type


def _ones_like(ans):
    one = _SCALAR_ONES.get(type(ans))
    if one is not None:          # the common seed: a real scalar output (immutable, shared)
        return one
    if backends.is_array_value(ans):
        return _np.ones_like(ans)
    if type(ans) is Box:
        return _np.ones_like(ans) if ans.ndim else _np.ones_like(ans)[()]
    if isinstance(ans, _np.ndarray):
        return _np.ones_like(ans)
    if isinstance(ans, _np.generic):
        return ans.dtype.type(1)
    return type(ans)(1) if isinstance(ans, (float, complex)) else 1.0


_REAL_SCALARS = tuple(_core.SCALAR_SEEDS)


def _check_scalar_output(ans, fname):
    if type(ans) in _REAL_SCALARS:
        return
    value = ans
    while type(value) is Box:
        value = value._value
    if backends.is_array_value(value):
        if value.size != 1:
            raise TypeError(f"{fname}: the function returned an array of shape {value.shape}; "
                            f"{fname} needs a scalar output. Use elementwise_grad, jacobian or "
                            f"make_vjp for array outputs.")
        if _np.dtype(value.dtype).kind != "f":
            raise TypeError(f"{fname}: the function returned a {type(value).__name__} of dtype "
                            f"{value.dtype}; {fname} needs a real floating-point output")
        return
    if isinstance(value, (bool, _np.bool_)) or (
            isinstance(value, _np.ndarray) and value.dtype.kind == "b"):
        raise TypeError(f"{fname}: the function returned a boolean ({value!r}), which has no "
                        f"gradient; {fname} needs a floating-point scalar output")
    if _np.size(value) != 1:
        raise TypeError(f"{fname}: the function returned an array of shape {_np.shape(value)}; "
                        f"{fname} needs a scalar output. Use elementwise_grad, jacobian or "
                        f"make_vjp for array outputs.")
    _check_float_output(value, fname)
    if _np.iscomplexobj(value):
        raise TypeError(f"{fname}: the function returned a complex value; {fname} needs a real "
                        f"output. Use holomorphic_grad for holomorphic functions, or take "
                        f"the real part or abs() of the output.")


def _check_float_output(ans, fname):
    """Derivatives are of floating-point (or complex) outputs: a bool, integer, string or
    other object returned by the differentiated function is an error, not a zero gradient."""
    value = ans
    while type(value) is Box:
        value = value._value
    t = type(value)
    if t is float or t is complex:
        return
    if isinstance(value, (_np.ndarray, _np.generic)) or backends.is_array_value(value):
        if value.dtype.kind in "fc":
            return
        what = f"a value of dtype {value.dtype}"
    else:
        what = f"{'an' if t.__name__[0] in 'aeiou' else 'a'} {t.__name__} ({value!r:.40})"
    raise TypeError(f"{fname}: the function returned {what}; derivatives are defined for "
                    f"floating-point (or complex) outputs. Return a float value (e.g. "
                    f"x.astype(float)); a boolean, integer or string result has no gradient.")


def _vjp_of_ones(vjp, ans, fname):
    """vjp applied to ones like a float output; the VJP's tape is released also on error."""
    try:
        _check_float_output(ans, fname)
    except BaseException:
        vjp.release()
        raise
    return vjp(_ones_like(ans))


# =============================================================================
# Operators
# =============================================================================
def make_vjp(fun, argnum=0):
    """A function returning the vector-Jacobian product (VJP) function of ``fun`` and its value.

    Parameters
    ----------
    fun : callable
        The function to differentiate; its output may be an array or a tuple/list/dict of
        arrays.
    argnum : int or tuple of int, optional
        The positional argument(s) to differentiate with respect to (default 0).

    Returns
    -------
    callable
        ``vjp_maker(*args, **kwargs) -> (vjp, ans)``: ``ans`` is ``fun(*args, **kwargs)`` and
        ``vjp(g)`` the cotangent of ``args[argnum]`` for a cotangent ``g`` shaped like ``ans``
        (``g`` contracted with the Jacobian). ``vjp`` may be called many times; it holds the
        recorded tape until ``vjp.release()`` is called or ``vjp`` is dropped.

    See Also
    --------
    vector_jacobian_product : the same for one cotangent, without keeping the tape.
    make_jvp : the forward-mode counterpart.

    Examples
    --------
    >>> import gradcy.numpy as np
    >>> from gradcy import make_vjp
    >>> vjp, ans = make_vjp(np.sin)(np.array([0.0, 1.0]))
    >>> print(vjp(np.array([1.0, 2.0])))          # cos(x) * g
    [1.         1.08060461]
    >>> print(vjp(np.array([1.0, 0.0])))          # called again on the same tape
    [1. 0.]
    >>> vjp.release()
    """
    @wrap_nary_f(fun, make_vjp, argnum)
    def vjp_maker(*args, **kwargs):
        vjp, ans = _trace(fun, args, kwargs, argnum, "make_vjp", consume=False)
        return vjp, ans
    return vjp_maker


def value_and_grad(fun, argnum=0):
    """A function returning both the value and the gradient of a scalar-valued function.

    Cheaper than calling ``fun`` and `grad` separately: the value comes from the forward pass
    of the gradient computation.

    Parameters
    ----------
    fun : callable
        A function returning a real scalar.
    argnum : int or tuple of int, optional
        The positional argument(s) to differentiate with respect to (default 0).

    Returns
    -------
    callable
        ``value_and_grad_fun(*args, **kwargs) -> (fun(*args, **kwargs), gradient)``, the
        gradient as `grad` gives it.

    See Also
    --------
    grad, grad_and_aux

    Examples
    --------
    >>> import gradcy.numpy as np
    >>> from gradcy import value_and_grad
    >>> loss, g = value_and_grad(lambda w: np.sum(w ** 2))(np.array([1.0, -2.0]))
    >>> print(loss, g)
    5.0 [ 2. -4.]
    """
    @wrap_nary_f(fun, value_and_grad, argnum)
    def value_and_grad_fun(*args, **kwargs):
        out = _grad_fast(fun, args, kwargs, argnum, "value_and_grad", True, _finish_grad,
                         _match_input)
        if out is not NotImplemented:
            return out
        vjp, ans = _trace(fun, args, kwargs, argnum, "value_and_grad", consume=True)
        return _grad_of(vjp, ans, "value_and_grad", True)
    return value_and_grad_fun


def _recompute_flag(recompute):
    """The tape setting of grad's `recompute` policy (None: the process default)."""
    if recompute is None:
        return None
    if recompute in ("elementwise", True):
        return True
    if recompute in ("none", False):
        return False
    raise ValueError(f"grad: recompute must be 'elementwise', 'none' or None (the default), "
                     f"got {recompute!r}")


def grad(fun, argnum=0, recompute=None):
    """
    Returns a function which computes the gradient of a scalar-valued function.

    Parameters
    ----------
    fun : callable
        A function of one or more positional arguments returning a real scalar (a Python float,
        or a NumPy scalar or array of size 1), written with ``gradcy.numpy`` (plain NumPy
        functions called on traced values are routed to gradcy too).
    argnum : int or tuple of int, optional
        The positional argument to differentiate with respect to (default 0). With a tuple of
        ints the gradient is a tuple, one entry per listed argument.
    recompute : {None, 'elementwise', 'none'}, optional
        ``'elementwise'``: a value made by a cheap elementwise operation (divide, multiply,
        exp, tanh, ...) whose own saved record holds all its inputs is not kept by the
        operations that read it; the backward pass makes it again (same values, bit for bit).
        Less memory, a little more arithmetic. Default: off.

    Returns
    -------
    callable
        ``gradfun(*args, **kwargs)``: the gradient of ``fun`` at ``args`` with respect to
        ``args[argnum]``. It has the type, dtype and shape of that argument: a Python float
        for a float, a float32 array for a float32 array, a tuple/list/dict of gradients for a
        tuple/list/dict argument.

    Raises
    ------
    TypeError
        If ``fun`` returns an array of more than one element or a complex value (use
        `elementwise_grad`, `jacobian`, `make_vjp` or `holomorphic_grad`), or if the
        differentiated argument holds integers (pass floats).
    IndexError
        If ``argnum`` is not the position of one of the arguments.

    See Also
    --------
    value_and_grad : the value and the gradient in one pass.
    elementwise_grad, jacobian, make_vjp : functions with array outputs.
    grad_named : the gradient with respect to an argument given by name.

    Examples
    --------
    >>> import gradcy.numpy as np
    >>> from gradcy import grad
    >>> def f(x, y):
    ...     return np.sum(np.sin(x) * y)
    >>> x, y = np.array([0.0, 1.0]), np.array([2.0, 3.0])
    >>> print(grad(f)(x, y))                      # cos(x) * y
    [2.         1.62090692]
    >>> gx, gy = grad(f, argnum=(0, 1))(x, y)
    >>> print(gy)                                 # sin(x)
    [0.         0.84147098]
    >>> grad(lambda t: t ** 3)(2.0)               # a float in, a float out
    12.0
    >>> grad(grad(lambda t: t ** 3))(2.0)         # gradients of gradients
    12.0
    """
    flag = _recompute_flag(recompute)

    @wrap_nary_f(fun, grad, argnum)
    def gradfun(*args, **kwargs):
        if flag is None:
            # plain float arrays in, a real scalar out: the whole call runs in _core
            g = _grad_fast(fun, args, kwargs, argnum, "grad", False, _finish_grad,
                           _match_input)
            if g is not NotImplemented:
                return g
        vjp, ans = _trace(fun, args, kwargs, argnum, "grad", consume=True, recompute=flag)
        return _grad_of(vjp, ans, "grad", False)
    return gradfun


def grad_and_aux(fun, argnum=0):
    """The gradient of a function that also returns an auxiliary value.

    Parameters
    ----------
    fun : callable
        A function returning a pair ``(output, aux)``: ``output`` a real scalar, ``aux``
        anything (it is not differentiated).
    argnum : int or tuple of int, optional
        The positional argument(s) to differentiate with respect to (default 0).

    Returns
    -------
    callable
        ``grad_and_aux_fun(*args, **kwargs) -> (gradient of output, aux)``, with ``aux`` as
        plain (untraced) values.

    Examples
    --------
    >>> import gradcy.numpy as np
    >>> from gradcy import grad_and_aux
    >>> def f(x):
    ...     y = np.tanh(x)
    ...     return np.sum(y), y                  # (output, auxiliary value)
    >>> g, aux = grad_and_aux(f)(np.zeros(2))
    >>> print(g, aux)
    [1. 1.] [0. 0.]
    """
    @wrap_nary_f(fun, grad_and_aux, argnum)
    def grad_and_aux_fun(*args, **kwargs):
        aux_box = []

        def only_output(*a, **k):
            out, aux = fun(*a, **k)
            aux_box.append(aux)
            return out
        vjp, ans = _trace(only_output, args, kwargs, argnum, "grad_and_aux", consume=True)
        aux = _strip(aux_box[0], vjp._tape)      # while the tape is there to compare with
        return _grad_of(vjp, ans, "grad_and_aux", False), aux
    return grad_and_aux_fun


def _strip(obj, tape):
    """obj with the Boxes of `tape` replaced by their plain values."""
    if type(obj) is Box:
        return obj._value if obj._tape is tape else obj
    if isinstance(obj, (tuple, list)):
        return type(obj)(_strip(e, tape) for e in obj)
    if isinstance(obj, dict):
        return {k: _strip(v, tape) for k, v in obj.items()}
    return obj


def elementwise_grad(fun, argnum=0):
    """The derivative of an elementwise function, element by element.

    It is the vector-Jacobian product with a cotangent of ones: for a function whose output
    element ``i`` depends only on input element ``i``, element ``i`` of the result is the
    derivative of output ``i`` with respect to input ``i``. For other functions it is the
    gradient of the sum of the outputs.

    Parameters
    ----------
    fun : callable
        A function with a floating-point (array) output.
    argnum : int or tuple of int, optional
        The positional argument(s) to differentiate with respect to (default 0).

    Returns
    -------
    callable
        ``gradfun(*args, **kwargs)``, shaped like ``args[argnum]``.

    See Also
    --------
    deriv : the same in forward mode (cheaper for elementwise functions of large arrays).

    Examples
    --------
    >>> import gradcy.numpy as np
    >>> from gradcy import elementwise_grad
    >>> print(elementwise_grad(np.tanh)(np.array([0.0, 1.0])))   # 1 - tanh(x)**2
    [1.         0.41997434]
    """
    @wrap_nary_f(fun, elementwise_grad, argnum)
    def gradfun(*args, **kwargs):
        vjp, ans = _trace(fun, args, kwargs, argnum, "elementwise_grad", consume=True)
        return _vjp_of_ones(vjp, ans, "elementwise_grad")
    return gradfun


def holomorphic_grad(fun, argnum=0):
    """The complex derivative of a holomorphic function.

    Parameters
    ----------
    fun : callable
        A holomorphic (complex-differentiable) function of a complex argument.
    argnum : int, optional
        The positional argument to differentiate with respect to (default 0); it must be
        complex.

    Returns
    -------
    callable
        ``gradfun(*args, **kwargs)``: ``d fun / d z`` at ``args``, complex.

    Raises
    ------
    TypeError
        If the argument is not complex.

    Examples
    --------
    >>> from gradcy import holomorphic_grad
    >>> holomorphic_grad(lambda z: z ** 2)(1.0 + 2.0j)    # 2 z
    (2+4j)
    """
    @wrap_nary_f(fun, holomorphic_grad, argnum)
    def gradfun(*args, **kwargs):
        _check_argnum(args, argnum, "holomorphic_grad")
        x = args[argnum]
        if not _np.iscomplexobj(x._value if type(x) is Box else x):
            raise TypeError("holomorphic_grad: the input must be complex; pass e.g. "
                            "x.astype(complex) or x + 0j")
        vjp, ans = _trace(fun, args, kwargs, argnum, "holomorphic_grad", consume=True)
        return _vjp_of_ones(vjp, ans, "holomorphic_grad")
    return gradfun


def vector_jacobian_product(fun, argnum=0):
    """The vector-Jacobian product of ``fun`` for a given cotangent, in one call.

    Parameters
    ----------
    fun : callable
        The function to differentiate.
    argnum : int or tuple of int, optional
        The positional argument(s) to differentiate with respect to (default 0).

    Returns
    -------
    callable
        ``vjp_fun(*args, v)``: the cotangent of ``args[argnum]`` for the cotangent ``v`` of
        ``fun(*args)`` (the last positional argument is the vector, not an argument of
        ``fun``).

    See Also
    --------
    make_vjp : keeps the tape to apply the VJP to many cotangents.

    Examples
    --------
    >>> import gradcy.numpy as np
    >>> from gradcy import vector_jacobian_product
    >>> vjp_fun = vector_jacobian_product(np.sin)
    >>> print(vjp_fun(np.array([0.0, 1.0]), np.array([1.0, 2.0])))   # cos(x) * v
    [1.         1.08060461]
    """
    def vector_dot_grad(*args, **kwargs):
        args, vector = args[:-1], args[-1]
        _check_argnum(args, argnum, "vector_jacobian_product", " besides the vector")
        vjp, _ = _trace(fun, args, kwargs, argnum, "vector_jacobian_product", consume=True)
        return vjp(vector)
    return vector_dot_grad


def jacobian(fun, argnum=0):
    """The Jacobian of ``fun``, by one reverse pass per output element.

    Parameters
    ----------
    fun : callable
        A function with a floating-point (array) output.
    argnum : int, optional
        The positional argument to differentiate with respect to (default 0).

    Returns
    -------
    callable
        ``jacobian_fun(*args, **kwargs)``: an array of shape ``out.shape + x.shape`` where
        ``out = fun(*args)`` and ``x = args[argnum]``; element ``[i, j]`` is
        ``d out[i] / d x[j]``.

    See Also
    --------
    hessian, make_vjp, make_jvp

    Examples
    --------
    >>> import gradcy.numpy as np
    >>> from gradcy import jacobian
    >>> print(jacobian(np.cumsum)(np.array([1.0, 2.0, 3.0])))
    [[1. 0. 0.]
     [1. 1. 0.]
     [1. 1. 1.]]
    """
    @wrap_nary_f(fun, jacobian, argnum)
    def jacobian_fun(*args, **kwargs):
        vjp, ans = _trace(fun, args, kwargs, argnum, "jacobian", consume=False)
        try:
            _check_float_output(ans, "jacobian")
            x = args[argnum]
            out_shape = _np.shape(ans._value if type(ans) is Box else ans)
            ans_value = ans
            while type(ans_value) is Box:
                ans_value = ans_value._value
            n = int(_np.prod(out_shape))
            dtype = _np.result_type(ans_value)
            rows = []
            for i in range(n):
                e = _np.zeros(n, dtype)
                e[i] = 1
                e = e.reshape(out_shape)
                if not isinstance(ans_value, _np.ndarray):
                    e = dtype.type(e)
                rows.append(vjp(e))
        finally:
            vjp.release()
        x_shape = _np.shape(x._value if type(x) is Box else x)
        if not rows:
            return _np.zeros(tuple(out_shape) + tuple(x_shape))
        return _np.reshape(_np.stack(rows), tuple(out_shape) + tuple(x_shape))
    return jacobian_fun


def hessian(fun, argnum=0):
    """The Hessian of a scalar-valued function: the Jacobian of its gradient.

    Parameters
    ----------
    fun : callable
        A function returning a real scalar.
    argnum : int, optional
        The positional argument to differentiate with respect to (default 0).

    Returns
    -------
    callable
        ``hessian_fun(*args, **kwargs)``: an array of shape ``x.shape + x.shape`` for
        ``x = args[argnum]``.

    See Also
    --------
    hessian_tensor_product, make_hvp : Hessian-vector products without forming the Hessian.

    Examples
    --------
    >>> import gradcy.numpy as np
    >>> from gradcy import hessian
    >>> print(hessian(lambda x: x[0] ** 2 * x[1])(np.array([1.0, 2.0])))
    [[4. 2.]
     [2. 0.]]
    """
    hess = jacobian(jacobian(fun, argnum), argnum)

    @wraps(fun)
    def hessian_fun(*args, **kwargs):
        _check_argnum(args, argnum, "hessian")
        return hess(*args, **kwargs)
    return hessian_fun


def hessian_tensor_product(fun, argnum=0):
    """The Hessian of a scalar-valued function contracted with a tensor, without forming the
    Hessian (``hessian_vector_product`` is the same function).

    Parameters
    ----------
    fun : callable
        A function returning a real scalar.
    argnum : int, optional
        The positional argument to differentiate with respect to (default 0).

    Returns
    -------
    callable
        ``hvp(*args, v)``: ``H v``, the Hessian at ``args`` with respect to ``args[argnum]``
        contracted with ``v`` (shaped like that argument) over all its axes. The last
        positional argument is ``v``.

    See Also
    --------
    make_hvp : reuses one traced gradient for many vectors.

    Examples
    --------
    >>> import gradcy.numpy as np
    >>> from gradcy import hessian_vector_product
    >>> hvp = hessian_vector_product(lambda x: x[0] ** 2 * x[1])
    >>> print(hvp(np.array([1.0, 2.0]), np.array([1.0, 0.0])))     # first column of H
    [4. 2.]
    """
    fun_grad = grad(fun, argnum)

    def vector_dot_grad(*args, **kwargs):
        args, vector = args[:-1], args[-1]
        return _np.tensordot(fun_grad(*args, **kwargs), vector, _np.ndim(vector))
    hvp = grad(vector_dot_grad, argnum)

    def hessian_tensor_product_fun(*args, **kwargs):
        _check_argnum(args[:-1], argnum, "hessian_tensor_product", " besides the vector")
        return hvp(*args, **kwargs)
    return hessian_tensor_product_fun


hessian_vector_product = hessian_tensor_product


def tensor_jacobian_product(fun, argnum=0):
    """A tensor contracted with the Jacobian of ``fun`` (a VJP for outputs of any shape).

    Parameters
    ----------
    fun : callable
        A function with a floating-point (array) output.
    argnum : int, optional
        The positional argument to differentiate with respect to (default 0).

    Returns
    -------
    callable
        ``tjp(*args, v)``: ``v`` (shaped like the output) contracted with the Jacobian over the
        output's axes, shaped like ``args[argnum]``. The last positional argument is ``v``.

    Examples
    --------
    >>> import gradcy.numpy as np
    >>> from gradcy import tensor_jacobian_product
    >>> tjp = tensor_jacobian_product(np.cumsum)
    >>> print(tjp(np.array([1.0, 2.0, 3.0]), np.ones(3)))
    [3. 2. 1.]
    """
    def vector_dot_fun(*args, **kwargs):
        args, vector = args[:-1], args[-1]
        return _np.tensordot(vector, fun(*args, **kwargs), axes=_np.ndim(vector))
    tjp = jacobian(vector_dot_fun, argnum)

    def tensor_jacobian_product_fun(*args, **kwargs):
        _check_argnum(args[:-1], argnum, "tensor_jacobian_product", " besides the vector")
        return tjp(*args, **kwargs)
    return tensor_jacobian_product_fun


def grad_named(fun, argname):
    """The gradient with respect to an argument given by its parameter name.

    Parameters
    ----------
    fun : callable
        A function returning a real scalar.
    argname : str
        The name of the parameter of ``fun`` to differentiate with respect to. The argument
        must still be passed positionally.

    Returns
    -------
    callable
        ``grad(fun, argnum)`` for the position of ``argname`` in ``fun``'s signature.

    Examples
    --------
    >>> from gradcy import grad_named
    >>> def f(x, y):
    ...     return x * y ** 2
    >>> grad_named(f, "y")(3.0, 2.0)
    12.0
    """
    arg_index = list(inspect.signature(fun).parameters).index(argname)
    return grad(fun, arg_index)


def multigrad_dict(fun):
    """The gradients with respect to every argument, as a dict keyed by parameter name.

    Parameters
    ----------
    fun : callable
        A function returning a real scalar.

    Returns
    -------
    callable
        ``gradfun(*args, **kwargs) -> {name: gradient}`` for every argument given (by
        position or by keyword).

    Examples
    --------
    >>> from gradcy import multigrad_dict
    >>> def f(x, y):
    ...     return x * y ** 2
    >>> multigrad_dict(f)(3.0, 2.0)
    {'x': 4.0, 'y': 12.0}
    """
    sig = inspect.signature(fun)

    def gradfun(*args, **kwargs):
        bound = sig.bind(*args, **kwargs)
        names = list(bound.arguments)
        values = [bound.arguments[n] for n in names]

        def f_of_values(vals):
            return fun(**dict(zip(names, vals)))
        grads = grad(f_of_values)(values)
        return dict(zip(names, grads))
    return gradfun


def checkpoint(fun):
    """``fun`` as one recorded operation that recomputes its insides during the backward pass.

    A checkpointed call saves only its inputs; its intermediate values are computed again
    when the backward pass reaches it, instead of being held from the forward pass: memory
    traded for time. Use it on the blocks of a long chain (the layers of a network, the steps
    of a simulation) to hold one block's intermediates at a time.

    Parameters
    ----------
    fun : callable
        A function of positional arguments (any of which may be traced) returning a value or
        a tuple/list/dict of values.

    Returns
    -------
    callable
        A function computing what ``fun`` computes, differentiable in reverse and forward
        mode and to any order.

    Examples
    --------
    >>> import gradcy.numpy as np
    >>> from gradcy import checkpoint, grad
    >>> def block(x):
    ...     for _ in range(10):
    ...         x = np.tanh(x)
    ...     return x
    >>> cblock = checkpoint(block)
    >>> x = np.linspace(-1.0, 1.0, 4)
    >>> g = grad(lambda x: np.sum(cblock(cblock(x))))(x)
    >>> bool(np.allclose(g, grad(lambda x: np.sum(block(block(x))))(x)))
    True
    """
    def vjp_argnums(argnums, ans, args, kwargs):
        def vjp(g):
            inner, _ = _trace(fun, args, kwargs, tuple(argnums), "checkpoint",
                                 consume=True)
            return inner(g)
        return vjp

    def jvp_argnums(argnums, gs, ans, args, kwargs):
        argnums = tuple(argnums)
        return _forward(fun, args, kwargs, argnums, [args[i] for i in argnums], tuple, gs,
                        "checkpoint")[1]
    name = getattr(fun, "__name__", "fun")
    wrapped = primitive(fun, f"checkpoint({name})")
    defvjp_argnums(wrapped, vjp_argnums, save=("args",))
    defjvp_argnums(wrapped, jvp_argnums)
    return wraps(fun)(lambda *args, **kwargs: wrapped(*args, **kwargs))


# =============================================================================
# Forward mode
# =============================================================================
def make_jvp(fun, argnum=0):
    """A function returning the Jacobian-vector product (forward mode) of ``fun``.

    Parameters
    ----------
    fun : callable
        The function to differentiate.
    argnum : int or tuple of int, optional
        The positional argument(s) to differentiate with respect to (default 0).

    Returns
    -------
    callable
        ``jvp_maker(*args, **kwargs) -> jvp``, where ``jvp(v)`` returns
        ``(fun(*args), J v)``: the output and its tangent for the tangent ``v`` of
        ``args[argnum]`` (``v`` has that argument's structure). Each ``jvp`` call runs ``fun``
        once, saving nothing for a backward pass.

    See Also
    --------
    make_vjp : the reverse-mode counterpart.
    deriv : the tangent for ``v`` of ones.

    Examples
    --------
    >>> import gradcy.numpy as np
    >>> from gradcy import make_jvp
    >>> jvp = make_jvp(np.sin)(np.array([0.0, 1.0]))
    >>> ans, tangent = jvp(np.array([1.0, 1.0]))
    >>> print(tangent)                            # cos(x) * v
    [1.         0.54030231]
    """
    def jvp_maker(*args, **kwargs):
        leaves, unflatten = _differentiated_leaves(args, argnum, "make_jvp")

        def jvp(v):
            tangents = tree_flatten(v)[0]
            if len(tangents) != len(leaves):
                raise ValueError(f"make_jvp: the tangent has {len(tangents)} leaves, the "
                                 f"argument {len(leaves)}; give it the argument's structure")
            return _forward(fun, args, kwargs, argnum, leaves, unflatten, tangents, "make_jvp")
        return jvp
    return jvp_maker


def _forward(fun, args, kwargs, argnum, leaves, unflatten, tangents, fname):
    """(fun(*args), its tangent) for `tangents` of the leaves of args[argnum] (rebuilt by
    unflatten), run once on a forward-mode tape."""
    tape = Tape(True)
    try:
        boxes = [tape.new_leaf(leaf, _match_input(t, leaf))
                 for leaf, t in zip(leaves, tangents)]
        out = _call_traced(tape, fun, args, kwargs, argnum, unflatten(boxes))
        del boxes
        if out is None:
            raise TypeError(f"{fname}: the function returned None")
        out_leaves, out_unflatten = tree_flatten(out)
        values, out_tangents = [], []
        for leaf in out_leaves:
            if type(leaf) is Box and leaf._tape is tape:
                values.append(leaf._value)
                out_tangents.append(_match_input(tape.tangent(leaf), leaf._value))
            else:
                values.append(leaf)
                out_tangents.append(_zeros_like(leaf))
        del out, out_leaves
        return out_unflatten(values), out_unflatten(out_tangents)
    finally:
        tape.release()


def deriv(fun, argnum=0):
    """The derivative along a tangent of ones (forward mode).

    For an elementwise function this is the elementwise derivative (as `elementwise_grad`,
    computed in forward mode); for a function of a scalar, its derivative, of any output
    shape.

    Parameters
    ----------
    fun : callable
        The function to differentiate.
    argnum : int, optional
        The positional argument to differentiate with respect to (default 0).

    Returns
    -------
    callable
        ``deriv_fun(*args, **kwargs)``: the tangent of the output, shaped like the output.

    Examples
    --------
    >>> import gradcy.numpy as np
    >>> from gradcy import deriv
    >>> print(deriv(np.tanh)(np.array([0.0, 1.0])))
    [1.         0.41997434]
    >>> print(deriv(lambda t: np.array([1.0, 2.0]) * t ** 2)(3.0))   # d/dt of a curve
    [ 6. 12.]
    """
    @wrap_nary_f(fun, deriv, argnum)
    def deriv_fun(*args, **kwargs):
        _check_argnum(args, argnum, "deriv")
        x = args[argnum]
        ones = _ones_like(x._value if type(x) is Box else x)
        if isinstance(x, _np.ndarray):
            ones = _np.ones_like(x)
        return make_jvp(fun, argnum)(*args, **kwargs)(ones)[1]
    return deriv_fun


def make_hvp(fun, argnum=0):
    """A function returning Hessian-vector products of ``fun`` at a point, and the gradient there.

    The gradient is traced once; each product is one backward pass through it.

    Parameters
    ----------
    fun : callable
        A function returning a real scalar.
    argnum : int, optional
        The positional argument to differentiate with respect to (default 0).

    Returns
    -------
    callable
        ``hvp_maker(*args, **kwargs) -> (hvp, gradient)``: ``hvp(v)`` is the Hessian at
        ``args`` times ``v``. ``hvp`` holds its tape until ``hvp.release()`` or until it is
        dropped.

    See Also
    --------
    hessian_vector_product : one product per call.

    Examples
    --------
    >>> import gradcy.numpy as np
    >>> from gradcy import make_hvp
    >>> hvp, g = make_hvp(lambda x: x[0] ** 2 * x[1])(np.array([1.0, 2.0]))
    >>> print(g, hvp(np.array([1.0, 0.0])), hvp(np.array([0.0, 1.0])))
    [4. 1.] [4. 2.] [2. 0.]
    >>> hvp.release()
    """
    def hvp_maker(*args, **kwargs):
        _check_argnum(args, argnum, "make_hvp")
        return make_vjp(grad(fun, argnum), argnum)(*args, **kwargs)
    return hvp_maker


def make_ggnvp(f, g=None, f_argnum=0):
    """Generalized Gauss-Newton products of ``g`` composed with ``f``.

    Parameters
    ----------
    f : callable
        The inner function (for example a model's predictions as a function of its
        parameters).
    g : callable, optional
        A scalar function of ``f``'s output (for example a loss). Default: half the squared
        norm over the last axis, ``0.5 * sum(y ** 2, axis=-1)``.
    f_argnum : int, optional
        The positional argument of ``f`` to differentiate with respect to (default 0).

    Returns
    -------
    callable
        ``ggnvp_maker(*args, **kwargs) -> ggnvp``: ``ggnvp(v)`` is ``J^T H J v``, with ``J``
        the Jacobian of ``f`` at ``args`` and ``H`` the Hessian of ``g`` at ``f(*args)``.

    Examples
    --------
    >>> import gradcy.numpy as np
    >>> from gradcy import make_ggnvp
    >>> ggnvp = make_ggnvp(np.sin)(np.array([0.0, 1.0]))      # J = diag(cos x), H = I
    >>> print(ggnvp(np.array([1.0, 1.0])))                     # cos(x)**2 * v
    [1.         0.29192658]
    """
    if g is None:
        def g(y):
            return 0.5 * _np.sum(y ** 2, axis=-1)

    def ggnvp_maker(*args, **kwargs):
        _check_argnum(args, f_argnum, "make_ggnvp")
        f_vjp, f_x = make_vjp(f, f_argnum)(*args, **kwargs)
        g_hvp, grad_g_x = make_vjp(grad(g))(f_x)
        # the JVP of f as the VJP of its (linear) VJP, taken at zero
        f_jvp, _ = make_vjp(f_vjp)(_np.zeros_like(grad_g_x))

        def ggnvp(v):
            return f_vjp(g_hvp(f_jvp(v)))
        return ggnvp
    return ggnvp_maker


@unary_to_nary
def make_jvp_reversemode(fun, x):
    """make_jvp_reversemode(fun, argnum)(*args) -> jvp: jvp(v) is J v, computed with two
    reverse passes (the VJP of the VJP, which is linear in its cotangent) instead of forward
    mode."""
    vjp, y = make_vjp(fun)(x)
    vjp_vjp, _ = make_vjp(vjp)(_np.zeros_like(y) if not isinstance(y, float) else 0.0)
    return vjp_vjp


# autograd.differential_operators's other names
from .builtins import tuple as atuple  # noqa: F401  (autograd.differential_operators has atuple)
