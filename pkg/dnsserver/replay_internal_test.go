package dnsserver

import (
	"fmt"
	"testing"
	"time"

	"github.com/miekg/dns"
)

func signed(key string, i int, at time.Time) *dns.TSIG {
	return &dns.TSIG{Hdr: dns.RR_Header{Name: key}, MAC: fmt.Sprintf("%064x", i), TimeSigned: uint64(at.Unix()), Fudge: 300}
}

// A key that floods the replay set with distinct signed UPDATEs is refused past
// maxReplaysPerKey, and another key's UPDATEs are still taken; once the window ends, the key's
// entries expire and it is taken again.
func TestReplays_AFloodingKeyIsBoundedAndOthersAreNot(t *testing.T) {
	var p replays
	now := time.Unix(1_800_000_000, 0)
	for i := range maxReplaysPerKey {
		if r, first := p.claim(signed("flood.", i, now), now); r == nil || !first {
			t.Fatalf("UPDATE %d of the flooding key: refused before the bound", i)
		}
	}
	if r, _ := p.claim(signed("flood.", maxReplaysPerKey, now), now); r != nil {
		t.Fatalf("UPDATE %d of the flooding key: remembered past the bound", maxReplaysPerKey)
	}
	if r, first := p.claim(signed("other.", 0, now), now); r == nil || !first {
		t.Fatal("another key's first UPDATE: refused")
	}
	if r, first := p.claim(signed("flood.", 0, now), now); r == nil || first {
		t.Fatal("a replay of the flooding key's first UPDATE: not answered from the first")
	}
	later := now.Add(302 * time.Second)
	if r, first := p.claim(signed("flood.", maxReplaysPerKey+1, later), later); r == nil || !first {
		t.Fatal("the flooding key after its window: still refused")
	}
	if n := len(p.seen); n != 1 {
		t.Fatalf("%d entries remembered after the window, want 1", n)
	}
}

// A claim does not scan the whole set: the expired entries are dropped at most once a second.
func BenchmarkReplays_Claim(b *testing.B) {
	var p replays
	now := time.Unix(1_800_000_000, 0)
	for i := range 3000 {
		p.claim(signed(fmt.Sprintf("k%d.", i%8), i, now), now)
	}
	b.ResetTimer()
	for i := range b.N {
		p.claim(signed("bench.", 10_000+i%maxReplaysPerKey, now), now)
	}
}
