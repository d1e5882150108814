// Package app is dnsplane's composition root: New builds everything the manager runs — the
// embedded zone store and DNS server, the provider factory (the dnsplane.io/local provider
// decorated like every other: guard(counting(local))), the zone writers (resolving their account's
// provider before each write), the NS scraper, the heartbeat reporter, the DNSZone, DNSEndpoint,
// DNSRecord and Gslb controllers, the sources' controllers (--source, controllers/source; those
// whose CRD is not installed yet started later by a Starter), the leader label and the metrics —
// from one Config.
//
// main.go parses and validates flags and environment into a Config and calls New and Run; the
// envtest suites call New with test settings, so that tests exercise the production wiring.
//
// It owns wiring only: it holds no reconcile logic, parses no flags and reads no environment.
package app
