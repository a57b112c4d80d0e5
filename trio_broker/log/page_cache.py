"""Making a file region resident in the page cache before the event loop sends it.

Owns: ``make_resident``. A fetch's record data leaves by ``os.sendfile`` on the event
loop (``network/send.py``); if the pages are not in the page cache, that call blocks the
loop on the disk (Kafka's KAFKA-7504). So the io thread that found the regions reads them
first: ``posix_fadvise(WILLNEED)`` starts the read-ahead of the whole range, and ``preadv``
into a per-thread scratch buffer waits until every page is in. We read rather than only
advise because WILLNEED is a hint that returns before the data is there; the copy into
the scratch buffer costs about as much as one ``memcpy`` of the range, on the io thread
with the GIL released. The loop's ``sendfile`` then copies from memory.
Must not: be called on the event loop.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterable

from ..protocol.primitives import FileRegion

_SCRATCH_BYTES = 256 * 1024
_local = threading.local()


def _scratch() -> memoryview:
    buf = getattr(_local, "buf", None)
    if buf is None:
        buf = _local.buf = memoryview(bytearray(_SCRATCH_BYTES))
    return buf


def make_resident(regions: Iterable[FileRegion]) -> None:
    """Bring every byte of ``regions`` into the page cache (blocking: an io thread's)."""
    buf = _scratch()
    for region in regions:
        fd = region.file.fileno()
        offset, left = region.offset, region.length
        if left <= 0:
            continue
        if hasattr(os, "posix_fadvise"):
            os.posix_fadvise(fd, offset, left, os.POSIX_FADV_WILLNEED)
        while left > 0:
            n = os.preadv(fd, [buf[: min(left, _SCRATCH_BYTES)]], offset)
            if n <= 0:  # the file is shorter than the region: the send will say so
                break
            offset += n
            left -= n
