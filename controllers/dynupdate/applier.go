package dynupdate

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"github.com/miekg/dns"
	"golang.org/x/time/rate"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	dnsv1 "github.com/dnsplane/dnsplane/apis/v1alpha1"
	"github.com/dnsplane/dnsplane/pkg/dnswire"
	"github.com/dnsplane/dnsplane/pkg/dynupdate"
)

// The applier writes DNSEndpoints in the DNSZones' namespaces (the manager's existing rule for
// its own kinds) and Events on DNSZones.
// +kubebuilder:rbac:groups=dnsplane.io,resources=dnsendpoints,verbs=get;list;watch;create;update;patch;delete
// +kubebuilder:rbac:groups="",resources=events,verbs=create;patch

// Defaults of the Applier.
const (
	// DefaultTTL is how long records written through UPDATE live after the last UPDATE that
	// added to them, unless an UPDATE deletes them first: ACME challenges live minutes.
	DefaultTTL = time.Hour
	// DefaultRate and DefaultBurst are the per-key rate limit: UPDATEs per second, sustained
	// and at once. An UPDATE over it is REFUSED.
	DefaultRate  = 5
	DefaultBurst = 20
	// namePrefix starts the names of the DNSEndpoints the applier writes.
	namePrefix = "dynupdate-"
	// conflictRetries bounds the read-compute-write rounds of one UPDATE racing another.
	conflictRetries = 5
)

// Event reasons on DNSZones, per key (the message names the key Secret, the names and rcode).
const (
	// ReasonDynamicUpdate (Normal): an UPDATE was written (NOERROR).
	ReasonDynamicUpdate = "DynamicUpdate"
	// ReasonDynamicUpdateRefused (Warning): an UPDATE outside the key's policy, over its rate
	// limit, or whose names another owner holds (REFUSED).
	ReasonDynamicUpdateRefused = "DynamicUpdateRefused"
	// ReasonDynamicUpdateFailed (Warning): an UPDATE whose write failed or did not finish in
	// time (SERVFAIL).
	ReasonDynamicUpdateFailed = "DynamicUpdateFailed"
)

// Applier is the embedded server's dnsserver.UpdateHandler: it turns an UPDATE signed with a
// bound key into DNSEndpoints and answers once the provider accepted them. Build it with its
// fields, add it to the manager (it runs on every replica) before the server answers UPDATEs.
type Applier struct {
	// Client creates, updates and deletes DNSEndpoints, and reads them from the cache while
	// waiting for their status.
	Client client.Client
	// APIReader reads a zone's dynamic-update DNSEndpoints past the cache before each write.
	APIReader client.Reader
	// Cache delivers the DNSEndpoints' changes to the waiting UPDATEs.
	Cache cache.Informers
	// Keyring holds the bound keys (Keys fills it).
	Keyring *dynupdate.Keyring
	// Recorder records Events on DNSZones; nil records none.
	Recorder record.EventRecorder
	// Metrics, nil records none.
	Metrics *Metrics
	Log     logr.Logger
	// TTL is how long the records live after the UPDATE that last added to them; default
	// DefaultTTL.
	TTL time.Duration
	// Rate and Burst limit each key's UPDATEs (per second, at once); defaults DefaultRate and
	// DefaultBurst.
	Rate  rate.Limit
	Burst int
	// Clock, default the real clock.
	Clock clock.PassiveClock
	// Peers are the DNS servers (host:port) of the other clusters of this cluster's Gslb zones
	// (--ext-gslb-clusters): an UPDATE of a zone some Gslb publishes into is relayed to each
	// (relay.go); none = no relay.
	Peers []string

	mu       sync.Mutex
	started  bool
	waiters  map[types.NamespacedName][]chan struct{}
	limiters map[string]*rate.Limiter
}

// NeedLeaderElection: every replica answers UPDATEs.
func (a *Applier) NeedLeaderElection() bool { return false }

// Start registers the DNSEndpoint informer's handler that wakes waiting UPDATEs, then blocks
// until ctx ends (manager.Runnable).
func (a *Applier) Start(ctx context.Context) error {
	inf, err := a.Cache.GetInformer(ctx, &dnsv1.DNSEndpoint{})
	if err != nil {
		return fmt.Errorf("dynamic updates: DNSEndpoint informer: %w", err)
	}
	wake := func(obj any) {
		if t, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
			obj = t.Obj
		}
		if o, ok := obj.(client.Object); ok && strings.HasPrefix(o.GetName(), namePrefix) {
			a.wake(client.ObjectKeyFromObject(o))
		}
	}
	reg, err := inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc: func(o any) { wake(o) }, UpdateFunc: func(_, o any) { wake(o) }, DeleteFunc: wake,
	})
	if err != nil {
		return fmt.Errorf("dynamic updates: DNSEndpoint handler: %w", err)
	}
	a.mu.Lock()
	a.started = true
	a.mu.Unlock()
	<-ctx.Done()
	_ = inf.RemoveEventHandler(reg)
	return nil
}

// TSIGKey returns the key named name that a DNSZone of zone binds (dnsserver.UpdateHandler).
func (a *Applier) TSIGKey(name, zone string) (dnswire.TSIGKey, bool) {
	return a.Keyring.Key(name, zone)
}

// Zone returns the longest zone with dynamic updates that is name or an ancestor of it
// (dnsserver.UpdateHandler).
func (a *Applier) Zone(name string) (string, bool) { return a.Keyring.Zone(name) }

// ServeUpdate applies an UPDATE signed with keyName (dnsserver.UpdateHandler) and returns its
// rcode (RFC 2136 §3, docs/api.md "Dynamic updates"): NOTAUTH when no DNSZone of the UPDATE's
// zone binds the key, else applyUpdate's.
func (a *Applier) ServeUpdate(ctx context.Context, req *dns.Msg, keyName string) int {
	start := a.clock().Now()
	zone := dnswire.Canonical(req.Question[0].Name)
	b, ok := a.Keyring.Binding(keyName, zone)
	if !ok {
		a.Metrics.observe("", "", dns.RcodeToString[dns.RcodeNotAuth], 0)
		a.Log.V(1).Info("UPDATE with a key not bound to its zone", "key", keyName, "zone", zone)
		return dns.RcodeNotAuth
	}
	rcode, names, err := a.applyUpdate(ctx, req, b)
	rc := dns.RcodeToString[rcode]
	a.Metrics.observe(b.DNSZone.Namespace, b.Secret, rc, a.clock().Since(start).Seconds())
	log := a.Log.WithValues("dnsZone", b.DNSZone.String(), "key", b.Secret, "names", names, "rcode", rc)
	zoneRef := &dnsv1.DNSZone{ObjectMeta: metav1.ObjectMeta{Namespace: b.DNSZone.Namespace, Name: b.DNSZone.Name}}
	switch rcode {
	case dns.RcodeSuccess:
		log.V(1).Info("UPDATE written")
		a.event(zoneRef, corev1.EventTypeNormal, ReasonDynamicUpdate, "key %s wrote %s", b.Secret, strings.Join(names, ", "))
	case dns.RcodeServerFailure:
		log.Error(err, "UPDATE failed")
		a.event(zoneRef, corev1.EventTypeWarning, ReasonDynamicUpdateFailed, "key %s: %s: %v", b.Secret, strings.Join(names, ", "), err)
	case dns.RcodeRefused:
		log.Info("UPDATE refused", "why", errString(err))
		a.event(zoneRef, corev1.EventTypeWarning, ReasonDynamicUpdateRefused, "key %s: %s: %s", b.Secret, strings.Join(names, ", "), errString(err))
	default:
		log.V(1).Info("UPDATE answered", "why", errString(err))
	}
	return rcode
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

func (a *Applier) event(obj *dnsv1.DNSZone, typ, reason, format string, args ...any) {
	if a.Recorder != nil {
		a.Recorder.Eventf(obj, typ, reason, format, args...)
	}
}

// applyUpdate checks req against b and writes it: FORMERR or NOTZONE for a message RFC 2136
// does not allow (dynupdate.Parse), REFUSED outside b's policy or over the key's rate limit,
// a prerequisite's rcode (dynupdate.CheckPrereqs, against the records written through dynamic
// updates in b's DNSZone), then the writes and their outcome (waitAll), then, for a Gslb zone,
// the peers' (relayToPeers). It returns the rcode, the owner names the UPDATE changes, and why
// when not NOERROR.
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
	waits, rcode, err := a.writeRetrying(ctx, u, b)
	if rcode != dns.RcodeSuccess {
		return rcode, names, err
	}
	if rcode, _, err := a.waitAll(ctx, waits, names); rcode != dns.RcodeSuccess {
		return rcode, names, err
	}
	rcode, err = a.relayToPeers(ctx, req, b)
	return rcode, names, err
}

// writeRetrying runs write until it does not race another writer, at most conflictRetries
// more times (then SERVFAIL).
func (a *Applier) writeRetrying(ctx context.Context, u dynupdate.Update, b dynupdate.Binding) ([]wait, int, error) {
	for attempt := 0; ; attempt++ {
		waits, rcode, retry, err := a.write(ctx, u, b)
		if !retry {
			return waits, rcode, err
		}
		if attempt == conflictRetries {
			return nil, dns.RcodeServerFailure, fmt.Errorf("%d concurrent writes in a row: %w", attempt+1, err)
		}
	}
}

// relayToPeers relays req to the Gslb peers (relay) when b's DNSZone is a Gslb zone, there are
// peers, and req was not itself relayed; NOERROR otherwise.
func (a *Applier) relayToPeers(ctx context.Context, req *dns.Msg, b dynupdate.Binding) (int, error) {
	if len(a.Peers) == 0 || relayed(req) {
		return dns.RcodeSuccess, nil
	}
	gslb, err := a.gslbZone(ctx, b)
	if err != nil {
		return dns.RcodeServerFailure, err
	}
	if !gslb {
		return dns.RcodeSuccess, nil
	}
	return a.relay(ctx, req, b)
}

// wait is one written DNSEndpoint the answer waits for: Ready at generation, or gone.
type wait struct {
	key        types.NamespacedName
	generation int64
	gone       bool
}

// write reads the dynamic-update DNSEndpoints of b's DNSZone, evaluates u's prerequisites,
// applies u's changes to the key's own records and writes each changed owner name's
// DNSEndpoint. retry is true when a write raced another (Conflict, AlreadyExists, NotFound).
func (a *Applier) write(ctx context.Context, u dynupdate.Update, b dynupdate.Binding) (waits []wait, rcode int, retry bool, err error) {
	var list dnsv1.DNSEndpointList
	if err := a.APIReader.List(ctx, &list, client.InNamespace(b.DNSZone.Namespace),
		client.MatchingLabels{dnsv1.LabelDynamicUpdateZone: labelValue(b.DNSZone.Name)}); err != nil {
		return nil, dns.RcodeServerFailure, false, fmt.Errorf("list the zone's dynamic-update DNSEndpoints: %w", err)
	}
	all := dynupdate.Records{}
	own := map[string]*dnsv1.DNSEndpoint{} // owner name -> this key's DNSEndpoint
	for i := range list.Items {
		ep := &list.Items[i]
		if !ep.DeletionTimestamp.IsZero() || ep.Spec.ZoneRef == nil || ep.Spec.ZoneRef.Name != b.DNSZone.Name {
			continue
		}
		recs := dynupdate.FromEndpoints(ep.Spec.Endpoints)
		merge(all, recs)
		if ep.Labels[dnsv1.LabelDynamicUpdateKey] != labelValue(b.Secret) {
			continue
		}
		for name := range recs {
			if ep.Name == endpointName(b, name) {
				own[name] = ep
			}
		}
	}
	if rcode := dynupdate.CheckPrereqs(u.Prereqs, all); rcode != dns.RcodeSuccess {
		return nil, rcode, false, fmt.Errorf("prerequisite failed: %s", dns.RcodeToString[rcode])
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
	for _, name := range u.Names() {
		w, err := a.writeName(ctx, b, name, own[name], next[name], added[name])
		switch {
		case apierrors.IsConflict(err) || apierrors.IsAlreadyExists(err) || apierrors.IsNotFound(err):
			return nil, dns.RcodeServerFailure, true, err
		case err != nil:
			return nil, dns.RcodeServerFailure, false, err
		}
		if w != nil {
			waits = append(waits, *w)
		}
	}
	return waits, dns.RcodeSuccess, false, nil
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
		ep = &dnsv1.DNSEndpoint{ObjectMeta: metav1.ObjectMeta{
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
		if err := a.Client.Create(ctx, ep); err != nil {
			return nil, fmt.Errorf("create DNSEndpoint %s/%s: %w", ep.Namespace, ep.Name, err)
		}
		return &wait{key: client.ObjectKeyFromObject(ep), generation: ep.Generation}, nil
	case len(sets) == 0:
		if err := a.Client.Delete(ctx, ep, client.Preconditions{ResourceVersion: &ep.ResourceVersion}); err != nil {
			return nil, fmt.Errorf("delete DNSEndpoint %s/%s: %w", ep.Namespace, ep.Name, err)
		}
		return &wait{key: client.ObjectKeyFromObject(ep), gone: true}, nil
	}
	if reflect.DeepEqual(ep.Spec.Endpoints, eps) && !added {
		return &wait{key: client.ObjectKeyFromObject(ep), generation: ep.Generation}, nil
	}
	ep.Spec.Endpoints = eps
	if added {
		if ep.Annotations == nil {
			ep.Annotations = map[string]string{}
		}
		ep.Annotations[dnsv1.AnnotationDynamicUpdateExpires] = expires
	}
	if err := a.Client.Update(ctx, ep); err != nil {
		return nil, fmt.Errorf("update DNSEndpoint %s/%s: %w", ep.Namespace, ep.Name, err)
	}
	return &wait{key: client.ObjectKeyFromObject(ep), generation: ep.Generation}, nil
}

// merge adds from's record sets to into.
func merge(into, from dynupdate.Records) {
	for name, sets := range from {
		if into[name] == nil {
			into[name] = map[uint16]dynupdate.RRset{}
		}
		for t, s := range sets {
			cur := into[name][t]
			vs := slices.Concat(cur.Values, s.Values)
			slices.Sort(vs)
			into[name][t] = dynupdate.RRset{TTL: s.TTL, Values: slices.Compact(vs)}
		}
	}
}

// endpointName returns the name of the DNSEndpoint of owner name (an FQDN) written with b's
// key in b's DNSZone: namePrefix and a hash of the three (the name alone could be 253
// characters).
func endpointName(b dynupdate.Binding, name string) string {
	sum := sha256.Sum256([]byte(b.DNSZone.Name + "\x00" + b.Secret + "\x00" + name))
	return namePrefix + hex.EncodeToString(sum[:10])
}

// labelValue returns s when it is a valid label value, else a hash of it (Kubernetes names
// may be longer than the 63 characters of a label value).
func labelValue(s string) string {
	if len(validation.IsValidLabelValue(s)) == 0 {
		return s
	}
	sum := sha256.Sum256([]byte(s))
	return "h-" + hex.EncodeToString(sum[:16])
}

func (a *Applier) ttl() time.Duration {
	if a.TTL > 0 {
		return a.TTL
	}
	return DefaultTTL
}

func (a *Applier) clock() clock.PassiveClock {
	if a.Clock != nil {
		return a.Clock
	}
	return clock.RealClock{}
}

// limiter returns b's key's rate limiter (one per key Secret).
func (a *Applier) limiter(b dynupdate.Binding) *rate.Limiter {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.limiters == nil {
		a.limiters = map[string]*rate.Limiter{}
	}
	k := b.DNSZone.Namespace + "/" + b.Secret
	l, ok := a.limiters[k]
	if !ok {
		r, burst := a.Rate, a.Burst
		if r == 0 {
			r = DefaultRate
		}
		if burst == 0 {
			burst = DefaultBurst
		}
		l = rate.NewLimiter(r, burst)
		a.limiters[k] = l
	}
	return l
}
