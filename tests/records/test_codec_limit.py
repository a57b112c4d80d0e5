"""``decompress_at_most``: every codec's data decompressed whole when it fits the limit,
and never more than one byte past it when it does not (KIP-714's ``telemetry.max.bytes``);
corrupt data is CORRUPT_MESSAGE."""

from __future__ import annotations

import pytest

from trio_broker.protocol.errors import ErrorCode
from trio_broker.records import Compression, RecordsError
from trio_broker.records.codec import compress, decompress_at_most

DATA = bytes(range(256)) * 64  # 16 KiB


@pytest.mark.parametrize("codec", list(Compression))
def test_whole_when_it_fits_and_cut_one_past_the_limit(codec: Compression) -> None:
    packed = compress(codec, DATA)
    assert bytes(decompress_at_most(codec, packed, len(DATA))) == DATA
    cut = decompress_at_most(codec, packed, 1000)
    if codec in (Compression.GZIP, Compression.LZ4, Compression.ZSTD):
        assert bytes(cut) == DATA[:1001]
    else:  # none and snappy come whole: the caller sees they are over the limit
        assert len(cut) == len(DATA)


@pytest.mark.parametrize("codec", [Compression.GZIP, Compression.LZ4, Compression.ZSTD])
def test_corrupt_data_is_corrupt_message(codec: Compression) -> None:
    with pytest.raises(RecordsError) as err:
        decompress_at_most(codec, b"definitely not compressed data", 100)
    assert err.value.error_code == ErrorCode.CORRUPT_MESSAGE
