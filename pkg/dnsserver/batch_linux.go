//go:build linux

package dnsserver

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"net"
	"net/netip"
	"os"
	"runtime"
	"syscall"
	"time"
	"unsafe"

	"github.com/miekg/dns"
	"golang.org/x/net/ipv4"
	"golang.org/x/net/ipv6"
	"golang.org/x/sys/unix"
)

// udpLoop returns the PacketConn and the DecorateReader of the miekg/dns
// server of the UDP socket pc: with batching (ServerOptions.UDPBatch > 1), pc
// wrapped in a batchConn and a batchReader; else pc and the per-packet
// fastReader.
func (s *Server) udpLoop(pc net.PacketConn) (net.PacketConn, func(dns.Reader) dns.Reader) {
	uc, ok := pc.(*net.UDPConn)
	if !ok || s.opts.UDPBatch <= 1 {
		return pc, s.newFastReader
	}
	rc, err := uc.SyscallConn()
	if err != nil { // no descriptor to batch on: one datagram per read
		return pc, s.newFastReader
	}
	wildcard := uc.LocalAddr().(*net.UDPAddr).IP.IsUnspecified()
	if wildcard {
		setDstOptions(uc)
	}
	bc := &batchConn{UDPConn: uc}
	return bc, func(inner dns.Reader) dns.Reader { return s.newBatchReader(inner, rc, wildcard) }
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

// sockaddrSize is the room for a datagram's source address, in bytes: a
// struct sockaddr_in6 (28, ipv6(7)), which a struct sockaddr_in (16, ip(7))
// fits in.
const sockaddrSize = unix.SizeofSockaddrInet6

// batchReader is the dns.Reader (and dns.PacketConnReader) of one UDP
// socket's miekg/dns server loop. It reads up to len(in) datagrams per
// recvmmsg(2), answers the cache hits among them (Server.appendHit) with one
// sendmmsg(2), and returns the others, one per call, to miekg/dns and so to
// ServeDNS. Its loop is one goroutine, so the buffers need no lock.
//
// A hit allocates nothing: the message headers, buffers and source addresses
// are the reader's, made once, and an answer goes to its query's source
// address as the kernel wrote it (the out header names the in header's
// sockaddr). The calls are raw (unix.RawSyscall6) on the socket's
// non-blocking descriptor, through its syscall.RawConn: the Go poller parks
// the loop while nothing is queued (EAGAIN), and the runtime does not hand
// the loop's P to another thread during a call that cannot block.
type batchReader struct {
	dns.Reader // the default, for TCP (unused: only UDP servers get one)
	s          *Server
	rc         syscall.RawConn
	wildcard   bool // the socket is bound to 0.0.0.0 or ::; answers need a source

	in      []unix.Mmsghdr       // per slot: its buffer, source address and OOB
	inIov   []unix.Iovec         // per slot: its buffer of dns.MaxMsgSize bytes
	inBufs  [][]byte             // the same buffers
	names   [][sockaddrSize]byte // per slot: the datagram's source address
	oobs    [][]byte             // per slot: its control messages (wildcard only)
	out     []unix.Mmsghdr       // the answers of a batch, in order
	outIov  []unix.Iovec         // per answer: its bytes
	outBufs [][]byte             // per slot: the answer's bytes
	misses  []int                // slots of in to hand to miekg/dns, in order
	next    int                  // misses[next] is the next to return
	key     []byte               // scratch for the cache key
	oob     sourceCache          // source control messages by destination
	counts  rcodeCounts

	// recvFn and sendFn are the RawConn callbacks, made once so that a
	// batch makes no closure; they leave their result in n and errno.
	recvFn, sendFn func(fd uintptr) bool
	pending        []unix.Mmsghdr // what sendFn sends
	n              int
	errno          syscall.Errno
}

// newBatchReader is the DecorateReader of the batchConn of a UDP socket,
// reading its descriptor through rc.
func (s *Server) newBatchReader(inner dns.Reader, rc syscall.RawConn, wildcard bool) *batchReader {
	n := s.opts.UDPBatch
	r := &batchReader{Reader: inner, s: s, rc: rc, wildcard: wildcard, key: make([]byte, 0, maxKeyLen),
		in: make([]unix.Mmsghdr, n), inIov: make([]unix.Iovec, n), inBufs: make([][]byte, n),
		names: make([][sockaddrSize]byte, n), out: make([]unix.Mmsghdr, 0, n),
		outIov: make([]unix.Iovec, n), outBufs: make([][]byte, n)}
	bufs := slotBuffers(r, n)
	if wildcard {
		r.oobs = make([][]byte, n)
	}
	for i := range r.in {
		r.inBufs[i] = bufs[i*dns.MaxMsgSize : (i+1)*dns.MaxMsgSize]
		r.inIov[i].Base = &r.inBufs[i][0]
		r.inIov[i].SetLen(dns.MaxMsgSize)
		h := &r.in[i].Hdr
		h.Name, h.Iov = &r.names[i][0], &r.inIov[i]
		h.SetIovlen(1)
		if wildcard {
			r.oobs[i] = make([]byte, udpOOBSize())
			h.Control = &r.oobs[i][0]
		}
		r.outBufs[i] = make([]byte, 0, 4096)
	}
	r.recvFn = func(fd uintptr) bool { return r.mmsg(unix.SYS_RECVMMSG, fd, r.in) }
	r.sendFn = func(fd uintptr) bool { return r.mmsg(unix.SYS_SENDMMSG, fd, r.pending) }
	return r
}

// slotBuffers returns the n read buffers of r's slots, dns.MaxMsgSize bytes each, as one
// anonymous private mapping, unmapped once r is unreachable. The kernel backs a page of it
// only when a datagram is written there, so a slot costs the pages its queries touch (one for
// a common query) and a datagram of any size still fits. The same bytes from the Go heap were
// zeroed in full whenever the heap reused freed memory for them, which made them resident:
// 2.6 MiB of the manager's RSS (make bench at 1,000 endpoints: RssAnon 26.3 and
// 27.2 MiB with batches of 32, 23.7 and 24.5 without). Where the mapping fails, they come from
// the heap.
func slotBuffers(r *batchReader, n int) []byte {
	b, err := unix.Mmap(-1, 0, n*dns.MaxMsgSize, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
	if err != nil {
		return make([]byte, n*dns.MaxMsgSize)
	}
	runtime.AddCleanup(r, func(b []byte) { _ = unix.Munmap(b) }, b)
	return b
}

// mmsg makes the system call trap (recvmmsg or sendmmsg, without flags) on fd
// for hs, again after EINTR, and leaves the result in r.n and r.errno; it
// returns false on EAGAIN, so that the RawConn waits for the poller.
func (r *batchReader) mmsg(trap, fd uintptr, hs []unix.Mmsghdr) bool {
	for {
		n, _, e := unix.RawSyscall6(trap, fd, uintptr(unsafe.Pointer(&hs[0])), uintptr(len(hs)), 0, 0, 0)
		switch e {
		case unix.EINTR:
			continue
		case unix.EAGAIN:
			return false
		}
		r.n, r.errno = int(n), e
		return true
	}
}

// udpOOBSize is the control-message room for a destination address of
// either family (as miekg/dns sizes it).
func udpOOBSize() int {
	return max(len(ipv4.NewControlMessage(ipv4.FlagDst|ipv4.FlagInterface)),
		len(ipv6.NewControlMessage(ipv6.FlagDst|ipv6.FlagInterface)))
}

// ReadPacketConn returns the next datagram of the socket that is not
// answered from the cache, screened (screenRequest), and its client as a
// *udpPeer. It sets no read deadline: miekg/dns's shutdown unblocks the read
// with one in the past.
func (r *batchReader) ReadPacketConn(_ net.PacketConn, _ time.Duration) ([]byte, net.Addr, error) {
	for {
		for r.next < len(r.misses) {
			i := r.misses[r.next]
			r.next++
			h := &r.in[i].Hdr
			addr := udpAddrOf(r.names[i][:h.Namelen])
			if addr == nil {
				continue // not from an IPv4 or IPv6 address: nowhere to answer
			}
			us := &udpPeer{UDPAddr: addr}
			if r.wildcard {
				us.oob = r.oob.source(r.oobs[i][:h.Controllen])
			}
			return screenRequest(bytes.Clone(r.inBufs[i][:r.in[i].Len])), us, nil
		}
		if err := r.readBatch(); err != nil {
			return nil, nil, err
		}
	}
}

// recv reads up to len(r.in) datagrams with one recvmmsg(2), waiting for the
// first, and returns how many it read.
func (r *batchReader) recv() (int, error) {
	for i := range r.in { // the kernel wrote the lengths of the last batch's
		h := &r.in[i].Hdr
		h.Namelen = sockaddrSize
		if r.wildcard {
			h.SetControllen(len(r.oobs[i]))
		}
	}
	if err := r.rc.Read(r.recvFn); err != nil {
		return 0, err
	}
	if r.errno != 0 {
		return 0, os.NewSyscallError("recvmmsg", r.errno)
	}
	return r.n, nil
}

// readBatch reads one batch (blocking for the first datagram), answers its
// hits and queues its misses.
func (r *batchReader) readBatch() error {
	n, err := r.recv()
	if err != nil {
		return err
	}
	r.misses, r.next, r.out = r.misses[:0], 0, r.out[:0]
	s := r.s
	snap := s.store.Snapshot()
	for i := range r.in[:n] {
		m := &r.in[i]
		buf, key, rcode, ok := s.appendHit(r.outBufs[i][:0], r.key, snap, r.inBufs[i][:m.Len], sockaddrIP(r.names[i][:m.Hdr.Namelen]))
		r.key = key
		if !ok {
			r.misses = append(r.misses, i)
			continue
		}
		r.outBufs[i] = buf
		r.counts.add(s.opts.Metrics, rcode)
		j := len(r.out)
		r.outIov[j].Base = &buf[0]
		r.outIov[j].SetLen(len(buf))
		r.out = r.out[:j+1]
		o := &r.out[j]
		o.Hdr = unix.Msghdr{Name: m.Hdr.Name, Namelen: m.Hdr.Namelen, Iov: &r.outIov[j]}
		o.Hdr.SetIovlen(1)
		if r.wildcard {
			if src := r.oob.source(r.oobs[i][:m.Hdr.Controllen]); len(src) > 0 {
				o.Hdr.Control = &src[0]
				o.Hdr.SetControllen(len(src))
			}
		}
	}
	s.cacheHits.Add(uint64(len(r.out)))
	r.counts.flush()
	r.writeAnswers()
	return nil
}

// writeAnswers sends r.out with as few sendmmsg(2) calls as the kernel
// allows; a datagram that fails is logged and skipped.
func (r *batchReader) writeAnswers() {
	out := r.out
	for len(out) > 0 {
		r.pending = out
		err := r.rc.Write(r.sendFn)
		if err == nil && r.errno != 0 {
			err = os.NewSyscallError("sendmmsg", r.errno)
		}
		n := r.n
		if err != nil {
			// sendmmsg fails only for its first datagram; the socket's own
			// error (closed) ends the batch.
			r.s.opts.Logger.V(1).Info("write response failed", "client", udpAddrOf(sockaddrBytes(&out[0].Hdr)).String(), "error", err.Error())
			if r.errno == 0 {
				break
			}
			n = 1
		}
		out = out[n:]
	}
	r.pending = nil
}

// sockaddrBytes returns the source address a header names, as bytes.
func sockaddrBytes(h *unix.Msghdr) []byte {
	return unsafe.Slice(h.Name, h.Namelen)
}

// udpAddrOf returns the address of a struct sockaddr_in or sockaddr_in6 as
// the kernel writes it (family in host order, port in network order;
// ip(7), ipv6(7)), or nil for another family or a short one. The zone of a
// scoped IPv6 address is its interface's name, or its index when the
// interface is gone.
// sockaddrIP returns the address of a raw sockaddr (AF_INET or AF_INET6), without allocating;
// the zero Addr for another family. An IPv4-mapped address is unmapped.
func sockaddrIP(sa []byte) netip.Addr {
	if len(sa) < 2 {
		return netip.Addr{}
	}
	switch family := binary.NativeEndian.Uint16(sa); {
	case family == unix.AF_INET && len(sa) >= unix.SizeofSockaddrInet4:
		return netip.AddrFrom4([4]byte(sa[4:8]))
	case family == unix.AF_INET6 && len(sa) >= unix.SizeofSockaddrInet6:
		return netip.AddrFrom16([16]byte(sa[8:24])).Unmap()
	}
	return netip.Addr{}
}

func udpAddrOf(sa []byte) *net.UDPAddr {
	if len(sa) < 2 {
		return nil
	}
	family := binary.NativeEndian.Uint16(sa)
	switch {
	case family == unix.AF_INET && len(sa) >= unix.SizeofSockaddrInet4:
		return &net.UDPAddr{IP: net.IPv4(sa[4], sa[5], sa[6], sa[7]), Port: int(sa[2])<<8 | int(sa[3])}
	case family == unix.AF_INET6 && len(sa) >= unix.SizeofSockaddrInet6:
		a := &net.UDPAddr{IP: bytes.Clone(sa[8:24]), Port: int(sa[2])<<8 | int(sa[3])}
		if scope := binary.NativeEndian.Uint32(sa[24:]); scope != 0 {
			if ifi, err := net.InterfaceByIndex(int(scope)); err == nil {
				a.Zone = ifi.Name
			} else {
				a.Zone = fmt.Sprint(scope)
			}
		}
		return a
	}
	return nil
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
