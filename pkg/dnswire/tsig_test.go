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

// oneKey is a client's TSIG provider of its one key.
type oneKey TSIGKey

func (k oneKey) Generate(msg []byte, _ *dns.TSIG) ([]byte, error) {
	return HMAC(k.Algorithm, k.Secret, msg)
}

func (k oneKey) Verify(msg []byte, t *dns.TSIG) error {
	b, err := k.Generate(msg, t)
	if err != nil {
		return err
	}
	if fmt.Sprintf("%x", b) != strings.ToLower(t.MAC) {
		return dns.ErrSig
	}
	return nil
}

// TestTSIGProvider_SignsAndVerifiesEveryAlgorithm pins, for each algorithm, MD5 included, that a
// request a client signs verifies against the server's provider, which is asked for the key
// name and the request's zone; that the response it signs verifies at the client; and that an
// unknown key, another algorithm, another secret or the key of another zone does not verify.
func TestTSIGProvider_SignsAndVerifiesEveryAlgorithm(t *testing.T) {
	const secret = "cGFzc3dvcmQ="
	for _, alg := range []string{dns.HmacSHA1, dns.HmacSHA224, dns.HmacSHA256, dns.HmacSHA384, dns.HmacSHA512, dns.HmacMD5} {
		key := TSIGKey{Name: "k.", Algorithm: alg, Secret: secret}
		server := TSIGProvider(func(name, qname string) (TSIGKey, bool) { return key, name == "k." && qname == "example.com." })
		req := new(dns.Msg)
		req.SetUpdate("Example.com.")
		req.SetTsig("K.", alg, 300, time.Now().Unix())
		wire, reqMAC, err := dns.TsigGenerateWithProvider(req, oneKey(key), "", false)
		if err != nil {
			t.Fatalf("%s: sign: %v", alg, err)
		}
		if err := dns.TsigVerifyWithProvider(wire, server, "", false); err != nil {
			t.Errorf("%s: verify: %v", alg, err)
		}
		resp := new(dns.Msg)
		resp.SetReply(req)
		resp.SetTsig("k.", alg, 300, time.Now().Unix())
		rwire, _, err := dns.TsigGenerateWithProvider(resp, server, reqMAC, false)
		if err != nil {
			t.Fatalf("%s: the server signs its response: %v", alg, err)
		}
		if err := dns.TsigVerifyWithProvider(rwire, oneKey(key), reqMAC, false); err != nil {
			t.Errorf("%s: the client verifies the response: %v", alg, err)
		}
		for what, p := range map[string]TSIGProvider{
			"another secret": func(string, string) (TSIGKey, bool) {
				return TSIGKey{Name: "k.", Algorithm: alg, Secret: "b3RoZXI="}, true
			},
			"no key": func(string, string) (TSIGKey, bool) { return TSIGKey{}, false },
			"another zone's key": func(_, qname string) (TSIGKey, bool) {
				return key, qname == "other.example."
			},
			"another algorithm": func(string, string) (TSIGKey, bool) {
				a := dns.HmacSHA256
				if alg == a {
					a = dns.HmacSHA512
				}
				return TSIGKey{Name: "k.", Algorithm: a, Secret: secret}, true
			},
		} {
			if err := dns.TsigVerifyWithProvider(wire, p, "", false); err == nil {
				t.Errorf("%s: verified with %s", alg, what)
			}
		}
	}
}
