"""``--jobs N``: independent pieces of work (segments, partitions, files) in N processes, the
results handed back in the order ``--jobs 1`` would give them, so output never depends on N.

Processes, not threads: the walk's Python work holds the GIL. Forked where the system can
(the parent's imports and the C module are then shared, not loaded again); the biggest pieces
start first so the processes finish together.
"""

from __future__ import annotations

import multiprocessing
import os
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from typing import TypeVar

from kdump.errors import KdumpError

T = TypeVar("T")
R = TypeVar("R")


def default_jobs() -> int:
    """The CPUs this process may run on (its affinity mask, as a container or taskset sets)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # pragma: no cover - not on Linux
        return max(1, os.cpu_count() or 1)


def run_ordered(
    fn: Callable[[T], R],
    items: Sequence[T],
    jobs: int,
    weight: Callable[[T], int] | None = None,
) -> Iterator[R]:
    """``fn(item)`` for each item, in up to ``jobs`` processes; results in the items' order.

    ``weight`` (bytes, say) decides which items start first: the largest, so that a big one
    does not start last and finish alone. ``fn`` and the items must pickle (module-level
    functions, plain data).
    """
    if jobs <= 1 or len(items) <= 1:
        yield from map(fn, items)
        return
    method = "fork" if "fork" in multiprocessing.get_all_start_methods() else "spawn"
    order = range(len(items))
    if weight is not None:
        order = sorted(order, key=lambda i: -weight(items[i]))  # type: ignore[assignment]
    with ProcessPoolExecutor(
        min(jobs, len(items)), mp_context=multiprocessing.get_context(method)
    ) as pool:
        futures: dict[int, Future[R]] = {i: pool.submit(fn, items[i]) for i in order}
        try:
            for i in range(len(items)):
                yield futures[i].result()
        except BrokenProcessPool:
            raise KdumpError(
                "a worker process died (out of memory?); run again with --jobs 1"
            ) from None
        finally:
            for future in futures.values():
                future.cancel()
