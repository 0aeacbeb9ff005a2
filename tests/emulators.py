"""Real GCS and Azure Blob endpoints for the tests: gcp-storage-emulator (PyPI, the test extra)
and Azurite's blob service (npm, installed by scripts/ensure-test-system-deps.sh), each a child
process on a free localhost port, as s3server.py runs moto's server.

Objects are uploaded with the providers' own client libraries (google-cloud-storage,
azure-storage-blob), not through the fsspec file systems kdump reads with. ``env()`` is what a
kdump child process needs to reach the emulator the way gcsfs and adlfs find a store:
STORAGE_EMULATOR_HOST, AZURE_STORAGE_CONNECTION_STRING.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from s3server import BUCKET, _free_port, _stop, _wait_listening

AZURITE_ACCOUNT = "devstoreaccount1"
AZURITE_KEY = (
    "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="
)
"""Azurite's one account and its published key (Azure's documented development storage)."""


def azurite_blob() -> str | None:
    """The ``azurite-blob`` command, or None where scripts/ensure-test-system-deps.sh could
    not install it."""
    return shutil.which("azurite-blob")


def _clean_env(prefixes: tuple[str, ...]) -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith(prefixes)}


@dataclass
class Emulator:
    """One emulator process with one bucket (GCS) or container (Azure) named BUCKET."""

    scheme = ""
    bucket = BUCKET
    port: int = 0
    process: subprocess.Popen[bytes] | None = None

    @property
    def endpoint(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def command(self) -> list[str]:
        raise NotImplementedError

    def start(self) -> Emulator:
        self.port = _free_port()
        self.process = subprocess.Popen(
            self.command(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        _wait_listening(self.port, self.process, self.command()[0])
        self.create_bucket()
        return self

    def stop(self) -> None:
        _stop(self.process)

    def create_bucket(self) -> None:
        raise NotImplementedError

    def put(self, key: str, data: bytes) -> None:
        raise NotImplementedError

    def env(self) -> dict[str, str]:
        raise NotImplementedError

    def put_tree(self, local: Path, prefix: str) -> str:
        """Every file under ``local`` at ``prefix/<relative path>``; the prefix's URL."""
        for path in sorted(local.rglob("*")):
            if path.is_file():
                self.put(f"{prefix}/{path.relative_to(local).as_posix()}", path.read_bytes())
        return f"{self.scheme}://{self.bucket}/{prefix}"


class GcsEmulator(Emulator):
    scheme = "gs"

    def command(self) -> list[str]:
        # the console script beside this Python (the venv's), in memory, nothing on disk
        script = str(Path(sys.executable).parent / "gcp-storage-emulator")
        return [script, "start", "-H", "127.0.0.1", "--port", str(self.port), "-q", "-M"]

    def _bucket(self) -> Any:
        from google.auth.credentials import AnonymousCredentials
        from google.cloud import storage

        client = storage.Client(
            project="kdump-tests",
            credentials=AnonymousCredentials(),
            client_options={"api_endpoint": self.endpoint},
        )
        return client.bucket(self.bucket)

    def create_bucket(self) -> None:
        self._bucket().create()

    def put(self, key: str, data: bytes) -> None:
        self._bucket().blob(key).upload_from_string(data)

    def env(self) -> dict[str, str]:
        env = _clean_env(("GOOGLE_", "GCE_", "STORAGE_EMULATOR"))
        env["STORAGE_EMULATOR_HOST"] = self.endpoint
        return env


class AzuriteBlob(Emulator):
    scheme = "az"

    @property
    def connection_string(self) -> str:
        return (
            f"DefaultEndpointsProtocol=http;AccountName={AZURITE_ACCOUNT};"
            f"AccountKey={AZURITE_KEY};BlobEndpoint={self.endpoint}/{AZURITE_ACCOUNT};"
        )

    def command(self) -> list[str]:
        exe = azurite_blob()
        assert exe is not None
        return [
            exe,
            "--blobHost",
            "127.0.0.1",
            "--blobPort",
            str(self.port),
            "--inMemoryPersistence",
            "--silent",
            "--disableTelemetry",
            # the azure-storage-blob of the day may speak a newer API version than Azurite knows
            "--skipApiVersionCheck",
        ]

    def _container(self) -> Any:
        from azure.storage.blob import BlobServiceClient

        service = BlobServiceClient.from_connection_string(self.connection_string)
        return service.get_container_client(self.bucket)

    def create_bucket(self) -> None:
        self._container().create_container()

    def put(self, key: str, data: bytes) -> None:
        self._container().upload_blob(key, data, overwrite=True)

    def env(self) -> dict[str, str]:
        env = _clean_env(("AZURE_",))
        env["AZURE_STORAGE_CONNECTION_STRING"] = self.connection_string
        return env
