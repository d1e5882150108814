package zonedb_test

import (
	"errors"
	"net/netip"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"
	clocktesting "k8s.io/utils/clock/testing"

	. "github.com/dnsplane/dnsplane/pkg/zonedb"
	"github.com/dnsplane/dnsplane/pkg/zonedb/zonedbtest"
)

// The store helpers are zonedbtest's (this package is outside zonedb so that it may import
// them), under the short names the tests were written with.
var (
	exampleStore  = zonedbtest.ExampleStore
	countingClock = zonedbtest.CountingClock
	put           = zonedbtest.Put
	rrs           = zonedbtest.RRs
	texts         = zonedbtest.Texts
)

func ptr[T any](v T) *T { return &v }

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
