"""Issue 44 point 8: ``kdump dump --jobs N`` and ``kdump --files ... --jobs N``: forked workers
write their pieces (files, and local logs cut where batches start) to standard output and error
themselves, in turn. Whatever N, the bytes on both streams and the exit code are one process's:
each case runs as a user runs it (a child process, real pipes) with --jobs 1 and --jobs 2.

The logs are bigger than a piece (kdump.render.dump_jobs.PIECE_BYTES), so they are cut: the
text dump's non-consecutive offsets across a cut, a record that does not decode in a later
piece (it ends its file's dump there, as one process stops), a torn tail, --max-bytes and a
filter all come out as one process gives them.
"""

from __future__ import annotations

import fcntl
import os
import struct
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from batchbytes import fix_crc
from clirun import on_terminal, run_kdump
from explainbuild import batch

from kdump import forked
from kdump.commands.output import PIPE_BYTES
from kdump.errors import ExitCode, KdumpError
from kdump.forked import Piece
from kdump.render.dump_jobs import PIECE_BYTES

REPO = Path(__file__).resolve().parent.parent


def plain_log(path: Path, size: int, *, gap_every: int = 0, compacted: bool = False) -> Path:
    """A log of ~``size`` bytes of batches of 100 records; every ``gap_every``-th batch leaves
    offsets out before it; ``compacted``: each batch's last record's offset past its count."""
    records = 100
    template = batch(0, records, value_size=120, last_offset=records + 4 if compacted else None)
    step = template.last_offset + 1
    data = bytearray()
    base = 0
    n = 0
    while len(data) < size:
        if gap_every and n and n % gap_every == 0:
            base += 7
        one = bytearray(template.data)
        struct.pack_into(">q", one, 0, base)  # the base offset lies outside the CRC
        data += one
        base += step
        n += 1
    path.write_bytes(bytes(data))
    return path


def _kdump(*args: str, stdout: int | None = None) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [sys.executable, "-m", "kdump", *args],
        cwd=REPO,
        stdout=subprocess.PIPE if stdout is None else stdout,
        stderr=subprocess.PIPE,
        check=False,
    )


def _same(*args: str) -> subprocess.CompletedProcess[bytes]:
    """``kdump ARGS`` with --jobs 1 and --jobs 2: the same bytes on both streams, the same exit
    code; the --jobs 2 run."""
    one = _kdump(*args, "--jobs", "1")
    two = _kdump(*args, "--jobs", "2")
    assert two.returncode == one.returncode, two.stderr.decode()
    assert two.stderr == one.stderr
    assert two.stdout == one.stdout
    return two


@pytest.fixture(scope="module")
def logs(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("jobs")
    plain_log(d / "00000000000000000000.log", 3 * PIECE_BYTES + 12345, gap_every=97)
    (d / "compacted").mkdir()
    plain_log(d / "compacted" / "00000000000000000000.log", 2 * PIECE_BYTES + 99, compacted=True)
    return d


@pytest.mark.parametrize(
    "options",
    [
        ["--deep-iteration", "--print-data-log"],
        ["--deep-iteration"],
        [],
        ["--deep-iteration", "--offset-range", "1000:2000"],
        ["--deep-iteration", "--max-bytes", str(PIECE_BYTES + 777)],
    ],
    ids=["data", "deep", "shallow", "filter", "max-bytes"],
)
def test_the_text_dump_is_the_same_in_two_processes(logs: Path, options: list[str]) -> None:
    files = f"{logs / '00000000000000000000.log'},{logs / 'compacted/00000000000000000000.log'}"
    ran = _same("--files", files, *options)
    assert ran.returncode == 0 or b"Non-consecutive offsets" in ran.stderr
    if options and options[0] == "--deep-iteration" and len(options) <= 2:
        # offsets 7 apart every 97 batches, and inside each compacted batch: across the cuts too
        assert ran.stderr.count(b" is followed by ") > 40


def test_the_json_lines_dump_is_the_same_in_two_processes(logs: Path) -> None:
    _same("dump", str(logs / "00000000000000000000.log"), "--deep-iteration", "--format", "jsonl")


def test_a_record_that_does_not_decode_in_a_later_piece_ends_its_file(tmp_path: Path) -> None:
    """One process stops a file's dump at the first record that does not decode: the pieces
    after it are dropped, the next file is dumped."""
    log = plain_log(tmp_path / "00000000000000000000.log", 3 * PIECE_BYTES)
    data = bytearray(log.read_bytes())
    at = 2 * PIECE_BYTES + 5000
    position = 0
    while True:  # the batch that holds ``at``
        (length,) = struct.unpack_from(">i", data, position + 8)
        if position + 12 + length > at:
            break
        position += 12 + length
    data[position + 61] = 0x7F  # the first record's length varint: past the batch
    fix_crc(data, position)
    log.write_bytes(bytes(data))
    (tmp_path / "next").mkdir()
    other = plain_log(tmp_path / "next" / "00000000000000000000.log", 1000)
    ran = _same("--files", f"{log},{other}", "--deep-iteration")
    assert ran.returncode != 0
    assert ran.stderr.count(b"kdump: ") == 1
    assert ran.stdout.count(b"Dumping ") == 2


def test_a_torn_tail_is_said_once_at_the_end(tmp_path: Path) -> None:
    log = plain_log(tmp_path / "00000000000000000000.log", 2 * PIECE_BYTES)
    with open(log, "ab") as f:
        f.write(b"\x00\x00\x00\x00\x00\x00\x01\x00\x00\x00\x20torn")
    ran = _same("--files", str(log))
    assert ran.stdout.count(b"invalid bytes at the end") == 1


def _into_pipe(log: str, jobs: str) -> tuple[subprocess.Popen[bytes], int, int]:
    """A deep dump of ``log`` with ``--jobs`` into a pipe: the child, the pipe's reading end
    and its size before the child ran."""
    read, write = os.pipe()
    size = fcntl.fcntl(read, fcntl.F_GETPIPE_SZ) if hasattr(fcntl, "F_GETPIPE_SZ") else 0
    child = subprocess.Popen(
        [sys.executable, "-m", "kdump", "--files", log, "--deep-iteration", "--jobs", jobs],
        cwd=REPO,
        stdout=write,
        stderr=subprocess.PIPE,
    )
    os.close(write)
    return child, read, size


def test_a_reader_that_leaves_early_ends_the_run_quietly(logs: Path) -> None:
    child, read, _ = _into_pipe(str(logs / "00000000000000000000.log"), "2")
    with os.fdopen(read, "rb") as pipe:
        first = pipe.readline()
    _, err = child.communicate(timeout=60)
    assert first.startswith(b"Dumping ")
    assert child.returncode == 141, err.decode()
    assert err == b""


@pytest.mark.skipif(not hasattr(fcntl, "F_GETPIPE_SZ"), reason="Linux's pipe sizes")
@pytest.mark.parametrize("jobs", ["1", "2"])
def test_bulk_output_widens_the_pipe_its_workers_write(logs: Path, jobs: str) -> None:
    """The workers of --jobs write standard output themselves: its pipe is widened for them as
    for one process's bulk (kdump.commands.output.PIPE_BYTES), not left at the system's 64 KiB
    (each worker then waited on the reader every 64 KiB)."""
    child, read, before = _into_pipe(str(logs / "00000000000000000000.log"), jobs)
    with os.fdopen(read, "rb") as pipe:
        got = pipe.read()
        size = fcntl.fcntl(pipe.fileno(), fcntl.F_GETPIPE_SZ)
    _, err = child.communicate(timeout=60)
    assert child.returncode == ExitCode.ERRORS, err.decode()  # the gaps (gap_every), said
    assert got.startswith(b"Dumping ")
    assert before < PIPE_BYTES <= size


def test_jobs_says_why_it_runs_in_one_process_where_it_cannot_hand_its_output_over(
    logs: Path,
) -> None:
    """In-process (a test's captured streams), there is no file descriptor for the workers."""
    log = str(logs / "00000000000000000000.log")
    one = run_kdump(["--files", log, "--jobs", "1"])
    two = run_kdump(["--files", log, "--jobs", "2"])
    assert two.stdout == one.stdout and two.exit_code == one.exit_code == 0
    assert two.stderr == (
        "kdump: --jobs 2: standard output and error are not files this process can hand to "
        "its workers; dumping in one process\n"
    )


@pytest.mark.parametrize(
    ("options", "code"),
    [
        (["--files", "{log}", "--deep-iteration", "--print-data-log"], 2),
        (["dump", "{log}", "--deep-iteration", "--format", "jsonl"], 0),
    ],
    ids=["text", "jsonl"],
)
def test_the_output_goes_to_a_file_whole(
    logs: Path, tmp_path: Path, options: list[str], code: int
) -> None:
    """Two processes writing one file in turn: every byte once, in order (the pipe's case is
    every other test here)."""
    args = [o.format(log=logs / "00000000000000000000.log") for o in options]
    outputs = []
    for jobs in ("1", "2"):
        out = tmp_path / f"out-{jobs}"
        with open(out, "wb") as f:
            ran = _kdump(*args, "--jobs", jobs, stdout=f.fileno())
        outputs.append((ran.returncode, ran.stderr, out.read_bytes()))
    assert outputs[0] == outputs[1]
    # the text dump's summary: the log's gaps, non-consecutive offsets as Kafka's tool says
    assert outputs[1][0] == code and outputs[1][2].count(b"\n") > 90_000


class _Report:
    def __init__(self, index: int, ended: bool) -> None:
        self.index, self.ended = index, ended


def _render(work: tuple[int, int, str]) -> Iterator[tuple[int, object]]:
    """A piece's output: chunks of several sizes on both streams; ``how``: "ends" (its group
    ends with it), "fails" (an error after what it wrote), "" (written)."""
    index, _group, how = work
    for k in range(4):
        yield 1, f"<{index}.{k}>".encode() * (k * 9 + 1)
        if k == 1:
            yield 2, f"note {index}\n".encode()
    if how == "fails":
        raise KdumpError(f"piece {index} failed")
    yield 0, _Report(index, how == "ends")


def _one_process(pieces: list[Piece]) -> tuple[bytes, bytes, list[int], str]:
    """What writing the pieces in turn gives, worked out in order in this process."""
    out, err, reports, ended = bytearray(), bytearray(), [], -1
    for piece in pieces:
        if piece.group == ended:
            continue
        try:
            for stream, data in _render(piece.work):
                if stream == 0:
                    assert isinstance(data, _Report)
                    reports.append(data.index)
                    ended = piece.group if data.ended else ended
                else:
                    (out if stream == 1 else err).extend(data)  # type: ignore[arg-type]
        except KdumpError as e:
            return bytes(out), bytes(err), reports, str(e)
    return bytes(out), bytes(err), reports, ""


@pytest.mark.parametrize("buffer", [1, 200, 1 << 20], ids=["no-room", "a-piece", "many-pieces"])
@pytest.mark.parametrize(
    "hows",
    [
        ["", "", "", "", "", "", "", ""],
        ["", "ends", "", "", "", "", "", ""],  # group 0's pieces 2 and 3 are dropped
        ["", "ends", "fails", "", "", "", "", ""],  # a failure in a dropped piece is not one
        ["", "", "", "", "", "fails", "", ""],  # the run ends with it
    ],
    ids=["written", "ends-group", "fails-dropped", "fails"],
)
def test_workers_write_in_turn_whatever_they_render_ahead(
    buffer: int,
    hows: list[str],
    capfdbinary: pytest.CaptureFixture[bytes],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Two workers, each rendering its pieces ahead of their turns (as much as BUFFER_BYTES
    lets them: none, a piece, all of them), hand the turn to each other: the bytes on both
    streams, the reports and where a failure stops the run are one process's."""
    monkeypatch.setattr(forked, "BUFFER_BYTES", buffer)
    pieces = [Piece(i // 4, (i, i // 4, how)) for i, how in enumerate(hows)]
    out, err, reports, failure = _one_process(pieces)
    capfdbinary.readouterr()
    got: list[int] = []
    raised = ""
    try:
        for report in forked.write_in_turn(_render, pieces, 2, lambda: None):
            got.append(report.index)
    except KdumpError as e:
        raised = str(e)
    written = capfdbinary.readouterr()
    assert (written.out, written.err) == (out, err)
    assert (got, raised) == (reports, failure)


def test_jobs_on_a_terminal_runs_one_process_that_escapes_what_it_shows(tmp_path: Path) -> None:
    """A terminal shows a record's control bytes escaped (kdump.untrusted), which the workers'
    own writes would not do; and two writers make a terminal no faster: one process."""
    log = tmp_path / "00000000000000000000.log"
    log.write_bytes(batch(0, [(b"k", b"\x1b]0;owned\x07\x1b[31mred")]).data)
    args = ["--files", str(log), "--print-data-log"]
    one = on_terminal([*args, "--jobs", "1"], styles=True)
    two = on_terminal([*args, "--jobs", "2"], styles=True)
    assert one.exit_code == two.exit_code == 0
    note = "kdump: --jobs 2: standard output is a terminal; dumping in one process\n"
    assert two.stdout == note + one.stdout and "\x1b" not in two.stdout
    assert "payload: \\x1b]0;owned\\x07\\x1b[31mred" in two.stdout


def test_jobs_runs_one_process_for_less_than_a_piece_of_work(tmp_path: Path) -> None:
    """Files smaller than a piece (PIECE_BYTES in all) are dumped by one process in a few
    milliseconds, about what starting workers costs: one process, and --jobs says so."""
    small = plain_log(tmp_path / "00000000000000000000.log", PIECE_BYTES // 2)
    args = ["--files", str(small), "--deep-iteration"]
    one = _kdump(*args, "--jobs", "1")
    two = _kdump(*args, "--jobs", "2")
    assert two.returncode == one.returncode == 0 and two.stdout == one.stdout
    said = b"kdump: --jobs 2: the files hold less than a piece of work (4 MiB) to share; "
    assert two.stderr == said + b"dumping in one process\n" + one.stderr


def test_jobs_runs_one_process_where_it_may_use_one_cpu(logs: Path) -> None:
    """Two processes on one CPU take turns at it: no faster than one, so one runs."""
    log = str(logs / "00000000000000000000.log")
    one = _kdump("--files", log, "--deep-iteration", "--jobs", "1")
    cpu = min(os.sched_getaffinity(0))
    pinned = subprocess.run(
        [sys.executable, "-m", "kdump", "--files", log, "--deep-iteration", "--jobs", "2"],
        cwd=REPO,
        capture_output=True,
        check=False,
        preexec_fn=lambda: os.sched_setaffinity(0, {cpu}),
    )
    assert pinned.returncode == one.returncode  # 2: the log leaves offsets out
    assert pinned.stdout == one.stdout
    said = b"kdump: --jobs 2: this process may run on one CPU only; dumping in one process\n"
    assert pinned.stderr == said + one.stderr


@pytest.mark.skipif(not os.path.exists("/dev/full"), reason="no /dev/full here")
def test_a_full_disk_ends_the_run_as_one_process_words_it(logs: Path) -> None:
    """A write refused (ENOSPC: /dev/full) in a worker's turn: the one line and the exit code
    of one process, no "unexpected" error, no traceback."""
    log = str(logs / "00000000000000000000.log")
    ran = []
    for jobs in ("1", "2"):
        with open("/dev/full", "wb") as full:
            ran.append(
                _kdump("--files", log, "--deep-iteration", "--jobs", jobs, stdout=full.fileno())
            )
    assert ran[0].returncode == ran[1].returncode == 3
    assert ran[0].stderr == ran[1].stderr == b"kdump: No space left on device\n"


def test_a_process_that_calls_main_after_forking_writers_is_not_ended_by_it(
    capfdbinary: pytest.CaptureFixture[bytes],
) -> None:
    """The kdump program ends without the interpreter's clean-up once its workers wrote its
    output (kdump.cli); a process that only calls main (this test's) is not the program, and
    main returns to it, whatever it forked before."""
    pieces = [Piece(0, (0, 0, "")), Piece(0, (1, 0, ""))]
    assert [r.index for r in forked.write_in_turn(_render, pieces, 2, lambda: None)] == [0, 1]
    capfdbinary.readouterr()
    ran = run_kdump(["--version"])
    assert ran.exit_code == 0 and ran.stdout.startswith("kdump, version ")
