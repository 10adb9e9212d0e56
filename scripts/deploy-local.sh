#!/usr/bin/env bash
# Deploys the default stack (`dev`, the lab profile) on the local control plane, offline:
# builds the toolchain and control plane if needed, starts the control plane, and runs
# `pulumi up` with the lab pointed at the local API server and the stand-in charts (upstream
# charts and images cannot be fetched offline). State lives in .state/local (file backend).
# `scripts/deploy-local.sh destroy` tears the stack down; `scripts/control-plane.sh down` stops
# the control plane.
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
state=${KGF_STATE_DIR:-$repo/.state}
project=$state/local/project
python=$(command -v python3.11 || command -v python3)

# The engine's virtualenv, as scripts/test.sh makes it (without pulumi-command/pulumi-docker,
# whose plugins cannot be built offline; the local stack needs neither).
venv=$state/engine-venv
grep -vE '^(pulumi-command|pulumi-docker)==' "$repo/requirements.txt" >"$state/engine-requirements.txt"
stamp=$(cat "$state/engine-requirements.txt" "$repo/policy/requirements.txt" | sha256sum | cut -c1-16)
if [[ "$(cat "$venv/.requirements" 2>/dev/null)" != "$stamp" ]]; then
	rm -rf "$venv" && "$python" -m venv "$venv"
	"$venv/bin/pip" install --quiet -r "$state/engine-requirements.txt" -r "$repo/policy/requirements.txt"
	echo "$stamp" >"$venv/.requirements"
fi

ln -sfn "$venv" "$repo/policy/venv"
"$repo/scripts/toolchain.sh" >&2
eval "$("$repo/scripts/toolchain.sh" env)"
"$repo/scripts/control-plane.sh" build >&2
"$repo/scripts/control-plane.sh" up >&2
eval "$("$repo/scripts/control-plane.sh" env)"

mkdir -p "$project" "$state/local/backend"
ln -sfn "$repo/__main__.py" "$project/__main__.py"
ln -sfn "$repo/components" "$project/components"
ln -sfn "$repo/tests/fixtures/charts" "$project/charts"
cat >"$project/Pulumi.yaml" <<YAML
name: kai-gpu-fractions
runtime:
  name: python
  options: {toolchain: pip, virtualenv: $venv}
YAML
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

export PULUMI_BACKEND_URL=file://$state/local/backend
export PULUMI_CONFIG_PASSPHRASE=${PULUMI_CONFIG_PASSPHRASE:-local-dev-stack}
export PATH=$venv/bin:$PATH
cd "$project"
pulumi stack select dev 2>/dev/null || pulumi stack init dev
if [[ "${1:-up}" == destroy ]]; then
	exec pulumi destroy --yes --skip-preview --stack dev
fi
pulumi up --yes --stack dev
pulumi stack output --stack dev
