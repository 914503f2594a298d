"""Where a root lives: a local folder, an object-store URL, or ``hf://datasets/...``.

The lowest layer that knows about places: it parses ``hf://`` URIs, pins a hub
revision to one commit sha, reads single files of a root, downloads whole roots,
finds the roots of a ``data_dir``/``data_files``, and tells lance what to open.
Object stores (``s3://``, ``gs://``, ``az://``): :mod:`.store` reads, writes, lists and
deletes the files of a root that lance does not, through pyarrow, with lance's options.
It is the only module of hf_lvf that reads from the Hub (always through
``huggingface_hub``; pylance reads ``hf://`` data files itself, with the storage
options made here). Errors of ``huggingface_hub`` are raised as
:class:`~hf_lvf.errors.HubError` (or :class:`~hf_lvf.errors.RootNotFoundError`
for a folder without ``_metadata.json``), with a one-line message that says what
to do; the original is chained.
"""

from .conditional import (
    ABSENT,
    PreconditionFailed,
    conditional_puts,
    etag_of,
    ignore_conditions,
    put_if,
)
from .files import (
    cache_dir,
    forget_digests,
    join_uri,
    legacy_file_identity,
    local_copy,
    read_root_file,
    read_root_file_hashing,
    read_root_file_with_identity,
    root_file_identity,
    root_size_bytes,
)
from .hints import VIDEO_EXTENSIONS, count_video_files, videos_hint
from .hub import (
    LANCE_DIRS,
    PinnedRoot,
    RemoteFile,
    download_root,
    list_file_entries,
    list_files,
    pin_root,
    pin_roots,
    read_hub_file,
    read_text,
    resolve_revision,
)
from .paths import (
    METADATA_FILENAME,
    REPO_TYPE,
    HubPath,
    is_hub_uri,
    lance_location,
    lance_options,
    parse_hub_uri,
)
from .roots import (
    expand_data_files,
    find_roots,
    hub_data_dir_files,
    hub_data_files,
    is_store_data,
    pin_data_files,
    root_folders,
    roots_of_files,
    store_data_files,
)
from .store import (
    StoreURL,
    delete_store_file,
    download_store_file,
    download_store_root,
    is_object_store_uri,
    list_store_files,
    object_identity,
    parse_store_uri,
    read_store_file,
    secret_values,
    store_file_exists,
    store_file_identity,
    write_store_file,
)

__all__ = [
    "ABSENT",
    "PreconditionFailed",
    "conditional_puts",
    "etag_of",
    "ignore_conditions",
    "put_if",
    "LANCE_DIRS",
    "METADATA_FILENAME",
    "REPO_TYPE",
    "VIDEO_EXTENSIONS",
    "HubPath",
    "PinnedRoot",
    "RemoteFile",
    "StoreURL",
    "count_video_files",
    "delete_store_file",
    "download_store_file",
    "download_store_root",
    "download_root",
    "expand_data_files",
    "find_roots",
    "hub_data_dir_files",
    "hub_data_files",
    "is_hub_uri",
    "is_object_store_uri",
    "is_store_data",
    "join_uri",
    "lance_options",
    "lance_location",
    "list_file_entries",
    "list_files",
    "list_store_files",
    "local_copy",
    "parse_hub_uri",
    "parse_store_uri",
    "pin_data_files",
    "pin_root",
    "pin_roots",
    "read_hub_file",
    "read_root_file",
    "read_store_file",
    "read_text",
    "resolve_revision",
    "root_file_identity",
    "read_root_file_with_identity",
    "read_root_file_hashing",
    "legacy_file_identity",
    "cache_dir",
    "forget_digests",
    "root_folders",
    "root_size_bytes",
    "roots_of_files",
    "secret_values",
    "store_data_files",
    "store_file_exists",
    "store_file_identity",
    "object_identity",
    "videos_hint",
    "write_store_file",
]
