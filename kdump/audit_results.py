"""Audits across a fleet of brokers: each broker's cron writes its ``kdump verify --format json``
result (``write_audit``: a file replaced whole, or one object PUT), and ``kdump report`` reads
them back (``read_fleet``) to draw one page for every broker without reading a segment again.

A result names its broker by the ``run`` object's ``broker_id`` and ``cluster_id``, which verify
takes from the log dirs' ``meta.properties`` (kdump.run.identify); a result without one is
known by its host. Of each broker's results the newest (``run.started``) is the one shown; a
broker whose newest is older than ``stale_after_ms`` is flagged stale: its cron stopped, or
cannot write.
"""

from __future__ import annotations

import hashlib
import os
import re
import string
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from kdump import readback
from kdump.checks.findings import Finding, Severity, read_finding
from kdump.errors import InputError, KdumpError, ReadBackError
from kdump.format.names import is_segment_name
from kdump.storage import ObjectStore, outputs
from kdump.tuples import NamedTuple
from kdump.untrusted import path_part

AUDIT_SUFFIX = ".json"

TARGET_FIELDS = ("broker_id", "cluster_id", "host", "started", "log_dirs")
"""What ``--output`` may name in braces: ``s3://audits/{cluster_id}/{broker_id}/{started}.json``."""

DEFAULT_TEMPLATE = "{cluster_id}/{broker_id}/{started}.json"
"""The name of a result under an ``--output`` that is a directory or a prefix (``/fleet/``,
``s3://bucket/audits/``): one per run, kept apart by broker."""

DEFAULT_STALE_AFTER_MS = 36 * 3600 * 1000
"""A daily cron's result, with half a day's slack for a slow or late run."""

STARTED_FORMAT = "%Y%m%dT%H%M%S"


def started_name(started_ms: int) -> str:
    """A run's start as part of a name: ``20261127T093644123Z`` (UTC, to the millisecond):
    sortable, a valid file and object name everywhere, one per run."""
    return time.strftime(STARTED_FORMAT, time.gmtime(started_ms // 1000)) + (
        f"{started_ms % 1000:03d}Z"
    )


def audit_target(template: str, run: dict[str, Any]) -> str:
    """``template`` with the run's fields filled in (``started`` as ``started_name``;
    ``log_dirs`` as ``log_dirs_name``); a broker or cluster not known (no meta.properties) is
    ``unknown``. Every field is one name of letters, digits, ``.``, ``-`` and ``_``
    (kdump.untrusted.path_part): a ``cluster.id`` of ``../victim`` in meta.properties, written
    by the broker's user, cannot steer where a root cron writes (issue 39)."""
    broker_id = run.get("broker_id")
    values = {
        "broker_id": "unknown" if not isinstance(broker_id, int) else str(broker_id),
        "cluster_id": path_part(str(run.get("cluster_id") or "unknown")),
        "host": path_part(str(run.get("host") or "unknown")),
        "started": started_name(int(run["started"])),
        "log_dirs": log_dirs_name(log_dirs_of(run)),
    }
    filled = template.format_map(values)
    # cannot happen with path_part's names; checked all the same, before anything is written
    parts, before = filled.split("/"), template.split("/")
    if len(parts) != len(before) or parts.count("..") != before.count(".."):
        raise InputError(template, f"its fields made {filled}, a path of other directories")
    return filled


def _fixed_part(template: str) -> str:
    """The directory (or prefix) of ``template`` before its first field ("" for none)."""
    head = template.split("{", 1)[0]
    return head.rsplit("/", 1)[0] + "/" if "/" in head else ""


def log_dirs_of(run: dict[str, Any]) -> frozenset[str]:
    """The paths of a verify run's log dirs (its JSON ``run`` object)."""
    dirs = run.get("log_dirs") or []
    return frozenset(
        d["path"] for d in dirs if isinstance(d, dict) and isinstance(d.get("path"), str)
    )


LOG_DIRS_NAME_MAX = 120
"""Characters of ``log_dirs_name`` (a file name holds 255 bytes): longer, it ends in a digest."""


def log_dirs_name(paths: Iterable[str]) -> str:
    """The log dirs as part of a file or object name: each path's runs of characters other than
    letters, digits, ``.`` and ``-`` as ``_``, joined by ``+`` (``/data1/kafka-logs`` and
    ``/data2/kafka-logs``: ``data1_kafka-logs+data2_kafka-logs``); ``none`` without one. Past
    LOG_DIRS_NAME_MAX characters, cut and ended by a digest of the whole."""
    names = [re.sub(r"[^A-Za-z0-9.-]+", "_", p).strip("_") for p in sorted(paths)]
    name = "+".join(path_part(n, "_") for n in names) or "none"
    if len(name) > LOG_DIRS_NAME_MAX:
        digest = hashlib.sha256(name.encode()).hexdigest()[:16]
        name = f"{name[: LOG_DIRS_NAME_MAX - 17]}-{digest}"
    return name


def refuse_replacing(target: str, run: dict[str, Any], store: ObjectStore) -> None:
    """An error where ``target`` (a name without fields: one file, replaced by every run) holds
    the verify result of a log dir this run does not verify: replacing it would drop that log
    dir from the fleet's page. A result of the same log dirs (or of fewer) is replaced."""
    if not outputs.may_exist(target):
        return
    try:
        before = parse_audit(target, _read(target, store))
    except KdumpError:  # none there, or not a result: written as before
        return
    lost = before.run.log_dirs - log_dirs_of(run)
    if lost:
        mine = ", ".join(sorted(log_dirs_of(run))) or "none"
        raise InputError(
            target,
            f"holds the result of log dir(s) {', '.join(sorted(lost))}, which this run "
            f"({mine}) does not verify; not replaced: put {{started}} in --output to keep a "
            "result per run (kdump report shows the newest of each log dir), or verify all of "
            "the broker's log dirs in one run",
        )


def target_fields(template: str) -> set[str]:
    try:
        return {name for _, name, _, _ in string.Formatter().parse(template) if name is not None}
    except ValueError as e:
        raise InputError(template, f"cannot fill it in: {e}") from None


def output_template(target: str) -> str:
    """``--output`` as a template: a directory or a prefix (``/fleet/``, an existing directory,
    ``s3://bucket/audits/``) gets DEFAULT_TEMPLATE beneath it."""
    if target.endswith("/") or outputs.is_local_directory(target):
        return target.rstrip("/") + "/" + DEFAULT_TEMPLATE
    return target


def check_target_template(template: str) -> None:
    """A usage error for a field ``--output`` does not know, or fields that cannot tell two runs
    apart (before any work is done): with fields, each run writes a name of its own, which
    ``{started}`` makes so; a template of ``{host}`` alone would have the second run of a host
    replace the first's result (issue 44). A name without fields is one file, replaced."""
    names = target_fields(template)
    unknown = sorted(names - set(TARGET_FIELDS))
    if unknown:
        known = ", ".join("{" + f + "}" for f in TARGET_FIELDS)
        raise InputError(template, f"unknown field {{{unknown[0]}}} (known: {known})")
    if names and "started" not in names:
        raise InputError(
            template,
            f"its fields ({', '.join('{' + n + '}' for n in sorted(names))}) cannot tell two "
            "runs apart: the second run on a host would replace the first's result; put "
            f"{{started}} in it (a directory gets {DEFAULT_TEMPLATE} beneath it)",
        )


def check_target_directory(template: str) -> None:
    """A local ``--output`` (a path or ``file://``) that cannot be written, before any work is
    done: the directory it starts in (before its first field; a plain path's own) must be one
    this user may write in. The directories its fields name are made as the result is written
    (``/fleet/{cluster_id}/{broker_id}/{started}.json``: ``/fleet`` must be there)."""
    path = outputs.local_path(template)
    if path is None:
        return
    directory = (_fixed_part(path) if "{" in path else os.path.dirname(path)) or "."
    outputs.check_writable(template, directory)


def write_audit(target: str, text: str, store: ObjectStore, own_name: bool = False) -> str:
    """Write a result to ``target`` (a path or an object's URL), whole or not at all; where it
    went (kdump.storage.outputs.write_whole: ``own_name`` never replaces one there)."""
    return outputs.write_whole(target, text, store, own_name)


# -- reading them back -------------------------------------------------------------------------


class BrokerKey(NamedTuple):
    cluster_id: str | None
    broker_id: int | None
    host: str | None
    """Only where the broker is not known: its results are then told apart by host."""

    def label(self) -> str:
        if self.broker_id is None:
            return f"host {self.host or 'unknown'} (no broker.id)"
        return f"broker {self.broker_id}"


@dataclass(frozen=True)
class AuditRun:
    """What the fleet reads of a result's ``run`` object."""

    started: int
    """Epoch milliseconds."""
    host: str | None
    broker_id: int | None
    cluster_id: str | None
    log_dirs: frozenset[str]


@dataclass(frozen=True)
class DamagedFrom:
    segment: int
    position: int
    offset: int


@dataclass(frozen=True)
class PartitionRow:
    """A row of a result's ``summary.by_partition``: what the fleet page shows of it."""

    path: str
    topic: str | None
    partition: int | None
    segments: int
    bytes: int
    log_start_offset: int | None
    log_end_offset: int | None
    errors: int
    warnings: int
    damaged_from: DamagedFrom | None

    @property
    def status(self) -> str:
        """Recovery cuts it (damaged), errors, warnings, or ok."""
        if self.damaged_from is not None:
            return "damaged"
        return "errors" if self.errors else "warnings" if self.warnings else "ok"


@dataclass(frozen=True)
class Audit:
    """One verify result, as its broker's cron wrote it, read back typed (``parse_audit``)."""

    source: str
    run: AuditRun
    partitions: tuple[PartitionRow, ...]
    findings: list[Finding]

    @property
    def started(self) -> int:
        return self.run.started

    @property
    def broker(self) -> BrokerKey:
        run = self.run
        return BrokerKey(run.cluster_id, run.broker_id, run.host if run.broker_id is None else None)

    def counts(self) -> dict[str, int]:
        out = {s.value: 0 for s in Severity}
        for f in self.findings:
            out[f.severity.value] += 1
        return out


@dataclass
class BrokerAudit:
    """A broker's newest result (of some of its log dirs, where they are verified one run each:
    ``part``), and how many older ones were read and not shown."""

    newest: Audit
    older: int
    stale: bool
    part: str | None = None
    """The result's log dirs, where the broker's newest results are of different log dirs."""

    def label(self) -> str:
        broker = self.newest.broker.label()
        return broker if self.part is None else f"{broker} ({self.part})"


@dataclass
class FleetAudit:
    brokers: list[BrokerAudit]
    now: int
    stale_after_ms: int
    unreadable: list[KdumpError] = field(default_factory=list)

    def counts(self) -> dict[str, int]:
        out = {s.value: 0 for s in Severity}
        for b in self.brokers:
            for k, v in b.newest.counts().items():
                out[k] += v
        return out


def read_fleet(
    targets: Iterable[str],
    store: ObjectStore,
    now: int,
    stale_after_ms: int = DEFAULT_STALE_AFTER_MS,
) -> FleetAudit:
    """Every verify result under ``targets`` (files, folders, objects, prefixes), each broker's
    newest; what cannot be read or is not a verify result is named in ``unreadable``."""
    audits: list[Audit] = []
    unreadable: list[KdumpError] = []
    targets = list(targets)
    for source in sorted(dict.fromkeys(s for t in targets for s in _sources(t, store, unreadable))):
        try:
            # a file met in a directory is not read through a symlink (one named is)
            found = source not in targets
            audits.append(parse_audit(source, _read(source, store, found), now))
        except KdumpError as e:
            unreadable.append(e)
    by_broker: dict[BrokerKey, list[Audit]] = {}
    for audit in audits:
        by_broker.setdefault(audit.broker, []).append(audit)
    brokers = []
    for results in by_broker.values():
        brokers += _newest_of_each_log_dir(results, now, stale_after_ms)
    brokers.sort(key=lambda b: (_broker_order(b.newest.broker), b.part or ""))
    return FleetAudit(brokers, now, stale_after_ms, unreadable)


def _newest_of_each_log_dir(
    results: list[Audit], now: int, stale_after_ms: int
) -> list[BrokerAudit]:
    """A broker's results shown: newest first, each that is the newest of one of its log dirs
    (a broker whose log dirs are verified one run each shows a result per log dir; a run of all
    of them hides the older ones); the others counted as older."""
    shown: list[BrokerAudit] = []
    covered: set[str] = set()
    for audit in sorted(results, key=lambda a: (a.started, a.source), reverse=True):
        dirs = audit.run.log_dirs
        if not shown or not dirs <= covered:
            shown.append(BrokerAudit(audit, 0, now - audit.started > stale_after_ms))
            covered |= dirs
            continue
        # counted with the newest result shown that covers one of its log dirs
        by = next((b for b in shown if dirs & b.newest.run.log_dirs), shown[0])
        by.older += 1
    if len(shown) > 1:
        for b in shown:
            b.part = ", ".join(sorted(b.newest.run.log_dirs))
    return shown


def _broker_order(key: BrokerKey) -> tuple[str, int, str]:
    return (key.cluster_id or "", -1 if key.broker_id is None else key.broker_id, key.host or "")


def looks_like_audits(target: str, store: ObjectStore) -> bool:
    """Whether ``target`` names verify results (a ``.json`` file or object, or a folder or
    prefix holding some and no Kafka segment file), not partitions to read."""

    if target.endswith(AUDIT_SUFFIX):
        return True
    names = outputs.names_below(target, store)
    if names is None:
        return False
    return any(n.endswith(AUDIT_SUFFIX) for n in names) and not any(map(is_segment_name, names))


def _sources(target: str, store: ObjectStore, unreadable: list[KdumpError]) -> list[str]:
    try:
        found = outputs.files_below(target, AUDIT_SUFFIX, store)
        if not found:
            raise InputError(target, f"holds no verify result ({AUDIT_SUFFIX})")
        return found
    except KdumpError as e:
        unreadable.append(e)
        return []


MAX_RESULT_BYTES = 32 << 20
"""The largest verify result kdump reads back (about 50,000 partitions'): JSON takes ten times
its size as Python objects, so the fleet page of any number of results stays within the
memory bound (2 x --max-batch-bytes + 100 MB)."""
MAX_ROWS = 1 << 20


def _read(source: str, store: ObjectStore, found: bool = False) -> bytes:
    """A result's bytes, at most MAX_RESULT_BYTES (and one more, to tell a larger one);
    ``found``: a file met in a walk of a directory, never followed through a symlink."""
    return outputs.read_bounded(source, MAX_RESULT_BYTES, store, found)


FUTURE_SLACK_MS = 3_600_000
"""How far ahead of this host's clock a result's start may be (another host's clock)."""


def parse_audit(source: str, data: bytes, now: int | None = None) -> Audit:
    """A ``kdump verify --format json`` document, every value the page uses of its type and
    bounds (kdump.readback); anything else is an error naming ``source`` and the value (for
    bad JSON, the byte where it goes wrong). A result that started more than an hour after
    ``now`` (default: this host's clock) is refused: it would be the newest for ever."""
    now = int(time.time() * 1000) if now is None else now
    try:
        doc = readback.mapping(readback.load(data, MAX_RESULT_BYTES), "")
        run = doc.get("run")
        if not isinstance(run, dict) or run.get("command") != "verify":
            raise InputError(source, "not a kdump verify --format json result (no verify run)")
        summary = readback.mapping(readback.field(doc, "summary", ""), "summary")
        rows = readback.field(summary, "by_partition", "summary")
        return Audit(
            source,
            _audit_run(run, now + FUTURE_SLACK_MS),
            tuple(readback.each(rows, "summary.by_partition", MAX_ROWS, _partition_row)),
            readback.each(readback.field(doc, "findings", ""), "findings", MAX_ROWS, read_finding),
        )
    except ReadBackError as e:
        raise InputError(source, str(e)) from None


def _audit_run(run: dict[str, Any], latest: int) -> AuditRun:
    where = "run"
    started = readback.integer(run.get("started"), f"{where}.started", 0, latest)
    dirs = readback.each(run.get("log_dirs", []), f"{where}.log_dirs", MAX_ROWS, _log_dir_path)
    return AuditRun(
        started,
        readback.optional_text(run.get("host"), f"{where}.host", 1024),
        readback.optional_integer(run.get("broker_id"), f"{where}.broker_id", -1, 2**31 - 1),
        readback.optional_text(run.get("cluster_id"), f"{where}.cluster_id", 1024),
        frozenset(d for d in dirs if d is not None),
    )


def _log_dir_path(value: Any, where: str) -> str | None:
    return readback.text(readback.mapping(value, where).get("path"), f"{where}.path")


def _partition_row(value: Any, where: str) -> PartitionRow:
    d = readback.mapping(value, where)
    count = partial(readback.integer, low=0)
    damaged = d.get("damaged_from")
    if damaged is not None:
        at = f"{where}.damaged_from"
        m = readback.mapping(damaged, at)
        damaged = DamagedFrom(
            readback.integer(m.get("segment"), f"{at}.segment"),
            readback.integer(m.get("position"), f"{at}.position", 0),
            readback.integer(m.get("offset"), f"{at}.offset"),
        )
    return PartitionRow(
        readback.text(d.get("path"), f"{where}.path"),
        readback.optional_text(d.get("topic"), f"{where}.topic", 1024),
        readback.optional_integer(d.get("partition"), f"{where}.partition", 0, 2**31 - 1),
        count(d.get("segments", 0), f"{where}.segments"),
        count(d.get("bytes", 0), f"{where}.bytes"),
        readback.optional_integer(d.get("log_start_offset"), f"{where}.log_start_offset"),
        readback.optional_integer(d.get("log_end_offset"), f"{where}.log_end_offset"),
        count(d.get("errors", 0), f"{where}.errors"),
        count(d.get("warnings", 0), f"{where}.warnings"),
        damaged,
    )


__all__ = [
    "DEFAULT_TEMPLATE",
    "Audit",
    "BrokerAudit",
    "BrokerKey",
    "FleetAudit",
    "audit_target",
    "check_target_directory",
    "check_target_template",
    "log_dirs_name",
    "log_dirs_of",
    "looks_like_audits",
    "output_template",
    "parse_audit",
    "read_fleet",
    "refuse_replacing",
    "write_audit",
]
