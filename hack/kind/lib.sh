# shellcheck shell=bash
# lib.sh: what hack/e2e-kind.sh and hack/kind/cluster.sh share. Source it from the repository
# root after defining log and die. It reads KIND_EXPERIMENTAL_PROVIDER, KIND_NODE_IMAGE,
# IMAGE_REPO and TAG, and sets REPO, BIN, CE (docker or podman), NODE_IMAGE, TAG, IMG and
# KUBECTL.

REPO=$PWD
BIN=$REPO/bin
export PATH="$BIN:/usr/sbin:$PATH" # kind, helm, kubectl; pdns_server
IMAGE_REPO=${IMAGE_REPO:-dnsplane/manager}
DNSQ_IMAGE=dnsplane.local/dnsq:dev

# kind_engine picks the container engine kind drives: podman when KIND_EXPERIMENTAL_PROVIDER
# says so, or when no Docker engine answers and podman is installed. With podman, the settings
# this machine needs come from hack/podman/containers.conf (runc, ulimits root may set), and an
# empty /lib/modules is made when the host lacks it (kind bind-mounts it into every node).
kind_engine() {
  if [ -z "${KIND_EXPERIMENTAL_PROVIDER:-}" ] && ! docker info >/dev/null 2>&1 && command -v podman >/dev/null; then
    export KIND_EXPERIMENTAL_PROVIDER=podman
  fi
  if [ "${KIND_EXPERIMENTAL_PROVIDER:-}" = podman ]; then
    CE=podman
    export CONTAINERS_CONF=${CONTAINERS_CONF:-$REPO/hack/podman/containers.conf}
    [ -d /lib/modules ] || mkdir -p /lib/modules
    NODE_IMAGE=${KIND_NODE_IMAGE:-offline}
  else
    CE=docker
    NODE_IMAGE=${KIND_NODE_IMAGE:-stock}
  fi
  command -v "$CE" >/dev/null || die "$CE not found"
}

# kind_tools puts kind, helm and kubectl in bin/ (built from the Go module proxy, cached).
kind_tools() {
  "$REPO/hack/kind/bins.sh"
  # shellcheck source=versions.env
  source "$REPO/hack/kind/versions.env"
  mkdir -p "$BIN" # a fresh clone has no bin/ yet
  install -m 0755 "${XDG_CACHE_HOME:-$HOME/.cache}/dnsplane/kind-bin-$KIND_VERSION/kind" "$BIN/kind"
  "$REPO/hack/helm.sh" "$BIN" >/dev/null
  "$REPO/hack/envtest-bins.sh" "$BIN"
  # shellcheck disable=SC2034 # KUBECTL is for the scripts that source this file (hack/e2e-kind.sh)
  KUBECTL=$BIN/kubectl
}

# kind_images builds the manager image (tag $TAG, default `make version`) and the dnsq image, and
# writes both as one archive for `kind load image-archive` to $1. The dnsq image holds /dnsq (its
# entrypoint, a dig for Pods) and /statusd (the HTTP backend of the kind health scenarios,
# hack/kind/statusd, run with `command: [/statusd]`).
kind_images() {
  local archive=$1
  TAG=${TAG:-$(make -s -C "$REPO" version)}
  IMG=$IMAGE_REPO:$TAG
  local ctx
  ctx=$(mktemp -d)
  CGO_ENABLED=0 go build -trimpath -ldflags='-s -w' -o "$ctx/dnsq" ./hack/kind/dnsq
  CGO_ENABLED=0 go build -trimpath -ldflags='-s -w' -o "$ctx/statusd" ./hack/kind/statusd
  if [ "$CE" = podman ]; then
    make -s -C "$REPO" image IMG="$IMG" >/dev/null
    # podman names a registry-less image localhost/...; containerd looks for docker.io/....
    podman tag "$IMG" "docker.io/$IMG"
    tar -C "$ctx" --owner=0 --group=0 -cf "$ctx/dnsq.tar" dnsq statusd
    podman import --change 'ENTRYPOINT ["/dnsq"]' "$ctx/dnsq.tar" "$DNSQ_IMAGE" >/dev/null
    podman save --format docker-archive -m -o "$archive" "docker.io/$IMG" "$DNSQ_IMAGE" >/dev/null
  else
    make -s -C "$REPO" docker-build IMG="$IMG"
    printf 'FROM scratch\nCOPY dnsq /dnsq\nCOPY statusd /statusd\nENTRYPOINT ["/dnsq"]\n' >"$ctx/Dockerfile"
    docker build -q -t "$DNSQ_IMAGE" "$ctx" >/dev/null
    docker save -o "$archive" "$IMG" "$DNSQ_IMAGE"
  fi
  rm -rf "$ctx"
}

# kind_node_image resolves NODE_IMAGE: "offline" builds one (hack/kind/node-image.sh, cached by
# content hash), "stock" is kind's default (empty), anything else is used as given.
kind_node_image() {
  case $NODE_IMAGE in
    offline) NODE_IMAGE=$("$REPO/hack/kind/node-image.sh") ;;
    stock) NODE_IMAGE="" ;;
  esac
}

# kind_config writes the cluster config to $1. failCgroupV1: false lets kubelet 1.35+ run on a
# cgroup v1 host (harmless on v2). The offline image has no kindnet image: its bridge CNI config
# (hack/kind/files/etc/cni) takes the default CNI's place.
kind_config() {
  {
    echo 'kind: Cluster'
    echo 'apiVersion: kind.x-k8s.io/v1alpha4'
    echo 'networking:'
    if [[ $NODE_IMAGE == dnsplane.local/kind-node:* ]]; then echo '  disableDefaultCNI: true'; fi
    printf 'kubeadmConfigPatches:\n- |\n  kind: KubeletConfiguration\n  failCgroupV1: false\n'
  } >"$1"
}

# kind_api_port prints a port for a cluster's API server on 127.0.0.1, below the kernel's
# ephemeral range (net.ipv4.ip_local_port_range), on which nothing listens and which no container
# publishes. Why: podman publishes a port with iptables DNAT and holds no socket on it, so a port
# kind picks itself (an ephemeral one) stays free to bind; a test's httptest server that the
# kernel gives the same port then sees its connections DNAT'd to the API server (a CI run once
# failed so, beside clusters left running).
kind_api_port() {
  local low port _
  read -r low _ </proc/sys/net/ipv4/ip_local_port_range
  [ "$low" -gt 20100 ] || low=32768
  local used
  used=$("$CE" ps -a --format '{{.Ports}}' 2>/dev/null || true)
  for _ in $(seq 100); do
    port=$((20000 + RANDOM % (low - 20000)))
    if { command -v ss >/dev/null && ss -Htln "sport = :$port" | grep -q .; } || grep -q ":$port->" <<<"$used"; then continue; fi
    echo "$port"
    return 0
  done
  echo "kind_api_port: no free port in 20000-$((low - 1))" >&2
  return 1
}

# kind_cluster <name> <kubeconfig> <config> <archive>: (re)creates the cluster, its API server on
# a port from kind_api_port, and loads the images.
kind_cluster() {
  kind delete cluster --name "$1" >/dev/null 2>&1 || true
  local port
  port=$(kind_api_port)
  sed "s/^networking:\$/networking:\n  apiServerAddress: 127.0.0.1\n  apiServerPort: $port/" "$3" >"$3.$1"
  kind create cluster --name "$1" --config "$3.$1" ${NODE_IMAGE:+--image "$NODE_IMAGE"} --kubeconfig "$2" --wait 300s
  kind load image-archive "$4" --name "$1"
}

# kind_node_ip <node container>: its address on the kind network.
kind_node_ip() {
  "$CE" inspect -f '{{with index .NetworkSettings.Networks "kind"}}{{.IPAddress}}{{end}}' "$1"
}
