package dnsserver

import (
	"encoding/binary"
	"errors"
	"net"
	"time"

	"github.com/miekg/dns"
)

// headerLen is the length of a DNS message header (RFC 1035 §4.1.1).
const headerLen = 12

// screenRequest returns pkt, a message as read from a UDP socket or a TCP
// connection, or its header alone when pkt is a request that checkRequest
// finds malformed. miekg/dns unpacks a lone header as a message without
// question (its documented "just the header" case), which refuseRequest
// answers FORMERR (RFC 1035 §4.1.1: the server "was unable to interpret the
// query"), with the request's ID and opcode and no OPT: the request's OPT,
// if it had one, cannot be trusted. Messages shorter than a header and
// responses are left to miekg/dns and acceptMsg, which drop them.
//
// Why FORMERR and not silence: NSD answers these FORMERR, Knot drops them.
// The header-only answer is no larger than the request, so it amplifies
// nothing, and a client learns at once that its query was broken instead of
// retrying until it times out.
func screenRequest(pkt []byte) []byte {
	if len(pkt) < headerLen || pkt[2]&0x80 != 0 {
		return pkt
	}
	if checkRequest(pkt) != nil {
		return pkt[:headerLen]
	}
	return screenECS(pkt)
}

// refusedECS is an EDNS Client Subnet option (code 8, length 5) that miekg/dns unpacks and
// clientOf refuses: family 1, source prefix 0, scope 0, and an address octet set past the
// 0-bit prefix. screenECS puts it in place of an option that miekg/dns would not unpack, so that
// the request is answered FORMERR with an OPT (RFC 7871 §6, RFC 6891 §6.1.1) rather than by
// miekg/dns's FORMERR without one.
const refusedECS = "\x00\x08\x00\x05\x00\x01\x00\x00\xff"

// screenECS returns pkt, a request checkRequest accepted (so every walk below stays inside it),
// with each malformed ECS option of its OPT (badECS) replaced by refusedECS and the OPT's
// RDLENGTH adjusted in a copy; pkt itself when it has none. The request is then answered
// FORMERR with an OPT.
func screenECS(pkt []byte) []byte {
	off := headerLen
	for range binary.BigEndian.Uint16(pkt[4:]) {
		off, _ = skipName(pkt, off)
		off += 4
	}
	records := int(binary.BigEndian.Uint16(pkt[6:])) + int(binary.BigEndian.Uint16(pkt[8:])) + int(binary.BigEndian.Uint16(pkt[10:]))
	for range records {
		off, _ = skipName(pkt, off)
		rdlen := int(binary.BigEndian.Uint16(pkt[off+8:]))
		start := off + 10
		if binary.BigEndian.Uint16(pkt[off:]) == dns.TypeOPT { // in the additional section (checkRequest)
			if o, l, ok := badECS(pkt[start : start+rdlen]); ok {
				out := append(append(append([]byte(nil), pkt[:start+o]...), refusedECS...), pkt[start+o+l:]...)
				binary.BigEndian.PutUint16(out[off+8:], uint16(rdlen-l+len(refusedECS)))
				return screenECS(out)
			}
		}
		off = start + rdlen
	}
	return pkt
}

// badECS returns the offset and length (header included) of the first ECS option in rdata, an
// OPT's options, that is malformed (RFC 7871 §6), and true: data shorter than 4 octets, a
// family other than 1 (IPv4) and 2 (IPv6), a source or scope prefix longer than the family's
// addresses, or an address of another length than the source prefix's octets ((source+7)/8).
// Family 0 with source 0 and no address (a client that asks for no subnet, as dig sends it) is
// well-formed. Address bits past the source prefix are clientOf's to refuse.
func badECS(rdata []byte) (int, int, bool) {
	for off := 0; off+4 <= len(rdata); {
		code, l := binary.BigEndian.Uint16(rdata[off:]), int(binary.BigEndian.Uint16(rdata[off+2:]))
		if off+4+l > len(rdata) {
			return 0, 0, false // miekg/dns refuses the OPT as a whole
		}
		if code == dns.EDNS0SUBNET && string(rdata[off:off+4+l]) != refusedECS && !wellFormedOrAnonymousECS(rdata[off+4:off+4+l]) {
			return off, 4 + l, true
		}
		off += 4 + l
	}
	return 0, 0, false
}

// wellFormedOrAnonymousECS reports whether b, an ECS option's data, has the shape RFC 7871 §6
// gives it (its address bits past the source prefix left to clientOf), or is family 0 with
// source 0, scope 0 and no address.
func wellFormedOrAnonymousECS(b []byte) bool {
	if len(b) < 4 {
		return false
	}
	family, source, scope := binary.BigEndian.Uint16(b), int(b[2]), int(b[3])
	bits := 0
	switch family {
	case 0:
	case ecsFamilyIPv4:
		bits = 32
	case ecsFamilyIPv6:
		bits = 128
	default:
		return false
	}
	return source <= bits && scope <= bits && len(b)-4 == (source+7)/8
}

// Errors of checkRequest.
var (
	errCutShort     = errors.New("message ends inside a question or record")
	errBadPointer   = errors.New("compression pointer that does not point back to an earlier name")
	errBadLabel     = errors.New("label type other than a length or a pointer")
	errLongName     = errors.New("name longer than 255 bytes")
	errMisplacedOPT = errors.New("OPT record outside the additional section")
)

// checkRequest returns why the packed message pkt is malformed, where
// miekg/dns's unpacking is lenient, or nil:
//   - a section ends before the counts in the header say (a question cut
//     before its QTYPE or QCLASS, RFC 1035 §4.1.2, which miekg/dns reads as
//     type or class 0; an OPT announced but missing);
//   - a name with a compression pointer that does not point to a prior
//     occurrence of a name (RFC 1035 §4.1.4): forward, into itself or into
//     the header. A query's question comes first, so no pointer in it is
//     valid; miekg/dns follows any pointer, forward ones too. Pointers in later
//     records (a NOTIFY's SOA, a TSIG owner) may point back;
//   - a label type other than 00 and 11 (RFC 6891 §5 deprecates the
//     extended label types), a name over 255 bytes;
//   - an OPT record in the answer or authority section: RFC 6891 §6.1.1
//     defines it for the additional section only, so it is no record the
//     server can interpret, and NSD answers FORMERR too (more than one OPT in
//     the additional section is refuseRequest's FORMERR, with an OPT).
//
// Bytes after the last record are ignored, as miekg/dns and NSD do.
func checkRequest(pkt []byte) error {
	off := headerLen
	var err error
	for range binary.BigEndian.Uint16(pkt[4:]) {
		if off, err = skipName(pkt, off); err != nil {
			return err
		}
		if off += 4; off > len(pkt) {
			return errCutShort
		}
	}
	for sec := range 3 {
		for range binary.BigEndian.Uint16(pkt[6+2*sec:]) {
			if off, err = skipName(pkt, off); err != nil {
				return err
			}
			if off+10 > len(pkt) {
				return errCutShort
			}
			if binary.BigEndian.Uint16(pkt[off:]) == dns.TypeOPT && sec < 2 {
				return errMisplacedOPT
			}
			if off += 10 + int(binary.BigEndian.Uint16(pkt[off+8:])); off > len(pkt) {
				return errCutShort
			}
		}
	}
	return nil
}

// skipName returns the offset after the name at off in pkt, checking it
// (checkRequest). Every pointer must point before the start of the name
// part it ends, so each jump goes back and the walk ends.
func skipName(pkt []byte, off int) (int, error) {
	start, end, length := off, -1, 0
	for {
		if off >= len(pkt) {
			return 0, errCutShort
		}
		c := int(pkt[off])
		switch c & 0xc0 {
		case 0x00:
			length += c + 1
			if length > 255 {
				return 0, errLongName
			}
			if c == 0 {
				if end < 0 {
					end = off + 1
				}
				return end, nil
			}
			off += c + 1
		case 0xc0:
			if off+2 > len(pkt) {
				return 0, errCutShort
			}
			ptr := int(binary.BigEndian.Uint16(pkt[off:]) & 0x3fff)
			if ptr < headerLen || ptr >= start {
				return 0, errBadPointer
			}
			if end < 0 {
				end = off + 2
			}
			start, off = ptr, ptr
		default:
			return 0, errBadLabel
		}
	}
}

// screenTCP is the DecorateReader of the TCP server: each message read goes
// through screenRequest.
func screenTCP(inner dns.Reader) dns.Reader { return tcpScreen{inner} }

type tcpScreen struct{ dns.Reader }

// ReadTCP reads one message (RFC 1035 §4.2.2 framing) and screens it.
func (r tcpScreen) ReadTCP(conn net.Conn, timeout time.Duration) ([]byte, error) {
	m, err := r.Reader.ReadTCP(conn, timeout)
	if err != nil {
		return nil, err
	}
	return screenRequest(m), nil
}
