//go:build e2e

package e2e

// The stall kind scenarios: a stalled (not dead) leader, and one cluster's API server
// restarted. Both run in cluster eu, against the host's PowerDNS through a counting proxy
// (kindProxy), and end in an exact zone and a figure.
//
// Our kind clusters have one node each: its container runs the API server as well as both
// manager replicas, so pausing the node would stall the whole cluster, API server included, not
// a leader beside a live follower. The stalled leader is the leader's own container, frozen
// through containerd (`ctr tasks pause`, the cgroup freezer) inside the node: every thread of
// the manager stops at once, its TCP connections stay open, and it wakes with every timer
// expired, as a leader on a paused node or VM does.

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"

	dnsv1 "github.com/dnsplane/dnsplane/apis/v1alpha1"
	"github.com/dnsplane/dnsplane/internal/testing/answerloop"
)

// stallFor is how long the leader stays frozen: the scenario's length, not a bound.
const stallFor = 60 * time.Second

// nodeRun runs a command in cluster i's node container (E2E_KIND_NODES, E2E_KIND_ENGINE) and
// returns its output; a failure fails the test.
func nodeRun(t *testing.T, i int, args ...string) string {
	t.Helper()
	out, err := nodeTry(i, args...)
	if err != nil {
		t.Fatalf("in node %d: %s: %v\n%s", i, strings.Join(args, " "), err, out)
	}
	return out
}

func nodeTry(i int, args ...string) (string, error) {
	nodes, engine := splitList(os.Getenv("E2E_KIND_NODES")), os.Getenv("E2E_KIND_ENGINE")
	if i >= len(nodes) || engine == "" {
		return "", fmt.Errorf("E2E_KIND_NODES %q and E2E_KIND_ENGINE %q: want a node container per cluster and the engine (hack/e2e-kind.sh sets them)", nodes, engine)
	}
	cx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out, err := exec.CommandContext(cx, engine, append([]string{"exec", nodes[i]}, args...)...).CombinedOutput()
	return string(out), err
}

// managerContainer returns the containerd ID of pod's manager container, and its restart count.
func managerContainer(t *testing.T, c *cluster, pod string) (id, restarts string) {
	t.Helper()
	out := kubectl(t, c, "get", "pod", pod, "-o",
		`jsonpath={.status.containerStatuses[?(@.name=="manager")].containerID} {.status.containerStatuses[?(@.name=="manager")].restartCount}`)
	ref, restarts, _ := strings.Cut(strings.TrimSpace(out), " ")
	_, id, ok := strings.Cut(ref, "://")
	if !ok || id == "" {
		t.Fatalf("pod %s: no manager container ID in %q", pod, out)
	}
	return id, restarts
}

// kindNames is n DNSEndpoints r<from>..r<from+n-1> of zone in ns, each one A name at 192.0.2.<i+1>,
// and the wanted target of each name.
func kindNames(ns, zone string, from, n int, want map[string]string) []*dnsv1.DNSEndpoint {
	var eps []*dnsv1.DNSEndpoint
	for i := from; i < from+n; i++ {
		host, target := fmt.Sprintf("r%03d.%s", i, zone), fmt.Sprintf("192.0.2.%d", i+1)
		eps = append(eps, kindEndpoint(ns, fmt.Sprintf("r%03d", i), host, target))
		want[host+"."] = target
	}
	return eps
}

// moveAndAdd applies added, moves each of move to 198.51.100.<i+1>, records both in want, and
// returns the names they changed (FQDNs with the trailing dot).
func moveAndAdd(t *testing.T, c *cluster, move, added []*dnsv1.DNSEndpoint, want map[string]string) []string {
	t.Helper()
	var names []string
	for _, ep := range added {
		c.apply(t, ep)
		names = append(names, ep.Spec.Endpoints[0].DNSName+".")
	}
	for i, ep := range move {
		target := fmt.Sprintf("198.51.100.%d", i+1)
		update(t, c, ep, func(e *dnsv1.DNSEndpoint) { e.Spec.Endpoints[0].Targets = dnsv1.Targets{target} })
		want[ep.Spec.Endpoints[0].DNSName+"."] = target
		names = append(names, ep.Spec.Endpoints[0].DNSName+".")
	}
	return names
}

// zoneHolds checks an AXFR (axfrKind's lines) against want (name. → its one A target): every
// name with exactly its target, and no other A name r<NNN>.
func zoneHolds(lines []string, want map[string]string) error {
	got := map[string][]string{}
	for _, l := range lines {
		f := strings.Fields(l)
		if len(f) == 5 && f[3] == "A" && strings.HasPrefix(f[0], "r") {
			got[f[0]] = append(got[f[0]], f[4])
		}
	}
	var bad []string
	for name, target := range want {
		if ts := got[name]; len(ts) != 1 || ts[0] != target {
			bad = append(bad, fmt.Sprintf("%s %v (want %s)", name, ts, target))
		}
	}
	for name, ts := range got {
		if _, ok := want[name]; !ok {
			bad = append(bad, fmt.Sprintf("%s %v (not wanted)", name, ts))
		}
	}
	if len(bad) > 0 {
		slices.Sort(bad)
		return fmt.Errorf("%d names not as wanted: %s", len(bad), strings.Join(bad, "; "))
	}
	return nil
}

// onceEach fails unless writes (since's "key xN" lines, the zone apex's aside) name every key of
// want exactly once and nothing else.
func onceEach(t *testing.T, what, zone string, writes []string, want []string) {
	t.Helper()
	writes = slices.DeleteFunc(slices.Clone(writes), func(w string) bool { return strings.HasPrefix(w, zone+". ") })
	var exp []string
	for _, k := range want {
		exp = append(exp, k+" x1")
	}
	slices.Sort(exp)
	if !slices.Equal(writes, exp) {
		t.Errorf("%s: PowerDNS accepted %v, want each of %d record sets once: %v", what, writes, len(want), exp)
	}
}

// changedSets is the record-set writes of a change of names: each name's A set and its registry
// TXT set, both REPLACE, in the form kindProxy counts them.
func changedSets(t *testing.T, zone string, names []string) []string {
	t.Helper()
	var out []string
	for _, name := range names {
		out = append(out, strings.ToLower(name)+" A REPLACE")
	}
	// The registry record names are the zone's own (registry.Name): read them from the zone.
	lines := axfrKind(t, zone)
	for _, name := range names {
		short := strings.TrimSuffix(name, "."+zone+".")
		for _, l := range lines {
			f := strings.Fields(l)
			if len(f) >= 5 && f[3] == "TXT" && strings.HasPrefix(f[0], "dp-a-") && strings.Contains(f[0], "-"+short+".") {
				out = append(out, strings.ToLower(f[0])+" TXT REPLACE")
			}
		}
	}
	return out
}

// TestKindLeaderStalled: the leader's container is frozen for stallFor while DNSEndpoints are
// added and changed. The follower takes the Lease once it expires and publishes them all; the
// zone is exact. When the old leader wakes, with a Lease it lost long ago, it writes nothing
// (its writes could only be stale): PowerDNS accepts no write from the moment it resumes until
// both replicas are ready again, the zone does not change, and the Lease stays with the new
// leader. A change after that is written exactly once.
func TestKindLeaderStalled(t *testing.T) {
	kindOnly(t)
	onFailure(t)
	c := suite.clusters[0]
	const first, second, moved = 40, 20, 10
	ns, zone := kindRunName("kind-stall"), kindRunName("stall")+".kind.test"
	proxy := startKindProxy(t)
	kindZone(t, c, proxy, ns, zone, false)
	t.Cleanup(func() { deleteNamespace(t, c, ns) })
	want := map[string]string{}
	eps := kindNames(ns, zone, 0, first, want)
	for _, ep := range eps {
		c.apply(t, ep)
	}
	waitPublished(t, c, eps, 120*time.Second)
	waitReadyReplicas(t, c, 2, 180*time.Second)
	leader := leaderPod(t, c)
	cid, restartsBefore := managerContainer(t, c, leader)

	beforeStall := proxy.snapshot()
	stalled := time.Now()
	nodeRun(t, 0, "ctr", "-n", "k8s.io", "tasks", "pause", cid)
	resumed := false
	t.Cleanup(func() { // never leave a leader frozen for the scenarios after this one
		if !resumed {
			_, _ = nodeTry(0, "ctr", "-n", "k8s.io", "tasks", "resume", cid)
		}
	})
	// While it is frozen: 20 new names, and 10 names move.
	added := kindNames(ns, zone, first, second, want)
	changedNames := moveAndAdd(t, c, eps[:moved], added, want)
	newLeader := waitNewLeader(t, c, leader, "the follower takes the Lease of the frozen leader")
	takeover := time.Since(stalled)
	waitPublished(t, c, append(slices.Clone(eps), added...), 120*time.Second)
	eventually(t, 60*time.Second, "the zone holds every name at its wanted target", func() error { return zoneHolds(axfrKind(t, zone), want) })
	published := time.Since(stalled)
	if published > stallFor {
		t.Logf("the follower published everything %s after the stall began, after the %s stall", published.Round(100*time.Millisecond), stallFor)
	}
	time.Sleep(time.Until(stalled.Add(stallFor))) // the stall is the scenario, not a bound

	duringStall := since(beforeStall, proxy.snapshot())
	onceEach(t, "the writes during the stall", zone, duringStall, changedSets(t, zone, changedNames))
	zoneBefore := axfrKind(t, zone)
	atResume := proxy.snapshot()
	nodeRun(t, 0, "ctr", "-n", "k8s.io", "tasks", "resume", cid)
	resumed = true
	woke := time.Now()
	waitReadyReplicas(t, c, 2, 180*time.Second)
	ready := time.Since(woke)
	time.Sleep(10 * time.Second) // what the woken leader might still do, after it is ready again
	afterWake := since(atResume, proxy.snapshot())
	if len(afterWake) > 0 {
		t.Errorf("PowerDNS accepted writes after the frozen leader woke, with nothing left to write: %v", afterWake)
	}
	if err := zoneHolds(axfrKind(t, zone), want); err != nil {
		t.Errorf("after the old leader woke: %v", err)
	}
	if removed, addedLines := diff(zoneBefore, axfrKind(t, zone)); len(removed)+len(addedLines) > 0 {
		t.Errorf("the zone changed after the old leader woke: removed %v, added %v", removed, addedLines)
	}
	if holder := leaseHolder(t, c); holder != newLeader {
		t.Errorf("the Lease is held by %q after the old leader woke, want the new leader %s", holder, newLeader)
	}
	_, restartsAfter := managerContainer(t, c, leader)

	// One more change: written once, by the leader.
	last := eps[first-1]
	lastName := last.Spec.Endpoints[0].DNSName + "."
	atChange := proxy.snapshot()
	update(t, c, last, func(e *dnsv1.DNSEndpoint) { e.Spec.Endpoints[0].Targets = dnsv1.Targets{"198.51.100.99"} })
	want[lastName] = "198.51.100.99"
	waitPublished(t, c, []*dnsv1.DNSEndpoint{last}, 60*time.Second)
	eventually(t, 60*time.Second, "the change after the wake is served", func() error { return zoneHolds(axfrKind(t, zone), want) })
	onceEach(t, "the change after the wake", zone, since(atChange, proxy.snapshot()), changedSets(t, zone, []string{lastName}))

	t.Logf("leader %s frozen for %s (restarts %s before, %s after it woke) while %d names were added and %d moved: follower %s took the Lease %s after the freeze and had them all Published and served %s after it (%d record-set writes, each once); after the wake, %d writes, the zone unchanged, the Lease with %s; both replicas ready %s after the wake",
		leader, stallFor, restartsBefore, restartsAfter, second, moved, newLeader, takeover.Round(100*time.Millisecond),
		published.Round(100*time.Millisecond), len(duringStall), len(afterWake), newLeader, ready.Round(100*time.Millisecond))
}

// TestKindAPIServerRestarted: cluster eu's kube-apiserver is killed (SIGKILL, in its node; the
// kubelet starts it again) right after a change of 10 names and 10 new ones goes in, so that it
// restarts mid-publish. The managers lose their watches, status writes and Lease renewals until
// it is back. Then every object is Published for its generation, the zone is exact with each
// changed record set written once, and the embedded server's answers through the dns Service
// (a query every 100 ms, asked twice on a timeout, as a stub resolver does) are never wrong: a
// count of them, and of those that failed, is the figure.
func TestKindAPIServerRestarted(t *testing.T) {
	kindOnly(t)
	onFailure(t)
	onboard(t) // the cluster zone, for the name the dns Service answers
	c := suite.clusters[0]
	const first, changed, added = 30, 10, 10
	run := kindRunName("apirestart")
	ns, zone := "kind-"+run, run+".kind.test"
	proxy := startKindProxy(t)
	kindZone(t, c, proxy, ns, zone, false)
	t.Cleanup(func() { deleteNamespace(t, c, ns) })
	want := map[string]string{}
	eps := kindNames(ns, zone, 0, first, want)
	for _, ep := range eps {
		c.apply(t, ep)
	}
	served := kindEndpoint(clusterNS, run, run+"."+c.clusterZone(), "192.0.2.77")
	c.apply(t, served)
	t.Cleanup(func() { _ = c.C().Delete(ctx(t), served) })
	waitPublished(t, c, append(slices.Clone(eps), served), 120*time.Second)
	waitServed(t, 30*time.Second, c.dnsAddr, run+"."+c.clusterZone(), []string{"192.0.2.77"})
	waitReadyReplicas(t, c, 2, 180*time.Second)
	leader := leaderPod(t, c)
	loop := answerloop.Start(t, c.dnsAddr, []answerloop.Query{{Name: run + "." + c.clusterZone(), Type: dns.TypeA, Allowed: []string{"192.0.2.77"}}},
		answerloop.Options{Interval: 100 * time.Millisecond, Authoritative: true, Retries: 1})

	atChange := proxy.snapshot()
	more := kindNames(ns, zone, first, added, want)
	changedNames := moveAndAdd(t, c, eps[:changed], more, want)
	killed := time.Now()
	nodeRun(t, 0, "pkill", "-9", "-x", "kube-apiserver")
	var back time.Duration
	eventually(t, 180*time.Second, "the API server answers /readyz again", func() error {
		out, err := kindTry(c, os.Getenv("E2E_KIND_KUBECTL"), "get", "--raw", "/readyz", "--request-timeout=5s")
		if err != nil || strings.TrimSpace(out) != "ok" {
			return fmt.Errorf("readyz: %v %q", err, strings.TrimSpace(out))
		}
		back = time.Since(killed)
		return nil
	})
	all := append(slices.Clone(eps), more...)
	waitPublished(t, c, all, 180*time.Second)
	eventually(t, 60*time.Second, "the zone holds every name at its wanted target", func() error { return zoneHolds(axfrKind(t, zone), want) })
	converged := time.Since(killed)
	waitReadyReplicas(t, c, 2, 180*time.Second)
	loop.Stop()
	writes := since(atChange, proxy.snapshot())
	onceEach(t, "the writes of the change across the restart", zone, writes, changedSets(t, zone, changedNames))
	newLeader := leaderPod(t, c)
	t.Logf("kube-apiserver SIGKILLed mid-publish of %d changed and %d new names: /readyz again %s after; all Published and served exact %s after (%d record-set writes, each once); leader %s before, %s after; the dns Service meanwhile: %s",
		changed, added, back.Round(100*time.Millisecond), converged.Round(100*time.Millisecond), len(writes), leader, newLeader, loop)
	if n := loop.Counts()[answerloop.Wrong]; n > 0 {
		t.Errorf("the dns Service gave %d wrong answers across the API server restart: %v", n, loop.Examples())
	}
}
