package xfr

import (
	"net/netip"

	"github.com/go-logr/logr"
	"github.com/miekg/dns"

	"github.com/dnsplane/dnsplane/pkg/dnswire"
	"github.com/dnsplane/dnsplane/pkg/zonedb"
)

// Options configures a Handler.
type Options struct {
	// AllowTransfer are the networks, besides loopback (always allowed), whose clients may
	// AXFR and IXFR every zone (--local-allow-transfer); others get REFUSED.
	AllowTransfer []netip.Prefix
	// TSIG, when set (--local-tsig-key), is the key a client beyond loopback must have signed
	// its AXFR or IXFR with (Client.Signed), besides being in AllowTransfer (RFC 8945).
	TSIG *dnswire.TSIGKey
	// Metrics counts the transfers (dnsplane_dnsserver_transfers_total); nil = not counted.
	Metrics *Metrics
	// Logger reports transfers served and failed (V(1)) and NOTIFY messages received.
	Logger logr.Logger
	// Signed, when set, returns the records of a full transfer of a signed zone (SOA first and
	// last, RRSIGs, DNSKEY, NSEC or NSEC3 included), or false for a zone served unsigned. A
	// signed zone's IXFR is answered with the full zone: the journal holds unsigned changes.
	Signed func(z zonedb.ZoneVersion) ([]dns.RR, bool, error)
}

// Client is what the server tells the transfer unit of the sender of a request.
type Client struct {
	// Addr is the client's IP address, IPv4-mapped addresses unmapped; the zero Addr when the
	// transport gave none.
	Addr netip.Addr
	// UDP: the request came over UDP (AXFR is refused there, IXFR answered with the SOA).
	UDP bool
	// Signed: the request was signed with the server's TSIG key and its signature verified.
	Signed bool
}

// Handler answers the zone-transfer requests a server hands it: AXFR and IXFR
// (ServeTransfer), and NOTIFY (ServeNotify), from the zones of a store. It is safe for
// concurrent use.
type Handler struct {
	store *zonedb.Store
	opts  Options
}

// New returns the handler of store's zones. Only ServeTransfer and ServeNotify read store;
// Allowed does not.
func New(store *zonedb.Store, opts Options) *Handler {
	if opts.Logger.GetSink() == nil {
		opts.Logger = logr.Discard()
	}
	return &Handler{store: store, opts: opts}
}

// Allowed reports whether client c may transfer zones (AXFR, IXFR): from a loopback address; or
// from inside Options.AllowTransfer, with the request signed with Options.TSIG when there is
// one.
func (h *Handler) Allowed(c Client) bool {
	if c.Addr.IsLoopback() {
		return true
	}
	return h.allowedNetwork(c.Addr) && (h.opts.TSIG == nil || c.Signed)
}

// allowedNetwork reports whether ip is inside Options.AllowTransfer (never the zero Addr).
func (h *Handler) allowedNetwork(ip netip.Addr) bool {
	for _, p := range h.opts.AllowTransfer {
		if p.Contains(ip) {
			return true
		}
	}
	return false
}
