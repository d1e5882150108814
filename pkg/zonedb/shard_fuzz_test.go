package zonedb_test

import (
	"errors"
	"testing"

	. "github.com/dnsplane/dnsplane/pkg/zonedb"
)

// FuzzDecodeShards pins the decoder of the zone-store ConfigMaps (pkg/zonestore hands it the
// gunzipped head and shards as found in the API, which anyone with RBAC on the namespace can
// write): any bytes never panic, every error wraps ErrCorruptZone, and whatever it accepts is a
// zone version that installs and survives another EncodeShards / DecodeShards round trip
// unchanged (same sets, same serial), at another shard count. The seeds are the example zones
// encoded at one and two shards, so the fuzzer starts from valid heads and shards.
func FuzzDecodeShards(f *testing.F) {
	src := exampleStore(f, "")
	for _, origin := range []string{"example.test.", "child.example.test."} {
		v, err := src.Version(origin)
		if err != nil {
			f.Fatal(err)
		}
		for _, n := range []int{1, 2} {
			head, shards, err := EncodeShards(v, n)
			if err != nil {
				f.Fatal(err)
			}
			second := []byte(nil)
			if n == 2 {
				second = shards[1]
			}
			f.Add(head, shards[0], second)
		}
	}
	f.Add([]byte(`{}`), []byte(`{}`), []byte(nil))
	f.Fuzz(func(t *testing.T, head, shard0, shard1 []byte) {
		shards := [][]byte{shard0}
		if shard1 != nil {
			shards = append(shards, shard1)
		}
		s := NewStore(StoreOptions{})
		v, err := s.DecodeShards(head, shards)
		if err != nil {
			if !errors.Is(err, ErrCorruptZone) {
				t.Fatalf("DecodeShards error %v does not wrap ErrCorruptZone", err)
			}
			return
		}
		if !s.Install(v) {
			t.Fatal("a decoded version was refused by an empty store")
		}
		origin := v.Origin()
		want := zoneText(t, s, origin)
		for _, n := range []int{1, 3} {
			head2, shards2, err := EncodeShards(v, n)
			if err != nil {
				t.Fatalf("EncodeShards of a decoded version: %v", err)
			}
			again := NewStore(StoreOptions{})
			v2, err := again.DecodeShards(head2, shards2)
			if err != nil {
				t.Fatalf("re-encoded version (%d shards) does not decode: %v", n, err)
			}
			again.Install(v2)
			if got := zoneText(t, again, origin); got != want {
				t.Fatalf("round trip at %d shards changed the zone:\n%s\nwant:\n%s", n, got, want)
			}
			_, serial, _, _ := HeadShards(head2)
			_, want, _, _ := HeadShards(head)
			if serial != want {
				t.Fatalf("round trip changed the serial %d to %d", want, serial)
			}
		}
	})
}
