package plan

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/dnsplane/dnsplane/pkg/dnswire"
	"github.com/dnsplane/dnsplane/pkg/geo"
	"github.com/dnsplane/dnsplane/pkg/provider"
	"github.com/dnsplane/dnsplane/pkg/registry"
)

// Mode says how a name is shared among contributors.
type Mode int

const (
	// SingleOwner is the DNSEndpoint rule: a record set has one contributor;
	// a key whose registry holds another contributor (even of the same owner
	// ID) is a conflict.
	SingleOwner Mode = iota
	// Shared is the DNSRecord rule: contributors of the same kind with the
	// same key merge; the set holds the union of their targets.
	Shared
)

// String returns "SingleOwner" or "Shared".
func (m Mode) String() string {
	switch m {
	case SingleOwner:
		return "SingleOwner"
	case Shared:
		return "Shared"
	}
	return fmt.Sprintf("Mode(%d)", int(m))
}

// Conflict reasons; they equal the API's Ready reasons of the same name.
const (
	// ReasonOwnershipConflict: the key is held by someone else, its registry
	// is malformed, or the write would put a CNAME beside other data.
	ReasonOwnershipConflict = "OwnershipConflict"
	// ReasonInvalidEndpoint: the desired set is outside the zone or at a
	// name reserved for registry records.
	ReasonInvalidEndpoint = "InvalidEndpoint"
	// ReasonDoubleClaim: an external-dns registry record claims a key that a
	// dnsplane registry record holds for Self (or that Self may share), and
	// its owner is not the one Input.ExternalDNS.AdoptOwner takes over.
	ReasonDoubleClaim = "DoubleClaim"
	// ReasonNotCapable: the desired set needs a capability the zone's provider
	// lacks (Input.Capabilities), such as weighted routing for a set
	// identifier; it never will have it, so only a spec change helps.
	ReasonNotCapable = "NotCapable"
)

// Input is everything Compute looks at.
type Input struct {
	// Zone is the canonical zone apex ("example.test").
	Zone string
	// Self is the contributor the plan is for: the manager's owner ID and
	// the object as "kind/namespace/name" (registry.Resource).
	Self registry.Contributor
	// Mode is SingleOwner (DNSEndpoint) or Shared (DNSRecord).
	Mode Mode
	// Desired are Self's wanted record sets: canonical
	// (provider.CanonicalRecordSet), inside Zone, never at registry names.
	// Sets violating the last two become InvalidEndpoint conflicts. Two sets
	// with the same key are merged (targets united, smallest TTL).
	Desired []provider.RecordSet
	// Current is every record set in the zone now, registry TXT records
	// included, as the provider lists them. Ignored when Snapshot is set.
	Current []provider.RecordSet
	// DefaultTTL replaces a desired TTL of 0, except on an alias (providerSpecific alias=true,
	// external-dns' name), which answers with its target's TTL.
	DefaultTTL int64
	// Release: Self is being deleted and gives up every key it holds; Desired must be empty
	// (it is ignored). A held key that a registry record Self cannot read blocks (malformed, or
	// of a newer registry version), or that an external-dns owner Self does not take over claims
	// too, is released all the same: Self's registry records for it are deleted and its set is
	// left as it is, reported in Result.Kept. Without Release such a key is a conflict
	// (ReasonOwnershipConflict, or ReasonDoubleClaim) and Self keeps its claim, so that it can
	// still clean up once the record is repaired or the other claim goes.
	Release bool
	// Snapshot, when not nil, is NewSnapshot(Zone, Current) built once and
	// shared by every contributor planning against the same read of the
	// zone; Current is then ignored. nil builds one from Current.
	Snapshot *Snapshot
	// Policy restricts which record-set changes are written, as external-dns'
	// --policy does: "" or PolicySync writes every change, PolicyUpsertOnly
	// never deletes a set, PolicyCreateOnly never updates or deletes one (see
	// Policy). Registry records follow their sets.
	Policy Policy
	// ExternalDNS says how external-dns' TXT registry is named in this zone,
	// and which external-dns owner, if any, Self takes over (see ExternalDNS).
	ExternalDNS ExternalDNS
	// Guest: the zone is another namespace's than Self's. A delegation Self
	// desires there (an NS set strictly below the apex) must not hide names
	// held outside Self's namespace (see guardCuts).
	Guest bool
	// Capabilities, when not nil, are the zone's provider's: a desired set it
	// cannot hold (a set identifier or weight without WeightedRouting) is a
	// ReasonNotCapable conflict, so that only that key is refused and the
	// rest of the plan is written (the provider would refuse the whole
	// write). nil checks nothing.
	Capabilities *provider.Capabilities
}

// Result is what Compute plans.
type Result struct {
	// Changes are every write, record sets and registry records, in the
	// order to apply them (see Compute). Update and Delete carry as Before a
	// copy of the exact set Current held, so providers with conditional
	// writes apply them only if nothing changed meanwhile. In Shared mode
	// every record-set change carries provider.Change.Shared (other
	// contributors, of this cluster or another, may change the set between
	// the read and the write); registry records and SingleOwner sets have
	// one writer and never do.
	Changes []provider.Change
	// Records are the record-set changes of Changes, in the same order,
	// without registry records: the plan shown in status and hashed by ID.
	Records []provider.Change
	// Conflicts are the keys that nothing was written for, sorted by key.
	Conflicts []Conflict
	// Kept are the keys Self no longer desires (all of them, for an object being deleted) whose
	// record set this plan leaves in place although it releases Self's registry records for
	// them (their deletes are in Changes): a registry record for the key that cannot be read
	// (malformed, or of a newer registry version) may be another contributor's claim on the set
	// (Reason ReasonOwnershipConflict; Message names that record and why it cannot be read), and
	// an external-dns registry record of an owner Self does not take over claims it (Reason
	// ReasonDoubleClaim; Message names that owner and record). Sorted by key. Callers report them: they are records left behind.
	// Under a Policy that keeps a set (Release under PolicyUpsertOnly or
	// PolicyCreateOnly), the key is in Kept too, and Self's registry records
	// for it stay.
	Kept []Conflict
	// Skipped are the record-set changes Input.Policy kept from being
	// written, in key order: Deletes under PolicyUpsertOnly, Updates and
	// Deletes under PolicyCreateOnly. Not in Changes or Records.
	Skipped []provider.Change
}

// Conflict is a key the plan refused to write.
type Conflict struct {
	Key provider.RecordSetKey
	// Reason is ReasonOwnershipConflict, ReasonDoubleClaim, ReasonNotCapable
	// or ReasonInvalidEndpoint.
	Reason string
	// Message says who holds the key, or why it cannot be written, for the
	// object's condition.
	Message string
}

// Compute compares in.Desired with in.Current and the zone's registry and
// returns the changes that make the zone hold Self's record sets, touching
// only what Self may touch. The same Input always gives the same Result, and
// applying Result.Changes to Current and computing again gives no changes
// (idempotence).
//
// The keys considered are the desired ones and those Self holds a registry
// record for. For each, in this order:
//   - a malformed registry record for the key is a conflict: "registry
//     record malformed: <record>: <reason>" (the API treats the name as
//     foreign);
//   - a key without a dnsplane registry record that external-dns' registry
//     claims (Input.ExternalDNS.Naming; its set present or not) is a
//     conflict, "held by external-dns owner X (resource R)", unless every
//     claim is Input.ExternalDNS.AdoptOwner's: Self then takes it over (see
//     ExternalDNS). An existing set without any registry record is a
//     conflict, "held by another owner: no registry record". A key with no
//     set and no claim is free;
//   - SingleOwner: a desired key whose registry names another contributor is
//     a conflict naming it. Shared: a desired key held by a contributor of
//     another kind (a DNSEndpoint) is a conflict;
//   - a desired key that Self may write by dnsplane's registry but that an
//     external-dns owner other than AdoptOwner claims too is a double claim
//     (ReasonDoubleClaim); so is a key Self holds and no longer desires, whose
//     set that owner still wants (Input.Release keeps the set, Result.Kept);
//   - a desired set the provider cannot hold (Input.Capabilities: a set
//     identifier or weight without weighted routing) is ReasonNotCapable;
//   - a desired set that would put a CNAME beside other data at its name
//     (RFC 1034 §3.6.2; RRSIG and NSEC may coexist, RFC 4035 §2.5), counting
//     the sets that remain after this plan and other contributors' claims, is
//     a conflict.
//
// Nothing is written for a conflicting key, not even registry records. A key
// Self no longer desires, at a name where one of its desired keys is in
// conflict, is in conflict too (the refused key's reason) and stays as it is:
// a change at one name (an A replaced by a CNAME) is applied whole or not at
// all. Otherwise:
//   - SingleOwner: the set becomes the desired set. A key Self held but no
//     longer desires is deleted, or only released (Self's registry record
//     deleted) when another contributor also holds it.
//   - Shared: the set's targets are the union of every same-kind
//     contributor's registry targets, Self's replaced by its desired ones,
//     sorted; its TTL the smallest of their TTLs; Weight and
//     ProviderSpecific Self's desired ones (else the current set's). A key
//     Self no longer desires is rewritten without Self's targets, and
//     deleted when no contributor remains.
//   - A set with no targets is not written (it is deleted if it exists).
//   - Self's registry record holds its desired TTL and targets. Its existing
//     heartbeat is preserved, so a heartbeat-only difference is no change.
//     It sits at registry.Name with the zone cuts after this plan (non-apex
//     NS sets); a record of Self's for the key at another registry name is
//     deleted. A registry name already taken by a set that is not Self's
//     record for the key is a conflict.
//
// Changes come in five groups, each sorted by key then registry name:
// registry creates and updates (a claim is written before its record set, so
// a crash never leaves an unowned set), record deletes, record updates,
// record creates (deletes first, so a CNAME can replace an A), then registry
// deletes (released after the set) with the removal of a taken-over
// external-dns owner's TXT records. Input.Policy then withholds the set
// changes it does not allow (Result.Skipped), with their registry changes.
func Compute(in Input) Result {
	p := newPlanner(in)
	return p.run()
}

// cnameCompatible are the types RFC 4035 §2.5 allows beside a CNAME.
func cnameCompatible(t string) bool { return t == "RRSIG" || t == "NSEC" }

type planner struct {
	in        Input
	zone      string
	snap      *Snapshot
	ix        *registry.Index
	desired   map[provider.RecordSetKey]provider.RecordSet
	byName    map[string][]provider.RecordSetKey // desired keys per name
	conflicts map[provider.RecordSetKey]Conflict
	after     map[provider.RecordSetKey]*provider.RecordSet       // decided set per considered key; nil = absent
	keys      []provider.RecordSetKey                             // considered keys, sorted
	kept      []Conflict                                          // released keys whose set stays (Result.Kept), in key order
	adopt     map[provider.RecordSetKey][]registry.ExternalRecord // external-dns records of the adopted owner to remove, per key
	frozen    map[provider.RecordSetKey]bool                      // keys whose set Policy keeps as it is
	skipped   []provider.Change                                   // Result.Skipped
}

func newPlanner(in Input) *planner {
	if in.Mode != Shared {
		in.Mode = SingleOwner // the stricter rule for an unknown mode
	}
	p := &planner{
		in:        in,
		zone:      dnswire.Dotless(in.Zone),
		snap:      in.Snapshot,
		desired:   map[provider.RecordSetKey]provider.RecordSet{},
		byName:    map[string][]provider.RecordSetKey{},
		conflicts: map[provider.RecordSetKey]Conflict{},
		after:     map[provider.RecordSetKey]*provider.RecordSet{},
		adopt:     map[provider.RecordSetKey][]registry.ExternalRecord{},
		frozen:    map[provider.RecordSetKey]bool{},
	}
	if p.snap == nil {
		p.snap = NewSnapshot(p.zone, in.Current)
	}
	p.ix = p.snap.Index()
	if in.Release {
		in.Desired = nil
	}
	for _, d := range in.Desired {
		d = d.Clone()
		d.Name, d.Type = dnswire.Dotless(d.Name), strings.ToUpper(d.Type)
		if d.TTL == 0 && d.ProviderSpecific[provider.KeyAlias] != "true" { // an alias has no TTL of its own
			d.TTL = in.DefaultTTL
		}
		k := d.Key()
		switch {
		case !dnswire.IsSubdomain(d.Name, p.zone):
			p.conflict(k, ReasonInvalidEndpoint, fmt.Sprintf("%s is outside zone %s", d.Name, p.zone))
			continue
		case registry.IsRegistryName(d.Name):
			p.conflict(k, ReasonInvalidEndpoint, fmt.Sprintf("%s is reserved for dnsplane registry records", d.Name))
			continue
		}
		if prev, dup := p.desired[k]; dup {
			d.TTL = min(d.TTL, prev.TTL)
			d.Targets = union(prev.Targets, d.Targets)
		} else {
			p.byName[k.Name] = append(p.byName[k.Name], k)
		}
		p.desired[k] = d
	}
	p.guardCuts()
	seen := map[provider.RecordSetKey]bool{}
	for k := range p.desired {
		seen[k] = true
	}
	for _, e := range p.ix.Of(in.Self) {
		seen[e.Key()] = true
	}
	for k := range p.conflicts {
		delete(seen, k)
	}
	for k := range seen {
		p.keys = append(p.keys, k)
	}
	slices.SortFunc(p.keys, compareKeys)
	return p
}

func (p *planner) conflict(k provider.RecordSetKey, reason, msg string) {
	if _, done := p.conflicts[k]; !done {
		p.conflicts[k] = Conflict{Key: k, Reason: reason, Message: msg}
	}
}

func (p *planner) run() Result {
	if p.in.Self.Kind() == "" || p.in.Self.OwnerID == "" {
		for _, k := range p.keys {
			p.conflict(k, ReasonOwnershipConflict, fmt.Sprintf("invalid contributor %q: want an owner ID and kind/namespace/name", p.in.Self.String()))
		}
		return p.result(nil)
	}
	for _, k := range p.keys {
		if msg := p.notCapable(k); msg != "" {
			p.conflict(k, ReasonNotCapable, msg)
			continue
		}
		if reason, msg := p.ownership(k); reason != "" {
			if p.releasable(k) {
				p.keep(k, reason, msg)
				continue
			}
			p.conflict(k, reason, msg)
			continue
		}
		p.after[k] = p.decide(k)
		p.applyPolicy(k)
	}
	// A CNAME clash can only be judged once the other keys at the name are
	// decided, and a registry name can only be chosen once the zone cuts
	// after the plan are known. A key found in conflict keeps its current
	// set, which can in turn make another key clash, so repeat until nothing
	// changes (each round removes at least one key, so this ends).
	for {
		for changed := true; changed; {
			changed = false
			for _, k := range p.keys {
				if _, decided := p.after[k]; !decided {
					continue
				}
				if msg, clash := p.cnameClash(k); clash {
					p.conflict(k, ReasonOwnershipConflict, msg)
					delete(p.after, k)
					changed = true
				}
			}
			if p.holdBack() {
				changed = true
			}
		}
		ps, taken := p.changes()
		if len(taken) == 0 {
			return p.result(ps)
		}
		for k, msg := range taken {
			p.conflict(k, ReasonOwnershipConflict, msg)
			delete(p.after, k)
		}
	}
}

// notCapable returns why the desired set k cannot be held by the zone's provider
// (Input.Capabilities), or "" when it can, or k is not desired, or nothing is known of the
// provider.
func (p *planner) notCapable(k provider.RecordSetKey) string {
	c := p.in.Capabilities
	d, want := p.desired[k]
	if c == nil || !want {
		return ""
	}
	if _, isGeo := d.ProviderSpecific[geo.LabelTag]; isGeo {
		if c.GeoRouting {
			return ""
		}
		return fmt.Sprintf("%s: the zone's provider has no geo routing, so it cannot hold a geo set (docs/design.md, \"Geo answers\"); use the embedded server, Route 53 or Cloud DNS", k)
	}
	if c.WeightedRouting || (d.SetIdentifier == "" && d.Weight == nil) {
		return ""
	}
	return fmt.Sprintf("%s: the zone's provider has no weighted routing, so it cannot hold a set identifier or weight; remove setIdentifier (and the weight) from this endpoint", k)
}

// holdBack turns into conflicts the keys Self no longer desires at a name where a desired key of
// Self's is refused, so that their current sets and Self's registry records stay: the change at
// that name (an A replaced by a CNAME, a plain set by a weighted one) is applied whole or not at
// all, and the name never loses its data to a replacement that is not written. The conflict
// takes the refused key's reason, so Ready says what blocks the change. It reports whether it
// added any.
func (p *planner) holdBack() bool {
	changed := false
	for _, k := range p.keys {
		if _, decided := p.after[k]; !decided {
			continue
		}
		if _, want := p.desired[k]; want {
			continue
		}
		var blocked []string
		reason := ""
		for _, d := range p.byName[k.Name] {
			if c, refused := p.conflicts[d]; refused {
				blocked = append(blocked, d.String())
				if reason == "" {
					reason = c.Reason
				}
			}
		}
		if len(blocked) == 0 {
			continue
		}
		slices.Sort(blocked)
		p.conflict(k, reason, fmt.Sprintf("%s is kept as it is: its replacement at %s (%s) is not written, and a change at one name is applied whole or not at all",
			k, k.Name, strings.Join(blocked, ", ")))
		delete(p.after, k)
		changed = true
	}
	return changed
}

// releasable reports whether Self may still release k although ownership refused it: Self is
// being deleted (Input.Release) and holds a readable registry record for k. The refusal is then
// a registry record Self cannot read, or an external-dns owner's claim (the only refusals for a
// held key nobody desires), either of which may want the set.
func (p *planner) releasable(k provider.RecordSetKey) bool {
	return p.in.Release && len(p.ix.Records(p.in.Self, k)) > 0
}

// keep leaves k's record set as it is (the unreadable or external-dns claim may be on it) while
// Self's registry records for k are released, and reports k in Result.Kept with reason and msg.
func (p *planner) keep(k provider.RecordSetKey, reason, msg string) {
	if cur, exists := p.snap.Managed(k); exists {
		c := cur.Clone()
		p.after[k] = &c
	} else {
		p.after[k] = nil
	}
	p.kept = append(p.kept, Conflict{Key: k, Reason: reason, Message: msg})
}

// ownership applies the registry rules that do not depend on other keys. It
// returns the conflict's reason and message, or "" when k may be written (and
// records in p.adopt the external-dns records of the adopted owner to remove).
func (p *planner) ownership(k provider.RecordSetKey) (reason, msg string) {
	if why, bad := p.ix.Malformed(k); bad {
		return ReasonOwnershipConflict, "registry record malformed: " + why
	}
	entries := p.ix.Entries(k)
	ext := p.ix.ExternalFor(k, p.in.ExternalDNS.Naming)
	_, want := p.desired[k]
	if len(entries) == 0 {
		if len(ext) > 0 {
			if want && p.adoptable(ext) {
				p.adopt[k] = ext
				return "", ""
			}
			return ReasonOwnershipConflict, fmt.Sprintf("%s is held by external-dns %s", k, foreignClaim(ext, p.in.ExternalDNS.AdoptOwner))
		}
		if _, exists := p.snap.Managed(k); exists {
			return ReasonOwnershipConflict, fmt.Sprintf("%s is held by another owner: no registry record", k)
		}
	}
	if !want {
		// Leaving a key an external-dns owner claims too would delete a set that owner still
		// wants: a double claim, as on write (a takeover left half done finishes instead).
		return p.doubleClaim(k, ext)
	}
	var holders []string
	for _, e := range entries {
		c := e.Contributor()
		if c == p.in.Self || (p.in.Mode == Shared && c.Kind() == p.in.Self.Kind()) {
			continue
		}
		holders = append(holders, "owner "+c.OwnerID+" resource "+c.Resource)
	}
	if len(holders) > 0 {
		return ReasonOwnershipConflict, fmt.Sprintf("%s is held by another owner: %s", k, strings.Join(holders, ", "))
	}
	return p.doubleClaim(k, ext)
}

// decide returns the record set k should hold after this plan (nil: none).
func (p *planner) decide(k provider.RecordSetKey) *provider.RecordSet {
	cur, exists := p.snap.Managed(k)
	want, desired := p.desired[k]
	var others, otherKinds []registry.Entry
	for _, e := range p.ix.Entries(k) {
		switch c := e.Contributor(); {
		case c == p.in.Self:
		case p.in.Mode == Shared && c.Kind() == p.in.Self.Kind():
			others = append(others, e)
		default:
			otherKinds = append(otherKinds, e)
		}
	}
	if !desired && len(otherKinds) > 0 {
		// Someone we do not merge with holds it too (in SingleOwner mode,
		// anyone): release our claim, leave the set.
		if exists {
			c := cur.Clone()
			return &c
		}
		return nil
	}
	var out provider.RecordSet
	switch {
	case p.in.Mode == SingleOwner:
		if !desired {
			return nil
		}
		out = want.Clone()
	default:
		ttl := int64(-1)
		var targets []string
		for _, e := range others {
			targets = union(targets, e.Targets)
			if ttl < 0 || e.TTL < ttl {
				ttl = e.TTL
			}
		}
		out = provider.RecordSet{Name: k.Name, Type: k.Type, SetIdentifier: k.SetIdentifier}
		switch {
		case desired:
			targets = union(targets, want.Targets)
			if ttl < 0 || want.TTL < ttl {
				ttl = want.TTL
			}
			w := want.Clone()
			out.Weight, out.ProviderSpecific = w.Weight, w.ProviderSpecific
		case exists:
			c := cur.Clone()
			out.Weight, out.ProviderSpecific = c.Weight, c.ProviderSpecific
		}
		out.TTL = max(ttl, 0)
		out.Targets = targets
	}
	if len(out.Targets) == 0 {
		return nil
	}
	return &out
}

// cnameClash reports whether k's decided set would stand beside data it
// cannot coexist with (RFC 1034 §3.6.2).
func (p *planner) cnameClash(k provider.RecordSetKey) (string, bool) {
	if p.after[k] == nil {
		return "", false
	}
	if _, want := p.desired[k]; !want {
		return "", false
	}
	clashes := func(t string) bool {
		if t == k.Type {
			return false
		}
		return (k.Type == "CNAME" && !cnameCompatible(t)) || (t == "CNAME" && !cnameCompatible(k.Type))
	}
	var found []string
	for _, ok := range slices.Concat(p.snap.KeysAt(k.Name), p.byName[k.Name]) {
		if !clashes(ok.Type) {
			continue
		}
		// A set at the name after this plan: a current one this plan does
		// not delete.
		if _, exists := p.snap.Managed(ok); exists {
			if a, decided := p.after[ok]; !decided || a != nil {
				found = append(found, fmt.Sprintf("%s exists", ok))
			}
		}
		// Our own other wish at the name: a contradiction in the desired
		// sets blocks both sides, whatever was decided for the other one.
		if d, want := p.desired[ok]; want && len(d.Targets) > 0 {
			found = append(found, fmt.Sprintf("%s is wanted too", ok))
		}
		// Other contributors' claims, even where their set is gone.
		for _, e := range p.ix.Entries(ok) {
			if e.Contributor() != p.in.Self {
				found = append(found, fmt.Sprintf("%s is claimed by owner %s resource %s", ok, e.OwnerID, e.Resource))
			}
		}
	}
	if len(found) == 0 {
		return "", false
	}
	slices.Sort(found)
	found = slices.Compact(found)
	return fmt.Sprintf("%s: CNAME cannot coexist with other data at %s (RFC 1034 §3.6.2): %s", k, k.Name, strings.Join(found, ", ")), true
}

// cuts returns the delegation points after this plan: the names of non-apex
// NS sets in the zone.
func (p *planner) cuts() []string {
	var out []string
	for _, c := range p.snap.Cuts() {
		if a, decided := p.after[provider.RecordSetKey{Name: c, Type: "NS"}]; !decided || a != nil {
			out = append(out, c)
		}
	}
	// Weighted NS sets (set identifiers) are cuts too, so look at every
	// decided NS key, not only the plain one.
	for k, a := range p.after {
		if k.Type == "NS" && a != nil && dnswire.IsStrictSubdomain(k.Name, p.zone) {
			out = append(out, k.Name)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// Change groups, in application order.
const (
	groupClaim = iota
	groupDelete
	groupUpdate
	groupCreate
	groupRelease
)

type planned struct {
	group    int
	key      provider.RecordSetKey
	regName  string // registry record name; "" for a record-set change
	change   provider.Change
	isRecord bool
}

// changes returns every write for the decided keys, sorted, and the keys
// whose registry name is taken (conflicts, with their messages).
func (p *planner) changes() ([]planned, map[provider.RecordSetKey]string) {
	cuts := p.cuts()
	var out []planned
	taken := map[provider.RecordSetKey]string{}
	adopted := map[string]bool{}
	for _, k := range p.keys {
		after, decided := p.after[k]
		if !decided {
			continue
		}
		if ch, ok := diff(p.snap, k, after); ok {
			ch.Shared = p.in.Mode == Shared
			g := map[provider.Action]int{provider.ActionCreate: groupCreate, provider.ActionUpdate: groupUpdate, provider.ActionDelete: groupDelete}[ch.Action]
			out = append(out, planned{group: g, key: k, change: ch, isRecord: true})
		}
		regs, conflict := p.registryChanges(k, cuts)
		if conflict != "" {
			taken[k] = conflict
			continue
		}
		out = append(out, regs...)
		if !(p.frozen[k] && p.in.Mode == Shared) { // Self holds a claim after this plan
			out = append(out, p.adoptChanges(k, adopted)...)
		}
	}
	slices.SortStableFunc(out, func(a, b planned) int {
		return cmp.Or(cmp.Compare(a.group, b.group), compareKeys(a.key, b.key), cmp.Compare(a.regName, b.regName))
	})
	return out, taken
}

// registryChanges writes, moves or removes Self's registry record for k.
func (p *planner) registryChanges(k provider.RecordSetKey, cuts []string) ([]planned, string) {
	mine := p.ix.Records(p.in.Self, k)
	want, desired := p.desired[k]
	if p.frozen[k] {
		// Policy keeps the set: Self's registry records stay as they describe it. A takeover
		// (no record of Self's yet) claims the set as it is, in SingleOwner mode only.
		cur, _ := p.snap.Managed(k)
		if len(mine) > 0 || p.in.Mode == Shared || len(p.adopt[k]) == 0 || !desired {
			return nil, ""
		}
		want.TTL, want.Targets = cur.TTL, cur.Targets
	}
	var out []planned
	release := func(r registry.Record) {
		before := r.Set.Clone()
		out = append(out, planned{group: groupRelease, key: k, regName: r.Set.Name,
			change: provider.Change{Action: provider.ActionDelete, Before: &before}})
	}
	if !desired {
		for _, r := range mine {
			release(r)
		}
		return out, ""
	}
	loc := registry.Name(p.zone, p.in.Self, k, cuts...)
	var heartbeat time.Time
	var at *registry.Record
	for i, r := range mine {
		if r.Set.Name == loc {
			at = &mine[i]
		}
		if r.Entry.Heartbeat.After(heartbeat) {
			heartbeat = r.Entry.Heartbeat
		}
	}
	if at != nil {
		heartbeat = at.Entry.Heartbeat
	}
	e := registry.Entry{
		OwnerID: p.in.Self.OwnerID, Resource: p.in.Self.Resource,
		Name: k.Name, Type: k.Type, SetIdentifier: k.SetIdentifier,
		TTL: want.TTL, Targets: union(nil, want.Targets), Heartbeat: heartbeat,
	}
	rs := registry.RecordSet(p.zone, e, cuts...)
	switch {
	case at != nil && !at.Set.Equal(rs):
		before := at.Set.Clone()
		out = append(out, planned{group: groupClaim, key: k, regName: loc,
			change: provider.Change{Action: provider.ActionUpdate, Before: &before, After: &rs}})
	case at == nil:
		if taken, ok := p.snap.Lookup(rs.Key()); ok {
			return nil, fmt.Sprintf("%s: registry name %s is taken by a record that is not ours (%s)", k, loc, taken)
		}
		out = append(out, planned{group: groupClaim, key: k, regName: loc,
			change: provider.Change{Action: provider.ActionCreate, After: &rs}})
	}
	for _, r := range mine {
		if r.Set.Name != loc {
			release(r)
		}
	}
	return out, ""
}

// diff returns the change that turns current[k] into after, if any.
func diff(current *Snapshot, k provider.RecordSetKey, after *provider.RecordSet) (provider.Change, bool) {
	cur, exists := current.Managed(k)
	switch {
	case !exists && after == nil:
		return provider.Change{}, false
	case !exists:
		a := after.Clone()
		return provider.Change{Action: provider.ActionCreate, After: &a}, true
	case after == nil:
		b := cur.Clone()
		return provider.Change{Action: provider.ActionDelete, Before: &b}, true
	case cur.Equal(*after):
		return provider.Change{}, false
	}
	b, a := cur.Clone(), after.Clone()
	return provider.Change{Action: provider.ActionUpdate, Before: &b, After: &a}, true
}

func (p *planner) result(ps []planned) Result {
	var r Result
	for _, x := range ps {
		if _, conflicted := p.conflicts[x.key]; conflicted {
			continue
		}
		r.Changes = append(r.Changes, x.change)
		if x.isRecord {
			r.Records = append(r.Records, x.change)
		}
	}
	for _, c := range p.conflicts {
		r.Conflicts = append(r.Conflicts, c)
	}
	for _, c := range p.kept {
		if _, conflicted := p.conflicts[c.Key]; !conflicted {
			r.Kept = append(r.Kept, c)
		}
	}
	slices.SortFunc(r.Kept, func(a, b Conflict) int { return compareKeys(a.Key, b.Key) })
	for _, c := range p.skipped {
		if _, conflicted := p.conflicts[c.Before.Key()]; !conflicted {
			r.Skipped = append(r.Skipped, c)
		}
	}
	slices.SortFunc(r.Conflicts, func(a, b Conflict) int { return compareKeys(a.Key, b.Key) })
	return r
}

// union returns the sorted union of a and b without duplicates.
func union(a, b []string) []string {
	out := make([]string, 0, len(a)+len(b))
	out = append(append(out, a...), b...)
	slices.Sort(out)
	out = slices.Compact(out)
	if len(out) == 0 {
		return nil
	}
	return out
}

// compareKeys orders keys by name, type, then set identifier.
func compareKeys(a, b provider.RecordSetKey) int {
	return cmp.Or(cmp.Compare(a.Name, b.Name), cmp.Compare(a.Type, b.Type), cmp.Compare(a.SetIdentifier, b.SetIdentifier))
}
