//go:build e2e

package e2e

// The kind scenarios of Gslb health checks (docs/design.md, "Health and partitions") on
// three kind clusters installed from the chart, with real HTTP backends and real partitions
// inside the kind network that hack/e2e-kind.sh made. Each cluster runs statusd
// (hack/kind/statusd, in the dnsq image) behind a NodePort on its node's kind-network address;
// that address is the cluster's Gslb target (the load-balancer address of a selector-less
// Service, with a hand-written Ready EndpointSlice, so readiness stays up whatever the probe path
// answers). The managers probe every node's statusd across the kind network and exchange their
// verdicts over the dns Services' NodePorts, as they exchange localtargets.
//
// A partition drops, inside a node container, every packet that arrives from another node's
// address: `iptables -t raw -I PREROUTING -s <other node> -j DROP`, on both sides. The raw
// table's PREROUTING comes before kube-proxy's DNAT, so it cuts the NodePort traffic (peer
// queries on the dns NodePort, probes on statusd's) that the INPUT chain never sees: a packet to
// a NodePort is DNATed to a Pod address and crosses FORWARD. The test host's own queries come
// from the kind network's gateway and are never cut. The rules carry a comment, are deleted on
// every exit path (t.Cleanup), and rules a killed run left behind are deleted at the start.
//
//	E2E_KIND_NODES   the node containers, one per cluster in E2E_KUBECONFIGS' order
//	E2E_KIND_ENGINE  the engine that runs them (podman or docker)

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/netip"
	"os"
	"os/exec"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/miekg/dns"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	dnsv1 "github.com/dnsplane/dnsplane/apis/v1alpha1"
	"github.com/dnsplane/dnsplane/internal/testing/answerloop"
	"github.com/dnsplane/dnsplane/internal/testing/testrun"
	"github.com/dnsplane/dnsplane/pkg/gslb/health"
)

const (
	// kindToolsImage is the dnsq image (hack/kind/lib.sh), which also holds /statusd.
	kindToolsImage = "dnsplane.local/dnsq:dev"
	// statusdNodePort is where statusd answers on every node, the port the Gslb probes.
	statusdNodePort = 30080
	// partitionComment marks every iptables rule the health scenarios add in a node.
	partitionComment = "dnsplane-test-partition"
	// The health check of the scenarios: a target is down at one cluster after 2 failed probes
	// 1 s apart, so out of the answers within interval × failureThreshold + interval = 3 s
	// (measured and logged, never asserted).
	hcInterval, hcFailures = 1, 2
	// hcPartition is how long the partition between two clusters lasts under the query loops.
	hcPartition = 60 * time.Second
)

// hcCluster is one cluster of the health scenarios: its node container and the node's address
// on the kind network (its dns NodePort's, its statusd's, its Gslb target).
type hcCluster struct {
	*cluster
	node string
	ip   netip.Addr
}

// hcEnv is the scenarios' shared state: the clusters, the namespace and the Gslb host.
type hcEnv struct {
	all        []*hcCluster
	eu, us, ap *hcCluster
	ns, host   string
	engine     string
}

func (e *hcEnv) gslb() *dnsv1.Gslb {
	return &dnsv1.Gslb{ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: "app"}}
}

// TestKindGslbHealth runs the health rules (docs/design.md, "Health and partitions") on kind,
// one subtest each, in order; each starts from the answer the last one converged to: primary
// eu's target everywhere. Three clusters and no witness: n = 3, a target is Down on 2 fresh
// Down verdicts of members other than its owner, and a cluster that hears 1 of 3 is isolated.
//   - every cluster probes every target, counts 3 members (quorum 2) and hears all of them;
//   - eu's statusd answers 503 at /healthz while its endpoint stays Ready: us and ap call it
//     Down (2 of 3; eu's own Down is shown, not counted), so its target leaves every cluster's
//     answer (failover to us and ap); the time at each cluster is logged against
//     interval × failureThreshold + interval;
//   - eu and us are cut from each other for 60 s under a query loop at every cluster (10
//     queries a second each): each still hears 2 of 3 (not isolated) and its own Down on the
//     other's target is 1 of 3, so no answer fails over from either side; the cut heals and
//     every cluster converges;
//   - us is cut from both peers: it hears 1 of 3, becomes Isolated and keeps the last agreed
//     answer (never empty) through the hold; with the hold lowered to 0 it keeps holding
//     (afterIsolationHold defaults to Hold); with OwnProbes it decides by its own probes (only
//     its own target is up: it answers that, still never empty); the cut heals and every
//     cluster converges to one answer;
//   - us is cut from both peers again and its leader pod is deleted: the follower that takes
//     the Lease starts with no memory, restores the membership, the silent peers' targets and
//     the agreed decisions from status before its first answer, and holds eu's target; a query
//     loop at every cluster across the deletion sees only eu's target, never empty.
//
// A dual-stack target down on IPv4 only is tested on three local clusters instead
// (controllers/gslb_dualstack_test.go): the kind clusters' Pod network is IPv4 only, so the
// managers, which probe from their Pods, abstain on every IPv6 target (docs/reliability.md,
// "On kind: Gslb health under partitions").
func TestKindGslbHealth(t *testing.T) {
	kindOnly(t)
	onFailure(t)
	e := setupKindHealth(t)
	primary := []string{e.eu.ip.String()}
	t.Run("every cluster probes every target across the kind network", func(t *testing.T) { e.probeEverything(t, primary) })
	t.Run("a Ready backend that answers 503 leaves every cluster's answer by quorum", func(t *testing.T) { e.backend503(t, primary) })
	t.Run("a partition between eu and us for 60 s fails over from neither side", func(t *testing.T) { e.twoWayCut(t, primary) })
	t.Run("an isolated cluster keeps the last agreed answer, never empty, then its own probes", func(t *testing.T) { e.isolated(t, primary) })
	t.Run("a manager pod deleted while its cluster is isolated keeps the last agreed answer", func(t *testing.T) {
		e.leaderDeletedWhileIsolated(t, primary)
	})
}

// probeEverything: every cluster serves the primary, has its own and both peers' Up verdicts on
// the 3 targets, and counts 3 members, all heard, quorum 2.
func (e *hcEnv) probeEverything(t *testing.T, primary []string) {
	for _, c := range e.all {
		waitServed(t, testrun.HangTimeout, c.dnsAddr, e.host, primary)
	}
	took := e.untilAll(t, "every target Up, probed here and by both peers; 3 members heard", e.all, func(c *hcCluster) error {
		if err := e.everyVerdictUp(c); err != nil {
			return err
		}
		return e.membership(c, 3)
	})
	r, err := query(e.us.dnsAddr, "verdicts-"+e.host, dns.TypeTXT)
	if err != nil || len(r.Answer) != 1 {
		t.Fatalf("us's verdict record verdicts-%s: %v %v", e.host, r, err)
	}
	txt, ok := r.Answer[0].(*dns.TXT)
	if !ok {
		t.Fatalf("us's verdict record verdicts-%s: %s", e.host, r.Answer[0])
	}
	t.Logf("every cluster has its own and both peers' Up verdicts on the 3 targets and hears 3 of 3 members (%s); us publishes %q",
		fmtFigures(took), strings.Join(txt.Txt, ""))
}

// backend503: eu's statusd answers 503 while its endpoint stays Ready; us's and ap's Down
// verdicts are 2 of 3 members (eu's own is not counted): its target leaves every answer.
func (e *hcEnv) backend503(t *testing.T, primary []string) {
	eu, us, ap := e.eu, e.us, e.ap
	bound := time.Duration(hcInterval*hcFailures+hcInterval) * time.Second
	rest := sortedCopy([]string{us.ip.String(), ap.ip.String()})
	setStatus(t, eu, http.StatusServiceUnavailable)
	took := e.untilAll(t, "eu's target out of the answer", e.all, func(c *hcCluster) error {
		return answerIs(c, e.host, rest)
	})
	t.Logf("statusd 503 at eu's target (its endpoint Ready) -> out of each cluster's answer (failover to us+ap) after: %s; interval × failureThreshold + interval = %s",
		fmtFigures(took), bound)
	// The answer changes as soon as the decision does; status.targets is written by the
	// same reconcile, after it: it follows within a Gslb interval.
	took = e.untilAll(t, "every cluster's status says eu's target is Down by quorum", e.all, func(c *hcCluster) error {
		ts, err := e.target(c, eu.ip)
		if err != nil {
			return err
		}
		if ts.Decision != dnsv1.VerdictDown || ts.Reason != dnsv1.TargetReasonQuorumDown || ts.Agreed != dnsv1.VerdictDown || ts.Served ||
			ts.Local == nil || ts.Local.Verdict != dnsv1.VerdictDown || ts.Local.LastError != "HTTP 503" {
			return fmt.Errorf("%s's view of eu's target: %s; want Down QuorumDown (agreed), not served, its own probe Down with HTTP 503", c.geo, fmtTarget(ts))
		}
		return nil
	})
	t.Logf("status.targets of each cluster says Down QuorumDown after: %s", fmtFigures(took))
	ev := us.waitEvent(t, e.gslb(), dnsv1.ReasonTargetDown, testrun.HangTimeout)
	if !strings.Contains(ev.Message, eu.ip.String()) || !strings.Contains(ev.Message, dnsv1.TargetReasonQuorumDown) {
		t.Errorf("us: Event %s %q: want it to name eu's target %s and %s", ev.Reason, ev.Message, eu.ip, dnsv1.TargetReasonQuorumDown)
	}
	t.Logf("us: Event %s: %s", ev.Reason, ev.Message)

	setStatus(t, eu, http.StatusOK)
	took = e.untilAll(t, "eu's target back", e.all, func(c *hcCluster) error { return answerIs(c, e.host, primary) })
	t.Logf("statusd 200 again -> eu's target back in each cluster's answer after: %s", fmtFigures(took))
}

// twoWayCut cuts eu and us from each other for hcPartition under query loops: each side's own
// probes call the other's target Down, ap calls it Up, and each side still hears 2 of 3
// members; no answer fails over.
func (e *hcEnv) twoWayCut(t *testing.T, primary []string) {
	eu, us, ap := e.eu, e.us, e.ap
	e.waitConverged(t, primary)
	loops := e.queryLoops(t, e.all, primary)
	start := time.Now()
	cut := e.cut(t, []*hcCluster{eu}, []*hcCluster{us})
	// 60 s, far beyond the validity of the cut peer's last verdict record (3 s), and until the
	// cut shows on both sides: each one's own probes call the other's target Down, its peer
	// queries fail, and the decision stays Up: 1 Down of 3 members, the owner's vote never
	// counted, ap's Up the only other fresh verdict.
	time.Sleep(hcPartition)
	eventually(t, testrun.HangTimeout, "the cut seen from both sides", func() error {
		for _, side := range [][2]*hcCluster{{us, eu}, {eu, us}} {
			if err := e.cutSide(side[0], side[1]); err != nil {
				return err
			}
		}
		return nil
	})
	cutFor := time.Since(start)
	for _, l := range loops {
		l.Stop()
	}
	for _, c := range e.all {
		t.Logf("partition eu|us for %s: queries at %s: %s", cutFor.Round(100*time.Millisecond), c.geo, loops[c.geo])
	}
	for _, side := range [][2]*hcCluster{{us, eu}, {eu, us}, {ap, eu}} {
		ts, _ := e.target(side[0], side[1].ip)
		t.Logf("at the end of the cut, %s's view of %s's target: %s", side[0].geo, side[1].geo, fmtTarget(ts))
	}
	total, wrong := loopTotals(loops)
	t.Logf("partition eu|us for %s: %d answers from the 3 clusters, %d of them failed over or empty", cutFor.Round(100*time.Millisecond), total, wrong)
	e.checkLoops(t, "partition eu|us", loops)
	e.healAndConverge(t, "partition eu|us", cut, primary)
}

// cutSide says whether c, cut from other only, keeps other's target Up on ap's vote while its
// own probe calls it Down, shows other's peer query failing, and hears 2 of 3 members (not
// isolated).
func (e *hcEnv) cutSide(c, other *hcCluster) error {
	ts, err := e.target(c, other.ip)
	if err != nil {
		return err
	}
	if ts.Decision != dnsv1.VerdictUp || ts.Reason != dnsv1.TargetReasonHealthy || ts.Local == nil || ts.Local.Verdict != dnsv1.VerdictDown ||
		len(ts.Peers) != 1 || ts.Peers[0].GeoTag != e.ap.geo || ts.Peers[0].Verdict != dnsv1.VerdictUp {
		return fmt.Errorf("%s's view of %s's target: %s; want Up Healthy (1 Down of 3 members), its own probe Down, ap's Up the only peer verdict", c.geo, other.geo, fmtTarget(ts))
	}
	g, err := e.get(c)
	if err != nil {
		return err
	}
	if err := peerFailing(g, other); err != nil {
		return fmt.Errorf("%s: %w", c.geo, err)
	}
	if r := readyOf(g); r == nil || r.Reason == dnsv1.ReasonIsolated {
		return fmt.Errorf("%s, with one of two peers cut, is isolated: %+v", c.geo, r)
	}
	return e.membership(c, 2)
}

// isolated cuts us from both peers: it holds the last agreed answer through the hold, keeps
// holding with the hold at 0 under the default afterIsolationHold (Hold), and decides by its own
// probes with OwnProbes; then the cut heals.
func (e *hcEnv) isolated(t *testing.T, primary []string) {
	eu, us, ap := e.eu, e.us, e.ap
	e.waitConverged(t, primary)
	loops := e.queryLoops(t, e.all, primary)
	start := time.Now()
	cut := e.cut(t, []*hcCluster{us}, []*hcCluster{eu, ap})
	isolated := e.waitIsolated(t, us)
	ev := us.waitEvent(t, e.gslb(), dnsv1.ReasonIsolated, testrun.HangTimeout)
	t.Logf("us cut from eu and ap -> Ready=True Isolated after %s, hearing 1 of 3 members and holding eu's target; Event %s: %s",
		isolated.Round(100*time.Millisecond), ev.Reason, ev.Message)
	// eu and ap, 2 of 3 members hearing each other, probe us's target Down through the cut:
	// it is out of their answers by quorum (the primary's target is served either way).
	majority := e.untilAll(t, "us's target Down by quorum at eu and ap", []*hcCluster{eu, ap}, func(c *hcCluster) error {
		ts, err := e.target(c, us.ip)
		if err == nil && (ts.Decision != dnsv1.VerdictDown || ts.Reason != dnsv1.TargetReasonQuorumDown || ts.Served) {
			err = fmt.Errorf("%s's view of us's target: %s; want Down QuorumDown, not served", c.geo, fmtTarget(ts))
		}
		return err
	})
	t.Logf("meanwhile eu and ap take us's target out by quorum after: %s", fmtFigures(majority))
	time.Sleep(10 * time.Second) // the hold under the query loops: a soak, not a measurement

	// The hold lowered to 0, afterIsolationHold left out: the API's default, Hold, keeps the
	// last agreed answer for as long as the isolation lasts.
	update(t, us.cluster, e.gslb(), func(g *dnsv1.Gslb) { g.Spec.HealthCheck.IsolationHoldSeconds = ptr.To[int32](0) })
	if got := e.gslbOf(t, us).Spec.HealthCheck.AfterIsolationHold; got != dnsv1.AfterIsolationHoldHold {
		t.Fatalf("us's spec.healthCheck.afterIsolationHold is %q, want the default %q", got, dnsv1.AfterIsolationHoldHold)
	}
	e.waitDecided(t, us, "us, the hold at 0 under Hold, still holds eu's target", func() error { return e.held(us, eu) })
	time.Sleep(5 * time.Second) // after the hold, under the query loops: a soak
	for _, l := range loops {
		l.Stop()
	}
	for _, c := range e.all {
		t.Logf("us isolated (%s in all, the last 5 s with the hold at 0 under Hold): queries at %s: %s", time.Since(start).Round(100*time.Millisecond), c.geo, loops[c.geo])
	}
	total, wrong := loopTotals(loops)
	t.Logf("us isolated, within and after the hold (Hold): %d answers from the 3 clusters, %d of them not the last agreed answer or empty", total, wrong)
	e.checkLoops(t, "us isolated, within and after the hold (Hold)", loops)
	e.ownProbes(t, primary)
	e.healAndConverge(t, "isolation of us", cut, primary)
	us.waitCondition(t, e.gslb(), dnsv1.ConditionReady, metav1.ConditionTrue, dnsv1.ReasonPublished, testrun.HangTimeout)
}

// ownProbes sets us's afterIsolationHold to OwnProbes (the hold at 0): isolated, us decides by
// its own probes: eu's and ap's targets are unreachable from it, its own is up, so it fails
// over to its own target, still never empty, while eu and ap keep the primary.
func (e *hcEnv) ownProbes(t *testing.T, primary []string) {
	us := e.us
	own := []string{us.ip.String()}
	loop := answerloop.Start(t, us.dnsAddr, []answerloop.Query{{Name: e.host, Type: dns.TypeA,
		Allowed: []string{strings.Join(primary, ","), strings.Join(own, ",")}}}, hcLoopOptions)
	changed := time.Now()
	update(t, us.cluster, e.gslb(), func(g *dnsv1.Gslb) { g.Spec.HealthCheck.AfterIsolationHold = dnsv1.AfterIsolationHoldOwnProbes })
	eventually(t, testrun.HangTimeout, "us on its own probes", func() error {
		ts, err := e.target(us, e.eu.ip)
		if err == nil && (ts.Decision != dnsv1.VerdictDown || ts.Reason != dnsv1.TargetReasonOwnProbesOnly || ts.Agreed != dnsv1.VerdictUp) {
			err = fmt.Errorf("us's view of eu's target: %s, agreed %q; want Down OwnProbesOnly, agreed still Up", fmtTarget(ts), ts.Agreed)
		}
		if err == nil {
			err = answerIs(us, e.host, own)
		}
		return err
	})
	ownAfter := time.Since(changed)
	for _, c := range []*hcCluster{e.eu, e.ap} {
		if err := answerIs(c, e.host, primary); err != nil {
			t.Errorf("with us isolated: %v", err)
		}
	}
	time.Sleep(5 * time.Second) // us on its own probes under the query loop: a soak
	loop.Stop()
	t.Logf("afterIsolationHold OwnProbes (hold 0) -> us answers its own target %v after %s; queries at us from the change to 5 s later (eu's or its own target allowed, never empty): %s",
		own, ownAfter.Round(100*time.Millisecond), loop)
	e.checkLoops(t, "us after the hold (OwnProbes)", map[string]*answerloop.Loop{us.geo: loop})
}

// leaderDeletedWhileIsolated cuts us from both peers (the hold at 0, afterIsolationHold Hold)
// and deletes its leader pod under query loops at every cluster. The follower that takes the
// Lease has no memory of the Gslb: it restores the membership, the silent peers' targets
// (status.peers) and the agreed decisions (status.targets) before its first decision, and so
// holds eu's target; without them it would hear nobody, know no target but its own, and
// answer that.
func (e *hcEnv) leaderDeletedWhileIsolated(t *testing.T, primary []string) {
	eu, us, ap := e.eu, e.us, e.ap
	update(t, us.cluster, e.gslb(), func(g *dnsv1.Gslb) {
		g.Spec.HealthCheck.IsolationHoldSeconds = ptr.To[int32](0)
		g.Spec.HealthCheck.AfterIsolationHold = dnsv1.AfterIsolationHoldHold
	})
	e.waitConverged(t, primary)
	waitReadyReplicas(t, us.cluster, 2, 180*time.Second)
	leader := leaderPod(t, us.cluster)
	loops := e.queryLoops(t, e.all, primary)
	start := time.Now()
	cut := e.cut(t, []*hcCluster{us}, []*hcCluster{eu, ap})
	isolated := e.waitIsolated(t, us)
	deleted := time.Now()
	kubectl(t, us.cluster, "delete", "pod", leader, "--wait=false")
	newLeader := waitNewLeader(t, us.cluster, leader, "the follower takes the Lease of the deleted pod")
	takeover := time.Now()
	// The new leader's own decision: status.targets written with its own probe times.
	held := eventually(t, testrun.HangTimeout, "the new leader holds eu's target", func() error {
		ts, err := e.target(us, eu.ip)
		if err != nil {
			return err
		}
		if ts.Local == nil || ts.Local.LastProbeTime == nil || !ts.Local.LastProbeTime.After(takeover) {
			return fmt.Errorf("us's view of eu's target: %s; no probe of the new leader yet", fmtTarget(ts))
		}
		if ts.Decision != dnsv1.VerdictUp || ts.Reason != dnsv1.TargetReasonHeldWhileIsolated || ts.Agreed != dnsv1.VerdictUp {
			return fmt.Errorf("us's view of eu's target: %s, agreed %q; want Up HeldWhileIsolated, agreed Up", fmtTarget(ts), ts.Agreed)
		}
		return e.membership(us, 1)
	})
	eventually(t, 180*time.Second, "the replacement pod ready behind the dns Service", func() error {
		if got := readyReplicas(t, us.cluster); len(got) != 2 || slices.Contains(got, leader) {
			return fmt.Errorf("ready: %v; want 2, not the deleted %s", got, leader)
		}
		return nil
	})
	replaced := time.Since(deleted)
	time.Sleep(5 * time.Second) // the new leader and the replacement under the query loops: a soak
	for _, l := range loops {
		l.Stop()
	}
	for _, c := range e.all {
		t.Logf("us isolated, its leader pod deleted (%s in all): queries at %s: %s", time.Since(start).Round(100*time.Millisecond), c.geo, loops[c.geo])
	}
	total, wrong := loopTotals(loops)
	t.Logf("us isolated after %s; leader %s deleted -> %s took the Lease after %s and held eu's target (HeldWhileIsolated, restored from status) %s later; the replacement ready after %s; %d answers from the 3 clusters, %d of them not the last agreed answer or empty",
		isolated.Round(100*time.Millisecond), leader, newLeader, takeover.Sub(deleted).Round(100*time.Millisecond), held.Round(100*time.Millisecond),
		replaced.Round(100*time.Millisecond), total, wrong)
	e.checkLoops(t, "us isolated through its leader pod's deletion", loops)
	e.healDamped(t, cut, primary)
}

// healDamped heals the second isolation of us. eu and ap have now taken us's target out twice
// within the flap window (health.DefaultFlapWindow): flap damping keeps it Down (FlapDamped)
// at both until the quorum has said Up for health.DefaultFlapDwell, while every verdict is Up
// again and the answer, the primary's, is the same everywhere. Then the dwell ends.
func (e *hcEnv) healDamped(t *testing.T, cut *nodeCut, primary []string) {
	start := time.Now()
	cut.Heal()
	took := e.untilAll(t, "the answer and every verdict back, us's target damped at eu and ap", e.all, func(c *hcCluster) error {
		if err := answerIs(c, e.host, primary); err != nil {
			return err
		}
		return e.everyVerdictUpDamped(c)
	})
	t.Logf("isolation of us through the leader's deletion healed -> every cluster answers %v with every verdict Up, us's target FlapDamped at eu and ap, after: %s",
		primary, fmtFigures(took))
	e.us.waitCondition(t, e.gslb(), dnsv1.ConditionReady, metav1.ConditionTrue, dnsv1.ReasonPublished, testrun.HangTimeout)
	eventually(t, health.DefaultFlapDwell+testrun.HangTimeout, "us's target Up again at eu and ap after the dwell", func() error {
		for _, c := range []*hcCluster{e.eu, e.ap} {
			if ts, err := e.target(c, e.us.ip); err != nil || ts.Decision != dnsv1.VerdictUp {
				return fmt.Errorf("%s's view of us's target: %s %v", c.geo, fmtTarget(ts), err)
			}
		}
		return nil
	})
	t.Logf("us's target Up again at eu and ap %s after the heal (flap dwell %s)", time.Since(start).Round(100*time.Millisecond), health.DefaultFlapDwell)
	e.waitConverged(t, primary)
}

// everyVerdictUpDamped is everyVerdictUp, but for us's target at eu and ap, which is Down
// FlapDamped with every verdict on it Up.
func (e *hcEnv) everyVerdictUpDamped(c *hcCluster) error {
	for _, target := range e.all {
		ts, err := e.target(c, target.ip)
		if err != nil {
			return err
		}
		want, reason := dnsv1.VerdictUp, ""
		if target == e.us && c != e.us {
			want, reason = dnsv1.VerdictDown, dnsv1.TargetReasonFlapDamped
		}
		if ts.Decision != want || (reason != "" && ts.Reason != reason) || ts.Local == nil || ts.Local.Verdict != dnsv1.VerdictUp || len(ts.Peers) != 2 ||
			slices.ContainsFunc(ts.Peers, func(p dnsv1.PeerTargetVerdict) bool { return p.Verdict != dnsv1.VerdictUp }) {
			return fmt.Errorf("%s's view of %s's target: %s; want %s %s, every verdict Up", c.geo, target.geo, fmtTarget(ts), want, reason)
		}
	}
	return nil
}

// waitIsolated waits until c is Ready=True Isolated, hears only itself of the 3 members (the
// silent peers keep their targets), and holds eu's target (held); it returns how long that took.
func (e *hcEnv) waitIsolated(t *testing.T, c *hcCluster) time.Duration {
	t.Helper()
	start := time.Now()
	c.waitCondition(t, e.gslb(), dnsv1.ConditionReady, metav1.ConditionTrue, dnsv1.ReasonIsolated, testrun.HangTimeout)
	took := time.Since(start)
	eventually(t, testrun.HangTimeout, c.geo+" hears 1 of 3 and holds eu's target while its own probes call it Down", func() error {
		if err := e.membership(c, 1); err != nil {
			return err
		}
		return e.held(c, e.eu)
	})
	return took
}

// held says whether c holds owner's target Up while isolated (HeldWhileIsolated, agreed Up)
// although its own probe calls it Down.
func (e *hcEnv) held(c, owner *hcCluster) error {
	ts, err := e.target(c, owner.ip)
	if err == nil && (ts.Decision != dnsv1.VerdictUp || ts.Reason != dnsv1.TargetReasonHeldWhileIsolated || ts.Agreed != dnsv1.VerdictUp ||
		ts.Local == nil || ts.Local.Verdict != dnsv1.VerdictDown) {
		err = fmt.Errorf("%s's view of %s's target: %s, agreed %q; want Up HeldWhileIsolated, agreed Up, its own probe Down", c.geo, owner.geo, fmtTarget(ts), ts.Agreed)
	}
	return err
}

// waitDecided waits until c's Gslb status describes its current generation and check passes.
func (e *hcEnv) waitDecided(t *testing.T, c *hcCluster, what string, check func() error) {
	t.Helper()
	eventually(t, testrun.HangTimeout, what, func() error {
		g, err := e.get(c)
		if err != nil {
			return err
		}
		if g.Status.ObservedGeneration != g.Generation {
			return fmt.Errorf("%s: status of generation %d, the spec's is %d", c.geo, g.Status.ObservedGeneration, g.Generation)
		}
		return check()
	})
}

// setupKindHealth makes, in each cluster, namespace kind-hc-<run> with: a DNSZone
// hc-<run>.kind.test on the embedded server; statusd (a Deployment of one replica) behind a
// NodePort Service on statusdNodePort; Service app, a selector-less LoadBalancer whose address
// the test writes (the node's) with a hand-written Ready EndpointSlice; and Gslb app, failover
// with primary eu, health-checked with HTTP GET /healthz on statusdNodePort. Everything is
// deleted at the end.
func setupKindHealth(t *testing.T) *hcEnv {
	t.Helper()
	if len(suite.clusters) != 3 {
		t.Skipf("the health scenarios need 3 clusters (a majority of 2 is both), have %d", len(suite.clusters))
	}
	nodes := splitList(os.Getenv("E2E_KIND_NODES"))
	e := &hcEnv{engine: os.Getenv("E2E_KIND_ENGINE"), ns: kindRunName("kind-hc")}
	if len(nodes) != len(suite.clusters) || e.engine == "" {
		t.Fatalf("E2E_KIND_NODES %q and E2E_KIND_ENGINE %q: want a node container per cluster and the engine (hack/e2e-kind.sh sets them)", nodes, e.engine)
	}
	for i, c := range suite.clusters {
		host, _, err := net.SplitHostPort(c.dnsAddr)
		if err != nil {
			t.Fatal(err)
		}
		ip, err := netip.ParseAddr(host)
		if err != nil || !ip.Is4() || ip.IsLoopback() {
			t.Fatalf("cluster %s: dns address %s: want its node's IPv4 address on the kind network (%v)", c.geo, c.dnsAddr, err)
		}
		e.all = append(e.all, &hcCluster{cluster: c, node: nodes[i], ip: ip})
	}
	e.eu, e.us, e.ap = e.all[0], e.all[1], e.all[2]

	zone := kindRunName("hc") + ".kind.test"
	e.host = "app." + zone
	for _, c := range e.all {
		out, err := e.nodeExec(c, "iptables", "-V")
		if err != nil {
			t.Fatalf("node %s has no iptables: %v: %s", c.node, err, out)
		}
		t.Logf("cluster %s: node %s at %s, %s", c.geo, c.node, c.ip, strings.TrimSpace(out))
	}
	// A run killed by go test's -timeout runs no cleanup: delete the rules it left (the
	// clusters are kept with E2E_KIND_KEEP=1).
	if err := e.clearNodes(e.all); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			e.dump(t)
		}
		for _, c := range e.all {
			cx, cancel := context.WithTimeout(context.Background(), time.Minute)
			_ = c.C().DeleteAllOf(cx, &dnsv1.Gslb{}, client.InNamespace(e.ns))
			cancel()
			deleteNamespace(t, c.cluster, e.ns)
		}
	})

	hc := &dnsv1.GslbHealthCheck{Protocol: "HTTP", Port: statusdNodePort, Path: "/healthz", IntervalSeconds: hcInterval,
		TimeoutSeconds: 1, FailureThreshold: hcFailures, SuccessThreshold: 1, IsolationHoldSeconds: ptr.To[int32](3600)}
	for _, c := range e.all {
		svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: "app"},
			Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, Ports: []corev1.ServicePort{{Port: 80}}}}
		c.apply(t, namespace(e.ns), localSecretObj(e.ns),
			&dnsv1.DNSZone{ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: "gslb"}, Spec: dnsv1.DNSZoneSpec{
				Zone: zone, ProviderRef: dnsv1.SecretReference{Name: localSecret}}})
		c.apply(t, statusdObjects(e.ns)...)
		c.apply(t, svc)
		// No load-balancer controller on kind: write the address one would have, the node's.
		eventually(t, testrun.HangTimeout, "Service app's status", func() error {
			if err := c.C().Get(ctx(t), clientKey(svc), svc); err != nil {
				return err
			}
			svc.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: c.ip.String()}}
			return c.C().Status().Update(ctx(t), svc)
		})
		c.apply(t, &discoveryv1.EndpointSlice{
			ObjectMeta:  metav1.ObjectMeta{Namespace: e.ns, Name: "app-1", Labels: map[string]string{discoveryv1.LabelServiceName: "app"}},
			AddressType: discoveryv1.AddressTypeIPv4,
			Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{"10.244.0.200"}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)}}},
		})
	}
	for _, c := range e.all {
		kindCmd(t, c.cluster, os.Getenv("E2E_KIND_KUBECTL"), "-n", e.ns, "rollout", "status", "deployment/statusd", "--timeout=180s")
		c.waitCondition(t, &dnsv1.DNSZone{ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: "gslb"}}, dnsv1.ConditionReady, metav1.ConditionTrue, dnsv1.ReasonReady, testrun.HangTimeout)
		setStatus(t, c, http.StatusOK)
	}
	for _, c := range e.all {
		c.apply(t, &dnsv1.Gslb{ObjectMeta: metav1.ObjectMeta{Namespace: e.ns, Name: "app"}, Spec: dnsv1.GslbSpec{
			ResourceRef: dnsv1.ResourceReference{Kind: "Service", Name: "app"}, Hosts: []string{e.host},
			ZoneRef:     dnsv1.ZoneReference{Name: "gslb"},
			Strategy:    dnsv1.GslbStrategy{Type: "failover", PrimaryGeoTag: e.eu.geo, DNSTTLSeconds: 5},
			HealthCheck: hc.DeepCopy()}})
	}
	return e
}

// statusdObjects is statusd: a Deployment of one replica (its status lives in that one Pod) and
// a NodePort Service on statusdNodePort.
func statusdObjects(ns string) []client.Object {
	labels := map[string]string{"app": "statusd"}
	port := intstr.FromInt32(8080)
	return []client.Object{
		&appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "statusd"}, Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](1),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: corev1.PodSpec{
				SecurityContext: &corev1.PodSecurityContext{RunAsNonRoot: ptr.To(true), RunAsUser: ptr.To[int64](65532)},
				Containers: []corev1.Container{{
					Name: "statusd", Image: kindToolsImage, ImagePullPolicy: corev1.PullNever,
					Command:        []string{"/statusd", "-addr", ":8080"},
					Ports:          []corev1.ContainerPort{{ContainerPort: 8080}},
					ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/readyz", Port: port}}, PeriodSeconds: 2},
				}},
			}},
		}},
		&corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "statusd"}, Spec: corev1.ServiceSpec{
			Type: corev1.ServiceTypeNodePort, Selector: labels,
			Ports: []corev1.ServicePort{{Port: 8080, TargetPort: port, NodePort: statusdNodePort}}}},
	}
}

// setStatus makes c's statusd answer code at /healthz, through its NodePort from the host.
func setStatus(t *testing.T, c *hcCluster, code int) {
	t.Helper()
	url := fmt.Sprintf("http://%s/status", netip.AddrPortFrom(c.ip, statusdNodePort))
	eventually(t, testrun.HangTimeout, fmt.Sprintf("PUT %s %d", url, code), func() error {
		req, err := http.NewRequest(http.MethodPut, url, strings.NewReader(fmt.Sprint(code)))
		if err != nil {
			return err
		}
		resp, err := (&http.Client{Timeout: 5 * time.Second}).Do(req)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		if resp.StatusCode != http.StatusNoContent {
			return fmt.Errorf("HTTP %d", resp.StatusCode)
		}
		return nil
	})
}

// answerIs says whether c answers host A with exactly want (sorted).
func answerIs(c *hcCluster, host string, want []string) error {
	got, err := answerA(c.dnsAddr, host)
	if err != nil {
		return err
	}
	if !slices.Equal(got, want) {
		return fmt.Errorf("%s answers %v, want %v", c.geo, got, want)
	}
	return nil
}

// untilAll checks every cluster at once, every 50 ms, until check passes for each, and returns
// how long each took: figures to log. The deadline, testrun.HangTimeout, only catches a hang.
func (e *hcEnv) untilAll(t *testing.T, what string, cs []*hcCluster, check func(*hcCluster) error) map[string]time.Duration {
	t.Helper()
	start := time.Now()
	took := map[string]time.Duration{}
	errs := make([]error, len(cs))
	var mu sync.Mutex
	var wg sync.WaitGroup
	for i, c := range cs {
		wg.Go(func() {
			for deadline := start.Add(testrun.HangTimeout); ; time.Sleep(50 * time.Millisecond) {
				err := check(c)
				if err == nil {
					mu.Lock()
					took[c.geo] = time.Since(start)
					mu.Unlock()
					return
				}
				if time.Now().After(deadline) {
					errs[i] = fmt.Errorf("cluster %s: %s: not within %s: %w", c.geo, what, testrun.HangTimeout, err)
					return
				}
			}
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	return took
}

// waitConverged waits until every cluster answers want and has its own and both peers' verdicts
// on every target, all Up; it returns how long each cluster took.
func (e *hcEnv) waitConverged(t *testing.T, want []string) map[string]time.Duration {
	t.Helper()
	return e.untilAll(t, fmt.Sprintf("answer %v and every verdict Up", want), e.all, func(c *hcCluster) error {
		if err := answerIs(c, e.host, want); err != nil {
			return err
		}
		return e.everyVerdictUp(c)
	})
}

// everyVerdictUp says whether c decides every target Up with its own and both peers' verdicts,
// all Up (a target's owner among them: shown, not counted).
func (e *hcEnv) everyVerdictUp(c *hcCluster) error {
	for _, target := range e.all {
		ts, err := e.target(c, target.ip)
		if err != nil {
			return err
		}
		if ts.Decision != dnsv1.VerdictUp || ts.Local == nil || ts.Local.Verdict != dnsv1.VerdictUp || len(ts.Peers) != 2 ||
			slices.ContainsFunc(ts.Peers, func(p dnsv1.PeerTargetVerdict) bool { return p.Verdict != dnsv1.VerdictUp }) {
			return fmt.Errorf("%s's view of %s's target: %s", c.geo, target.geo, fmtTarget(ts))
		}
	}
	return nil
}

// membership says whether c's status counts the 3 members (quorum 2) and heard of them, and
// lists both other clusters as members with their targets (as answered, or as last answered
// while they are silent, restored from status after a restart).
func (e *hcEnv) membership(c *hcCluster, heard int32) error {
	g, err := e.get(c)
	if err != nil {
		return err
	}
	st := g.Status
	if st.Members != 3 || st.Quorum != 2 || st.Heard != heard {
		return fmt.Errorf("%s: members %d, quorum %d, heard %d; want 3, 2, %d", c.geo, st.Members, st.Quorum, st.Heard, heard)
	}
	for _, other := range e.all {
		if other == c {
			continue
		}
		i := slices.IndexFunc(st.Peers, func(p dnsv1.PeerStatus) bool { return p.GeoTag == other.geo })
		if i < 0 {
			return fmt.Errorf("%s: no status.peers entry for %s: %+v", c.geo, other.geo, st.Peers)
		}
		p := st.Peers[i]
		want := []dnsv1.PeerHostTargets{{Host: e.host, Targets: []string{other.ip.String()}}}
		if p.Role != dnsv1.PeerRoleMember || !slices.EqualFunc(p.Targets, want, func(a, b dnsv1.PeerHostTargets) bool {
			return a.Host == b.Host && slices.Equal(a.Targets, b.Targets)
		}) {
			return fmt.Errorf("%s: status.peers entry for %s: role %q, targets %+v; want Member, %+v", c.geo, other.geo, p.Role, p.Targets, want)
		}
	}
	return nil
}

// healAndConverge heals cut and waits until every cluster converges (waitConverged on want);
// it logs how long deleting the rules took and, from then, each cluster's convergence.
func (e *hcEnv) healAndConverge(t *testing.T, what string, cut *nodeCut, want []string) {
	t.Helper()
	start := time.Now()
	cut.Heal()
	healed := time.Since(start)
	took := e.waitConverged(t, want)
	t.Logf("%s healed (its rules deleted in %s) -> every cluster answers %v and has its own and both peers' Up verdicts on every target after: %s",
		what, healed.Round(10*time.Millisecond), want, fmtFigures(took))
}

// hcLoopOptions: 10 rounds a second, authoritative answers only, a retry after a timeout (a
// stub resolver's attempts:2).
var hcLoopOptions = answerloop.Options{Interval: 100 * time.Millisecond, Authoritative: true, Retries: 1}

// queryLoops asks each cluster of cs for the host's A records, 10 times a second, allowing only
// want: an answer that fails over, an empty one, a timeout or an error is a failure.
func (e *hcEnv) queryLoops(t *testing.T, cs []*hcCluster, want []string) map[string]*answerloop.Loop {
	t.Helper()
	loops := map[string]*answerloop.Loop{}
	for _, c := range cs {
		loops[c.geo] = answerloop.Start(t, c.dnsAddr, []answerloop.Query{{Name: e.host, Type: dns.TypeA, Allowed: []string{strings.Join(want, ",")}}}, hcLoopOptions)
	}
	return loops
}

// checkLoops fails t when a loop asked nothing or counted a failure, naming the wrong answers
// (answerloop.Wrong: failed over, or empty).
func (e *hcEnv) checkLoops(t *testing.T, what string, loops map[string]*answerloop.Loop) {
	t.Helper()
	for geo, l := range loops {
		if l.Queries.Load() == 0 {
			t.Errorf("%s: no query was asked of %s", what, geo)
		}
		if n := l.Failures.Load(); n > 0 {
			t.Errorf("%s: %s failed %d queries, %d of them answered wrong (failed over or empty): %s; first: %v",
				what, geo, n, l.Counts()[answerloop.Wrong], l, l.Examples())
		}
	}
}

// loopTotals returns the queries the loops asked and the answers they counted wrong.
func loopTotals(loops map[string]*answerloop.Loop) (total, wrong int64) {
	for _, l := range loops {
		total += l.Queries.Load()
		wrong += int64(l.Counts()[answerloop.Wrong])
	}
	return total, wrong
}

// gslbOf reads c's Gslb.
func (e *hcEnv) gslbOf(t *testing.T, c *hcCluster) *dnsv1.Gslb {
	t.Helper()
	g, err := e.get(c)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// get reads c's Gslb (from any goroutine).
func (e *hcEnv) get(c *hcCluster) (*dnsv1.Gslb, error) {
	cx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	g := e.gslb()
	if err := c.C().Get(cx, clientKey(g), g); err != nil {
		return nil, fmt.Errorf("cluster %s: %w", c.geo, err)
	}
	return g, nil
}

// target returns c's status.targets entry for target, or an error saying what it has.
func (e *hcEnv) target(c *hcCluster, target netip.Addr) (dnsv1.GslbTargetStatus, error) {
	g, err := e.get(c)
	if err != nil {
		return dnsv1.GslbTargetStatus{}, err
	}
	for _, ts := range g.Status.Targets {
		if ts.Host == e.host && ts.Target == target.String() {
			return ts, nil
		}
	}
	return dnsv1.GslbTargetStatus{}, fmt.Errorf("cluster %s: no status.targets entry for %s (%d entries)", c.geo, target, len(g.Status.Targets))
}

func fmtTarget(ts dnsv1.GslbTargetStatus) string {
	local := "none"
	if ts.Local != nil {
		local = string(ts.Local.Verdict)
		if ts.Local.LastError != "" {
			local += " (" + ts.Local.LastError + ")"
		}
	}
	return fmt.Sprintf("%s %s: decision %s %s, served %t, own probe %s, peers %v", ts.Target, ts.GeoTag, ts.Decision, ts.Reason, ts.Served, local, ts.Peers)
}

// fmtFigures renders per-cluster durations in the geo tags' order.
func fmtFigures(took map[string]time.Duration) string {
	var out []string
	for _, geo := range geos {
		if d, ok := took[geo]; ok {
			out = append(out, fmt.Sprintf("%s %s", geo, d.Round(10*time.Millisecond)))
		}
	}
	return strings.Join(out, ", ")
}

// peerFailing says whether g's status.peers shows other's address with an error.
func peerFailing(g *dnsv1.Gslb, other *hcCluster) error {
	for _, p := range g.Status.Peers {
		if p.Address == other.dnsAddr {
			if p.Error == "" {
				return fmt.Errorf("peer %s answers: %+v", other.geo, p)
			}
			return nil
		}
	}
	return fmt.Errorf("no status.peers entry for %s (%s): %+v", other.geo, other.dnsAddr, g.Status.Peers)
}

func readyOf(g *dnsv1.Gslb) *metav1.Condition {
	return meta.FindStatusCondition(g.Status.Conditions, dnsv1.ConditionReady)
}

// nodeExec runs a command in c's node container.
func (e *hcEnv) nodeExec(c *hcCluster, args ...string) (string, error) {
	cx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out, err := exec.CommandContext(cx, e.engine, append([]string{"exec", c.node}, args...)...).CombinedOutput()
	return string(out), err
}

// insertRule is the shell command that inserts, in a node, the iptables rule (raw table) that
// drops every packet from src.
func insertRule(src netip.Addr) string {
	return "iptables -w -t raw -I PREROUTING -s " + src.String() + "/32 -m comment --comment " + partitionComment + " -j DROP"
}

// clearRules is the shell command that deletes, in a node, every rule with partitionComment
// (those a cut inserted, and those a killed run left) and prints how many are left (0).
const clearRules = "iptables -w -t raw -S PREROUTING | grep -e '--comment " + partitionComment + "' | sed 's/^-A /-D /' | xargs -r -L1 iptables -w -t raw" +
	" && iptables -w -t raw -S PREROUTING | grep -c -e '--comment " + partitionComment + "' || true"

// onNodes runs a shell command in each node of cs at once (one exec each, so that a cut or a
// heal lands on every node together); cmd gives a node's command. It returns each node's
// output, trimmed, and the first error.
func (e *hcEnv) onNodes(cs []*hcCluster, cmd func(*hcCluster) string) ([]string, error) {
	outs, errs := make([]string, len(cs)), make([]error, len(cs))
	var wg sync.WaitGroup
	for i, c := range cs {
		wg.Go(func() {
			out, err := e.nodeExec(c, "sh", "-c", cmd(c))
			if outs[i] = strings.TrimSpace(out); err != nil {
				errs[i] = fmt.Errorf("node %s: %s: %w: %s", c.node, cmd(c), err, out)
			}
		})
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return outs, err
		}
	}
	return outs, nil
}

// clearNodes deletes every partition rule in the nodes of cs, at once, and checks that none is
// left.
func (e *hcEnv) clearNodes(cs []*hcCluster) error {
	outs, err := e.onNodes(cs, func(*hcCluster) string { return clearRules })
	if err != nil {
		return err
	}
	for i, out := range outs {
		if out != "0" {
			return fmt.Errorf("node %s: %q partition rules left after deleting them", cs[i].node, out)
		}
	}
	return nil
}

// nodeCut is a set of links cut between nodes; Heal restores them.
type nodeCut struct {
	e     *hcEnv
	t     *testing.T
	once  sync.Once
	nodes []*hcCluster
}

// cut drops every packet between each node of as and each of bs, both ways, until Heal or the
// end of t. Only the test's own nodes' addresses are ever a source.
func (e *hcEnv) cut(t *testing.T, as, bs []*hcCluster) *nodeCut {
	t.Helper()
	drops := map[*hcCluster][]netip.Addr{}
	var names []string
	for _, a := range as {
		for _, b := range bs {
			drops[a] = append(drops[a], b.ip)
			drops[b] = append(drops[b], a.ip)
			names = append(names, a.geo+"|"+b.geo)
		}
	}
	nc := &nodeCut{e: e, t: t}
	for _, c := range e.all {
		if len(drops[c]) > 0 {
			nc.nodes = append(nc.nodes, c)
		}
	}
	t.Cleanup(nc.Heal)
	start := time.Now()
	_, err := e.onNodes(nc.nodes, func(c *hcCluster) string {
		var cmds []string
		for _, src := range drops[c] {
			cmds = append(cmds, insertRule(src))
		}
		return strings.Join(cmds, " && ")
	})
	if err != nil {
		t.Fatalf("cut %s: %v", strings.Join(names, ", "), err)
	}
	t.Logf("cut %s: rules in place at %s (inserted in %s)", strings.Join(names, ", "), time.Now().UTC().Format("15:04:05.000"), time.Since(start).Round(10*time.Millisecond))
	return nc
}

// Heal deletes the cut's rules, on its nodes at once (the first call; later ones do nothing).
func (nc *nodeCut) Heal() {
	nc.once.Do(func() {
		if err := nc.e.clearNodes(nc.nodes); err != nil {
			nc.t.Errorf("heal: %v", err)
			return
		}
		nc.t.Logf("healed: rules deleted at %s", time.Now().UTC().Format("15:04:05.000"))
	})
}

// dump logs each cluster's view of the Gslb (conditions, peers, targets) and the tail of its
// managers' logs.
func (e *hcEnv) dump(t *testing.T) {
	var b strings.Builder
	for _, c := range e.all {
		g := e.gslb()
		cx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
		err := c.C().Get(cx, clientKey(g), g)
		cancel()
		fmt.Fprintf(&b, "===== %s (node %s, %s): Gslb %s/%s %v\n", c.geo, c.node, c.ip, e.ns, "app", err)
		fmt.Fprintf(&b, "  records %v%s\n  peers %+v\n", g.Status.HealthyRecords, conds(g.Status.Conditions), g.Status.Peers)
		for _, ts := range g.Status.Targets {
			fmt.Fprintf(&b, "  target %s\n", fmtTarget(ts))
		}
		if out, err := e.nodeExec(c, "iptables", "-w", "-t", "raw", "-S", "PREROUTING"); err == nil {
			fmt.Fprintf(&b, "  raw PREROUTING:\n%s", out)
		}
		logs, _ := kindTry(c.cluster, os.Getenv("E2E_KIND_KUBECTL"), "-n", os.Getenv("E2E_KIND_NAMESPACE"), "logs",
			"-l", "app.kubernetes.io/instance="+os.Getenv("E2E_KIND_RELEASE"), "--tail=60", "--prefix")
		fmt.Fprintf(&b, "  managers' logs:\n%s\n", logs)
	}
	t.Log("\n" + b.String())
}
