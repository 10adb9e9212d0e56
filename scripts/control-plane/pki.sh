# shellcheck shell=bash
# Sourced by scripts/control-plane.sh: the instance's PKI under $STATE/pki (its CA, the key pairs
# of the API server, the admin user, kwok's kubelet API and the registry, the service-account
# keys, and the trust file for the registry's clients) and the kubeconfig that uses it.
# Uses quiet/die from the caller.

# make_pki: the CA and each key pair, made once; a state directory from an older version of
# this script gets only what it lacks, so the certificates in use stay valid.
make_pki() {
  local pki=$STATE/pki
  command -v openssl >/dev/null || die "openssl is required (apt-get install openssl)"
  mkdir -p "$pki"
  (
    cd "$pki" || exit
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
