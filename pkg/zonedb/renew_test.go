package zonedb

import (
	"testing"
	"time"

	"github.com/miekg/dns"
	clocktesting "k8s.io/utils/clock/testing"
)

// TestRenew: a zone published before the start of a signing period, or whose serial is older
// than that start, is served again at the start's Unix seconds (or its serial + 1 when that is
// not newer), its data unchanged, the OnChange hooks told; once per period. The next change
// moves on from the renewal's serial; a replica installing the persisted version computes the
// same renewal, and takes a writer's version that had not reached the renewal's serial past it.
func TestRenew(t *testing.T) {
	const t0 = 1_800_000_005
	clk := clocktesting.NewFakeClock(time.Unix(t0, 0))
	s := NewStore(StoreOptions{Clock: clk})
	var changes []uint32
	s.OnChange(func(c Change) { changes = append(changes, c.Serial) })
	if _, err := s.CreateZone("renew.test.", ZoneMeta{}); err != nil {
		t.Fatal(err)
	}
	renew := func(store *Store, since int64, wantSerial uint32, want bool) {
		t.Helper()
		got, renewed, err := store.Renew("renew.test.", time.Unix(since, 0))
		if err != nil || got != wantSerial || renewed != want {
			t.Fatalf("Renew since %d = %d, %v, %v; want %d, %v", since, got, renewed, err, wantSerial, want)
		}
		if v, _ := store.Version("renew.test."); v.Serial() != wantSerial || v.z.nodes["renew.test."].Sets(dns.TypeSOA)[0].RRs[0].(*dns.SOA).Serial != wantSerial {
			t.Fatalf("served serial %d, want %d in the SOA and at the apex", v.Serial(), wantSerial)
		}
	}
	renew(s, t0-5, t0, false) // published in the period
	clk.SetTime(time.Unix(t0+7, 0))
	renew(s, t0+5, t0+5, true) // a new period: its start
	renew(s, t0+5, t0+5, false)
	if len(changes) != 2 || changes[1] != t0+5 {
		t.Fatalf("OnChange serials %v, want [%d %d]", changes, t0, t0+5)
	}
	v, _ := s.Version("renew.test.")
	if from, del, add, ok := v.JournalSince(t0); !ok || from.Serial != t0 || len(del)+len(add) != 0 {
		t.Fatalf("journal since %d: %v %v %v %v, want an empty change", t0, from, del, add, ok)
	}

	// A change in the renewal's second moves past it; a renewal of a serial ahead of the
	// period's start (published before it) is that serial + 1.
	clk.SetTime(time.Unix(t0+5, 0))
	if err := s.Update("renew.test.", func(tx *Tx) error {
		return tx.Put(RRSet{Name: "a.renew.test.", Type: dns.TypeA, TTL: 60, RRs: []dns.RR{&dns.A{Hdr: dns.RR_Header{Rrtype: dns.TypeA}, A: []byte{192, 0, 2, 1}}}})
	}); err != nil {
		t.Fatal(err)
	}
	changed, _ := s.Version("renew.test.")
	if changed.Serial() != t0+6 {
		t.Fatalf("change after the renewal at serial %d, want %d", changed.Serial(), t0+6)
	}
	clk.SetTime(time.Unix(t0+16, 0))
	renew(s, t0+6, t0+7, true)

	// A replica installs the persisted version and renews it the same way; a version its
	// writer made without having renewed, at the replica's renewal serial, is served past it;
	// one not newer than the persisted serial is refused.
	r := NewStore(StoreOptions{Clock: clk})
	if !r.Install(changed) {
		t.Fatal("Install of the changed version refused")
	}
	renew(r, t0+6, t0+7, true)
	next := ZoneVersion{}
	soa := dns.Copy(changed.z.soa).(*dns.SOA)
	soa.Serial = t0 + 7
	next.z, _ = newZoneData(changed.z.origin, changed.z.meta, soa, changed.z.sets)
	if !r.Install(next) {
		t.Fatal("Install of a version newer than the persisted one refused")
	}
	if got, _ := r.Version("renew.test."); got.Serial() != t0+8 {
		t.Fatalf("installed at serial %d, want %d (past the renewal)", got.Serial(), t0+8)
	}
	if r.Install(changed) {
		t.Fatal("Install of an older version taken")
	}

	// A store whose clock is far behind the server's renews once per period all the same.
	behind := NewStore(StoreOptions{Clock: clocktesting.NewFakeClock(time.Unix(1, 0))})
	if _, err := behind.CreateZone("renew.test.", ZoneMeta{}); err != nil {
		t.Fatal(err)
	}
	renew(behind, t0, t0, true)
	renew(behind, t0, t0, false)
}
