"""scipy.integrate.odeint, differentiable in y0, t and the extra arguments.

    from gradcy.scipy.integrate import odeint
    ys = odeint(func, y0, t, args=(theta,))     # func(y, t, *args), written with gradcy.numpy

Reverse mode uses the adjoint method: from each output time back to the previous one, one ODE
solve of the augmented state [y, a, theta_bar] with dy/dt = f, da/dt = -a^T df/dy and
dtheta_bar/dt = -a^T df/dtheta, started from the saved output (so y is not integrated over
long spans backwards) with the cotangent of that output added to a at each time. The gradient
for an output time t_i (i > 0) is g_i . f(y_i, t_i); for t_0 it is -a(t_0) . f(y0, t_0).
Forward mode solves the forward sensitivity system [y, s] with ds/dt = df/dy s + df/dtheta v.

The extra arguments may be arrays, floats or nested tuples/lists/dicts of them; other values
(ints, strings, functions) are passed through as constants.
"""

import numpy as _onp

from .._core import Box
from .._arguments import _differentiated_leaves
from .._pytree import tree_flatten
from .._tracing import _forward, _trace
from ..registry import defjvp_argnums, defvjp_argnums_direct, primitive
from ..numpy import _wrap as anp
from ..numpy._util import _zeros_of, cast_like, shape_dtype
from . import _import_scipy

_si = _import_scipy("scipy.integrate")  # ImportError naming the extra when SciPy is missing

from ..builtins import SequenceBox

__all__ = ["odeint"]

# Options of scipy's odeint that also apply to the adjoint and sensitivity solves.
_SOLVER_KW = ("rtol", "atol", "mxstep", "hmax", "hmin", "mxordn", "mxords", "mxhnil", "printmessg")
# Positions 3.. of the primitive hold the differentiable extra arguments, all saved.
_MAX_ARGS = 1024


def _odeint(func, y0, t, *dyn, rebuild=None, **kwargs):
    args = dyn if rebuild is None else rebuild(dyn)
    return _si.odeint(func, y0, t, args=tuple(args), **kwargs)


_odeint.__name__ = "odeint"
_odeint_p = primitive(_odeint, "gradcy.scipy.integrate.odeint")


def _is_dynamic(x):
    """Whether an argument leaf can carry a derivative."""
    t = type(x)
    if t is Box or t is float or isinstance(x, _onp.floating):
        return True
    return isinstance(x, _onp.ndarray) and x.dtype.kind == "f"


def _split_args(args):
    """The differentiable leaves of args, and the function that rebuilds args from them (the
    other leaves are held as constants)."""
    leaves, unflatten = tree_flatten(args)
    pos = [i for i, leaf in enumerate(leaves) if _is_dynamic(leaf)]
    if len(pos) == len(leaves) and type(args) is tuple and unflatten is tuple:
        return leaves, None
    static = [None if i in pos else leaf for i, leaf in enumerate(leaves)]

    def rebuild(dyn):
        full = list(static)
        for i, v in zip(pos, dyn):
            full[i] = v
        return unflatten(full)

    return [leaves[i] for i in pos], rebuild


def _contains_box(x):
    return any(type(leaf) is Box for leaf in tree_flatten(x)[0])


def odeint(func, y0, t, args=(), **kwargs):
    """scipy.integrate.odeint(func, y0, t, args, **kwargs), differentiable in y0, t and the
    float arrays and floats in args (forward and reverse mode). func(y, t, *args) (or
    func(t, y, *args) with tfirst=True) must be written with gradcy.numpy.
    full_output=True is supported for untraced inputs only."""
    if isinstance(args, SequenceBox):  # a traced tuple (gradcy.builtins.tuple, as autograd's)
        args = tuple([args[i] for i in range(len(args))])
    if not isinstance(args, tuple):
        args = (args,)
    if kwargs.get("full_output"):
        if _contains_box((y0, t, args)):
            raise NotImplementedError(
                "gradcy: odeint with full_output=True is not "
                "differentiable; call it with full_output=False"
            )
        return _si.odeint(func, y0, t, args=args, **kwargs)
    dyn, rebuild = _split_args(args)
    if len(dyn) > _MAX_ARGS:
        raise ValueError(
            f"gradcy: odeint takes at most {_MAX_ARGS} array arguments; pack them into fewer arrays"
        )
    return _odeint_p(func, y0, t, *dyn, rebuild=rebuild, **kwargs)


odeint.__doc__ += "\n\nscipy's documentation:\n" + (_si.odeint.__doc__ or "")


def _setup(args, kwargs):
    """(func as f(y, t, *dyn), t, dyn, solver options) of a recorded call."""
    func, t, dyn = args[0], args[2], args[3:]
    rebuild = kwargs.get("rebuild")
    tfirst = kwargs.get("tfirst", False)

    def f(y, s, *d):
        a = d if rebuild is None else rebuild(d)
        out = func(s, y, *a) if tfirst else func(y, s, *a)
        if isinstance(out, (list, tuple)):
            out = anp.array(out)
        return out if anp.ndim(out) == 1 else anp.ravel(out)

    if not hasattr(t, "shape"):
        t = _onp.asarray(t, dtype=float)
    solver_kw = {k: kwargs[k] for k in _SOLVER_KW if k in kwargs}
    return f, t, dyn, solver_kw


def _vjp(fun, primals):
    """(vjp, fun(*primals)): vjp(g) is the tuple of the cotangents of the primals; it may be
    called once (its tape is released then)."""
    return _trace(fun, primals, {}, tuple(range(len(primals))), "odeint", consume=True)


def _jvp(fun, primals, tangents):
    """(fun(*primals), its tangent) for the tangents of the primals (one forward-mode run)."""
    argnum = tuple(range(len(primals)))
    leaves, unflatten = _differentiated_leaves(primals, argnum, "odeint")
    return _forward(
        fun, primals, {}, argnum, leaves, unflatten, tree_flatten(tangents)[0], "odeint"
    )


# =============================================================================
# Reverse mode: the adjoint system
# =============================================================================
def _odeint_vjp(argnums, g, g_owned, ans, args, kwargs):
    f, t, dyn, solver_kw = _setup(args, kwargs)
    y0 = args[1]
    want_args = any(k >= 3 for k in argnums)
    T, D = ans.shape
    metas = [shape_dtype(x) for x in dyn]
    sizes = [int(_onp.prod(s)) for s, _ in metas]

    if want_args:

        def aug(state, s, *d):
            vjp_f, dy = _vjp(lambda y, dd: f(y, s, *dd), (state[:D], d))
            a_y, a_d = vjp_f(-state[D : 2 * D])
            return anp.concatenate([dy, a_y] + [anp.ravel(c) for c in a_d])
    else:

        def aug(state, s, *d):
            vjp_f, dy = _vjp(lambda y: f(y, s, *d), (state[:D],))
            (a_y,) = vjp_f(-state[D:])
            return anp.concatenate([dy, a_y])

    a = g[T - 1]
    a_pre = None
    theta_bar = anp.zeros(sum(sizes)) if want_args else None
    t_bar = [None] * T
    for i in range(T - 1, 0, -1):
        t_bar[i] = anp.dot(g[i], f(ans[i], t[i], *dyn))
        parts = [ans[i], a] + ([theta_bar] if want_args else [])
        out = _odeint_p(aug, anp.concatenate(parts), anp.stack([t[i], t[i - 1]]), *dyn, **solver_kw)
        a_pre = out[1, D : 2 * D]
        if want_args:
            theta_bar = out[1, 2 * D :]
        a = a_pre + g[i - 1]
    if a_pre is None:
        t_bar[0] = anp.zeros(())
    else:
        t_bar[0] = -anp.dot(a_pre, f(ans[0], t[0], *dyn))
    results = []
    offset = 0
    offsets = []
    for size in sizes:
        offsets.append(offset)
        offset += size
    for k in argnums:
        if k == 1:
            shape, dtype = shape_dtype(y0)
            results.append(cast_like(anp.reshape(a, shape), dtype))
        elif k == 2:
            results.append(cast_like(anp.stack(t_bar), t.dtype))
        else:
            j = k - 3
            piece = theta_bar[offsets[j] : offsets[j] + sizes[j]]
            results.append(cast_like(anp.reshape(piece, metas[j][0]), metas[j][1]))
    return tuple(results)


# =============================================================================
# Forward mode: the sensitivity system
# =============================================================================
def _odeint_jvp(argnums, gs, ans, args, kwargs):
    f, t, dyn, solver_kw = _setup(args, kwargs)
    T, D = ans.shape
    n = len(dyn)
    tangents = dict(zip(argnums, gs))
    s0 = anp.reshape(tangents[1], (D,)) if 1 in tangents else None
    dt = tangents.get(2)
    if dt is not None:
        term = -f(ans[0], t[0], *dyn) * dt[0]
        s0 = term if s0 is None else s0 + term
    d_dyn = [tangents.get(3 + j) for j in range(n)]
    with_args = any(v is not None for v in d_dyn)
    S = None
    if s0 is not None or with_args:
        if s0 is None:
            s0 = anp.zeros(D)
        if with_args:
            d_dyn = [_zeros_of(x) if v is None else v for x, v in zip(dyn, d_dyn)]

            def aug(z, s, *dd):
                y_dot, s_dot = _jvp(lambda y, d: f(y, s, *d), (z[:D], dd[:n]), (z[D:], dd[n:]))
                return anp.concatenate([y_dot, s_dot])

            extra = list(dyn) + d_dyn
        else:

            def aug(z, s, *d):
                y_dot, s_dot = _jvp(lambda y: f(y, s, *d), (z[:D],), (z[D:],))
                return anp.concatenate([y_dot, s_dot])

            extra = list(dyn)
        out = _odeint_p(aug, anp.concatenate([ans[0], s0]), t, *extra, **solver_kw)
        S = out[:, D:]
    if dt is not None:
        F = anp.stack([f(ans[i], t[i], *dyn) for i in range(T)])
        term = F * anp.reshape(dt, (T, 1))
        S = term if S is None else S + term
    return S


defvjp_argnums_direct(_odeint_p, _odeint_vjp, save=("ans", 2) + tuple(range(3, 3 + _MAX_ARGS)))
defjvp_argnums(_odeint_p, _odeint_jvp)


def __getattr__(name):
    # autograd's rule names for this module (grad_*, ...), added on first lookup
    from gradcy._autograd_rules import autograd_name

    return autograd_name(__name__, name)
