"""Build of the Cython core. Metadata lives in pyproject.toml.

GRADCY_DEBUG=1   bounds and wraparound checks on, initialized-variable checks on (debugging)
GRADCY_TRACE=1   line tracing for coverage
"""
import os

from setuptools import Extension, setup

try:
    from Cython.Build import cythonize
except ImportError as exc:  # pragma: no cover - build-time message
    raise SystemExit("ERROR: Cython is required to build gradcy from source "
                     "(pip install 'Cython>=3')") from exc
import numpy

DEBUG = os.environ.get("GRADCY_DEBUG", "") not in ("", "0")
TRACE = os.environ.get("GRADCY_TRACE", "") not in ("", "0")

# every compiler directive of the project, in one place
directives = {
    "language_level": 3,
    "boundscheck": DEBUG,
    "wraparound": DEBUG,
    "initializedcheck": DEBUG,
    "cdivision": not DEBUG,
    "embedsignature": True,
    "linetrace": TRACE,
}
macros = [("NPY_NO_DEPRECATED_API", "NPY_1_7_API_VERSION")]
if TRACE:
    macros.append(("CYTHON_TRACE", "1"))

extensions = [
    Extension(name, [path], include_dirs=[numpy.get_include()], define_macros=macros)
    for name, path in [
        # the engine's parts (each a .pyx with its .pxd contract), in cimport order (_tape,
        # _rules, _recompute, _fuse, _saved, _box, _hooks and _write cimport one another)
        ("gradcy._errors", "gradcy/_errors.pyx"),
        ("gradcy._counters", "gradcy/_counters.pyx"),
        ("gradcy._meta", "gradcy/_meta.pyx"),
        ("gradcy._cotangents", "gradcy/_cotangents.pyx"),
        ("gradcy._regions", "gradcy/_regions.pyx"),
        ("gradcy._hold", "gradcy/_hold.pyx"),
        ("gradcy._tape", "gradcy/_tape.pyx"),
        ("gradcy._rules", "gradcy/_rules.pyx"),
        ("gradcy._recompute", "gradcy/_recompute.pyx"),
        ("gradcy._fuse", "gradcy/_fuse.pyx"),
        ("gradcy._saved", "gradcy/_saved.pyx"),
        ("gradcy._box", "gradcy/_box.pyx"),
        ("gradcy._hooks", "gradcy/_hooks.pyx"),
        ("gradcy._fast", "gradcy/_fast.pyx"),
        ("gradcy._write", "gradcy/_write.pyx"),
        # the module the Python layer imports (re-exports the parts' Python API)
        ("gradcy._core", "gradcy/_core.pyx"),
        ("gradcy._core_tests", "gradcy/_core_tests.pyx"),
    ]
]

setup(ext_modules=cythonize(extensions, compiler_directives=directives,
                            force=DEBUG or TRACE))
