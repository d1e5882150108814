package dnsserver

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/miekg/dns"

	"github.com/dnsplane/dnsplane/pkg/zonedb"
)

// DefaultAnswerCacheBytes bounds the packed-answer cache of a Server: 16 MiB
// of answers and keys per zone-store snapshot.
const DefaultAnswerCacheBytes = 16 << 20

// answerEntryOverhead is the bytes counted per cache entry besides its key
// and answer (map slot, entry struct, slice headers), an estimate.
const answerEntryOverhead = 96

// Header bits the answer copies from the request (RFC 1035 §4.1.1, RFC 4035
// §3.2.2): RD in the third byte of the header, CD in the fourth.
const (
	rdBit = 0x01
	cdBit = 0x10
)

// Key flag bits of the request's EDNS0 state.
const (
	keyEDNS = 1 << iota // the request had an OPT
	keyDO               // and its DO bit was set
	keyCO               // and its CO bit too (RFC 9824 §4: compact denial keeps NXDOMAIN)
)

// maxKeyLen is the longest cache key: a 255-byte wire name, qtype, qclass,
// flags.
const maxKeyLen = 255 + 5

// cachedAnswer is a packed, uncompressed response of a deterministic answer
// (no rotation, no weighted choice). Its ID, RD and CD bits and the case of
// its question name are those of the first query; copies get the asker's.
type cachedAnswer struct {
	wire  []byte
	qlen  int // wire length of the question name at offset 12
	rcode int
	// ecsLen is the number of EDNS Client Subnet address octets that end wire (the
	// option is last: optToEnd); a copy gets the asker's there. 0 without ECS.
	ecsLen int
	// renew is when the answer's RRSIGs are made anew (Unix nanoseconds; dnssec.Policy.Window):
	// the entry is not served from then on. 0 for an unsigned answer.
	renew int64
}

// answerCache holds the packed answers computed against one snapshot of the
// store. It is dropped with the snapshot, so a cached answer is never older
// than the zone data a query would otherwise read. Keys are the lowercased
// wire question name, qtype, qclass and the EDNS0 flags (appendKey).
//
// A hit takes no lock: lookups read read, a map that is never written once
// published. New answers go to pending, under mu, and are served from there
// (under mu) until they are promoted: read is replaced by a copy holding
// both (promote). A promotion copies every entry, so it waits until the
// pending work since the last one (adds and pending hits, each a query that
// missed read) exceeds len(read)/promoteEvery: the copying then costs at most
// promoteEvery+1 entries per such query, and the steady state has pending
// empty and every hit lock-free.
type answerCache struct {
	snap *zonedb.Snapshot
	sg   *signing // the signing state its answers were signed with (nil: none)

	read     atomic.Pointer[answerMap]
	pendingN atomic.Int64 // len(pending): lookups skip mu when 0

	mu      sync.Mutex // guards the fields below
	pending map[string]*cachedAnswer
	work    int // adds and pending hits since the last promotion
	bytes   int // of read and pending, counted against Server.opts.AnswerCacheBytes
}

// answerMap is a published, read-only set of cached answers by key.
type answerMap struct {
	m map[string]*cachedAnswer
}

// promoteEvery sets how much pending work a promotion waits for: more than
// len(read)/promoteEvery adds and pending hits.
const promoteEvery = 8

// newAnswerCache returns the empty cache of snap and signing state sg.
func newAnswerCache(snap *zonedb.Snapshot, sg *signing) *answerCache {
	c := &answerCache{snap: snap, sg: sg, pending: map[string]*cachedAnswer{}}
	c.read.Store(&answerMap{m: map[string]*cachedAnswer{}})
	return c
}

// cacheFor returns the answer cache of snap and signing state sg, replacing one of
// another snapshot or signing state; nil when caching is off or another one won the race.
func (s *Server) cacheFor(snap *zonedb.Snapshot, sg *signing) *answerCache {
	if s.opts.AnswerCacheBytes < 0 {
		return nil
	}
	c := s.cache.Load()
	if c != nil && c.snap == snap && c.sg == sg {
		return c
	}
	nc := newAnswerCache(snap, sg)
	if s.cache.CompareAndSwap(c, nc) {
		return nc
	}
	if c = s.cache.Load(); c != nil && c.snap == snap && c.sg == sg {
		return c
	}
	return nil
}

// lookup returns the entry of key, when the current cache is snap's and the server's signing
// state's, and the entry's signatures are not due to be made anew.
func (s *Server) lookup(snap *zonedb.Snapshot, key []byte) *cachedAnswer {
	c := s.cache.Load()
	if c == nil || c.snap != snap || c.sg != s.signing.Load() {
		return nil
	}
	return c.get(key, nowOf(&s.clock))
}

// clockTick is how often a started server refreshes its clock (Server.clock), which the answer
// cache's hits read instead of the system clock (reading it on each hit took a third of a
// cached signed answer's cost in BenchmarkServer_AnswerSigned/readloop): a cached signed
// answer is served up to clockTick past the end of its signing period.
const clockTick = 100 * time.Millisecond

// tickClock keeps s.clock at the current time, to within clockTick, until ctx ends.
func (s *Server) tickClock(ctx context.Context) {
	s.clock.Store(time.Now().UnixNano())
	t := time.NewTicker(clockTick)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			s.clock.Store(now.UnixNano())
		}
	}
}

// nowOf returns clock (Unix nanoseconds), or the system clock's time while it is 0 (a server
// that is not started).
func nowOf(clock *atomic.Int64) int64 {
	if n := clock.Load(); n != 0 {
		return n
	}
	return time.Now().UnixNano()
}

// stale reports whether e's signatures are due to be made anew (never for an unsigned answer).
func (e *cachedAnswer) stale() bool {
	return e.renew != 0 && e.staleAt(time.Now().UnixNano())
}

// staleAt is stale at now (Unix nanoseconds).
func (e *cachedAnswer) staleAt(now int64) bool { return e.renew != 0 && now >= e.renew }

// cost is what e counts against the cache's limit, under key.
func (e *cachedAnswer) cost(key string) int { return len(key) + len(e.wire) + answerEntryOverhead }

// get returns the entry of key that is not stale at now: from read without a lock, else from
// pending, where the answer of a new signing period waits until it replaces read's stale one.
func (c *answerCache) get(key []byte, now int64) *cachedAnswer {
	if e := c.read.Load().m[string(key)]; e != nil && !e.staleAt(now) {
		return e
	}
	if c.pendingN.Load() == 0 {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	e := c.pending[string(key)]
	if e == nil || e.staleAt(now) {
		return nil
	}
	c.work++
	c.promoteIfDue()
	return e
}

// add stores wire, the packed answer to a query of key, unless it is cached or the cache is
// full (limit bytes). An entry whose signatures are stale is replaced, full or not: the
// promotion drops it. It takes ownership of wire.
func (c *answerCache) add(key []byte, wire []byte, qlen, rcode, ecsLen, limit int, renew int64) {
	cost := len(key) + len(wire) + answerEntryOverhead
	c.mu.Lock()
	defer c.mu.Unlock()
	c.work++
	old, cached := c.read.Load().m[string(key)]
	replace := cached && old.stale()
	if p, ok := c.pending[string(key)]; ok && p.stale() {
		delete(c.pending, string(key))
		c.bytes -= p.cost(string(key))
	}
	if _, ok := c.pending[string(key)]; !ok && (replace || !cached && c.bytes+cost <= limit) {
		c.pending[string(key)] = &cachedAnswer{wire: wire, qlen: qlen, rcode: rcode, ecsLen: ecsLen, renew: renew}
		c.pendingN.Store(int64(len(c.pending)))
		c.bytes += cost
	}
	c.promoteIfDue()
}

// promoteIfDue publishes read and pending as the new read map, when pending
// holds entries and the work since the last promotion exceeds
// len(read)/promoteEvery; entries of read whose signatures are stale are left out, and
// the cache's bytes are counted anew. The caller holds mu.
func (c *answerCache) promoteIfDue() {
	old := c.read.Load().m
	if len(c.pending) == 0 || c.work <= len(old)/promoteEvery {
		return
	}
	m := make(map[string]*cachedAnswer, len(old)+len(c.pending))
	now, bytes := time.Now().UnixNano(), 0
	for k, e := range old {
		if _, replaced := c.pending[k]; !replaced && !e.staleAt(now) {
			m[k] = e
			bytes += e.cost(k)
		}
	}
	for k, e := range c.pending {
		m[k] = e
		bytes += e.cost(k)
	}
	c.bytes = bytes
	c.read.Store(&answerMap{m: m})
	clear(c.pending)
	c.pendingN.Store(0)
	c.work = 0
}

// appendKey appends the cache key of a question to dst: name, its wire form
// (any case), lowercased, then qtype, qclass and flags (keyEDNS, keyDO, keyCO).
func appendKey(dst, name []byte, qtype, qclass uint16, flags byte) []byte {
	for _, b := range name {
		if 'A' <= b && b <= 'Z' {
			b += 'a' - 'A'
		}
		dst = append(dst, b)
	}
	return append(dst, byte(qtype>>8), byte(qtype), byte(qclass>>8), byte(qclass), flags)
}

// ednsFlags returns the key flags of a request's OPT (nil: none).
func ednsFlags(opt *dns.OPT) byte {
	switch {
	case opt == nil:
		return 0
	case opt.Do() && opt.Co():
		return keyEDNS | keyDO | keyCO
	case opt.Do():
		return keyEDNS | keyDO
	}
	return keyEDNS
}

// copyAnswer appends e's answer to dst with the request's ID, RD and CD bits
// (the third and fourth header bytes of the request, hdr2 and hdr3) and
// question name qname (wire form, the asker's case; RFC 1034 §3.1 and the
// 0x20 practice expect it echoed as sent).
func copyAnswer(dst []byte, e *cachedAnswer, id uint16, hdr2, hdr3 byte, qname []byte) []byte {
	out := append(dst, e.wire...)
	out[0], out[1] = byte(id>>8), byte(id)
	out[2] = out[2]&^rdBit | hdr2&rdBit
	out[3] = out[3]&^cdBit | hdr3&cdBit
	copy(out[12:12+e.qlen], qname)
	return out
}

// questionKey returns the wire form of q's name (in nameBuf, the asker's
// case) and q's cache key (in keyBuf), or false for a name the cache does
// not take: one with a backslash escape (its lowercased presentation form,
// which resolve looks up, need not match the wire form's), or that does not
// pack.
func questionKey(q dns.Question, flags byte, nameBuf, keyBuf []byte) ([]byte, []byte, bool) {
	if strings.IndexByte(q.Name, '\\') >= 0 {
		return nil, nil, false
	}
	n, err := dns.PackDomainName(q.Name, nameBuf, 0, nil, false)
	if err != nil {
		return nil, nil, false
	}
	return nameBuf[:n], appendKey(keyBuf, nameBuf[:n], q.Qtype, q.Qclass, flags), true
}

// cachedReply looks up the answer to req (question key key, wire name
// qname) that may be at most size bytes long. On a hit it returns the answer
// copied into a buffer from s.bufs, with req's ID, RD and CD bits and name, and
// the address of its ECS option ecs (nil: none; the key holds its family and
// source prefix length, so the octet counts agree).
func (s *Server) cachedReply(snap *zonedb.Snapshot, qname, key []byte, req *dns.Msg, size int, ecs *dns.EDNS0_SUBNET) (reply, bool) {
	e := s.lookup(snap, key)
	if e == nil || len(e.wire) > size {
		return reply{}, false
	}
	var addr []byte
	if e.ecsLen > 0 {
		if addr = ecsAddrBytes(ecs); len(addr) != e.ecsLen {
			return reply{}, false
		}
	}
	var hdr2, hdr3 byte
	if req.RecursionDesired {
		hdr2 = rdBit
	}
	if req.CheckingDisabled {
		hdr3 = cdBit
	}
	buf := s.bufs.Get().(*[]byte)
	*buf = copyAnswer((*buf)[:0], e, req.Id, hdr2, hdr3, qname)
	copy((*buf)[len(*buf)-len(addr):], addr)
	s.cacheHits.Add(1)
	return reply{buf: buf, rcode: e.rcode}, true
}
