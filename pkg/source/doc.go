// Package source computes, as pure functions, the endpoints that external-dns's sources would
// publish for one Kubernetes object: a Service (by type, as external-dns's service source
// defines LoadBalancer, NodePort, ClusterIP, headless and ExternalName), an Ingress
// (networking.k8s.io/v1 rules, TLS hosts and status.loadBalancer), a Gateway API route (its
// hostnames intersected with the listeners of the Gateways that accepted it, and those Gateways'
// status.addresses), and an external-dns DNSEndpoint (externaldns.k8s.io/v1alpha1, --source=crd).
//
// The annotations are external-dns's (external-dns.kubernetes.io/<key>, v0.22's default prefix,
// and external-dns.alpha.kubernetes.io/<key>, earlier releases'), with the same meaning, and
// dnsplane.io/<key> equivalents that win over both. A value that cannot be
// used (a TTL that is not a number, a hostname that is not a DNS name, a target of the wrong
// family) is left out and reported as a Problem, which the controllers (controllers/source) turn
// into a Warning Event on the object; it is never silently skipped.
//
// Nothing here reads the API server: the controllers pass in what they read.
package source
