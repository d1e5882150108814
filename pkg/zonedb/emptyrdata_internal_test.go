package zonedb

import (
	"strings"
	"testing"

	"github.com/miekg/dns"
)

// TestEmptyRdata: a record with nothing after its type is refused on load, for the types checked
// by field and for the others (by text); records with data, an empty TXT string included, are not.
func TestEmptyRdata(t *testing.T) {
	for _, tc := range []struct {
		text  string
		empty bool
	}{
		{"www.example.test. 300 IN A", true},
		{"www.example.test. 300 IN AAAA", true},
		{"www.example.test. 300 IN CNAME", true},
		{"www.example.test. 300 IN TXT", true},
		{"www.example.test. 300 IN CAA", true},
		{"www.example.test. 300 IN A 192.0.2.1", false},
		{"www.example.test. 300 IN AAAA 2001:db8::1", false},
		{"www.example.test. 300 IN TXT \"\"", false},
		{"www.example.test. 300 IN CAA 0 issue \"ca.example.net\"", false},
		{"www.example.test. 300 IN MX 10 mail.example.test.", false},
	} {
		zp := dns.NewZoneParser(strings.NewReader(tc.text+"\n"), "example.test.", "")
		rr, ok := zp.Next()
		if !ok {
			t.Fatalf("%q does not parse: %v", tc.text, zp.Err())
		}
		if got := emptyRdata(rr); got != tc.empty {
			t.Errorf("emptyRdata(%q) = %v, want %v", tc.text, got, tc.empty)
		}
	}
}
