package registry

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func sampleEntry() Entry {
	return Entry{
		OwnerID:  "c1",
		Resource: "DNSEndpoint/team-a/www",
		Name:     "www.example.test",
		Type:     "A",
		TTL:      300,
		Targets:  []string{"192.0.2.2", "192.0.2.1"},
	}
}

func TestEncode_WritesFieldsInFixedOrder(t *testing.T) {
	e := sampleEntry()
	want := "heritage=dnsplane&v=1&owner=c1&resource=DNSEndpoint/team-a/www&name=www.example.test&type=A&ttl=300&target=192.0.2.1&target=192.0.2.2"
	if got := e.Encode(); got != want {
		t.Errorf("Encode() =\n %s\nwant\n %s", got, want)
	}
	e.SetIdentifier = "eu west"
	e.Heartbeat = time.Unix(1700000000, 0)
	want = "heritage=dnsplane&v=1&owner=c1&resource=DNSEndpoint/team-a/www&name=www.example.test&type=A&set=eu+west&ttl=300&target=192.0.2.1&target=192.0.2.2&heartbeat=1700000000"
	if got := e.Encode(); got != want {
		t.Errorf("Encode() with set and heartbeat =\n %s\nwant\n %s", got, want)
	}
}

func TestEncode_KeepsIPTargetsReadable(t *testing.T) {
	e := sampleEntry()
	e.Type = "AAAA"
	e.Targets = []string{"2001:db8::1"}
	got := e.Encode()
	for _, s := range []string{"target=2001:db8::1", "resource=DNSEndpoint/team-a/www"} {
		if !strings.Contains(got, s) {
			t.Errorf("Encode() = %s, want it to contain %s", got, s)
		}
	}
	if strings.ContainsAny(got, "\"\\ ;") {
		t.Errorf("Encode() = %s: contains characters dig would escape or ParseQuery rejects", got)
	}
}

func TestEncode_IsIndependentOfTargetOrder(t *testing.T) {
	a, b := sampleEntry(), sampleEntry()
	b.Targets = []string{"192.0.2.1", "192.0.2.2"}
	if a.Encode() != b.Encode() {
		t.Errorf("Encode differs with target order:\n %s\n %s", a.Encode(), b.Encode())
	}
}

func TestParse_RoundTripsEncode(t *testing.T) {
	long := strings.Repeat("x", 600)
	for _, tc := range []struct {
		name string
		edit func(*Entry)
	}{
		{"plain A", func(*Entry) {}},
		{"set identifier", func(e *Entry) { e.SetIdentifier = "eu-1" }},
		{"heartbeat", func(e *Entry) { e.Heartbeat = time.Unix(1700000000, 0).UTC() }},
		{"heartbeat at epoch", func(e *Entry) { e.Heartbeat = time.Unix(0, 0).UTC() }},
		{"no targets", func(e *Entry) { e.Targets = nil }},
		{"ttl zero", func(e *Entry) { e.TTL = 0 }},
		{"ttl max", func(e *Entry) { e.TTL = 2147483647 }},
		{"wildcard", func(e *Entry) { e.Name = "*.example.test" }},
		{"TXT targets with query metacharacters", func(e *Entry) {
			e.Type = "TXT"
			e.Targets = []string{`v=spf1 a:b ~all`, `a&b=c;d%20+e`, `"quoted" \back`, "ünïcode", long}
		}},
		{"MX", func(e *Entry) { e.Type = "MX"; e.Targets = []string{"10 mail.example.test"} }},
		{"odd owner and resource", func(e *Entry) {
			e.OwnerID = "owner with spaces & = %"
			e.Resource = "DNSRecord/ns-1/name.with.dots"
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := sampleEntry()
			tc.edit(&e)
			got, err := Parse(e.Encode())
			if err != nil {
				t.Fatalf("Parse(Encode()) error: %v\nvalue: %s", err, e.Encode())
			}
			if !got.Equal(e) {
				t.Errorf("Parse(Encode()) = %+v, want %+v", got, e)
			}
			if got.Encode() != e.Encode() {
				t.Errorf("re-encoded value differs:\n %s\n %s", got.Encode(), e.Encode())
			}
		})
	}
}

func TestParse_ReturnsErrForeignForOtherHeritage(t *testing.T) {
	for _, v := range []string{
		"",
		"heritage=external-dns,external-dns/owner=default,external-dns/resource=ingress/default/app",
		`"heritage=external-dns,external-dns/owner=default"`,
		"v=spf1 include:_spf.example.test ~all",
		"heritage=dnsplanes&v=1",
		"heritage=DNSPLANE&v=1&owner=a",
		"hello world",
		"%zz",
		"v=1&owner=c1&resource=a/b/c&name=x.test&type=A&ttl=1",
	} {
		if _, err := Parse(v); !errors.Is(err, ErrForeign) {
			t.Errorf("Parse(%q) error = %v, want ErrForeign", v, err)
		}
	}
}

func TestParse_MalformedValuesSayWhy(t *testing.T) {
	ok := "heritage=dnsplane&v=1&owner=c1&resource=DNSEndpoint/team-a/www&name=www.example.test&type=A&ttl=300&target=192.0.2.1"
	if _, err := Parse(ok); err != nil {
		t.Fatalf("baseline value rejected: %v", err)
	}
	for _, tc := range []struct{ value, reason string }{
		{strings.Replace(ok, "v=1", "v=2", 1), `unknown version "2"`},
		{strings.Replace(ok, "v=1&", "", 1), "missing v"},
		{strings.Replace(ok, "v=1", "v=1&v=1", 1), `field "v" repeated`},
		{strings.Replace(ok, "owner=c1&", "", 1), "missing owner"},
		{strings.Replace(ok, "owner=c1", "owner=", 1), "missing owner"},
		{strings.Replace(ok, "DNSEndpoint/team-a/www", "DNSEndpoint/www", 1), "not kind/namespace/name"},
		{strings.Replace(ok, "DNSEndpoint/team-a/www", "DNSEndpoint//www", 1), "not kind/namespace/name"},
		{strings.Replace(ok, "name=www.example.test", "name=WWW.example.test.", 1), "not a canonical record name"},
		{strings.Replace(ok, "name=www.example.test&", "", 1), "missing name"},
		{strings.Replace(ok, "type=A", "type=a", 1), "not an upper-case record type"},
		{strings.Replace(ok, "type=A", "type=", 1), "not an upper-case record type"},
		{strings.Replace(ok, "ttl=300", "ttl=abc", 1), `bad ttl "abc"`},
		{strings.Replace(ok, "ttl=300", "ttl=-1", 1), `bad ttl "-1"`},
		{strings.Replace(ok, "ttl=300", "ttl=2147483648", 1), `bad ttl "2147483648"`},
		{strings.Replace(ok, "&ttl=300", "", 1), "missing ttl"},
		{ok + "&heartbeat=yesterday", `bad heartbeat "yesterday"`},
		{ok + "&heartbeat=-5", `bad heartbeat "-5"`},
		{ok + "&heartbeat=", `bad heartbeat ""`},
		{ok + "&heartbeat=1&heartbeat=2", `field "heartbeat" repeated`},
		{ok + "&set=a&set=b", `field "set" repeated`},
		{ok + "&x=%zz", "invalid URL escape"},
		{ok + ";x=1", "semicolon"},
		{"heritage=dnsplane&heritage=dnsplane&" + ok[len("heritage=dnsplane&"):], `field "heritage" repeated`},
	} {
		_, err := Parse(tc.value)
		if !errors.Is(err, ErrMalformed) || !strings.Contains(err.Error(), tc.reason) {
			t.Errorf("Parse(%q) error = %v, want ErrMalformed mentioning %q", tc.value, err, tc.reason)
		}
	}
}

func TestParse_IgnoresUnknownFields(t *testing.T) {
	e := sampleEntry()
	got, err := Parse(e.Encode() + "&future=1")
	if err != nil || !got.Equal(e) {
		t.Errorf("Parse with an unknown field = %+v, %v; want %+v, nil", got, err, e)
	}
}

func TestWithHeartbeat_TruncatesToSecondsAndZeroRemoves(t *testing.T) {
	e := sampleEntry()
	at := time.Date(2030, 1, 2, 3, 4, 5, 678, time.FixedZone("x", 3600))
	hb := WithHeartbeat(e, at)
	if want := time.Unix(at.Unix(), 0).UTC(); hb.Heartbeat != want {
		t.Errorf("Heartbeat = %v, want %v", hb.Heartbeat, want)
	}
	if !e.Heartbeat.IsZero() {
		t.Error("WithHeartbeat modified its argument")
	}
	got, err := Parse(hb.Encode())
	if err != nil || !got.Equal(hb) {
		t.Errorf("round trip = %+v, %v; want %+v", got, err, hb)
	}
	if cleared := WithHeartbeat(hb, time.Time{}); !cleared.Heartbeat.IsZero() || strings.Contains(cleared.Encode(), "heartbeat") {
		t.Errorf("WithHeartbeat(zero) kept a heartbeat: %s", cleared.Encode())
	}
}

func TestEntry_EqualIgnoringHeartbeat_SeesOnlyClaimChanges(t *testing.T) {
	base := sampleEntry()
	for _, tc := range []struct {
		name      string
		edit      func(*Entry)
		equal     bool
		equalFull bool
	}{
		{"same", func(*Entry) {}, true, true},
		{"targets reordered", func(e *Entry) { e.Targets = []string{"192.0.2.1", "192.0.2.2"} }, true, true},
		{"heartbeat only", func(e *Entry) { e.Heartbeat = time.Unix(5, 0) }, true, false},
		{"ttl", func(e *Entry) { e.TTL = 60 }, false, false},
		{"target", func(e *Entry) { e.Targets = []string{"192.0.2.1"} }, false, false},
		{"owner", func(e *Entry) { e.OwnerID = "c2" }, false, false},
		{"resource", func(e *Entry) { e.Resource = "DNSEndpoint/team-a/other" }, false, false},
		{"set identifier", func(e *Entry) { e.SetIdentifier = "x" }, false, false},
	} {
		o := sampleEntry()
		tc.edit(&o)
		if got := base.EqualIgnoringHeartbeat(o); got != tc.equal {
			t.Errorf("%s: EqualIgnoringHeartbeat = %v, want %v", tc.name, got, tc.equal)
		}
		if got := base.Equal(o); got != tc.equalFull {
			t.Errorf("%s: Equal = %v, want %v", tc.name, got, tc.equalFull)
		}
	}
}

func TestContributor_KindAndString(t *testing.T) {
	c := Contributor{OwnerID: "c1", Resource: Resource("DNSRecord", "team-a", "app")}
	if c.Resource != "DNSRecord/team-a/app" || c.Kind() != "DNSRecord" || c.String() != "c1/DNSRecord/team-a/app" {
		t.Errorf("got %q kind %q string %q", c.Resource, c.Kind(), c.String())
	}
	if (Contributor{Resource: "bad"}).Kind() != "" {
		t.Error("Kind of a malformed resource should be empty")
	}
}
