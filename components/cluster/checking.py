"""The handler every check resource runs with (components/cluster/engine.py CheckResource): it reads
the cluster, runs the check on create and whenever the inputs ask for something new, and fails the
update naming each check that does not hold."""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from typing import Any, ClassVar

from pulumi.dynamic import CreateResult, DiffResult, ResourceProvider, UpdateResult
from pydantic import ValidationError

from components.cluster.client import KubeClient
from components.cluster.engine import ACCESS_KEYS, spec_from_props, spec_props
from components.cluster.results import CheckResult, format_results, raise_on_failure

# Inputs that do not change what is checked; everything else runs the check again when it changes.
_UNCHECKED_KEYS = ACCESS_KEYS | {"results", "report"}


class CheckProvider(ResourceProvider):
    """Runs a check on create and on every update whose inputs ask for something new; fails the
    update naming each check that does not hold. Subclasses name their spec type and `check`."""

    kind: ClassVar[str] = "proof"
    report_title: ClassVar[str] = "Proof"
    spec_type: ClassVar[type[Any]]

    def verify(self, cluster: KubeClient, spec: Any) -> list[CheckResult]:
        raise NotImplementedError

    def _run(self, props: dict[str, Any]) -> dict[str, Any]:
        cluster = KubeClient.connect(props.get("kubeconfig"), props.get("context"))
        results = self.verify(cluster, spec_from_props(self.spec_type, props))
        raise_on_failure(self.kind, results)
        return {
            **props,
            "results": [r.to_dict() for r in results],
            "report": format_results(results, self.report_title),
        }

    def create(self, props: dict[str, Any]) -> CreateResult:
        return CreateResult(id_=uuid.uuid4().hex, outs=self._run(props))

    def update(self, _id: str, _olds: dict[str, Any], news: dict[str, Any]) -> UpdateResult:
        return UpdateResult(outs=self._run(news))

    def diff(self, _id: str, olds: dict[str, Any], news: dict[str, Any]) -> DiffResult:
        old, new = self._asked(olds), self._asked(news)
        changed = sorted(k for k in set(old) | set(new) if old.get(k) != new.get(k))
        return DiffResult(changes=bool(changed), replaces=[], delete_before_replace=False)

    def _asked(self, props: Mapping[str, Any]) -> dict[str, Any]:
        """What the inputs ask to check: a spec field added since the last update reads as its
        default, so it runs the check again only when it asks for something else."""
        asked = {k: v for k, v in props.items() if k not in _UNCHECKED_KEYS}
        try:
            spec = spec_from_props(self.spec_type, props)
        except ValidationError:  # an input still unknown in a preview: compared as it is
            return asked
        return {**asked, **spec_props(spec)}
