package zonedb_test

import (
	"encoding/json"
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
		checkDecode(t, head, shards)
	})
}

// checkDecode is FuzzDecodeShards' property for one head and its shards.
func checkDecode(t *testing.T, head []byte, shards [][]byte) {
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
	_, wantSerial, _, _ := HeadShards(head)
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
		if _, serial, _, _ := HeadShards(head2); serial != wantSerial {
			t.Fatalf("round trip changed the serial %d to %d", wantSerial, serial)
		}
	}
}

// FuzzDecodeShardText is FuzzDecodeShards' property with the JSON of one shard kept valid and
// its contents fuzzed: the master file text (miekg/dns's zone parser, then the zone's rules) and
// one sidecar set (an identified, possibly weighted set, or labels). Byte mutations of a whole
// shard rarely get past its JSON; these reach the loader.
func FuzzDecodeShardText(f *testing.F) {
	src := exampleStore(f, "")
	v, err := src.Version("example.test.")
	if err != nil {
		f.Fatal(err)
	}
	head, shards, err := EncodeShards(v, 1)
	if err != nil {
		f.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(shards[0], &doc); err != nil {
		f.Fatal(err)
	}
	mf, _ := doc["masterFile"].(string)
	f.Add(mf, "w.example.test.", "A", "eu", int64(70), "w.example.test. 30 IN A 192.0.2.70", "k", "v")
	f.Add("www.example.test. 300 IN A 192.0.2.1\n", "www.example.test.", "A", "", int64(-1), "", "team", "a")
	f.Add("$ORIGIN example.test.\n@ 300 IN NS ns1\nsub 300 IN NS ns.elsewhere.test.\nx.sub 300 IN A 192.0.2.9\n", "a.example.test.", "CNAME", "x", int64(0), "a.example.test. 30 IN CNAME www.example.test.", "", "")
	f.Add("$INCLUDE /etc/passwd\n", "other.test.", "A", "x", int64(1), "other.test. 30 IN A 192.0.2.1", "", "")
	f.Fuzz(func(t *testing.T, masterFile, name, typ, setID string, weight int64, record, labelKey, labelValue string) {
		set := map[string]any{"name": name, "type": typ, "setIdentifier": setID}
		if weight >= 0 {
			set["weight"] = weight
		}
		if record != "" {
			set["records"] = []string{record}
		}
		if labelKey != "" {
			set["labels"] = map[string]string{labelKey: labelValue}
		}
		doc["masterFile"], doc["recordSets"] = masterFile, []any{set}
		shard, err := json.Marshal(doc)
		if err != nil {
			t.Fatal(err)
		}
		checkDecode(t, head, [][]byte{shard})
	})
}
