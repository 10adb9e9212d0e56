#!/usr/bin/env bash
# Builds the real Pulumi CLI, its Python, Node.js and YAML language hosts and the kubernetes provider plugin from the
# Go module proxy (GitHub and get.pulumi.com are unreachable here) and caches them outside the
# repo, so the integration tests can run the Pulumi engine offline. The command and docker
# provider plugins are not on the proxy: STAND-INS for them (tools/standin-plugins) are built and
# installed instead, for the engine to run what uses pulumi-command and pulumi-docker.
#
# Usage:
#   scripts/toolchain.sh        build whatever is missing or stale, then print a summary
#   scripts/toolchain.sh env    the same, then print only the exports: eval "$(scripts/toolchain.sh env)"
#
# A cold build prints one line per step (and one a minute while a step runs); the go output goes to
# ${KGF_CACHE:-~/.cache/kai-gpu-fractions}/logs/toolchain.log. A warm run prints nothing.
#
# Cache: ${KGF_CACHE:-~/.cache/kai-gpu-fractions}/toolchain/pulumi-v<pulumi>-k8s-<kubernetes>/
#   bin/    pulumi, pulumi-language-python, pulumi-language-python-exec,
#           pulumi-resource-pulumi-python, pulumi-language-nodejs and pulumi-language-yaml (this
#           directory goes on PATH)
#   home/   PULUMI_HOME; the kubernetes provider and the stand-in plugins are installed into home/plugins/
#   build/  generated Go wrapper modules (rebuilt from scratch on every build)
set -euo pipefail

# shellcheck source=scripts/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
KGF_SCRIPT=toolchain
die() { say "error: $*"; exit 1; }

repo=$KGF_REPO

pin() {
	sed -n "s/^$1==\([0-9][0-9.]*\).*/\1/p" "$repo/requirements.txt"
}
PULUMI_VERSION=$(pin pulumi)
K8S_VERSION=$(pin pulumi-kubernetes)
[[ -n $PULUMI_VERSION && -n $K8S_VERSION ]] ||
	die "pulumi and pulumi-kubernetes must be pinned with == in $repo/requirements.txt"

# The language host module has no tags and the proxy serves only this commit (2025-08-06,
# between pulumi 3.187 and 3.188), not one from the 3.260 line.
LANGUAGE_HOST_VERSION=v3.0.0-20250806165243-bee5e4fa4815
# The language host does not compile against pkg/sdk 3.260, so it is built in its own module
# against the first release after its commit.
LANGUAGE_HOST_PULUMI_VERSION=3.188.0
# pulumi-kubernetes has no provider/ tags. This commit (2026-01-15, the day before the v4.25.0
# release) is the newest in the 4.25 line that the proxy serves; the binary is stamped 4.25.0.
K8S_PROVIDER_VERSION=v4.0.0-20260115033456-f47bc2d6f199

# The Node.js language host, for TypeScript programs that use the component package
# (examples/typescript): the same commit and pulumi as the Python host. Built with Go 1.25, which
# the proxy serves as a toolchain module: its SDK generator (pkg 3.188 codegen/nodejs) takes a
# module's path to the root with path.Dir(filepath.Rel(...)), and Go 1.26's filepath.Rel cleans its
# result, so built with Go 1.26 the generated types/input.ts imports ./types/input and fails tsc
# (pkg 3.260 codegen/nodejs/gen.go:1837 drops the path.Dir).
NODEJS_HOST=github.com/pulumi/pulumi/sdk/nodejs/cmd/pulumi-language-nodejs/v3
NODEJS_HOST_GO=go1.25.5

# The YAML language host, for YAML programs that use the component package (examples/yaml): its
# newest release on the proxy, built against the pulumi it pins (3.206); the plugin protocol is stable.
YAML_HOST=github.com/pulumi/pulumi-yaml
YAML_HOST_VERSION=v1.25.0

PKG=github.com/pulumi/pulumi/pkg/v3
SDK=github.com/pulumi/pulumi/sdk/v3
LANGUAGE_HOST=github.com/pulumi/pulumi/sdk/python/cmd/pulumi-language-python/v3
K8S_PROVIDER=github.com/pulumi/pulumi-kubernetes/provider/v4
K8S_SDK=github.com/pulumi/pulumi-kubernetes/sdk/v4
PULUMI_VERSION_VAR=$SDK/go/common/version.Version
K8S_VERSION_VAR=$K8S_PROVIDER/pkg/version.Version
# pkg/v3 and sdk/v3 replace this module in their go.mod; Go ignores replaces of dependencies.
CLIPBOARD_REPLACE=github.com/atotto/clipboard=github.com/tgummerer/clipboard@v0.0.0-20241001131231-d02d263e614e

cache=$KGF_CACHE/toolchain/pulumi-v$PULUMI_VERSION-k8s-$K8S_VERSION
bin=$cache/bin
build=$cache/build
export PULUMI_HOME=$cache/home
export PULUMI_SKIP_UPDATE_CHECK=true
export PULUMI_DISABLE_AUTOMATIC_PLUGIN_ACQUISITION=true
export CGO_ENABLED=0
# The language host's checksum is not in sum.golang.org.
export GONOSUMDB=${GONOSUMDB:+$GONOSUMDB,}github.com/pulumi/pulumi/sdk/python/cmd/pulumi-language-python,github.com/pulumi/pulumi/sdk/nodejs/cmd/pulumi-language-nodejs
GO=$(command -v go || echo /usr/local/go/bin/go)

go() {
	[[ -x $GO ]] || die "Go not found (looked on PATH and at $GO)"
	"$GO" "$@"
}

# Succeeds when the Go binary $1 was built from every given module@version. -trimpath keeps
# -ldflags out of the build info, so the version stamps are checked through these module versions,
# which are derived from the same pins.
go_built_from() {
	local binary=$1 info dep
	shift
	[[ -x $binary ]] || return 1
	info=$(go version -m "$binary" 2>/dev/null) || return 1
	for dep; do
		awk -v m="${dep%@*}" -v v="${dep##*@}" '($1 == "mod" || $1 == "dep") && $2 == m && $3 == v { found = 1 }
			END { exit !found }' <<<"$info" || return 1
	done
}

# Creates a fresh wrapper module in $1 that requires the given module@version arguments.
new_module() {
	local dir=$1
	shift
	rm -rf "$dir"
	mkdir -p "$dir"
	(cd "$dir" && go mod init "kai-gpu-fractions/toolchain/${dir##*/}" &&
		go mod edit -replace="$CLIPBOARD_REPLACE" "${@/#/-require=}")
}

pulumi_dir=$bin
pulumi_source=built

# A pulumi of exactly the pinned version already on PATH, with a Python host beside it, wins.
use_pulumi_on_path() {
	local found dir
	found=$(command -v pulumi) || return 1
	dir=$(dirname "$(readlink -f "$found")")
	[[ $dir != "$bin" ]] || return 1
	[[ -x $dir/pulumi-language-python && -x $dir/pulumi-language-python-exec ]] || return 1
	[[ $("$found" version 2>/dev/null) == "v$PULUMI_VERSION" ]] || return 1
	pulumi_dir=$dir
	pulumi_source="from PATH"
}

build_cli() (
	new_module "$build/pulumi" "$PKG@v$PULUMI_VERSION" "$SDK@v$PULUMI_VERSION"
	cd "$build/pulumi"
	go mod edit -tool="$PKG/cmd/pulumi"
	go mod tidy
	mkdir -p "$bin"
	go build -trimpath -ldflags "-X $PULUMI_VERSION_VAR=v$PULUMI_VERSION" -o "$bin/" "$PKG/cmd/pulumi"
	local sdk
	sdk=$(go list -m -f '{{.Dir}}' "$SDK")
	# The language host runs programs through the -exec shim next to it; these two are not Go.
	install -m 0755 "$sdk/python/cmd/pulumi-language-python-exec" \
		"$sdk/python/dist/pulumi-resource-pulumi-python" "$bin/"
)

build_language_host() (
	new_module "$build/language-python" "$LANGUAGE_HOST@$LANGUAGE_HOST_VERSION" \
		"$PKG@v$LANGUAGE_HOST_PULUMI_VERSION" "$SDK@v$LANGUAGE_HOST_PULUMI_VERSION"
	cd "$build/language-python"
	go mod edit -tool="$LANGUAGE_HOST"
	go mod tidy
	mkdir -p "$bin"
	go build -trimpath -ldflags "-X $PULUMI_VERSION_VAR=v$LANGUAGE_HOST_PULUMI_VERSION" -o "$bin/" \
		"$LANGUAGE_HOST"
)

build_nodejs_host() (
	new_module "$build/language-nodejs" "$NODEJS_HOST@$LANGUAGE_HOST_VERSION" \
		"$PKG@v$LANGUAGE_HOST_PULUMI_VERSION" "$SDK@v$LANGUAGE_HOST_PULUMI_VERSION"
	cd "$build/language-nodejs"
	go mod edit -go=1.24.7 -tool="$NODEJS_HOST"
	export GOTOOLCHAIN=$NODEJS_HOST_GO
	go mod tidy
	mkdir -p "$bin"
	go build -trimpath -ldflags "-X $PULUMI_VERSION_VAR=v$LANGUAGE_HOST_PULUMI_VERSION" -o "$bin/" "$NODEJS_HOST"
)

nodejs_host_is_current() {
	go_built_from "$bin/pulumi-language-nodejs" "$NODEJS_HOST@$LANGUAGE_HOST_VERSION" "$SDK@v$LANGUAGE_HOST_PULUMI_VERSION" &&
		[[ $(go version "$bin/pulumi-language-nodejs" 2>/dev/null) == *" $NODEJS_HOST_GO" ]]
}

build_yaml_host() {
	mkdir -p "$bin"
	GOBIN=$bin go install -trimpath "$YAML_HOST/cmd/pulumi-language-yaml@$YAML_HOST_VERSION"
}

# The provider's own main embeds files that `go generate` writes and the module zip lacks, so a
# project-owned main (scripts/toolchain/kubernetes) embeds copies of their committed inputs.
build_kubernetes() (
	# The provider's go.mod replaces sdk/v4 with ../sdk (ignored here); pin the matching release.
	new_module "$build/kubernetes" "$K8S_PROVIDER@$K8S_PROVIDER_VERSION" "$K8S_SDK@v$K8S_VERSION"
	cd "$build/kubernetes"
	cp "$repo/scripts/toolchain/kubernetes/main.go" .
	go mod tidy
	local src
	src=$(go list -m -f '{{.Dir}}' "$K8S_PROVIDER")/cmd/pulumi-resource-kubernetes
	# Upstream's generate.go stamps the release version into the embedded schema.
	python3 -c 'import json, sys
schema = json.load(open(sys.argv[1]))
schema["version"] = sys.argv[2]
json.dump(schema, sys.stdout, separators=(",", ":"))' "$src/schema.json" "$K8S_VERSION" >schema.json
	install -m 0644 "$src/terraform-mapping.json" .
	go build -trimpath -ldflags "-X $K8S_VERSION_VAR=$K8S_VERSION" -o pulumi-resource-kubernetes .
)

# Installed into PULUMI_HOME rather than put on PATH: the engine warns about every non-bundled
# plugin it takes from PATH.
install_kubernetes() {
	"$pulumi_dir/pulumi" plugin install resource kubernetes "$K8S_VERSION" --reinstall \
		--file "$build/kubernetes/pulumi-resource-kubernetes"
}

cli_is_current() {
	[[ $("$bin/pulumi" version 2>/dev/null) == "v$PULUMI_VERSION" &&
		-x $bin/pulumi-language-python-exec && -x $bin/pulumi-resource-pulumi-python ]]
}

language_host_is_current() {
	go_built_from "$bin/pulumi-language-python" "$LANGUAGE_HOST@$LANGUAGE_HOST_VERSION" \
		"$SDK@v$LANGUAGE_HOST_PULUMI_VERSION"
}

K8S_MODULES=("$K8S_PROVIDER@$K8S_PROVIDER_VERSION" "$K8S_SDK@v$K8S_VERSION")

kubernetes_is_installed() {
	go_built_from "$PULUMI_HOME/plugins/resource-kubernetes-v$K8S_VERSION/pulumi-resource-kubernetes" "${K8S_MODULES[@]}"
}

standin_plugins() { PATH=$pulumi_dir:$PATH "$repo/tools/standin-plugins/build.sh" "$@"; }

build_and_install_kubernetes() {
	go_built_from "$build/kubernetes/pulumi-resource-kubernetes" "${K8S_MODULES[@]}" || build_kubernetes
	install_kubernetes
}

# Builds what is missing or stale, one progress line per build; a warm run prints nothing.
ensure() {
	# Concurrent callers (e.g. the two top-level scripts) must not build into the same directories.
	mkdir -p "$cache"
	exec 9>"$cache/.lock"
	flock 9

	local todo=() i=0 item log=$KGF_CACHE/logs/toolchain.log
	if ! use_pulumi_on_path; then
		cli_is_current && pulumi_source=cached || todo+=(cli)
		language_host_is_current || todo+=(language-host)
	fi
	nodejs_host_is_current || todo+=(nodejs-host)
	go_built_from "$bin/pulumi-language-yaml" "$YAML_HOST@$YAML_HOST_VERSION" || todo+=(yaml-host)
	kubernetes_is_installed || todo+=(kubernetes)
	standin_plugins check || todo+=(stand-ins)
	for item in "${todo[@]}"; do
		i=$((i + 1))
		case $item in
		cli) phase "$i/${#todo[@]}" "Pulumi CLI v$PULUMI_VERSION" "5-6 min" "$log" build_cli ;;
		language-host) phase "$i/${#todo[@]}" "Pulumi Python language host" "1 min" "$log" build_language_host ;;
		nodejs-host) phase "$i/${#todo[@]}" "Pulumi Node.js language host (Go $NODEJS_HOST_GO)" "2 min" "$log" build_nodejs_host ;;
		yaml-host) phase "$i/${#todo[@]}" "Pulumi YAML language host $YAML_HOST_VERSION" "4 min" "$log" build_yaml_host ;;
		kubernetes) phase "$i/${#todo[@]}" "pulumi-resource-kubernetes $K8S_VERSION" "11 min" "$log" build_and_install_kubernetes ;;
		stand-ins) phase "$i/${#todo[@]}" "STAND-IN command and docker plugins" "1 min" "$log" standin_plugins ;;
		esac
	done
}

summary() {
	local host="$LANGUAGE_HOST_VERSION (built against pulumi $LANGUAGE_HOST_PULUMI_VERSION)"
	[[ $pulumi_source == built || $pulumi_source == cached ]] || host="beside pulumi in $pulumi_dir"
	cat <<EOF
Pulumi toolchain in $cache
  pulumi                      $("$pulumi_dir/pulumi" version) ($pulumi_source, $pulumi_dir)
  pulumi-language-python      $host
  pulumi-language-nodejs      $LANGUAGE_HOST_VERSION (built against pulumi $LANGUAGE_HOST_PULUMI_VERSION with $NODEJS_HOST_GO)
  pulumi-language-yaml        $YAML_HOST_VERSION ($bin)
  pulumi-resource-kubernetes  $K8S_VERSION ($K8S_PROVIDER_VERSION, installed in PULUMI_HOME=$PULUMI_HOME)
  pulumi-resource-command 1.2.1 and pulumi-resource-docker 5.2.0: STAND-INS (tools/standin-plugins); the Go module proxy serves neither real provider
Use it with: eval "\$(scripts/toolchain.sh env)"
EOF
}

print_env() {
	# shellcheck disable=SC2016 # $PATH is expanded by the caller's shell.
	printf 'export PATH=%q:"$PATH"\n' "$pulumi_dir"
	printf 'export PULUMI_HOME=%q\n' "$PULUMI_HOME"
	printf 'export PULUMI_SKIP_UPDATE_CHECK=true\n'
	printf 'export PULUMI_DISABLE_AUTOMATIC_PLUGIN_ACQUISITION=true\n'
}

case ${1:-} in
"")
	ensure
	summary
	;;
env)
	ensure
	print_env
	;;
*) die "usage: $0 [env]" ;;
esac
