package dnstest

import (
	"testing"
	"time"

	"github.com/miekg/dns"
)

// AskTimeout is how long Ask and Exchange wait for one answer.
const AskTimeout = 2 * time.Second

// Exchange asks addr (host:port) name qtype once over UDP, within AskTimeout, and returns the
// answer or the exchange's error.
func Exchange(addr, name string, qtype uint16) (*dns.Msg, error) {
	m := new(dns.Msg)
	m.SetQuestion(dns.Fqdn(name), qtype)
	r, _, err := (&dns.Client{Timeout: AskTimeout}).Exchange(m, addr)
	return r, err
}

// Ask is Exchange that fails the test, naming name and addr, when no answer comes.
func Ask(t testing.TB, addr, name string, qtype uint16) *dns.Msg {
	t.Helper()
	r, err := Exchange(addr, name, qtype)
	if err != nil {
		t.Fatalf("query %s at %s: %v", name, addr, err)
	}
	return r
}
