package source

import (
	"encoding/json"
	"fmt"
	"net/netip"
	"slices"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	dnsv1 "github.com/dnsplane/dnsplane/apis/v1alpha1"
	"github.com/dnsplane/dnsplane/pkg/dnswire"
)

// External-dns's DNSEndpoint kind, read by --source=crd.
const (
	ExternalDNSGroup   = "externaldns.k8s.io"
	ExternalDNSVersion = "v1alpha1"
	ExternalDNSKind    = "DNSEndpoint"
)

// recordTypes returns the types a dnsplane Endpoint admits (its recordType enum).
func recordTypes() []string {
	return []string{"A", "AAAA", "CNAME", "TXT", "NS", "MX", "SRV", "CAA", "PTR", "DS"}
}

// ExternalDNSEndpoints returns the endpoints of an external-dns DNSEndpoint (its spec.endpoints
// have dnsplane's Endpoint field names): each endpoint whose dnsName is a DNS name, whose
// recordType dnsplane publishes and whose A or AAAA targets are of that family; the others are
// left out and reported.
func ExternalDNSEndpoints(obj *unstructured.Unstructured, domains DomainFilter) ([]dnsv1.Endpoint, []Problem) {
	raw, _, _ := unstructured.NestedSlice(obj.Object, "spec", "endpoints")
	b, err := json.Marshal(raw)
	var eps []dnsv1.Endpoint
	if err == nil {
		err = json.Unmarshal(b, &eps)
	}
	if err != nil {
		return nil, []Problem{problem(dnsv1.ReasonInvalidAnnotation, "spec.endpoints: %v; nothing is published", err)}
	}
	var out []dnsv1.Endpoint
	var probs []Problem
	for i, e := range eps {
		if err := validExternalEndpoint(e); err != nil {
			probs = append(probs, Problem{Reason: err.reason, Message: fmt.Sprintf("spec.endpoints[%d] (%s %s): %s; not published", i, e.DNSName, e.RecordType, err.msg)})
			continue
		}
		e.DNSName = dnswire.Dotless(e.DNSName)
		out = append(out, e)
	}
	out = domains.Filter(out)
	if len(out) > dnsv1.MaxEndpoints {
		probs = append(probs, problem(dnsv1.ReasonInvalidTarget, "%d endpoints, more than a DNSEndpoint holds (%d); the first %d are published", len(out), dnsv1.MaxEndpoints, dnsv1.MaxEndpoints))
		out = out[:dnsv1.MaxEndpoints]
	}
	return out, probs
}

type endpointError struct{ reason, msg string }

func validExternalEndpoint(e dnsv1.Endpoint) *endpointError {
	if err := ValidateHostname(e.DNSName); err != nil {
		return &endpointError{dnsv1.ReasonInvalidHostname, "dnsName: " + err.Error()}
	}
	if !slices.Contains(recordTypes(), e.RecordType) {
		return &endpointError{dnsv1.ReasonInvalidTarget, fmt.Sprintf("recordType %q is not one of %v", e.RecordType, recordTypes())}
	}
	if e.RecordTTL < 0 || e.RecordTTL > 2147483647 {
		return &endpointError{dnsv1.ReasonInvalidTTL, "recordTTL out of range: from 0 to 2147483647 seconds (RFC 2181 §8)"}
	}
	if len(e.Targets) > dnsv1.MaxTargets {
		return &endpointError{dnsv1.ReasonInvalidTarget, fmt.Sprintf("%d targets, more than %d", len(e.Targets), dnsv1.MaxTargets)}
	}
	for _, t := range e.Targets {
		a, err := netip.ParseAddr(t)
		switch {
		case e.RecordType == "A" && (err != nil || !a.Is4()):
			return &endpointError{dnsv1.ReasonInvalidTarget, fmt.Sprintf("target %q of an A record is not an IPv4 address", t)}
		case e.RecordType == "AAAA" && (err != nil || !a.Is6() || a.Is4In6()):
			return &endpointError{dnsv1.ReasonInvalidTarget, fmt.Sprintf("target %q of an AAAA record is not an IPv6 address", t)}
		}
	}
	if e.RecordType == "CNAME" && len(e.Targets) != 1 {
		return &endpointError{dnsv1.ReasonInvalidTarget, "a CNAME record has exactly one target (RFC 1034 §3.6.2)"}
	}
	return nil
}
