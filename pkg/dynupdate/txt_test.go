package dynupdate_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/miekg/dns"

	"github.com/dnsplane/dnsplane/pkg/dynupdate"
	"github.com/dnsplane/dnsplane/pkg/provider"
)

// TestTXT_ServedAsSent pins that a TXT an UPDATE adds is served with the character-strings it
// was sent with, byte for byte: the UPDATE goes through the wire, Parse reads its value, the
// value becomes a DNSEndpoint target (Endpoints), the provider turns the target into the record
// it serves (provider.ToRRs, what every provider writes), and that record goes through the
// wire again. Quotes, backslashes and bytes outside printable ASCII are served as sent, once;
// a value over 255 bytes sent as 255-byte character-strings keeps them. Character-strings
// split elsewhere have no DNSEndpoint form (a target is one value, split every 255 bytes):
// the UPDATE is FORMERR, never written joined.
func TestTXT_ServedAsSent(t *testing.T) {
	long := strings.Repeat("0123456789", 30)
	cases := []struct {
		name    string
		strings []string
		rcode   int
	}{
		{"an ACME token", []string{"LoqXcYV8q5ONbJQxbmR7SCTNo3tiAXDfowyjxAjEuX0"}, dns.RcodeSuccess},
		{"a quote", []string{`say "hi"`}, dns.RcodeSuccess},
		{"a backslash", []string{`back\slash`}, dns.RcodeSuccess},
		{"bytes outside printable ASCII", []string{"tab\there\x00\xff"}, dns.RcodeSuccess},
		{"an empty string", []string{""}, dns.RcodeSuccess},
		{"300 bytes as 255 + 45", []string{long[:255], long[255:]}, dns.RcodeSuccess},
		{"two short strings", []string{"ab", "cd"}, dns.RcodeFormatError},
		{"300 bytes as 100 + 200", []string{long[:100], long[100:]}, dns.RcodeFormatError},
	}
	for _, tc := range cases {
		sent := &dns.TXT{Hdr: dns.RR_Header{Name: "_acme-challenge." + zone, Rrtype: dns.TypeTXT, Class: dns.ClassINET, Ttl: 60},
			Txt: escaped(tc.strings)}
		u, rcode := dynupdate.Parse(msg(t, zone, func(m *dns.Msg) { m.Insert([]dns.RR{sent}) }))
		if rcode != tc.rcode {
			t.Errorf("%s: Parse: %s, want %s", tc.name, dns.RcodeToString[rcode], dns.RcodeToString[tc.rcode])
			continue
		}
		if rcode != dns.RcodeSuccess {
			continue
		}
		c := u.Changes[0]
		recs := dynupdate.Apply(dynupdate.Records{}, u.Changes)
		eps := dynupdate.Endpoints(c.Name, recs[c.Name])
		if got := dynupdate.FromEndpoints(eps); !slices.Equal(got[c.Name][dns.TypeTXT].Values, []string{c.Value}) {
			t.Errorf("%s: the DNSEndpoint reads back as %q, want %q", tc.name, got[c.Name][dns.TypeTXT].Values, c.Value)
		}
		rrs, err := provider.ToRRs(provider.RecordSet{Name: eps[0].DNSName, Type: eps[0].RecordType, TTL: int64(eps[0].RecordTTL), Targets: eps[0].Targets})
		if err != nil || len(rrs) != 1 {
			t.Fatalf("%s: the provider's records: %v, %v", tc.name, rrs, err)
		}
		if got := wireStrings(t, rrs[0]); !slices.Equal(got, tc.strings) {
			t.Errorf("%s: served %q, sent %q", tc.name, got, tc.strings)
		}
	}
}

// TestTXT_DeleteAndPrerequisiteMatchTheValueAsSent: a delete of one TXT value and a
// value-dependent prerequisite name the value as the add sent it, escapes and all.
func TestTXT_DeleteAndPrerequisiteMatchTheValueAsSent(t *testing.T) {
	v := &dns.TXT{Hdr: dns.RR_Header{Name: "_acme-challenge." + zone, Rrtype: dns.TypeTXT, Class: dns.ClassINET, Ttl: 60},
		Txt: escaped([]string{`a"b\c`})}
	add, _ := dynupdate.Parse(msg(t, zone, func(m *dns.Msg) { m.Insert([]dns.RR{v}) }))
	recs := dynupdate.Apply(dynupdate.Records{}, add.Changes)
	pre, _ := dynupdate.Parse(msg(t, zone, func(m *dns.Msg) { m.Used([]dns.RR{dns.Copy(v)}) }))
	if got := dynupdate.CheckPrereqs(pre.Prereqs, recs); got != dns.RcodeSuccess {
		t.Errorf("the RRset exists with the value as sent: %s", dns.RcodeToString[got])
	}
	del, _ := dynupdate.Parse(msg(t, zone, func(m *dns.Msg) { m.Remove([]dns.RR{dns.Copy(v)}) }))
	if got := dynupdate.Apply(recs, del.Changes); len(got) != 0 {
		t.Errorf("the value as sent deleted: %v left", got)
	}
}

// escaped returns raw character-strings in miekg/dns's escaped presentation form.
func escaped(raw []string) []string {
	out := make([]string, len(raw))
	for i, s := range raw {
		out[i] = provider.EscapeTXT(s)
	}
	return out
}

// wireStrings packs rr and returns the raw character-strings of its RDATA.
func wireStrings(t *testing.T, rr dns.RR) []string {
	t.Helper()
	buf := make([]byte, dns.Len(rr)+16)
	off, err := dns.PackRR(rr, buf, 0, nil, false)
	if err != nil {
		t.Fatalf("pack %v: %v", rr, err)
	}
	rdlen := int(rr.Header().Rdlength)
	rdata := buf[off-rdlen : off]
	var out []string
	for len(rdata) > 0 {
		n := int(rdata[0])
		out = append(out, string(rdata[1:1+n]))
		rdata = rdata[1+n:]
	}
	return out
}
