"""Every primitive with a registered VJP must be checked by some test module (COVERED sets)."""
import importlib
import pathlib

from vjp_harness import primitives_with_vjps


def _covered():
    names = set()
    here = pathlib.Path(__file__).parent
    for path in sorted(here.glob("test_*.py")):
        mod = importlib.import_module(path.stem)
        names |= set(getattr(mod, "COVERED", ()))
    return names


def test_every_vjp_has_a_gradient_check():
    missing = sorted(set(primitives_with_vjps()) - _covered())
    assert not missing, f"primitives with a VJP but no gradient check: {missing}"


def test_every_vjp_has_a_jvp():
    """Forward mode covers what reverse mode covers."""
    missing = sorted(name for name, p in primitives_with_vjps().items()
                     if not (p.jvpmakers or p.jvp_argnums is not None))
    assert not missing, f"primitives with a VJP but no JVP: {missing}"
