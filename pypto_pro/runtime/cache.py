"""The on-disk kernel cache (DESIGN §5 "Cache"): content-hash keys, atomic entries, self-healing.
A key is the sha256 of a canonical JSON of everything that changes a build (`key_fields`): the
kernel's dedented source and the sources of the user helpers and classes it names (found by
walking its AST through the captured environment, transitively), the values of the constants
it reads, `JitOptions.cache_fields()`, the `Specialization`, the backend, the arch / SoC and the
compiler's own version (a hash of the `pypto_pro` package's `.py`, `.h` and `.hpp` files,
`compiler_version`); whitespace outside the kernel never matters, its line number only when it
prints with `loc=`. An entry is the directory `<root>/<key[:2]>/<key>/` (root `$PYPTOPRO_CACHE_DIR`,
else `~/.cache/pypto_pro`) holding the artifacts (`kernel.cpp`, `<T>_tiling.h`,
`call_kernel.cpp`, later `call_kernel_<hash12>.so`) and `manifest.json` with each file's sha256,
written last; it is valid only if the manifest exists and every file matches it, else it is
rebuilt. Every file is written to a temp name in the same directory and `os.replace`d; builders
of one key serialise on `fcntl.flock` of `<key>.lock`, so concurrent processes end with one good
entry. `write_build_dir` writes the real system's `./build/...` layout (spec §1.4).
"""
from __future__ import annotations

import ast
import contextlib
import dataclasses
import enum
import fcntl
import functools
import hashlib
import inspect
import json
import os
import re
import shutil
import textwrap
import threading
import types
import uuid
from collections import ChainMap
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any

from ..errors import BadFd, KeyNotFound
from ..frozen import Frozen

ENV_CACHE_DIR = "PYPTOPRO_CACHE_DIR"
#: files from this size up have their digest remembered on disk (`KernelCache._digest`)
_BIG_FILE = 1 << 16
MANIFEST = "manifest.json"
FORMAT_VERSION = 1
_LIBRARY_ROOTS = ("torch", "numpy", "math", "pypto_pro", "functools", "typing", "builtins",
                  "dataclasses", "enum", "collections", "itertools", "operator")


def default_cache_dir() -> Path:
    env = os.environ.get(ENV_CACHE_DIR)
    return Path(env).expanduser() if env else Path.home() / ".cache" / "pypto_pro"


# ---------------------------------------------------------------- the key


_VERSION_SUFFIXES = (".py", ".h", ".hpp")


def file_memo(kind: str, paths: list[str], compute: Callable[[], Any]) -> Any:
    """`compute()` (JSON-able) for the current contents of `paths`, remembered across processes
    in `<cache root>/memo/<kind>-<signature>.json`, the signature being a hash of the files'
    paths, sizes and modification times (one stat each; any edit changes it). For derived facts
    that are slow to recompute in every new process (a hash of the sources, parsed tables)."""
    sig = hashlib.sha256(kind.encode() + b"\0")
    for path in paths:
        st = os.stat(path)
        sig.update(f"{path}\0{st.st_size}\0{st.st_mtime_ns}\0".encode())
    safe = "".join(c if c.isalnum() or c in "_.-" else "_" for c in kind)
    memo = default_cache_dir() / "memo" / f"{safe}-{sig.hexdigest()[:32]}.json"
    with contextlib.suppress(OSError, ValueError, KeyError, TypeError):
        return json.loads(memo.read_text())["value"]
    value = compute()
    with contextlib.suppress(OSError):
        memo.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(memo, json.dumps({"value": value}))
    return value


@functools.lru_cache(maxsize=1)
def compiler_version() -> str:
    """sha256 of the compiler's own sources (every .py, .h and .hpp of `pypto_pro`), once per
    process. Hashing them takes tens of milliseconds and listing the package one, both a big
    share of a new process's launch from the cache, so the digest is remembered in
    `<cache root>/memo/` with the size and modification time of every file it covers and the
    modification time of every folder: a new process only stats those (an edit changes a file's;
    a file added, removed or renamed changes its folder's) and recomputes on any difference."""
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    memo = default_cache_dir() / "memo" / f"compiler_version-{_sha(root)[:16]}.json"
    with contextlib.suppress(OSError, ValueError, KeyError, TypeError):
        saved = json.loads(memo.read_text())
        if saved["stats"] == _stats(saved["dirs"], saved["files"]):
            return saved["value"]
    dirs, files = _source_tree(root)
    stats = _stats(dirs, files)  # before reading: an edit while hashing shows next time
    h = hashlib.sha256()
    for path in files:
        with open(path, "rb") as f:
            h.update(f"{os.path.relpath(path, root)}\0".encode() + f.read() + b"\0")
    value = h.hexdigest()
    with contextlib.suppress(OSError):
        memo.parent.mkdir(parents=True, exist_ok=True)
        atomic_write(memo, json.dumps({"value": value, "dirs": dirs, "files": files,
                                       "stats": stats}))
    return value


def _stats(dirs: list[str], files: list[str]) -> list[int]:
    """Modification time of each folder, then size and modification time of each file."""
    out = [os.stat(d).st_mtime_ns for d in dirs]
    for path in files:
        st = os.stat(path)
        out += (st.st_size, st.st_mtime_ns)
    return out


def _source_tree(root: str) -> tuple[list[str], list[str]]:
    """(the folders under `root`, root first; the .py / .h / .hpp files in them, sorted depth
    first)."""
    dirs: list[str] = []
    files: list[str] = []

    def visit(folder: str) -> None:
        dirs.append(folder)
        names, subdirs = [], []
        with os.scandir(folder) as entries:
            for entry in entries:
                if entry.is_dir():
                    if entry.name != "__pycache__":
                        subdirs.append(entry.path)
                elif entry.name.endswith(_VERSION_SUFFIXES):
                    names.append(entry.path)
        files.extend(sorted(names))
        for sub in sorted(subdirs):
            visit(sub)

    visit(root)
    return dirs, files


def _is_library(obj: Any) -> bool:
    module = getattr(obj, "__module__", None) or ""
    if module == "pypto_pro.examples" or module.startswith("pypto_pro.examples."):
        return False
    return module.split(".")[0] in _LIBRARY_ROOTS


def _normalise(source: str) -> str:
    lines = [line.rstrip() for line in textwrap.dedent(source).splitlines()]
    return "\n".join(lines).strip("\n") + "\n"


def fingerprint(value: Any, depth: int = 0) -> Any:
    """A JSON-able, process-independent description of a compile-time value."""
    if depth > 8:
        return "<deep>"
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, enum.Enum):
        return f"{type(value).__qualname__}.{value.name}"
    if isinstance(value, (tuple, list)):
        return [fingerprint(v, depth + 1) for v in value]
    if isinstance(value, (set, frozenset)):
        return sorted((fingerprint(v, depth + 1) for v in value), key=repr)
    if isinstance(value, Mapping):
        return {str(k): fingerprint(v, depth + 1) for k, v in sorted(value.items(), key=str)}
    if isinstance(value, Frozen):  # the value classes that were dataclasses: same keys
        return {"dataclass": type(value).__qualname__,
                **{k: fingerprint(v, depth + 1) for k, v in vars(value).items()}}
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {"dataclass": type(value).__qualname__,
                **{f.name: fingerprint(getattr(value, f.name), depth + 1)
                   for f in dataclasses.fields(value)}}
    if isinstance(value, types.ModuleType):
        return f"module:{value.__name__}"
    if isinstance(value, (types.FunctionType, type)):
        return f"{getattr(value, '__module__', '?')}.{value.__qualname__}"
    text = repr(value)
    if "0x" in text and re.search(r"0x[0-9a-f]{6,}", text):
        return f"{type(value).__qualname__}"
    return text


class _Sources:
    """The user code a kernel depends on: its source, helpers, classes and constants."""

    def __init__(self) -> None:
        self.sources: dict[str, str] = {}
        self.constants: dict[str, Any] = {}
        self.lines: dict[str, int] = {}
        self._seen: set[int] = set()

    def add_function(self, key: str, tree: ast.AST, source: str, env: Mapping[str, Any],
                     line: int) -> None:
        self.sources[key] = _normalise(source)
        if "loc" in source and re.search(r"\bloc\s*=", source):
            self.lines[key] = line
        for name in _names_read(tree):
            self._resolve(key, name, env)

    def _resolve(self, owner: str, dotted: str, env: Mapping[str, Any]) -> None:
        head, *rest = dotted.split(".")
        try:
            value = env[head]
        except (KeyError, ValueError):
            return
        for attr in rest:
            if isinstance(value, types.ModuleType) and _is_library(value):
                return
            value = getattr(value, attr, None)
        self._add_value(f"{owner}:{dotted}", value)

    def _add_value(self, where: str, value: Any) -> None:
        if isinstance(value, types.ModuleType):
            return
        if isinstance(value, types.FunctionType) and not _is_library(value):
            key = self._slot("fn", value)
            if key is not None:
                self._add_helper(key, value)
            return
        if isinstance(value, type) and not _is_library(value):
            key = self._slot("class", value)
            if key is not None:
                try:
                    self.sources[key] = _normalise(inspect.getsource(value))
                except (OSError, TypeError):
                    self.sources[key] = repr(fingerprint(value))
            return
        self.constants[where] = fingerprint(value)

    def _slot(self, kind: str, obj: Any) -> str | None:
        """The source key of a helper / class seen for the first time (None: seen already).

        Keys use the qualified name, not the module, so the same code in another file gives
        the same key; different objects of one name get `#2`, `#3`, ... in discovery order.
        """
        if id(obj) in self._seen:
            return None
        self._seen.add(id(obj))
        key, n = f"{kind}:{obj.__qualname__}", 1
        while key in self.sources:
            n += 1
            key = f"{kind}:{obj.__qualname__}#{n}"
        self.sources[key] = ""
        return key

    def _add_helper(self, key: str, fn: types.FunctionType) -> None:
        try:
            source = inspect.getsource(fn)
            tree = ast.parse(textwrap.dedent(source))
        except (OSError, TypeError, SyntaxError):
            self.sources[key] = fingerprint(fn)
            return
        closure = {}
        for name, cell in zip(fn.__code__.co_freevars, fn.__closure__ or ()):
            with contextlib.suppress(ValueError):
                closure[name] = cell.cell_contents
        env = ChainMap(closure, fn.__globals__)
        self.add_function(key, tree, source, env, fn.__code__.co_firstlineno)


def _names_read(tree: ast.AST) -> list[str]:
    """Dotted names a function body reads (`x`, `mod.attr`), in first-occurrence order (the
    nodes in `ast.walk`'s breadth-first order, walked inline: `ast.walk`'s generators cost a
    new process's launch from the cache most of its key's time)."""
    found: dict[str, None] = {}
    queue = [tree]
    for node in queue:  # (appending while iterating: breadth first)
        for field in node._fields:
            value = getattr(node, field, None)
            if isinstance(value, ast.AST):
                queue.append(value)
            elif isinstance(value, list):
                queue.extend(item for item in value if isinstance(item, ast.AST))
        if isinstance(node, ast.Attribute):
            chain, cur = [node.attr], node.value
            while isinstance(cur, ast.Attribute):
                chain.append(cur.attr)
                cur = cur.value
            if isinstance(cur, ast.Name):
                found.setdefault(".".join([cur.id, *reversed(chain)]), None)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load):
            found.setdefault(node.id, None)
    return list(found)


def kernel_sources(kdef: Any) -> _Sources:
    """The kernel's source plus everything user-defined it reads (helpers, classes, constants)."""
    out = _Sources()
    out.add_function(f"kernel:{kdef.name}", kdef.tree, kdef.source, kdef.env,
                     getattr(kdef.tree, "lineno", 0))
    return out


def _spec_json(spec: Any) -> dict[str, Any]:
    return {"arch": spec.arch, "static_dims": [list(d) for d in spec.static_dims],
            "ranks": [list(r) for r in spec.ranks],
            "tiling_key": [[k, fingerprint(v)] for k, v in spec.tiling_key],
            "datatype": [[k, fingerprint(v)] for k, v in spec.datatype]}


def key_fields(kdef: Any, spec: Any, backend: str, soc: str | None = None) -> dict[str, Any]:
    """The one declared tuple of everything that changes a build (STYLE §5 point 9)."""
    deps = kernel_sources(kdef)
    tk = getattr(kdef.options, "tiling_key", None)
    return {
        "format": FORMAT_VERSION,
        "compiler": compiler_version(),
        "sources": deps.sources,
        "constants": deps.constants,
        "lines": deps.lines,
        "options": fingerprint(kdef.options.cache_fields()),
        "tiling_key_class": _class_source(tk),
        "specialization": _spec_json(spec),
        "backend": backend,
        "soc": soc or spec.arch,
    }


def _class_source(cls: Any) -> str | None:
    if cls is None:
        return None
    try:
        return _normalise(inspect.getsource(cls))
    except (OSError, TypeError):
        return fingerprint(cls)


def canonical_json(obj: Any) -> str:
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), default=fingerprint)


def cache_key(kdef: Any, spec: Any, backend: str, soc: str | None = None) -> str:
    """The cache key (64 hex) of building `kdef` for `spec` on `backend`."""
    return hashlib.sha256(canonical_json(key_fields(kdef, spec, backend, soc)).encode())\
        .hexdigest()


# ---------------------------------------------------------------- entries


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def atomic_write(path: Path, data: bytes | str) -> None:
    """Write `path` via a temp file in the same directory and `os.replace`."""
    if isinstance(data, str):
        data = data.encode()
    tmp = path.parent / f".{path.name}.{os.getpid()}.{uuid.uuid4().hex}.tmp"
    try:
        with open(tmp, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    finally:
        with contextlib.suppress(FileNotFoundError):
            tmp.unlink()


class CacheEntry(Frozen):
    """A valid cache entry: its directory and the files its manifest lists (name → sha256)."""

    __slots__ = ("key", "path", "files", "meta")
    key: str
    path: Path
    files: dict[str, str]
    meta: dict[str, Any]

    def __init__(self, key: str, path: Path, files: dict[str, str],
                 meta: dict[str, Any] | None = None) -> None:
        self._init(key=key, path=path, files=files, meta={} if meta is None else meta)

    def file(self, name: str) -> Path:
        return self.path / name

    def read_bytes(self, name: str) -> bytes:
        return self.file(name).read_bytes()

    def read_text(self, name: str) -> str:
        return self.file(name).read_text()


class KernelCache:
    """The cache under `root` (see the module docstring)."""

    def __init__(self, root: str | Path | None = None) -> None:
        self.root = Path(root).expanduser() if root is not None else default_cache_dir()
        self._thread_locks: dict[str, threading.RLock] = {}
        self._depth: dict[str, int] = {}
        self._fds: dict[str, int] = {}
        self._guard = threading.Lock()
        self._hashes: dict[tuple, str] = {}

    def entry_dir(self, key: str) -> Path:
        _check_key(key)
        return self.root / key[:2] / key

    # ------------------------------------------------------------ locking
    @contextlib.contextmanager
    def lock(self, key: str) -> Iterator[None]:
        """Exclusive per-key lock: threads via an RLock, processes via `flock` (re-entrant)."""
        with self._guard:
            rlock = self._thread_locks.setdefault(key, threading.RLock())
        with rlock:
            if self._depth.get(key, 0) == 0:
                path = self.entry_dir(key).parent / f"{key}.lock"
                path.parent.mkdir(parents=True, exist_ok=True)
                fd = os.open(path, os.O_CREAT | os.O_RDWR, 0o644)
                fcntl.flock(fd, fcntl.LOCK_EX)
                self._fds[key] = fd
            self._depth[key] = self._depth.get(key, 0) + 1
            try:
                yield
            finally:
                self._depth[key] -= 1
                if self._depth[key] == 0:
                    fd = self._fds.pop(key)
                    fcntl.flock(fd, fcntl.LOCK_UN)
                    os.close(fd)

    # ------------------------------------------------------------ reading
    def get(self, key: str) -> CacheEntry | None:
        """The entry of `key` if it is complete and intact, else None."""
        found = self._manifest(key)
        if found is None:
            return None
        path, files, meta = found
        for name, digest in files.items():
            if self._digest(path / name) != digest:
                return None
        return CacheEntry(key, path, files, meta)

    def _manifest(self, key: str) -> tuple[Path, dict[str, str], dict[str, Any]] | None:
        """(entry directory, file name → sha256, meta) of a written entry, files unchecked."""
        path = self.entry_dir(key)
        try:
            manifest = json.loads((path / MANIFEST).read_text())
            files = {name: info["sha256"] for name, info in manifest["files"].items()}
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            return None
        if manifest.get("key") != key or manifest.get("format") != FORMAT_VERSION:
            return None
        return path, files, manifest.get("meta", {})

    def _digest(self, path: Path) -> str | None:
        """sha256 of a file, remembered per (inode, size, modification and change time): in
        this process, and on disk for a big file (a library: hashing it would cost a new
        process's launch from the cache about a millisecond). Any write to the file changes
        its change time, which `os.utime` cannot set back."""
        try:
            st = path.stat()
        except OSError:
            return None
        stamp = _stamp(st)
        memo = (str(path), *stamp)
        digest = self._hashes.get(memo)
        if digest is None:
            big = st.st_size >= _BIG_FILE
            if big:
                with contextlib.suppress(OSError, ValueError, KeyError, TypeError):
                    found = json.loads(self._digest_memo(path).read_text())
                    digest = found["sha256"] if found["stamp"] == stamp else None
            if digest is None:
                try:
                    digest = sha256_bytes(path.read_bytes())
                except OSError:
                    return None
                if big:
                    self._remember_digest(path, stamp, digest)
            self._hashes[memo] = digest
        return digest

    def _digest_memo(self, path: Path) -> Path:
        return self.root / "memo" / f"sha256-{_sha(str(path))[:32]}.json"

    def _remember_digest(self, path: Path, stamp: list[int], digest: str) -> None:
        with contextlib.suppress(OSError):
            memo = self._digest_memo(path)
            memo.parent.mkdir(parents=True, exist_ok=True)
            atomic_write(memo, json.dumps({"stamp": stamp, "sha256": digest}))

    def get_file(self, key: str, name: str) -> bytes | None:
        """The bytes of one file of the entry of `key`, if that file is intact (only it is
        checked: reading one file of an entry need not hash the others, e.g. the sources next
        to a library)."""
        found = self._manifest(key)
        if found is None or name not in found[1]:
            return None
        try:
            data = (found[0] / name).read_bytes()
        except OSError:
            return None
        return data if sha256_bytes(data) == found[1][name] else None

    def file_path(self, key: str, name: str) -> Path | None:
        """The path of one file of the entry of `key`, if that file is intact (see `get_file`)."""
        found = self._manifest(key)
        if found is None or name not in found[1]:
            return None
        path = found[0] / name
        return path if self._digest(path) == found[1][name] else None

    # ------------------------------------------------------------ writing
    def put(self, key: str, files: Mapping[str, bytes | str],
            meta: Mapping[str, Any] | None = None) -> CacheEntry:
        """Replace the entry of `key` with `files` (manifest written last). A failed write
        (e.g. a full disk) removes the half-written entry and raises `BadFd`."""
        with self._writing(key), self.lock(key):
            try:
                return self._put(key, files, dict(meta or {}))
            except OSError:
                _remove(self.entry_dir(key))  # nothing half-written stays on disk
                raise

    def _put(self, key: str, files: Mapping[str, bytes | str],
             meta: dict[str, Any]) -> CacheEntry:
        path = self.entry_dir(key)
        path.mkdir(parents=True, exist_ok=True)
        with contextlib.suppress(FileNotFoundError):
            (path / MANIFEST).unlink()
        digests = {}
        for name, data in files.items():
            _check_name(name)
            data = data.encode() if isinstance(data, str) else bytes(data)
            atomic_write(path / name, data)
            digests[name] = (sha256_bytes(data), len(data))
            if len(data) >= _BIG_FILE:  # the first process to read it need not hash it again
                self._remember_digest(path / name, _stamp((path / name).stat()),
                                      digests[name][0])
        for stale in path.iterdir():  # a temp file here is a dead writer's: we hold the lock
            if stale.name not in digests and (not stale.name.startswith(".")
                                              or stale.name.endswith(".tmp")):
                _remove(stale)
        return self._write_manifest(key, digests, meta)

    def put_file(self, key: str, name: str, data: bytes | str) -> CacheEntry:
        """Add (or replace) one file of an existing valid entry (e.g. the built `.so`)."""
        _check_name(name)
        with self._writing(key), self.lock(key):
            entry = self.get(key)
            if entry is None:
                raise KeyNotFound(f"cache entry {key[:12]}… is missing or damaged; put() it "
                                  "before adding files", module="PRO_RUNTIME")
            data = data.encode() if isinstance(data, str) else bytes(data)
            atomic_write(entry.path / name, data)
            digests = {n: (d, (entry.path / n).stat().st_size) for n, d in entry.files.items()}
            digests[name] = (sha256_bytes(data), len(data))
            return self._write_manifest(key, digests, entry.meta)

    def get_or_build(self, key: str, build: Callable[[], Mapping[str, bytes | str]],
                     meta: Mapping[str, Any] | None = None) -> CacheEntry:
        """The valid entry of `key`, building it (once across processes) when missing."""
        entry = self.get(key)
        if entry is not None:
            return entry
        with self.lock(key):
            entry = self.get(key)
            if entry is None:
                entry = self.put(key, build(), meta)
            return entry

    def remove(self, key: str) -> None:
        with self.lock(key):
            _remove(self.entry_dir(key))

    @contextlib.contextmanager
    def _writing(self, key: str) -> Iterator[None]:
        """A failed write (full disk, read-only or unwritable cache) as a typed error."""
        try:
            yield
        except OSError as err:
            if isinstance(err, BadFd):
                raise
            typed = BadFd(f"cannot write kernel cache entry {key[:12]}… under {self.root}: "
                          f"{err.strerror or err}", module="PRO_RUNTIME",
                          hint=f"free disk space, or point ${ENV_CACHE_DIR} at a writable "
                               "directory with room; the entry is rebuilt on the next launch")
            typed.errno, typed.strerror, typed.filename = err.errno, err.strerror, err.filename
            raise typed from err

    def _write_manifest(self, key: str, digests: dict[str, tuple[str, int]],
                        meta: dict[str, Any]) -> CacheEntry:
        path = self.entry_dir(key)
        manifest = {"format": FORMAT_VERSION, "key": key, "meta": meta,
                    "files": {n: {"sha256": d, "size": s} for n, (d, s) in sorted(
                        digests.items())}}
        atomic_write(path / MANIFEST, json.dumps(manifest, indent=1, sort_keys=True))
        return CacheEntry(key, path, {n: d for n, (d, _) in digests.items()}, meta)


def _stamp(st: os.stat_result) -> list[int]:
    """What changes when a file is written (`KernelCache._digest`)."""
    return [st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns]


def _check_key(key: str) -> None:
    if not (key and 16 <= len(key) <= 128 and not key.strip("0123456789abcdef")):
        raise ValueError(f"not a cache key: {key!r}")


def _check_name(name: str) -> None:
    if not name or "/" in name or name.startswith(".") or name == MANIFEST:
        raise ValueError(f"not a cache file name: {name!r}")


def _remove(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    else:
        with contextlib.suppress(FileNotFoundError):
            path.unlink()


# ---------------------------------------------------------------- ./build/ (spec §1.4)


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def build_subdir(artifacts: Any) -> Path:
    """`<prefix>__<arch>[__shape_<sha12>]/[dt_<hash16>/]tk_<hex|none>` for these artifacts."""
    prefix = re.sub(r"[^0-9A-Za-z_]", "_", artifacts.kernel_name)
    script = os.path.basename(artifacts.source_file or "")
    match = re.fullmatch(r"test_(.+)\.py", script)
    if match:
        prefix = f"{re.sub(r'[^0-9A-Za-z_]', '_', match.group(1))}__{prefix}"
    spec = artifacts.specialization
    top = f"{prefix}__{artifacts.arch}"
    static = list(getattr(spec, "static_dims", ()) or ())
    if static:
        top += f"__shape_{_sha(canonical_json([list(s) for s in static]))[:12]}"
    parts = [top]
    dtypes = datatype_mapping(spec)
    if dtypes:
        parts.append(f"dt_{_sha(canonical_json(dtypes))[:16]}")
    parts.append(f"tk_{_packed_tiling_key(artifacts)}")
    return Path(*parts)


def datatype_mapping(spec: Any) -> dict[str, str]:
    return {k: f"DT_{v.value}" if hasattr(v, "value") else str(v)
            for k, v in (getattr(spec, "datatype", ()) or ())}


def _packed_tiling_key(artifacts: Any) -> str:
    spec = artifacts.specialization
    key = dict(getattr(spec, "tiling_key", ()) or ())
    if not key or artifacts.tiling_key_class is None:
        return "none"
    from .tilingkey import build_schema

    return f"{build_schema(artifacts.tiling_key_class).pack(key):x}"


def write_build_dir(artifacts: Any, base: str | Path = ".",
                    extra_files: Mapping[str, bytes | str] | None = None) -> Path:
    """Write the artifacts (and e.g. the `.so`) into `<base>/build/<subdir>/`; its path."""
    root = Path(base) / "build"
    target = root / build_subdir(artifacts)
    target.mkdir(parents=True, exist_ok=True)
    for name, data in {**artifacts.files(), **dict(extra_files or {})}.items():
        atomic_write(target / name, data)
    dtypes = datatype_mapping(artifacts.specialization)
    if dtypes:
        atomic_write(target.parent / "datatype.json", json.dumps(dtypes, indent=1,
                                                                 sort_keys=True))
    return target
