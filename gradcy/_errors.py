"""The engine's errors: plain Python exception classes (no C in them, so not compiled), which
gradcy._core re-exports and gradcy exports (gradcy.EscapedValueError, ...).

The compiled parts import them when they are themselves imported; this module imports nothing,
so it is complete whichever part Python loads first. Their module path stays gradcy._errors
(what a pickled error names).
"""


class EscapedValueError(ValueError):
    """A traced value was used after the differentiation that traced it had finished."""


class MissingVJPError(NotImplementedError):
    """A cotangent reached an argument for which no VJP is registered."""


class TracerArrayConversionError(ValueError):
    """A traced value was converted to a plain NumPy array (which would drop its gradient).
    A ValueError, not a TypeError, because NumPy swallows TypeErrors from __array__ when
    assigning into arrays and reports an unrelated message instead."""


class MissingJVPError(NotImplementedError):
    """A tangent reached an argument for which no JVP is registered."""
