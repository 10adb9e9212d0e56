"""Records real previews of this project's stacks on the local control plane, as CI writes them
(engine event logs), for tools.preview_summary's tests.

Run under scripts/test.sh's environment: `python -m tests.integration.record_previews`.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import yaml

from tests.integration.test_fork_stack import PASSWORD, a100_config
from tests.integration.workspace import REPO, Workspace

PREVIEWS = REPO / "tests" / "fixtures" / "previews"
BUMPED_KAI_COMMIT = "0123456789abcdef0123456789abcdef01234567"


def record(workspace: Workspace, stack: str, target: str) -> None:
    os.environ["PULUMI_DEBUG_COMMANDS"] = "true"
    log = PREVIEWS / target
    log.unlink(missing_ok=True)
    policy = str(REPO / "policy")
    workspace.pulumi("preview", "--policy-pack", policy, "--event-log", str(log), stack=stack, check=False)
    print(f"recorded {log.relative_to(REPO)}")


def main() -> None:
    with tempfile.TemporaryDirectory() as base:
        a100 = Workspace.create(Path(base) / "a100")
        config = a100_config()
        # As an air-gapped site would configure it: the forks from a local git mirror.
        for fork, mirror in (("kaiScheduler", "KAI-Scheduler"), ("gpuFractioning", "gpu-fractioning")):
            config["forks"][fork] = {**config["forks"][fork], "repository": f"/srv/git/{mirror}.git"}
        a100.new_stack("a100", config, secrets={"registryPassword": PASSWORD})
        a100.pulumi("up", "--yes", "--skip-preview", stack="a100", timeout=1200)
        try:
            stack_file = a100.root / "Pulumi.a100.yaml"
            stack = yaml.safe_load(stack_file.read_text())
            stack["config"]["kai-gpu-fractions:forks"]["kaiScheduler"]["commit"] = BUMPED_KAI_COMMIT
            stack_file.write_text(yaml.safe_dump(stack))
            record(a100, "a100", "pin-bump.json")
        finally:
            a100.pulumi("destroy", "--yes", "--skip-preview", stack="a100", check=False, timeout=900)
        violating = Workspace.create(
            Path(base) / "violating", program=REPO / "tests" / "integration" / "violating" / "mismatched_fork_tags.py"
        )
        violating.pulumi("stack", "init", "violating")
        record(violating, "violating", "tag-mismatch.json")


if __name__ == "__main__":
    main()
