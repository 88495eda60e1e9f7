# gradcy._core is the module the Python layer imports: it re-exports the Python API of the
# engine's parts. The C-level contract is in the parts' own .pxd files (gradcy/_*.pxd; the
# parts and what each holds: docs/architecture.md, Engine). Cython code cimports from the part
# itself (from gradcy._tape cimport Tape). This file declares nothing: names cimported here
# would shadow the Python re-exports of _core.pyx.
