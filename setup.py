"""Build of the Cython core. Metadata lives in pyproject.toml.

GRADCY_DEBUG=1   bounds and wraparound checks on, initialized-variable checks on (debugging)
GRADCY_TRACE=1   line tracing for coverage
"""

import os

from setuptools import Extension, setup

try:
    from Cython.Build import cythonize
except ImportError as exc:  # pragma: no cover - build-time message
    raise SystemExit(
        "ERROR: Cython is required to build gradcy from source (pip install 'Cython>=3')"
    ) from exc
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

# Every gradcy/_*.pyx is compiled: the engine's parts (docs/architecture.md, Engine, says what
# each holds), gradcy._core (which re-exports their Python API) and gradcy._core_tests (C-level
# test helpers). The files are the one list of the parts: adding a part is adding its .pyx and
# .pxd. (The parts cimport one another; cythonize orders their builds by those cimports.)
HERE = os.path.dirname(os.path.abspath(__file__))
PARTS = sorted(
    name[:-4]
    for name in os.listdir(os.path.join(HERE, "gradcy"))
    if name.startswith("_") and name.endswith(".pyx")
)
extensions = [
    Extension(
        f"gradcy.{part}",
        [f"gradcy/{part}.pyx"],
        include_dirs=[numpy.get_include()],
        define_macros=macros,
    )
    for part in PARTS
]

setup(ext_modules=cythonize(extensions, compiler_directives=directives, force=DEBUG or TRACE))
