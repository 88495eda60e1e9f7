"""Every primitive with a registered VJP must be checked by some test module (COVERED sets)."""
import importlib
import pathlib

import gradcy.numpy as gnp
from gradcy._core import Primitive


def _primitives_with_vjps():
    found = {}
    for module in [gnp, gnp.linalg, gnp.fft, gnp.numpy_wrapper]:
        for obj in vars(module).values():
            if isinstance(obj, Primitive) and (obj.vjpmakers or obj.vjp_argnums is not None):
                found[obj.name] = obj
    for mod_name in ["vjps_elementwise", "vjps_reductions", "vjps_linalg", "vjps_shape"]:
        mod = importlib.import_module(f"gradcy.numpy.{mod_name}")
        for obj in vars(mod).values():
            if isinstance(obj, Primitive) and (obj.vjpmakers or obj.vjp_argnums is not None):
                found[obj.name] = obj
    return found


def _covered():
    names = set()
    here = pathlib.Path(__file__).parent
    for path in sorted(here.glob("test_*.py")):
        mod = importlib.import_module(path.stem)
        names |= set(getattr(mod, "COVERED", ()))
    return names


def test_every_vjp_has_a_gradient_check():
    missing = sorted(set(_primitives_with_vjps()) - _covered())
    assert not missing, f"primitives with a VJP but no gradient check: {missing}"
