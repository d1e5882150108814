//go:build e2e

package e2e

// The kind-only scenarios: what only real Pods installed from the chart can show (leader
// election between replicas, helm upgrade and helm uninstall). They run only when E2E_KIND=1,
// which hack/e2e-kind.sh sets with the E2E_KIND_* variables below, and it runs them in their
// own `go test -run '^TestKind'` after the suite, TestKindHelmUninstall last, since they
// delete pods, upgrade and uninstall the release. Each counts the writes the managers make to
// PowerDNS through a counting proxy (kindProxy) that this process puts between them and the
// PowerDNS API: the zone's provider Secret points the managers at the proxy.
//
//	E2E_KIND_NAMESPACE, E2E_KIND_RELEASE  the release (dnsplane-system, dnsplane)
//	E2E_KIND_HELM, E2E_KIND_KUBECTL       the binaries
//	E2E_KIND_CHART                        charts/dnsplane
//	E2E_KIND_VALUES_DIR                   values-<geo>.yaml, the values each cluster was installed with
//	E2E_KIND_TAG                          the image tag installed
//	E2E_KIND_RETAG_CMD                    a shell command that makes the same image present as
//	                                      tag $E2E_NEW_TAG on cluster $E2E_GEO's node
//	E2E_KIND_PDNS_LISTEN                  the host address the Pods reach (the kind network's gateway)

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/miekg/dns"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	dnsv1 "github.com/dnsplane/dnsplane/apis/v1alpha1"
	"github.com/dnsplane/dnsplane/internal/testing/answerloop"
	"github.com/dnsplane/dnsplane/internal/testing/testrun"
)

func kindOnly(t *testing.T) {
	t.Helper()
	if os.Getenv("E2E_KIND") != "1" {
		t.Skip("kind-only scenario: run by hack/e2e-kind.sh (make e2e-kind)")
	}
}

// kindProxy forwards the managers' PowerDNS API requests to the real PowerDNS and counts the
// writes PowerDNS accepted (a 2xx answer): each PATCH'd rrset by "name type changetype", each
// other write by "method path". A write PowerDNS refused (its sqlite busy, say) is counted apart
// (refused), so that its retry is not taken for a second write. Between hold and drop it
// forwards no write: each waits, counted apart as held, until drop answers it 503 (the writer
// was killed meanwhile, so its write never reaches PowerDNS).
type kindProxy struct {
	URL     string
	srv     *http.Server
	mu      sync.Mutex
	writes  map[string]int
	refused map[string]int
	// timeline is every forwarded write, "15:04:05.000 key status", for a failure's message.
	timeline []string
	holding  bool
	held     map[string]int
	heldc    chan struct{} // closed at the first write held
	release  chan struct{} // closed by drop
}

// statusRecorder remembers the status a handler wrote.
type statusRecorder struct {
	http.ResponseWriter
	status int
}

func (s *statusRecorder) WriteHeader(code int) {
	s.status = code
	s.ResponseWriter.WriteHeader(code)
}

func startKindProxy(t *testing.T) *kindProxy {
	t.Helper()
	target, err := url.Parse(suite.pdns.APIURL)
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", net.JoinHostPort(os.Getenv("E2E_KIND_PDNS_LISTEN"), "0"))
	if err != nil {
		t.Fatal(err)
	}
	p := &kindProxy{URL: "http://" + ln.Addr().String(), writes: map[string]int{}, refused: map[string]int{}}
	rp := httputil.NewSingleHostReverseProxy(target)
	p.srv = &http.Server{ReadHeaderTimeout: 10 * time.Second, Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(body))
		keys, release := p.count(r.Method, r.URL.Path, body)
		if release != nil {
			select {
			case <-release:
			case <-r.Context().Done():
			}
			http.Error(w, "dropped by the e2e proxy: its writer was killed", http.StatusServiceUnavailable)
			return
		}
		rec := &statusRecorder{ResponseWriter: w, status: http.StatusOK}
		rp.ServeHTTP(rec, r)
		p.settle(keys, rec.status)
	})}
	go func() { _ = p.srv.Serve(ln) }()
	t.Cleanup(func() { _ = p.srv.Close() })
	return p
}

// count counts one request's writes and returns their keys; while holding, it counts them as
// held and also returns the channel the request must wait on instead of being forwarded.
func (p *kindProxy) count(method, path string, body []byte) ([]string, <-chan struct{}) {
	if method == http.MethodGet || method == http.MethodHead {
		return nil, nil
	}
	var keys []string
	var req struct {
		RRsets []struct{ Name, Type, Changetype string } `json:"rrsets"`
	}
	switch {
	case method != http.MethodPatch:
		keys = []string{method + " " + path}
	case json.Unmarshal(body, &req) != nil:
		keys = []string{"PATCH unreadable " + path}
	default:
		for _, rr := range req.RRsets {
			keys = append(keys, strings.ToLower(rr.Name)+" "+rr.Type+" "+strings.ToUpper(rr.Changetype))
		}
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	into := p.writes
	if p.holding {
		into = p.held
		if len(p.held) == 0 {
			close(p.heldc)
		}
	}
	for _, k := range keys {
		into[k]++
	}
	if p.holding {
		return keys, p.release
	}
	return keys, nil
}

// settle records how PowerDNS answered a forwarded write: a refusal (not 2xx) moves its keys
// from the writes to refused.
func (p *kindProxy) settle(keys []string, status int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	at := time.Now().UTC().Format("15:04:05.000")
	for _, k := range keys {
		p.timeline = append(p.timeline, fmt.Sprintf("%s %s %d", at, k, status))
		if status < 200 || status > 299 {
			p.writes[k]--
			p.refused[fmt.Sprintf("%s %d", k, status)]++
		}
	}
}

// history returns the timeline lines of the given keys, and every refused write.
func (p *kindProxy) history(keys []string) (lines []string, refused map[string]int) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, l := range p.timeline {
		for _, k := range keys {
			if strings.Contains(l, " "+k+" ") {
				lines = append(lines, l)
			}
		}
	}
	return lines, maps.Clone(p.refused)
}

// hold starts holding writes.
func (p *kindProxy) hold() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.holding, p.held = true, map[string]int{}
	p.heldc, p.release = make(chan struct{}), make(chan struct{})
}

// waitHeld waits until a write is held.
func (p *kindProxy) waitHeld(t *testing.T, timeout time.Duration) {
	t.Helper()
	p.mu.Lock()
	heldc := p.heldc
	p.mu.Unlock()
	select {
	case <-heldc:
	case <-time.After(max(timeout, testrun.HangTimeout)):
		t.Fatalf("no write reached the PowerDNS proxy within %s", max(timeout, testrun.HangTimeout))
	}
}

// drop answers the held writes 503, stops holding, and returns what was held.
func (p *kindProxy) drop() map[string]int {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.holding = false
	close(p.release)
	return p.held
}

// snapshot returns a copy of the counts so far.
func (p *kindProxy) snapshot() map[string]int {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := make(map[string]int, len(p.writes))
	for k, v := range p.writes {
		out[k] = v
	}
	return out
}

// since returns the counts that grew after before, as sorted "key xN" lines.
func since(before, now map[string]int) []string {
	var out []string
	for k, v := range now {
		if d := v - before[k]; d > 0 {
			out = append(out, fmt.Sprintf("%s x%d", k, d))
		}
	}
	sort.Strings(out)
	return out
}

// kindCmd runs a command (helm, kubectl, sh -c) against cluster c and returns its output.
func kindCmd(t *testing.T, c *cluster, name string, args ...string) string {
	t.Helper()
	out, err := kindTry(c, name, args...)
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return out
}

func kubectl(t *testing.T, c *cluster, args ...string) string {
	t.Helper()
	return kindCmd(t, c, os.Getenv("E2E_KIND_KUBECTL"), append([]string{"-n", os.Getenv("E2E_KIND_NAMESPACE")}, args...)...)
}

// kindZone makes namespace ns with a PowerDNS Secret that points at proxy, and a DNSZone for
// zone created there by cluster c; it waits until the zone is Ready and deletes it at the end.
func kindZone(t *testing.T, c *cluster, proxy *kindProxy, ns, zone string, preserve bool) *dnsv1.DNSZone {
	t.Helper()
	sec := pdnsSecretObj(ns)
	sec.StringData["PDNS_API_URL"] = proxy.URL
	z := &dnsv1.DNSZone{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "zone"}, Spec: dnsv1.DNSZoneSpec{
		Zone: zone, ProviderRef: dnsv1.SecretReference{Name: pdnsSecret}, PreserveOnDelete: preserve}}
	c.apply(t, namespace(ns), sec, z)
	c.waitCondition(t, z, dnsv1.ConditionReady, metav1.ConditionTrue, dnsv1.ReasonReady, 90*time.Second)
	return z
}

func kindEndpoint(ns, name, host, target string) *dnsv1.DNSEndpoint {
	return &dnsv1.DNSEndpoint{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: dnsv1.DNSEndpointSpec{PublishingSpec: dnsv1.PublishingSpec{
		Endpoints: []dnsv1.Endpoint{{DNSName: host, RecordType: "A", RecordTTL: 60, Targets: dnsv1.Targets{target}}}}}}
}

// deleteNamespace deletes ns's DNSEndpoints and DNSZone (the managers release their records
// while the proxy still runs), then the namespace.
func deleteNamespace(t *testing.T, c *cluster, ns string) {
	t.Helper()
	cx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	_ = c.C().DeleteAllOf(cx, &dnsv1.DNSEndpoint{}, client.InNamespace(ns))
	_ = c.C().DeleteAllOf(cx, &dnsv1.DNSZone{}, client.InNamespace(ns))
	deadline := time.Now().Add(90 * time.Second)
	for time.Now().Before(deadline) {
		var zs dnsv1.DNSZoneList
		if err := c.C().List(cx, &zs, client.InNamespace(ns)); err == nil && len(zs.Items) == 0 {
			break
		}
		time.Sleep(500 * time.Millisecond)
	}
	_ = c.C().Delete(cx, namespace(ns))
}

// leaseHolder returns the name of the pod holding the manager's Lease (its holderIdentity is
// <pod name>_<uuid>, controller-runtime's identity), or "" while none does: a leader that
// stopped gave the Lease up (LeaderElectionReleaseOnCancel) and no follower has taken it yet.
func leaseHolder(t *testing.T, c *cluster) string {
	t.Helper()
	id := strings.TrimSpace(kubectl(t, c, "get", "lease", "manager.dnsplane.io", "-o", "jsonpath={.spec.holderIdentity}"))
	pod, _, _ := strings.Cut(id, "_")
	return pod
}

// leaderPod waits up to 2 min for a pod to hold the manager's Lease, and returns it.
func leaderPod(t *testing.T, c *cluster) string {
	t.Helper()
	return waitNewLeader(t, c, "", "a leader")
}

// waitNewLeader waits up to 2 min for a pod other than old to hold the manager's Lease, and
// returns it; what names the wait in a failure.
func waitNewLeader(t *testing.T, c *cluster, old, what string) string {
	t.Helper()
	var pod string
	eventually(t, 120*time.Second, what, func() error {
		switch pod = leaseHolder(t, c); pod {
		case "":
			return fmt.Errorf("the Lease manager.dnsplane.io has no holder")
		case old:
			return fmt.Errorf("the Lease is still held by %s", old)
		}
		return nil
	})
	return pod
}

// axfrKind is the zone's AXFR from PowerDNS without the SOA, as sorted lines.
func axfrKind(t *testing.T, zone string) []string {
	t.Helper()
	rrs, err := axfr(suite.pdns.DNSAddr, zone)
	if err != nil {
		t.Fatalf("AXFR %s: %v", zone, err)
	}
	var out []string
	for _, l := range normalized(rrs) {
		if !strings.Contains(l, " SOA ") {
			out = append(out, l)
		}
	}
	return out
}

func waitPublished(t *testing.T, c *cluster, eps []*dnsv1.DNSEndpoint, timeout time.Duration) {
	t.Helper()
	for _, ep := range eps {
		c.waitCondition(t, ep, dnsv1.ConditionReady, metav1.ConditionTrue, dnsv1.ReasonPublished, timeout)
	}
}

func isPublished(t *testing.T, c *cluster, ep *dnsv1.DNSEndpoint) bool {
	cur := &dnsv1.DNSEndpoint{}
	if err := c.C().Get(ctx(t), clientKey(ep), cur); err != nil {
		return false
	}
	for _, cd := range cur.Status.Conditions {
		if cd.Type == dnsv1.ConditionReady && cd.Status == metav1.ConditionTrue && cd.Reason == dnsv1.ReasonPublished {
			return true
		}
	}
	return false
}

// writtenTwice returns the record sets (not at the zone apex) replaced more than once.
func writtenTwice(counts map[string]int, zone string) []string {
	var out []string
	for k, v := range counts {
		if v > 1 && strings.HasSuffix(k, " REPLACE") && !strings.HasPrefix(k, zone+". ") {
			out = append(out, fmt.Sprintf("%s x%d", k, v))
		}
	}
	sort.Strings(out)
	return out
}

// kindRunName is prefix with this run's start time: each run's namespaces and zones are its own,
// so that a run never meets what an interrupted one left behind.
func kindRunName(prefix string) string {
	return fmt.Sprintf("%s-%d", prefix, kindRunStart.Unix()%1000000)
}

var kindRunStart = time.Now()

func valuesFile(c *cluster) string {
	return filepath.Join(os.Getenv("E2E_KIND_VALUES_DIR"), "values-"+c.geo+".yaml")
}

// TestKindLeaderKilledMidPublish: in cluster 1 the leader publishes 60 DNSEndpoints; then 60
// more are applied while the PowerDNS proxy holds every write, and as soon as the leader's
// first write of them is held (it is mid-publish: wave 1 is at the provider, wave 2 is in
// flight), its pod is deleted with no grace period. The held writes are then dropped (503), so
// they never reach PowerDNS, as a write cut off by the kill would not. The follower takes the
// Lease and publishes the rest. Measured: kill -> the follower's Lease and its first reconcile
// (the first of 10 endpoints applied after the kill Published, polled every 200 ms). Nothing is
// written twice (the proxy forwarded each record set's REPLACE once, and each held one once,
// by the follower) and nothing is lost (every record in the AXFR taken at the kill is in the
// final AXFR, which holds all 130 exactly once).
func TestKindLeaderKilledMidPublish(t *testing.T) {
	kindOnly(t)
	onFailure(t)
	c := suite.clusters[0]
	const wave, late = 60, 10
	ns, zone := kindRunName("kind-kill"), kindRunName("kill")+".kind.test"
	proxy := startKindProxy(t)
	kindZone(t, c, proxy, ns, zone, false)
	t.Cleanup(func() { deleteNamespace(t, c, ns) })
	eps := make([]*dnsv1.DNSEndpoint, 2*wave+late)
	for i := range eps {
		eps[i] = kindEndpoint(ns, fmt.Sprintf("r%03d", i), fmt.Sprintf("r%03d.%s", i, zone), fmt.Sprintf("192.0.2.%d", i+1))
	}
	apply := func(eps []*dnsv1.DNSEndpoint) {
		objs := make([]client.Object, len(eps))
		for i, ep := range eps {
			objs[i] = ep
		}
		c.apply(t, objs...)
	}
	leader := leaderPod(t, c)
	apply(eps[:wave])
	waitPublished(t, c, eps[:wave], 120*time.Second)

	proxy.hold()
	apply(eps[wave : 2*wave])
	proxy.waitHeld(t, 60*time.Second)
	killed := time.Now()
	kubectl(t, c, "delete", "pod", leader, "--grace-period=0", "--force", "--wait=false")
	pending := 0
	for _, ep := range eps[:2*wave] {
		if !isPublished(t, c, ep) {
			pending++
		}
	}
	before := axfrKind(t, zone)
	// Endpoints applied after the kill: only the follower can publish them, so the first of them
	// Published is its first reconcile.
	apply(eps[2*wave:])
	newLeader := waitNewLeader(t, c, leader, "the follower takes the Lease of the killed pod")
	leaseTaken := time.Since(killed)
	held := proxy.drop()
	eventually(t, 120*time.Second, "the follower's first publish", func() error {
		for _, ep := range eps[2*wave:] {
			if isPublished(t, c, ep) {
				return nil
			}
		}
		return fmt.Errorf("none of the %d endpoints applied after the kill is Published", late)
	})
	firstReconcile := time.Since(killed)
	waitPublished(t, c, eps, 120*time.Second)
	allDone := time.Since(killed)
	acquire := strings.TrimSpace(kubectl(t, c, "get", "lease", "manager.dnsplane.io", "-o", "jsonpath={.spec.acquireTime}"))
	after := axfrKind(t, zone)
	checkKillResult(t, zone, 2*wave+late, before, after, proxy, held)
	t.Logf("leader %s killed mid-publish, with %d of %d endpoints not yet Published and %d record-set writes of them held; follower %s took the Lease within %s (acquireTime %s, kill at %s); its first reconcile (first endpoint applied after the kill Published) %s after the kill; all %d Published %s after the kill",
		leader, pending, 2*wave, len(held), newLeader, leaseTaken.Round(100*time.Millisecond), acquire, killed.UTC().Format(time.RFC3339Nano),
		firstReconcile.Round(100*time.Millisecond), 2*wave+late, allDone.Round(100*time.Millisecond))
}

// checkKillResult: nothing lost (before ⊆ after, all n names served once), nothing written
// twice, and each write the killed leader never made (held) made once by the follower.
func checkKillResult(t *testing.T, zone string, n int, before, after []string, proxy *kindProxy, held map[string]int) {
	t.Helper()
	writes := proxy.snapshot()
	if removed, _ := diff(before, after); len(removed) > 0 {
		t.Errorf("AXFR %s lost records across the leader kill: %v", zone, removed)
	}
	if d := duplicates(after); len(d) > 0 {
		t.Errorf("AXFR %s: duplicated records %v", zone, d)
	}
	a := 0
	for _, l := range after {
		if strings.Contains(l, " A ") && strings.HasPrefix(l, "r") {
			a++
		}
	}
	if a != n {
		t.Errorf("AXFR %s holds %d A records rNN, want %d:\n%s", zone, a, n, strings.Join(after, "\n"))
	}
	if twice := writtenTwice(writes, zone); len(twice) > 0 {
		var keys []string
		for _, k := range twice {
			keys = append(keys, k[:strings.LastIndex(k, " x")])
		}
		lines, refused := proxy.history(keys)
		t.Errorf("record sets written more than once across the leader kill (kill at the hold): %v\nthe writes of those sets, as PowerDNS answered them:\n%s\nwrites PowerDNS refused: %v",
			twice, strings.Join(lines, "\n"), refused)
	}
	if len(held) == 0 {
		t.Errorf("no write of the leader was held at the kill: it was not mid-publish")
	}
	for k := range held {
		if strings.HasSuffix(k, " REPLACE") && writes[k] != 1 {
			t.Errorf("%s, held from the killed leader, was written %d times by the follower, want 1", k, writes[k])
		}
	}
	replaces := 0
	for k, v := range writes {
		if strings.HasSuffix(k, " REPLACE") {
			replaces += v
		}
	}
	_, refused := proxy.history(nil)
	t.Logf("AXFR %s: %d records before the kill, %d after; %d rrset REPLACEs accepted by PowerDNS through the proxy; refused by PowerDNS: %v; held at the kill and dropped: %v", zone, len(before), len(after), replaces, refused, held)
}

// TestKindHelmUpgrade: with the objects in place, `helm upgrade` to another image tag (the same
// image, retagged) and changed values (a pod annotation, a CPU request). The rollout replaces
// both pods and the Lease changes hands. Nothing that did not change is republished: the proxy
// sees no write to the PowerDNS zone but the one record set changed afterwards (which also shows
// that the new leader reconciles). A record on the embedded server is answered through the dns
// Service throughout (a query every 200 ms).
func TestKindHelmUpgrade(t *testing.T) {
	kindOnly(t)
	onFailure(t)
	c := suite.clusters[0]
	onboard(t)
	ns, zone := kindRunName("kind-upgrade"), kindRunName("upgrade")+".kind.test"
	proxy := startKindProxy(t)
	kindZone(t, c, proxy, ns, zone, false)
	t.Cleanup(func() { deleteNamespace(t, c, ns) })
	var eps []*dnsv1.DNSEndpoint
	for i := 0; i < 5; i++ {
		eps = append(eps, kindEndpoint(ns, fmt.Sprintf("u%d", i), fmt.Sprintf("u%d.%s", i, zone), fmt.Sprintf("192.0.2.%d", 50+i)))
		c.apply(t, eps[i])
	}
	served := kindEndpoint(clusterNS, "kind-up", "up."+c.clusterZone(), "192.0.2.99")
	c.apply(t, served)
	waitPublished(t, c, append(slices.Clone(eps), served), 90*time.Second)
	waitServed(t, 30*time.Second, c.dnsAddr, "up."+c.clusterZone(), []string{"192.0.2.99"})
	beforeAXFR := axfrKind(t, zone)
	before := proxy.snapshot()
	oldLeader := leaderPod(t, c)

	loop := answerloop.Start(t, c.dnsAddr, []answerloop.Query{{Name: "up." + c.clusterZone(), Type: dns.TypeA, Allowed: []string{"192.0.2.99"}}},
		answerloop.Options{Interval: 200 * time.Millisecond, Authoritative: true})
	start := time.Now()
	newTag := os.Getenv("E2E_KIND_TAG") + "-upgrade"
	kindCmd(t, c, "sh", "-c", "E2E_NEW_TAG="+newTag+" && export E2E_NEW_TAG && "+os.Getenv("E2E_KIND_RETAG_CMD"))
	kindCmd(t, c, os.Getenv("E2E_KIND_HELM"), "upgrade", os.Getenv("E2E_KIND_RELEASE"), os.Getenv("E2E_KIND_CHART"),
		"-n", os.Getenv("E2E_KIND_NAMESPACE"), "-f", valuesFile(c), "--set", "image.tag="+newTag,
		"--set", "podAnnotations.e2e/upgraded=yes", "--set", "resources.requests.cpu=60m", "--wait", "--timeout", "300s")
	kubectl(t, c, "rollout", "status", "deployment/"+os.Getenv("E2E_KIND_RELEASE"), "--timeout=300s")
	upgraded := time.Since(start)
	newLeader := waitNewLeader(t, c, oldLeader, "a new leader after the upgrade")
	// The one change after the upgrade: its publication shows the new leader has reconciled.
	update(t, c, eps[0], func(e *dnsv1.DNSEndpoint) { e.Spec.Endpoints[0].Targets = dnsv1.Targets{"192.0.2.60"} })
	waitServed(t, 60*time.Second, suite.pdns.DNSAddr, "u0."+zone, []string{"192.0.2.60"})
	waitPublished(t, c, append(slices.Clone(eps), served), 60*time.Second)
	loop.Stop()
	checkUpgradeResult(t, zone, beforeAXFR, axfrKind(t, zone), since(before, proxy.snapshot()), loop)
	image := kubectl(t, c, "get", "deployment", os.Getenv("E2E_KIND_RELEASE"), "-o", "jsonpath={.spec.template.spec.containers[0].image}")
	t.Logf("helm upgrade to %s (leader %s -> %s) took %s; dns Service queries during it, one every 200 ms: %s",
		image, oldLeader, newLeader, upgraded.Round(100*time.Millisecond), loop)
}

func checkUpgradeResult(t *testing.T, zone string, before, after, writes []string, loop *answerloop.Loop) {
	t.Helper()
	for _, w := range writes {
		if !strings.HasPrefix(w, "u0."+zone+". A REPLACE") && !(strings.HasPrefix(w, "dp-a-") && strings.Contains(w, "-u0."+zone+". ")) {
			t.Errorf("written across the upgrade though it did not change: %s (all writes: %v)", w, writes)
		}
	}
	// u0's A record and its registry TXT (which names the target) change; nothing else may.
	u0 := func(rr string) bool {
		return strings.HasPrefix(rr, "u0."+zone+". ") || (strings.HasPrefix(rr, "dp-a-") && strings.Contains(rr, "-u0."+zone+". "))
	}
	removed, added := diff(before, after)
	if len(removed) != 2 || len(added) != 2 || !slices.ContainsFunc(added, func(rr string) bool { return strings.HasPrefix(rr, "u0."+zone+". ") }) ||
		slices.ContainsFunc(append(slices.Clone(removed), added...), func(rr string) bool { return !u0(rr) }) {
		t.Errorf("AXFR %s across the upgrade: removed %v, added %v; want only u0's target changed (its A and registry TXT)", zone, removed, added)
	}
	if n := loop.Failures.Load(); n > 0 || loop.Queries.Load() == 0 {
		t.Errorf("the dns Service failed %d queries during the upgrade: %s; first failures: %v", n, loop, loop.Examples())
	}
	t.Logf("writes across the upgrade and the one change after it: %v", writes)
}

// TestKindHelmUninstall follows docs/install.md's "Uninstall" in cluster 2 (delete the objects,
// then the DNSZones, then `helm uninstall`) and checks what it says is kept at the provider: the
// root zone e2e.test, which cluster 2 adopted (spec.zoneID) and cluster 1 created with
// preserveOnDelete, is still on PowerDNS with cluster 1's delegation, while a zone cluster 2
// created without preserveOnDelete is gone. Then in cluster 1 it runs `helm uninstall` with the
// objects in place: the CRDs and every object stay, the zone stays at the provider, and a
// reinstall from the same values picks the objects up again (Ready).
func TestKindHelmUninstall(t *testing.T) {
	kindOnly(t)
	onFailure(t)
	onboard(t)
	eu, us := suite.clusters[0], suite.clusters[1]
	proxy := startKindProxy(t)
	goneNS, goneZone := kindRunName("kind-gone"), kindRunName("gone")+".kind.test"
	kindZone(t, us, proxy, goneNS, goneZone, false)
	delegation := func() error {
		ns, _, err := referral(suite.pdns.DNSAddr, "www."+eu.clusterZone())
		if err != nil || len(ns) == 0 {
			return fmt.Errorf("no delegation of %s in %s: %v", eu.clusterZone(), rootZone, err)
		}
		return nil
	}
	eventually(t, 60*time.Second, "eu's delegation", delegation)
	start := time.Now()
	// docs/install.md, "Uninstall", in cluster us, word by word.
	kindCmd(t, us, os.Getenv("E2E_KIND_KUBECTL"), "delete", "gslbs,dnsrecords,dnsendpoints", "--all", "--all-namespaces", "--timeout=180s")
	kindCmd(t, us, os.Getenv("E2E_KIND_KUBECTL"), "delete", "dnszones", "--all", "--all-namespaces", "--timeout=180s")
	kindCmd(t, us, os.Getenv("E2E_KIND_HELM"), "uninstall", os.Getenv("E2E_KIND_RELEASE"), "-n", os.Getenv("E2E_KIND_NAMESPACE"), "--wait")
	if _, err := axfr(suite.pdns.DNSAddr, goneZone); err == nil {
		t.Errorf("zone %s, created by cluster us without preserveOnDelete, is still on PowerDNS after its DNSZone was deleted", goneZone)
	}
	root := axfrKind(t, rootZone)
	if err := delegation(); err != nil {
		t.Errorf("after cluster us deleted its adopted root DNSZone: %v", err)
	}
	t.Logf("cluster us uninstalled as docs/install.md says in %s; %s kept with %d records", time.Since(start).Round(100*time.Millisecond), rootZone, len(root))

	// Cluster eu: helm uninstall with the objects in place.
	kindCmd(t, eu, os.Getenv("E2E_KIND_HELM"), "uninstall", os.Getenv("E2E_KIND_RELEASE"), "-n", os.Getenv("E2E_KIND_NAMESPACE"), "--wait")
	for _, crd := range []string{"dnszones", "dnsrecords", "dnsendpoints", "gslbs"} {
		kindCmd(t, eu, os.Getenv("E2E_KIND_KUBECTL"), "get", "crd", crd+".dnsplane.io")
	}
	for _, obj := range []client.Object{rootZoneObj(""), clusterZoneObj(eu)} {
		if err := eu.C().Get(ctx(t), clientKey(obj), obj); err != nil {
			t.Errorf("after helm uninstall: %s/%s: %v", obj.GetNamespace(), obj.GetName(), err)
		}
	}
	if removed, _ := diff(root, axfrKind(t, rootZone)); len(removed) > 0 {
		t.Errorf("AXFR %s lost records at helm uninstall: %v", rootZone, removed)
	}
	// Reinstalling picks the objects up again.
	kindCmd(t, eu, os.Getenv("E2E_KIND_HELM"), "install", os.Getenv("E2E_KIND_RELEASE"), os.Getenv("E2E_KIND_CHART"),
		"-n", os.Getenv("E2E_KIND_NAMESPACE"), "-f", valuesFile(eu), "--wait", "--timeout", "300s")
	eu.waitCondition(t, rootZoneObj(""), dnsv1.ConditionReady, metav1.ConditionTrue, dnsv1.ReasonReady, 120*time.Second)
	eu.waitCondition(t, clusterZoneObj(eu), dnsv1.ConditionReady, metav1.ConditionTrue, dnsv1.ReasonReady, 120*time.Second)
	t.Logf("cluster eu: helm uninstall kept the CRDs, the objects and %s; reinstalled and Ready again, %s in all", rootZone, time.Since(start).Round(100*time.Millisecond))
}
