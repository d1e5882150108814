package geo

import (
	"errors"
	"net/netip"
	"testing"
)

func TestParseRegion(t *testing.T) {
	for _, tc := range []struct {
		key  string
		want Region
		bad  bool
	}{
		{key: "DE", want: Region{Kind: KindCountry, Code: "DE"}},
		{key: "ZZ", want: Region{Kind: KindCountry, Code: "ZZ"}},
		{key: "continent:AF", want: Region{Kind: KindContinent, Code: "AF"}},
		{key: "continent:AN", want: Region{Kind: KindContinent, Code: "AN"}},
		{key: "continent:AS", want: Region{Kind: KindContinent, Code: "AS"}},
		{key: "continent:EU", want: Region{Kind: KindContinent, Code: "EU"}},
		{key: "continent:NA", want: Region{Kind: KindContinent, Code: "NA"}},
		{key: "continent:OC", want: Region{Kind: KindContinent, Code: "OC"}},
		{key: "continent:SA", want: Region{Kind: KindContinent, Code: "SA"}},
		{key: "203.0.113.0/24", want: Region{Kind: KindCIDR, Prefix: netip.MustParsePrefix("203.0.113.0/24")}},
		{key: "0.0.0.0/0", want: Region{Kind: KindCIDR, Prefix: netip.MustParsePrefix("0.0.0.0/0")}},
		{key: "192.0.2.7/32", want: Region{Kind: KindCIDR, Prefix: netip.MustParsePrefix("192.0.2.7/32")}},
		{key: "2001:db8::/32", want: Region{Kind: KindCIDR, Prefix: netip.MustParsePrefix("2001:db8::/32")}},
		{key: "::/0", want: Region{Kind: KindCIDR, Prefix: netip.MustParsePrefix("::/0")}},
		{key: "de", bad: true},
		{key: "D", bad: true},
		{key: "DEU", bad: true},
		{key: "", bad: true},
		{key: "continent:", bad: true},
		{key: "continent:XX", bad: true},
		{key: "continent:eu", bad: true},
		{key: "Continent:EU", bad: true},
		{key: "EU ", bad: true},
		{key: "203.0.113.1/24", bad: true},
		{key: "203.0.113.0/33", bad: true},
		{key: "203.0.113.0", bad: true},
		{key: "2001:DB8::/32", bad: true},
		{key: "2001:0db8::/32", bad: true},
		{key: "::ffff:192.0.2.0/120", bad: true},
		{key: "fe80::%eth0/64", bad: true},
	} {
		got, err := ParseRegion(tc.key)
		if tc.bad {
			if !errors.Is(err, ErrInvalidRegion) {
				t.Errorf("ParseRegion(%q) = %+v, %v; want ErrInvalidRegion", tc.key, got, err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("ParseRegion(%q) = %+v, %v; want %+v", tc.key, got, err, tc.want)
		}
	}
}
