package answerloop

import (
	"errors"
	"fmt"
	"maps"
	"net"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/miekg/dns"
)

// Query is one name to ask: Name (an FQDN or not), Type (dns.TypeA, ...), and Allowed, the
// answers that count as right in the form Values gives ("" allows an empty answer).
type Query struct {
	Name    string
	Type    uint16
	Allowed []string
}

// Options say how Start paces its queries and what counts as a right answer. The zero value
// asks every query at once, round after round, with no pause.
type Options struct {
	// Interval is the pause between two rounds; each round asks every query at once and waits
	// for all its answers.
	Interval time.Duration
	// Rate, when above 0, replaces rounds: Rate queries per second in all, cycling over the
	// queries, sent by Workers goroutines (default 50), each on its own schedule, so that a slow
	// answer delays only its own worker.
	Rate, Workers int
	// Authoritative counts an answer without the AA bit as wrong.
	Authoritative bool
	// Timeout bounds each query (default 2 s).
	Timeout time.Duration
	// Retries is how many times a query that timed out is asked again, each time on a new
	// socket, before it counts as a Timeout: a stub resolver asks again (resolv.conf's
	// attempts:2 is Retries 1). Queries answered right on a retry count as OK and in Retried.
	Retries int
}

// The outcomes a Loop counts besides the rcode of an answer that is not NOERROR or NXDOMAIN
// ("REFUSED", "SERVFAIL", ...).
const (
	OK      = "ok"      // no error, NOERROR or NXDOMAIN, and an allowed answer
	Timeout = "timeout" // no answer within Options.Timeout
	Error   = "error"   // another network error, such as an ICMP port unreachable
	Wrong   = "wrong"   // NOERROR or NXDOMAIN with an answer not allowed, or without AA when asked
)

// Loop counts what Start's goroutines asked and what failed.
type Loop struct {
	// Queries and Failures count the questions asked and those not answered OK; Retried counts
	// those answered OK only on a retry (Options.Retries), which are not failures.
	Queries, Failures, Retried atomic.Int64

	mu                  sync.Mutex
	counts              map[string]int
	examples            []string
	firstFail, lastFail time.Time
	run, longestRun     int
	start, end          time.Time
	stop                func()
}

// maxExamples bounds the failures Examples keeps.
const maxExamples = 10

// Start asks addr qs, paced as opts says, until Stop or the test's end. Each query goes out on
// its own UDP socket (miekg/dns's Client dials one per exchange), as a resolver's would.
func Start(t testing.TB, addr string, qs []Query, opts Options) *Loop {
	t.Helper()
	if len(qs) == 0 {
		t.Fatal("answerloop.Start: no queries")
	}
	if opts.Timeout == 0 {
		opts.Timeout = 2 * time.Second
	}
	l := &Loop{counts: map[string]int{}, start: time.Now()}
	stopc := make(chan struct{})
	var wg sync.WaitGroup
	if opts.Rate > 0 {
		workers := opts.Workers
		if workers <= 0 {
			workers = 50
		}
		interval := time.Duration(workers) * time.Second / time.Duration(opts.Rate)
		for w := range workers {
			wg.Go(func() {
				next := l.start.Add(time.Duration(w) * interval / time.Duration(workers))
				for k := w; ; k += workers {
					select {
					case <-stopc:
						return
					case <-time.After(time.Until(next)):
					}
					l.ask(addr, qs[k%len(qs)], opts)
					next = next.Add(interval)
				}
			})
		}
	} else {
		wg.Go(func() {
			for {
				var round sync.WaitGroup
				for _, q := range qs {
					round.Go(func() { l.ask(addr, q, opts) })
				}
				round.Wait()
				select {
				case <-stopc:
					return
				case <-time.After(opts.Interval):
				}
			}
		})
	}
	var once sync.Once
	l.stop = func() {
		once.Do(func() {
			close(stopc)
			wg.Wait()
			l.mu.Lock()
			l.end = time.Now()
			l.mu.Unlock()
		})
	}
	t.Cleanup(l.stop)
	return l
}

// Stop ends the loop and waits for the queries in flight.
func (l *Loop) Stop() { l.stop() }

// Counts returns the queries by outcome: OK, Timeout, Error, Wrong, or an rcode's name.
func (l *Loop) Counts() map[string]int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return maps.Clone(l.counts)
}

// Examples returns the first failures (at most 10), each "name type at time: outcome answer (err)".
func (l *Loop) Examples() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.examples)
}

// Failed returns the times of the first and the last failure (zero when none failed).
func (l *Loop) Failed() (first, last time.Time) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.firstFail, l.lastFail
}

// LongestRun is the most failures in a row, in the order the answers came.
func (l *Loop) LongestRun() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.longestRun
}

// String gives the counts and the rate achieved, in queries per second from Start to Stop (or to
// now while the loop runs).
func (l *Loop) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	end := l.end
	if end.IsZero() {
		end = time.Now()
	}
	secs := end.Sub(l.start).Seconds()
	var failed []string
	for _, k := range slices.Sorted(maps.Keys(l.counts)) {
		if k != OK {
			failed = append(failed, fmt.Sprintf("%s %d", k, l.counts[k]))
		}
	}
	q := l.Queries.Load()
	return fmt.Sprintf("%d queries in %.1f s (%.0f qps): %d answered right (%d of them on a retry after a timeout), %d failed %v (longest run %d)",
		q, secs, float64(q)/secs, l.counts[OK], l.Retried.Load(), l.Failures.Load(), failed, l.longestRun)
}

// Outcome classifies one exchange's result: OK, Timeout, Error, Wrong, or the rcode's name.
func Outcome(q Query, resp *dns.Msg, err error, authoritative bool) string {
	var ne net.Error
	switch {
	case errors.As(err, &ne) && ne.Timeout():
		return Timeout
	case err != nil:
		return Error
	case resp.Rcode != dns.RcodeSuccess && resp.Rcode != dns.RcodeNameError:
		return dns.RcodeToString[resp.Rcode]
	case !slices.Contains(q.Allowed, Values(resp)), authoritative && !resp.Authoritative:
		return Wrong
	}
	return OK
}

func (l *Loop) ask(addr string, q Query, opts Options) {
	m := new(dns.Msg)
	m.SetQuestion(dns.Fqdn(q.Name), q.Type)
	m.RecursionDesired = false
	resp, _, err := (&dns.Client{Timeout: opts.Timeout}).Exchange(m, addr)
	outcome := Outcome(q, resp, err, opts.Authoritative)
	for try := 0; try < opts.Retries && outcome == Timeout; try++ {
		resp, _, err = (&dns.Client{Timeout: opts.Timeout}).Exchange(m, addr)
		if outcome = Outcome(q, resp, err, opts.Authoritative); outcome == OK {
			l.Retried.Add(1)
		}
	}
	l.Queries.Add(1)
	l.mu.Lock()
	defer l.mu.Unlock()
	l.counts[outcome]++
	if outcome == OK {
		l.run = 0
		return
	}
	l.Failures.Add(1)
	now := time.Now()
	if l.firstFail.IsZero() {
		l.firstFail = now
	}
	l.lastFail = now
	l.run++
	l.longestRun = max(l.longestRun, l.run)
	if len(l.examples) < maxExamples {
		got := ""
		if err == nil {
			got = Values(resp)
		}
		l.examples = append(l.examples, fmt.Sprintf("%s %s at %s: %s %q (err %v)", q.Name, dns.TypeToString[q.Type], now.UTC().Format(time.RFC3339Nano), outcome, got, err))
	}
}

// Values is resp's A and AAAA addresses and CNAME targets (without the trailing dot), sorted
// and joined by commas; "" for none.
func Values(resp *dns.Msg) string {
	var vals []string
	for _, rr := range resp.Answer {
		switch v := rr.(type) {
		case *dns.A:
			vals = append(vals, v.A.String())
		case *dns.AAAA:
			vals = append(vals, v.AAAA.String())
		case *dns.CNAME:
			vals = append(vals, strings.TrimSuffix(v.Target, "."))
		}
	}
	slices.Sort(vals)
	return strings.Join(vals, ",")
}
