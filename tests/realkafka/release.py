"""A Kafka release's jars, resolved by Maven into the user's local repository, and the small Java
programs of ``java/`` compiled against them.

Resolution writes a throw-away pom naming ``kafka_2.13`` (the broker), ``kafka-storage`` (the
log layer: LogManager, LogLoader, Cleaner), ``kafka-tools`` (DumpLogSegments) and
``kafka-clients`` at the version, and asks ``mvn dependency:build-classpath`` for their
classpath: offline first (nothing is fetched when ~/.m2 has it all), then online. Kafka logs
through SLF4J and ships no binding in its poms (the release tarball adds one): the binding for
log4j-core's version on that classpath is resolved in a second step, so the broker's log lines
reach ``log4j2.properties``'s file. Both steps are cached under the cache directory, keyed by
version, and checked for missing jars before reuse.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
import subprocess
import zipfile
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

JAVA_SOURCES = Path(__file__).resolve().parent / "java"
LOG4J_CONFIG = Path(__file__).resolve().parent / "log4j2.properties"

LOG4J_FALLBACK = "2.24.3"
"""The log4j the 4.0 releases ship in libs/: their poms name no log4j at all (4.4's does)."""
PRODUCTION_JVM = (
    "-Xmx1G",
    "-Xms1G",
    "-server",
    "-XX:+UseG1GC",
    "-XX:MaxGCPauseMillis=20",
    "-XX:InitiatingHeapOccupancyPercent=35",
    "-XX:+ExplicitGCInvokesConcurrent",
    "-XX:MaxInlineLevel=15",
)
"""The JVM options kafka-server-start.sh and kafka-run-class.sh give a broker (KAFKA_HEAP_OPTS,
KAFKA_JVM_PERFORMANCE_OPTS): the full JIT, for measurements of what a broker does in production
(the tests' brokers start faster with C1 alone)."""
MAVEN_TIMEOUT = 900
"""A first resolution downloads ~90 jars (about 100 MB) from Maven Central."""


class Unavailable(Exception):
    """A part the real-broker tests need is missing or broken (Java, Maven, the release, a
    port); the message says which. The fixtures turn it into a skip, or a failure in CI."""


def cache_root() -> Path:
    """Where resolved classpaths and compiled tools are kept between runs."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(Path.home(), ".cache")
    return Path(base) / "kdump-tests" / "realkafka"


def java_home() -> Path:
    """The JDK the tests run Kafka with: $JAVA_HOME, else the one ``javac`` on PATH is from."""
    home = os.environ.get("JAVA_HOME")
    if home and (Path(home) / "bin" / "javac").exists():
        return Path(home)
    javac = shutil.which("javac")
    if javac is None:
        raise Unavailable("no JDK: javac is not on PATH and JAVA_HOME is not set")
    return Path(os.path.realpath(javac)).parent.parent


def _pom(version: str, extra: Sequence[tuple[str, str, str]] = ()) -> str:
    kafka = [
        ("org.apache.kafka", a, version)
        for a in ("kafka_2.13", "kafka-storage", "kafka-tools", "kafka-clients")
    ]
    deps = "".join(
        f"<dependency><groupId>{g}</groupId><artifactId>{a}</artifactId>"
        f"<version>{v}</version></dependency>"
        for g, a, v in [*kafka, *extra]
    )
    return (
        '<project xmlns="http://maven.apache.org/POM/4.0.0"><modelVersion>4.0.0</modelVersion>'
        "<groupId>kdump.tests</groupId><artifactId>realkafka</artifactId><version>1</version>"
        f"<dependencies>{deps}</dependencies></project>"
    )


def _build_classpath(work: Path, pom: str) -> list[str]:
    mvn = shutil.which("mvn")
    if mvn is None:
        raise Unavailable("Maven (mvn) is not on PATH: it fetches Kafka's jars")
    work.mkdir(parents=True, exist_ok=True)
    (work / "pom.xml").write_text(pom)
    out = work / "classpath.txt"
    failure = ""
    for offline in (["-o"], []):
        result = subprocess.run(
            [mvn, "-q", "-B", *offline, "dependency:build-classpath", f"-Dmdep.outputFile={out}"],
            cwd=work,
            capture_output=True,
            text=True,
            timeout=MAVEN_TIMEOUT,
            check=False,
        )
        if result.returncode == 0:
            return out.read_text().strip().split(os.pathsep)
        failure = (result.stdout + result.stderr).strip().splitlines()[-1:]
    raise Unavailable(f"mvn dependency:build-classpath failed in {work}: {' '.join(failure)}")


def _jar_version(classpath: Sequence[str], artifact: str) -> str | None:
    for jar in classpath:
        m = re.fullmatch(rf"{re.escape(artifact)}-([0-9][^/]*)\.jar", os.path.basename(jar))
        if m:
            return m[1]
    return None


def resolve_classpath(version: str) -> list[str]:
    """The jars of Kafka ``version``'s broker, storage, tools and clients, with an SLF4J
    binding to log4j; cached, resolved again when a jar has gone from ~/.m2."""
    work = cache_root() / version
    cached = work / "classpath.full"
    if cached.exists():
        jars = cached.read_text().split(os.pathsep)
        if all(os.path.exists(j) for j in jars):
            return jars
    jars = _build_classpath(work / "kafka", _pom(version))
    log4j = _jar_version(jars, "log4j-core") or LOG4J_FALLBACK
    slf4j = _jar_version(jars, "slf4j-api")
    if slf4j is None:
        raise Unavailable(f"Kafka {version}'s classpath has no slf4j-api")
    binding = "log4j-slf4j-impl" if slf4j.startswith("1.") else "log4j-slf4j2-impl"
    logging = [("org.apache.logging.log4j", a, log4j) for a in ("log4j-core", binding)]
    jars = _build_classpath(work / "logging", _pom(version, logging))
    cached.write_text(os.pathsep.join(jars))
    return jars


@dataclass(frozen=True)
class Release:
    """Kafka ``version``: its classpath, the JDK, and the tools of ``java/`` built for it."""

    version: str
    classpath: tuple[str, ...]
    java_home: Path

    @property
    def java(self) -> str:
        return str(self.java_home / "bin" / "java")

    @cached_property
    def tools_dir(self) -> Path:
        """``java/*.java`` compiled against the classpath, once per version and source hash (and
        JDK): together, or, where that fails (a tool written for another release's classes),
        each on its own, those that do not compile named in ``tool_errors``."""
        sources = sorted(JAVA_SOURCES.glob("*.java"))
        digest = hashlib.sha256(str(self.java_home).encode())
        for source in sources:
            digest.update(source.name.encode() + b"\0" + source.read_bytes())
        out = cache_root() / self.version / f"classes-{digest.hexdigest()[:16]}"
        if (out / ".complete").exists():
            return out
        staging = out.with_name(out.name + f".tmp{os.getpid()}")
        shutil.rmtree(staging, ignore_errors=True)
        staging.mkdir(parents=True)
        failed: dict[str, str] = {}
        if self._javac(staging, sources) is not None:
            for source in sources:
                error = self._javac(staging, [source])
                if error is not None:
                    failed[source.stem] = error
        (staging / ".failed.json").write_text(json.dumps(failed))
        (staging / ".complete").touch()
        shutil.rmtree(out, ignore_errors=True)
        staging.rename(out)
        return out

    def _javac(self, out: Path, sources: list[Path]) -> str | None:
        """Compile ``sources`` into ``out``; javac's complaint, or None."""
        result = subprocess.run(
            [
                str(self.java_home / "bin" / "javac"),
                "-nowarn",
                "-d",
                str(out),
                "-cp",
                os.pathsep.join([str(out), *self.classpath]),
                *map(str, sources),
            ],
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )
        return None if result.returncode == 0 else result.stderr

    @property
    def tool_errors(self) -> dict[str, str]:
        """The tools of ``java/`` that do not compile against this release, with javac's
        words."""
        failed = self.tools_dir / ".failed.json"
        if not failed.exists():  # compiled whole
            return {}
        found: dict[str, str] = json.loads(failed.read_text())
        return found

    @cached_property
    def dump_log_segments(self) -> str:
        """The class ``kafka-dump-log.sh`` runs: the tools module's Java port
        (``org.apache.kafka.tools``) where the release has it, else the broker's Scala one
        (``kafka.tools``, 4.0)."""
        for name in ("org/apache/kafka/tools/DumpLogSegments", "kafka/tools/DumpLogSegments"):
            for jar in self.classpath:
                with zipfile.ZipFile(jar) as z:
                    if name + ".class" in z.namelist():
                        return name.replace("/", ".")
        raise Unavailable(f"Kafka {self.version} has no DumpLogSegments")

    def java_command(
        self,
        main: str,
        *args: str,
        log: Path,
        heap: str = "256m",
        jvm: Sequence[str] | None = None,
    ) -> list[str]:
        """The command that runs class ``main`` (Kafka's, or one of ``java/``'s) on the
        release's classpath, with a small heap and a JIT that starts fast on two cores (or the
        JVM options ``jvm``, such as ``PRODUCTION_JVM``); its log lines (INFO and above) are
        appended to the file ``log``."""
        if main in self.tool_errors:
            first = self.tool_errors[main].strip().splitlines()[:2]
            raise Unavailable(
                f"java/{main}.java does not compile against Kafka {self.version}: "
                + " ".join(first)
            )
        props = {
            "log4j2.configurationFile": LOG4J_CONFIG.as_uri(),
            "kafka.logs.dir": str(log.parent),
            "kdump.log.file": log.name,
        }
        fast = (f"-Xmx{heap}", "-XX:+UseSerialGC", "-XX:TieredStopAtLevel=1")
        return [
            self.java,
            *(fast if jvm is None else jvm),
            "-Djava.awt.headless=true",
            *(f"-D{k}={v}" for k, v in props.items()),
            "-cp",
            os.pathsep.join([str(self.tools_dir), *self.classpath]),
            main,
            *args,
        ]

    def run(
        self,
        main: str,
        *args: str,
        log: Path,
        timeout: float = 300,
        heap: str = "256m",
        check: bool = True,
    ) -> subprocess.CompletedProcess[str]:
        """Run class ``main`` to its end (``java_command``); its stdout and stderr returned
        as text, byte for byte (UTF-8; no newline translation: a record's carriage return stays). A
        non-zero exit raises AssertionError with both, unless ``check`` is false."""
        result = subprocess.run(
            self.java_command(main, *args, log=log, heap=heap),
            capture_output=True,
            timeout=timeout,
            check=False,
        )
        out = subprocess.CompletedProcess(
            result.args,
            result.returncode,
            result.stdout.decode("utf-8", "replace"),
            result.stderr.decode("utf-8", "replace"),
        )
        if check and out.returncode != 0:
            raise AssertionError(
                f"{main} {' '.join(args)[:300]} exited with {out.returncode}:\n"
                f"{out.stderr[-3000:]}{out.stdout[-1000:]}"
            )
        return out


def release(version: str) -> Release:
    """Kafka ``version`` ready to run: resolved, its tools compiled. Raises Unavailable."""
    home = java_home()
    return Release(version, tuple(resolve_classpath(version)), home)
