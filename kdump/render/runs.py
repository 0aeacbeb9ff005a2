"""The walk's runs rendered as dump lines in bulk, for the text and the JSON Lines dumps.

The C renderer (``render_batches``/``render_payload`` in kdump/_speedups.c) formats whole runs
from the walk's columns and the records in place, filling the same templates the Python code
fills (``kdump.render.fields``); it hands back, batch by batch, what it does not do (legacy
messages, control batches, compressed batches it is given the decompressed payload of, text
that is not UTF-8, damaged records), and the Python code renders those: the same bytes either
way (tests/test_speedups.py). Output is bytes, written in large chunks.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

from kdump import speedups
from kdump.errors import CodecError
from kdump.format.batch import Batch
from kdump.format.compression import decompress
from kdump.format.layout import COMPRESSION_MASK, CONTROL_BIT, RECORD_BATCH_OVERHEAD
from kdump.format.walk import BatchRun, Column
from kdump.render.describe import NATIVE_DECODERS, Decoder
from kdump.segment import FileRecords

if TYPE_CHECKING:
    from kdump.speedups import Native

OUTPUT_CHUNK = 1 << 20
"""Bytes of lines per call into the C renderer: memory stays flat, calls stay few."""

PythonBatch = Callable[[Batch, bool], Iterator[str]]
"""The Python renderer of one batch: its line, then its records' lines (text, without '\\n')."""


def native_decoder(decoder: Decoder) -> int:
    """The C renderer's number for a decoder, 0 when only Python can run it."""
    return NATIVE_DECODERS.get(decoder, 0)


class RunRenderer:
    """Renders a log's runs: ``run(batch_run)`` yields bytes (lines ending in ``\\n``).

    ``last_offset`` and ``note_record`` keep DumpLogSegments' consecutive-offset check across
    batches and runs, whichever code rendered them; ``gaps`` collects (last, next) pairs and
    ``invalid`` counts batches whose CRC fails.
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
    ) -> None:
        self.log, self.python_batch = log, python_batch
        self.as_json = as_json
        self.batch_template, self.record_template = batch_template, record_template
        self.decoders = (native_decoder(key_decoder), native_decoder(value_decoder))
        deep = record_template is not None
        # the C renderer takes records only where every decoder runs in C too
        self.use_c = not deep or (records_in_c and 0 not in self.decoders)
        self.max_batch_bytes = max_batch_bytes
        self.last_offset = -1
        self.gaps: list[tuple[int, int]] = []
        self.invalid = 0

    def note_record(self, offset: int) -> None:
        """A record rendered by Python: the consecutive-offset check the C code does too.
        The Java port pairs -1 with a segment's first offset; the Scala tool did not."""
        if self.last_offset != -1 and offset != self.last_offset + 1:
            self.gaps.append((self.last_offset, offset))
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
                )  # fmt: skip
                i, self.last_offset = rendered.next_index, rendered.last_offset
                self.gaps += rendered.gaps
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
        if native is not None and self._compressed_v2(batch):
            rendered = self._payload(batch, columns, i, native)
            if rendered is not None:
                yield rendered
                return
        for line in self.python_batch(batch, valid):
            yield line.encode() + b"\n"

    def _compressed_v2(self, batch: Batch) -> bool:
        attributes = batch.attributes
        return (
            self.record_template is not None
            and batch.magic >= 2
            and bool(attributes & COMPRESSION_MASK)
            and not attributes & CONTROL_BIT
        )

    def _payload(
        self, batch: Batch, columns: tuple[Column, ...], i: int, native: Native
    ) -> bytes | None:
        """A compressed batch: decompressed here, its lines rendered in C (None: by Python,
        which also words any error)."""
        assert self.record_template is not None  # only records are rendered here
        raw = memoryview(self.log.buf)[batch.position + RECORD_BATCH_OVERHEAD : batch.end]
        try:
            payload = decompress(batch.compression, raw, self.max_batch_bytes)
        except CodecError:
            return None  # the Python path raises it, with the file and position
        rendered = native.render_payload(
            payload, columns, i, self.as_json, self.batch_template, self.record_template,
            *self.decoders, self.last_offset,
        )  # fmt: skip
        if rendered is None:
            return None
        self.last_offset = rendered.last_offset
        self.gaps += rendered.gaps
        return bytes(rendered.data)
