"""Progress bars on stderr for steps that take longer than a second."""

from __future__ import annotations

from contextlib import contextmanager
from typing import Callable, Iterator, Optional

Step = Callable[[int, int, str], None]


@contextmanager
def steps(label: str, enabled: bool) -> Iterator[Optional[Step]]:
    """A transient bar fed by (done, total, what) callbacks, e.g. the figures of a
    report; yields None (no bar) when not `enabled`."""
    if not enabled:
        yield None
        return
    from rich.console import Console
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

    with Progress(TextColumn(label), BarColumn(), MofNCompleteColumn(), TextColumn("{task.fields[what]}"), TimeElapsedColumn(),
                  transient=True, console=Console(stderr=True)) as p:
        task = p.add_task(label, total=None, what="")
        yield lambda done, total, what: p.update(task, completed=done, total=total, what=what)
