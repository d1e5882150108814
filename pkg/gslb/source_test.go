package gslb

import (
	"net"
	"net/netip"
	"testing"
)

func TestParseSourceAddrs(t *testing.T) {
	tests := []struct {
		in      string
		want    string
		wantErr bool
	}{
		{in: "", want: ""},
		{in: "127.0.28.1", want: "127.0.28.1"},
		{in: "::1", want: "::1"},
		{in: "192.0.2.1, 2001:db8::1", want: "192.0.2.1,2001:db8::1"},
		{in: "2001:db8::1,192.0.2.1", want: "192.0.2.1,2001:db8::1"},
		{in: "::ffff:192.0.2.1", want: "192.0.2.1"},
		{in: "192.0.2.1,192.0.2.2", wantErr: true},
		{in: "::1,::2", wantErr: true},
		{in: "fe80::1%eth0", wantErr: true},
		{in: "0.0.0.0", wantErr: true},
		{in: "host.example", wantErr: true},
		{in: "192.0.2.1,", wantErr: true},
	}
	for _, tt := range tests {
		got, err := ParseSourceAddrs(tt.in)
		if (err != nil) != tt.wantErr || (err == nil && got.String() != tt.want) {
			t.Errorf("ParseSourceAddrs(%q) = %q, %v; want %q, error %t", tt.in, got, err, tt.want, tt.wantErr)
		}
	}
}

func TestSourceAddrs_DialerPicksTheDestinationsFamily(t *testing.T) {
	s := SourceAddrs{V4: netip.MustParseAddr("127.0.28.1")}
	if d := s.Dialer("udp", "127.0.0.1:53"); d.LocalAddr == nil || d.LocalAddr.(*net.UDPAddr).String() != "127.0.28.1:0" {
		t.Errorf("udp to IPv4: local %v", d.LocalAddr)
	}
	if d := s.Dialer("tcp", "[::ffff:127.0.0.1]:53"); d.LocalAddr == nil || d.LocalAddr.(*net.TCPAddr).String() != "127.0.28.1:0" {
		t.Errorf("tcp to IPv4-mapped: local %v", d.LocalAddr)
	}
	for _, dst := range []string{"[::1]:53", "peer.example:53", "bad"} {
		if d := s.Dialer("tcp", dst); d.LocalAddr != nil {
			t.Errorf("to %s: local %v, want the system's choice", dst, d.LocalAddr)
		}
	}
	// A real query leaves from the source address: the server sees it.
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer pc.Close()
	conn, err := s.Dialer("udp", pc.LocalAddr().String()).Dial("udp", pc.LocalAddr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.Write([]byte("x")); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 8)
	_, from, err := pc.ReadFrom(buf)
	if err != nil {
		t.Fatal(err)
	}
	if got := from.(*net.UDPAddr).AddrPort().Addr(); got != s.V4 {
		t.Fatalf("the datagram came from %s, want %s", got, s.V4)
	}
}
