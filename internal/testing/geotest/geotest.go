// Package geotest writes small MaxMind-format GeoIP databases for tests and for the hack/
// tools that need one (hack/kind/geoipdb, hack/dnsbench): tests make their own with
// mmdbwriter and none is shipped. It must not be imported by the manager's packages.
package geotest

import (
	"bytes"
	"fmt"
	"io"
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

// Encode writes an IPv6 GeoIP2-Country-style mmdb (24-bit records) holding nets to w,
// reserved networks allowed, so that loopback, private and documentation prefixes can be used;
// IPv4 networks are also reachable through their IPv4-mapped IPv6 forms. Errors: a CIDR that
// does not parse, a network mmdbwriter refuses, or w's.
func Encode(w io.Writer, nets ...Network) error {
	db, err := mmdbwriter.New(mmdbwriter.Options{DatabaseType: "dnsplane-Test-Country", RecordSize: 24, IncludeReservedNetworks: true})
	if err != nil {
		return fmt.Errorf("new database: %w", err)
	}
	for _, n := range nets {
		_, ipnet, err := net.ParseCIDR(n.CIDR)
		if err != nil {
			return fmt.Errorf("network %q: %w", n.CIDR, err)
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
		if err := db.Insert(ipnet, rec); err != nil {
			return fmt.Errorf("insert %s: %w", n.CIDR, err)
		}
	}
	if _, err := db.WriteTo(w); err != nil {
		return fmt.Errorf("write the database: %w", err)
	}
	return nil
}

// Bytes returns Encode's database of nets; an error fails t.
func Bytes(t testing.TB, nets ...Network) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := Encode(&b, nets...); err != nil {
		t.Fatalf("geotest: %v", err)
	}
	return b.Bytes()
}

// WriteFile writes Encode's database of nets to the file at path, created or truncated.
// Errors: Encode's, and creating, writing or closing the file.
func WriteFile(path string, nets ...Network) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	err = Encode(f, nets...)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}

// Write writes the database of nets to a new file in t.TempDir() and returns its path; an
// error fails t.
func Write(t testing.TB, nets ...Network) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "geo.mmdb")
	if err := WriteFile(p, nets...); err != nil {
		t.Fatalf("geotest: %v", err)
	}
	return p
}
