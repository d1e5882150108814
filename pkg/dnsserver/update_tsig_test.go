package dnsserver

import (
	"context"
	"encoding/binary"
	"encoding/hex"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/miekg/dns"

	"github.com/dnsplane/dnsplane/pkg/dnswire"
)

// updateSignedAt is an UPDATE of zone example.com. adding one TXT, signed with key's name and
// algorithm, fudge and time signed as given (the client's provider computes the MAC).
func updateSignedAt(key dnswire.TSIGKey, fudge uint16, signed time.Time) *dns.Msg {
	m := new(dns.Msg)
	m.SetUpdate("example.com.")
	rr, _ := dns.NewRR(`_acme-challenge.example.com. 60 IN TXT "tok"`)
	m.Insert([]dns.RR{rr})
	m.SetTsig(key.Name, key.Algorithm, fudge, signed.Unix())
	return m
}

// TestUpdate_TSIGErrorsCarryTheTSIGError pins RFC 8945 §5.2 and §5.3.2 on UPDATEs, over UDP
// and TCP: an unknown key is NOTAUTH with a TSIG RR of error BADKEY, a MAC that does not verify
// NOTAUTH with BADSIG, both unsigned (MAC size 0); a time signed outside the window is NOTAUTH
// with BADTIME, signed with the request's key (the client verifies it), the request's time
// signed and fudge, and the server's time in other data. The window is the client's fudge, at
// most 300 s: a fudge of 65,535 s does not make an UPDATE signed 18 hours ago acceptable. None
// of them reaches the handler; an UPDATE signed 299 s ago with that fudge does.
func TestUpdate_TSIGErrorsCarryTheTSIGError(t *testing.T) {
	key := dnswire.TSIGKey{Name: "acme.", Algorithm: dns.HmacSHA256, Secret: testSecret}
	h := &recordingUpdates{key: key, rcode: dns.RcodeSuccess}
	srv := startServer(t, exampleStore(t, ""), ServerOptions{Updates: h})
	now := time.Now()
	cases := []struct {
		name   string
		key    dnswire.TSIGKey
		fudge  uint16
		signed time.Time
		want   uint16 // the TSIG error; 0 = the handler's answer
	}{
		{"unknown key", dnswire.TSIGKey{Name: "other.", Algorithm: dns.HmacSHA256, Secret: testSecret}, 300, now, dns.RcodeBadKey},
		{"another algorithm", dnswire.TSIGKey{Name: "acme.", Algorithm: dns.HmacSHA512, Secret: testSecret}, 300, now, dns.RcodeBadKey},
		{"another secret", dnswire.TSIGKey{Name: "acme.", Algorithm: dns.HmacSHA256, Secret: otherSecret}, 300, now, dns.RcodeBadSig},
		{"signed 400 s ago, fudge 300", key, 300, now.Add(-400 * time.Second), dns.RcodeBadTime},
		{"signed 400 s ahead, fudge 300", key, 300, now.Add(400 * time.Second), dns.RcodeBadTime},
		{"signed 18 h ago, fudge 65535", key, 65535, now.Add(-18 * time.Hour), dns.RcodeBadTime},
		{"signed 400 s ago, fudge 65535", key, 65535, now.Add(-400 * time.Second), dns.RcodeBadTime},
		{"signed 280 s ago, fudge 65535", key, 65535, now.Add(-280 * time.Second), 0},
		{"signed 60 s ago, fudge 30", key, 30, now.Add(-60 * time.Second), dns.RcodeBadTime},
	}
	for _, proto := range []string{"udp", "tcp"} {
		for _, tc := range cases {
			before := len(h.handed())
			m := updateSignedAt(tc.key, tc.fudge, tc.signed)
			resp, err := exchangeSigned(t, srv.Addr(), proto, tc.key, m)
			reached := len(h.handed()) > before
			if tc.want == 0 {
				if err != nil || resp.Rcode != dns.RcodeSuccess || resp.IsTsig() == nil || !reached {
					t.Errorf("%s %s: rcode %s, client TSIG check %v, reached the handler %v; want the handler's NOERROR, signed",
						proto, tc.name, dns.RcodeToString[resp.Rcode], err, reached)
				}
				continue
			}
			got := resp.IsTsig()
			if resp.Rcode != dns.RcodeNotAuth || got == nil || got.Error != tc.want || reached {
				t.Errorf("%s %s: rcode %s, TSIG %v, reached the handler %v; want NOTAUTH with TSIG error %s",
					proto, tc.name, dns.RcodeToString[resp.Rcode], got, reached, dns.RcodeToString[int(tc.want)])
				continue
			}
			if got.Hdr.Name != tc.key.Name || got.Algorithm != dns.Fqdn(tc.key.Algorithm) || got.OrigId != m.Id {
				t.Errorf("%s %s: TSIG %v, want the request's key, algorithm and ID", proto, tc.name, got)
			}
			if tc.want != dns.RcodeBadTime {
				if got.MACSize != 0 || got.MAC != "" || int64(got.TimeSigned) < now.Unix()-1 || int64(got.TimeSigned) > time.Now().Unix()+1 {
					t.Errorf("%s %s: TSIG %v, want no MAC (unsigned, RFC 8945 §5.3.2), the server's time signed", proto, tc.name, got)
				}
				continue
			}
			server, _ := strconv.ParseUint(got.OtherData, 16, 64)
			if err != nil || got.TimeSigned != uint64(tc.signed.Unix()) || got.Fudge != tc.fudge || got.OtherLen != 6 ||
				int64(server) < now.Unix()-1 || int64(server) > time.Now().Unix()+1 {
				t.Errorf("%s %s: TSIG %v, client check %v; want signed, the request's time signed and fudge, the server's time in other data",
					proto, tc.name, got, err)
			}
		}
	}
}

// exchangeSigned sends m, signed with key, over proto and returns the response and the
// verification of its TSIG against the request's MAC (RFC 8945 §4.3.3, §5.3). It checks the
// MAC itself: miekg/dns's clients never verify a NOTAUTH response (dns.ErrAuth).
func exchangeSigned(t *testing.T, addr, proto string, key dnswire.TSIGKey, m *dns.Msg) (*dns.Msg, error) {
	t.Helper()
	req, reqMAC, err := dns.TsigGenerateWithProvider(m, clientKey(key), "", false)
	if err != nil {
		t.Fatal(err)
	}
	raw, err := exchangeRaw(addr, proto, req, 2*time.Second)
	if err != nil {
		t.Fatalf("%s: %v", proto, err)
	}
	resp := new(dns.Msg)
	if err := resp.Unpack(raw); err != nil {
		t.Fatalf("%s: unpack the response: %v", proto, err)
	}
	tsig := resp.IsTsig()
	if tsig == nil {
		return resp, dns.ErrNoSig
	}
	// The MACed data: the request's MAC, the response without its TSIG RR (original ID,
	// ARCOUNT less one), then the TSIG variables.
	tsigLen := dns.Len(tsig)
	body := append([]byte(nil), raw[:len(raw)-tsigLen]...)
	binary.BigEndian.PutUint16(body[0:], tsig.OrigId)
	binary.BigEndian.PutUint16(body[10:], binary.BigEndian.Uint16(body[10:])-1)
	mac, _ := hex.DecodeString(reqMAC)
	data := binary.BigEndian.AppendUint16(nil, uint16(len(mac)))
	data = append(append(data, mac...), body...)
	data = appendName(data, tsig.Hdr.Name)
	data = binary.BigEndian.AppendUint16(data, dns.ClassANY)
	data = binary.BigEndian.AppendUint32(data, 0)
	data = appendName(data, tsig.Algorithm)
	data = append(data, byte(tsig.TimeSigned>>40), byte(tsig.TimeSigned>>32), byte(tsig.TimeSigned>>24),
		byte(tsig.TimeSigned>>16), byte(tsig.TimeSigned>>8), byte(tsig.TimeSigned))
	data = binary.BigEndian.AppendUint16(data, tsig.Fudge)
	data = binary.BigEndian.AppendUint16(data, tsig.Error)
	other, _ := hex.DecodeString(tsig.OtherData)
	data = binary.BigEndian.AppendUint16(data, uint16(len(other)))
	data = append(data, other...)
	want, _ := dnswire.HMAC(key.Algorithm, key.Secret, data)
	if tsig.MAC == "" || !strings.EqualFold(tsig.MAC, hex.EncodeToString(want)) {
		return resp, dns.ErrSig
	}
	return resp, nil
}

// appendName appends name in canonical wire form (lower case, uncompressed).
func appendName(b []byte, name string) []byte {
	buf := make([]byte, 256)
	n, _ := dns.PackDomainName(dns.CanonicalName(name), buf, 0, nil, false)
	return append(b, buf[:n]...)
}

// blockingUpdates is recordingUpdates whose ServeUpdate waits for release.
type blockingUpdates struct {
	*recordingUpdates
	entered chan struct{}
	release chan struct{}
}

func (u *blockingUpdates) ServeUpdate(ctx context.Context, req *dns.Msg, keyName string) int {
	u.entered <- struct{}{}
	<-u.release
	return u.recordingUpdates.ServeUpdate(ctx, req, keyName)
}

// TestUpdate_AReplayIsAnsweredNotApplied: the same signed UPDATE received again within its
// window (a client's retransmission, or a copy someone replays) reaches the handler once: a
// copy that arrives while the first is in the handler waits for its answer, a later one gets
// it at once, both signed. A new UPDATE with the same content (another ID or time signed, so
// another MAC) reaches the handler again.
func TestUpdate_AReplayIsAnsweredNotApplied(t *testing.T) {
	key := dnswire.TSIGKey{Name: "acme.", Algorithm: dns.HmacSHA256, Secret: testSecret}
	h := &blockingUpdates{recordingUpdates: &recordingUpdates{key: key, rcode: dns.RcodeYXRrset},
		entered: make(chan struct{}, 8), release: make(chan struct{})}
	srv := startServer(t, exampleStore(t, ""), ServerOptions{Updates: h})
	m := updateSignedAt(key, 300, time.Now())
	send := func(proto string, m *dns.Msg) (*dns.Msg, error) {
		c := &dns.Client{Net: proto, Timeout: 5 * time.Second, TsigProvider: clientKey(key)}
		r, _, err := c.Exchange(m.Copy(), srv.Addr())
		return r, err
	}
	type answer struct {
		r   *dns.Msg
		err error
	}
	answers := make(chan answer, 2)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		r, err := send("udp", m)
		answers <- answer{r, err}
	}()
	<-h.entered
	wg.Add(1)
	go func() { // the retransmission, while the first is in the handler
		defer wg.Done()
		r, err := send("tcp", m)
		answers <- answer{r, err}
	}()
	select {
	case <-h.entered:
		t.Fatal("the retransmission reached the handler while the first was in it")
	case <-time.After(300 * time.Millisecond):
	}
	close(h.release)
	wg.Wait()
	close(answers)
	for a := range answers {
		if a.r == nil || a.err != nil || a.r.Rcode != dns.RcodeYXRrset || a.r.IsTsig() == nil {
			t.Fatalf("the UPDATE and its retransmission: %v, %v; want the handler's YXRRSET, signed", a.r, a.err)
		}
	}
	if r, err := send("udp", m); err != nil || r.Rcode != dns.RcodeYXRrset || r.IsTsig() == nil {
		t.Fatalf("a later replay: %v, %v; want the first answer, signed", r, err)
	}
	if got := h.handed(); len(got) != 1 {
		t.Fatalf("the handler was handed %d UPDATEs, want 1", len(got))
	}
	again := m.Copy()
	again.Id = dns.Id()
	again.Extra = nil
	again.SetTsig(key.Name, key.Algorithm, 300, time.Now().Unix())
	if r, err := send("udp", again); err != nil || r.Rcode != dns.RcodeYXRrset {
		t.Fatalf("a new UPDATE of the same content: %v, %v", r, err)
	}
	if got := h.handed(); len(got) != 2 {
		t.Fatalf("the handler was handed %d UPDATEs, want 2 (a new UPDATE is no replay)", len(got))
	}
}
