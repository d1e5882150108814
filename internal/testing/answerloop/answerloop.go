package answerloop

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/miekg/dns"
)

// Query is one name to ask: Name (an FQDN or not), Type (dns.TypeA, ...), and Allowed, the
// answers that count as right in the form Values gives.
type Query struct {
	Name    string
	Type    uint16
	Allowed []string
}

// Loop counts what Start's goroutine asked and what failed.
type Loop struct {
	// Queries and Failures count the questions asked and those answered wrongly: an error, no
	// answer, or an answer not in the query's Allowed.
	Queries, Failures atomic.Int64
	mu                sync.Mutex
	examples          []string
	stop              func()
}

// maxExamples bounds the failures Examples keeps.
const maxExamples = 10

// Start asks addr every query (all at once, each with a 2 s timeout) every interval until Stop
// or the test's end.
func Start(t testing.TB, addr string, interval time.Duration, qs []Query) *Loop {
	t.Helper()
	l := &Loop{}
	done := make(chan struct{})
	stopc := make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(interval)
		defer tick.Stop()
		for {
			var wg sync.WaitGroup
			for _, q := range qs {
				wg.Go(func() { l.ask(addr, q) })
			}
			wg.Wait()
			select {
			case <-stopc:
				return
			case <-tick.C:
			}
		}
	}()
	var once sync.Once
	l.stop = func() { once.Do(func() { close(stopc); <-done }) }
	t.Cleanup(l.stop)
	return l
}

// Stop ends the loop and waits for its last round.
func (l *Loop) Stop() { l.stop() }

// Examples returns the first failures (at most 10), each "name type at time: answer (err)".
func (l *Loop) Examples() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.examples)
}

func (l *Loop) ask(addr string, q Query) {
	l.Queries.Add(1)
	m := new(dns.Msg)
	m.SetQuestion(dns.Fqdn(q.Name), q.Type)
	resp, _, err := (&dns.Client{Timeout: 2 * time.Second}).Exchange(m, addr)
	got := ""
	if err == nil {
		got = Values(resp)
	}
	if err == nil && slices.Contains(q.Allowed, got) {
		return
	}
	l.Failures.Add(1)
	l.mu.Lock()
	defer l.mu.Unlock()
	if len(l.examples) < maxExamples {
		l.examples = append(l.examples, fmt.Sprintf("%s %s at %s: %q (err %v)", q.Name, dns.TypeToString[q.Type], time.Now().Format(time.StampMilli), got, err))
	}
}

// Values is resp's A addresses and CNAME targets (without the trailing dot), sorted and
// joined by commas; "" for none.
func Values(resp *dns.Msg) string {
	var vals []string
	for _, rr := range resp.Answer {
		switch v := rr.(type) {
		case *dns.A:
			vals = append(vals, v.A.String())
		case *dns.CNAME:
			vals = append(vals, strings.TrimSuffix(v.Target, "."))
		}
	}
	slices.Sort(vals)
	return strings.Join(vals, ",")
}
