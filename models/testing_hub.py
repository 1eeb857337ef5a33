"""A stand-in for the Hugging Face Hub on 127.0.0.1, for tests: what `snapshot_download` uses.

    hub = StandInHub()
    hub.add(HostedRepo("stabilityai/sd-turbo", REVISION, files))   # path -> bytes
    with hub:                       # serving on hub.url: set HF_ENDPOINT to it
        ...

Endpoints, as the hub client calls them (huggingface_hub 1.x/2.x):

- `GET /api/models/{repo}/tree/{revision}[/{path}]?recursive=true`: the file listing (a git
  blob id for small files, LFS metadata with the sha256 for weights), one page;
- `GET /api/models/{repo}/revision/{revision}`: the commit a branch name stands for;
- `HEAD` and `GET /{repo}/resolve/{revision}/{path}`: a file with `X-Repo-Commit`, `ETag` and
  `Content-Length`, byte ranges (`Range` -> 206) for resumed downloads.

Errors carry the hub's `X-Error-Code` (RepoNotFound, RevisionNotFound, GatedRepo, EntryNotFound),
which the client turns into its typed errors. A gated repository lists its files to anyone (as
the real hub does) but serves them only to `Authorization: Bearer <TOKEN>`.

Faults for tests: `drop_once[path] = n` closes the connection after n bytes of the first GET of
`path` (the client resumes with a Range request); `stall[path] = n` sends n bytes of every GET
of `path` and then holds the connection until `release()` (time to kill the downloader).
`requests` records every request (method, path, Range header).
"""

from __future__ import annotations

import hashlib
import json
import re
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import unquote, urlsplit

TOKEN = "hf_standin_token"
LFS_SUFFIXES = (".safetensors", ".bin", ".ckpt", ".pth", ".png", ".jpg", ".gif", ".msgpack")


@dataclass
class HostedRepo:
    repo_id: str
    revision: str  # the commit (40 hex); "main" names it too
    files: dict[str, bytes]
    gated: bool = False
    # Sizes the listing claims instead of the real ones (a repository too big for the disk).
    claimed_sizes: dict[str, int] = field(default_factory=dict)

    def size(self, path: str) -> int:
        return self.claimed_sizes.get(path, len(self.files[path]))


@dataclass(frozen=True)
class Request:
    method: str
    path: str
    range: str | None


class StandInHub:
    def __init__(self) -> None:
        self.repos: dict[str, HostedRepo] = {}
        self.requests: list[Request] = []
        self.drop_once: dict[str, int] = {}
        self.stall: dict[str, int] = {}
        self._released = threading.Event()
        self._lock = threading.Lock()
        self._server: ThreadingHTTPServer | None = None

    def add(self, repo: HostedRepo) -> None:
        self.repos[repo.repo_id] = repo

    @property
    def url(self) -> str:
        assert self._server is not None, "the stand-in hub is not running"
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def gets_of(self, file_path: str) -> list[Request]:
        """The GET requests of one file (its path inside the repository)."""
        with self._lock:
            return [
                r for r in self.requests if r.method == "GET" and r.path.endswith("/" + file_path)
            ]

    def release(self) -> None:
        self._released.set()

    def __enter__(self) -> StandInHub:
        hub = self

        class Handler(_Handler):
            standin = hub

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *_exc: object) -> None:
        self.release()
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()

    def record(self, request: Request) -> None:
        with self._lock:
            self.requests.append(request)


def _git_blob_id(content: bytes) -> str:
    return hashlib.sha1(b"blob %d\0" % len(content) + content).hexdigest()


_TREE = re.compile(r"^/api/models/([^/]+/[^/]+)/tree/([^/]+)(?:/(.*))?$")
_REVISION = re.compile(r"^/api/models/([^/]+/[^/]+)/revision/([^/]+)$")
_RESOLVE = re.compile(r"^/([^/]+/[^/]+)/resolve/([^/]+)/(.+)$")


class _Handler(BaseHTTPRequestHandler):
    standin: StandInHub
    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:  # quiet
        return None

    def do_GET(self) -> None:
        self._serve(body=True)

    def do_HEAD(self) -> None:
        self._serve(body=False)

    def _serve(self, body: bool) -> None:
        path = unquote(urlsplit(self.path).path)
        self.standin.record(Request(self.command, path, self.headers.get("Range")))
        if match := _TREE.match(path):
            self._tree(*match.groups())
        elif match := _REVISION.match(path):
            self._revision(*match.groups())
        elif match := _RESOLVE.match(path):
            repo_id, revision, name = match.groups()
            self._file(repo_id, revision, name, body)
        else:
            self._error(404, "EntryNotFound", f"no route {path}")

    def _repo(self, repo_id: str, revision: str) -> HostedRepo | None:
        repo = self.standin.repos.get(repo_id)
        if repo is None:
            self._error(404, "RepoNotFound", f"Repository Not Found for {repo_id}")
            return None
        if revision not in (repo.revision, "main"):
            self._error(404, "RevisionNotFound", f"Invalid rev id: {revision}")
            return None
        return repo

    def _tree(self, repo_id: str, revision: str, prefix: str | None) -> None:
        repo = self._repo(repo_id, revision)
        if repo is None:
            return
        entries: list[dict[str, Any]] = []
        folders: set[str] = set()
        for name, content in sorted(repo.files.items()):
            if prefix and not name.startswith(prefix.rstrip("/") + "/"):
                continue
            parts = name.split("/")
            folders.update("/".join(parts[:depth]) for depth in range(1, len(parts)))
            entry: dict[str, Any] = {
                "type": "file",
                "path": name,
                "size": repo.size(name),
                "oid": _git_blob_id(content),
            }
            if name.endswith(LFS_SUFFIXES):
                entry["lfs"] = {
                    "oid": hashlib.sha256(content).hexdigest(),
                    "size": repo.size(name),
                    "pointerSize": 134,
                }
            entries.append(entry)
        entries += [{"type": "directory", "path": folder, "oid": "0" * 40} for folder in folders]
        self._json(entries)

    def _revision(self, repo_id: str, revision: str) -> None:
        repo = self._repo(repo_id, revision)
        if repo is not None:
            siblings = [{"rfilename": name} for name in sorted(repo.files)]
            self._json({"id": repo_id, "sha": repo.revision, "siblings": siblings})

    def _file(self, repo_id: str, revision: str, name: str, body: bool) -> None:
        repo = self._repo(repo_id, revision)
        if repo is None:
            return
        if repo.gated and self.headers.get("Authorization") != f"Bearer {TOKEN}":
            self._error(
                401,
                "GatedRepo",
                f"Access to model {repo_id} is restricted. You must have access to it and be "
                "authenticated to access it. Please log in.",
            )
            return
        if name not in repo.files:
            self._error(404, "EntryNotFound", f"{name} does not exist on {revision}")
            return
        content = repo.files[name]
        lfs = name.endswith(LFS_SUFFIXES)
        etag = hashlib.sha256(content).hexdigest() if lfs else _git_blob_id(content)
        start = 0
        if (wanted := self.headers.get("Range")) and (found := re.match(r"bytes=(\d+)-", wanted)):
            start = int(found.group(1))
        part = content[start:]
        self.send_response(206 if start else 200)
        self.send_header("X-Repo-Commit", repo.revision)
        self.send_header("ETag", f'"{etag}"')
        self.send_header("Accept-Ranges", "bytes")
        self.send_header("Content-Length", str(len(part)))
        if start:
            self.send_header("Content-Range", f"bytes {start}-{len(content) - 1}/{len(content)}")
        self.end_headers()
        if not body:
            return
        drop = self.standin.drop_once.pop(name, None) if not start else None
        stall = self.standin.stall.get(name)
        if drop is not None:
            self.wfile.write(part[:drop])
            self.wfile.flush()
            self.close_connection = True
            self.connection.shutdown(2)  # mid-file: the client sees the stream break
            return
        if stall is not None:
            self.wfile.write(part[:stall])
            self.wfile.flush()
            self.standin._released.wait(120)
            self.close_connection = True
            return
        self.wfile.write(part)

    def _json(self, value: Any) -> None:
        data = json.dumps(value).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)

    def _error(self, status: int, code: str, message: str) -> None:
        data = json.dumps({"error": message}).encode()
        self.send_response(status)
        self.send_header("X-Error-Code", code)
        self.send_header("X-Error-Message", message)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(data)
