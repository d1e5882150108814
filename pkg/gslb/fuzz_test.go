package gslb

import (
	"errors"
	"net"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/miekg/dns"
)

// FuzzPeerAnswer pins the reading of a peer's DNS answers (any bytes a peer, or anyone who can
// spoof one, sends back): acceptTXT (the localtargets and verdict records), acceptAddrs and
// ParseReferral never panic on any message miekg/dns unpacks; every error wraps ErrBadAnswer;
// what they accept stays within the documented bounds: at most MaxAnswers records, at most
// MaxTXTBytes bytes of TXT, only addresses of the asked family, and only referral servers
// named ns-<geotag>.<zone> other than our own geo tag, with glue that is an IP address or none.
// The seeds are answers to the queries the controllers ask: TXT, A, AAAA and the edge zone's NS.
func FuzzPeerAnswer(f *testing.F) {
	for _, seed := range peerAnswerSeeds(f) {
		f.Add(seed)
	}
	const zone, geoTag = "gslb.test.", "eu"
	f.Fuzz(func(t *testing.T, wire []byte) {
		resp := new(dns.Msg)
		if resp.Unpack(wire) != nil {
			return // the Querier's exchange fails first
		}
		id := uint16(0)
		if len(wire) >= 2 {
			id = uint16(wire[0])<<8 | uint16(wire[1])
		}
		for _, qtype := range []uint16{dns.TypeTXT, dns.TypeA, dns.TypeAAAA} {
			query := new(dns.Msg)
			query.SetQuestion("localtargets-app."+zone, qtype)
			query.Id = id
			const maxAnswers = 8
			if qtype == dns.TypeTXT {
				txts, err := acceptTXT(query, resp, maxAnswers)
				checkAnswerErr(t, err)
				n := 0
				for _, s := range txts {
					for _, c := range s {
						n += len(c)
					}
				}
				if len(txts) > maxAnswers || n > MaxTXTBytes {
					t.Fatalf("acceptTXT accepted %d records, %d bytes", len(txts), n)
				}
				continue
			}
			addrs, err := acceptAddrs(query, resp, maxAnswers)
			checkAnswerErr(t, err)
			if len(addrs) > maxAnswers {
				t.Fatalf("acceptAddrs accepted %d addresses", len(addrs))
			}
			for _, a := range addrs {
				if a.Is4() != (qtype == dns.TypeA) || a.Is4In6() || a.Zone() != "" {
					t.Fatalf("acceptAddrs gave %s for a %s query", a, dns.TypeToString[qtype])
				}
			}
		}
		for _, s := range ParseReferral(resp, zone, geoTag) {
			if s.GeoTag == geoTag || s.Name != "ns-"+s.GeoTag+"."+zone {
				t.Fatalf("ParseReferral gave %+v", s)
			}
			if _, err := netip.ParseAddr(s.Addr); s.Addr != "" && err != nil {
				t.Fatalf("ParseReferral gave glue %q", s.Addr)
			}
		}
		if a := FirstA(resp); a != "" {
			if _, err := netip.ParseAddr(a); err != nil {
				t.Fatalf("FirstA gave %q", a)
			}
		}
	})
}

func checkAnswerErr(t *testing.T, err error) {
	t.Helper()
	if err != nil && !errors.Is(err, ErrBadAnswer) {
		t.Fatalf("error %v does not wrap ErrBadAnswer", err)
	}
}

// peerAnswerSeeds are FuzzPeerAnswer's seeds (see there).
func peerAnswerSeeds(f *testing.F) [][]byte {
	var out [][]byte
	for _, tc := range []struct {
		qtype  uint16
		rcode  int
		answer []string
		ns     []string
		extra  []string
	}{
		{dns.TypeTXT, dns.RcodeSuccess, []string{`localtargets-app.gslb.test. 30 IN TXT "192.0.2.1" "192.0.2.2"`, `other.gslb.test. 30 IN TXT "x"`}, nil, nil},
		{dns.TypeA, dns.RcodeSuccess, []string{"localtargets-app.gslb.test. 30 IN A 192.0.2.1", "localtargets-app.gslb.test. 30 IN AAAA 2001:db8::1"}, nil, nil},
		{dns.TypeAAAA, dns.RcodeNameError, nil, []string{"gslb.test. 30 IN SOA ns.gslb.test. h.gslb.test. 1 2 3 4 5"}, nil},
		{dns.TypeNS, dns.RcodeSuccess, nil, []string{"gslb.test. 30 IN NS ns-eu.gslb.test.", "gslb.test. 30 IN NS ns-us.gslb.test.", "gslb.test. 30 IN NS ns.other.test."},
			[]string{"ns-us.gslb.test. 30 IN A 192.0.2.53", "ns-us.gslb.test. 30 IN AAAA 2001:db8::53"}},
		{dns.TypeA, dns.RcodeServerFailure, nil, nil, nil},
	} {
		m := new(dns.Msg)
		name := "localtargets-app.gslb.test."
		if tc.qtype == dns.TypeNS {
			name = "gslb.test."
		}
		m.SetQuestion(name, tc.qtype)
		m.Id = 0x0102
		m.Response, m.Rcode = true, tc.rcode
		for i, section := range [][]string{tc.answer, tc.ns, tc.extra} {
			for _, s := range section {
				rr, err := dns.NewRR(s)
				if err != nil {
					f.Fatal(err)
				}
				switch i {
				case 0:
					m.Answer = append(m.Answer, rr)
				case 1:
					m.Ns = append(m.Ns, rr)
				default:
					m.Extra = append(m.Extra, rr)
				}
			}
		}
		b, err := m.Pack()
		if err != nil {
			f.Fatal(err)
		}
		out = append(out, b)
	}
	return out
}

// FuzzParsePeers pins ParsePeers (the --ext-gslb-clusters flag) against any string: it never
// panics, what it accepts is a list of distinct geo tags without spaces and host:port addresses
// with a host and a port in 1-65535, and writing that list back in the flag's syntax parses to
// the same peers (decode of encode is the identity).
func FuzzParsePeers(f *testing.F) {
	for _, s := range []string{"us=127.0.0.12:5353, ap=127.0.0.13:5353", "eu=[2001:db8::1]:53", "", " , ", "us=a:0", "us=a:1,us=b:2",
		"x=:53", "a b=h:1", "eu=host.example:65535", "eu=[::1%lo]:53"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		peers, err := ParsePeers(s)
		if err != nil {
			return
		}
		seen := map[string]bool{}
		var flag []string
		for _, p := range peers {
			host, port, err := net.SplitHostPort(p.Addr)
			n, perr := strconv.ParseUint(port, 10, 16)
			if p.GeoTag == "" || strings.ContainsAny(p.GeoTag, " \t\r\n") || seen[p.GeoTag] || err != nil || host == "" || perr != nil || n == 0 {
				t.Fatalf("ParsePeers(%q) accepted %+v", s, p)
			}
			seen[p.GeoTag] = true
			flag = append(flag, p.GeoTag+"="+p.Addr)
		}
		again, err := ParsePeers(strings.Join(flag, ","))
		if err != nil || !slices.Equal(again, peers) {
			t.Fatalf("ParsePeers(%q) = %+v, but its flag %q parses to %+v, %v", s, peers, strings.Join(flag, ","), again, err)
		}
	})
}
