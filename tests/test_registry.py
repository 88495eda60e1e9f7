"""Every primitive with a registered VJP must be checked by some test module (COVERED sets)."""

import importlib
import pathlib

from gradcy._rules import JointVJP
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
    missing = sorted(
        name
        for name, p in primitives_with_vjps().items()
        if not (p.jvpmakers or p.jvp_argnums is not None)
    )
    assert not missing, f"primitives with a VJP but no JVP: {missing}"


def test_own_rules_are_direct():
    """gradcy's own rules are registered in the direct forms, called in the backward pass:
    per argument (defvjp_direct) and of all arguments (defvjp_argnums_direct), never through
    the maker forms of autograd's API (defvjp, defvjp_argnum, defvjp_argnums), which build a
    closure per recorded call and give container cotangents dense, as to rules written for
    autograd."""
    wrapped = sorted(
        f"{name}[{k}]"
        for name, p in primitives_with_vjps().items()
        for k, rule in p.vjpmakers.items()
        if getattr(rule, "__qualname__", "").startswith("maker_rule.")
    )
    wrapped += sorted(
        name
        for name, p in primitives_with_vjps().items()
        if type(p.vjp) is JointVJP and p.vjp.fn.__qualname__.startswith("joint_maker_rule.")
    )
    assert not wrapped, f"rules registered in the maker form: {wrapped}"
