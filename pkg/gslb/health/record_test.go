package health

import (
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"
)

func addrs(ss ...string) []netip.Addr {
	out := make([]netip.Addr, 0, len(ss))
	for _, s := range ss {
		out = append(out, netip.MustParseAddr(s))
	}
	return out
}

var t0 = time.Unix(1764784800, 0).UTC() // 2025-12-03T18:00:00Z

func TestVerdictsName_BesideLocalTargets(t *testing.T) {
	if got := VerdictsName(" App.Gslb.Test. "); got != "verdicts-app.gslb.test" {
		t.Fatalf("VerdictsName = %q", got)
	}
}

func TestEncode_IsReadableAndRoundTrips(t *testing.T) {
	r := Record{GeoTag: "eu", IssuedAt: t0.Add(900 * time.Millisecond), ValidFor: 90 * time.Second,
		Up:   addrs("2001:db8::1", "192.0.2.2", "192.0.2.1", "192.0.2.1"),
		Down: addrs("198.51.100.7", "2001:db8::2")}
	got, err := Encode(r)
	if err != nil {
		t.Fatal(err)
	}
	want := "dpv1 geo=eu at=1764784800 for=90 u4=wAACAcAAAgI d4=xjNkBw u6=IAENuAAAAAAAAAAAAAAAAQ d6=IAENuAAAAAAAAAAAAAAAAg"
	if got != want {
		t.Fatalf("Encode =\n  %s\nwant\n  %s", got, want)
	}
	back, err := Decode(got, "EU", nil)
	if err != nil {
		t.Fatal(err)
	}
	if !back.IssuedAt.Equal(t0) || back.ValidFor != 90*time.Second || back.GeoTag != "eu" ||
		!slices.Equal(back.Up, addrs("192.0.2.1", "192.0.2.2", "2001:db8::1")) || !slices.Equal(back.Down, addrs("198.51.100.7", "2001:db8::2")) {
		t.Fatalf("Decode = %+v", back)
	}
	for a, v := range map[string]Verdict{"192.0.2.1": Up, "2001:db8::2": Down, "192.0.2.9": Unknown} {
		if got := back.Verdict(netip.MustParseAddr(a)); got != v {
			t.Errorf("Verdict(%s) = %v, want %v", a, got, v)
		}
	}
	empty, err := Encode(Record{GeoTag: "us", IssuedAt: t0, ValidFor: time.Second})
	if err != nil || empty != "dpv1 geo=us at=1764784800 for=1" {
		t.Fatalf("Encode of no verdicts = %q, %v", empty, err)
	}
}

// worstCase is the longest record Encode writes: a 63-byte geo tag, 32 IPv6 targets split
// between up and down, an 11-digit time... (10 digits until 2286) and a 4-digit validity.
func worstCase(t *testing.T) (Record, string) {
	t.Helper()
	var up, down []netip.Addr
	for i := range MaxVerdicts {
		a := netip.AddrFrom16([16]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, byte(i)})
		if i%2 == 0 {
			up = append(up, a)
		} else {
			down = append(down, a)
		}
	}
	r := Record{GeoTag: strings.Repeat("g", MaxGeoTagLen), IssuedAt: time.Unix(99999999999, 0), ValidFor: MaxValidFor, Up: up, Down: down}
	s, err := Encode(r)
	if err != nil {
		t.Fatal(err)
	}
	return r, s
}

// TestEncode_WorstCaseFitsOneUDPAnswer pins the byte budget of docs/api.md, "Health verdicts":
// the longest record, under the longest query name (255 bytes on the wire), packs into one
// answer of at most 1232 bytes (the EDNS0 buffer pkg/gslb's Querier advertises) with its OPT
// record, so no peer needs TCP for 32 targets.
func TestEncode_WorstCaseFitsOneUDPAnswer(t *testing.T) {
	_, s := worstCase(t)
	if len(s) > 800 {
		t.Fatalf("worst-case record is %d bytes, the budget says at most 800", len(s))
	}
	// A 255-byte wire name: 4 labels of 63 bytes plus the root = 4*64+1 = 257 > 255, so take 3
	// labels of 63 and one of 61: 3*64 + 62 + 1 = 255.
	name := "verdicts-" + strings.Repeat("a", 54) + "." + strings.Repeat("b", 63) + "." + strings.Repeat("c", 63) + "." + strings.Repeat("d", 61) + "."
	if l, ok := dns.IsDomainName(name); !ok || len(name)+1 != 255 {
		t.Fatalf("test name: %d labels, %d bytes on the wire", l, len(name)+1)
	}
	q := new(dns.Msg)
	q.SetQuestion(name, dns.TypeTXT)
	resp := new(dns.Msg)
	resp.SetReply(q)
	resp.Authoritative = true
	resp.Answer = []dns.RR{&dns.TXT{Hdr: dns.RR_Header{Name: name, Rrtype: dns.TypeTXT, Class: dns.ClassINET, Ttl: 10}, Txt: splitTXT(s)}}
	resp.SetEdns0(1232, false)
	resp.Compress = true
	wire, err := resp.Pack()
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("worst case: record %d bytes, answer %d bytes", len(s), len(wire))
	if len(wire) > 1232 {
		t.Fatalf("worst-case answer is %d bytes, over 1232", len(wire))
	}
	// And it decodes back from the answer's character-strings.
	v, err := JoinTXT([][]string{resp.Answer[0].(*dns.TXT).Txt})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := Decode(v, strings.Repeat("G", MaxGeoTagLen), nil); err != nil {
		t.Fatal(err)
	}
}

func splitTXT(s string) []string {
	var out []string
	for len(s) > 255 {
		out = append(out, s[:255])
		s = s[255:]
	}
	return append(out, s)
}

func TestEncode_RefusesWhatNoPeerWouldAccept(t *testing.T) {
	ok := Record{GeoTag: "eu", IssuedAt: t0, ValidFor: time.Minute}
	many := make([]netip.Addr, MaxVerdicts+1)
	for i := range many {
		many[i] = netip.AddrFrom4([4]byte{192, 0, 2, byte(i + 1)})
	}
	for name, mod := range map[string]func(*Record){
		"empty geo tag":             func(r *Record) { r.GeoTag = "" },
		"geo tag with a space":      func(r *Record) { r.GeoTag = "e u" },
		"geo tag with =":            func(r *Record) { r.GeoTag = "e=u" },
		"long geo tag":              func(r *Record) { r.GeoTag = strings.Repeat("g", 64) },
		"no time":                   func(r *Record) { r.IssuedAt = time.Time{} },
		"validity below 1s":         func(r *Record) { r.ValidFor = 0 },
		"validity over MaxValidFor": func(r *Record) { r.ValidFor = MaxValidFor + time.Second },
		"33 targets":                func(r *Record) { r.Up = many },
		"unspecified":               func(r *Record) { r.Down = addrs("0.0.0.0") },
		"IPv4-mapped":               func(r *Record) { r.Up = addrs("::ffff:192.0.2.1") },
		"zone":                      func(r *Record) { r.Up = addrs("fe80::1%eth0") },
		"zero address":              func(r *Record) { r.Up = []netip.Addr{{}} },
		"both up and down":          func(r *Record) { r.Up, r.Down = addrs("192.0.2.1"), addrs("192.0.2.1") },
	} {
		r := ok
		mod(&r)
		if s, err := Encode(r); err == nil {
			t.Errorf("%s: Encode = %q, want an error", name, s)
		}
	}
}

func TestDecode_RefusesGarbage(t *testing.T) {
	const head = "dpv1 geo=eu at=1764784800 for=90"
	for _, tc := range []struct{ name, value string }{
		{"empty", ""},
		{"other version", "dpv2 geo=eu at=1764784800 for=90"},
		{"missing for", "dpv1 geo=eu at=1764784800"},
		{"double space", "dpv1  geo=eu at=1764784800 for=90"},
		{"trailing space", head + " "},
		{"tab", "dpv1\tgeo=eu at=1764784800 for=90"},
		{"fields swapped", "dpv1 at=1764784800 geo=eu for=90"},
		{"other geo tag", "dpv1 geo=us at=1764784800 for=90"},
		{"empty geo tag", "dpv1 geo= at=1764784800 for=90"},
		{"time zero", "dpv1 geo=eu at=0 for=90"},
		{"time with leading zero", "dpv1 geo=eu at=01764784800 for=90"},
		{"negative time", "dpv1 geo=eu at=-1 for=90"},
		{"time of 12 digits", "dpv1 geo=eu at=176478480000 for=90"},
		{"time with a sign", "dpv1 geo=eu at=+1764784800 for=90"},
		{"validity 0", "dpv1 geo=eu at=1764784800 for=0"},
		{"validity over three hours", "dpv1 geo=eu at=1764784800 for=10801"},
		{"validity in hex", "dpv1 geo=eu at=1764784800 for=0x5a"},
		{"unknown field", head + " x4=wAACAQ"},
		{"field without =", head + " u4"},
		{"empty list", head + " u4="},
		{"lists out of order", head + " d4=wAACAg u4=wAACAQ"},
		{"list repeated", head + " u4=wAACAQ u4=wAACAg"},
		{"padding", head + " u4=wAACAQ=="},
		{"not base64", head + " u4=wAAC*Q"},
		{"URL alphabet", head + " u6=IAENuAAAAAAAAAAAAAAAA_"},
		{"non-zero stray bits", head + " u4=wAACAR"},
		{"CR inside a list (encoding/base64 skips it)", head + " u4=wAA\rCAQ"},
		{"LF inside a list", head + " u4=wAACAQ\n"},
		{"3 bytes in an IPv4 list", head + " u4=wAAC"},
		{"IPv4 in an IPv6 list", head + " u6=wAACAQ"},
		{"unsorted", head + " u4=wAACAsAAAgE"},
		{"duplicate", head + " u4=wAACAcAAAgE"},
		{"unspecified", head + " d4=AAAAAA"},
		{"IPv4-mapped IPv6", head + " u6=AAAAAAAAAAAAAP//wAACAQ"},
		{"both up and down", head + " u4=wAACAQ d4=wAACAQ"},
		{"oversized", head + " u4=" + strings.Repeat("A", MaxRecordLen)},
		{"NUL", "dpv1 geo=e\x00u at=1764784800 for=90"},
	} {
		if r, err := Decode(tc.value, "eu", nil); err == nil || !errors.Is(err, ErrBadRecord) {
			t.Errorf("%s: Decode(%q) = %+v, %v; want ErrBadRecord", tc.name, tc.value, r, err)
		}
	}
	// 33 targets.
	raw := make([]byte, 0, 33*4)
	for i := range 33 {
		raw = append(raw, 192, 0, 2, byte(i+1))
	}
	if _, err := Decode(head+" u4="+b64.EncodeToString(raw), "eu", nil); !errors.Is(err, ErrBadRecord) || !strings.Contains(err.Error(), "more than 32") {
		t.Errorf("33 targets: %v", err)
	}
}

func TestDecode_KeepsOnlyKnownTargets(t *testing.T) {
	s, err := Encode(Record{GeoTag: "ap", IssuedAt: t0, ValidFor: time.Minute, Up: addrs("192.0.2.1", "2001:db8::1"), Down: addrs("192.0.2.2", "192.0.2.3")})
	if err != nil {
		t.Fatal(err)
	}
	known := map[netip.Addr]bool{netip.MustParseAddr("192.0.2.1"): true, netip.MustParseAddr("192.0.2.3"): true}
	r, err := Decode(s, "ap", known)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(r.Up, addrs("192.0.2.1")) || !slices.Equal(r.Down, addrs("192.0.2.3")) {
		t.Fatalf("Decode with known = up %v down %v", r.Up, r.Down)
	}
}

func TestJoinTXT_OneRecordOnly(t *testing.T) {
	if v, err := JoinTXT([][]string{{"dpv1 geo=eu", " at=1 for=1"}}); err != nil || v != "dpv1 geo=eu at=1 for=1" {
		t.Fatalf("JoinTXT = %q, %v", v, err)
	}
	for name, rrs := range map[string][][]string{
		"none": nil, "two": {{"a"}, {"b"}}, "oversized": {{strings.Repeat("a", 255), strings.Repeat("a", 255), strings.Repeat("a", 255), strings.Repeat("a", 255), strings.Repeat("a", 5)}},
	} {
		if _, err := JoinTXT(rrs); !errors.Is(err, ErrBadRecord) {
			t.Errorf("%s: JoinTXT error %v, want ErrBadRecord", name, err)
		}
	}
}

// TestFreshness: first sight by the wall-clock rule under the skew, then by the record time's
// advance on the reader's clock; the reader's cap bounds the validity; offsets are estimated.
func TestFreshness(t *testing.T) {
	skew := 30 * time.Second
	r := Record{GeoTag: "eu", IssuedAt: t0, ValidFor: 90 * time.Second}
	seenAt := func(at, first time.Time, adv bool) Sighting { return Sighting{At: at, FirstSeen: first, Advanced: adv} }
	for _, tc := range []struct {
		name      string
		r         Record
		prev      *Sighting
		now       time.Time
		cap       time.Duration
		want      error
		wantAdv   bool
		wantFirst time.Time
		offset    time.Duration
		// the lower track, and the highest time when it is not r's
		wantAt, wantBelow, wantBelowSeen time.Time
		wantBelowAdv                     bool
	}{
		{name: "first sight, now", r: r, now: t0, wantFirst: t0},
		{name: "first sight, writer 30 s ahead", r: r, now: t0.Add(-30 * time.Second), wantFirst: t0.Add(-30 * time.Second), offset: 30 * time.Second},
		{name: "first sight, writer 31 s ahead", r: r, now: t0.Add(-31 * time.Second), want: ErrFromFuture, wantFirst: t0.Add(-31 * time.Second), offset: 31 * time.Second},
		{name: "first sight, 90 s valid + 30 s skew", r: r, now: t0.Add(120 * time.Second), wantFirst: t0.Add(120 * time.Second)},
		{name: "first sight, past validity and skew", r: r, now: t0.Add(121 * time.Second), want: ErrStale, wantFirst: t0.Add(121 * time.Second)},
		{name: "first sight, the reader's cap", r: Record{GeoTag: "eu", IssuedAt: t0, ValidFor: time.Hour}, now: t0.Add(121 * time.Second), cap: 90 * time.Second, want: ErrStale, wantFirst: t0.Add(121 * time.Second)},
		{name: "same time, not advanced, seen 91 s ago", r: r, prev: ptr(seenAt(t0, t0.Add(-20*time.Second), false)), now: t0.Add(71 * time.Second), want: ErrStale, wantFirst: t0.Add(-20 * time.Second)},
		{name: "advanced, 10 minutes ahead", r: Record{GeoTag: "eu", IssuedAt: t0.Add(10 * time.Minute), ValidFor: 90 * time.Second}, prev: ptr(seenAt(t0.Add(9*time.Minute), t0.Add(-time.Minute), true)), now: t0, wantAdv: true, wantFirst: t0, offset: 10 * time.Minute},
		{name: "frozen since its advance, within validity", r: r, prev: ptr(seenAt(t0, t0.Add(-time.Hour), true)), now: t0.Add(-time.Hour + 90*time.Second), wantAdv: true, wantFirst: t0.Add(-time.Hour), offset: time.Hour},
		{name: "frozen since its advance, past validity", r: r, prev: ptr(seenAt(t0, t0.Add(-time.Hour), true)), now: t0.Add(-time.Hour + 91*time.Second), want: ErrStale, wantAdv: true, wantFirst: t0.Add(-time.Hour), offset: time.Hour},
		{name: "time went back: the lower track's first sight", r: r, prev: ptr(seenAt(t0.Add(time.Minute), t0, true)), now: t0.Add(10 * time.Second),
			wantAdv: true, wantFirst: t0, wantAt: t0.Add(time.Minute), wantBelow: t0, wantBelowSeen: t0.Add(10 * time.Second)},
		{name: "clock stepped back an hour: advances on the lower track", r: r, prev: ptr(lower(seenAt(t0.Add(time.Hour), t0, true), t0.Add(-time.Minute), t0, false)), now: t0.Add(time.Hour),
			wantAdv: true, wantFirst: t0, wantAt: t0.Add(time.Hour), wantBelow: t0, wantBelowSeen: t0.Add(time.Hour), wantBelowAdv: true, offset: -time.Hour},
		{name: "below both tracked times: stale, tracking unchanged", r: r, prev: ptr(lower(seenAt(t0.Add(time.Hour), t0, true), t0.Add(time.Minute), t0, false)), now: t0.Add(121 * time.Second), want: ErrStale,
			wantAdv: true, wantFirst: t0, wantAt: t0.Add(time.Hour), wantBelow: t0.Add(time.Minute), wantBelowSeen: t0},
		{name: "below both tracked times, within the wall-clock rule: never counts", r: r, prev: ptr(lower(seenAt(t0.Add(time.Hour), t0, true), t0.Add(time.Minute), t0, false)), now: t0.Add(10 * time.Second), want: ErrStale,
			wantAdv: true, wantFirst: t0, wantAt: t0.Add(time.Hour), wantBelow: t0.Add(time.Minute), wantBelowSeen: t0},
		{name: "the highest time again: the lower track is kept", r: r, prev: ptr(lower(seenAt(t0, t0, true), t0.Add(-time.Minute), t0, false)), now: t0.Add(10 * time.Second),
			wantAdv: true, wantFirst: t0, wantBelow: t0.Add(-time.Minute), wantBelowSeen: t0},
	} {
		var prev Sighting
		if tc.prev != nil {
			prev = *tc.prev
		}
		f := Freshness(tc.r, prev, tc.prev != nil, tc.now, skew, tc.cap)
		if !errors.Is(f.Err, tc.want) || (tc.want == nil) != (f.Err == nil) {
			t.Errorf("%s: %v, want %v", tc.name, f.Err, tc.want)
		}
		if tc.wantAt.IsZero() {
			tc.wantAt = tc.r.IssuedAt
		}
		want := lower(seenAt(tc.wantAt, tc.wantFirst, tc.wantAdv), tc.wantBelow, tc.wantBelowSeen, tc.wantBelowAdv)
		if !sameSighting(f.Sighting, want) || f.Offset != tc.offset {
			t.Errorf("%s: sighting %+v offset %s; want %+v offset %s", tc.name, f.Sighting, f.Offset, want, tc.offset)
		}
	}
}

func ptr[T any](v T) *T { return &v }

func lower(s Sighting, below, seen time.Time, adv bool) Sighting {
	s.Below, s.BelowSeen, s.BelowAdvanced = below, seen, adv
	return s
}

func sameSighting(a, b Sighting) bool {
	return a.At.Equal(b.At) && a.FirstSeen.Equal(b.FirstSeen) && a.Advanced == b.Advanced &&
		a.Below.Equal(b.Below) && a.BelowSeen.Equal(b.BelowSeen) && a.BelowAdvanced == b.BelowAdvanced
}

// FuzzDecode: Decode never panics, whatever a peer sends, and every record it accepts has
// exactly one encoding: Encode gives back the input byte for byte.
func FuzzDecode(f *testing.F) {
	f.Add("dpv1 geo=eu at=1764784800 for=90 u4=wAACAcAAAgI d4=xjNkBw u6=IAENuAAAAAAAAAAAAAAAAQ d6=IAENuAAAAAAAAAAAAAAAAg")
	f.Add("dpv1 geo=eu at=1 for=1")
	f.Add("dpv1 geo=eu at=1764784800 for=90 u4=wAACAQ=")
	f.Add("dpv1 geo=eu at=1764784800 for=90 u6=AAAAAAAAAAAAAP//wAACAQ")
	f.Fuzz(func(t *testing.T, s string) {
		r, err := Decode(s, "eu", nil)
		if err != nil {
			if !errors.Is(err, ErrBadRecord) {
				t.Fatalf("Decode(%q) error does not wrap ErrBadRecord: %v", s, err)
			}
			return
		}
		again, err := Encode(r)
		if err != nil {
			t.Fatalf("Decode(%q) accepted %+v, which Encode refuses: %v", s, r, err)
		}
		if again != s {
			t.Fatalf("not canonical:\n  in  %q\n  out %q", s, again)
		}
		if n := len(r.Up) + len(r.Down); n > MaxVerdicts {
			t.Fatal(fmt.Sprint("accepted ", n, " targets"))
		}
	})
}

func TestValidity(t *testing.T) {
	for _, tc := range []struct{ probe, reconcile, want time.Duration }{
		{10 * time.Second, 30 * time.Second, 90 * time.Second},
		{60 * time.Second, 30 * time.Second, 180 * time.Second},
		{0, 0, time.Second},
		{1500 * time.Millisecond, 0, 4 * time.Second},
		{time.Hour, 0, 3 * time.Hour},
		{2 * time.Hour, 0, MaxValidFor},
	} {
		if got := Validity(tc.probe, tc.reconcile); got != tc.want {
			t.Errorf("Validity(%s, %s) = %s, want %s", tc.probe, tc.reconcile, got, tc.want)
		}
	}
}

func TestRepublish_OnChangeOrAfterAThird(t *testing.T) {
	pub := Record{GeoTag: "eu", IssuedAt: t0, ValidFor: 90 * time.Second, Up: addrs("192.0.2.1"), Down: addrs("192.0.2.2")}
	same := pub
	same.Up = addrs("192.0.2.1", "192.0.2.1")
	if Republish(pub, same, t0.Add(29*time.Second)) {
		t.Error("republished unchanged verdicts before a third of the validity")
	}
	if !Republish(pub, same, t0.Add(30*time.Second)) {
		t.Error("did not refresh after a third of the validity")
	}
	moved := pub
	moved.Up, moved.Down = addrs("192.0.2.1", "192.0.2.2"), nil
	if !Republish(pub, moved, t0) {
		t.Error("did not republish a changed verdict")
	}
}
