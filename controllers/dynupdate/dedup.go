package dynupdate

import (
	"context"
	"strconv"
	"time"

	"github.com/miekg/dns"

	"github.com/dnsplane/dnsplane/pkg/dnswire"
)

// maxAnswers bounds the answers kept for retransmissions (a key's rate limit applies after
// this check); past it, UPDATEs are applied without being remembered.
const maxAnswers = 10000

// retransmitWindow is how long an UPDATE's answer is kept for its retransmissions: the TSIG
// fudge, past which the server refuses the same signed message as out of its time window.
const retransmitWindow = dnswire.TSIGFudge * time.Second

// answer is the outcome of one signed UPDATE, shared with its retransmissions: rcode once done
// is closed.
type answer struct {
	done  chan struct{}
	rcode int
	at    time.Time
}

// messageID identifies one signed UPDATE: the key, the message ID and the request's TSIG MAC,
// which covers the whole message and its time signed. A client that retransmits an UPDATE it
// got no answer to (UDP) sends the same bytes, hence the same MAC; a new UPDATE, even with the
// same content, has another time signed or ID, hence another MAC. Only a holder of the key can
// make a message with a given MAC, so no one else can take an UPDATE's answer.
func messageID(req *dns.Msg, keyName string) (string, bool) {
	t := req.IsTsig()
	if t == nil || t.MAC == "" {
		return "", false
	}
	return keyName + "\x00" + strconv.Itoa(int(req.Id)) + "\x00" + t.MAC, true
}

// join registers the UPDATE id as in flight and returns its answer and first = true, or, when
// the same UPDATE is in flight or was answered within retransmitWindow, that one's answer and
// first = false. Answers older than retransmitWindow are dropped here; with maxAnswers kept,
// the answer is nil and first true (the UPDATE is applied unremembered).
func (a *Applier) join(id string) (ans *answer, first bool) {
	now := a.clock().Now()
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.answers == nil {
		a.answers = map[string]*answer{}
	}
	for k, v := range a.answers {
		if now.Sub(v.at) > retransmitWindow {
			delete(a.answers, k)
		}
	}
	if ans, ok := a.answers[id]; ok {
		return ans, false
	}
	if len(a.answers) >= maxAnswers {
		return nil, true
	}
	ans = &answer{done: make(chan struct{}), at: now}
	a.answers[id] = ans
	return ans, true
}

// finish records rcode as ans's outcome, for the retransmissions waiting on it and to come.
func (a *Applier) finish(ans *answer, rcode int) {
	a.mu.Lock()
	ans.rcode, ans.at = rcode, a.clock().Now()
	a.mu.Unlock()
	close(ans.done)
}

// awaitFirst waits for the first copy of a retransmitted UPDATE to be answered and returns its
// rcode; SERVFAIL when ctx ends first.
func (a *Applier) awaitFirst(ctx context.Context, ans *answer) int {
	select {
	case <-ans.done:
		a.mu.Lock()
		defer a.mu.Unlock()
		return ans.rcode
	case <-ctx.Done():
		return dns.RcodeServerFailure
	}
}
