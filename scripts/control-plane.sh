#!/usr/bin/env bash
# Local Kubernetes control plane, all on 127.0.0.1: etcd, kube-apiserver,
# kube-controller-manager and kube-scheduler built from their Go modules, and
# kwok turning the Node objects in standins/nodes/ into fake GPU nodes
# whose pods go Running, and the stand-in operators of standins/operators doing at
# run time what the GPU Operator, KAI's and gpu-fractioning's operators, nvml-mock,
# GFD and the device plugins would; the GPU Operator's driver upgrade controller, a stand-in
# on the real upgrade state machine (standins/upgrade-controller); and a container registry (distribution) with
# htpasswd authentication over TLS, where the fork builds push their images.
# kwok also serves the kubelet API: `exec` into a fake pod runs the command on
# this machine (with the stand-in GPU tools of standins/node-tools first on
# PATH), and pod logs come from files; tests say which per pod with kwok's
# Exec/ClusterExec/Logs/ClusterLogs objects.
#
# This file holds the commands and the instances; each job is a file of scripts/control-plane/
# that it sources: build.sh (the binaries, from their Go modules), pki.sh (the instance's CA, key
# pairs and kubeconfig), processes.sh (supervising the processes) and components.sh (how each of
# the eight is started).
#
# Usage: scripts/control-plane.sh [--instance local|test|test2|test3|test4|bench] build | up | down [--purge] | env | status
#   build          build the binaries (and the kubectl and helm clients) once into the version-keyed cache
#   up             build if needed, start everything, apply the fake nodes
#   down [--purge] stop everything; --purge also deletes the instance's state
#   env            print exports for eval: KUBECONFIG, PATH (incl. kubectl, helm and crane) and the
#                  registry's address, user, password file and CA (KGF_REGISTRY*)
#   status         print what runs
# Instances run side by side, each with its own state and ports: `local` (the default), where
# scripts/deploy-local.sh deploys, and `test` and `bench`, which scripts/test.sh and
# scripts/benchmark.sh start fresh and remove, so neither ever touches a local deployment.
# Environment: KGF_CACHE (default ~/.cache/kai-gpu-fractions; build logs in its logs/),
#   KGF_STATE_DIR (default <repo>/.state; the instance's state is in control-plane/<instance>).
set -euo pipefail

# shellcheck source=scripts/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
JOBS=$KGF_REPO/scripts/control-plane
# shellcheck source=scripts/control-plane/build.sh
source "$JOBS/build.sh"
# shellcheck source=scripts/control-plane/pki.sh
source "$JOBS/pki.sh"
# shellcheck source=scripts/control-plane/processes.sh
source "$JOBS/processes.sh"
# shellcheck source=scripts/control-plane/components.sh
source "$JOBS/components.sh"
CONTROL_PLANE_SCRIPTS=("$KGF_REPO/scripts/control-plane.sh" "$JOBS"/*.sh)

INSTANCE=local
if [[ ${1:-} == --instance ]]; then
  INSTANCE=${2:-}
  shift 2 || true
fi
case $INSTANCE in
  # etcd client port (peers use the next one), kube-apiserver, kwok's kubelet API, the registry.
  local) PORTS=(12379 16443 20250 15443) ;;
  test) PORTS=(12479 16543 20350 15543) ;;
  bench) PORTS=(12579 16643 20450 15643) ;;
  # The test tier's parallel workers, one control plane each (scripts/test.sh).
  test2) PORTS=(12679 16743 20550 15743) ;;
  test3) PORTS=(12779 16843 20650 15843) ;;
  test4) PORTS=(12879 16943 20750 15943) ;;
  *) printf 'control-plane.sh: unknown instance %q (local, test, test2, test3, test4 or bench)\n' "$INSTANCE" >&2; exit 2 ;;
esac
KGF_SCRIPT="control-plane $INSTANCE"

REPO=$KGF_REPO
STATE=$KGF_STATE_DIR/control-plane/$INSTANCE
KUBECONFIG_FILE=$STATE/kubeconfig
NODES_DIR=$REPO/standins/nodes
KWOK_STAGES=$REPO/standins/kwok/stages.yaml
NODE_TOOLS=$REPO/standins/node-tools
ETCD_PORT=${PORTS[0]}
APISERVER_PORT=${PORTS[1]}
KWOK_PORT=${PORTS[2]}
REGISTRY_PORT=${PORTS[3]}
REGISTRY_DIR=$STATE/registry
REGISTRY_USER=kgf
SERVICE_CIDR=10.96.0.0/16
COMPONENTS=(etcd kube-apiserver kube-controller-manager kube-scheduler kwok kgf-stand-in-operators kgf-upgrade-controller registry)
OPERATORS=$REPO/standins/operators

log() { say "$*"; }
die() { log "error: $*"; exit 1; }

# quiet COMMAND...: show COMMAND's output only if it fails (openssl draws progress dots).
quiet() {
  local out
  out=$("$@" 2>&1) || { printf '%s\n' "$out" >&2; return 1; }
}

kubectl() { "$BIN/kubectl" --kubeconfig="$KUBECONFIG_FILE" "$@"; }

cmd_up() {
  if all_running; then
    if [[ -f $STATE/run/fingerprint && $(<"$STATE/run/fingerprint") == "$(fingerprint)" ]]; then
      log "already up; KUBECONFIG=$KUBECONFIG_FILE"
      return
    fi
    log "restarting: its scripts, the kwok stages or the stand-in operators changed since the control plane started"
    cmd_down
  fi
  cmd_build
  local start=$SECONDS
  mkdir -p "$STATE"/{run,logs,kwok,etcd}
  forget_the_dead
  chmod 700 "$STATE/etcd" # etcd warns about anything wider
  make_pki
  write_kubeconfig
  start_components
  fingerprint >"$STATE/run/fingerprint"
  log "up in $((SECONDS - start))s; KUBECONFIG=$KUBECONFIG_FILE"
}

cmd_down() {
  [[ -z ${1:-} || $1 == --purge ]] || die "usage: $0 down [--purge]"
  local i
  for ((i = ${#COMPONENTS[@]} - 1; i >= 0; i--)); do stop "${COMPONENTS[i]}"; done
  if [[ ${1:-} == --purge ]]; then
    rm -rf "$STATE"
    log "stopped and purged $STATE"
  else
    log "stopped"
  fi
}

cmd_env() {
  printf 'export KUBECONFIG=%q\n' "$KUBECONFIG_FILE"
  printf "export PATH=%q:\$PATH\n" "$BIN"
  printf 'export KGF_REGISTRY=%q\n' "127.0.0.1:$REGISTRY_PORT"
  printf 'export KGF_REGISTRY_USERNAME=%q\n' "$REGISTRY_USER"
  printf 'export KGF_REGISTRY_PASSWORD_FILE=%q\n' "$REGISTRY_DIR/password"
  printf 'export KGF_REGISTRY_TRUST=%q\n' "$STATE/pki/trust.pem"
}

cmd_status() {
  local name pid rc=0
  for name in "${COMPONENTS[@]}"; do
    if pid=$(pid_of "$name"); then
      printf '%-24s running (pid %s)\n' "$name" "$pid"
    else
      printf '%-24s stopped\n' "$name"
      rc=1
    fi
  done
  if pid_of kube-apiserver >/dev/null; then
    printf 'KUBECONFIG=%s\n' "$KUBECONFIG_FILE"
    kubectl get nodes || true
  fi
  return "$rc"
}

case ${1:-} in
  build) cmd_build ;;
  up) cmd_up ;;
  down) cmd_down "${2:-}" ;;
  env) cmd_env ;;
  status) cmd_status ;;
  *)
    sed -n '/^# Usage:/,/^[^#]/{/^#/s/^# \{0,1\}//p}' "${BASH_SOURCE[0]}" >&2
    exit 2
    ;;
esac
