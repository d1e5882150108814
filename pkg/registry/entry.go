package registry

import (
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/dnsplane/dnsplane/pkg/dnswire"
	"github.com/dnsplane/dnsplane/pkg/provider"
)

// Heritage is the value of the "heritage" field that marks a dnsplane
// registry value. Any other heritage (external-dns writes
// "heritage=external-dns,...") is foreign.
const Heritage = "dnsplane"

// Version is the registry format version this package writes and reads
// ("v=1"). Another version is malformed: its meaning is unknown, so the name
// is treated as foreign rather than guessed at.
const Version = "1"

// Sentinel errors of Parse; callers test them with errors.Is.
var (
	// ErrForeign: the value is not a dnsplane registry value (no
	// "heritage=dnsplane"): another tool's registry, such as external-dns'
	// "heritage=external-dns,external-dns/owner=...", or any other TXT data.
	ErrForeign = errors.New("not a dnsplane registry value")
	// ErrMalformed: the value claims heritage=dnsplane but cannot be read:
	// unknown version, missing owner, bad ttl, bad heartbeat, ... The error
	// wraps it with the precise reason.
	ErrMalformed = errors.New("malformed dnsplane registry value")
)

// Contributor is one object in one cluster: the manager's --owner-id and the
// object as "kind/namespace/name" (dnsplane API contract, "A contributor").
// It is comparable and used as a map key.
type Contributor struct {
	// OwnerID is the manager's --owner-id (by default the UID of the
	// kube-system namespace).
	OwnerID string
	// Resource is "kind/namespace/name", for example "DNSEndpoint/team-a/www"
	// (see Resource).
	Resource string
}

// String formats the contributor as "ownerID/kind/namespace/name".
func (c Contributor) String() string { return c.OwnerID + "/" + c.Resource }

// Kind returns the kind part of Resource ("DNSEndpoint"), or "" when
// Resource is not "kind/namespace/name".
func (c Contributor) Kind() string {
	kind, _, _, ok := splitResource(c.Resource)
	if !ok {
		return ""
	}
	return kind
}

// Object returns the namespace and name of Resource ("DNSEndpoint/team-a/www": "team-a",
// "www"); ok is false when Resource is not "kind/namespace/name".
func (c Contributor) Object() (namespace, name string, ok bool) {
	_, namespace, name, ok = splitResource(c.Resource)
	return namespace, name, ok
}

// Resource formats an object as a contributor resource:
// Resource("DNSEndpoint", "team-a", "www") is "DNSEndpoint/team-a/www".
func Resource(kind, namespace, name string) string {
	return kind + "/" + namespace + "/" + name
}

// splitResource splits "kind/namespace/name"; all three parts must be
// non-empty.
func splitResource(r string) (kind, namespace, name string, ok bool) {
	parts := strings.Split(r, "/")
	if len(parts) != 3 || parts[0] == "" || parts[1] == "" || parts[2] == "" {
		return "", "", "", false
	}
	return parts[0], parts[1], parts[2], true
}

// Entry is one contributor's claim on one managed record set: the content
// of one registry TXT record.
type Entry struct {
	// OwnerID and Resource identify the contributor (see Contributor).
	OwnerID  string
	Resource string
	// Name, Type and SetIdentifier are the key of the managed record set,
	// in the dotless form (dnswire.Dotless; Type upper-case).
	Name          string
	Type          string
	SetIdentifier string
	// TTL is the TTL this contributor asked for, in seconds
	// (0..provider.MaxTTL). Shared sets take the smallest of their
	// contributors' TTLs.
	TTL int64
	// Targets are this contributor's own targets, canonical. Encode writes
	// them sorted; order is not significant (RFC 2181 §5).
	Targets []string
	// Heartbeat is the contributor's last heartbeat, whole seconds; the zero
	// time means none. Only the rootHost's registry record of a DNSRecord
	// carries one (dnsplane API contract, "Heartbeats").
	Heartbeat time.Time
}

// Contributor returns the entry's contributor.
func (e Entry) Contributor() Contributor {
	return Contributor{OwnerID: e.OwnerID, Resource: e.Resource}
}

// Key returns the key of the managed record set the entry claims.
func (e Entry) Key() provider.RecordSetKey {
	return provider.RecordSetKey{Name: e.Name, Type: e.Type, SetIdentifier: e.SetIdentifier}
}

// Equal reports whether e and o carry the same claim: every field equal,
// targets compared as a set (order ignored), heartbeats compared as instants
// (time.Time.Equal).
func (e Entry) Equal(o Entry) bool {
	return e.EqualIgnoringHeartbeat(o) && e.Heartbeat.Equal(o.Heartbeat)
}

// EqualIgnoringHeartbeat is Equal without the heartbeat: a heartbeat-only
// difference is not a change of ownership or targets.
func (e Entry) EqualIgnoringHeartbeat(o Entry) bool {
	if e.OwnerID != o.OwnerID || e.Resource != o.Resource || e.Key() != o.Key() || e.TTL != o.TTL {
		return false
	}
	return slices.Equal(sortedCopy(e.Targets), sortedCopy(o.Targets))
}

// WithHeartbeat returns a copy of e whose heartbeat is t truncated to whole
// seconds, in UTC (the value carries Unix seconds). A zero t removes the
// heartbeat. The caller decides which entry carries one: only the rootHost's
// registry record of a DNSRecord (dnsplane API contract, "Heartbeats").
func WithHeartbeat(e Entry, t time.Time) Entry {
	e.Targets = slices.Clone(e.Targets)
	if t.IsZero() {
		e.Heartbeat = time.Time{}
		return e
	}
	e.Heartbeat = time.Unix(t.Unix(), 0).UTC()
	return e
}

// Field names of the value, in the order Encode writes them.
const (
	fieldHeritage  = "heritage"
	fieldVersion   = "v"
	fieldOwner     = "owner"
	fieldResource  = "resource"
	fieldName      = "name"
	fieldType      = "type"
	fieldSet       = "set"
	fieldTTL       = "ttl"
	fieldTarget    = "target"
	fieldHeartbeat = "heartbeat"
)

// readable undoes net/url's escaping of characters that are safe inside a
// query value and common in owner IDs, resources and targets, so that the
// value stays readable in dig output (IPv6 targets, "kind/ns/name").
// url.ParseQuery accepts them unescaped. A strings.Replacer is read-only
// after construction and safe for concurrent use.
var readable = strings.NewReplacer("%3A", ":", "%2F", "/", "%40", "@", "%2A", "*", "%2C", ",")

// escape is url.QueryEscape, with the characters of readable left as is.
func escape(s string) string { return readable.Replace(url.QueryEscape(s)) }

// Encode returns the registry TXT value of e, a single logical TXT string
// that may exceed 255 bytes (providers chunk it, provider.SplitTXT). Fields
// come in a fixed order, each value escaped with net/url (query escaping,
// with ':', '/', '@', '*' and ',' left readable), so that equal entries give
// byte-equal values:
//
//	heritage=dnsplane&v=1&owner=<id>&resource=<kind/ns/name>&name=<name>
//	&type=<TYPE>[&set=<set identifier>]&ttl=<seconds>&target=<t1>&target=<t2>...
//	[&heartbeat=<unix seconds>]
//
// (one line in the value). "set" is omitted when empty, "heartbeat" when
// zero, and targets are written sorted. For example:
//
//	heritage=dnsplane&v=1&owner=c1&resource=DNSEndpoint/team-a/www&name=www.example.test&type=A&ttl=300&target=192.0.2.1&target=192.0.2.2
//
// Encode does not validate e; Parse does.
func (e Entry) Encode() string {
	var b strings.Builder
	add := func(k, v string) {
		if b.Len() > 0 {
			b.WriteByte('&')
		}
		b.WriteString(k)
		b.WriteByte('=')
		b.WriteString(escape(v))
	}
	add(fieldHeritage, Heritage)
	add(fieldVersion, Version)
	add(fieldOwner, e.OwnerID)
	add(fieldResource, e.Resource)
	add(fieldName, e.Name)
	add(fieldType, e.Type)
	if e.SetIdentifier != "" {
		add(fieldSet, e.SetIdentifier)
	}
	add(fieldTTL, strconv.FormatInt(e.TTL, 10))
	for _, t := range sortedCopy(e.Targets) {
		add(fieldTarget, t)
	}
	if !e.Heartbeat.IsZero() {
		add(fieldHeartbeat, strconv.FormatInt(e.Heartbeat.Unix(), 10))
	}
	return b.String()
}

// Parse reads a registry TXT value (the logical value: provider.JoinTXT of
// its character-strings).
//
// Errors:
//   - ErrForeign when the value has no single "heritage=dnsplane" field
//     (external-dns' "heritage=external-dns,external-dns/owner=...", SPF, any
//     other TXT data);
//   - ErrMalformed, wrapped with the reason, when it has one but cannot be
//     read: a query syntax error (url.ParseQuery), a repeated single-valued
//     field, a version other than Version, a missing owner, a resource that
//     is not "kind/namespace/name", a missing or non-canonical name, a type
//     that is not upper-case letters and digits, a ttl outside
//     0..provider.MaxTTL (RFC 2181 §8), or a heartbeat that is not
//     non-negative Unix seconds.
//
// Unknown fields are ignored (a later v1 may add optional fields). Targets
// are returned sorted, the heartbeat in UTC. Parse never panics.
func Parse(value string) (Entry, error) {
	q, qerr := parseQuery(value)
	if h, n := q.first(fieldHeritage); n != 1 || h != Heritage {
		if n > 1 && q.has(fieldHeritage, Heritage) {
			return Entry{}, fmt.Errorf("%w: field %q repeated", ErrMalformed, fieldHeritage)
		}
		return Entry{}, ErrForeign
	}
	if qerr != nil {
		return Entry{}, fmt.Errorf("%w: %v", ErrMalformed, qerr)
	}
	single := func(k string, required bool) (string, error) {
		v, n := q.first(k)
		switch {
		case n > 1:
			return "", fmt.Errorf("%w: field %q repeated", ErrMalformed, k)
		case n == 0 && required:
			return "", fmt.Errorf("%w: missing %s", ErrMalformed, k)
		}
		return v, nil
	}
	var e Entry
	v, err := single(fieldVersion, true)
	if err != nil {
		return Entry{}, err
	}
	if v != Version {
		return Entry{}, fmt.Errorf("%w: unknown version %q (this reader knows v=%s)", ErrMalformed, v, Version)
	}
	if e.OwnerID, err = single(fieldOwner, true); err != nil {
		return Entry{}, err
	}
	if e.OwnerID == "" {
		return Entry{}, fmt.Errorf("%w: missing owner", ErrMalformed)
	}
	if e.Resource, err = single(fieldResource, true); err != nil {
		return Entry{}, err
	}
	if _, _, _, ok := splitResource(e.Resource); !ok {
		return Entry{}, fmt.Errorf("%w: resource %q is not kind/namespace/name", ErrMalformed, e.Resource)
	}
	if e.Name, err = single(fieldName, true); err != nil {
		return Entry{}, err
	}
	if e.Name == "" || e.Name != dnswire.Dotless(e.Name) {
		return Entry{}, fmt.Errorf("%w: name %q is not a canonical record name", ErrMalformed, e.Name)
	}
	if e.Type, err = single(fieldType, true); err != nil {
		return Entry{}, err
	}
	if !isTypeMnemonic(e.Type) {
		return Entry{}, fmt.Errorf("%w: type %q is not an upper-case record type", ErrMalformed, e.Type)
	}
	if e.SetIdentifier, err = single(fieldSet, false); err != nil {
		return Entry{}, err
	}
	ttl, err := single(fieldTTL, true)
	if err != nil {
		return Entry{}, err
	}
	if e.TTL, err = strconv.ParseInt(ttl, 10, 64); err != nil || e.TTL < 0 || e.TTL > provider.MaxTTL {
		return Entry{}, fmt.Errorf("%w: bad ttl %q (want 0..%d seconds, RFC 2181 §8)", ErrMalformed, ttl, provider.MaxTTL)
	}
	e.Targets = q.all(fieldTarget) // a fresh slice
	slices.Sort(e.Targets)
	hb, err := single(fieldHeartbeat, false)
	if err != nil {
		return Entry{}, err
	}
	if _, n := q.first(fieldHeartbeat); n > 0 {
		secs, perr := strconv.ParseInt(hb, 10, 64)
		if perr != nil || secs < 0 || secs > maxHeartbeat {
			return Entry{}, fmt.Errorf("%w: bad heartbeat %q (want Unix seconds)", ErrMalformed, hb)
		}
		e.Heartbeat = time.Unix(secs, 0).UTC()
	}
	return e, nil
}

// maxHeartbeat bounds heartbeats to year 9999, so that every accepted value
// is a time Encode writes back unchanged.
const maxHeartbeat = 253402300799

// isTypeMnemonic reports whether t looks like a record type mnemonic as
// RecordSet.Type spells it: upper-case letters and digits, starting with a
// letter ("A", "AAAA", "TYPE65534").
func isTypeMnemonic(t string) bool {
	if t == "" || len(t) > 16 || t[0] < 'A' || t[0] > 'Z' {
		return false
	}
	for i := 0; i < len(t); i++ {
		c := t[i]
		if !(c >= 'A' && c <= 'Z' || c >= '0' && c <= '9') {
			return false
		}
	}
	return true
}

func sortedCopy(s []string) []string {
	if len(s) == 0 {
		return nil
	}
	c := slices.Clone(s)
	slices.Sort(c)
	return c
}

// query is a registry value's fields in order, read as url.ParseQuery reads them (the same
// splitting on "&", unescaping and first error), without building a map: Parse runs once per
// registry record of every zone view.
type query []queryField

type queryField struct{ k, v string }

// maxQueryFields is where parseQuery leaves the work to url.ParseQuery, so that its limit on
// the number of fields (and its error) applies as before; registry values hold about ten.
const maxQueryFields = 1000

func parseQuery(s string) (query, error) {
	if n := strings.Count(s, "&") + 1; n > maxQueryFields {
		m, err := url.ParseQuery(s)
		q := make(query, 0, len(m))
		for k, vs := range m {
			for _, v := range vs {
				q = append(q, queryField{k, v})
			}
		}
		return q, err
	}
	q := make(query, 0, strings.Count(s, "&")+1)
	var err error
	for s != "" {
		var kv string
		kv, s, _ = strings.Cut(s, "&")
		if strings.Contains(kv, ";") {
			err = errors.New("invalid semicolon separator in query")
			continue
		}
		if kv == "" {
			continue
		}
		k, v, _ := strings.Cut(kv, "=")
		k, err1 := url.QueryUnescape(k)
		if err1 == nil {
			v, err1 = url.QueryUnescape(v)
		}
		if err1 != nil {
			if err == nil {
				err = err1
			}
			continue
		}
		q = append(q, queryField{k, v})
	}
	return q, err
}

// first returns k's first value and how many values k has.
func (q query) first(k string) (string, int) {
	v, n := "", 0
	for _, f := range q {
		if f.k == k {
			if n == 0 {
				v = f.v
			}
			n++
		}
	}
	return v, n
}

// has reports whether k has the value v.
func (q query) has(k, v string) bool {
	return slices.Contains(q, queryField{k, v})
}

// all returns k's values in order, in a new slice; nil when none.
func (q query) all(k string) []string {
	var out []string
	for _, f := range q {
		if f.k == k {
			out = append(out, f.v)
		}
	}
	return out
}
