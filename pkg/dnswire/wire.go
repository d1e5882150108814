package dnswire

import (
	"fmt"

	"github.com/miekg/dns"
)

// CheckWire reports whether rr can be written on the wire and read back: miekg/dns reads some
// rdata in presentation form that it cannot pack (a DS digest of odd length or with non-hex
// digits, a CAA tag over 255 bytes, rdata over 65,535 bytes, RFC 1035 §3.2.1). A record that
// does not pack breaks every message it is in: an answer, or a whole zone transfer. The error
// is miekg's pack or unpack error, wrapped.
func CheckWire(rr dns.RR) error {
	buf := make([]byte, 2*dns.Len(rr)+64) // Len is exact; the slack only guards against a miscount
	n, err := dns.PackRR(rr, buf, 0, nil, false)
	if err != nil {
		return fmt.Errorf("does not pack: %w", err)
	}
	if _, _, err := dns.UnpackRR(buf[:n], 0); err != nil {
		return fmt.Errorf("does not unpack: %w", err)
	}
	return nil
}
