"""The component package used by other teams' programs (examples/), with the real engine against the
local control plane: the schema the plugin serves, SDKs generated from it, and each consumer's lab
created, updated with no changes and destroyed leaving nothing."""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from components.preflight.run import DEFERRED
from tests.integration.conftest import leftovers, webhooks_off_the_machine
from tests.integration.consumers import PLUGIN, cli, python_program, typescript_program, yaml_program
from tests.integration.stand_ins import StandInQueueAccounting, isolator_webhook
from tests.integration.workspace import REPO, Workspace, kubectl_json
from tests.package_schema import undescribed

pytestmark = pytest.mark.integration
TOKEN = "kai-gpu-fractions:index:"


def test_the_schema_the_plugin_serves_is_the_one_the_readme_documents(tmp_path: Path) -> None:
    schema = json.loads(cli("package", "get-schema", str(PLUGIN), cwd=tmp_path, state=tmp_path).stdout)
    version = re.search(r'^version = "([^"]+)"', (REPO / "pyproject.toml").read_text(), re.M)
    assert version and schema["version"] == version.group(1), "the package's version is the project's"
    assert undescribed(schema) == [], "an SDK shows each description as its documentation"
    readme = (REPO / "README.md").read_text()
    documented = re.findall(r"^\| `(\w+)` \| ", readme.split("### The package's components")[1].split("\n\n")[1], re.M)
    assert sorted(documented) == sorted(t.removeprefix(TOKEN) for t in schema["resources"])
    for component in documented:
        resource = schema["resources"][TOKEN + component]
        row = next(line for line in readme.splitlines() if line.startswith(f"| `{component}` |")).split("|")
        assert set(re.findall(r"`(\w+)`", row[2])) == set(resource["inputProperties"]), f"{component}'s inputs"
        assert set(re.findall(r"`(\w+)`", row[3])) == set(resource["properties"]), f"{component}'s outputs"


@dataclass(frozen=True)
class Consumer:
    program: Workspace
    # Whether another resource of the same update makes the cluster (its kubeconfig unknown at preview).
    makes_its_cluster: bool


# Each program's set-up, and whether another resource of its update makes the cluster.
CONSUMERS: dict[str, tuple[Callable[[Path], Workspace], bool]] = {
    "python": (python_program, True),
    "typescript": (typescript_program, False),
    "yaml": (yaml_program, False),
}


@pytest.fixture(scope="module", params=sorted(CONSUMERS))
def consumer(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Consumer]:
    base = tmp_path_factory.mktemp(f"{request.param}-consumer")
    make, makes_its_cluster = CONSUMERS[request.param]
    workspace = make(base)
    with isolator_webhook(base), StandInQueueAccounting("default-queue", gpu_memory_mib=40960):
        yield Consumer(workspace, makes_its_cluster)
        workspace.pulumi("destroy", "--yes", "--skip-preview", stack="dev", check=False)


def steps(preview: dict[str, Any], op: str) -> list[str]:
    return [step["urn"].rsplit("::", 1)[1] for step in preview["steps"] if step["op"] == op]


def test_preview_shows_the_whole_graph_and_when_preflight_runs(consumer: Consumer) -> None:
    digest = json.loads(consumer.program.pulumi("preview", "--json", stack="dev").stdout)
    # What the preview prints: each message the program logged, as the engine displays it.
    preview = " ".join(" ".join(d["message"] for d in digest.get("diagnostics", [])).split())
    if consumer.makes_its_cluster:
        assert DEFERRED in preview, "a cluster not made yet: neither a failure nor silence"
        assert "Preflight: 0 failing" not in preview
    else:
        assert "Preflight: 0 failing" in preview, "a cluster the program names is read at preview"
        assert DEFERRED not in preview
    planned = steps(digest, "create")
    assert {"lab", "gpu-node-labels-gpu-node-0", "kai-scheduler-release", "kai-scheduler-ready"} <= set(planned)


def test_up_checks_the_cluster_then_installs_the_lab_in_it(consumer: Consumer) -> None:
    up = consumer.program.pulumi("up", "--yes", "--skip-preview", stack="dev", timeout=1200)
    assert "Preflight: 0 failing" in up.output, "preflight ran on the cluster before the installs"
    assert "KAI-Scheduler ready: all 4 checks hold" in up.output
    assert webhooks_off_the_machine() == [], "every webhook the API server calls is on loopback"
    assert kubectl_json("get", "pod", "kai-whole-gpu")["status"]["phase"] == "Running"
    outputs = consumer.program.outputs("dev")
    assert outputs["labPods"] == ["kai-whole-gpu", "gpu-sharing-with-isolation"]
    resources = consumer.program.export("dev")["deployment"]["resources"]
    (lab,) = [r for r in resources if r["type"] == TOKEN + "Lab"]
    children = {r["type"] for r in resources if r.get("parent") == lab["urn"]}
    assert {TOKEN + "StepGate", "pulumi:providers:kubernetes"} <= children, "the lab's graph is under it"
    assert not [r["urn"] for r in resources if "pulumi-python" in r["type"]], "no dynamic provider to run"
    credential = max(Path(os.environ["KUBECONFIG"]).read_text().splitlines(), key=len).split()[-1]
    leaking = [r["urn"] for r in resources if credential in json.dumps(r)]
    assert leaking == [], "the kubeconfig reaches the state only as a secret"


def test_a_second_up_changes_nothing(consumer: Consumer) -> None:
    consumer.program.pulumi("up", "--yes", "--skip-preview", "--expect-no-changes", stack="dev")


def test_destroy_leaves_nothing(consumer: Consumer) -> None:
    consumer.program.pulumi("destroy", "--yes", "--skip-preview", stack="dev", timeout=900)
    assert leftovers() == {}
    assert consumer.program.export("dev")["deployment"].get("resources", []) == []
