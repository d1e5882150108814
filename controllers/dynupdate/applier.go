package dynupdate

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"github.com/miekg/dns"
	"golang.org/x/time/rate"
	corev1 "k8s.io/api/core/v1"
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
	// DefaultLifetime is how long records written through UPDATE live after the last UPDATE
	// that added to them, unless an UPDATE deletes them first: ACME challenges live minutes.
	DefaultLifetime = time.Hour
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
	// DefaultLifetime.
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
// zone binds the key, else applyUpdate's. A retransmission of a signed UPDATE never reaches it:
// the server answers it from the first copy (dnsserver's replay set).
func (a *Applier) ServeUpdate(ctx context.Context, req *dns.Msg, keyName string) int {
	start := a.clock().Now()
	zone := dnswire.Fqdn(req.Question[0].Name)
	b, ok := a.Keyring.Binding(keyName, zone)
	if !ok {
		a.Metrics.observe("", "", dns.RcodeToString[dns.RcodeNotAuth], 0)
		a.Log.V(1).Info("UPDATE with a key not bound to its zone", "key", keyName, "zone", zone)
		return dns.RcodeNotAuth
	}
	return a.serve(ctx, req, b, start)
}

// serve applies req (applyUpdate) and records its outcome: metrics, a log line and an Event.
func (a *Applier) serve(ctx context.Context, req *dns.Msg, b dynupdate.Binding, start time.Time) int {
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
	return DefaultLifetime
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
