"""Every primitive with a registered VJP must be checked by some test module (COVERED sets)."""
import importlib
import pathlib
import pkgutil

import gradcy
from gradcy._core import Primitive


def _gradcy_modules():
    yield gradcy
    for info in pkgutil.walk_packages(gradcy.__path__, "gradcy."):
        if info.name.endswith("_core_tests"):
            continue
        try:
            yield importlib.import_module(info.name)
        except ImportError:          # optional extras (scipy) not installed
            continue


def _primitives_with_vjps():
    found = {}
    for module in _gradcy_modules():
        for obj in vars(module).values():
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


def test_every_vjp_has_a_jvp():
    """Forward mode covers what reverse mode covers."""
    missing = sorted(name for name, p in _primitives_with_vjps().items()
                     if not (p.jvpmakers or p.jvp_argnums is not None))
    assert not missing, f"primitives with a VJP but no JVP: {missing}"
