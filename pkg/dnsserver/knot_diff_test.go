package dnsserver

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/dnsplane/dnsplane/internal/testing/hackrun"
	"github.com/dnsplane/dnsplane/internal/testing/ports"
	"github.com/dnsplane/dnsplane/internal/testing/secondarytest"
	"github.com/dnsplane/dnsplane/internal/testing/testrun"
)

// knotAddr is the loopback address Knot listens and transfers from (BIND and NSD use
// secondarytest's).
const knotAddr = "127.0.0.23"

// knotd returns the path of knotd, or "" when Knot is not installed.
func knotd() string {
	if p, err := exec.LookPath("knotd"); err == nil {
		return p
	}
	if _, err := os.Stat("/usr/sbin/knotd"); err == nil {
		return "/usr/sbin/knotd"
	}
	return ""
}

// knotConf is a minimal knotd configuration: a secondary of primary (host@port) for zone,
// listening on addr@port, everything under dir, no control socket; loopback clients may NOTIFY
// it and transfer the zone from it (SameZone compares the zone by AXFR).
const knotConf = `server:
    rundir: "%[1]s"
    pidfile: "%[1]s/knot.pid"
    listen: %[2]s@%[3]d
log:
  - target: "%[1]s/knot.log"
    any: info
database:
    storage: "%[1]s"
remote:
  - id: primary
    address: %[4]s
    via: %[2]s
acl:
  - id: loopback
    address: 127.0.0.0/8
    action: [notify, transfer]
template:
  - id: default
    storage: "%[1]s"
zone:
  - domain: %[5]s
    master: primary
    acl: loopback
`

// startKnot runs knotd as a secondary of primary for zone on a free port of knotAddr, until the
// test ends (SIGTERM to its PID, SIGKILL after 10 s), and returns its address.
func startKnot(t *testing.T, bin, primary, zone string) string {
	t.Helper()
	dir := t.TempDir()
	port := ports.TCPUDP(t, knotAddr)
	host, pport, err := net.SplitHostPort(primary)
	if err != nil {
		t.Fatal(err)
	}
	conf := filepath.Join(dir, "knot.conf")
	text := fmt.Sprintf(knotConf, dir, knotAddr, port, host+"@"+pport, zone)
	if err := os.WriteFile(conf, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	knot := testrun.Start(t, exec.Command(bin, "-c", conf))
	addr := net.JoinHostPort(knotAddr, strconv.Itoa(port))
	testrun.Eventually(t, 15*time.Second, "knotd answers on "+addr, func() error {
		if err := knot.Exited(); err != nil {
			log, _ := os.ReadFile(filepath.Join(dir, "knot.log"))
			return fmt.Errorf("knotd %w%s", err, log)
		}
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		conn, err := (&net.Dialer{}).DialContext(ctx, "tcp", addr)
		if err != nil {
			return err
		}
		return conn.Close()
	})
	return addr
}

// knotAllowed are the differences from Knot that the RFCs allow: Knot's own, then NSD's table
// (where Knot behaves as NSD does; its apex NS entry never applies, Knot adds no NS to positive
// answers).
var knotAllowed = append([]allowance{
	{"RRSIG and NSEC at a CNAME", "Knot answers an RRSIG or NSEC query at a CNAME from the name's own " +
		"records (RFC 4035 §2.5 lets them sit beside a CNAME): NODATA in an unsigned zone; the embedded " +
		"server, as NSD, answers with the CNAME, as for every type but CNAME and ANY (RFC 1034 §3.6.2)",
		func(p probe, emb, ref *answerView) bool {
			if p.qtype != dns.TypeRRSIG && p.qtype != dns.TypeNSEC || len(ref.answer) != 0 || len(emb.answer) == 0 ||
				!strings.Contains(emb.answer[0], "\tcname\t") || ref.rcode != dns.RcodeSuccess {
				return false
			}
			// The rcode is that of the chain's last name (RFC 6604 §3): NXDOMAIN at a dangling CNAME.
			ref.rcode, ref.answer, ref.ns, ref.extra = emb.rcode, emb.answer, emb.ns, emb.extra
			return true
		}},
	{"glue as additional data of an answer", "Knot adds the addresses of an MX or NS target below a " +
		"delegation (glue) to the additional section of an answer; the embedded server, as NSD, adds " +
		"the zone's authoritative addresses only (glue is not data of the zone, RFC 1034 §4.2.1, and " +
		"additional data is optional, RFC 2181 §9)",
		func(_ probe, emb, ref *answerView) bool {
			if referralCut(emb.ns) != "" {
				return false // a referral's sibling glue is compared
			}
			below := func(rr string) bool {
				_, cut := findCutOf(strings.Fields(rr)[0])
				return cut
			}
			extra := slices.DeleteFunc(slices.Clone(ref.extra), below)
			if len(extra) == len(ref.extra) || !slices.Equal(extra, emb.extra) {
				return false
			}
			ref.extra = extra
			return true
		}},
}, nsdAllowed...)

// findCutOf returns the delegation of diffRecords that name is at or below, if any.
func findCutOf(name string) (string, bool) {
	for _, l := range diffRecords {
		f := strings.Fields(l)
		if f[3] == "NS" && f[0] != diffZone && dns.IsSubDomain(f[0], name) {
			return f[0], true
		}
	}
	return "", false
}

// TestKnot_AnswersLikeARealKnot replays the queries of TestNSD_AnswersLikeARealNSD's corpus
// against the embedded server and Knot 3, a secondary of it, and compares the answers.
func TestKnot_AnswersLikeARealKnot(t *testing.T) {
	hackrun.Need(t, "knot", "knotd")
	bin := knotd()
	srv := startServer(t, diffStore(t), ServerOptions{})
	knot := &secondarytest.Server{Name: "Knot", Addr: startKnot(t, bin, srv.Addr(), diffZone), Source: knotAddr}
	secondarytest.SameZone(t, 60*time.Second, srv.Addr(), diffZone, knot)
	// The odd packets are NSD's comparison only: Knot drops most requests it cannot parse and
	// answers the others in its own ways, none of which the items compared here are about.
	compareAnswers(t, srv, "Knot", knot.Addr, knotAllowed, false)
}
