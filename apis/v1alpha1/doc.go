// Package v1alpha1 holds dnsplane's user-facing API, group dnsplane.io version v1alpha1: the kinds
// DNSZone, DNSEndpoint, DNSRecord and Gslb, the Endpoint type they share with external-dns, and the
// condition types and reasons that SREs read with kubectl.
//
// The contract is docs/api.md (copied from the design's API.md). Validation that the schema can
// express lives here as OpenAPI and CEL markers, so bad objects are refused at admission. This
// package holds types only: no client calls, no reconcile logic.
//
// +kubebuilder:object:generate=true
// +groupName=dnsplane.io
package v1alpha1
