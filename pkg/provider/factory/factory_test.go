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
