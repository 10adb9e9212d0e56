#!/usr/bin/env bash
# Runs every check and test tier:
#   lint and type checks (Python, shell, workflows, the stand-in plugins' Go);
#   unit and policy tests (Pulumi mocks, direct policy calls);
#   the integration tier: the real Pulumi engine and providers against a local control plane.
# Everything it needs is built or installed by the scripts it calls, and cached outside the repo.
# The tests run on three pytest workers (KGF_TEST_WORKERS), each with a control plane of its own
# (instances test, test2, test3), made fresh for each run and removed afterwards: a deployment made
# with scripts/deploy-local.sh is never touched. It prints the ten slowest tests.
# Three, not more: on two cores the run is CPU-bound. Measured on fresh clones with the controller
# list of scripts/control-plane/components.sh and test_interrupted_up.py a module of its own: three
# workers 9 min 26 s of pytest (the whole run 15.0 CPU-min), four workers, each with its control
# plane, 9 min 36 s (18.4 CPU-min, the CPUs 90 % busy).
# Extra arguments go to pytest, e.g. `scripts/test.sh -k dev_stack`.
set -euo pipefail

# shellcheck source=scripts/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
KGF_SCRIPT="test"
cd "$KGF_REPO"
workers=${KGF_TEST_WORKERS:-3}
[[ $workers =~ ^[1-3]$ ]] || { say "KGF_TEST_WORKERS must be 1, 2 or 3 (pytest workers, a control plane each), not '$workers'"; exit 2; }

say "Python environments"
ensure_venv "$KGF_REPO/.venv" requirements-dev.txt requirements.txt policy/requirements.txt
ensure_engine_venv

say "Lint and type checks"
# mypy's cache checks each file's hash, so one cache serves every checkout.
export MYPY_CACHE_DIR=$KGF_CACHE/mypy
.venv/bin/ruff check --quiet .
.venv/bin/ruff format --quiet --check .
.venv/bin/mypy components tests benchmarks tools standins __main__.py
(cd policy && ../.venv/bin/mypy gpu_policies __main__.py)
# actionlint checks workflow `run:` scripts with shellcheck when it is on PATH.
if ! command -v shellcheck >/dev/null && command -v apt-get >/dev/null && [[ $(id -u) == 0 ]]; then
	phase "" "shellcheck from Debian's packages" "1 min" "$KGF_CACHE/logs/apt.log" \
		sh -c 'apt-get update -qq && apt-get install -y -qq shellcheck'
fi
tools/lint-workflows.sh
if command -v shellcheck >/dev/null; then
	shellcheck -x scripts/*.sh scripts/control-plane/*.sh .ci/run tools/*.sh
else
	say "shellcheck is not installed: the shell scripts are not linted"
fi

say "Pulumi toolchain"
eval "$(scripts/toolchain.sh env)"

say "Stand-in provider plugins: gofmt, go vet, go test"
(
	cd tools/standin-plugins
	unformatted=$(gofmt -l .)
	[[ -z $unformatted ]] || { say "gofmt would change: $unformatted"; exit 1; }
	go vet ./...
	go test ./...
)

say "The tests' own control planes"
# One control plane per pytest worker (instances test, test2, ...): each test module runs whole on
# one worker (--dist loadfile), against its worker's cluster, so modules never see each other's
# objects. KGF_TEST_WORKERS=1 runs everything on instance `test` alone.
instances=(test test2 test3)
instances=("${instances[@]:0:workers}")
env_files=()
# The instances start and stop side by side: each waits mostly on its own API server.
down_all() {
	for instance in "${instances[@]}"; do scripts/control-plane.sh --instance "$instance" down --purge & done
	wait
}
down_all # whatever an interrupted run left behind
trap down_all EXIT
starting=()
for instance in "${instances[@]}"; do
	scripts/control-plane.sh --instance "$instance" up &
	starting+=($!)
done
# Every start finished before a failed one stops the run: down_all must not race a start still going.
started=true
for pid in "${starting[@]}"; do wait "$pid" || started=false; done
$started || { say "a control plane did not start: see its log above"; exit 1; }
for instance in "${instances[@]}"; do
	scripts/control-plane.sh --instance "$instance" env >"$KGF_STATE_DIR/control-plane/$instance/env.sh"
	env_files+=("$KGF_STATE_DIR/control-plane/$instance/env.sh")
done
# The first worker's environment is also this shell's; each worker applies its own (tests/conftest.py).
# shellcheck source=/dev/null
source "${env_files[0]}"
export KGF_TEST_ENV_FILES="${env_files[*]}"

say "Tests: unit, policy and integration"
export KGF_ENGINE_VENV=$KGF_STATE_DIR/engine-venv
# Modules go longest first by the last run's times, kept in the cache (tests/module_order.py).
parallel=()
((workers == 1)) || parallel=(-n "$workers" --dist loadfile --no-loadscope-reorder)
.venv/bin/python -m pytest -m "integration or not integration" "${parallel[@]}" \
	--module-times="$KGF_CACHE/test-module-times.json" --durations=10 "$@"
