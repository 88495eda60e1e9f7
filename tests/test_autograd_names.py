"""autograd's extra names (grad_np_sum, unbroadcast_f, ...) are added to the gradcy modules
autograd has them in by gradcy._autograd_rules.install(), once, at the end of gradcy/__init__:
at once to the modules gradcy imports, and to the gradcy.scipy modules as each is imported."""

import subprocess
import sys
import textwrap

import pytest


def _run(code):
    out = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True, timeout=300
    )
    assert out.returncode == 0, out.stderr
    return out.stdout.split()


def test_names_of_modules_imported_with_gradcy():
    assert _run("""
        import importlib, sys
        import gradcy
        from gradcy import _autograd_rules
        from gradcy.numpy import numpy_vjps
        flatten_module = importlib.import_module("gradcy.misc.flatten")
        print(callable(numpy_vjps.grad_np_sum), flatten_module.make_vjp is gradcy.make_vjp,
              flatten_module.type is gradcy.builtins.type,
              gradcy.tracer.find_top_boxed_args is _autograd_rules.find_top_boxed_args,
              gradcy.builtins.container_take is gradcy.numpy.container_take)
        # the module's own code keeps Python's type: gradcy.builtins.type is served by __getattr__
        print("type" in vars(flatten_module))
        _autograd_rules.install()                   # idempotent, and no import hook
        print(sum(type(f).__module__.startswith("gradcy") for f in sys.meta_path))
        """) == ["True"] * 5 + ["False", "0"]


def test_names_of_scipy_modules_arrive_as_they_are_imported():
    pytest.importorskip("scipy")
    assert _run("""
        import inspect, sys
        import gradcy
        print("gradcy.scipy.special" in sys.modules)
        import gradcy.scipy.special as special
        from gradcy.scipy.stats import norm
        from gradcy.scipy.integrate import grad_odeint, tuple as atuple
        print(callable(special.make_grad_logsumexp), callable(norm.unbroadcast_f),
              callable(grad_odeint), atuple is gradcy.builtins.tuple)
        # the module's own loader serves the source
        print(inspect.getsource(special).startswith('\"\"\"'))
        """) == ["False", "True", "True", "True", "True", "True"]
