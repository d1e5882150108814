package main

import (
	"bytes"
	"net/netip"
	"testing"

	"github.com/oschwald/maxminddb-golang/v2"

	"github.com/dnsplane/dnsplane/internal/testing/geotest"
)

func TestParseArgs(t *testing.T) {
	for _, tc := range []struct {
		args []string
		ok   bool
	}{
		{[]string{"198.51.100.0/24=DE/EU"}, true},
		{[]string{"10.0.0.0/8=/EU", "2001:db8::/32=JP/"}, true},
		{nil, false},
		{[]string{"198.51.100.0/24"}, false},
		{[]string{"198.51.100.0/24=DE"}, false},
		{[]string{"198.51.100.1/24=DE/EU"}, false},
		{[]string{"198.51.100.0/33=DE/EU"}, false},
		{[]string{"198.51.100.0/24=de/EU"}, false},
		{[]string{"198.51.100.0/24=DEU/EU"}, false},
		{[]string{"198.51.100.0/24=D1/EU"}, false},
		{[]string{"198.51.100.0/24=DE/XX"}, false},
	} {
		_, err := parseArgs(tc.args)
		if (err == nil) != tc.ok {
			t.Errorf("parseArgs(%q): %v, want ok %t", tc.args, err, tc.ok)
		}
	}
}

// TestWrite reads back what the command writes for its arguments: each network's record, its network, and nothing
// elsewhere.
func TestWrite(t *testing.T) {
	nets, err := parseArgs([]string{"198.51.100.0/24=DE/EU", "203.0.113.0/24=CA/NA", "10.89.0.0/16=/AS", "2001:db8::/32=JP/AS"})
	if err != nil {
		t.Fatal(err)
	}
	var b bytes.Buffer
	if err := geotest.Encode(&b, nets...); err != nil {
		t.Fatal(err)
	}
	r, err := maxminddb.OpenBytes(b.Bytes())
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	type rec struct {
		Country struct {
			ISOCode string `maxminddb:"iso_code"`
		} `maxminddb:"country"`
		Continent struct {
			Code string `maxminddb:"code"`
		} `maxminddb:"continent"`
	}
	for _, tc := range []struct {
		addr, country, continent, network string
		found                             bool
	}{
		{"198.51.100.7", "DE", "EU", "198.51.100.0/24", true},
		{"203.0.113.200", "CA", "NA", "203.0.113.0/24", true},
		{"10.89.3.4", "", "AS", "10.89.0.0/16", true},
		{"2001:db8::1", "JP", "AS", "2001:db8::/32", true},
		{"100.64.0.1", "", "", "", false},
	} {
		res := r.Lookup(netip.MustParseAddr(tc.addr))
		var got rec
		if err := res.Decode(&got); err != nil {
			t.Fatalf("%s: %v", tc.addr, err)
		}
		if res.Found() != tc.found || got.Country.ISOCode != tc.country || got.Continent.Code != tc.continent {
			t.Errorf("%s: found %t %+v, want found %t %s/%s", tc.addr, res.Found(), got, tc.found, tc.country, tc.continent)
		}
		if tc.found && res.Prefix().String() != tc.network {
			t.Errorf("%s: network %s, want %s", tc.addr, res.Prefix(), tc.network)
		}
	}
}
