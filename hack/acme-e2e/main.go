// Command lego-issue obtains one certificate with lego v5 (github.com/go-acme/lego/v5) and its
// RFC 2136 DNS-01 provider (providers/dns/dnsupdate, v4's rfc2136), for dnsplane's end-to-end
// test of dynamic updates against Pebble (built from this module too: the tool directive in go.mod).
// Neither enters dnsplane's go.mod. Built by build.sh; launched by internal/testing/acmetest.
//
// Usage:
//
//	lego-issue --ca https://127.0.0.1:14000/dir --ca-cert pebble.minica.pem \
//	  --nameserver 127.0.0.1:5353 --resolver 127.0.0.1:5353 \
//	  --tsig-key acme-key. --tsig-algorithm hmac-sha256. [--zone example.test] \
//	  -d example.test -d '*.example.test'
//
// The TSIG secret (base64) is read from $DNSUPDATE_TSIG_SECRET. On success it prints the
// certificate's DNS SANs, one a line as "SAN <name>" (lego's own log lines go to stdout too),
// and exits 0; otherwise the error on stderr and exit 1.
package main

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/go-acme/lego/v5/acme"
	"github.com/go-acme/lego/v5/certcrypto"
	"github.com/go-acme/lego/v5/certificate"
	"github.com/go-acme/lego/v5/challenge/dns01"
	"github.com/go-acme/lego/v5/lego"
	"github.com/go-acme/lego/v5/providers/dns/dnsupdate"
	"github.com/go-acme/lego/v5/registration"
)

type user struct {
	key crypto.Signer
	reg *acme.ExtendedAccount
}

func (u *user) GetEmail() string                       { return "" }
func (u *user) GetRegistration() *acme.ExtendedAccount { return u.reg }
func (u *user) GetPrivateKey() crypto.Signer           { return u.key }

type domains []string

func (d *domains) String() string     { return strings.Join(*d, ",") }
func (d *domains) Set(v string) error { *d = append(*d, v); return nil }

func main() {
	ca := flag.String("ca", "", "ACME directory URL")
	caCert := flag.String("ca-cert", "", "PEM file of the root the ACME server's TLS certificate chains to")
	nameserver := flag.String("nameserver", "", "host:port the RFC 2136 UPDATEs go to")
	resolver := flag.String("resolver", "", "host:port lego asks for zones and checks propagation at")
	key := flag.String("tsig-key", "", "TSIG key name")
	zone := flag.String("zone", "", "the zone of the domains (DNSUPDATE_ZONES); empty = ask --nameserver for its SOA")
	alg := flag.String("tsig-algorithm", "hmac-sha256.", "TSIG algorithm")
	var ds domains
	flag.Var(&ds, "d", "a domain of the certificate (repeat)")
	flag.Parse()
	sans, err := issue(*ca, *caCert, *nameserver, *resolver, *key, *alg, os.Getenv("DNSUPDATE_TSIG_SECRET"), *zone, ds)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	for _, s := range sans {
		fmt.Println("SAN", s) // lego logs to stdout too
	}
}

func issue(ca, caCert, nameserver, resolver, key, alg, secret, zone string, ds []string) ([]string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	roots := x509.NewCertPool()
	pemBytes, err := os.ReadFile(caCert)
	if err != nil {
		return nil, err
	}
	if !roots.AppendCertsFromPEM(pemBytes) {
		return nil, errors.New("no certificate in " + caCert)
	}
	acctKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	u := &user{key: acctKey}
	cfg := lego.NewConfig(u)
	cfg.CADirURL = ca
	cfg.HTTPClient = &http.Client{Timeout: time.Minute, Transport: &http.Transport{TLSClientConfig: &tls.Config{RootCAs: roots}}}
	client, err := lego.NewClient(cfg)
	if err != nil {
		return nil, fmt.Errorf("lego client: %w", err)
	}
	dns01.SetDefaultClient(dns01.NewClient(&dns01.Options{RecursiveNameservers: []string{resolver}, Timeout: 5 * time.Second}))
	pcfg := dnsupdate.NewDefaultConfig()
	pcfg.Nameserver, pcfg.TSIGKey, pcfg.TSIGAlgorithm, pcfg.TSIGSecret = nameserver, key, alg, secret
	if zone != "" {
		pcfg.Zones = []string{zone}
	}
	pcfg.PropagationTimeout, pcfg.PollingInterval, pcfg.SequenceInterval = time.Minute, 200*time.Millisecond, time.Second
	p, err := dnsupdate.NewDNSProviderConfig(pcfg)
	if err != nil {
		return nil, fmt.Errorf("dnsupdate provider: %w", err)
	}
	// The zones are served by dnsplane (or PowerDNS) on a port other than 53: propagation is
	// checked at the resolver given, not at the zone's NS names on port 53.
	if err := client.Challenge.SetDNS01Provider(p, dns01.DisableAuthoritativeNssPropagationRequirement()); err != nil {
		return nil, err
	}
	if u.reg, err = client.Registration.Register(ctx, registration.RegisterOptions{TermsOfServiceAgreed: true}); err != nil {
		return nil, fmt.Errorf("register: %w", err)
	}
	res, err := client.Certificate.Obtain(ctx, certificate.ObtainRequest{Domains: ds, Bundle: true, KeyType: certcrypto.EC256})
	if err != nil {
		return nil, fmt.Errorf("obtain: %w", err)
	}
	block, _ := pem.Decode(res.Certificate)
	if block == nil {
		return nil, errors.New("no PEM certificate obtained")
	}
	cert, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		return nil, err
	}
	return cert.DNSNames, nil
}
