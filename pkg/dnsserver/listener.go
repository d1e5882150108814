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
	var ecsAddr []byte // the option's address octets, as sent
	if q.ecs >= 0 {
		// The key of answer's cache for a request with ECS (appendECSKey): the family and
		// the source prefix length. The client is the option's address, not the source.
		o := pkt[q.ecs:]
		key[len(key)-1] |= keyECS
		key = append(key, o[4], o[5], o[6])
		ecsAddr = o[8 : 4+int(binary.BigEndian.Uint16(o[2:]))]
		var b [16]byte
		copy(b[:], ecsAddr)
		if o[5] == ecsFamilyIPv4 {
			from = netip.AddrFrom4([4]byte(b[:4]))
		} else {
			from = netip.AddrFrom16(b)
		}
		if o[6] == 0 {
			from = netip.Addr{} // no address to use (RFC 7871 §7.1.2): the long way's default
		}
	}
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
			if e = s.lookup(snap, key); e != nil && len(e.wire) <= size && e.ecsLen == len(ecsAddr) {
				s.countGeo(m.Tag, q.ecs >= 0)
			}
		}
	}
	if e == nil || len(e.wire) > size || e.ecsLen != len(ecsAddr) {
		return dst, key, 0, false
	}
	out = copyAnswer(dst, e, binary.BigEndian.Uint16(pkt), pkt[2], pkt[3], pkt[12:q.nameEnd])
	copy(out[len(out)-len(ecsAddr):], ecsAddr)
	return out, key, e.rcode, true
}

// query is what parseQuery reads of a packed query.
type query struct {
	nameEnd       int // the question name is pkt[12:nameEnd]
	qtype, qclass uint16
	flags         byte   // keyEDNS, keyDO, keyCO
	payload       uint16 // the OPT's UDP payload size
	ecs           int    // offset of the EDNS Client Subnet option in pkt, -1 without one
}

// parseQuery reads a packed UDP query (RFC 1035 §4.1) and returns true only
// for the plain case that ServeDNS would answer from its zones: QR clear,
// opcode QUERY, one question and nothing else but at most one EDNS0 OPT of
// version 0 (RFC 6891 §6.1) with no options or only COOKIE (RFC 7873),
// PADDING (RFC 7830) and one well-formed EDNS Client Subnet option (RFC 7871 §6:
// family 1 or 2, a source prefix within it, exactly the octets it needs, no bit
// set past it; wellFormedECS), the packet ending where they end. The name must be
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
	q := query{nameEnd: off, qtype: binary.BigEndian.Uint16(pkt[off:]), qclass: binary.BigEndian.Uint16(pkt[off+2:]), ecs: -1}
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
		if pkt[off+7]&0x40 != 0 {
			q.flags |= keyCO
		}
	}
	rdlen := int(binary.BigEndian.Uint16(pkt[off+9:]))
	off += 11
	if off+rdlen != len(pkt) {
		return query{}, false
	}
	ecs, ok := plainOptions(pkt[off:])
	if !ok {
		return query{}, false
	}
	if ecs >= 0 {
		q.ecs = off + ecs
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
// COOKIE (8 to 40 bytes, RFC 7873 §4) and PADDING options, and at most one
// well-formed ECS option, whose offset in rdata it returns (-1: none).
func plainOptions(rdata []byte) (int, bool) {
	ecs, off := -1, 0
	for off < len(rdata) {
		o := rdata[off:]
		if len(o) < 4 {
			return -1, false
		}
		code, l := binary.BigEndian.Uint16(o), int(binary.BigEndian.Uint16(o[2:]))
		if 4+l > len(o) {
			return -1, false
		}
		switch {
		case code == dns.EDNS0COOKIE && l >= 8 && l <= 40:
		case code == dns.EDNS0PADDING:
		case code == dns.EDNS0SUBNET && ecs < 0 && wellFormedECS(o[4:4+l]):
			ecs = off
		default:
			return -1, false
		}
		off += 4 + l
	}
	return ecs, true
}

// wellFormedECS reports whether b, an ECS option's data, is one the long way answers without
// FORMERR (clientOf) and as the read loop can: family 1 (IPv4) or 2 (IPv6), a source prefix
// within the family, scope 0 (RFC 7871 §6: "MUST be set to 0" in queries), exactly the
// address octets the source prefix needs, and no address bit set past it.
func wellFormedECS(b []byte) bool {
	if len(b) < 4 {
		return false
	}
	family, source, scope := binary.BigEndian.Uint16(b), int(b[2]), b[3]
	bits := 32
	if family == ecsFamilyIPv6 {
		bits = 128
	}
	addr := b[4:]
	if (family != ecsFamilyIPv4 && family != ecsFamilyIPv6) || source > bits || scope != 0 || len(addr) != (source+7)/8 {
		return false
	}
	if source%8 != 0 && addr[len(addr)-1]&(0xff>>(source%8)) != 0 {
		return false
	}
	return true
}
