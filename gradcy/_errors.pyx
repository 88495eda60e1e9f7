"""The engine's errors (Python exception classes; gradcy._core re-exports them).

Contract: _errors.pxd. A part of its own so that every other part can import them when it is
itself imported, whichever part Python loads first.
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
