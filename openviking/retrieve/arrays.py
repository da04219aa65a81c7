"""Arrow arrays seen from numpy: boolean masks, the offsets of a string array, and takes.

grep and glob compute on Arrow columns with pyarrow and on their indices with numpy; these
are the crossings between the two. pyarrow and numpy are imported inside the functions, so
that importing this module costs nothing.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np
    import pyarrow as pa

__all__ = ["string_offsets", "take", "to_bool"]


def to_bool(mask: Any) -> np.ndarray:
    """An Arrow boolean array (chunked or not) as a numpy one, null as False."""
    import numpy as np
    import pyarrow as pa

    if isinstance(mask, pa.ChunkedArray):
        mask = mask.combine_chunks()
    return np.asarray(mask.fill_null(False).to_numpy(zero_copy_only=False), dtype=bool)


def take(values: pa.Array, index: np.ndarray) -> pa.Array:
    """``values[index]``; ``index`` holds sorted, distinct indices, so one as long as ``values`` is all of it."""
    import pyarrow as pa

    return values if len(index) == len(values) else values.take(pa.array(index, pa.int64()))


def string_offsets(content: pa.LargeStringArray) -> np.ndarray:
    """The ``len(content) + 1`` byte offsets of a large string array, zero-copy."""
    import numpy as np

    return np.frombuffer(content.buffers()[1], dtype=np.int64, count=len(content) + 1, offset=content.offset * 8)
