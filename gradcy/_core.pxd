# gradcy._core is the module the Python layer imports: it re-exports the Python API of the
# engine's parts. The C-level contract is in the parts' own .pxd files:
#   _tape.pxd       the tape (nodes, parent refs, the sweep), Primitive
#   _rules.pxd      a primitive's reverse-mode rule in the one form the sweep calls (VJP)
#   _recompute.pxd  recomputed outputs (Recomputed)
#   _saved.pxd      the compact form of a saved record (_meta_of, _shared_kwargs)
#   _box.pxd        Box, the traced value
#   _hooks.pxd      the tables and hooks the operator layer installs
#   _errors.pxd     the errors (Python classes only)
#   _counters.pxd   process-wide counters
#   _meta.pxd       ArrayMeta (what a saved record keeps for a buffer it does not need)
#   _cotangents.pxd SparseCotangent, adding cotangents
#   _regions.pxd    regions of buffers, root buffers, OwnedBuffer
#   _hold.pxd       the hold table (root buffer -> saved records holding it)
#   _fast.pxd       grad's fast path
#   _write.pxd      writes into owned buffers, what the in-place write path asks about a tape
# Cython code cimports from the part itself (from gradcy._tape cimport Tape). This file
# declares nothing: names cimported here would shadow the Python re-exports of _core.pyx.
