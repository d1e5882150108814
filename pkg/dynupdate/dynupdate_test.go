package dynupdate_test

import (
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/miekg/dns"
	"k8s.io/apimachinery/pkg/types"

	dnsv1 "github.com/dnsplane/dnsplane/apis/v1alpha1"
	"github.com/dnsplane/dnsplane/pkg/dynupdate"
)

const zone = "c1.example.com."

// wire packs and unpacks m, so that RRs look as the server receives them (RDLENGTH set).
func wire(t *testing.T, m *dns.Msg) *dns.Msg {
	t.Helper()
	b, err := m.Pack()
	if err != nil {
		t.Fatalf("pack: %v", err)
	}
	out := new(dns.Msg)
	if err := out.Unpack(b); err != nil {
		t.Fatalf("unpack: %v", err)
	}
	return out
}

func rr(t *testing.T, s string) dns.RR {
	t.Helper()
	r, err := dns.NewRR(s)
	if err != nil {
		t.Fatalf("%q: %v", s, err)
	}
	return r
}

func TestMatchName(t *testing.T) {
	cases := []struct {
		pattern string
		rel     []string
		want    bool
	}{
		{"_acme-challenge.*", []string{"_acme-challenge"}, true},
		{"_acme-challenge.*", []string{"_acme-challenge", "www"}, true},
		{"_acme-challenge.*", []string{"_acme-challenge", "a", "b"}, true},
		{"_acme-challenge.*", []string{}, false},
		{"_acme-challenge.*", []string{"www"}, false},
		{"_acme-challenge.*", []string{"www", "_acme-challenge"}, false},
		{"_ACME-Challenge.*", []string{"_acme-challenge"}, true},
		{"@", []string{}, true},
		{"@", []string{"www"}, false},
		{"*", []string{}, true},
		{"*", []string{"a", "b"}, true},
		{"*.web", []string{"x", "web"}, true},
		{"*.web", []string{"web"}, false},
		{"*.web", []string{"x", "y", "web"}, false},
		{"a.*.b", []string{"a", "x", "b"}, true},
		{"a.*.b", []string{"a", "b"}, false},
		{"www", []string{"www"}, true},
		{"www", []string{"www", "x"}, false},
		{"www", []string{}, false},
	}
	for _, tc := range cases {
		if got := dynupdate.MatchName(tc.pattern, tc.rel); got != tc.want {
			t.Errorf("MatchName(%q, %q) = %v, want %v", tc.pattern, tc.rel, got, tc.want)
		}
	}
}

func TestPolicy_Allows(t *testing.T) {
	acme := dynupdate.Policy{Names: []string{"_acme-challenge.*"}, Types: []uint16{dns.TypeTXT}}
	cases := []struct {
		name string
		p    dynupdate.Policy
		fqdn string
		typ  uint16
		want bool
	}{
		{"challenge of the apex", acme, "_acme-challenge.c1.example.com.", dns.TypeTXT, true},
		{"challenge below, any case, no trailing dot", acme, "_ACME-challenge.www.C1.example.com", dns.TypeTXT, true},
		{"another type", acme, "_acme-challenge.c1.example.com.", dns.TypeA, false},
		{"delete every type at an allowed name", acme, "_acme-challenge.c1.example.com.", dns.TypeANY, true},
		{"another name", acme, "www.c1.example.com.", dns.TypeTXT, false},
		{"the apex", acme, "c1.example.com.", dns.TypeTXT, false},
		{"outside the zone", acme, "_acme-challenge.c2.example.com.", dns.TypeTXT, false},
		{"the parent", acme, "_acme-challenge.example.com.", dns.TypeTXT, false},
		{"a suffix that is no label boundary", acme, "_acme-challenge.xc1.example.com.", dns.TypeTXT, false},
		{"apex policy", dynupdate.Policy{Names: []string{"@"}, Types: []uint16{dns.TypeA}}, "c1.example.com.", dns.TypeA, true},
		{"no names", dynupdate.Policy{Types: []uint16{dns.TypeTXT}}, "_acme-challenge.c1.example.com.", dns.TypeTXT, false},
	}
	for _, tc := range cases {
		if got := tc.p.Allows(zone, tc.fqdn, tc.typ); got != tc.want {
			t.Errorf("%s: Allows(%q, %s) = %v, want %v", tc.name, tc.fqdn, dns.TypeToString[tc.typ], got, tc.want)
		}
	}
}

func TestParseKey(t *testing.T) {
	ok := func(name, alg, secret string) map[string][]byte {
		return map[string][]byte{"name": []byte(name), "algorithm": []byte(alg), "secret": []byte(secret)}
	}
	cases := []struct {
		name    string
		typ     string
		data    map[string][]byte
		want    dynupdate.Key
		wantErr bool
	}{
		{"BIND's output", dnsv1.SecretTypeTSIG, ok("acme-key", "hmac-sha256", "cGFzc3dvcmQ="), dynupdate.Key{Name: "acme-key.", Algorithm: dns.HmacSHA256, Secret: "cGFzc3dvcmQ="}, false},
		{"trailing dots, upper case, spaces", dnsv1.SecretTypeTSIG, ok(" Acme.Key. ", "HMAC-SHA512.", "cGFzc3dvcmQ=\n"), dynupdate.Key{Name: "acme.key.", Algorithm: dns.HmacSHA512, Secret: "cGFzc3dvcmQ="}, false},
		{"md5's long name", dnsv1.SecretTypeTSIG, ok("k", "hmac-md5.sig-alg.reg.int", "cGFzc3dvcmQ="), dynupdate.Key{Name: "k.", Algorithm: dns.HmacMD5, Secret: "cGFzc3dvcmQ="}, false},
		{"sha1", dnsv1.SecretTypeTSIG, ok("k", "hmac-sha1", "cGFzc3dvcmQ="), dynupdate.Key{Name: "k.", Algorithm: dns.HmacSHA1, Secret: "cGFzc3dvcmQ="}, false},
		{"sha224", dnsv1.SecretTypeTSIG, ok("k", "hmac-sha224", "cGFzc3dvcmQ="), dynupdate.Key{Name: "k.", Algorithm: dns.HmacSHA224, Secret: "cGFzc3dvcmQ="}, false},
		{"sha384", dnsv1.SecretTypeTSIG, ok("k", "hmac-sha384", "cGFzc3dvcmQ="), dynupdate.Key{Name: "k.", Algorithm: dns.HmacSHA384, Secret: "cGFzc3dvcmQ="}, false},
		{"another type", "Opaque", ok("k", "hmac-sha256", "cGFzc3dvcmQ="), dynupdate.Key{}, true},
		{"no name", dnsv1.SecretTypeTSIG, ok("", "hmac-sha256", "cGFzc3dvcmQ="), dynupdate.Key{}, true},
		{"a name that is no domain name", dnsv1.SecretTypeTSIG, ok("a..b", "hmac-sha256", "cGFzc3dvcmQ="), dynupdate.Key{}, true},
		{"the root", dnsv1.SecretTypeTSIG, ok(".", "hmac-sha256", "cGFzc3dvcmQ="), dynupdate.Key{}, true},
		{"no algorithm", dnsv1.SecretTypeTSIG, ok("k", "", "cGFzc3dvcmQ="), dynupdate.Key{}, true},
		{"an unknown algorithm", dnsv1.SecretTypeTSIG, ok("k", "gss-tsig", "cGFzc3dvcmQ="), dynupdate.Key{}, true},
		{"no secret", dnsv1.SecretTypeTSIG, ok("k", "hmac-sha256", ""), dynupdate.Key{}, true},
		{"a secret that is no base64", dnsv1.SecretTypeTSIG, ok("k", "hmac-sha256", "not base64!"), dynupdate.Key{}, true},
	}
	for _, tc := range cases {
		got, err := dynupdate.ParseKey(tc.typ, tc.data)
		if tc.wantErr {
			if !errors.Is(err, dynupdate.ErrInvalidKey) {
				t.Errorf("%s: err = %v, want ErrInvalidKey", tc.name, err)
			}
			if err != nil && tc.data["secret"] != nil && len(tc.data["secret"]) > 4 && strings.Contains(err.Error(), string(tc.data["secret"])) {
				t.Errorf("%s: the error quotes the secret: %v", tc.name, err)
			}
			continue
		}
		if err != nil || got != tc.want {
			t.Errorf("%s: got %+v, %v; want %+v", tc.name, got, err, tc.want)
		}
	}
}

// msg builds an UPDATE of zone z with prerequisites pre and updates upd, as a client's
// dns.Msg helpers do, through the wire.
func msg(t *testing.T, z string, build func(m *dns.Msg)) *dns.Msg {
	t.Helper()
	m := new(dns.Msg)
	m.SetUpdate(z)
	build(m)
	return wire(t, m)
}

func TestParse(t *testing.T) {
	txt := func(s string) []dns.RR { return []dns.RR{rr(t, s)} }
	cases := []struct {
		name  string
		m     *dns.Msg
		want  []dynupdate.Change
		rcode int
	}{
		{"cert-manager's Present", msg(t, zone, func(m *dns.Msg) { m.Insert(txt(`_acme-challenge.c1.example.com. 60 IN TXT "tok"`)) }),
			[]dynupdate.Change{{Op: dynupdate.OpAdd, Name: "_acme-challenge.c1.example.com.", Type: dns.TypeTXT, TTL: 60, Value: "tok"}}, dns.RcodeSuccess},
		{"cert-manager's CleanUp", msg(t, zone, func(m *dns.Msg) { m.Remove(txt(`_acme-challenge.c1.example.com. 60 IN TXT "tok"`)) }),
			[]dynupdate.Change{{Op: dynupdate.OpDeleteRR, Name: "_acme-challenge.c1.example.com.", Type: dns.TypeTXT, Value: "tok"}}, dns.RcodeSuccess},
		{"lego's Present: RRset deleted, then added", msg(t, zone, func(m *dns.Msg) {
			rrs := txt(`_Acme-Challenge.C1.example.com. 120 IN TXT "tok"`)
			m.RemoveRRset(rrs)
			m.Insert(rrs)
		}), []dynupdate.Change{
			{Op: dynupdate.OpDeleteRRset, Name: "_acme-challenge.c1.example.com.", Type: dns.TypeTXT},
			{Op: dynupdate.OpAdd, Name: "_acme-challenge.c1.example.com.", Type: dns.TypeTXT, TTL: 120, Value: "tok"},
		}, dns.RcodeSuccess},
		{"delete a name", msg(t, zone, func(m *dns.Msg) { m.RemoveName(txt(`x.c1.example.com. 0 IN TXT "a"`)) }),
			[]dynupdate.Change{{Op: dynupdate.OpDeleteName, Name: "x.c1.example.com.", Type: dns.TypeANY}}, dns.RcodeSuccess},
		{"TXT of strings a target cannot carry (not split every 255 bytes)", msg(t, zone, func(m *dns.Msg) {
			m.Insert(txt(`x.c1.example.com. 60 IN TXT "ab" "cd"`))
		}), nil, dns.RcodeFormatError},
		{"TXT with escapes is the raw value", msg(t, zone, func(m *dns.Msg) { m.Insert(txt(`x.c1.example.com. 60 IN TXT "a\"b\\c\009"`)) }),
			[]dynupdate.Change{{Op: dynupdate.OpAdd, Name: "x.c1.example.com.", Type: dns.TypeTXT, TTL: 60, Value: "a\"b\\c\t"}}, dns.RcodeSuccess},
		{"A, CNAME, MX, SRV, CAA values", msg(t, zone, func(m *dns.Msg) {
			m.Insert([]dns.RR{rr(t, "a.c1.example.com. 1 IN A 192.0.2.1"), rr(t, "b.c1.example.com. 1 IN CNAME Target.Example.com."),
				rr(t, "c.c1.example.com. 1 IN MX 10 mail.example.com."), rr(t, "d.c1.example.com. 1 IN SRV 0 5 5060 sip.example.com."),
				rr(t, `e.c1.example.com. 1 IN CAA 0 issue "letsencrypt.org"`)})
		}), []dynupdate.Change{
			{Op: dynupdate.OpAdd, Name: "a.c1.example.com.", Type: dns.TypeA, TTL: 1, Value: "192.0.2.1"},
			{Op: dynupdate.OpAdd, Name: "b.c1.example.com.", Type: dns.TypeCNAME, TTL: 1, Value: "target.example.com"},
			{Op: dynupdate.OpAdd, Name: "c.c1.example.com.", Type: dns.TypeMX, TTL: 1, Value: "10 mail.example.com"},
			{Op: dynupdate.OpAdd, Name: "d.c1.example.com.", Type: dns.TypeSRV, TTL: 1, Value: "0 5 5060 sip.example.com"},
			{Op: dynupdate.OpAdd, Name: "e.c1.example.com.", Type: dns.TypeCAA, TTL: 1, Value: `0 issue "letsencrypt.org"`},
		}, dns.RcodeSuccess},
		{"an update outside the zone", msg(t, zone, func(m *dns.Msg) { m.Insert(txt(`x.c2.example.com. 60 IN TXT "a"`)) }), nil, dns.RcodeNotZone},
		{"a prerequisite outside the zone", msg(t, zone, func(m *dns.Msg) { m.NameUsed(txt(`x.example.com. 0 IN TXT "a"`)) }), nil, dns.RcodeNotZone},
		{"an add of type ANY", msg(t, zone, func(m *dns.Msg) {
			m.Ns = append(m.Ns, &dns.ANY{Hdr: dns.RR_Header{Name: "x.c1.example.com.", Rrtype: dns.TypeANY, Class: dns.ClassINET, Ttl: 60}})
		}), nil, dns.RcodeFormatError},
		{"an add without RDATA", msg(t, zone, func(m *dns.Msg) {
			m.Ns = append(m.Ns, &dns.ANY{Hdr: dns.RR_Header{Name: "x.c1.example.com.", Rrtype: dns.TypeTXT, Class: dns.ClassINET, Ttl: 60}})
		}), nil, dns.RcodeFormatError},
		{"a class ANY delete with a TTL", msg(t, zone, func(m *dns.Msg) {
			m.Ns = append(m.Ns, &dns.ANY{Hdr: dns.RR_Header{Name: "x.c1.example.com.", Rrtype: dns.TypeTXT, Class: dns.ClassANY, Ttl: 60}})
		}), nil, dns.RcodeFormatError},
		{"a class ANY delete with RDATA", msg(t, zone, func(m *dns.Msg) {
			r := rr(t, `x.c1.example.com. 0 IN TXT "a"`)
			r.Header().Class = dns.ClassANY
			m.Ns = append(m.Ns, r)
		}), nil, dns.RcodeFormatError},
		{"a class NONE delete of type ANY", msg(t, zone, func(m *dns.Msg) {
			m.Ns = append(m.Ns, &dns.ANY{Hdr: dns.RR_Header{Name: "x.c1.example.com.", Rrtype: dns.TypeANY, Class: dns.ClassNONE}})
		}), nil, dns.RcodeFormatError},
		{"another class", msg(t, zone, func(m *dns.Msg) {
			r := rr(t, `x.c1.example.com. 0 IN TXT "a"`)
			r.Header().Class = dns.ClassCHAOS
			m.Ns = append(m.Ns, r)
		}), nil, dns.RcodeFormatError},
		{"a type with no DNSEndpoint form", msg(t, zone, func(m *dns.Msg) { m.Insert([]dns.RR{rr(t, "x.c1.example.com. 60 IN HINFO a b")}) }), nil, dns.RcodeFormatError},
		{"a prerequisite with a TTL", msg(t, zone, func(m *dns.Msg) {
			m.Answer = append(m.Answer, &dns.ANY{Hdr: dns.RR_Header{Name: "x.c1.example.com.", Rrtype: dns.TypeANY, Class: dns.ClassANY, Ttl: 1}})
		}), nil, dns.RcodeFormatError},
		{"two zones", func() *dns.Msg {
			m := msg(t, zone, func(*dns.Msg) {})
			m.Question = append(m.Question, m.Question[0])
			return m
		}(), nil, dns.RcodeFormatError},
		{"a zone section that is not SOA", func() *dns.Msg {
			m := msg(t, zone, func(*dns.Msg) {})
			m.Question[0].Qtype = dns.TypeA
			return m
		}(), nil, dns.RcodeFormatError},
	}
	for _, tc := range cases {
		u, rcode := dynupdate.Parse(tc.m)
		if rcode != tc.rcode {
			t.Errorf("%s: rcode %s, want %s", tc.name, dns.RcodeToString[rcode], dns.RcodeToString[tc.rcode])
			continue
		}
		if rcode == dns.RcodeSuccess && (u.Zone != zone || !reflect.DeepEqual(u.Changes, tc.want)) {
			t.Errorf("%s: got %s %+v\nwant %+v", tc.name, u.Zone, u.Changes, tc.want)
		}
	}
}

func TestCheckPrereqs(t *testing.T) {
	rec := dynupdate.Records{
		"x.c1.example.com.": {dns.TypeTXT: {TTL: 60, Values: []string{"a", "b"}}},
	}
	txt := func(s string) []dns.RR { return []dns.RR{rr(t, s)} }
	cases := []struct {
		name  string
		build func(m *dns.Msg)
		want  int
	}{
		{"none", func(*dns.Msg) {}, dns.RcodeSuccess},
		{"name in use: yes", func(m *dns.Msg) { m.NameUsed(txt(`x.c1.example.com. 0 IN TXT "a"`)) }, dns.RcodeSuccess},
		{"name in use: no", func(m *dns.Msg) { m.NameUsed(txt(`y.c1.example.com. 0 IN TXT "a"`)) }, dns.RcodeNameError},
		{"name not in use: it is", func(m *dns.Msg) { m.NameNotUsed(txt(`X.c1.example.com. 0 IN TXT "a"`)) }, dns.RcodeYXDomain},
		{"name not in use: it is not", func(m *dns.Msg) { m.NameNotUsed(txt(`y.c1.example.com. 0 IN TXT "a"`)) }, dns.RcodeSuccess},
		{"RRset exists: yes", func(m *dns.Msg) { m.RRsetUsed(txt(`x.c1.example.com. 0 IN TXT "a"`)) }, dns.RcodeSuccess},
		{"RRset exists: another type", func(m *dns.Msg) { m.RRsetUsed([]dns.RR{rr(t, "x.c1.example.com. 0 IN A 192.0.2.1")}) }, dns.RcodeNXRrset},
		{"RRset does not exist: it does", func(m *dns.Msg) { m.RRsetNotUsed(txt(`x.c1.example.com. 0 IN TXT "a"`)) }, dns.RcodeYXRrset},
		{"RRset does not exist: it does not", func(m *dns.Msg) { m.RRsetNotUsed(txt(`y.c1.example.com. 0 IN TXT "a"`)) }, dns.RcodeSuccess},
		{"RRset exists with these values: all of them", func(m *dns.Msg) {
			m.Used([]dns.RR{rr(t, `x.c1.example.com. 0 IN TXT "b"`), rr(t, `x.c1.example.com. 0 IN TXT "a"`)})
		}, dns.RcodeSuccess},
		{"RRset exists with these values: a subset", func(m *dns.Msg) { m.Used(txt(`x.c1.example.com. 0 IN TXT "a"`)) }, dns.RcodeNXRrset},
		{"RRset exists with these values: another value", func(m *dns.Msg) {
			m.Used([]dns.RR{rr(t, `x.c1.example.com. 0 IN TXT "a"`), rr(t, `x.c1.example.com. 0 IN TXT "c"`)})
		}, dns.RcodeNXRrset},
		{"RRset exists with these values: absent", func(m *dns.Msg) { m.Used(txt(`y.c1.example.com. 0 IN TXT "a"`)) }, dns.RcodeNXRrset},
		{"the first failure wins", func(m *dns.Msg) {
			m.NameNotUsed(txt(`x.c1.example.com. 0 IN TXT "a"`))
			m.NameUsed(txt(`y.c1.example.com. 0 IN TXT "a"`))
		}, dns.RcodeYXDomain},
	}
	for _, tc := range cases {
		u, rcode := dynupdate.Parse(msg(t, zone, tc.build))
		if rcode != dns.RcodeSuccess {
			t.Fatalf("%s: Parse: %s", tc.name, dns.RcodeToString[rcode])
		}
		if got := dynupdate.CheckPrereqs(u.Prereqs, rec); got != tc.want {
			t.Errorf("%s: %s, want %s", tc.name, dns.RcodeToString[got], dns.RcodeToString[tc.want])
		}
	}
}

func TestApply(t *testing.T) {
	n := "_acme-challenge.c1.example.com."
	add := func(v string, ttl uint32) dynupdate.Change {
		return dynupdate.Change{Op: dynupdate.OpAdd, Name: n, Type: dns.TypeTXT, TTL: ttl, Value: v}
	}
	del := func(v string) dynupdate.Change {
		return dynupdate.Change{Op: dynupdate.OpDeleteRR, Name: n, Type: dns.TypeTXT, Value: v}
	}
	one := dynupdate.Records{n: {dns.TypeTXT: {TTL: 60, Values: []string{"a"}}}}
	cases := []struct {
		name    string
		from    dynupdate.Records
		changes []dynupdate.Change
		want    dynupdate.Records
	}{
		{"add to nothing", dynupdate.Records{}, []dynupdate.Change{add("a", 60)}, one},
		{"a second value joins (apex and wildcard challenges)", one, []dynupdate.Change{add("b", 30)},
			dynupdate.Records{n: {dns.TypeTXT: {TTL: 30, Values: []string{"a", "b"}}}}},
		{"a duplicate is ignored but sets the TTL", one, []dynupdate.Change{add("a", 90)},
			dynupdate.Records{n: {dns.TypeTXT: {TTL: 90, Values: []string{"a"}}}}},
		{"delete the last value: the name goes", one, []dynupdate.Change{del("a")}, dynupdate.Records{}},
		{"delete a value that is not there", one, []dynupdate.Change{del("z")}, one},
		{"delete from a name that is not there", dynupdate.Records{}, []dynupdate.Change{del("a")}, dynupdate.Records{}},
		{"lego: replace the RRset", dynupdate.Records{n: {dns.TypeTXT: {TTL: 60, Values: []string{"a", "b"}}}},
			[]dynupdate.Change{{Op: dynupdate.OpDeleteRRset, Name: n, Type: dns.TypeTXT}, add("c", 120)},
			dynupdate.Records{n: {dns.TypeTXT: {TTL: 120, Values: []string{"c"}}}}},
		{"delete the name", dynupdate.Records{n: {dns.TypeTXT: {TTL: 60, Values: []string{"a"}}, dns.TypeA: {TTL: 1, Values: []string{"192.0.2.1"}}}},
			[]dynupdate.Change{{Op: dynupdate.OpDeleteName, Name: n, Type: dns.TypeANY}}, dynupdate.Records{}},
		{"delete one type of two", dynupdate.Records{n: {dns.TypeTXT: {TTL: 60, Values: []string{"a"}}, dns.TypeA: {TTL: 1, Values: []string{"192.0.2.1"}}}},
			[]dynupdate.Change{{Op: dynupdate.OpDeleteRRset, Name: n, Type: dns.TypeA}}, one},
	}
	for _, tc := range cases {
		before := tc.from.Clone()
		got := dynupdate.Apply(tc.from, tc.changes)
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%s: got %+v, want %+v", tc.name, got, tc.want)
		}
		if !reflect.DeepEqual(before, tc.from) {
			t.Errorf("%s: Apply changed its input", tc.name)
		}
	}
}

func TestEndpoints_RoundTrip(t *testing.T) {
	n := "_acme-challenge.c1.example.com."
	sets := map[uint16]dynupdate.RRset{dns.TypeTXT: {TTL: 60, Values: []string{"a", "b"}}, dns.TypeA: {TTL: 0, Values: []string{"192.0.2.1"}}}
	eps := dynupdate.Endpoints(n, sets)
	want := []dnsv1.Endpoint{
		{DNSName: "_acme-challenge.c1.example.com", RecordType: "A", Targets: dnsv1.Targets{"192.0.2.1"}, RecordTTL: 1},
		{DNSName: "_acme-challenge.c1.example.com", RecordType: "TXT", Targets: dnsv1.Targets{"a", "b"}, RecordTTL: 60},
	}
	if !reflect.DeepEqual(eps, want) {
		t.Fatalf("Endpoints = %+v, want %+v", eps, want)
	}
	back := dynupdate.FromEndpoints(eps)
	wantBack := dynupdate.Records{n: {dns.TypeTXT: {TTL: 60, Values: []string{"a", "b"}}, dns.TypeA: {TTL: 1, Values: []string{"192.0.2.1"}}}}
	if !reflect.DeepEqual(back, wantBack) {
		t.Fatalf("FromEndpoints = %+v, want %+v", back, wantBack)
	}
}

func TestAuthorize(t *testing.T) {
	p := dynupdate.Policy{Names: []string{"_acme-challenge.*"}, Types: []uint16{dns.TypeTXT}}
	ok := dynupdate.Update{Zone: zone, Changes: []dynupdate.Change{{Op: dynupdate.OpAdd, Name: "_acme-challenge.c1.example.com.", Type: dns.TypeTXT}}}
	if got := dynupdate.Authorize(p, ok); got != dns.RcodeSuccess {
		t.Errorf("an allowed change: %s", dns.RcodeToString[got])
	}
	bad := ok
	bad.Changes = append(bad.Changes, dynupdate.Change{Op: dynupdate.OpAdd, Name: "www.c1.example.com.", Type: dns.TypeTXT})
	if got := dynupdate.Authorize(p, bad); got != dns.RcodeRefused {
		t.Errorf("one change outside the policy among allowed ones: %s, want REFUSED", dns.RcodeToString[got])
	}
}

// TestKeyring pins that a key verifies only for the zones that bind it: two DNSZones' keys of
// the same name with different secrets each verify their own zone, and a binding removed is
// gone.
func TestKeyring(t *testing.T) {
	k := dynupdate.NewKeyring()
	a := types.NamespacedName{Namespace: "ns", Name: "a"}
	b := types.NamespacedName{Namespace: "other", Name: "b"}
	key := dynupdate.Key{Name: "acme.", Algorithm: dns.HmacSHA256, Secret: "cGFzc3dvcmQ="}
	k.Set(a, []dynupdate.Binding{{DNSZone: a, Zone: "a.example.com.", Secret: "s", Key: key}})
	if got, ok := k.Key("ACME", "A.example.com"); !ok || got != key {
		t.Fatalf("Key(ACME, A.example.com) = %+v, %v", got, ok)
	}
	if _, ok := k.Key("acme.", "b.example.com."); ok {
		t.Fatal("a key bound to zone a verifies for zone b")
	}
	other := key
	other.Secret = "b3RoZXI="
	k.Set(b, []dynupdate.Binding{{DNSZone: b, Zone: "b.example.com.", Secret: "s", Key: other}})
	if got, ok := k.Key("acme.", "a.example.com."); !ok || got != key {
		t.Fatalf("zone a's key after another tenant bound the same name: %+v, %v", got, ok)
	}
	if got, ok := k.Key("acme.", "b.example.com."); !ok || got != other {
		t.Fatalf("zone b's key: %+v, %v", got, ok)
	}
	shared := types.NamespacedName{Namespace: "ns", Name: "0-shared"}
	k.Set(shared, []dynupdate.Binding{{DNSZone: shared, Zone: "a.example.com.", Secret: "t", Key: other}})
	if bd, _ := k.Binding("acme.", "a.example.com."); bd.DNSZone != shared {
		t.Fatalf("two DNSZones of one zone bind the key: %s wins, want the first by namespace/name", bd.DNSZone)
	}
	for name, want := range map[string]string{"_acme-challenge.www.A.example.com": "a.example.com.", "a.example.com.": "a.example.com.",
		"example.com.": "", "xa.example.com.": ""} {
		if got, ok := k.Zone(name); got != want || ok != (want != "") {
			t.Errorf("Zone(%q) = %q, %v; want %q", name, got, ok, want)
		}
	}
	inner := types.NamespacedName{Namespace: "ns", Name: "inner"}
	k.Set(inner, []dynupdate.Binding{{DNSZone: inner, Zone: "sub.a.example.com.", Secret: "s", Key: key}})
	if got, _ := k.Zone("_acme-challenge.sub.a.example.com."); got != "sub.a.example.com." {
		t.Errorf("Zone below a child zone = %q, want the longest, sub.a.example.com.", got)
	}
	k.Set(inner, nil)
	k.Set(shared, nil)
	k.Set(a, nil)
	if _, ok := k.Key("acme.", "a.example.com."); ok {
		t.Fatal("a key with no binding left verifies")
	}
}

// TestAuthorize_Prerequisites pins that a prerequisite names only what the key may change: an
// owner name of its binding's names and, for an RRset prerequisite, a type of its types. The
// records dynamic updates hold are all the zone holds there; elsewhere (www's A records, which
// another object publishes) they say nothing, so such a prerequisite is REFUSED, never judged.
func TestAuthorize_Prerequisites(t *testing.T) {
	p := dynupdate.Policy{Names: []string{"_acme-challenge.*"}, Types: []uint16{dns.TypeTXT}}
	txt := func(s string) []dns.RR { return []dns.RR{rr(t, s)} }
	cases := []struct {
		name  string
		build func(m *dns.Msg)
		want  int
	}{
		{"name not in use, outside the names", func(m *dns.Msg) { m.NameNotUsed(txt(`www.c1.example.com. 0 IN A 192.0.2.1`)) }, dns.RcodeRefused},
		{"name in use, outside the names", func(m *dns.Msg) { m.NameUsed(txt(`www.c1.example.com. 0 IN A 192.0.2.1`)) }, dns.RcodeRefused},
		{"RRset exists, outside the names", func(m *dns.Msg) { m.RRsetUsed(txt(`www.c1.example.com. 0 IN A 192.0.2.1`)) }, dns.RcodeRefused},
		{"RRset does not exist, outside the names", func(m *dns.Msg) { m.RRsetNotUsed(txt(`www.c1.example.com. 0 IN A 192.0.2.1`)) }, dns.RcodeRefused},
		{"RRset with values, outside the names", func(m *dns.Msg) { m.Used(txt(`www.c1.example.com. 0 IN A 192.0.2.1`)) }, dns.RcodeRefused},
		{"RRset exists, a type outside the types", func(m *dns.Msg) { m.RRsetUsed(txt(`_acme-challenge.c1.example.com. 0 IN A 192.0.2.1`)) }, dns.RcodeRefused},
		{"RRset does not exist, a type outside the types", func(m *dns.Msg) {
			m.RRsetNotUsed(txt(`_acme-challenge.c1.example.com. 0 IN CNAME x.example.com.`))
		}, dns.RcodeRefused},
		{"name not in use, inside the names", func(m *dns.Msg) { m.NameNotUsed(txt(`_acme-challenge.www.c1.example.com. 0 IN TXT "a"`)) }, dns.RcodeSuccess},
		{"name in use, inside the names", func(m *dns.Msg) { m.NameUsed(txt(`_acme-challenge.c1.example.com. 0 IN TXT "a"`)) }, dns.RcodeSuccess},
		{"RRset exists, inside", func(m *dns.Msg) { m.RRsetUsed(txt(`_acme-challenge.c1.example.com. 0 IN TXT "a"`)) }, dns.RcodeSuccess},
		{"RRset does not exist, inside", func(m *dns.Msg) { m.RRsetNotUsed(txt(`_acme-challenge.c1.example.com. 0 IN TXT "a"`)) }, dns.RcodeSuccess},
		{"RRset with values, inside", func(m *dns.Msg) { m.Used(txt(`_acme-challenge.c1.example.com. 0 IN TXT "a"`)) }, dns.RcodeSuccess},
	}
	for _, tc := range cases {
		u, rcode := dynupdate.Parse(msg(t, zone, tc.build))
		if rcode != dns.RcodeSuccess {
			t.Fatalf("%s: Parse: %s", tc.name, dns.RcodeToString[rcode])
		}
		if got := dynupdate.Authorize(p, u); got != tc.want {
			t.Errorf("%s: %s, want %s", tc.name, dns.RcodeToString[got], dns.RcodeToString[tc.want])
		}
	}
}
