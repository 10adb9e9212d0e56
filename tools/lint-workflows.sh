#!/usr/bin/env bash
# Lints .github/workflows/ with actionlint (and shellcheck for `run:` scripts, when it is on PATH).
#
# actionlint is built from the Go module proxy at a pinned version into a version-keyed cache and
# reused from there: ${KGF_CACHE:-~/.cache/kai-gpu-fractions}/tools/actionlint-v<version>/actionlint
#
# Usage: tools/lint-workflows.sh [actionlint arguments...]
set -euo pipefail

ACTIONLINT_VERSION=v1.7.12

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
dir=${KGF_CACHE:-$HOME/.cache/kai-gpu-fractions}/tools/actionlint-$ACTIONLINT_VERSION
bin=$dir/actionlint

if [[ ! -x $bin ]]; then
	go=$(command -v go || echo /usr/local/go/bin/go)
	[[ -x $go ]] || { echo "lint-workflows.sh: Go is needed to build actionlint" >&2; exit 1; }
	echo "lint-workflows.sh: building actionlint $ACTIONLINT_VERSION into $dir" >&2
	mkdir -p "$dir"
	GOBIN=$dir CGO_ENABLED=0 "$go" install "github.com/rhysd/actionlint/cmd/actionlint@$ACTIONLINT_VERSION"
fi

if ! command -v shellcheck >/dev/null; then
	echo "lint-workflows.sh: shellcheck is not on PATH; run: scripts are not checked" >&2
fi
cd "$repo"
exec "$bin" "$@"
