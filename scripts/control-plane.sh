#!/usr/bin/env bash
# Local Kubernetes control plane, all on 127.0.0.1: etcd, kube-apiserver,
# kube-controller-manager and kube-scheduler built from their Go modules, and
# kwok turning the Node objects in standins/nodes/ into fake GPU nodes
# whose pods go Running, and the stand-in operators of standins/operators doing at
# run time what the GPU Operator, KAI's and gpu-fractioning's operators, nvml-mock,
# GFD and the device plugins would; and a container registry (distribution) with
# htpasswd authentication over TLS, where the fork builds push their images.
# kwok also serves the kubelet API: `exec` into a fake pod runs the command on
# this machine (with the stand-in GPU tools of standins/node-tools first on
# PATH), and pod logs come from files; tests say which per pod with kwok's
# Exec/ClusterExec/Logs/ClusterLogs objects.
#
# Usage: scripts/control-plane.sh [--instance local|test|bench] build | up | down [--purge] | env | status
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

K8S_VERSION=v1.37.2
ETCD_VERSION=v3.6.16
KWOK_VERSION=v0.8.0
HELM_VERSION=v3.22.0
REGISTRY_VERSION=v3.1.2
CRANE_VERSION=v0.22.1

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
  *) printf 'control-plane.sh: unknown instance %q (local, test or bench)\n' "$INSTANCE" >&2; exit 2 ;;
esac
KGF_SCRIPT="control-plane $INSTANCE"

REPO=$KGF_REPO
CACHE=$KGF_CACHE/control-plane/k8s-$K8S_VERSION-etcd-$ETCD_VERSION-kwok-$KWOK_VERSION
BIN=$CACHE/bin
BUILD_LOG=$KGF_CACHE/logs/control-plane.log
STATE=$KGF_STATE_DIR/control-plane/$INSTANCE
KUBECONFIG_FILE=$STATE/kubeconfig
NODES_DIR=$REPO/standins/nodes
KWOK_FIXTURES=$REPO/standins/kwok
NODE_TOOLS=$REPO/standins/node-tools
ETCD_PORT=${PORTS[0]}
APISERVER_PORT=${PORTS[1]}
KWOK_PORT=${PORTS[2]}
REGISTRY_PORT=${PORTS[3]}
REGISTRY_DIR=$STATE/registry
REGISTRY_USER=kgf
SERVICE_CIDR=10.96.0.0/16
COMPONENTS=(etcd kube-apiserver kube-controller-manager kube-scheduler kwok kgf-stand-in-operators registry)
OPERATORS=$REPO/standins/operators

log() { say "$*"; }
die() { log "error: $*"; exit 1; }

# quiet COMMAND...: show COMMAND's output only if it fails (openssl draws progress dots).
quiet() {
  local out
  out=$("$@" 2>&1) || { printf '%s\n' "$out" >&2; return 1; }
}

# ---------------------------------------------------------------- build

# has_version BINARY TEXT ARGS...: BINARY exists and its ARGS output contains TEXT.
has_version() {
  local bin=$BIN/$1 text=$2
  shift 2
  [[ -x $bin && $("$bin" "$@" 2>/dev/null) == *"$text"* ]]
}

kubernetes_commands() {
  local c
  for c in kube-apiserver kube-controller-manager kube-scheduler; do
    has_version "$c" "Kubernetes $K8S_VERSION" --version || echo "k8s.io/kubernetes/cmd/$c"
  done
  has_version kubectl "Client Version: $K8S_VERSION" version --client || echo k8s.io/kubernetes/cmd/kubectl
}

build_kubernetes() (
  local cmds=("$@") mod=$CACHE/src/kubernetes staging_version=v0.${K8S_VERSION#v1.} upstream_gomod replaces
  rm -rf "$mod" && mkdir -p "$mod" && cd "$mod"
  go mod init kgf.local/control-plane/kubernetes
  # k8s.io/kubernetes requires its staging modules at v0.0.0 and replaces them
  # with ./staging/src/..., which only exists in its git tree. Point each one at
  # its published release instead; the list comes from upstream's own go.mod.
  upstream_gomod=$(go mod download -json "k8s.io/kubernetes@$K8S_VERSION" | sed -n 's/^\t"GoMod": "\(.*\)",$/\1/p')
  replaces=$(awk -v v="$staging_version" '$2 == "=>" && $3 ~ /^\.\/staging\// { print "-replace=" $1 "=" $1 "@" v }' "$upstream_gomod")
  [[ -n $replaces ]] || die "no staging modules found in $upstream_gomod"
  # shellcheck disable=SC2086 # one -replace flag per word
  go mod edit $replaces
  go get k8s.io/kubernetes/cmd/{kube-apiserver,kube-controller-manager,kube-scheduler,kubectl}@"$K8S_VERSION"

  # Unstamped binaries report v0.0.0, which pulumi-kubernetes rejects
  # ("minimum supported cluster version is v1.13"). Keys: hack/lib/version.sh.
  local minor=${K8S_VERSION#v1.} ldflags="-s -w" pkg
  minor=${minor%%.*}
  for pkg in k8s.io/client-go/pkg/version k8s.io/component-base/version; do
    ldflags+=" -X $pkg.gitVersion=$K8S_VERSION -X $pkg.gitMajor=1 -X $pkg.gitMinor=$minor -X $pkg.gitTreeState=clean"
  done
  # One invocation, so the packages the commands share are compiled once.
  go build -trimpath -ldflags "$ldflags" -o "$BIN/" "${cmds[@]}"
)

etcd_is_current() { has_version etcd "etcd Version: ${ETCD_VERSION#v}" --version; }

build_etcd() (
  local mod=$CACHE/src/etcd
  rm -rf "$mod" && mkdir -p "$mod" && cd "$mod"
  go mod init kgf.local/control-plane/etcd
  # server/v3's go.mod replaces its sibling modules with ../ paths, so
  # `go install ...@version` is refused; require them at the same release.
  go get go.etcd.io/etcd/{server/v3,api/v3,client/pkg/v3,client/v3,pkg/v3}@"$ETCD_VERSION"
  go build -trimpath -ldflags="-s -w" -o "$BIN/etcd" go.etcd.io/etcd/server/v3
)

kwok_is_current() { has_version kwok "$KWOK_VERSION" --version && [[ -d $CACHE/kwok-stages && -d $CACHE/kwok-crds ]]; }

build_kwok() {
  local dir
  GOBIN=$BIN go install -trimpath -ldflags="-s -w" "sigs.k8s.io/kwok/cmd/kwok@$KWOK_VERSION"
  # Standalone kwok has no stages unless given a config; kwok-stages/fast is
  # upstream's default set (nodes go Ready, bound pods Running, deleted pods go).
  dir=$(go mod download -json "sigs.k8s.io/kwok@$KWOK_VERSION" | sed -n 's/^\t"Dir": "\(.*\)",$/\1/p')
  rm -rf "$CACHE/kwok-stages"
  cp -r "$dir/kustomize/stage" "$CACHE/kwok-stages"
  # The CRDs of the objects that say what `exec` runs and where logs come from.
  mkdir -p "$CACHE/kwok-crds"
  cp "$dir"/kustomize/crd/bases/kwok.x-k8s.io_{execs,clusterexecs,logs,clusterlogs}.yaml "$CACHE/kwok-crds/"
  chmod -R u+w "$CACHE/kwok-stages" "$CACHE/kwok-crds"
}

helm_is_current() { has_version helm "$HELM_VERSION" version --short; }

# A helm client, to look at the local cluster's releases (and change them by hand) as a user would.
build_helm() {
  GOBIN=$BIN go install -trimpath -ldflags="-s -w -X helm.sh/helm/v3/internal/version.version=$HELM_VERSION" \
    "helm.sh/helm/v3/cmd/helm@$HELM_VERSION"
}

registry_is_current() {
  has_version registry "$REGISTRY_VERSION" --version && has_version crane "$CRANE_VERSION" version &&
    [[ -x $BIN/kgf-htpasswd && $BIN/kgf-htpasswd -nt $REPO/tools/standin-plugins/kgf-htpasswd/main.go ]]
}

# The registry, crane (pushes and tags images without a Docker engine) and an htpasswd writer:
# the registry accepts only bcrypt hashes, which openssl does not make.
build_registry() {
  GOBIN=$BIN go install -trimpath -ldflags="-s -w" "github.com/distribution/distribution/v3/cmd/registry@$REGISTRY_VERSION"
  GOBIN=$BIN go install -trimpath -ldflags="-s -w" "github.com/google/go-containerregistry/cmd/crane@$CRANE_VERSION"
  (cd "$REPO/tools/standin-plugins" && go build -trimpath -o "$BIN/kgf-htpasswd" ./kgf-htpasswd)
}

# Builds what is missing, one progress line per build; a warm run prints nothing. A subshell, so
# the build lock is released before any component starts (they would inherit it), and the build
# functions that cd into their wrapper modules run in subshells of their own.
cmd_build() (
  command -v go >/dev/null || die "go is required (Go >= 1.26)"
  mkdir -p "$BIN"
  # Both instances share the binaries: one build at a time.
  exec 8>"$CACHE/.lock"
  flock 8
  export CGO_ENABLED=0
  local kubernetes=() todo=() i=0 item
  mapfile -t kubernetes < <(kubernetes_commands)
  ((${#kubernetes[@]} == 0)) || todo+=(kubernetes)
  etcd_is_current || todo+=(etcd)
  kwok_is_current || todo+=(kwok)
  helm_is_current || todo+=(helm)
  registry_is_current || todo+=(registry)
  for item in "${todo[@]}"; do
    i=$((i + 1))
    case $item in
      kubernetes) phase "$i/${#todo[@]}" "Kubernetes $K8S_VERSION (${kubernetes[*]##*/})" "8-9 min" "$BUILD_LOG" \
        build_kubernetes "${kubernetes[@]}" ;;
      etcd) phase "$i/${#todo[@]}" "etcd $ETCD_VERSION" "1 min" "$BUILD_LOG" build_etcd ;;
      kwok) phase "$i/${#todo[@]}" "kwok $KWOK_VERSION" "2 min" "$BUILD_LOG" build_kwok ;;
      helm) phase "$i/${#todo[@]}" "helm $HELM_VERSION" "2 min" "$BUILD_LOG" build_helm ;;
      registry) phase "$i/${#todo[@]}" "registry $REGISTRY_VERSION and crane $CRANE_VERSION" "1-2 min" "$BUILD_LOG" build_registry ;;
    esac
  done
)

# ---------------------------------------------------------------- processes

# pid_of NAME: print the pid of our running NAME, or fail. The pid file alone is
# not enough: after a reboot or a crash the pid may belong to something else.
# The stand-in operators are a Python module, known by their command line.
pid_of() {
  local pidfile=$STATE/run/$1.pid pid cmdline argv0
  [[ -f $pidfile ]] || return 1
  pid=$(<"$pidfile")
  cmdline=$(tr '\0' ' ' 2>/dev/null <"/proc/$pid/cmdline") || return 1
  argv0=${cmdline%% *}
  if [[ $1 == kgf-stand-in-operators ]]; then
    [[ $cmdline == *" -m standins.operators "* ]] || return 1
  else
    [[ ${argv0##*/} == "$1" ]] || return 1
  fi
  echo "$pid"
}

# start NAME ARGS...: start $BIN/NAME in its own session (so a Ctrl-C in the
# calling terminal does not reach it), logging to $STATE/logs/NAME.log.
start() {
  local name=$1
  shift
  pid_of "$name" >/dev/null && return
  setsid "$BIN/$name" "$@" >>"$STATE/logs/$name.log" 2>&1 </dev/null &
  echo $! >"$STATE/run/$name.pid"
}

stop() {
  local name=$1 pid
  if pid=$(pid_of "$name"); then
    kill -TERM "$pid" 2>/dev/null || true
    for _ in {1..100}; do
      pid_of "$name" >/dev/null || break
      sleep 0.1
    done
    if pid_of "$name" >/dev/null; then
      log "$name did not stop within 10s; killing it"
      kill -KILL "$pid" 2>/dev/null || true
    fi
  fi
  rm -f "$STATE/run/$name.pid"
}

# Fail fast, with its log, when a component we started has died.
check_alive() {
  local name
  for name in "${COMPONENTS[@]}"; do
    if [[ -f $STATE/run/$name.pid ]] && ! pid_of "$name" >/dev/null; then
      tail -n 30 "$STATE/logs/$name.log" >&2 || true
      die "$name exited; log: $STATE/logs/$name.log"
    fi
  done
}

# wait_for WHAT SECONDS COMMAND...: retry COMMAND until it succeeds.
wait_for() {
  local what=$1 deadline=$((SECONDS + $2))
  shift 2
  until "$@" >/dev/null 2>&1; do
    check_alive
    ((SECONDS < deadline)) || die "timed out after $2s waiting for $what"
    sleep 0.5
  done
}

kubectl() { "$BIN/kubectl" --kubeconfig="$KUBECONFIG_FILE" "$@"; }

# ---------------------------------------------------------------- up

# make_pki: the CA and each key pair, made once; a state directory from an older version of
# this script gets only what it lacks, so the certificates in use stay valid.
make_pki() {
  local pki=$STATE/pki
  command -v openssl >/dev/null || die "openssl is required (apt-get install openssl)"
  mkdir -p "$pki"
  (
    cd "$pki"
    [[ -f ca.crt ]] || quiet openssl req -x509 -newkey rsa:2048 -nodes -days 3650 \
      -subj /CN=kgf-control-plane-ca -keyout ca.key -out ca.crt
    # leaf NAME SUBJECT EXTENSION...: a key and certificate signed by the CA, unless there is one.
    leaf() {
      local name=$1 subject=$2 ext=() e
      shift 2
      [[ -f $name.crt ]] && return
      for e in basicConstraints=CA:FALSE "$@"; do ext+=(-addext "$e"); done
      quiet openssl req -x509 -newkey rsa:2048 -nodes -days 3650 -subj "$subject" \
        -CA ca.crt -CAkey ca.key "${ext[@]}" -keyout "$name.key" -out "$name.crt"
    }
    leaf apiserver /CN=kube-apiserver extendedKeyUsage=serverAuth \
      "subjectAltName=IP:127.0.0.1,IP:${SERVICE_CIDR%.0/*}.1,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc"
    # system:masters is cluster-admin; every component and the tests use it.
    leaf admin "/O=system:masters/CN=kgf-admin" extendedKeyUsage=clientAuth
    leaf kwok /CN=kwok-kubelet extendedKeyUsage=serverAuth subjectAltName=IP:127.0.0.1
    leaf registry /CN=kgf-registry extendedKeyUsage=serverAuth subjectAltName=IP:127.0.0.1,DNS:localhost
    # What clients of the registry trust: the system's CAs and this one (for SSL_CERT_FILE).
    [[ -f trust.pem ]] || cat /etc/ssl/certs/ca-certificates.crt ca.crt >trust.pem 2>/dev/null || cp ca.crt trust.pem
    if [[ ! -f sa.key ]]; then
      quiet openssl genrsa -out sa.key 2048
      quiet openssl rsa -in sa.key -pubout -out sa.pub
    fi
  )
}

write_kubeconfig() {
  local pki=$STATE/pki
  cat >"$KUBECONFIG_FILE" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: kgf
  cluster:
    server: https://127.0.0.1:$APISERVER_PORT
    certificate-authority-data: $(base64 -w0 "$pki/ca.crt")
users:
- name: kgf-admin
  user:
    client-certificate-data: $(base64 -w0 "$pki/admin.crt")
    client-key-data: $(base64 -w0 "$pki/admin.key")
contexts:
- name: kgf
  context: {cluster: kgf, user: kgf-admin}
current-context: kgf
EOF
  chmod 600 "$KUBECONFIG_FILE"
}

all_running() {
  local name
  for name in "${COMPONENTS[@]}"; do pid_of "$name" >/dev/null || return 1; done
}

# What the running processes were started from: this script, the kwok stages, the stand-in operators.
fingerprint() { cat "${BASH_SOURCE[0]}" "$KWOK_FIXTURES/stages.yaml" "$OPERATORS"/*.py | sha256sum | cut -d' ' -f1; }

# The stand-in operators run in the engine's Python environment, which has the kubernetes client.
start_stand_in_operators() {
  pid_of kgf-stand-in-operators >/dev/null && return
  ensure_engine_venv
  PYTHONPATH=$REPO setsid "$KGF_STATE_DIR/engine-venv/bin/python" -m standins.operators \
    --kubeconfig="$KUBECONFIG_FILE" --workdir="$STATE/stand-in-operators" \
    >>"$STATE/logs/kgf-stand-in-operators.log" 2>&1 </dev/null &
  echo $! >"$STATE/run/kgf-stand-in-operators.pid"
}

# The registry: TLS from the instance's CA, one htpasswd user whose password is made once and
# kept in the instance's state (KGF_REGISTRY_PASSWORD_FILE), images on disk there too.
start_registry() {
  local password=$REGISTRY_DIR/password
  mkdir -p "$REGISTRY_DIR/data"
  if [[ ! -f $password ]]; then
    (umask 077 && openssl rand -hex 16 >"$password")
    "$BIN/kgf-htpasswd" "$REGISTRY_USER" <"$password" >"$REGISTRY_DIR/htpasswd"
  fi
  cat >"$REGISTRY_DIR/config.yml" <<YAML
version: 0.1
log: {level: warn, accesslog: {disabled: true}}
storage: {filesystem: {rootdirectory: "$REGISTRY_DIR/data"}, delete: {enabled: true}}
http:
  addr: 127.0.0.1:$REGISTRY_PORT
  secret: kgf-$INSTANCE-registry
  tls: {certificate: "$STATE/pki/registry.crt", key: "$STATE/pki/registry.key"}
auth: {htpasswd: {realm: kgf-registry, path: "$REGISTRY_DIR/htpasswd"}}
YAML
  # No tracing: it would send spans to a collector on localhost that does not exist.
  OTEL_TRACES_EXPORTER=none start registry serve "$REGISTRY_DIR/config.yml"
  wait_for "the registry on 127.0.0.1:$REGISTRY_PORT" 30 registry_answers
}

# Up, and asking for credentials.
registry_answers() {
  [[ $(curl -s -o /dev/null -w '%{http_code}' --cacert "$STATE/pki/ca.crt" "https://127.0.0.1:$REGISTRY_PORT/v2/") == 401 ]]
}

cmd_up() {
  if all_running; then
    if [[ -f $STATE/run/fingerprint && $(<"$STATE/run/fingerprint") == "$(fingerprint)" ]]; then
      log "already up; KUBECONFIG=$KUBECONFIG_FILE"
      return
    fi
    log "restarting: this script, the kwok stages or the stand-in operators changed since the control plane started"
    cmd_down
  fi
  cmd_build
  local start=$SECONDS pki=$STATE/pki name
  mkdir -p "$STATE"/{run,logs,kwok,etcd}
  # A component that died while nobody watched (a reboot, the OOM killer) is
  # started again below, not reported as having just exited.
  for name in "${COMPONENTS[@]}"; do
    if [[ -f $STATE/run/$name.pid ]] && ! pid_of "$name" >/dev/null; then
      log "$name is not running (last log: $STATE/logs/$name.log); starting it again"
      rm -f "$STATE/run/$name.pid"
    fi
  done
  chmod 700 "$STATE/etcd" # etcd warns about anything wider
  make_pki
  write_kubeconfig

  # --unsafe-no-fsync: throwaway test data, where fsync only costs time.
  start etcd --name=kgf --data-dir="$STATE/etcd" \
    --listen-client-urls="http://127.0.0.1:$ETCD_PORT" --advertise-client-urls="http://127.0.0.1:$ETCD_PORT" \
    --listen-peer-urls="http://127.0.0.1:$((ETCD_PORT + 1))" --initial-advertise-peer-urls="http://127.0.0.1:$((ETCD_PORT + 1))" \
    --initial-cluster="kgf=http://127.0.0.1:$((ETCD_PORT + 1))" \
    --listen-metrics-urls="" --unsafe-no-fsync

  # kube-apiserver refuses a loopback advertise address unless the endpoint
  # reconciler of the `kubernetes` Service is off; nothing here dials it.
  start kube-apiserver --etcd-servers="http://127.0.0.1:$ETCD_PORT" \
    --bind-address=127.0.0.1 --secure-port="$APISERVER_PORT" --advertise-address=127.0.0.1 \
    --endpoint-reconciler-type=none \
    --tls-cert-file="$pki/apiserver.crt" --tls-private-key-file="$pki/apiserver.key" \
    --client-ca-file="$pki/ca.crt" --authorization-mode=RBAC --allow-privileged=true \
    --service-cluster-ip-range="$SERVICE_CIDR" \
    --service-account-issuer=https://kubernetes.default.svc \
    --service-account-key-file="$pki/sa.pub" --service-account-signing-key-file="$pki/sa.key" \
    --kubelet-preferred-address-types=InternalIP --kubelet-certificate-authority="$pki/ca.crt"
  wait_for "kube-apiserver /readyz" 120 kubectl get --raw=/readyz

  # No secure port: their health endpoints are not needed, and the default
  # would self-sign into /var/run/kubernetes and bind fixed ports.
  start kube-controller-manager --kubeconfig="$KUBECONFIG_FILE" --secure-port=0 --leader-elect=false \
    --service-account-private-key-file="$pki/sa.key" --root-ca-file="$pki/ca.crt"
  # A second profile named kai-scheduler stands in for KAI's scheduler, which does not run here:
  # pods addressed to it get bound (respecting nvidia.com/gpu), so kwok can run them. It proves
  # nothing about KAI's own decisions.
  cat >"$STATE/scheduler.yaml" <<YAML
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
clientConnection: {kubeconfig: "$KUBECONFIG_FILE"}
leaderElection: {leaderElect: false}
profiles:
  - schedulerName: default-scheduler
  - schedulerName: kai-scheduler
YAML
  start kube-scheduler --config="$STATE/scheduler.yaml" --secure-port=0
  # Each kwok process holds node leases under a new identity, and would leave
  # the nodes alone until the leases of the previous one expire (40s).
  pid_of kwok >/dev/null || quiet kubectl delete leases --all --namespace=kube-node-lease
  quiet kubectl apply --server-side -f "$CACHE/kwok-crds"
  wait_for "kwok's CRDs" 60 kubectl wait --for=condition=Established --timeout=1s -f "$CACHE/kwok-crds"
  # KWOK_WORKDIR keeps kwok from also loading ~/.kwok/kwok.yaml.
  KWOK_WORKDIR=$STATE/kwok PATH=$NODE_TOOLS:$PATH start kwok --kubeconfig="$KUBECONFIG_FILE" \
    --config="$CACHE/kwok-stages/fast" --config="$KWOK_FIXTURES/stages.yaml" \
    --manage-all-nodes=false --manage-nodes-with-annotation-selector=kwok.x-k8s.io/node=fake \
    --cidr=10.244.0.0/16 --node-lease-duration-seconds=40 \
    --node-ip=127.0.0.1 --node-port="$KWOK_PORT" --server-address="127.0.0.1:$KWOK_PORT" \
    --tls-cert-file="$pki/kwok.crt" --tls-private-key-file="$pki/kwok.key" \
    --enable-crds=Exec,ClusterExec,Logs,ClusterLogs
  wait_for "the default ServiceAccount" 120 kubectl get serviceaccount default --namespace=default

  quiet kubectl apply -f "$NODES_DIR"
  wait_for "the fake nodes to be Ready" 60 kubectl wait --for=condition=Ready --timeout=1s -f "$NODES_DIR"
  start_stand_in_operators
  start_registry
  fingerprint >"$STATE/run/fingerprint"
  log "up in $((SECONDS - start))s; KUBECONFIG=$KUBECONFIG_FILE"
}

# ---------------------------------------------------------------- other commands

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
