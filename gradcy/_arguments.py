"""What goes into and comes out of a differentiated call: the checks of the differentiated
arguments (float or complex leaves) and of the output (a real scalar for grad), and the
gradient handed back with the type, dtype and shape of its input (_match_input).
"""

import functools
import os
import sys
import warnings

import numpy as _np

from . import _core, backends
from ._core import Box
from ._pytree import tree_flatten
from .vspace import VSpace, vspace
from ._typing import F
from .registry import defjvp, defvjp_direct, primitive
from .wrap_util import _check_argnum


def _is_float_leaf(x):
    """The common valid inputs, decided without dtype machinery."""
    t = type(x)
    return (t is _np.ndarray and x.dtype.kind in "fc") or t is float or t is complex


def _check_leaf(x, fname, argnum):
    value = x._value if isinstance(x, Box) else x
    while isinstance(value, Box):
        value = value._value
    if type(value) in _box_subclass_types():
        return  # a type of the user's own, with a Box subclass and a VSpace
    if (
        isinstance(value, _np.ndarray)
        and type(value) is not _np.ndarray
        and not registered_type(type(value))
    ):
        raise TypeError(
            f"{fname}: argument {argnum} is a {_type_name(value)}, a subclass of "
            f"numpy.ndarray; gradcy differentiates plain numpy.ndarray values only "
            f"(the rules are NumPy's array semantics: {_subclass_why(value)}). "
            f"{_subclass_fix(value)} See {SHARP_EDGES}#ndarray-subclasses"
        )
    if isinstance(value, _np.ndarray):
        # an integer or boolean array is differentiated as float64 values (autograd does the
        # same): its gradient is a float64 array (_match_input)
        if value.dtype.kind in "fcbiu":
            return
        raise TypeError(
            f"{fname}: argument {argnum} has dtype {value.dtype}; gradients are "
            f"defined for numeric (floating-point, complex, integer or boolean) "
            f"arrays. Pass x.astype(float) instead."
        )
    if isinstance(value, (bool, _np.bool_)) or (
        isinstance(value, (int, _np.integer)) and not isinstance(value, bool)
    ):
        raise TypeError(
            f"{fname}: argument {argnum} is an integer scalar "
            f"({type(value).__name__}); gradients are defined for floating-point "
            f"and complex scalars (and for arrays of any numeric dtype). Pass a "
            f"float (e.g. {float(value)!r} or float(x))."
        )
    if isinstance(value, _np.ndarray) or isinstance(value, _np.generic):
        if not _np.issubdtype(value.dtype, _np.inexact):
            raise TypeError(
                f"{fname}: argument {argnum} has dtype {value.dtype}; gradients are "
                f"defined for floating-point and complex inputs. Pass "
                f"x.astype(float) instead."
            )
    elif backends.is_array_value(value):
        if _np.dtype(value.dtype).kind not in "fc":
            raise TypeError(
                f"{fname}: argument {argnum} has dtype {value.dtype}; gradients are "
                f"defined for floating-point and complex inputs. Pass "
                f"x.astype(float) instead."
            )
    elif not isinstance(value, (float, complex)):
        raise TypeError(
            f"{fname}: argument {argnum} is a {type(value).__name__}; expected a "
            f"float, complex, numpy array, or tuple/list/dict of these (a type of "
            f"your own needs a Box subclass, MyBox.register(T), and a VSpace, "
            f"MyVSpace.register(T))."
        )


def _type_name(value):
    t = type(value)
    return t.__qualname__ if t.__module__ == "builtins" else f"{t.__module__}.{t.__qualname__}"


def _subclass_why(value):
    if isinstance(value, _np.matrix):
        return "`*` of two matrices is a matrix product, so a rule's g * cos(x) would be one"
    if isinstance(value, _np.ma.MaskedArray):
        return "the rules do not see the mask, so masked entries would get a gradient"
    return "a subclass's operators and results may differ from them"


def _subclass_fix(value):
    """How to pass an ndarray subclass's values as a plain ndarray."""
    if isinstance(value, _np.matrix):
        return "Pass np.asarray(M) and write matrix products with @."
    if isinstance(value, _np.ma.MaskedArray):
        return (
            "Pass M.filled(v) (masked entries set to v) or np.ma.getdata(M), and apply "
            "the mask in the function (np.where(mask, 0.0, y) gives masked entries a zero "
            "gradient)."
        )
    return "Pass np.asarray(x) (a plain ndarray view of the same values)."


def registered_type(t):
    """t (an ndarray subclass) was registered by the user through autograd's API:
    Box.register(t) (ArrayBox.register), Box.type_mappings[t] = factory, or
    VSpace.register(t) / VSpace.mappings[t] = maker. autograd accepts exactly those (its
    lookups are by type), and so does gradcy; other subclasses are refused."""
    if t in VSpace.mappings or dict.__contains__(Box.type_mappings, t):
        return True
    try:
        Box.type_mappings[t]  # a box factory (Box.type_mappings.__missing__)
    except KeyError:
        return False
    return True


def _subclass_inputs(args, found):
    """Add to `found` (a set) the ndarray subclasses among args (and the items of their
    tuple/list/dict arguments), as True for a registered one (registered_type), False for
    any other."""
    for a in args:
        t = type(a)
        if t is _np.ndarray or t is float:
            continue
        if t is tuple or t is list:
            _subclass_inputs(a, found)
        elif t is dict:
            _subclass_inputs(a.values(), found)
        elif isinstance(a, _np.ndarray) and not getattr(t, "_gradcy_plain", False):
            found.add(registered_type(t))
    return found


def check_subclass_result(name, args, ans):
    """Called by the engine (_primitive.pyx) when a recorded operation returns an ndarray subclass:
    a registered subclass (registered_type) computed from inputs of registered subclasses
    (and plain values) is accepted, as autograd accepts it; any other (an unregistered
    subclass among the inputs or as the result) raises subclass_result_error."""
    if registered_type(type(ans)) and _subclass_inputs(args, set()) == {True}:
        return
    raise subclass_result_error(name, args, ans)


def subclass_result_error(name, args, ans):
    """The TypeError of a recorded operation whose result is an ndarray subclass (a np.matrix
    or masked array among its plain arguments made it one): its rules would be wrong for it."""
    culprit = next(
        (
            a
            for a in args
            if isinstance(a, _np.ndarray)
            and type(a) is not _np.ndarray
            and not registered_type(type(a))
        ),
        ans,
    )
    where = next((f"argument {i}" for i, a in enumerate(args) if a is culprit), "an argument")
    return TypeError(
        f"{name}: {where} is a {_type_name(culprit)} (a subclass of "
        f"numpy.ndarray) used with a traced value; gradcy differentiates plain "
        f"numpy.ndarray values only ({_subclass_why(culprit)}). "
        f"{_subclass_fix(culprit)} See {SHARP_EDGES}#ndarray-subclasses"
    )


def _box_subclass_types():
    """The value types registered with a Box subclass (Box.register) that have a VSpace."""
    return [t for t in Box.type_mappings if t in VSpace.mappings]


def _zeros_like(x):
    if backends.is_array_value(x):
        return _np.zeros_like(x)
    if type(x) is Box:
        return _np.zeros(x.shape, x.dtype)
    if isinstance(x, _np.ndarray):
        return _np.zeros(x.shape, _gradient_dtype(x.dtype))
    if isinstance(x, _np.generic):
        return x.dtype.type(0)
    if type(x) in _box_subclass_types():
        return vspace(x).zeros()
    return type(x)(0)


def _gradient_dtype(dtype):
    """The dtype of the gradient of an array of `dtype`: its own, float64 for an integer or
    boolean array (differentiated as float64 values)."""
    return dtype if dtype.kind in "fc" else _np.dtype(_np.float64)


def _match_input(g, x):
    """The gradient g given the type, dtype and shape of input x (Python float in, float out;
    0-d array in, 0-d array out; float32 in, float32 out; an integer or boolean array in, a
    float64 array out)."""
    if g is None:
        return _zeros_like(_innermost(x))
    if (
        type(x) is _np.ndarray
        and type(g) is _np.ndarray
        and g.dtype == x.dtype
        and (g.shape == x.shape)
    ):
        # a broadcast view (the cotangent of a sum) is handed out as an array of its own
        return g if g.flags.writeable else g.copy()
    if type(g) is Box or type(x) is Box:
        return _match_traced(g, x)
    if backends.is_array_value(g) or backends.is_array_value(x):
        return backends.match_gradient(g, x)
    if isinstance(x, _np.ndarray):
        if (
            type(x) is not _np.ndarray
            and isinstance(g, (_np.ndarray, _np.generic))
            and (_np.shape(g) == x.shape)
        ):
            # an ndarray subclass registered as autograd's users do (PennyLane's tensor): as
            # under autograd, the gradient is what the backward pass made (a NumPy scalar
            # where arithmetic on a 0-d value made one, the subclass where the rules kept it),
            # of the gradient's dtype
            if _np.iscomplexobj(g) and not _np.iscomplexobj(x):
                g = g.real
            dtype = _gradient_dtype(x.dtype)
            if g.dtype != dtype:
                g = g.astype(dtype)
            return g if not isinstance(g, _np.ndarray) or g.flags.writeable else g.copy()
        g = _np.asarray(g)
        if _np.iscomplexobj(g) and not _np.iscomplexobj(x):
            g = g.real
        dtype = _gradient_dtype(x.dtype)
        if g.dtype != dtype:
            g = g.astype(dtype)
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


def _innermost(v):
    """The plain value inside v (a traced value of nested differentiations: its innermost)."""
    while type(v) is Box:
        v = v._value
    return v


def _already_matched(g, x):
    """_match_input(g, x) would hand back g itself (plain values)."""
    if backends.is_array_value(g) or backends.is_array_value(x):
        return True  # a Dask gradient: matched when it is computed (backends.match_gradient)
    t = type(x)
    if t is _np.ndarray:
        return type(g) is t and g.dtype == _gradient_dtype(x.dtype) and g.shape == x.shape
    if t is float or t is complex or isinstance(x, _np.generic):
        return type(g) is t
    return True  # a type of the user's own, or an array of another library: as it is


def _match_traced(g, x):
    """_match_input where the gradient g or the input x is a traced value (a gradient inside
    another differentiation, or recorded by const_graph and gradcy.jit): the conversion to the
    input's type, dtype and shape is itself a recorded operation (match_input), so the
    enclosing differentiation differentiates it and a replay redoes it on its own input. A
    gradient that needs no conversion is handed back as it is (nothing recorded)."""
    xv = _innermost(x)
    if type(g) is not Box:
        return _match_input(g, xv)  # a constant gradient (None: zero)
    if _already_matched(_innermost(g), xv):
        return g
    return match_input(g, x)


def _converted_back(v, ans, g, x):
    """The VJP of match_input in g: the cotangent v (of the input's kind) summed to g's shape
    and cast to g's dtype (the adjoint of the broadcast and of the cast)."""
    from .numpy._util import _unbroadcast

    return _unbroadcast(v, g)


# the conversion of a traced gradient to its input's type, dtype and shape (x: zero
# derivative; only its type, dtype and shape are read)
match_input = primitive(_match_input, "gradcy.grad.match_input")
defvjp_direct(match_input, _converted_back, None, save=())
# (the engine broadcasts and casts a tangent to its output's shape and dtype: match_tangent)
defjvp(match_input, lambda t, ans, g, x: t, None)


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
        for i in argnum if multi else (argnum,):
            for leaf in tree_flatten(args[i])[0]:
                _check_leaf(leaf, fname, i)
    return leaves, unflatten


_SCALAR_ONES = _core.SCALAR_SEEDS  # the seed of a real scalar output, by its type


def _ones_like(ans):
    one = _SCALAR_ONES.get(type(ans))
    if one is not None:  # the common seed: a real scalar output (immutable, shared)
        return one
    if backends.is_array_value(ans):
        return _np.ones_like(ans)
    if type(ans) is Box:
        return _np.ones_like(ans) if ans.ndim else _np.ones_like(ans)[()]
    if type(ans) is _np.ndarray:
        return _np.ones_like(ans)
    if isinstance(ans, _np.ndarray):
        # an ndarray subclass: the ones of its vector space, as autograd seeds it (a plain
        # array unless a VSpace registered for the subclass makes its own)
        return vspace(ans).ones()
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
    if isinstance(value, (tuple, list, dict)):
        n = len(value)
        raise TypeError(
            f"{fname}: the function returned a {type(value).__name__} of {n} "
            f"value{'' if n == 1 else 's'}; {fname} needs one real scalar. If it "
            f"returns (loss, aux), use grad_and_aux(f) for (gradient of loss, aux), "
            f"or value_and_grad(lambda *a: f(*a)[0]) for (loss, gradient); for "
            f"several outputs use jacobian or make_vjp. See "
            f"{SHARP_EDGES}#grad-needs-one-scalar"
        )
    if backends.is_array_value(value):
        if value.size != 1:
            raise TypeError(
                f"{fname}: the function returned an array of shape {value.shape}; "
                f"{fname} needs a scalar output. Use elementwise_grad, jacobian or "
                f"make_vjp for array outputs."
            )
        _check_float_output(value, fname)  # (NumPy's messages, naming the fix)
        if _np.dtype(value.dtype).kind == "c":
            _refuse_complex_output(fname)
        return
    if isinstance(value, (bool, _np.bool_)) or (
        isinstance(value, _np.ndarray) and value.dtype.kind == "b"
    ):
        raise TypeError(
            f"{fname}: the function returned a boolean ({value!r}), which has no "
            f"gradient; {fname} needs a floating-point scalar output"
        )
    if _np.size(value) != 1:
        raise TypeError(
            f"{fname}: the function returned an array of shape {_np.shape(value)}; "
            f"{fname} needs a scalar output. Use elementwise_grad, jacobian or "
            f"make_vjp for array outputs."
        )
    _check_float_output(value, fname)
    if _np.iscomplexobj(value):
        _refuse_complex_output(fname)


def _refuse_complex_output(fname):
    raise TypeError(
        f"{fname}: the function returned a complex value; {fname} needs a real "
        f"output. Use holomorphic_grad for holomorphic functions, or take "
        f"the real part or abs() of the output."
    )


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
    elif isinstance(value, (tuple, list, dict)):
        raise TypeError(
            f"{fname}: the function returned a {t.__name__}; {fname} needs one "
            f"array output. Return np.stack([...]) of equally shaped arrays, or use "
            f"make_vjp (a cotangent for each output) or jacobian of each output; "
            f"for a (loss, aux) pair use grad_and_aux. See "
            f"{SHARP_EDGES}#grad-needs-one-scalar"
        )
    else:
        what = f"{'an' if t.__name__[0] in 'aeiou' else 'a'} {t.__name__} ({value!r:.40})"
    raise TypeError(
        f"{fname}: the function returned {what}; derivatives are defined for "
        f"floating-point (or complex) outputs. Return a float value (e.g. "
        f"x.astype(float)); a boolean, integer or string result has no gradient. "
        f"See {SHARP_EDGES}#integer-and-boolean-values"
    )


_PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__)) + os.sep

# autograd's words: programs and test suites filter on them (warnings.filterwarnings("ignore",
# message="Output seems independent of input"))
INDEPENDENT_OUTPUT = "Output seems independent of input."


def _independent(out, tape):
    """autograd's test for its "Output seems independent of input." warning: the output is not
    a value traced from the differentiated argument(s) on `tape` (not a Box of the tape, or a
    Box of a constant: a buffer an array constructor made and what was computed from such
    buffers alone). Never decided by the derivative: a rule giving None or zero for an
    argument the output was computed from (fixed_point's x0, a user primitive's None VJP) does
    not make the output independent."""
    return type(out) is not Box or out._tape is not tape or tape.node_flags(out._node)[2]


def _warn_independent(fname):
    """The UserWarning of a differentiated call whose output was not computed from the
    differentiated argument(s) (its derivative is zero), attributed to the caller's line."""
    level, frame = 1, sys._getframe(0)
    while frame is not None and frame.f_code.co_filename.startswith(_PACKAGE_DIR):
        level, frame = level + 1, frame.f_back
    warnings.warn(
        f"{INDEPENDENT_OUTPUT} ({fname}: the function's output was not computed "
        f"from the differentiated argument, so its derivative is zero; see "
        f"{SHARP_EDGES}#output-independent-of-input)",
        UserWarning,
        stacklevel=level,
    )


# the page of common mistakes every error of a user's mistake points to
SHARP_EDGES = "docs/sharp_edges.md"


# JAX's keyword names -> (gradcy's spelling, what to say)
_JAX_KEYWORDS = {
    "argnums": "argnum= (autograd's spelling: an int or a tuple of ints)",
    "has_aux": "grad_and_aux(f, argnum) for a function returning (output, aux)",
}


def check_operator_call(fname, fun, kwargs):
    """The checks of an operator's construction (grad(fun, ...)): `fun` is callable, and
    no keyword of JAX's spelling was passed (a did-you-mean error instead of Python's)."""
    for key in kwargs:
        if key in _JAX_KEYWORDS:
            raise TypeError(
                f"{fname}() got an unexpected keyword argument {key!r}; did you "
                f"mean {_JAX_KEYWORDS[key]}? See {SHARP_EDGES}#jax-spellings"
            )
    if not callable(fun):
        raise TypeError(
            f"{fname}: the function to differentiate must be callable, got "
            f"{'an' if type(fun).__name__[0] in 'aeiou' else 'a'} "
            f"{_type_name(fun)} ({fun!r:.40}); pass the function itself, "
            f"{fname}(f), not its value at a point, {fname}(f(x)). See "
            f"{SHARP_EDGES}#pass-the-function"
        )


def checked_operator(op: F) -> F:
    """op(fun, ...) with the checks of its construction (check_operator_call): a value instead
    of a function, and JAX's keyword spellings (argnums=, has_aux=), are named when the
    operator is built, not when its result is called."""
    name = op.__name__

    @functools.wraps(op)
    def build(fun, *args, **kwargs):
        check_operator_call(name, fun, kwargs)
        return op(fun, *args, **kwargs)

    return build
