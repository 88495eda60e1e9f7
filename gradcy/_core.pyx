"""gradcy._core: the module the Python layer imports. It re-exports the Python API of the
engine's parts: every gradcy/_*.pyx, each an implementation with a .pxd that states its
contract and where each owned reference is released, and the errors (gradcy/_errors.py, plain
Python). docs/architecture.md (Engine) lists the parts and what each holds; setup.py builds
every gradcy/_*.pyx.
"""
# re-exports: these names are gradcy._core's API, so each line is marked
# no-cython-lint (cython-lint reports them as imported but unused)
from gradcy._errors import (EscapedValueError, MissingVJPError,  # no-cython-lint
                            TracerArrayConversionError, MissingJVPError)  # no-cython-lint
from gradcy._counters import stats, reset_peak  # no-cython-lint
from gradcy._cotangents import SparseCotangent  # no-cython-lint
from gradcy._regions import (OwnedBuffer, root_buffer, is_basic_index, layout_region,  # no-cython-lint
                             region_hull, regions_overlap)  # no-cython-lint
from gradcy._tape import Tape, unbroadcast  # no-cython-lint
from gradcy._primitive import (Primitive, _active, push_active, pop_active,  # no-cython-lint
                               active_tape)  # no-cython-lint
from gradcy._saved import ArrayMeta, meta_of  # no-cython-lint
from gradcy._recompute import set_recompute_default, Recomputed  # no-cython-lint
from gradcy._fuse import register_idioms, set_fusion  # no-cython-lint
from gradcy._box import Box, transfer_box, is_box, box_value  # no-cython-lint
from gradcy._hooks import (register_box_method, register_numpy_override,  # no-cython-lint
                           install_hooks, register_array_type, is_array_value)  # no-cython-lint
from gradcy._fast import SCALAR_SEEDS, grad_fast  # no-cython-lint
from gradcy._write import (write_into, untracked_sharers, Sharers, view_index,  # no-cython-lint
                           setitem_fast)  # no-cython-lint
