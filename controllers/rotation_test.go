package controllers_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	dnsv1 "github.com/dnsplane/dnsplane/apis/v1alpha1"
	"github.com/dnsplane/dnsplane/internal/testing/route53fake"
	"github.com/dnsplane/dnsplane/pkg/provider/aws"
	"github.com/dnsplane/dnsplane/pkg/registry"
)

// heartbeatAt returns the heartbeat of contributor c's registry record for the A set name, read
// from the Route 53 fake with the credentials it accepts now.
func heartbeatAt(ctx context.Context, fake *route53fake.Server, keyID, secret, zoneID, name string, c registry.Contributor) (time.Time, error) {
	p, err := aws.New(ctx, aws.Config{AccessKeyID: keyID, SecretAccessKey: secret, EndpointURL: fake.URL, MaxAttempts: 1})
	if err != nil {
		return time.Time{}, err
	}
	sets, err := p.ListRecordSets(ctx, zoneID)
	if err != nil {
		return time.Time{}, err
	}
	for _, s := range sets {
		if !registry.IsRegistryName(s.Name) || s.Type != "TXT" {
			continue
		}
		for _, v := range s.Targets {
			if e, err := registry.Parse(v); err == nil && e.Contributor() == c && e.Name == name && e.Type == "A" {
				return e.Heartbeat, nil
			}
		}
	}
	return time.Time{}, errors.New("no registry record of " + c.String() + " for " + name)
}

// TestHeartbeats_UseRotatedCredentials: a DNSRecord's heartbeats on Route 53
// go on after its Secret is rotated to a new access key and the old key is revoked. Nothing
// re-plans the DNSRecord (its zone stays usable), so only the zone writer resolving the provider
// from the current Secret at each call keeps them going; they used to fail until a planner next
// called zonewriter.Set.For (up to --zone-resync-interval).
func TestHeartbeats_UseRotatedCredentials(t *testing.T) {
	fake, r53 := startRoute53(t, "")
	const interval, threshold = time.Second, time.Minute
	c := startCluster(t, "cluster-rot", interval, threshold)
	c.create(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "apps"}}, secretObj("apps", "dns", r53.secretType, r53.data))
	z := zoneObj("apps", "rot", "rot.test", nil)
	c.create(z)
	c.waitCondition(z, dnsv1.ConditionReady, metav1.ConditionTrue, dnsv1.ReasonReady, time.Minute)
	rec := recordObj("app", "app.rot.test", dnsv1.Endpoint{DNSName: "app.rot.test", RecordType: "A", Targets: dnsv1.Targets{"192.0.2.7"}})
	c.create(rec)
	c.waitCondition(rec, dnsv1.ConditionReady, metav1.ConditionTrue, dnsv1.ReasonPublished, 30*time.Second)
	self := registry.Contributor{OwnerID: "cluster-rot", Resource: registry.Resource("DNSRecord", "apps", "app")}
	keyID, secret := fake.AccessKeyID, fake.SecretAccessKey
	beatAfter := func(at time.Time) func() error {
		return func() error {
			hb, err := heartbeatAt(c.ctx(), fake, keyID, secret, z.Status.ZoneID, "app.rot.test", self)
			if err != nil {
				return err
			}
			if !hb.After(at) {
				return fmt.Errorf("last heartbeat %s, not after %s", hb.Format(time.RFC3339), at.Format(time.RFC3339))
			}
			return nil
		}
	}
	eventually(t, 15*time.Second, "a heartbeat before the rotation", beatAfter(time.Now()))

	// Rotate: the fake accepts only the new key from now on, and the Secret holds it.
	keyID, secret = "AKIDROTATED", "rotated-secret"
	fake.Rotate(keyID, secret)
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "apps", Name: "dns"}}
	updateIn(t, c.client, s, func() { s.StringData = with(r53.data, "AWS_ACCESS_KEY_ID", keyID, "AWS_SECRET_ACCESS_KEY", secret) })
	rotated := time.Now()
	eventually(t, 30*time.Second, "a heartbeat with the rotated key", beatAfter(rotated))
	t.Logf("from the Secret's rotation to the first heartbeat with the new key: %s (interval %s)",
		time.Since(rotated).Round(100*time.Millisecond), interval)
}
