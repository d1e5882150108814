package rfc2136

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/miekg/dns"

	"github.com/dnsplane/dnsplane/pkg/dnswire"
	"github.com/dnsplane/dnsplane/pkg/provider"
)

// DefaultPort is the DNS port used when Config.Port is 0.
const DefaultPort = 53

// DefaultAlgorithm is the TSIG algorithm used when Config.Algorithm is empty.
const DefaultAlgorithm = "hmac-sha256"

// DefaultTimeout bounds each exchange when Config.Timeout is 0.
const DefaultTimeout = 30 * time.Second

// Batch limits. An UPDATE travels over TCP, so it must fit one 65,535-byte
// DNS message (RFC 1035 §4.2.2, RFC 7766). Record data is bounded by
// maxValueBytes (value characters are never fewer than wire rdata bytes,
// except for names, which gain 2 bytes: covered by the per-record margin),
// and the per-record overhead (owner name up to 255 bytes, type, class, TTL,
// rdlength, and the prerequisite or deletion entry of its set) by
// maxRecords: 100 * ~290 + 32,768 + TSIG and header stays below 65,535.
const (
	maxValueBytes = 32 << 10
	maxRecords    = 100
	maxMessage    = dns.MaxMsgSize // 65535
)

// Config configures a Provider.
type Config struct {
	// Host is the server's address or name. Required.
	Host string
	// Port is the server's DNS port; default DefaultPort.
	Port int
	// KeyName is the TSIG key name. Required.
	KeyName string
	// Secret is the base64 TSIG secret. Required. Never logged or returned.
	Secret string
	// Algorithm is the TSIG algorithm (hmac-sha256, hmac-sha512, ...);
	// default DefaultAlgorithm.
	Algorithm string
	// Timeout bounds each exchange; default DefaultTimeout.
	Timeout time.Duration
}

// Provider implements provider.Provider over RFC 2136 and AXFR with TSIG.
// It is safe for concurrent use (it holds no mutable state).
type Provider struct {
	addr      string
	keyName   string // FQDN, lower-case
	algorithm string // FQDN
	secrets   map[string]string
	timeout   time.Duration
}

var _ provider.Provider = (*Provider)(nil)

// New validates cfg and returns a provider. It does no I/O. A missing host
// or key name, a bad port, a secret that is not base64 or an unknown
// algorithm gives an error wrapping provider.ErrInvalidCredentials.
func New(cfg Config) (*Provider, error) {
	host := strings.TrimSpace(cfg.Host)
	if host == "" || strings.ContainsAny(host, " /") {
		return nil, fmt.Errorf("%w: RFC2136_HOST must be a host name or address", provider.ErrInvalidCredentials)
	}
	port := cfg.Port
	if port == 0 {
		port = DefaultPort
	}
	if port < 1 || port > 65535 {
		return nil, fmt.Errorf("%w: RFC2136_PORT %d outside 1..65535", provider.ErrInvalidCredentials, cfg.Port)
	}
	keyName, err := provider.ValidateName(cfg.KeyName)
	if err != nil {
		return nil, fmt.Errorf("%w: RFC2136_TSIG_KEYNAME is empty or malformed", provider.ErrInvalidCredentials)
	}
	secret := strings.TrimSpace(cfg.Secret)
	if raw, err := base64.StdEncoding.DecodeString(secret); err != nil || len(raw) == 0 {
		return nil, fmt.Errorf("%w: RFC2136_TSIG_SECRET is empty or not base64", provider.ErrInvalidCredentials)
	}
	algName := dnswire.Dotless(cfg.Algorithm)
	if algName == "" {
		algName = DefaultAlgorithm
	}
	alg, ok := dnswire.TSIGAlgorithm(algName)
	if !ok {
		return nil, fmt.Errorf("%w: RFC2136_TSIG_ALGORITHM %q is not one of hmac-sha1, hmac-sha224, hmac-sha256, hmac-sha384, hmac-sha512", provider.ErrInvalidCredentials, cfg.Algorithm)
	}
	timeout := cfg.Timeout
	if timeout <= 0 {
		timeout = DefaultTimeout
	}
	key := dnswire.Fqdn(keyName)
	return &Provider{
		addr:      net.JoinHostPort(host, strconv.Itoa(port)),
		keyName:   key,
		algorithm: alg,
		secrets:   map[string]string{key: secret},
		timeout:   timeout,
	}, nil
}

// Capabilities: conditional, atomic UPDATE messages of at most 64 KiB (RFC
// 1035 §4.2.2, TCP; maxRecords and maxValueBytes keep a margin for headers,
// prerequisites and TSIG); no zone creation, no weighted routing.
func (p *Provider) Capabilities() provider.Capabilities {
	return provider.Capabilities{
		BatchWrites:           true,
		MaxChangesPerBatch:    maxRecords,
		MaxValueBytesPerBatch: maxValueBytes,
		ConditionalWrites:     true,
		WeightedRouting:       false,
		CreateZones:           false,
	}
}

// EnsureZone returns provider.ErrNotCapable: RFC 2136 cannot create zones;
// a DNSZone on it adopts an existing zone by spec.zoneID.
func (p *Provider) EnsureZone(context.Context, provider.ZoneSpec) (provider.Zone, error) {
	return provider.Zone{}, fmt.Errorf("ensure zone: RFC 2136 cannot create zones, adopt one by zoneID: %w", provider.ErrNotCapable)
}

// DeleteZone returns provider.ErrNotCapable: adopted zones are never deleted
// (nor emptied) by dnsplane.
func (p *Provider) DeleteZone(context.Context, string) error {
	return fmt.Errorf("delete zone: RFC 2136 cannot delete zones: %w", provider.ErrNotCapable)
}

// ListZones returns provider.ErrNotCapable: DNS has no way to enumerate the
// zones a server serves.
func (p *Provider) ListZones(context.Context) ([]provider.Zone, error) {
	return nil, fmt.Errorf("list zones: RFC 2136 cannot enumerate zones: %w", provider.ErrNotCapable)
}

// GetZone checks that the server is authoritative for the zone named id (an
// SOA query answered authoritatively with the zone's own SOA) and returns it
// with its apex NS names. Otherwise provider.ErrZoneNotFound.
func (p *Provider) GetZone(ctx context.Context, id string) (provider.Zone, error) {
	zone, err := provider.ValidateName(id)
	if err != nil {
		return provider.Zone{}, fmt.Errorf("get zone %q: %w", id, provider.ErrZoneNotFound)
	}
	ok, err := p.serves(ctx, zone)
	if err != nil {
		return provider.Zone{}, fmt.Errorf("get zone %s: %w", zone, err)
	}
	if !ok {
		return provider.Zone{}, fmt.Errorf("get zone %s: %w", zone, provider.ErrZoneNotFound)
	}
	if err := p.checkKey(ctx, zone); err != nil {
		return provider.Zone{}, fmt.Errorf("get zone %s: %w", zone, err)
	}
	z := provider.Zone{ID: zone, Name: zone}
	if r, err := p.query(ctx, zone, dns.TypeNS); err == nil && r.Rcode == dns.RcodeSuccess {
		for _, rr := range r.Answer {
			if ns, ok := rr.(*dns.NS); ok && dnswire.Dotless(ns.Hdr.Name) == zone {
				z.NameServers = append(z.NameServers, dnswire.Dotless(ns.Ns))
			}
		}
	}
	return z, nil
}

// exchangeCtx bounds ctx by the provider's timeout.
func (p *Provider) exchangeCtx(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, p.timeout)
}

// query sends an unsigned query over TCP.
func (p *Provider) query(ctx context.Context, name string, qtype uint16) (*dns.Msg, error) {
	ctx, cancel := p.exchangeCtx(ctx)
	defer cancel()
	m := new(dns.Msg)
	m.SetQuestion(dnswire.Fqdn(name), qtype)
	m.RecursionDesired = false
	c := &dns.Client{Net: "tcp", Timeout: p.timeout}
	r, _, err := c.ExchangeContext(ctx, m, p.addr)
	if err != nil {
		return nil, fmt.Errorf("query %s %s at %s: %w", name, dns.TypeToString[qtype], p.addr, err)
	}
	return r, nil
}

// checkKey sends a TSIG-signed SOA query for zone, so that a wrong key is found when a zone is
// adopted, not at its first write. A NOTAUTH answer, a TSIG error in the answer (BADSIG, BADKEY,
// BADTIME; RFC 8945 §5.2) or an answer whose signature fails to verify gives
// ErrInvalidCredentials; network errors are returned wrapped.
func (p *Provider) checkKey(ctx context.Context, zone string) error {
	ctx, cancel := p.exchangeCtx(ctx)
	defer cancel()
	m := new(dns.Msg)
	m.SetQuestion(dnswire.Fqdn(zone), dns.TypeSOA)
	m.RecursionDesired = false
	m.SetTsig(p.keyName, p.algorithm, 300, time.Now().Unix())
	c := &dns.Client{Net: "tcp", Timeout: p.timeout, TsigSecret: p.secrets}
	r, _, err := c.ExchangeContext(ctx, m, p.addr)
	switch {
	case err != nil && isTSIGError(err):
		return fmt.Errorf("signed SOA query (key %s): %v: %w", p.keyName, err, provider.ErrInvalidCredentials)
	case err != nil:
		return fmt.Errorf("signed SOA query %s at %s: %w", zone, p.addr, err)
	case r.Rcode == dns.RcodeNotAuth || tsigRcode(r) != 0:
		return fmt.Errorf("signed SOA query (key %s): %s: %w", p.keyName, dns.RcodeToString[max(r.Rcode, tsigRcode(r))], provider.ErrInvalidCredentials)
	}
	return nil
}

// serves reports whether the server is authoritative for zone.
func (p *Provider) serves(ctx context.Context, zone string) (bool, error) {
	r, err := p.query(ctx, zone, dns.TypeSOA)
	if err != nil {
		return false, err
	}
	if r.Rcode != dns.RcodeSuccess || !r.Authoritative {
		return false, nil
	}
	for _, rr := range r.Answer {
		if soa, ok := rr.(*dns.SOA); ok && dnswire.Dotless(soa.Hdr.Name) == zone {
			return true, nil
		}
	}
	return false, nil
}

// refused maps a NOTAUTH or REFUSED answer about zone: ErrZoneNotFound when
// the server does not serve the zone, else ErrInvalidCredentials (the key
// is unknown or not allowed).
func (p *Provider) refused(ctx context.Context, zone string, rcode int) error {
	ok, err := p.serves(ctx, zone)
	if err == nil && !ok {
		return fmt.Errorf("%s: %w", dns.RcodeToString[rcode], provider.ErrZoneNotFound)
	}
	return fmt.Errorf("%s (key %s): %w", dns.RcodeToString[rcode], p.keyName, provider.ErrInvalidCredentials)
}

// isTSIGError reports a TSIG verification failure on our side.
func isTSIGError(err error) bool {
	return errors.Is(err, dns.ErrSig) || errors.Is(err, dns.ErrSecret) || errors.Is(err, dns.ErrTime) ||
		errors.Is(err, dns.ErrKeyAlg) || errors.Is(err, dns.ErrAuth)
}

// tsigRcode returns the TSIG error of a signed answer (BADSIG, BADKEY,
// BADTIME, ...), 0 when none.
func tsigRcode(m *dns.Msg) int {
	if m == nil {
		return 0
	}
	if t := m.IsTsig(); t != nil {
		return int(t.Error)
	}
	return 0
}

// ListRecordSets transfers the zone (AXFR with TSIG) and groups its records.
func (p *Provider) ListRecordSets(ctx context.Context, zoneID string) ([]provider.RecordSet, error) {
	zone, err := provider.ValidateName(zoneID)
	if err != nil {
		return nil, fmt.Errorf("list record sets of %q: %w", zoneID, provider.ErrZoneNotFound)
	}
	rrs, err := p.axfr(ctx, zone)
	if err != nil {
		return nil, fmt.Errorf("list record sets of %s: %w", zone, err)
	}
	return provider.GroupRRs(rrs), nil
}

// axfr returns the zone's records, the closing SOA dropped.
func (p *Provider) axfr(ctx context.Context, zone string) ([]dns.RR, error) {
	ctx, cancel := p.exchangeCtx(ctx)
	defer cancel()
	var d net.Dialer
	conn, err := d.DialContext(ctx, "tcp", p.addr)
	if err != nil {
		return nil, fmt.Errorf("axfr from %s: %w", p.addr, err)
	}
	defer conn.Close()
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	defer stop()
	if dl, ok := ctx.Deadline(); ok {
		_ = conn.SetDeadline(dl)
	}
	m := new(dns.Msg)
	m.SetAxfr(dnswire.Fqdn(zone))
	m.SetTsig(p.keyName, p.algorithm, 300, time.Now().Unix())
	tr := &dns.Transfer{Conn: &dns.Conn{Conn: conn}, TsigSecret: p.secrets, ReadTimeout: p.timeout, WriteTimeout: p.timeout}
	ch, err := tr.In(m, p.addr)
	if err != nil {
		return nil, p.xfrError(ctx, zone, err)
	}
	var out []dns.RR
	var xerr error
	for env := range ch {
		if env.Error != nil && xerr == nil {
			xerr = env.Error
		}
		out = append(out, env.RR...)
	}
	if xerr != nil {
		return nil, p.xfrError(ctx, zone, xerr)
	}
	if n := len(out); n > 1 && out[n-1].Header().Rrtype == dns.TypeSOA {
		out = out[:n-1]
	}
	return out, nil
}

func (p *Provider) xfrError(ctx context.Context, zone string, err error) error {
	if ctx.Err() != nil {
		return fmt.Errorf("axfr %s: %w", zone, ctx.Err())
	}
	if isTSIGError(err) {
		// An unknown zone is answered unsigned, which fails verification too.
		return fmt.Errorf("axfr %s: %v: %w", zone, err, p.refused(ctx, zone, dns.RcodeNotAuth))
	}
	msg := err.Error()
	for _, rc := range []int{dns.RcodeNotAuth, dns.RcodeRefused, dns.RcodeNotZone} {
		if strings.Contains(msg, fmt.Sprintf("bad xfr rcode: %d", rc)) {
			return fmt.Errorf("axfr %s: %w", zone, p.refused(ctx, zone, rc))
		}
	}
	return fmt.Errorf("axfr %s: %w", zone, err)
}

// prepared is one validated change.
type prepared struct {
	action        provider.Action
	before, after provider.RecordSet
	beforeRRs     []dns.RR
	afterRRs      []dns.RR
}

// ApplyChanges validates every change first (provider.ValidateChanges and checkSet:
// provider.ErrInvalidChange; weighted sets give provider.ErrNotCapable), then sends them in one
// UPDATE. A Create adds After under "RRset does not exist"; an Update or Delete deletes the RRset
// (and an Update adds After) under "RRset exists (value dependent)" with Before's records. A
// failed prerequisite is provider.ErrConflict and nothing is applied. It never splits: an UPDATE
// over one DNS message is refused by the server; pkg/provider/guard sends batches within
// Capabilities.
func (p *Provider) ApplyChanges(ctx context.Context, zoneID string, changes []provider.Change) error {
	zone, err := provider.ValidateName(zoneID)
	if err != nil {
		return fmt.Errorf("apply changes to %q: %w", zoneID, provider.ErrZoneNotFound)
	}
	preps, err := provider.PrepareChanges(zone, changes, func(_ provider.Action, _ string, rs provider.RecordSet) (provider.RecordSet, error) {
		return checkSet(zone, rs)
	}, prepare)
	if err != nil {
		return err
	}
	if len(preps) == 0 {
		return nil
	}
	if err := p.applyBatch(ctx, zone, preps); err != nil {
		return fmt.Errorf("apply changes to %s: %w", zone, err)
	}
	return nil
}

// checkSet is the SideCheck of RFC 2136: no weighted routing, canonical, inside zone, not the
// SOA (the server's), at least one target, and records miekg/dns can build.
func checkSet(zone string, rs provider.RecordSet) (provider.RecordSet, error) {
	if rs.Weight != nil || rs.SetIdentifier != "" {
		return provider.RecordSet{}, fmt.Errorf("%w: %s: RFC 2136 has no weighted routing or set identifiers", provider.ErrNotCapable, rs.Key())
	}
	c, err := provider.CanonicalRecordSet(rs)
	if err != nil {
		return provider.RecordSet{}, err
	}
	if err := provider.CheckInZone(zone, c, "the server"); err != nil {
		return provider.RecordSet{}, err
	}
	if len(c.Targets) == 0 {
		return provider.RecordSet{}, fmt.Errorf("%w: %s has no targets", provider.ErrInvalidChange, c.Key())
	}
	if _, err := provider.ToRRs(c); err != nil {
		return provider.RecordSet{}, err
	}
	return c, nil
}

// prepare converts one validated change (its sides checked by checkSet) to DNS records.
func prepare(ch provider.Change) (prepared, error) {
	pc := prepared{action: ch.Action}
	var err error
	if ch.Before != nil {
		pc.before = *ch.Before
		if pc.beforeRRs, err = provider.ToRRs(pc.before); err != nil {
			return prepared{}, err
		}
	}
	if ch.After != nil {
		pc.after = *ch.After
		if pc.afterRRs, err = provider.ToRRs(pc.after); err != nil {
			return prepared{}, err
		}
	}
	return pc, nil
}

// rrsetHeader is an RR with no rdata addressing name/type, for class ANY or
// NONE entries (RFC 2136 §2.4.1, §2.4.3, §2.5.2).
func rrsetHeader(rs provider.RecordSet, class uint16) dns.RR {
	return &dns.ANY{Hdr: dns.RR_Header{Name: dnswire.Fqdn(rs.Name), Rrtype: dns.StringToType[rs.Type], Class: class, Ttl: 0}}
}

func (p *Provider) applyBatch(ctx context.Context, zone string, batch []prepared) error {
	m := new(dns.Msg)
	m.SetUpdate(dnswire.Fqdn(zone))
	m.Compress = true
	needTTL := false
	for _, pc := range batch {
		switch pc.action {
		case provider.ActionCreate:
			m.Ns = append(m.Ns, pc.afterRRs...)
			m.Answer = append(m.Answer, rrsetHeader(pc.after, dns.ClassNONE)) // RRset does not exist
		case provider.ActionUpdate, provider.ActionDelete:
			needTTL = true
			for _, rr := range pc.beforeRRs { // RRset exists (value dependent)
				c := dns.Copy(rr)
				c.Header().Ttl = 0
				m.Answer = append(m.Answer, c)
			}
			m.Ns = append(m.Ns, rrsetHeader(pc.before, dns.ClassANY)) // delete the RRset
			m.Ns = append(m.Ns, pc.afterRRs...)
		}
	}
	if needTTL {
		// Prerequisites do not compare TTLs (RFC 2136 §3.2.5): check them on
		// a fresh transfer (not atomic with the UPDATE; see the package doc).
		if err := p.checkTTLs(ctx, zone, batch); err != nil {
			return err
		}
	}
	m.SetTsig(p.keyName, p.algorithm, 300, time.Now().Unix())
	if l := m.Len(); l > maxMessage {
		return fmt.Errorf("%w: UPDATE of %d changes is %d bytes, more than one DNS message (%d)", provider.ErrInvalidChange, len(batch), l, maxMessage)
	}
	ectx, cancel := p.exchangeCtx(ctx)
	defer cancel()
	c := &dns.Client{Net: "tcp", Timeout: p.timeout, TsigSecret: p.secrets}
	r, _, err := c.ExchangeContext(ectx, m, p.addr)
	if rc := tsigRcode(r); rc != 0 {
		return fmt.Errorf("update: TSIG %s (key %s): %w", dns.RcodeToString[rc], p.keyName, provider.ErrInvalidCredentials)
	}
	if err != nil {
		if isTSIGError(err) {
			// An unknown zone is answered NOTAUTH unsigned, which fails
			// verification too.
			return fmt.Errorf("update: %v: %w", err, p.refused(ctx, zone, dns.RcodeNotAuth))
		}
		if ctx.Err() != nil {
			return fmt.Errorf("update: %w", ctx.Err())
		}
		return fmt.Errorf("update at %s: %w", p.addr, err)
	}
	switch r.Rcode {
	case dns.RcodeSuccess:
		return nil
	case dns.RcodeNXRrset, dns.RcodeYXRrset, dns.RcodeNameError, dns.RcodeYXDomain:
		return fmt.Errorf("update: prerequisite failed (%s): %w", dns.RcodeToString[r.Rcode], provider.ErrConflict)
	case dns.RcodeNotAuth, dns.RcodeRefused, dns.RcodeNotZone:
		return fmt.Errorf("update: %w", p.refused(ctx, zone, r.Rcode))
	case dns.RcodeBadSig, dns.RcodeBadKey, dns.RcodeBadTime:
		return fmt.Errorf("update: %s: %w", dns.RcodeToString[r.Rcode], provider.ErrInvalidCredentials)
	case dns.RcodeFormatError:
		return fmt.Errorf("update: %w: server answered FORMERR", provider.ErrInvalidChange)
	}
	return fmt.Errorf("update: server answered %s", dns.RcodeToString[r.Rcode])
}

// checkTTLs compares the TTLs of the Before sets with the zone's.
func (p *Provider) checkTTLs(ctx context.Context, zone string, batch []prepared) error {
	rrs, err := p.axfr(ctx, zone)
	if err != nil {
		return err
	}
	current := map[provider.RecordSetKey]int64{}
	for _, rs := range provider.GroupRRs(rrs) {
		current[rs.Key()] = rs.TTL
	}
	for _, pc := range batch {
		if pc.action == provider.ActionCreate {
			continue
		}
		ttl, ok := current[pc.before.Key()]
		if !ok {
			return fmt.Errorf("%s no longer exists: %w", pc.before.Key(), provider.ErrConflict)
		}
		if ttl != pc.before.TTL {
			return fmt.Errorf("%s has TTL %d, Before says %d: %w", pc.before.Key(), ttl, pc.before.TTL, provider.ErrConflict)
		}
	}
	return nil
}
