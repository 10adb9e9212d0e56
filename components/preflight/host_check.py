"""The host half of preflight: a shell script that asks one GPU host for the driver, MPS, Fabric
Manager, NVSwitch and NRI facts, and the parsing of its report into HostFacts."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from components.cluster.facts import HostFacts, version_tuple
from components.vocabulary.fractioning import NRI_SOCKET

MPS_NAMESPACE_COMMANDS = frozenset({"create", "delete", "list", "set", "get"})

_NOT_FOUND = re.compile(r"command not found|No such file or directory|executable file not found", re.I)
_DRIVER_VERSION = re.compile(r"^\s*(\d{3,4}\.\d+(?:\.\d+)?)\s*$", re.M)


def parse_driver_version(text: str) -> str | None:
    """`nvidia-smi --query-gpu=driver_version --format=csv,noheader`: one line per GPU, the lowest wins."""
    versions = _DRIVER_VERSION.findall(text)
    return min(versions, key=version_tuple) if versions else None


def parse_mps_namespace_commands(text: str) -> frozenset[str] | None:
    """The verbs `nvidia-cuda-mps-control -p 3 namespace --help` lists.

    An empty set means the control daemon answered without a `namespace` module (a pre-r615
    driver); None means the binary was not there to ask.
    """
    if not text.strip() or (_NOT_FOUND.search(text) and "namespace" not in text.lower()):
        return None
    verbs: set[str] = set()
    for line in text.splitlines():
        first = re.match(r"^\s*[-*]?\s*([a-z]+)\b", line)
        if first and first.group(1) in MPS_NAMESPACE_COMMANDS:
            verbs.add(first.group(1))
        for group in re.findall(r"[{<(\[]([a-z|,\s]+)[}>)\]]", line):
            verbs.update(v for v in re.split(r"[|,\s]+", group) if v in MPS_NAMESPACE_COMMANDS)
    return frozenset(verbs)


_SYSTEMD_STATES = {"active": True, "reloading": True, "refreshing": True}
_SYSTEMD_DOWN = {"inactive", "failed", "activating", "deactivating", "maintenance", "unknown"}


def parse_systemctl_is_active(text: str) -> bool | None:
    """`systemctl is-active nvidia-fabricmanager`: True when running, None when systemd did not answer."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    if not lines:
        return None
    state = lines[0]
    if state in _SYSTEMD_STATES:
        return True
    return False if state in _SYSTEMD_DOWN else None


def parse_nri_socket_listing(text: str, path: str = NRI_SOCKET) -> bool | None:
    """`ls -l /var/run/nri/nri.sock`: True for a socket, False when it is missing or not a socket."""
    for line in text.splitlines():
        if line.rstrip().endswith(path) and re.match(r"^[sdlbcp-][rwxsStT-]{9}", line):
            return line.startswith("s")
    if "Permission denied" in text:
        return None  # the node access is not root: it cannot tell
    if "No such file or directory" in text or "cannot access" in text:
        return False
    return None


def parse_nvswitch_listing(text: str) -> bool | None:
    """`ls -d /dev/nvidia-nvswitch*`: the driver creates one device per NVSwitch (HGX/DGX boards)."""
    if re.search(r"/dev/nvidia-nvswitch\d+", text):
        return True
    if "No such file or directory" in text or "cannot access" in text or not text.strip():
        return False
    return None


def parse_pids(text: str) -> bool | None:
    """`pgrep -f` for the nv-fabricmanager program: a PID means Fabric Manager runs (on the host or in
    the driver container); an error message (no pgrep) means the access could not tell."""
    if re.search(r"^\s*\d+\s*$", text, re.M):
        return True
    return False if not text.strip() else None


def host_check_script(nri_socket_path: str = NRI_SOCKET) -> str:
    """A POSIX shell script for one GPU host (or `chroot /host`) that prints one section per fact.

    Over SSH the script arrives on the shell's stdin (`sh -s`), so no command may read stdin:
    nvidia-cuda-mps-control reads commands from it. Fabric Manager is looked for by its command line:
    `pgrep -x` compares only the first 15 characters of a process name and can never match
    `nv-fabricmanager`; the pattern is anchored so it does not match the shell running this script.

    With a GPU Operator-managed driver, the tools live in the driver container's root, which the
    operator mounts at /run/nvidia/driver on the host.
    """
    return f"""\
in_driver_root() {{
  if command -v "$1" >/dev/null 2>&1; then "$@"
  elif [ -x "/run/nvidia/driver/usr/bin/$1" ]; then chroot /run/nvidia/driver "$@"
  else echo "$1: command not found"; fi
}}
echo '### driver'
in_driver_root nvidia-smi --query-gpu=driver_version --format=csv,noheader </dev/null 2>&1
echo '### mps-namespace'
in_driver_root nvidia-cuda-mps-control -p 3 namespace --help </dev/null 2>&1
echo '### fabricmanager'
systemctl is-active nvidia-fabricmanager </dev/null 2>&1
echo '### fabricmanager-process'
pgrep -f '^([^ ]*/)?nv-fabricmanager( |$)' </dev/null 2>&1
echo '### nri-socket'
ls -l {nri_socket_path} </dev/null 2>&1
echo '### nvswitch'
ls -d /dev/nvidia-nvswitch* </dev/null 2>&1
echo '### end'
"""


def split_sections(text: str) -> dict[str, str]:
    sections: dict[str, list[str]] = {}
    current: list[str] | None = None
    for line in text.splitlines():
        header = re.match(r"^### ([a-z-]+)\s*$", line)
        if header:
            current = sections.setdefault(header.group(1), [])
        elif current is not None:
            current.append(line)
    return {name: "\n".join(lines) for name, lines in sections.items()}


def parse_host_report(text: str, nri_socket_path: str = NRI_SOCKET) -> HostFacts:
    """The output of `host_check_script()` as HostFacts; a missing section stays None."""
    sections = split_sections(text)
    if "end" not in sections:
        return HostFacts(error="the host check did not run to completion: " + (text.strip()[-200:] or "no output"))

    def parsed(name: str, parse: Callable[[str], Any]) -> Any:
        return parse(sections[name]) if name in sections else None

    systemd = parsed("fabricmanager", parse_systemctl_is_active)
    process = parsed("fabricmanager-process", parse_pids)
    fabricmanager = True if True in (systemd, process) else (False if False in (systemd, process) else None)
    return HostFacts(
        driver_version=parsed("driver", parse_driver_version),
        mps_namespace_commands=parsed("mps-namespace", parse_mps_namespace_commands),
        fabricmanager_active=fabricmanager,
        nri_socket_present=parsed("nri-socket", lambda t: parse_nri_socket_listing(t, nri_socket_path)),
        nvswitch=parsed("nvswitch", parse_nvswitch_listing),
    )
