"""The value types of the stack configuration: what Kubernetes, the OCI distribution spec, Helm, git
and NVIDIA accept, checked before anything is registered.

Each type is an annotated str, int, float or bool whose validator says in one clause what a good
value is. Numbers and booleans are strict: JSON numbers and booleans, or their plain decimal
spelling as text (`8`, `true`); never `true` for 1, `8_0` for 80 or `1e3` for a count.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from pathlib import Path
from typing import Annotated, Any

from pydantic import AfterValidator, BeforeValidator, Strict

# ---------------------------------------------------------------- text


def _text(check: Callable[[str], str | None]) -> AfterValidator:
    """A validator that raises the reason a non-blank, clean value fails `check` (None means good)."""

    def validate(value: str) -> str:
        reason = _clean(value) or check(value)
        if reason:
            raise ValueError(reason)
        return value

    return AfterValidator(validate)


def _clean(value: str) -> str | None:
    if not value.strip():
        return "must not be empty"
    if value != value.strip():
        return "must not start or end with whitespace"
    if any(not ch.isprintable() for ch in value):
        return "must not contain control characters (newlines, tabs, NUL)"
    return None


def _not_an_option(value: str) -> str | None:
    """Values handed to external commands as arguments must never read as options."""
    return _clean(value) or ("must not start with '-'" if value.startswith("-") else None)


Text = Annotated[str, Strict(), _text(_clean)]
"""Non-blank text without surrounding whitespace or control characters."""

Argument = Annotated[str, Strict(), _text(_not_an_option)]
"""Text passed to git or ssh as an argument: also never starts with '-'."""

# ---------------------------------------------------------------- Kubernetes names

_DNS_LABEL = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?")
_DNS_SUBDOMAIN = re.compile(r"[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*")


def _dns_label(value: str, limit: int = 63) -> str | None:
    if len(value) > limit or not _DNS_LABEL.fullmatch(value):
        return (
            f"must be a DNS-1123 label: at most {limit} lowercase letters, digits and '-', "
            "starting and ending with a letter or digit"
        )
    return None


def _dns_subdomain(value: str) -> str | None:
    if len(value) > 253 or not _DNS_SUBDOMAIN.fullmatch(value):
        return (
            "must be a DNS-1123 subdomain: at most 253 lowercase letters, digits, '-' and '.', "
            "starting and ending with a letter or digit"
        )
    return None


DnsLabel = Annotated[str, Strict(), _text(_dns_label)]
"""A namespace, or any name Kubernetes also uses as a label value (a queue)."""

DnsSubdomain = Annotated[str, Strict(), _text(_dns_subdomain)]
"""An object name: a node, a Secret, a RuntimeClass."""

# kind names its node `<name>-control-plane`, which must stay a DNS-1123 label.
KindClusterName = Annotated[str, Strict(), _text(lambda value: _dns_label(value, 63 - len("-control-plane")))]

# ---------------------------------------------------------------- images (the OCI distribution reference grammar)

_ALNUM = r"[a-z0-9]+"
_SEPARATOR = r"(?:[._]|__|-+)"
_PATH_COMPONENT = rf"{_ALNUM}(?:{_SEPARATOR}{_ALNUM})*"
_DOMAIN_COMPONENT = r"(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])"
_DOMAIN = rf"(?:{_DOMAIN_COMPONENT}(?:\.{_DOMAIN_COMPONENT})*|\[[0-9a-fA-F:]+\])(?::[0-9]+)?"
_PATH = rf"{_PATH_COMPONENT}(?:/{_PATH_COMPONENT})*"
_TAG = r"[\w][\w.-]{0,127}"
_DIGEST = r"[a-z0-9]+(?:[.+_-][a-z0-9]+)*:[0-9a-fA-F]{32,}"
_NAME = re.compile(rf"(?:(?P<domain>{_DOMAIN})/)?(?P<path>{_PATH})")
_REGISTRY_PATH = re.compile(rf"{_DOMAIN}(?:/{_PATH})?")
_TAG_ONLY = re.compile(_TAG, re.ASCII)
_REFERENCE = re.compile(
    rf"(?P<name>[^:@]+(?::[0-9]+/[^:@]+)?)(?::(?P<tag>{_TAG}))?(?:@(?P<digest>{_DIGEST}))?", re.ASCII
)
# The Makefile and chart defaults, and the moving tag: none of them names a build.
FLOATING_TAGS = ("latest",)


def _has_registry_domain(value: str) -> bool:
    first = value.split("/", 1)[0]
    return "." in first or ":" in first or first == "localhost" or first.startswith("[")


def _registry_path(value: str) -> str | None:
    if len(value) > 255 or not _REGISTRY_PATH.fullmatch(value) or not _has_registry_domain(value):
        return (
            "must be a registry host, with an optional port and an optional lowercase repository path, "
            "without a scheme, tag or trailing slash"
        )
    return None


def _repository(value: str) -> str | None:
    if len(value) > 255 or not _NAME.fullmatch(value):
        return "must be an image repository: an optional registry host, then a lowercase path, without a tag"
    return None


def _tag(value: str) -> str | None:
    if reason := _clean(value):
        return reason
    if not _TAG_ONLY.fullmatch(value):
        return "must be an image tag: up to 128 letters, digits, '_', '.' and '-', not starting with '.' or '-'"
    if value in FLOATING_TAGS:
        return f"{value!r} moves with every push; pin a tag that names one build"
    return None


def _image(value: str) -> str | None:
    if reason := _clean(value):
        return reason
    match = _REFERENCE.fullmatch(value)
    if not match or _repository(match["name"]):
        return "must be an image reference: repository, then ':<tag>' or '@sha256:<digest>'"
    if not match["tag"] and not match["digest"]:
        return "must name a tag or a digest, so the image is pinned"
    return _tag(match["tag"]) if match["tag"] and not match["digest"] else None


RegistryPath = Annotated[str, Strict(), _text(_registry_path)]
"""`host[:port][/path]` where images are pushed and pulled, e.g. registry.example.com/team/kai-fork or
localhost:5000: what docker, buildx and crane take before `/<repository>`."""

Repository = Annotated[str, Strict(), _text(_repository)]
"""An image repository without a tag, e.g. nvml-mock or ghcr.io/nvidia/nvml-mock."""

ImageTag = Annotated[str, Strict(), _text(_tag)]
"""An image tag that names one build."""

Image = Annotated[str, Strict(), _text(_image)]
"""An image reference pinned by tag or digest, e.g. nvidia/cuda:13.3.1-base-ubuntu24.04."""

# ---------------------------------------------------------------- versions

_SEMVER = re.compile(
    r"(?P<v>v?)(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)"
    r"(?:-[0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*)?(?:\+[0-9A-Za-z-]+(?:\.[0-9A-Za-z-]+)*)?",
    re.ASCII,
)
_DRIVER = re.compile(r"([0-9]{3})\.[0-9]{2,3}(?:\.[0-9]{2})?", re.ASCII)


def version_order(version: str) -> tuple[int, ...] | None:
    """A chart version's place in semantic-versioning order (a pre-release before its release), or
    None when it is no exact version."""
    match = _SEMVER.fullmatch(version)
    if not match:
        return None
    release = tuple(int(part) for part in match.group(2, 3, 4))
    return (*release, 0 if "-" in version.split("+", 1)[0] else 1)


def oci_chart_problem(reference: str) -> str | None:
    """Why an `oci://` chart reference is none Helm can pull, or None: a registry host, then the
    chart's repository path."""
    rest = reference.removeprefix("oci://")
    if _REGISTRY_PATH.fullmatch(rest) and "/" in rest and _has_registry_domain(rest):
        return None
    return (
        "must name a registry host and the chart's repository path after oci://, without a tag, "
        "such as oci://ghcr.io/kai-scheduler/kai-scheduler/kai-scheduler"
    )


def _chart_version(value: str) -> str | None:
    if not _SEMVER.fullmatch(value):
        return "must be one exact chart version (semantic versioning, such as v26.7.1 or 0.3.0), not a range"
    return None


def driver_version(minimum_branch: int) -> AfterValidator:
    """The check of an NVIDIA driver version (NNN.NN or NNN.NN.NN) of at least `minimum_branch`."""

    def check(value: str) -> str | None:
        match = _DRIVER.fullmatch(value)
        if not match:
            return "must be an NVIDIA driver version of the form NNN.NN or NNN.NN.NN"
        if int(match[1]) < minimum_branch:
            return f"must be an r{minimum_branch} or newer driver (MPS v3 namespaces need it)"
        return None

    return _text(check)


def uses_v_prefix(version: str) -> bool:
    match = _SEMVER.fullmatch(version)
    return bool(match and match["v"])


ChartVersion = Annotated[str, Strict(), _text(_chart_version)]

# ---------------------------------------------------------------- git, paths, platforms, URLs

_SCP_LIKE = re.compile(r"[A-Za-z0-9._-]+@[A-Za-z0-9.-]+:[^\s]+")
_URL = re.compile(r"(https?|ssh|git|file)://[^\s]+")
_HTTP_URL = re.compile(r"https?://[A-Za-z0-9.-]+(?::[0-9]+)?(?:/[^\s]*)?")
_PLATFORM = re.compile(r"(?P<os>[a-z0-9]+)/(?P<arch>[a-z0-9_]+)(?:/(?P<variant>[a-z0-9]+))?")
# What containerd's platform parser (and so buildx and crane) knows: Go's GOOS and GOARCH values,
# and the architecture spellings it normalizes (x86_64, aarch64, ...).
_PLATFORM_OS = frozenset(
    [
        "aix",
        "android",
        "darwin",
        "dragonfly",
        "freebsd",
        "illumos",
        "ios",
        "js",
        "linux",
        "netbsd",
        "openbsd",
        "plan9",
        "solaris",
        "wasip1",
        "windows",
    ]
)
_PLATFORM_ARCH = frozenset(
    [
        "386",
        "amd64",
        "arm",
        "arm64",
        "loong64",
        "mips",
        "mips64",
        "mips64le",
        "mipsle",
        "ppc64",
        "ppc64le",
        "riscv64",
        "s390x",
        "wasm",
    ]
    + ["aarch64", "armel", "armhf", "i386", "x86_64"]
)


def _git_repository(value: str) -> str | None:
    if reason := _not_an_option(value):
        return reason
    if _URL.fullmatch(value) or _SCP_LIKE.fullmatch(value) or "://" not in value:
        return None
    return "must be a git URL (https://, ssh://, git://, file://), user@host:path, or a local path"


def _http_url(value: str) -> str | None:
    return None if _HTTP_URL.fullmatch(value) else "must be an http:// or https:// URL"


def _platform(value: str) -> str | None:
    """One OS/architecture[/variant] pair, or a comma list of them, as `docker buildx build --platform` takes."""
    pairs = value.split(",")
    for pair in pairs:
        match = _PLATFORM.fullmatch(pair)
        if not match or match["os"] not in _PLATFORM_OS or match["arch"] not in _PLATFORM_ARCH:
            which = f"{pair!r} is not an OS/architecture pair" if len(pairs) > 1 else "must be an OS/architecture pair"
            return f"{which} such as linux/amd64 (several, for one multi-platform image: linux/amd64,linux/arm64)"
    if repeated := sorted({pair for pair in pairs if pairs.count(pair) > 1}):
        return f"names {', '.join(repeated)} more than once"
    return None


def _directory(value: str) -> str | None:
    if reason := _clean(value):
        return reason
    try:
        Path(value).expanduser()
    except RuntimeError:  # `~user` for a user this machine does not have
        return f"names a home directory this machine does not have ({value.split('/', 1)[0]})"
    return None


GitRepository = Annotated[str, Strict(), _text(_git_repository)]
HttpUrl = Annotated[str, Strict(), _text(_http_url)]
Platform = Annotated[str, Strict(), _text(_platform)]
"""The build platform(s): `linux/amd64`, or `linux/amd64,linux/arm64` for one manifest list of both."""
Directory = Annotated[str, Strict(), _text(_directory)]
"""A directory on the machine that runs Pulumi; relative to the project unless absolute."""

# ---------------------------------------------------------------- numbers and switches


def _strict_number(value: Any, kind: type) -> Any:
    """JSON numbers as they are; their plain decimal spelling as text; nothing else."""
    if isinstance(value, str):
        pattern = r"[0-9]+" if kind is int else r"[0-9]+(\.[0-9]+)?"
        if not re.fullmatch(pattern, value, re.ASCII):
            raise ValueError(f"must be a plain {'whole ' if kind is int else ''}number, such as 8")
        return kind(value)
    if isinstance(value, bool):
        raise ValueError("must be a number, not true or false")
    if kind is float and isinstance(value, int):
        return float(value)
    return value


def _finite(value: float) -> float:
    if not math.isfinite(value):
        raise ValueError("must be a finite number")
    return value


def _strict_bool(value: Any) -> Any:
    if isinstance(value, str) and value in ("true", "false"):
        return value == "true"
    if not isinstance(value, bool):
        raise ValueError("must be true or false")
    return value


Count = Annotated[int, BeforeValidator(lambda value: _strict_number(value, int)), Strict()]
Number = Annotated[
    float, BeforeValidator(lambda value: _strict_number(value, float)), Strict(), AfterValidator(_finite)
]
Switch = Annotated[bool, BeforeValidator(_strict_bool), Strict()]


def is_kubeconfig_contents(value: str) -> bool:  # else a path
    return "\n" in value or value.lstrip().startswith(("{", "apiVersion"))
