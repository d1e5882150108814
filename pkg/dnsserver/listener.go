package dnsserver

import (
	"bytes"
	"encoding/binary"
	"net"
	"net/netip"
	"time"

	"github.com/miekg/dns"

	"github.com/dnsplane/dnsplane/pkg/zonedb"
)

// udpPeer is the client of a UDP query that a batchReader (batch_linux.go)
// hands to miekg/dns, as the ResponseWriter's RemoteAddr: the client's
// address, and the control message that sends the answer from the address
// the query came to (nil unless the socket is bound to a wildcard address).
// ServeDNS treats it as a *net.UDPAddr (isUDP, addrIP).
type udpPeer struct {
	*net.UDPAddr
	oob []byte
}

// fastReader is the dns.Reader of a UDP socket's miekg/dns server loop. It
// answers a query whose answer is in the cache of the current snapshot
// itself, in the loop, and hands every other packet to miekg/dns (and so to
// ServeDNS). A hit skips miekg's goroutine per packet, the unpacking and the
// response writer. One fastReader serves one socket; its loop is one
// goroutine, so the buffers need no lock.
type fastReader struct {
	dns.Reader // the default, for TCP (unused: only UDP servers get a fastReader)
	s          *Server
	in, out    []byte
	key        []byte
	counts     rcodeCounts
}

// newFastReader is a dns.Server DecorateReader.
func (s *Server) newFastReader(inner dns.Reader) dns.Reader {
	return &fastReader{Reader: inner, s: s, in: make([]byte, dns.MaxMsgSize),
		out: make([]byte, 0, 4096), key: make([]byte, 0, maxKeyLen)}
}

// ReadUDP returns the next packet that is not answered from the cache,
// screened (screenRequest). It sets no read deadline: miekg/dns's shutdown unblocks the read with one in
// the past.
func (r *fastReader) ReadUDP(conn *net.UDPConn, _ time.Duration) ([]byte, *dns.SessionUDP, error) {
	for {
		n, sess, err := dns.ReadFromSessionUDP(conn, r.in)
		if err != nil {
			return nil, nil, err
		}
		if r.answer(conn, r.in[:n], sess) {
			continue
		}
		return screenRequest(bytes.Clone(r.in[:n])), sess, nil
	}
}

// answer writes the cached answer to the query pkt and returns true, or
// returns false when pkt is not a plain query with a cached answer.
func (r *fastReader) answer(conn *net.UDPConn, pkt []byte, sess *dns.SessionUDP) bool {
	var from netip.Addr
	if a, ok := sess.RemoteAddr().(*net.UDPAddr); ok {
		from, _ = netip.AddrFromSlice(a.IP)
	}
	rcode, ok := r.reply(pkt, from.Unmap())
	if !ok {
		return false
	}
	r.counts.add(r.s.opts.Metrics, rcode)
	r.counts.flush()
	if _, err := dns.WriteToSessionUDP(conn, r.out, sess); err != nil {
		r.s.opts.Logger.V(1).Info("write response failed", "client", sess.RemoteAddr().String(), "error", err.Error())
	}
	return true
}

// reply puts the cached answer to the UDP query pkt from the address from in
// r.out and returns its rcode, or false.
func (r *fastReader) reply(pkt []byte, from netip.Addr) (int, bool) {
	out, key, rcode, ok := r.s.appendHit(r.out[:0], r.key[:0], r.s.store.Snapshot(), pkt, from)
	r.out, r.key = out, key
	if ok {
		r.s.cacheHits.Add(1)
	}
	return rcode, ok
}

// appendHit appends to dst the cached answer (of snapshot snap) to the UDP
// query pkt and returns it, key (scratch for the cache key, returned for
// reuse) and the answer's rcode; ok is false, and out dst, when pkt is not a
// plain query (parseQuery), has no cached answer, or the answer is longer
// than the query's UDP payload size (512 bytes without EDNS0, RFC 1035
// §4.2.1; else the OPT's size capped at ServerOptions.UDPSize, RFC 6891
// §6.2.5), so that truncation goes the long way. It does not count the hit.
//
// A query whose answer is a geo answer (geoQuestion) is looked up by the scope and geo tag of
// its source address from (the zero Addr: none), as answer caches it; the query has no ECS
// option (parseQuery refuses one), so the source address is the client's. The geo hit is
// counted in the geo metric here.
func (s *Server) appendHit(dst, key []byte, snap *zonedb.Snapshot, pkt []byte, from netip.Addr) (out, keyBuf []byte, rcode int, ok bool) {
	q, ok := parseQuery(pkt)
	if !ok {
		return dst, key, 0, false
	}
	key = appendKey(key[:0], pkt[12:q.nameEnd], q.qtype, q.qclass, q.flags)
	size := dns.MinMsgSize // Server.payloadSize over UDP
	if q.flags&keyEDNS != 0 {
		size = max(dns.MinMsgSize, int(min(q.payload, s.opts.UDPSize)))
	}
	e := s.lookup(snap, key)
	if e == nil && from.IsValid() {
		if t := s.geoQuestion(snap, key); t != nil {
			g := geoState{s: s, snap: snap, client: client{addr: from}}
			m := g.match(t)
			key = appendGeoKey(key, s.geoGeneration(), m)
			if e = s.lookup(snap, key); e != nil && len(e.wire) <= size {
				s.countGeo(m.Tag, false)
			}
		}
	}
	if e == nil || len(e.wire) > size {
		return dst, key, 0, false
	}
	return copyAnswer(dst, e, binary.BigEndian.Uint16(pkt), pkt[2], pkt[3], pkt[12:q.nameEnd]), key, e.rcode, true
}

// query is what parseQuery reads of a packed query.
type query struct {
	nameEnd       int // the question name is pkt[12:nameEnd]
	qtype, qclass uint16
	flags         byte   // keyEDNS, keyDO
	payload       uint16 // the OPT's UDP payload size
}

// parseQuery reads a packed UDP query (RFC 1035 §4.1) and returns true only
// for the plain case that ServeDNS would answer from its zones: QR clear,
// opcode QUERY, one question and nothing else but at most one EDNS0 OPT of
// version 0 (RFC 6891 §6.1) with no options or only COOKIE (RFC 7873) and
// PADDING (RFC 7830), the packet ending where they end. The name must be
// uncompressed, of letters, digits, '-' and '_' (no character that
// presentation format escapes). Anything else goes the long way.
func parseQuery(pkt []byte) (query, bool) {
	const hdr = 12
	if len(pkt) < hdr+5 || pkt[2]&0xf8 != 0 || // QR and opcode
		binary.BigEndian.Uint16(pkt[4:]) != 1 || binary.BigEndian.Uint16(pkt[6:]) != 0 ||
		binary.BigEndian.Uint16(pkt[8:]) != 0 || binary.BigEndian.Uint16(pkt[10:]) > 1 {
		return query{}, false
	}
	off, ok := skipPlainName(pkt, hdr)
	if !ok || off+4 > len(pkt) {
		return query{}, false
	}
	q := query{nameEnd: off, qtype: binary.BigEndian.Uint16(pkt[off:]), qclass: binary.BigEndian.Uint16(pkt[off+2:])}
	off += 4
	if binary.BigEndian.Uint16(pkt[10:]) == 0 {
		return q, off == len(pkt)
	}
	// The OPT: root owner, type 41, class = payload size, TTL = extended rcode,
	// version, DO and Z; then RDLENGTH and the options.
	if off+11 > len(pkt) || pkt[off] != 0 || binary.BigEndian.Uint16(pkt[off+1:]) != dns.TypeOPT || pkt[off+6] != 0 {
		return query{}, false
	}
	q.payload, q.flags = binary.BigEndian.Uint16(pkt[off+3:]), keyEDNS
	if pkt[off+7]&0x80 != 0 {
		q.flags |= keyDO
	}
	rdlen := int(binary.BigEndian.Uint16(pkt[off+9:]))
	off += 11
	if off+rdlen != len(pkt) || !plainOptions(pkt[off:]) {
		return query{}, false
	}
	return q, true
}

// skipPlainName returns the offset after the uncompressed name at off, or
// false for a compressed, over-long or escaping name.
func skipPlainName(pkt []byte, off int) (int, bool) {
	start := off
	for off < len(pkt) {
		l := int(pkt[off])
		if l == 0 {
			return off + 1, off+1-start <= 255
		}
		if l > 63 || off+1+l > len(pkt) {
			return 0, false
		}
		for _, b := range pkt[off+1 : off+1+l] {
			if !('a' <= b && b <= 'z' || 'A' <= b && b <= 'Z' || '0' <= b && b <= '9' || b == '-' || b == '_') {
				return 0, false
			}
		}
		off += 1 + l
	}
	return 0, false
}

// plainOptions reports whether rdata, an OPT's options, holds only well-formed
// COOKIE (8 to 40 bytes, RFC 7873 §4) and PADDING options.
func plainOptions(rdata []byte) bool {
	for len(rdata) > 0 {
		if len(rdata) < 4 {
			return false
		}
		code, l := binary.BigEndian.Uint16(rdata), int(binary.BigEndian.Uint16(rdata[2:]))
		if 4+l > len(rdata) {
			return false
		}
		switch {
		case code == dns.EDNS0COOKIE && l >= 8 && l <= 40:
		case code == dns.EDNS0PADDING:
		default:
			return false
		}
		rdata = rdata[4+l:]
	}
	return true
}
