"""`kdump salvage`: keep the whole, valid batches a recovery cut would throw away.

Exit codes: 0 done (something salvaged, or nothing damaged), 2 damage with nothing whole after
it, 3 a usage or I/O problem.
"""

from __future__ import annotations

from itertools import chain
from pathlib import Path

import click

from kdump.discovery import LocalPartition, local_partitions
from kdump.errors import ExitCode
from kdump.render.repair import leftover_lines
from kdump.repair.apply import refuse_side_dir
from kdump.repair.files import remove_leftovers
from kdump.repair.plan import resolve_targets
from kdump.repair.salvage import CUT_SUFFIX, salvage_cut_file, salvage_partition


@click.command("salvage")
@click.argument("paths", nargs=-1, required=True)  # partitions, log dirs, or kept cut files
@click.option(
    "--output-dir",
    required=True,
    type=click.Path(file_okay=False, path_type=Path),
    help="Write DIR/<partition>/<first offset>.jsonl (records) and .log (their batches).",
)
@click.pass_context
def salvage(ctx: click.Context, paths: tuple[str, ...], output_dir: Path) -> None:
    """Scan the bytes `kdump recover` would cut (from each log's first invalid batch to its
    end) for batches that are whole and valid again after the damage, and export their
    records as JSON Lines (key, value, header values in base64; offsets, timestamps, producer
    fields) plus a .log of those batches. Transactional and control records are marked
    "reproducible": false: they cannot be produced again as they are. Reads only."""
    cut_files = [Path(p) for p in paths if CUT_SUFFIX in Path(p).name and Path(p).is_file()]
    named = [p for p in paths if Path(p) not in cut_files]
    targets = resolve_targets(named) if named else []
    sources = local_partitions(targets)
    sources += [LocalPartition(p.parent, p.parent.parent) for p in cut_files]
    refuse_side_dir(output_dir, "--output-dir", sources)
    outputs = {output_dir / t.path.name for t in sources}
    for line in leftover_lines(remove_leftovers(outputs, follow=False)):
        click.echo(line)
    results = chain(
        (r for t in targets for r in salvage_partition(t, output_dir)),
        (salvage_cut_file(p, output_dir) for p in cut_files),
    )
    damaged = kept = 0
    for result in results:
        loss = result.loss
        if loss is None:
            continue
        damaged += 1
        where = f"a cut at position {loss.position}" if loss.position else "the cut"
        click.echo(f"{result.segment}: {where} {loss.describe()}")
        for part in result.damaged:
            click.echo(f"  damaged bytes {part.start}..{part.end} skipped")
        if result.records is not None and result.log is not None:
            kept += 1
            click.echo(f"  wrote {result.records} ({result.record_count} records)")
            click.echo(f"  wrote {result.log} ({loss.salvageable.bytes} bytes of batches)")
    if not damaged:
        click.echo("nothing to salvage: no log has damage a recovery would cut")
    ctx.exit(ExitCode.ERRORS if damaged and not kept else ExitCode.OK)
