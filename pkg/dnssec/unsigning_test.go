package dnssec

import (
	"testing"
	"time"
)

// TestUnsigning_DoneOnlyTheDSTTLAfterTheParentDroppedIt: the turn-off is done only once the DS
// TTL has passed since every parent server was first seen answering no DS; a parent that still
// answers the DS holds it however long it lasts; the record survives the key set's round trip.
func TestUnsigning_DoneOnlyTheDSTTLAfterTheParentDroppedIt(t *testing.T) {
	t0 := time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)
	ttl := time.Hour
	u := Unsigning{Since: t0}
	u, changed := u.Next(t0.Add(10*time.Hour), false, ttl)
	if changed || u.Done || !u.ParentGoneAt.IsZero() || !u.Until(ttl).IsZero() {
		t.Fatalf("parent still answering the DS: %+v changed %v", u, changed)
	}
	gone := t0.Add(11 * time.Hour)
	u, changed = u.Next(gone, true, ttl)
	if !changed || u.Done || !u.ParentGoneAt.Equal(gone) || !u.Until(ttl).Equal(gone.Add(ttl)) {
		t.Fatalf("parent dropped the DS: %+v changed %v", u, changed)
	}
	u, changed = u.Next(gone.Add(ttl-time.Second), false, ttl)
	if changed || u.Done || !u.ParentGoneAt.Equal(gone) {
		t.Fatalf("a second before the DS TTL is over: %+v changed %v", u, changed)
	}
	u, changed = u.Next(gone.Add(ttl), true, ttl)
	if !changed || !u.Done {
		t.Fatalf("the DS TTL over: %+v changed %v", u, changed)
	}
	if _, changed = u.Next(gone.Add(2*ttl), false, ttl); changed {
		t.Fatal("a done turn-off changed")
	}
	k, err := Generate("example.test", 13, RoleCSK, Active, t0)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := KeySet{Zone: "example.test", Keys: []Key{k}, Unsigning: &u}.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	got, err := ParseKeySet(raw)
	if err != nil || got.Unsigning == nil || !got.Unsigning.Since.Equal(u.Since) || !got.Unsigning.ParentGoneAt.Equal(u.ParentGoneAt) || !got.Unsigning.Done {
		t.Fatalf("round trip: %+v, %v; want %+v", got.Unsigning, err, u)
	}
}

// TestUnsigning_WithParentRecordsEachOnce: the parents and their servers are kept in the order
// first seen, each once, and survive the key set's round trip; nothing new changes nothing.
func TestUnsigning_WithParentRecordsEachOnce(t *testing.T) {
	u := Unsigning{Since: time.Date(2026, 12, 7, 12, 0, 0, 0, time.UTC)}
	u, added := u.WithParent("dns/p", []string{"10.0.0.1:53", "10.0.0.2:53"})
	if !added || len(u.Parents) != 1 || len(u.ParentServers) != 2 {
		t.Fatalf("first parent: %+v added %v", u, added)
	}
	if _, added = u.WithParent("dns/p", []string{"10.0.0.2:53"}); added {
		t.Fatal("a parent seen before added something")
	}
	u, added = u.WithParent("other/p", nil)
	if !added || u.Parents[1] != "other/p" || len(u.ParentServers) != 2 {
		t.Fatalf("second parent without servers: %+v added %v", u, added)
	}
	k, err := Generate("example.test", 13, RoleCSK, Active, u.Since)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := KeySet{Zone: "example.test", Keys: []Key{k}, Unsigning: &u}.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	back, err := ParseKeySet(raw)
	if err != nil || back.Unsigning == nil || len(back.Unsigning.Parents) != 2 || back.Unsigning.ParentServers[1] != "10.0.0.2:53" {
		t.Fatalf("round trip: %+v, %v", back.Unsigning, err)
	}
}
