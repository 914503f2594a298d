"""What a root's Lance table holds beside the frames, known without this process using lance.

``datasets`` needs a view's ``Features`` (and so its per-frame fields' dtypes and shapes)
when a dataset is built, in the main process, before any DataLoader worker starts; a
map-style dataset's rows hold the fields' values. pylance is not fork-safe (:mod:`.forks`):
opening the table here would forbid forked workers their reads. So, unless this process
has used lance already, a short-lived child process (``python -c``, importing lance only)
reads the schema, or the columns; the schema is kept in memory and on disk (beside the
video tables, :func:`hf_lvf.layout.table.cache_dir`) per state of the root.
"""

from __future__ import annotations

import hashlib
import pickle
import subprocess
import sys
import threading
from collections.abc import Mapping, Sequence
from typing import Any

import pyarrow as pa

from ..errors import LayoutError
from ..layout import RootLayout
from ..layout.table import cache_dir
from ..location import lance_location
from ..location.paths import lance_options
from ..processes import fork_is_unsafe

# The child imports lance only (not hf_lvf, whose import pulls in datasets): ~4x faster;
# and not pandas, which pyarrow imports if it can (~0.4 s of the ~1 s lance takes) and
# nothing the child does needs.
_CHILD = """
import pickle, sys
class _NoPandas:
    def find_spec(self, name, path=None, target=None):
        if name == "pandas" or name.startswith("pandas."):
            raise ModuleNotFoundError(name)
sys.meta_path.insert(0, _NoPandas())
try:
    import lance
    uri, version, options, columns = pickle.loads(sys.stdin.buffer.read())
    ds = lance.dataset(uri, version=version, storage_options=options or None)
    if columns is None:
        result = ("ok", ds.schema.serialize().to_pybytes())
    else:
        sink = __import__("pyarrow").BufferOutputStream()
        table = ds.to_table(columns=columns)
        with __import__("pyarrow").ipc.new_stream(sink, table.schema) as out:
            out.write_table(table)
        result = ("ok", sink.getvalue().to_pybytes())
except BaseException as err:
    result = ("error", f"{type(err).__name__}: {err}")
sys.stdout.buffer.write(pickle.dumps(result))
"""
_schemas: dict[tuple, pa.Schema] = {}
_lock = threading.Lock()
# A child started ahead (start_probe_child), importing lance while this process waits on
# the network; it reads its question from stdin once it is asked one.
_ready: subprocess.Popen | None = None


def start_probe_child() -> None:
    """Start the child that a coming :func:`probe_schema` or :func:`probe_columns` will ask,
    so that its interpreter starts and imports lance (~0.8 s) while this process does other
    work (a ``load_dataset`` of a Hub root waits on ~3 round trips before it needs the
    schema). Nothing happens if lance is in use here already or a child is waiting; one left
    unasked ends when :func:`discard_probe_child` is called or this process exits (its stdin
    closes)."""
    global _ready
    with _lock:
        if _ready is not None or fork_is_unsafe():
            return
        _ready = _spawn()


def discard_probe_child() -> None:
    """Stop the child :func:`start_probe_child` started, if nothing asked it."""
    global _ready
    with _lock:
        child, _ready = _ready, None
    if child is not None:
        child.kill()
        child.communicate()


def _spawn() -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-c", _CHILD],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )


def probe_schema(layout: RootLayout, storage_options: Mapping[str, str] | None = None) -> pa.Schema:
    """The Arrow schema of ``layout``'s Lance table.

    Raises:
        LayoutError, HubError, StoreError: what opening the table raises.
    """
    from . import FrameReader, pinned_version  # the package imports this module

    identity = getattr(layout.source, "identity", None)
    key = (layout.uri, repr(pinned_version(layout)), layout.num_rows, identity)
    with _lock:
        if key in _schemas:
            return _schemas[key]
    stored = None
    if identity is not None:
        stored = cache_dir() / "schemas" / f"{hashlib.sha256(repr(key).encode()).hexdigest()[:24]}"
    if stored is not None and stored.is_file():
        schema = pa.ipc.read_schema(pa.py_buffer(stored.read_bytes()))
    elif fork_is_unsafe():  # lance is in use here already: no fork to protect
        schema = FrameReader(layout, storage_options).dataset.schema
    else:
        schema = pa.ipc.read_schema(pa.py_buffer(_in_child(layout, storage_options, None)))
    if stored is not None and not stored.is_file():
        try:
            stored.parent.mkdir(parents=True, exist_ok=True)
            temporary = stored.with_suffix(f".{threading.get_ident()}.tmp")
            temporary.write_bytes(schema.serialize().to_pybytes())
            temporary.replace(stored)
        except OSError:  # a read-only cache: the memory one does
            pass
    with _lock:
        _schemas[key] = schema
    return schema


def probe_columns(
    layout: RootLayout, storage_options: Mapping[str, str] | None, columns: Sequence[str]
) -> pa.Table:
    """``columns`` (Lance column paths) of every row of ``layout``'s table, in row order."""
    from . import FrameReader

    if fork_is_unsafe():
        return FrameReader(layout, storage_options).dataset.to_table(columns=list(columns))
    data = _in_child(layout, storage_options, list(columns))
    return pa.ipc.open_stream(pa.py_buffer(data)).read_all()


def _in_child(
    layout: RootLayout, storage_options: Mapping[str, str] | None, columns: list[str] | None
) -> Any:
    from . import pinned_version

    global _ready
    uri, options = lance_location(layout.uri, lance_options(storage_options))
    with _lock:
        child, _ready = _ready, None
    if child is None:
        child = _spawn()
    try:
        stdout, stderr = child.communicate(
            pickle.dumps((uri, pinned_version(layout), dict(options or {}), columns))
        )
    except BaseException:
        child.kill()
        child.communicate()
        raise
    try:
        status, value = pickle.loads(stdout)
    except Exception as err:  # noqa: BLE001  (the child died: say what it printed)
        raise LayoutError(
            f"could not read the Lance table of root {layout.uri!r} in a child process "
            f"(exit {child.returncode}): {stderr.decode(errors='replace')[-2000:]}"
        ) from err
    if status != "ok":
        raise LayoutError(f"cannot open the Lance table of root {layout.uri!r}: {value}")
    return value


__all__ = ["discard_probe_child", "probe_columns", "probe_schema", "start_probe_child"]
