#!/usr/bin/env bash
# Deploys the default stack (`dev`, the lab profile) on the local control plane, offline: builds
# the toolchain and control plane if needed, starts the control plane (instance `local`), and runs
# Pulumi with the lab pointed at the local API server and the stand-in charts (upstream charts and
# images cannot be fetched offline). State lives in .state/local (file backend).
#
# Usage: scripts/deploy-local.sh [up | preview | destroy | outputs] [pulumi arguments...]
#   up       (default) `pulumi up --refresh`: reads the cluster first, so whatever was changed or
#            removed there by hand (a Helm release, an object) is put back
#   preview  `pulumi preview --refresh`, e.g. with --expect-no-changes or --diff
#   destroy  `pulumi destroy --refresh`, then checks that no object of the stack is left in the cluster
#   outputs  `pulumi stack output`
# `scripts/control-plane.sh down` stops the local control plane.
set -euo pipefail

# shellcheck source=scripts/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
KGF_SCRIPT=deploy-local
action=${1:-up}
shift || true
case $action in
up | preview | destroy | outputs) ;;
*)
	sed -n 's/^# \{0,1\}//; 7,13p' "${BASH_SOURCE[0]}" >&2
	exit 2
	;;
esac

local_state=$KGF_STATE_DIR/local
project=$local_state/project
venv=$KGF_STATE_DIR/engine-venv

ensure_engine_venv
eval "$("$KGF_REPO/scripts/toolchain.sh" env)"
"$KGF_REPO/scripts/control-plane.sh" up
eval "$("$KGF_REPO/scripts/control-plane.sh" env)"

mkdir -p "$project" "$local_state/backend"
ln -sfn "$KGF_REPO/__main__.py" "$project/__main__.py"
ln -sfn "$KGF_REPO/components" "$project/components"
ln -sfn "$KGF_REPO/standins/charts" "$project/charts"
cat >"$project/Pulumi.yaml" <<YAML
name: kai-gpu-fractions
runtime:
  name: python
  options: {toolchain: pip, virtualenv: $venv}
plugins:
  providers: [{name: kai-gpu-fractions, path: $KGF_REPO/provider}]
YAML
# The lab on an existing cluster (the local control plane, whose fake GPU node gpu-node-0 kwok
# runs) instead of kind. Its proof needs KAI's queue accounting and the isolator's webhook, which
# do not run here, so it is off: the stack's outputs say that the boundary was not observed.
cat >"$project/Pulumi.dev.yaml" <<YAML
config:
  kai-gpu-fractions:profile: lab
  kai-gpu-fractions:cluster: {kubeconfig: $KUBECONFIG}
  kai-gpu-fractions:kai: {chart: {chart: charts/kai-scheduler}}
  kai-gpu-fractions:lab:
    kind: null
    gpuNodes: [gpu-node-0]
    nvmlMock: {buildImage: false, chart: {chart: charts/nvml-mock}}
    isolator: {chart: {chart: charts/kai-resource-isolator}}
    prove: false
YAML

export PULUMI_BACKEND_URL=file://$local_state/backend
export PULUMI_CONFIG_PASSPHRASE=${PULUMI_CONFIG_PASSPHRASE:-local-dev-stack}
# The kubernetes provider writes its kubeconfig to a new temporary file at every start and never
# removes it (pulumi-kubernetes provider.go:774 at v4.25.0): keep those with the deployment's state.
export TMPDIR=$local_state/tmp
mkdir -p "$TMPDIR"
export PATH=$venv/bin:$PATH
# A run that was killed (a reboot, a second Ctrl-C) leaves its lock behind, and every later run
# would stop at it; a lock whose process no longer runs on this host is released.
for lock in "$local_state"/backend/.pulumi/locks/*/*/dev/*.json; do
	[[ -f $lock ]] || continue
	pid=$(sed -n 's/.*"pid": *\([0-9]*\).*/\1/p' "$lock")
	host=$(sed -n 's/.*"hostname": *"\([^"]*\)".*/\1/p' "$lock")
	if [[ $host == "$(hostname)" ]] && ! kill -0 "$pid" 2>/dev/null; then
		say "releasing the lock of an earlier run that is no longer running (pid $pid)"
		rm -f "$lock"
	fi
done
cd "$project"
pulumi stack select dev 2>/dev/null || pulumi stack init dev >/dev/null
case $action in
up)
	pulumi up --yes --refresh --stack dev "$@"
	pulumi stack output --stack dev
	;;
preview) pulumi preview --refresh --stack dev "$@" ;;
outputs) pulumi stack output --stack dev "$@" ;;
destroy)
	pulumi stack export --stack dev --file "$local_state/before-destroy.json"
	pulumi destroy --yes --refresh --skip-preview --stack dev "$@"
	cd "$KGF_REPO"
	"$venv/bin/python" -m tools.verify_destroyed "$local_state/before-destroy.json"
	rm -rf "$TMPDIR"
	;;
esac
