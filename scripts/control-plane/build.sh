# shellcheck shell=bash
# Sourced by scripts/control-plane.sh: the build job. Kubernetes (kube-apiserver,
# kube-controller-manager, kube-scheduler, kubectl), etcd, kwok (with upstream's stages and the
# CRDs of its Exec and Logs objects), helm, the registry, crane, an htpasswd writer and the stand-in
# upgrade controller, each built from its Go module once into a version-keyed cache that every
# instance and checkout shares.
# Uses log/die from the caller and phase from scripts/lib.sh.

K8S_VERSION=v1.37.2
ETCD_VERSION=v3.6.16
KWOK_VERSION=v0.8.0
HELM_VERSION=v3.22.0
REGISTRY_VERSION=v3.1.2
CRANE_VERSION=v0.22.1

CACHE=$KGF_CACHE/control-plane/k8s-$K8S_VERSION-etcd-$ETCD_VERSION-kwok-$KWOK_VERSION
BIN=$CACHE/bin
BUILD_LOG=$KGF_CACHE/logs/control-plane.log

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
  rm -rf "$mod" && mkdir -p "$mod" && cd "$mod" || exit
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
  rm -rf "$mod" && mkdir -p "$mod" && cd "$mod" || exit
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

UPGRADE_CONTROLLER=$KGF_REPO/standins/upgrade-controller

upgrade_controller_is_current() {
  local f
  [[ -x $BIN/kgf-upgrade-controller ]] || return 1
  for f in "$UPGRADE_CONTROLLER"/{main.go,go.mod,go.sum}; do
    [[ $BIN/kgf-upgrade-controller -nt $f ]] || return 1
  done
}

# The GPU Operator's driver upgrade controller, as a stand-in on the real upgrade state machine
# (k8s-operator-libs, standins/upgrade-controller).
build_upgrade_controller() {
  (cd "$UPGRADE_CONTROLLER" && go build -trimpath -ldflags="-s -w" -o "$BIN/kgf-upgrade-controller" .)
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
  upgrade_controller_is_current || todo+=(upgrade-controller)
  for item in "${todo[@]}"; do
    i=$((i + 1))
    case $item in
      kubernetes) phase "$i/${#todo[@]}" "Kubernetes $K8S_VERSION (${kubernetes[*]##*/})" "8-9 min" "$BUILD_LOG" \
        build_kubernetes "${kubernetes[@]}" ;;
      etcd) phase "$i/${#todo[@]}" "etcd $ETCD_VERSION" "1 min" "$BUILD_LOG" build_etcd ;;
      kwok) phase "$i/${#todo[@]}" "kwok $KWOK_VERSION" "2 min" "$BUILD_LOG" build_kwok ;;
      helm) phase "$i/${#todo[@]}" "helm $HELM_VERSION" "2 min" "$BUILD_LOG" build_helm ;;
      registry) phase "$i/${#todo[@]}" "registry $REGISTRY_VERSION and crane $CRANE_VERSION" "1-2 min" "$BUILD_LOG" build_registry ;;
      upgrade-controller) phase "$i/${#todo[@]}" "the stand-in upgrade controller (k8s-operator-libs)" "1-3 min" "$BUILD_LOG" \
        build_upgrade_controller ;;
    esac
  done
)
