package dnsserver

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/miekg/dns"

	"github.com/dnsplane/dnsplane/pkg/zonedb"
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

	second := zonedb.NewStore(zonedb.StoreOptions{Dir: dir})
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

func TestStore_LeftoverTempFileDoesNotBreakLoad(t *testing.T) {
	dir := t.TempDir()
	exampleStore(t, dir)
	// A crash after writing part of a temporary file, before its rename.
	leftovers := []string{".example.test.zone.tmp-123", ".example.test.meta.json.tmp-456", ".new.test.zone.tmp-789"}
	// A zone whose name merely contains the marker is not a leftover.
	if _, err := NewStoreForTest(t, dir).CreateZone("a.tmp-b.test", zonedb.ZoneMeta{}); err != nil {
		t.Fatal(err)
	}
	for _, name := range leftovers {
		if err := os.WriteFile(filepath.Join(dir, name), []byte("garbage $ORIGIN ((("), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	s := zonedb.NewStore(zonedb.StoreOptions{Dir: dir})
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

func TestStore_MasterFileWithoutSidecarIsServed(t *testing.T) {
	content := "$ORIGIN hand.test.\n@ 300 IN SOA ns1 hostmaster 7 3600 600 86400 60\n@ 300 IN NS ns1\nns1 300 IN A 127.0.0.1\nwww 60 IN A 192.0.2.7\n"
	srv := serveHandZone(t, content)
	resp := ask(t, srv.Addr(), "udp", "www.hand.test", dns.TypeA)
	if len(resp.Answer) != 1 || !resp.Authoritative {
		t.Fatalf("hand-written zone not served: %v", resp)
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
	if err := s.DeleteZone("child.example.test"); !errors.Is(err, zonedb.ErrZoneNotFound) {
		t.Errorf("second delete: %v, want zonedb.ErrZoneNotFound", err)
	}
}

// serveHandZone serves, until the test ends, a store loaded from a directory holding only the
// master file hand.test.zone with content (no sidecar).
func serveHandZone(t *testing.T, content string) *Server {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "hand.test.zone"), []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return startServer(t, NewStoreForTest(t, dir), ServerOptions{})
}

// NewStoreForTest opens and loads a store over dir.
func NewStoreForTest(t *testing.T, dir string) *zonedb.Store {
	t.Helper()
	s := zonedb.NewStore(zonedb.StoreOptions{Dir: dir})
	if err := s.Load(); err != nil {
		t.Fatal(err)
	}
	return s
}

// TestStore_RefusesRecordsThatDoNotPack at the store: miekg/dns reads a DS
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
			err := s.Update("example.test", func(tx *zonedb.Tx) error {
				list := rrs(t, line)
				h := list[0].Header()
				return tx.Put(zonedb.RRSet{Name: h.Name, Type: h.Rrtype, TTL: h.Ttl, RRs: list})
			})
			if !errors.Is(err, zonedb.ErrInvalidRRSet) {
				t.Fatalf("Put error = %v, want zonedb.ErrInvalidRRSet", err)
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
	content := "$ORIGIN hand.test.\n@ 300 IN SOA ns1 hostmaster 7 3600 600 86400 60\n@ 300 IN NS ns1\nns1 300 IN A 127.0.0.1\n" +
		"sub 300 IN NS ns1.sub\nns1.sub 300 IN A 192.0.2.53\n" +
		"sub 300 IN DS 12345 13 2 3d6f0f8a1b2c3d4e5f60718293a4b5c6d7e8f90112233445566778899aabbccdd\n" +
		"www 60 IN A 192.0.2.7\n"
	srv := serveHandZone(t, content)
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
