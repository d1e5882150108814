package dnsserver

import (
	"errors"
	"fmt"
	"maps"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"
	clocktesting "k8s.io/utils/clock/testing"
)

// snapshotAnswers queries a fixed list over the wire and renders the result,
// to compare what two servers serve.
func snapshotAnswers(t *testing.T, addr string) []string {
	t.Helper()
	var out []string
	for _, q := range []struct {
		name  string
		qtype uint16
	}{
		{"example.test", dns.TypeSOA}, {"example.test", dns.TypeNS}, {"www.example.test", dns.TypeA},
		{"multi.example.test", dns.TypeA}, {"alias.example.test", dns.TypeA}, {"x.wild.example.test", dns.TypeTXT},
		{"host.sub.example.test", dns.TypeA}, {"sub.example.test", dns.TypeDS}, {"big.example.test", dns.TypeTXT},
		{"nope.example.test", dns.TypeA}, {"ent.example.test", dns.TypeA}, {"www.child.example.test", dns.TypeA},
		{"mixed.example.test", dns.TypeA},
	} {
		resp := ask(t, addr, "tcp", q.name, q.qtype)
		out = append(out, q.name+"/"+dns.TypeToString[q.qtype]+" "+dns.RcodeToString[resp.Rcode]+
			" "+strings.Join(texts(resp.Answer), "|")+" ns:"+strings.Join(texts(resp.Ns), "|")+" extra:"+strings.Join(texts(resp.Extra), "|"))
	}
	return out
}

func TestStore_ReloadServesExactlyWhatWasWritten(t *testing.T) {
	dir := t.TempDir()
	first := exampleStore(t, dir)
	a := startServer(t, first, ServerOptions{})
	want := snapshotAnswers(t, a.Addr())

	second := NewStore(StoreOptions{Dir: dir})
	if err := second.Load(); err != nil {
		t.Fatal(err)
	}
	b := startServer(t, second, ServerOptions{})
	got := snapshotAnswers(t, b.Addr())
	if !slices.Equal(got, want) {
		t.Fatalf("reloaded store answers differently:\n got %q\nwant %q", got, want)
	}
	// Metadata and set-level data survive too.
	for _, origin := range []string{"example.test.", "child.example.test."} {
		zi1, _ := first.Zone(origin)
		zi2, err := second.Zone(origin)
		if err != nil {
			t.Fatal(err)
		}
		if zi1.Serial != zi2.Serial || zi1.Meta.CallerReference != zi2.Meta.CallerReference ||
			!zi1.Meta.Created.Equal(zi2.Meta.Created) || zi1.Meta.ID != zi2.Meta.ID || zi1.Meta.Tags["k"] != zi2.Meta.Tags["k"] {
			t.Errorf("%s: zone info %+v, want %+v", origin, zi2, zi1)
		}
		s1, _ := first.RRSets(origin)
		s2, _ := second.RRSets(origin)
		if len(s1) != len(s2) {
			t.Fatalf("%s: %d sets after reload, want %d", origin, len(s2), len(s1))
		}
		for i := range s1 {
			if s1[i].Key() != s2[i].Key() || s1[i].TTL != s2[i].TTL || (s1[i].Weight == nil) != (s2[i].Weight == nil) ||
				(s1[i].Weight != nil && *s1[i].Weight != *s2[i].Weight) || !slices.Equal(texts(s1[i].RRs), texts(s2[i].RRs)) {
				t.Errorf("set %d: %+v, want %+v", i, s2[i], s1[i])
			}
		}
	}
}

func TestStore_WeightedSetsLiveInTheSidecarNotTheMasterFile(t *testing.T) {
	dir := t.TempDir()
	exampleStore(t, dir)
	zone, err := os.ReadFile(filepath.Join(dir, "example.test.zone"))
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(zone), "192.0.2.70") || !strings.Contains(string(zone), "192.0.2.100") {
		t.Errorf("master file must hold plain sets only:\n%s", zone)
	}
	meta, err := os.ReadFile(filepath.Join(dir, "example.test.meta.json"))
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range []string{`"setIdentifier": "eu"`, `"weight": 70`, `"callerReference": "ref-1"`, "192.0.2.70"} {
		if !strings.Contains(string(meta), s) {
			t.Errorf("sidecar lacks %s:\n%s", s, meta)
		}
	}
	// The master file is a valid RFC 1035 file on its own.
	zp := dns.NewZoneParser(strings.NewReader(string(zone)), "example.test.", "")
	n := 0
	for _, ok := zp.Next(); ok; _, ok = zp.Next() {
		n++
	}
	if zp.Err() != nil || n == 0 {
		t.Fatalf("master file does not parse: %v", zp.Err())
	}
}

func TestStore_LeftoverTempFileDoesNotBreakLoad(t *testing.T) {
	dir := t.TempDir()
	exampleStore(t, dir)
	// A crash after writing part of a temporary file, before its rename.
	leftovers := []string{".example.test.zone.tmp-123", ".example.test.meta.json.tmp-456", ".new.test.zone.tmp-789"}
	// A zone whose name merely contains the marker is not a leftover.
	if _, err := NewStoreForTest(t, dir).CreateZone("a.tmp-b.test", ZoneMeta{}); err != nil {
		t.Fatal(err)
	}
	for _, name := range leftovers {
		if err := os.WriteFile(filepath.Join(dir, name), []byte("garbage $ORIGIN ((("), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	s := NewStore(StoreOptions{Dir: dir})
	if err := s.Load(); err != nil {
		t.Fatalf("Load: %v", err)
	}
	if got := len(s.Zones()); got != 3 {
		t.Fatalf("%d zones after Load, want 3: %v", got, s.Zones())
	}
	for _, name := range leftovers {
		if _, err := os.Stat(filepath.Join(dir, name)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("leftover %s not removed: %v", name, err)
		}
	}
	srv := startServer(t, s, ServerOptions{})
	if resp := ask(t, srv.Addr(), "udp", "www.example.test", dns.TypeA); len(resp.Answer) != 1 {
		t.Fatalf("not serving after Load: %v", resp)
	}
}

func TestStore_SidecarWithoutMasterFileIsAnInterruptedCreate(t *testing.T) {
	dir := t.TempDir()
	s := NewStore(StoreOptions{Dir: dir})
	if _, err := s.CreateZone("half.test", ZoneMeta{CallerReference: "r"}); err != nil {
		t.Fatal(err)
	}
	// The crash: sidecar renamed, master file not yet.
	if err := os.Remove(filepath.Join(dir, "half.test.zone")); err != nil {
		t.Fatal(err)
	}
	s2 := NewStore(StoreOptions{Dir: dir})
	if err := s2.Load(); err != nil {
		t.Fatal(err)
	}
	if _, err := s2.Zone("half.test"); !errors.Is(err, ErrZoneNotFound) {
		t.Fatalf("zone without master file is served: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "half.test.meta.json")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("orphan sidecar not removed: %v", err)
	}
	// And the creation can be retried.
	if _, err := s2.CreateZone("half.test", ZoneMeta{CallerReference: "r"}); err != nil {
		t.Fatal(err)
	}
}

func TestStore_CrashBetweenRenamesServesNewSidecarWithOldMasterFile(t *testing.T) {
	dir := t.TempDir()
	s := exampleStore(t, dir)
	zonePath := filepath.Join(dir, "example.test.zone")
	old, err := os.ReadFile(zonePath)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Update("example.test", func(tx *Tx) error {
		put(t, tx, "", nil, "www.example.test. 300 IN A 192.0.2.222")
		put(t, tx, "eu", ptr(int64(70)), "w.example.test. 30 IN A 192.0.2.77")
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	// Simulate the crash: the sidecar rename happened, the master file's did not.
	if err := os.WriteFile(zonePath, old, 0o600); err != nil {
		t.Fatal(err)
	}
	s2 := NewStore(StoreOptions{Dir: dir})
	if err := s2.Load(); err != nil {
		t.Fatalf("Load after crash: %v", err)
	}
	sets, _ := s2.RRSets("example.test")
	var www, eu string
	for _, rs := range sets {
		switch rs.Key() {
		case SetKey{Name: "www.example.test.", Type: dns.TypeA}:
			www = rs.RRs[0].(*dns.A).A.String()
		case SetKey{Name: "w.example.test.", Type: dns.TypeA, SetIdentifier: "eu"}:
			eu = rs.RRs[0].(*dns.A).A.String()
		}
	}
	if www != "192.0.2.1" || eu != "192.0.2.77" {
		t.Errorf("after crash: www=%s (old master file) eu=%s (new sidecar); want 192.0.2.1 and 192.0.2.77", www, eu)
	}
	zi, _ := s2.Zone("example.test")
	if zi.Serial != 3 {
		t.Errorf("serial %d, want the sidecar's 3 so that it keeps moving forward", zi.Serial)
	}
}

func TestStore_CorruptZoneIsReportedOthersStillLoad(t *testing.T) {
	dir := t.TempDir()
	exampleStore(t, dir)
	if err := os.WriteFile(filepath.Join(dir, "broken.test.zone"), []byte("broken.test. IN SOA ((("), 0o600); err != nil {
		t.Fatal(err)
	}
	s := NewStore(StoreOptions{Dir: dir})
	err := s.Load()
	if !errors.Is(err, ErrCorruptZone) || !strings.Contains(err.Error(), "broken.test") {
		t.Fatalf("Load error = %v, want ErrCorruptZone naming broken.test", err)
	}
	if len(s.Zones()) != 2 {
		t.Errorf("good zones not loaded: %v", s.Zones())
	}
}

func TestStore_MasterFileWithoutSidecarIsServed(t *testing.T) {
	dir := t.TempDir()
	content := "$ORIGIN hand.test.\n@ 300 IN SOA ns1 hostmaster 7 3600 600 86400 60\n@ 300 IN NS ns1\nns1 300 IN A 127.0.0.1\nwww 60 IN A 192.0.2.7\n"
	if err := os.WriteFile(filepath.Join(dir, "hand.test.zone"), []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	s := NewStore(StoreOptions{Dir: dir})
	if err := s.Load(); err != nil {
		t.Fatal(err)
	}
	srv := startServer(t, s, ServerOptions{})
	resp := ask(t, srv.Addr(), "udp", "www.hand.test", dns.TypeA)
	if len(resp.Answer) != 1 || !resp.Authoritative {
		t.Fatalf("hand-written zone not served: %v", resp)
	}
}

func TestStore_SerialIncrementsOnEveryChangeOnly(t *testing.T) {
	s := NewStore(StoreOptions{Clock: countingClock()})
	zi, err := s.CreateZone("serial.test", ZoneMeta{})
	if err != nil || zi.Serial != 1 {
		t.Fatalf("new zone serial %d, %v", zi.Serial, err)
	}
	for i := range 3 {
		if err := s.Update("serial.test", func(tx *Tx) error {
			put(t, tx, "", nil, "a.serial.test. 60 IN A 192.0.2."+string(rune('1'+i)))
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	// A transaction that changes nothing does not bump the serial.
	if err := s.Update("serial.test", func(tx *Tx) error { return nil }); err != nil {
		t.Fatal(err)
	}
	zi, _ = s.Zone("serial.test")
	if zi.Serial != 4 {
		t.Fatalf("serial %d after 3 changes, want 4", zi.Serial)
	}
}

func TestStore_FailedTransactionChangesNothing(t *testing.T) {
	s := exampleStore(t, t.TempDir())
	before, _ := s.RRSets("example.test")
	zi, _ := s.Zone("example.test")
	boom := errors.New("boom")
	err := s.Update("example.test", func(tx *Tx) error {
		put(t, tx, "", nil, "www.example.test. 300 IN A 192.0.2.200")
		tx.Delete(SetKey{Name: "mail.example.test.", Type: dns.TypeA})
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("Update error = %v, want the fn's error", err)
	}
	after, _ := s.RRSets("example.test")
	zi2, _ := s.Zone("example.test")
	if len(after) != len(before) || zi2.Serial != zi.Serial {
		t.Fatalf("failed transaction changed the zone")
	}
	for i := range before {
		if !slices.Equal(texts(before[i].RRs), texts(after[i].RRs)) {
			t.Fatalf("set %v changed", before[i].Key())
		}
	}
}

func TestStore_RejectsInvalidRecordSets(t *testing.T) {
	s := exampleStore(t, "")
	for _, tc := range []struct {
		name string
		fn   func(tx *Tx) error
	}{
		{"outside the zone", func(tx *Tx) error {
			return tx.Put(RRSet{Name: "www.other.test.", Type: dns.TypeA, TTL: 1, RRs: rrs(t, "www.other.test. 1 IN A 192.0.2.1")})
		}},
		{"SOA", func(tx *Tx) error {
			return tx.Put(RRSet{Name: "example.test.", Type: dns.TypeSOA, TTL: 1, RRs: rrs(t, "example.test. 1 IN SOA a. b. 1 2 3 4 5")})
		}},
		{"type mismatch", func(tx *Tx) error {
			return tx.Put(RRSet{Name: "x.example.test.", Type: dns.TypeAAAA, TTL: 1, RRs: rrs(t, "x.example.test. 1 IN A 192.0.2.1")})
		}},
		{"duplicate records", func(tx *Tx) error {
			return tx.Put(RRSet{Name: "x.example.test.", Type: dns.TypeA, TTL: 1, RRs: rrs(t, "x.example.test. 1 IN A 192.0.2.1", "x.example.test. 5 IN A 192.0.2.1")})
		}},
		{"empty set", func(tx *Tx) error { return tx.Put(RRSet{Name: "x.example.test.", Type: dns.TypeA, TTL: 1}) }},
		{"weight without set identifier", func(tx *Tx) error {
			return tx.Put(RRSet{Name: "x.example.test.", Type: dns.TypeA, TTL: 1, Weight: ptr(int64(1)), RRs: rrs(t, "x.example.test. 1 IN A 192.0.2.1")})
		}},
		{"CNAME beside other data", func(tx *Tx) error {
			return tx.Put(RRSet{Name: "www.example.test.", Type: dns.TypeCNAME, TTL: 1, RRs: rrs(t, "www.example.test. 1 IN CNAME other.test.")})
		}},
		{"CNAME at the apex", func(tx *Tx) error {
			return tx.Put(RRSet{Name: "example.test.", Type: dns.TypeCNAME, TTL: 1, RRs: rrs(t, "example.test. 1 IN CNAME other.test.")})
		}},
		{"two CNAMEs in one set", func(tx *Tx) error {
			return tx.Put(RRSet{Name: "c.example.test.", Type: dns.TypeCNAME, TTL: 1, RRs: rrs(t, "c.example.test. 1 IN CNAME a.test.", "c.example.test. 1 IN CNAME b.test.")})
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before, _ := s.Zone("example.test")
			if err := s.Update("example.test", tc.fn); !errors.Is(err, ErrInvalidRRSet) {
				t.Fatalf("error = %v, want ErrInvalidRRSet", err)
			}
			if after, _ := s.Zone("example.test"); after.Serial != before.Serial {
				t.Fatal("rejected change bumped the serial")
			}
		})
	}
}

func TestStore_CreateZoneAddsNSAndGlueAndStampsTime(t *testing.T) {
	now := time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)
	s := NewStore(StoreOptions{Clock: clocktesting.NewFakePassiveClock(now), NameServerAddrs: nil})
	zi, err := s.CreateZone("Fresh.Test.", ZoneMeta{CallerReference: "x"})
	if err != nil {
		t.Fatal(err)
	}
	if zi.Origin != "fresh.test." || !zi.Meta.Created.Equal(now) || !slices.Equal(zi.NameServers, []string{"ns1.fresh.test."}) {
		t.Fatalf("zone info %+v", zi)
	}
	if _, err := s.CreateZone("fresh.test", ZoneMeta{}); !errors.Is(err, ErrZoneExists) {
		t.Fatalf("second create: %v, want ErrZoneExists", err)
	}
	for _, bad := range []string{".", "", "a/b.test", "a..test", "-x.test/.."} {
		if _, err := s.CreateZone(bad, ZoneMeta{}); !errors.Is(err, ErrInvalidZone) {
			t.Errorf("CreateZone(%q) = %v, want ErrInvalidZone", bad, err)
		}
	}
}

func TestStore_DeleteZoneRemovesFilesAndStopsServing(t *testing.T) {
	dir := t.TempDir()
	s := exampleStore(t, dir)
	srv := startServer(t, s, ServerOptions{})
	if err := s.DeleteZone("child.example.test"); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"child.example.test.zone", "child.example.test.meta.json"} {
		if _, err := os.Stat(filepath.Join(dir, f)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("%s still exists: %v", f, err)
		}
	}
	// The parent zone answers now: a referral along its delegation.
	resp := ask(t, srv.Addr(), "udp", "www.child.example.test", dns.TypeA)
	if resp.Authoritative || !slices.Equal(texts(resp.Ns), []string{"child.example.test. NS ns1.child.example.test."}) {
		t.Errorf("after delete: %v", resp)
	}
	if err := s.DeleteZone("child.example.test"); !errors.Is(err, ErrZoneNotFound) {
		t.Errorf("second delete: %v, want ErrZoneNotFound", err)
	}
}

// NewStoreForTest opens and loads a store over dir.
func NewStoreForTest(t *testing.T, dir string) *Store {
	t.Helper()
	s := NewStore(StoreOptions{Dir: dir})
	if err := s.Load(); err != nil {
		t.Fatal(err)
	}
	return s
}

func TestStore_UnspecifiedListenAddressGetsNoGlue(t *testing.T) {
	s := NewStore(StoreOptions{NameServerAddrs: []netip.Addr{netip.MustParseAddr("0.0.0.0"), netip.MustParseAddr("::1")}})
	if _, err := s.CreateZone("g.test", ZoneMeta{}); err != nil {
		t.Fatal(err)
	}
	sets, _ := s.RRSets("g.test")
	var glue []string
	for _, rs := range sets {
		if rs.Name == "ns1.g.test." {
			glue = append(glue, texts(rs.RRs)...)
		}
	}
	if !slices.Equal(glue, []string{"ns1.g.test. AAAA ::1"}) {
		t.Fatalf("glue %q, want only the AAAA ::1", glue)
	}
}

// TestStore_RefusesRecordsThatDoNotPack is item 3 of issue 11 at the store: miekg/dns reads a DS
// with a 65-digit digest (and a CAA tag over 255 bytes) from presentation form, but cannot pack
// it. Stored, such a record made every answer that held it time out and the zone's AXFR fail.
// Put refuses it, and the zone keeps answering and transferring.
func TestStore_RefusesRecordsThatDoNotPack(t *testing.T) {
	s := exampleStore(t, t.TempDir())
	srv := startServer(t, s, ServerOptions{})
	for _, line := range []string{
		"bad.example.test. 300 IN DS 12345 13 2 3d6f0f8a1b2c3d4e5f60718293a4b5c6d7e8f90112233445566778899aabbccdd",
		"bad.example.test. 300 IN DS 12345 13 2 ZZ",
		"bad.example.test. 300 IN CAA 0 " + strings.Repeat("t", 256) + " \"ca.test\"",
	} {
		t.Run(line[:40], func(t *testing.T) {
			before, _ := s.Zone("example.test")
			err := s.Update("example.test", func(tx *Tx) error {
				list := rrs(t, line)
				h := list[0].Header()
				return tx.Put(RRSet{Name: h.Name, Type: h.Rrtype, TTL: h.Ttl, RRs: list})
			})
			if !errors.Is(err, ErrInvalidRRSet) {
				t.Fatalf("Put error = %v, want ErrInvalidRRSet", err)
			}
			if after, _ := s.Zone("example.test"); after.Serial != before.Serial {
				t.Fatal("a refused record bumped the serial")
			}
			got, err := transferIn(t, srv.Addr(), "example.test.")
			if err != nil || len(got) < 2 {
				t.Fatalf("AXFR after the refused write: %d records, %v", len(got), err)
			}
			if r := ask(t, srv.Addr(), "tcp", "bad.example.test", dns.TypeDS); r.Rcode != dns.RcodeNameError {
				t.Fatalf("bad.example.test: rcode %s, want NXDOMAIN", dns.RcodeToString[r.Rcode])
			}
		})
	}
}

// TestStore_LoadDropsRecordsThatDoNotPack: a master file written before the store checked
// records (or by hand) may hold one that does not pack. Load drops it with a log line and serves
// the rest of the zone, answers and AXFR included.
func TestStore_LoadDropsRecordsThatDoNotPack(t *testing.T) {
	dir := t.TempDir()
	content := "$ORIGIN hand.test.\n@ 300 IN SOA ns1 hostmaster 7 3600 600 86400 60\n@ 300 IN NS ns1\nns1 300 IN A 127.0.0.1\n" +
		"sub 300 IN NS ns1.sub\nns1.sub 300 IN A 192.0.2.53\n" +
		"sub 300 IN DS 12345 13 2 3d6f0f8a1b2c3d4e5f60718293a4b5c6d7e8f90112233445566778899aabbccdd\n" +
		"www 60 IN A 192.0.2.7\n"
	if err := os.WriteFile(filepath.Join(dir, "hand.test.zone"), []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	s := NewStore(StoreOptions{Dir: dir})
	if err := s.Load(); err != nil {
		t.Fatal(err)
	}
	srv := startServer(t, s, ServerOptions{})
	if r := ask(t, srv.Addr(), "udp", "sub.hand.test", dns.TypeDS); r.Rcode != dns.RcodeSuccess || len(r.Answer) != 0 {
		t.Fatalf("sub.hand.test DS: rcode %s, answers %v; want NODATA", dns.RcodeToString[r.Rcode], r.Answer)
	}
	if r := ask(t, srv.Addr(), "udp", "www.hand.test", dns.TypeA); len(r.Answer) != 1 {
		t.Fatalf("www.hand.test A = %v", r.Answer)
	}
	got, err := transferIn(t, srv.Addr(), "hand.test.")
	if err != nil || len(got) != 7 { // SOA, NS, ns1 A, sub NS, ns1.sub A, www A, SOA
		t.Fatalf("AXFR: %d records, %v; want 7", len(got), err)
	}
}

// TestNextSerial: a change's serial is the clock's Unix seconds when that is newer than the old
// serial in RFC 1982 arithmetic, else the old serial + 1 (wrapping at 2^32), so it never goes
// back (BIND's serial-update-method unixtime).
func TestNextSerial(t *testing.T) {
	const now = 1_800_000_000
	for _, c := range []struct {
		name string
		old  uint32
		now  int64
		want uint32
	}{
		{"clock ahead: its seconds", 5, now, now},
		{"clock a second ahead", now - 1, now, now},
		{"same second: old + 1", now, now, now + 1},
		{"serial ahead of the clock (bursts): old + 1", now + 40, now, now + 41},
		{"last serial, clock behind it: old + 1 wraps to 0", 1<<32 - 1, 1<<32 - 10, 0},
		{"clock past 2^32 (2106): modulo 2^32", 1<<32 - 2, 1<<32 + 3, 3},
		{"clock 2^31 ahead (undefined, RFC 1982 §3.2): old + 1", 7, 7 + 1<<31, 8},
		{"clock more than 2^31 ahead reads as older: old + 1", 7, 8 + 1<<31, 8},
	} {
		s := NewStore(StoreOptions{Clock: clocktesting.NewFakePassiveClock(time.Unix(c.now, 0))})
		if got := s.nextSerial(c.old); got != c.want {
			t.Errorf("%s: nextSerial(%d) at %d = %d, want %d", c.name, c.old, c.now, got, c.want)
		}
		if got := s.nextSerial(c.old); !SerialNewer(got, c.old) {
			t.Errorf("%s: nextSerial(%d) = %d is not newer (RFC 1982)", c.name, c.old, got)
		}
	}
}

// TestStore_ReCreatedZoneStartsPastTheDeletedOne (issue 25, item 6): a zone deleted and created
// again under its origin gets a serial newer (RFC 1982) than the deleted zone's last, even when
// bursts of changes ran that serial ahead of the clock, so a secondary holding the old zone takes
// the new one. Once the clock has passed the old serial, a new zone starts at the clock again
// and the store forgets the deleted one.
func TestStore_ReCreatedZoneStartsPastTheDeletedOne(t *testing.T) {
	start := time.Unix(1_800_000_000, 0)
	clk := clocktesting.NewFakePassiveClock(start)
	s := NewStore(StoreOptions{Clock: clk})
	zi, err := s.CreateZone("again.test", ZoneMeta{})
	if err != nil || zi.Serial != 1_800_000_000 {
		t.Fatalf("new zone serial %d (%v), want the clock's 1800000000", zi.Serial, err)
	}
	for i := range 10 { // ten changes in one second: the serial runs 10 ahead of the clock
		if err := s.Update("again.test", func(tx *Tx) error {
			put(t, tx, "", nil, fmt.Sprintf("a.again.test. 60 IN A 192.0.2.%d", i+1))
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	old, _ := s.Zone("again.test")
	if old.Serial != 1_800_000_010 {
		t.Fatalf("serial %d after 10 changes in a second, want 1800000010", old.Serial)
	}
	clk.SetTime(start.Add(3 * time.Second)) // still behind the serial
	if err := s.DeleteZone("again.test"); err != nil {
		t.Fatal(err)
	}
	// An unrelated zone's creation and deletion leave the record of again.test in place.
	if _, err := s.CreateZone("other.test", ZoneMeta{}); err != nil {
		t.Fatal(err)
	}
	if err := s.DeleteZone("other.test"); err != nil {
		t.Fatal(err)
	}
	again, err := s.CreateZone("again.test", ZoneMeta{})
	if err != nil {
		t.Fatal(err)
	}
	if !SerialNewer(again.Serial, old.Serial) || again.Serial != old.Serial+1 {
		t.Fatalf("re-created zone serial %d, want %d: newer than the deleted zone's %d", again.Serial, old.Serial+1, old.Serial)
	}
	if _, ok := s.retired["again.test."]; ok {
		t.Errorf("retired serials %v after the re-creation, want none of again.test.", s.retired)
	}

	// Deleted again; the clock then passes the serial: a new zone starts at the clock.
	if err := s.DeleteZone("again.test"); err != nil {
		t.Fatal(err)
	}
	clk.SetTime(start.Add(time.Minute))
	if zi, _ := s.CreateZone("later.test", ZoneMeta{}); zi.Serial != 1_800_000_060 {
		t.Errorf("zone created a minute on: serial %d, want the clock's 1800000060", zi.Serial)
	}
	if err := s.DeleteZone("later.test"); err != nil { // retire forgets what the clock passed
		t.Fatal(err)
	}
	if want := map[string]uint32{"later.test.": 1_800_000_060}; !maps.Equal(s.retired, want) {
		t.Errorf("retired serials %v, want %v: again.test. and other.test. forgotten once the clock passed them", s.retired, want)
	}
	if zi, _ := s.CreateZone("again.test", ZoneMeta{}); zi.Serial != 1_800_000_060 {
		t.Errorf("re-created a minute on: serial %d, want the clock's 1800000060", zi.Serial)
	}
}
