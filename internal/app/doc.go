// Package app is dnsplane's composition root: New builds everything the manager runs — the
// embedded zone store and DNS server, the provider factory (the dnsplane.io/local provider
// decorated like every other: guard(counting(local))), the zone writers (resolving their account's
// provider before each write), the NS scraper, the heartbeat reporter, the DNSZone, DNSEndpoint,
// DNSRecord and Gslb controllers, the sources' controllers (--source, controllers/source; those
// whose CRD is not installed yet started later by a Starter), the leader label and the metrics —
// from one Config.
//
// It also owns the manager's command line, which the repository root's main package hands over
// whole (main calls Main): flags.go parses and validates the flags and the downward API's
// POD_NAMESPACE and POD_IP into a Config (docs/api.md, "The manager"; flags_externaldns.go has
// external-dns' flag names, kubefeatures.go --kube-watch-list); cmd.go's Main checks that the
// addresses are free, starts a local control plane with --local (pkg/localcp), and calls New and
// Run until SIGTERM or SIGINT. The envtest suites call New with test settings, so that tests
// exercise the production wiring.
//
// It owns wiring and that command line only: it holds no reconcile logic, and New and everything
// it builds read no flag and no environment variable, only their Config.
package app
