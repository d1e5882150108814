//go:build !linux

package dnsserver

import (
	"net"

	"github.com/miekg/dns"
)

// udpLoop returns pc and the one-datagram-per-read fastReader: recvmmsg(2)
// batches (batch_linux.go) are Linux only, and ServerOptions.UDPBatch is
// ignored here.
func (s *Server) udpLoop(pc net.PacketConn) (net.PacketConn, func(dns.Reader) dns.Reader) {
	return pc, s.newFastReader
}
