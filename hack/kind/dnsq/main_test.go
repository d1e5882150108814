package main

import (
	"net"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"
)

// serve starts a real DNS server on loopback (UDP and TCP on one port) that answers
// www.example.test A 192.0.2.1 and NXDOMAIN for everything else.
func serve(t *testing.T) string {
	t.Helper()
	h := dns.HandlerFunc(func(w dns.ResponseWriter, r *dns.Msg) {
		m := new(dns.Msg)
		m.SetReply(r)
		if r.Question[0].Name == "www.example.test." && r.Question[0].Qtype == dns.TypeA {
			rr, _ := dns.NewRR("www.example.test. 60 IN A 192.0.2.1")
			m.Answer = append(m.Answer, rr)
		} else {
			m.Rcode = dns.RcodeNameError
		}
		_ = w.WriteMsg(m)
	})
	pc, ln := listenBoth(t)
	for _, s := range []*dns.Server{{PacketConn: pc, Handler: h}, {Listener: ln, Handler: h}} {
		go func() { _ = s.ActivateAndServe() }()
		t.Cleanup(func() { _ = s.Shutdown() })
	}
	return pc.LocalAddr().String()
}

// listenBoth binds UDP on a free loopback port and TCP on the same port. The UDP port being free
// says nothing of TCP's (another test's connection may hold it), so it tries new ports a few times.
func listenBoth(t *testing.T) (net.PacketConn, net.Listener) {
	t.Helper()
	var lastErr error
	for range 20 {
		pc, err := net.ListenPacket("udp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		ln, err := net.Listen("tcp", pc.LocalAddr().String())
		if err == nil {
			return pc, ln
		}
		_ = pc.Close()
		lastErr = err
	}
	t.Fatalf("no loopback port free for both UDP and TCP: %v", lastErr)
	return nil, nil
}

func TestRun(t *testing.T) {
	addr := serve(t)
	for _, tc := range []struct {
		name, qname, want, wantErr string
		tcp                        bool
	}{
		{name: "answer over UDP", qname: "www.example.test", want: "www.example.test.\t60\tIN\tA\t192.0.2.1\n"},
		{name: "answer over TCP", qname: "www.example.test", tcp: true, want: "www.example.test.\t60\tIN\tA\t192.0.2.1\n"},
		{name: "NXDOMAIN is an error", qname: "nope.example.test", wantErr: "NXDOMAIN"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out strings.Builder
			err := run(&out, addr, tc.qname, dns.TypeA, tc.tcp, 5*time.Second)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err = %v, want one naming %s", err, tc.wantErr)
				}
				return
			}
			if err != nil || out.String() != tc.want {
				t.Fatalf("run = %q, %v; want %q", out.String(), err, tc.want)
			}
		})
	}
}
