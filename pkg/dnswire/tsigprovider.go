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

// TSIGProvider is a server's TSIG provider (miekg/dns's dns.TsigProvider for a dns.Server):
// it verifies requests and signs their responses with the key that lookup returns for a TSIG
// record's key name and the message's first question name (both canonical, RFC 4034 §6.1;
// qname "" when there is none), so that a server's keys may change while it runs and depend on
// the zone an UPDATE names (RFC 2136 §2.3): two tenants' keys of the same name never verify
// each other's messages. It computes HMAC-SHA1, -SHA224, -SHA256, -SHA384, -SHA512 and
// HMAC-MD5 (RFC 8945 §6; miekg/dns dropped MD5, which cert-manager's rfc2136 solver still
// defaults to). A key lookup does not know gets dns.ErrSecret, an algorithm other than the key's
// dns.ErrKeyAlg, a MAC that does not match dns.ErrSig; miekg/dns checks the time.
//
// Server side only: Verify reads the question of a request (the MACed data starts with its
// header), Generate that of a response (the MACed data starts with the request's MAC, RFC 8945
// §4.3.1). A client signs with a provider of its one key.
type TSIGProvider func(name, qname string) (TSIGKey, bool)

// Generate returns the MAC of a response under t's key (dns.TsigProvider).
func (p TSIGProvider) Generate(msg []byte, t *dns.TSIG) ([]byte, error) {
	return p.mac(msg, t, responseQuestionName(msg))
}

// Verify checks t's MAC of a request (dns.TsigProvider).
func (p TSIGProvider) Verify(msg []byte, t *dns.TSIG) error {
	b, err := p.mac(msg, t, questionName(msg))
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

func (p TSIGProvider) mac(msg []byte, t *dns.TSIG, qname string) ([]byte, error) {
	k, ok := p(Fqdn(t.Hdr.Name), qname)
	if !ok {
		return nil, dns.ErrSecret
	}
	if Fqdn(t.Algorithm) != Fqdn(k.Algorithm) {
		return nil, dns.ErrKeyAlg
	}
	return HMAC(k.Algorithm, k.Secret, msg)
}

// questionName returns the canonical name of the first question of msg, a message in wire
// format (RFC 1035 §4.1), or "" when it has none or it does not parse.
func questionName(msg []byte) string {
	const headerLen = 12
	if len(msg) < headerLen || (msg[4] == 0 && msg[5] == 0) { // QDCOUNT 0
		return ""
	}
	name, _, err := dns.UnpackDomainName(msg, headerLen)
	if err != nil {
		return ""
	}
	return Fqdn(name)
}

// responseQuestionName is questionName of the response in a response's MACed data: the
// request's MAC size (2 bytes) and MAC, then the response (RFC 8945 §4.3.1); a response to an
// unsigned request has no MAC before it (size 0).
func responseQuestionName(msg []byte) string {
	if len(msg) < 2 {
		return ""
	}
	n := 2 + int(msg[0])<<8 + int(msg[1])
	if n > len(msg) {
		return ""
	}
	return questionName(msg[n:])
}

// HMAC returns the HMAC of msg with algorithm (miekg/dns's name, any case) and secret (base64).
// Errors: dns.ErrKeyAlg for an unknown algorithm; a secret that is not base64 (never quoted).
func HMAC(algorithm, secret string, msg []byte) ([]byte, error) {
	raw, err := base64.StdEncoding.DecodeString(secret)
	if err != nil {
		return nil, fmt.Errorf("TSIG secret is not base64")
	}
	newHash, ok := map[string]func() hash.Hash{
		dns.HmacSHA1: sha1.New, dns.HmacSHA224: sha256.New224, dns.HmacSHA256: sha256.New,
		dns.HmacSHA384: sha512.New384, dns.HmacSHA512: sha512.New, dns.HmacMD5: md5.New,
	}[Fqdn(algorithm)]
	if !ok {
		return nil, dns.ErrKeyAlg
	}
	h := hmac.New(newHash, raw)
	h.Write(msg)
	return h.Sum(nil), nil
}

// ClientProvider returns a client's TSIG provider of k alone (miekg/dns's dns.TsigProvider for
// a dns.Client): it signs requests and verifies responses with k, HMAC-MD5 included.
func (k TSIGKey) ClientProvider() dns.TsigProvider { return clientKey(k) }

type clientKey TSIGKey

func (k clientKey) Generate(msg []byte, _ *dns.TSIG) ([]byte, error) {
	return HMAC(k.Algorithm, k.Secret, msg)
}

func (k clientKey) Verify(msg []byte, t *dns.TSIG) error {
	b, err := k.Generate(msg, t)
	if err != nil {
		return err
	}
	mac, err := hex.DecodeString(t.MAC)
	if err != nil || !hmac.Equal(b, mac) {
		return dns.ErrSig
	}
	return nil
}
