package dnsserver

import (
	"context"
	"strings"
	"sync"
	"time"

	"github.com/miekg/dns"

	"github.com/dnsplane/dnsplane/pkg/dnswire"
)

// replays remembers the UPDATEs the server accepted while their TSIG window lasts (RFC 8945
// §5.2.3: time signed plus or minus the fudge, at most dnswire.TSIGFudge), by key name and
// MAC: the same signed UPDATE received again inside that window (a client's retransmission,
// or a copy someone replays) is answered with the first one's rcode and never handed to the
// UpdateHandler again; outside it, it is BADTIME. So a signed UPDATE is applied at most once
// per replica. An entry lives until its window ends, so the set holds at most the UPDATEs
// accepted in the last 2 × dnswire.TSIGFudge seconds. The zero value is ready; safe for
// concurrent use.
type replays struct {
	mu   sync.Mutex
	seen map[string]*replay
}

// replay is one accepted UPDATE: its rcode once done is closed.
type replay struct {
	until time.Time
	done  chan struct{}
	rcode int
}

// claim registers the UPDATE signed with t at now. first is true when it is new: the caller
// serves it and calls r.finish with its rcode. Otherwise r is the first one's, to wait for.
func (p *replays) claim(t *dns.TSIG, now time.Time) (r *replay, first bool) {
	key := dnswire.Canonical(t.Hdr.Name) + " " + strings.ToLower(t.MAC)
	until := time.Unix(int64(t.TimeSigned), 0).Add(time.Duration(min(t.Fudge, dnswire.TSIGFudge)+1) * time.Second)
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.seen == nil {
		p.seen = map[string]*replay{}
	}
	for k, r := range p.seen {
		if now.After(r.until) {
			delete(p.seen, k)
		}
	}
	if r, ok := p.seen[key]; ok {
		return r, false
	}
	r = &replay{until: until, done: make(chan struct{})}
	p.seen[key] = r
	return r, true
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
