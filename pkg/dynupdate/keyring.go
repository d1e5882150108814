package dynupdate

import (
	"slices"
	"strings"
	"sync"

	"github.com/dnsplane/dnsplane/pkg/dnswire"
	"github.com/miekg/dns"
	"k8s.io/apimachinery/pkg/types"
)

// Binding is one key bound to one DNSZone (an item of its spec.dynamicUpdates), resolved.
type Binding struct {
	// DNSZone is the DNSZone's namespace and name.
	DNSZone types.NamespacedName
	// Zone is its zone, a lower-case FQDN.
	Zone string
	// Secret is the key Secret's name, in DNSZone's namespace.
	Secret string
	// Key is the Secret's key.
	Key Key
	// Policy is what the binding lets the key change.
	Policy Policy
}

// Keyring is the set of bound keys every replica verifies UPDATEs against: for each DNSZone,
// its resolved bindings. Safe for concurrent use.
type Keyring struct {
	mu    sync.RWMutex
	zones map[types.NamespacedName][]Binding
}

// NewKeyring returns an empty keyring.
func NewKeyring() *Keyring { return &Keyring{zones: map[types.NamespacedName][]Binding{}} }

// Set replaces the bindings of DNSZone z; none removes z.
func (k *Keyring) Set(z types.NamespacedName, bindings []Binding) {
	k.mu.Lock()
	defer k.mu.Unlock()
	if len(bindings) == 0 {
		delete(k.zones, z)
		return
	}
	k.zones[z] = slices.Clone(bindings)
}

// Key returns the key named keyName that a DNSZone of zone binds (Binding's), false when none
// does: a key verifies only the UPDATEs of the zones that bind it, so that tenants' keys of the
// same name never verify each other's messages.
func (k *Keyring) Key(keyName, zone string) (Key, bool) {
	b, ok := k.Binding(keyName, zone)
	return b.Key, ok
}

// Binding returns the binding of the key named keyName for zone (an FQDN, any case): the
// DNSZone whose zone it is, when that DNSZone binds the key; false otherwise. When several
// DNSZones of the same zone (shared hosted zones) bind it, the first by namespace/name wins.
func (k *Keyring) Binding(keyName, zone string) (Binding, bool) {
	keyName, zone = dnswire.Fqdn(keyName), dnswire.Fqdn(zone)
	k.mu.RLock()
	defer k.mu.RUnlock()
	var out []Binding
	for _, bs := range k.zones {
		for _, b := range bs {
			if b.Key.Name == keyName && b.Zone == zone {
				out = append(out, b)
			}
		}
	}
	if len(out) == 0 {
		return Binding{}, false
	}
	slices.SortFunc(out, func(a, b Binding) int { return strings.Compare(a.DNSZone.String(), b.DNSZone.String()) })
	return out[0], true
}

// Zone returns the longest zone some DNSZone binds a key to that is name or an ancestor of it
// (any case, with or without the trailing dot; the zone lower-case with its dot), false when
// none is.
func (k *Keyring) Zone(name string) (string, bool) {
	name = dnswire.Fqdn(name)
	k.mu.RLock()
	defer k.mu.RUnlock()
	best := ""
	for _, bs := range k.zones {
		for _, b := range bs {
			if dns.IsSubDomain(b.Zone, name) && len(b.Zone) > len(best) {
				best = b.Zone
			}
		}
	}
	return best, best != ""
}
