package dnsserver

import (
	"encoding/binary"
	"net"
	"slices"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/dnsplane/dnsplane/pkg/zonedb"
)

// TestGeo_AskedTypeMissingFromTheClientsSet: the geo sets of a name are chosen per asked type,
// among the sets that have it. eu (the default, DE's) has only A, us A and AAAA, ap only AAAA:
// a DE client asking AAAA gets one set, the first in tag order (ap's), never us's and ap's
// together; asking A it gets eu's. Weighted sets are picked the same way: AAAA is answered from
// the weighted sets that hold AAAA, even at weight 0.
func TestGeo_AskedTypeMissingFromTheClientsSet(t *testing.T) {
	f := newGeoFixture(t)
	putGeoRecords(t, f.store, map[string][]string{
		"eu": {"192.0.2.10"},
		"us": {"198.51.100.10", "2001:db8::a0"},
		"ap": {"2001:db8::a9"},
	})
	if err := f.store.Update("geo.test.", func(tx *zonedb.Tx) error {
		put(t, tx, "eu", ptr[int64](100), "w.geo.test. 30 IN A 192.0.2.10")
		put(t, tx, "us", ptr[int64](0), "w.geo.test. 30 IN A 198.51.100.10")
		put(t, tx, "us", ptr[int64](0), "w.geo.test. 30 IN AAAA 2001:db8::a0")
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	de := pfx("192.0.2.0/24")
	for _, proto := range []string{"udp", "tcp"} {
		for range 2 { // resolved, then from the cache
			if got := addrs(exchange(t, f.srv.Addr(), proto, ecsQuery("app.geo.test.", dns.TypeAAAA, de))); !slices.Equal(got, []string{"2001:db8::a9"}) {
				t.Fatalf("%s: DE asking AAAA gets %v; want ap's alone (eu and the default have no AAAA)", proto, got)
			}
			if got := addrs(exchange(t, f.srv.Addr(), proto, ecsQuery("app.geo.test.", dns.TypeA, de))); !slices.Equal(got, []string{"192.0.2.10"}) {
				t.Fatalf("%s: DE asking A gets %v; want eu's", proto, got)
			}
			if got := addrs(exchange(t, f.srv.Addr(), proto, ecsQuery("w.geo.test.", dns.TypeAAAA, nil))); !slices.Equal(got, []string{"2001:db8::a0"}) {
				t.Fatalf("%s: weighted AAAA gets %v; want us's (the only weighted set with AAAA)", proto, got)
			}
		}
	}
}

// TestECS_MappedAddressScopeInTheOptionsFamily: an ECS option of family IPv6 with an
// IPv4-mapped address (::ffff:198.51.100.0/120, as dig +subnet sends it) is located as
// 198.51.100.0 (us, the database's /24), and its scope counts the option's 128-bit addresses:
// 120, not 24, so a resolver does not cache us's answer for every mapped client.
func TestECS_MappedAddressScopeInTheOptionsFamily(t *testing.T) {
	f := newGeoFixture(t)
	mapped := pfx("::ffff:198.51.100.0/120")
	for _, proto := range []string{"udp", "tcp"} {
		for range 2 { // resolved, then from the cache
			r := exchange(t, f.srv.Addr(), proto, ecsQuery("app.geo.test.", dns.TypeA, mapped))
			e := ecsOf(r)
			if !slices.Equal(addrs(r), []string{"198.51.100.10"}) || e == nil || e.Family != ecsFamilyIPv6 || e.SourceNetmask != 120 || e.SourceScope != 120 {
				t.Fatalf("%s: %v, option %v; want us's with family 2, source 120, scope 120", proto, addrs(r), e)
			}
		}
	}
	// The same subnet as IPv4 keeps its IPv4 scope.
	e := ecsOf(exchange(t, f.srv.Addr(), "udp", ecsQuery("app.geo.test.", dns.TypeA, pfx("198.51.100.0/24"))))
	if e == nil || e.SourceScope != 24 {
		t.Fatalf("IPv4 198.51.100.0/24: option %v; want scope 24", e)
	}
}

// TestECS_MalformedIsFORMERRWithOPT: an ECS option that RFC 7871 §6 makes malformed gets
// FORMERR with an OPT (RFC 6891 §6.1.1: an OPT in the request gets one in the response) and
// no ECS, over UDP and TCP: a wrong address length (longer or shorter than the source prefix
// needs), an unknown family, a source or scope prefix beyond the family's length, data
// shorter than the option's fixed part. Family 0 with source 0 and no address stays a query
// that asks for no subnet.
func TestECS_MalformedIsFORMERRWithOPT(t *testing.T) {
	f := newGeoFixture(t)
	for _, tc := range []struct {
		name string
		data []byte // the option's data: family, source, scope, address
	}{
		{"IPv4 /24 with 4 address octets", []byte{0, 1, 24, 0, 192, 0, 2, 0}},
		{"IPv4 /24 with 2 address octets", []byte{0, 1, 24, 0, 192, 0}},
		{"IPv6 /48 with 16 address octets", append([]byte{0, 2, 48, 0}, make([]byte, 16)...)},
		{"family 3", []byte{0, 3, 24, 0, 192, 0, 2}},
		{"family 0 with source 8", []byte{0, 0, 8, 0, 192}},
		{"IPv4 source 33", []byte{0, 1, 33, 0, 192, 0, 2, 0, 0}},
		{"IPv6 source 129", append([]byte{0, 2, 129, 0}, make([]byte, 17)...)},
		{"IPv4 scope 33", []byte{0, 1, 24, 33, 192, 0, 2}},
		{"3 octets", []byte{0, 1, 0}},
	} {
		for _, proto := range []string{"udp", "tcp"} {
			r := rawECSQuery(t, f.srv.Addr(), proto, tc.data)
			if r.Rcode != dns.RcodeFormatError || r.IsEdns0() == nil || ecsOf(r) != nil || len(r.Answer) != 0 {
				t.Errorf("%s over %s: rcode %s, OPT %v, answer %v; want FORMERR with an OPT and no ECS", tc.name, proto, dns.RcodeToString[r.Rcode], r.IsEdns0(), r.Answer)
			}
		}
	}
	r := rawECSQuery(t, f.srv.Addr(), "udp", []byte{0, 0, 0, 0})
	if e := ecsOf(r); r.Rcode != dns.RcodeSuccess || !slices.Equal(addrs(r), []string{"192.0.2.10"}) || e == nil || e.SourceScope != 0 {
		t.Fatalf("family 0, source 0: rcode %s, %v, option %v; want the default eu with scope 0", dns.RcodeToString[r.Rcode], addrs(r), e)
	}
}

// rawECSQuery sends an A query for app.geo.test with an OPT holding one ECS option of data as
// given (packed by hand: miekg/dns packs only well-formed options) over proto, and returns the
// unpacked response, which must have the query's ID.
func rawECSQuery(t *testing.T, addr, proto string, data []byte) *dns.Msg {
	t.Helper()
	q := new(dns.Msg)
	q.SetQuestion("app.geo.test.", dns.TypeA)
	q.SetEdns0(1232, false)
	pkt, err := q.Pack()
	if err != nil {
		t.Fatal(err)
	}
	// The OPT ends the packet with RDLENGTH 0: append the option and set the RDLENGTH.
	opt := binary.BigEndian.AppendUint16(binary.BigEndian.AppendUint16(nil, dns.EDNS0SUBNET), uint16(len(data)))
	opt = append(opt, data...)
	binary.BigEndian.PutUint16(pkt[len(pkt)-2:], uint16(len(opt)))
	pkt = append(pkt, opt...)
	conn, err := net.DialTimeout(proto, addr, 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(2 * time.Second))
	dc := &dns.Conn{Conn: conn}
	if _, err := dc.Write(pkt); err != nil {
		t.Fatal(err)
	}
	buf, err := dc.ReadMsgHeader(nil)
	if err != nil {
		t.Fatalf("%s: %v", proto, err)
	}
	r := new(dns.Msg)
	if err := r.Unpack(buf); err != nil {
		t.Fatal(err)
	}
	if r.Id != q.Id {
		t.Fatalf("response ID %d, query %d", r.Id, q.Id)
	}
	return r
}
