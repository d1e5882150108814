package dnsserver

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"net/netip"
	"runtime"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/go-logr/logr"
	"github.com/miekg/dns"

	"github.com/dnsplane/dnsplane/pkg/dnswire"
	"github.com/dnsplane/dnsplane/pkg/geo"
	"github.com/dnsplane/dnsplane/pkg/xfr"
	"github.com/dnsplane/dnsplane/pkg/zonedb"
)

// DefaultUDPSize is the EDNS0 UDP payload size the server advertises: 1232
// bytes, the DNS Flag Day 2020 value that avoids IP fragmentation.
const DefaultUDPSize = 1232

// RandSource picks the weighted record set. *math/rand/v2.Rand satisfies
// it. Int64N returns a value in [0, n).
type RandSource interface {
	Int64N(n int64) int64
}

// globalRand uses math/rand/v2's top-level functions (safe for concurrent
// use, randomly seeded).
type globalRand struct{}

func (globalRand) Int64N(n int64) int64 { return rand.Int64N(n) }

// lockedRand serialises an injected source, which need not be safe for
// concurrent use.
type lockedRand struct {
	mu  sync.Mutex
	src RandSource
}

func (l *lockedRand) Int64N(n int64) int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.src.Int64N(n)
}

// ServerOptions configures a Server.
type ServerOptions struct {
	// Addr is the host:port to serve on, UDP and TCP (e.g. "127.0.0.1:5353").
	// Port 0 picks a free port, the same for both; Addr() reports it.
	Addr string
	// UDPSize is the EDNS0 payload size advertised in responses (RFC 6891
	// §6.2.3); default DefaultUDPSize.
	UDPSize uint16
	// Rand chooses among weighted record sets; default math/rand/v2. An
	// injected source is used under a mutex.
	Rand RandSource
	// Logger reports serving errors.
	Logger logr.Logger
	// Metrics, when set, counts the queries answered (NewMetrics); nil =
	// not counted.
	Metrics *Metrics
	// ShutdownTimeout bounds the graceful shutdown when Start's ctx ends;
	// default 5 s.
	ShutdownTimeout time.Duration
	// Drain is how long the server goes on answering after Start's ctx ends,
	// with Draining true, before it shuts down (--local-dns-drain); 0 = shut
	// down at once. In a pod, the readiness probe fails meanwhile (Ready), so
	// the endpoint stops serving and kube-proxy deletes its UDP conntrack
	// entries before the sockets close: a resolver's query on a reused
	// source port then reaches another replica, not a closed port
	// (docs/design.md, "Leaving the dns Service").
	Drain time.Duration
	// ReadTimeout and WriteTimeout bound each TCP read and write; default 2 s.
	ReadTimeout, WriteTimeout time.Duration
	// UDPSockets is the number of UDP sockets bound to Addr with SO_REUSEPORT,
	// each read by its own loop, so that the kernel spreads queries (by
	// client address and port) over as many cores; default
	// runtime.GOMAXPROCS(0); 1 = one socket without SO_REUSEPORT.
	UDPSockets int
	// AnswerCacheBytes bounds the packed-answer cache of one store snapshot,
	// in bytes of keys and answers; default DefaultAnswerCacheBytes, negative
	// = no cache. Answers that rotate or pick by weight are never cached.
	AnswerCacheBytes int
	// UDPBatch is how many datagrams a UDP socket's read loop takes in one
	// recvmmsg(2) call, answering the cached ones among them with one
	// sendmmsg(2) (Linux; batch_linux.go); default DefaultUDPBatch, 1 or
	// negative = one datagram per read, as on other platforms.
	UDPBatch int
	// AllowTransfer are the networks, besides loopback (always allowed), whose clients may
	// AXFR and IXFR every zone (--local-allow-transfer); others get REFUSED.
	AllowTransfer []netip.Prefix
	// TSIG, when set (--local-tsig-key), is the key a client beyond loopback must sign its
	// AXFR and IXFR with, besides being in AllowTransfer (RFC 8945); answers to requests signed
	// with it are signed. A request with another key or a signature that does not verify gets
	// NOTAUTH.
	TSIG *dnswire.TSIGKey
	// Geo locates clients for the answers of geo record sets (--geoip-database; *geo.DB);
	// nil = only their CIDR regions and the default match (docs/design.md, "Geo answers").
	Geo GeoDatabase
	// Updates, when set, answers RFC 2136 UPDATEs signed with its keys (docs/design.md,
	// "Dynamic updates"); without it UPDATE gets NOTIMP.
	Updates UpdateHandler
	// UpdateTimeout bounds how long an UPDATE waits for its change to be written before it is
	// answered SERVFAIL; default DefaultUpdateTimeout.
	UpdateTimeout time.Duration
}

// Server answers DNS queries over UDP and TCP from a Store. It implements
// dns.Handler and controller-runtime's manager.Runnable.
//
// Answers follow RFC 1034 §4.3.2 without recursion:
//   - names in no served zone: REFUSED, AA clear; the zone with the longest
//     matching origin answers otherwise, with AA set;
//   - NXDOMAIN and NODATA (also for empty non-terminals, RFC 8020) carry the
//     zone's SOA in the authority section, TTL min(SOA TTL, MINIMUM)
//     (RFC 2308);
//   - a CNAME answers every other type but ANY and is chased within the
//     zone; CNAME and ANY queries get the CNAME alone (RFC 1034 §3.6.2);
//   - wildcards "*.<closest encloser>" synthesise answers for names that do
//     not exist (RFC 4592);
//   - names at or below an NS set strictly below the apex get a referral:
//     AA clear, the NS set in the authority section, and in the additional
//     section the A/AAAA of its name servers in the zone (RFC 1034 §4.3.2
//     step 3b): first those at or below the cut (in-domain glue), then those
//     below another cut (sibling glue) or at authoritative names
//     (appendGlue); DS at the cut is answered by the parent side;
//   - the additional section of an NS, MX, SRV or ANY answer holds the
//     A/AAAA of its NS targets in the zone, glue included, and of its MX and
//     SRV targets that are authoritative data of the zone, not glue below a
//     cut (RFC 1034 §4.2.1; appendAdditional);
//   - EDNS0 (RFC 6891): a request with OPT gets an OPT with UDPSize and the
//     request's DO bit (RFC 3225 §3), also with an error rcode (NOTIMP for
//     UPDATE, FORMERR, REFUSED; RFC 6891 §6.1.1); other EDNS
//     versions get BADVERS, two OPTs FORMERR. UDP answers larger than 512
//     bytes without EDNS0, or than min(client's payload size, UDPSize) (at
//     least 512) with it, lose whole RRsets (fit): TC is set when an answer
//     or authority RRset, or a referral's in-domain glue, had to go (RFC 2181
//     §9, RFC 9471 §3), not for other additional data (sibling glue
//     included, RFC 9471 §3.2); TCP answers are whole;
//   - requests that RFC 1035 does not allow but miekg/dns unpacks (a question
//     cut short, a compression pointer that does not point back, an OPT
//     outside the additional section: checkRequest) get a header-only
//     FORMERR, as from NSD;
//   - answers to QCLASS ANY are not authoritative (RFC 1034 §3.7.1);
//   - AXFR (RFC 5936) only over TCP, IXFR (RFC 1995) over both, and
//     only from loopback clients or ServerOptions.AllowTransfer, else REFUSED;
//   - NOTIFY (RFC 1996) is acknowledged as a primary does;
//   - UPDATE (RFC 2136), with ServerOptions.Updates, goes to that handler once its TSIG is
//     verified (update.go); without it, NOTIMP. An SOA query in a zone with dynamic updates
//     that the store does not serve gets a placeholder SOA (zoneSOA), for clients that find
//     the zone to update by asking for it;
//   - the last two are the transfer unit's (pkg/xfr, behind transferHandler);
//   - an answer of several records rotates their order on every query (one
//     counter per Server);
//   - several sets of one name and type: sets without weight are all served;
//     of those with a weight, one is chosen per query with probability
//     weight/sum (all weights 0: uniformly); of the geo sets (labelled
//     geo.LabelTag), the one of the client's geo tag (pkg/geo: the EDNS
//     Client Subnet address, RFC 7871, else the query's source address),
//     else the default's, else the first in geo tag order (pickGeo), and a
//     request with ECS gets it back with the answer's scope in the option's
//     family (ecsScope); a malformed ECS option gets FORMERR with an OPT
//     (screenECS, clientOf).
//
// Answers that neither rotate nor pick by weight are packed once per store
// snapshot and copied for later queries (cache.go); UDP hits are answered in
// the socket's read loop (listener.go). ServerOptions.UDPSockets sockets share
// the port with SO_REUSEPORT.
type Server struct {
	store  *zonedb.Store
	xfr    transferHandler // AXFR, IXFR and NOTIFY (pkg/xfr)
	opts   ServerOptions
	rnd    RandSource
	rotate atomic.Uint64

	replays replays // the UPDATEs accepted within their TSIG window

	cache     atomic.Pointer[answerCache] // of the last snapshot queried
	clock     atomic.Int64                // Unix nanoseconds, kept by Start (tickClock); 0 before
	cacheHits atomic.Uint64               // answers copied from the cache
	bufs      sync.Pool                   // *[]byte for cached answers

	mu      sync.Mutex // guards the fields below
	udp     net.PacketConn
	udpMore []net.PacketConn // the other UDPSockets - 1, SO_REUSEPORT on udp's port
	tcp     net.Listener
	started bool

	draining atomic.Bool // Start's ctx ended; it answers until Drain has passed

	geoMemo   atomic.Pointer[geoMemo] // geo tables and geo questions of the last snapshot
	geoCounts geoCounters

	signMu  sync.Mutex                // serialises SetSigning
	signing atomic.Pointer[signing]   // the zones signed and their policies (dnssec.go)
	chains  atomic.Pointer[chainMemo] // denial chains and RRSIGs of the last snapshot and signing state
}

// Ready is a readiness check (controller-runtime's healthz.Checker): it fails
// once the server drains (ServerOptions.Drain), so that the replica leaves
// its Service's serving endpoints while it still answers.
func (s *Server) Ready(*http.Request) error {
	if s.draining.Load() {
		return errors.New("dnsserver: draining before shutdown")
	}
	return nil
}

// NewServer returns a server for store. It does not bind; see Listen and
// Start.
func NewServer(store *zonedb.Store, opts ServerOptions) (*Server, error) {
	if store == nil {
		return nil, errors.New("dnsserver: nil store")
	}
	if opts.UDPSize == 0 {
		opts.UDPSize = DefaultUDPSize
	}
	if opts.ShutdownTimeout == 0 {
		opts.ShutdownTimeout = 5 * time.Second
	}
	if opts.ReadTimeout == 0 {
		opts.ReadTimeout = 2 * time.Second
	}
	if opts.WriteTimeout == 0 {
		opts.WriteTimeout = 2 * time.Second
	}
	if opts.Logger.GetSink() == nil {
		opts.Logger = logr.Discard()
	}
	if opts.UDPSockets <= 0 {
		opts.UDPSockets = runtime.GOMAXPROCS(0)
	}
	if opts.UDPBatch == 0 {
		opts.UDPBatch = DefaultUDPBatch
	}
	if opts.UpdateTimeout == 0 {
		opts.UpdateTimeout = DefaultUpdateTimeout
	}
	if opts.AnswerCacheBytes == 0 {
		opts.AnswerCacheBytes = DefaultAnswerCacheBytes
	}
	s := &Server{store: store, opts: opts, rnd: globalRand{}}
	s.xfr = xfr.New(store, xfr.Options{AllowTransfer: opts.AllowTransfer, TSIG: opts.TSIG, Metrics: opts.Metrics.transfers(), Logger: opts.Logger,
		Signed: s.signedZone})
	s.bufs.New = func() any { b := make([]byte, 0, 4096); return &b }
	if opts.Rand != nil {
		s.rnd = &lockedRand{src: opts.Rand}
	}
	return s, nil
}

// DefaultUDPBatch is the default ServerOptions.UDPBatch: datagrams per
// recvmmsg(2) and at most answers per sendmmsg(2).
const DefaultUDPBatch = 32

// Listen binds the UDP sockets (ServerOptions.UDPSockets) and a TCP
// listener on the same port. It is idempotent; Start calls it. With port 0 it
// retries a few free ports until TCP can bind the port UDP got.
func (s *Server) Listen() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.udp != nil {
		return nil
	}
	host, port, err := net.SplitHostPort(s.opts.Addr)
	if err != nil {
		return fmt.Errorf("dnsserver: address %q: %w", s.opts.Addr, err)
	}
	lc := net.ListenConfig{}
	if s.opts.UDPSockets > 1 {
		lc.Control = reusePort
	}
	var lastErr error
	for range 20 {
		pc, err := lc.ListenPacket(context.Background(), "udp", net.JoinHostPort(host, port))
		if err != nil {
			return fmt.Errorf("dnsserver: listen udp %s: %w", s.opts.Addr, err)
		}
		bound := net.JoinHostPort(host, strconv.Itoa(pc.LocalAddr().(*net.UDPAddr).Port))
		l, err := net.Listen("tcp", bound)
		if err != nil {
			_ = pc.Close()
			lastErr = err
			if port != "0" {
				break
			}
			continue
		}
		more, err := listenMore(lc, bound, s.opts.UDPSockets-1)
		if err != nil {
			_, _ = pc.Close(), l.Close()
			return fmt.Errorf("dnsserver: listen udp %s with SO_REUSEPORT: %w", bound, err)
		}
		s.udp, s.tcp, s.udpMore = pc, l, more
		return nil
	}
	return fmt.Errorf("dnsserver: listen tcp %s: %w", s.opts.Addr, lastErr)
}

// listenMore binds n more UDP sockets to addr with lc (SO_REUSEPORT).
func listenMore(lc net.ListenConfig, addr string, n int) ([]net.PacketConn, error) {
	var out []net.PacketConn
	for range n {
		pc, err := lc.ListenPacket(context.Background(), "udp", addr)
		if err != nil {
			for _, c := range out {
				_ = c.Close()
			}
			return nil, err
		}
		out = append(out, pc)
	}
	return out, nil
}

// Addr returns the bound address (host:port, the same port for UDP and
// TCP), or "" before Listen.
func (s *Server) Addr() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.udp == nil {
		return ""
	}
	return s.udp.LocalAddr().String()
}

// NeedLeaderElection tells controller-runtime to run the server on every
// replica: answering is read-only.
func (s *Server) NeedLeaderElection() bool { return false }

// Start binds (if Listen was not called) and serves until ctx is done, then
// shuts down gracefully within ShutdownTimeout and returns nil. It returns an
// error if binding or serving fails. A Server starts once.
func (s *Server) Start(ctx context.Context) error {
	if err := s.Listen(); err != nil {
		return err
	}
	s.mu.Lock()
	if s.started {
		s.mu.Unlock()
		return errors.New("dnsserver: already started")
	}
	var udpSrvs []*dns.Server // all built before any starts
	for _, pc := range append([]net.PacketConn{s.udp}, s.udpMore...) {
		srv, err := s.udpServer(pc)
		if err != nil {
			s.mu.Unlock()
			return fmt.Errorf("dnsserver: %w", err)
		}
		udpSrvs = append(udpSrvs, srv)
	}
	s.started = true
	exited := make(chan struct{}, 2+len(s.udpMore))
	var runners []*runner
	for _, srv := range udpSrvs {
		runners = append(runners, newRunner(srv, exited))
	}
	runners = append(runners, newRunner(&dns.Server{Listener: s.tcp, Handler: s, MsgAcceptFunc: acceptMsg, TsigProvider: s.keys(),
		DecorateReader: screenTCP,
		ReadTimeout:    s.opts.ReadTimeout, WriteTimeout: s.opts.WriteTimeout}, exited))
	s.mu.Unlock()
	tctx, stopClock := context.WithCancel(ctx)
	defer stopClock()
	go s.tickClock(tctx)
	go s.renewSigned(tctx)

	select {
	case <-ctx.Done():
		s.drain(exited)
	case <-exited: // a serve loop failed; stop returns its error
	}
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), s.opts.ShutdownTimeout)
	defer cancel()
	var errs []error
	for _, r := range runners {
		errs = append(errs, r.stop(sctx))
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("dnsserver: %w", err)
	}
	return nil
}

// drain marks the server draining and goes on answering for Drain, or until
// a serve loop fails (exited).
func (s *Server) drain(exited <-chan struct{}) {
	if s.opts.Drain <= 0 {
		return
	}
	s.draining.Store(true)
	s.opts.Logger.Info("draining before shutdown", "drain", s.opts.Drain)
	t := time.NewTimer(s.opts.Drain)
	defer t.Stop()
	select {
	case <-t.C:
	case <-exited:
	}
}

// udpServer returns the miekg/dns server of the UDP socket pc (udpLoop:
// batched on Linux). It returns no error today; the signature leaves room
// for socket options that fail.
func (s *Server) udpServer(pc net.PacketConn) (*dns.Server, error) {
	conn, decorate := s.udpLoop(pc)
	return &dns.Server{PacketConn: conn, Handler: s, UDPSize: dns.MaxMsgSize,
		MsgAcceptFunc: acceptMsg, DecorateReader: decorate, TsigProvider: s.keys()}, nil
}

// runner runs one miekg server and stops it without racing its start.
type runner struct {
	srv     *dns.Server
	started chan struct{}
	done    chan error // receives ActivateAndServe's result; buffered
}

// newRunner starts srv; when its serve loop returns it signals exited
// (buffered for every runner).
func newRunner(srv *dns.Server, exited chan<- struct{}) *runner {
	r := &runner{srv: srv, started: make(chan struct{}), done: make(chan error, 1)}
	srv.NotifyStartedFunc = func() { close(r.started) }
	go func() {
		r.done <- srv.ActivateAndServe()
		exited <- struct{}{}
	}()
	return r
}

func (r *runner) stop(ctx context.Context) error {
	select {
	case err := <-r.done: // already stopped on its own
		return err
	default:
	}
	select {
	case err := <-r.done: // never started
		return err
	case <-r.started:
	}
	if err := r.srv.ShutdownContext(ctx); err != nil {
		return err
	}
	select {
	case err := <-r.done:
		return err
	case <-ctx.Done():
		return ctx.Err()
	}
}

// ServeDNS answers one query (dns.Handler).
func (s *Server) ServeDNS(w dns.ResponseWriter, req *dns.Msg) {
	udp := isUDP(w.RemoteAddr())
	proto := "tcp"
	if udp {
		proto = "udp"
	}
	r := s.answer(w, req, udp)
	var err error
	switch {
	case r.buf != nil: // from the answer cache
		s.opts.Metrics.count(proto, r.rcode)
		_, err = w.Write(*r.buf)
		s.bufs.Put(r.buf)
	case r.msg == nil:
		s.opts.Metrics.count(proto, dns.RcodeSuccess)
		return // written by the zone transfer
	case r.wire != nil: // packed for the answer cache
		s.opts.Metrics.count(proto, r.msg.Rcode)
		_, err = w.Write(r.wire)
	default:
		s.opts.Metrics.count(proto, r.msg.Rcode)
		if !r.unsigned {
			s.sign(w, req, r.msg)
		}
		err = w.WriteMsg(r.msg)
	}
	if err != nil {
		s.opts.Logger.V(1).Info("write response failed", "client", w.RemoteAddr().String(), "error", err.Error())
	}
}

// reply is what answer returns: a response to pack (msg), or one already
// packed (msg and wire), or a copy from the answer cache (buf, from s.bufs,
// and its rcode); nothing after a zone transfer, which writes itself.
type reply struct {
	msg   *dns.Msg
	wire  []byte
	buf   *[]byte
	rcode int
	// unsigned leaves msg unsigned whatever the request's TSIG: an UPDATE's NOTAUTH, which
	// miekg/dns clients (cert-manager's, lego's) read as a TSIG failure when it is signed.
	unsigned bool
}

// answer builds the response, or writes a zone transfer itself and returns
// an empty reply. Deterministic answers that fit uncompressed are packed
// once per store snapshot and then copied (cache.go). It reads the request
// (parseRequest), answers from the cache, answers a bad request with its
// rcode and what is no lookup (answerNonLookup), and looks the rest up
// (answerLookup).
func (s *Server) answer(w dns.ResponseWriter, req *dns.Msg, udp bool) reply {
	opt := req.IsEdns0()
	if req.Opcode == dns.OpcodeUpdate && s.opts.Updates != nil {
		return s.answerUpdate(w, req, opt)
	}
	var nameBuf [255]byte
	var keyBuf [maxKeyLen + 3]byte
	q, k := s.parseRequest(w, req, opt, udp, nameBuf[:], keyBuf[:0])
	if k.cacheable {
		var r reply
		var ok bool
		if k.key, r, ok = s.lookupCache(q.snap, k.qname, k.key, req, q.size, q.client); ok {
			return r
		}
	}
	resp := new(dns.Msg)
	resp.SetReply(req)
	if opt != nil {
		// RFC 6891 §6.1.1: an OPT in the request gets one in the response, errors
		// included; RFC 3225 §3: the DO bit is copied.
		resp.SetEdns0(s.opts.UDPSize, opt.Do())
	}
	if q.bad {
		resp.Rcode = q.rcode
		return reply{msg: resp}
	}
	if r, ok := s.answerNonLookup(w, req, resp, q.snap, udp); ok {
		return r
	}
	return s.answerLookup(req, resp, &q, k)
}

// request is what parseRequest reads from a request before any lookup.
type request struct {
	rcode  int  // the answer's rcode when bad
	bad    bool // refused or malformed (refuseRequest, clientOf)
	client client
	snap   *zonedb.Snapshot
	sg     *signing // the signing state the answer is computed against
	opt    *dns.OPT // the request's OPT record, nil when none
	size   int      // the largest response (payloadSize)
}

// questionCacheKey is a question's name (lowercased) and answer cache key (questionKey), apart
// from request so that the caller's buffers they use stay on its stack.
type questionCacheKey struct {
	qname, key []byte
	cacheable  bool
}

// parseRequest reads req and its OPT: whether the server refuses it (refuseRequest), the
// client and its subnet (clientOf: a malformed ECS option is FORMERR, RFC 7871 §6), the store
// snapshot, the response size, and the name and cache key of a cacheable question, written
// into nameBuf and keyBuf (the caller's, so that a lookup allocates neither). Signed requests
// (RFC 8945) get signed answers, and NOTIFY and zone transfers are no plain query: none of them
// is cached.
func (s *Server) parseRequest(w dns.ResponseWriter, req *dns.Msg, opt *dns.OPT, udp bool, nameBuf, keyBuf []byte) (request, questionCacheKey) {
	var q request
	var k questionCacheKey
	q.rcode, q.bad = refuseRequest(req, opt)
	if !q.bad {
		var err error
		if q.client, err = clientOf(opt, w.RemoteAddr()); err != nil {
			q.rcode, q.bad = dns.RcodeFormatError, true // RFC 7871 §6
		}
	}
	q.snap, q.size, q.sg, q.opt = s.store.Snapshot(), s.payloadSize(opt, udp), s.signing.Load(), opt
	if !q.bad && req.Opcode == dns.OpcodeQuery && req.IsTsig() == nil &&
		req.Question[0].Qtype != dns.TypeAXFR && req.Question[0].Qtype != dns.TypeIXFR {
		k.qname, k.key, k.cacheable = questionKey(req.Question[0], ednsFlags(opt), nameBuf, keyBuf)
	}
	return q, k
}

// answerLookup answers the question of req in resp from q's snapshot, geo answers included,
// trims it to q's size, and caches it under k when k is cacheable and the answer depends on
// nothing the key leaves out.
func (s *Server) answerLookup(req, resp *dns.Msg, q *request, k questionCacheKey) reply {
	question := req.Question[0]
	g := geoState{s: s, snap: q.snap, client: q.client, gen: s.geoGeneration()}
	same, renew := s.resolveSigned(q.snap, question, resp, &g, q.opt)
	if question.Qclass == dns.ClassANY {
		// "Responses to QCLASS=* queries can never be authoritative": a server
		// cannot know every class (RFC 1034 §3.7.1). The key holds the class.
		resp.Authoritative = false
	}
	if g.result.used {
		s.countGeo(g.result.match.Tag, q.client.ecs != nil)
	}
	ecsLen := addECS(resp, q.client, &g)
	// A trimmed answer depends on size, which the cache key leaves out; a
	// compressed one is longer than some sizes allow. Neither is cached.
	trimmed := fit(resp, q.size)
	if !k.cacheable || !same || trimmed || resp.Compress || g.several {
		return reply{msg: resp}
	}
	key := k.key
	if g.result.used {
		// A geo answer is cached per (scope, geo tag) and database version, never under
		// the plain key, which the UDP read loop's hits use without the client's address.
		memo := s.memoFor(q.snap)
		memo.mu.Lock()
		memo.questions[string(key)] = g.result.table
		memo.mu.Unlock()
		key = appendGeoKey(key, g.gen, g.result.match)
	}
	return s.remember(cacheID{snap: q.snap, sg: q.sg, renew: renew}, key, len(k.qname), resp, ecsLen)
}

// cacheID is what a cached answer was computed against: a store snapshot, the signing state,
// and when its signatures are made anew (0: unsigned).
type cacheID struct {
	snap  *zonedb.Snapshot
	sg    *signing
	renew int64
}

// resolveSigned is resolveGeo, and, in a signed zone, answers the DNSKEY RRset (and with NSEC3
// the NSEC3PARAM record) at the apex, which are the zone's data whatever the request's DO bit
// (RFC 4035 §3.1.1), and signs the answer when the request has the DO bit (signAnswer; without
// it nothing else changes, RFC 3225 §3). It also returns when the answer's signatures are made
// anew (Unix nanoseconds, 0: unsigned).
func (s *Server) resolveSigned(snap *zonedb.Snapshot, q dns.Question, resp *dns.Msg, g *geoState, opt *dns.OPT) (bool, int64) {
	sg := s.signing.Load()
	if sg == nil || len(sg.zones) == 0 {
		return s.resolveGeo(snap, q, resp, g, nil), 0
	}
	sa := &secAnswer{sg: sg, wild: map[string]string{}}
	same := s.resolveGeo(snap, q, resp, g, sa)
	if sa.pol == nil || opt == nil || !opt.Do() {
		return same, 0
	}
	sa.co = opt.Co()
	s.signAnswer(snap, sa, resp)
	return same, sa.renew.UnixNano()
}

// answerNonLookup answers what is not a lookup in the store: a TSIG failure (RFC 8945 §5.2:
// NOTAUTH with the TSIG error), a NOTIFY, a class other than IN or ANY (REFUSED, not cached:
// the class does not change the answer's cost), a zone transfer, and the SOA of a zone with
// dynamic updates that the store does not serve (zoneSOA). False for a lookup.
func (s *Server) answerNonLookup(w dns.ResponseWriter, req, resp *dns.Msg, snap *zonedb.Snapshot, udp bool) (reply, bool) {
	if t := req.IsTsig(); s.tsig(w, req) == tsigBad {
		now := time.Now()
		tsigFailure(req, resp, tsigError(w, t, now), now)
		return tsigReply(resp), true
	}
	if req.Opcode == dns.OpcodeNotify {
		return reply{msg: s.xfr.ServeNotify(w, req, resp)}, true
	}
	q := req.Question[0]
	if q.Qclass != dns.ClassINET && q.Qclass != dns.ClassANY {
		resp.Rcode = dns.RcodeRefused
		return reply{msg: resp}, true
	}
	switch q.Qtype {
	case dns.TypeAXFR, dns.TypeIXFR:
		return reply{msg: s.xfr.ServeTransfer(w, req, resp, s.transferClient(w, req, udp))}, true
	}
	if s.zoneSOA(snap, q, resp) {
		return reply{msg: resp}, true
	}
	return reply{}, false
}

// lookupCache answers a cacheable question from the answer cache: under its plain key (with the
// client's subnet when it sent ECS), or under its geo key when the question's answer depends
// on a geo table. It returns the key with the subnet appended, for remember.
func (s *Server) lookupCache(snap *zonedb.Snapshot, qname, key []byte, req *dns.Msg, size int, cl client) ([]byte, reply, bool) {
	if cl.ecs != nil {
		key = appendECSKey(key, cl.ecs)
	}
	if r, ok := s.cachedReply(snap, qname, key, req, size, cl.ecs); ok {
		return key, r, true
	}
	if t := s.geoQuestion(snap, key); t != nil {
		g := geoState{s: s, snap: snap, client: cl}
		m := g.match(t)
		if r, ok := s.cachedReply(snap, qname, appendGeoKey(key, s.geoGeneration(), m), req, size, cl.ecs); ok {
			s.countGeo(m.Tag, cl.ecs != nil)
			return key, r, true
		}
	}
	return key, reply{}, false
}

// addECS puts the client's ECS option back into resp (RFC 7871 §7.2.1) with the scope of the
// answer, 0 when it does not depend on the client, last in the message so that a cached copy
// takes the next asker's address (cachedReply); it returns the option's address length, 0 when
// the client sent none.
func addECS(resp *dns.Msg, cl client, g *geoState) int {
	if cl.ecs == nil {
		return 0
	}
	scope := 0
	if g.result.used {
		scope = ecsScope(cl.ecs, g.result.match)
	}
	o := resp.IsEdns0()
	o.Option = append(o.Option, ecsReply(cl.ecs, scope))
	optToEnd(resp)
	return ecsAddrLen(cl.ecs)
}

// geoQuestion returns the geo table that the answer to the cache key key depends on, when one
// was cached against snap; nil otherwise.
func (s *Server) geoQuestion(snap *zonedb.Snapshot, key []byte) *geo.Table {
	m := s.geoMemo.Load()
	if m == nil || m.snap != snap {
		return nil
	}
	m.mu.RLock()
	t := m.questions[string(key)]
	m.mu.RUnlock()
	return t
}

// answerUpdate answers an UPDATE (update.go), with the checks of the OPT that refuseRequest
// and clientOf make of every request (RFC 6891 §6.1.1, §6.1.3; RFC 7871 §6).
func (s *Server) answerUpdate(w dns.ResponseWriter, req *dns.Msg, opt *dns.OPT) reply {
	resp := new(dns.Msg)
	resp.SetReply(req)
	if opt != nil {
		resp.SetEdns0(s.opts.UDPSize, opt.Do())
	}
	opts := countOPT(req)
	_, ecsErr := clientOf(opt, w.RemoteAddr())
	switch {
	case opts > 1, ecsErr != nil:
		resp.Rcode = dns.RcodeFormatError
	case opt != nil && opt.Version() != 0:
		resp.Rcode = dns.RcodeBadVers
	default:
		resp = s.update(w, req, resp)
	}
	return tsigReply(resp)
}

// remember packs resp, the uncompressed answer to a query of key against
// id, and adds it to the answer cache of id's snapshot and signing state. ecsLen is the number of ECS address
// octets that end the answer (0 without ECS), which a cached copy replaces.
func (s *Server) remember(id cacheID, key []byte, qlen int, resp *dns.Msg, ecsLen int) reply {
	c := s.cacheFor(id.snap, id.sg)
	if c == nil {
		return reply{msg: resp}
	}
	wire, err := resp.Pack()
	if err != nil {
		return reply{msg: resp} // WriteMsg reports it
	}
	c.add(key, wire, qlen, resp.Rcode, ecsLen, s.opts.AnswerCacheBytes, id.renew)
	return reply{msg: resp, wire: wire}
}

// refuseRequest returns the rcode of a request the server does not answer
// from its zones, and true; or false. Opcodes other than QUERY and NOTIFY
// (UPDATE, ...) get NOTIMP. FORMERR goes to requests that do not hold exactly one
// question, that hold more than one RR in the answer or authority section or
// more than two in the additional one (the limits of miekg/dns's
// DefaultMsgAcceptFunc, which acceptMsg replaces so that these answers carry
// an OPT), or more than one OPT (RFC 6891 §6.1.1), and a query for the NXNAME
// meta-type (RFC 9824 §3.5). An EDNS version other than 0 gets BADVERS (RFC
// 6891 §6.1.3).
func refuseRequest(req *dns.Msg, opt *dns.OPT) (int, bool) {
	switch {
	case req.Opcode != dns.OpcodeQuery && req.Opcode != dns.OpcodeNotify:
		return dns.RcodeNotImplemented, true
	case len(req.Question) != 1, len(req.Answer) > 1, len(req.Ns) > 1, len(req.Extra) > 2:
		return dns.RcodeFormatError, true
	case req.Opcode == dns.OpcodeQuery && req.Question[0].Qtype == dns.TypeNXNAME:
		return dns.RcodeFormatError, true
	}
	opts := countOPT(req)
	switch {
	case opts > 1:
		return dns.RcodeFormatError, true
	case opt != nil && opt.Version() != 0:
		return dns.RcodeBadVers, true
	}
	return 0, false
}

// countOPT counts the OPT records in req's additional section (RFC 6891 §6.1.1 allows one).
func countOPT(req *dns.Msg) int {
	n := 0
	for _, rr := range req.Extra {
		if rr.Header().Rrtype == dns.TypeOPT {
			n++
		}
	}
	return n
}

// payloadSize returns the largest response, in bytes, for a request with OPT
// opt (nil without EDNS0): over TCP the 65,535-byte message limit; over UDP
// 512 bytes without EDNS0 (RFC 1035 §4.2.1), else the smaller of the client's
// payload size and the server's ServerOptions.UDPSize (RFC 6891 §6.2.5; the
// server's own is what it advertises, 1232 by default), never below 512
// (RFC 6891 §6.2.3). Larger answers are trimmed (fit).
func (s *Server) payloadSize(opt *dns.OPT, udp bool) int {
	switch {
	case !udp:
		return dns.MaxMsgSize
	case opt == nil:
		return dns.MinMsgSize
	}
	return max(dns.MinMsgSize, int(min(opt.UDPSize(), s.opts.UDPSize)))
}

// acceptMsg is the server's dns.MsgAcceptFunc: it ignores responses and
// accepts every request, so that refuseRequest, not miekg/dns, answers the
// ones it refuses, with an OPT where the request had one. Messages that do
// not parse still get miekg's FORMERR, without OPT: their OPT is unknown.
func acceptMsg(dh dns.Header) dns.MsgAcceptAction {
	const qr = 1 << 15 // the QR bit of the header's flags (RFC 1035 §4.1.1)
	if dh.Bits&qr != 0 {
		return dns.MsgIgnore
	}
	return dns.MsgAccept
}

// newSelector returns the per-query record selection state.
func (s *Server) newSelector() selector {
	return selector{turn: s.rotate.Add(1), rnd: s.rnd}
}

// selector rotates and chooses records for one query. varied records that
// the answer depends on the query counter or the random source (an RRset of
// several records, or a weighted choice), so that it is not cached.
type selector struct {
	sec    *secAnswer // a signed zone's DNSSEC work; nil: unsigned
	turn   uint64
	rnd    RandSource
	varied bool
	geo    geoState // the client, when geoOn; else geo sets answer with their default set
	geoOn  bool
}

// pick merges the sets of one name and type into the answer RRset: every
// set without a weight, plus one weighted set chosen with probability
// weight/sum. Records get owner as owner name (wildcard synthesis) and the
// order rotates with the query counter.
func (sel *selector) pick(sets []*zonedb.RRSet, owner string) []dns.RR {
	var out []dns.RR
	var weighted, geoSets []*zonedb.RRSet
	var total int64
	for _, rs := range sets {
		if _, ok := rs.Labels[geo.LabelTag]; ok {
			geoSets = append(geoSets, rs)
			continue
		}
		if rs.Weight == nil {
			out = append(out, rs.RRs...)
			continue
		}
		weighted = append(weighted, rs)
		total += *rs.Weight
	}
	if len(weighted) > 0 {
		sel.varied = true
		chosen := weighted[0]
		if total > 0 {
			r := sel.rnd.Int64N(total)
			for _, rs := range weighted {
				if r < *rs.Weight {
					chosen = rs
					break
				}
				r -= *rs.Weight
			}
		} else {
			chosen = weighted[sel.rnd.Int64N(int64(len(weighted)))]
		}
		out = append(out, chosen.RRs...)
	}
	if len(geoSets) > 0 {
		out = append(out, sel.pickGeo(geoSets)...)
	}
	return sel.finish(out, owner)
}

// all returns every record of the sets of one name and type (a referral's NS
// sets, one type of an ANY answer) as one RRset, rotated, with owner as owner
// name when not "" (wildcard synthesis).
func (sel *selector) all(sets []*zonedb.RRSet, owner string) []dns.RR {
	var out []dns.RR
	for _, rs := range sets {
		out = append(out, rs.RRs...)
	}
	return sel.finish(out, owner)
}

// finish rotates rrs and, when needed, copies them to rewrite the owner or
// to give the merged RRset one TTL (the smallest, RFC 2181 §5.2). Stored
// records are never modified.
func (sel *selector) finish(rrs []dns.RR, owner string) []dns.RR {
	if len(rrs) == 0 {
		return nil
	}
	out := make([]dns.RR, len(rrs))
	sel.varied = sel.varied || len(rrs) > 1
	k := int(sel.turn % uint64(len(rrs)))
	copy(out, rrs[k:])
	copy(out[len(rrs)-k:], rrs[:k])
	ttl := out[0].Header().Ttl
	mixed := false
	for _, rr := range out {
		if rr.Header().Ttl != ttl {
			mixed = true
			ttl = min(ttl, rr.Header().Ttl)
		}
	}
	if (owner != "" && owner != out[0].Header().Name) || mixed {
		for i, rr := range out {
			c := dns.Copy(rr)
			if owner != "" {
				c.Header().Name = owner
			}
			c.Header().Ttl = ttl
			out[i] = c
		}
	}
	return out
}
