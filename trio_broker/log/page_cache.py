"""Making a file region resident in the page cache before the event loop sends it.

Owns: ``make_resident``. A fetch's record data leaves by ``os.sendfile`` on the event
loop (``network/send.py``); if the pages are not in the page cache, that call blocks the
loop on the disk (Kafka's KAFKA-7504). So the io thread that found the regions reads them
first: ``posix_fadvise(WILLNEED)`` starts the read-ahead of the whole range, and ``preadv``
into a per-thread scratch buffer waits until every page is in. We read rather than only
advise because WILLNEED is a hint that returns before the data is there; the copy into
the scratch buffer costs about as much as one ``memcpy`` of the range, on the io thread
with the GIL released. The loop's ``sendfile`` then copies from memory.

Most fetches read what was just written, already in the page cache; copying it anyway cost
consumers about a tenth of their throughput in ``bench/throughput.py``. So each region is
first asked about with Linux's ``cachestat`` (6.5+): one system call, about 2 us, which
says how many of the range's pages are cached; only a region with a page missing is read.
Neither the standard library nor a maintained package exposes ``cachestat`` (or
``mincore`` without mapping the file), hence the ``ctypes`` call; where the kernel or the
architecture lacks it, every region is read as before.
Must not: be called on the event loop.
"""

from __future__ import annotations

import ctypes
import os
import platform
import sys
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


_PAGE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096
# cachestat's number in the system call tables of these architectures (Linux 6.5).
_CACHESTAT = 451 if sys.platform == "linux" and platform.machine() in ("x86_64", "aarch64") else 0


class _Range(ctypes.Structure):
    _fields_ = [("off", ctypes.c_uint64), ("len", ctypes.c_uint64)]


class _Stat(ctypes.Structure):
    _fields_ = [
        (name, ctypes.c_uint64)
        for name in ("nr_cache", "nr_dirty", "nr_writeback", "nr_evicted", "nr_recently_evicted")
    ]


class _CacheStat:
    """``cachestat(2)`` through libc's ``syscall``, or nothing if the kernel lacks it."""

    def __init__(self) -> None:
        self.available = False
        if not _CACHESTAT:
            return
        try:
            self._syscall = ctypes.CDLL(None, use_errno=True).syscall
        except (OSError, AttributeError):
            return
        self._syscall.restype = ctypes.c_long
        self.available = True

    def resident(self, fd: int, offset: int, length: int) -> bool:
        """Whether every page of the range is cached (False when unknown)."""
        if not self.available:
            return False
        rng, stat = _Range(offset, length), _Stat()
        rc = self._syscall(
            ctypes.c_long(_CACHESTAT),
            ctypes.c_int(fd),
            ctypes.byref(rng),
            ctypes.byref(stat),
            ctypes.c_uint(0),
        )
        if rc != 0:
            if ctypes.get_errno() in (38, 1):  # ENOSYS, EPERM (seccomp): never again
                self.available = False
            return False
        pages = (offset + length - 1) // _PAGE - offset // _PAGE + 1
        return bool(stat.nr_cache >= pages)


_cachestat = _CacheStat()


def resident(fd: int, offset: int, length: int) -> bool:
    """Whether the kernel says every page of this file range is in the page cache."""
    return _cachestat.resident(fd, offset, length)


def make_resident(regions: Iterable[FileRegion]) -> None:
    """Bring every byte of ``regions`` into the page cache (blocking: an io thread's)."""
    buf = _scratch()
    for region in regions:
        fd = region.file.fileno()
        offset, left = region.offset, region.length
        if left <= 0 or _cachestat.resident(fd, offset, left):
            continue
        if hasattr(os, "posix_fadvise"):
            os.posix_fadvise(fd, offset, left, os.POSIX_FADV_WILLNEED)
        while left > 0:
            n = os.preadv(fd, [buf[: min(left, _SCRATCH_BYTES)]], offset)
            if n <= 0:  # the file is shorter than the region: the send will say so
                break
            offset += n
            left -= n
