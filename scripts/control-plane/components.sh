# shellcheck shell=bash
# Sourced by scripts/control-plane.sh: how each of the instance's eight processes is started, in
# order, each one waited for before the next that needs it: etcd, kube-apiserver,
# kube-controller-manager, kube-scheduler (with a kai-scheduler profile), kwok (serving the fake
# nodes of standins/nodes), the stand-in operators (standins/operators), the stand-in upgrade
# controller (standins/upgrade-controller) and the registry. Uses
# start/wait_for from processes.sh, kubectl/quiet/log from the caller, the PKI from pki.sh.

# What the running processes were started from: the control plane's scripts, the kwok stages,
# the stand-in operators.
fingerprint() {
  cat "${CONTROL_PLANE_SCRIPTS[@]}" "$KWOK_STAGES" "$OPERATORS"/*.py "$UPGRADE_CONTROLLER/main.go" | sha256sum | cut -d' ' -f1
}

start_components() {
  local pki=$STATE/pki
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

  # Only the controllers whose work the program, the stand-ins or the tests wait on (the admission
  # gate waits on validatingadmissionpolicy-status's type check): the others (quotas, volumes,
  # autoscaling, CSRs, cron jobs...) each hold informers the API server must feed.
  local controllers
  controllers=$(printf '%s-controller\n' garbage-collector namespace disruption deployment replicaset daemonset \
    statefulset job serviceaccount serviceaccount-token clusterrole-aggregation root-ca-certificate-publisher \
    pod-garbage-collector taint-eviction node-lifecycle endpoints endpointslice service-cidr \
    validatingadmissionpolicy-status | paste -sd,)
  # No secure port: their health endpoints are not needed, and the default
  # would self-sign into /var/run/kubernetes and bind fixed ports.
  start kube-controller-manager --kubeconfig="$KUBECONFIG_FILE" --secure-port=0 --leader-elect=false \
    --service-account-private-key-file="$pki/sa.key" --root-ca-file="$pki/ca.crt" --controllers="$controllers"
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
    --config="$CACHE/kwok-stages/fast" --config="$KWOK_STAGES" \
    --manage-all-nodes=false --manage-nodes-with-annotation-selector=kwok.x-k8s.io/node=fake \
    --cidr=10.244.0.0/16 --node-lease-duration-seconds=40 \
    --node-ip=127.0.0.1 --node-port="$KWOK_PORT" --server-address="127.0.0.1:$KWOK_PORT" \
    --tls-cert-file="$pki/kwok.crt" --tls-private-key-file="$pki/kwok.key" \
    --enable-crds=Exec,ClusterExec,Logs,ClusterLogs
  wait_for "the default ServiceAccount" 120 kubectl get serviceaccount default --namespace=default

  quiet kubectl apply -f "$NODES_DIR"
  wait_for "the fake nodes to be Ready" 60 kubectl wait --for=condition=Ready --timeout=1s -f "$NODES_DIR"
  start_stand_in_operators
  # The GPU Operator's upgrade controller runs a round when a node's upgrade state or the driver
  # DaemonSet changes, and again this long after each (upstream: 2 minutes).
  start kgf-upgrade-controller --kubeconfig="$KUBECONFIG_FILE" --namespace=gpu-operator --resync=10s
  start_registry
}

# The stand-in operators run in the engine's Python environment, which has the kubernetes client.
start_stand_in_operators() {
  pid_of kgf-stand-in-operators >/dev/null && return
  ensure_engine_venv
  PYTHONPATH=$REPO setsid "$KGF_STATE_DIR/engine-venv/bin/python" -m standins.operators \
    --kubeconfig="$KUBECONFIG_FILE" --workdir="$STATE/stand-in-operators" \
    >>"$STATE/logs/kgf-stand-in-operators.log" 2>&1 </dev/null &
  started kgf-stand-in-operators $!
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
