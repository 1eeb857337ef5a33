"""Enough of kustomize to render deploy/kubernetes offline, without a kubectl binary: the
fields our kustomizations use (`resources`, `namespace`, `labels`, `images`, and `patches` with
strategic-merge files), applied in kustomize's order: resources, patches, then transformers.
Anything else in a kustomization fails the render, so the renderer cannot silently skip what
the real one would do."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import yaml

KNOWN_FIELDS = {"apiVersion", "kind", "resources", "namespace", "labels", "images", "patches"}
# Kinds without a namespace (among those deploy/ uses).
CLUSTER_SCOPED = {"Namespace"}
# Lists whose items merge by name in a strategic merge (the rest are replaced).
MERGE_KEY = "name"


def render(folder: Path) -> list[dict[str, Any]]:
    kustomization = yaml.safe_load((folder / "kustomization.yaml").read_text())
    unknown = set(kustomization) - KNOWN_FIELDS
    if unknown:
        raise ValueError(f"{folder}: kustomization fields this renderer lacks: {unknown}")
    documents: list[dict[str, Any]] = []
    for entry in kustomization.get("resources", []):
        path = folder / entry
        if path.is_dir():
            documents.extend(render(path))
        else:
            documents.extend(load_documents(path))
    for patch in kustomization.get("patches", []):
        if set(patch) != {"path"}:
            raise ValueError(f"{folder}: only strategic-merge patch files are supported: {patch}")
        for change in load_documents(folder / patch["path"]):
            target = _find(documents, change["kind"], change["metadata"]["name"])
            merged = strategic_merge(target, change)
            documents[documents.index(target)] = merged
    for image in kustomization.get("images", []):
        for document in documents:
            for container in _containers(document):
                _retag(container, image)
    for pairs in (entry["pairs"] for entry in kustomization.get("labels", [])):
        for document in documents:
            document["metadata"].setdefault("labels", {}).update(pairs)
    namespace = kustomization.get("namespace")
    if namespace:
        for document in documents:
            if document["kind"] not in CLUSTER_SCOPED:
                document["metadata"]["namespace"] = namespace
    return documents


def load_documents(path: Path) -> list[dict[str, Any]]:
    return [document for document in yaml.safe_load_all(path.read_text()) if document]


def strategic_merge(base: Any, change: Any) -> Any:
    """Maps merge key by key (a null removes the key); lists of named maps merge by name."""
    if isinstance(base, dict) and isinstance(change, dict):
        merged = copy.deepcopy(base)
        for key, value in change.items():
            if value is None:
                merged.pop(key, None)
            elif key in merged:
                merged[key] = strategic_merge(merged[key], value)
            else:
                merged[key] = copy.deepcopy(value)
        return merged
    if isinstance(base, list) and isinstance(change, list) and _named(base) and _named(change):
        merged_list = copy.deepcopy(base)
        for item in change:
            names = [existing[MERGE_KEY] for existing in merged_list]
            if item[MERGE_KEY] in names:
                index = names.index(item[MERGE_KEY])
                merged_list[index] = strategic_merge(merged_list[index], item)
            else:
                merged_list.append(copy.deepcopy(item))
        return merged_list
    return copy.deepcopy(change)


def _named(items: list[Any]) -> bool:
    return all(isinstance(item, dict) and MERGE_KEY in item for item in items)


def _find(documents: list[dict[str, Any]], kind: str, name: str) -> dict[str, Any]:
    for document in documents:
        if document["kind"] == kind and document["metadata"]["name"] == name:
            return document
    raise ValueError(f"a patch targets {kind}/{name}, which no resource defines")


def _containers(document: dict[str, Any]) -> list[dict[str, Any]]:
    spec = document.get("spec", {})
    pod = spec.get("template", {}).get("spec", {})
    return [*pod.get("containers", []), *pod.get("initContainers", [])]


def _retag(container: dict[str, Any], image: dict[str, str]) -> None:
    name, _, tag = container["image"].partition(":")
    if name != image["name"]:
        return
    name = image.get("newName", name)
    tag = image.get("newTag", tag)
    container["image"] = f"{name}:{tag}" if tag else name
