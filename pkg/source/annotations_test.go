package source

import (
	"reflect"
	"slices"
	"strings"
	"testing"

	dnsv1 "github.com/dnsplane/dnsplane/apis/v1alpha1"
)

func reasons(probs []Problem) []string {
	var out []string
	for _, p := range probs {
		out = append(out, p.Reason)
	}
	return out
}

func TestParseAnnotations(t *testing.T) {
	ed, dp := ExternalDNSPrefix, DNSPlanePrefix
	ed022 := "external-dns.kubernetes.io/"
	w := int64(10)
	for _, tc := range []struct {
		name    string
		ann     map[string]string
		want    Annotations
		reasons []string
	}{
		{name: "none", ann: nil, want: Annotations{}},
		{name: "external-dns keys", ann: map[string]string{ed + "hostname": "a.example.com, B.example.com.", ed + "ttl": "60", ed + "target": "192.0.2.1,2001:db8::1",
			ed + "set-identifier": "eu", ed + "aws-weight": "10", ed + "internal-hostname": "in.example.com", ed + "access": "private", ed + "controller": "dns-controller", ed + "ingress-hostname-source": "annotation-only"},
			want: Annotations{Hostnames: []string{"a.example.com", "b.example.com"}, InternalHostnames: []string{"in.example.com"}, TTL: 60, Targets: []string{"192.0.2.1", "2001:db8::1"},
				SetIdentifier: "eu", Weight: &w, Access: AccessPrivate, Controller: "dns-controller", HostnameSource: HostnameSourceAnnotationOnly}},
		{name: "dnsplane.io wins", ann: map[string]string{ed + "hostname": "a.example.com", dp + "hostname": "b.example.com", dp + "ttl": "5m"},
			want: Annotations{Hostnames: []string{"b.example.com"}, TTL: 300}},
		{name: "external-dns v0.22 prefix", ann: map[string]string{ed022 + "hostname": "a.example.com", ed022 + "ttl": "60", ed022 + "target": "192.0.2.1"},
			want: Annotations{Hostnames: []string{"a.example.com"}, TTL: 60, Targets: []string{"192.0.2.1"}}},
		{name: "v0.22 prefix wins over alpha", ann: map[string]string{ed + "hostname": "a.example.com", ed022 + "hostname": "b.example.com", ed + "ttl": "60"},
			want: Annotations{Hostnames: []string{"b.example.com"}, TTL: 60}},
		{name: "dnsplane.io wins over v0.22 prefix", ann: map[string]string{ed022 + "hostname": "a.example.com", dp + "hostname": "b.example.com"},
			want: Annotations{Hostnames: []string{"b.example.com"}}},
		{name: "ttl not a number", ann: map[string]string{ed + "ttl": "soon"}, want: Annotations{TTLInvalid: true}, reasons: []string{dnsv1.ReasonInvalidTTL}},
		{name: "ttl zero", ann: map[string]string{ed + "ttl": "0"}, want: Annotations{TTLInvalid: true}, reasons: []string{dnsv1.ReasonInvalidTTL}},
		{name: "ttl too big", ann: map[string]string{ed + "ttl": "2147483648"}, want: Annotations{TTLInvalid: true}, reasons: []string{dnsv1.ReasonInvalidTTL}},
		{name: "hostname not a DNS name", ann: map[string]string{ed + "hostname": "ok.example.com,bad name.example.com,-x.example.com"},
			want: Annotations{Hostnames: []string{"ok.example.com"}}, reasons: []string{dnsv1.ReasonInvalidHostname, dnsv1.ReasonInvalidHostname}},
		{name: "wildcard hostname", ann: map[string]string{ed + "hostname": "*.example.com"}, want: Annotations{Hostnames: []string{"*.example.com"}}},
		{name: "target of the wrong family", ann: map[string]string{ed + "target": "::ffff:192.0.2.1,192.0.2.2"},
			want: Annotations{Targets: []string{"192.0.2.2"}}, reasons: []string{dnsv1.ReasonInvalidTarget}},
		{name: "broken targets", ann: map[string]string{ed + "target": "300.1.2.3,fe80::1%eth0,lb.example.com,not a name"},
			want: Annotations{Targets: []string{"lb.example.com"}}, reasons: []string{dnsv1.ReasonInvalidTarget, dnsv1.ReasonInvalidTarget, dnsv1.ReasonInvalidTarget}},
		{name: "bad enums and weight", ann: map[string]string{ed + "access": "world", ed + "ingress-hostname-source": "both", ed + "aws-weight": "heavy"},
			want: Annotations{}, reasons: []string{dnsv1.ReasonInvalidAnnotation, dnsv1.ReasonInvalidAnnotation, dnsv1.ReasonInvalidAnnotation}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, probs := ParseAnnotations(tc.ann, KeyHostnameSource)
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
			if r := reasons(probs); !sameSet(r, tc.reasons) {
				t.Errorf("problems %v, want reasons %v", probs, tc.reasons)
			}
		})
	}
}

// TestParseAnnotations_AccessAsWritten: access is compared as written, as external-dns reads it
// (source.go getAccessFromAnnotations, then "public" and "private" in extractNodePortTargets):
// only public and private choose; any other value, another case included, is ignored with one
// InvalidAnnotation problem naming the annotation and the value.
func TestParseAnnotations_AccessAsWritten(t *testing.T) {
	for _, v := range []string{"public", "private", "Private", "PUBLIC", "Public", "pRivate", "everyone", "internal", "publics"} {
		for _, prefix := range []string{ExternalDNSPrefix, ExternalDNSV022Prefix, DNSPlanePrefix} {
			key := prefix + KeyAccess
			a, probs := ParseAnnotations(map[string]string{key: v}, KeyHostnameSource)
			if v == AccessPublic || v == AccessPrivate {
				if a.Access != v || len(probs) != 0 {
					t.Errorf("%s=%q: Access %q, problems %v; want %q and none", key, v, a.Access, probs, v)
				}
				continue
			}
			if a.Access != "" || len(probs) != 1 || probs[0].Reason != dnsv1.ReasonInvalidAnnotation ||
				!strings.Contains(probs[0].Message, key) || !strings.Contains(probs[0].Message, `"`+v+`"`) {
				t.Errorf("%s=%q: Access %q, problems %v; want it ignored with one InvalidAnnotation naming %s and %q", key, v, a.Access, probs, key, v)
			}
		}
	}
}

func sameSet(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	count := map[string]int{}
	for _, x := range a {
		count[x]++
	}
	for _, x := range b {
		count[x]--
	}
	for _, n := range count {
		if n != 0 {
			return false
		}
	}
	return true
}

func TestAnnotationsOurs(t *testing.T) {
	for v, want := range map[string]bool{"": true, "dns-controller": true, "dnsplane": true, "other": false} {
		if got := (Annotations{Controller: v}).Ours(); got != want {
			t.Errorf("controller %q: Ours %v, want %v", v, got, want)
		}
	}
}

func TestDomainFilter(t *testing.T) {
	f := DomainFilter{Include: []string{"example.com", ".example.org"}, Exclude: []string{"internal.example.com"}}
	for name, want := range map[string]bool{
		"example.com": true, "a.example.com": true, "A.Example.COM.": true, "*.b.example.com": true, "x.example.org": true,
		"internal.example.com": false, "a.internal.example.com": false, "badexample.com": false, "example.net": false,
	} {
		if got := f.Match(name); got != want {
			t.Errorf("%s: %v, want %v", name, got, want)
		}
	}
	if !(DomainFilter{}).Match("anything.test") {
		t.Error("an empty filter refuses a name")
	}
}

func TestForHost_CNAMEAlone(t *testing.T) {
	eps, probs := forHost("a.example.com", []string{"192.0.2.1", "lb.example.net"}, Annotations{}, "f")
	if len(eps) != 1 || eps[0].RecordType != "A" || len(probs) != 1 || probs[0].Reason != dnsv1.ReasonInvalidTarget {
		t.Errorf("got %+v, %v", eps, probs)
	}
	eps, probs = forHost("a.example.com", []string{"lb2.example.net", "lb1.example.net"}, Annotations{}, "f")
	if len(eps) != 1 || eps[0].RecordType != "CNAME" || eps[0].Targets[0] != "lb1.example.net" || len(probs) != 1 {
		t.Errorf("got %+v, %v", eps, probs)
	}
}

func TestKeepTTLs(t *testing.T) {
	desired := []dnsv1.Endpoint{{DNSName: "a.example.com", RecordType: "A"}, {DNSName: "b.example.com", RecordType: "A", RecordTTL: 30}}
	KeepTTLs(desired, []dnsv1.Endpoint{{DNSName: "a.example.com", RecordType: "A", RecordTTL: 120}, {DNSName: "b.example.com", RecordType: "A", RecordTTL: 60}})
	if desired[0].RecordTTL != 120 || desired[1].RecordTTL != 30 {
		t.Errorf("got %+v", desired)
	}
}

func TestConfigValidate(t *testing.T) {
	for _, tc := range []struct {
		name  string
		c     Config
		watch []string
		ok    bool
	}{
		{name: "zero", ok: true},
		{name: "all sources", c: Config{Sources: Names()}, ok: true},
		{name: "unknown source", c: Config{Sources: []string{"pod"}}},
		{name: "twice", c: Config{Sources: []string{"service", "service"}}},
		{name: "bad domain", c: Config{Domains: DomainFilter{Include: []string{"bad domain"}}}},
		{name: "bad selector", c: Config{AnnotationFilter: "a in (b"}},
		{name: "namespace inside watch", c: Config{Namespace: "a"}, watch: []string{"a", "b"}, ok: true},
		{name: "namespace outside watch", c: Config{Namespace: "c"}, watch: []string{"a", "b"}},
		{name: "bad namespace", c: Config{Namespace: "A_B"}},
		{name: "gateway namespace inside watch", c: Config{Namespace: "a", GatewayNamespace: "b"}, watch: []string{"a", "b"}, ok: true},
		{name: "gateway namespace outside watch", c: Config{GatewayNamespace: "c"}, watch: []string{"a", "b"}},
		{name: "bad gateway namespace", c: Config{GatewayNamespace: "A_B"}},
		{name: "managed record types", c: Config{ManagedRecordTypes: []string{"A", "AAAA", "CNAME", "SRV", "TXT", "NS", "DNAME", "NAPTR"}}, ok: true},
		{name: "managed record type in lower case", c: Config{ManagedRecordTypes: []string{"srv"}}},
		{name: "managed record type unknown", c: Config{ManagedRecordTypes: []string{"BOGUS"}}},
	} {
		if err := tc.c.Validate(tc.watch); (err == nil) != tc.ok {
			t.Errorf("%s: err %v, want ok %v", tc.name, err, tc.ok)
		}
	}
}

// TestConfigManagedOnly: the service, ingress and route sources publish only the types of
// --managed-record-types, external-dns's default (A, AAAA, CNAME) when unset, so a NodePort
// Service's SRV records only when SRV is listed (external-dns docs/sources/service.md); types
// are compared as written.
func TestConfigManagedOnly(t *testing.T) {
	var eps []dnsv1.Endpoint
	for _, typ := range []string{"A", "AAAA", "CNAME", "SRV", "TXT", "MX"} {
		eps = append(eps, dnsv1.Endpoint{DNSName: strings.ToLower(typ) + ".example.com", RecordType: typ})
	}
	for _, tc := range []struct {
		managed, want []string
	}{
		{managed: nil, want: []string{"A", "AAAA", "CNAME"}},
		{managed: []string{"A", "CNAME", "SRV"}, want: []string{"A", "CNAME", "SRV"}},
		{managed: []string{"SRV"}, want: []string{"SRV"}},
		{managed: []string{"srv", "a"}, want: nil},
	} {
		c := Config{ManagedRecordTypes: tc.managed}
		var got []string
		for _, e := range c.ManagedOnly(eps) {
			got = append(got, e.RecordType)
		}
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("--managed-record-types %v: kept %v, want %v", tc.managed, got, tc.want)
		}
		for _, e := range eps {
			if c.Manages(e.RecordType) != slices.Contains(tc.want, e.RecordType) {
				t.Errorf("--managed-record-types %v: Manages(%s) = %v", tc.managed, e.RecordType, !slices.Contains(tc.want, e.RecordType))
			}
		}
	}
}

// TestConfigGatewaySelected: a route's Gateway counts when it is in --gateway-namespace (any
// namespace when unset), whatever --namespace says, and in --watch-namespaces when those are
// set (the manager reads nothing else).
func TestConfigGatewaySelected(t *testing.T) {
	for _, tc := range []struct {
		c     Config
		watch []string
		ns    string
		want  bool
	}{
		{c: Config{}, ns: "infra", want: true},
		{c: Config{Namespace: "apps"}, ns: "infra", want: true},
		{c: Config{Namespace: "apps"}, ns: "apps", want: true},
		{c: Config{Namespace: "apps", GatewayNamespace: "infra"}, ns: "infra", want: true},
		{c: Config{Namespace: "apps", GatewayNamespace: "infra"}, ns: "apps", want: false},
		{c: Config{GatewayNamespace: "infra"}, ns: "other", want: false},
		{c: Config{Namespace: "apps"}, watch: []string{"apps", "infra"}, ns: "infra", want: true},
		{c: Config{Namespace: "apps"}, watch: []string{"apps", "infra"}, ns: "other", want: false},
	} {
		if got := tc.c.GatewaySelected(tc.ns, tc.watch); got != tc.want {
			t.Errorf("--namespace=%q --gateway-namespace=%q --watch-namespaces=%v: Gateway of %s selected %v, want %v",
				tc.c.Namespace, tc.c.GatewayNamespace, tc.watch, tc.ns, got, tc.want)
		}
	}
}

// TestValidateHostname_CountsTheWildcardInTheLength: the 253-character limit (RFC 1035 §2.3.4)
// is the whole name's, "*." included, as provider.ValidateName counts it; a wildcard over a
// 253-character name was kept here and then refused by every provider (found by
// FuzzParseAnnotations).
func TestValidateHostname_CountsTheWildcardInTheLength(t *testing.T) {
	name251 := strings.Repeat("a.", 125) + "a" // 251 characters
	for _, tc := range []struct {
		h  string
		ok bool
	}{
		{"*." + name251, true},        // 253
		{"*." + name251 + ".", true},  // 253 and the trailing dot
		{"*." + name251 + "b", false}, // 254
		{"*." + name251 + "bc.", false},
		{name251 + "bc", true}, // 253, no wildcard
		{name251 + "bcd", false},
	} {
		if err := ValidateHostname(tc.h); (err == nil) != tc.ok {
			t.Errorf("ValidateHostname(%d characters) = %v, want ok %v", len(tc.h), err, tc.ok)
		}
	}
}
