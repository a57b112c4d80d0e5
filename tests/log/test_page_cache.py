"""What ``make_resident`` leaves in the page cache, and when it skips the read: a region
the kernel says is cached is not copied again; one with pages dropped is read back in."""

from __future__ import annotations

import os
import platform
from pathlib import Path

from trio_broker.log import page_cache
from trio_broker.protocol.primitives import FileRegion


def kernel_has_cachestat() -> bool:
    major, minor = (int(x) for x in platform.release().split(".")[:2])
    return (major, minor) >= (6, 5)


def test_cold_regions_are_read_in_and_cached_ones_are_recognised(tmp_path: Path) -> None:
    path = tmp_path / "segment.log"
    path.write_bytes(os.urandom(4 << 20))
    with path.open("rb") as f:
        fd = f.fileno()
        os.fsync(fd)
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        if kernel_has_cachestat():  # this machine's and CI's kernels: 6.5 or later
            assert not page_cache.resident(fd, 4096, 512 << 10)
        page_cache.make_resident([FileRegion(f, 4096, 512 << 10)])
        if kernel_has_cachestat():
            assert page_cache.resident(fd, 4096, 512 << 10)  # the next fetch skips the read
            assert not page_cache.resident(fd, 3 << 20, 1 << 20)  # the file's end stayed out
