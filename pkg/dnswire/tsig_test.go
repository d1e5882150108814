package dnswire

import (
	"fmt"
	"strings"
	"testing"
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
