"""One test record per operator of gradcy/numpy/sorting.py, read by test_sorting.py (the
family's primitives) and the dtype sweep (test_dtype_sweep.py); what the records keep (their
permutations) is test_saved_sets.py's.

Fields of a record:
  name  the gradcy.numpy name
  call  the representative call, a function of the array x
  shape x's shape for it
Both sort real inputs only here (a complex sort orders lexicographically: no sweep of complex
dtypes), and neither takes scalars.
"""

from dataclasses import dataclass

import gradcy.numpy as np


@dataclass(frozen=True)
class Sorting:
    name: str
    call: object
    shape: tuple = (2, 3)


RECORDS = [
    Sorting("sort", lambda x: np.sort(x, axis=1)),
    Sorting("partition", lambda x: np.partition(x, 1, axis=1)),
]
SORTING = {r.name: r for r in RECORDS}
assert len(SORTING) == len(RECORDS), "one record per operator"
