"""kdump's commands, one module each, registered in one table and loaded only when used, so a
run imports what its own command needs and nothing more (start-up stays short)."""

COMMANDS: dict[str, str] = {
    "compact": "kdump.commands.compact:compact",
    "dump": "kdump.commands.dump:dump",
    "explain": "kdump.commands.explain:explain",
    "lookup": "kdump.commands.lookup:lookup",
    "metadata": "kdump.commands.metadata:metadata",
    "rebuild-index": "kdump.commands.repair:rebuild_index",
    "recover": "kdump.commands.repair:recover",
    "replicas": "kdump.commands.replicas:replicas",
    "report": "kdump.commands.report:report",
    "salvage": "kdump.commands.salvage:salvage",
    "spark": "kdump.commands.spark:spark",
    "startup": "kdump.commands.startup:startup",
    "tiered": "kdump.commands.tiered:tiered",
    "trim-index": "kdump.commands.repair:trim_index",
    "txn": "kdump.commands.txn:txn",
    "verify": "kdump.commands.verify:verify",
}
"""Command name -> "module:attribute" of its click command."""

RUN_FILES = "kdump.commands.dump:run_files"
"""``kdump --files A,B`` (kafka-dump-log.sh's command line, on the root command): the dump,
imported when files are given."""
