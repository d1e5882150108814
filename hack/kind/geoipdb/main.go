// Command geoipdb writes a small MaxMind-format GeoIP database (the GeoIP2 Country layout:
// country.iso_code and continent.code) for trying `geo` Gslbs on kind (docs/install.md, "Geo
// answers on kind") and for the kind geo scenario (e2e/kind_geo_test.go, through
// hack/e2e-kind.sh). dnsplane ships no database; this one holds only the networks
// given on the command line, reserved and documentation prefixes allowed.
//
// Usage:
//
//	go run ./hack/kind/geoipdb -o geo.mmdb 198.51.100.0/24=DE/EU 203.0.113.0/24=CA/NA ...
//
// Each argument is CIDR=COUNTRY/CONTINENT: an ISO 3166-1 alpha-2 country code and a continent
// code as MaxMind writes them (AF AN AS EU NA OC SA); either may be empty ("10.0.0.0/8=/EU").
// IPv4 networks are also reachable through their IPv4-mapped IPv6 forms, as in MaxMind's own
// IPv6 databases. It exits 2 on a malformed argument and 1 when the file cannot be written.
package main

import (
	"flag"
	"fmt"
	"net/netip"
	"os"
	"strings"

	"github.com/dnsplane/dnsplane/internal/testing/geotest"
)

func main() {
	out := flag.String("o", "geo.mmdb", "the file to write")
	flag.Parse()
	nets, err := parseArgs(flag.Args())
	if err != nil {
		fmt.Fprintln(os.Stderr, "geoipdb:", err)
		os.Exit(2)
	}
	if err := geotest.WriteFile(*out, nets...); err != nil {
		fmt.Fprintln(os.Stderr, "geoipdb:", err)
		os.Exit(1)
	}
}

// continents are the continent codes MaxMind writes.
var continents = map[string]bool{"AF": true, "AN": true, "AS": true, "EU": true, "NA": true, "OC": true, "SA": true}

// parseArgs parses CIDR=COUNTRY/CONTINENT arguments ("" leaves a code out); a CIDR must be
// canonical (no host bits).
func parseArgs(args []string) ([]geotest.Network, error) {
	if len(args) == 0 {
		return nil, fmt.Errorf("no network given: want CIDR=COUNTRY/CONTINENT arguments")
	}
	var nets []geotest.Network
	for _, a := range args {
		cidr, codes, ok := strings.Cut(a, "=")
		country, continent, ok2 := strings.Cut(codes, "/")
		if !ok || !ok2 {
			return nil, fmt.Errorf("%q: want CIDR=COUNTRY/CONTINENT", a)
		}
		p, err := netip.ParsePrefix(cidr)
		if err != nil {
			return nil, fmt.Errorf("%q: %w", a, err)
		}
		if p.Masked() != p {
			return nil, fmt.Errorf("%q: %s has host bits set (want %s)", a, p, p.Masked())
		}
		if country != "" && (len(country) != 2 || strings.ToUpper(country) != country || strings.Trim(country, "ABCDEFGHIJKLMNOPQRSTUVWXYZ") != "") {
			return nil, fmt.Errorf("%q: country %q: want two upper-case letters (ISO 3166-1 alpha-2)", a, country)
		}
		if continent != "" && !continents[continent] {
			return nil, fmt.Errorf("%q: continent %q: want one of AF AN AS EU NA OC SA", a, continent)
		}
		nets = append(nets, geotest.Network{CIDR: p.String(), Country: country, Continent: continent})
	}
	return nets, nil
}
