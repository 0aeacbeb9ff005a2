"""``kdump metadata PATH [SUBTREE]``: the cluster's metadata image, replayed offline from a KRaft
metadata log (kdump.kraft), as text or one JSON document."""

from __future__ import annotations

import click

from kdump.commands.options import format_option
from kdump.commands.output import pipe_safe
from kdump.errors import ExitCode


@click.command("metadata")
@click.argument("path", type=click.Path())
@click.argument("subtree", required=False, metavar="[/image/...]")
@format_option("text", "json")
@click.option(
    "--show-secrets",
    is_flag=True,
    help="Print SCRAM credentials, delegation tokens and sensitive config values "
    "(redacted by default, as the metadata shell's Normal redaction).",
)
@click.pass_context
def metadata(
    ctx: click.Context, path: str, subtree: str | None, fmt: str, show_secrets: bool
) -> None:
    """Replay a KRaft metadata log into the cluster's image, as a broker or controller loads
    it: the newest snapshot, then the log's records after it. PATH: a __cluster_metadata-0
    directory, a log dir holding one, or one snapshot (.checkpoint). SUBTREE: a metadata shell
    path (/image/topics/byName/orders/0) to print only that. Reads only; no broker needed, the
    directory of a running one may be read.

    Exit codes: 0 the image as the broker would load it; 2 an image all the same, but a damaged
    batch ended the replay, a snapshot did not read or records were refused (each said on
    stderr with its file and byte or offset); 3 no metadata log there, or a SUBTREE not in it.
    """
    from kdump.commands.output import Output
    from kdump.kraft.loader import load_messages, load_metadata
    from kdump.kraft.node import image_json, select
    from kdump.render.metadata import json_lines, load_lines, tree_lines

    load = load_metadata(path)
    snapshot = None if load.snapshot is None else load.snapshot.path
    doc = image_json(load.image, snapshot, show_secrets)
    value = doc if subtree is None else select(doc, load.image, subtree)
    for message in load_messages(load):
        click.echo(f"kdump: {message}", err=True)
    code = ExitCode.OK if load.is_clean else ExitCode.ERRORS
    with pipe_safe(code):
        if fmt == "json":
            lines = json_lines(value)
        else:
            lines = tree_lines(value) if subtree is not None else load_lines(load, doc)
        out = Output("json" if fmt == "json" else "text")  # the image's names are the broker's
        for line in lines:
            out.line(line)
        out.flush()
    ctx.exit(code)
