//go:build !linux

package dnsserver

import (
	"errors"
	"syscall"
)

// reusePort fails where SO_REUSEPORT is not known: set UDPSockets to 1.
func reusePort(_, _ string, _ syscall.RawConn) error {
	return errors.New("SO_REUSEPORT is not supported on this platform; use 1 UDP socket")
}
