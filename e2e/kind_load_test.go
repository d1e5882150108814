//go:build e2e

package e2e

// The kind-only scenario of the embedded DNS server: the dns Service answers every
// query through a leader-pod deletion under a steady load. It sorts before kind_test.go, so it
// runs before the scenarios that kill pods, upgrade and uninstall, on a release both replicas of
// which are ready (only kind_geo_test.go's and kind_health_test.go's run before it; the latter
// deletes a leader pod and waits until both replicas are ready again).

import (
	"fmt"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"

	dnsv1 "github.com/dnsplane/dnsplane/apis/v1alpha1"
	"github.com/dnsplane/dnsplane/internal/testing/answerloop"
)

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
// pod is ready behind the Service too. Not one query may fail (timeout after one retry,
// REFUSED, SERVFAIL, another rcode or a wrong answer); and once the follower leads, a record published after the
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

	var qs []answerloop.Query
	for _, name := range names {
		qs = append(qs, answerloop.Query{Name: name, Type: dns.TypeA, Allowed: []string{strings.Join(want[name], ",")}})
	}
	// A new UDP socket per query (a new source port, as a resolver's): each query is its own
	// conntrack flow through the NodePort, routed to an endpoint ready at the moment it is sent.
	// A query that times out is asked once more, as a stub resolver does (resolv.conf's
	// attempts:2): a reply in flight when kube-proxy deletes the stopping pod's UDP conntrack
	// entries is lost (docs/design.md, "Leaving the dns Service"). Such retries are logged.
	load := answerloop.Start(t, c.dnsAddr, qs, answerloop.Options{Rate: qps, Authoritative: true, Retries: 1})
	time.Sleep(3 * time.Second) // load before the deletion: a baseline, not an assertion
	deleted := time.Now()
	kubectl(t, c, "delete", "pod", leader, "--wait=false")
	newLeader := waitNewLeader(t, c, leader, "the follower takes the Lease of the deleted pod")
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
	load.Stop()
	t.Logf("dns Service %s under load through the deletion of leader pod %s: %s", c.dnsAddr, leader, load)
	t.Logf("after the deletion: %s took the Lease in %s; a new record answered through the Service in %s; the old pod gone in %s; the replacement ready behind the Service in %s (now %v)",
		newLeader, takeover.Round(100*time.Millisecond), answeredNew.Round(100*time.Millisecond), gone.Round(100*time.Millisecond),
		replaced.Round(100*time.Millisecond), readyReplicas(t, c))
	if n := load.Failures.Load(); n > 0 {
		first, last := load.Failed()
		t.Errorf("the dns Service failed %d queries through the leader pod's deletion, from %s to %s after it: %v",
			n, first.Sub(deleted).Round(100*time.Millisecond), last.Sub(deleted).Round(100*time.Millisecond), load.Examples())
	}
}
