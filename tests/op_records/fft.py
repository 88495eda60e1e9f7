"""One test record per operator of numpy.fft (gradcy/numpy/fft.py), read by test_fft.py (the
family's primitives and their empty saved specs) and the dtype sweep (test_dtype_sweep.py); the
many calls of each transform (n, s, axes, norm) are test_fft.py's CASES.

Fields of a record:
  name     the gradcy.numpy.fft name
  shape    a representative input shape (the dtype sweep's, which also checks its float16 and
           complex inputs where accepted)
  complex  it takes complex input (the real-input transforms rfft* and ihfft do not)
"""

from dataclasses import dataclass


@dataclass(frozen=True)
class Fft:
    name: str
    shape: tuple
    complex: bool = True


RECORDS = [
    Fft("fft", (4,)),
    Fft("ifft", (4,)),
    Fft("fft2", (2, 4)),
    Fft("ifft2", (2, 4)),
    Fft("fftn", (2, 4)),
    Fft("ifftn", (2, 4)),
    Fft("rfft", (4,), complex=False),
    Fft("rfft2", (2, 4), complex=False),
    Fft("rfftn", (2, 4), complex=False),
    Fft("irfft", (3,)),
    Fft("irfft2", (2, 3)),
    Fft("irfftn", (2, 3)),
    Fft("hfft", (3,)),
    Fft("ihfft", (4,), complex=False),
    Fft("fftshift", (2, 3)),
    Fft("ifftshift", (2, 3)),
]
FFT = {r.name: r for r in RECORDS}
assert len(FFT) == len(RECORDS), "one record per operator"
