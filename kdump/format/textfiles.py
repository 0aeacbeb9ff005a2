"""Kafka's small text files, read as the broker reads them, errors naming the line and byte.

- offset checkpoints (``recovery-point-offset-checkpoint``, ``replication-offset-checkpoint``,
  ``log-start-offset-checkpoint``, ``cleaner-offset-checkpoint``) and ``leader-epoch-checkpoint``:
  CheckpointFile.CheckpointReadBuffer. Line 1 the version (0), line 2 the entry count, then one
  entry a line, fields split on whitespace: ``topic partition offset`` or ``epoch startOffset``.
  An empty file, or one with only a version line, has no entries.
- ``partition.metadata``: PartitionMetadataReadBuffer, ``version: 0`` then ``topic_id: <uuid>``.
- ``meta.properties``: java.util.Properties (ISO-8859-1, ``key=value``, ``#`` comments), checked
  as MetaProperties.Builder checks it.

The error texts are Kafka's own, after ``line N:``.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from typing import Any

from kdump.errors import FormatError
from kdump.format.checkpoint import EpochEntry, PartitionMetadata
from kdump.format.layout import ZERO_UUID
from kdump.format.names import (
    LEADER_EPOCH_CHECKPOINT,
    META_PROPERTIES,
    OFFSET_CHECKPOINTS,
    PARTITION_METADATA,
)
from kdump.tuples import NamedTuple

CHECKPOINT_VERSION = 0
INT32 = (-(1 << 31), (1 << 31) - 1)
INT64 = (-(1 << 63), (1 << 63) - 1)
# patterns as text, compiled (and cached by re) by the first file read: every verify imports
# this module, few meet a text file
_JAVA_INT = r"[+-]?[0-9]+"
_WHITESPACE = r"[ \t\n\x0b\f\r]+"  # java.util.regex \s


class TopicPartitionOffset(NamedTuple):
    topic: str
    partition: int
    offset: int


class MetaProperties(NamedTuple):
    """MetaProperties: ``node_id`` is ``broker.id`` in version 0 files."""

    version: int
    cluster_id: str | None
    node_id: int | None
    directory_id: str | None


class TextLine(NamedTuple):
    number: int  # 1-based
    position: int  # byte offset of the line in the file
    text: str


def text_lines(data: bytes, path: str, encoding: str = "utf-8") -> Iterator[TextLine]:
    """BufferedReader.readLine: lines end at ``\\n``, ``\\r`` or ``\\r\\n``."""
    position, number = 0, 1
    for match in re.finditer(rb"([^\r\n]*)(\r\n|\r|\n|$)", data):
        if match.start() == len(data) and not match.group(1):
            break
        raw = match.group(1)
        try:
            text = raw.decode(encoding)
        except UnicodeDecodeError as e:
            raise FormatError(
                path, position + e.start, f"line {number}: malformed {encoding} input"
            ) from None
        yield TextLine(number, position, text)
        position, number = match.end(), number + 1


def _java_number(text: str, bounds: tuple[int, int]) -> int | None:
    """Integer.parseInt / Long.parseLong: sign and ASCII digits only, in range."""
    if not re.fullmatch(_JAVA_INT, text):
        return None
    value = int(text)
    return value if bounds[0] <= value <= bounds[1] else None


def java_split(line: str) -> list[str]:
    """Pattern.split(line) on ``\\s+``: a leading separator gives an empty first field."""
    parts = re.split(_WHITESPACE, line)
    while parts and parts[-1] == "" and len(parts) > 1:
        parts.pop()
    return parts


def _fail(path: str, line: TextLine, message: str) -> FormatError:
    return FormatError(path, line.position, f"line {line.number}: {message}")


def _malformed(path: str, line: TextLine) -> FormatError:
    return _fail(path, line, f"Malformed line in checkpoint file: {line.text}")


def read_checkpoint(data: bytes, path: str, entry: Callable[[list[str]], Any | None]) -> list[Any]:
    """CheckpointFile.CheckpointReadBuffer.read, with ``entry`` as the EntryFormatter."""
    lines = text_lines(data, path)
    version_line = next(lines, None)
    if version_line is None:
        return []
    version = _java_number(version_line.text, INT32)
    if version is None:
        raise _malformed(path, version_line)
    if version != CHECKPOINT_VERSION:
        raise _fail(
            path,
            version_line,
            f"Unrecognised version:{version}, expected version: {CHECKPOINT_VERSION}",
        )
    count_line = next(lines, None)
    if count_line is None:
        return []
    expected = _java_number(count_line.text, INT32)
    if expected is None:
        raise _malformed(path, count_line)
    if expected < 0:
        raise _fail(path, count_line, f"Illegal Capacity: {expected}")
    entries = []
    for line in lines:
        parsed = entry(java_split(line.text))
        if parsed is None:
            raise _malformed(path, line)
        entries.append(parsed)
    if len(entries) != expected:
        raise _fail(
            path,
            count_line,
            f"Expected [{expected}] entries in checkpoint file, but found only [{len(entries)}]",
        )
    return entries


def _offset_entry(parts: list[str]) -> TopicPartitionOffset | None:
    if len(parts) != 3:
        return None
    partition, offset = _java_number(parts[1], INT32), _java_number(parts[2], INT64)
    if partition is None or offset is None:
        return None
    return TopicPartitionOffset(parts[0], partition, offset)


def _epoch_entry(parts: list[str]) -> EpochEntry | None:
    if len(parts) != 2:
        return None
    epoch, start_offset = _java_number(parts[0], INT32), _java_number(parts[1], INT64)
    if epoch is None or start_offset is None:
        return None
    return EpochEntry(epoch, start_offset)


def read_offset_checkpoint(data: bytes, path: str = "<bytes>") -> list[TopicPartitionOffset]:
    """OffsetCheckpointFile: ``topic partition offset`` entries, in file order."""
    return read_checkpoint(data, path, _offset_entry)


def offset_checkpoint_bytes(entries: list[TopicPartitionOffset]) -> bytes:
    """OffsetCheckpointFile's text (CheckpointFile.write): version, count, one
    ``topic partition offset`` line per entry."""
    lines = [str(CHECKPOINT_VERSION), str(len(entries))]
    lines += [f"{e.topic} {e.partition} {e.offset}" for e in entries]
    return ("\n".join(lines) + "\n").encode()


def read_leader_epoch_checkpoint(data: bytes, path: str = "<bytes>") -> list[EpochEntry]:
    """LeaderEpochCheckpointFile: ``epoch startOffset`` entries, in file order."""
    return read_checkpoint(data, path, _epoch_entry)


def uuid_from_string(text: str) -> str:
    """Uuid.fromString's checks; raises ValueError with Kafka's message."""
    if len(text) > 24:
        raise ValueError(
            f"Input string with prefix `{text[:24]}` is too long to be decoded as a base64 UUID"
        )
    import base64  # a partition.metadata's or meta.properties' id only

    padded = text + "=" * (-len(text) % 4)
    try:
        raw = base64.b64decode(padded, altchars=b"-_", validate=True)
    except ValueError:  # binascii.Error is one
        raise ValueError(f"Illegal base64 character in `{text}`") from None
    if len(raw) != 16:
        raise ValueError(
            f"Input string `{text}` decoded as {len(raw)} bytes, which is not equal to the "
            "expected 16 bytes of a base64-encoded UUID"
        )
    return text


def read_partition_metadata(data: bytes, path: str = "<bytes>") -> PartitionMetadata:
    """PartitionMetadataReadBuffer.read: the version line, then the topic id line."""
    lines = text_lines(data, path)

    def field(name: str) -> tuple[TextLine, str]:
        line = next(lines, None)
        if line is None:
            raise FormatError(path, len(data), f"no {name} line")
        parts = java_split(line.text)
        if len(parts) != 2:
            raise _malformed(path, line)
        return line, parts[1]

    version_line, version_text = field("version")
    version = _java_number(version_text, INT32)
    if version is None:
        raise _malformed(path, version_line)
    if version < 0:
        raise _fail(
            path, version_line, f"Unrecognized version of partition metadata file: {version}"
        )
    topic_line, topic_id = field("topic_id")
    try:
        uuid_from_string(topic_id)
    except ValueError as e:
        raise _fail(path, topic_line, str(e)) from None
    if topic_id == ZERO_UUID:
        raise _fail(path, topic_line, "Invalid topic ID in partition metadata file")
    return PartitionMetadata(version, topic_id)


_PROPERTY_ESCAPES = {"t": "\t", "n": "\n", "r": "\r", "f": "\f"}


def _unescape(text: str) -> str:
    out, i = [], 0
    while i < len(text):
        ch = text[i]
        if ch == "\\" and i + 1 < len(text):
            nxt = text[i + 1]
            if nxt == "u" and re.fullmatch(r"[0-9a-fA-F]{4}", text[i + 2 : i + 6]):
                out.append(chr(int(text[i + 2 : i + 6], 16)))
                i += 6
                continue
            out.append(_PROPERTY_ESCAPES.get(nxt, nxt))
            i += 2
            continue
        out.append(ch)
        i += 1
    return "".join(out)


def _logical_lines(data: bytes, path: str) -> Iterator[tuple[TextLine, str]]:
    """Properties.LineReader: comments and blank lines skipped, ``\\`` continues a line."""
    pending: tuple[TextLine, str] | None = None
    for line in text_lines(data, path, "latin-1"):
        text = line.text.lstrip(" \t\f")
        if pending is None:
            if not text or text[0] in "#!":
                continue
            start = line
        else:
            start, text = pending[0], pending[1] + text
        trailing = len(text) - len(text.rstrip("\\"))
        if trailing % 2:
            pending = (start, text[:-1])
            continue
        pending = None
        yield start, text
    if pending is not None:
        yield pending


def parse_properties(data: bytes, path: str = "<bytes>") -> dict[str, tuple[str, TextLine]]:
    """Properties.load(InputStream): key -> (value, the line it came from); the last one wins."""
    out: dict[str, tuple[str, TextLine]] = {}
    for line, text in _logical_lines(data, path):
        key_end, escaped, separator = 0, False, False
        while key_end < len(text):
            ch = text[key_end]
            if not escaped and ch in "=: \t\f":
                separator = ch in "=:"
                break
            escaped = ch == "\\" and not escaped
            key_end += 1
        value_start = key_end + 1
        while value_start < len(text):
            ch = text[value_start]
            if ch not in " \t\f":
                if separator or ch not in "=:":
                    break
                separator = True
            value_start += 1
        out[_unescape(text[:key_end])] = (_unescape(text[value_start:]), line)
    return out


def read_meta_properties(data: bytes, path: str = "<bytes>") -> MetaProperties:
    """MetaProperties.Builder(Properties).build(): version 0 or 1 and what each requires."""
    props = parse_properties(data, path)

    def fail(name: str, message: str) -> FormatError:
        entry = props.get(name)
        if entry is None:
            return FormatError(path, 0, message)
        return _fail(path, entry[1], message)

    version_text = props.get("version", ("0", None))[0]
    version = _java_number(version_text.strip(" \t\n\r\f\x0b"), INT32)
    if version is None:
        raise fail("version", f"Invalid meta.properties version string '{version_text}'")
    if version not in (0, 1):
        raise fail("version", f"Unknown meta.properties version number {version}")
    id_name = "broker.id" if version == 0 else "node.id"
    node_id = None
    if id_name in props or version == 1:
        if id_name not in props:
            raise fail(id_name, f"Failed to find {id_name}")
        node_id = _java_number(props[id_name][0], INT32)
        if node_id is None:
            raise fail(id_name, f"Unable to read {id_name} as a base-10 number.")
    cluster_id = props["cluster.id"][0] if "cluster.id" in props else None
    directory_id = props["directory.id"][0] if "directory.id" in props else None
    if directory_id is not None:
        try:
            uuid_from_string(directory_id)
        except ValueError as e:
            raise fail("directory.id", f"Unable to read directory.id as a Uuid: {e}") from None
    if version == 1 and cluster_id is None:
        raise fail("cluster.id", "cluster.id was not found.")
    return MetaProperties(version, cluster_id, node_id, directory_id)


TextFileReader = Callable[[bytes, str], Any]


def text_file_reader(name: str) -> TextFileReader | None:
    """The reader for a file by its base name, or None when it is none of these files
    (kdump.format.names.TEXT_FILES)."""
    if name in OFFSET_CHECKPOINTS:
        return read_offset_checkpoint
    return {
        LEADER_EPOCH_CHECKPOINT: read_leader_epoch_checkpoint,
        PARTITION_METADATA: read_partition_metadata,
        META_PROPERTIES: read_meta_properties,
    }.get(name)


def text_file_entries(name: str, data: bytes, path: str) -> list[NamedTuple]:
    """The entries of a text file: checkpoint lines, or the one metadata/properties entry."""
    reader = text_file_reader(name)
    if reader is None:
        raise FormatError(path, 0, "not a Kafka checkpoint, partition.metadata or meta.properties")
    result = reader(data, path)
    return list(result) if isinstance(result, list) else [result]
