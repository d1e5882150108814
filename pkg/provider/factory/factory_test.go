package factory

import (
	"errors"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/dnsplane/dnsplane/pkg/provider"
	"github.com/dnsplane/dnsplane/pkg/provider/pdns"
	"github.com/dnsplane/dnsplane/pkg/provider/webhook"
)

func TestPDNSFromSecret_ValidatesKeysWithoutEchoingThem(t *testing.T) {
	cases := []struct {
		name string
		data map[string]string
		ok   bool
	}{
		{"complete", map[string]string{"PDNS_API_URL": "http://127.0.0.1:8081", "PDNS_API_KEY": "s3cret", "PDNS_NAMESERVERS": "ns1.example.net, ns2.example.net"}, true},
		{"server id", map[string]string{"PDNS_API_URL": "http://127.0.0.1:8081", "PDNS_API_KEY": "s3cret", "PDNS_SERVER_ID": "other"}, true},
		{"no key", map[string]string{"PDNS_API_URL": "http://127.0.0.1:8081"}, false},
		{"no url", map[string]string{"PDNS_API_KEY": "s3cret"}, false},
		{"not a url", map[string]string{"PDNS_API_URL": "127.0.0.1 8081", "PDNS_API_KEY": "s3cret"}, false},
		{"bad name server", map[string]string{"PDNS_API_URL": "http://127.0.0.1:8081", "PDNS_API_KEY": "s3cret", "PDNS_NAMESERVERS": "not a name"}, false},
		{"writes in flight", map[string]string{"PDNS_API_URL": "http://127.0.0.1:8081", "PDNS_API_KEY": "s3cret", KeyPDNSMaxWritesInFlight: "4"}, true},
		{"zero writes in flight", map[string]string{"PDNS_API_URL": "http://127.0.0.1:8081", "PDNS_API_KEY": "s3cret", KeyPDNSMaxWritesInFlight: "0"}, false},
		{"writes in flight not a number", map[string]string{"PDNS_API_URL": "http://127.0.0.1:8081", "PDNS_API_KEY": "s3cret", KeyPDNSMaxWritesInFlight: "many"}, false},
		{"claim read age", map[string]string{"PDNS_API_URL": "http://127.0.0.1:8081", "PDNS_API_KEY": "s3cret", KeyPDNSClaimReadMaxAge: "250ms"}, true},
		{"claim read age 0s: always read", map[string]string{"PDNS_API_URL": "http://127.0.0.1:8081", "PDNS_API_KEY": "s3cret", KeyPDNSClaimReadMaxAge: "0s"}, true},
		{"claim read age negative", map[string]string{"PDNS_API_URL": "http://127.0.0.1:8081", "PDNS_API_KEY": "s3cret", KeyPDNSClaimReadMaxAge: "-1s"}, false},
		{"claim read age over a minute", map[string]string{"PDNS_API_URL": "http://127.0.0.1:8081", "PDNS_API_KEY": "s3cret", KeyPDNSClaimReadMaxAge: "2m"}, false},
		{"claim read age not a duration", map[string]string{"PDNS_API_URL": "http://127.0.0.1:8081", "PDNS_API_KEY": "s3cret", KeyPDNSClaimReadMaxAge: "1"}, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := &corev1.Secret{Type: TypePDNS, Data: map[string][]byte{}}
			for k, v := range c.data {
				s.Data[k] = []byte(v)
			}
			p, err := pdnsFromSecret(s, 0)
			if c.ok {
				if err != nil || p == nil {
					t.Fatalf("got %v, want a provider", err)
				}
				want := 1
				if v := c.data[KeyPDNSMaxWritesInFlight]; v != "" {
					want = 4
				}
				if got := p.Capabilities().MaxWritesInFlight; got != want {
					t.Fatalf("MaxWritesInFlight = %d, want %d", got, want)
				}
				wantAge := pdns.DefaultClaimReadMaxAge
				if v := c.data[KeyPDNSClaimReadMaxAge]; v != "" {
					wantAge, _ = time.ParseDuration(v)
				}
				if got := p.(*pdns.Provider).ClaimReadMaxAge(); got != wantAge {
					t.Fatalf("ClaimReadMaxAge = %s, want %s", got, wantAge)
				}
				return
			}
			if !errors.Is(err, ErrInvalidCredentials) {
				t.Fatalf("got %v, want ErrInvalidCredentials", err)
			}
			if v := c.data["PDNS_API_KEY"]; v != "" && strings.Contains(err.Error(), v) {
				t.Fatalf("the error shows the API key: %v", err)
			}
		})
	}
}

// TestWebhookFromSecret_ValidatesKeysWithoutEchoingThem: WEBHOOK_URL is required and must be an
// http(s) URL without credentials; WEBHOOK_HEADERS is "Name: value" lines; WEBHOOK_BATCH_SIZE a
// whole number >= 1. No error shows a header value.
func TestWebhookFromSecret_ValidatesKeysWithoutEchoingThem(t *testing.T) {
	const token = "s3cret-token"
	cases := []struct {
		name  string
		data  map[string]string
		ok    bool
		batch int
	}{
		{"url only", map[string]string{KeyWebhookURL: "http://127.0.0.1:8888"}, true, webhook.DefaultBatchSize},
		{"https with a path", map[string]string{KeyWebhookURL: "https://dns-webhook.dns-system.svc:8888/v1"}, true, webhook.DefaultBatchSize},
		{"headers and batch size", map[string]string{KeyWebhookURL: "http://127.0.0.1:8888",
			KeyWebhookHeaders: "# the proxy's token\nAuthorization: Bearer " + token + "\r\n\nX-Tenant: team-a\n", KeyWebhookBatchSize: "25"}, true, 25},
		{"no url", map[string]string{KeyWebhookHeaders: "Authorization: " + token}, false, 0},
		{"not http", map[string]string{KeyWebhookURL: "unix:///run/webhook.sock"}, false, 0},
		{"credentials in the url", map[string]string{KeyWebhookURL: "http://u:" + token + "@127.0.0.1:8888"}, false, 0},
		{"header line without a colon", map[string]string{KeyWebhookURL: "http://127.0.0.1:8888", KeyWebhookHeaders: "Authorization " + token}, false, 0},
		{"header line without a name", map[string]string{KeyWebhookURL: "http://127.0.0.1:8888", KeyWebhookHeaders: ": " + token}, false, 0},
		{"header name with a space", map[string]string{KeyWebhookURL: "http://127.0.0.1:8888", KeyWebhookHeaders: "X Token: " + token}, false, 0},
		{"protocol header", map[string]string{KeyWebhookURL: "http://127.0.0.1:8888", KeyWebhookHeaders: "Content-Type: " + token}, false, 0},
		{"batch size 0", map[string]string{KeyWebhookURL: "http://127.0.0.1:8888", KeyWebhookBatchSize: "0"}, false, 0},
		{"batch size not a number", map[string]string{KeyWebhookURL: "http://127.0.0.1:8888", KeyWebhookBatchSize: "lots"}, false, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := &corev1.Secret{Type: TypeWebhook, Data: map[string][]byte{}}
			for k, v := range c.data {
				s.Data[k] = []byte(v)
			}
			p, err := webhookFromSecret(s, 0, nil)
			if err != nil && strings.Contains(err.Error(), token) {
				t.Fatalf("the error shows a credential: %v", err)
			}
			if !c.ok {
				if !errors.Is(err, ErrInvalidCredentials) {
					t.Fatalf("got %v, want ErrInvalidCredentials", err)
				}
				return
			}
			if err != nil {
				t.Fatalf("got %v, want a provider", err)
			}
			if got := p.Capabilities().MaxChangesPerBatch; got != c.batch {
				t.Fatalf("batch size %d, want %d", got, c.batch)
			}
		})
	}
}

func TestRFC2136FromSecret_ValidatesKeys(t *testing.T) {
	base := map[string]string{"RFC2136_HOST": "127.0.0.1", "RFC2136_PORT": "5300", "RFC2136_TSIG_KEYNAME": "dnsplane",
		"RFC2136_TSIG_SECRET": "c2VjcmV0LXNlY3JldC1zZWNyZXQ="}
	cases := []struct {
		name   string
		change map[string]string
		ok     bool
	}{
		{"complete", nil, true},
		{"default port and algorithm", map[string]string{"RFC2136_PORT": ""}, true},
		{"no host", map[string]string{"RFC2136_HOST": ""}, false},
		{"no key name", map[string]string{"RFC2136_TSIG_KEYNAME": ""}, false},
		{"no secret", map[string]string{"RFC2136_TSIG_SECRET": ""}, false},
		{"bad port", map[string]string{"RFC2136_PORT": "http"}, false},
		{"secret not base64", map[string]string{"RFC2136_TSIG_SECRET": "not base64!"}, false},
		{"unknown algorithm", map[string]string{"RFC2136_TSIG_ALGORITHM": "rot13"}, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := &corev1.Secret{Type: TypeRFC2136, Data: map[string][]byte{}}
			for k, v := range base {
				s.Data[k] = []byte(v)
			}
			for k, v := range c.change {
				s.Data[k] = []byte(v)
			}
			p, err := rfc2136FromSecret(s)
			if c.ok != (err == nil) || (c.ok && p == nil) {
				t.Fatalf("got %v, want ok=%t", err, c.ok)
			}
			if !c.ok && !errors.Is(err, ErrInvalidCredentials) {
				t.Fatalf("got %v, want ErrInvalidCredentials", err)
			}
			if err != nil && strings.Contains(err.Error(), base["RFC2136_TSIG_SECRET"]) {
				t.Fatalf("the error shows the TSIG secret: %v", err)
			}
		})
	}
}

func TestGuardOptions_OneLimiterPerCredentialSet(t *testing.T) {
	secret := func(name string, typ corev1.SecretType, kv ...string) *corev1.Secret {
		s := &corev1.Secret{Type: typ, Data: map[string][]byte{}}
		s.Name = name
		for i := 0; i+1 < len(kv); i += 2 {
			s.Data[kv[i]] = []byte(kv[i+1])
		}
		return s
	}
	f := &Factory{}
	a1, err := f.guardOptions(secret("a1", TypeAWS, "AWS_ACCESS_KEY_ID", "AKIDA", "AWS_SECRET_ACCESS_KEY", "sa", "DNS_ADDRESS", "127.0.0.1:53"))
	if err != nil {
		t.Fatal(err)
	}
	a2, _ := f.guardOptions(secret("a2", TypeAWS, "AWS_ACCESS_KEY_ID", "AKIDA", "AWS_SECRET_ACCESS_KEY", "sa", "DNS_ADDRESS", "127.0.0.2:53"))
	b, _ := f.guardOptions(secret("b", TypeAWS, "AWS_ACCESS_KEY_ID", "AKIDB", "AWS_SECRET_ACCESS_KEY", "sb"))
	if a1.Limiter == nil || a1.Limiter != a2.Limiter {
		t.Fatal("two Secrets with the same credentials must share one limiter")
	}
	if b.Limiter == a1.Limiter {
		t.Fatal("other credentials must get their own limiter")
	}
	if got := float64(a1.Limiter.Limit()); got != 5 {
		t.Fatalf("Route 53 default = %v rps, want 5", got)
	}
	if a1.ZoneListTTL != DefaultZoneListTTL {
		t.Fatalf("zone-list TTL %s, want the default", a1.ZoneListTTL)
	}
	custom, err := f.guardOptions(secret("c", TypeAWS, "AWS_ACCESS_KEY_ID", "AKIDA", "AWS_SECRET_ACCESS_KEY", "sa", KeyRateLimitQPS, "2.5", KeyRateLimitBurst, "4"))
	if err != nil || float64(custom.Limiter.Limit()) != 2.5 || custom.Limiter.Burst() != 4 || custom.Limiter == a1.Limiter {
		t.Fatalf("RATE_LIMIT_QPS 2.5, RATE_LIMIT_BURST 4: %v, %v", custom.Limiter, err)
	}
	if p, _ := f.guardOptions(secret("p", TypePDNS, "PDNS_API_KEY", "k")); p.Limiter != nil {
		t.Fatal("PowerDNS is unlimited by default")
	}
	if off, _ := f.guardOptions(secret("off", TypeAWS, KeyRateLimitQPS, "0")); off.Limiter != nil {
		t.Fatal("RATE_LIMIT_QPS 0 must mean unlimited")
	}
	for _, bad := range [][]string{{KeyRateLimitQPS, "fast"}, {KeyRateLimitQPS, "-1"}, {KeyRateLimitQPS, "NaN"}, {KeyRateLimitBurst, "0"}, {KeyRateLimitBurst, "x"}} {
		if _, err := f.guardOptions(secret("bad", TypeAWS, bad...)); !errors.Is(err, ErrInvalidCredentials) {
			t.Errorf("%s=%q: got %v, want ErrInvalidCredentials", bad[0], bad[1], err)
		}
	}
	if (&Factory{ZoneListTTL: -1}).mustTTL(t) != 0 {
		t.Fatal("a negative ZoneListTTL must disable the cache")
	}
}

func (f *Factory) mustTTL(t *testing.T) time.Duration {
	t.Helper()
	o, err := f.guardOptions(&corev1.Secret{Type: TypePDNS})
	if err != nil {
		t.Fatal(err)
	}
	return o.ZoneListTTL
}

// TestBuild_UnknownTypeNamesEveryTypeInFull: a Secret of another type is ProviderNotFound, and
// the message lists the types as a Secret must spell them (type: dnsplane.io/pdns, not pdns).
func TestBuild_UnknownTypeNamesEveryTypeInFull(t *testing.T) {
	s := &corev1.Secret{Type: "pdns"}
	s.Namespace, s.Name = "team-a", "dns"
	_, err := (&Factory{}).build(t.Context(), s, provider.Resolved{})
	if !errors.Is(err, ErrProviderNotFound) {
		t.Fatalf("got %v, want ErrProviderNotFound", err)
	}
	for _, typ := range []corev1.SecretType{TypeLocal, TypePDNS, TypeRFC2136, TypeAWS, TypeGoogle, TypeAzure, TypeWebhook} {
		if !strings.Contains(err.Error(), string(typ)+",") && !strings.Contains(err.Error(), string(typ)+")") {
			t.Errorf("the message does not name %s in full: %v", typ, err)
		}
	}
}
