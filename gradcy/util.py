"""Small helpers (autograd.util's API)."""
import warnings

from .registry import subval

__all__ = ["subval", "subvals", "func", "toposort", "quick_grad_check", "deprecation_msg"]


def subvals(x, ivs):
    """The tuple x with x[i] replaced by v for each (i, v) in ivs."""
    x_ = list(x)
    for i, v in ivs:
        x_[i] = v
    return tuple(x_)


def func(f):
    """f itself (autograd uses it to name unbound methods as functions)."""
    return f


def toposort(end_node, parents=lambda node: node.parents):
    """The nodes reachable from end_node through `parents(node)`, each after every node that
    lists it as a parent (end_node first)."""
    child_counts = {}
    stack = [end_node]
    while stack:
        node = stack.pop()
        if node in child_counts:
            child_counts[node] += 1
        else:
            child_counts[node] = 1
            stack.extend(parents(node))
    ready = [end_node]
    while ready:
        node = ready.pop()
        yield node
        for parent in parents(node):
            if child_counts[parent] == 1:
                ready.append(parent)
            else:
                child_counts[parent] -= 1


deprecation_msg = ("quick_grad_check is deprecated; use "
                   "gradcy.test_util.check_grads(fun, modes=['rev'], order=1)(x)")


def quick_grad_check(fun, arg0, extra_args=(), kwargs={},  # noqa: B006  (autograd's; only read)
                     verbose=True, eps=1e-4, rtol=1e-4,
                     atol=1e-6, rs=None):
    """Deprecated: check_grads of fun with respect to arg0, reverse mode, first order."""
    warnings.warn(deprecation_msg, DeprecationWarning, stacklevel=2)
    from .test_util import check_grads
    check_grads(lambda x: fun(x, *extra_args, **kwargs), modes=["rev"], order=1)(arg0)
