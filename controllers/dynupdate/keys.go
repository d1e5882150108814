package dynupdate

import (
	"context"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/miekg/dns"

	dnsv1 "github.com/dnsplane/dnsplane/apis/v1alpha1"
	"github.com/dnsplane/dnsplane/controllers/internal/replica"
	"github.com/dnsplane/dnsplane/controllers/internal/status"
	"github.com/dnsplane/dnsplane/pkg/dnswire"
	"github.com/dnsplane/dnsplane/pkg/dynupdate"
)

// KeyReread is how often the keys controller reads a DNSZone's key Secrets again: Secrets are
// never watched (docs/design.md, "Provider Secrets"), so a created, fixed or rotated key Secret
// is used within this time.
const KeyReread = 30 * time.Second

// Keys reconciles DNSZones into a keyring on every replica. Build it with its fields and
// SetupWithManager.
type Keys struct {
	// Client reads DNSZones from the cache and patches their status.
	Client client.Client
	// Secrets reads key Secrets by name: the manager's API reader (Secrets are not cached).
	Secrets client.Reader
	// Keyring is the replica's key set, read by the Applier.
	Keyring *dynupdate.Keyring
	// Recorder records Events on DNSZones when DynamicUpdatesReady changes.
	Recorder record.EventRecorder
	// Elected is closed once this replica leads (ctrl.Manager.Elected): only the leader writes
	// the DynamicUpdatesReady condition.
	Elected <-chan struct{}
}

// SetupWithManager watches DNSZones' spec changes and deletions on every replica (the keyring
// must be everywhere an UPDATE may arrive).
func (k *Keys) SetupWithManager(mgr ctrl.Manager, name string) error {
	return replica.WatchDNSZones(mgr, name, holdChanged, k)
}

// Reconcile reads the DNSZone and its key Secrets, replaces its bindings in the keyring, and on
// the leader sets DynamicUpdatesReady. A DNSZone without spec.dynamicUpdates, deleted or being
// deleted binds nothing (and its condition is removed). Errors: the API server's, retried.
func (k *Keys) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var z dnsv1.DNSZone
	if err := k.Client.Get(ctx, req.NamespacedName, &z); err != nil {
		if apierrors.IsNotFound(err) {
			k.Keyring.Set(req.NamespacedName, nil)
			return ctrl.Result{}, nil
		}
		return ctrl.Result{}, err
	}
	if !z.DeletionTimestamp.IsZero() || len(z.Spec.DynamicUpdates) == 0 {
		k.Keyring.Set(req.NamespacedName, nil)
		return k.writeCondition(ctx, &z, nil, ctrl.Result{})
	}
	if p := notHeld(&z); p != nil {
		k.Keyring.Set(req.NamespacedName, nil)
		if p.reason == dnsv1.ReasonAwaitingZone { // no verdict yet: nothing to say either
			return ctrl.Result{RequeueAfter: KeyReread}, nil
		}
		return k.writeCondition(ctx, &z, p, ctrl.Result{RequeueAfter: KeyReread})
	}
	bindings, problem, err := k.resolve(ctx, &z)
	if err != nil {
		return ctrl.Result{}, err
	}
	k.Keyring.Set(req.NamespacedName, bindings)
	return k.writeCondition(ctx, &z, problem, ctrl.Result{RequeueAfter: KeyReread})
}

// notHeld returns why z's keys may not verify UPDATEs of its zone, nil when they may: only a
// DNSZone that holds its zone binds keys to it. A DNSZone the tenancy rules or its provider
// refuse (ZoneAvailable=False ZoneConflict or ParentNotAllowed: another namespace's DNSZone, or
// another account, holds the zone) binds none, whatever its keys: its key of the holder's key
// name would otherwise be one the holder's UPDATEs are verified with. Nor does one the tenancy
// rules have not accepted yet: ZoneAvailable is True, or status.zoneID is set (the DNSZone
// controller sets it only once the verdict accepts the zone), for a DNSZone that holds it; one
// whose provider cannot be resolved (ProviderNotFound) is judged by nobody. One not judged at
// all (no ZoneAvailable condition) binds none until it is, and has no DynamicUpdatesReady yet.
func notHeld(z *dnsv1.DNSZone) *keyProblem {
	c := meta.FindStatusCondition(z.Status.Conditions, dnsv1.ConditionZoneAvailable)
	switch {
	case c == nil:
		return &keyProblem{dnsv1.ReasonAwaitingZone, fmt.Sprintf(
			"the keys verify UPDATEs of zone %s once this DNSZone is judged to hold it (no ZoneAvailable condition yet)", z.Spec.Zone)}
	case c.Status == metav1.ConditionFalse && refusedZone(c.Reason):
		return &keyProblem{c.Reason, fmt.Sprintf(
			"the keys are not used: this DNSZone does not hold zone %s, so UPDATEs of it are never verified with them (ZoneAvailable: %s)", z.Spec.Zone, c.Message)}
	case c.Status != metav1.ConditionTrue && z.Status.ZoneID == "":
		return &keyProblem{c.Reason, fmt.Sprintf(
			"the keys verify UPDATEs of zone %s once this DNSZone is judged to hold it (ZoneAvailable: %s)", z.Spec.Zone, c.Message)}
	}
	return nil
}

// refusedZone reports whether a ZoneAvailable reason says the DNSZone does not hold its zone.
func refusedZone(reason string) bool {
	return reason == dnsv1.ReasonZoneConflict || reason == dnsv1.ReasonParentNotAllowed
}

// holdChanged reports a DNSZone's status change that changes notHeld's answer (a tenancy
// verdict or the first ZoneAvailable condition), which GenerationChangedPredicate drops.
func holdChanged(o, n *dnsv1.DNSZone) bool {
	if len(n.Spec.DynamicUpdates) == 0 {
		return false
	}
	po, pn := notHeld(o), notHeld(n)
	return (po == nil) != (pn == nil) || (po != nil && pn != nil && po.reason != pn.reason)
}

// keyProblem is why a DNSZone's keys are not all usable: the condition's reason and message.
type keyProblem struct{ reason, message string }

// resolve reads every key Secret of z and returns the bindings of the usable ones and, when
// some is not, the first problem. Errors: reads that failed other than NotFound.
func (k *Keys) resolve(ctx context.Context, z *dnsv1.DNSZone) ([]dynupdate.Binding, *keyProblem, error) {
	var out []dynupdate.Binding
	var problem *keyProblem
	note := func(p keyProblem) {
		if problem == nil {
			problem = &p
		}
	}
	zoneKey := client.ObjectKeyFromObject(z)
	names := map[string]string{} // key name -> Secret, within this DNSZone
	for _, du := range z.Spec.DynamicUpdates {
		s, err := replica.GetSecret(ctx, k.Secrets, types.NamespacedName{Namespace: z.Namespace, Name: du.KeySecretRef.Name})
		if apierrors.IsNotFound(err) {
			note(keyProblem{dnsv1.ReasonKeySecretNotFound, fmt.Sprintf("Secret %s not found", du.KeySecretRef.Name)})
			continue
		}
		if err != nil {
			return nil, nil, fmt.Errorf("key Secret: %w", err)
		}
		key, err := dynupdate.ParseKey(string(s.Type), s.Data)
		if err != nil {
			note(keyProblem{dnsv1.ReasonInvalidKeySecret, fmt.Sprintf("Secret %s: %v", du.KeySecretRef.Name, err)})
			continue
		}
		if other, dup := names[key.Name]; dup {
			note(keyProblem{dnsv1.ReasonInvalidKeySecret, fmt.Sprintf("Secrets %s and %s hold the same key name %s", other, du.KeySecretRef.Name, key.Name)})
			continue
		}
		names[key.Name] = du.KeySecretRef.Name
		out = append(out, dynupdate.Binding{DNSZone: zoneKey, Zone: dnswire.Fqdn(z.Spec.Zone), Secret: du.KeySecretRef.Name, Key: key,
			Policy: policy(du)})
	}
	return out, problem, nil
}

// policy returns du's policy, with the API's defaults where a field is empty (an object written
// before the defaults existed).
func policy(du dnsv1.DynamicUpdate) dynupdate.Policy {
	p := dynupdate.Policy{Names: du.Names}
	if len(p.Names) == 0 {
		p.Names = []string{"_acme-challenge.*"}
	}
	for _, t := range du.Types {
		if n, ok := dns.StringToType[string(t)]; ok {
			p.Types = append(p.Types, n)
		}
	}
	if len(du.Types) == 0 {
		p.Types = []uint16{dns.TypeTXT}
	}
	return p
}

// elected reports whether this replica leads.
func (k *Keys) elected() bool {
	if k.Elected == nil {
		return true
	}
	select {
	case <-k.Elected:
		return true
	default:
		return false
	}
}

// writeCondition sets, on the leader, z's DynamicUpdatesReady from problem (nil = every key
// usable), or removes it when z binds no key; an Event goes with a change. It returns then,
// or status.StaleRequeue when z's copy was stale (a Conflict: another controller wrote its
// status meanwhile).
func (k *Keys) writeCondition(ctx context.Context, z *dnsv1.DNSZone, problem *keyProblem, then ctrl.Result) (ctrl.Result, error) {
	if !k.elected() {
		return then, nil
	}
	base := z.DeepCopy()
	before := append([]metav1.Condition(nil), z.Status.Conditions...)
	switch {
	case len(z.Spec.DynamicUpdates) == 0 || !z.DeletionTimestamp.IsZero():
		if !meta.RemoveStatusCondition(&z.Status.Conditions, dnsv1.ConditionDynamicUpdatesReady) {
			return then, nil
		}
	case problem != nil:
		status.Set(&z.Status.Conditions, z.Generation, dnsv1.ConditionDynamicUpdatesReady, false, problem.reason, problem.message)
	default:
		status.Set(&z.Status.Conditions, z.Generation, dnsv1.ConditionDynamicUpdatesReady, true, dnsv1.ReasonKeysResolved,
			fmt.Sprintf("%d keys usable", len(z.Spec.DynamicUpdates)))
	}
	if equalConditions(before, z.Status.Conditions) {
		return then, nil
	}
	if err := k.Client.Status().Patch(ctx, z, client.MergeFromWithOptions(base, client.MergeFromWithOptimisticLock{})); err != nil {
		switch {
		case apierrors.IsConflict(err):
			return status.StaleRequeue(), nil
		case apierrors.IsNotFound(err):
			return ctrl.Result{}, nil
		}
		return ctrl.Result{}, fmt.Errorf("patch DNSZone %s/%s status: %w", z.Namespace, z.Name, err)
	}
	if k.Recorder != nil {
		status.EventOnChange(k.Recorder, z, before, z.Status.Conditions, dnsv1.ConditionDynamicUpdatesReady)
	}
	return then, nil
}

func equalConditions(a, b []metav1.Condition) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		x, y := a[i], b[i]
		if x.Type != y.Type || x.Status != y.Status || x.Reason != y.Reason || x.Message != y.Message || x.ObservedGeneration != y.ObservedGeneration {
			return false
		}
	}
	return true
}
