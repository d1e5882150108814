package dnsserver

import (
	"context"
	"strings"
	"sync"
	"time"

	"github.com/miekg/dns"

	"github.com/dnsplane/dnsplane/pkg/dnswire"
)

// maxReplaysPerKey bounds the UPDATEs one key may have remembered at once: with the default
// --dynamic-update-rate (5 a second, burst 20) a key's accepted UPDATEs fill at most about
// 1,520 entries of a 300 s window, so a key past this bound is flooding. Its further UPDATEs
// are REFUSED, unremembered and never handed to the UpdateHandler, until its entries expire;
// other keys' UPDATEs are not slowed.
const maxReplaysPerKey = 4096

// replays remembers the UPDATEs the server accepted while their TSIG window lasts (RFC 8945
// §5.2.3: time signed plus or minus the fudge, at most dnswire.TSIGFudge), by key name and
// MAC: the same signed UPDATE received again inside that window (a client's retransmission,
// or a copy someone replays) is answered with the first one's rcode and never handed to the
// UpdateHandler again; outside it, it is BADTIME. So a signed UPDATE is applied at most once
// per replica. An entry lives until its window ends, so the set holds at most the UPDATEs
// accepted in the last 2 × dnswire.TSIGFudge seconds, and at most maxReplaysPerKey of each
// key. Expired entries are dropped at most once a second, so a claim costs O(1) amortised.
// The zero value is ready; safe for concurrent use.
type replays struct {
	mu        sync.Mutex
	seen      map[string]*replay
	perKey    map[string]int
	nextPrune time.Time
}

// replay is one accepted UPDATE: its rcode once done is closed.
type replay struct {
	key   string
	until time.Time
	done  chan struct{}
	rcode int
}

// claim registers the UPDATE signed with t at now. first is true when it is new: the caller
// serves it and calls r.finish with its rcode. Otherwise r is the first one's, to wait for,
// or nil when the key already has maxReplaysPerKey UPDATEs remembered (the caller refuses it).
func (p *replays) claim(t *dns.TSIG, now time.Time) (r *replay, first bool) {
	keyName := dnswire.Fqdn(t.Hdr.Name)
	key := keyName + " " + strings.ToLower(t.MAC)
	until := time.Unix(int64(t.TimeSigned), 0).Add(time.Duration(min(t.Fudge, dnswire.TSIGFudge)+1) * time.Second)
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.seen == nil {
		p.seen, p.perKey = map[string]*replay{}, map[string]int{}
	}
	p.prune(now)
	if r, ok := p.seen[key]; ok && !now.After(r.until) {
		return r, false
	}
	if p.perKey[keyName] >= maxReplaysPerKey {
		return nil, false
	}
	r = &replay{key: keyName, until: until, done: make(chan struct{})}
	if old, ok := p.seen[key]; ok {
		p.perKey[old.key]--
	}
	p.seen[key] = r
	p.perKey[keyName]++
	return r, true
}

// prune drops the entries whose window ended, at most once a second.
func (p *replays) prune(now time.Time) {
	if now.Before(p.nextPrune) {
		return
	}
	p.nextPrune = now.Add(time.Second)
	for k, r := range p.seen {
		if now.After(r.until) {
			delete(p.seen, k)
			if p.perKey[r.key]--; p.perKey[r.key] <= 0 {
				delete(p.perKey, r.key)
			}
		}
	}
}

// finish records the first UPDATE's rcode and wakes its replays.
func (r *replay) finish(rcode int) {
	r.rcode = rcode
	close(r.done)
}

// wait returns the first UPDATE's rcode once it has one, SERVFAIL when ctx ends first.
func (r *replay) wait(ctx context.Context) int {
	select {
	case <-r.done:
		return r.rcode
	case <-ctx.Done():
		return dns.RcodeServerFailure
	}
}
