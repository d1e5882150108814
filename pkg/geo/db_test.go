package geo_test

import (
	"context"
	"net/netip"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/go-logr/logr/testr"

	"github.com/dnsplane/dnsplane/internal/testing/geotest"
	"github.com/dnsplane/dnsplane/pkg/geo"
)

func TestDB_Locate(t *testing.T) {
	db := testDB(t)
	for _, tc := range []struct {
		addr      string
		want      geo.Location
		netw      string
		knownNetw bool
	}{
		{"192.0.2.9", geo.Location{Country: "DE", Continent: "EU"}, "192.0.2.0/24", true},
		{"100.64.200.1", geo.Location{Country: "FR", Continent: "EU"}, "100.64.0.0/16", true}, // registered_country
		{"172.31.0.1", geo.Location{Country: "AU"}, "172.16.0.0/12", true},
		{"2001:db8:de:1::1", geo.Location{Country: "DE", Continent: "EU"}, "2001:db8:de::/48", true},
		{"8.8.8.8", geo.Location{}, "", false},
	} {
		for range 2 { // the second time from the decoded-record cache
			loc, netw := db.Locate(netip.MustParseAddr(tc.addr))
			if loc != tc.want || (tc.knownNetw && netw.String() != tc.netw) || !netw.Contains(netip.MustParseAddr(tc.addr)) {
				t.Errorf("Locate(%s) = %+v %s; want %+v %s", tc.addr, loc, netw, tc.want, tc.netw)
			}
		}
	}
	var none geo.DB
	if loc, netw := none.Locate(netip.MustParseAddr("192.0.2.9")); loc != (geo.Location{}) || netw.IsValid() {
		t.Errorf("a DB that never loaded: Locate = %+v %v", loc, netw)
	}
}

func TestDB_LoadErrors(t *testing.T) {
	dir := t.TempDir()
	junk := filepath.Join(dir, "junk.mmdb")
	if err := os.WriteFile(junk, []byte("not a database"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{filepath.Join(dir, "missing.mmdb"), junk} {
		db := &geo.DB{Path: p}
		if err := db.Load(); err == nil || db.Generation() != 0 {
			t.Errorf("Load(%s) = %v, generation %d; want an error and nothing loaded", p, err, db.Generation())
		}
	}
}

// waitGen waits (up to a deadline that only catches hangs) until db has loaded generation n.
func waitGen(t *testing.T, db *geo.DB, n uint64) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for db.Generation() < n {
		if time.Now().After(deadline) {
			t.Fatalf("generation %d after 20s, want %d", db.Generation(), n)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func country(db *geo.DB, a string) string {
	loc, _ := db.Locate(netip.MustParseAddr(a))
	return loc.Country
}

// TestDB_RunReloads: a rewritten file is reloaded; a broken one keeps the last good database
// and counts a failure; a good one after it is loaded again. The file is replaced the way a
// mounted Secret or ConfigMap is: a new directory and an atomic swap of the ..data symlink.
func TestDB_RunReloads(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, data []byte) {
		t.Helper()
		ts := filepath.Join(dir, name)
		if err := os.Mkdir(ts, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(ts, "geo.mmdb"), data, 0o600); err != nil {
			t.Fatal(err)
		}
		tmp := filepath.Join(dir, "..data_tmp")
		if err := os.Symlink(name, tmp); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, filepath.Join(dir, "..data")); err != nil {
			t.Fatal(err)
		}
	}
	write("v1", geotest.Bytes(t, geotest.Network{CIDR: "192.0.2.0/24", Country: "DE", Continent: "EU"}))
	path := filepath.Join(dir, "geo.mmdb")
	if err := os.Symlink(filepath.Join("..data", "geo.mmdb"), path); err != nil {
		t.Fatal(err)
	}
	loads := make(chan uint64, 10)
	db := &geo.DB{Path: path, Interval: 10 * time.Millisecond, Logger: testr.New(t), OnLoad: func(g uint64) { loads <- g }}
	if err := db.Load(); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- db.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	})
	if c := country(db, "192.0.2.1"); c != "DE" {
		t.Fatalf("v1: %q", c)
	}

	write("v2", geotest.Bytes(t, geotest.Network{CIDR: "192.0.2.0/24", Country: "FR", Continent: "EU"}))
	waitGen(t, db, 2)
	if c := country(db, "192.0.2.1"); c != "FR" {
		t.Fatalf("after the swap to v2: %q, want FR", c)
	}

	write("v3", []byte("this is not an mmdb, and it is longer than the old one was, surely"))
	deadline := time.Now().Add(20 * time.Second)
	for db.Failures() == 0 {
		if time.Now().After(deadline) {
			t.Fatal("a broken file was not noticed within 20s")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if c := country(db, "192.0.2.1"); c != "FR" || db.Generation() != 2 {
		t.Fatalf("after a broken file: %q, generation %d; want the last good FR, 2", c, db.Generation())
	}

	write("v4", geotest.Bytes(t, geotest.Network{CIDR: "192.0.2.0/24", Country: "JP", Continent: "AS"}))
	waitGen(t, db, 3)
	if c := country(db, "192.0.2.1"); c != "JP" {
		t.Fatalf("after v4: %q, want JP", c)
	}
	if got := []uint64{<-loads, <-loads, <-loads}; got[0] != 1 || got[1] != 2 || got[2] != 3 {
		t.Fatalf("OnLoad generations %v", got)
	}
}

// TestDB_RunLoadsLateFile: a manager started before its database exists serves without it and
// loads it when it appears.
func TestDB_RunLoadsLateFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "geo.mmdb")
	db := &geo.DB{Path: path, Interval: 10 * time.Millisecond, Logger: testr.New(t)}
	if err := db.Load(); err == nil {
		t.Fatal("a missing file loaded")
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { _ = db.Run(ctx) }()
	if err := os.WriteFile(path, geotest.Bytes(t, geotest.Network{CIDR: "192.0.2.0/24", Country: "DE"}), 0o600); err != nil {
		t.Fatal(err)
	}
	waitGen(t, db, 1)
	if c := country(db, "192.0.2.1"); c != "DE" {
		t.Fatalf("late file: %q", c)
	}
}
