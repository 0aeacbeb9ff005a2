"""`kdump salvage`: keep the whole, valid batches a recovery cut would throw away.

Exit codes: 0 done (something salvaged, or nothing damaged: zeros a power loss left are no
damage), 2 damage with nothing whole after it, 3 a usage or I/O problem.
"""

from __future__ import annotations

from itertools import chain
from pathlib import Path

import click

from kdump.commands.output import echo_on
from kdump.errors import ExitCode
from kdump.format.names import kept_what, parse_kept_log
from kdump.render.repair import leftover_lines
from kdump.render.shell import program, shell_word
from kdump.repair.apply import refuse_side_dir
from kdump.repair.files import LocalPartition, local_partitions, remove_leftovers
from kdump.repair.plan import resolve_targets
from kdump.repair.salvage import (
    NotYetRecovered,
    SalvagedSegment,
    kept_elsewhere,
    not_yet_recovered,
    salvage_kept,
    salvage_partition,
)


@click.command("salvage")
@click.argument("paths", nargs=-1, required=True)  # partitions, log dirs, or kept log files
@click.option(
    "--output-dir",
    required=True,
    type=click.Path(file_okay=False, path_type=Path),
    help="Write DIR/<partition>/<first offset>.jsonl (records) and .log (their batches).",
)
@click.option(
    "--max-output-bytes",
    type=click.IntRange(min=1),
    default=None,
    help="Largest JSON Lines file per segment [default: 100x the bytes of the batches it "
    "salvages, at least 64 MiB: real records stay below, a decompression bomb does not].",
)
@click.pass_context
def salvage(
    ctx: click.Context, paths: tuple[str, ...], output_dir: Path, max_output_bytes: int | None
) -> None:
    """Scan the bytes `kdump recover` would cut (from each log's first invalid batch to its
    end) for batches that are whole and valid again after the damage, and export their
    records as JSON Lines (key, value and headers with every byte kept, as dump's JSON: UTF-8
    text or base64, named by key_encoding, value_encoding and each header's value_encoding;
    offsets, timestamps, producer fields) plus a .log of those batches. Transactional and
    control records are marked "reproducible": false: they cannot be produced again as they
    are. Reads only."""
    kept: list[Path] = []
    named: list[str] = []
    for p in paths:
        if parse_kept_log(Path(p).name) and Path(p).is_file():
            kept.append(Path(p))
        elif (elsewhere := kept_elsewhere(Path(p))) is not None:
            kept += elsewhere  # what recover --backup-dir kept
        else:
            named.append(p)
    targets = resolve_targets(named) if named else []
    sources = local_partitions(targets)
    sources += [LocalPartition(p.parent, p.parent.parent) for p in kept]
    refuse_side_dir(output_dir, "--output-dir", sources)
    outputs = {output_dir / t.path.name for t in sources}
    for line in leftover_lines(remove_leftovers(outputs, follow=False)):
        echo_on(line)
    try:
        runs = chain(
            (
                (
                    salvage_partition(t, output_dir, max_output_bytes),
                    not_yet_recovered(t),
                    t.location,
                )
                for t in targets
            ),
            (((salvage_kept(p, output_dir, max_output_bytes),), None, "") for p in kept),
        )
        seen = damaged = saved = 0
        for results, unseen, location in runs:
            for result in results:
                loss = result.loss
                if loss is None:
                    continue
                seen += 1
                damaged += _show(result)
                saved += result.records is not None
            if unseen is not None:
                seen += 1
                echo_on(_not_yet_line(location, unseen, output_dir))
        if not seen:
            echo_on(
                "nothing to salvage: no log has damage a recovery would cut, and no kdump recover "
                "kept any log bytes here"
            )
    finally:
        for target in targets:
            target.close()  # the maps it read (in-process callers run many)
    ctx.exit(ExitCode.ERRORS if damaged and not saved else ExitCode.OK)


def _show(result: SalvagedSegment) -> bool:
    """What was read, what was skipped and written; True where the bytes hold damage (not
    only zeros)."""
    loss = result.loss
    assert loss is not None
    echo_on(f"{result.segment}: {_source(result)}")
    if loss.zeros:
        echo_on("  nothing to salvage: zeros hold no records, nothing of them is lost")
        return False
    of = "" if result.kept is None or not result.kept.cut_at else " of the original log"
    for part in result.damaged:
        echo_on(f"  damaged bytes {part.start}..{part.end}{of} skipped")
    if result.records is not None and result.log is not None:
        echo_on(f"  wrote {result.records} ({result.record_count} records)")
        echo_on(f"  wrote {result.log} ({loss.salvageable.bytes} bytes of batches)")
    else:
        echo_on("  nothing to salvage: no whole, valid batch in them")
    return True


def _not_yet_line(location: str, unseen: NotYetRecovered, output_dir: Path) -> str:
    """Salvage before recover: the later segments recovery deletes, not read yet, and the two
    commands that get their records (recover keeps them; salvage then reads them back)."""
    bases = ", ".join(str(b) for b in unseen.segments)
    where = shell_word(location)
    return (
        f"{location}: not read yet: {len(unseen.segments)} later segment(s) ({bases}; offsets "
        f"{unseen.first_offset}..{unseen.last_offset}), which kdump recover deletes after its "
        f"cut in {unseen.cut_segment}, as the broker's recovery does, and keeps: recover, then "
        "salvage again to write out their records too:\n"
        f"  {program()} recover {where}\n"
        f"  {program()} salvage {where} --output-dir {shell_word(str(output_dir))}"
    )


def _source(result: SalvagedSegment) -> str:
    """What the bytes read are, and what they hold."""
    loss, kept = result.loss, result.kept
    assert loss is not None
    if kept is None:
        return f"a cut at position {loss.position} {loss.describe()}"
    return f"{kept_what(kept)}: {loss.describe('holds')}"
