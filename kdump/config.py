"""Topic and broker settings as Kafka names, types, defaults and validates them.

One table (``TOPIC_CONFIGS``) holds each topic config kdump reads with its type, default and
validator (``LogConfig``'s topic ConfigDef) and its broker synonyms in order of precedence
(``ServerTopicConfigSynonyms.ALL_TOPIC_CONFIG_SYNONYMS``), an hours or minutes synonym carrying
its factor to milliseconds (``AbstractKafkaConfig``); ``BROKER_CONFIGS`` holds the broker
configs themselves (``LogConfig.SERVER_CONFIG_DEF``, ``CleanerConfig``). Values come from these
layers, the first that sets a config wins:

1. ``--config name=value`` (a topic name, or a broker name for the broker layer);
2. the partition's topic in ``kafka-configs.sh --describe [--all]`` output;
3. the KRaft metadata image's topic configs (``MetadataConfigs``: the ConfigRecords of resource
   type TOPIC the metadata log holds, replayed in order, a null value deleting the key), where
   the log dir holds ``__cluster_metadata-0`` or ``--metadata DIR`` names one;
4. Kafka's internal-topic config: the topic configs Kafka itself sets when it creates
   ``__consumer_offsets``, ``__transaction_state``, ``__share_group_state``,
   ``__remote_log_metadata`` and the KRaft ``__cluster_metadata`` log (``INTERNAL_TOPIC_CONFIGS``),
   some of them taken from a broker config such as ``offsets.topic.segment.bytes``;
5. the broker: ``--config log.*``, a broker section of the describe output, the metadata
   image's dynamic broker configs (this broker's own, then the cluster default), then
   ``server.properties`` (merged into one map, in that order, then its synonyms read in Kafka's
   order);
6. Kafka's default.

Every resolved ``Setting`` says where its value came from. A value Kafka would refuse raises
``ConfigError`` with the validator's own words.
"""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Iterator, Mapping
from enum import Enum
from typing import Any

from kdump.errors import ConfigError
from kdump.format.names import METADATA_TOPIC
from kdump.tuples import NamedTuple

Value = int | float | bool | tuple[str, ...]

INT32 = (-(1 << 31), (1 << 31) - 1)
INT64 = (-(1 << 63), (1 << 63) - 1)
LONG_MAX = INT64[1]
# patterns as text, compiled (and cached by re) when first used: every command imports this
# module, few parse a value
_JAVA_INTEGER = r"[+-]?[0-9]+"
_COMMA_WITH_WHITESPACE = r"\s*,\s*"  # ConfigDef.COMMA_WITH_WHITESPACE
HOURS_TO_MS = 3_600_000
MINUTES_TO_MS = 60_000


class ConfigType(str, Enum):
    """ConfigDef.Type: how a value's text parses."""

    INT = "INT"
    LONG = "LONG"
    DOUBLE = "DOUBLE"
    LIST = "LIST"
    BOOLEAN = "BOOLEAN"


# The records of the tables below are NamedTuples: every command's options read this module, and
# a frozen dataclass costs about 1 ms of start-up to define (a NamedTuple a quarter of that).


class AtLeast(NamedTuple):
    """ConfigDef.Range.atLeast."""

    minimum: int

    def describe(self) -> str:
        return f"x>={self.minimum}"

    def check(self, name: str, value: Value) -> str | None:
        assert isinstance(value, int | float)
        if value < self.minimum:
            return _invalid(name, value, f"Value must be at least {self.minimum}")
        return None


class Between(NamedTuple):
    """ConfigDef.Range.between (both ends included)."""

    low: int
    high: int

    def describe(self) -> str:
        return f"{self.low}<=x<={self.high}"

    def check(self, name: str, value: Value) -> str | None:
        assert isinstance(value, int | float)
        if value < self.low:
            return _invalid(name, value, f"Value must be at least {self.low}")
        if value > self.high:
            return _invalid(name, value, f"Value must be no more than {self.high}")
        return None


class ValidList(NamedTuple):
    """ConfigDef.ValidList.in(...): an empty list is allowed, empty or repeated items are not."""

    choices: tuple[str, ...]

    def describe(self) -> str:
        return "one or more of " + ", ".join(self.choices)

    def check(self, name: str, value: Value) -> str | None:
        assert isinstance(value, tuple)
        if len(set(value)) != len(value):
            return f"Configuration '{name}' values must not be duplicated."
        for item in value:
            if not item:
                return f"Configuration '{name}' values must not be empty."
            if item not in self.choices:
                return _invalid(name, item, "String must be one of: " + ", ".join(self.choices))
        return None


Validator = AtLeast | Between | ValidList


def _invalid(name: str, value: object, message: str) -> str:
    """ConfigException(name, value, message)'s text."""
    return f"Invalid value {_java_text(value)} for configuration {name}: {message}"


def _java_text(value: object) -> str:
    if isinstance(value, bool):
        return str(value).lower()
    if isinstance(value, tuple):
        return "[" + ", ".join(value) + "]"
    return str(value)


class ConfigKey(NamedTuple):
    """One ConfigDef entry: name, type, default (None: unset), validator."""

    name: str
    type: ConfigType
    default: Value | None
    validator: Validator | None = None

    def parse(self, raw: str) -> Value:
        """ConfigDef.parseType then the validator; raises ValueError with Kafka's message."""
        value = parse_type(self.name, raw, self.type)
        if self.validator is not None and (problem := self.validator.check(self.name, value)):
            raise ValueError(problem)
        return value


def parse_type(name: str, raw: str, kind: ConfigType) -> Value:
    """ConfigDef.parseType for a String value (trimmed first)."""
    text = raw.strip()
    if kind is ConfigType.BOOLEAN:
        if text.lower() in ("true", "false"):
            return text.lower() == "true"
        raise ValueError(_invalid(name, raw, "Expected value to be either true or false"))
    if kind is ConfigType.LIST:
        return () if not text else tuple(re.split(_COMMA_WITH_WHITESPACE, text))
    if kind is ConfigType.DOUBLE:
        try:
            return float(text)
        except ValueError:
            raise ValueError(_invalid(name, raw, f"Not a number of type {kind.value}")) from None
    bounds = INT32 if kind is ConfigType.INT else INT64
    if not re.fullmatch(_JAVA_INTEGER, text) or not bounds[0] <= int(text) <= bounds[1]:
        raise ValueError(_invalid(name, raw, f"Not a number of type {kind.value}"))
    return int(text)


class Synonym(NamedTuple):
    """A broker config standing in for a topic config, and its factor to the topic's unit."""

    name: str
    factor: int = 1


class TopicConfig(NamedTuple):
    key: ConfigKey
    synonyms: tuple[Synonym, ...]
    doc: str


def _topic(
    name: str,
    kind: ConfigType,
    default: Value | None,
    validator: Validator | None,
    synonyms: Iterable[str | Synonym],
    doc: str,
) -> tuple[str, TopicConfig]:
    syn = tuple(s if isinstance(s, Synonym) else Synonym(s) for s in synonyms)
    return name, TopicConfig(ConfigKey(name, kind, default, validator), syn, doc)


MIB = 1024 * 1024
T = ConfigType

TOPIC_CONFIGS: dict[str, TopicConfig] = dict(
    [
        _topic(
            "segment.bytes", T.INT, 1073741824, AtLeast(MIB), ["log.segment.bytes"],
            "a segment rolls when the next append would take its .log past this size",
        ),
        _topic(
            "internal.segment.bytes", T.INT, None, None, [],
            "Kafka 4.1+'s testing override of segment.bytes, without its 1 MiB minimum",
        ),
        _topic(
            "segment.ms", T.LONG, 604800000, AtLeast(1),
            ["log.roll.ms", Synonym("log.roll.hours", HOURS_TO_MS)],
            "a segment rolls once a batch is this much newer than its first batch",
        ),
        _topic(
            "segment.jitter.ms", T.LONG, 0, AtLeast(0),
            ["log.roll.jitter.ms", Synonym("log.roll.jitter.hours", HOURS_TO_MS)],
            "each segment draws a random jitter below this, subtracted from segment.ms",
        ),
        _topic(
            "segment.index.bytes", T.INT, 10485760, AtLeast(4), ["log.index.size.max.bytes"],
            "size of each index file; a segment rolls when its offset or time index is full",
        ),
        _topic(
            "index.interval.bytes", T.INT, 4096, AtLeast(0), ["log.index.interval.bytes"],
            "an .index entry is written once this many bytes were appended since the last one",
        ),
        _topic(
            "retention.ms", T.LONG, 604800000, AtLeast(-1),
            [
                "log.retention.ms",
                Synonym("log.retention.minutes", MINUTES_TO_MS),
                Synonym("log.retention.hours", HOURS_TO_MS),
            ],
            "delete a segment once its largest timestamp is older than this (-1: never)",
        ),
        _topic(
            "retention.bytes", T.LONG, -1, None, ["log.retention.bytes"],
            "delete the oldest segments while the log stays at least this big (-1: never)",
        ),
        _topic(
            "cleanup.policy", T.LIST, ("delete",), ValidList(("compact", "delete")),
            ["log.cleanup.policy"],
            "delete (retention), compact (the log cleaner), both, or neither",
        ),
        _topic(
            "delete.retention.ms", T.LONG, 86400000, AtLeast(0),
            ["log.cleaner.delete.retention.ms"],
            "how long a cleaned tombstone stays (its delete horizon)",
        ),
        _topic(
            "min.compaction.lag.ms", T.LONG, 0, AtLeast(0),
            ["log.cleaner.min.compaction.lag.ms"],
            "records newer than this are not compacted",
        ),
        _topic(
            "max.compaction.lag.ms", T.LONG, LONG_MAX, AtLeast(1),
            ["log.cleaner.max.compaction.lag.ms"],
            "dirty records older than this force a cleaning whatever the dirty ratio",
        ),
        _topic(
            "min.cleanable.dirty.ratio", T.DOUBLE, 0.5, Between(0, 1),
            ["log.cleaner.min.cleanable.ratio"],
            "the cleaner picks a log whose dirty bytes exceed this share of its bytes",
        ),
    ]
)  # fmt: skip

KAFKA_TOPIC_CONFIG_NAMES = frozenset(
    {
        *TOPIC_CONFIGS,
        "compression.type",
        "compression.gzip.level",
        "compression.lz4.level",
        "compression.zstd.level",
        "file.delete.delay.ms",
        "flush.messages",
        "flush.ms",
        "follower.replication.throttled.replicas",
        "leader.replication.throttled.replicas",
        "local.retention.bytes",
        "local.retention.ms",
        "max.message.bytes",
        "message.downconversion.enable",
        "message.format.version",
        "message.timestamp.after.max.ms",
        "message.timestamp.before.max.ms",
        "message.timestamp.difference.max.ms",
        "message.timestamp.type",
        "min.insync.replicas",
        "preallocate",
        "remote.log.copy.disable",
        "remote.log.delete.on.disable",
        "remote.storage.enable",
        "unclean.leader.election.enable",
    }
)
"""Every topic config Kafka has defined (TopicConfig and LogConfig's ConfigDef, 3.x to 4.x): none
holds a secret (no PASSWORD type), so a metadata image's topic config by one of these names is
printed, any other name redacted (KafkaConfigSchema.isSensitive: an unknown config is)."""

BROKER_CONFIGS: dict[str, ConfigKey] = {
    key.name: key
    for key in (
        ConfigKey("log.segment.bytes", T.INT, 1073741824, AtLeast(MIB)),
        ConfigKey("log.roll.ms", T.LONG, None),
        ConfigKey("log.roll.hours", T.INT, 168, AtLeast(1)),
        ConfigKey("log.roll.jitter.ms", T.LONG, None),
        ConfigKey("log.roll.jitter.hours", T.INT, 0, AtLeast(0)),
        ConfigKey("log.index.size.max.bytes", T.INT, 10485760, AtLeast(4)),
        ConfigKey("log.index.interval.bytes", T.INT, 4096, AtLeast(0)),
        ConfigKey("log.retention.ms", T.LONG, None),
        ConfigKey("log.retention.minutes", T.INT, None),
        ConfigKey("log.retention.hours", T.INT, 168),
        ConfigKey("log.retention.bytes", T.LONG, -1),
        ConfigKey("log.cleanup.policy", T.LIST, ("delete",), ValidList(("compact", "delete"))),
        ConfigKey("log.cleaner.delete.retention.ms", T.LONG, 86400000, AtLeast(0)),
        ConfigKey("log.cleaner.min.compaction.lag.ms", T.LONG, 0, AtLeast(0)),
        ConfigKey("log.cleaner.max.compaction.lag.ms", T.LONG, LONG_MAX, AtLeast(1)),
        ConfigKey("log.cleaner.min.cleanable.ratio", T.DOUBLE, 0.5, Between(0, 1)),
        # broker-only: the cleaner itself and the retention thread
        ConfigKey("log.cleaner.enable", T.BOOLEAN, True),
        ConfigKey("log.cleaner.threads", T.INT, 1, AtLeast(0)),
        ConfigKey("log.cleaner.dedupe.buffer.size", T.LONG, 134217728),
        ConfigKey("log.cleaner.io.buffer.load.factor", T.DOUBLE, 0.9),
        ConfigKey("log.retention.check.interval.ms", T.LONG, 300000, AtLeast(1)),
        # LogManager's recovery pool per log dir (ServerLogConfigs; 2 since 4.0, KIP-1030)
        ConfigKey("num.recovery.threads.per.data.dir", T.INT, 2, AtLeast(1)),
        # broker configs Kafka copies into its internal topics' configs (INTERNAL_TOPIC_CONFIGS)
        ConfigKey("offsets.topic.segment.bytes", T.INT, 100 * MIB, AtLeast(1)),
        ConfigKey("transaction.state.log.segment.bytes", T.INT, 100 * MIB, AtLeast(1)),
        ConfigKey("share.coordinator.state.topic.segment.bytes", T.INT, 100 * MIB, AtLeast(1)),
        ConfigKey("remote.log.metadata.topic.retention.ms", T.LONG, -1),
        ConfigKey("metadata.log.segment.bytes", T.INT, 1024 * MIB, AtLeast(1)),
        ConfigKey("metadata.log.segment.ms", T.LONG, 7 * 24 * HOURS_TO_MS, AtLeast(1)),
    )
}

BROKER_ONLY = (
    "log.cleaner.enable",
    "log.cleaner.threads",
    "log.cleaner.dedupe.buffer.size",
    "log.cleaner.io.buffer.load.factor",
    "log.retention.check.interval.ms",
)
"""Broker configs explain reads that have no topic config."""

INTERNAL_TOPIC_CONFIGS: dict[str, dict[str, str | tuple[str]]] = {
    # GroupCoordinatorService.groupMetadataTopicConfigs (compression.type=producer too)
    "__consumer_offsets": {
        "cleanup.policy": "compact",
        "segment.bytes": ("offsets.topic.segment.bytes",),
    },
    # TransactionStateManager.transactionTopicConfigs (also unclean.leader.election.enable=false,
    # compression.type=uncompressed, min.insync.replicas=transaction.state.log.min.isr)
    "__transaction_state": {
        "cleanup.policy": "compact",
        "segment.bytes": ("transaction.state.log.segment.bytes",),
    },
    # ShareCoordinatorService.shareGroupStateTopicConfigs: delete, as KIP-932 defines it
    "__share_group_state": {
        "cleanup.policy": "delete",
        "segment.bytes": ("share.coordinator.state.topic.segment.bytes",),
    },
    # TopicBasedRemoteLogMetadataManager: retention.ms from its config (default -1: kept).
    # cleanup.policy is delete before remote.log.metadata.version 1 and compact from it on, which
    # the log dir does not show: left to the broker's setting.
    "__remote_log_metadata": {
        "retention.ms": ("remote.log.metadata.topic.retention.ms",),
    },
    # KafkaMetadataLog.apply: the KRaft log rolls by metadata.log.* and is never deleted by time
    # or size (snapshots decide what goes).
    METADATA_TOPIC: {
        "segment.bytes": ("metadata.log.segment.bytes",),
        "segment.ms": ("metadata.log.segment.ms",),
        "retention.ms": "-1",
        "retention.bytes": "-1",
    },
}
"""Topic configs Kafka sets on the internal topics it creates: a fixed value, or a
one-tuple naming the broker config whose value it copies."""

BROKER_SETTINGS = ("num.recovery.threads.per.data.dir",)
"""Broker configs other commands read (``broker_setting``): kdump startup's."""

BROKER_ONLY_DOCS = {
    "log.cleaner.enable": "without the cleaner, compacted logs are neither cleaned nor deleted",
    "log.cleaner.threads": "the dedupe buffer is shared among the cleaner threads",
    "log.cleaner.dedupe.buffer.size": "the cleaner's key map: 24 bytes per key, all threads",
    "log.cleaner.io.buffer.load.factor": "how full the cleaner's key map may get",
    "log.retention.check.interval.ms": "how often the broker applies retention",
}


# -- settings a command takes as an option ---------------------------------------------------------

LEGACY_RECORD_OVERHEAD_V0 = 14
"""segment.bytes' minimum before Kafka 4.0 (4.1 for a topic): LegacyRecord.RECORD_OVERHEAD_V0."""

OPTION_CONFIGS: dict[str, ConfigKey] = {
    key.name: key
    for key in (
        # LogConfig: explain does not read it (its settings table stays as it is)
        ConfigKey("index.interval.bytes", T.INT, 4096, AtLeast(0)),
        TOPIC_CONFIGS["segment.index.bytes"].key,
        # a segment on disk may come from a Kafka that took segment.bytes down to 14 bytes
        TOPIC_CONFIGS["segment.bytes"].key._replace(validator=AtLeast(LEGACY_RECORD_OVERHEAD_V0)),
        # TransactionStateManagerConfig, TransactionLogConfig
        ConfigKey("transaction.max.timeout.ms", T.INT, 900000, AtLeast(1)),
        ConfigKey("producer.id.expiration.ms", T.INT, 86400000, AtLeast(1)),
        ConfigKey("transaction.state.log.num.partitions", T.INT, 50, AtLeast(1)),
        BROKER_CONFIGS["num.recovery.threads.per.data.dir"],
    )
}
"""The Kafka settings kdump's commands take as options (``kafka_option``): each default and
validator defined once, here."""


def option_default(name: str) -> int:
    """The default of a setting in OPTION_CONFIGS, as an int (what the library takes)."""
    value = OPTION_CONFIGS[name].default
    assert isinstance(value, int)
    return value


# -- raw values and where they came from -------------------------------------------------------


class _Nothing(Mapping[str, Any]):
    """A layer that sets nothing: immutable, as a default the records below (NamedTuples)
    share must be, and picklable, as Spark's tasks take them (a MappingProxyType is not)."""

    __slots__ = ()

    def __getitem__(self, key: str) -> Any:
        raise KeyError(key)

    def __iter__(self) -> Iterator[str]:
        return iter(())

    def __len__(self) -> int:
        return 0

    def __repr__(self) -> str:
        return "{}"


_EMPTY: Mapping[str, Any] = _Nothing()


class Source(str, Enum):
    DEFAULT = "default"
    SERVER_PROPERTIES = "server.properties"
    DESCRIBE = "describe output"
    OPTION = "--config"
    INTERNAL_TOPIC = "Kafka's internal-topic config"
    METADATA = "metadata image"
    """The KRaft metadata log's configs (kafka-configs.sh --alter as the controller recorded
    it: ConfigRecords), replayed into its image (kdump.kraft)."""


class RawSetting(NamedTuple):
    """A name=value as given, and where: ``origin`` names the file and line, or the option."""

    name: str
    raw: str
    source: Source
    origin: str


class Setting(NamedTuple):
    """A resolved setting: the value Kafka would use and where it came from."""

    name: str
    value: Value
    source: Source
    origin: str
    """The file and line, option or broker config that gave the value ("" for a default)."""

    @property
    def text(self) -> str:
        """The value as Kafka prints it."""
        if isinstance(self.value, tuple):
            return ",".join(self.value)
        return _java_text(self.value)


class DescribeOutput(NamedTuple):
    """``kafka-configs.sh --describe [--all]`` saved to a file: topics and broker sections."""

    path: str
    topics: Mapping[str, Mapping[str, RawSetting]]
    brokers: Mapping[str, RawSetting]


class MetadataConfigs(NamedTuple):
    """The dynamic configs a KRaft metadata image holds (ConfigurationsImage), in the order
    Kafka applies them over server.properties (KafkaConfigSchema.resolveEffectiveTopicConfigs:
    static < the cluster's dynamic default < the broker's own < the topic's). Built by
    kdump.kraft.configs.find_metadata_configs."""

    location: str
    """The metadata log the image was read from (named in every setting's origin)."""
    offset: int
    """The image's offset: the configs as of it."""
    topics: Mapping[str, Mapping[str, str]] = _EMPTY
    """ConfigRecords of resource type TOPIC: topic -> config -> value."""
    cluster: Mapping[str, str] = _EMPTY
    """Of resource type BROKER, name "": the cluster-wide dynamic broker default."""
    broker: Mapping[str, str] = _EMPTY
    """Of resource type BROKER, name ``node_id``: this broker's own dynamic configs."""
    node_id: int | None = None
    """The broker whose own configs apply (the log dir's meta.properties node.id)."""
    notes: tuple[str, ...] = ()
    """What a reader of these settings should know (a replay that stopped at damage)."""

    def topic_layer(self, topic: str | None) -> dict[str, RawSetting]:
        found = self.topics.get(topic or "", {})
        where = f"topic {topic}"
        return {n: self._raw(n, v, where) for n, v in found.items() if n in TOPIC_CONFIGS}

    def broker_value(self, name: str) -> str | None:
        """``name`` as this broker's own dynamic config, else the cluster's default (None:
        neither sets it)."""
        return self.broker.get(name, self.cluster.get(name))

    def broker_layer(self) -> dict[str, RawSetting]:
        """The cluster default, then the broker's own over it."""
        out = {n: self._raw(n, v, "cluster default") for n, v in self.cluster.items()}
        out.update({n: self._raw(n, v, f"broker {self.node_id}") for n, v in self.broker.items()})
        return {n: raw for n, raw in out.items() if n in BROKER_CONFIGS}

    def _raw(self, name: str, value: str, where: str) -> RawSetting:
        origin = f"{Source.METADATA.value} of {self.location} at offset {self.offset} ({where})"
        return RawSetting(name, value, Source.METADATA, origin)


class ConfigLayers(NamedTuple):
    """Everything given on the command line, before a topic is chosen."""

    options: tuple[RawSetting, ...] = ()
    describe: DescribeOutput | None = None
    server_properties: Mapping[str, RawSetting] = _EMPTY
    metadata: MetadataConfigs | None = None
    """The KRaft metadata image's configs, where the log dir holds the metadata log (combined
    mode) or ``--metadata DIR`` named one: above server.properties, below describe output and
    --config."""


def parse_config_option(text: str) -> RawSetting:
    """``--config name=value``: a topic config or a broker config kdump reads."""
    name, sep, raw = text.partition("=")
    name = name.strip()
    origin = f"--config {text}"
    if not sep or not name:
        raise ConfigError(origin, "expected name=value")
    if name not in TOPIC_CONFIGS and name not in BROKER_CONFIGS:
        known = ", ".join([*TOPIC_CONFIGS, *BROKER_ONLY, *BROKER_SETTINGS])
        raise ConfigError(origin, f"{name} is not a setting kdump reads ({known})")
    return RawSetting(name, raw, Source.OPTION, origin)


def read_server_properties(path: str | os.PathLike[str]) -> dict[str, RawSetting]:
    """The broker configs of a server.properties file (Java Properties syntax)."""
    from kdump.format.textfiles import parse_properties  # a run given the file only

    try:
        data = _read(path)
    except OSError as e:
        raise ConfigError(str(path), e.strerror or str(e)) from None
    return {
        name: RawSetting(name, value, Source.SERVER_PROPERTIES, f"{path}:{line.number}")
        for name, (value, line) in parse_properties(data, str(path)).items()
        if name in BROKER_CONFIGS
    }


_SECTION = r"^(?:All|Dynamic) configs for (?P<kind>[a-z-]+) (?P<name>.*) are:$"
_DEFAULT_BROKERS = "Default configs for brokers in the cluster are:"
_ENTRY = (
    r"^  (?P<name>[^=\s]+)=(?P<value>.*) sensitive=(?:true|false) synonyms=\{(?P<synonyms>.*)\}$"
)
_SYNONYM_SOURCE = r"^([A-Z_]+):"


def _read(path: str | os.PathLike[str]) -> bytes:
    with open(path, "rb") as f:
        return f.read()


def read_describe_output(path: str | os.PathLike[str]) -> DescribeOutput:
    """Parse what ConfigCommand prints for ``--describe [--all]``: section headers
    ``All configs for topic NAME are:`` (``Dynamic`` without --all; ``broker ID``, ``Default
    configs for brokers in the cluster are:``) and entries
    ``  name=value sensitive=false synonyms={SOURCE:name=value, ...}``. Several topics may share
    one file. A value printed as ``null`` (sensitive or unset) is skipped."""
    from kdump.format.textfiles import text_lines  # a run given the file only

    try:
        data = _read(path)
    except OSError as e:
        raise ConfigError(str(path), e.strerror or str(e)) from None
    topics: dict[str, dict[str, RawSetting]] = {}
    brokers: dict[str, RawSetting] = {}
    current: dict[str, RawSetting] | None = None
    is_broker = False
    for line in text_lines(data, str(path)):
        if (m := re.match(_SECTION, line.text)) is not None:
            is_broker = m["kind"] == "broker"
            if m["kind"] == "topic":
                current = topics.setdefault(m["name"], {})
            else:
                current = brokers if is_broker else None
            continue
        if line.text == _DEFAULT_BROKERS:
            current, is_broker = brokers, True
            continue
        entry = re.match(_ENTRY, line.text)
        if entry is None or current is None:
            continue
        name, value = entry["name"], entry["value"]
        known = BROKER_CONFIGS if is_broker else TOPIC_CONFIGS
        if value == "null" or name not in known or name in current:
            continue
        src = re.match(_SYNONYM_SOURCE, entry["synonyms"])
        how = f" ({src[1]})" if src else ""
        current[name] = RawSetting(name, value, Source.DESCRIBE, f"{path}:{line.number}{how}")
    if not topics and not brokers:
        raise ConfigError(
            str(path),
            "no 'All configs for topic NAME are:' section: not the output of "
            "kafka-configs.sh --describe --all",
        )
    return DescribeOutput(str(path), topics, brokers)


# -- resolution --------------------------------------------------------------------------------


class Settings:
    """The settings of one topic, resolved; typed properties for the ones explain reads.
    (A plain class, not a frozen dataclass: every command imports this module, and a
    dataclass costs start-up to define, issue 45.)"""

    __slots__ = ("entries", "notes", "topic")

    def __init__(
        self, topic: str | None, entries: tuple[Setting, ...], notes: tuple[str, ...] = ()
    ) -> None:
        self.topic, self.entries, self.notes = topic, entries, notes

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Settings):
            return NotImplemented
        return (self.topic, self.entries, self.notes) == (other.topic, other.entries, other.notes)

    def __hash__(self) -> int:
        return hash((self.topic, self.entries, self.notes))

    def __repr__(self) -> str:
        return f"Settings(topic={self.topic!r}, {len(self.entries)} entries)"

    def __getitem__(self, name: str) -> Setting:
        found = self.get(name)
        if found is None:
            raise KeyError(name)
        return found

    def _int(self, name: str) -> int:
        value = self[name].value
        assert isinstance(value, int) and not isinstance(value, bool)
        return value

    def _float(self, name: str) -> float:
        value = self[name].value
        assert isinstance(value, int | float)
        return float(value)

    def get(self, name: str) -> Setting | None:
        return next((s for s in self.entries if s.name == name), None)

    @property
    def segment_bytes_name(self) -> str:
        """LogConfig.segmentSize: internal.segment.bytes when set, else segment.bytes."""
        return (
            "segment.bytes"
            if self.get("internal.segment.bytes") is None
            else ("internal.segment.bytes")
        )

    @property
    def segment_bytes(self) -> int:
        return self._int(self.segment_bytes_name)

    @property
    def segment_ms(self) -> int:
        return self._int("segment.ms")

    @property
    def segment_jitter_ms(self) -> int:
        return self._int("segment.jitter.ms")

    @property
    def segment_index_bytes(self) -> int:
        return self._int("segment.index.bytes")

    @property
    def index_interval_bytes(self) -> int:
        return self._int("index.interval.bytes")

    @property
    def retention_ms(self) -> int:
        return self._int("retention.ms")

    @property
    def retention_bytes(self) -> int:
        return self._int("retention.bytes")

    @property
    def cleanup_policy(self) -> tuple[str, ...]:
        value = self["cleanup.policy"].value
        assert isinstance(value, tuple)
        return value

    @property
    def compact(self) -> bool:
        """LogConfig.compact: the policy list, lowercased, holds "compact"."""
        return "compact" in (p.lower() for p in self.cleanup_policy)

    @property
    def delete(self) -> bool:
        return "delete" in (p.lower() for p in self.cleanup_policy)

    @property
    def delete_retention_ms(self) -> int:
        return self._int("delete.retention.ms")

    @property
    def min_compaction_lag_ms(self) -> int:
        return self._int("min.compaction.lag.ms")

    @property
    def max_compaction_lag_ms(self) -> int:
        return self._int("max.compaction.lag.ms")

    @property
    def min_cleanable_dirty_ratio(self) -> float:
        return self._float("min.cleanable.dirty.ratio")

    @property
    def max_segment_ms(self) -> int:
        """LogConfig.maxSegmentMs: a compacted topic rolls by max.compaction.lag.ms if smaller."""
        if self.compact and self.max_compaction_lag_ms > 0:
            return min(self.max_compaction_lag_ms, self.segment_ms)
        return self.segment_ms

    @property
    def max_roll_jitter_ms(self) -> int:
        """LogConfig.randomSegmentJitter draws from [0, min(segment.jitter.ms, segment.ms))."""
        return min(self.segment_jitter_ms, self.segment_ms)

    @property
    def log_cleaner_enable(self) -> bool:
        value = self["log.cleaner.enable"].value
        assert isinstance(value, bool)
        return value

    @property
    def log_cleaner_threads(self) -> int:
        return self._int("log.cleaner.threads")

    @property
    def cleaner_runs(self) -> bool:
        """LogManager creates the cleaner only when enabled, with this many threads."""
        return self.log_cleaner_enable and self.log_cleaner_threads > 0

    @property
    def dedupe_buffer_bytes_per_thread(self) -> int:
        """LogCleaner: min(log.cleaner.dedupe.buffer.size / threads, Integer.MAX_VALUE)."""
        total = self._int("log.cleaner.dedupe.buffer.size")
        return min(total // max(self.log_cleaner_threads, 1), INT32[1])

    @property
    def dedupe_load_factor(self) -> float:
        return self._float("log.cleaner.io.buffer.load.factor")

    @property
    def retention_check_interval_ms(self) -> int:
        return self._int("log.retention.check.interval.ms")

    def to_dict(self) -> dict[str, Value]:
        return {s.name: s.value for s in self.entries}


def _refusal(name: str, raw: RawSetting) -> str | None:
    """Why Kafka's validator refuses ``raw`` for config ``name`` (None: it takes it)."""
    key = TOPIC_CONFIGS[name].key if name in TOPIC_CONFIGS else BROKER_CONFIGS[name]
    try:
        key.parse(raw.raw)
    except ValueError as e:
        return str(e)
    return None


def _parse(key: ConfigKey, raw: RawSetting) -> Value:
    try:
        return key.parse(raw.raw)
    except ValueError as e:
        raise ConfigError(raw.origin, str(e)) from None


def _layers(
    layers: ConfigLayers, topic: str | None
) -> tuple[dict[str, RawSetting], dict[str, RawSetting], list[str]]:
    """The topic layer and the broker layer, each name from the first layer that sets it
    (module docstring), and the notes on what was left out."""
    notes: list[str] = []
    topic_layer: dict[str, RawSetting] = {}
    broker_layer: dict[str, RawSetting] = dict(layers.server_properties)
    if layers.metadata is not None:
        notes.extend(layers.metadata.notes)
        # Kafka accepted these when they were set; a validator that changed since (4.0 raised
        # segment.bytes' minimum) refuses some: those are said and left out, not fatal
        for into, image_layer in (
            (broker_layer, layers.metadata.broker_layer()),
            (topic_layer, layers.metadata.topic_layer(topic)),
        ):
            for name, raw in image_layer.items():
                problem = _refusal(name, raw)
                if problem is None:
                    into[name] = raw
                else:
                    notes.append(f"{raw.origin}: {problem}; not used")
    if layers.describe is not None:
        broker_layer.update(layers.describe.brokers)
        described = layers.describe.topics.get(topic) if topic is not None else None
        if described is not None:
            topic_layer.update(described)
        elif layers.describe.topics:
            notes.append(f"{layers.describe.path} has no section for topic {topic}")
    for raw in layers.options:
        (broker_layer if raw.name in BROKER_CONFIGS else topic_layer)[raw.name] = raw
    return topic_layer, broker_layer, notes


def _broker_only(name: str, broker_layer: Mapping[str, RawSetting]) -> Setting:
    key = BROKER_CONFIGS[name]
    given = broker_layer.get(name)
    if given is None:
        assert key.default is not None
        return Setting(name, key.default, Source.DEFAULT, "")
    return Setting(name, _parse(key, given), given.source, given.origin)


def broker_setting(layers: ConfigLayers, name: str) -> Setting:
    """A broker config that no topic config overrides (``num.recovery.threads.per.data.dir``),
    from the first layer that sets it: --config, the describe output's broker section, the
    metadata image's dynamic broker configs, server.properties, else Kafka's default."""
    _, broker_layer, _ = _layers(layers, None)
    return _broker_only(name, broker_layer)


def resolve_settings(layers: ConfigLayers, topic: str | None) -> Settings:
    """The settings of ``topic``, each from the first layer that sets it (module docstring)."""
    topic_layer, broker_layer, notes = _layers(layers, topic)
    internal = _internal_topic_layer(topic, broker_layer)
    resolved = (
        _resolve_topic(c, topic_layer, internal, broker_layer) for c in TOPIC_CONFIGS.values()
    )
    entries = [s for s in resolved if s is not None]
    entries += [_broker_only(name, broker_layer) for name in BROKER_ONLY]
    settings = Settings(topic, tuple(entries), tuple(notes))
    lag = settings["min.compaction.lag.ms"]
    if settings.min_compaction_lag_ms > settings.max_compaction_lag_ms:
        # LogConfig.validateValues
        raise ConfigError(
            lag.origin or "min.compaction.lag.ms",
            f"conflict topic config setting min.compaction.lag.ms "
            f"({settings.min_compaction_lag_ms}) > max.compaction.lag.ms "
            f"({settings.max_compaction_lag_ms})",
        )
    return settings


def _internal_topic_layer(
    topic: str | None, broker: Mapping[str, RawSetting]
) -> dict[str, Setting]:
    """What Kafka set on ``topic`` when it created it, if it is one of its internal topics;
    a value copied from a broker config names that config and where its value came from."""
    layer: dict[str, Setting] = {}
    for name, spec in INTERNAL_TOPIC_CONFIGS.get(topic or "", {}).items():
        key = TOPIC_CONFIGS[name].key
        if isinstance(spec, str):
            value, why = key.parse(spec), f"{name}={spec}"
        else:
            broker_key = BROKER_CONFIGS[spec[0]]
            raw = broker.get(broker_key.name)
            if raw is None:
                assert broker_key.default is not None
                value, why = broker_key.default, f"{broker_key.name} default"
            else:
                value = _parse(broker_key, raw)
                why = f"{broker_key.name}={raw.raw.strip()} from {raw.origin}"
        layer[name] = Setting(
            name, value, Source.INTERNAL_TOPIC, f"{Source.INTERNAL_TOPIC.value}: {why}"
        )
    return layer


def _resolve_topic(
    config: TopicConfig,
    topic_layer: Mapping[str, RawSetting],
    internal: Mapping[str, Setting],
    broker: Mapping[str, RawSetting],
) -> Setting | None:
    """The topic config's setting; None for an unset config without a default."""
    key = config.key
    given = topic_layer.get(key.name)
    if given is not None:
        return Setting(key.name, _parse(key, given), given.source, given.origin)
    if key.name in internal:
        return internal[key.name]
    for synonym in config.synonyms:
        raw = broker.get(synonym.name)
        if raw is None:
            continue
        value = _parse(BROKER_CONFIGS[synonym.name], raw)
        assert isinstance(value, int | float | tuple)
        if synonym.factor != 1:
            assert isinstance(value, int)
            value *= synonym.factor
        if key.name == "retention.ms" and isinstance(value, int) and value < 0:
            value = -1  # AbstractKafkaConfig.logRetentionTimeMillis: any negative is -1
        origin = f"{raw.origin} ({synonym.name}={raw.raw.strip()})"
        return Setting(key.name, value, raw.source, origin)
    if key.default is None:
        return None
    return Setting(key.name, key.default, Source.DEFAULT, "")
