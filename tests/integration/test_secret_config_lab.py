"""The lab stack's config keys stored as secrets in turn, under the real engine (the rounds and the
searches are test_secret_config.py's)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.integration.conftest import leftovers
from tests.integration.stand_ins import StandInQueueAccounting, isolator_webhook
from tests.integration.test_dev_stack import dev_config
from tests.integration.test_secret_config import (
    LAB_KEYS,
    LAB_STACK,
    check_each_key,
    renamed_context_kubeconfig,
    with_keys,
)
from tests.integration.workspace import Workspace

pytestmark = pytest.mark.integration


def test_each_top_level_key_of_the_lab_stack_stored_as_a_secret_stays_secret(tmp_path: Path) -> None:
    workspace = Workspace.create(tmp_path)
    config = dev_config()
    config["cluster"] = {"kubeconfig": str(renamed_context_kubeconfig(tmp_path))}
    config = with_keys(config, LAB_KEYS)
    workspace.new_stack(LAB_STACK, config)
    with isolator_webhook(tmp_path), StandInQueueAccounting("default-queue", gpu_memory_mib=40960):
        try:
            workspace.pulumi("up", "--yes", "--skip-preview", stack=LAB_STACK, timeout=1200)
            check_each_key(workspace, LAB_STACK, config, LAB_KEYS)
        finally:
            workspace.pulumi("destroy", "--yes", "--skip-preview", stack=LAB_STACK, check=False, timeout=900)
    assert leftovers() == {}
