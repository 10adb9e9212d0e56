"""ForkCheckout: a clean working tree of a fork at its pinned commit, and the path of its chart."""

from __future__ import annotations

import os

import pulumi
from pulumi_command import local

from components.config import ForkPin
from components.forks import ForkRecipe

# Fetches the pull-request ref (the pinned commit may not be on any branch) and checks out the
# SHA detached. A tree with local edits is refused before and after: they would be baked into
# images or charts that claim to be the pinned commit.
CHECKOUT_SCRIPT = """set -eu
mkdir -p "$FORK_DIR" && cd "$FORK_DIR"
git rev-parse --git-dir >/dev/null 2>&1 || git init -q .
if [ -n "$(git status --porcelain)" ]; then
  echo "refusing to build: $PWD has local changes (git status --porcelain is not empty)" >&2; exit 1
fi
git fetch -q "$FORK_REPOSITORY" "pull/$FORK_PULL_REQUEST/head"
git checkout -q --detach "$FORK_COMMIT"
test "$(git rev-parse HEAD)" = "$FORK_COMMIT"
test -z "$(git status --porcelain)"
printf '%s' "$PWD"
"""

# Helm refuses to install a chart whose declared dependencies are missing from charts/, even
# when their condition is false.
DEPENDENCY_SCRIPT = 'set -eu\nhelm dependency build "$CHART_PATH" >&2\nprintf "%s" "$CHART_PATH"\n'


class ForkCheckout(pulumi.ComponentResource):
    """Checks out one fork at its pinned commit under `workdir` and exposes its chart directory.

    Creates local commands only; building images is ForkImages' job.
    """

    path: pulumi.Output[str]
    chart_path: pulumi.Output[str]

    def __init__(
        self,
        name: str,
        recipe: ForkRecipe,
        pin: ForkPin,
        workdir: str,
        opts: pulumi.ResourceOptions | None = None,
    ) -> None:
        super().__init__("kai-gpu-fractions:forks:ForkCheckout", name, None, opts)
        checkout = local.Command(
            f"{name}-git",
            create=CHECKOUT_SCRIPT,
            environment={
                "FORK_DIR": os.path.join(workdir, recipe.checkout_dir),
                "FORK_REPOSITORY": pin.repository,
                "FORK_PULL_REQUEST": str(pin.pull_request),
                "FORK_COMMIT": pin.commit,
            },
            triggers=[pin.repository, pin.pull_request, pin.commit],
            opts=pulumi.ResourceOptions(parent=self),
        )
        self.path = checkout.stdout
        chart = checkout.stdout.apply(lambda root: os.path.join(root, recipe.chart_path))
        if recipe.chart_needs_dependencies:
            dependencies = local.Command(
                f"{name}-chart-dependencies",
                create=DEPENDENCY_SCRIPT,
                environment={"CHART_PATH": chart},
                triggers=[pin.commit],
                opts=pulumi.ResourceOptions(parent=self),
            )
            chart = dependencies.stdout
        self.chart_path = chart
        self.register_outputs({"path": self.path, "chart_path": self.chart_path})
