package dnswire

import (
	"encoding/base64"
	"errors"
	"fmt"
	"strings"

	"github.com/miekg/dns"
)

// TSIGFudge is the time, in seconds, a signed message may be off the receiver's clock
// (RFC 8945 §5.2.3 recommends 300).
const TSIGFudge = 300

// TSIGKey is a TSIG key (RFC 8945) shared with the secondaries. Its String and GoString never
// show the secret.
type TSIGKey struct {
	// Name is the key's name (a domain name; stored as an FQDN).
	Name string
	// Algorithm is an HMAC algorithm of miekg/dns: dns.HmacSHA256 ("hmac-sha256."), ...
	Algorithm string
	// Secret is the shared secret, base64 (as tsig-keygen and BIND key files hold it).
	Secret string
}

// tsigAlgorithms are the algorithms TSIGAlgorithm accepts, by their names in BIND key files.
var tsigAlgorithms = map[string]string{
	"hmac-sha1": dns.HmacSHA1, "hmac-sha224": dns.HmacSHA224, "hmac-sha256": dns.HmacSHA256,
	"hmac-sha384": dns.HmacSHA384, "hmac-sha512": dns.HmacSHA512,
}

// TSIGAlgorithm returns miekg/dns's name (dns.HmacSHA256, ...) of the HMAC algorithm called
// name in BIND key files: hmac-sha1, -sha224, -sha256, -sha384 or -sha512, any case, with or
// without the trailing dot; false for any other.
func TSIGAlgorithm(name string) (string, bool) {
	alg, ok := tsigAlgorithms[strings.TrimSuffix(strings.ToLower(name), ".")]
	return alg, ok
}

// NewTSIGKey returns the key name with algorithm (TSIGAlgorithm) and secret, which is either
// the base64 secret or the text of a BIND key file (tsig-keygen's output, whose `secret "...";`
// it takes). Errors name the part that is wrong, never the secret.
func NewTSIGKey(name, algorithm, secret string) (TSIGKey, error) {
	if _, ok := dns.IsDomainName(name); !ok || strings.Trim(name, ".") == "" {
		return TSIGKey{}, fmt.Errorf("TSIG key name %q is not a domain name", name)
	}
	alg, ok := TSIGAlgorithm(algorithm)
	if !ok {
		return TSIGKey{}, fmt.Errorf("TSIG algorithm %q: want hmac-sha1, hmac-sha224, hmac-sha256, hmac-sha384 or hmac-sha512", algorithm)
	}
	secret = strings.TrimSpace(secret)
	if _, rest, found := strings.Cut(secret, `secret "`); found {
		secret, _, _ = strings.Cut(rest, `"`)
	}
	if b, err := base64.StdEncoding.DecodeString(secret); err != nil || len(b) == 0 {
		return TSIGKey{}, errors.New("TSIG secret is not base64 (nor a key file with a secret \"...\" line)")
	}
	return TSIGKey{Name: Fqdn(name), Algorithm: alg, Secret: secret}, nil
}

// String shows the name and algorithm, never the secret.
func (k TSIGKey) String() string { return k.Name + " " + k.Algorithm + " (secret redacted)" }

// GoString is String, for %#v.
func (k TSIGKey) GoString() string { return k.String() }

// Secrets returns the key as miekg's TsigSecret map (key name -> secret) for a dns.Server or
// dns.Client, or nil for no key (k nil).
func (k *TSIGKey) Secrets() map[string]string {
	if k == nil {
		return nil
	}
	return map[string]string{k.Name: k.Secret}
}
