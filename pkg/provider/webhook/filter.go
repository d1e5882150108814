package webhook

import (
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strings"

	"github.com/dnsplane/dnsplane/pkg/provider"
)

// DomainFilter is the domain filter a webhook answers at negotiation (GET /): the names whose
// records it serves. Its zero value matches every name.
type DomainFilter struct {
	// Include and Exclude are canonical names. A name matches an item when it equals it or is
	// below it; an item with a leading dot (".example.com") matches only names strictly below.
	Include, Exclude []string
	// RegexInclude and RegexExclude, when set, replace Include and Exclude (external-dns's rule):
	// a name matches when RegexExclude does not match it and RegexInclude, when set, does.
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

// ParseDomainFilter reads a negotiation body: a JSON object with include, exclude (lists of
// names), regexInclude, regexExclude (Go regular expressions, RE2) and filters (a list of names,
// added to include). Names are canonicalised (lower case, no trailing dot) and a leading dot is
// kept. An empty object, or null, is the filter that matches everything. Regular expressions
// together with name lists are an error, as in external-dns (endpoint.DomainFilter.UnmarshalJSON).
func ParseDomainFilter(body []byte) (DomainFilter, error) {
	var w wireFilter
	if err := json.Unmarshal(body, &w); err != nil {
		return DomainFilter{}, fmt.Errorf("domain filter: %w", err)
	}
	names := func(in []string) []string {
		var out []string
		for _, n := range in {
			n = strings.TrimSpace(n)
			dot := strings.HasPrefix(n, ".")
			c := provider.CanonicalName(strings.TrimPrefix(n, "."))
			if c == "" {
				continue
			}
			if dot {
				c = "." + c
			}
			if !slices.Contains(out, c) {
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

// Match reports whether the webhook serves name (canonical or not): the rule of external-dns's
// endpoint.DomainFilter.Match.
func (f DomainFilter) Match(name string) bool {
	name = provider.CanonicalName(name)
	if f.regex() {
		if f.RegexExclude != nil && f.RegexExclude.MatchString(name) {
			return false
		}
		return f.RegexInclude == nil || f.RegexInclude.MatchString(name)
	}
	if len(f.Include) > 0 && !slices.ContainsFunc(f.Include, func(item string) bool { return itemMatch(item, name) }) {
		return false
	}
	return !slices.ContainsFunc(f.Exclude, func(item string) bool { return itemMatch(item, name) })
}

// itemMatch: item equals name or is above it; ".item" is strictly above it.
func itemMatch(item, name string) bool {
	if strings.HasPrefix(item, ".") {
		return strings.HasSuffix(name, item)
	}
	return provider.IsSubdomain(name, item)
}

// Zones returns the zone names the filter names: its include names without their leading dot,
// sorted, without those it excludes; none for a filter of regular expressions or without
// include names (such a webhook names no zone: adopt one by name).
func (f DomainFilter) Zones() []string {
	if f.regex() {
		return nil
	}
	var out []string
	for _, item := range f.Include {
		z := strings.TrimPrefix(item, ".")
		if !slices.Contains(out, z) && !slices.ContainsFunc(f.Exclude, func(x string) bool { return itemMatch(x, z) }) {
			out = append(out, z)
		}
	}
	slices.Sort(out)
	return out
}

// Holds reports whether the record set name/rtype belongs to zone: name is at or below zone and
// not inside a zone of the filter deeper than zone, except that the NS set at such a zone's apex
// (the delegation) belongs to both, as a DNS parent holds it.
func (f DomainFilter) Holds(zone, name, rtype string) bool {
	if !provider.IsSubdomain(name, zone) {
		return false
	}
	deeper := ""
	for _, z := range f.Zones() {
		if provider.IsStrictSubdomain(z, zone) && provider.IsSubdomain(name, z) && len(z) > len(deeper) {
			deeper = z
		}
	}
	return deeper == "" || (name == deeper && rtype == "NS")
}
