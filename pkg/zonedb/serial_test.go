package zonedb

import (
	"fmt"
	"maps"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"
)

func TestSerialNewer(t *testing.T) {
	for _, c := range []struct {
		a, b uint32
		want bool
	}{
		{2, 1, true},
		{1, 2, false},
		{7, 7, false},
		{0, 0xFFFFFFFF, true},          // wraps (RFC 1982 §3.1)
		{0xFFFFFFFF, 0, false},         //
		{5, 0xFFFFFFF0, true},          // across the wrap
		{1<<31 - 1 + 10, 10, true},     // 2^31 - 1 ahead: newer
		{1<<31 + 10, 10, false},        // 2^31 apart: undefined, not newer
		{10, 1<<31 + 10, false},        // either way
		{0x80000000, 0x7FFFFFFF, true}, // one ahead across the sign bit
	} {
		if got := SerialNewer(c.a, c.b); got != c.want {
			t.Errorf("SerialNewer(%d, %d) = %v, want %v", c.a, c.b, got, c.want)
		}
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

// TestStore_ReCreatedZoneStartsPastTheDeletedOne: a zone deleted and created
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
