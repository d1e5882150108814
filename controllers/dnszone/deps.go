package dnszone

import (
	"context"
	"net/netip"
	"time"

	"k8s.io/apimachinery/pkg/types"

	"github.com/dnsplane/dnsplane/controllers/internal/deps"
	"github.com/dnsplane/dnsplane/pkg/dnsclient"
	"github.com/dnsplane/dnsplane/pkg/scraper"
	"github.com/dnsplane/dnsplane/pkg/zonewriter"
)

// Writers is what the controller needs of the zone-writer set (*zonewriter.Set): a zone's writer
// (For creates it, Lookup does not), Forget when the zone is gone, and the keys of zones a writer
// found missing at the provider.
type Writers interface {
	deps.Writers
	Lookup(k zonewriter.Key) *zonewriter.Writer
	Forget(k zonewriter.Key)
	ZoneNotFound() <-chan zonewriter.Key
}

// Scraper is what the controller needs of the NS scraper (*scraper.Scraper): the parent links to
// confirm, keyed by the child DNSZone.
type Scraper interface {
	Register(parent scraper.Parent, child scraper.Child)
	Unregister(child types.NamespacedName)
	Rescrape(child types.NamespacedName)
	// Linked reports whether the last scrape saw the child's NS set in its parent, when, and
	// whether there was a scrape at all.
	Linked(child types.NamespacedName) (linked bool, scraped time.Time, ok bool)
}

// DNS is what the controller asks DNS servers (dnsclient.Client): whether a zone answers SOA
// authoritatively at one of servers (host:port), and the addresses of a name (A and AAAA).
type DNS interface {
	SOAAny(ctx context.Context, servers []string, zone string) error
	Addresses(ctx context.Context, server, name string) ([]netip.Addr, error)
}

var (
	_ Writers = (*zonewriter.Set)(nil)
	_ Scraper = (*scraper.Scraper)(nil)
	_ DNS     = dnsclient.Client{}
)

// dns returns r.DNS, or a dnsclient.Client with its default timeout.
func (r *Reconciler) dns() DNS {
	if r.DNS == nil {
		return dnsclient.Client{}
	}
	return r.DNS
}
