package dynupdate

import (
	"encoding/base64"
	"errors"
	"fmt"
	"strings"

	"github.com/miekg/dns"

	dnsv1 "github.com/dnsplane/dnsplane/apis/v1alpha1"
	"github.com/dnsplane/dnsplane/pkg/dnswire"
)

// ErrInvalidKey is wrapped by ParseKey's errors: the Secret cannot be used as a TSIG key.
var ErrInvalidKey = errors.New("invalid TSIG key Secret")

// Key is one TSIG key (RFC 8945): Name a lower-case FQDN, Algorithm miekg/dns's name
// (dns.HmacSHA256, ...), Secret base64. Its String never shows the secret.
type Key = dnswire.TSIGKey

// algorithms maps the algorithm names a Secret may hold (RFC 8945 §6, lower-case, without
// the trailing dot) to miekg/dns's.
var algorithms = map[string]string{
	"hmac-md5":                 dns.HmacMD5,
	"hmac-md5.sig-alg.reg.int": dns.HmacMD5,
	"hmac-sha1":                dns.HmacSHA1,
	"hmac-sha224":              dns.HmacSHA224,
	"hmac-sha256":              dns.HmacSHA256,
	"hmac-sha384":              dns.HmacSHA384,
	"hmac-sha512":              dns.HmacSHA512,
}

// ParseKey reads the key of a Secret of type typ with data (dnsv1.SecretTypeTSIG and its
// keys name, algorithm, secret). Errors wrap ErrInvalidKey and never quote the secret.
func ParseKey(typ string, data map[string][]byte) (Key, error) {
	if typ != dnsv1.SecretTypeTSIG {
		return Key{}, fmt.Errorf("%w: type %q, want %s", ErrInvalidKey, typ, dnsv1.SecretTypeTSIG)
	}
	name := strings.ToLower(strings.TrimSpace(string(data[dnsv1.TSIGSecretName])))
	if name == "" {
		return Key{}, fmt.Errorf("%w: no %q", ErrInvalidKey, dnsv1.TSIGSecretName)
	}
	name = dns.Fqdn(name)
	if _, ok := dns.IsDomainName(name); !ok || name == "." {
		return Key{}, fmt.Errorf("%w: %q is not a domain name", ErrInvalidKey, dnsv1.TSIGSecretName)
	}
	alg := dnswire.Dotless(string(data[dnsv1.TSIGSecretAlgorithm]))
	mapped, ok := algorithms[alg]
	if !ok {
		return Key{}, fmt.Errorf("%w: %q is %q, want one of hmac-sha256, hmac-sha512, hmac-sha384, hmac-sha224, hmac-sha1, hmac-md5",
			ErrInvalidKey, dnsv1.TSIGSecretAlgorithm, alg)
	}
	secret := strings.TrimSpace(string(data[dnsv1.TSIGSecretSecret]))
	raw, err := base64.StdEncoding.DecodeString(secret)
	switch {
	case secret == "":
		return Key{}, fmt.Errorf("%w: no %q", ErrInvalidKey, dnsv1.TSIGSecretSecret)
	case err != nil:
		return Key{}, fmt.Errorf("%w: %q is not base64", ErrInvalidKey, dnsv1.TSIGSecretSecret)
	case len(raw) == 0:
		return Key{}, fmt.Errorf("%w: %q is empty", ErrInvalidKey, dnsv1.TSIGSecretSecret)
	}
	return Key{Name: name, Algorithm: mapped, Secret: secret}, nil
}
