package app_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	dnsv1 "github.com/dnsplane/dnsplane/apis/v1alpha1"
	"github.com/dnsplane/dnsplane/internal/app"
	"github.com/dnsplane/dnsplane/internal/testing/envtest"
	"github.com/dnsplane/dnsplane/internal/testing/testrun"
	"github.com/dnsplane/dnsplane/pkg/provider/factory"
)

// TestReplicas_StoppingLeaderWritesUntilItGivesTheLeaseUp is a rollout's leader step by step,
// with two replicas of the embedded zone store and a 3 s --local-dns-drain:
//   - told to stop (SIGTERM: its ctx ends), the leader's embedded server drains, and its
//     controllers run on: a DNSEndpoint created in that window is published by the stopping
//     leader, while the follower does not lead yet. Its zone writers live as long as its
//     controllers, not as long as ctx: before, this publish failed with "zone writer stopped";
//   - once stopped, it has given the Lease up (LeaderElectionReleaseOnCancel): the Lease names
//     the old leader no more, so the follower takes over within its retry period rather than
//     after the 15 s lease (the time is logged, not asserted);
//   - the new leader publishes, and both the record published in the drain and the new one are
//     answered by it.
func TestReplicas_StoppingLeaderWritesUntilItGivesTheLeaseUp(t *testing.T) {
	usableLoopback(t, "127.0.0.33", "127.0.0.34")
	cfg := envtest.Start(t, "../..")
	dnsService(t, cfg)
	drain := func(c *app.Config) { c.DNSDrain = 3 * time.Second }
	leader, others := leaderOf(t, startReplica(t, cfg, "127.0.0.33", drain), startReplica(t, cfg, "127.0.0.34", drain))
	follower := others[0]
	admin, err := client.New(cfg, client.Options{Scheme: app.NewScheme()})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	const ns = "rollout"
	for _, o := range []client.Object{
		&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}},
		&corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "dns"}, Type: factory.TypeLocal},
		&dnsv1.DNSZone{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "zone"}, Spec: dnsv1.DNSZoneSpec{Zone: "rollout.test", ProviderRef: dnsv1.SecretReference{Name: "dns"}}},
	} {
		if err := admin.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	endpoint := func(name, ip string) *dnsv1.DNSEndpoint {
		return &dnsv1.DNSEndpoint{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: dnsv1.DNSEndpointSpec{PublishingSpec: dnsv1.PublishingSpec{
			Endpoints: []dnsv1.Endpoint{{DNSName: name + ".rollout.test", RecordType: "A", RecordTTL: 60, Targets: dnsv1.Targets{ip}}}}}}
	}
	create := func(ep *dnsv1.DNSEndpoint) {
		t.Helper()
		if err := admin.Create(ctx, ep); err != nil {
			t.Fatal(err)
		}
	}
	waitReadyThrough(t, admin, map[client.Object]string{&dnsv1.DNSZone{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "zone"}}: dnsv1.ReasonReady})
	lease := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: replicasNS, Name: "manager.dnsplane.io"}}
	if err := admin.Get(ctx, client.ObjectKeyFromObject(lease), lease); err != nil {
		t.Fatal(err)
	}
	oldHolder := *lease.Spec.HolderIdentity

	stopped := make(chan struct{})
	stopAt := time.Now()
	go func() { defer close(stopped); leader.stop() }()
	testrun.Eventually(t, 10*time.Second, "the leader's embedded server drains", func() error {
		if leader.a.Server.Ready(nil) == nil {
			return fmt.Errorf("still ready")
		}
		return nil
	})
	during := endpoint("during", "192.0.2.1")
	create(during)
	waitReadyThrough(t, admin, map[client.Object]string{during: dnsv1.ReasonPublished})
	publishedAt := time.Since(stopAt)
	if follower.leads() {
		t.Fatalf("the follower led before the endpoint created in the drain was Published (%s after the stop): the stopping leader did not publish it", publishedAt.Round(time.Millisecond))
	}
	<-stopped
	leaderStopped := time.Since(stopAt)
	if err := admin.Get(ctx, client.ObjectKeyFromObject(lease), lease); err != nil {
		t.Fatal(err)
	}
	if h := lease.Spec.HolderIdentity; h != nil && *h == oldHolder {
		t.Errorf("the stopped leader still holds the Lease (%s): it was not given up on stop", oldHolder)
	}
	testrun.Eventually(t, time.Minute, "the follower leads", func() error {
		if !follower.leads() {
			return fmt.Errorf("not yet")
		}
		return nil
	})
	takeover := time.Since(stopAt)
	after := endpoint("after", "192.0.2.2")
	create(after)
	waitReadyThrough(t, admin, map[client.Object]string{after: dnsv1.ReasonPublished})
	for name, ip := range map[string]string{"during.rollout.test": "192.0.2.1", "after.rollout.test": "192.0.2.2"} {
		testrun.Eventually(t, 10*time.Second, name+" answered by the new leader", func() error { return answered(follower.addr, name, ip) })
	}
	t.Logf("after the leader's stop: the endpoint created in its drain Published by it at %s; it stopped at %s, the Lease given up; the follower led at %s",
		publishedAt.Round(time.Millisecond), leaderStopped.Round(time.Millisecond), takeover.Round(time.Millisecond))
}
