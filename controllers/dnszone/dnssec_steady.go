package dnszone

import (
	"cmp"
	"context"
	"fmt"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/types"

	dnsv1 "github.com/dnsplane/dnsplane/apis/v1alpha1"
	"github.com/dnsplane/dnsplane/pkg/dnssec"
)

// lastLook is the last look at a signed zone's servers and its parent's that found nothing to
// wait for: of names what was looked at (lookOf), at is when.
type lastLook struct {
	of   string
	at   time.Time
	seen keysSeen
}

// observeInterval is how long a look that found nothing to wait for stands: the SOA poll
// interval (maxRolloverWake when not set).
func (r *Reconciler) observeInterval() time.Duration {
	return cmp.Or(r.SOAPollInterval, maxRolloverWake)
}

// observe is observeKeys, asked only when something waits on it: a look at the same key set
// (lookOf) less than observeInterval ago that found every server answering it and, for a zone
// linked to a parent DNSZone, every parent server answering its DS set and the chain verifying,
// stands for this one while no rollover or turn-off is under way. Any other look is made now.
func (r *Reconciler) observe(ctx context.Context, z *dnsv1.DNSZone, servers []string, ks dnssec.KeySet, pol dnssec.KeyPolicy) keysSeen {
	key, of := types.NamespacedName{Namespace: z.Namespace, Name: z.Name}, lookOf(z, servers, ks)
	steady := ks.Rollover == nil && ks.Unsigning == nil
	if v, ok := r.lastLooks.Load(key); ok && steady {
		if l := v.(lastLook); l.of == of && r.now().Sub(l.at) < r.observeInterval() {
			return l.seen
		}
	}
	seen := r.observeKeys(ctx, z, servers, ks, pol)
	if steady && seen.settled() {
		r.lastLooks.Store(key, lastLook{of: of, at: r.now(), seen: seen})
	} else {
		r.lastLooks.Delete(key)
	}
	return seen
}

// settledLook says whether a look of kind at zone z less than observeInterval ago found nothing
// to wait for (settle), so that this reconcile need not look again.
func (r *Reconciler) settledLook(z *dnsv1.DNSZone, kind string) bool {
	v, ok := r.lastLooks.Load(types.NamespacedName{Namespace: z.Namespace, Name: z.Name})
	if !ok {
		return false
	}
	l := v.(lastLook)
	return l.of == fmt.Sprintf("%s/%d", kind, z.Generation) && r.now().Sub(l.at) < r.observeInterval()
}

// settle records that a look of kind at zone z found nothing to wait for (done), or forgets the
// last one (not done).
func (r *Reconciler) settle(z *dnsv1.DNSZone, kind string, done bool) {
	key := types.NamespacedName{Namespace: z.Namespace, Name: z.Name}
	if !done {
		r.lastLooks.Delete(key)
		return
	}
	r.lastLooks.Store(key, lastLook{of: fmt.Sprintf("%s/%d", kind, z.Generation), at: r.now()})
}

// settled says whether a look found nothing to wait for: every server answers the key set and,
// for a linked zone, every parent server its DS set, and the chain verifies.
func (s keysSeen) settled() bool {
	return s.notServed == nil && (!s.linked || (s.notAtParent == nil && s.chain == nil))
}

// lookOf names what a look at z's servers sees: the generation (spec.linkToParentDomain among
// it), the servers and the keys with their states. Pure.
func lookOf(z *dnsv1.DNSZone, servers []string, ks dnssec.KeySet) string {
	var b strings.Builder
	fmt.Fprintf(&b, "keys/%d/%s", z.Generation, strings.Join(servers, ","))
	for _, k := range ks.Keys {
		fmt.Fprintf(&b, "/%s %d %s", k.Role, k.Tag(), k.State)
	}
	return b.String()
}
