package zonedb_test

import (
	"bytes"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	. "github.com/dnsplane/dnsplane/pkg/zonedb"
)

// version is the served version of origin in s.
func version(t *testing.T, s *Store, origin string) ZoneVersion {
	t.Helper()
	v, err := s.Version(origin)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// zoneText renders every set of origin in s, with its set-level data, for comparing stores.
func zoneText(t *testing.T, s *Store, origin string) string {
	t.Helper()
	sets, err := s.RRSets(origin)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, rs := range sets {
		w := "-"
		if rs.Weight != nil {
			w = fmt.Sprint(*rs.Weight)
		}
		fmt.Fprintf(&b, "%s %d %s w=%s labels=%v %s\n", rs.Key(), rs.TTL, rs.SetIdentifier, w, rs.Labels, strings.Join(texts(rs.RRs), "|"))
	}
	return b.String()
}

func TestShards_RoundTripAtEveryShardCount(t *testing.T) {
	src := exampleStore(t, "")
	for _, origin := range []string{"example.test.", "child.example.test."} {
		v := version(t, src, origin)
		for _, n := range []int{0, 1, 2, 4, 16} {
			head, shards, err := EncodeShards(v, n)
			if err != nil {
				t.Fatal(err)
			}
			if want := max(n, 1); len(shards) != want {
				t.Fatalf("%s n=%d: %d shards", origin, n, len(shards))
			}
			head2, shards2, _ := EncodeShards(v, n)
			if !bytes.Equal(head, head2) || !reflect.DeepEqual(shards, shards2) {
				t.Fatalf("%s n=%d: encoding is not deterministic", origin, n)
			}
			dst := NewStore(StoreOptions{})
			got, err := dst.DecodeShards(head, shards)
			if err != nil {
				t.Fatalf("%s n=%d: %v", origin, n, err)
			}
			if !dst.Install(got) {
				t.Fatal("first install refused")
			}
			if a, b := zoneText(t, dst, origin), zoneText(t, src, origin); a != b {
				t.Errorf("%s n=%d decoded:\n%s\nwant:\n%s", origin, n, a, b)
			}
			zi1, _ := src.Zone(origin)
			zi2, _ := dst.Zone(origin)
			if !zi1.Meta.Created.Equal(zi2.Meta.Created) || zi1.Meta.ID != zi2.Meta.ID || zi1.Meta.CallerReference != zi2.Meta.CallerReference ||
				!reflect.DeepEqual(zi1.Meta.Tags, zi2.Meta.Tags) || zi1.Serial != zi2.Serial {
				t.Errorf("%s n=%d info %+v, want %+v", origin, n, zi2, zi1)
			}
		}
	}
}

func TestShards_AChangeRewritesOnlyTheShardOfItsOwner(t *testing.T) {
	s := exampleStore(t, "")
	const n = 8
	before, beforeShards, _ := EncodeShards(version(t, s, "example.test."), n)
	if err := s.Update("example.test.", func(tx *Tx) error {
		put(t, tx, "", nil, "new.example.test. 300 IN A 192.0.2.99")
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	after, afterShards, _ := EncodeShards(version(t, s, "example.test."), n)
	if bytes.Equal(before, after) {
		t.Error("the head (serial) did not change")
	}
	var changed []int
	for i := range afterShards {
		if !bytes.Equal(beforeShards[i], afterShards[i]) {
			changed = append(changed, i)
		}
	}
	if want := []int{ShardOf("NEW.example.test", n)}; !slices.Equal(changed, want) {
		t.Errorf("changed shards %v, want %v", changed, want)
	}
}

func TestShards_DecodeRejectsCorruptInput(t *testing.T) {
	s := exampleStore(t, "")
	head, shards, _ := EncodeShards(version(t, s, "example.test."), 2)
	_, otherShards, _ := EncodeShards(version(t, s, "child.example.test."), 2)
	for _, c := range []struct {
		name   string
		head   []byte
		shards [][]byte
	}{
		{"head is not JSON", []byte("{"), shards},
		{"head of another version", bytes.Replace(head, []byte(`"version":1`), []byte(`"version":9`), 1), shards},
		{"head without shards", bytes.Replace(head, []byte(`"shards":2`), []byte(`"shards":0`), 1), shards},
		{"head with a bad origin", bytes.Replace(head, []byte(`"origin":"example.test."`), []byte(`"origin":"Ex ample."`), 1), shards},
		{"shards swapped", head, [][]byte{shards[1], shards[0]}},
		{"shard of another zone", head, [][]byte{otherShards[0], shards[1]}},
		{"shard not JSON", head, [][]byte{[]byte("x"), shards[1]}},
		{"SOA in a shard", head, [][]byte{bytes.Replace(shards[0], []byte(`"masterFile":"`), []byte(`"masterFile":"example.test. 60 IN SOA a. b. 1 2 3 4 5\n`), 1), shards[1]}},
		{"record outside the zone", head, [][]byte{bytes.Replace(shards[0], []byte(`"masterFile":"`), []byte(`"masterFile":"www.elsewhere. 60 IN A 192.0.2.1\n`), 1), shards[1]}},
	} {
		if _, err := s.DecodeShards(c.head, c.shards); !errors.Is(err, ErrCorruptZone) {
			t.Errorf("%s: err %v, want ErrCorruptZone", c.name, err)
		}
	}
	// A missing shard (nil) leaves its sets out and is not an error.
	v, err := s.DecodeShards(head, [][]byte{shards[0], nil})
	if err != nil {
		t.Fatal(err)
	}
	if all := SetCount(version(t, s, "example.test.")); SetCount(v) == 0 || SetCount(v) >= all {
		t.Errorf("missing shard: %d sets of %d", SetCount(v), all)
	}
}

func TestStore_InstallTakesOnlyNewerVersions(t *testing.T) {
	created := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	version := func(serial uint32, created time.Time) ZoneVersion {
		src := NewStore(StoreOptions{})
		if _, err := src.CreateZone("z.test", ZoneMeta{Created: created}); err != nil {
			t.Fatal(err)
		}
		v := version(t, src, "z.test.")
		SetSerial(v, serial)
		return v
	}
	for _, c := range []struct {
		name          string
		served, offer ZoneVersion
		want          bool
		wantSerial    uint32
	}{
		{"newer", version(5, created), version(6, created), true, 6},
		{"same", version(5, created), version(5, created), false, 5},
		{"older", version(5, created), version(4, created), false, 5},
		{"newer across the wrap", version(0xFFFFFFFF, created), version(1, created), true, 1},
		{"older across the wrap", version(1, created), version(0xFFFFFFFF, created), false, 1},
		{"re-created zone, lower serial", version(9, created), version(1, created.Add(time.Second)), true, 1},
	} {
		s := NewStore(StoreOptions{})
		s.Install(c.served)
		if got := s.Install(c.offer); got != c.want {
			t.Errorf("%s: Install = %v, want %v", c.name, got, c.want)
		}
		if zi, _ := s.Zone("z.test"); zi.Serial != c.wantSerial {
			t.Errorf("%s: serving serial %d, want %d", c.name, zi.Serial, c.wantSerial)
		}
	}
	s := NewStore(StoreOptions{})
	s.Install(version(3, created))
	if s.Uninstall("z.test", created.Add(time.Hour)) {
		t.Error("Uninstall removed a zone created at another time")
	}
	if !s.Uninstall("Z.TEST.", created) || len(s.Zones()) != 0 {
		t.Error("Uninstall did not remove the zone")
	}
	if s.Uninstall("z.test", time.Time{}) {
		t.Error("Uninstall of a zone not served reported true")
	}
}
