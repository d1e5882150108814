package dnszone

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	dnsv1 "github.com/dnsplane/dnsplane/apis/v1alpha1"
	"github.com/dnsplane/dnsplane/controllers/internal/predicates"
	"github.com/dnsplane/dnsplane/pkg/dnssec"
	"github.com/dnsplane/dnsplane/pkg/dnswire"
)

// AnnotationRollover asks for a key rollover by hand: KSK, ZSK or CSK, the role of the active
// key to replace. The controller removes it once it has read it, whether it started a rollover
// (one already under way, or a role the zone has no active key of, starts none), so it never
// triggers twice.
const AnnotationRollover = "dnsplane.io/rollover"

// The TTLs of the rollover policy (docs/dnssec.md, "Rollovers"). The DNSKEY RRset is served with
// the zone's default TTL; maxZoneTTL bounds the TTL of every other RRset of a signed zone (a
// resolver's signature cache is waited out for this long); the parent writes the DS with dsTTL.
const (
	dnskeyTTL  = dnsv1.DefaultTTL * time.Second
	maxZoneTTL = 86400 * time.Second
)

// maxRolloverWake bounds how long a zone in a rollover waits before it is looked at again.
const maxRolloverWake = 10 * time.Minute

// RolloverTTLs overrides the TTLs the rollover machine waits out (zero: the defaults dnskeyTTL,
// maxZoneTTL and dsTTL). It is set by tests that run a rollover to its end; the manager has no
// flag for it.
type RolloverTTLs struct {
	DNSKEY, MaxZone, ParentDS time.Duration
}

// keyPolicy is the rollover machine's policy of a zone's spec.dnssec.
func (r *Reconciler) keyPolicy(d *dnsv1.DNSSEC) (dnssec.KeyPolicy, error) {
	pol, err := keyPolicy(d)
	if err != nil {
		return pol, err
	}
	t := r.RolloverTTLs
	pol.DNSKEYTTL = cmp.Or(t.DNSKEY, pol.DNSKEYTTL)
	pol.MaxZoneTTL = cmp.Or(t.MaxZone, pol.MaxZoneTTL)
	pol.ParentDSTTL = cmp.Or(t.ParentDS, pol.ParentDSTTL).Truncate(time.Second)
	return pol, nil
}

// keyPolicy is the rollover machine's default policy of a zone's spec.dnssec.
func keyPolicy(d *dnsv1.DNSSEC) (dnssec.KeyPolicy, error) {
	alg, err := dnssec.Algorithm(string(cmp.Or(d.Algorithm, dnsv1.AlgorithmECDSAP256SHA256)))
	if err != nil {
		return dnssec.KeyPolicy{}, err
	}
	scheme := dnssec.SchemeCSK
	ksk := time.Duration(d.Keys.Lifetime(string(dnssec.RoleCSK))) * time.Second
	if d.Keys.Scheme == dnsv1.KeySchemeKSKZSK {
		scheme = dnssec.SchemeKSKZSK
		ksk = time.Duration(d.Keys.Lifetime(string(dnssec.RoleKSK))) * time.Second
	}
	return dnssec.KeyPolicy{Algorithm: alg, Scheme: scheme, KSKLifetime: ksk,
		ZSKLifetime: time.Duration(d.Keys.Lifetime(string(dnssec.RoleZSK))) * time.Second,
		DNSKEYTTL:   dnskeyTTL, MaxZoneTTL: maxZoneTTL, ParentDSTTL: dsTTL * time.Second}, nil
}

// manualTrigger is the role the rollover annotation asks for ("" none), and whether the
// annotation is there at all (a value that names no role is consumed too).
func manualTrigger(z *dnsv1.DNSZone) (dnssec.Role, bool) {
	v, ok := z.Annotations[AnnotationRollover]
	if !ok {
		return "", false
	}
	switch r := dnssec.Role(v); r {
	case dnssec.RoleKSK, dnssec.RoleZSK, dnssec.RoleCSK:
		return r, true
	}
	return "", true
}

// keysSeen is what the controller saw of a signed zone's servers and its parent's servers.
type keysSeen struct {
	// notServed: why not every name server answers the key set signed (nil: every one does).
	notServed error
	// linked: the parent is a DNSZone dnsplane manages, which holds the DS set.
	linked bool
	// notAtParent: why not every parent name server answers exactly the DS set (nil: every one does).
	notAtParent error
	// chain: why the chain from the parent's DS to the zone's SOA does not verify (nil: it
	// does); errChainBroken when the parent's DS matches no key.
	chain error
}

// keyStep reads the zone's key Secret, runs the rollover machine over it and the observation o
// (o.Served: every one of servers answers the key set read, keysServed; o.ParentDS: every
// name server of the parent DNSZone answers exactly its DS set, dsServed; both as observe
// finds them, from a settled look's answers while it stands), and writes the step's
// key set back when it changed, before anything acts on it. A Secret that exists but holds no
// usable key set gives errKeysInvalid and is never written. created: the Secret was made now,
// with the zone's first keys. push, when not nil, hands the persisted key set to the provider
// that signs with it before it is observed, and the step's after it is written (its DNSKEY TTL
// lengthens the policy's); its error is returned as it is.
func (r *Reconciler) keyStep(ctx context.Context, z *dnsv1.DNSZone, servers []string, o dnssec.Observation, push keyPush) (step dnssec.Step, created bool, seen keysSeen, err error) {
	pol, err := r.keyPolicy(z.Spec.DNSSEC)
	if err != nil {
		return dnssec.Step{}, false, seen, err
	}
	sec, ks, err := r.readKeySet(ctx, z)
	if err != nil {
		return dnssec.Step{}, false, seen, err
	}
	seen.notServed = errors.New("the key Secret is made now")
	ks, resumed := resumeSigning(freshAlgorithm(ks, pol, z))
	if sec != nil {
		if pol, err = pushed(ctx, push, ks, pol); err != nil {
			return dnssec.Step{}, false, seen, err
		}
		seen = r.observe(ctx, z, servers, ks, pol)
		o.Served, o.ParentDS = seen.notServed == nil, seen.linked && seen.notAtParent == nil
	}
	step, err = dnssec.Machine{Policy: pol, Make: dnssec.Generate}.Next(ks, o)
	if err != nil {
		return dnssec.Step{}, false, seen, fmt.Errorf("keys of %s: %w", z.Spec.Zone, err)
	}
	if !step.Changed && !resumed {
		return step, false, seen, nil
	}
	if err := r.writeKeySet(ctx, z, sec, step.Keys); err != nil {
		return dnssec.Step{}, false, seen, err
	}
	if _, err := pushed(ctx, push, step.Keys, pol); err != nil {
		return dnssec.Step{}, false, seen, err
	}
	return step, sec == nil, seen, nil
}

// observeKeys asks the zone's servers for its key set and, where the parent is a DNSZone
// dnsplane manages, the parent's servers for its DS set (the DS of every KSK or CSK of ks, as
// the machine's Step.DS), and checks the chain from the parent's DS to the SOA at each server.
func (r *Reconciler) observeKeys(ctx context.Context, z *dnsv1.DNSZone, servers []string, ks dnssec.KeySet, pol dnssec.KeyPolicy) keysSeen {
	var seen keysSeen
	_, seen.notServed = keysServed(ctx, servers, ks)
	parents, linked := r.parentServers(ctx, z)
	if !linked {
		return seen
	}
	seen.linked = true
	want := ks.DS(uint32(pol.ParentDSTTL/time.Second), dnssec.Generated, dnssec.Published, dnssec.Active, dnssec.Retired)
	seen.notAtParent = dsServed(ctx, parents, z.Spec.Zone, want)
	if len(parents) == 0 || len(servers) == 0 {
		seen.chain = errors.New("no name server, or no parent name server, to ask")
		return seen
	}
	for _, s := range servers {
		if seen.chain = chainVerifies(ctx, parents[0], s, z.Spec.Zone); seen.chain != nil {
			break
		}
	}
	return seen
}

// parentServers returns the name servers (host:port) of the zone's parent DNSZone, and whether
// the zone is linked to a parent DNSZone dnsplane manages (linkToParentDomain, a parent found
// and allowed).
func (r *Reconciler) parentServers(ctx context.Context, z *dnsv1.DNSZone) ([]string, bool) {
	if !z.Spec.LinkToParentDomain {
		return nil, false
	}
	parent, _, _, err := r.findParent(ctx, z)
	if err != nil || parent == nil {
		return nil, false
	}
	res, err := r.Providers.Resolve(ctx, parent.Namespace, parent.Spec.ProviderRef.Name)
	if err != nil {
		return nil, true
	}
	return res.ServedBy, true
}

// readKeySet reads the zone's key Secret and its key set; a Secret that is not there gives nil
// and a key set without keys (the machine makes the first ones).
func (r *Reconciler) readKeySet(ctx context.Context, z *dnsv1.DNSZone) (*corev1.Secret, dnssec.KeySet, error) {
	key := client.ObjectKey{Namespace: z.Namespace, Name: z.Name + KeySecretSuffix}
	var sec corev1.Secret
	err := r.Client.Get(ctx, key, &sec)
	switch {
	case apierrors.IsNotFound(err):
		return nil, dnssec.KeySet{Zone: dnswire.Fqdn(z.Spec.Zone)}, nil
	case err != nil:
		return nil, dnssec.KeySet{}, fmt.Errorf("read key Secret %s: %w", key.Name, err)
	}
	ks, err := usableKeySet(z.Spec.Zone, sec.Data[dnssec.SecretKey])
	if err != nil {
		if !sec.DeletionTimestamp.IsZero() { // its keys sign nothing: let it go
			if rerr := r.releaseKeys(ctx, &sec); rerr != nil {
				return nil, dnssec.KeySet{}, rerr
			}
		}
		return nil, dnssec.KeySet{}, fmt.Errorf("%w: Secret %s holds no usable key set of %s (%v); it is left untouched: fix or delete it",
			errKeysInvalid, key.Name, z.Spec.Zone, err)
	}
	return &sec, ks, nil
}

// writeKeySet stores ks in the zone's key Secret: creates it when sec is nil, else updates sec
// (locked on its resourceVersion, so a Secret changed since it was read is never overwritten:
// the conflict is returned and the next reconcile reads it again).
func (r *Reconciler) writeKeySet(ctx context.Context, z *dnsv1.DNSZone, sec *corev1.Secret, ks dnssec.KeySet) error {
	raw, err := ks.Marshal()
	if err != nil {
		return fmt.Errorf("encode the keys of %s: %w", z.Spec.Zone, err)
	}
	name := z.Name + KeySecretSuffix
	if sec == nil {
		sec = &corev1.Secret{
			ObjectMeta: metav1.ObjectMeta{Namespace: z.Namespace, Name: name, Labels: map[string]string{LabelZone: z.Name},
				OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(z, dnsv1.GroupVersion.WithKind("DNSZone"))},
				Finalizers:      []string{FinalizerKeys}},
			Type: corev1.SecretTypeOpaque,
			Data: map[string][]byte{dnssec.SecretKey: raw},
		}
		// AlreadyExists: made since the read; the next reconcile reads it, never overwrites it.
		if err := r.Client.Create(ctx, sec); err != nil {
			return fmt.Errorf("create key Secret %s: %w", name, err)
		}
		return nil
	}
	sec = sec.DeepCopy()
	sec.Data[dnssec.SecretKey] = raw
	setKeyHold(sec, ks)
	if err := r.Client.Update(ctx, sec); err != nil {
		return fmt.Errorf("write key Secret %s: %w", name, err)
	}
	return nil
}

// rolloverAsked passes the DNSZone updates that set the rollover annotation (or change its
// value), which change no generation.
func rolloverAsked() predicate.Predicate {
	return predicates.UpdateOnly(func(o, n client.Object) bool {
		v, ok := n.GetAnnotations()[AnnotationRollover]
		return ok && v != o.GetAnnotations()[AnnotationRollover]
	})
}

// consumeTrigger removes the rollover annotation from the DNSZone once the step that read it is
// persisted. The patch is applied to a copy (its answer would replace the status being built) and
// locks on nothing: it removes one annotation and leaves the rest.
func (r *Reconciler) consumeTrigger(ctx context.Context, z *dnsv1.DNSZone) error {
	cp := z.DeepCopy()
	base := cp.DeepCopy()
	delete(cp.Annotations, AnnotationRollover)
	if err := r.Client.Patch(ctx, cp, client.MergeFrom(base)); err != nil {
		return fmt.Errorf("remove annotation %s: %w", AnnotationRollover, err)
	}
	return nil
}

// rolloverWake is how soon to look again for step: at its Wake (the end of a wait, or the next
// rollover's start), floored at a second and bounded by maxRolloverWake; while a rollover waits
// for an observation, at the SOA poll interval (bounded likewise); 0 when nothing is due.
func (r *Reconciler) rolloverWake(step dnssec.Step, now time.Time) time.Duration {
	if !step.Wake.IsZero() {
		return min(max(step.Wake.Sub(now), time.Second), maxRolloverWake)
	}
	if step.Keys.Rollover != nil {
		return min(cmp.Or(r.SOAPollInterval, maxRolloverWake), maxRolloverWake)
	}
	return 0
}
