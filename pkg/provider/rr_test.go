package provider

import (
	"errors"
	"strings"
	"testing"

	"github.com/miekg/dns"

	"github.com/dnsplane/dnsplane/pkg/dnswire"
	"github.com/dnsplane/dnsplane/pkg/geo"
)

func TestCanonicalTarget_PresentationFormWithoutTrailingDots(t *testing.T) {
	for _, tc := range []struct {
		rtype, in, want string
	}{
		{"A", "192.0.2.1", "192.0.2.1"},
		{"AAAA", "2001:DB8:0::1", "2001:db8::1"},
		{"cname", "A.Example.Test.", "a.example.test"},
		{"CNAME", "a.example.test", "a.example.test"},
		{"NS", "ns1.example.test.", "ns1.example.test"},
		{"MX", "10 Mail.example.test.", "10 mail.example.test"},
		{"MX", "0 .", "0 ."},
		{"SRV", "0 5 5060 sip.example.test", "0 5 5060 sip.example.test"},
		{"CAA", `0 issue "letsencrypt.org"`, `0 issue "letsencrypt.org"`},
		{"CAA", `0 issue letsencrypt.org`, `0 issue "letsencrypt.org"`},
		{"PTR", "host.example.test.", "host.example.test"},
		{"TXT", `v=spf1 "quoted" -all`, `v=spf1 "quoted" -all`},
		{"SOA", "NS1.example.test. hostmaster.example.test. 7 3600 600 1209600 60", "ns1.example.test hostmaster.example.test 7 3600 600 1209600 60"},
		{"DS", "12345 13 1 0123456789abcdef0123456789abcdef01234567", "12345 13 1 0123456789ABCDEF0123456789ABCDEF01234567"},
		{"DS", "12345 13 250 0123456789abcdef", "12345 13 250 0123456789ABCDEF"}, // a digest type of no fixed length
	} {
		got, err := CanonicalTarget(tc.rtype, tc.in)
		if err != nil || got != tc.want {
			t.Errorf("CanonicalTarget(%s, %q) = %q, %v; want %q", tc.rtype, tc.in, got, err, tc.want)
		}
	}
}

func TestCanonicalTarget_RejectsMalformedRdata(t *testing.T) {
	for _, tc := range []struct{ rtype, in string }{
		{"A", "not-an-ip"},
		{"A", "2001:db8::1"},
		{"AAAA", "192.0.2.300"},
		{"MX", "mail.example.test"},
		{"SRV", "0 5 sip.example.test"},
		{"BOGUS", "x"},
	} {
		if _, err := CanonicalTarget(tc.rtype, tc.in); !errors.Is(err, ErrInvalidChange) {
			t.Errorf("CanonicalTarget(%s, %q) error = %v, want ErrInvalidChange", tc.rtype, tc.in, err)
		}
	}
}

func TestSplitTXT_ChunksAt255BytesAndJoinRestores(t *testing.T) {
	for _, tc := range []struct {
		name   string
		value  string
		chunks []int
	}{
		{"empty", "", []int{0}},
		{"short", "hello world", []int{11}},
		{"exactly255", strings.Repeat("a", 255), []int{255}},
		{"256", strings.Repeat("a", 256), []int{255, 1}},
		{"600", strings.Repeat("b", 600), []int{255, 255, 90}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := SplitTXT(tc.value)
			if len(got) != len(tc.chunks) {
				t.Fatalf("SplitTXT gave %d chunks, want %d", len(got), len(tc.chunks))
			}
			for i, c := range got {
				if len(c) != tc.chunks[i] {
					t.Errorf("chunk %d has %d bytes, want %d", i, len(c), tc.chunks[i])
				}
			}
			if JoinTXT(got) != tc.value {
				t.Errorf("JoinTXT(SplitTXT(v)) != v")
			}
		})
	}
}

// TestNewTXT_RoundTripsOverTheWire packs and unpacks TXT records, so that the
// escaping matches what miekg/dns expects.
func TestNewTXT_RoundTripsOverTheWire(t *testing.T) {
	for _, value := range []string{
		"plain",
		`with "quotes" and spaces`,
		`back\slash`,
		"ütf-8 ✓ and \x00\x7f control bytes",
		strings.Repeat(`x"y `, 200), // 800 bytes with quotes: 4 chunks
		"",
	} {
		rr := NewTXT(dns.RR_Header{Name: "t.example.test.", Rrtype: dns.TypeTXT, Class: dns.ClassINET, Ttl: 60}, value)
		buf := make([]byte, 4096)
		off, err := dns.PackRR(rr, buf, 0, nil, false)
		if err != nil {
			t.Fatalf("PackRR(%q): %v", value, err)
		}
		back, _, err := dns.UnpackRR(buf[:off], 0)
		if err != nil {
			t.Fatalf("UnpackRR(%q): %v", value, err)
		}
		txt := back.(*dns.TXT)
		for i, c := range txt.Txt {
			if n := len(unescapeTXT(c)); n > 255 {
				t.Errorf("chunk %d is %d bytes on the wire", i, n)
			}
		}
		if got := TargetFromRR(back); got != value {
			t.Errorf("wire round trip: got %q, want %q", got, value)
		}
		// And through the master-file form miekg writes.
		parsed, err := dns.NewRR(rr.String())
		if err != nil {
			t.Fatalf("NewRR(%q): %v", rr.String(), err)
		}
		if got := TargetFromRR(parsed); got != value {
			t.Errorf("presentation round trip: got %q, want %q", got, value)
		}
	}
}

func TestCanonicalRecordSet_Validates(t *testing.T) {
	w := int64(10)
	neg := int64(-1)
	for _, tc := range []struct {
		name  string
		in    RecordSet
		valid bool
	}{
		{"ok", RecordSet{Name: "WWW.example.test.", Type: "a", TTL: 60, Targets: []string{"192.0.2.1"}}, true},
		{"weighted", RecordSet{Name: "w.example.test", Type: "A", TTL: 60, Targets: []string{"192.0.2.1"}, SetIdentifier: "eu", Weight: &w}, true},
		{"weight without set identifier", RecordSet{Name: "w.example.test", Type: "A", TTL: 60, Targets: []string{"192.0.2.1"}, Weight: &w}, false},
		{"negative weight", RecordSet{Name: "w.example.test", Type: "A", TTL: 60, Targets: []string{"192.0.2.1"}, SetIdentifier: "eu", Weight: &neg}, false},
		{"negative ttl", RecordSet{Name: "a.example.test", Type: "A", TTL: -1, Targets: []string{"192.0.2.1"}}, false},
		{"ttl too large", RecordSet{Name: "a.example.test", Type: "A", TTL: MaxTTL + 1, Targets: []string{"192.0.2.1"}}, false},
		{"duplicate targets", RecordSet{Name: "a.example.test", Type: "A", TTL: 1, Targets: []string{"192.0.2.1", "192.0.2.1"}}, false},
		{"duplicate after canonicalisation", RecordSet{Name: "c.example.test", Type: "NS", TTL: 1, Targets: []string{"ns.example.test", "NS.example.test."}}, false},
		{"bad name", RecordSet{Name: "a..example.test", Type: "A", TTL: 1, Targets: []string{"192.0.2.1"}}, false},
		{"unknown type", RecordSet{Name: "a.example.test", Type: "XYZ", TTL: 1}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := CanonicalRecordSet(tc.in)
			if !tc.valid {
				if !errors.Is(err, ErrInvalidChange) {
					t.Fatalf("error = %v, want ErrInvalidChange", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got.Name != dnswire.Dotless(tc.in.Name) || got.Type != strings.ToUpper(tc.in.Type) {
				t.Errorf("got %v", got)
			}
		})
	}
}

func TestGroupRRs_GroupsByNameAndTypeInOrder(t *testing.T) {
	var rrs []dns.RR
	for _, s := range []string{
		"b.example.test. 300 IN A 192.0.2.2",
		"A.example.test. 300 IN A 192.0.2.1",
		"b.example.test. 60 IN A 192.0.2.3",
		"b.example.test. 60 IN TXT \"x\" \"y\"",
	} {
		rr, err := dns.NewRR(s)
		if err != nil {
			t.Fatal(err)
		}
		rrs = append(rrs, rr)
	}
	got := GroupRRs(rrs)
	want := []RecordSet{
		{Name: "b.example.test", Type: "A", TTL: 60, Targets: []string{"192.0.2.2", "192.0.2.3"}},
		{Name: "a.example.test", Type: "A", TTL: 300, Targets: []string{"192.0.2.1"}},
		{Name: "b.example.test", Type: "TXT", TTL: 60, Targets: []string{"xy"}},
	}
	if len(got) != len(want) {
		t.Fatalf("got %d sets, want %d: %v", len(got), len(want), got)
	}
	for i := range want {
		if !got[i].Equal(want[i]) {
			t.Errorf("set %d = %v, want %v", i, got[i], want[i])
		}
	}
}

func TestRecordSetEqual_IgnoresTargetOrderOnly(t *testing.T) {
	w1, w2 := int64(1), int64(2)
	base := RecordSet{Name: "a.example.test", Type: "A", TTL: 60, Targets: []string{"192.0.2.1", "192.0.2.2"}, SetIdentifier: "x", Weight: &w1}
	for _, tc := range []struct {
		name  string
		other func(RecordSet) RecordSet
		equal bool
	}{
		{"same", func(r RecordSet) RecordSet { return r }, true},
		{"reordered targets", func(r RecordSet) RecordSet { r.Targets = []string{"192.0.2.2", "192.0.2.1"}; return r }, true},
		{"nil vs empty provider specific", func(r RecordSet) RecordSet { r.ProviderSpecific = map[string]string{}; return r }, true},
		{"ttl", func(r RecordSet) RecordSet { r.TTL = 61; return r }, false},
		{"weight value", func(r RecordSet) RecordSet { r.Weight = &w2; return r }, false},
		{"weight nil", func(r RecordSet) RecordSet { r.Weight = nil; return r }, false},
		{"set identifier", func(r RecordSet) RecordSet { r.SetIdentifier = "y"; return r }, false},
		{"fewer targets", func(r RecordSet) RecordSet { r.Targets = r.Targets[:1]; return r }, false},
		{"same count other target", func(r RecordSet) RecordSet { r.Targets = []string{"192.0.2.1", "192.0.2.3"}; return r }, false},
		{"provider specific", func(r RecordSet) RecordSet { r.ProviderSpecific = map[string]string{"k": "v"}; return r }, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := tc.other(base.Clone())
			if got := base.Equal(o); got != tc.equal {
				t.Errorf("Equal = %v, want %v", got, tc.equal)
			}
		})
	}
}

func TestThrottledError_IsErrThrottledWithRetryAfter(t *testing.T) {
	err := errors.Join(errors.New("context"), &ThrottledError{RetryAfter: 3e9})
	d, ok := RetryAfter(err)
	if !ok || d != 3e9 || !errors.Is(err, ErrThrottled) {
		t.Fatalf("RetryAfter = %v, %v; Is = %v", d, ok, errors.Is(err, ErrThrottled))
	}
	if _, ok := RetryAfter(errors.New("other")); ok {
		t.Fatal("RetryAfter reported throttling for an unrelated error")
	}
}

func TestPresentationValue_QuotesTXTAndMakesNamesAbsolute(t *testing.T) {
	octal := func(s string) string { return strings.ReplaceAll(s, `"`, `\"`) }
	long := strings.Repeat("a", 300)
	cases := []struct{ rtype, target, want string }{
		{"A", "192.0.2.1", "192.0.2.1"},
		{"CNAME", "www.example.test", "www.example.test."},
		{"NS", "ns1.example.test.", "ns1.example.test."},
		{"MX", "10 mail.example.test", "10 mail.example.test."},
		{"SRV", "0 5 5060 sip.example.test", "0 5 5060 sip.example.test."},
		{"TXT", `say "hi"`, `"say \"hi\""`},
		{"TXT", long, `"` + strings.Repeat("a", 255) + `" "` + strings.Repeat("a", 45) + `"`},
		{"CAA", `0 issue "letsencrypt.org"`, `0 issue "letsencrypt.org"`},
	}
	for _, c := range cases {
		if got := PresentationValue(c.rtype, c.target, octal); got != c.want {
			t.Errorf("PresentationValue(%s, %q) = %q, want %q", c.rtype, c.target, got, c.want)
		}
	}
}

func TestValidateChangeSet_CommonRules(t *testing.T) {
	w := int64(10)
	geoLabel := map[string]string{geo.LabelTag: "eu", geo.LabelRegions: "DE"}
	cases := []struct {
		name string
		rs   *RecordSet
		caps Capabilities
		want error
	}{
		{"missing", nil, Capabilities{}, ErrInvalidChange},
		{"outside the zone", &RecordSet{Name: "www.other.test", Type: "A", TTL: 60, Targets: []string{"192.0.2.1"}}, Capabilities{}, ErrInvalidChange},
		{"no targets", &RecordSet{Name: "www.example.test", Type: "A", TTL: 60}, Capabilities{}, ErrInvalidChange},
		{"bad target", &RecordSet{Name: "www.example.test", Type: "A", TTL: 60, Targets: []string{"hello"}}, Capabilities{}, ErrInvalidChange},
		{"weighted without the capability", &RecordSet{Name: "www.example.test", Type: "A", TTL: 60, Targets: []string{"192.0.2.1"}, SetIdentifier: "eu", Weight: &w}, Capabilities{}, ErrNotCapable},
		{"weighted with the capability", &RecordSet{Name: "www.example.test", Type: "A", TTL: 60, Targets: []string{"192.0.2.1"}, SetIdentifier: "eu", Weight: &w}, Capabilities{WeightedRouting: true}, nil},
		{"plain", &RecordSet{Name: "WWW.example.test.", Type: "a", TTL: 60, Targets: []string{"192.0.2.1"}}, Capabilities{}, nil},
		{"geo set with geo routing", &RecordSet{Name: "www.example.test", Type: "A", TTL: 60, Targets: []string{"192.0.2.1"}, SetIdentifier: "eu", ProviderSpecific: geoLabel}, Capabilities{GeoRouting: true}, nil},
		{"geo set without geo routing", &RecordSet{Name: "www.example.test", Type: "A", TTL: 60, Targets: []string{"192.0.2.1"}, SetIdentifier: "eu", ProviderSpecific: geoLabel}, Capabilities{}, ErrNotCapable},
		{"weighted geo set with geo routing only", &RecordSet{Name: "www.example.test", Type: "A", TTL: 60, Targets: []string{"192.0.2.1"}, SetIdentifier: "eu", Weight: &w, ProviderSpecific: geoLabel}, Capabilities{GeoRouting: true}, ErrNotCapable},
		{"set identifier without geo label, geo routing only", &RecordSet{Name: "www.example.test", Type: "A", TTL: 60, Targets: []string{"192.0.2.1"}, SetIdentifier: "eu"}, Capabilities{GeoRouting: true}, ErrNotCapable},
	}
	for _, c := range cases {
		got, err := ValidateChangeSet(ActionCreate, "After", c.rs, "example.test", c.caps)
		if !errors.Is(err, c.want) || (c.want == nil && err != nil) {
			t.Errorf("%s: got %v, want %v", c.name, err, c.want)
		}
		if c.want == nil && (got.Name != "www.example.test" || got.Type != "A") {
			t.Errorf("%s: not canonical: %+v", c.name, got)
		}
	}
}

func TestParseQuotedTXT(t *testing.T) {
	for _, tc := range []struct {
		in   string
		base int
		want string
	}{
		{`"hello"`, 10, "hello"},
		{`"v=spf1 " "include:x -all"`, 10, "v=spf1 include:x -all"},
		{`unquoted words`, 10, "unquotedwords"},
		{`"a\"b\\c"`, 10, `a"b\c`},
		{`"caf\195\169"`, 10, "caf\u00e9"},
		{`"caf\303\251"`, 8, "caf\u00e9"},
		{`"\009"`, 8, "009"},     // 9 is no octal digit: \0 is an escaped '0'
		{`"tail\"`, 10, `tail"`}, // a trailing backslash escapes the quote
		{`""`, 10, ""},
	} {
		if got := ParseQuotedTXT(tc.in, tc.base); got != tc.want {
			t.Errorf("ParseQuotedTXT(%q, %d) = %q, want %q", tc.in, tc.base, got, tc.want)
		}
	}
}

// TestToRRs_EverySupportedTypeParsesAndPacks: every record type
// a DNSEndpoint may hold (apis/v1alpha1 Endpoint.RecordType) with a good target and with bad
// ones. A bad target must fail here, before any provider writes it, including targets that
// miekg/dns reads in presentation form but cannot put on the wire (an odd-length DS digest broke
// the embedded server's answers and AXFR for the whole zone).
func TestToRRs_EverySupportedTypeParsesAndPacks(t *testing.T) {
	const sha256 = "3d6f0f8a1b2c3d4e5f60718293a4b5c6d7e8f90112233445566778899aabbccd"
	for _, tc := range []struct {
		rtype, target string
		ok            bool
	}{
		{"A", "192.0.2.1", true},
		{"A", "192.0.2.256", false},
		{"A", "2001:db8::1", false},
		{"AAAA", "2001:db8::1", true},
		{"AAAA", "2001:db8:::1", false},
		{"CNAME", "www.example.test", true},
		{"CNAME", "www..example.test", false},
		{"CNAME", strings.Repeat("a", 64) + ".example.test", false},
		{"TXT", `v=spf1 -all "quoted" \ backslash`, true},
		{"TXT", strings.Repeat("x", 1024), true}, // split into 255-byte character-strings
		{"TXT", strings.Repeat("x", 70000), false},
		{"NS", "ns1.example.test", true},
		{"NS", "ns1 example.test", false},
		{"MX", "10 mail.example.test", true},
		{"MX", "70000 mail.example.test", false},
		{"MX", "mail.example.test", false},
		{"SRV", "0 5 5060 sip.example.test", true},
		{"SRV", "0 5 70000 sip.example.test", false},
		{"CAA", `0 issue "letsencrypt.org"`, true},
		{"CAA", `256 issue "letsencrypt.org"`, false},
		{"CAA", `0 ` + strings.Repeat("t", 256) + ` "letsencrypt.org"`, false}, // tag over 255 bytes
		{"PTR", "host.example.test", true},
		{"PTR", "host..example.test", false},
		{"DS", "12345 13 2 " + sha256, true},
		{"DS", "12345 13 2 " + sha256 + "d", false}, // 65 hex digits: a malformed DS
		{"DS", "12345 13 2 " + strings.Repeat("zz", 32), false},
		{"DS", "12345 13 2", false},
		{"DS", "70000 13 2 " + sha256, false},
	} {
		name := tc.rtype + " " + tc.target
		if len(name) > 60 {
			name = name[:60]
		}
		t.Run(name, func(t *testing.T) {
			rrs, err := ToRRs(RecordSet{Name: "x.example.test", Type: tc.rtype, TTL: 300, Targets: []string{tc.target}})
			if !tc.ok {
				if !errors.Is(err, ErrInvalidChange) {
					t.Fatalf("error = %v, want ErrInvalidChange", err)
				}
				if _, err := CanonicalTarget(tc.rtype, tc.target); !errors.Is(err, ErrInvalidChange) {
					t.Fatalf("CanonicalTarget error = %v, want ErrInvalidChange", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			m := new(dns.Msg)
			m.SetQuestion("x.example.test.", dns.TypeANY)
			m.Answer = rrs
			if _, err := m.Pack(); err != nil {
				t.Fatalf("a target ToRRs accepted does not pack: %v", err)
			}
		})
	}
}

func TestCheckInZone_OutsideAndSOAAreInvalid(t *testing.T) {
	for _, tc := range []struct {
		rs   RecordSet
		want string // "" = no error
	}{
		{RecordSet{Name: "www.example.test", Type: "A"}, ""},
		{RecordSet{Name: "example.test", Type: "NS"}, ""},
		{RecordSet{Name: "www.other.test", Type: "A"}, "www.other.test is not in zone example.test"},
		{RecordSet{Name: "example.test", Type: "SOA"}, "the SOA is managed by PowerDNS"},
	} {
		err := CheckInZone("example.test", tc.rs, "PowerDNS")
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("%s: %v", tc.rs.Key(), err)
		case tc.want != "" && (!errors.Is(err, ErrInvalidChange) || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s: %v, want ErrInvalidChange with %q", tc.rs.Key(), err, tc.want)
		}
	}
}

func TestEscapeTXTBase_OctalAndDecimalRoundTrip(t *testing.T) {
	raw := "a\"b\\c\x00\xff"
	for _, tc := range []struct {
		base int
		want string
	}{{10, `a\"b\\c\000\255`}, {8, `a\"b\\c\000\377`}} {
		got := EscapeTXTBase(raw, tc.base)
		if got != tc.want {
			t.Errorf("base %d: %q, want %q", tc.base, got, tc.want)
		}
		if back := ParseQuotedTXT(`"`+got+`"`, tc.base); back != raw {
			t.Errorf("base %d: parsed back %q, want %q", tc.base, back, raw)
		}
	}
	if EscapeTXT(raw) != EscapeTXTBase(raw, 10) {
		t.Error("EscapeTXT is not base 10")
	}
}

func TestTargetOfValue_ReadsBackPresentationValue(t *testing.T) {
	for _, base := range []int{8, 10} {
		escape := func(s string) string { return EscapeTXTBase(s, base) }
		for _, tc := range []struct{ rtype, target string }{
			{"TXT", "v=spf1 \"quoted\" \x01"}, {"CNAME", "a.example.test"}, {"MX", "10 mail.example.test"}, {"A", "192.0.2.1"},
		} {
			if got := TargetOfValue(tc.rtype, PresentationValue(tc.rtype, tc.target, escape), base); got != tc.target {
				t.Errorf("base %d %s: %q, want %q", base, tc.rtype, got, tc.target)
			}
		}
	}
	if got := TargetOfValue("A", "not-an-address", 10); got != "not-an-address" {
		t.Errorf("unparsable A: %q, want it unchanged", got)
	}
}
