"""Semantic search over a style's linked folder: the query embedded now, ranked against the
folder's stored embeddings (kept per process while the folder is unchanged)."""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

import numpy as np
from sqlalchemy import Connection

from core.db import Database
from core.styles import repository
from core.styles.semantics import AssetSemantics
from core.styles.service import StyleNotFound


@dataclass(frozen=True)
class RankedAsset:
    asset_id: str
    name: str
    storage_key: str
    similarity: float


@dataclass(frozen=True)
class SearchFolder:
    """A style's assets as search ranks them: their ids, names and keys, and the matrix of
    their embeddings (one row each)."""

    version: tuple[int, Any]
    ids: list[str]
    names: list[str]
    keys: list[str]
    matrix: np.ndarray


class FolderCache:
    """The folders searched lately, per process, so a search reads 1.5 MB of embeddings only
    when the folder changed. Each use checks the folder's version (count and newest asset) in
    the database, so a gateway sees assets that another one added at once."""

    def __init__(self, capacity: int = 64) -> None:
        self.capacity = capacity
        self._folders: OrderedDict[str, SearchFolder] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, style_id: str, version: tuple[int, Any]) -> SearchFolder | None:
        with self._lock:
            folder = self._folders.get(style_id)
            if folder is None or folder.version != version:
                return None
            self._folders.move_to_end(style_id)
            return folder

    def put(self, style_id: str, folder: SearchFolder) -> None:
        with self._lock:
            self._folders[style_id] = folder
            self._folders.move_to_end(style_id)
            while len(self._folders) > self.capacity:
                self._folders.popitem(last=False)


def _read_folder(connection: Connection, style_id: str, version: tuple[int, Any]) -> SearchFolder:
    rows = repository.search_matrix(connection, style_id)
    matrix = np.frombuffer(b"".join(row.embedding for row in rows), dtype=np.float32)
    return SearchFolder(
        version=version,
        ids=[row.id for row in rows],
        names=[row.name for row in rows],
        keys=[row.storage_key for row in rows],
        matrix=matrix.reshape(len(rows), -1),
    )


def search(
    db: Database,
    semantics: AssetSemantics,
    folders: FolderCache,
    account_id: str,
    style_id: str,
    query: str,
    limit: int,
) -> list[RankedAsset]:
    """The `limit` assets closest to the query, by cosine similarity of their stored
    embeddings to the query's (embedded now), most similar first. Raises StyleNotFound."""
    with db.statements() as connection:
        found = repository.folder_version(connection, style_id, account_id)
        if found is None:
            raise StyleNotFound()
        version = (int(found[0]), found[1])
        if version[0] == 0:
            return []
        folder = folders.get(style_id, version)
        if folder is None:
            folder = _read_folder(connection, style_id, version)
            folders.put(style_id, folder)
    vector = semantics.embed([query])[0]
    return [
        RankedAsset(folder.ids[index], folder.names[index], folder.keys[index], similarity)
        for index, similarity in semantics.rank(vector, folder.matrix, limit)
    ]
