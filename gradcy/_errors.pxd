# Contract of gradcy/_errors.pyx: the engine's errors, plain Python classes (EscapedValueError,
# MissingVJPError, TracerArrayConversionError, MissingJVPError), imported by the other parts at
# their import. No C-level API; imports nothing of gradcy (so it is loaded completely before any
# part that raises them runs). Owns no references.
