package zonedb

import (
	"slices"
	"strings"
	"testing"

	"github.com/miekg/dns"
)

// rrStrings returns the presentation form of rrs.
func rrStrings(rrs []dns.RR) []string {
	out := make([]string, len(rrs))
	for i, rr := range rrs {
		out[i] = rr.String()
	}
	return out
}

// TestDiffZones is the delta a Store.Update journals, by kind of change: records of an owner
// and type are compared as the secondary holds them (the sets with set identifiers merged),
// with their TTL.
func TestDiffZones(t *testing.T) {
	w := func(v int64) *int64 { return &v }
	for _, tc := range []struct {
		name       string
		change     func(t *testing.T, tx *Tx)
		del, added []string
	}{
		{"nothing", func(*testing.T, *Tx) {}, nil, nil},
		{"a new set", func(t *testing.T, tx *Tx) {
			put(t, tx, "", nil, "new.d.test. 60 IN A 192.0.2.9", "new.d.test. 60 IN A 192.0.2.10")
		}, nil, []string{"new.d.test.\t60\tIN\tA\t192.0.2.9", "new.d.test.\t60\tIN\tA\t192.0.2.10"}},
		{"a deleted set", func(t *testing.T, tx *Tx) {
			tx.Delete(SetKey{Name: "www.d.test.", Type: dns.TypeA})
		}, []string{"www.d.test.\t300\tIN\tA\t192.0.2.1", "www.d.test.\t300\tIN\tA\t192.0.2.2"}, nil},
		{"one record of a set replaced", func(t *testing.T, tx *Tx) {
			put(t, tx, "", nil, "www.d.test. 300 IN A 192.0.2.1", "www.d.test. 300 IN A 192.0.2.3")
		}, []string{"www.d.test.\t300\tIN\tA\t192.0.2.2"}, []string{"www.d.test.\t300\tIN\tA\t192.0.2.3"}},
		{"a TTL change is every record deleted and added", func(t *testing.T, tx *Tx) {
			put(t, tx, "", nil, "mx.d.test. 120 IN MX 10 mail.d.test.")
		}, []string{"mx.d.test.\t60\tIN\tMX\t10 mail.d.test."}, []string{"mx.d.test.\t120\tIN\tMX\t10 mail.d.test."}},
		{"a record still in another weighted set is not deleted", func(t *testing.T, tx *Tx) {
			put(t, tx, "b", w(1), "lb.d.test. 60 IN A 192.0.2.7")
		}, []string{"lb.d.test.\t60\tIN\tA\t192.0.2.8"}, nil},
		{"two owners, canonical order", func(t *testing.T, tx *Tx) {
			put(t, tx, "", nil, "z.d.test. 60 IN TXT \"z\"")
			put(t, tx, "", nil, "a.d.test. 60 IN TXT \"a\"")
		}, nil, []string{"a.d.test.\t60\tIN\tTXT\t\"a\"", "z.d.test.\t60\tIN\tTXT\t\"z\""}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := NewStore(StoreOptions{})
			if _, err := s.CreateZone("d.test", ZoneMeta{}); err != nil {
				t.Fatal(err)
			}
			if err := s.Update("d.test", func(tx *Tx) error {
				put(t, tx, "", nil, "www.d.test. 300 IN A 192.0.2.1", "www.d.test. 300 IN A 192.0.2.2")
				put(t, tx, "", nil, "mx.d.test. 60 IN MX 10 mail.d.test.")
				put(t, tx, "a", w(1), "lb.d.test. 60 IN A 192.0.2.7")
				put(t, tx, "b", w(1), "lb.d.test. 60 IN A 192.0.2.7", "lb.d.test. 60 IN A 192.0.2.8")
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			before, _ := s.zone("d.test")
			if err := s.Update("d.test", func(tx *Tx) error { tc.change(t, tx); return nil }); err != nil {
				t.Fatal(err)
			}
			after, _ := s.zone("d.test")
			d := diffZones(before, after)
			if got := rrStrings(d.deleted); !slices.Equal(got, tc.del) && len(got)+len(tc.del) > 0 {
				t.Errorf("deleted %q, want %q", got, tc.del)
			}
			if got := rrStrings(d.added); !slices.Equal(got, tc.added) && len(got)+len(tc.added) > 0 {
				t.Errorf("added %q, want %q", got, tc.added)
			}
		})
	}
}

// soaAt is an SOA of z.test. with that serial.
func soaAt(serial uint32) *dns.SOA {
	return &dns.SOA{Hdr: dns.RR_Header{Name: "z.test.", Rrtype: dns.TypeSOA, Class: dns.ClassINET, Ttl: 60}, Ns: "ns1.z.test.", Mbox: "h.z.test.", Serial: serial}
}

// mkDelta is the change serial -> serial+1 deleting del and adding add (TXT records of z.test.
// with those texts).
func mkDelta(t *testing.T, serial uint32, del, add []string) *delta {
	t.Helper()
	txt := func(list []string) []dns.RR {
		var out []dns.RR
		for _, s := range list {
			out = append(out, rrs(t, "z.test. 60 IN TXT \""+s+"\"")...)
		}
		return out
	}
	return &delta{from: soaAt(serial), to: soaAt(serial + 1), deleted: txt(del), added: txt(add)}
}

// txtJoined returns the TXT strings of rrs, joined by spaces.
func txtJoined(rrs []dns.RR) string {
	var out []string
	for _, rr := range rrs {
		out = append(out, rr.(*dns.TXT).Txt...)
	}
	return strings.Join(out, " ")
}

// TestJournal_CondensesFromTheAskedSerial is RFC 1995 §5's condensation: from any journalled
// serial, each record once, an addition and a later deletion (or the reverse) cancelling out;
// a serial the journal does not hold is not reached.
func TestJournal_CondensesFromTheAskedSerial(t *testing.T) {
	var j *journal
	for i, d := range [][2][]string{
		{nil, {"a", "b"}},      // 1 -> 2
		{{"a"}, {"c"}},         // 2 -> 3
		{{"c"}, {"a"}},         // 3 -> 4: c was added in 2 -> 3 and is gone again
		{{"b"}, {"d", "e"}},    // 4 -> 5
		{{"x"}, nil},           // 5 -> 6: x predates the journal
		{{"d"}, {"b"}},         // 6 -> 7
		{{"e", "b"}, {"e2"}},   // 7 -> 8
		{{"e2"}, {"e", "b"}},   // 8 -> 9
		{{"a", "b"}, {"a"}},    // 9 -> 10: a deleted and added back in one change is no change
		{nil, {"b", "b2", ""}}, // 10 -> 11 ("" is an empty TXT string)
	} {
		j = j.appendBounded(mkDelta(t, uint32(i+1), d[0], d[1]), 100, 1000)
	}
	for _, tc := range []struct {
		serial   uint32
		ok       bool
		del, add string
	}{
		{1, true, "x", "a b e b2 "},
		{2, true, "x", "e b2 "}, // {a b x} -> {a b b2 e ""}
		{4, true, "x", "e b2 "},
		{8, true, "e2", "e b b2 "}, // {a e2} -> {a b b2 e ""}
		{10, true, "", "b b2 "},
		{11, false, "", ""}, // the current serial: not a change of the journal (ixfr answers the SOA)
		{0, false, "", ""},
	} {
		from, del, add, ok := j.since(tc.serial)
		if ok != tc.ok {
			t.Errorf("since(%d): ok %v, want %v", tc.serial, ok, tc.ok)
			continue
		}
		if !ok {
			continue
		}
		if from.Serial != tc.serial || txtJoined(del) != tc.del || txtJoined(add) != tc.add {
			t.Errorf("since(%d) = from %d, deleted %q, added %q; want deleted %q, added %q", tc.serial, from.Serial, txtJoined(del), txtJoined(add), tc.del, tc.add)
		}
	}
}

// TestJournal_Bounds: the oldest changes go first past either bound, and a change bigger than
// the record bound on its own leaves the journal empty; older versions' journals are never
// changed by a newer one's append.
func TestJournal_Bounds(t *testing.T) {
	for _, tc := range []struct {
		name                  string
		maxDeltas, maxRecords int
		sizes                 []int // records per change, serials 1 -> 2 -> ...
		wantFirst             uint32
		wantLen, wantRecords  int
	}{
		{"within both", 5, 100, []int{1, 2, 3}, 1, 3, 6},
		{"count bound", 2, 100, []int{1, 2, 3}, 2, 2, 5},
		{"record bound", 5, 5, []int{1, 2, 3}, 2, 2, 5},
		{"record bound drops two", 5, 4, []int{3, 2, 2}, 2, 2, 4},
		{"one change over the record bound", 5, 4, []int{1, 5}, 0, 0, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var j *journal
			var versions []*journal
			for i, n := range tc.sizes {
				add := make([]string, n)
				for k := range add {
					add[k] = strings.Repeat("r", k+1)
				}
				j = j.appendBounded(mkDelta(t, uint32(i+1), nil, add), tc.maxDeltas, tc.maxRecords)
				versions = append(versions, j)
			}
			if j.len() != tc.wantLen {
				t.Fatalf("journal of %d changes, want %d", j.len(), tc.wantLen)
			}
			if tc.wantLen == 0 {
				if j != nil {
					t.Fatal("an empty journal is not nil")
				}
				return
			}
			if j.deltas[0].from.Serial != tc.wantFirst || j.records != tc.wantRecords {
				t.Errorf("first serial %d, %d records; want %d, %d", j.deltas[0].from.Serial, j.records, tc.wantFirst, tc.wantRecords)
			}
			if v := versions[0]; v != nil && (v.len() != 1 || v.deltas[0].from.Serial != 1) {
				t.Errorf("the first version's journal changed: %d changes", v.len())
			}
		})
	}
}

// TestStore_JournalIsKeptAtPublish: every Update journals one change (a batch, not a record),
// a re-install of the same version keeps the journal, a zone created again starts an empty
// one, and JournalDeltas < 0 turns it off.
func TestStore_JournalIsKeptAtPublish(t *testing.T) {
	s := NewStore(StoreOptions{JournalDeltas: 3, Clock: countingClock()})
	var changes []Change
	s.OnChange(func(c Change) { changes = append(changes, c) })
	if _, err := s.CreateZone("j.test", ZoneMeta{}); err != nil {
		t.Fatal(err)
	}
	for i := range 5 {
		if err := s.Update("j.test", func(tx *Tx) error {
			put(t, tx, "", nil, "a.j.test. 60 IN TXT \"v"+strings.Repeat("x", i)+"\"", "b.j.test. 60 IN TXT \"same\"")
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	z, _ := s.zone("j.test")
	if z.soa.Serial != 6 || z.journal.len() != 3 || z.journal.deltas[0].from.Serial != 3 {
		t.Fatalf("serial %d, journal %d changes from %d; want 6, 3 from 3", z.soa.Serial, z.journal.len(), z.journal.deltas[0].from.Serial)
	}
	if len(changes) != 6 || changes[5].Serial != 6 || changes[5].JournalDeltas != 3 || changes[0].JournalDeltas != 0 {
		t.Fatalf("changes %+v: want one per CreateZone and Update", changes)
	}
	s.mu.Lock()
	s.publish(z.origin, &zoneData{origin: z.origin, meta: z.meta, soa: z.soa, sets: z.sets, nodes: z.nodes})
	s.mu.Unlock()
	if z2, _ := s.zone("j.test"); z2.journal != z.journal {
		t.Error("re-installing the same version dropped the journal")
	}
	if err := s.DeleteZone("j.test"); err != nil {
		t.Fatal(err)
	}
	if _, err := s.CreateZone("j.test", ZoneMeta{}); err != nil {
		t.Fatal(err)
	}
	if z, _ := s.zone("j.test"); z.journal != nil {
		t.Errorf("a re-created zone kept a journal of %d changes", z.journal.len())
	}
	if c := changes[len(changes)-2]; !c.Deleted || c.Zone != "j.test." {
		t.Errorf("delete reported as %+v", c)
	}

	off := NewStore(StoreOptions{JournalDeltas: -1})
	if _, err := off.CreateZone("j.test", ZoneMeta{}); err != nil {
		t.Fatal(err)
	}
	if err := off.Update("j.test", func(tx *Tx) error { put(t, tx, "", nil, "a.j.test. 60 IN TXT \"v\""); return nil }); err != nil {
		t.Fatal(err)
	}
	if z, _ := off.zone("j.test"); z.journal != nil {
		t.Error("JournalDeltas -1 kept a journal")
	}
}
