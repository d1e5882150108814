// Package partition cuts loopback traffic between addresses with iptables, for the tests of
// Gslb partition safety: each test cluster sends its peer queries and probes from its own
// loopback address (--gslb-source-address), so a rule by source and destination address cuts
// one link and leaves the others (../shared/design/partitions.md).
//
// It owns the rules it adds, and removes them when the test ends, on every exit path. It never
// adds a rule for an address outside 127.0.0.0/8 and ::1. It is for tests only.
package partition

import (
	"errors"
	"fmt"
	"net/netip"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
)

// comment marks every rule this package adds, so that a crashed test's rules can be found.
const comment = "dnsplane-test-partition"

// Available reports why iptables cannot cut loopback links here (not root, no iptables
// binary), nil when it can.
func Available() error {
	if os.Geteuid() != 0 {
		return errors.New("not root: iptables needs CAP_NET_ADMIN")
	}
	if _, err := exec.LookPath("iptables"); err != nil {
		return fmt.Errorf("no iptables binary: %w", err)
	}
	if out, err := exec.Command("iptables", "-w", "-L", "INPUT", "-n").CombinedOutput(); err != nil {
		return fmt.Errorf("iptables -L INPUT: %v: %s", err, strings.TrimSpace(string(out)))
	}
	return nil
}

// Require skips t when Available fails; under CI (CI=true), where the partition tests must
// run (.ci/run installs iptables and runs as root), it fails t instead.
func Require(t testing.TB) {
	t.Helper()
	if err := Available(); err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("partition tests need iptables as root under CI: %v", err)
		}
		t.Skipf("partition tests need iptables as root: %v", err)
	}
}

// Cut is a set of dropped links; Heal removes them. Safe for concurrent use.
type Cut struct {
	t     testing.TB
	mu    sync.Mutex
	rules [][]string
}

// New drops every packet from each of srcs to each of dsts (the INPUT chain, which loopback
// traffic crosses) until Heal or the end of t. One direction only: a symmetric cut lists each
// side in both. Every address must be a loopback one; the test fails otherwise, or when
// iptables refuses a rule.
func New(t testing.TB, srcs, dsts []netip.Addr) *Cut {
	t.Helper()
	c := &Cut{t: t}
	t.Cleanup(c.Heal)
	for _, s := range srcs {
		for _, d := range dsts {
			if !s.IsLoopback() || !d.IsLoopback() || s.Is4() != d.Is4() {
				t.Fatalf("partition: %s -> %s: only loopback addresses of one family may be cut", s, d)
			}
			rule := []string{"INPUT", "-s", s.String(), "-d", d.String(), "-m", "comment", "--comment", comment, "-j", "DROP"}
			cmd := "iptables"
			if s.Is6() {
				cmd = "ip6tables"
			}
			if out, err := exec.Command(cmd, append([]string{"-w", "-I"}, rule...)...).CombinedOutput(); err != nil {
				t.Fatalf("partition: %s -I %s: %v: %s", cmd, strings.Join(rule, " "), err, out)
			}
			c.mu.Lock()
			c.rules = append(c.rules, append([]string{cmd}, rule...))
			c.mu.Unlock()
		}
	}
	return c
}

// Heal removes every rule of the cut (again: nothing). A rule that cannot be removed fails the
// test, naming it, so that a leftover is never silent.
func (c *Cut) Heal() {
	c.mu.Lock()
	rules := c.rules
	c.rules = nil
	c.mu.Unlock()
	for _, r := range rules {
		if out, err := exec.Command(r[0], append([]string{"-w", "-D"}, r[1:]...)...).CombinedOutput(); err != nil {
			c.t.Errorf("partition: %s -D %s: %v: %s (remove it by hand)", r[0], strings.Join(r[1:], " "), err, out)
		}
	}
}

// Symmetric drops every packet between the addresses of a and those of b, both ways: New(a,
// b) and New(b, a) together, healed by one Heal.
func Symmetric(t testing.TB, a, b []netip.Addr) *Cut {
	t.Helper()
	c := New(t, a, b)
	back := New(t, b, a)
	c.mu.Lock()
	back.mu.Lock()
	c.rules = append(c.rules, back.rules...)
	back.rules = nil
	back.mu.Unlock()
	c.mu.Unlock()
	return c
}
