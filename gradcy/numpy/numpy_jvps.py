"""autograd.numpy.numpy_jvps's module path: autograd's names for the forward-mode rules, which
gradcy registers beside each primitive's reverse-mode rules (gradcy/numpy/<family>.py)."""
