// Package source runs the sources (--source, external-dns's names): one small controller per
// enabled kind (Service, Ingress, the Gateway API routes, external-dns's DNSEndpoint) reads a
// source object, computes its endpoints with pkg/source (pure) and creates, updates or deletes
// one dnsplane DNSEndpoint per source object, controller-owned by it and labelled with its kind
// and name, so that what a source publishes goes through the same plan, registry and zone writers
// as any DNSEndpoint, and shows in kubectl. The DNSEndpoint is deleted by this controller when
// the source object is deleted or no longer yields endpoints (it does not rely on the garbage
// collector). A value that cannot be used becomes a Warning Event on the source object.
//
// A kind whose CRD is not installed (Gateway API, externaldns.k8s.io) does not stop the manager:
// Starter polls discovery every Interval, logs that it waits, reports
// dnsplane_source_ready{source} 0, and adds the controller once the CRDs are served.
package source
