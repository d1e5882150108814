package registry

import (
	"errors"
	"testing"
)

// FuzzParse pins that Parse never panics, that every error is ErrForeign or
// ErrMalformed, and that whatever it accepts re-encodes to a value it parses
// to the same entry (so a registry record we rewrite keeps its meaning).
func FuzzParse(f *testing.F) {
	for _, seed := range []string{
		"",
		sampleEntry().Encode(),
		"heritage=dnsplane&v=1&owner=c1&resource=DNSRecord/a/b&name=*.example.test&type=TXT&set=eu&ttl=0&target=a%26b&target=%22q%22&heartbeat=1700000000",
		"heritage=dnsplane&v=2",
		"heritage=dnsplane&v=1&owner=c1&resource=a/b/c&name=x.test&type=A&ttl=1;x",
		"heritage=dnsplane&v=1&owner=%zz",
		"heritage=external-dns,external-dns/owner=default,external-dns/resource=ingress/default/app",
		`"heritage=external-dns,external-dns/owner=default"`,
		"v=spf1 -all",
		"heritage=dnsplane&v=1&owner=c1&resource=a/b/c&name=x.test&type=A&ttl=99999999999999999999",
		"heritage=dnsplane&v=1&owner=c1&resource=a/b/c&name=x.test&type=A&ttl=1&heartbeat=253402300800",
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, value string) {
		e, err := Parse(value)
		if err != nil {
			if !errors.Is(err, ErrForeign) && !errors.Is(err, ErrMalformed) {
				t.Fatalf("Parse(%q) error %v is neither ErrForeign nor ErrMalformed", value, err)
			}
			return
		}
		again, err := Parse(e.Encode())
		if err != nil {
			t.Fatalf("Parse(%q) accepted, but its re-encoding %q fails: %v", value, e.Encode(), err)
		}
		if !again.Equal(e) || again.Encode() != e.Encode() {
			t.Fatalf("round trip changed the entry: %+v -> %+v", e, again)
		}
	})
}
