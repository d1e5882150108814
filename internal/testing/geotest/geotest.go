// Package geotest writes small MaxMind-format GeoIP databases for tests (issue 34: tests make
// their own with mmdbwriter; none is shipped). It must not be imported by non-test code.
package geotest

import (
	"bytes"
	"net"
	"os"
	"path/filepath"
	"testing"

	"github.com/maxmind/mmdbwriter"
	"github.com/maxmind/mmdbwriter/mmdbtype"
)

// Network is one network of a test database and what it holds, in the GeoIP2 Country layout.
type Network struct {
	// CIDR is the network, e.g. "192.0.2.0/24" (IPv4 networks are aliased into the IPv6 tree).
	CIDR string
	// Country is country.iso_code; "" leaves country out.
	Country string
	// RegisteredCountry is registered_country.iso_code; "" leaves it out.
	RegisteredCountry string
	// Continent is continent.code; "" leaves it out.
	Continent string
}

// Bytes returns an IPv6 GeoIP2-Country-style mmdb holding nets (reserved networks allowed, so
// that loopback and documentation prefixes can be used).
func Bytes(t testing.TB, nets ...Network) []byte {
	t.Helper()
	w, err := mmdbwriter.New(mmdbwriter.Options{DatabaseType: "dnsplane-Test-Country", RecordSize: 24, IncludeReservedNetworks: true})
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range nets {
		_, ipnet, err := net.ParseCIDR(n.CIDR)
		if err != nil {
			t.Fatalf("geotest: %v", err)
		}
		rec := mmdbtype.Map{}
		if n.Country != "" {
			rec["country"] = mmdbtype.Map{"iso_code": mmdbtype.String(n.Country)}
		}
		if n.RegisteredCountry != "" {
			rec["registered_country"] = mmdbtype.Map{"iso_code": mmdbtype.String(n.RegisteredCountry)}
		}
		if n.Continent != "" {
			rec["continent"] = mmdbtype.Map{"code": mmdbtype.String(n.Continent)}
		}
		if err := w.Insert(ipnet, rec); err != nil {
			t.Fatalf("geotest: insert %s: %v", n.CIDR, err)
		}
	}
	var b bytes.Buffer
	if _, err := w.WriteTo(&b); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// Write writes Bytes(nets) to a new file in t.TempDir() and returns its path.
func Write(t testing.TB, nets ...Network) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "geo.mmdb")
	if err := os.WriteFile(p, Bytes(t, nets...), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}
