"""The options several commands share, Kafka settings as options (validated as Kafka validates
them), and how a command's options are applied in --help order.

Kept light on purpose: it is imported at start-up; what an option needs to check its value it
imports when the option is given.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

import click

if TYPE_CHECKING:
    from kdump.storage import ObjectStore

F = TypeVar("F", bound=Callable[..., Any])


def apply(f: F, options: Sequence[Callable[[Any], Any]]) -> F:
    """Decorate ``f`` with ``options`` so they show in this order in --help."""
    for option in reversed(options):
        f = option(f)
    return f


def units_callback(parser: str) -> Callable[[click.Context, click.Parameter, str | None], Any]:
    """A click callback reading an option's text with ``kdump.units.<parser>`` (imported when
    the option is given: start-up stays light); its ValueError is click's BadParameter."""

    def parse(ctx: click.Context, param: click.Parameter, value: str | None) -> Any:
        if value is None:
            return None
        import kdump.units

        try:
            return getattr(kdump.units, parser)(value)
        except ValueError as e:
            raise click.BadParameter(str(e), ctx=ctx, param=param) from None

    return parse


_timestamp = units_callback("parse_timestamp")


def timestamp_option(*names: str, help: str) -> Callable[[F], F]:
    """An option taking epoch milliseconds or ISO-8601 with a zone."""
    return click.option(*names, callback=_timestamp, default=None, metavar="TIME", help=help)


def _now(ctx: click.Context, param: click.Parameter, value: str | None) -> int:
    found = _timestamp(ctx, param, value)
    return time.time_ns() // 1_000_000 if found is None else found


def now_option(f: F) -> F:
    """--now: the time answers are given at (what-if questions); the clock when not given."""
    return click.option(
        "--now",
        callback=_now,
        default=None,
        metavar="TIME",
        help="Answer as at this time: epoch ms or ISO-8601 with a zone (default: now).",
    )(f)


def format_option(*choices: str, default: str = "text") -> Callable[[F], F]:
    return click.option(
        "--format",
        "fmt",
        type=click.Choice(choices),
        default=default,
        show_default=True,
        help="Output: text for people, " + " or ".join(c for c in choices if c != "text") + ".",
    )


def max_batch_bytes_option(help: str = "Largest decompressed batch accepted.") -> Any:
    """--max-batch-bytes: kdump's bound on a batch's decompressed size (not a Kafka setting)."""
    from kdump.format.layout import DEFAULT_MAX_BATCH_BYTES

    return click.option(
        "--max-batch-bytes",
        type=click.IntRange(min=1),
        default=DEFAULT_MAX_BATCH_BYTES,
        show_default=True,
        help=help,
    )


def fail_on_option(
    help: str = "Lowest severity that makes the exit code non-zero.",
) -> Callable[[F], F]:
    """--fail-on: the lowest finding severity that makes the exit code non-zero."""
    return click.option(
        "--fail-on",
        type=click.Choice(["error", "warning", "never"]),
        default="error",
        show_default=True,
        help=help,
    )


def quiet_option(f: F) -> F:
    return click.option(
        "--quiet", "-q", is_flag=True, help="Only warnings and errors: no tables, no progress."
    )(f)


def _jobs(ctx: click.Context, param: click.Parameter, value: int | None) -> int:
    if value is not None:
        return value
    from kdump.parallel import default_jobs

    return default_jobs()


def jobs_option(f: F) -> F:
    """--jobs: processes to work in (output and exit code are the same for any number)."""
    return click.option(
        "--jobs",
        "-j",
        type=click.IntRange(min=1),
        default=None,
        callback=_jobs,
        help="Work in this many processes [default: the CPUs this process may use].",
    )(f)


def dump_jobs_option(f: F) -> F:
    """--jobs for the dumps, one process unless asked: forked workers then write their pieces
    of the output themselves, in turn (issue 44 point 8; kdump.render.dump_jobs)."""
    return click.option(
        "--jobs",
        "-j",
        type=click.IntRange(min=1),
        default=1,
        show_default=True,
        help="Dump in this many processes, each writing its pieces (files, parts of a log) "
        "to standard output in turn: the same output, faster on several CPUs.",
    )(f)


def no_progress_option(f: F) -> F:
    """--quiet for commands whose output it does not change: no progress display."""
    return click.option(
        "--quiet", "-q", is_flag=True, help="No progress display (there is none on a pipe)."
    )(f)


# -- Kafka settings as options ---------------------------------------------------------------


def config_options(f: F) -> F:
    """--config, --server-properties, --describe-output: a topic's settings, as explain and
    report resolve them (kdump.config.ConfigLayers; ``config_layers`` reads them)."""
    return apply(
        f,
        [
            click.option(
                "--config",
                "configs",
                multiple=True,
                metavar="NAME=VALUE",
                help="A topic setting as Kafka names it (segment.bytes=1048576), or a broker one "
                "(log.cleaner.dedupe.buffer.size=...). Repeatable; wins over the files.",
            ),
            click.option(
                "--server-properties",
                type=click.Path(dir_okay=False),
                default=None,
                help="The broker's server.properties: its log.* settings are the topic defaults.",
            ),
            click.option(
                "--describe-output",
                type=click.Path(dir_okay=False),
                default=None,
                help="Output of kafka-configs.sh --describe --all (topics, several welcome) "
                "saved to a file.",
            ),
            metadata_option,
        ],
    )


metadata_option = click.option(
    "--metadata",
    type=click.Path(),
    default=None,
    metavar="DIR",
    help="A KRaft metadata log (__cluster_metadata-0, a log dir holding one, or a snapshot): "
    "topic configs from its image. [default: the __cluster_metadata-0 of the log dir read]",
)


def config_layers(
    configs: tuple[str, ...],
    server_properties: str | None,
    describe_output: str | None,
    *,
    paths: tuple[str, ...] = (),
    metadata: str | None = None,
) -> Any:
    """The ConfigLayers of --config, --server-properties, --describe-output and the metadata
    image (``--metadata``, else the ``__cluster_metadata-0`` beside ``paths``)."""
    from kdump.config import (
        ConfigLayers,
        parse_config_option,
        read_describe_output,
        read_server_properties,
    )
    from kdump.kraft.configs import find_metadata_configs

    return ConfigLayers(
        options=tuple(parse_config_option(c) for c in configs),
        describe=None if describe_output is None else read_describe_output(describe_output),
        server_properties={}
        if server_properties is None
        else read_server_properties(server_properties),
        metadata=find_metadata_configs(paths, metadata),
    )


class KafkaOption(click.Option):
    """An option holding a Kafka setting (``key``, from kdump.config.OPTION_CONFIGS)."""

    def __init__(self, *args: Any, key: Any, **kw: Any) -> None:
        super().__init__(*args, **kw)
        self.key = key


def kafka_option(
    flag: str, config: str, help: str, *, unset: str | None = None
) -> Callable[[F], F]:
    """An option holding a Kafka setting: its default and validator are Kafka's (defined once,
    in kdump.config.OPTION_CONFIGS); a value Kafka would refuse ends the run with one line in
    Kafka's words (exit code 3). ``unset``: the option has no default, and this says what
    happens without it."""
    from kdump.config import OPTION_CONFIGS
    from kdump.errors import ConfigError

    key = OPTION_CONFIGS[config]

    def check(ctx: click.Context, param: click.Parameter, value: Any) -> Any:
        if value is None:
            return None
        try:
            return key.parse(str(value))
        except ValueError as e:
            raise ConfigError(f"{flag} {value}", str(e)) from None

    shown = f"{key.default if unset is None else unset}"
    if key.validator is not None:
        shown += f"; {key.validator.describe()}"
    return click.option(
        flag,
        cls=KafkaOption,
        key=key,
        type=str,  # parsed as Kafka parses it (ConfigDef.parseType), in Kafka's words
        metavar=key.type.value,
        default=None if unset else key.default,
        callback=check,
        help=f"{config}: {help}  [default: {shown}]",
    )


def output_file(ctx: click.Context, param: click.Parameter, value: Any) -> Any:
    """A file a command writes (--prom, report's -o), checked as the command line is read: a
    run that did all its work and printed its verdict, then could not write, hid that verdict
    behind exit 3."""
    if value is not None:
        from kdump.storage.outputs import output_directory

        output_directory(value)
    return value


def prom_option(f: F) -> F:
    """--prom FILE: the run's metrics for node_exporter's textfile collector."""
    return click.option(
        "--prom",
        type=click.Path(dir_okay=False),
        default=None,
        callback=output_file,
        metavar="FILE",
        help="Also write the run's metrics to FILE (Prometheus text format, for "
        "node_exporter's textfile collector), atomically; written on failure too.",
    )(f)


# -- object stores (kdump.storage) ------------------------------------------------------------


def _private_key(ctx: click.Context, param: click.Parameter, values: tuple[str, ...]) -> Any:
    keys = []
    for value in values:
        key_id, sep, path = value.partition("=")
        if not sep:
            key_id, path = "", value
        try:
            with open(path, "rb") as f:
                keys.append((key_id or None, f.read(1 << 20)))
        except OSError as e:
            raise click.BadParameter(f"{path}: {e.strerror or e}", ctx=ctx, param=param) from None
    return tuple(keys)


_size = units_callback("parse_bytes")


def store_options(f: F) -> F:
    """How URLs (s3://, gs://, az://, file://) are read: --endpoint-url, --anon,
    --private-key, --read-ahead: the command builds its ObjectStore of them (``object_store``)."""
    return apply(
        f,
        [
            click.option(
                "--endpoint-url",
                default=None,
                metavar="URL",
                help="An S3-compatible store's endpoint (MinIO, Ceph...); default "
                "AWS_ENDPOINT_URL, else AWS. Credentials: the provider's standard chain "
                "(AWS_ACCESS_KEY_ID..., AWS_PROFILE, instance roles; gcloud; Azure).",
            ),
            click.option("--anon", is_flag=True, help="Read a public bucket without credentials."),
            click.option(
                "--private-key",
                "private_keys",
                multiple=True,
                callback=_private_key,
                metavar="[ID=]FILE",
                help="PEM private key of Aiven's encryption key pair ID (without ID: any); "
                "repeatable.",
            ),
            click.option(
                "--read-ahead",
                callback=_size,
                default=None,
                metavar="BYTES",
                help="Bytes of a remote .log fetched per request [default: 16MiB].",
            ),
        ],
    )


def given_store(kw: dict[str, Any]) -> ObjectStore | None:
    """object_store's, None where no store option was given: each reader of a URL then builds
    the default one, and a run over local files loads none of the object stores' modules."""
    keys = ("endpoint_url", "anon", "private_keys", "read_ahead")
    if any(kw.get(k) for k in keys):
        return object_store(kw)
    for k in keys:
        kw.pop(k, None)
    return None


def object_store(kw: dict[str, Any]) -> ObjectStore:
    """Take the store options out of a command's keyword arguments: the ObjectStore every URL
    of the run is read through (handed down, never set for the process)."""
    from kdump.storage import ObjectStore, StoreOptions
    from kdump.storage.remote.options import DEFAULT_READ_AHEAD

    given: dict[str, Any] = {
        k: kw.pop(k) for k in ("endpoint_url", "anon", "private_keys", "read_ahead") if k in kw
    }
    return ObjectStore(
        StoreOptions(
            endpoint_url=given.get("endpoint_url"),
            anon=given.get("anon", False),
            private_keys=given.get("private_keys", ()),
            read_ahead=given.get("read_ahead") or DEFAULT_READ_AHEAD,
        )
    )
