package dnswire

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"
)

const testSecret = "c2VjcmV0LXNlY3JldC1zZWNyZXQtc2VjcmV0LXNlY3JldA=="

// TestNewTSIGKey: the --local-tsig-key parts, a base64 secret or a tsig-keygen key file, and
// errors that never hold the secret; String redacts it.
func TestNewTSIGKey(t *testing.T) {
	keyFile := "key \"xfr\" {\n\talgorithm hmac-sha256;\n\tsecret \"" + testSecret + "\";\n};\n"
	for _, tc := range []struct {
		name, alg, secret string
		want              string // the error's substring; "" = ok
	}{
		{"xfr", "hmac-sha256", testSecret, ""},
		{"Xfr.Key.", "HMAC-SHA512.", testSecret + "\n", ""},
		{"xfr", "hmac-sha256", keyFile, ""},
		{"xfr", "hmac-md5", testSecret, `TSIG algorithm "hmac-md5"`},
		{"", "hmac-sha256", testSecret, "not a domain name"},
		{"xfr", "hmac-sha256", "not base64!", "not base64"},
	} {
		k, err := NewTSIGKey(tc.name, tc.alg, tc.secret)
		switch {
		case tc.want == "" && err != nil:
			t.Errorf("NewTSIGKey(%q, %q): %v", tc.name, tc.alg, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("NewTSIGKey(%q, %q) = %v, want an error with %q", tc.name, tc.alg, err, tc.want)
		case err != nil && strings.Contains(err.Error(), tc.secret):
			t.Errorf("the error shows the secret: %v", err)
		case err == nil && (k.Secret != testSecret || !strings.HasSuffix(k.Name, ".") || !strings.HasSuffix(k.Algorithm, ".")):
			t.Errorf("NewTSIGKey(%q, %q) = %+v", tc.name, tc.alg, k)
		}
		if s := fmt.Sprintf("%v %+v %#v %s", k, k, k, &k); strings.Contains(s, testSecret) {
			t.Errorf("the key prints its secret: %s", s)
		}
	}
}

// TestTSIGProvider_SignsAndVerifiesEveryAlgorithm pins that a message signed by a miekg/dns
// client with each algorithm, MD5 included, verifies against the provider, and that an unknown
// key, another algorithm or another secret does not.
func TestTSIGProvider_SignsAndVerifiesEveryAlgorithm(t *testing.T) {
	const secret = "cGFzc3dvcmQ="
	for _, alg := range []string{dns.HmacSHA1, dns.HmacSHA224, dns.HmacSHA256, dns.HmacSHA384, dns.HmacSHA512, dns.HmacMD5} {
		key := TSIGKey{Name: "k.", Algorithm: alg, Secret: secret}
		p := TSIGProvider(func(name string) (TSIGKey, bool) { return key, name == "k." })
		m := new(dns.Msg)
		m.SetUpdate("example.com.")
		m.SetTsig("K.", alg, 300, time.Now().Unix())
		wire, _, err := dns.TsigGenerateWithProvider(m, p, "", false)
		if err != nil {
			t.Fatalf("%s: sign: %v", alg, err)
		}
		if err := dns.TsigVerifyWithProvider(wire, p, "", false); err != nil {
			t.Errorf("%s: verify: %v", alg, err)
		}
		other := TSIGProvider(func(string) (TSIGKey, bool) {
			return TSIGKey{Name: "k.", Algorithm: alg, Secret: "b3RoZXI="}, true
		})
		if err := dns.TsigVerifyWithProvider(wire, other, "", false); err == nil {
			t.Errorf("%s: verified with another secret", alg)
		}
		none := TSIGProvider(func(string) (TSIGKey, bool) { return TSIGKey{}, false })
		if err := dns.TsigVerifyWithProvider(wire, none, "", false); err == nil {
			t.Errorf("%s: verified with no key", alg)
		}
		wrongAlg := TSIGProvider(func(string) (TSIGKey, bool) {
			a := dns.HmacSHA256
			if alg == a {
				a = dns.HmacSHA512
			}
			return TSIGKey{Name: "k.", Algorithm: a, Secret: secret}, true
		})
		if err := dns.TsigVerifyWithProvider(wire, wrongAlg, "", false); err == nil {
			t.Errorf("%s: verified with a key of another algorithm", alg)
		}
	}
}
