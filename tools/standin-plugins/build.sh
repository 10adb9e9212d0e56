#!/usr/bin/env bash
# Builds the STAND-IN provider plugins pulumi-resource-command 1.2.1 and pulumi-resource-docker
# 5.2.0 (see README.md) from this module and installs them into the Pulumi toolchain's PULUMI_HOME.
# scripts/toolchain.sh runs it; run that, not this.
#
# Usage (with the toolchain's pulumi on PATH and PULUMI_HOME set: eval "$(scripts/toolchain.sh env)"):
#   tools/standin-plugins/build.sh          build and install unless current
#   tools/standin-plugins/build.sh check    exit 0 when the installed plugins are current
#
# The build is keyed by a hash of this module's sources, this script and the Go version, kept
# beside each installed plugin, so any change rebuilds. The plugins are installed into PULUMI_HOME
# rather than put on PATH: the engine warns about every plugin it takes from PATH.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
: "${PULUMI_HOME:?eval \"\$(scripts/toolchain.sh env)\" first}"
# The versions the Python SDKs in requirements.txt ask for; the plugins report the same.
PLUGINS=(command:1.2.1 docker:5.2.0)

key() {
	{
		go env GOVERSION
		(cd "$here" && find . -path ./testdata -prune -o -type f \
			\( -name '*.go' -o -name '*.json' -o -name 'go.*' -o -name build.sh \) ! -name '*_test.go' -print |
			LC_ALL=C sort | xargs sha256sum)
	} | sha256sum | cut -c1-16
}

installed() { echo "$PULUMI_HOME/plugins/resource-${1%%:*}-v${1#*:}"; }

current() {
	local plugin want
	want=$(key)
	for plugin in "${PLUGINS[@]}"; do
		[[ $(cat "$(installed "$plugin")/.stand-in-key" 2>/dev/null) == "$want" ]] || return 1
	done
}

build() {
	local plugin name version out
	out=$(mktemp -d)
	trap 'rm -rf "$out"' RETURN
	(cd "$here" && CGO_ENABLED=0 go build -trimpath -o "$out/" ./pulumi-resource-command ./pulumi-resource-docker)
	for plugin in "${PLUGINS[@]}"; do
		name=${plugin%%:*} version=${plugin#*:}
		pulumi plugin install resource "$name" "$version" --reinstall --file "$out/pulumi-resource-$name"
		key >"$(installed "$plugin")/.stand-in-key"
	done
}

case ${1:-} in
"") current || build ;;
check) current ;;
*)
	echo "usage: $0 [check]" >&2
	exit 2
	;;
esac
