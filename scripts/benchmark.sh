#!/usr/bin/env bash
# Runs the benchmarks of benchmarks/ as documented there, each printing its figures side by side,
# with everything they need: the Python environments, the Pulumi toolchain, and a control plane and
# registry of their own (instance `bench`, made fresh and removed afterwards, even on failure), so a
# local deployment is never touched.
#
# Usage: scripts/benchmark.sh [--short] NAME...|all [-- ARGS...]
#   NAME     program_evaluation, policy_pack, engine_vs_helm, fork_supply, node_scale, driver_rollout,
#            package_consumer;
#            `all` runs each
#   --short  one round or sample each (node_scale with 8 nodes, not 64, and the a100 stack only;
#            driver_rollout on 1 and 4 with short stand-in delays): checks that they run and print,
#            as CI does (the figures of a short run are not worth quoting)
#   ARGS     passed to each benchmark, e.g. -- --rounds 5
set -euo pipefail

# shellcheck source=scripts/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
KGF_SCRIPT=benchmark
cd "$KGF_REPO"

ALL=(program_evaluation policy_pack engine_vs_helm fork_supply node_scale driver_rollout package_consumer)
usage() {
	sed -n 's/^# \{0,1\}//; 7,14p' "${BASH_SOURCE[0]}" >&2
	exit 2
}
short=false names=() args=()
while (($#)); do
	case $1 in
	--short) short=true ;;
	all) names+=("${ALL[@]}") ;;
	--)
		shift
		args=("$@")
		break
		;;
	*)
		[[ " ${ALL[*]} " == *" $1 "* ]] || usage
		names+=("$1")
		;;
	esac
	shift
done
((${#names[@]})) || usage

HELM_V4_VERSION=v4.3.1

ensure_venv "$KGF_REPO/.venv" requirements-dev.txt requirements.txt policy/requirements.txt
ensure_engine_venv
eval "$(scripts/toolchain.sh env)"
control_plane=(scripts/control-plane.sh --instance bench)
"${control_plane[@]}" down --purge # whatever an interrupted run left behind
trap '"${control_plane[@]}" down --purge' EXIT
"${control_plane[@]}" up
eval "$("${control_plane[@]}" env)"
export KGF_ENGINE_VENV=$KGF_STATE_DIR/engine-venv PYTHONPATH=$KGF_REPO:$KGF_REPO/policy

# engine_vs_helm scripts the install with both helm majors: v3 from the control plane, v4 here.
if [[ " ${names[*]} " == *" engine_vs_helm "* ]]; then
	helm_v4=$KGF_CACHE/helm-$HELM_V4_VERSION/bin/helm
	if [[ ! -x $helm_v4 ]]; then
		phase "" "helm $HELM_V4_VERSION" "2 min" "$KGF_CACHE/logs/helm-$HELM_V4_VERSION.log" \
			env GOBIN="$(dirname "$helm_v4")" CGO_ENABLED=0 go install -trimpath \
			-ldflags="-s -w -X helm.sh/helm/v4/internal/version.version=$HELM_V4_VERSION" \
			"helm.sh/helm/v4/cmd/helm@$HELM_V4_VERSION"
	fi
	export KGF_HELM_V4=$helm_v4
fi

for name in "${names[@]}"; do
	extra=()
	if $short; then
		case $name in
		program_evaluation) extra=(--samples 1) ;;
		# A fleet of 8 shows that the many-node path runs; 64 is for figures worth quoting. The a100
		# stack waits on every node at three gates, the dev stack at one: it runs the most of that path.
		node_scale) extra=(--rounds 1 --nodes 8 --stacks a100) ;;
		driver_rollout) extra=(--rounds 1 --sizes "1,4" --install 2 --mpsd-stop 1) ;;
		*) extra=(--rounds 1) ;;
		esac
	fi
	say "$name"
	.venv/bin/python -m "benchmarks.$name" "${extra[@]}" "${args[@]}"
done
