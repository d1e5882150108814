//go:build e2e

package e2e

// The kind-only scenario of the embedded-DNS issue (issue 16): the dns Service answers every
// query through a leader-pod deletion under a steady load. It sorts before kind_test.go, so it
// runs first of the TestKind* scenarios, on a release both replicas of which are ready.

import (
	"errors"
	"fmt"
	"net"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/miekg/dns"

	dnsv1 "github.com/dnsplane/dnsplane/apis/v1alpha1"
)

// kindLoad sends A queries for names at a fixed total rate to addr and counts the answers by
// outcome. Each query goes out on its own UDP socket (a new source port, as a resolver does),
// so each is its own conntrack flow through the NodePort: kube-proxy routes it to a ready
// endpoint at the moment it is sent.
type kindLoad struct {
	mu                                  sync.Mutex
	sent, ok, timeouts, refused, servfl int
	otherRcode, wrong, otherErr         int
	lastFailure                         string
	firstFail, lastFail                 time.Time
	start, end                          time.Time
	wg                                  sync.WaitGroup
}

// kindLoadWorkers is how many queries may be in flight at once; each worker sends one query per
// workers/qps seconds, so a slow answer delays only its own worker.
const kindLoadWorkers = 50

// startKindLoad starts the load: qps queries per second in all, cycling over names, each answer
// checked against want[name] (the A targets, sorted) until stop is closed.
func startKindLoad(addr string, names []string, want map[string][]string, qps int, stop <-chan struct{}) *kindLoad {
	l := &kindLoad{start: time.Now()}
	interval := time.Duration(kindLoadWorkers) * time.Second / time.Duration(qps)
	for w := 0; w < kindLoadWorkers; w++ {
		l.wg.Add(1)
		go func() {
			defer l.wg.Done()
			next := l.start.Add(time.Duration(w) * interval / kindLoadWorkers)
			for k := w; ; k += kindLoadWorkers {
				select {
				case <-stop:
					return
				case <-time.After(time.Until(next)):
				}
				name := names[k%len(names)]
				l.record(name, kindLoadQuery(addr, name, want[name]))
				next = next.Add(interval)
			}
		}()
	}
	return l
}

// wait waits for the workers (after stop is closed) and notes the end of the load.
func (l *kindLoad) wait() {
	l.wg.Wait()
	l.end = time.Now()
}

// kindLoadOutcome classifies one answer: "" for the right one, else timeout, REFUSED, SERVFAIL,
// rcode (another rcode), wrong (NOERROR with other targets, or not authoritative), error.
type kindLoadOutcome struct {
	kind, detail string
}

func kindLoadQuery(addr, name string, want []string) kindLoadOutcome {
	m := new(dns.Msg)
	m.SetQuestion(dns.Fqdn(name), dns.TypeA)
	m.RecursionDesired = false
	r, _, err := (&dns.Client{Timeout: 2 * time.Second}).Exchange(m, addr)
	var ne net.Error
	switch {
	case errors.As(err, &ne) && ne.Timeout():
		return kindLoadOutcome{"timeout", err.Error()}
	case err != nil:
		return kindLoadOutcome{"error", err.Error()}
	case r.Rcode == dns.RcodeRefused:
		return kindLoadOutcome{"REFUSED", name}
	case r.Rcode == dns.RcodeServerFailure:
		return kindLoadOutcome{"SERVFAIL", name}
	case r.Rcode != dns.RcodeSuccess:
		return kindLoadOutcome{"rcode", dns.RcodeToString[r.Rcode] + " " + name}
	}
	var got []string
	for _, rr := range r.Answer {
		if a, ok := rr.(*dns.A); ok {
			got = append(got, a.A.String())
		}
	}
	slices.Sort(got)
	if !r.Authoritative || !slices.Equal(got, want) {
		return kindLoadOutcome{"wrong", fmt.Sprintf("%s: %v (aa=%v), want %v", name, got, r.Authoritative, want)}
	}
	return kindLoadOutcome{}
}

func (l *kindLoad) record(name string, o kindLoadOutcome) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.sent++
	counter := map[string]*int{"": &l.ok, "timeout": &l.timeouts, "REFUSED": &l.refused, "SERVFAIL": &l.servfl,
		"rcode": &l.otherRcode, "wrong": &l.wrong, "error": &l.otherErr}[o.kind]
	*counter++
	if o.kind != "" {
		now := time.Now()
		l.lastFailure = fmt.Sprintf("%s at %s: %s", o.kind, now.UTC().Format(time.RFC3339Nano), o.detail)
		if l.firstFail.IsZero() {
			l.firstFail = now
		}
		l.lastFail = now
	}
}

func (l *kindLoad) failed() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.sent - l.ok
}

// String gives the counts and the rate achieved (queries sent per second of load).
func (l *kindLoad) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	secs := l.end.Sub(l.start).Seconds()
	return fmt.Sprintf("%d queries in %.1f s (%.0f qps): %d answered right, %d failed (timeouts %d, REFUSED %d, SERVFAIL %d, other rcodes %d, wrong answers %d, other errors %d)",
		l.sent, secs, float64(l.sent)/secs, l.ok, l.sent-l.ok, l.timeouts, l.refused, l.servfl, l.otherRcode, l.wrong, l.otherErr)
}

// readyReplicas returns the pods behind the release's dns Service with a ready endpoint.
func readyReplicas(t *testing.T, c *cluster) []string {
	t.Helper()
	out := kubectl(t, c, "get", "endpointslices", "-l", "kubernetes.io/service-name="+os.Getenv("E2E_KIND_RELEASE")+"-dns",
		"-o", `jsonpath={range .items[*].endpoints[?(@.conditions.ready==true)]}{.targetRef.name}{" "}{end}`)
	pods := strings.Fields(out)
	slices.Sort(pods)
	return slices.Compact(pods)
}

func waitReadyReplicas(t *testing.T, c *cluster, n int, timeout time.Duration) {
	t.Helper()
	eventually(t, timeout, fmt.Sprintf("%d ready replicas behind the dns Service", n), func() error {
		if got := readyReplicas(t, c); len(got) != n {
			return fmt.Errorf("ready: %v", got)
		}
		return nil
	})
}

// kindLoadNames publishes n A records under cluster c's base domain (its embedded server) and
// waits until the dns Service answers each; it returns the names and their targets.
func kindLoadNames(t *testing.T, c *cluster, run string, n int) ([]string, map[string][]string) {
	t.Helper()
	names, want := make([]string, n), map[string][]string{}
	var eps []*dnsv1.DNSEndpoint
	for i := range names {
		names[i] = fmt.Sprintf("q%02d-%s.%s", i, run, c.clusterZone())
		want[names[i]] = []string{fmt.Sprintf("198.51.100.%d", i+1)}
		ep := kindEndpoint(clusterNS, fmt.Sprintf("%s-q%02d", run, i), names[i], want[names[i]][0])
		eps = append(eps, ep)
		c.apply(t, ep)
	}
	t.Cleanup(func() {
		for _, ep := range eps {
			_ = c.C().Delete(ctx(t), ep)
		}
	})
	waitPublished(t, c, eps, 90*time.Second)
	for _, name := range names {
		waitServed(t, 30*time.Second, c.dnsAddr, name, want[name])
	}
	return names, want
}

// TestKindLeaderPodDeletedUnderQueryLoad: 20 records on cluster 1's embedded server are queried
// through the dns Service's NodePort from the host at a steady 500 qps while the leader's pod is
// deleted the normal way (kubectl delete pod: the chart's 5 s preStop sleep keeps it answering
// while it leaves the Service's endpoints). The load goes on until the Deployment's replacement
// pod is ready behind the Service too. Not one query may fail (timeout, REFUSED, SERVFAIL,
// another rcode or a wrong answer); and once the follower leads, a record published after the
// deletion is answered. Logged: the counts, the qps achieved, the time from the deletion to
// the follower's Lease and to the new record answered. Forced deletion (--grace-period=0
// --force) is not tested: the pod stops at once while kube-proxy still sends it new flows for
// up to its sync period, so queries time out (docs/runbooks.md says so).
func TestKindLeaderPodDeletedUnderQueryLoad(t *testing.T) {
	kindOnly(t)
	onFailure(t)
	onboard(t)
	c := suite.clusters[0]
	const qps = 500
	run := kindRunName("load")
	names, want := kindLoadNames(t, c, run, 20)
	waitReadyReplicas(t, c, 2, 180*time.Second)
	leader := leaderPod(t, c)

	stop := make(chan struct{})
	load := startKindLoad(c.dnsAddr, names, want, qps, stop)
	stopped := false
	defer func() {
		if !stopped {
			close(stop)
			load.wait()
		}
	}()
	time.Sleep(3 * time.Second) // load before the deletion: a baseline, not an assertion
	deleted := time.Now()
	kubectl(t, c, "delete", "pod", leader, "--wait=false")
	var newLeader string
	eventually(t, 120*time.Second, "the follower takes the Lease", func() error {
		if newLeader = leaderPod(t, c); newLeader == leader {
			return fmt.Errorf("the Lease is still held by the deleted pod %s", leader)
		}
		return nil
	})
	takeover := time.Since(deleted)
	fresh := kindEndpoint(clusterNS, run+"-new", "new-"+run+"."+c.clusterZone(), "198.51.100.200")
	c.apply(t, fresh)
	t.Cleanup(func() { _ = c.C().Delete(ctx(t), fresh) })
	waitServed(t, 60*time.Second, c.dnsAddr, "new-"+run+"."+c.clusterZone(), []string{"198.51.100.200"})
	answeredNew := time.Since(deleted)
	kubectl(t, c, "wait", "--for=delete", "pod/"+leader, "--timeout=120s")
	gone := time.Since(deleted)
	waitReadyReplicas(t, c, 2, 180*time.Second)
	replaced := time.Since(deleted)
	time.Sleep(3 * time.Second) // load after the replacement joined the Service
	close(stop)
	load.wait()
	stopped = true
	t.Logf("dns Service %s under load through the deletion of leader pod %s: %s", c.dnsAddr, leader, load)
	t.Logf("after the deletion: %s took the Lease in %s; a new record answered through the Service in %s; the old pod gone in %s; the replacement ready behind the Service in %s (now %v)",
		newLeader, takeover.Round(100*time.Millisecond), answeredNew.Round(100*time.Millisecond), gone.Round(100*time.Millisecond),
		replaced.Round(100*time.Millisecond), readyReplicas(t, c))
	if n := load.failed(); n > 0 {
		t.Errorf("the dns Service failed %d queries through the leader pod's deletion, from %s to %s after it (last: %s)",
			n, load.firstFail.Sub(deleted).Round(100*time.Millisecond), load.lastFail.Sub(deleted).Round(100*time.Millisecond), load.lastFailure)
	}
}
