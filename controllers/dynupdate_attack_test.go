package controllers_test

import (
	"errors"
	"testing"
	"time"

	"github.com/miekg/dns"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	dnsv1 "github.com/dnsplane/dnsplane/apis/v1alpha1"
)

// TestDynamicUpdates_UnjudgedSquatterKeysAreNotUsed: a DNSZone of another namespace for a zone
// a DNSZone already holds, whose provider Secret does not exist, is never judged by the
// tenancy rules (ZoneAvailable=False ProviderNotFound, not ZoneConflict): it holds nothing, so
// its key of the holder's key name (the namespace sorts first) binds nothing either. The
// holder's UPDATE is NOERROR, and the squatter's own UPDATE signed with that key is BADKEY.
func TestDynamicUpdates_UnjudgedSquatterKeysAreNotUsed(t *testing.T) {
	dynZone(t, "dynupdate-holder2", "squat2.test")
	sq := namespace(t, "aaa-dynupdate-squat2")
	squatter := zoneObj(sq, "zone", "squat2.test", func(z *dnsv1.DNSZone) {
		z.Spec.ProviderRef = dnsv1.SecretReference{Name: "no-such-provider"}
		z.Spec.DynamicUpdates = []dnsv1.DynamicUpdate{{KeySecretRef: dnsv1.SecretReference{Name: "acme-key"}}}
	})
	create(t, tsigSecret(sq, "acme-key", "acme-key", "hmac-sha256", wrongSecret), squatter)
	waitCondition(t, squatter, dnsv1.ConditionZoneAvailable, metav1.ConditionFalse, dnsv1.ReasonProviderNotFound)
	var c *metav1.Condition
	eventually(t, 30*time.Second, "the squatter's DynamicUpdatesReady", func() error {
		var z dnsv1.DNSZone
		if err := k8s.Get(ctxT(t), client.ObjectKeyFromObject(squatter), &z); err != nil {
			return err
		}
		if c = meta.FindStatusCondition(z.Status.Conditions, dnsv1.ConditionDynamicUpdatesReady); c == nil {
			return errors.New("none yet")
		}
		return nil
	})
	t.Logf("the squatter's DynamicUpdatesReady: %s %s: %s", c.Status, c.Reason, c.Message)
	const name = "_acme-challenge.squat2.test."
	rcode, _, err := exchange(updateMsg("squat2.test", func(m *dns.Msg) { m.Insert(txtRR(t, name+` 60 IN TXT "holder-token"`)) }))
	if err != nil || rcode != dns.RcodeSuccess {
		t.Fatalf("the holder's UPDATE with an unjudged squatter binding its key name: %s, %v; want NOERROR", dns.RcodeToString[rcode], err)
	}
	waitTXT(t, dnsAddr, name, "holder-token")
	if c.Status != metav1.ConditionFalse || c.Reason != dnsv1.ReasonProviderNotFound {
		t.Fatalf("the squatter's DynamicUpdatesReady is %s %s; want False %s", c.Status, c.Reason, dnsv1.ReasonProviderNotFound)
	}
}
