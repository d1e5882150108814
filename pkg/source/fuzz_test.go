package source

import (
	"math"
	"net/netip"
	"slices"
	"strings"
	"testing"

	dnsv1 "github.com/dnsplane/dnsplane/apis/v1alpha1"
	"github.com/dnsplane/dnsplane/pkg/provider"
)

// FuzzParseAnnotations pins ParseAnnotations and TargetAnnotation against any annotation values
// (anyone who may edit a Service or an Ingress writes them): they never panic, and what they
// return is what Annotations documents, so that the controllers can publish it without checking
// again:
//   - every hostname is a name the providers accept as it is (provider.ValidateName gives it back
//     unchanged: lower case, no trailing dot, at most 253 characters);
//   - every target is a canonical IP address (not IPv4-mapped, no zone) or such a host name,
//     never a wildcard, and each comma-separated item is either a target or a problem;
//   - the TTL is 0 or 1..2^31-1 (0 when invalid), the weight 0..255, the enums one of their
//     words;
//   - every problem has one of the four documented reasons and a message naming the annotation;
//   - a dnsplane.io/ or external-dns.kubernetes.io/ hostname wins over the alpha prefix's.
//
// prefixes picks, two bits per key, which prefix each value is written under; shadow is a value
// written under external-dns' alpha prefix for the hostname key, which loses to the others.
func FuzzParseAnnotations(f *testing.F) {
	f.Add("a.example.com, B.example.com.", "in.example.com", "60", "192.0.2.1,2001:db8::1,lb.example.com", "10", "Private", "annotation-only", "HostIP", "eu", uint16(0), "")
	f.Add("*.example.com", "", "5m", "::ffff:192.0.2.1,fe80::1%eth0,300.1.2.3,*.x.test", "256", "nope", "x", "NodeExternalIP", "", uint16(0x5555), "shadow.example.com")
	f.Add("bad_name-.example.com,,", "-a.test", "0", " , ", "-1", "public", "defined-hosts-only", "hostip", "", uint16(0xaaaa), "a.test")
	f.Add(strings.Repeat("a.", 126)+"a", "", "99999999999", "a..b", "x", "", "", "", "", uint16(0xffff), "")
	// A wildcard whose name below "*." is 253 characters: 255 in all, over RFC 1035's limit.
	f.Add("*."+strings.Repeat("a.", 126)+"a", "*."+strings.Repeat("b.", 125)+"bc.", "", "", "", "", "", "", "", uint16(0), "")
	f.Fuzz(func(t *testing.T, hostname, internal, ttl, target, weight, access, source, endpointsType, setID string, prefixes uint16, shadow string) {
		prefixOf := func(i int) string {
			return []string{DNSPlanePrefix, ExternalDNSV022Prefix, ExternalDNSPrefix, ""}[prefixes>>(2*i)&3]
		}
		ann := map[string]string{}
		for i, kv := range [][2]string{{KeyHostname, hostname}, {KeyInternalHostname, internal}, {KeyTTL, ttl}, {KeyTarget, target},
			{KeyAWSWeight, weight}, {KeyAccess, access}, {KeyHostnameSource, source}, {KeyEndpointsType, endpointsType}} {
			if p := prefixOf(i); p != "" {
				ann[p+kv[0]] = kv[1]
			}
		}
		ann[DNSPlanePrefix+KeySetIdentifier] = setID
		if shadow != "" {
			ann[ExternalDNSPrefix+KeyHostname] = shadow
		}
		a, probs := ParseAnnotations(ann, KeyHostnameSource)
		for _, h := range append(slices.Clone(a.Hostnames), a.InternalHostnames...) {
			if n, err := provider.ValidateName(h); err != nil || n != h {
				t.Errorf("hostname %q kept, but the providers take it as %q, %v", h, n, err)
			}
		}
		if p := prefixOf(0); p == DNSPlanePrefix || p == ExternalDNSV022Prefix {
			alone, _ := ParseAnnotations(map[string]string{p + KeyHostname: hostname}, KeyHostnameSource)
			if !slices.Equal(a.Hostnames, alone.Hostnames) {
				t.Errorf("with %s%s %q and the alpha prefix's %q: hostnames %v, want %v", p, KeyHostname, hostname, shadow, a.Hostnames, alone.Hostnames)
			}
		}
		targets, tprobs := TargetAnnotation(ann)
		if !slices.Equal(targets, a.Targets) {
			t.Errorf("TargetAnnotation gives %v, ParseAnnotations %v", targets, a.Targets)
		}
		if v, _, ok := annotation(ann, KeyTarget); ok && len(targets)+len(tprobs) != len(SplitList(v)) {
			t.Errorf("target %q: %d targets and %d problems for %d items", v, len(targets), len(tprobs), len(SplitList(v)))
		}
		for _, tg := range a.Targets {
			if addr, err := netip.ParseAddr(tg); err == nil {
				if addr.String() != tg || addr.Is4In6() || addr.Zone() != "" {
					t.Errorf("target address %q is not canonical", tg)
				}
				continue
			}
			if n, err := provider.ValidateName(tg); err != nil || n != tg || strings.HasPrefix(tg, "*") {
				t.Errorf("target host %q kept, but the providers take it as %q, %v", tg, n, err)
			}
		}
		switch {
		case a.TTLInvalid && a.TTL != 0, a.TTL < 0, a.TTL > math.MaxInt32:
			t.Errorf("TTL %d (invalid %v) from %q", a.TTL, a.TTLInvalid, ttl)
		case a.Weight != nil && (*a.Weight < 0 || *a.Weight > 255):
			t.Errorf("weight %d from %q", *a.Weight, weight)
		case !slices.Contains([]string{"", AccessPublic, AccessPrivate}, a.Access),
			!slices.Contains([]string{"", HostnameSourceAnnotationOnly, HostnameSourceDefinedHostsOnly}, a.HostnameSource),
			!slices.Contains([]string{"", EndpointsTypeNodeExternalIP, EndpointsTypeHostIP}, a.EndpointsType):
			t.Errorf("enum outside its words: %+v", a)
		}
		reasons := []string{dnsv1.ReasonInvalidTTL, dnsv1.ReasonInvalidHostname, dnsv1.ReasonInvalidTarget, dnsv1.ReasonInvalidAnnotation}
		for _, p := range append(probs, tprobs...) {
			if !slices.Contains(reasons, p.Reason) || !strings.Contains(p.Message, "/") {
				t.Errorf("problem %+v: an undocumented reason, or a message that names no annotation", p)
			}
		}
	})
}
