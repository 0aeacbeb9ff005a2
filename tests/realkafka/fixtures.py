"""The pytest side of the harness: the release and the brokers as session fixtures, shared by
every ``tests/test_kafka_*.py`` scenario (loaded by tests/conftest.py's ``pytest_plugins``).

A missing part (Java, Maven, the release's jars, a free port, a broker that will not start) is
a skip naming it, so a machine without Java still runs the rest of the suite; where
``KDUMP_REQUIRE_KAFKA=1`` (``.ci/run`` sets it) it is a failure instead, so CI cannot go green
without having run the scenarios.
"""

from __future__ import annotations

import os
from collections.abc import Generator, Iterator
from pathlib import Path
from typing import NoReturn

import pytest

from .broker import Broker, Cluster
from .release import Release, Unavailable, release

DEFAULT_VERSION = "4.4.0"
REQUIRE = "KDUMP_REQUIRE_KAFKA"


def kafka_version() -> str:
    """The release the scenarios run against: ``$KDUMP_KAFKA_VERSION``, else 4.4.0."""
    return os.environ.get("KDUMP_KAFKA_VERSION") or DEFAULT_VERSION


def unavailable(reason: str) -> NoReturn:
    """Skip (locally) or fail (``KDUMP_REQUIRE_KAFKA=1``, CI) for want of a part."""
    message = f"real Kafka {kafka_version()} unavailable: {reason}"
    if os.environ.get(REQUIRE) == "1":
        pytest.fail(message, pytrace=False)
    pytest.skip(message)


@pytest.hookimpl(wrapper=True)
def pytest_pyfunc_call(pyfuncitem: pytest.Function) -> Generator[None, object, object]:
    """A part found missing inside a test (a tool of java/ that does not compile against this
    release) is a skip, or in CI a failure, as in a fixture."""
    try:
        return (yield)
    except Unavailable as e:
        unavailable(str(e))


def start(cluster: Cluster) -> Cluster:
    try:
        cluster.start()
    except Unavailable as e:
        cluster.kill()
        unavailable(str(e))
    return cluster


@pytest.fixture(scope="session")
def kafka_release() -> Release:
    """The release of ``kafka_version()``, resolved into ~/.m2, the tools of java/ built."""
    try:
        found = release(kafka_version())
        _ = found.tools_dir
    except Unavailable as e:
        unavailable(str(e))
    return found


@pytest.fixture(scope="session")
def kafka_single(
    kafka_release: Release, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Cluster]:
    """One combined-mode node for the whole session: scenarios that do not interfere share it
    (each its own topics); one that stops or kills it starts it again."""
    cluster = Cluster(kafka_release, tmp_path_factory.mktemp("kafka-single"))
    start(cluster)
    yield cluster
    cluster.kill()


def running(cluster: Cluster) -> Broker:
    """The shared node of ``cluster``, running (started again if an earlier test left it
    stopped); for fixtures of a wider scope than ``kafka_broker``."""
    broker = cluster.brokers[0]
    if not broker.running:
        start(cluster)
    return broker


@pytest.fixture
def kafka_broker(kafka_single: Cluster) -> Broker:
    """The shared node, running (started again if an earlier test left it stopped)."""
    return running(kafka_single)


@pytest.fixture(scope="session")
def kafka_three(
    kafka_release: Release, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Cluster]:
    """Three nodes: node 1 the controller (and a broker), nodes 2 and 3 brokers only."""
    cluster = Cluster(kafka_release, tmp_path_factory.mktemp("kafka-three"), nodes=3)
    start(cluster)
    yield cluster
    cluster.kill()


def client_log(directory: Path) -> Path:
    """Where the Java clients a test runs write their log lines: ``clients.log`` in its
    directory."""
    directory.mkdir(parents=True, exist_ok=True)
    return directory / "clients.log"
