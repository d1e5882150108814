# dnsplane Makefile, Kubebuilder conventions. `make help` lists the targets: every rule's line
# ends in "## " and its one-line help, and ##@ lines head the groups (maps_test.go,
# TestMakeHelp_ListsEveryTargetOnOneLine, checks every target has its line).

# Everything a target builds lands in bin/ (git-ignored).
LOCALBIN ?= $(CURDIR)/bin
CONTROLLER_GEN ?= go tool controller-gen
# Extra flags for `make run`, e.g. RUN_ARGS="--local-dns-addr=127.0.0.1:5354".
RUN_ARGS ?=
# Extra flags for `go test`, e.g. TEST_ARGS="-run TestAdmission -v".
TEST_ARGS ?=

# The build's identity (docs/image.md, "Versions"), stamped into the binary with -ldflags -X
# (internal/version): this machine builds with GOFLAGS=-buildvcs=false, so Go's VCS stamp is absent.
# VERSION is `git describe --tags --match 'v[0-9]*' --dirty --always` (v1.2.0, or
# v1.2.0-3-g1a2b3c4[-dirty] past the tag). With no v* tag it is v0.0.0-<commits>-g<hash>[-dirty],
# the shape describe would give past a v0.0.0 tag on the first commit; outside git, v0.0.0-dev.
# REVISION is `git rev-parse --short HEAD`, or "unknown" outside git. Both can be given:
# `make image VERSION=v0.1.0`.
ifeq ($(origin VERSION),undefined)
  GIT_DESCRIBE := $(shell git describe --tags --match 'v[0-9]*' --dirty --always 2>/dev/null)
  ifeq ($(GIT_DESCRIBE),)
    VERSION := v0.0.0-dev
  else ifeq ($(filter v%,$(GIT_DESCRIBE)),)
    VERSION := v0.0.0-$(shell git rev-list --count HEAD)-g$(GIT_DESCRIBE)
  else
    VERSION := $(GIT_DESCRIBE)
  endif
endif
ifeq ($(origin REVISION),undefined)
  REVISION := $(or $(shell git rev-parse --short HEAD 2>/dev/null),unknown)
endif
VERSION_PKG := github.com/dnsplane/dnsplane/internal/version
# The manager's link flags; the Dockerfile passes the same (TestImages_BuildTheSameBinary).
GO_LDFLAGS := -s -w -X $(VERSION_PKG).Version=$(VERSION) -X $(VERSION_PKG).Revision=$(REVISION)
# The image repository; `make image` tags $(IMAGE_REPO):$(VERSION) and $(IMAGE_REPO):dev
# (config/default's tag).
IMAGE_REPO ?= dnsplane/manager
IMG ?= $(IMAGE_REPO):$(VERSION)

SHELL := /usr/bin/env bash -o pipefail
.SHELLFLAGS := -ec

.PHONY: all
all: build ## Build bin/manager (the default target: make build).

.PHONY: help
help: ## Show this help.
	@awk 'BEGIN {FS = ":.*##"} /^[a-zA-Z_0-9-]+:.*?##/ { printf "  %-14s %s\n", $$1, $$2 } /^##@/ { printf "\n%s\n", substr($$0, 5) }' $(MAKEFILE_LIST)

##@ Development

.PHONY: manifests
manifests: ## Generate the CRDs and RBAC under config/ from the controller-gen markers.
	$(CONTROLLER_GEN) rbac:roleName=manager-role crd paths="./..." output:crd:artifacts:config=config/crd/bases output:rbac:artifacts:config=config/rbac
	@# One line per description paragraph, so kubectl explain wraps them whole (hack/crddoc).
	go run ./hack/crddoc config/crd/bases/*.yaml
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

# FUNCLEN_MAX is the longest a production function may be, in lines (func keyword to closing
# brace). Production is every tracked non-test, non-generated .go file, hack/ included;
# internal/testing (the test toolkit) and e2e/ are test code and not counted (hack/funclen).
# hack/funclen/allow.txt names functions still over it; the check fails when one of them is not.
FUNCLEN_MAX ?= 80

.PHONY: lint
lint: ## Run go vet (the e2e suite's build tag too), gofmt, the function-length check (hack/funclen), and shellcheck on hack/ and .ci/run; CI runs it.
	go vet ./...
	go vet -tags e2e ./e2e/
	go run ./hack/funclen -max $(FUNCLEN_MAX) -allow hack/funclen/allow.txt
	@unformatted=$$(gofmt -l $$(git ls-files '*.go')); \
	if [ -n "$$unformatted" ]; then echo "gofmt would change: $$unformatted (run make fmt)" >&2; exit 1; fi
	@command -v shellcheck >/dev/null || { echo "shellcheck is missing: apt-get install -y shellcheck" >&2; exit 1; }
	shellcheck -x -P SCRIPTDIR .ci/run $$(git ls-files 'hack/*.sh')

.PHONY: envtest-bins
envtest-bins: ## Build etcd, kube-apiserver, kube-controller-manager and kubectl into bin/ (cached per version).
	hack/envtest-bins.sh $(LOCALBIN)

.PHONY: test
test: envtest-bins helm version-check image-check ## Run every unit, real-server and envtest test (helm lint, the chart checks and every fuzz target's seeds included), then each fuzz target for TEST_FUZZTIME (default 500x: 500 inputs each), the version check and the image check.
	KUBEBUILDER_ASSETS=$(LOCALBIN) go test -count=1 -race -timeout 60m $(TEST_ARGS) ./...
	FUZZTIME=$(TEST_FUZZTIME) hack/fuzz.sh

.PHONY: external-dns
external-dns: ## Build real external-dns v0.22.0 and its CRD into bin/ (its own tools module; cached per version, about 4 min and 3 GB once).
	hack/bench/build-external-dns.sh $(LOCALBIN)

.PHONY: e2e
e2e: build envtest-bins external-dns ## Run the end-to-end suite: 3 bin/manager --local processes, a real PowerDNS and real external-dns v0.22.0.
	go test -tags e2e -count=1 -timeout 15m -v ./e2e/

.PHONY: e2e-kind
e2e-kind: ## Run the end-to-end suite and the kind-only scenarios against 3 kind clusters running the chart (podman + an offline node image, or Docker; hack/e2e-kind.sh).
	hack/e2e-kind.sh

# The kind cluster that make kind-cluster makes (deleting one of that name first) and make
# kind-load loads images into.
KIND_CLUSTER ?= dnsplane

.PHONY: kind-cluster
kind-cluster: ## Make the kind cluster $(KIND_CLUSTER) (default dnsplane; one of that name is deleted first) with the manager image loaded, to try the chart on (docs/install.md, "Try it on kind").
	hack/kind/cluster.sh $(KIND_CLUSTER)

.PHONY: kind-load
kind-load: ## Build the manager image again and load it into the existing kind cluster $(KIND_CLUSTER), which keeps its release and objects; prints KUBECONFIG, TAG and NODE_IP.
	hack/kind/load.sh $(KIND_CLUSTER)

.PHONY: helm
helm: ## Build helm (hack/helm/go.mod's version) into bin/helm (cached per version).
	hack/helm.sh $(LOCALBIN)

# The chart package's version: $(VERSION) without its v (v1.2.0-3-g1a2b3c4 is the SemVer
# 1.2.0-3-g1a2b3c4, a pre-release of 1.2.0, as Helm wants).
CHART_VERSION := $(VERSION:v%=%)

.PHONY: chart
chart: helm ## Package the chart as bin/dnsplane-$(CHART_VERSION).tgz: chart version $(CHART_VERSION) and appVersion $(VERSION) (the default image tag, the one make image builds), so helm history tells releases apart.
	$(LOCALBIN)/helm package charts/dnsplane --version $(CHART_VERSION) --app-version $(VERSION) -d $(LOCALBIN)

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

.PHONY: fuzz
FUZZTIME ?= 3s
# TEST_FUZZTIME is how much make test fuzzes each target after the tests: a count of inputs
# (500x, about 25 s for all 13 on a busy 2-core machine), not a time. A 2 s time failed CI once
# with go's own "context deadline exceeded" as the time ran out (golang/go#75804: the coordinator
# races its own deadline on a starved machine); a count sets no deadline. 0s fuzzes none; the
# targets' seeds and kept inputs run as tests either way (docs/reliability.md, "Fuzzing").
TEST_FUZZTIME ?= 500x
fuzz: ## Run every native Go fuzz target for FUZZTIME each (default 3s), one go test -fuzz per target (list: hack/fuzz.sh).
	FUZZTIME=$(FUZZTIME) hack/fuzz.sh

.PHONY: faults
faults: ## The fault suite: dnsplane behind a fault-injecting proxy on PowerDNS; writes docs/reliability.md's table (FAULT_* variables: hack/bench/faults.go).
	@$(MAKE) -s build envtest-bins
	go build -o $(LOCALBIN)/bench ./hack/bench
	FAULTS=1 $(LOCALBIN)/bench

# The nemesis's seed and schedule length (`make chaos SEED=7 DURATION=10m`); SEED 0 draws one
# from the clock and prints it.
SEED ?= 0
DURATION ?= 10m

.PHONY: chaos
chaos: build envtest-bins ## The nemesis (root): 5 local managers, seeded cuts, kills, target failures and clock skews for DURATION (default 10m, SEED to replay); checks S1, S2, L1 and C1 (docs/reliability.md, "The nemesis").
	go build -o $(LOCALBIN)/chaos ./hack/chaos
	$(LOCALBIN)/chaos -seed $(SEED) -duration $(DURATION) -members 5

.PHONY: chaos-short
chaos-short: build envtest-bins ## The nemesis's short run for CI (root): 3 members, seed 66 (an isolated member killed and restarted while the primary's IPv4 target is down), 3 minutes.
	go build -o $(LOCALBIN)/chaos ./hack/chaos
	$(LOCALBIN)/chaos -seed 66 -duration 3m -members 3

.PHONY: bench-micro
bench-micro: ## Run the Go micro-benchmarks (go test -bench), benchstat-friendly, into hack/bench/out/micro.txt.
	@mkdir -p hack/bench/out
	go test -run '^$$' -bench . -benchmem -count=$(BENCH_COUNT) ./pkg/... | tee hack/bench/out/micro.txt

##@ Build

.PHONY: build
build: ## Build the static manager binary bin/manager, stamped with $(VERSION) and $(REVISION).
	CGO_ENABLED=0 go build -trimpath -ldflags '$(GO_LDFLAGS)' -o $(LOCALBIN)/manager .

.PHONY: version
version: ## Print $(VERSION), the version `make build` and the images carry.
	@echo $(VERSION)

.PHONY: version-check
version-check: build ## Check that `bin/manager --version` prints the Makefile's VERSION and REVISION.
	@want="dnsplane $(VERSION) (revision $(REVISION), $$(go env GOVERSION))"; \
	got=$$($(LOCALBIN)/manager --version); \
	if [ "$$got" != "$$want" ]; then echo "bin/manager --version printed \"$$got\", want \"$$want\"" >&2; exit 1; fi; \
	echo "version-check: $$got"

.PHONY: image
image: build ## Build the FROM-scratch image $(IMG) (and :dev) with podman from bin/manager (Containerfile.scratch).
	IMG=$(IMG) IMAGE_REPO=$(IMAGE_REPO) VERSION=$(VERSION) REVISION=$(REVISION) hack/image.sh $(LOCALBIN)/manager

.PHONY: image-check
image-check: build ## Build the podman image, then check it runs as 65532 and prints bin/manager's --version.
	IMG=$(IMG) IMAGE_REPO=$(IMAGE_REPO) VERSION=$(VERSION) REVISION=$(REVISION) hack/image-check.sh $(LOCALBIN)/manager

.PHONY: docker-build
docker-build: ## Build the manager image $(IMG) from the Dockerfile (multi-stage, distroless; needs Docker or podman and a registry).
	$${CONTAINER_TOOL:-docker} build -f Dockerfile --build-arg VERSION=$(VERSION) --build-arg REVISION=$(REVISION) -t $(IMG) .

.PHONY: run
run: build envtest-bins ## Run the manager on a local control plane and the embedded DNS server.
	$(LOCALBIN)/manager --local $(RUN_ARGS)
