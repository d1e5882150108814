package factory

import (
	"errors"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

func TestServedBy_PrimaryThenSecondariesOnlyWhereSerialsMeanSomething(t *testing.T) {
	f := &Factory{LocalAddr: "127.0.0.1:5300", LocalNotify: []string{"127.0.0.21:53", "127.0.0.22:53"}}
	cases := []struct {
		name    string
		typ     corev1.SecretType
		data    map[string]string
		dnsAddr string
		want    []string
		err     string
	}{
		{"embedded: the server, then --local-notify", TypeLocal, nil, "127.0.0.1:5300", []string{"127.0.0.1:5300", "127.0.0.21:53", "127.0.0.22:53"}, ""},
		{"embedded listening on every address (the chart): asked on loopback", TypeLocal, nil, "[::]:5353", []string{"127.0.0.1:5353", "127.0.0.21:53", "127.0.0.22:53"}, ""},
		{"embedded listening on 0.0.0.0", TypeLocal, nil, "0.0.0.0:5353", []string{"127.0.0.1:5353", "127.0.0.21:53", "127.0.0.22:53"}, ""},
		{"embedded with more secondaries, one twice", TypeLocal, map[string]string{KeySecondaryAddresses: " 127.0.0.23:53, 127.0.0.21:53 ,"}, "127.0.0.1:5300",
			[]string{"127.0.0.1:5300", "127.0.0.21:53", "127.0.0.22:53", "127.0.0.23:53"}, ""},
		{"pdns with DNS_ADDRESS", TypePDNS, map[string]string{KeyDNSAddress: "127.0.0.31:53"}, "127.0.0.31:53", []string{"127.0.0.31:53"}, ""},
		{"pdns without DNS_ADDRESS: no primary known", TypePDNS, map[string]string{KeySecondaryAddresses: "127.0.0.23:53"}, "192.0.2.53:53", nil, ""},
		{"rfc2136 with a secondary", TypeRFC2136, map[string]string{KeyDNSAddress: "127.0.0.41:53", KeySecondaryAddresses: "127.0.0.42:53"}, "127.0.0.41:53", []string{"127.0.0.41:53", "127.0.0.42:53"}, ""},
		{"Route 53: a serial that never moves", TypeAWS, map[string]string{KeyDNSAddress: "127.0.0.51:53"}, "127.0.0.51:53", nil, ""},
		{"a secondary without a port", TypePDNS, map[string]string{KeyDNSAddress: "127.0.0.31:53", KeySecondaryAddresses: "127.0.0.32"}, "127.0.0.31:53", nil, KeySecondaryAddresses},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := &corev1.Secret{Type: c.typ, Data: map[string][]byte{}}
			for k, v := range c.data {
				s.Data[k] = []byte(v)
			}
			got, err := f.servedBy(s, c.dnsAddr)
			if c.err != "" {
				if !errors.Is(err, ErrInvalidCredentials) || !strings.Contains(err.Error(), c.err) {
					t.Fatalf("error %v, want ErrInvalidCredentials naming %s", err, c.err)
				}
				return
			}
			if err != nil || strings.Join(got, ",") != strings.Join(c.want, ",") {
				t.Fatalf("servedBy = %v, %v; want %v", got, err, c.want)
			}
		})
	}
}
