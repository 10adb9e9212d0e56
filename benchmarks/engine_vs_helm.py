"""The dev stack under the real engine next to the same install done by hand, in one run.

On the local control plane with the stand-in charts, it measures:
  cold up        `pulumi up` of the dev stack on an empty cluster
  helm script    the same charts and objects installed by a sequential `helm upgrade --install
                 --wait` / `kubectl apply` script in the runbook's order, with the same values; once
                 with each helm client, and once more with the last client and the verifications
                 the cold up makes on the way (`+ checks`), so that like is compared with like
  preview        `pulumi preview` of the deployed stack, next to the preview of an empty program
                 that loads the same provider; the difference is split by previews of the empty
                 program with the real one's imports and of the stack with preflight off
  no-op up       `pulumi up` with nothing to change, next to that preview
and prints where each cold up's seconds went (benchmarks/event_profile.py): the critical path of
resource steps and the longest steps, from the engine's event stream (`pulumi up --json`).
Run it with scripts/benchmark.sh, which gives it a control plane of its own, the helm v3 client the
control plane builds (or another in KGF_HELM) and a helm v4 client (KGF_HELM_V4):
`scripts/benchmark.sh engine_vs_helm [-- --rounds N]`.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import tempfile
import time
from collections import defaultdict
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

import yaml

from benchmarks import event_profile
from components.check_specs import preflight_expectations
from components.config.load import parse_config
from components.gpu_cluster.kai_scheduler import kai_lab_values
from components.lab.gpu_node_labels import gpu_node_labels
from components.lab.isolator import isolator_values
from components.lab.lab_pods import shared_pod_manifest, whole_gpu_pod_manifest
from components.lab.nvml_mock import device_plugin_manifest, nvml_mock_values
from components.lab.queues import QUEUE_API_VERSION, queue_spec
from components.preflight.decisions import PreflightSpec
from components.preflight.run import read_cluster_facts
from components.stack import cluster_access
from components.vocabulary import kai
from tests.integration.test_dev_stack import NODE, dev_config
from tests.integration.workspace import REPO, Workspace, kubectl, wait_until

CHARTS = REPO / "standins" / "charts"
EMPTY_PROGRAM = "import pulumi_kubernetes as k8s\n\nk8s.Provider('cluster')\n"
# The empty program plus the imports of the real one: its modules and the SDK's API groups they use.
IMPORTS_PROGRAM = """import pulumi_kubernetes as k8s
import pulumi_kubernetes.apiextensions, pulumi_kubernetes.apps.v1, pulumi_kubernetes.core.v1
import pulumi_kubernetes.helm.v3, pulumi_kubernetes.meta.v1, pulumi_kubernetes.node.v1
import components.stack, components.config.load

k8s.Provider("cluster")
"""


def bench_config() -> dict[str, Any]:
    """The tests' dev stack without the lab proof: the proof needs the tests' stand-ins for KAI's
    queue accounting and the isolator's webhook, and the helm script proves nothing either."""
    config = dev_config()
    config["lab"] = {**config["lab"], "prove": False}
    return config


def timed(action: Callable[[], object]) -> float:
    start = time.perf_counter()
    action()
    return time.perf_counter() - start


def apply(manifest: dict[str, Any], check: bool = True) -> bool:
    args = ("apply", "--server-side", "--force-conflicts", "-f", "-")
    return kubectl(*args, input_text=json.dumps(manifest), check=check).returncode == 0


def admitted(manifest: dict[str, Any], webhook: str) -> None:
    """The runbook's "wait for KAI's webhooks": until KAI's pods answer, its webhooks (failurePolicy
    Fail) refuse Queues and kai-scheduler pods, so the apply is retried until it is admitted."""
    wait_until(lambda: apply(manifest, check=False), 300, webhook, interval=0.5)


def helm_script(helm: str, work: Path, checks: bool = False, stack: dict[str, Any] | None = None) -> None:
    """The runbook's order, by hand: nvml-mock, device plugin, labels, KAI, queues, isolator, pods
    (the queues and pods retried until KAI's webhooks admit them).

    With `checks`, it also does what the cold up verifies on the way: preflight's reads of the
    cluster, the GPUs the device plugin advertises, and KAI's operator having made its Deployments
    and kai-config Available before the queues go in.
    `stack` is the dev stack's configuration to install (the benchmark's by default).
    """
    config = parse_config(stack or bench_config())
    lab = config.lab
    if checks:
        read_cluster_facts(PreflightSpec(preflight_expectations(config), config.preflight), cluster_access(config))

    def install(release: str, chart: str, namespace: str, values: dict[str, Any]) -> None:
        values_file = work / f"{release}.yaml"
        values_file.write_text(yaml.safe_dump(values))
        installed = subprocess.run(
            [
                helm,
                "upgrade",
                "--install",
                release,
                str(CHARTS / chart),
                "-n",
                namespace,
                "--create-namespace",
                "-f",
                str(values_file),
                "--wait",
                "--timeout",
                "600s",
            ],
            check=False,
            capture_output=True,
            text=True,
        )
        if installed.returncode != 0:
            raise RuntimeError(f"helm upgrade --install {release} failed:\n{installed.stderr or installed.stdout}")

    install("nvml-mock", "nvml-mock", lab.nvml_mock.namespace, nvml_mock_values(lab))
    apply({"apiVersion": "apps/v1", "kind": "DaemonSet", **device_plugin_manifest(lab.device_plugin_image)})
    kubectl("-n", "kube-system", "rollout", "status", "ds/nvidia-device-plugin-mock", "--timeout=300s")
    if checks:
        gpus = f"jsonpath={{.status.allocatable.nvidia\\.com/gpu}}={lab.gpu.count}"
        kubectl("wait", *[f"node/{node}" for node in lab.node_names], f"--for={gpus}", "--timeout=300s")
    labels = [f"{k}={v}" for k, v in gpu_node_labels(lab.gpu).items()]
    kubectl("label", "node", *lab.node_names, "--overwrite", *labels)
    install("kai-scheduler", "kai-scheduler", config.kai.namespace, kai_lab_values(config.kai))
    if checks:
        made_by_the_operator = [f"deployment/{name}" for name in kai.DEPLOYMENTS]
        namespace = ("-n", config.kai.namespace)

        def made() -> bool:
            return kubectl("get", *namespace, *made_by_the_operator, "-o", "name", check=False).returncode == 0

        # `until kubectl get ...; do sleep 0.5; done`: `kubectl wait` fails on what does not exist yet.
        wait_until(made, 300, "KAI's Deployments", interval=0.5)
        kubectl("wait", *namespace, "--for=condition=Available", "--timeout=300s", *made_by_the_operator)
        kai_config = f"{kai.CONFIG_PLURAL}.{kai.CONFIG_GROUP}/{kai.CONFIG_NAME}"
        kubectl("wait", "--for=condition=Available", "--timeout=300s", kai_config)
    for name, parent in (("default", None), ("default-queue", "default")):
        queue = {
            "apiVersion": QUEUE_API_VERSION,
            "kind": "Queue",
            "metadata": {"name": name},
            "spec": queue_spec(parent),
        }
        admitted(queue, "KAI's Queue webhook")
    install("kai-resource-isolator", "kai-resource-isolator", lab.isolator.namespace, isolator_values())
    apply({"apiVersion": "node.k8s.io/v1", "kind": "RuntimeClass", "metadata": {"name": "nvidia"}, "handler": "runc"})
    for pod in (whole_gpu_pod_manifest(True), shared_pod_manifest(lab.gpu)):
        admitted({"apiVersion": "v1", "kind": "Pod", **pod}, "KAI's pod webhooks")
    kubectl("wait", "--for=condition=Ready", "pod/kai-whole-gpu", "--timeout=300s")


def helm_cleanup(helm: str) -> None:
    kubectl("delete", "pod", "kai-whole-gpu", "gpu-sharing-with-isolation", "--ignore-not-found", "--wait=true")
    kubectl("delete", "queues.scheduling.run.ai", "--all", check=False)
    kubectl("delete", "runtimeclass", "nvidia", "--ignore-not-found")
    for release, namespace in (
        ("kai-resource-isolator", "kai-resource-isolator"),
        ("kai-scheduler", "kai-scheduler"),
        ("nvml-mock", "nvml-mock"),
    ):
        subprocess.run([helm, "uninstall", release, "-n", namespace, "--wait"], check=False, capture_output=True)
    kubectl("-n", "kube-system", "delete", "ds", "nvidia-device-plugin-mock", "--ignore-not-found")
    kubectl(
        "delete",
        "ns",
        "kai-resource-isolator",
        "kai-scheduler",
        "nvml-mock",
        "kai-resource-reservation",
        "--ignore-not-found",
        "--wait=true",
    )
    kubectl("label", "node", NODE, "nvidia.com/gpu.memory-", "nvidia.com/gpu.product-", "nvidia.com/gpu.count-")
    delete_kai_webhooks()


def delete_kai_webhooks() -> None:
    """KAI's webhook configurations (failurePolicy Fail, owned by kai-config) are garbage-collected some
    time after the uninstall; one still registered refuses the next round's chart its kept Queues, as
    it would refuse a reinstall made as quickly by hand. The next round starts without them."""
    for kind in ("validatingwebhookconfigurations", "mutatingwebhookconfigurations"):
        found = json.loads(kubectl("get", kind, "-o", "json").stdout)["items"]
        owned = [
            w["metadata"]["name"]
            for w in found
            if any(o.get("kind") == "Config" for o in w["metadata"].get("ownerReferences") or [])
        ]
        if owned:
            kubectl("delete", kind, *owned, "--ignore-not-found", "--wait=true")


def profile(dev: Workspace, event_log: Path) -> str:
    export = json.loads(dev.pulumi("stack", "export", stack="dev").stdout)
    return event_profile.report(event_profile.read_events(event_log), event_profile.dependencies_from_export(export))


def preview_without_preflight(dev: Workspace) -> None:
    """The deployed stack's preview with preflight off (`--config` saves it; removed afterwards)."""
    try:
        dev.pulumi("preview", "--config-path", "--config", "kai-gpu-fractions:preflight.enabled=false", stack="dev")
    finally:
        dev.pulumi("config", "rm", "kai-gpu-fractions:preflight", stack="dev")


def one_round(
    base: Path, round_number: int, helms: dict[str, str], empty: Workspace, imports: Workspace
) -> dict[str, float]:
    dev = Workspace.create(base / f"dev-{round_number}")
    dev.new_stack("dev", bench_config())
    event_log = base / f"cold-up-{round_number}.events"
    try:
        timings = {
            "cold up": timed(
                lambda: event_log.write_text(dev.pulumi("up", "--yes", "--skip-preview", "--json", stack="dev").stdout)
            ),
            "preview": timed(lambda: dev.pulumi("preview", stack="dev")),
            "empty preview": timed(lambda: empty.pulumi("preview", stack="empty")),
            "imports preview": timed(lambda: imports.pulumi("preview", stack="imports")),
            "no-preflight preview": timed(partial(preview_without_preflight, dev)),
            "no-op up": timed(lambda: dev.pulumi("up", "--yes", "--skip-preview", stack="dev")),
        }
        print(f"round {round_number + 1}, cold up, {profile(dev, event_log)}", flush=True)
    finally:
        dev.pulumi("destroy", "--yes", "--skip-preview", stack="dev", check=False)
    runs = [(f"helm {version}", helm, False) for version, helm in helms.items()]
    last_version, last_helm = list(helms.items())[-1]
    runs.append((f"helm {last_version} + checks", last_helm, True))
    for name, helm, checks in runs:
        work = base / f"{name.replace(' ', '-')}-{round_number}"
        work.mkdir()
        try:
            timings[name] = timed(partial(helm_script, helm, work, checks))
        finally:
            helm_cleanup(helm)
    return timings


def helm_clients() -> dict[str, str]:
    """The helm clients to script with, by version: the one on PATH (or KGF_HELM) and KGF_HELM_V4."""
    paths = [os.environ.get("KGF_HELM") or shutil.which("helm"), os.environ.get("KGF_HELM_V4")]
    clients = {}
    for path in filter(None, paths):
        version = subprocess.run([path, "version", "--short"], check=True, capture_output=True, text=True)
        clients[version.stdout.strip().split("+")[0]] = path
    if not clients:
        raise SystemExit("no helm binary: set KGF_HELM or put helm on PATH")
    return clients


def main() -> None:
    parser = argparse.ArgumentParser(description="The dev stack under Pulumi next to a helm script.")
    parser.add_argument("--rounds", type=int, default=3)
    rounds = parser.parse_args().rounds
    helms = helm_clients()
    results: dict[str, list[float]] = defaultdict(list)
    with tempfile.TemporaryDirectory() as base:
        empty_program = Path(base) / "empty.py"
        empty_program.write_text(EMPTY_PROGRAM)
        empty = Workspace.create(Path(base) / "empty", program=empty_program)
        empty.pulumi("stack", "init", "empty")
        imports_program = Path(base) / "imports.py"
        imports_program.write_text(IMPORTS_PROGRAM)
        imports = Workspace.create(Path(base) / "imports", program=imports_program)
        imports.pulumi("stack", "init", "imports")
        kubectl("label", "node", NODE, "nvidia.com/gpu.memory-", "nvidia.com/gpu.product-", "nvidia.com/gpu.count-")
        for round_number in range(rounds):
            for name, seconds in one_round(Path(base), round_number, helms, empty, imports).items():
                results[name].append(seconds)
    median = {name: statistics.median(values) for name, values in results.items()}
    print(f"dev stack on the local control plane, median of {rounds} rounds (seconds)")
    for name, seconds in median.items():
        print(f"  {name:22} {seconds:7.2f}")
    for name in [name for name in median if name.startswith("helm ")]:
        print(f"cold up / {name} script: {median['cold up'] / median[name]:.2f}x")
    print(f"preview / empty preview:  {median['preview'] / median['empty preview']:.2f}x")
    print(f"no-op up / preview:       {median['no-op up'] / median['preview']:.2f}x")
    print("where the preview's seconds go (differences of the medians):")
    steps = [("empty preview", "engine, language host, provider"), ("imports preview", "the program's imports")]
    steps += [("no-preflight preview", "config, registrations, the engine's steps"), ("preview", "preflight")]
    before = 0.0
    for name, what in steps:
        print(f"  {median[name] - before:6.2f}  {what}")
        before = median[name]


if __name__ == "__main__":
    main()
