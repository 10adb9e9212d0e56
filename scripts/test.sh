#!/usr/bin/env bash
# Runs every check and test tier:
#   lint and type checks (Python, shell, workflows, the stand-in plugins' Go);
#   unit and policy tests (Pulumi mocks, direct policy calls);
#   the integration tier: the real Pulumi engine and providers against a local control plane.
# Everything it needs is built or installed by the scripts it calls, and cached outside the repo.
# The tests run on four pytest workers (KGF_TEST_WORKERS), each with a control plane of its own
# (instances test, test2, test3, test4), made fresh for each run and removed afterwards: a deployment
# made with scripts/deploy-local.sh is never touched. It prints the ten slowest tests.
# Four: on two cores the run is CPU-bound, but each worker also waits on its cluster (namespace
# deletion alone is 5 s each). Measured on fresh clones at db866e5, warm cache: three workers 8 min
# 56 s (pytest 517 s), four 8 min 9 s (pytest 467 s, the test.sh tree 10.3 CPU-min). The control
# planes start while the lint and type checks run.
# Extra arguments go to pytest, e.g. `scripts/test.sh -k dev_stack`.
set -euo pipefail

# shellcheck source=scripts/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
KGF_SCRIPT="test"
cd "$KGF_REPO"
# A few hundred processes (programs, provider plugins, pytest workers) import the same modules of
# this checkout: with bytecode caching off, as some machines set it, each compiles them again (a
# worker's collection alone takes 3.5 CPU-s instead of 1.4). __pycache__ is ignored by git.
unset PYTHONDONTWRITEBYTECODE
workers=${KGF_TEST_WORKERS:-4}
[[ $workers =~ ^[1-4]$ ]] || { say "KGF_TEST_WORKERS must be 1 to 4 (pytest workers, a control plane each), not '$workers'"; exit 2; }

say "Python environments"
ensure_venv "$KGF_REPO/.venv" requirements-dev.txt requirements.txt policy/requirements.txt
ensure_engine_venv

say "The tests' own control planes: starting"
# One control plane per pytest worker (instances test, test2, ...): each test module runs whole on
# one worker (--dist loadfile), against its worker's cluster, so modules never see each other's
# objects. KGF_TEST_WORKERS=1 runs everything on instance `test` alone. They start side by side,
# each waiting mostly on its own API server, while the checks below run.
instances=(test test2 test3 test4)
instances=("${instances[@]:0:workers}")
down_all() {
	for instance in "${instances[@]}"; do scripts/control-plane.sh --instance "$instance" down --purge & done
	wait
}
down_all # whatever an interrupted run left behind
starting=()
for instance in "${instances[@]}"; do
	scripts/control-plane.sh --instance "$instance" up &
	starting+=($!)
done
# Every start finishes before anything stops them: down_all must not race a start still going.
trap 'wait; down_all' EXIT

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
started=true
for pid in "${starting[@]}"; do wait "$pid" || started=false; done
$started || { say "a control plane did not start: see its log above"; exit 1; }
env_files=()
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
