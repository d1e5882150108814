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
	return pkt
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
