package gslb_test

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"reflect"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/dnsplane/dnsplane/pkg/gslb"
	"github.com/dnsplane/dnsplane/pkg/gslb/health"
)

const verdictsName = "verdicts-app.gslb.test"

// verdictRecord returns a real record by health.Encode and it as a zone-file TXT line, split into
// 255-byte character-strings.
func verdictRecord(t testing.TB) (health.Record, string) {
	t.Helper()
	r := health.Record{GeoTag: "eu", IssuedAt: time.Unix(1764784800, 0).UTC(), ValidFor: 90 * time.Second,
		Up:   []netip.Addr{netip.MustParseAddr("192.0.2.1"), netip.MustParseAddr("2001:db8::1")},
		Down: []netip.Addr{netip.MustParseAddr("192.0.2.2")}}
	v, err := health.Encode(r)
	if err != nil {
		t.Fatal(err)
	}
	var parts []string
	for len(v) > 255 {
		parts = append(parts, `"`+v[:255]+`"`)
		v = v[255:]
	}
	parts = append(parts, `"`+v+`"`)
	return r, verdictsName + ". 30 IN TXT " + strings.Join(parts, " ")
}

// queryVerdicts is what the controller will do: QueryTXT, then health.DecodeTXT.
func queryVerdicts(q gslb.Querier, addr, name string) (*health.Record, error) {
	rrs, err := q.QueryTXT(context.Background(), addr, name)
	if err != nil {
		return nil, err
	}
	return health.DecodeTXT(rrs, "eu", nil)
}

func manyTXT(n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s. 30 IN TXT \"x%d\"", verdictsName, i)
	}
	return out
}

func TestQueryTXT_VerdictRecordStrictly(t *testing.T) {
	want, line := verdictRecord(t)
	good := zone(t, line, "verdicts-novote.gslb.test. 30 IN A 192.0.2.9")
	long := strings.Repeat("a", 255)
	tests := []struct {
		name       string
		handler    dns.HandlerFunc
		qname      string
		maxAnswers int
		want       *health.Record
		wantErr    error  // nil: no error
		wantReason string // substring of the error, if set
	}{
		{name: "well-behaved", handler: good, qname: verdictsName, want: &want},
		{name: "name case-insensitive, fully qualified", handler: good, qname: "Verdicts-App.GSLB.test.", want: &want},
		{name: "NXDOMAIN: not voting", handler: good, qname: "verdicts-gone.gslb.test", want: nil},
		{name: "NODATA: not voting", handler: good, qname: "verdicts-novote.gslb.test", want: nil},
		{name: "TXT of other names ignored", handler: tweak(good, func(_, m *dns.Msg) {
			m.Answer = append(m.Answer, rr(t, `other.gslb.test. 30 IN TXT "dpv1 geo=us"`))
		}), qname: verdictsName, want: &want},
		{name: "two TXT records", handler: zone(t, line, verdictsName+`. 30 IN TXT "dpv1 geo=eu"`),
			qname: verdictsName, wantErr: health.ErrBadRecord, wantReason: "2 TXT records"},
		{name: "garbage TXT", handler: zone(t, verdictsName+`. 30 IN TXT "hello world"`),
			qname: verdictsName, wantErr: health.ErrBadRecord},
		{name: "record of another geo tag", handler: zone(t, strings.Replace(line, "geo=eu", "geo=us", 1)),
			qname: verdictsName, wantErr: health.ErrBadRecord, wantReason: "written by geo tag"},
		{name: "wrong question name", handler: tweak(good, func(_, m *dns.Msg) {
			m.Question[0].Name = "verdicts-evil.gslb.test."
		}), qname: verdictsName, wantErr: gslb.ErrBadAnswer},
		{name: "wrong question type", handler: tweak(good, func(_, m *dns.Msg) {
			m.Question[0].Qtype = dns.TypeA
		}), qname: verdictsName, wantErr: gslb.ErrBadAnswer},
		{name: "wrong question class", handler: tweak(good, func(_, m *dns.Msg) {
			m.Question[0].Qclass = dns.ClassCHAOS
		}), qname: verdictsName, wantErr: gslb.ErrBadAnswer},
		{name: "not a response", handler: tweak(good, func(_, m *dns.Msg) { m.Response = false }),
			qname: verdictsName, wantErr: gslb.ErrBadAnswer},
		{name: "opcode", handler: tweak(good, func(_, m *dns.Msg) { m.Opcode = dns.OpcodeStatus }),
			qname: verdictsName, wantErr: gslb.ErrBadAnswer},
		{name: "SERVFAIL", handler: tweak(good, func(_, m *dns.Msg) { m.Rcode = dns.RcodeServerFailure; m.Answer = nil }),
			qname: verdictsName, wantErr: gslb.ErrBadAnswer},
		{name: "oversized: more TXT records than MaxAnswers", handler: zone(t, manyTXT(5)...), qname: verdictsName,
			maxAnswers: 4, wantErr: gslb.ErrBadAnswer, wantReason: "oversized"},
		{name: "oversized: more than MaxTXTBytes over TCP", handler: func(w dns.ResponseWriter, r *dns.Msg) {
			h := zone(t, verdictsName+`. 30 IN TXT`+strings.Repeat(` "`+long+`"`, 17))
			if !isTCP(w) {
				h = tweak(h, func(_, m *dns.Msg) { m.Truncated = true; m.Answer = nil })
			}
			h(w, r)
		}, qname: verdictsName, wantErr: gslb.ErrBadAnswer, wantReason: "over tcp: oversized"},
		{name: "wrong ID over TCP after truncation", handler: func(w dns.ResponseWriter, r *dns.Msg) {
			m := new(dns.Msg)
			m.SetReply(r)
			if isTCP(w) {
				m.Id = r.Id + 1
				m.Answer = []dns.RR{rr(t, line)}
			} else {
				m.Truncated = true
			}
			_ = w.WriteMsg(m)
		}, qname: verdictsName, wantErr: gslb.ErrBadAnswer},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			addr := startServer(t, tt.handler)
			got, err := queryVerdicts(gslb.Querier{Timeout: 2 * time.Second, MaxAnswers: tt.maxAnswers}, addr, tt.qname)
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) || !strings.Contains(err.Error(), tt.wantReason) {
					t.Fatalf("got %v, %v; want error %v with %q", got, err, tt.wantErr, tt.wantReason)
				}
				if errors.Is(err, gslb.ErrPeerTimeout) {
					t.Fatalf("error %v is also a timeout", err)
				}
				t.Logf("rejected: %v", err)
				return
			}
			if err != nil || !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("got %+v, %v; want %+v", got, err, tt.want)
			}
		})
	}
}

func TestQueryTXT_TruncatedOverUDPFallsBackToTCP(t *testing.T) {
	want, line := verdictRecord(t)
	full := zone(t, line)
	var udpQueries, tcpQueries, bufSize atomic.Int32
	addr := startServer(t, func(w dns.ResponseWriter, r *dns.Msg) {
		if opt := r.IsEdns0(); opt != nil {
			bufSize.Store(int32(opt.UDPSize()))
		}
		if isTCP(w) {
			tcpQueries.Add(1)
			full(w, r)
			return
		}
		udpQueries.Add(1)
		tweak(full, func(_, m *dns.Msg) { m.Truncated = true; m.Answer = nil })(w, r)
	})
	got, err := queryVerdicts(gslb.Querier{Timeout: 2 * time.Second}, addr, verdictsName)
	if err != nil || !reflect.DeepEqual(got, &want) {
		t.Fatalf("got %+v, %v; want %+v", got, err, want)
	}
	if udpQueries.Load() != 1 || tcpQueries.Load() != 1 || bufSize.Load() != 1232 {
		t.Fatalf("UDP %d, TCP %d queries, EDNS0 buffer %d; want 1, 1, 1232", udpQueries.Load(), tcpQueries.Load(), bufSize.Load())
	}
}

func TestQueryTXT_SilentAndWrongIDPeersTimeOut(t *testing.T) {
	_, line := verdictRecord(t)
	for name, addr := range map[string]string{
		"silent":   silentServer(t),
		"wrong ID": startServer(t, tweak(zone(t, line), func(req, m *dns.Msg) { m.Id = req.Id + 1 })),
	} {
		got, err := (gslb.Querier{Timeout: 300 * time.Millisecond}).QueryTXT(context.Background(), addr, verdictsName)
		if !errors.Is(err, gslb.ErrPeerTimeout) || got != nil {
			t.Errorf("%s peer: QueryTXT = %v, %v; want ErrPeerTimeout", name, got, err)
		}
	}
}

func TestQueryTXT_BadNameIsAnError(t *testing.T) {
	for _, name := range []string{"", ".", "a..b"} {
		if _, err := (gslb.Querier{}).QueryTXT(context.Background(), "127.0.0.1:1", name); err == nil {
			t.Errorf("QueryTXT(%q) passed", name)
		}
	}
}
