"""How preflight reaches a GPU host: over SSH, or in a one-shot privileged pod on the node. Either
runs the host check script there; its report becomes the node's HostFacts."""

from __future__ import annotations

import subprocess
import threading
import uuid
from collections.abc import Callable, Mapping, Sequence
from itertools import repeat
from typing import Any

from components.cluster.facts import HostFacts, HostFactsReader
from components.cluster.protocol import Cluster
from components.cluster.waiting import Clock, Deadline, poll
from components.config.model import HostAccessConfig
from components.preflight.host_check import host_check_script, parse_host_report

# Runs the host check script on the named node and returns its combined output.
HostRunner = Callable[[str], str]


def ssh_runner(
    script: str,
    command: Sequence[str] = ("ssh", "-o", "BatchMode=yes"),
    addresses: Mapping[str, str] | None = None,
    user: str | None = None,
    timeout_seconds: int = 60,
) -> HostRunner:
    """Runs the script over SSH (`ssh <address> sh -s`); `addresses` maps node names to hosts."""

    def run(node: str) -> str:
        address = (addresses or {}).get(node, node)
        target = f"{user}@{address}" if user else address
        done = subprocess.run(
            # `--`: the target is a host, never an option, whatever the node or address is called.
            [*command, "--", target, "sh", "-s"],
            input=script,
            capture_output=True,
            text=True,
            timeout=timeout_seconds,
            check=False,
        )
        if done.returncode == 255:  # ssh's own failure, not the script's
            raise RuntimeError(done.stderr.strip() or "ssh failed")
        return done.stdout + done.stderr

    return run


CHECK_POD_LABEL = {"app.kubernetes.io/name": "kai-gpu-fractions-preflight"}
TERMINAL_PHASES = frozenset({"Succeeded", "Failed"})


def has_finished(phase: str | None) -> bool:
    return phase in TERMINAL_PHASES


def check_pod_manifest(node: str, name: str, image: str, script: str) -> dict[str, Any]:
    """A privileged one-shot pod on `node` that runs `script` in the host's root filesystem."""
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "labels": dict(CHECK_POD_LABEL)},
        "spec": {
            "nodeName": node,
            "restartPolicy": "Never",
            "hostPID": True,
            "tolerations": [{"operator": "Exists"}],
            "containers": [
                {
                    "name": "check",
                    "image": image,
                    "command": ["chroot", "/host", "sh", "-c", script],
                    "securityContext": {"privileged": True},
                    "volumeMounts": [{"name": "host", "mountPath": "/host"}],
                }
            ],
            "volumes": [{"name": "host", "hostPath": {"path": "/"}}],
        },
    }


class PodPhases:
    """The check pods' phases, read for every node being checked with one list call at most every
    `interval` seconds: waiting on 64 nodes costs the API what waiting on one does."""

    def __init__(
        self, list_pods: Callable[[], list[dict[str, Any]]], interval: float = 0.5, clock: Clock | None = None
    ) -> None:
        self._list_pods = list_pods
        self._interval = interval
        self._clock = clock or Clock()
        self._lock = threading.Lock()
        self._read_at = -interval
        self._phases: dict[str, str] = {}

    def wait_until_done(self, name: str, timeout_seconds: float) -> bool:
        """True once the named pod has finished (either way); False if `timeout_seconds` pass first.
        Each look reads the shared phases, which the API refreshes at most every `interval`, so the
        looks keep to a quarter of it rather than backing off."""
        deadline = Deadline.after(timeout_seconds, self._clock)
        return has_finished(poll(lambda: self._phase(name), has_finished, deadline, repeat(self._interval / 4)))

    def _phase(self, name: str) -> str | None:
        with self._lock:
            if self._clock.now() - self._read_at >= self._interval:
                pods = self._list_pods()
                self._phases = {p["metadata"]["name"]: (p.get("status") or {}).get("phase", "") for p in pods}
                self._read_at = self._clock.now()
            return self._phases.get(name)


def check_pod_runner(cluster: Cluster, script: str, namespace: str, image: str, timeout_seconds: int) -> HostRunner:
    """Runs the script in a short-lived privileged pod per node, then deletes it.

    This creates a pod, during preview too: enable it only where that is acceptable.
    """
    selector = ",".join(f"{k}={v}" for k, v in CHECK_POD_LABEL.items())
    phases = PodPhases(lambda: cluster.list_pods(namespace, label_selector=selector))

    def run(node: str) -> str:
        name = f"kgf-preflight-{uuid.uuid4().hex[:8]}"
        cluster.create_pod(namespace, check_pod_manifest(node, name, image, script))
        try:
            if not phases.wait_until_done(name, timeout_seconds):
                raise TimeoutError(f"check pod {namespace}/{name} on {node} did not finish in {timeout_seconds}s")
            return cluster.pod_logs(namespace, name)
        finally:
            cluster.delete_pod(namespace, name, wait=False)

    return run


def host_facts_reader(access: HostAccessConfig | None, socket: str, cluster: Cluster) -> HostFactsReader | None:
    """The configured node access, as a reader of each node's HostFacts (the NRI socket looked for at
    `socket`); None without one."""
    if access is None:
        return None
    script = host_check_script(socket)
    if access.ssh is not None:
        ssh = access.ssh
        run = ssh_runner(script, ssh.command, ssh.addresses, ssh.user, ssh.timeout_seconds)
    elif access.check_pod is not None:
        pod = access.check_pod
        run = check_pod_runner(cluster, script, pod.namespace, pod.image, pod.timeout_seconds)
    else:
        return None
    return facts_reader(run, socket)


def facts_reader(run: HostRunner, nri_socket_path: str) -> HostFactsReader:
    """Each node's report as HostFacts; a failing node access gives the facts it could not read."""

    def read(node: str) -> HostFacts:
        try:
            return parse_host_report(run(node), nri_socket_path)
        except Exception as error:  # any access failure means "not checked", with its reason
            return HostFacts(error=f"node access failed: {error}")

    return read
