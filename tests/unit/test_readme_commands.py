"""CI runs the README's commands as a newcomer meets them: the same commands, in the same order."""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
# The sections a newcomer follows from the top: the two commands, then what to do with the deployment.
SECTIONS = ("## Start here: two commands", "### The local deployment")


def readme_commands() -> list[str]:
    readme = (REPO / "README.md").read_text()
    commands = []
    for heading in SECTIONS:
        section = readme.split(heading, 1)[1].split("\n#", 1)[0]
        for block in re.findall(r"```bash\n(.*?)```", section, re.S):
            commands += [line.split("#", 1)[0].strip() for line in block.splitlines() if line.strip()]
    return commands


def ci_commands() -> list[str]:
    lines = (REPO / ".ci" / "run").read_text().splitlines()
    return [line.strip() for line in lines if line.startswith("scripts/")]


def test_ci_runs_the_readmes_commands_in_the_readmes_order() -> None:
    assert readme_commands()[:2] == ["scripts/deploy-local.sh", "scripts/test.sh"], "the two set-up commands"
    assert ci_commands() == readme_commands()
