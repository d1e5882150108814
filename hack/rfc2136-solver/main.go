// Command rfc2136-solver runs cert-manager's own RFC 2136 DNS-01 solver code
// (github.com/cert-manager/cert-manager/pkg/issuer/acme/dns/rfc2136, its DNSProvider) once, so
// that dnsplane's tests drive the exact client cert-manager's built-in rfc2136 solver is, without
// cert-manager in dnsplane's go.mod. Built by build.sh; launched by internal/testing/rfc2136solver.
//
// Usage:
//
//	rfc2136-solver present|cleanup --nameserver 127.0.0.1:5353 --zone c1.example.com. \
//	  --fqdn _acme-challenge.c1.example.com. --value <token> --tsig-key-name acme. \
//	  --tsig-algorithm HMACSHA256 [--network udp|tcp]
//
// The TSIG secret (base64) is read from $RFC2136_TSIG_SECRET, or --tsig-secret. It prints "ok"
// on success; on failure the solver's error on stderr (e.g. "DNS update failed. Server replied:
// NOTAUTH") and exit status 1; bad usage exits 2.
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/cert-manager/cert-manager/pkg/issuer/acme/dns/rfc2136"
)

func main() {
	if len(os.Args) < 2 || (os.Args[1] != "present" && os.Args[1] != "cleanup") {
		fmt.Fprintln(os.Stderr, "usage: rfc2136-solver present|cleanup --nameserver host:port --zone Z --fqdn F --value V --tsig-key-name K --tsig-algorithm A [--network udp|tcp]")
		os.Exit(2)
	}
	fs := flag.NewFlagSet(os.Args[1], flag.ExitOnError)
	nameserver := fs.String("nameserver", "", "host:port of the DNS server")
	zone := fs.String("zone", "", "the zone (FQDN) the UPDATE names")
	fqdn := fs.String("fqdn", "", "the challenge record's name (FQDN)")
	value := fs.String("value", "", "the challenge token (TXT value)")
	keyName := fs.String("tsig-key-name", "", "TSIG key name")
	secret := fs.String("tsig-secret", os.Getenv("RFC2136_TSIG_SECRET"), "TSIG secret, base64 (default $RFC2136_TSIG_SECRET)")
	alg := fs.String("tsig-algorithm", "", "TSIG algorithm as cert-manager spells it: HMACMD5 (its default), HMACSHA1, HMACSHA256, HMACSHA512")
	network := fs.String("network", "udp", "udp or tcp (cert-manager's protocol field)")
	_ = fs.Parse(os.Args[2:])
	p, err := rfc2136.NewDNSProviderCredentials(*nameserver, *alg, *keyName, *secret, rfc2136.WithNetwork(*network))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	if os.Args[1] == "present" {
		err = p.Present("", *fqdn, *zone, *value)
	} else {
		err = p.CleanUp("", *fqdn, *zone, *value)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Println("ok")
}
