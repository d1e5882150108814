package factory

import (
	"errors"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
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
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := &corev1.Secret{Type: TypePDNS, Data: map[string][]byte{}}
			for k, v := range c.data {
				s.Data[k] = []byte(v)
			}
			p, err := pdnsFromSecret(s)
			if c.ok {
				if err != nil || p == nil {
					t.Fatalf("got %v, want a provider", err)
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
