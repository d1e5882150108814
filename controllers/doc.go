// Package controllers holds the envtest suites of dnsplane's reconcilers; the reconcilers
// themselves live one package per kind: dnszone (hosted zones, parent links, the scraper's
// registrations), dnsendpoint (external-dns style endpoint lists), dnsrecord (shared record sets
// with heartbeats) and gslb (one host load-balanced across clusters), plus source (Services,
// Ingresses, Gateway routes and external-dns DNSEndpoints turned into owned DNSEndpoints, as
// external-dns's sources would publish them) and glue (the leader keeps every embedded zone's
// ns1 glue on the dns Service's address). Each reconciler reads its
// object, computes, writes the provider through a zone writer (pkg/zonewriter), and records the
// outcome in status conditions and Events.
//
// Shared code lives in controllers/internal: lifecycle (the reconcile skeleton of those four:
// read, finalizer, deletion and status commit around each controller's phases), publish (zone
// assignment, planning and the release of an object's records, used by dnsendpoint and
// dnsrecord), status (conditions, Events and status patches), predicates (the event filters every controller uses), requeue (periodic
// re-reconciles that count as successes) and notice (the scraper's notifications as a
// controller-runtime source), deps and testclient (what the reconcilers need of the packages
// below, and its fakes). No controller imports a provider implementation or the provider
// factory: they stop at pkg/provider (imports_test.go).
package controllers
