//go:build attack

package controllers_test

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// TestAttack_CorruptKeySecretThenRestart: a signed, Secure child; its key Secret's keyset.json
// is overwritten with text that does not parse (a bad hand edit), then the manager restarts (a
// new replica, a rolling update). docs/dnssec.md: a key Secret that "does not parse ... changes
// nothing: the zone keeps the keys it is signed with"; "KeysInvalid ... it is left untouched";
// common rule: bad input never corrupts state. The parent answers the DS throughout.
func TestAttack_CorruptKeySecretThenRestart(t *testing.T) {
	a := newAttackPair(t, "atk-corrupt")
	eventually(t, 20*time.Second, "corrupt keyset.json", func() error {
		var sec corev1.Secret
		if err := a.c.client.Get(a.c.ctx(), client.ObjectKey{Namespace: a.ns, Name: "c-dnssec"}, &sec); err != nil {
			return err
		}
		sec.Data["keyset.json"] = []byte(`{"zone": "c.atk.dnssec.test.", "keys": [`)
		return a.c.client.Update(a.c.ctx(), &sec)
	})
	a.childLastHolds(t, 3*time.Second)
	a.c.stopManager()
	a.c.startManager()
	time.Sleep(15 * time.Second) // past the signer's Pending read
	var sec corev1.Secret
	if err := a.c.client.Get(a.c.ctx(), client.ObjectKey{Namespace: a.ns, Name: "c-dnssec"}, &sec); err != nil {
		t.Fatal(err)
	}
	t.Logf("keyset.json after the restart: %.60s", sec.Data["keyset.json"])
	a.childLastHolds(t, 10*time.Second)
}
