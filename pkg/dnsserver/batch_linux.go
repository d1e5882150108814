//go:build linux

package dnsserver

import (
	"bytes"
	"net"
	"time"

	"github.com/miekg/dns"
	"golang.org/x/net/ipv4"
	"golang.org/x/net/ipv6"
)

// batchPacketConn is what ipv4.PacketConn and ipv6.PacketConn (golang.org/x/net)
// share: recvmmsg and sendmmsg on Linux.
type batchPacketConn interface {
	ReadBatch(ms []ipv4.Message, flags int) (int, error)
	WriteBatch(ms []ipv4.Message, flags int) (int, error)
}

// udpLoop returns the PacketConn and the DecorateReader of the miekg/dns
// server of the UDP socket pc: with batching (ServerOptions.UDPBatch > 1), pc
// wrapped in a batchConn and a batchReader; else pc and the per-packet
// fastReader.
func (s *Server) udpLoop(pc net.PacketConn) (net.PacketConn, func(dns.Reader) dns.Reader) {
	uc, ok := pc.(*net.UDPConn)
	if !ok || s.opts.UDPBatch <= 1 {
		return pc, s.newFastReader
	}
	wildcard := uc.LocalAddr().(*net.UDPAddr).IP.IsUnspecified()
	if wildcard {
		setDstOptions(uc)
	}
	bc := &batchConn{UDPConn: uc}
	return bc, func(inner dns.Reader) dns.Reader { return s.newBatchReader(inner, uc, wildcard) }
}

// setDstOptions asks the kernel for each datagram's destination address
// (IP_PKTINFO, IPV6_RECVPKTINFO), as miekg/dns does for the sockets it
// recognises: an answer must leave from the address its query came to.
// Errors are ignored: a socket of one family refuses the other's option.
func setDstOptions(uc *net.UDPConn) {
	_ = ipv6.NewPacketConn(uc).SetControlMessage(ipv6.FlagDst|ipv6.FlagInterface, true)
	_ = ipv4.NewPacketConn(uc).SetControlMessage(ipv4.FlagDst|ipv4.FlagInterface, true)
}

// batchConn is a UDP socket that miekg/dns serves as a generic
// net.PacketConn, so that the batchReader's ReadPacketConn reads it. Its
// WriteTo sends an answer to a udpPeer from the query's destination.
type batchConn struct {
	*net.UDPConn
}

// WriteTo writes the datagram b to addr; to a *udpPeer, with its source
// control message.
func (c *batchConn) WriteTo(b []byte, addr net.Addr) (int, error) {
	if us, ok := addr.(*udpPeer); ok {
		n, _, err := c.WriteMsgUDP(b, us.oob, us.UDPAddr)
		return n, err
	}
	return c.UDPConn.WriteTo(b, addr)
}

// batchReader is the dns.Reader (and dns.PacketConnReader) of one UDP
// socket's miekg/dns server loop. It reads up to len(in) datagrams per
// recvmmsg, answers the cache hits among them (fastReader.reply) with one
// sendmmsg, and returns the others, one per call, to miekg/dns and so to
// ServeDNS. Its loop is one goroutine, so the buffers need no lock.
type batchReader struct {
	dns.Reader // the default, for TCP (unused: only UDP servers get one)
	s          *Server
	pc         batchPacketConn
	wildcard   bool // the socket is bound to 0.0.0.0 or ::; answers need a source

	in      []ipv4.Message // per slot: one buffer of dns.MaxMsgSize, OOB
	out     []ipv4.Message // the answers of a batch, in order
	outBufs [][]byte       // per slot: the answer's bytes
	misses  []int          // slots of in to hand to miekg/dns, in order
	next    int            // misses[next] is the next to return
	key     []byte         // scratch for the cache key
	oob     sourceCache
	counts  rcodeCounts
}

// newBatchReader is the DecorateReader of the batchConn of uc.
func (s *Server) newBatchReader(inner dns.Reader, uc *net.UDPConn, wildcard bool) dns.Reader {
	n := s.opts.UDPBatch
	r := &batchReader{Reader: inner, wildcard: wildcard,
		s: s, key: make([]byte, 0, maxKeyLen),
		in: make([]ipv4.Message, n), out: make([]ipv4.Message, 0, n), outBufs: make([][]byte, n)}
	if uc.LocalAddr().(*net.UDPAddr).IP.To4() != nil {
		r.pc = ipv4.NewPacketConn(uc)
	} else {
		r.pc = ipv6.NewPacketConn(uc)
	}
	bufs := make([]byte, n*dns.MaxMsgSize) // untouched pages stay unbacked
	for i := range r.in {
		r.in[i].Buffers = [][]byte{bufs[i*dns.MaxMsgSize : (i+1)*dns.MaxMsgSize]}
		if wildcard {
			r.in[i].OOB = make([]byte, udpOOBSize())
		}
		r.outBufs[i] = make([]byte, 0, 4096)
	}
	return r
}

// udpOOBSize is the control-message room for a destination address of
// either family (as miekg/dns sizes it).
func udpOOBSize() int {
	return max(len(ipv4.NewControlMessage(ipv4.FlagDst|ipv4.FlagInterface)),
		len(ipv6.NewControlMessage(ipv6.FlagDst|ipv6.FlagInterface)))
}

// ReadPacketConn returns the next datagram of the socket that is not
// answered from the cache, screened (screenRequest), and its client as a *udpPeer. It sets no read
// deadline: miekg/dns's shutdown unblocks the read with one in the past.
func (r *batchReader) ReadPacketConn(_ net.PacketConn, _ time.Duration) ([]byte, net.Addr, error) {
	for r.next >= len(r.misses) {
		if err := r.readBatch(); err != nil {
			return nil, nil, err
		}
	}
	m := &r.in[r.misses[r.next]]
	r.next++
	us := &udpPeer{UDPAddr: m.Addr.(*net.UDPAddr)}
	if r.wildcard {
		us.oob = r.oob.source(m.OOB[:m.NN])
	}
	return screenRequest(bytes.Clone(m.Buffers[0][:m.N])), us, nil
}

// readBatch reads one batch (blocking for the first datagram), answers its
// hits and queues its misses.
func (r *batchReader) readBatch() error {
	n, err := r.pc.ReadBatch(r.in, 0)
	if err != nil {
		return err
	}
	r.misses, r.next, r.out = r.misses[:0], 0, r.out[:0]
	s := r.s
	snap := s.store.Snapshot()
	for i := range r.in[:n] {
		m := &r.in[i]
		if m.Addr == nil {
			continue
		}
		buf, key, rcode, ok := s.appendHit(r.outBufs[i][:0], r.key, snap, m.Buffers[0][:m.N])
		r.key = key
		if !ok {
			r.misses = append(r.misses, i)
			continue
		}
		r.outBufs[i] = buf
		r.counts.add(s.opts.Metrics, rcode)
		out := ipv4.Message{Buffers: [][]byte{buf}, Addr: m.Addr}
		if r.wildcard {
			out.OOB = r.oob.source(m.OOB[:m.NN])
		}
		r.out = append(r.out, out)
	}
	s.cacheHits.Add(uint64(len(r.out)))
	r.counts.flush()
	r.writeAnswers()
	return nil
}

// writeAnswers sends r.out with as few sendmmsg calls as the kernel allows;
// a datagram that fails is logged and skipped.
func (r *batchReader) writeAnswers() {
	out := r.out
	for len(out) > 0 {
		n, err := r.pc.WriteBatch(out, 0)
		if err != nil {
			n = max(n, 0) // the raw sendmmsg result is -1 on an error
			r.s.opts.Logger.V(1).Info("write response failed", "client", out[n].Addr.String(), "error", err.Error())
			n++
		}
		out = out[n:]
	}
}

// sourceCache turns a received destination control message into the source
// control message of its answer (as miekg/dns's WriteToSessionUDP does),
// remembering the last one: a socket's queries mostly come to one address.
// The slices it returns are never written again.
type sourceCache struct {
	in, out []byte
}

func (c *sourceCache) source(oob []byte) []byte {
	if len(oob) > 0 && bytes.Equal(oob, c.in) {
		return c.out
	}
	c.in, c.out = bytes.Clone(oob), correctSource(oob)
	return c.out
}

// correctSource returns the control message that sends from the destination
// address in oob (IPv6 first, as miekg/dns parses it), or nil.
func correctSource(oob []byte) []byte {
	cm6 := new(ipv6.ControlMessage)
	if cm6.Parse(oob) == nil && cm6.Dst != nil {
		if cm6.Dst.To4() == nil {
			return (&ipv6.ControlMessage{Src: cm6.Dst}).Marshal()
		}
		return (&ipv4.ControlMessage{Src: cm6.Dst}).Marshal()
	}
	cm4 := new(ipv4.ControlMessage)
	if cm4.Parse(oob) == nil && cm4.Dst != nil {
		return (&ipv4.ControlMessage{Src: cm4.Dst}).Marshal()
	}
	return nil
}
