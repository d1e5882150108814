package factory

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// TestBackend_SameAccountWhateverTheCredentials: two Secrets that reach one account have one
// Backend whatever credentials they hold, other accounts another, and no Backend carries a
// credential.
func TestBackend_SameAccountWhateverTheCredentials(t *testing.T) {
	sec := func(typ corev1.SecretType, kv ...string) *corev1.Secret {
		s := &corev1.Secret{Type: typ, Data: map[string][]byte{}}
		for i := 0; i+1 < len(kv); i += 2 {
			s.Data[kv[i]] = []byte(kv[i+1])
		}
		return s
	}
	same := []struct {
		name string
		a, b *corev1.Secret
	}{
		{"embedded", sec(TypeLocal), sec(TypeLocal, "DNS_ADDRESS", "127.0.0.1:53")},
		{"PowerDNS: keys and spelling of the URL", sec(TypePDNS, "PDNS_API_URL", "http://127.0.0.1:8081", "PDNS_API_KEY", "k1"),
			sec(TypePDNS, "PDNS_API_URL", "HTTP://127.0.0.1:8081/", "PDNS_API_KEY", "k2", "PDNS_SERVER_ID", "localhost")},
		{"RFC 2136: default port, TSIG keys", sec(TypeRFC2136, "RFC2136_HOST", "NS.example.test", "RFC2136_TSIG_SECRET", "s1"),
			sec(TypeRFC2136, "RFC2136_HOST", "ns.example.test", "RFC2136_PORT", "53", "RFC2136_TSIG_SECRET", "s2")},
		{"Route 53: any account", sec(TypeAWS, "AWS_ACCESS_KEY_ID", "a1"), sec(TypeAWS, "AWS_ACCESS_KEY_ID", "a2", "AWS_ROLE_ARN", "arn:x")},
		{"webhook: headers and spelling of the URL", sec(TypeWebhook, KeyWebhookURL, "http://127.0.0.1:8888", KeyWebhookHeaders, "X-Token: t1"),
			sec(TypeWebhook, KeyWebhookURL, "HTTP://127.0.0.1:8888/", KeyWebhookHeaders, "X-Token: t2")},
		{"Azure: case of the resource group", sec(TypeAzure, "AZURE_SUBSCRIPTION_ID", "S", "AZURE_RESOURCE_GROUP", "RG", "AZURE_CLIENT_SECRET", "c1"),
			sec(TypeAzure, "AZURE_SUBSCRIPTION_ID", "s", "AZURE_RESOURCE_GROUP", "rg", "AZURE_CLIENT_SECRET", "c2")},
	}
	for _, tc := range same {
		if a, b := Backend(tc.a), Backend(tc.b); a != b {
			t.Errorf("%s: %q != %q", tc.name, a, b)
		}
	}
	differ := []struct {
		name string
		a, b *corev1.Secret
	}{
		{"PowerDNS: another server", sec(TypePDNS, "PDNS_API_URL", "http://127.0.0.1:8081"), sec(TypePDNS, "PDNS_API_URL", "http://127.0.0.1:9081")},
		{"PowerDNS: another server ID", sec(TypePDNS, "PDNS_API_URL", "http://127.0.0.1:8081"), sec(TypePDNS, "PDNS_API_URL", "http://127.0.0.1:8081", "PDNS_SERVER_ID", "two")},
		{"RFC 2136: another port", sec(TypeRFC2136, "RFC2136_HOST", "127.0.0.1"), sec(TypeRFC2136, "RFC2136_HOST", "127.0.0.1", "RFC2136_PORT", "5353")},
		{"Cloud DNS: another project", sec(TypeGoogle, "GOOGLE_PROJECT_ID", "p1"), sec(TypeGoogle, "GOOGLE_PROJECT_ID", "p2")},
		{"embedded and PowerDNS", sec(TypeLocal), sec(TypePDNS, "PDNS_API_URL", "http://127.0.0.1:8081")},
	}
	for _, tc := range differ {
		if a, b := Backend(tc.a), Backend(tc.b); a == b {
			t.Errorf("%s: both %q", tc.name, a)
		}
	}
	if got := Backend(sec(TypePDNS, "PDNS_API_URL", "http://user:hunter2@127.0.0.1:8081", "PDNS_API_KEY", "topsecret")); got != "dnsplane.io/pdns http://127.0.0.1:8081 server localhost" {
		t.Errorf("Backend carries more than the account: %q", got)
	}
}
