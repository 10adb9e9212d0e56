"""Dynamic providers' module paths are a contract with every deployed stack.

Pulumi pickles each dynamic resource's provider into the state by module and class name. Its diff
ignores `__provider`, so an unchanged resource keeps the pickle it was created with, and refresh and
destroy load the provider from it: a provider moved or renamed without a shim at its old path breaks
`destroy` of every stack that holds it. tests/fixtures/state/dynamic-providers.json holds the
pickles as the SDK made them at each path a stack may hold.
"""

from __future__ import annotations

import base64
import importlib
import inspect
import json
import pkgutil
from pathlib import Path
from typing import Any

import dill
import pytest
from pulumi.dynamic import ResourceProvider

import components
from components.teardown import waits as teardown
from tests.unit.fake_cluster import FakeCluster

FIXTURE = json.loads((Path(__file__).parents[1] / "fixtures/state/dynamic-providers.json").read_text())
RECORDED = FIXTURE["providers"]
# The paths today's providers are pickled at; every other recorded path is a stack's older one.
CURRENT = FIXTURE["current"]
# Handlers only the package's provider ever ran: no state holds their pickle.
NEVER_PICKLED = set(FIXTURE["never_pickled"]["paths"])


def defined_providers() -> set[str]:
    found = set()
    for module in pkgutil.walk_packages(components.__path__, "components."):
        for _, cls in inspect.getmembers(importlib.import_module(module.name), inspect.isclass):
            # Base classes (of the proofs, of the destroy-time providers) are never instantiated,
            # so no state holds them.
            if (
                issubclass(cls, ResourceProvider)
                and cls.__module__.startswith("components.")
                and not cls.__subclasses__()
            ):
                found.add(f"{cls.__module__}.{cls.__qualname__}")
    return found


def test_every_dynamic_provider_of_the_program_is_recorded_at_its_path() -> None:
    current = {path for path, entry in RECORDED.items() if entry["recorded_at"] == CURRENT}
    assert not NEVER_PICKLED & set(RECORDED), "a pickled provider is a contract: it cannot be never-pickled too"
    assert defined_providers() == current | NEVER_PICKLED, (
        "a new, moved or renamed provider: record its pickle in tests/fixtures/state/dynamic-providers.json "
        "and keep its old path importable"
    )


def load(path: str) -> Any:
    return dill.loads(base64.b64decode(RECORDED[path]["pickle"]))


@pytest.mark.parametrize("path", sorted(RECORDED))
def test_a_provider_pickled_at_any_recorded_path_loads_and_diffs(path: str) -> None:
    provider = load(path)
    assert isinstance(provider, ResourceProvider)
    assert type(provider).__qualname__ == path.rpartition(".")[2]
    props = {"namespace": "gpu-fractioning", "timeout_seconds": 600, "kubeconfig": None, "context": None}
    assert not provider.diff("id", {**props, "__provider": "old"}, {**props, "__provider": "new"}).changes
    assert provider.diff("id", props, {**props, "timeout_seconds": 900}).changes


@pytest.mark.parametrize("path", sorted(RECORDED))
def test_a_provider_pickled_at_any_recorded_path_deletes(path: str, monkeypatch: pytest.MonkeyPatch) -> None:
    # An empty cluster: no pod to wait for, no kept object to delete.
    monkeypatch.setattr(teardown.KubeClient, "connect", classmethod(lambda cls, *_a, **_k: FakeCluster()))
    props = {
        "namespace": "gpu-fractioning",
        "label_selector": "app.kubernetes.io/component=mpsd",
        "timeout_seconds": 5,
        "fix": "",
        "objects": [{"group": "scheduling.run.ai", "version": "v2", "plural": "queues", "name": "default-queue"}],
        "kubeconfig": None,
        "context": None,
    }
    load(path).delete("id", props)
