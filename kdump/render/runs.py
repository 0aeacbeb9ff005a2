"""The walk's runs rendered as dump lines in bulk, for the text and the JSON Lines dumps.

The C renderer (``render_batches``/``render_payload`` in kdump/_speedups.c) formats whole runs
from the walk's columns and the records in place, filling the same templates the Python code
fills (``kdump.render.fields``); it hands back, batch by batch, what it does not do (legacy
messages, control batches, compressed batches it is given the decompressed payload of, text
that is not UTF-8, damaged records), and the Python code renders those: the same bytes either
way (tests/test_speedups.py). Output is bytes, written in large chunks.

A compressed batch, or one larger than a chunk, is rendered a slice of records at a time
(``render_payload``): a batch of millions of records (a decompression bomb) costs its payload
and a chunk of lines, never all of its lines at once (issue 27). A record whose one line is
larger than a chunk (a value of 64 MB of control bytes: 384 MB of JSON) comes a chunk at a
time too, cut between characters (the cursor in kdump/_speedups.c): chunks need not end lines.
So does the Python renderer's line of a long record (a legacy message, KDUMP_PURE_PYTHON):
``line_pieces``, its key's and value's text made a slice at a time (kdump.render.jsonl's
``json_parts``, kdump.render.fields' ``RecordFields.parts``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING, Protocol

from kdump import speedups
from kdump.crc import Buffer
from kdump.errors import CodecError
from kdump.format.batch import Batch, RecordBatch
from kdump.format.compression import decompress
from kdump.format.layout import COMPRESSION_MASK, CONTROL_BIT, RECORD_BATCH_OVERHEAD
from kdump.format.records import max_headers
from kdump.format.walk import BatchRun, Column
from kdump.render.describe import NATIVE_DECODERS, Decoder
from kdump.segment import FileRecords

if TYPE_CHECKING:
    from kdump._speedups import _Resume as Resume
    from kdump.speedups import Native

OUTPUT_CHUNK = 1 << 20
"""Bytes of lines per call into the C renderer: memory stays flat, calls stay few."""

MAX_GAPS = 100_000
"""Non-consecutive offset pairs kept per log for the text dump's summary (a few MB). Kafka's
tool keeps every one, so a batch of millions of records with one offset (a decompression bomb)
took gigabytes; the pairs past this many are counted, and the summary says how many."""


LONG_RECORD = 1 << 16
"""A record's bytes past which the Python renderer writes its line a piece at a time: the line
of a smaller one is a few hundred KB at most (JSON's ``\\u0001``: six bytes a byte)."""
SLICE_CHARS = 1 << 16
"""Characters of a long line's text per piece (a piece's UTF-8: 384 KB at most as JSON)."""


class PythonBatch(Protocol):
    def __call__(self, batch: Batch, valid: bool, skip: int = 0) -> Iterator[bytes]:
        """The Python renderer of one batch: its line, then its records' lines, as UTF-8 pieces
        (a short line one piece, a long record's a slice at a time: ``line_pieces``), each line
        ending in ``\\n``; ``skip``: that many records were rendered already (no batch line
        then)."""
        ...


def line_pieces(
    parts: Iterable[str], escape: Callable[[str], str] | None = None
) -> Iterator[bytes]:
    """One line of these parts of its text, ``escape``d (a rule of one character at a time) and
    UTF-8 encoded, in pieces of about SLICE_CHARS characters cut between characters (a long part
    a slice at a time), the last ending in ``\\n``: the bytes of the line encoded whole, never
    the whole line at once (a legacy message's value of many MB)."""
    held: list[str] = []
    size = 0
    for part in parts:
        for i in range(0, len(part), SLICE_CHARS):
            piece = part[i : i + SLICE_CHARS] if len(part) > SLICE_CHARS else part
            held.append(piece)
            size += len(piece)
            if size >= SLICE_CHARS:
                text = "".join(held)
                yield (escape(text) if escape else text).encode()
                held, size = [], 0
    text = "".join(held)
    yield (escape(text) if escape else text).encode() + b"\n"


def native_decoder(decoder: Decoder) -> int:
    """The C renderer's number for a decoder, 0 when only Python can run it."""
    return NATIVE_DECODERS.get(decoder, 0)


class RunRenderer:
    """Renders a log's runs: ``run(batch_run)`` yields bytes (lines ending in ``\\n``).

    ``last_offset`` and ``note_record`` keep DumpLogSegments' consecutive-offset check across
    batches and runs, whichever code rendered them; ``gaps`` collects (last, next) pairs (for
    the text dump: one per offset with ``distinct_gaps``, as the Java tool's TreeMap keeps them;
    at most MAX_GAPS) and ``invalid`` counts batches whose CRC fails.
    """

    def __init__(
        self,
        log: FileRecords,
        python_batch: PythonBatch,
        *,
        as_json: bool,
        batch_template: str,
        record_template: str | None,
        key_decoder: Decoder,
        value_decoder: Decoder,
        records_in_c: bool,
        max_batch_bytes: int,
        distinct_gaps: bool = True,
    ) -> None:
        self.log, self.python_batch = log, python_batch
        self.as_json = as_json
        self.batch_template, self.record_template = batch_template, record_template
        self.decoders = (native_decoder(key_decoder), native_decoder(value_decoder))
        deep = record_template is not None
        # the C renderer takes records only where every decoder runs in C too
        self.use_c = not deep or (records_in_c and 0 not in self.decoders)
        self.max_batch_bytes = max_batch_bytes
        self.distinct_gaps = distinct_gaps
        self.last_offset = -1
        self._gaps: dict[int, int] | list[tuple[int, int]] = {} if distinct_gaps else []
        self.gaps_not_kept = 0
        """Pairs past MAX_GAPS, counted only."""
        self.invalid = 0

    @property
    def gaps(self) -> list[tuple[int, int]]:
        """The non-consecutive (last, next) offset pairs kept, in the order they came."""
        return list(self._gaps.items()) if isinstance(self._gaps, dict) else self._gaps

    def _add_gaps(self, pairs: list[tuple[int, int]]) -> None:
        gaps = self._gaps
        if isinstance(gaps, dict):  # the Java tool's TreeMap: one pair per offset, last wins
            for last, offset in pairs:
                if last in gaps or len(gaps) < MAX_GAPS:
                    gaps[last] = offset
                else:
                    self.gaps_not_kept += 1
        else:
            room = max(0, MAX_GAPS - len(gaps))
            gaps += pairs[:room]
            self.gaps_not_kept += len(pairs) - min(room, len(pairs))

    def note_record(self, offset: int) -> None:
        """A record rendered by Python: the consecutive-offset check the C code does too.
        The Java port pairs -1 with a segment's first offset; the Scala tool did not."""
        if self.last_offset != -1 and offset != self.last_offset + 1 and not self.as_json:
            self._add_gaps([(self.last_offset, offset)])
        self.last_offset = offset

    def run(self, run: BatchRun) -> Iterator[bytes]:
        native = speedups.native() if self.use_c else None
        columns = tuple(run.columns()) if native is not None else ()
        i = 0
        while i < run.n:
            if native is not None:
                rendered = native.render_batches(
                    self.log.buf, columns, i, self.as_json, self.batch_template,
                    self.record_template, *self.decoders, self.last_offset, OUTPUT_CHUNK,
                    max_headers(self.max_batch_bytes),
                )  # fmt: skip
                i, self.last_offset = rendered.next_index, rendered.last_offset
                self._add_gaps(rendered.gaps)
                self.invalid += rendered.invalid
                if rendered.data:
                    yield rendered.data
                if i >= run.n or len(rendered.data) >= OUTPUT_CHUNK:
                    continue
            yield from self._one(run, columns, i, native)
            i += 1

    def _one(
        self, run: BatchRun, columns: tuple[Column, ...], i: int, native: Native | None
    ) -> Iterator[bytes]:
        batch, valid = run.batch(i), run.valid[i] == 1
        self.invalid += not valid
        if native is not None and self._sliced(batch):
            yield from self._slices(batch, valid, columns, i, native)
            return
        yield from self.python_batch(batch, valid)

    def _sliced(self, batch: Batch) -> bool:
        """Whether the C renderer takes this batch's records a slice at a time: a v2 data
        batch, compressed or larger than a chunk (render_batches leaves both to this)."""
        attributes = batch.attributes
        return (
            self.record_template is not None
            and batch.magic >= 2
            and not attributes & CONTROL_BIT
            and bool(attributes & COMPRESSION_MASK or batch.size > OUTPUT_CHUNK)
        )

    def _slices(
        self, batch: Batch, valid: bool, columns: tuple[Column, ...], i: int, native: Native
    ) -> Iterator[bytes]:
        """The batch's lines from C, a chunk at a time; where C cannot go on (records it does
        not render, damage: the Python path words it), the Python renderer from that record."""
        # only a v2 batch's records are rendered here (_sliced)
        assert self.record_template is not None and isinstance(batch, RecordBatch)
        payload = self._payload(batch)
        pos = first = 0
        resume: Resume | None = None
        while payload is not None:
            rendered = native.render_payload(
                payload, columns, i, self.as_json, self.batch_template, self.record_template,
                *self.decoders, self.last_offset, pos, first, OUTPUT_CHUNK,
                max_headers(self.max_batch_bytes), resume,
            )  # fmt: skip
            if rendered is None:
                break
            before = (pos, first, resume)
            self.last_offset = rendered.last_offset
            pos, first, resume = rendered.position, rendered.next_record, rendered.resume
            self._add_gaps(rendered.gaps)
            yield bytes(rendered.data)
            if first >= batch.records_count and pos == len(payload):
                return
            # C renders a record, or a slice of a long one's line, a call at least; never loop
            # (nor, part way through a line, hand the record to Python: C raises that)
            if (pos, first, resume) == before:
                break
        yield from self.python_batch(batch, valid, first)

    def _payload(self, batch: Batch) -> Buffer | None:
        """A batch's records: decompressed, or in place; None when they do not decompress
        (the Python path raises it, with the file and position)."""
        raw = memoryview(self.log.buf)[batch.position + RECORD_BATCH_OVERHEAD : batch.end]
        if not batch.compression:
            return raw
        try:
            return decompress(batch.compression, raw, self.max_batch_bytes)
        except CodecError:
            return None
