package answerloop

import (
	"errors"
	"net"
	"os"
	"sync/atomic"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/dnsplane/dnsplane/internal/testing/dnstest"
	"github.com/dnsplane/dnsplane/internal/testing/testrun"
)

type timeoutErr struct{}

func (timeoutErr) Error() string   { return "i/o timeout" }
func (timeoutErr) Timeout() bool   { return true }
func (timeoutErr) Temporary() bool { return true }

func reply(rcode int, aa bool, rrs ...string) *dns.Msg {
	m := &dns.Msg{}
	m.Rcode, m.Authoritative = rcode, aa
	for _, s := range rrs {
		rr, err := dns.NewRR(s)
		if err != nil {
			panic(err)
		}
		m.Answer = append(m.Answer, rr)
	}
	return m
}

func TestOutcome(t *testing.T) {
	www := Query{Name: "www.example.test", Type: dns.TypeA, Allowed: []string{"192.0.2.1", "192.0.2.1,192.0.2.2"}}
	gone := Query{Name: "gone.example.test", Type: dns.TypeA, Allowed: []string{"", "192.0.2.9"}}
	cname := Query{Name: "api.example.test", Type: dns.TypeCNAME, Allowed: []string{"lb.example.net"}}
	for _, tc := range []struct {
		name string
		q    Query
		resp *dns.Msg
		err  error
		aa   bool
		want string
	}{
		{"allowed A", www, reply(dns.RcodeSuccess, true, "www.example.test. 60 IN A 192.0.2.1"), nil, true, OK},
		{"allowed set in any order", www, reply(dns.RcodeSuccess, true, "www.example.test. 60 IN A 192.0.2.2", "www.example.test. 60 IN A 192.0.2.1"), nil, false, OK},
		{"another address", www, reply(dns.RcodeSuccess, true, "www.example.test. 60 IN A 192.0.2.3"), nil, false, Wrong},
		{"no answer where one is needed", www, reply(dns.RcodeSuccess, true), nil, false, Wrong},
		{"NXDOMAIN where none is allowed", www, reply(dns.RcodeNameError, true), nil, false, Wrong},
		{"NXDOMAIN where an empty answer is allowed", gone, reply(dns.RcodeNameError, true), nil, true, OK},
		{"not authoritative when asked for AA", www, reply(dns.RcodeSuccess, false, "www.example.test. 60 IN A 192.0.2.1"), nil, true, Wrong},
		{"not authoritative, AA not asked for", www, reply(dns.RcodeSuccess, false, "www.example.test. 60 IN A 192.0.2.1"), nil, false, OK},
		{"REFUSED even where an empty answer is allowed", gone, reply(dns.RcodeRefused, false), nil, false, "REFUSED"},
		{"SERVFAIL", www, reply(dns.RcodeServerFailure, false), nil, false, "SERVFAIL"},
		{"a CNAME target without its dot", cname, reply(dns.RcodeSuccess, true, "api.example.test. 60 IN CNAME lb.example.net."), nil, true, OK},
		{"timeout", www, nil, timeoutErr{}, false, Timeout},
		{"wrapped timeout", www, nil, &net.OpError{Op: "read", Err: timeoutErr{}}, false, Timeout},
		{"port unreachable", www, nil, &net.OpError{Op: "read", Err: os.NewSyscallError("recvfrom", errors.New("connection refused"))}, false, Error},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Outcome(tc.q, tc.resp, tc.err, tc.aa); got != tc.want {
				t.Errorf("Outcome = %q, want %q", got, tc.want)
			}
		})
	}
}

// www answers r with www.example.test A 192.0.2.1 and the AA bit.
func www(w dns.ResponseWriter, r *dns.Msg) {
	m := new(dns.Msg)
	m.SetReply(r)
	m.Authoritative = true
	rr, _ := dns.NewRR("www.example.test. 60 IN A 192.0.2.1")
	m.Answer = append(m.Answer, rr)
	_ = w.WriteMsg(m)
}

// TestLoop_CountsByOutcome runs both pacings against a real server and checks the counts add
// up: every query is counted once, right or by its failure.
func TestLoop_CountsByOutcome(t *testing.T) {
	// www.example.test is answered; every other name REFUSED.
	addr := dnstest.HandleUDP(t, "127.0.0.1", func(w dns.ResponseWriter, r *dns.Msg) {
		if r.Question[0].Name == "www.example.test." {
			www(w, r)
			return
		}
		m := new(dns.Msg)
		m.SetRcode(r, dns.RcodeRefused)
		_ = w.WriteMsg(m)
	})
	qs := []Query{
		{Name: "www.example.test", Type: dns.TypeA, Allowed: []string{"192.0.2.1"}},
		{Name: "other.example.test", Type: dns.TypeA, Allowed: []string{""}},
	}
	for _, opts := range []Options{{Interval: 5 * time.Millisecond, Authoritative: true}, {Rate: 400, Workers: 4}} {
		l := Start(t, addr, qs, opts)
		deadline := time.Now().Add(testrun.HangTimeout)
		for l.Queries.Load() < 20 && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
		l.Stop()
		c := l.Counts()
		q, f := l.Queries.Load(), l.Failures.Load()
		if q < 20 || int64(c[OK]+c["REFUSED"]) != q || int64(c["REFUSED"]) != f || c[OK] == 0 || f == 0 {
			t.Errorf("%+v: %d queries, %d failures, counts %v; want every query either ok (www) or REFUSED (other)", opts, q, f, c)
		}
		if first, last := l.Failed(); first.IsZero() || last.Before(first) {
			t.Errorf("%+v: failures at %v to %v", opts, first, last)
		}
		if len(l.Examples()) == 0 || len(l.Examples()) > maxExamples {
			t.Errorf("%+v: %d examples", opts, len(l.Examples()))
		}
		t.Log(l)
	}
}

// TestLoop_RetriesATimedOutQuery: a server that leaves every other query unanswered. Without
// retries those are Timeouts; with one retry each is answered on its second try, counted OK and
// Retried.
func TestLoop_RetriesATimedOutQuery(t *testing.T) {
	var n atomic.Int64
	addr := dnstest.HandleUDP(t, "127.0.0.1", func(w dns.ResponseWriter, r *dns.Msg) {
		if n.Add(1)%2 == 1 {
			return // dropped, as a reply whose conntrack entry was just deleted is
		}
		www(w, r)
	})
	qs := []Query{{Name: "www.example.test", Type: dns.TypeA, Allowed: []string{"192.0.2.1"}}}
	for _, tc := range []struct {
		retries int
		check   func(l *Loop) bool
	}{
		{0, func(l *Loop) bool { return l.Counts()[Timeout] > 0 && l.Retried.Load() == 0 }},
		{1, func(l *Loop) bool {
			return l.Failures.Load() == 0 && l.Retried.Load() > 0 && l.Counts()[OK] == int(l.Queries.Load())
		}},
	} {
		// Timeout 1 s: long enough that an answered query is never timed out on a busy machine.
		l := Start(t, addr, qs, Options{Interval: time.Millisecond, Timeout: time.Second, Retries: tc.retries})
		deadline := time.Now().Add(testrun.HangTimeout)
		for l.Queries.Load() < 6 && time.Now().Before(deadline) {
			time.Sleep(10 * time.Millisecond)
		}
		l.Stop()
		if !tc.check(l) {
			t.Errorf("Retries %d: %s, counts %v", tc.retries, l, l.Counts())
		}
	}
}
