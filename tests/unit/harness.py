"""A recording mock engine: runs the real program under Pulumi mocks and keeps every registration."""

from __future__ import annotations

import asyncio
import hashlib
import json
import runpy
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pulumi
import pytest
from google.protobuf import json_format
from pulumi.runtime import mocks, rpc

from components.cluster.facts import ClusterFacts, HostFacts, NodeFacts
from components.config.model import ForkPin
from components.forks import supply
from components.forks.recipes import ForkRecipe
from components.forks.source import ForkSource, fork_tree
from components.preflight import run as preflight
from components.rollout import plan as rollout_plan
from components.rollout.plan import NodeLoad, Versions

PROJECT = "kai-gpu-fractions"
PROGRAM = Path(__file__).resolve().parents[2] / "__main__.py"

RELEASE = "kubernetes:helm.sh/v3:Release"
NAMESPACE = "kubernetes:core/v1:Namespace"
SECRET = "kubernetes:core/v1:Secret"
POD = "kubernetes:core/v1:Pod"
CUSTOM_RESOURCE_PREFIX = "kubernetes:gpu-fractioning.kai.scheduler/v1alpha1:"
COMMAND = "command:local:Command"
# The package's own resources: gates, proofs, the rollout, destroy-time waits.
PACKAGE_RESOURCE = "kai-gpu-fractions:index:"
STEP_GATE = f"{PACKAGE_RESOURCE}StepGate"
GET_REGISTRY_IMAGE = "docker:index/getRegistryImage:getRegistryImage"


@dataclass
class Registration:
    type: str
    name: str
    inputs: dict[str, Any]
    parent: str
    urn: str
    dependencies: list[str]
    # The inputs as the SDK sent them: a secret nested in a map or list stays where it is (reading
    # them back, as `inputs` does, marks the whole map or list secret).
    sent: dict[str, Any] = field(default_factory=dict)
    # The outputs the program asked the engine to store as secrets (`additional_secret_outputs`).
    secret_outputs: list[str] = field(default_factory=list)
    replace_on_changes: list[str] = field(default_factory=list)
    delete_before_replace: bool = False


@dataclass
class Engine(mocks.Mocks):
    """Answers like a cluster that accepts everything, and records what the program asked for."""

    registrations: list[Registration] = field(default_factory=list)
    invokes: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    # (fork key, pin, workdir) of each fork source the program prepared; nothing touches the disk.
    fork_sources: list[tuple[str, ForkPin, str]] = field(default_factory=list)

    def prepare_fork_source(self, recipe: ForkRecipe, pin: ForkPin, workdir: str) -> ForkSource:
        self.fork_sources.append((recipe.key, pin, workdir))
        root = fork_tree(recipe, pin, workdir)
        return ForkSource(root, root / recipe.chart_path)

    def new_resource(self, args: mocks.MockResourceArgs) -> tuple[str | None, dict[str, Any]]:
        state = dict(args.inputs)
        if args.typ == RELEASE:
            state["status"] = {"status": "deployed", "name": args.inputs.get("name"), "revision": 1}
        if args.typ == "pulumi:index:Stash":
            state["output"] = args.inputs["input"]
        if args.typ.startswith(PACKAGE_RESOURCE):
            results = [
                {"check": "mocked", "passed": True, "detail": ""},
                {"check": "reservation-boundary", "passed": True, "detail": "mocked boundary"},
            ]
            state |= {"results": results, "report": "mocked"}
        if args.typ == COMMAND:
            state["stdout"] = ""
        metadata = args.inputs.get("metadata") or {}
        if args.custom and "name" in metadata:
            namespace = metadata.get("namespace")
            return (f"{namespace}/{metadata['name']}" if namespace else metadata["name"]), state
        return f"{args.name}-id", state

    def call(self, args: mocks.MockCallArgs) -> tuple[dict[str, Any], list[tuple[str, str]]]:
        self.invokes.append((args.token, dict(args.args)))
        if args.token == GET_REGISTRY_IMAGE:
            digest = hashlib.sha256(args.args["name"].encode()).hexdigest()
            return {"name": args.args["name"], "sha256Digest": f"sha256:{digest}"}, []
        return {}, []

    def created(self, typ: str) -> list[Registration]:
        return [r for r in self.registrations if r.type == typ]

    def one(self, typ: str, name: str) -> Registration:
        matches = [r for r in self.registrations if r.type == typ and r.name == name]
        assert len(matches) == 1, f"expected exactly one {typ} named {name}, got {len(matches)}"
        return matches[0]

    def release(self, release_name: str) -> Registration:
        matches = [r for r in self.created(RELEASE) if r.inputs.get("name") == release_name]
        assert len(matches) == 1, f"expected one Helm release {release_name}"
        return matches[0]

    def waits_for(self, dependent: Registration, dependency: Registration) -> bool:
        """True if `dependent` is ordered after `dependency` (or after a resource inside it), directly
        or through other resources. Children are registered only after their parent, so a
        component's dependencies hold for everything inside it."""
        by_urn = {r.urn: r for r in self.registrations}
        seen: set[str] = set()
        pending = [dependent.urn]
        while pending:
            urn = pending.pop()
            if urn in seen or urn not in by_urn:
                continue
            seen.add(urn)
            current = by_urn[urn]
            for edge in current.dependencies:
                if edge == dependency.urn or self.is_inside(edge, dependency.urn):
                    return True
                pending.append(edge)
            pending.append(current.parent)
        return False

    def is_inside(self, urn: str, ancestor: str) -> bool:
        """True if the resource `urn` is a child of `ancestor`, or a child of one of its children."""
        parents = {r.urn: r.parent for r in self.registrations}
        while urn in parents:
            urn = parents[urn]
            if urn == ancestor:
                return True
        return False


class RecordingMonitor(mocks.MockMonitor):
    def __init__(self, engine: Engine) -> None:
        super().__init__(engine)
        self.engine = engine

    def RegisterResource(self, request: Any) -> Any:
        response = super().RegisterResource(request)
        if request.type != "pulumi:pulumi:Stack":
            self.engine.registrations.append(
                Registration(
                    type=request.type,
                    name=request.name,
                    inputs=rpc.deserialize_properties(request.object, keep_unknowns=True),
                    parent=request.parent,
                    urn=response.urn,
                    dependencies=list(request.dependencies),
                    sent=json_format.MessageToDict(request.object),
                    secret_outputs=list(request.additionalSecretOutputs),
                    replace_on_changes=list(request.replaceOnChanges),
                    delete_before_replace=request.deleteBeforeReplace,
                )
            )
        return response


# A cluster that meets every row of the guide's prerequisites table, as preflight would read it.
# A cluster with none of the stack's GPU software installed yet: the rollout plan's first install.
NOTHING_RUNNING: tuple[Versions, list[NodeLoad]] = (Versions(None, None, None, None), [])
PREPARED_CLUSTER = ClusterFacts(
    gpu_nodes=[
        NodeFacts(
            name="gpu-node-0",
            labels={"nvidia.com/gpu.present": "true", "nvidia.com/gpu.memory": "40960", "nvidia.com/gpu.count": "8"},
            container_runtime_version="containerd://2.1.4",
            allocatable={"nvidia.com/gpu": "8"},
            host=HostFacts(
                driver_version="615.71.09",
                mps_namespace_commands=frozenset({"create", "delete", "list", "set", "get"}),
                fabricmanager_active=True,
                nri_socket_present=True,
                nvswitch=True,
            ),
        )
    ],
    runtime_classes={"nvidia": "nvidia"},
    cluster_policy_version="v26.7.1",
    can_create=dict.fromkeys(
        ("customresourcedefinitions", "clusterroles", "clusterrolebindings", "priorityclasses", "namespaces"), True
    ),
)


def stack_config(config: dict[str, Any]) -> dict[str, str]:
    """Config as the engine hands it over: structured values as JSON text."""
    return {
        f"{PROJECT}:{key}": json.dumps(value) if isinstance(value, dict | list) else str(value)
        for key, value in config.items()
    }


class ProgramRunner:
    """Runs __main__.py (or another `program`) under mocks, with `cluster` as what preflight reads and the fork sources
    recorded instead of checked out; `engine` is the last run's, also when the program failed."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.monkeypatch = monkeypatch
        self.engine = Engine()
        # The names of the last run's stack outputs that are Pulumi secrets.
        self.secret_outputs: set[str] = set()

    def __call__(
        self,
        config: dict[str, Any],
        secret_keys: tuple[str, ...] = (),
        preview: bool = False,
        cluster: ClusterFacts = PREPARED_CLUSTER,
        running: tuple[Versions, list[NodeLoad]] = NOTHING_RUNNING,
        program: Path = PROGRAM,
    ) -> tuple[Engine, dict[str, Any]]:
        """The engine and the resolved stack outputs."""
        self.engine = engine = Engine()
        monitor = RecordingMonitor(engine)
        pulumi.runtime.set_mocks(engine, project=PROJECT, stack="test", preview=preview, monitor=monitor)
        pulumi.runtime.set_all_config(stack_config(config), [f"{PROJECT}:{k}" for k in secret_keys])
        exported: dict[str, Any] = {}
        self.monkeypatch.setattr(pulumi, "export", exported.__setitem__)
        self.monkeypatch.setattr(preflight, "read_cluster_facts", lambda _spec, _access: cluster)
        self.monkeypatch.setattr(rollout_plan, "read_running", lambda _access, _kai, _agents: running)
        self.monkeypatch.setattr(supply, "prepare_fork_source", engine.prepare_fork_source)

        self.secret_outputs = set()

        async def record_outputs() -> None:
            for name, value in dict(exported).items():
                output = pulumi.Output.from_input(value)
                if await output.is_secret():
                    self.secret_outputs.add(name)
                exported[name] = await output.future()

        @pulumi.runtime.test
        def run() -> Any:
            runpy.run_path(str(program), run_name="__main__")
            return pulumi.Output.from_input(asyncio.ensure_future(record_outputs()))

        run()
        return engine, exported
