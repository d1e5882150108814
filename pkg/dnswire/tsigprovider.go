package dnswire

import (
	"crypto/hmac"
	"crypto/md5" // #nosec G501 -- HMAC-MD5 is a TSIG algorithm (RFC 8945 §6), cert-manager's rfc2136 default
	"crypto/sha1"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"hash"

	"github.com/miekg/dns"
)

// TSIGProvider signs and verifies messages with the key that lookup returns for a TSIG
// record's key name (canonical, RFC 4034 §6.1): miekg/dns's TsigProvider for a dns.Server
// whose keys change while it runs. It computes HMAC-SHA1, -SHA224, -SHA256, -SHA384, -SHA512
// and HMAC-MD5 (RFC 8945 §6; miekg/dns dropped MD5, which cert-manager's rfc2136 solver still
// defaults to). A key name lookup does not know gets dns.ErrSecret, an algorithm other than the
// key's dns.ErrKeyAlg, a MAC that does not match dns.ErrSig; miekg/dns checks the time.
type TSIGProvider func(name string) (TSIGKey, bool)

// Generate returns the MAC of msg under t's key (dns.TsigProvider).
func (p TSIGProvider) Generate(msg []byte, t *dns.TSIG) ([]byte, error) {
	k, ok := p(Canonical(t.Hdr.Name))
	if !ok {
		return nil, dns.ErrSecret
	}
	if Canonical(t.Algorithm) != Canonical(k.Algorithm) {
		return nil, dns.ErrKeyAlg
	}
	return HMAC(k.Algorithm, k.Secret, msg)
}

// Verify checks t's MAC of msg (dns.TsigProvider).
func (p TSIGProvider) Verify(msg []byte, t *dns.TSIG) error {
	b, err := p.Generate(msg, t)
	if err != nil {
		return err
	}
	mac, err := hex.DecodeString(t.MAC)
	if err != nil {
		return dns.ErrSig
	}
	if !hmac.Equal(b, mac) {
		return dns.ErrSig
	}
	return nil
}

// HMAC returns the HMAC of msg with algorithm (miekg/dns's name, any case) and secret (base64).
// Errors: dns.ErrKeyAlg for an unknown algorithm; a secret that is not base64 (never quoted).
func HMAC(algorithm, secret string, msg []byte) ([]byte, error) {
	raw, err := base64.StdEncoding.DecodeString(secret)
	if err != nil {
		return nil, fmt.Errorf("TSIG secret is not base64")
	}
	var h hash.Hash
	switch Canonical(algorithm) {
	case dns.HmacSHA1:
		h = hmac.New(sha1.New, raw)
	case dns.HmacSHA224:
		h = hmac.New(sha256.New224, raw)
	case dns.HmacSHA256:
		h = hmac.New(sha256.New, raw)
	case dns.HmacSHA384:
		h = hmac.New(sha512.New384, raw)
	case dns.HmacSHA512:
		h = hmac.New(sha512.New, raw)
	case dns.HmacMD5:
		h = hmac.New(md5.New, raw)
	default:
		return nil, dns.ErrKeyAlg
	}
	h.Write(msg)
	return h.Sum(nil), nil
}
