package webhook

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/dnsplane/dnsplane/pkg/dnswire"
	"golang.org/x/net/idna"
)

// DomainFilter is the domain filter a webhook answers at negotiation (GET /): the names whose
// records it serves, matched as external-dns's endpoint.DomainFilter matches them (external-dns
// sends and reads no other name: its plan drops the rest). Its zero value matches every name.
type DomainFilter struct {
	// Include and Exclude are names as external-dns holds them (ParseDomainFilter makes them
	// so): trimmed, without trailing dot, in the Unicode form of IDNA's lookup profile (lower
	// case; "xn--" labels decoded). A name matches an item when it equals it or is below it; an
	// item with a leading dot (".example.com") matches only names strictly below.
	Include, Exclude []string
	// RegexInclude and RegexExclude, when set, replace Include and Exclude (external-dns's rule):
	// a name matches when RegexExclude does not match it and RegexInclude, when set, does. They
	// see a name as the lists do (Unicode form, no trailing dot).
	RegexInclude, RegexExclude *regexp.Regexp
}

// wireFilter is every shape of the negotiation body: external-dns's code writes include, exclude,
// regexInclude and regexExclude (endpoint.DomainFilter's JSON), its OpenAPI file documents
// filters.
type wireFilter struct {
	Include      []string `json:"include"`
	Exclude      []string `json:"exclude"`
	RegexInclude string   `json:"regexInclude"`
	RegexExclude string   `json:"regexExclude"`
	Filters      []string `json:"filters"`
}

// lookupProfile is external-dns's IDNA profile (internal/idna.Profile): UTS #46 mapping for
// lookup, transitional, without strict domain-name rules. An idna.Profile is immutable.
var lookupProfile = idna.New(idna.MapForLookup(), idna.Transitional(true), idna.StrictDomainName(false))

// normalize is external-dns's normalizeDomain: name without its trailing dot, in the Unicode
// form of lookupProfile; a name that is not valid IDNA is what the profile makes of it, as in
// external-dns, which logs the error and goes on.
func normalize(name string) string {
	name = strings.TrimSuffix(name, ".")
	if s, ok := plainASCII(name); ok {
		return s
	}
	s, _ := lookupProfile.ToUnicode(name)
	return s
}

// plainASCII is lookupProfile.ToUnicode of an ASCII name without "xn--" label, which is its
// lower case, without the profile's cost (the webhook's names are mostly such); ok is false for
// any other name.
func plainASCII(name string) (string, bool) {
	for i := range len(name) {
		if name[i] >= utf8.RuneSelf {
			return "", false
		}
	}
	s := strings.ToLower(name)
	if strings.HasPrefix(s, "xn--") || strings.Contains(s, ".xn--") {
		return "", false
	}
	return s, true
}

// ParseDomainFilter reads a negotiation body: a JSON object with include, exclude (lists of
// names), regexInclude, regexExclude (Go regular expressions, RE2) and filters (a list of names,
// added to include). Names are prepared as external-dns's endpoint.DomainFilter prepares them
// (trimmed, then normalize; those that come out empty are dropped), and a leading dot is kept.
// An empty object, or null, is the filter that matches everything. Regular expressions together
// with name lists are an error, as in external-dns (endpoint.DomainFilter.UnmarshalJSON).
func ParseDomainFilter(body []byte) (DomainFilter, error) {
	var w wireFilter
	if err := json.Unmarshal(body, &w); err != nil {
		return DomainFilter{}, fmt.Errorf("domain filter: %w", err)
	}
	names := func(in []string) []string {
		var out []string
		for _, n := range in {
			if c := normalize(strings.TrimSpace(n)); c != "" && !slices.Contains(out, c) {
				out = append(out, c)
			}
		}
		return out
	}
	f := DomainFilter{Include: names(append(slices.Clone(w.Include), w.Filters...)), Exclude: names(w.Exclude)}
	if w.RegexInclude == "" && w.RegexExclude == "" {
		return f, nil
	}
	if len(f.Include) > 0 || len(f.Exclude) > 0 {
		return DomainFilter{}, fmt.Errorf("domain filter: both name lists and regular expressions")
	}
	var err error
	if w.RegexInclude != "" {
		if f.RegexInclude, err = regexp.Compile(w.RegexInclude); err != nil {
			return DomainFilter{}, fmt.Errorf("domain filter: regexInclude: %w", err)
		}
	}
	if w.RegexExclude != "" {
		if f.RegexExclude, err = regexp.Compile(w.RegexExclude); err != nil {
			return DomainFilter{}, fmt.Errorf("domain filter: regexExclude: %w", err)
		}
	}
	return f, nil
}

// regex reports whether the filter matches by regular expressions.
func (f DomainFilter) regex() bool { return f.RegexInclude != nil || f.RegexExclude != nil }

// Match reports whether the webhook serves name (as a webhook lists it, or canonical): the rule
// of external-dns's endpoint.DomainFilter.Match, on the name normalized as external-dns does.
func (f DomainFilter) Match(name string) bool {
	n := normalize(name)
	if f.regex() {
		if f.RegexExclude != nil && f.RegexExclude.MatchString(n) {
			return false
		}
		return f.RegexInclude == nil || f.RegexInclude.MatchString(n)
	}
	return matchItems(f.Include, n, true) && !matchItems(f.Exclude, n, false)
}

// matchItems is external-dns's matchFilter: whether an item matches the normalized name n;
// empty is what no items answer (true for Include, which then matches everything; false for
// Exclude).
func matchItems(items []string, n string, empty bool) bool {
	if len(items) == 0 {
		return empty
	}
	return slices.ContainsFunc(items, func(item string) bool { return itemMatch(item, n) })
}

// itemMatch: item equals n or is above it; ".item" is strictly above it.
func itemMatch(item, n string) bool {
	switch {
	case item == "":
		return false
	case strings.HasPrefix(item, "."):
		return strings.HasSuffix(n, item)
	}
	return n == item || strings.HasSuffix(n, "."+item)
}

// Zones returns the zone names the filter names: its include names without their leading dot,
// sorted, without those it excludes, in ASCII (IDNA) form, as dnsplane names zones; none for a
// filter of regular expressions or without include names (such a webhook names no zone: adopt
// one by name).
func (f DomainFilter) Zones() []string {
	if f.regex() {
		return nil
	}
	var out []string
	for _, item := range f.Include {
		z := strings.TrimPrefix(item, ".")
		if matchItems(f.Exclude, z, false) {
			continue
		}
		if a, err := lookupProfile.ToASCII(z); err == nil {
			z = a
		}
		if z = dnswire.Dotless(z); z != "" && !slices.Contains(out, z) {
			out = append(out, z)
		}
	}
	slices.Sort(out)
	return out
}

// Holds reports whether the record set name/rtype belongs to zone: name is at or below zone and
// not inside a zone of the filter deeper than zone, except that the NS set at such a zone's apex
// (the delegation) belongs to both, as a DNS parent holds it. Match, not Holds, says whether the
// webhook serves name at all.
func (f DomainFilter) Holds(zone, name, rtype string) bool {
	return holds(f.Zones(), zone, name, rtype)
}

// holds is Holds with the filter's zones read once.
func holds(zones []string, zone, name, rtype string) bool {
	if !dnswire.IsSubdomain(name, zone) {
		return false
	}
	deeper := ""
	for _, z := range zones {
		if dnswire.IsStrictSubdomain(z, zone) && dnswire.IsSubdomain(name, z) && len(z) > len(deeper) {
			deeper = z
		}
	}
	return deeper == "" || (name == deeper && rtype == "NS")
}
