"""The ``partition.metadata`` file: the topic id a partition folder belongs to.

Owns: reading and writing that file in Kafka's format (``version: 0`` then
``topic_id: <id>``, the id as Kafka prints a Uuid: URL-safe base64 without padding), so a
folder left by a deleted and re-created topic of the same name can be told apart. It must
not hold any other topic metadata: the server keeps topic ids and configs.
"""

from __future__ import annotations

import base64
import uuid
from pathlib import Path

from .files import atomic_write

PARTITION_METADATA_FILE = "partition.metadata"


def format_topic_id(topic_id: uuid.UUID) -> str:
    return base64.urlsafe_b64encode(topic_id.bytes).rstrip(b"=").decode()


def parse_topic_id(text: str) -> uuid.UUID:
    raw = base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    return uuid.UUID(bytes=raw)


def write_partition_metadata(directory: Path, topic_id: uuid.UUID) -> None:
    text = f"version: 0\ntopic_id: {format_topic_id(topic_id)}"
    atomic_write(directory / PARTITION_METADATA_FILE, text.encode())


def read_partition_metadata(directory: Path) -> uuid.UUID | None:
    """The topic id stored in ``directory``, None if there is no (readable) file."""
    try:
        text = (directory / PARTITION_METADATA_FILE).read_text()
    except (FileNotFoundError, UnicodeDecodeError):
        return None
    fields = {}
    for line in text.splitlines():
        key, _, value = line.partition(":")
        fields[key.strip()] = value.strip()
    if fields.get("version") != "0" or "topic_id" not in fields:
        return None
    try:
        return parse_topic_id(fields["topic_id"])
    except ValueError:
        return None
