package webhook_test

import (
	"errors"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/dnsplane/dnsplane/pkg/provider"
	"github.com/dnsplane/dnsplane/pkg/provider/webhook"
)

// TestParseDomainFilter_ReadsEveryShape: the include/exclude and regex shapes external-dns's code
// writes and the filters shape its OpenAPI file documents, with external-dns's matching rule.
func TestParseDomainFilter_ReadsEveryShape(t *testing.T) {
	cases := []struct {
		name      string
		body      string
		zones     []string
		match     []string
		miss      []string
		wantError bool
	}{
		{name: "empty matches everything", body: `{}`, match: []string{"example.test", "a.b.test"}},
		{name: "null matches everything", body: `null`, match: []string{"example.test"}},
		{name: "include", body: `{"include":["Example.test.","other.test"]}`, zones: []string{"example.test", "other.test"},
			match: []string{"example.test", "www.example.test", "other.test"}, miss: []string{"test", "badexample.test"}},
		{name: "include and exclude", body: `{"include":["example.test"],"exclude":["internal.example.test"]}`, zones: []string{"example.test"},
			match: []string{"www.example.test"}, miss: []string{"internal.example.test", "a.internal.example.test"}},
		{name: "leading dot: subdomains only", body: `{"include":["example.test",".example.test"]}`, zones: []string{"example.test"},
			match: []string{"example.test", "a.example.test"}},
		{name: "only a leading dot", body: `{"include":[".example.test"]}`, zones: []string{"example.test"},
			match: []string{"a.example.test"}, miss: []string{"example.test"}},
		{name: "documented filters shape", body: `{"filters":["example.com",".example.org"]}`, zones: []string{"example.com", "example.org"},
			match: []string{"example.com", "a.example.org"}, miss: []string{"example.net"}},
		{name: "regex", body: `{"regexInclude":"example\\.test$","regexExclude":"^internal\\."}`,
			match: []string{"a.example.test"}, miss: []string{"internal.example.test", "example.net"}},
		{name: "regex and lists", body: `{"include":["a.test"],"regexInclude":"x"}`, wantError: true},
		{name: "bad regex", body: `{"regexInclude":"("}`, wantError: true},
		{name: "not an object", body: `["example.test"]`, wantError: true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f, err := webhook.ParseDomainFilter([]byte(c.body))
			if c.wantError {
				if err == nil {
					t.Fatalf("ParseDomainFilter(%s) = %+v, want an error", c.body, f)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got := f.Zones(); !slices.Equal(got, c.zones) {
				t.Errorf("Zones() = %q, want %q", got, c.zones)
			}
			for _, n := range c.match {
				if !f.Match(n) {
					t.Errorf("%s does not match %s", c.body, n)
				}
			}
			for _, n := range c.miss {
				if f.Match(n) {
					t.Errorf("%s matches %s", c.body, n)
				}
			}
		})
	}
}

// TestEndpoint_RoundTripsEveryTargetForm: each canonical set is spelled as external-dns spells
// it, and read back equal.
func TestEndpoint_RoundTripsEveryTargetForm(t *testing.T) {
	cases := []struct {
		rs    provider.RecordSet
		wire  []string
		extra string // a spelling another writer may use, read as rs.Targets[0]
	}{
		{rs: provider.RecordSet{Name: "a.example.test", Type: "A", TTL: 60, Targets: []string{"192.0.2.1"}}, wire: []string{"192.0.2.1"}},
		{rs: provider.RecordSet{Name: "c.example.test", Type: "CNAME", TTL: 60, Targets: []string{"target.example.net"}}, wire: []string{"target.example.net"}, extra: "Target.Example.NET."},
		{rs: provider.RecordSet{Name: "t.example.test", Type: "TXT", TTL: 60, Targets: []string{`say "hi" \ there`}}, wire: []string{`"say \"hi\" \\ there"`}},
		{rs: provider.RecordSet{Name: "t.example.test", Type: "TXT", TTL: 60, Targets: []string{"plain"}}, wire: []string{`"plain"`}, extra: "plain"},
		{rs: provider.RecordSet{Name: "long.example.test", Type: "TXT", TTL: 60, Targets: []string{strings.Repeat("x", 300)}},
			wire: []string{`"` + strings.Repeat("x", 255) + `" "` + strings.Repeat("x", 45) + `"`}},
		{rs: provider.RecordSet{Name: "mx.example.test", Type: "MX", TTL: 60, Targets: []string{"10 mail.example.net"}}, wire: []string{"10 mail.example.net"}, extra: "10 mail.example.net."},
		{rs: provider.RecordSet{Name: "_s._tcp.example.test", Type: "SRV", TTL: 60, Targets: []string{"0 5 5060 sip.example.net"}}, wire: []string{"0 5 5060 sip.example.net."}},
		{rs: provider.RecordSet{Name: "x.example.test", Type: "A", TTL: 60, Targets: []string{"192.0.2.1"}, SetIdentifier: "eu",
			ProviderSpecific: map[string]string{"b": "2", "a": "1"}}, wire: []string{"192.0.2.1"}},
	}
	for _, c := range cases {
		t.Run(c.rs.Key().String(), func(t *testing.T) {
			ep := webhook.ToEndpoint(c.rs)
			if !slices.Equal(ep.Targets, c.wire) || ep.DNSName != c.rs.Name || ep.RecordTTL != c.rs.TTL || ep.SetIdentifier != c.rs.SetIdentifier {
				t.Fatalf("ToEndpoint = %+v, want targets %q", ep, c.wire)
			}
			if len(ep.ProviderSpecific) > 1 && ep.ProviderSpecific[0].Name > ep.ProviderSpecific[1].Name {
				t.Errorf("provider-specific options not sorted: %v", ep.ProviderSpecific)
			}
			back, ok := webhook.FromEndpoint(ep)
			if !ok || !back.Equal(c.rs) {
				t.Fatalf("FromEndpoint(ToEndpoint) = %s, want %s", back, c.rs)
			}
			if c.extra != "" {
				ep.DNSName, ep.Targets = strings.ToUpper(c.rs.Name)+".", []string{c.extra}
				if back, ok := webhook.FromEndpoint(ep); !ok || !back.Equal(c.rs) {
					t.Errorf("FromEndpoint(%q) = %s, want %s", c.extra, back, c.rs)
				}
			}
		})
	}
	if _, ok := webhook.FromEndpoint(webhook.Endpoint{DNSName: "x.example.test", RecordType: "A"}); ok {
		t.Error("an endpoint without targets is no record set")
	}
}

// TestNew_RejectsBadConfigAsInvalidCredentialsWithoutValues: a bad URL or header is
// ErrInvalidCredentials, and no message shows a header value.
func TestNew_RejectsBadConfigAsInvalidCredentialsWithoutValues(t *testing.T) {
	const value = "s3cret-value"
	good := webhook.Config{URL: "http://127.0.0.1:8888", Headers: http.Header{"Authorization": {"Bearer " + value}}}
	if _, err := webhook.New(good); err != nil {
		t.Fatalf("New(good) = %v", err)
	}
	for name, cfg := range map[string]webhook.Config{
		"no url":           {},
		"not http":         {URL: "ftp://127.0.0.1"},
		"no host":          {URL: "http://"},
		"user info":        {URL: "http://user:" + value + "@127.0.0.1:8888"},
		"query":            {URL: "http://127.0.0.1:8888/?token=" + value},
		"bad header name":  {URL: "http://127.0.0.1:8888", Headers: http.Header{"Bad Name": {value}}},
		"bad header value": {URL: "http://127.0.0.1:8888", Headers: http.Header{"X-Token": {value + "\r\nX-Other: 1"}}},
		"reserved header":  {URL: "http://127.0.0.1:8888", Headers: http.Header{"Content-Type": {value}}},
		"negative batch":   {URL: "http://127.0.0.1:8888", BatchSize: -1},
	} {
		_, err := webhook.New(cfg)
		if !errors.Is(err, provider.ErrInvalidCredentials) {
			t.Errorf("%s: New = %v, want ErrInvalidCredentials", name, err)
		}
		if err != nil && strings.Contains(err.Error(), value) {
			t.Errorf("%s: the error shows a credential: %v", name, err)
		}
	}
}

// TestCapabilities_AreHonest: no conditional writes, zone creation or weighted routing; the
// batch size is the per-request limit, one change counting one.
func TestCapabilities_AreHonest(t *testing.T) {
	p, err := webhook.New(webhook.Config{URL: "http://127.0.0.1:8888", BatchSize: 7})
	if err != nil {
		t.Fatal(err)
	}
	c := p.Capabilities()
	if c.ConditionalWrites || c.CreateZones || c.WeightedRouting || !c.BatchWrites || c.MaxChangesPerBatch != 7 || c.MaxWritesInFlight != 1 {
		t.Fatalf("Capabilities = %+v", c)
	}
	if c.MaxValueBytesPerBatch <= 0 || c.MaxValueBytesPerBatch >= webhook.MaxBody {
		t.Fatalf("MaxValueBytesPerBatch = %d, want below the %d body cap", c.MaxValueBytesPerBatch, webhook.MaxBody)
	}
	rs := provider.RecordSet{Name: "a.example.test", Type: "A", TTL: 60, Targets: []string{"192.0.2.1", "192.0.2.2", "192.0.2.3"}}
	if n, _ := p.RequestCost(provider.Change{Action: provider.ActionUpdate, Before: &rs, After: &rs}); n != 1 {
		t.Fatalf("an Update of three targets costs %d, want 1 change", n)
	}
	if d, _ := webhook.New(webhook.Config{URL: "http://127.0.0.1:8888"}); d.Capabilities().MaxChangesPerBatch != webhook.DefaultBatchSize {
		t.Fatalf("default batch size %d, want %d", d.Capabilities().MaxChangesPerBatch, webhook.DefaultBatchSize)
	}
}
