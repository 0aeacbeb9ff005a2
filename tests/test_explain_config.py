"""kdump.config: Kafka's defaults, validators, broker synonyms and hours/minutes resolution, and
the three inputs: --config, server.properties, kafka-configs.sh --describe --all output."""

from __future__ import annotations

import pickle
from pathlib import Path

import pytest

from kdump.config import (
    ConfigLayers,
    MetadataConfigs,
    Source,
    parse_config_option,
    read_describe_output,
    read_server_properties,
    resolve_settings,
)
from kdump.errors import ConfigError

# What `kafka-configs.sh --bootstrap-server ... --entity-type topics --describe --all` prints
# (ConfigCommand.describeResourceConfig): one section per topic, entries sorted by name.
DESCRIBE_ALL = """\
All configs for topic orders are:
  cleanup.policy=delete sensitive=false synonyms={DEFAULT_CONFIG:log.cleanup.policy=delete}
  compression.type=producer sensitive=false synonyms={DEFAULT_CONFIG:compression.type=producer}
  delete.retention.ms=86400000 sensitive=false synonyms={DEFAULT_CONFIG:log.cleaner.delete.retention.ms=86400000}
  file.delete.delay.ms=60000 sensitive=false synonyms={DEFAULT_CONFIG:log.segment.delete.delay.ms=60000}
  flush.messages=9223372036854775807 sensitive=false synonyms={DEFAULT_CONFIG:log.flush.interval.messages=9223372036854775807}
  flush.ms=9223372036854775807 sensitive=false synonyms={}
  follower.replication.throttled.replicas= sensitive=false synonyms={}
  index.interval.bytes=4096 sensitive=false synonyms={DEFAULT_CONFIG:log.index.interval.bytes=4096}
  leader.replication.throttled.replicas= sensitive=false synonyms={}
  local.retention.bytes=-2 sensitive=false synonyms={DEFAULT_CONFIG:log.local.retention.bytes=-2}
  local.retention.ms=-2 sensitive=false synonyms={DEFAULT_CONFIG:log.local.retention.ms=-2}
  max.compaction.lag.ms=9223372036854775807 sensitive=false synonyms={DEFAULT_CONFIG:log.cleaner.max.compaction.lag.ms=9223372036854775807}
  max.message.bytes=1048588 sensitive=false synonyms={DEFAULT_CONFIG:message.max.bytes=1048588}
  message.timestamp.after.max.ms=3600000 sensitive=false synonyms={DEFAULT_CONFIG:log.message.timestamp.after.max.ms=3600000}
  message.timestamp.before.max.ms=9223372036854775807 sensitive=false synonyms={DEFAULT_CONFIG:log.message.timestamp.before.max.ms=9223372036854775807}
  message.timestamp.type=CreateTime sensitive=false synonyms={DEFAULT_CONFIG:log.message.timestamp.type=CreateTime}
  min.cleanable.dirty.ratio=0.5 sensitive=false synonyms={DEFAULT_CONFIG:log.cleaner.min.cleanable.ratio=0.5}
  min.compaction.lag.ms=0 sensitive=false synonyms={DEFAULT_CONFIG:log.cleaner.min.compaction.lag.ms=0}
  min.insync.replicas=2 sensitive=false synonyms={STATIC_BROKER_CONFIG:min.insync.replicas=2, DEFAULT_CONFIG:min.insync.replicas=1}
  preallocate=false sensitive=false synonyms={DEFAULT_CONFIG:log.preallocate=false}
  remote.storage.enable=false sensitive=false synonyms={}
  retention.bytes=-1 sensitive=false synonyms={DEFAULT_CONFIG:log.retention.bytes=-1}
  retention.ms=3600000 sensitive=false synonyms={DYNAMIC_TOPIC_CONFIG:retention.ms=3600000, STATIC_BROKER_CONFIG:log.retention.hours=72, DEFAULT_CONFIG:log.retention.hours=168}
  segment.bytes=1048576 sensitive=false synonyms={DYNAMIC_TOPIC_CONFIG:segment.bytes=1048576, DEFAULT_CONFIG:log.segment.bytes=1073741824}
  segment.index.bytes=10485760 sensitive=false synonyms={DEFAULT_CONFIG:log.index.size.max.bytes=10485760}
  segment.jitter.ms=0 sensitive=false synonyms={}
  segment.ms=604800000 sensitive=false synonyms={}
  unclean.leader.election.enable=false sensitive=false synonyms={DEFAULT_CONFIG:unclean.leader.election.enable=false}
All configs for topic __consumer_offsets are:
  cleanup.policy=compact,delete sensitive=false synonyms={DYNAMIC_TOPIC_CONFIG:cleanup.policy=compact,delete, DEFAULT_CONFIG:log.cleanup.policy=delete}
  compression.type=producer sensitive=false synonyms={DYNAMIC_TOPIC_CONFIG:compression.type=producer, DEFAULT_CONFIG:compression.type=producer}
  retention.ms=604800000 sensitive=false synonyms={STATIC_BROKER_CONFIG:log.retention.hours=168, DEFAULT_CONFIG:log.retention.hours=168}
  segment.bytes=104857600 sensitive=false synonyms={DYNAMIC_TOPIC_CONFIG:segment.bytes=104857600, DEFAULT_CONFIG:log.segment.bytes=1073741824}
"""  # noqa: E501

SERVER_PROPERTIES = """\
# The id of the broker. This must be set to a unique integer for each broker.
broker.id=0
log.dirs=/var/lib/kafka/data
num.partitions=3
# The minimum age of a log file to be eligible for deletion due to age
log.retention.hours=72
log.segment.bytes=536870912
log.roll.hours = 24
log.retention.check.interval.ms=300000
log.cleaner.dedupe.buffer.size=268435456
log.cleaner.threads=2
"""


def layers(
    tmp_path: Path,
    *options: str,
    describe: str | None = None,
    server: str | None = None,
) -> ConfigLayers:
    d = s = None
    if describe is not None:
        (tmp_path / "describe.txt").write_text(describe)
        d = read_describe_output(tmp_path / "describe.txt")
    if server is not None:
        (tmp_path / "server.properties").write_text(server)
        s = read_server_properties(tmp_path / "server.properties")
    return ConfigLayers(tuple(parse_config_option(o) for o in options), d, s or {})


def test_kafka_defaults() -> None:
    s = resolve_settings(ConfigLayers(), "t")
    assert s.to_dict() == {
        "segment.bytes": 1073741824,
        "segment.ms": 604800000,
        "segment.jitter.ms": 0,
        "segment.index.bytes": 10485760,
        "index.interval.bytes": 4096,  # LogConfig: DEFAULT_INDEX_INTERVAL_BYTES
        "retention.ms": 604800000,
        "retention.bytes": -1,
        "cleanup.policy": ("delete",),
        "delete.retention.ms": 86400000,
        "min.compaction.lag.ms": 0,
        "max.compaction.lag.ms": 2**63 - 1,
        "min.cleanable.dirty.ratio": 0.5,
        "log.cleaner.enable": True,
        "log.cleaner.threads": 1,
        "log.cleaner.dedupe.buffer.size": 134217728,
        "log.cleaner.io.buffer.load.factor": 0.9,
        "log.retention.check.interval.ms": 300000,
    }
    assert all(e.source is Source.DEFAULT for e in s.entries)
    assert s.dedupe_buffer_bytes_per_thread == 134217728


def test_describe_output_picks_the_partitions_topic(tmp_path: Path) -> None:
    given = layers(tmp_path, describe=DESCRIBE_ALL)
    orders = resolve_settings(given, "orders")
    assert (orders.retention_ms, orders.segment_bytes) == (3600000, 1048576)
    assert orders["retention.ms"].source is Source.DESCRIBE
    assert orders["retention.ms"].origin.endswith(":24 (DYNAMIC_TOPIC_CONFIG)")
    offsets = resolve_settings(given, "__consumer_offsets")
    assert offsets.cleanup_policy == ("compact", "delete")
    assert offsets.compact and offsets.delete
    assert offsets.segment_bytes == 104857600
    # a topic the file does not describe: Kafka's defaults, and a note saying so
    other = resolve_settings(given, "payments")
    assert other.segment_bytes == 1073741824
    assert other.notes and "no section for topic payments" in other.notes[0]


def test_server_properties_synonyms_and_units(tmp_path: Path) -> None:
    s = resolve_settings(layers(tmp_path, server=SERVER_PROPERTIES), "t")
    assert s.retention_ms == 72 * 3_600_000
    assert s["retention.ms"].origin.endswith("server.properties:6 (log.retention.hours=72)")
    assert s.segment_ms == 24 * 3_600_000
    assert s.segment_bytes == 536870912
    # the dedupe buffer is shared by the cleaner threads
    assert s.dedupe_buffer_bytes_per_thread == 268435456 // 2


@pytest.mark.parametrize(
    ("props", "expected"),
    [
        ("log.retention.hours=1\nlog.retention.minutes=30\n", 30 * 60_000),
        ("log.retention.hours=1\nlog.retention.minutes=30\nlog.retention.ms=5\n", 5),
        ("log.retention.ms=-5\n", -1),  # any negative broker retention collapses to -1
        ("log.retention.hours=-3\n", -1),
    ],
)
def test_retention_ms_resolution(tmp_path: Path, props: str, expected: int) -> None:
    assert resolve_settings(layers(tmp_path, server=props), "t").retention_ms == expected


def test_precedence(tmp_path: Path) -> None:
    given = layers(
        tmp_path,
        "segment.bytes=2097152",
        "log.roll.ms=1000",
        describe=DESCRIBE_ALL,
        server=SERVER_PROPERTIES,
    )
    s = resolve_settings(given, "orders")
    assert (s.segment_bytes, s["segment.bytes"].source) == (2097152, Source.OPTION)
    assert (s.retention_ms, s["retention.ms"].source) == (3600000, Source.DESCRIBE)
    # the describe output's topic section says segment.ms: the topic layer beats the broker's
    assert s.segment_ms == 604800000
    # one broker map: --config log.roll.ms beside server.properties' log.roll.hours=24, and
    # log.roll.ms comes first among segment.ms's synonyms
    t = resolve_settings(layers(tmp_path, "log.roll.ms=1000", server=SERVER_PROPERTIES), "x")
    assert (t.segment_ms, t["segment.ms"].source) == (1000, Source.OPTION)


@pytest.mark.parametrize(
    ("option", "message"),
    [
        (
            "segment.bytes=1000",
            "Invalid value 1000 for configuration segment.bytes: Value must be at least 1048576",
        ),
        (
            "retention.ms=abc",
            "Invalid value abc for configuration retention.ms: Not a number of type LONG",
        ),
        ("segment.bytes=3000000000", "Not a number of type INT"),
        ("retention.ms=-2", "Value must be at least -1"),
        ("min.cleanable.dirty.ratio=1.5", "Value must be no more than 1"),
        (
            "cleanup.policy=compact,compact",
            "Configuration 'cleanup.policy' values must not be duplicated.",
        ),
        (
            "cleanup.policy=compact,keep",
            "Invalid value keep for configuration cleanup.policy: "
            "String must be one of: compact, delete",
        ),
        ("segment.index.bytes=3", "Value must be at least 4"),
        ("log.cleaner.enable=maybe", "Expected value to be either true or false"),
        (
            "min.compaction.lag.ms=10",
            "conflict topic config setting min.compaction.lag.ms (10) > max.compaction.lag.ms (5)",
        ),
    ],
)
def test_invalid_values_name_the_setting_and_why(option: str, message: str) -> None:
    options = [parse_config_option(option)]
    if option.startswith("min.compaction"):
        options.append(parse_config_option("max.compaction.lag.ms=5"))
    with pytest.raises(ConfigError) as e:
        resolve_settings(ConfigLayers(tuple(options)), "t")
    assert message in str(e.value)
    assert str(e.value).startswith("--config ")


def test_option_syntax_and_unknown_names() -> None:
    with pytest.raises(ConfigError, match="expected name=value"):
        parse_config_option("segment.bytes")
    with pytest.raises(ConfigError, match="not a setting kdump reads"):
        parse_config_option("compression.type=zstd")
    # an empty cleanup.policy is valid (KAFKA-19112): neither compact nor delete
    s = resolve_settings(ConfigLayers((parse_config_option("cleanup.policy="),)), "t")
    assert s.cleanup_policy == () and not s.compact and not s.delete


def test_invalid_file_value_names_file_and_line(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as e:
        resolve_settings(layers(tmp_path, server="log.segment.bytes=100\n"), "t")
    assert "server.properties:1" in str(e.value)
    assert "Value must be at least 1048576" in str(e.value)


def test_describe_output_must_look_like_one(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match=r"not the output of kafka-configs\.sh"):
        layers(tmp_path, describe="segment.bytes=1048576\n")


def test_internal_segment_bytes_overrides_segment_bytes() -> None:
    s = resolve_settings(ConfigLayers((parse_config_option("internal.segment.bytes=20000"),)), "t")
    # LogConfig.segmentSize(): internal.segment.bytes when set (no 1 MiB minimum)
    assert (s.segment_bytes, s.segment_bytes_name) == (20000, "internal.segment.bytes")


def test_describe_output_broker_section_is_the_broker_layer(tmp_path: Path) -> None:
    brokers = (
        "All configs for broker 1 are:\n"
        "  log.retention.hours=72 sensitive=false "
        "synonyms={STATIC_BROKER_CONFIG:log.retention.hours=72, "
        "DEFAULT_CONFIG:log.retention.hours=168}\n"
        "  log.segment.bytes=null sensitive=true synonyms={}\n"
    )
    s = resolve_settings(layers(tmp_path, describe=brokers), "t")
    assert s.retention_ms == 72 * 3_600_000
    assert s["retention.ms"].source is Source.DESCRIBE
    assert s.segment_bytes == 1073741824  # a null (sensitive) value is no value


def test_settings_layers_that_set_nothing_pickle_for_spark_tasks() -> None:
    """Spark's tasks take the verify options, settings layers included, pickled: a layer that
    sets nothing is an immutable empty mapping that pickles (a MappingProxyType did not), equal
    to ``{}`` and to another such layer."""
    layers = ConfigLayers(metadata=MetadataConfigs("meta", 0))
    back = pickle.loads(pickle.dumps(layers, protocol=pickle.HIGHEST_PROTOCOL))
    assert back == layers
    assert back.server_properties == {} and len(back.server_properties) == 0
    assert back.metadata is not None and dict(back.metadata.topics) == {}
    with pytest.raises(TypeError):
        back.server_properties["x"] = None  # type: ignore[index]
    assert resolve_settings(back, "t") == resolve_settings(layers, "t")
