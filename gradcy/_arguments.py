"""What goes into and comes out of a differentiated call: the checks of the differentiated
arguments (float or complex leaves) and of the output (a real scalar for grad), and the
gradient handed back with the type, dtype and shape of its input (_match_input).
"""
import numpy as _np

from . import _core, backends
from ._core import Box
from ._pytree import tree_flatten
from .vspace import VSpace, vspace
from .wrap_util import _check_argnum


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
