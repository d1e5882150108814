package dynupdate

import (
	"testing"

	"github.com/miekg/dns"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	dnsv1 "github.com/dnsplane/dnsplane/apis/v1alpha1"
	"github.com/dnsplane/dnsplane/pkg/dynupdate"
)

// TestVerdict pins how a written DNSEndpoint's Ready condition becomes the UPDATE's answer.
func TestVerdict(t *testing.T) {
	ready := func(gen int64, status metav1.ConditionStatus, reason string) *dnsv1.DNSEndpoint {
		return &dnsv1.DNSEndpoint{Status: dnsv1.DNSEndpointStatus{Conditions: []metav1.Condition{
			{Type: dnsv1.ConditionReady, Status: status, Reason: reason, ObservedGeneration: gen}}}}
	}
	cases := []struct {
		name  string
		ep    *dnsv1.DNSEndpoint
		done  bool
		rcode int
	}{
		{"no condition yet", &dnsv1.DNSEndpoint{}, false, 0},
		{"Ready of an older generation", ready(1, metav1.ConditionTrue, dnsv1.ReasonPublished), false, 0},
		{"published", ready(2, metav1.ConditionTrue, dnsv1.ReasonPublished), true, dns.RcodeSuccess},
		{"published, a later generation", ready(3, metav1.ConditionTrue, dnsv1.ReasonPublished), true, dns.RcodeSuccess},
		{"another owner holds the name", ready(2, metav1.ConditionFalse, dnsv1.ReasonOwnershipConflict), true, dns.RcodeRefused},
		{"double claim", ready(2, metav1.ConditionFalse, dnsv1.ReasonDoubleClaim), true, dns.RcodeRefused},
		{"the provider cannot hold it", ready(2, metav1.ConditionFalse, dnsv1.ReasonNotCapable), true, dns.RcodeRefused},
		{"an endpoint the controller rejects", ready(2, metav1.ConditionFalse, dnsv1.ReasonInvalidEndpoint), true, dns.RcodeServerFailure},
		{"a provider error is retried", ready(2, metav1.ConditionFalse, dnsv1.ReasonProviderError), false, 0},
		{"a zone not available yet", ready(2, metav1.ConditionFalse, dnsv1.ReasonAwaitingZone), false, 0},
	}
	for _, tc := range cases {
		done, rcode, _ := verdict(tc.ep, 2)
		if done != tc.done || (done && rcode != tc.rcode) {
			t.Errorf("%s: done %v rcode %s, want %v %s", tc.name, done, dns.RcodeToString[rcode], tc.done, dns.RcodeToString[tc.rcode])
		}
	}
}

// TestPolicyDefaults: a binding read before the API's defaults existed gets them.
func TestPolicyDefaults(t *testing.T) {
	p := policy(dnsv1.DynamicUpdate{})
	if len(p.Names) != 1 || p.Names[0] != "_acme-challenge.*" || len(p.Types) != 1 || p.Types[0] != dns.TypeTXT {
		t.Fatalf("defaults %+v", p)
	}
	p = policy(dnsv1.DynamicUpdate{Names: []string{"@"}, Types: []dnsv1.DynamicUpdateType{"A", "CAA"}})
	if len(p.Names) != 1 || p.Names[0] != "@" || len(p.Types) != 2 || p.Types[0] != dns.TypeA || p.Types[1] != dns.TypeCAA {
		t.Fatalf("explicit %+v", p)
	}
}

// TestNames: the DNSEndpoint name is a valid object name whatever the owner name's length, and
// differs per key, zone and name; long label values become hashes.
func TestNames(t *testing.T) {
	long := ""
	for range 4 {
		long += "abcdefghijklmnopqrstuvwxyzabcdefghijklmnopqrstuvwxyzabcdefghi."
	}
	seen := map[string]bool{}
	for _, zone := range []string{"a", "b"} {
		for _, secret := range []string{"k1", "k2"} {
			for _, name := range []string{"_acme-challenge.x.test.", long} {
				n := endpointName(bindingOf(zone, secret), name)
				if len(n) > 63 || seen[n] {
					t.Fatalf("name %q (len %d, seen %v)", n, len(n), seen[n])
				}
				seen[n] = true
			}
		}
	}
	if v := labelValue(long); len(v) > 63 || v == long {
		t.Fatalf("label value of a long name: %q", v)
	}
	if v := labelValue("zone"); v != "zone" {
		t.Fatalf("label value of a short name: %q", v)
	}
}

func bindingOf(zone, secret string) (b dynupdate.Binding) {
	b.DNSZone.Name, b.Secret = zone, secret
	return b
}

// TestRelayed: only an UPDATE with the relay option is a relayed one, whatever other options
// its OPT holds.
func TestRelayed(t *testing.T) {
	m := new(dns.Msg)
	m.SetUpdate("gslb.test.")
	if relayed(m) {
		t.Fatal("an UPDATE without OPT is relayed")
	}
	m.SetEdns0(1232, false)
	opt := m.IsEdns0()
	opt.Option = append(opt.Option, &dns.EDNS0_COOKIE{Code: dns.EDNS0COOKIE, Cookie: "0123456789abcdef"})
	if relayed(m) {
		t.Fatal("an UPDATE with another option is relayed")
	}
	opt.Option = append(opt.Option, &dns.EDNS0_LOCAL{Code: RelayOption, Data: []byte("dnsplane")})
	if !relayed(m) {
		t.Fatal("an UPDATE with the relay option is not relayed")
	}
}
