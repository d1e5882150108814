package dynupdate

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"time"

	"github.com/miekg/dns"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	k8swait "k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	dnsv1 "github.com/dnsplane/dnsplane/apis/v1alpha1"
	"github.com/dnsplane/dnsplane/pkg/dynupdate"
)

// undoTimeout bounds undoing a refused UPDATE's writes; it runs past the client's deadline.
const undoTimeout = 10 * time.Second

// phase is which names one write round changes: an UPDATE first writes the names that keep
// records (created or updated DNSEndpoints, which the DNSEndpoint controller may refuse), and
// only once all of them are accepted deletes the names whose records go (which nothing
// refuses). A refused UPDATE has then deleted nothing, and its writes are undone (undo).
type phase int

const (
	upserts phase = iota
	deletes
)

// applyUpdate checks req against b and writes it: FORMERR or NOTZONE for a message RFC 2136
// does not allow (dynupdate.Parse), REFUSED outside b's policy or over the key's rate limit,
// a prerequisite's rcode (dynupdate.CheckPrereqs, against the records written through dynamic
// updates in b's DNSZone), then the writes and their outcome (waitAll; a refused write is
// undone), then, for a Gslb zone, the peers' (relayToPeers). It returns the rcode, the owner
// names the UPDATE changes, and why when not NOERROR.
func (a *Applier) applyUpdate(ctx context.Context, req *dns.Msg, b dynupdate.Binding) (int, []string, error) {
	u, rcode := dynupdate.Parse(req)
	if rcode != dns.RcodeSuccess {
		return rcode, nil, errors.New("malformed UPDATE")
	}
	names := u.Names()
	if rcode := dynupdate.Authorize(b.Policy, u); rcode != dns.RcodeSuccess {
		return rcode, names, errors.New("outside the key's names and types")
	}
	if !a.limiter(b).Allow() {
		return dns.RcodeRefused, names, errors.New("over the key's rate limit")
	}
	a.mu.Lock()
	started := a.started
	a.mu.Unlock()
	if !started {
		return dns.RcodeServerFailure, names, errors.New("dynamic updates are not started yet")
	}
	for _, ph := range []phase{upserts, deletes} {
		waits, rcode, err := a.writeRetrying(ctx, u, b, ph)
		if rcode != dns.RcodeSuccess {
			return rcode, names, err
		}
		if rcode, refused, err := a.waitAll(ctx, waits); rcode != dns.RcodeSuccess {
			if refused {
				a.undo(ctx, u, waits)
			}
			return rcode, names, err
		}
	}
	rcode, err := a.relayToPeers(ctx, req, b)
	return rcode, names, err
}

// writeRetrying runs write until it does not race another writer, at most conflictRetries
// more times (then SERVFAIL), pausing a few milliseconds between rounds. A round that finds a
// name's DNSEndpoint still being deleted waits for it to be gone first (within ctx).
func (a *Applier) writeRetrying(ctx context.Context, u dynupdate.Update, b dynupdate.Binding, ph phase) ([]wait, int, error) {
	made := map[types.NamespacedName]wait{} // the first write of each DNSEndpoint, for undo
	for attempt := 0; ; attempt++ {
		r, rcode, err := a.write(ctx, u, b, ph)
		r.waits = firstWrites(made, r.waits)
		if rcode != dns.RcodeSuccess && !r.retry {
			return nil, rcode, err
		}
		for _, w := range r.terminating {
			if rcode, err := a.waitOne(ctx, w); rcode != dns.RcodeSuccess {
				return nil, rcode, fmt.Errorf("the name's DNSEndpoint %s is still being deleted: %w", w.key, err)
			}
		}
		if !r.retry && len(r.terminating) == 0 {
			return r.waits, dns.RcodeSuccess, nil
		}
		if attempt == conflictRetries {
			return nil, dns.RcodeServerFailure, fmt.Errorf("%d concurrent writes in a row: %w", attempt+1, err)
		}
		if err := pause(ctx, attempt); err != nil {
			return nil, dns.RcodeServerFailure, fmt.Errorf("%d concurrent writes in a row: %w", attempt+1, err)
		}
	}
}

// firstWrites records in made the first write of each DNSEndpoint of waits, and returns waits
// with what those first writes changed (created, before): an UPDATE's round that follows a
// raced one finds its own earlier writes already there, and undo must revert those too.
func firstWrites(made map[types.NamespacedName]wait, waits []wait) []wait {
	for i, w := range waits {
		m, ok := made[w.key]
		switch {
		case !ok || m.uid != w.uid:
			made[w.key] = w
		case m.created:
			waits[i].created, waits[i].before = true, nil
		case m.before != nil:
			waits[i].before = m.before
		}
	}
	return waits
}

// pause waits a few milliseconds, more with each attempt and jittered, so that UPDATEs racing
// for one DNSEndpoint do not race again in lockstep.
func pause(ctx context.Context, attempt int) error {
	d := time.Duration(5<<attempt)*time.Millisecond + rand.N(10*time.Millisecond) //nolint:gosec // jitter, not a secret
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// relayToPeers relays req to the Gslb peers (relay) when b's DNSZone is a Gslb zone that has
// peers and req was not itself relayed; NOERROR otherwise.
func (a *Applier) relayToPeers(ctx context.Context, req *dns.Msg, b dynupdate.Binding) (int, error) {
	if relayed(req) {
		return dns.RcodeSuccess, nil
	}
	peers, err := a.peersOf(ctx, b)
	if err != nil {
		return dns.RcodeServerFailure, err
	}
	if len(peers) == 0 {
		return dns.RcodeSuccess, nil
	}
	return a.relay(ctx, req, b, peers)
}

// wait is one DNSEndpoint an answer waits for: Ready at generation, or gone. uid tells it from
// a later object of the same name. name, created, before and expires say what the write
// changed, for undo: the owner name's DNSEndpoint created, or updated from before (nil when
// it was left alone or deleted), with the expiry annotation expires ("" when not moved on).
type wait struct {
	key        types.NamespacedName
	uid        types.UID
	generation int64
	gone       bool
	name       string
	created    bool
	before     *dnsv1.DNSEndpoint
	expires    string
}

// round is what one write round did: the DNSEndpoints written (waits); the key's DNSEndpoints
// of names to write that are still being deleted (terminating: the round is run again once
// they are gone); retry when a write raced another writer (Conflict, AlreadyExists, NotFound).
type round struct {
	waits       []wait
	terminating []wait
	retry       bool
}

// write reads the dynamic-update DNSEndpoints of b's DNSZone, evaluates u's prerequisites
// (upserts phase), applies u's changes to the key's own records and writes the DNSEndpoint of
// each changed owner name of phase ph.
func (a *Applier) write(ctx context.Context, u dynupdate.Update, b dynupdate.Binding, ph phase) (round, int, error) {
	var list dnsv1.DNSEndpointList
	if err := a.APIReader.List(ctx, &list, client.InNamespace(b.DNSZone.Namespace),
		client.MatchingLabels{dnsv1.LabelDynamicUpdateZone: labelValue(b.DNSZone.Name)}); err != nil {
		return round{}, dns.RcodeServerFailure, fmt.Errorf("list the zone's dynamic-update DNSEndpoints: %w", err)
	}
	all, own, dying := current(list.Items, u, b)
	if ph == upserts {
		if rcode := dynupdate.CheckPrereqs(u.Prereqs, all); rcode != dns.RcodeSuccess {
			return round{}, rcode, fmt.Errorf("prerequisite failed: %s", dns.RcodeToString[rcode])
		}
	}
	mine := dynupdate.Records{}
	for name, ep := range own {
		mine[name] = dynupdate.FromEndpoints(ep.Spec.Endpoints)[name]
	}
	next := dynupdate.Apply(mine, u.Changes)
	added := map[string]bool{}
	for _, c := range u.Changes {
		if c.Op == dynupdate.OpAdd {
			added[c.Name] = true
		}
	}
	var r round
	for _, name := range u.Names() {
		if (len(next[name]) == 0) != (ph == deletes) {
			continue
		}
		if d, ok := dying[name]; ok {
			// The name's records are still being removed: a new value waits for that to end
			// (the object's name is taken until then); a delete is answered once it has.
			if ph == upserts {
				r.terminating = append(r.terminating, d)
			} else {
				r.waits = append(r.waits, d)
			}
			continue
		}
		w, err := a.writeName(ctx, b, name, own[name], next[name], added[name])
		switch {
		case apierrors.IsConflict(err) || apierrors.IsAlreadyExists(err) || apierrors.IsNotFound(err):
			r.retry = true
			return r, dns.RcodeServerFailure, err
		case err != nil:
			return round{}, dns.RcodeServerFailure, err
		}
		if w != nil {
			r.waits = append(r.waits, *w)
		}
	}
	return r, dns.RcodeSuccess, nil
}

// current reads the listed DNSEndpoints of b's DNSZone: every record written through dynamic
// updates (all, for the prerequisites), the key's own DNSEndpoint of each of u's names (own),
// and the key's DNSEndpoints of u's names that are being deleted (dying, as gone waits).
func current(items []dnsv1.DNSEndpoint, u dynupdate.Update, b dynupdate.Binding) (dynupdate.Records, map[string]*dnsv1.DNSEndpoint, map[string]wait) {
	all := dynupdate.Records{}
	own := map[string]*dnsv1.DNSEndpoint{}
	dying := map[string]wait{}
	names := map[string]string{} // the key's DNSEndpoint name -> owner name, for u's names
	for _, name := range u.Names() {
		names[endpointName(b, name)] = name
	}
	for i := range items {
		ep := &items[i]
		if ep.Spec.ZoneRef == nil || ep.Spec.ZoneRef.Name != b.DNSZone.Name {
			continue
		}
		name, ours := names[ep.Name]
		ours = ours && ep.Labels[dnsv1.LabelDynamicUpdateKey] == labelValue(b.Secret)
		if !ep.DeletionTimestamp.IsZero() {
			if ours {
				dying[name] = wait{key: client.ObjectKeyFromObject(ep), uid: ep.UID, gone: true}
			}
			continue
		}
		recs := dynupdate.FromEndpoints(ep.Spec.Endpoints)
		merge(all, recs)
		if _, ok := recs[name]; ours && ok {
			own[name] = ep
		}
	}
	return all, own, dying
}

// writeName makes the key's DNSEndpoint of name hold sets: created, updated (the expiry moved
// on when added), deleted when sets is empty, or left alone. It returns what to wait for.
func (a *Applier) writeName(ctx context.Context, b dynupdate.Binding, name string, ep *dnsv1.DNSEndpoint, sets map[uint16]dynupdate.RRset, added bool) (*wait, error) {
	expires := a.clock().Now().Add(a.ttl()).UTC().Format(time.RFC3339)
	eps := dynupdate.Endpoints(name, sets)
	switch {
	case ep == nil && len(sets) == 0:
		return nil, nil
	case ep == nil:
		ep = newEndpoint(b, name, eps, expires)
		if err := a.Client.Create(ctx, ep); err != nil {
			return nil, fmt.Errorf("create DNSEndpoint %s/%s: %w", ep.Namespace, ep.Name, err)
		}
		return &wait{key: client.ObjectKeyFromObject(ep), uid: ep.UID, generation: ep.Generation, name: name, created: true, expires: expires}, nil
	case len(sets) == 0:
		if err := a.Client.Delete(ctx, ep, client.Preconditions{ResourceVersion: &ep.ResourceVersion}); err != nil {
			return nil, fmt.Errorf("delete DNSEndpoint %s/%s: %w", ep.Namespace, ep.Name, err)
		}
		return &wait{key: client.ObjectKeyFromObject(ep), uid: ep.UID, gone: true}, nil
	}
	if reflect.DeepEqual(ep.Spec.Endpoints, eps) && !added {
		return &wait{key: client.ObjectKeyFromObject(ep), uid: ep.UID, generation: ep.Generation}, nil
	}
	before := ep.DeepCopy()
	ep.Spec.Endpoints = eps
	moved := ""
	if added {
		moved = expires
		if ep.Annotations == nil {
			ep.Annotations = map[string]string{}
		}
		ep.Annotations[dnsv1.AnnotationDynamicUpdateExpires] = expires
	}
	if err := a.Client.Update(ctx, ep); err != nil {
		return nil, fmt.Errorf("update DNSEndpoint %s/%s: %w", ep.Namespace, ep.Name, err)
	}
	return &wait{key: client.ObjectKeyFromObject(ep), uid: ep.UID, generation: ep.Generation, name: name, before: before, expires: moved}, nil
}

// newEndpoint is the key's DNSEndpoint of name in b's DNSZone, holding eps until expires.
func newEndpoint(b dynupdate.Binding, name string, eps []dnsv1.Endpoint, expires string) *dnsv1.DNSEndpoint {
	return &dnsv1.DNSEndpoint{ObjectMeta: metav1.ObjectMeta{
		Namespace: b.DNSZone.Namespace, Name: endpointName(b, name),
		Labels:      map[string]string{dnsv1.LabelDynamicUpdateZone: labelValue(b.DNSZone.Name), dnsv1.LabelDynamicUpdateKey: labelValue(b.Secret)},
		Annotations: map[string]string{dnsv1.AnnotationDynamicUpdateExpires: expires},
		// Created with the records finalizer (the DNSEndpoint controller adds none): an
		// UPDATE that deletes the name answers once the object is gone, which then means
		// its records are, as a DNS-01 solver's CleanUp expects.
		Finalizers: []string{dnsv1.FinalizerRecords},
	}, Spec: dnsv1.DNSEndpointSpec{
		PublishingSpec: dnsv1.PublishingSpec{Endpoints: eps, ZoneRef: &dnsv1.ZoneReference{Name: b.DNSZone.Name}, Strategy: dnsv1.StrategyFullSync},
		Policy:         dnsv1.PolicySync,
	}}
}

// undo reverts the writes of a refused UPDATE u (RFC 2136 §3.4: a refused UPDATE changes
// nothing): from each DNSEndpoint it created or updated, the values u added there are taken
// out and those it removed there put back (revert), whatever a concurrent UPDATE of the name
// wrote since, which stays; one left without records is deleted. It runs within undoTimeout
// even when ctx has ended; a failure is logged.
func (a *Applier) undo(ctx context.Context, u dynupdate.Update, waits []wait) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), undoTimeout)
	defer cancel()
	for _, w := range waits {
		if !w.created && w.before == nil {
			continue
		}
		// Conflicts: another writer, or a status write, since the read; revert reads again.
		backoff := k8swait.Backoff{Steps: 10, Duration: 10 * time.Millisecond, Factor: 1.5, Jitter: 0.2}
		err := retry.OnError(backoff, apierrors.IsConflict, func() error { return a.revert(ctx, u, w) })
		if err != nil {
			a.Log.Error(err, "undo a refused UPDATE's write", "dnsEndpoint", w.key.String())
		}
	}
}

// revert takes u's own changes out of w's DNSEndpoint as it is now (revertSets), with its
// expiry from before w's write unless a later write moved it on, and deletes it when no record
// is left. Every write is conditional on the version read (a Conflict is retried).
func (a *Applier) revert(ctx context.Context, u dynupdate.Update, w wait) error {
	var cur dnsv1.DNSEndpoint
	if err := a.APIReader.Get(ctx, w.key, &cur); err != nil {
		return client.IgnoreNotFound(err)
	}
	if cur.UID != w.uid || !cur.DeletionTimestamp.IsZero() {
		return nil
	}
	before := dynupdate.Records{}
	if w.before != nil {
		before = dynupdate.FromEndpoints(w.before.Spec.Endpoints)
	}
	mine := dynupdate.Apply(before, u.Changes)
	sets := revertSets(dynupdate.FromEndpoints(cur.Spec.Endpoints)[w.name], before[w.name], mine[w.name])
	if len(sets) == 0 {
		return client.IgnoreNotFound(a.Client.Delete(ctx, &cur, client.Preconditions{UID: &cur.UID, ResourceVersion: &cur.ResourceVersion}))
	}
	next := cur.DeepCopy()
	next.Spec.Endpoints = dynupdate.Endpoints(w.name, sets)
	if w.before != nil && w.expires != "" && cur.Annotations[dnsv1.AnnotationDynamicUpdateExpires] == w.expires {
		if v, ok := w.before.Annotations[dnsv1.AnnotationDynamicUpdateExpires]; ok {
			next.Annotations[dnsv1.AnnotationDynamicUpdateExpires] = v
		}
	}
	if reflect.DeepEqual(next.Spec, cur.Spec) && reflect.DeepEqual(next.Annotations, cur.Annotations) {
		return nil
	}
	return a.Client.Update(ctx, next)
}

// revertSets returns the record sets cur (a name's, now) without the values the refused
// UPDATE added (in mine, what it made of before, and not in before) and with those it removed
// (in before, not in mine).
func revertSets(cur, before, mine map[uint16]dynupdate.RRset) map[uint16]dynupdate.RRset {
	out := map[uint16]dynupdate.RRset{}
	kinds := map[uint16]bool{}
	for _, m := range []map[uint16]dynupdate.RRset{cur, before, mine} {
		for t := range m {
			kinds[t] = true
		}
	}
	for t := range kinds {
		vs := slices.DeleteFunc(slices.Clone(cur[t].Values), func(v string) bool {
			return slices.Contains(mine[t].Values, v) && !slices.Contains(before[t].Values, v)
		})
		for _, v := range before[t].Values {
			if !slices.Contains(mine[t].Values, v) && !slices.Contains(vs, v) {
				vs = append(vs, v)
			}
		}
		if len(vs) == 0 {
			continue
		}
		slices.Sort(vs)
		ttl := cur[t].TTL
		if _, ok := cur[t]; !ok {
			ttl = before[t].TTL
		}
		out[t] = dynupdate.RRset{TTL: ttl, Values: vs}
	}
	return out
}
