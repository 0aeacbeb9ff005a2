"""A real S3 endpoint for the tests and bench/bench_remote.py: moto's standalone server, a child
process on a free localhost port speaking S3's HTTP protocol, with authentication switched on,
and the fault-injecting proxy (faultproxy.py) in front of it.

Authentication: moto checks requests against its IAM once INITIAL_NO_AUTH_ACTION_COUNT actions
have run; the first three (CreateUser, PutUserPolicy, CreateAccessKey) make the one user the
tests sign with, so from then on an unknown access key is InvalidAccessKeyId and a wrong secret
SignatureDoesNotMatch, as on AWS.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

BUCKET = "kdump-tests"
REGION = "us-east-1"
_BOOTSTRAP_ACTIONS = 3
"""IAM calls made before authentication starts (user, policy, access key)."""
_HERE = Path(__file__).resolve().parent


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _wait_listening(port: int, process: subprocess.Popen[bytes], what: str) -> None:
    # a TCP connect, not an HTTP request: a request would count as one of the bootstrap actions
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"{what} exited with {process.returncode}")
        try:
            socket.create_connection(("127.0.0.1", port), 0.2).close()
            return
        except OSError:
            time.sleep(0.1)
    raise RuntimeError(f"{what} did not listen on {port}")


def _stop(process: subprocess.Popen[bytes] | None) -> None:
    """End a server this test run started, by its own handle; killed if it will not stop."""
    if process is not None and process.poll() is None:
        process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


@dataclass
class S3Server:
    """moto's server with one IAM user and one bucket; ``env()`` is what a child process needs
    to reach it through the standard credential chain and AWS_ENDPOINT_URL."""

    workdir: Path
    port: int = 0
    key_id: str = ""
    secret: str = ""
    process: subprocess.Popen[bytes] | None = None
    proxy: subprocess.Popen[bytes] | None = None
    proxy_port: int = 0

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def proxy_endpoint(self) -> str:
        return f"http://127.0.0.1:{self.proxy_port}"

    @property
    def rules_file(self) -> Path:
        return self.workdir / "faults.json"

    def start(self) -> S3Server:
        import boto3

        self.port = _free_port()
        env = dict(os.environ, INITIAL_NO_AUTH_ACTION_COUNT=str(_BOOTSTRAP_ACTIONS))
        self.process = subprocess.Popen(
            [sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(self.port)],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        _wait_listening(self.port, self.process, "moto server")
        iam = boto3.client(
            "iam",
            endpoint_url=self.endpoint,
            region_name=REGION,
            aws_access_key_id="bootstrap",
            aws_secret_access_key="bootstrap",
        )
        iam.create_user(UserName="kdump")
        policy = {
            "Version": "2012-10-17",
            "Statement": [{"Effect": "Allow", "Action": "s3:*", "Resource": "*"}],
        }
        iam.put_user_policy(UserName="kdump", PolicyName="s3", PolicyDocument=json.dumps(policy))
        key = iam.create_access_key(UserName="kdump")["AccessKey"]
        self.key_id, self.secret = key["AccessKeyId"], key["SecretAccessKey"]
        self.client().create_bucket(Bucket=BUCKET)
        self.start_proxy()
        return self

    def start_proxy(self, rules: tuple[dict[str, object], ...] = ()) -> None:
        self.rules_file.write_text(json.dumps(list(rules)))
        self.proxy = subprocess.Popen(
            [sys.executable, str(_HERE / "faultproxy.py"), str(self.port), str(self.rules_file)],
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
        )
        assert self.proxy.stdout is not None
        self.proxy_port = int(self.proxy.stdout.readline())

    def served(self) -> list[str]:
        """The faults the proxy has served since ``faults()``: ``<fault> <path>`` each."""
        path = Path(f"{self.rules_file}.served")
        return path.read_text().splitlines() if path.exists() else []

    def faults(self, *rules: dict[str, object]) -> None:
        """Break the proxy's answers from now on (no rules: heal it). A fresh proxy process,
        so its counts of GETs seen start at zero."""
        if self.proxy is not None:
            self.proxy.terminate()
            self.proxy.wait()
        Path(f"{self.rules_file}.served").unlink(missing_ok=True)
        self.start_proxy(rules)

    def stop(self) -> None:
        for p in (self.proxy, self.process):
            _stop(p)

    def client(self) -> Any:
        import boto3

        return boto3.client(
            "s3",
            endpoint_url=self.endpoint,
            region_name=REGION,
            aws_access_key_id=self.key_id,
            aws_secret_access_key=self.secret,
        )

    def put(self, key: str, data: bytes) -> str:
        """Store ``data`` at ``key``; its s3:// URL."""
        self.client().put_object(Bucket=BUCKET, Key=key, Body=data)
        return f"s3://{BUCKET}/{key}"

    def put_tree(self, local: Path, prefix: str) -> str:
        """Every file under ``local`` at ``prefix/<relative path>``; the prefix's URL."""
        for path in sorted(local.rglob("*")):
            if path.is_file():
                self.put(f"{prefix}/{path.relative_to(local).as_posix()}", path.read_bytes())
        return f"s3://{BUCKET}/{prefix}"

    def env(self, via_proxy: bool = False, **override: str) -> dict[str, str]:
        """The environment of a kdump child process: the standard chain's variables."""
        env = {
            k: v
            for k, v in os.environ.items()
            if not k.startswith("AWS_") or k in ("AWS_SHARED_CREDENTIALS_FILE",)
        }
        env.update(
            AWS_ACCESS_KEY_ID=self.key_id,
            AWS_SECRET_ACCESS_KEY=self.secret,
            AWS_DEFAULT_REGION=REGION,
            AWS_ENDPOINT_URL=self.proxy_endpoint if via_proxy else self.endpoint,
            AWS_CONFIG_FILE=os.devnull,
            AWS_SHARED_CREDENTIALS_FILE=os.devnull,
            AWS_EC2_METADATA_DISABLED="true",
        )
        env.update(override)
        return env


@contextmanager
def serving(workdir: Path) -> Iterator[S3Server]:
    """A started server, stopped however the block ends: a module fixture's body."""
    server = S3Server(workdir)
    try:
        server.start()
        yield server
    finally:
        server.stop()
