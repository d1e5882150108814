package controllers_test

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	dnsv1 "github.com/dnsplane/dnsplane/apis/v1alpha1"
	"github.com/dnsplane/dnsplane/internal/testing/conditions"
)

// throttleBudget bounds the requests dnsplane may send to a Route 53 that throttles every one
// of them for throttleFor: one zone, one writer (pkg/zonewriter), whose flush the AWS SDK tries
// up to 3 times, retried by pkg/provider/guard on a back-off from 200 ms doubling to 30 s, then
// by the object's rate limiter (docs/reliability.md, "The retry budget"). An upper bound on a
// count, never on a time: a slower machine sends fewer.
const (
	throttleFor    = time.Minute
	throttleBudget = 120
)

// TestRoute53_ThrottledForAWholeMinute: the Route 53 fake throttles for a whole minute:
// a published DNSEndpoint of 40 names is changed (20 targets moved, 20 names removed, 20 added)
// as the fake starts answering every request with 400 Throttling for a minute. The requests in
// that minute stay within throttleBudget; the object never says Published for the new
// generation before it is written (it keeps its last condition, for the generation before,
// while the write waits in the writer's retries); and once the minute is over every wanted name
// is served with exactly its new target and every removed name with nothing: nothing lost,
// nothing duplicated.
func TestRoute53_ThrottledForAWholeMinute(t *testing.T) {
	fake, r53 := startRoute53(t, "")
	ns := "throttle"
	create(t, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, secretObj(ns, "dns", r53.secretType, r53.data))
	zone := zoneObj(ns, "z", "throttle-r53.test", nil)
	name := func(i int) string { return "h" + strconv.Itoa(i) + ".throttle-r53.test" }
	eps := func(from, to int, octet int) []dnsv1.Endpoint {
		var out []dnsv1.Endpoint
		for i := from; i < to; i++ {
			out = append(out, dnsv1.Endpoint{DNSName: name(i), RecordType: "A", Targets: dnsv1.Targets{fmt.Sprintf("192.0.%d.%d", octet, i)}})
		}
		return out
	}
	ep := endpointObj(ns, "names", eps(0, 40, 2)...)
	create(t, zone, ep)
	t.Cleanup(func() { deleteAll(t, ns) })
	waitCondition(t, zone, dnsv1.ConditionReady, metav1.ConditionTrue, dnsv1.ReasonReady)
	waitCondition(t, ep, dnsv1.ConditionReady, metav1.ConditionTrue, dnsv1.ReasonPublished)

	// The change goes in as the throttle begins: 0-19 stay, 20-39 move, 40-59 are new; then 0-19
	// are removed, so the wanted set is 20-59 at 198.51.100.x.
	throttledBefore := fake.Count("Throttled")
	end := time.Now().Add(throttleFor)
	fake.ThrottleUntil(end)
	updateIn(t, k8s, ep, func() {
		moved := eps(20, 60, 0)
		for i := range moved {
			moved[i].Targets = dnsv1.Targets{fmt.Sprintf("198.51.100.%d", 20+i)}
		}
		ep.Spec.Endpoints = moved
	})
	// What the object says while throttled: polled every second, every reason seen, with the
	// generation it describes. Published for the new generation before the minute ends would
	// be a lie: nothing can be written then.
	var mu sync.Mutex
	seen := map[string]string{}
	var lies []string
	stop := make(chan struct{})
	done := make(chan struct{})
	poll := ep.DeepCopy()
	newGen := ep.Generation // the suite's client reads a cache, which may still show the old one
	go func() {
		defer close(done)
		for {
			if c, err := condition(t, poll, dnsv1.ConditionReady); err == nil {
				mu.Lock()
				current := c.ObservedGeneration >= newGen
				seen[fmt.Sprintf("%s (generation %d of %d)", c.Reason, c.ObservedGeneration, poll.Generation)] = c.Message
				if c.Reason == dnsv1.ReasonPublished && current && time.Now().Before(end) {
					lies = append(lies, c.Message)
				}
				mu.Unlock()
			}
			select {
			case <-stop:
				return
			case <-time.After(time.Second):
			}
		}
	}()
	time.Sleep(time.Until(end)) // the throttle's minute is the scenario, not a bound
	throttled := fake.Count("Throttled") - throttledBefore
	t.Logf("requests throttled in the minute: %d (budget %d)", throttled, throttleBudget)
	if throttled > throttleBudget {
		t.Errorf("%d requests in a throttled minute, over the budget of %d", throttled, throttleBudget)
	}
	if throttled == 0 {
		t.Errorf("no request was throttled: the change was written before the throttle began")
	}

	conditions.Wait(t, k8s, ep, dnsv1.ConditionReady, conditions.Want{Status: metav1.ConditionTrue, Reason: dnsv1.ReasonPublished, Current: true}, 3*time.Minute)
	close(stop)
	<-done
	mu.Lock()
	reasons := make([]string, 0, len(seen))
	for r, msg := range seen {
		reasons = append(reasons, r+": "+msg)
	}
	mu.Unlock()
	slices.Sort(reasons)
	t.Logf("Ready conditions seen while throttled: %s", strings.Join(reasons, " | "))
	if len(lies) > 0 {
		t.Errorf("Published for the new generation while every write was throttled: %q", lies)
	}
	for i := range 60 {
		want := []string{fmt.Sprintf("198.51.100.%d", i)}
		if i < 20 {
			want = nil
		}
		if got := served(t, r53.dnsAddr, name(i)); !slices.Equal(got, want) {
			t.Errorf("%s served %v, want %v", name(i), got, want)
		}
	}
}
