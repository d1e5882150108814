package webhook

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/dnsplane/dnsplane/pkg/dnswire"
	"github.com/dnsplane/dnsplane/pkg/provider"
)

// Endpoint is one external-dns endpoint as the webhook protocol carries it (external-dns
// endpoint.Endpoint's JSON): one record set.
type Endpoint struct {
	DNSName    string   `json:"dnsName,omitempty"`
	Targets    []string `json:"targets,omitempty"`
	RecordType string   `json:"recordType,omitempty"`
	// SetIdentifier distinguishes sets of one name and type (routing policies).
	SetIdentifier string `json:"setIdentifier,omitempty"`
	// RecordTTL is in seconds; 0 means "not set": the webhook's default.
	RecordTTL int64 `json:"recordTTL,omitempty"`
	// Labels are external-dns's registry labels; dnsplane writes none and reads none.
	Labels map[string]string `json:"labels,omitempty"`
	// ProviderSpecific are the webhook's own options.
	ProviderSpecific []Property `json:"providerSpecific,omitempty"`
}

// Property is one provider-specific option (external-dns endpoint.ProviderSpecificProperty).
type Property struct {
	Name  string `json:"name,omitempty"`
	Value string `json:"value,omitempty"`
}

// Changes is the body of POST /records (external-dns plan.Changes): UpdateOld[i] is the current
// set UpdateNew[i] replaces.
type Changes struct {
	Create    []Endpoint `json:"create,omitempty"`
	UpdateOld []Endpoint `json:"updateOld,omitempty"`
	UpdateNew []Endpoint `json:"updateNew,omitempty"`
	Delete    []Endpoint `json:"delete,omitempty"`
}

// ToEndpoint spells a canonical record set as an endpoint: the name as is (no trailing dot),
// TXT and SPF values as quoted character-strings of at most 255 bytes each, '"' and '\' escaped
// and bytes outside printable ASCII as \DDD (RFC 1035 §5.1; external-dns's own TXT registry
// writes its values quoted), SRV targets with their host absolute (a trailing dot, which
// external-dns requires of SRV), other targets in canonical presentation form with names
// without trailing dot (as external-dns's endpoint.NewEndpoint trims them), provider-specific
// options sorted by name.
func ToEndpoint(rs provider.RecordSet) Endpoint {
	ep := Endpoint{DNSName: rs.Name, RecordType: rs.Type, SetIdentifier: rs.SetIdentifier, RecordTTL: rs.TTL}
	for _, t := range rs.Targets {
		ep.Targets = append(ep.Targets, encodeTarget(rs.Type, t))
	}
	for _, k := range slices.Sorted(maps.Keys(rs.ProviderSpecific)) {
		ep.ProviderSpecific = append(ep.ProviderSpecific, Property{Name: k, Value: rs.ProviderSpecific[k]})
	}
	return ep
}

// FromEndpoint reads an endpoint as a canonical record set: the name canonical, the type upper
// case, TXT and SPF values that start with a quote read as character-strings (others taken as
// the value itself), other targets canonical where they parse (as given, trimmed, where they do
// not: a type this build does not know), provider-specific options as a map (the last of a
// repeated name wins; nil when none). ok is false for an endpoint without name, type or target,
// which is no record set.
func FromEndpoint(ep Endpoint) (provider.RecordSet, bool) {
	rs := provider.RecordSet{
		Name:          dnswire.Dotless(ep.DNSName),
		Type:          strings.ToUpper(strings.TrimSpace(ep.RecordType)),
		TTL:           ep.RecordTTL,
		SetIdentifier: ep.SetIdentifier,
	}
	for _, t := range ep.Targets {
		rs.Targets = append(rs.Targets, decodeTarget(rs.Type, t))
	}
	for _, p := range ep.ProviderSpecific {
		if rs.ProviderSpecific == nil {
			rs.ProviderSpecific = map[string]string{}
		}
		rs.ProviderSpecific[p.Name] = p.Value
	}
	return rs, rs.Name != "" && rs.Type != "" && len(rs.Targets) > 0
}

func encodeTarget(rtype, target string) string {
	switch strings.ToUpper(rtype) {
	case "TXT", "SPF":
		return provider.PresentationValue("TXT", target, provider.EscapeTXT)
	case "SRV":
		// external-dns keeps an SRV target's trailing dot and refuses one without it
		// (endpoint.NewEndpointWithTTL, endpoint.NewSRVRecord).
		return provider.PresentationValue("SRV", target, nil)
	}
	return target
}

func decodeTarget(rtype, target string) string {
	switch rtype {
	case "TXT", "SPF":
		if strings.HasPrefix(strings.TrimSpace(target), `"`) {
			return provider.ParseQuotedTXT(strings.TrimSpace(target), 10)
		}
		return target
	}
	if c, err := provider.CanonicalTarget(rtype, target); err == nil {
		return c
	}
	return strings.TrimSpace(target)
}

// endpointList is a JSON list of endpoints as a webhook answers it (GET /records, POST
// /adjustendpoints), decoded one endpoint at a time and keeping only record sets (FromEndpoint's
// ok: a name, a type and a target): an answer of empty endpoints ("[{},{},...]", 3 bytes each)
// costs no Endpoint struct each, so memory stays a small multiple of MaxBody.
type endpointList []Endpoint

// UnmarshalJSON implements json.Unmarshaler; null is the empty list.
func (l *endpointList) UnmarshalJSON(data []byte) error {
	*l = nil
	if bytes.Equal(bytes.TrimSpace(data), []byte("null")) {
		return nil
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('[') {
		return fmt.Errorf("endpoints: want a JSON list")
	}
	for dec.More() {
		var ep Endpoint
		if err := dec.Decode(&ep); err != nil {
			return fmt.Errorf("endpoints: %w", err)
		}
		if strings.TrimSpace(ep.DNSName) != "" && strings.TrimSpace(ep.RecordType) != "" && len(ep.Targets) > 0 {
			*l = append(*l, ep)
		}
	}
	_, err := dec.Token() // ']'
	return err
}
