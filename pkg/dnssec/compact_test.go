package dnssec

import (
	"bytes"
	"strings"
	"testing"

	"github.com/miekg/dns"
)

// TestSuccessor: the successor of a name follows it in canonical order, and is "\000.<name>"
// when that fits; a name of 255 octets gets its first label's last octet raised (or, at 0xff,
// its parent's successor).
func TestSuccessor(t *testing.T) {
	if got := Successor("www.example.test."); got != `\000.www.example.test.` {
		t.Fatalf("Successor(www.example.test.) = %q", got)
	}
	label := strings.Repeat("a", 63)
	long := label + "." + label + "." + label + "." + strings.Repeat("b", 61) + "." // 255 octets
	full := strings.Repeat("c", 62) + `\255` + "." + label + "." + label + "." + strings.Repeat("b", 61) + "."
	for _, name := range []string{"www.example.test.", "a.b.", long, full} {
		next := Successor(name)
		if bytes.Compare(CanonicalKey(name), CanonicalKey(next)) >= 0 {
			t.Fatalf("Successor(%q) = %q does not follow it", name, next)
		}
		if _, ok := dns.IsDomainName(next); !ok {
			t.Fatalf("Successor(%q) = %q is no name", name, next)
		}
	}
}

// TestCompact_Records: the NXDOMAIN NSEC lists RRSIG NSEC NXNAME, the NODATA one the name's
// types plus RRSIG and NSEC (and DNSKEY at the apex), each at the name with its successor next.
func TestCompact_Records(t *testing.T) {
	for _, c := range []struct {
		rr   *dns.NSEC
		want string
	}{
		{CompactNXDomain("x.example.test.", 60), "x.example.test.\t60\tIN\tNSEC\t\\000.x.example.test. RRSIG NSEC NXNAME"},
		{CompactNoData("example.test.", "www.example.test.", []uint16{dns.TypeAAAA, dns.TypeA}, 60), "www.example.test.\t60\tIN\tNSEC\t\\000.www.example.test. A AAAA RRSIG NSEC"},
		{CompactNoData("example.test.", "example.test.", []uint16{dns.TypeSOA, dns.TypeNS}, 60), "example.test.\t60\tIN\tNSEC\t\\000.example.test. NS SOA RRSIG NSEC DNSKEY"},
		{CompactNoData("example.test.", "ent.example.test.", nil, 60), "ent.example.test.\t60\tIN\tNSEC\t\\000.ent.example.test. RRSIG NSEC"},
	} {
		if got := c.rr.String(); got != c.want {
			t.Fatalf("got %q, want %q", got, c.want)
		}
	}
}
