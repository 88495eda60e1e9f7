"""gradcy standing in for autograd in code you do not own (an opt-in switch).

    import gradcy.autograd_alias          # first, before anything imports autograd

or, without editing the program:

    python -m gradcy.autograd_alias script.py [args ...]
    python -m gradcy.autograd_alias -m pytest [pytest args ...]
    python -m pytest -p gradcy.autograd_alias [pytest args ...]

After it, ``import autograd`` and every ``import autograd.X`` in any library resolve to
``gradcy`` and ``gradcy.X`` (the same module objects: the real autograd never runs), and what
libraries check about autograd's objects holds: the traced value's class reports itself as
``autograd.numpy.numpy_boxes.ArrayBox`` (libraries that tell autograd's values by their
class's package, such as PennyLane's ``math.get_interface`` and autoray, see "autograd"), and
``autograd.builtins.SequenceBox`` / ``DictBox`` are autograd's names too, and NumPy makes an
object array of traced values in the program's own code, as of autograd's ArrayBox. When the
installed autograd distribution (the one the program's libraries require) is older than 1.9,
traced values have no ``__array_ufunc__``, as that autograd's ArrayBox (NumPy's operators
between an ndarray subclass such as PennyLane's tensor and a traced value then reach the traced
value's).

This is the one place gradcy changes the interpreter's import system, and only when asked:
``import gradcy`` alone adds nothing to ``sys.meta_path``. Install the switch before the real
autograd is imported (it raises if the real autograd is already loaded).
"""

import importlib
import importlib.abc
import importlib.util
import sys

__all__ = ["install", "installed", "AliasFinder", "check_no_real_autograd", "main"]

SOURCE, TARGET = "autograd", "gradcy"

# extension types and classes of gradcy -> the autograd name libraries expect of them
_CLASS_NAMES = {
    ("gradcy._core", "Box"): "autograd.numpy.numpy_boxes.ArrayBox",
    ("gradcy.builtins", "SequenceBox"): "autograd.builtins.SequenceBox",
    ("gradcy.builtins", "DictBox"): "autograd.builtins.DictBox",
}


class _AliasLoader(importlib.abc.Loader):
    """Hands out an already imported gradcy module under its autograd name."""

    def __init__(self, module):
        self.module = module
        self.spec = module.__spec__

    def create_module(self, spec):
        return self.module

    def exec_module(self, module):
        module.__spec__ = self.spec  # the import system set the alias's spec; keep gradcy's


class AliasFinder(importlib.abc.MetaPathFinder):
    """Resolves ``autograd`` and ``autograd.X`` to ``gradcy`` and ``gradcy.X``."""

    def find_spec(self, fullname, path=None, target=None):
        if fullname != SOURCE and not fullname.startswith(SOURCE + "."):
            return None
        real = TARGET + fullname[len(SOURCE) :]
        module = importlib.import_module(real)  # ModuleNotFoundError names gradcy's path
        spec = importlib.util.spec_from_loader(
            fullname, _AliasLoader(module), is_package=hasattr(module, "__path__")
        )
        if hasattr(module, "__path__"):
            spec.submodule_search_locations = list(module.__path__)
        return spec


def _installed_autograd_below_1_9():
    """The environment's autograd distribution (the version its libraries require) is older
    than 1.9 (or GRADCY_AUTOGRAD_VERSION says so); False when autograd is not installed (gradcy
    then behaves as the newest)."""
    import os
    from importlib.metadata import PackageNotFoundError, version

    try:
        # GRADCY_AUTOGRAD_VERSION names the autograd to behave as (e.g. 1.8.0) instead
        parts = (os.environ.get("GRADCY_AUTOGRAD_VERSION") or version("autograd")).split(".")[:2]
        return (int(parts[0]), int(parts[1])) < (1, 9)
    except (PackageNotFoundError, ValueError):
        return False


def _object_array(self, dtype=None, copy=None):
    """Box.__array__ under the alias: NumPy's array of a traced value as NumPy makes it of
    autograd's ArrayBox (a sequence without __array__): an object array of the traced value's
    shape holding its traced elements (the traced value itself when 0-d), through which the
    elements' operators keep tracing. Only in the program's own code while its differentiation
    records: any other dtype, and any conversion inside a gradcy primitive's function (where
    gradcy makes a list of traced values one traced array, as NumPy would make one array of
    it), or of a value whose differentiation is not recording, still raises."""
    import numpy

    from gradcy._core import active_tape

    tape = self._tape
    if (
        tape.recorder is not None
        or tape.released
        or tape.sweeping
        or active_tape() is None
        or (dtype is not None and numpy.dtype(dtype) != numpy.dtype(object))
    ):
        return _BOX_ARRAY(self, dtype, copy)
    value = self._value
    shape = (len(value),) if isinstance(value, (tuple, list)) else numpy.shape(value)
    out = numpy.empty(shape, dtype=object)
    if shape == ():
        out[()] = self
    else:
        for idx in numpy.ndindex(*shape):
            out[idx] = self[idx if len(idx) > 1 else idx[0]]
    return out


def installed():
    """The alias is on sys.meta_path."""
    return any(isinstance(f, AliasFinder) for f in sys.meta_path)


def install():
    """Put the alias first on sys.meta_path and give gradcy's traced-value classes autograd's
    names (idempotent). Raises RuntimeError if the real autograd was already imported."""
    loaded = [m for m in sys.modules if m == SOURCE or m.startswith(SOURCE + ".")]
    real = [m for m in loaded if not getattr(sys.modules[m], "__name__", "").startswith(TARGET)]
    if real:
        raise RuntimeError(
            f"gradcy.autograd_alias: the real autograd is already imported "
            f"({', '.join(sorted(real))}); install the alias first (import "
            f"gradcy.autograd_alias at the start of the program, or run it "
            f"with python -m gradcy.autograd_alias)"
        )
    if installed():
        return
    global _BOX_ARRAY
    from gradcy._box import set_type_attribute, set_type_name
    from gradcy._core import Box

    _BOX_ARRAY = Box.__dict__["__array__"]
    for (module, name), autograd_name in _CLASS_NAMES.items():
        set_type_name(getattr(importlib.import_module(module), name), autograd_name)
    # NumPy makes an object array of traced values (onp.array((x, y)) in PennyLane's
    # Operator), as it does of autograd's ArrayBox, which has no __array__
    set_type_attribute(Box, "__array__", _object_array)
    if _installed_autograd_below_1_9():
        # autograd < 1.9's ArrayBox has no __array_ufunc__ (1.9 added it): NumPy's operators
        # between an ndarray (or an ndarray subclass with an __array_ufunc__ of its own, such
        # as PennyLane's tensor) and a traced value then defer to the traced value's, which
        # libraries pinned to autograd < 1.9 rely on; plain NumPy ufuncs called on traced
        # values raise TypeError there, as under that autograd
        set_type_attribute(Box, "__array_ufunc__", None)
    sys.meta_path.insert(0, AliasFinder())


def check_no_real_autograd():
    """Raise AssertionError if a loaded ``autograd.*`` module is not a gradcy module."""
    for name, module in list(sys.modules.items()):
        if name == SOURCE or name.startswith(SOURCE + "."):
            assert getattr(module, "__name__", "").startswith(TARGET), (
                f"{name} is not a gradcy module: {module!r}"
            )


def main(argv=None):
    """``python -m gradcy.autograd_alias script.py [args]`` or ``... -m module [args]``: run
    the script or module as __main__ with the alias installed."""
    import runpy

    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv or argv[0] in ("-h", "--help") or (argv[0] == "-m" and len(argv) < 2):
        print(
            "usage: python -m gradcy.autograd_alias script.py [args ...]\n"
            "       python -m gradcy.autograd_alias -m module [args ...]\n"
            "runs the program with every import of autograd resolved to gradcy"
        )
        return 0 if argv and argv[0] in ("-h", "--help") else 2
    install()
    if argv[0] == "-m":
        sys.argv = argv[1:]
        runpy.run_module(argv[1], run_name="__main__", alter_sys=True)
    else:
        sys.argv = argv
        runpy.run_path(argv[0], run_name="__main__")
    return 0


if __name__ == "__main__":
    # (run as a script this file is __main__; the switch itself is gradcy.autograd_alias)
    from gradcy.autograd_alias import main as _main

    sys.exit(_main())
else:
    install()
