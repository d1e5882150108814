package main

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/miekg/dns"
)

// checker asks PowerDNS itself, over DNS, what it serves: the SOA serial of each zone (PowerDNS
// bumps it on every API change, soa_edit_api DEFAULT) and, when it moved, the pending names (by
// A queries when they are few, else by AXFR of the zone; see read).
type checker struct {
	addr string // PowerDNS's DNS listener, host:port
	// interval between two SOA polls of the zones still pending.
	interval time.Duration
	// guard is called every poll; an error ends the wait (the controller exited, or its RSS
	// went over the limit).
	guard func() error
	// queryMax is the most pending names of a zone that read asks for by A queries; a zone with
	// more is read by AXFR. 0: always by AXFR.
	queryMax int
}

// zoneRecords is what an AXFR of one zone returned: A targets by owner name and the owner names
// of TXT sets.
type zoneRecords struct {
	a   map[string][]string
	txt map[string]bool
}

// waitServed waits until every owner name in want (zone → FQDN → target) is served with exactly
// that one A target, or ctx ends, and returns when it saw the last. A zone is re-read whenever
// its serial moves, and at least every 2 s. On an error it also returns how many names were
// not served yet.
func (c checker) waitServed(ctx context.Context, want map[string]map[string]string) (time.Time, int, error) {
	pending := make(map[string]map[string]string, len(want))
	for z, m := range want {
		if len(m) > 0 {
			pending[z] = cloneMap(m)
		}
	}
	serial := map[string]uint32{}
	lastRead := map[string]time.Time{}
	tick := time.NewTicker(c.interval)
	defer tick.Stop()
	for len(pending) > 0 {
		if err := c.guard(); err != nil {
			return time.Time{}, missing(pending), err
		}
		for z, m := range pending {
			s, err := c.soaSerial(ctx, z)
			if err != nil || (s == serial[z] && time.Since(lastRead[z]) < 2*time.Second) {
				continue
			}
			serial[z], lastRead[z] = s, time.Now()
			served, err := c.read(ctx, z, m)
			if err != nil {
				continue
			}
			for name, t := range m {
				if got := served[name]; len(got) == 1 && got[0] == t {
					delete(m, name)
				}
			}
			if len(m) == 0 {
				delete(pending, z)
			}
		}
		if len(pending) == 0 {
			break
		}
		select {
		case <-ctx.Done():
			return time.Time{}, missing(pending), fmt.Errorf("%d records in %d zones not served: %w", missing(pending), len(pending), ctx.Err())
		case <-tick.C:
		}
	}
	return time.Now(), 0, nil
}

// missing counts the names still pending.
func missing(pending map[string]map[string]string) int {
	n := 0
	for _, m := range pending {
		n += len(m)
	}
	return n
}

// query asks PowerDNS for name's set of type qtype, over UDP with a 2 s timeout; the error
// names the question.
func (c checker) query(ctx context.Context, name string, qtype uint16) (*dns.Msg, error) {
	m := new(dns.Msg)
	m.SetQuestion(name, qtype)
	r, _, err := (&dns.Client{Timeout: 2 * time.Second}).ExchangeContext(ctx, m, c.addr)
	if err != nil {
		return nil, fmt.Errorf("%s %s: %w", dns.TypeToString[qtype], name, err)
	}
	return r, nil
}

// soaSerial returns zone's SOA serial (query).
func (c checker) soaSerial(ctx context.Context, zone string) (uint32, error) {
	r, err := c.query(ctx, zone, dns.TypeSOA)
	if err != nil {
		return 0, err
	}
	for _, rr := range r.Answer {
		if soa, ok := rr.(*dns.SOA); ok {
			return soa.Serial, nil
		}
	}
	return 0, fmt.Errorf("SOA %s: no SOA in the answer (rcode %s)", zone, dns.RcodeToString[r.Rcode])
}

// defaultQueryMax is checker.queryMax in make bench's checks.
const defaultQueryMax = 64

// read returns the A targets that zone serves at the names of pending, by owner name: with one
// A query per name when they are few (checker.queryMax), else from an AXFR of the zone. A transfer of a
// zone of thousands of names took 10-30 ms while the tool wrote, so reading the few names of a
// 1% change by transfer delayed the "served" it measures by up to a sweep of ten transfers, and
// loaded the server the tool was writing to.
func (c checker) read(ctx context.Context, zone string, pending map[string]string) (map[string][]string, error) {
	if len(pending) > c.queryMax {
		recs, err := c.transfer(ctx, zone)
		return recs.a, err
	}
	out := make(map[string][]string, len(pending))
	for name := range pending {
		r, err := c.query(ctx, name, dns.TypeA)
		if err != nil {
			return nil, err
		}
		for _, rr := range r.Answer {
			if a, ok := rr.(*dns.A); ok && strings.EqualFold(a.Hdr.Name, name) {
				out[name] = append(out[name], a.A.String())
			}
		}
	}
	return out, nil
}

// transfer reads zone by AXFR (axfr: 30 s bound).
func (c checker) transfer(ctx context.Context, zone string) (zoneRecords, error) {
	rrs, err := axfr(ctx, c.addr, zone)
	if err != nil {
		return zoneRecords{}, err
	}
	recs := zoneRecords{a: map[string][]string{}, txt: map[string]bool{}}
	recs.add(rrs)
	return recs, nil
}

// add files the records of a transfer; only A and TXT matter.
func (z zoneRecords) add(rrs []dns.RR) {
	for _, rr := range rrs {
		name := strings.ToLower(rr.Header().Name)
		switch v := rr.(type) {
		case *dns.A:
			z.a[name] = append(z.a[name], v.A.String())
		case *dns.TXT:
			z.txt[name] = true
		}
	}
}

// registryRecords counts the TXT owner names in every zone of want: the registry records.
func (c checker) registryRecords(ctx context.Context, zones []string) (int, error) {
	n := 0
	for _, z := range zones {
		recs, err := c.transfer(ctx, z)
		if err != nil {
			return 0, err
		}
		n += len(recs.txt)
	}
	return n, nil
}

func cloneMap(m map[string]string) map[string]string {
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}
