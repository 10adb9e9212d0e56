"""How the pack reads image references."""

from __future__ import annotations


def split_image_reference(reference: str) -> tuple[str, str | None]:
    """`registry/path/name:tag@digest` as (`registry/path/name`, `tag`); the tag is None when absent."""
    name = reference.split("@", 1)[0]
    repository, colon, tag = name.rpartition(":")
    if colon and "/" not in tag:
        return repository, tag
    return name, None


def registry_base(repository: str, depth: int) -> str:
    """The repository path without its last `depth` segments: the registry both forks push under."""
    return "/".join(repository.strip().rstrip("/").split("/")[:-depth])
