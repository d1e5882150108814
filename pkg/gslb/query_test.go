package gslb_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/dnsplane/dnsplane/pkg/gslb"
)

const appName = "localtargets-app.gslb.test"

// startServer serves h over UDP and TCP on the same free loopback port and returns host:port.
func startServer(t *testing.T, h dns.HandlerFunc) string {
	t.Helper()
	var (
		pc  net.PacketConn
		ln  net.Listener
		err error
	)
	for range 20 {
		if pc, err = net.ListenPacket("udp", "127.0.0.1:0"); err != nil {
			t.Fatal(err)
		}
		if ln, err = net.Listen("tcp", pc.LocalAddr().String()); err == nil {
			break
		}
		pc.Close()
	}
	if err != nil {
		t.Fatalf("no free port for UDP and TCP: %v", err)
	}
	for _, srv := range []*dns.Server{{PacketConn: pc, Handler: h}, {Listener: ln, Handler: h}} {
		started := make(chan struct{})
		srv.NotifyStartedFunc = func() { close(started) }
		done := make(chan struct{})
		go func() { _ = srv.ActivateAndServe(); close(done) }()
		<-started
		t.Cleanup(func() { _ = srv.Shutdown(); <-done })
	}
	return pc.LocalAddr().String()
}

// silentServer returns a loopback UDP address that reads nothing and never answers.
func silentServer(t *testing.T) string {
	t.Helper()
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pc.Close() })
	return pc.LocalAddr().String()
}

func rr(t testing.TB, s string) dns.RR {
	t.Helper()
	r, err := dns.NewRR(s)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// zone is a well-behaved authoritative handler over records; names without records are
// NXDOMAIN, names with records of other types are NODATA.
func zone(t testing.TB, records ...string) dns.HandlerFunc {
	rrs := make([]dns.RR, 0, len(records))
	for _, s := range records {
		rrs = append(rrs, rr(t, s))
	}
	soa := rr(t, "gslb.test. 30 IN SOA ns.gslb.test. hostmaster.gslb.test. 1 30 30 300 30")
	return func(w dns.ResponseWriter, r *dns.Msg) {
		m := new(dns.Msg)
		m.SetReply(r)
		m.Authoritative = true
		m.Compress = true
		q := r.Question[0]
		exists := false
		for _, x := range rrs {
			if strings.EqualFold(x.Header().Name, q.Name) {
				exists = true
				if x.Header().Rrtype == q.Qtype {
					m.Answer = append(m.Answer, x)
				}
			}
		}
		if !exists {
			m.Rcode = dns.RcodeNameError
		}
		if len(m.Answer) == 0 {
			m.Ns = []dns.RR{soa}
		}
		if opt := r.IsEdns0(); opt != nil {
			m.SetEdns0(opt.UDPSize(), false)
		}
		_ = w.WriteMsg(m)
	}
}

// tweak answers like h, then lets change edit the reply before it is sent.
func tweak(h dns.HandlerFunc, change func(req, reply *dns.Msg)) dns.HandlerFunc {
	return func(w dns.ResponseWriter, r *dns.Msg) {
		h(&capture{ResponseWriter: w, change: func(m *dns.Msg) { change(r, m) }}, r)
	}
}

type capture struct {
	dns.ResponseWriter
	change func(*dns.Msg)
}

func (c *capture) WriteMsg(m *dns.Msg) error {
	c.change(m)
	return c.ResponseWriter.WriteMsg(m)
}

func isTCP(w dns.ResponseWriter) bool {
	_, ok := w.RemoteAddr().(*net.TCPAddr)
	return ok
}

func manyA(t testing.TB, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s. 30 IN A 10.0.%d.%d", appName, i/250, i%250+1)
	}
	return out
}

var goodRecords = []string{
	appName + ". 30 IN A 192.0.2.2",
	appName + ". 30 IN A 192.0.2.10",
	appName + ". 30 IN A 192.0.2.1",
	appName + ". 30 IN AAAA 2001:db8:0:0::1",
	"localtargets-v4.gslb.test. 30 IN A 192.0.2.5",
}

func TestQuery_AcceptsOnlyAnswersForTheQuestion(t *testing.T) {
	good := zone(t, goodRecords...)
	tests := []struct {
		name       string
		handler    dns.HandlerFunc
		qname      string
		maxAnswers int
		want       []string
		wantLen    int    // when > 0, check only the number of targets
		wantErr    error  // nil: no error
		wantReason string // substring of the error, if set
	}{
		{name: "A and AAAA, sorted", handler: good, qname: appName,
			want: []string{"192.0.2.1", "192.0.2.2", "192.0.2.10", "2001:db8::1"}},
		{name: "name is case-insensitive and may be fully qualified", handler: good, qname: "LocalTargets-App.GSLB.test.",
			want: []string{"192.0.2.1", "192.0.2.2", "192.0.2.10", "2001:db8::1"}},
		{name: "NODATA for AAAA", handler: good, qname: "localtargets-v4.gslb.test", want: []string{"192.0.2.5"}},
		{name: "NXDOMAIN is no targets", handler: good, qname: "localtargets-gone.gslb.test", want: nil},
		{name: "NODATA for both is no targets", handler: zone(t, appName+". 30 IN TXT \"x\""), qname: appName, want: nil},
		{name: "duplicates removed", handler: zone(t, appName+". 30 IN A 192.0.2.1", appName+". 60 IN A 192.0.2.1"),
			qname: appName, want: []string{"192.0.2.1"}},
		{name: "question echoed in another case", handler: tweak(good, func(_, m *dns.Msg) {
			m.Question[0].Name = strings.ToUpper(m.Question[0].Name)
		}), qname: appName, want: []string{"192.0.2.1", "192.0.2.2", "192.0.2.10", "2001:db8::1"}},
		{name: "records for other names and types ignored, CNAME not followed", handler: tweak(good, func(req, m *dns.Msg) {
			if req.Question[0].Qtype != dns.TypeA {
				return
			}
			m.Answer = []dns.RR{
				rr(t, appName+". 30 IN CNAME other.gslb.test."),
				rr(t, "other.gslb.test. 30 IN A 198.51.100.1"),
				rr(t, "app.gslb.test. 30 IN A 198.51.100.2"),
				rr(t, appName+". 30 IN TXT \"198.51.100.3\""),
				rr(t, appName+". 30 IN AAAA 2001:db8::99"), // AAAA in the A answer: another type
				rr(t, "LOCALTARGETS-APP.gslb.test. 30 IN A 192.0.2.7"),
			}
		}), qname: appName, want: []string{"192.0.2.7", "2001:db8::1"}},
		{name: "wrong question name", handler: tweak(good, func(_, m *dns.Msg) {
			m.Question[0].Name = "localtargets-evil.gslb.test."
		}), qname: appName, wantErr: gslb.ErrBadAnswer},
		{name: "wrong question type", handler: tweak(good, func(_, m *dns.Msg) {
			m.Question[0].Qtype = dns.TypeTXT
		}), qname: appName, wantErr: gslb.ErrBadAnswer},
		{name: "no question", handler: tweak(good, func(_, m *dns.Msg) { m.Question = nil }),
			qname: appName, wantErr: gslb.ErrBadAnswer},
		{name: "not a response", handler: tweak(good, func(_, m *dns.Msg) { m.Response = false }),
			qname: appName, wantErr: gslb.ErrBadAnswer},
		{name: "SERVFAIL", handler: tweak(good, func(_, m *dns.Msg) { m.Rcode = dns.RcodeServerFailure; m.Answer = nil }),
			qname: appName, wantErr: gslb.ErrBadAnswer},
		{name: "REFUSED", handler: tweak(good, func(_, m *dns.Msg) { m.Rcode = dns.RcodeRefused; m.Answer = nil }),
			qname: appName, wantErr: gslb.ErrBadAnswer},
		{name: "oversized: default 64", handler: zone(t, manyA(t, 65)...), qname: appName, wantErr: gslb.ErrBadAnswer,
			wantReason: "oversized"},
		{name: "64 records pass by default", handler: zone(t, manyA(t, 64)...), qname: appName, wantLen: 64},
		{name: "oversized over TCP after truncation", handler: func(w dns.ResponseWriter, r *dns.Msg) {
			h := zone(t, manyA(t, 500)...)
			if !isTCP(w) {
				h = tweak(h, func(_, m *dns.Msg) { m.Truncated = true; m.Answer = nil })
			}
			h(w, r)
		}, qname: appName, wantErr: gslb.ErrBadAnswer, wantReason: "over tcp: oversized"},
		{name: "datagram larger than the advertised EDNS0 buffer", handler: tweak(zone(t, manyA(t, 60)...), func(_, m *dns.Msg) {
			m.Compress = false // 60 uncompressed A records: about 2,600 bytes, over 1232
		}), qname: appName, wantErr: gslb.ErrBadAnswer, wantReason: "malformed"},
		{name: "exactly MaxAnswers passes", handler: zone(t, manyA(t, 4)...), qname: appName, maxAnswers: 4,
			want: []string{"10.0.0.1", "10.0.0.2", "10.0.0.3", "10.0.0.4"}},
		{name: "oversized: MaxAnswers 3", handler: zone(t, manyA(t, 4)...), qname: appName, maxAnswers: 3,
			wantErr: gslb.ErrBadAnswer},
		{name: "oversized counts A/AAAA of other names too", handler: tweak(good, func(_, m *dns.Msg) {
			for i := range 4 {
				m.Answer = append(m.Answer, rr(t, fmt.Sprintf("other.gslb.test. 30 IN A 198.51.100.%d", i+1)))
			}
		}), qname: appName, maxAnswers: 4, wantErr: gslb.ErrBadAnswer},
		{name: "wrong ID over TCP after truncation", handler: func(w dns.ResponseWriter, r *dns.Msg) {
			m := new(dns.Msg)
			m.SetReply(r)
			if isTCP(w) {
				m.Id = r.Id + 1
				m.Answer = []dns.RR{rr(t, appName+". 30 IN A 192.0.2.66")}
			} else {
				m.Truncated = true
			}
			_ = w.WriteMsg(m)
		}, qname: appName, wantErr: gslb.ErrBadAnswer},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			addr := startServer(t, tt.handler)
			q := gslb.Querier{Timeout: 2 * time.Second, MaxAnswers: tt.maxAnswers}
			got, err := q.Query(context.Background(), addr, tt.qname)
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("Query = %v, %v; want error %v", got, err, tt.wantErr)
				}
				if !strings.Contains(err.Error(), tt.wantReason) {
					t.Fatalf("Query error %v; want the reason %q", err, tt.wantReason)
				}
				if errors.Is(err, gslb.ErrPeerTimeout) {
					t.Fatalf("Query error %v is also a timeout", err)
				}
				t.Logf("rejected: %v", err)
				return
			}
			if tt.wantLen > 0 {
				if err != nil || len(got) != tt.wantLen {
					t.Fatalf("Query = %d targets, %v; want %d", len(got), err, tt.wantLen)
				}
				return
			}
			if err != nil || !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("Query = %#v, %v; want %#v", got, err, tt.want)
			}
		})
	}
}

func TestQuery_SendsEDNS0WithoutRecursion(t *testing.T) {
	var bufSize, rd, queries atomic.Int32
	good := zone(t, goodRecords...)
	addr := startServer(t, func(w dns.ResponseWriter, r *dns.Msg) {
		queries.Add(1)
		if opt := r.IsEdns0(); opt != nil {
			bufSize.Store(int32(opt.UDPSize()))
		}
		if r.RecursionDesired {
			rd.Add(1)
		}
		good(w, r)
	})
	if _, err := (gslb.Querier{}).Query(context.Background(), addr, appName); err != nil {
		t.Fatal(err)
	}
	if queries.Load() != 2 || bufSize.Load() != 1232 || rd.Load() != 0 {
		t.Fatalf("queries %d, EDNS0 buffer %d, RD set %d times; want 2 queries, 1232, 0",
			queries.Load(), bufSize.Load(), rd.Load())
	}
}

func TestQuery_TruncatedOverUDPFallsBackToTCP(t *testing.T) {
	full := zone(t, manyA(t, 40)...)
	var udpQueries, tcpQueries atomic.Int32
	addr := startServer(t, func(w dns.ResponseWriter, r *dns.Msg) {
		if isTCP(w) {
			tcpQueries.Add(1)
			full(w, r)
			return
		}
		udpQueries.Add(1)
		// Over UDP: the first record only, with TC set.
		tweak(full, func(_, m *dns.Msg) {
			m.Truncated = true
			if len(m.Answer) > 1 {
				m.Answer = m.Answer[:1]
			}
		})(w, r)
	})
	got, err := (gslb.Querier{Timeout: 2 * time.Second}).Query(context.Background(), addr, appName)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 40 {
		t.Fatalf("got %d targets (%v), want the 40 of the TCP answer", len(got), got)
	}
	if udpQueries.Load() != 2 || tcpQueries.Load() != 2 {
		t.Fatalf("UDP queries %d, TCP queries %d; want 2 and 2", udpQueries.Load(), tcpQueries.Load())
	}
}

func TestQuery_SilentPeerTimesOut(t *testing.T) {
	addr := silentServer(t)
	timeout := 300 * time.Millisecond
	start := time.Now()
	got, err := (gslb.Querier{Timeout: timeout}).Query(context.Background(), addr, appName)
	elapsed := time.Since(start)
	t.Logf("silent peer: %v after %v (Timeout %v)", err, elapsed, timeout)
	if !errors.Is(err, gslb.ErrPeerTimeout) || got != nil {
		t.Fatalf("Query = %v, %v; want ErrPeerTimeout", got, err)
	}
}

func TestQuery_WrongIDIsNeverAccepted(t *testing.T) {
	// Over UDP miekg/dns drops a datagram with another ID and keeps reading, so a server that
	// only answers with wrong IDs ends in a timeout, bounded by Timeout.
	addr := startServer(t, tweak(zone(t, goodRecords...), func(req, m *dns.Msg) { m.Id = req.Id + 1 }))
	timeout := 300 * time.Millisecond
	start := time.Now()
	got, err := (gslb.Querier{Timeout: timeout}).Query(context.Background(), addr, appName)
	elapsed := time.Since(start)
	t.Logf("wrong-ID peer: %v after %v (Timeout %v)", err, elapsed, timeout)
	if err == nil || got != nil {
		t.Fatalf("Query = %v, %v; want an error", got, err)
	}
	if !errors.Is(err, gslb.ErrPeerTimeout) {
		t.Fatalf("Query error %v; want ErrPeerTimeout (wrong-ID datagrams are dropped)", err)
	}
}

func TestQuery_CancelledContextStopsAtOnce(t *testing.T) {
	addr := silentServer(t)
	ctx, cancel := context.WithCancel(context.Background())
	time.AfterFunc(50*time.Millisecond, cancel)
	start := time.Now()
	_, err := (gslb.Querier{Timeout: time.Minute}).Query(ctx, addr, appName)
	t.Logf("cancelled: %v after %v", err, time.Since(start))
	if !errors.Is(err, context.Canceled) || errors.Is(err, gslb.ErrPeerTimeout) {
		t.Fatalf("Query = %v; want context.Canceled", err)
	}
}

func TestQuery_CallerDeadlineIsATimeout(t *testing.T) {
	addr := silentServer(t)
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	_, err := (gslb.Querier{Timeout: time.Minute}).Query(ctx, addr, appName)
	if !errors.Is(err, gslb.ErrPeerTimeout) {
		t.Fatalf("Query = %v; want ErrPeerTimeout", err)
	}
}

func TestQuery_BadNameIsAnError(t *testing.T) {
	for _, name := range []string{"", ".", "a..b"} {
		if _, err := (gslb.Querier{}).Query(context.Background(), "127.0.0.1:1", name); err == nil {
			t.Errorf("Query(%q) passed", name)
		}
	}
}
