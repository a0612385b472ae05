"""The kernel cache under faults (issue 7): a process SIGKILLed in the middle of writing an entry
leaves nothing that is used (the next process rebuilds it and succeeds, the dead writer's lock
and temp files do not get in its way), and a full disk gives a typed error, leaves no partial
entry, and the next build with space works. Concurrent writers are covered in `test_cache.py`
(`test_concurrent_builders_make_one_entry`, `test_concurrent_writers_leave_a_valid_entry`) and
across real native builds in `tests/pypto_pro/native/test_native_cache.py`."""
from __future__ import annotations

import errno
import json
import multiprocessing
import os
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from pypto_pro.errors import PyptoError
from pypto_pro.runtime import cache as cache_mod
from pypto_pro.runtime.cache import MANIFEST, KernelCache

KEY = "ab" * 32
FILES = {"kernel.cpp": "// kernel\n" * 4000, "Tiling_tiling.h": "struct T {};\n",
         "call_kernel.cpp": '#include "kernel.cpp"\n'}
OLD = {name: text.replace("kernel", "old kernel") for name, text in FILES.items()}


def _write_and_stop(root: str, stage: str, ready: str) -> None:
    """In a forked child: write KEY into the cache at `root` and stop (until SIGKILLed) at
    `stage`: "build" (inside the build), "temp" (the second file written to its temp name, not
    yet renamed), "manifest" (every file in place, the manifest's temp not yet renamed)."""
    real_replace = os.replace
    renamed = []

    def stop() -> None:
        Path(ready).write_text(str(os.getpid()))
        time.sleep(120)

    def replace(src, dst) -> None:
        if (stage == "temp" and len(renamed) == 1) or (
                stage == "manifest" and str(dst).endswith(MANIFEST)):
            stop()
        renamed.append(dst)
        real_replace(src, dst)

    os.replace = replace  # this child's own interpreter only

    def build() -> dict[str, str]:
        if stage == "build":
            stop()
        return FILES

    KernelCache(root).put(KEY, build())


def _kill_when_ready(pid: int, alive: Callable[[], bool], ready: Path) -> None:
    """SIGKILL `pid` as soon as it writes `ready`."""
    deadline = time.monotonic() + 300
    while not ready.exists():
        assert alive(), "the writer ended before the kill point"
        assert time.monotonic() < deadline, "the writer never reached the kill point"
        time.sleep(0.02)
    os.kill(pid, signal.SIGKILL)


@pytest.mark.parametrize("old_entry", [False, True], ids=["empty", "replacing"])
@pytest.mark.parametrize("stage", ["build", "temp", "manifest"])
def test_writer_killed_mid_write_leaves_nothing_used(tmp_path, stage, old_entry):
    root = tmp_path / "cache"
    if old_entry:  # a valid entry being replaced (e.g. after damage) when the writer dies
        KernelCache(root).put(KEY, OLD)
    ready = tmp_path / "ready"
    proc = multiprocessing.get_context("fork").Process(
        target=_write_and_stop, args=(str(root), stage, str(ready)))
    proc.start()
    try:
        _kill_when_ready(proc.pid, proc.is_alive, ready)
    finally:
        proc.kill()
        proc.join(60)
    assert proc.exitcode == -signal.SIGKILL

    if stage != "build" or not old_entry:  # a build never touches the old entry
        assert KernelCache(root).get(KEY) is None
    builds = []  # the dead writer's flock went with it: no hang
    entry = KernelCache(root).get_or_build(KEY, lambda: builds.append(1) or FILES)
    survived = stage == "build" and old_entry
    assert {n: entry.read_text(n) for n in FILES} == (OLD if survived else FILES)
    assert builds == ([] if survived else [1])
    assert KernelCache(root).get(KEY) is not None
    assert sorted(p.name for p in entry.path.iterdir()) == sorted([*entry.files, MANIFEST])


# ---------------------------------------------------------------- a full disk


@pytest.fixture
def disk_full(monkeypatch):
    """`fail(n)`: the n-th fsync from now raises ENOSPC (every cache file write ends with one;
    the bytes are already in the temp file, as a real full disk reports at flush time)."""
    real_fsync = os.fsync
    state = {"left": None}

    def fsync(fd: int) -> None:
        if state["left"] is not None:
            state["left"] -= 1
            if state["left"] == 0:
                raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        real_fsync(fd)

    monkeypatch.setattr(cache_mod.os, "fsync", fsync)

    def fail(n: int | None) -> None:
        state["left"] = n

    return fail


def _assert_disk_full_error(err: PyptoError, root: Path) -> None:
    assert isinstance(err, OSError) and err.errno == errno.ENOSPC
    text = str(err)
    assert "No space left on device" in text and str(root) in text and "hint:" in text


@pytest.mark.parametrize("nth", [1, 2, 4], ids=["first-file", "second-file", "manifest"])
def test_disk_full_gives_a_typed_error_and_no_partial_entry(tmp_path, disk_full, nth):
    cache = KernelCache(tmp_path)
    disk_full(nth)
    with pytest.raises(PyptoError) as info:
        cache.get_or_build(KEY, lambda: FILES)
    _assert_disk_full_error(info.value, tmp_path)
    assert cache.get(KEY) is None
    assert not cache.entry_dir(KEY).exists()  # no half-written entry taking up space
    disk_full(None)  # space again
    entry = cache.get_or_build(KEY, lambda: FILES)
    assert {n: entry.read_text(n) for n in FILES} == FILES


def test_disk_full_while_adding_a_file_keeps_the_entry(tmp_path, disk_full):
    cache = KernelCache(tmp_path)
    cache.put(KEY, FILES)
    disk_full(1)
    with pytest.raises(PyptoError) as info:
        cache.put_file(KEY, "call_kernel_0123.so", b"\x7fELF" * 1000)
    _assert_disk_full_error(info.value, tmp_path)
    entry = cache.get(KEY)
    assert entry is not None and sorted(entry.files) == sorted(FILES)
    assert not [p for p in entry.path.iterdir() if p.name.endswith(".tmp")]


# ---------------------------------------------------------------- a real native build

NATIVE = textwrap.dedent('''
    import json, os, sys, time, torch
    from pathlib import Path
    import pypto_pro
    import pypto_pro.language as pl
    from pypto_pro.runtime.backends import native

    ready = sys.argv[1] if len(sys.argv) > 1 else None
    builds = []
    real_compile = native._compile
    native._compile = lambda *a, **k: builds.append(1) or real_compile(*a, **k)
    real_replace = os.replace

    if ready:  # the killed build: its .so is written but never renamed into place
        native._compile = lambda *a, **k: b"\x7fELF" + bytes(64 << 10)

    def replace(src, dst):
        if ready and str(dst).endswith(".so"):
            Path(ready).write_text(str(os.getpid()))
            time.sleep(120)
        real_replace(src, dst)

    os.replace = replace
    T = pl.TileType([16, 16], pl.DT_FP32)

    @pl.jit(arch="a5")
    def double(x: pl.Tensor[[16, 16], pl.DT_FP32], y: pl.Tensor[[16, 16], pl.DT_FP32]):
        with pl.section_vector():
            t = pl.make_tile(T, addr=0)
            pl.load(t, x, [0, 0])
            pl.system.bar_all()
            pl.add(t, t, t)
            pl.system.bar_all()
            pl.store(y, t, [0, 0])

    x = torch.arange(256, dtype=torch.float32).reshape(16, 16)
    y = torch.zeros(16, 16)
    with pypto_pro.use_backend("native"):
        double[None, 1](x, y)
    print(json.dumps({"ok": bool(torch.equal(y, x * 2)), "builds": len(builds)}))
''')


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("g++") is None, reason="the native backend needs g++")
def test_native_compile_killed_mid_write_is_rebuilt_by_the_next_process(tmp_path):
    root = tmp_path / "cache"
    env = dict(os.environ, PYPTOPRO_CACHE_DIR=str(root))
    script = tmp_path / "launch_double.py"
    script.write_text(NATIVE)
    ready = tmp_path / "ready"
    proc = subprocess.Popen([sys.executable, str(script), str(ready)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, env=env)
    try:
        _kill_when_ready(proc.pid, lambda: proc.poll() is None, ready)
    finally:
        proc.kill()
        proc.communicate(timeout=60)
    assert proc.returncode == -signal.SIGKILL
    assert list(root.rglob("*.so.*.tmp")), "killed with the .so written but not renamed"

    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True,
                         env=env, timeout=600, check=False)
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout.strip().splitlines()[-1]) == {"ok": True, "builds": 1}
    assert not list(root.rglob("*.tmp")), "the rebuild cleared the dead writer's temp files"
