package signing

import (
	"cmp"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	dnsv1 "github.com/dnsplane/dnsplane/apis/v1alpha1"
	"github.com/dnsplane/dnsplane/controllers/internal/replica"
	"github.com/dnsplane/dnsplane/pkg/dnssec"
	"github.com/dnsplane/dnsplane/pkg/dnswire"
	"github.com/dnsplane/dnsplane/pkg/provider"
)

// Reread is how often the signer reads the key Secret of a DNSZone it signs again: Secrets
// are never watched (docs/design.md, "Provider Secrets"), so new keys (a rollover step, keys
// imported by hand) are signed with within this time. Until it signs the zone (no key Secret
// yet, or one that is not usable) it reads it every Pending.
const (
	Reread  = 30 * time.Second
	Pending = 10 * time.Second
)

// KeySecretSuffix names a DNSZone's key Secret: <dnszone>-dnssec in its namespace (the DNSZone
// controller's controllers/dnszone.KeySecretSuffix).
const KeySecretSuffix = "-dnssec"

// Server is what the signer needs of the embedded server (dnsserver.Server).
type Server interface {
	SetSigning(origin string, p *dnssec.Policy) error
}

// Providers resolves a DNSZone's provider Secret (factory.Factory).
type Providers interface {
	Resolve(ctx context.Context, namespace, name string) (provider.Resolved, error)
}

// Signer reconciles DNSZones into the embedded server's signing policies on every replica.
// Build it with its exported fields and SetupWithManager.
type Signer struct {
	// Client reads DNSZones from the manager's cache.
	Client client.Client
	// Secrets reads key Secrets by name: the manager's API reader (Secrets are not cached).
	Secrets client.Reader
	// Providers tells which DNSZones the embedded server signs (SignsOnline).
	Providers Providers
	// Server is this replica's embedded server.
	Server Server
	// Log gets one line per policy change and per key Secret that is not used; never key
	// material.
	Log logr.Logger
	// Reread and Pending replace the package's Reread and Pending when positive.
	Reread, Pending time.Duration

	mu      sync.Mutex
	zones   map[types.NamespacedName]signed            // what each DNSZone had the server sign
	refused map[types.NamespacedName][sha256.Size]byte // the inputs last found unusable, logged once
}

// signed is the zone a DNSZone has the server sign and a digest of its policy's inputs.
type signed struct {
	origin string
	digest [sha256.Size]byte
}

// SetupWithManager watches DNSZones' spec changes, deletions and changes of whether they hold
// their zone, on every replica.
func (s *Signer) SetupWithManager(mgr ctrl.Manager, name string) error {
	return replica.WatchDNSZones(mgr, name, holdChanged, s)
}

// Reconcile gives the server the DNSZone's signing policy, or nil (unsigned) when it signs
// nothing. A key Secret that is missing or not usable keeps the zone's previous policy (the
// DNSZone controller reports KeysInvalid). Errors: the API server's, retried.
func (s *Signer) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var z dnsv1.DNSZone
	if err := s.Client.Get(ctx, req.NamespacedName, &z); err != nil {
		if apierrors.IsNotFound(err) {
			s.unsign(req.NamespacedName)
			return ctrl.Result{}, nil
		}
		return ctrl.Result{}, err
	}
	on := enabled(&z) && z.DeletionTimestamp.IsZero() // a DNSZone being deleted turns off child last too
	if !on && !s.mayBeSigned(req.NamespacedName, &z) {
		s.unsign(req.NamespacedName)
		return ctrl.Result{}, nil
	}
	again := ctrl.Result{RequeueAfter: s.pending()}
	if !held(&z) {
		s.unsign(req.NamespacedName)
		return again, nil
	}
	resolved, err := s.Providers.Resolve(ctx, z.Namespace, z.Spec.ProviderRef.Name)
	if err != nil {
		return again, nil // the DNSZone controller reports the provider Secret's error
	}
	if !resolved.Provider.Capabilities().SignsOnline {
		s.unsign(req.NamespacedName)
		return ctrl.Result{}, nil
	}
	raw, err := s.readKeys(ctx, &z)
	if err != nil {
		return ctrl.Result{}, err
	}
	if !on && (raw == nil || unsigningDone(raw)) {
		s.unsign(req.NamespacedName)
		return ctrl.Result{}, nil
	}
	if raw != nil && s.sign(req.NamespacedName, &z, raw) {
		return ctrl.Result{RequeueAfter: cmp.Or(max(s.Reread, 0), Reread)}, nil
	}
	return again, nil
}

func (s *Signer) pending() time.Duration { return cmp.Or(max(s.Pending, 0), Pending) }

// readKeys returns the keyset.json of z's key Secret; nil when there is none yet (logged at
// V(1): the DNSZone controller makes it). Errors: reads that failed other than NotFound.
func (s *Signer) readKeys(ctx context.Context, z *dnsv1.DNSZone) ([]byte, error) {
	key := types.NamespacedName{Namespace: z.Namespace, Name: z.Name + KeySecretSuffix}
	sec, err := replica.GetSecret(ctx, s.Secrets, key)
	if apierrors.IsNotFound(err) {
		s.Log.V(1).Info("no key Secret yet; the zone keeps its signing", "dnszone", client.ObjectKeyFromObject(z), "secret", key.Name)
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("key Secret: %w", err)
	}
	return sec.Data[dnssec.SecretKey], nil
}

// sign builds z's policy of raw and gives it to the server, unless the DNSZone already had it
// signed with the same inputs, and reports whether the zone is signed with it. A key set that
// is not usable is logged (never its content) and the zone keeps its previous policy.
func (s *Signer) sign(nn types.NamespacedName, z *dnsv1.DNSZone, raw []byte) bool {
	origin := dnswire.LookupName(dnswire.Fqdn(z.Spec.Zone))
	log := s.Log.WithValues("dnszone", nn, "zone", origin, "secret", nn.Name+KeySecretSuffix)
	d := specOrDefault(z)
	digest := inputsDigest(raw, d)
	s.mu.Lock()
	defer s.mu.Unlock()
	prev, had := s.zones[nn]
	if had && prev.origin == origin && prev.digest == digest {
		return true
	}
	p, err := policy(origin, raw, d)
	if err == nil {
		err = s.Server.SetSigning(origin, p)
	}
	if err != nil {
		if s.refused[nn] != digest {
			log.Info("the key Secret holds no usable key set of the zone; the zone keeps its previous signing", "reason", err.Error())
		}
		if s.refused == nil {
			s.refused = map[types.NamespacedName][sha256.Size]byte{}
		}
		s.refused[nn] = digest
		return false
	}
	delete(s.refused, nn)
	if had && prev.origin != origin {
		s.clearLocked(nn, prev.origin)
	}
	if s.zones == nil {
		s.zones = map[types.NamespacedName]signed{}
	}
	s.zones[nn] = signed{origin: origin, digest: digest}
	log.Info("signing the zone", "keys", keyTags(p.Keys), "nsec3", p.NSEC3 != nil, "compact", p.Compact, "turnedOff", !enabled(z))
	return true
}

// unsign serves the zone nn had the server sign unsigned again.
func (s *Signer) unsign(nn types.NamespacedName) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.refused, nn)
	prev, had := s.zones[nn]
	if !had {
		return
	}
	s.clearLocked(nn, prev.origin)
	s.Log.Info("serving the zone unsigned", "dnszone", nn, "zone", prev.origin)
}

// clearLocked forgets nn and unsigns origin unless another DNSZone signs it now. s.mu is held.
func (s *Signer) clearLocked(nn types.NamespacedName, origin string) {
	delete(s.zones, nn)
	for _, o := range s.zones {
		if o.origin == origin {
			return
		}
	}
	if err := s.Server.SetSigning(origin, nil); err != nil {
		s.Log.Error(err, "unsign the zone", "zone", origin)
	}
}

// inputsDigest is a digest of everything a policy is made of, so that an unchanged Secret and
// spec do not replace the server's policy (which drops its cached answers).
func inputsDigest(raw []byte, d *dnsv1.DNSSEC) [sha256.Size]byte {
	h := sha256.New()
	h.Write(raw)
	fmt.Fprintf(h, "\x00%s|%d|%d", d.Denial.Type, d.SignatureValiditySeconds, d.SignatureRefreshSeconds)
	if d.Denial.NSEC3 != nil {
		fmt.Fprintf(h, "|%d|%s", d.Denial.NSEC3.Iterations, d.Denial.NSEC3.Salt)
	}
	return [sha256.Size]byte(h.Sum(nil))
}

// policy is the signing policy of origin from a key Secret's keyset.json and spec.dnssec:
// NSEC3 with its parameters for denial type NSEC3, compact denial (RFC 9824) for Compact, else
// NSEC. Its errors never quote raw.
func policy(origin string, raw []byte, d *dnsv1.DNSSEC) (*dnssec.Policy, error) {
	if len(raw) == 0 {
		return nil, fmt.Errorf("no data key %s", dnssec.SecretKey)
	}
	ks, err := dnssec.ParseKeySet(raw)
	if err != nil {
		return nil, errors.New("the key set does not parse")
	}
	if !strings.EqualFold(dnswire.LookupName(dnswire.Fqdn(ks.Zone)), origin) {
		return nil, fmt.Errorf("its keys are of zone %s", ks.Zone)
	}
	p := &dnssec.Policy{Keys: ks,
		Validity: time.Duration(d.SignatureValiditySeconds) * time.Second,
		Refresh:  time.Duration(d.SignatureRefreshSeconds) * time.Second}
	p.Compact = d.Denial.Type == dnsv1.DenialCompact
	if d.Denial.Type == dnsv1.DenialNSEC3 {
		p.NSEC3 = &dnssec.NSEC3Params{}
		if n := d.Denial.NSEC3; n != nil {
			p.NSEC3.Iterations, p.NSEC3.Salt = uint16(n.Iterations), n.Salt
		}
	}
	return p, p.Check()
}

// keyTags names a key set's keys by role, tag and state: never key material.
func keyTags(ks dnssec.KeySet) string {
	out := make([]string, 0, len(ks.Keys))
	for _, k := range ks.Keys {
		out = append(out, fmt.Sprintf("%s %d %s", k.Role, k.Tag(), k.State))
	}
	return strings.Join(out, ", ")
}

// held reports whether z holds its zone: ZoneAvailable is True, or status.zoneID is set (the
// DNSZone controller sets it only once the tenancy rules accept the zone) and ZoneAvailable
// does not say another DNSZone holds it. Only such a DNSZone's keys sign the zone.
func held(z *dnsv1.DNSZone) bool {
	c := meta.FindStatusCondition(z.Status.Conditions, dnsv1.ConditionZoneAvailable)
	switch {
	case c == nil:
		return false
	case c.Status == metav1.ConditionTrue:
		return true
	case c.Reason == dnsv1.ReasonZoneConflict || c.Reason == dnsv1.ReasonParentNotAllowed:
		return false
	}
	return z.Status.ZoneID != ""
}

// holdChanged reports a status change of a DNSZone with spec.dnssec that changes held's
// answer, and one of a DNSZone whose DNSSEC is off that changes its Secure condition's reason
// (the DNSZone controller's turn-off moving on), which GenerationChangedPredicate drops.
func holdChanged(o, n *dnsv1.DNSZone) bool {
	if n.Spec.DNSSEC != nil && held(o) != held(n) {
		return true
	}
	return !enabled(n) && secureReason(o) != secureReason(n)
}

// enabled says whether z asks to be signed.
func enabled(z *dnsv1.DNSZone) bool { return z.Spec.DNSSEC != nil && z.Spec.DNSSEC.Enabled }

// secureReason is the reason of z's Secure condition, "" without one.
func secureReason(z *dnsv1.DNSZone) string {
	if c := meta.FindStatusCondition(z.Status.Conditions, dnsv1.ConditionSecure); c != nil {
		return c.Reason
	}
	return ""
}

// mayBeSigned says whether a DNSZone whose DNSSEC is off (or that is being deleted) may still
// be signed, so that its key Secret is read: this replica signs it, it has spec.dnssec (enabled
// or not: a status that is lost never decides), or its status shows a signing state
// (status.dnssec, or a Secure condition other than Unsigned). A zone without spec.dnssec that
// shows no signing state costs no Secret read.
func (s *Signer) mayBeSigned(nn types.NamespacedName, z *dnsv1.DNSZone) bool {
	s.mu.Lock()
	_, had := s.zones[nn]
	s.mu.Unlock()
	r := secureReason(z)
	return had || z.Spec.DNSSEC != nil || z.Status.DNSSEC != nil || (r != "" && r != dnsv1.ReasonUnsigned)
}

// unsigningDone says whether a key set records that its zone's turn-off is over
// (dnssec.Unsigning.Done): the zone's DS left the parent and its TTL has passed, so the zone is
// served unsigned. A key set that does not parse is not done: the zone keeps its signing.
func unsigningDone(raw []byte) bool {
	ks, err := dnssec.ParseKeySet(raw)
	return err == nil && ks.Unsigning != nil && ks.Unsigning.Done
}

// specOrDefault is z's spec.dnssec, or, without one (a zone whose DNSSEC is being turned off),
// the defaults: NSEC and the default signature validity and refresh.
func specOrDefault(z *dnsv1.DNSZone) *dnsv1.DNSSEC {
	if z.Spec.DNSSEC != nil {
		return z.Spec.DNSSEC
	}
	return &dnsv1.DNSSEC{}
}
