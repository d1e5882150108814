package zonedb_test

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/miekg/dns"

	. "github.com/dnsplane/dnsplane/pkg/zonedb"
)

// unappliedRecords are records of the types the server does not apply, one per type, and an NS
// set at a wildcard owner.
var unappliedRecords = []string{
	"dn.example.test. 300 IN DNAME target.example.test.",
	"www.example.test. 300 IN RRSIG A 13 3 300 20300101000000 20200101000000 12345 example.test. AAAA",
	"www.example.test. 300 IN NSEC z.example.test. A RRSIG NSEC",
	"0p9mhaveqvm6t7vbl5lop2u3t2rp3tom.example.test. 300 IN NSEC3 1 0 0 - 2vptu5timamqttgl4luu9kg21e0aor3s A RRSIG",
	"*.wild.example.test. 300 IN NS ns.elsewhere.test.",
}

// A DNAME redirects every name below its owner (RFC 6672 §2.2, §3.2), which the server does not
// do, RRSIG, NSEC and NSEC3 need DNSSEC processing it does not do, and an NS set at a wildcard
// owner has no agreed meaning (RFC 4592 §4.2: NSD answers it as data, Knot refers to it): the
// store takes none of them, so that it never holds what the server would answer differently
// from its zone or from other servers.
func TestTx_PutRefusesTypesTheServerDoesNotApply(t *testing.T) {
	s := exampleStore(t, "")
	for _, line := range unappliedRecords {
		rr := rrs(t, line)[0]
		err := s.Update("example.test.", func(tx *Tx) error {
			return tx.Put(RRSet{Name: rr.Header().Name, Type: rr.Header().Rrtype, TTL: 300, RRs: []dns.RR{rr}})
		})
		typ := dns.TypeToString[rr.Header().Rrtype]
		if !errors.Is(err, ErrInvalidRRSet) || !strings.Contains(err.Error(), "embedded server") {
			t.Errorf("Put %s: err %v, want ErrInvalidRRSet saying what the embedded server does not apply", typ, err)
		}
	}
}

// A master file written by hand with a DNAME is not served (the zone is reported, the others
// load), rather than served with NXDOMAIN for every name the DNAME redirects.
func TestStore_LoadRefusesAZoneWithADNAME(t *testing.T) {
	dir := t.TempDir()
	exampleStore(t, dir)
	path := filepath.Join(dir, "child.example.test.zone")
	zone, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	zone = append(zone, "dn.child.example.test. 300 IN DNAME www.example.test.\n"...)
	if err := os.WriteFile(path, zone, 0o644); err != nil {
		t.Fatal(err)
	}
	s := NewStore(StoreOptions{Dir: dir})
	err = s.Load()
	if !errors.Is(err, ErrCorruptZone) || !strings.Contains(err.Error(), "DNAME") || !strings.Contains(err.Error(), "dn.child.example.test.") {
		t.Fatalf("Load: err %v, want ErrCorruptZone naming the DNAME record", err)
	}
	if _, err := s.Zone("child.example.test."); !errors.Is(err, ErrZoneNotFound) {
		t.Errorf("the zone with the DNAME is served: %v", err)
	}
	if _, err := s.Zone("example.test."); err != nil {
		t.Errorf("the other zone is not served: %v", err)
	}
}

// A zone version whose shards hold a type the server does not apply is not installed.
func TestStore_DecodeShardsRefusesTypesTheServerDoesNotApply(t *testing.T) {
	s := exampleStore(t, "")
	head, shards, err := EncodeShards(version(t, s, "example.test."), 1)
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range unappliedRecords {
		shard := bytes.Replace(shards[0], []byte(`"masterFile":"`), []byte(`"masterFile":"`+line+`\n`), 1)
		if _, err := s.DecodeShards(head, [][]byte{shard}); !errors.Is(err, ErrCorruptZone) {
			t.Errorf("%s: err %v, want ErrCorruptZone", line, err)
		}
	}
}

// One name written with decimal escapes of ordinary characters (RFC 1035 §5.1) or in another
// case is the same name: the store keys it in one form, whichever way it came in.
func TestTx_OwnerNamesAreCanonical(t *testing.T) {
	s := exampleStore(t, "")
	err := s.Update("example.test.", func(tx *Tx) error {
		put(t, tx, "", nil, `esc\097ped.example.test. 300 IN A 192.0.2.1`)
		put(t, tx, "", nil, `\069SC\097PED.Example.Test. 300 IN TXT "x"`)
		if _, ok := tx.Get(SetKey{Name: "escaped.example.test.", Type: dns.TypeA}); !ok {
			t.Error(`Get escaped/A: the set put as esc\097ped is not found`)
		}
		if !tx.Delete(SetKey{Name: `e\115caped.example.test`, Type: dns.TypeTXT}) {
			t.Error(`Delete e\115caped/TXT: the set put as \069SC\097PED is not found`)
		}
		put(t, tx, "", nil, `ESCAPED.example.test. 300 IN A 192.0.2.2`)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sets, err := s.RRSets("example.test.")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, rs := range sets {
		if strings.Contains(strings.ToLower(rs.Name), "esc") || strings.Contains(rs.Name, `\`) {
			got = append(got, rs.Key().String()+" "+strings.Join(texts(rs.RRs), "|"))
		}
	}
	want := "escaped.example.test./A escaped.example.test. A 192.0.2.2"
	if len(got) != 1 || got[0] != want {
		t.Errorf("sets of the name: %q, want [%q]", got, want)
	}
	if v, ok := s.Snapshot().Zone("example.test."); !ok || v.Node("escaped.example.test.") == nil {
		t.Error("no node escaped.example.test.")
	}
}
