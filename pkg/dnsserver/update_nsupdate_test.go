package dnsserver

import (
	"context"
	"fmt"
	"net"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/dnsplane/dnsplane/internal/testing/hackrun"
	"github.com/dnsplane/dnsplane/pkg/dnswire"
)

// nsupdate runs BIND's nsupdate with key (-y alg:name:secret) and the given commands against
// addr, and returns its combined output and error.
func nsupdate(t *testing.T, addr string, key dnswire.TSIGKey, tcp bool, commands ...string) (string, error) {
	t.Helper()
	hackrun.Need(t, "bind9-dnsutils", "nsupdate")
	host, port, _ := net.SplitHostPort(addr)
	script := fmt.Sprintf("server %s %s\n%s\nsend\n", host, port, strings.Join(commands, "\n"))
	args := []string{"-y", strings.TrimSuffix(key.Algorithm, ".") + ":" + key.Name + ":" + key.Secret}
	if tcp {
		args = append(args, "-v")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "nsupdate", args...)
	cmd.Stdin = strings.NewReader(script)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// TestUpdate_NsupdateReadsTheTSIGErrors: BIND's nsupdate, over UDP and TCP, gets the handler's
// answer with its key, verified, and reads the server's TSIG error with another secret (BADSIG)
// or an unknown key (BADKEY) from the TSIG RR of the NOTAUTH, whose time signed it accepts.
func TestUpdate_NsupdateReadsTheTSIGErrors(t *testing.T) {
	key := dnswire.TSIGKey{Name: "acme.", Algorithm: dns.HmacSHA256, Secret: testSecret}
	h := &recordingUpdates{key: key, rcode: dns.RcodeSuccess}
	srv := startServer(t, exampleStore(t, ""), ServerOptions{Updates: h})
	add := []string{"zone example.com", `update add _acme-challenge.example.com 60 TXT "tok"`}
	for _, tcp := range []bool{false, true} {
		if out, err := nsupdate(t, srv.Addr(), key, tcp, add...); err != nil {
			t.Fatalf("tcp %v, the key: %v\n%s", tcp, err, out)
		}
		for name, tc := range map[string]struct {
			key  dnswire.TSIGKey
			want string
		}{
			"another secret": {dnswire.TSIGKey{Name: "acme.", Algorithm: dns.HmacSHA256, Secret: otherSecret}, "BADSIG"},
			"unknown key":    {dnswire.TSIGKey{Name: "other.", Algorithm: dns.HmacSHA256, Secret: testSecret}, "BADKEY"},
		} {
			out, err := nsupdate(t, srv.Addr(), tc.key, tcp, add...)
			if err == nil || !strings.Contains(out, "NOTAUTH("+tc.want+")") || strings.Contains(out, "clocks are unsynchronized") {
				t.Errorf("tcp %v, %s: nsupdate %v:\n%s\nwant a failure naming %s", tcp, name, err, out, tc.want)
			}
		}
	}
	if got := h.handed(); len(got) != 2 {
		t.Fatalf("the handler was handed %d UPDATEs, want the 2 signed with the key", len(got))
	}
}
