"""Small helpers (autograd.util's API)."""

from .registry import subval

# (quick_grad_check and deprecation_msg, autograd's, are added by gradcy._autograd_rules)
__all__ = ["subval", "subvals", "func", "toposort"]


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
