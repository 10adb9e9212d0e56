#!/usr/bin/env bash
# Lints .github/workflows/ with actionlint (and shellcheck for `run:` scripts, when it is on PATH).
#
# actionlint is built from the Go module proxy at a pinned version into a version-keyed cache and
# reused from there: ${KGF_CACHE:-~/.cache/kai-gpu-fractions}/tools/actionlint-v<version>/actionlint
#
# Usage: tools/lint-workflows.sh [actionlint arguments...]
set -euo pipefail

ACTIONLINT_VERSION=v1.7.12

# shellcheck source=scripts/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/../scripts/lib.sh"
dir=$KGF_CACHE/tools/actionlint-$ACTIONLINT_VERSION
bin=$dir/actionlint

if [[ ! -x $bin ]]; then
	command -v go >/dev/null || { say "Go is needed to build actionlint"; exit 1; }
	mkdir -p "$dir"
	GOBIN=$dir CGO_ENABLED=0 phase "" "actionlint $ACTIONLINT_VERSION" "1 min" "$KGF_CACHE/logs/tools.log" \
		go install "github.com/rhysd/actionlint/cmd/actionlint@$ACTIONLINT_VERSION"
fi

command -v shellcheck >/dev/null || say "shellcheck is not on PATH; run: scripts are not checked"
cd "$KGF_REPO"
exec "$bin" "$@"
