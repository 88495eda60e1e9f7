"""Gradient-based stochastic optimizers with autograd's signatures.

Each takes grad(x, i) (the gradient at parameters x on iteration i), the initial parameters x0
(an array, or any nesting of tuples/lists/dicts of arrays and scalars), an optional
callback(x, i, g) called before each update, and the optimizer's hyperparameters; it returns
the final parameters in the structure of x0. The updates are written with gradcy.numpy, so an
optimizer run can itself be differentiated (meta-optimization).
"""

from .. import numpy as np
from ..wrap_util import wraps
from .flatten import flatten

__all__ = ["unflatten_optimizer", "sgd", "rmsprop", "adam"]


def unflatten_optimizer(optimize):
    """Lift an optimizer over flat 1-D vectors to nested containers of arrays."""
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


@unflatten_optimizer
def sgd(grad, x, callback=None, num_iters=200, step_size=0.1, mass=0.9):
    """Stochastic gradient descent with momentum: v <- mass v - (1 - mass) g; x <- x + step v."""
    velocity = np.zeros(len(x))
    for i in range(num_iters):
        g = grad(x, i)
        if callback:
            callback(x, i, g)
        velocity = mass * velocity - (1.0 - mass) * g
        x = x + step_size * velocity
    return x


@unflatten_optimizer
def rmsprop(grad, x, callback=None, num_iters=100, step_size=0.1, gamma=0.9, eps=10**-8):
    """RMSProp: steps scaled by a running root-mean-square of the gradient (started at ones)."""
    avg_sq_grad = np.ones(len(x))
    for i in range(num_iters):
        g = grad(x, i)
        if callback:
            callback(x, i, g)
        avg_sq_grad = avg_sq_grad * gamma + g**2 * (1 - gamma)
        x = x - step_size * g / (np.sqrt(avg_sq_grad) + eps)
    return x


@unflatten_optimizer
def adam(grad, x, callback=None, num_iters=100, step_size=0.001, b1=0.9, b2=0.999, eps=10**-8):
    """Adam (Kingma and Ba, 2015): bias-corrected running moments of the gradient."""
    m = np.zeros(len(x))
    v = np.zeros(len(x))
    for i in range(num_iters):
        g = grad(x, i)
        if callback:
            callback(x, i, g)
        m = (1 - b1) * g + b1 * m
        v = (1 - b2) * (g**2) + b2 * v
        mhat = m / (1 - b1**(i + 1))
        vhat = v / (1 - b2**(i + 1))
        x = x - step_size * mhat / (np.sqrt(vhat) + eps)
    return x
