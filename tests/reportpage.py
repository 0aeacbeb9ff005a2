"""Reading a ``kdump report`` page back as a browser's parser does: the model embedded in it
(``<script type="application/json" id="kdump-model">``) and its overview table's cells."""

from __future__ import annotations

import json
from html.parser import HTMLParser
from typing import Any


class _Page(HTMLParser):
    """The text of the model's script element, as HTML's tokenizer ends it (at the first
    ``</script``), and each overview row's ``data-k`` cells by the row's ``data-path``."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.script: list[str] | None = None
        self.model_text = ""
        self.rows: dict[str, dict[str, str]] = {}
        self._row: dict[str, str] | None = None
        self._key: str | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        a = dict(attrs)
        if tag == "script" and a.get("id") == "kdump-model":
            self.script = []
        elif tag == "tr" and a.get("data-path") is not None:
            self._row = self.rows.setdefault(a["data-path"] or "", {})
        elif tag == "td" and self._row is not None and a.get("data-k"):
            self._key = a["data-k"]
            self._row[self._key] = ""

    def handle_endtag(self, tag: str) -> None:
        if tag == "script" and self.script is not None:
            self.model_text, self.script = "".join(self.script), None
        elif tag == "td":
            self._key = None
        elif tag == "tr":
            self._row = None

    def handle_data(self, data: str) -> None:
        if self.script is not None:
            self.script.append(data)
        elif self._row is not None and self._key is not None:
            self._row[self._key] += data


def read_page(html: str) -> tuple[dict[str, Any], dict[str, dict[str, str]]]:
    """The embedded model, and the overview's cells by partition path."""
    page = _Page()
    page.feed(html)
    page.close()
    return json.loads(page.model_text), page.rows


def model_partitions(model: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The model's partitions by path."""
    return {p["partition"]["path"]: p for d in model["log_dirs"] for p in d["partitions"]}
