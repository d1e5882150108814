// Tools module for the benchmark: external-dns is built from here so that it
// never enters dnsplane's go.mod. See hack/bench/build-external-dns.sh.
module github.com/dnsplane/dnsplane/hack/bench/tools

go 1.26.6

require sigs.k8s.io/external-dns v0.22.0

replace (
	github.com/exoscale/egoscale/v3 => github.com/exoscale/egoscale/v3 v3.1.43
	github.com/openshift/api => github.com/openshift/api v0.0.0-20260709102940-580f1c1ba691
)
