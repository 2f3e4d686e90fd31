"""Progress of a command for its ``progress=`` argument.

``True`` (the default): bars drawn by ``tqdm.auto`` when tqdm is installed (widgets in a
notebook, text on a terminal); without tqdm the library draws its own bars on a terminal, as
the command line does. ``False``: nothing. A callable: called on the calling thread, about ten
times a second while something changed, with a list of dicts, one per stage or bar that
changed: ``id``, ``name``, ``total`` (``None`` for a stage, which has no count), ``done``,
``message`` (what it works on) and ``finished`` (its summary once it ended, else ``None``).
An exception raised by the callable stops the command, as Ctrl-C does, and is raised.
"""

from __future__ import annotations

from typing import Any, Callable, Union

Update = dict[str, Any]
Progress = Union[bool, Callable[[list[Update]], None]]


def _quiet(updates: list[Update]) -> None:
    """Shows nothing."""


class _Tqdm:
    """One ``tqdm.auto`` bar per stage or bar of the library."""

    def __init__(self) -> None:
        from tqdm.auto import tqdm

        self._tqdm = tqdm
        self._bars: dict[int, Any] = {}

    def __call__(self, updates: list[Update]) -> None:
        for u in updates:
            bar = self._bars.get(u["id"])
            if bar is None:
                stage = u["total"] is None
                bar = self._tqdm(
                    total=u["total"],
                    desc=u["name"],
                    bar_format="{desc}: {postfix} [{elapsed}]" if stage else None,
                    leave=True,
                )
                self._bars[u["id"]] = bar
            if u["total"] is not None:
                bar.total = u["total"]
                bar.n = u["done"]
            postfix = u["finished"] if u["finished"] is not None else u["message"]
            bar.set_postfix_str(postfix, refresh=False)
            bar.refresh()
            if u["finished"] is not None:
                bar.close()
                del self._bars[u["id"]]

    def close(self) -> None:
        for bar in self._bars.values():
            bar.close()
        self._bars.clear()


class Shown:
    """The callback a command hands to the native module (``None``: the library's own terminal
    bars), closed when the command ends."""

    def __init__(self, progress: Progress) -> None:
        self.callback: Callable[[list[Update]], None] | None
        self._tqdm: _Tqdm | None = None
        if progress is True:
            try:
                self._tqdm = _Tqdm()
            except ImportError:
                self._tqdm = None
            self.callback = self._tqdm
        elif progress is False or progress is None:
            self.callback = _quiet
        elif callable(progress):
            self.callback = progress
        else:
            raise TypeError(f"progress: expected True, False or a callable, not {progress!r}")

    def __enter__(self) -> Callable[[list[Update]], None] | None:
        return self.callback

    def __exit__(self, *exc: object) -> None:
        if self._tqdm is not None:
            self._tqdm.close()
