"""Gradient-based stochastic optimizers with autograd's signatures.

Each takes grad(x, i) (the gradient at parameters x on iteration i), the initial parameters x0
(an array, or any nesting of tuples/lists/dicts of arrays and scalars), an optional
callback(x, i, g) called before each update, and the optimizer's hyperparameters; it returns
the final parameters in the structure of x0. The updates are written with gradcy.numpy, so an
optimizer run can itself be differentiated (meta-optimization).
"""

from collections.abc import Callable
from typing import Any

from .. import numpy as np
from .._docstrings import fill
from ..wrap_util import wraps
from .flatten import flatten

__all__ = ["unflatten_optimizer", "sgd", "rmsprop", "adam"]


def unflatten_optimizer(optimize: Callable[..., Any]) -> Callable[..., Any]:
    """Lift an optimizer over flat 1-D vectors to parameters in nested containers.

    Parameters
    ----------
    optimize : callable
        ``optimize(grad, x, callback, *args, **kwargs)`` over 1-D arrays.

    Returns
    -------
    callable
        The same optimizer taking ``x0`` (and giving ``grad`` and ``callback`` values) in any
        nesting of tuples/lists/dicts of arrays and scalars.

    Examples
    --------
    >>> import numpy as onp
    >>> from gradcy.misc.optimizers import unflatten_optimizer
    >>> @unflatten_optimizer
    ... def descend(grad, x, callback=None, num_iters=100, step_size=0.1):
    ...     for i in range(num_iters):
    ...         x = x - step_size * grad(x, i)
    ...     return x
    >>> out = descend(lambda p, i: {"a": 2 * (p["a"] - 3.0)}, {"a": onp.zeros(2)})
    >>> print(onp.round(out["a"], 3))
    [3. 3.]
    """

    @wraps(optimize)
    def nested(grad, x0, callback=None, *args, **kwargs):
        flat_x0, unflatten = flatten(x0)

        def flat_grad(x, i):
            return flatten(grad(unflatten(x), i))[0]

        if callback is not None:

            def flat_callback(x, i, g):
                return callback(unflatten(x), i, unflatten(g))
        else:
            flat_callback = None
        return unflatten(optimize(flat_grad, flat_x0, flat_callback, *args, **kwargs))

    return nested


def _documented(own_parameters):
    """`fill` of the docstring's ``{parameters}`` line: the Parameters every optimizer here
    shares, then `own_parameters`, and the Returns section."""
    return fill(
        {
            "parameters": """Parameters
----------
grad : callable
    ``grad(x, i)``: the gradient at parameters ``x`` on iteration ``i``.
x0 : array, or tuple/list/dict of arrays and scalars
    The initial parameters.
callback : callable, optional
    ``callback(x, i, g)``, called before each update.
num_iters : int, optional
    The number of updates.
step_size : float, optional
    The learning rate.
"""
            + own_parameters
            + """

Returns
-------
The final parameters, in the structure of ``x0``."""
        }
    )


def _iterate(grad, x, callback, num_iters, update):
    """x after num_iters steps x = update(x, g, i) of g = grad(x, i), with callback(x, i, g)
    before each."""
    for i in range(num_iters):
        g = grad(x, i)
        if callback:
            callback(x, i, g)
        x = update(x, g, i)
    return x


@unflatten_optimizer
@_documented("""mass : float, optional
    The momentum.""")
def sgd(grad, x, callback=None, num_iters=200, step_size=0.1, mass=0.9):
    """Stochastic gradient descent with momentum.

    The update is ``v <- mass * v - (1 - mass) * g; x <- x + step_size * v``.

    {parameters}

    Examples
    --------
    >>> import numpy as onp
    >>> import gradcy.numpy as np
    >>> from gradcy import grad
    >>> from gradcy.misc.optimizers import sgd
    >>> target = onp.array([1.0, -2.0])
    >>> objective = lambda x, i: np.sum((x - target) ** 2)
    >>> print(onp.round(sgd(grad(objective), onp.zeros(2), num_iters=200), 3))
    [ 1. -2.]
    """
    velocity = np.zeros(len(x))

    def update(x, g, i):
        nonlocal velocity
        velocity = mass * velocity - (1.0 - mass) * g
        return x + step_size * velocity

    return _iterate(grad, x, callback, num_iters, update)


@unflatten_optimizer
@_documented("""gamma : float, optional
    The decay of the running mean of squared gradients (started at ones).
eps : float, optional
    Added to the root mean square.""")
def rmsprop(grad, x, callback=None, num_iters=100, step_size=0.1, gamma=0.9, eps=10**-8):
    """RMSProp: steps scaled by a running root mean square of the gradient.

    {parameters}

    Examples
    --------
    >>> from gradcy.misc.optimizers import rmsprop
    >>> from gradcy import grad
    >>> def objective(x, i):
    ...     return (x[0] - 1.0) ** 2 + (x[1] + 2.0) ** 2
    >>> x = rmsprop(grad(objective), [0.0, 0.0], step_size=0.01, num_iters=500)
    >>> print([round(float(v), 2) for v in x])
    [1.0, -2.0]
    """
    avg_sq_grad = np.ones(len(x))

    def update(x, g, i):
        nonlocal avg_sq_grad
        avg_sq_grad = avg_sq_grad * gamma + g**2 * (1 - gamma)
        return x - step_size * g / (np.sqrt(avg_sq_grad) + eps)

    return _iterate(grad, x, callback, num_iters, update)


@unflatten_optimizer
@_documented("""b1, b2 : float, optional
    The decays of the first and second moment estimates.
eps : float, optional
    Added to the root of the second moment.""")
def adam(grad, x, callback=None, num_iters=100, step_size=0.001, b1=0.9, b2=0.999, eps=10**-8):
    """Adam (Kingma and Ba, 2015): steps from bias-corrected running moments of the gradient.

    {parameters}

    Examples
    --------
    >>> from gradcy import grad
    >>> from gradcy.misc.optimizers import adam
    >>> import gradcy.numpy as np
    >>> import numpy as onp
    >>> target = {"w": onp.array([1.0, -2.0]), "b": 0.5}
    >>> def objective(p, i):
    ...     return np.sum((p["w"] - target["w"]) ** 2) + (p["b"] - target["b"]) ** 2
    >>> p = adam(grad(objective), {"w": onp.zeros(2), "b": 0.0}, step_size=0.1, num_iters=300)
    >>> print(onp.round(p["w"], 3), onp.round(p["b"], 3))
    [ 1. -2.] 0.5
    """
    m = np.zeros(len(x))
    v = np.zeros(len(x))

    def update(x, g, i):
        nonlocal m, v
        m = (1 - b1) * g + b1 * m
        v = (1 - b2) * (g**2) + b2 * v
        mhat = m / (1 - b1 ** (i + 1))
        vhat = v / (1 - b2 ** (i + 1))
        return x - step_size * mhat / (np.sqrt(vhat) + eps)

    return _iterate(grad, x, callback, num_iters, update)
