package gslb

import (
	"reflect"
	"testing"

	"github.com/miekg/dns"
)

func rr(t *testing.T, s string) dns.RR {
	t.Helper()
	r, err := dns.NewRR(s)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestParseReferral_ClusterServersWithGlueThisOneLeftOut(t *testing.T) {
	tests := []struct {
		name              string
		answer, ns, extra []string
		zone, geoTag      string
		want              []EdgeServer
	}{
		{
			name:  "authority section with glue, own cluster left out",
			ns:    []string{"gslb.example.com. 60 IN NS ns-eu.gslb.example.com.", "gslb.example.com. 60 IN NS ns-us.gslb.example.com."},
			extra: []string{"ns-eu.gslb.example.com. 60 IN A 192.0.2.1", "ns-us.gslb.example.com. 60 IN A 192.0.2.2"},
			zone:  "gslb.example.com", geoTag: "EU",
			want: []EdgeServer{{GeoTag: "us", Name: "ns-us.gslb.example.com.", Addr: "192.0.2.2"}},
		},
		{
			name:   "answer section, names case-insensitive, A wins over AAAA",
			answer: []string{"GSLB.example.com. 60 IN NS NS-US.gslb.example.com."},
			extra:  []string{"ns-us.gslb.example.com. 60 IN AAAA 2001:db8::1", "ns-us.gslb.example.com. 60 IN A 192.0.2.2"},
			zone:   "gslb.example.com.", geoTag: "eu",
			want: []EdgeServer{{GeoTag: "us", Name: "ns-us.gslb.example.com.", Addr: "192.0.2.2"}},
		},
		{
			name:  "AAAA glue only",
			ns:    []string{"gslb.example.com. 60 IN NS ns-ap.gslb.example.com."},
			extra: []string{"ns-ap.gslb.example.com. 60 IN AAAA 2001:db8::1"},
			zone:  "gslb.example.com", geoTag: "eu",
			want: []EdgeServer{{GeoTag: "ap", Name: "ns-ap.gslb.example.com.", Addr: "2001:db8::1"}},
		},
		{
			name: "no glue: address left empty",
			ns:   []string{"gslb.example.com. 60 IN NS ns-us.gslb.example.com."},
			zone: "gslb.example.com", geoTag: "eu",
			want: []EdgeServer{{GeoTag: "us", Name: "ns-us.gslb.example.com."}},
		},
		{
			name: "not a cluster's name, another owner, or outside the zone: ignored",
			ns: []string{
				"gslb.example.com. 60 IN NS ns1.provider.net.",
				"other.example.com. 60 IN NS ns-us.other.example.com.",
				"gslb.example.com. 60 IN NS ns-us.elsewhere.example.com.",
				"gslb.example.com. 60 IN NS ns-us.sub.gslb.example.com.",
			},
			zone: "gslb.example.com", geoTag: "eu",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m := new(dns.Msg)
			for _, s := range tc.answer {
				m.Answer = append(m.Answer, rr(t, s))
			}
			for _, s := range tc.ns {
				m.Ns = append(m.Ns, rr(t, s))
			}
			for _, s := range tc.extra {
				m.Extra = append(m.Extra, rr(t, s))
			}
			if got := ParseReferral(m, tc.zone, tc.geoTag); !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("ParseReferral = %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestEdgePeers_AddressedSortedOnePerGeoTag(t *testing.T) {
	got := EdgePeers([]EdgeServer{
		{GeoTag: "us", Addr: "192.0.2.2"},
		{GeoTag: "ap"}, // no address: skipped
		{GeoTag: "eu", Addr: "2001:db8::1"},
		{GeoTag: "us", Addr: "192.0.2.9"}, // duplicate: the first wins
	}, 5353)
	want := []Peer{{GeoTag: "eu", Addr: "[2001:db8::1]:5353"}, {GeoTag: "us", Addr: "192.0.2.2:5353"}}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("EdgePeers = %+v, want %+v", got, want)
	}
}

func TestFirstA(t *testing.T) {
	m := new(dns.Msg)
	if got := FirstA(m); got != "" {
		t.Fatalf("FirstA(empty) = %q", got)
	}
	m.Answer = []dns.RR{rr(t, "x. 60 IN AAAA 2001:db8::1"), rr(t, "x. 60 IN A 192.0.2.7"), rr(t, "x. 60 IN A 192.0.2.8")}
	if got := FirstA(m); got != "192.0.2.7" {
		t.Fatalf("FirstA = %q, want 192.0.2.7", got)
	}
	// An A record with empty RDATA (a nil address once unpacked) is skipped, not "<nil>".
	empty := &dns.A{Hdr: dns.RR_Header{Name: "x.", Rrtype: dns.TypeA, Class: dns.ClassINET, Ttl: 60}}
	m.Answer = []dns.RR{empty, rr(t, "x. 60 IN A 192.0.2.8")}
	if got := FirstA(m); got != "192.0.2.8" {
		t.Fatalf("FirstA with an empty A first = %q, want 192.0.2.8", got)
	}
	m.Answer = []dns.RR{empty}
	if got := FirstA(m); got != "" {
		t.Fatalf("FirstA of an empty A alone = %q, want none", got)
	}
}
