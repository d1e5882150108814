package registry

import (
	"cmp"
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"

	"github.com/dnsplane/dnsplane/pkg/dnswire"
	"github.com/dnsplane/dnsplane/pkg/provider"
)

// Record is one registry record read from a zone: the entry it holds and
// the exact TXT record set that holds it (the Before of a conditional
// update or delete).
type Record struct {
	Entry Entry
	Set   provider.RecordSet
}

// ExternalClaim is an external-dns registry record ("heritage=external-dns,
// external-dns/owner=<owner>,external-dns/resource=<resource>") found in the
// zone, for conflict messages.
type ExternalClaim struct {
	// Owner is external-dns' --txt-owner-id ("external-dns/owner").
	Owner string
	// Resource is "external-dns/resource" (e.g. "ingress/default/app"); may
	// be empty.
	Resource string
	// RecordName is where the external-dns TXT record is.
	RecordName string
}

// String is "owner X" or "owner X (resource R)".
func (c ExternalClaim) String() string {
	if c.Resource == "" {
		return "owner " + c.Owner
	}
	return "owner " + c.Owner + " (resource " + c.Resource + ")"
}

// Index is a zone's registry as read from its record sets: every
// contributor's entries per managed record set, the malformed registry
// records, and external-dns' registry records. It is immutable once built
// and safe for concurrent reads.
type Index struct {
	zone string
	// records holds every valid record once, sorted by contributor (owner ID, resource), then
	// key and registry name; byContrib is each contributor's run of it.
	records   []Record
	byContrib map[Contributor]span
	// keyOrder is records' positions sorted by key, then as records; byKey is each key's run
	// of it. Spans instead of per-key slices: one allocation for the index, not one per set.
	keyOrder  []int32
	byKey     map[provider.RecordSetKey]span
	malformed []malformedRecord
	external  map[nameType][]ExternalClaim
	// externalAt holds the external-dns registry TXT sets by their record name (ExternalFor).
	externalAt map[string][]ExternalRecord
}

// span is a run [start, start+n) of Index.records or Index.keyOrder.
type span struct{ start, n int32 }

type nameType struct{ name, typ string }

type malformedRecord struct {
	name, typ string // managed key it stands for; "" when unknown
	set       string
	setKnown  bool
	reason    string
}

// NewIndex reads the registry of zone from sets, the zone's current record
// sets (registry TXT records included; other sets are only looked at for
// external-dns registry values).
//
// A TXT set at a registry name (IsRegistryName) is a registry record. It is
// valid when it holds exactly one value that Parse accepts, whose name is in
// zone and is not itself a registry name, and when the record's own name is
// one Name can give for that entry (so that an entry copied to another
// contributor's name is not believed). Anything else is malformed: it is kept
// with its reason under the managed key it stands for, taken from the value
// when it has a usable name and type, else from the registry name (with the
// set identifier unknown: then it stands for every set identifier of that
// name and type). The API contract treats such names as foreign ("Malformed
// registry values never crash anything").
//
// A TXT set elsewhere whose value starts with "heritage=external-dns" (with or
// without surrounding quotes) is an external-dns registry record. Best
// effort, it is taken to claim its own name for every type and, when its
// first label is "<type>-<label>" (external-dns' newer format, e.g.
// "a-www.example.test", "cname-www.example.test"), "<label>.<rest>" for that
// type.
//
// The index keeps the record sets' values (Targets) it holds, shared with
// sets: callers must not modify sets' Targets afterwards.
func NewIndex(zone string, sets []provider.RecordSet) *Index {
	ix := &Index{
		zone:       dnswire.Dotless(zone),
		external:   map[nameType][]ExternalClaim{},
		externalAt: map[string][]ExternalRecord{},
	}
	n := 0
	for _, s := range sets {
		if s.Type == "TXT" && IsRegistryName(s.Name) {
			n++
		}
	}
	ix.records = make([]Record, 0, n) // one allocation, no growth
	for _, s := range sets {
		if s.Type != "TXT" {
			continue
		}
		if IsRegistryName(s.Name) {
			ix.addRegistry(s)
			continue
		}
		ix.addExternal(s)
		ix.addExternalRecord(s)
	}
	ix.buildSpans()
	for _, cs := range ix.external {
		slices.SortFunc(cs, func(a, b ExternalClaim) int {
			return cmp.Or(cmp.Compare(a.Owner, b.Owner), cmp.Compare(a.Resource, b.Resource), cmp.Compare(a.RecordName, b.RecordName))
		})
	}
	slices.SortFunc(ix.malformed, func(a, b malformedRecord) int { return cmp.Compare(a.reason, b.reason) })
	return ix
}

// byRecord orders records by contributor (owner ID, resource), key, then registry name.
func byRecord(a, b *Record) int {
	return cmp.Or(
		cmp.Compare(a.Entry.OwnerID, b.Entry.OwnerID),
		cmp.Compare(a.Entry.Resource, b.Entry.Resource),
		compareKeys(a.Entry.Key(), b.Entry.Key()),
		cmp.Compare(a.Set.Name, b.Set.Name))
}

// buildSpans sorts ix.records and indexes them by contributor and by key.
func (ix *Index) buildSpans() {
	rs := ix.records
	slices.SortFunc(rs, func(a, b Record) int { return byRecord(&a, &b) })
	ix.byContrib = make(map[Contributor]span)
	for i := 0; i < len(rs); {
		c := rs[i].Entry.Contributor()
		j := i + 1
		for j < len(rs) && rs[j].Entry.Contributor() == c {
			j++
		}
		ix.byContrib[c] = span{int32(i), int32(j - i)}
		i = j
	}
	ix.keyOrder = make([]int32, len(rs))
	for i := range ix.keyOrder {
		ix.keyOrder[i] = int32(i)
	}
	slices.SortFunc(ix.keyOrder, func(a, b int32) int {
		return cmp.Or(compareKeys(rs[a].Entry.Key(), rs[b].Entry.Key()), cmp.Compare(a, b))
	})
	ix.byKey = make(map[provider.RecordSetKey]span, len(rs))
	for i := 0; i < len(ix.keyOrder); {
		k := rs[ix.keyOrder[i]].Entry.Key()
		j := i + 1
		for j < len(ix.keyOrder) && rs[ix.keyOrder[j]].Entry.Key() == k {
			j++
		}
		ix.byKey[k] = span{int32(i), int32(j - i)}
		i = j
	}
}

// keyRecords returns the records of key, in records' order; shared, do not modify.
func (ix *Index) keyRecords(key provider.RecordSetKey) []int32 {
	sp, ok := ix.byKey[key]
	if !ok {
		return nil
	}
	return ix.keyOrder[sp.start : sp.start+sp.n]
}

func (ix *Index) addRegistry(s provider.RecordSet) {
	bad := func(reason string) {
		m := malformedRecord{reason: s.Name + ": " + reason}
		for _, t := range s.Targets {
			q, _ := url.ParseQuery(t)
			if n, typ := q.Get(fieldName), q.Get(fieldType); n != "" && n == dnswire.Dotless(n) && isTypeMnemonic(typ) {
				m.name, m.typ, m.set, m.setKnown = n, typ, q.Get(fieldSet), true
				break
			}
		}
		if m.name == "" {
			m.name, m.typ, _ = keyFromName(s.Name)
		}
		ix.malformed = append(ix.malformed, m)
	}
	if len(s.Targets) != 1 {
		bad(fmt.Sprintf("registry record has %d values, want 1", len(s.Targets)))
		return
	}
	e, err := Parse(s.Targets[0])
	switch {
	case errors.Is(err, ErrForeign):
		bad("not a dnsplane registry value")
		return
	case err != nil:
		bad(err.Error())
		return
	case !dnswire.IsSubdomain(e.Name, ix.zone):
		bad(fmt.Sprintf("names %s, outside zone %s", e.Name, ix.zone))
		return
	case IsRegistryName(e.Name):
		bad(fmt.Sprintf("names %s, itself a registry name", e.Name))
		return
	case !nameMatches(ix.zone, s.Name, e):
		bad(fmt.Sprintf("record name does not match its value (%s for %s)", e.Contributor(), e.Key()))
		return
	}
	// s is kept as given, not cloned: callers never modify sets after NewIndex (see its
	// doc), and the accessors return copies.
	ix.records = append(ix.records, Record{Entry: e, Set: s})
}

// isExternalType reports whether t is a type prefix of external-dns' newer
// TXT names ("a-", "cname-", ...).
func isExternalType(t string) bool {
	switch t {
	case "a", "aaaa", "cname", "ns", "mx", "srv", "txt", "ptr", "caa", "naptr", "ds":
		return true
	}
	return false
}

func (ix *Index) addExternal(s provider.RecordSet) {
	for _, t := range s.Targets {
		c, ok := parseExternal(t)
		if !ok {
			continue
		}
		c.RecordName = s.Name
		ix.external[nameType{s.Name, ""}] = append(ix.external[nameType{s.Name, ""}], c)
		label, rest, _ := strings.Cut(s.Name, ".")
		typ, managed, found := strings.Cut(label, "-")
		if found && managed != "" && isExternalType(typ) {
			k := nameType{join(managed, rest), strings.ToUpper(typ)}
			ix.external[k] = append(ix.external[k], c)
		}
	}
}

// parseExternal reads an external-dns registry value:
// "heritage=external-dns,external-dns/owner=<o>,external-dns/resource=<r>",
// possibly wrapped in double quotes.
func parseExternal(v string) (ExternalClaim, bool) {
	v = strings.TrimSuffix(strings.TrimPrefix(strings.TrimSpace(v), `"`), `"`)
	if !strings.HasPrefix(v, "heritage=external-dns") {
		return ExternalClaim{}, false
	}
	var c ExternalClaim
	for _, kv := range strings.Split(v, ",") {
		k, val, _ := strings.Cut(kv, "=")
		switch k {
		case "external-dns/owner":
			c.Owner = val
		case "external-dns/resource":
			c.Resource = val
		}
	}
	if c.Owner == "" {
		c.Owner = "(unknown)"
	}
	return c, true
}

// Zone returns the zone the index was built for, canonical.
func (ix *Index) Zone() string { return ix.zone }

// Entries returns every contributor's valid entry for key, sorted by
// contributor (owner ID, then resource); nil when none. The result is a
// copy.
func (ix *Index) Entries(key provider.RecordSetKey) []Entry {
	is := ix.keyRecords(key)
	if len(is) == 0 {
		return nil
	}
	out := make([]Entry, len(is))
	for j, i := range is {
		out[j] = cloneEntry(ix.records[i].Entry)
	}
	return out
}

// Records returns c's registry records for key, with the record sets that
// hold them, sorted by registry name. There is normally at most one; more
// appear when a record was hoisted after a zone cut appeared, and the
// planner then keeps one and deletes the others. The result is a copy.
func (ix *Index) Records(c Contributor, key provider.RecordSetKey) []Record {
	var out []Record
	for _, i := range ix.keyRecords(key) {
		if r := &ix.records[i]; r.Entry.Contributor() == c {
			out = append(out, Record{Entry: cloneEntry(r.Entry), Set: r.Set.Clone()})
		}
	}
	return out
}

// Of returns what contributor c holds in this zone: its valid entries,
// sorted by key (name, type, set identifier). The result is a copy.
func (ix *Index) Of(c Contributor) []Entry {
	sp := ix.byContrib[c]
	rs := ix.records[sp.start : sp.start+sp.n]
	out := make([]Entry, 0, len(rs))
	for _, r := range rs {
		out = append(out, cloneEntry(r.Entry))
	}
	return out
}

// Contributors returns the contributors of owner whose resource is of kind ("DNSEndpoint"),
// each once, sorted by resource: the objects that hold records in this zone by its registry
// (a sweep compares them with the objects that still exist).
func (ix *Index) Contributors(owner, kind string) []Contributor {
	var out []Contributor
	for c := range ix.byContrib {
		if c.OwnerID == owner && c.Kind() == kind {
			out = append(out, c)
		}
	}
	slices.SortFunc(out, func(a, b Contributor) int { return cmp.Compare(a.Resource, b.Resource) })
	return out
}

// Keys returns every managed key with at least one valid entry, sorted.
func (ix *Index) Keys() []provider.RecordSetKey {
	out := make([]provider.RecordSetKey, 0, len(ix.byKey))
	for _, i := range ix.keyOrder { // sorted by key already
		if k := ix.records[i].Entry.Key(); len(out) == 0 || out[len(out)-1] != k {
			out = append(out, k)
		}
	}
	return out
}

// Malformed reports whether a malformed registry record stands for key, and
// why ("<registry name>: <reason>", several joined with "; "). A malformed
// record whose set identifier could not be read stands for every set
// identifier of its name and type.
func (ix *Index) Malformed(key provider.RecordSetKey) (string, bool) {
	var reasons []string
	for _, m := range ix.malformed {
		if m.name == key.Name && m.typ == key.Type && (!m.setKnown || m.set == key.SetIdentifier) {
			reasons = append(reasons, m.reason)
		}
	}
	return strings.Join(reasons, "; "), len(reasons) > 0
}

// MalformedRecords returns the reasons of every malformed registry record of
// the zone, including those that stand for no recognisable key, sorted.
func (ix *Index) MalformedRecords() []string {
	out := make([]string, len(ix.malformed))
	for i, m := range ix.malformed {
		out[i] = m.reason
	}
	return out
}

// ExternalDNS returns, best effort, the external-dns registry record that
// claims key: one naming key's type ("a-www..."), else one at key's name
// (external-dns' older format, which names no type). Among several, the
// first by owner.
func (ix *Index) ExternalDNS(key provider.RecordSetKey) (ExternalClaim, bool) {
	if cs := ix.external[nameType{key.Name, key.Type}]; len(cs) > 0 {
		return cs[0], true
	}
	if cs := ix.external[nameType{key.Name, ""}]; len(cs) > 0 {
		return cs[0], true
	}
	return ExternalClaim{}, false
}

// compareKeys orders keys by name, type, then set identifier.
func compareKeys(a, b provider.RecordSetKey) int {
	return cmp.Or(cmp.Compare(a.Name, b.Name), cmp.Compare(a.Type, b.Type), cmp.Compare(a.SetIdentifier, b.SetIdentifier))
}

func cloneEntry(e Entry) Entry {
	e.Targets = slices.Clone(e.Targets)
	return e
}
