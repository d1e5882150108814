package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/miekg/dns"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/dnsplane/dnsplane/pkg/registry"
)

// benchOwner is the --owner-id the bench gives dnsplane (controllerArgs).
const benchOwner = "bench"

// foreignPerZone is how many record sets of each foreign kind seedForeign writes per zone.
const foreignPerZone = 5

// audit is what an AXFR of every zone says about the records a fault scenario wanted.
type audit struct {
	// Wanted is the endpoints; Present those served with exactly their one target and exactly
	// one registry entry of dnsplane's owner naming that target, at its registry name.
	Wanted  int `json:"wanted"`
	Present int `json:"present"`
	// Missing, on a failure, is the records not served when the bound ended.
	Missing int `json:"missing,omitempty"`
	// Duplicated: wanted names served with more than one A target, or with more than one
	// registry entry of dnsplane's owner.
	Duplicated int `json:"duplicated"`
	// Orphaned: workload names (h<i>.z<j>) not wanted, and dnsplane registry entries naming a
	// set that is not wanted, with a target not wanted, or at a name not their registry name.
	Orphaned int `json:"orphaned"`
	// ForeignTouched: foreign record sets (seedForeign) not served byte for byte as seeded.
	ForeignTouched int `json:"foreignTouched"`
}

// exact reports whether every wanted record is present and nothing else changed.
func (a audit) exact() bool {
	return a.Wanted > 0 && a.Present == a.Wanted && a.Duplicated == 0 && a.Orphaned == 0 && a.ForeignTouched == 0
}

// foreignSnapshot is every zone's foreign record sets as served after seeding: zone → owner
// name → the set's records in presentation format, sorted.
type foreignSnapshot map[string]map[string]string

// seedForeign writes record sets that dnsplane does not own into every zone, straight through
// the PowerDNS API, before the manager starts: foreignPerZone unowned A sets
// (foreign<k>.<zone>), foreignPerZone A sets owned by another dnsplane owner with that owner's
// registry record (other<k>), and foreignPerZone A sets owned by an external-dns owner with its
// TXT (ext<k>). It returns them as served (AXFR), which the audit compares against.
func (w *world) seedForeign(ctx context.Context) (foreignSnapshot, error) {
	for j := range zones {
		zone := zoneName(j)
		var rrsets []map[string]any
		add := func(name, typ string, contents ...string) {
			recs := make([]map[string]any, len(contents))
			for i, c := range contents {
				recs[i] = map[string]any{"content": c, "disabled": false}
			}
			rrsets = append(rrsets, map[string]any{"name": name + ".", "type": typ, "ttl": 120, "changetype": "REPLACE", "records": recs})
		}
		for k := range foreignPerZone {
			add(fmt.Sprintf("foreign%d.%s", k, zone), "A", fmt.Sprintf("192.0.2.%d", 10+k))
			other := fmt.Sprintf("other%d.%s", k, zone)
			add(other, "A", fmt.Sprintf("192.0.2.%d", 20+k))
			e := registry.Entry{OwnerID: "other-cluster", Resource: registry.Resource("dnsendpoint", "default", "theirs"),
				Name: other, Type: "A", TTL: 120, Targets: []string{fmt.Sprintf("192.0.2.%d", 20+k)}}
			rs := registry.RecordSet(zone, e) // canonical names: no trailing dot
			add(strings.TrimSuffix(rs.Name, "."), "TXT", strconv.Quote(rs.Targets[0]))
			ext := fmt.Sprintf("ext%d.%s", k, zone)
			add(ext, "A", fmt.Sprintf("192.0.2.%d", 30+k))
			add("a-"+ext, "TXT", strconv.Quote("heritage=external-dns,external-dns/owner=someone-else,external-dns/resource=service/default/web"))
		}
		body, _ := json.Marshal(map[string]any{"rrsets": rrsets})
		if err := w.pdnsAPI(ctx, http.MethodPatch, "/api/v1/servers/localhost/zones/"+zone+".", body, http.StatusNoContent); err != nil {
			return nil, fmt.Errorf("seed foreign records in %s: %w", zone, err)
		}
	}
	snap := foreignSnapshot{}
	for j := range zones {
		zone := zoneName(j) + "."
		rrs, err := axfr(ctx, w.pdns.dnsAddr, zone)
		if err != nil {
			return nil, err
		}
		sets := rrsetTexts(rrs, isForeignName)
		if len(sets) != 5*foreignPerZone { // 3 A and 2 TXT sets per k
			return nil, fmt.Errorf("seed foreign records in %s: %d sets served, want %d", zone, len(sets), 5*foreignPerZone)
		}
		snap[zone] = sets
	}
	return snap, nil
}

// isForeignName reports whether an owner name is one seedForeign writes (the other owner's
// registry names start with dnsplane's registry prefix, "dp-", and hash "other<k>").
func isForeignName(name string, rrs []dns.RR) bool {
	first, _, _ := strings.Cut(name, ".")
	for _, p := range []string{"foreign", "other", "ext", "a-ext"} {
		if strings.HasPrefix(first, p) {
			return true
		}
	}
	if registry.IsRegistryName(name) {
		for _, rr := range rrs {
			if t, ok := rr.(*dns.TXT); ok {
				if e, err := registry.Parse(strings.Join(t.Txt, "")); err == nil && e.OwnerID != benchOwner {
					return true
				}
			}
		}
	}
	return false
}

// rrsetTexts groups rrs by owner name and type, keeps the sets whose name keep accepts, and
// returns "owner/TYPE" → the records' presentation text, sorted and joined by newlines.
func rrsetTexts(rrs []dns.RR, keep func(name string, rrs []dns.RR) bool) map[string]string {
	byName := map[string][]dns.RR{}
	for _, rr := range rrs {
		name := strings.ToLower(rr.Header().Name)
		byName[name] = append(byName[name], rr)
	}
	out := map[string]string{}
	for name, set := range byName {
		if !keep(name, set) {
			continue
		}
		byType := map[string][]string{}
		for _, rr := range set {
			typ := dns.TypeToString[rr.Header().Rrtype]
			byType[typ] = append(byType[typ], rr.String())
		}
		for typ, lines := range byType {
			slices.Sort(lines)
			out[name+"/"+typ] = strings.Join(lines, "\n")
		}
	}
	return out
}

// audit reads every zone by AXFR and compares it with objects' wanted records (the first
// changed at generation 1, the others at generation 0: wantChanged) and the foreign snapshot.
func (w *world) audit(ctx context.Context, objects, changed int, foreign foreignSnapshot) (audit, error) {
	a := audit{Wanted: objects * zones}
	wanted := wantChanged(objects, changed)
	for j := range zones {
		zone := zoneName(j) + "."
		rrs, err := axfr(ctx, w.pdns.dnsAddr, zone)
		if err != nil {
			return a, err
		}
		za := auditZone(zone, rrs, wanted[zone], foreign[zone])
		a.Present += za.Present
		a.Duplicated += za.Duplicated
		a.Orphaned += za.Orphaned
		a.ForeignTouched += za.ForeignTouched
	}
	return a, nil
}

// auditZone is the audit of one zone's records (pure): wanted is owner name → target.
func auditZone(zone string, rrs []dns.RR, wanted map[string]string, foreign map[string]string) audit {
	var a audit
	targets := map[string][]string{}
	regs := map[string]int{}
	for _, rr := range rrs {
		name := strings.ToLower(rr.Header().Name)
		switch v := rr.(type) {
		case *dns.A:
			targets[name] = append(targets[name], v.A.String())
		case *dns.TXT:
			e, err := registry.Parse(strings.Join(v.Txt, ""))
			if err != nil || e.OwnerID != benchOwner {
				continue // foreign, or not a registry record of dnsplane's owner: the foreign check's
			}
			// Entry names are canonical (no trailing dot); the transfer's are FQDNs.
			managed := e.Name + "."
			want, ok := wanted[managed]
			if !ok || e.Type != "A" || len(e.Targets) != 1 || e.Targets[0] != want ||
				registry.Name(strings.TrimSuffix(zone, "."), e.Contributor(), e.Key())+"." != name {
				a.Orphaned++
				continue
			}
			regs[managed]++
		}
	}
	for name, ts := range targets {
		want, ok := wanted[name]
		switch {
		case ok && len(ts) > 1:
			a.Duplicated++
		case ok && ts[0] == want && regs[name] == 1:
			a.Present++
		case !ok && isWorkloadName(name):
			a.Orphaned++
		}
	}
	for _, n := range regs {
		if n > 1 {
			a.Duplicated++
		}
	}
	now := rrsetTexts(rrs, func(name string, set []dns.RR) bool { return isForeignName(name, set) })
	for k, v := range foreign {
		if now[k] != v {
			a.ForeignTouched++
		}
	}
	for k := range now {
		if _, ok := foreign[k]; !ok {
			a.ForeignTouched++ // a foreign-looking set that was not seeded
		}
	}
	return a
}

// isWorkloadName reports whether name is h<digits>.<zone>: a name of the bench's workload.
func isWorkloadName(name string) bool {
	first, _, _ := strings.Cut(name, ".")
	if len(first) < 2 || first[0] != 'h' {
		return false
	}
	_, err := strconv.Atoi(first[1:])
	return err == nil
}

// axfr reads zone from addr by AXFR (30 s bound) and returns every record, the SOA once.
func axfr(ctx context.Context, addr, zone string) ([]dns.RR, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	m := new(dns.Msg)
	m.SetAxfr(zone)
	tr := &dns.Transfer{DialTimeout: 2 * time.Second, ReadTimeout: 30 * time.Second}
	ch, err := tr.In(m, addr)
	if err != nil {
		return nil, fmt.Errorf("AXFR %s: %w", zone, err)
	}
	defer func() {
		go func() {
			for range ch {
			}
		}()
	}()
	var out []dns.RR
	soa := false
	for env := range ch {
		if env.Error != nil {
			return nil, fmt.Errorf("AXFR %s: %w", zone, env.Error)
		}
		if ctx.Err() != nil {
			return nil, fmt.Errorf("AXFR %s: %w", zone, ctx.Err())
		}
		for _, rr := range env.RR {
			if rr.Header().Rrtype == dns.TypeSOA {
				if soa {
					continue
				}
				soa = true
			}
			out = append(out, rr)
		}
	}
	return out, nil
}

// reasonWatch lists the DNSEndpoints every 2 s and remembers, per Ready reason, which objects
// showed it.
type reasonWatch struct {
	mu   sync.Mutex
	seen map[string]map[string]bool
	done chan struct{}
}

func newReasonWatch() *reasonWatch {
	return &reasonWatch{seen: map[string]map[string]bool{}, done: make(chan struct{})}
}

// run polls until ctx ends, and once more then (10 s bound).
func (r *reasonWatch) run(ctx context.Context, w *world) {
	defer close(r.done)
	res := w.dyn.Resource(endpointsGVR(toolDNSPlane)).Namespace(benchNamespace)
	poll := func(ctx context.Context) {
		if list, err := res.List(ctx, metav1.ListOptions{}); err == nil {
			r.note(list.Items)
		}
	}
	for {
		poll(ctx)
		select {
		case <-ctx.Done():
			last, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
			defer cancel()
			poll(last)
			return
		case <-time.After(2 * time.Second):
		}
	}
}

func (r *reasonWatch) note(items []unstructured.Unstructured) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, it := range items {
		_, reason, ok := readyOf(it)
		if !ok {
			continue
		}
		if r.seen[reason] == nil {
			r.seen[reason] = map[string]bool{}
		}
		r.seen[reason][it.GetName()] = true
	}
}

// wait waits for run to end and returns reason → objects that showed it.
func (r *reasonWatch) wait() map[string]int {
	<-r.done
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make(map[string]int, len(r.seen))
	for reason, objs := range r.seen {
		out[reason] = len(objs)
	}
	return out
}
