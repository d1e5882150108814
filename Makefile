# dnsplane Makefile, Kubebuilder conventions. `make help` lists the targets.

# Everything a target builds lands in bin/ (git-ignored).
LOCALBIN ?= $(CURDIR)/bin
CONTROLLER_GEN ?= go tool controller-gen
# Extra flags for `make run`, e.g. RUN_ARGS="--local-dns-addr=127.0.0.1:5354".
RUN_ARGS ?=
# Extra flags for `go test`, e.g. TEST_ARGS="-run TestAdmission -v".
TEST_ARGS ?=
IMG ?= dnsplane/manager:dev

SHELL := /usr/bin/env bash -o pipefail
.SHELLFLAGS := -ec

.PHONY: all
all: build

.PHONY: help
help: ## Show this help.
	@awk 'BEGIN {FS = ":.*##"} /^[a-zA-Z_0-9-]+:.*?##/ { printf "  %-14s %s\n", $$1, $$2 } /^##@/ { printf "\n%s\n", substr($$0, 5) }' $(MAKEFILE_LIST)

##@ Development

.PHONY: manifests
manifests: ## Generate the CRDs and RBAC under config/ from the controller-gen markers.
	$(CONTROLLER_GEN) rbac:roleName=manager-role crd paths="./..." output:crd:artifacts:config=config/crd/bases output:rbac:artifacts:config=config/rbac
	@# The Helm chart renders these files; it never writes CRDs or RBAC rules of its own.
	rm -rf charts/dnsplane/files/crds charts/dnsplane/files/rbac
	mkdir -p charts/dnsplane/files/crds charts/dnsplane/files/rbac
	cp config/crd/bases/*.yaml charts/dnsplane/files/crds/
	cp config/rbac/*role.yaml charts/dnsplane/files/rbac/

.PHONY: generate
generate: ## Generate DeepCopy methods.
	$(CONTROLLER_GEN) object paths="./apis/..."

.PHONY: fmt
fmt: ## Run go fmt.
	go fmt ./...

.PHONY: vet
vet: ## Run go vet.
	go vet ./...

.PHONY: envtest-bins
envtest-bins: ## Build etcd, kube-apiserver, kube-controller-manager and kubectl into bin/ (cached per version).
	hack/envtest-bins.sh $(LOCALBIN)

.PHONY: test
test: envtest-bins helm ## Run every unit, real-server and envtest test (and helm lint and the chart checks).
	KUBEBUILDER_ASSETS=$(LOCALBIN) go test -count=1 -race $(TEST_ARGS) ./...

.PHONY: e2e
e2e: build envtest-bins ## Run the end-to-end suite: 3 bin/manager --local processes and a real PowerDNS.
	go test -tags e2e -count=1 -timeout 15m -v ./e2e/

.PHONY: e2e-kind
e2e-kind: ## Run the end-to-end suite against kind clusters running config/default (needs kind, docker, kubectl).
	hack/e2e-kind.sh

.PHONY: helm
helm: ## Build helm (hack/helm/go.mod's version) into bin/helm (cached per version).
	hack/helm.sh $(LOCALBIN)

##@ Benchmarks

# Extra environment for `make bench`, e.g. BENCH_ENV="SIZES=100,1000 RUNS=1"; docs/bench.md lists it.
BENCH_ENV ?=
# Repetitions of each micro-benchmark (benchstat wants at least 6 to give a confidence interval).
BENCH_COUNT ?= 6

.PHONY: bench
bench: ## Compare dnsplane and external-dns v0.22.0 (builds and caches what it needs); writes hack/bench/out/.
	@start=$$(date +%s); \
	$(MAKE) -s build envtest-bins; \
	hack/bench/build-external-dns.sh $(LOCALBIN); \
	go build -o $(LOCALBIN)/bench ./hack/bench; \
	took=$$(( $$(date +%s) - start )); echo "bench: building took $$took s"; \
	env BENCH_BUILD_SECONDS=$$took $(BENCH_ENV) $(LOCALBIN)/bench

.PHONY: bench-micro
bench-micro: ## Run the Go micro-benchmarks (go test -bench), benchstat-friendly, into hack/bench/out/micro.txt.
	@mkdir -p hack/bench/out
	go test -run '^$$' -bench . -benchmem -count=$(BENCH_COUNT) ./pkg/... | tee hack/bench/out/micro.txt

##@ Build

.PHONY: build
build: ## Build the manager binary into bin/manager.
	go build -o $(LOCALBIN)/manager .

.PHONY: docker-build
docker-build: ## Build the manager image $(IMG) from the Dockerfile (needs Docker or podman).
	$${CONTAINER_TOOL:-docker} build -t $(IMG) .

.PHONY: run
run: build envtest-bins ## Run the manager on a local control plane and the embedded DNS server.
	$(LOCALBIN)/manager --local $(RUN_ARGS)
