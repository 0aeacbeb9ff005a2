"""What kdump measures for Prometheus (``--prom FILE``): one family per measure, few series.

Every series carries ``command`` (the command that wrote it), so the files of several commands
can lie side by side in node_exporter's textfile directory. Every family is in ``FAMILIES``
with its HELP text and labels, from which docs/metrics.md's table is written. Per-partition
series exist only for partitions that have something to say (findings, open transactions);
per-log-dir totals are always there, so a healthy broker exports a handful of series and an
alert can test for zero.
The format itself (escaping, the atomic write, reading a previous file) is kdump.render.prom.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from kdump.checks.findings import Finding, Severity
from kdump.render.prom import Family, previous_value, render
from kdump.run import RunInfo, log_dir_of
from kdump.storage.outputs import write_textfile

PREFIX = "kdump_"
LAST_SUCCESS = PREFIX + "last_success_timestamp_seconds"
COMPLETED = frozenset((0, 1, 2))
"""Exit statuses of a run that finished its work (findings are results, not failures)."""

COMMANDS = ("verify", "txn", "explain", "replicas", "startup")
"""The commands that take ``--prom FILE``."""

PARTITION = ("log_dir", "topic", "partition")


@dataclass(frozen=True, slots=True)
class MetricFamily:
    """One family kdump exports: its HELP text (docs/metrics.md's too), its labels besides
    ``command``, the commands that write it and when, if not always."""

    name: str
    help: str
    labels: tuple[str, ...] = ("log_dir",)
    commands: tuple[str, ...] = COMMANDS
    when: str = ""


AUDIT = "with --state or --budget"
FAMILIES = {
    f.name: f
    for f in (
        # what every run says of itself
        MetricFamily("build_info", "kdump's version (always 1).", ("version",)),
        MetricFamily(
            "exit_status",
            "The exit status of the last run (0 clean, 1 warnings with --fail-on warning, 2 "
            "errors or hanging transactions, 3 failed, 130 or 143 stopped by SIGINT or SIGTERM: "
            "a cron job's timeout, say).",
            (),
        ),
        MetricFamily("run_duration_seconds", "How long the last run took.", ()),
        MetricFamily("last_run_timestamp_seconds", "When the last run started (Unix time).", ()),
        MetricFamily(
            "last_success_timestamp_seconds",
            "When the last run that completed its work (exit 0, 1 or 2) started (Unix time); "
            "carried forward from the previous file by a run that failed.",
            (),
            when="once a run completed",
        ),
        MetricFamily(
            "log_dir_info",
            "The broker and cluster each log dir belongs to, from its meta.properties (node.id "
            "in version 1, broker.id in version 0; always 1).",
            ("log_dir", "broker_id", "cluster_id", "directory_id"),
            when="for each log dir with a meta.properties",
        ),
        # findings and what was read
        MetricFamily(
            "findings",
            "Findings of the run by code and severity, only for the partitions that have any "
            "(topic and partition empty: the log dir's own files, its checkpoints).",
            (*PARTITION, "code", "severity"),
            ("verify", "txn", "replicas"),
        ),
        MetricFamily(
            "log_dir_findings",
            "Findings of the run in each log dir, by severity (all three, zeros included).",
            ("log_dir", "severity"),
            ("verify", "txn", "replicas"),
        ),
        MetricFamily(
            "partitions_checked",
            "Partition directories read.",
            commands=("verify", "txn", "explain", "replicas"),
        ),
        MetricFamily("segments_checked", "Segments read.", commands=("verify", "explain")),
        MetricFamily(
            "scanned_bytes",
            "Bytes of .log files the partitions' results cover (with --state, those of "
            "unchanged segments not read again included).",
            commands=("verify",),
        ),
        # an incremental or budgeted verify (issue 30)
        MetricFamily(
            "verified_bytes",
            "Bytes of .log files read and verified by this run.",
            (),
            ("verify",),
            AUDIT,
        ),
        MetricFamily(
            "unchanged_skipped_bytes",
            "Bytes of closed segments not read: verified clean before and unchanged (--state).",
            (),
            ("verify",),
            AUDIT,
        ),
        MetricFamily(
            "oldest_verified_timestamp_seconds",
            "The oldest last-verified time of any segment of the run (Unix time): alert when "
            "time() minus it exceeds the days a segment may go unread.",
            (),
            ("verify",),
            AUDIT,
        ),
        MetricFamily(
            "run_partial",
            "1 when a --budget or an interruption stopped the run before every segment was read.",
            (),
            ("verify",),
            AUDIT,
        ),
        # transactions
        MetricFamily(
            "open_transactions",
            "Open transactions, for each partition that has any.",
            PARTITION,
            ("txn",),
        ),
        MetricFamily(
            "hanging_transactions",
            "Open transactions older than --transaction-max-timeout-ms, for each partition "
            "that has any.",
            PARTITION,
            ("txn",),
        ),
        MetricFamily(
            "lso_blocked_records",
            "Records between the last stable offset and the high watermark: read_committed "
            "consumers do not get them yet (partitions with open transactions).",
            PARTITION,
            ("txn",),
        ),
        MetricFamily(
            "lso_blocked_bytes",
            "Bytes of the records above the last stable offset (partitions with open "
            "transactions).",
            PARTITION,
            ("txn",),
        ),
        MetricFamily(
            "log_dir_open_transactions", "Open transactions in each log dir.", commands=("txn",)
        ),
        MetricFamily(
            "log_dir_hanging_transactions",
            "Hanging transactions in each log dir.",
            commands=("txn",),
        ),
        # replicas: per follower replica
        MetricFamily(
            "replica_lost_records",
            "Records a follower's truncation drops when it fetches from the chosen leader.",
            PARTITION,
            ("replicas",),
        ),
        MetricFamily(
            "replica_lost_bytes",
            "Bytes of the batches a follower's truncation drops.",
            PARTITION,
            ("replicas",),
        ),
        MetricFamily(
            "replica_lost_acknowledged_records",
            "Of the records a follower's truncation drops, those below its checkpointed high "
            "watermark.",
            PARTITION,
            ("replicas",),
            "for a follower with a replication-offset-checkpoint entry",
        ),
        MetricFamily(
            "replica_lost_markers",
            "Transaction markers a follower's truncation drops.",
            PARTITION,
            ("replicas",),
        ),
        MetricFamily(
            "replica_differing_batches",
            "Batches at the same offsets that differ from the leader's where the follower "
            "keeps them.",
            PARTITION,
            ("replicas",),
        ),
        # explain: retention and compaction
        MetricFamily(
            "retention_deletable_segments",
            "Segments retention would delete at --now.",
            commands=("explain",),
        ),
        MetricFamily(
            "retention_deletable_bytes",
            "Bytes retention would delete at --now.",
            commands=("explain",),
        ),
        MetricFamily(
            "retention_blocked_partitions",
            "Partitions whose retention stops at a segment it keeps, by why (high_watermark, "
            "future_timestamp, not_expired, empty_active_segment, retention_off, policy).",
            ("log_dir", "kind"),
            ("explain",),
        ),
        MetricFamily(
            "compaction_dirty_bytes",
            "Bytes of compacted logs past the cleaner's checkpoint (not yet cleaned).",
            commands=("explain",),
        ),
        MetricFamily(
            "compaction_cleanable_partitions",
            "Compacted partitions the cleaner would clean at --now.",
            commands=("explain",),
        ),
        # startup: the broker's next start
        MetricFamily(
            "startup_clean_shutdown",
            "1 where the log dir holds .kafka_cleanshutdown (its logs load without recovery).",
            commands=("startup",),
        ),
        MetricFamily(
            "startup_logs", "Logs LogManager loads from the log dir.", commands=("startup",)
        ),
        MetricFamily(
            "startup_logs_recovering",
            "Logs that recover a segment at the next start.",
            commands=("startup",),
        ),
        MetricFamily(
            "startup_bytes_to_recover",
            "Bytes the next start's recovery re-reads in the log dir.",
            commands=("startup",),
        ),
        MetricFamily(
            "startup_bytes_truncated",
            "Bytes the next start's recovery cuts or deletes in the log dir.",
            commands=("startup",),
        ),
        MetricFamily(
            "startup_recovery_threads",
            "num.recovery.threads.per.data.dir the estimate assumes.",
            commands=("startup",),
        ),
        MetricFamily(
            "startup_estimated_seconds",
            "Estimated load time of each log dir (log_dir empty: the whole start, the metadata "
            "log first), at the fastest, the median and the slowest pace calibrated (bound: "
            "low, typical, high).",
            ("log_dir", "bound"),
            ("startup",),
        ),
    )
}
"""Every family kdump writes, in docs/metrics.md's order (scripts/make_metrics_doc.py writes
its table from here)."""


@dataclass
class PartitionLabels:
    """Where a partition is: its log dir and, when the directory name parses, topic and number."""

    log_dir: str
    topic: str | None
    partition: int | None


@dataclass
class Measures:
    """The families of one run, built by the ``*_families`` functions below."""

    families: list[Family] = field(default_factory=list)

    def family(self, name: str) -> Family:
        for f in self.families:
            if f.name == PREFIX + name:
                return f
        created = Family(PREFIX + name, FAMILIES[name].help)
        self.families.append(created)
        return created


def _labels(path: str, topic: str | None, partition: int | None) -> PartitionLabels:
    return PartitionLabels(log_dir_of(path), topic, partition)


def finding_families(
    m: Measures,
    command: str,
    per_partition: Iterable[tuple[PartitionLabels, list[Finding]]],
    log_dir_findings: Iterable[Finding],
    log_dirs: Iterable[str],
) -> None:
    """kdump_findings per partition (only those with findings; a log dir's own findings
    with empty topic and partition), and kdump_log_dir_findings per log dir and severity."""
    findings = m.family("findings")
    totals: dict[str, Counter[str]] = {d: Counter() for d in log_dirs}
    rows: list[tuple[PartitionLabels, list[Finding]]] = list(per_partition)
    own = list(log_dir_findings)
    for f in own:
        rows.append((PartitionLabels(log_dir_of(f.path), None, None), [f]))
    merged: Counter[tuple[str, str, str, str, str]] = Counter()
    for where, found in rows:
        totals.setdefault(where.log_dir, Counter())
        for f in found:
            topic = where.topic or ""
            partition = "" if where.partition is None else str(where.partition)
            merged[(where.log_dir, topic, partition, f.code, f.severity.value)] += 1
            totals[where.log_dir][f.severity.value] += 1
    for (log_dir, topic, partition, code, severity), n in sorted(merged.items()):
        findings.add(
            n,
            command=command,
            log_dir=log_dir,
            topic=topic,
            partition=partition,
            code=code,
            severity=severity,
        )
    per_dir = m.family("log_dir_findings")
    for log_dir, counts in sorted(totals.items()):
        for severity in Severity:
            per_dir.add(
                counts[severity.value], command=command, log_dir=log_dir, severity=severity.value
            )


def _per_log_dir(m: Measures, name: str, command: str, values: dict[str, float]) -> None:
    family = m.family(name)
    for log_dir, value in sorted(values.items()):
        family.add(value, command=command, log_dir=log_dir)


def verify_families(result: object, command: str = "verify") -> Measures:
    """Findings, partitions and segments checked, bytes scanned, of a VerifyResult."""
    from kdump.checks.verify import VerifyResult

    assert isinstance(result, VerifyResult)
    m = Measures()
    partitions: dict[str, float] = defaultdict(int)
    segments: dict[str, float] = defaultdict(int)
    scanned: dict[str, float] = defaultdict(int)
    rows = []
    for r in result.partitions:
        s = r.summary
        where = _labels(r.path, s.topic, s.partition)
        partitions[where.log_dir] += 1
        segments[where.log_dir] += s.segments_read
        scanned[where.log_dir] += s.bytes_read
        if r.findings:
            rows.append((where, r.findings))
    finding_families(m, command, rows, result.log_dir_findings, partitions)
    _per_log_dir(m, "partitions_checked", command, partitions)
    _per_log_dir(m, "segments_checked", command, segments)
    _per_log_dir(m, "scanned_bytes", command, scanned)
    audit_families(m, result.audit, command)
    return m


def audit_families(m: Measures, audit: object, command: str) -> None:
    """What an incremental or budgeted run read, skipped and left (issue 30): for alerts on a
    segment unverified too long, and on runs that never finish within their budget."""
    from kdump.checks.audit import AuditSummary

    assert isinstance(audit, AuditSummary)
    if not audit.asked:
        return
    m.family("verified_bytes").add(audit.bytes_verified, command=command)
    m.family("unchanged_skipped_bytes").add(audit.bytes_unchanged_skipped, command=command)
    if audit.oldest_verified_ms is not None:
        m.family("oldest_verified_timestamp_seconds").add(
            audit.oldest_verified_ms / 1000, command=command
        )
    m.family("run_partial").add(int(audit.partial), command=command)


def txn_families(result: object) -> Measures:
    """Open and hanging transactions and what they hold back, of a TxnResult."""
    from kdump.txn.analysis import TxnResult

    assert isinstance(result, TxnResult)
    command = "txn"
    m = Measures()
    partitions: dict[str, float] = defaultdict(int)
    open_total: dict[str, float] = defaultdict(int)
    hanging_total: dict[str, float] = defaultdict(int)
    rows = []
    open_txns = m.family("open_transactions")
    hanging = m.family("hanging_transactions")
    blocked_records = m.family("lso_blocked_records")
    blocked_bytes = m.family("lso_blocked_bytes")
    for p in result.partitions:
        where = _labels(p.path, p.topic, p.partition)
        partitions[where.log_dir] += 1
        if p.findings:
            rows.append((where, p.findings))
        if not p.open_transactions:
            continue
        labels = {
            "command": command,
            "log_dir": where.log_dir,
            "topic": where.topic or "",
            "partition": "" if where.partition is None else str(where.partition),
        }
        n_hanging = len(p.hanging)
        open_total[where.log_dir] += len(p.open_transactions)
        hanging_total[where.log_dir] += n_hanging
        open_txns.add(len(p.open_transactions), **labels)
        if n_hanging:
            hanging.add(n_hanging, **labels)
        blocked_records.add(p.blocked_records, **labels)
        blocked_bytes.add(p.blocked_bytes, **labels)
    finding_families(m, command, rows, result.coordinator.findings, partitions)
    _per_log_dir(m, "partitions_checked", command, partitions)
    _per_log_dir(m, "log_dir_open_transactions", command, {d: open_total[d] for d in partitions})
    _per_log_dir(
        m, "log_dir_hanging_transactions", command, {d: hanging_total[d] for d in partitions}
    )
    return m


def startup_families(result: object) -> Measures:
    """A broker's next start, per log dir (kdump.startup): whether it was shut down cleanly,
    the logs it recovers, the bytes it re-reads and cuts, and the estimated load time (its
    two bounds), and the whole start's estimate."""
    from kdump.startup.plan import StartupResult

    assert isinstance(result, StartupResult)
    command = "startup"
    m = Measures()
    values: dict[str, dict[str, float]] = defaultdict(dict)
    for d in result.log_dirs:
        values["clean"][d.path] = 1 if d.clean_shutdown else 0
        values["logs"][d.path] = len(d.partitions)
        values["recovering"][d.path] = len(d.recovering)
        values["bytes"][d.path] = d.bytes_to_recover
        values["truncated"][d.path] = sum(p.bytes_truncated for p in d.partitions)
        values["threads"][d.path] = d.recovery_threads
    _per_log_dir(m, "startup_clean_shutdown", command, values["clean"])
    _per_log_dir(m, "startup_logs", command, values["logs"])
    _per_log_dir(m, "startup_logs_recovering", command, values["recovering"])
    _per_log_dir(m, "startup_bytes_to_recover", command, values["bytes"])
    _per_log_dir(m, "startup_bytes_truncated", command, values["truncated"])
    _per_log_dir(m, "startup_recovery_threads", command, values["threads"])
    estimate = m.family("startup_estimated_seconds")
    rows = [(d.path, d.seconds) for d in result.log_dirs] + [("", result.seconds)]
    for log_dir, seconds in rows:
        for bound, value in zip(("low", "typical", "high"), seconds, strict=True):
            estimate.add(round(value, 3), command=command, log_dir=log_dir, bound=bound)
    return m


def replicas_families(result: object) -> Measures:
    """Per follower, where it truncates and what that drops, of a ReplicasResult; findings
    per replica."""
    from kdump.replicas import ReplicasResult

    assert isinstance(result, ReplicasResult)
    command = "replicas"
    m = Measures()
    lost = m.family("replica_lost_records")
    lost_bytes = m.family("replica_lost_bytes")
    acked = m.family("replica_lost_acknowledged_records")
    markers = m.family("replica_lost_markers")
    differing = m.family("replica_differing_batches")
    for follower in result.followers:
        log = follower.log
        where = _labels(log.location, log.topic, log.partition)
        labels = {
            "command": command,
            "log_dir": where.log_dir,
            "topic": where.topic or "",
            "partition": "" if where.partition is None else str(where.partition),
        }
        lost.add(follower.lost.records, **labels)
        lost_bytes.add(follower.lost.bytes, **labels)
        if follower.lost.below_high_watermark is not None:
            acked.add(follower.lost.below_high_watermark, **labels)
        markers.add(len(follower.lost.markers), **labels)
        differing.add(follower.differing_batches, **labels)
    rows = [
        (_labels(r.log.location, r.log.topic, r.log.partition), r.findings) for r in result.replicas
    ]
    for finding in result.findings:
        log = next(
            (f.log for f in result.followers if finding.path.startswith(f.log.location)),
            result.leader.log,
        )
        rows.append((_labels(log.location, log.topic, log.partition), [finding]))
    partitions: dict[str, float] = defaultdict(int)
    for r in result.replicas:
        partitions[log_dir_of(r.log.location)] += 1
    finding_families(m, command, [r for r in rows if r[1]], [], partitions)
    _per_log_dir(m, "partitions_checked", command, partitions)
    return m


def explain_families(result: object) -> Measures:
    """What retention would delete now and how dirty compacted logs are, of an ExplainResult."""
    from kdump.explain import ExplainResult

    assert isinstance(result, ExplainResult)
    command = "explain"
    m = Measures()
    partitions: dict[str, float] = defaultdict(int)
    segments: dict[str, float] = defaultdict(int)
    deletable_segments: dict[str, float] = defaultdict(int)
    deletable_bytes: dict[str, float] = defaultdict(int)
    dirty: dict[str, float] = defaultdict(int)
    cleanable: dict[str, float] = defaultdict(int)
    blocked: Counter[tuple[str, str]] = Counter()
    for p in result.partitions:
        d = log_dir_of(p.path)
        partitions[d] += 1
        segments[d] += len(p.segments)
        deletable_segments[d] += p.retention.deletable_segments
        deletable_bytes[d] += p.retention.deletable_bytes
        if p.retention.blocked_by is not None:
            blocked[(d, p.retention.blocked_by.kind)] += 1
        if p.compaction is not None:
            dirty[d] += p.compaction.dirty_bytes
            cleanable[d] += p.compaction.cleanable
    _per_log_dir(m, "partitions_checked", command, partitions)
    _per_log_dir(m, "segments_checked", command, segments)
    _per_log_dir(m, "retention_deletable_segments", command, deletable_segments)
    _per_log_dir(m, "retention_deletable_bytes", command, deletable_bytes)
    family = m.family("retention_blocked_partitions")
    for (d, kind), n in sorted(blocked.items()):
        family.add(n, command=command, log_dir=d, kind=kind)
    _per_log_dir(m, "compaction_dirty_bytes", command, {d: dirty[d] for d in partitions})
    _per_log_dir(
        m, "compaction_cleanable_partitions", command, {d: cleanable[d] for d in partitions}
    )
    return m


def run_families(m: Measures, info: RunInfo, exit_status: int, last_success: float | None) -> None:
    """What every run says of itself."""
    command = info.command
    m.family("build_info").add(1, command=command, version=info.version)
    m.family("exit_status").add(exit_status, command=command)
    m.family("run_duration_seconds").add(round(info.duration_seconds, 6), command=command)
    m.family("last_run_timestamp_seconds").add(info.started / 1000, command=command)
    if last_success is not None:
        m.family("last_success_timestamp_seconds").add(last_success, command=command)
    identity = m.family("log_dir_info")
    for d in info.log_dirs:
        if d.meta_properties_version is None:
            continue
        identity.add(
            1,
            command=command,
            log_dir=d.path,
            broker_id=d.node_id,
            cluster_id=d.cluster_id,
            directory_id=d.directory_id,
        )


def write_run(
    path: str | Path,
    info: RunInfo,
    exit_status: int,
    measures: Measures | None = None,
    failed: bool = False,
) -> None:
    """Write the run's metrics to ``path`` atomically. A run that failed (it did not complete
    its work: an unreadable path, a crash) carries the previous file's last success forward."""
    if failed or exit_status not in COMPLETED:
        last_success = previous_value(path, LAST_SUCCESS, {"command": info.command})
    else:
        last_success = info.started / 1000
    run = Measures()
    run_families(run, info, exit_status, last_success)
    write_textfile(path, render([*run.families, *(measures or Measures()).families]))
