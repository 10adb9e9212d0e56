#!/usr/bin/env bash
# Runs every check and test tier:
#   lint and type checks;
#   unit and policy tests (Pulumi mocks, direct policy calls);
#   the integration tier: the real Pulumi engine and providers against a local control plane.
# Everything it needs is built or installed by the scripts it calls, and cached outside the repo.
# Extra arguments go to pytest, e.g. `scripts/test.sh -k dev_stack`.
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$repo"
state=${KGF_STATE_DIR:-$repo/.state}
mkdir -p "$state"
python=$(command -v python3.11 || command -v python3)

step() { printf '\n== %s\n' "$*" >&2; }

# Creates or refreshes a virtualenv when its requirement files change.
ensure_venv() {
	local venv=$1
	shift
	local stamp
	stamp=$(cat "$@" | sha256sum | cut -c1-16)
	if [[ "$(cat "$venv/.requirements" 2>/dev/null)" != "$stamp" ]]; then
		rm -rf "$venv"
		"$python" -m venv "$venv"
		"$venv/bin/pip" install --quiet --disable-pip-version-check "${@/#/--requirement=}"
		echo "$stamp" >"$venv/.requirements"
	fi
}

step "Python environments"
ensure_venv .venv requirements-dev.txt requirements.txt policy/requirements.txt
# The engine runs the program in a virtualenv without pulumi-command and pulumi-docker: the
# Python host reports every installed Pulumi SDK as a required plugin, and those two providers
# cannot be built from the Go module proxy. The tested stacks use neither (no builds, no kind).
grep -vE '^(pulumi-command|pulumi-docker)==' requirements.txt >"$state/engine-requirements.txt"
ensure_venv "$state/engine-venv" "$state/engine-requirements.txt" policy/requirements.txt
# policy/PulumiPolicy.yaml runs the pack in policy/venv; the engine's virtualenv has its requirements.
ln -sfn "$state/engine-venv" policy/venv

step "Lint and type checks"
.venv/bin/ruff check .
.venv/bin/ruff format --check .
.venv/bin/mypy components tests benchmarks tools __main__.py
(cd policy && ../.venv/bin/mypy gpu_policies __main__.py)
# actionlint checks workflow `run:` scripts with shellcheck when it is on PATH.
if ! command -v shellcheck >/dev/null && command -v apt-get >/dev/null && [[ $(id -u) == 0 ]]; then
	(apt-get update -qq && apt-get install -y -qq shellcheck) >/dev/null
fi
tools/lint-workflows.sh

step "Pulumi toolchain"
scripts/toolchain.sh >&2
eval "$(scripts/toolchain.sh env)"

step "Local control plane"
scripts/control-plane.sh build >&2
trap 'scripts/control-plane.sh down >&2' EXIT
scripts/control-plane.sh up >&2
eval "$(scripts/control-plane.sh env)"

step "Tests: unit, policy and integration"
export KGF_ENGINE_VENV=$state/engine-venv
.venv/bin/python -m pytest -m "integration or not integration" "$@"
