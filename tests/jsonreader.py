"""The documented reader of lossless JSON (issue 29.1; docs/json.md), run as a user would copy
it: the tests rebuild keys, values and header values with it, so the documented reader is the
tested one."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from conftest import REPO

Reader = Callable[[str | None, str | None], bytes | None]
PAGE = REPO / "docs" / "json.md"
SECTION = "## Keys, values and headers in JSON"


def documented_reader() -> Reader:
    """The ``raw`` function of the JSON page's section on keys and values."""
    section = PAGE.read_text().split(SECTION, 1)[1]
    block = re.search(r"```python\n(.*?)```", section, re.S)
    assert block is not None
    lines = [x for x in block[1].splitlines() if x.strip()]
    assert len(lines) <= 6, "the page promises a reader in 5 lines (and an import)"
    namespace: dict[str, Any] = {}
    exec(block[1], namespace)
    reader: Reader = namespace["raw"]
    return reader


raw = documented_reader()
