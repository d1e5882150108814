package dnsserver

import (
	"context"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/dnsplane/dnsplane/internal/testing/hackrun"
	"github.com/dnsplane/dnsplane/internal/testing/testrun"
	"github.com/dnsplane/dnsplane/internal/testing/validator"
	"github.com/dnsplane/dnsplane/pkg/dnssec"
	"github.com/dnsplane/dnsplane/pkg/zonedb"
)

// unboundAddr is the loopback address the validating Unbound listens on.
const unboundAddr = "127.0.0.27"

// signedTree is a parent zone "test." (the trust anchor) on one embedded server delegating,
// with DS, to signed child zones on another: example.test. (NSEC), nsec3.test. (NSEC3),
// compact.test. (compact denial, RFC 9824) and bad.test., whose DS in the parent is of keys the
// child does not sign with.
type signedTree struct {
	parent, child *Server
	// childStore holds the child server's zones.
	childStore *zonedb.Store
	anchor     []dns.RR // the DS set of test.
	// servedBy is the address Unbound asks for a child zone, when not the child server's.
	servedBy map[string]string
}

// childZones are the signed zones of the child server and their NSEC3 parameters. off.test.
// is being turned unsigned (its key set's Unsigning: CDS and CDNSKEY in the delete form).
var childZones = map[string]*dnssec.NSEC3Params{"example.test.": nil, "nsec3.test.": {}, "bad.test.": nil, "off.test.": nil, compactZone: nil}

// compactZone is the child zone signed with compact denial.
const compactZone = "compact.test."

// newSignedTree starts the two servers and signs every zone.
func newSignedTree(t *testing.T) signedTree {
	t.Helper()
	return newSignedTreeWith(t, ServerOptions{})
}

// newSignedTreeWith is newSignedTree with the child server's options.
func newSignedTreeWith(t *testing.T, childOpts ServerOptions) signedTree {
	t.Helper()
	childStore := newZones(t, zoneNames(childZones))
	parentStore := newZones(t, []string{"test."})
	child := startServer(t, childStore, childOpts)
	parent := startServer(t, parentStore, ServerOptions{})
	var delegations []string
	for zone, params := range childZones {
		pol := signingPolicy(t, zone, params)
		pol.Compact = zone == compactZone
		if zone == "off.test." {
			pol.Keys.Unsigning = &dnssec.Unsigning{Since: time.Now()}
		}
		if err := child.SetSigning(zone, pol); err != nil {
			t.Fatal(err)
		}
		published := pol.Keys
		if zone == "bad.test." {
			published = signingPolicy(t, zone, nil).Keys // a DS of keys the child does not have
		}
		delegations = append(delegations, zone+" 300 IN NS ns."+zone, "ns."+zone+" 300 IN A 127.0.0.1")
		for _, ds := range published.DS(300, dnssec.Active) {
			delegations = append(delegations, ds.String())
		}
	}
	if err := parentStore.Update("test.", func(tx *zonedb.Tx) error {
		for _, l := range delegations {
			put(t, tx, "", nil, l)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	root := signingPolicy(t, "test.", nil)
	if err := parent.SetSigning("test.", root); err != nil {
		t.Fatal(err)
	}
	return signedTree{parent: parent, child: child, childStore: childStore, anchor: root.Keys.DS(300, dnssec.Active), servedBy: map[string]string{}}
}

func zoneNames(m map[string]*dnssec.NSEC3Params) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// newZones returns a store serving zones, each with the records the validation test asks for.
func newZones(t *testing.T, zones []string) *zonedb.Store {
	t.Helper()
	s := zonedb.NewStore(zonedb.StoreOptions{NameServerAddrs: []netip.Addr{netip.MustParseAddr("127.0.0.1")}})
	if err := s.Load(); err != nil {
		t.Fatal(err)
	}
	for _, z := range zones {
		if _, err := s.CreateZone(z, zonedb.ZoneMeta{}); err != nil {
			t.Fatal(err)
		}
		if z == "test." {
			continue
		}
		if err := s.Update(z, func(tx *zonedb.Tx) error {
			put(t, tx, "", nil, "www."+z+" 300 IN A 192.0.2.1")
			put(t, tx, "", nil, "www."+z+" 300 IN AAAA 2001:db8::1")
			put(t, tx, "", nil, "*.wild."+z+" 300 IN A 192.0.2.50")
			put(t, tx, "", nil, "deep.ent."+z+" 300 IN A 192.0.2.2")
			put(t, tx, "", nil, "alias."+z+" 300 IN CNAME www."+z)
			put(t, tx, "", nil, "ins."+z+" 300 IN NS ns.elsewhere.example.") // no DS: insecure
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	return s
}

// startUnbound runs a validating Unbound for tree until the test ends and returns its address:
// anchored at the DS of test., it asks the parent server for test. and the child server (or
// the one of tree.servedBy) for each child zone.
func startUnbound(t *testing.T, tree signedTree) string {
	t.Helper()
	stubs := []validator.Stub{{Zone: "test.", Addr: tree.parent.Addr()}}
	for zone := range childZones {
		addr := tree.child.Addr()
		if a, ok := tree.servedBy[zone]; ok {
			addr = a
		}
		stubs = append(stubs, validator.Stub{Zone: zone, Addr: addr})
	}
	return validator.StartUnbound(t, validator.Unbound{Host: unboundAddr, Anchor: tree.anchor[0].String(), Stubs: stubs, Probe: "test."})
}

// validationCase is one question and what a validator must make of it.
type validationCase struct {
	name   string
	qtype  uint16
	rcode  int
	secure bool // AD from Unbound, "fully validated" from delv
}

// validationCases are the questions for each signed child zone z.
func validationCases(z string) []validationCase {
	return []validationCase{
		{"www." + z, dns.TypeA, dns.RcodeSuccess, true},
		{z, dns.TypeDNSKEY, dns.RcodeSuccess, true},
		{"nothere." + z, dns.TypeA, dns.RcodeNameError, true},
		{"www." + z, dns.TypeTXT, dns.RcodeSuccess, true},
		{"ent." + z, dns.TypeA, dns.RcodeSuccess, true},
		{"host.wild." + z, dns.TypeA, dns.RcodeSuccess, true},
		{"host.wild." + z, dns.TypeMX, dns.RcodeSuccess, true},
		{"alias." + z, dns.TypeA, dns.RcodeSuccess, true},
		{"ins." + z, dns.TypeDS, dns.RcodeSuccess, true},
		{z, dns.TypeNSEC3PARAM, dns.RcodeSuccess, true},
		{z, dns.TypeCDS, dns.RcodeSuccess, true},
		{z, dns.TypeCDNSKEY, dns.RcodeSuccess, true},
	}
}

// TestDNSSEC_CDSAndCDNSKEYValidate: a signed zone publishes CDS and CDNSKEY (RFC 7344) of its
// key-signing keys, the DS set the parent is to hold; a zone being turned unsigned publishes
// the delete forms (RFC 8078: CDS 0 0 0 00, CDNSKEY 0 3 0 AA==). Both are signed by the
// key-signing keys: Unbound and delv, anchored at the parent, find them secure.
func TestDNSSEC_CDSAndCDNSKEYValidate(t *testing.T) {
	hackrun.Need(t, "unbound", "unbound")
	hackrun.Need(t, "bind9-dnsutils", "delv")
	tree := newSignedTree(t)
	for zone, want := range map[string][2]string{
		"off.test.": {"0 0 0 00", "0 3 0 AA=="},
	} {
		for i, qtype := range []uint16{dns.TypeCDS, dns.TypeCDNSKEY} {
			m := new(dns.Msg)
			m.SetQuestion(zone, qtype)
			r := exchange(t, tree.child.Addr(), "tcp", m)
			if len(r.Answer) != 1 || strings.Join(strings.Fields(r.Answer[0].String())[4:], " ") != want[i] {
				t.Fatalf("%s %s: %v, want the delete form %s", zone, dns.TypeToString[qtype], r.Answer, want[i])
			}
		}
	}
	m := new(dns.Msg)
	m.SetQuestion("example.test.", dns.TypeCDS)
	cds := exchange(t, tree.child.Addr(), "tcp", m)
	m.SetQuestion("example.test.", dns.TypeDS)
	var parentDS []string
	for _, rr := range exchange(t, tree.parent.Addr(), "tcp", m).Answer {
		if d, ok := rr.(*dns.DS); ok {
			parentDS = append(parentDS, strings.Join(strings.Fields(d.String())[4:], " "))
		}
	}
	var got []string
	for _, rr := range cds.Answer {
		got = append(got, strings.Join(strings.Fields(rr.String())[4:], " "))
	}
	if len(got) == 0 || strings.Join(got, ",") != strings.Join(parentDS, ",") {
		t.Fatalf("example.test. CDS %v; want the DS set the parent holds %v", got, parentDS)
	}
	validate(t, tree, append(validationCases("example.test."), validationCases("off.test.")...))
}

// TestDNSSEC_UnboundAndDelvValidate has Unbound resolve, and delv validate through it (delv
// sets CD and validates on its own), positive answers, NXDOMAIN, NODATA, empty non-terminals,
// wildcard answers and wildcard NODATA, CNAMEs and the denial of a DS, in an NSEC and an NSEC3
// zone whose DS is in a signed parent zone, the trust anchor; and a zone whose DS in the parent
// is not of its keys is bogus: SERVFAIL.
func TestDNSSEC_UnboundAndDelvValidate(t *testing.T) {
	hackrun.Need(t, "unbound", "unbound")
	hackrun.Need(t, "bind9-dnsutils", "delv")
	tree := newSignedTree(t)
	cases := append(validationCases("example.test."), validationCases("nsec3.test.")...)
	cases = append(cases, validationCase{"www.bad.test.", dns.TypeA, dns.RcodeServerFailure, false})
	validate(t, tree, cases)
}

// TestDNSSEC_KnotSecondaryServesTheSignedZone: Knot, a secondary of the child server for the
// NSEC3 zone, serves the signed zone it transferred as it is, and Unbound and delv validate its
// answers as they do the embedded server's.
func TestDNSSEC_KnotSecondaryServesTheSignedZone(t *testing.T) {
	hackrun.Need(t, "knot", "knotd")
	hackrun.Need(t, "unbound", "unbound")
	hackrun.Need(t, "bind9-dnsutils", "delv")
	tree := newSignedTree(t)
	knot := startKnot(t, knotd(), tree.child.Addr(), "nsec3.test.")
	testrun.Eventually(t, 15*time.Second, "knot serves nsec3.test.", func() error {
		m := new(dns.Msg)
		m.SetQuestion("nsec3.test.", dns.TypeDNSKEY)
		m.SetEdns0(4096, true)
		r, _, err := (&dns.Client{Net: "tcp", Timeout: time.Second}).Exchange(m, knot)
		if err == nil && (!r.Authoritative || len(r.Answer) < 3) {
			err = fmt.Errorf("DNSKEY answer %v", r)
		}
		return err
	})
	tree.servedBy["nsec3.test."] = knot
	validate(t, tree, validationCases("nsec3.test."))
}

// validate asks Unbound for each case, and delv through it, and checks what they make of it.
func validate(t *testing.T, tree signedTree, cases []validationCase) {
	t.Helper()
	resolver := startUnbound(t, tree)
	var ds []string
	for _, rr := range tree.anchor {
		ds = append(ds, rr.String())
	}
	anchors := validator.DelvAnchors(t, ds)
	for _, c := range cases {
		what := c.name + " " + dns.TypeToString[c.qtype]
		m := new(dns.Msg)
		m.SetQuestion(c.name, c.qtype)
		m.SetEdns0(1232, true)
		resp := exchange(t, resolver, "udp", m)
		if resp.Rcode != c.rcode || resp.AuthenticatedData != c.secure {
			t.Errorf("unbound %s: %s AD=%v, want %s AD=%v", what, dns.RcodeToString[resp.Rcode], resp.AuthenticatedData,
				dns.RcodeToString[c.rcode], c.secure)
		}
		out := delv(t, resolver, anchors, c.name, c.qtype)
		validated, failed := strings.Contains(out, "fully validated"), strings.Contains(out, "resolution failed: failure")
		if validated != c.secure || failed == c.secure {
			t.Errorf("delv %s: fully validated %v, failed %v, want secure %v:\n%s", what, validated, failed, c.secure, out)
		}
	}
}

// delv asks delv, through the resolver at addr, for name/qtype validated from the anchors, and
// returns its output.
func delv(t *testing.T, addr, anchors, name string, qtype uint16) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return validator.Delv(ctx, addr, anchors, "test.", name, dns.TypeToString[qtype])
}

// TestDNSSEC_TransferOfASignedZoneVerifies transfers the signed NSEC and NSEC3 zones (AXFR, and
// IXFR from an old serial, which gets the whole signed zone) and has ldns-verify-zone check
// every signature and the denial chain of the result.
func TestDNSSEC_TransferOfASignedZoneVerifies(t *testing.T) {
	hackrun.Need(t, "ldnsutils", "ldns-verify-zone")
	zones := []string{"example.test.", "nsec3.test."}
	srv := startServer(t, newZones(t, zones), ServerOptions{})
	for _, z := range zones {
		if err := srv.SetSigning(z, signingPolicy(t, z, childZones[z])); err != nil {
			t.Fatal(err)
		}
		for _, qtype := range []uint16{dns.TypeAXFR, dns.TypeIXFR} {
			m := new(dns.Msg)
			if qtype == dns.TypeAXFR {
				m.SetAxfr(z)
			} else {
				m.SetIxfr(z, 1, "ns1."+z, "hostmaster."+z)
			}
			rrs, err := transfer(m, srv.Addr())
			if err != nil {
				t.Fatal(err)
			}
			var b strings.Builder
			for _, rr := range rrs[:len(rrs)-1] { // the closing SOA
				b.WriteString(rr.String() + "\n")
			}
			if out, err := ldnsVerify(t, b.String()); err != nil {
				t.Errorf("%s %s: ldns-verify-zone: %v\n%s\n%s", dns.TypeToString[qtype], z, err, out, b.String())
			}
			// The control: a changed record does not verify.
			if _, err := ldnsVerify(t, strings.Replace(b.String(), "192.0.2.1\n", "192.0.2.9\n", 1)); err == nil {
				t.Errorf("%s %s: ldns-verify-zone takes a changed record", dns.TypeToString[qtype], z)
			}
		}
	}
}

// ldnsVerify runs ldns-verify-zone over the zone text and returns its output; the error is
// its exit status (0: every signature and the denial chain verify).
func ldnsVerify(t *testing.T, zone string) (string, error) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "zone")
	if err := os.WriteFile(path, []byte(zone), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := exec.CommandContext(ctx, "ldns-verify-zone", path).CombinedOutput()
	return string(out), err
}
