package gslb_test

import (
	"reflect"
	"strings"
	"testing"

	"github.com/dnsplane/dnsplane/pkg/gslb"
)

func TestParsePeers_GoodAndBadEntries(t *testing.T) {
	tests := []struct {
		name    string
		in      string
		want    []gslb.Peer
		wantErr string // substring naming the bad entry; "" means no error
	}{
		{name: "empty is none", in: "", want: nil},
		{name: "spaces only is none", in: "  \t ", want: nil},
		{name: "one", in: "us=127.0.0.12:5353", want: []gslb.Peer{{GeoTag: "us", Addr: "127.0.0.12:5353"}}},
		{name: "two in input order", in: "us=127.0.0.12:5353,ap=127.0.0.13:5353", want: []gslb.Peer{
			{GeoTag: "us", Addr: "127.0.0.12:5353"}, {GeoTag: "ap", Addr: "127.0.0.13:5353"}}},
		{name: "spaces trimmed", in: "  us = 127.0.0.12:5353 ,  ap=ns.ap.example:53  ", want: []gslb.Peer{
			{GeoTag: "us", Addr: "127.0.0.12:5353"}, {GeoTag: "ap", Addr: "ns.ap.example:53"}}},
		{name: "IPv6", in: "eu=[2001:db8::1]:53", want: []gslb.Peer{{GeoTag: "eu", Addr: "[2001:db8::1]:53"}}},
		{name: "no equals", in: "us=127.0.0.12:53,ap127.0.0.13:53", wantErr: `entry 2 "ap127.0.0.13:53"`},
		{name: "empty geo tag", in: "=127.0.0.12:53", wantErr: `entry 1 "=127.0.0.12:53"`},
		{name: "geo tag with space", in: "u s=127.0.0.12:53", wantErr: `entry 1 "u s=127.0.0.12:53"`},
		{name: "no port", in: "us=127.0.0.12", wantErr: `entry 1 "us=127.0.0.12"`},
		{name: "no host", in: "us=:53", wantErr: `entry 1 "us=:53"`},
		{name: "a bracketed space for a host (FuzzParsePeers)", in: "us=[ ]:53", wantErr: `entry 1 "us=[ ]:53"`},
		{name: "a space inside the host", in: "us=[ns 1]:53", wantErr: `has a space`},
		{name: "port not a number", in: "us=127.0.0.12:dns", wantErr: `entry 1 "us=127.0.0.12:dns"`},
		{name: "port zero", in: "us=127.0.0.12:0", wantErr: `entry 1 "us=127.0.0.12:0"`},
		{name: "port too big", in: "us=127.0.0.12:65536", wantErr: `entry 1 "us=127.0.0.12:65536"`},
		{name: "empty address", in: "us=", wantErr: `entry 1 "us="`},
		{name: "trailing comma", in: "us=127.0.0.12:53,", wantErr: "entry 2 is empty"},
		{name: "empty middle entry", in: "us=127.0.0.12:53, ,ap=127.0.0.13:53", wantErr: "entry 2 is empty"},
		{name: "duplicate geo tag", in: "us=127.0.0.12:53,eu=127.0.0.11:53,us=127.0.0.13:53",
			wantErr: `entry 3 "us=127.0.0.13:53": geo tag "us" already given in entry 1`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := gslb.ParsePeers(tt.in)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("ParsePeers(%q) = %v, %v; want an error containing %q", tt.in, got, err, tt.wantErr)
				}
				return
			}
			if err != nil || !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("ParsePeers(%q) = %#v, %v; want %#v", tt.in, got, err, tt.want)
			}
		})
	}
}

func TestLocalTargetsName_PrefixesFirstLabelCanonically(t *testing.T) {
	tests := map[string]string{
		"app.gslb.test":            "localtargets-app.gslb.test",
		"App.GSLB.test.":           "localtargets-app.gslb.test",
		"app.gslb.example.com":     "localtargets-app.gslb.example.com",
		"single":                   "localtargets-single",
		" web.eu.gslb.test ":       "localtargets-web.eu.gslb.test",
		"localtargets-x.gslb.test": "localtargets-localtargets-x.gslb.test",
	}
	for in, want := range tests {
		if got := gslb.LocalTargetsName(in); got != want {
			t.Errorf("LocalTargetsName(%q) = %q, want %q", in, got, want)
		}
	}
}
