//go:build linux

package dnsserver

import (
	"fmt"
	"syscall"

	"golang.org/x/sys/unix"
)

// reusePort is a net.ListenConfig Control that sets SO_REUSEPORT, so that
// several sockets bind one address and the kernel spreads datagrams over them
// by a hash of the client's address and port (Linux socket(7)).
func reusePort(_, _ string, c syscall.RawConn) error {
	var serr error
	if err := c.Control(func(fd uintptr) {
		serr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_REUSEPORT, 1)
	}); err != nil {
		return fmt.Errorf("SO_REUSEPORT: %w", err)
	}
	if serr != nil {
		return fmt.Errorf("SO_REUSEPORT: %w", serr)
	}
	return nil
}
