"""Progress of a cell run: which stage it is in and for how long, shown while it runs.

Owns `Progress`: under a Jupyter kernel it shows one updatable line (`display(...,
display_id=True)`) naming the stage ("compile add_kernel (vector)", "simulate add_kernel[None,
32]") with its current detail (the compiler pass running) and the seconds spent, refreshed
twice a second by a daemon ticker thread; when the run ends (or is interrupted) the line is
cleared so a saved notebook keeps only the result. Elsewhere (terminal IPython, scripts, tests)
it only records the stage timings. `stages` keeps (stage, seconds) pairs of the stages that
ended, for the result's summary; stages nest (a launch inside "run cell").
"""
from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Iterator
from html import escape
from typing import Any


class Progress:
    """Stage timer with an optional live display line."""

    def __init__(self, live: bool = False, interval: float = 0.5) -> None:
        self.stages: list[tuple[str, float]] = []
        self._live = live
        self._interval = interval
        self._handle: Any = None
        self._open: list[tuple[str, float]] = []  # stages begun and not ended, innermost last
        self._detail = ""
        self._stop = threading.Event()
        self._ticker: threading.Thread | None = None

    @classmethod
    def for_shell(cls, shell: Any) -> Progress:
        """Live when `shell` runs under a Jupyter kernel (it has a `kernel`)."""
        return cls(live=getattr(shell, "kernel", None) is not None)

    @contextlib.contextmanager
    def stage(self, name: str) -> Iterator[None]:
        depth = len(self._open)
        self.begin(name)
        try:
            yield
        finally:
            while len(self._open) > depth:  # also ends stages an interrupt left open inside
                self.end()

    def begin(self, name: str) -> None:
        """Enter stage `name` (ended by `end`)."""
        self._open.append((name, time.perf_counter()))
        self._detail = ""
        self._show()

    def end(self) -> None:
        """Leave the innermost stage and record its time."""
        name, t0 = self._open.pop()
        self.stages.append((name, time.perf_counter() - t0))
        self._detail = ""

    def detail(self, text: str) -> None:
        """What the current stage is doing now (e.g. the compiler pass running)."""
        self._detail = text
        self._show()

    def __enter__(self) -> Progress:
        if self._live:
            from IPython.display import display

            self._handle = display({"text/plain": "pypto: starting"}, raw=True,
                                   display_id=True)
            self._ticker = threading.Thread(target=self._tick, name="pypto-progress",
                                            daemon=True)
            self._ticker.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._stop.set()
        if self._ticker is not None:
            self._ticker.join(timeout=2 * self._interval)
        if self._handle is not None:
            self._handle.update({"text/plain": ""}, raw=True)

    def _tick(self) -> None:
        while not self._stop.wait(self._interval):
            self._show()

    def _show(self) -> None:
        if self._handle is None or not self._open:
            return
        name, t0 = self._open[-1]
        detail = f" ({self._detail})" if self._detail else ""
        done = len(self.stages)
        seconds = time.perf_counter() - t0
        text = f"pypto: {name}{detail} ... {seconds:.1f} s"
        html = (f"<div style='font:12px monospace;color:#555'>&#9203; {escape(name + detail)} "
                f"&hellip; {seconds:.1f} s <span style='color:#999'>({done} stage(s) "
                f"done; interrupt the kernel to stop)</span></div>")
        try:
            self._handle.update({"text/plain": text, "text/html": html}, raw=True)
        except Exception:  # noqa: BLE001  (a closed comm must not break the run)
            self._stop.set()
