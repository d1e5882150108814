package health

import (
	"encoding/base64"
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/dnsplane/dnsplane/pkg/dnswire"
)

// Record format bounds (docs/api.md, "Health verdicts").
const (
	// RecordVersion is the first token of every verdict record.
	RecordVersion = "dpv1"
	// MaxVerdicts is the most targets one record judges: 32 IPv6 targets with a 63-byte geo
	// tag and a 255-byte query name still fit one 1232-byte UDP answer.
	MaxVerdicts = 32
	// MaxRecordLen is the longest record value accepted, in bytes (the TXT value as one
	// string, before it is split into 255-byte character-strings). Encode never writes more
	// than 800.
	MaxRecordLen = 1024
	// MaxGeoTagLen is the longest geo tag a record may carry (the API's primaryGeoTag bound).
	MaxGeoTagLen = 63
	// MaxValidFor is the longest validity a record may claim: three times the API's longest
	// probe interval (healthCheck.intervalSeconds, at most 3600), so that Validity grants
	// three probe periods at every interval the API accepts.
	MaxValidFor = 3 * time.Hour
)

// ErrBadRecord: a peer's verdict record was refused; the wrapping error says why.
var ErrBadRecord = errors.New("bad gslb verdict record")

// VerdictsName returns the name under which a cluster publishes its verdicts on every target of
// host, and which peers query for TXT: "verdicts-" prefixed to host's first label, e.g.
// "verdicts-app.gslb.test" for "app.gslb.test" (beside gslb.LocalTargetsName's
// "localtargets-app.gslb.test"). Canonical: lower-case, without a trailing dot.
func VerdictsName(host string) string {
	return "verdicts-" + dnswire.Dotless(host)
}

// Record is one cluster's verdicts on the targets of one host.
type Record struct {
	// GeoTag of the cluster that wrote it.
	GeoTag string
	// IssuedAt is when the writer computed the verdicts, by its clock, in whole seconds.
	IssuedAt time.Time
	// ValidFor is how long after IssuedAt readers may count the verdicts, whole seconds,
	// 1 s to MaxValidFor.
	ValidFor time.Duration
	// Up and Down are the targets the writer's probes call up and down (a target it has no
	// verdict for yet is in neither). Encode sorts them; Decode returns them sorted.
	Up, Down []netip.Addr
}

// Verdict returns the record's verdict on a: Up, Down or Unknown when it is in neither list.
// A target in both lists (which Decode refuses) is Down.
func (r Record) Verdict(a netip.Addr) Verdict {
	switch {
	case slices.Contains(r.Down, a):
		return Down
	case slices.Contains(r.Up, a):
		return Up
	}
	return Unknown
}

var (
	// ErrStale: a verdict record is older than its validity.
	ErrStale = errors.New("stale verdict record")
	// ErrFromFuture: a verdict record's time is ahead of ours by more than the skew allowed.
	ErrFromFuture = errors.New("verdict record from the future")
)

// b64 is the payload encoding: standard base64 without padding (RFC 4648 §4, §3.2), strict (no
// stray bits), so that with newlines refused before it (encoding/base64 skips CR and LF even
// when strict; FuzzDecode found "u4=0\r0000A" read as "u4=00000A") every payload has one
// encoding.
var b64 = base64.RawStdEncoding.Strict()

// list is one payload field: its key and the address family it holds.
type list struct {
	key  string
	size int // bytes per address
	up   bool
}

// fields in the order they appear in a record.
var fields = [4]list{{"u4", 4, true}, {"d4", 4, false}, {"u6", 16, true}, {"d6", 16, false}}

// Encode returns r as one TXT value:
//
//	dpv1 geo=<geo tag> at=<Unix seconds> for=<seconds>[ u4=<b64>][ d4=<b64>][ u6=<b64>][ d6=<b64>]
//
// u4/d4 hold the up/down IPv4 targets as 4-byte addresses, u6/d6 the IPv6 ones as 16 bytes,
// each list sorted and concatenated, then base64 (RFC 4648, standard alphabet, no padding); an
// empty list is left out. IssuedAt is truncated to the second.
//
// Errors: a geo tag that is empty, longer than MaxGeoTagLen or holds a space, '=' or a
// non-printable byte; IssuedAt not after the Unix epoch; ValidFor outside 1 s to MaxValidFor;
// more than MaxVerdicts targets; an invalid or unspecified address, an IPv4-mapped IPv6
// address, or a target both up and down.
func Encode(r Record) (string, error) {
	if err := checkGeoTag(r.GeoTag); err != nil {
		return "", err
	}
	at := r.IssuedAt.Unix()
	if at <= 0 {
		return "", fmt.Errorf("verdict record: issued at %s, before the Unix epoch", r.IssuedAt)
	}
	if r.ValidFor < time.Second || r.ValidFor > MaxValidFor {
		return "", fmt.Errorf("verdict record: valid for %s, want 1s to %s", r.ValidFor, MaxValidFor)
	}
	up, down := sortAddrs(r.Up), sortAddrs(r.Down)
	if n := len(up) + len(down); n > MaxVerdicts {
		return "", fmt.Errorf("verdict record: %d targets, at most %d", n, MaxVerdicts)
	}
	for _, a := range append(slices.Clone(up), down...) {
		if err := checkAddr(a); err != nil {
			return "", fmt.Errorf("verdict record: %w", err)
		}
	}
	for _, a := range down {
		if _, both := slices.BinarySearchFunc(up, a, netip.Addr.Compare); both {
			return "", fmt.Errorf("verdict record: target %s is both up and down", a)
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s geo=%s at=%d for=%d", RecordVersion, r.GeoTag, at, int64(r.ValidFor/time.Second))
	for _, f := range fields {
		src := down
		if f.up {
			src = up
		}
		var raw []byte
		for _, a := range src {
			if (f.size == 4) == a.Is4() {
				raw = append(raw, a.AsSlice()...)
			}
		}
		if len(raw) > 0 {
			b.WriteString(" " + f.key + "=" + b64.EncodeToString(raw))
		}
	}
	return b.String(), nil
}

// JoinTXT returns the value of the one TXT record of a verdict answer: its character-strings
// joined (RFC 7208 §3.3 style). rrs holds each TXT record's character-strings. Errors (wrapping
// ErrBadRecord): no record, or more than one.
func JoinTXT(rrs [][]string) (string, error) {
	if len(rrs) != 1 {
		return "", fmt.Errorf("%d TXT records, want exactly 1: %w", len(rrs), ErrBadRecord)
	}
	n := 0
	for _, s := range rrs[0] {
		n += len(s)
	}
	if n > MaxRecordLen {
		return "", fmt.Errorf("oversized: %d bytes, at most %d: %w", n, MaxRecordLen, ErrBadRecord)
	}
	return strings.Join(rrs[0], ""), nil
}

// DecodeTXT decodes a peer's verdict answer: rrs is gslb.Querier.QueryTXT's result for
// VerdictsName(host). No record (NXDOMAIN or NODATA) is (nil, nil): the member answers without
// a verdict record, so it abstains (a Member without a Record; it still counts in the
// membership). Otherwise the one record is JoinTXT'ed
// and Decode'd with geoTag and known. Errors wrap ErrBadRecord (JoinTXT's and Decode's).
func DecodeTXT(rrs [][]string, geoTag string, known map[netip.Addr]bool) (*Record, error) {
	if len(rrs) == 0 {
		return nil, nil
	}
	value, err := JoinTXT(rrs)
	if err != nil {
		return nil, fmt.Errorf("verdict record: %w", err)
	}
	r, err := Decode(value, geoTag, known)
	if err != nil {
		return nil, err
	}
	return &r, nil
}

// Decode parses a peer's verdict record (Encode's format) and checks it strictly: at most
// MaxRecordLen bytes, exactly the tokens in Encode's order separated by single spaces, the
// version RecordVersion, the geo tag equal to geoTag (case-insensitively: the peer asked), a
// positive issued time of at most 11 digits and a validity of 1 s to MaxValidFor, both without
// leading zeros, each list present only when not empty, in strict base64, a whole number of
// addresses of its family, sorted without duplicates, no unspecified or IPv4-mapped address,
// no target both up and down, and at most MaxVerdicts targets in all.
//
// known, when not nil, keeps only the targets it holds: a verdict on a target this cluster does
// not serve for the host is dropped, not refused (the peer may know a cluster we cannot reach).
//
// Errors wrap ErrBadRecord and name the first defect. Freshness is not checked here (see
// Freshness).
func Decode(value, geoTag string, known map[netip.Addr]bool) (Record, error) {
	bad := func(format string, args ...any) (Record, error) {
		return Record{}, fmt.Errorf("verdict record: "+format+": %w", append(args, ErrBadRecord)...)
	}
	if len(value) > MaxRecordLen {
		return bad("oversized: %d bytes, at most %d", len(value), MaxRecordLen)
	}
	toks := strings.Split(value, " ")
	if len(toks) < 4 || toks[0] != RecordVersion {
		return bad("want %q followed by geo=, at= and for=", RecordVersion)
	}
	geo, ok := strings.CutPrefix(toks[1], "geo=")
	if !ok || checkGeoTag(geo) != nil {
		return bad("token 2 %.80q: want geo=<geo tag>", toks[1])
	}
	if !strings.EqualFold(geo, geoTag) {
		return bad("written by geo tag %q, asked %q", geo, geoTag)
	}
	at, ok := number(toks[2], "at=", 11)
	if !ok || at <= 0 {
		return bad("token 3 %.80q: want at=<Unix seconds>", toks[2])
	}
	validFor, ok := number(toks[3], "for=", 5)
	if !ok || validFor < 1 || validFor > int64(MaxValidFor/time.Second) {
		return bad("token 4 %.80q: want for=<1 to %d seconds>", toks[3], int64(MaxValidFor/time.Second))
	}
	r := Record{GeoTag: geo, IssuedAt: time.Unix(at, 0).UTC(), ValidFor: time.Duration(validFor) * time.Second}
	next := 0
	total := 0
	for _, tok := range toks[4:] {
		key, payload, _ := strings.Cut(tok, "=")
		i := slices.IndexFunc(fields[:], func(f list) bool { return f.key == key })
		if i < next {
			return bad("token %.80q: unknown, repeated or out of order (want u4, d4, u6, d6)", tok)
		}
		next = i + 1
		f := fields[i]
		raw, err := b64.DecodeString(payload)
		if err != nil || strings.ContainsAny(payload, "\r\n") || len(raw) == 0 || len(raw)%f.size != 0 {
			return bad("list %s: want a non-empty base64 list of %d-byte addresses", f.key, f.size)
		}
		total += len(raw) / f.size
		if total > MaxVerdicts {
			return bad("more than %d targets", MaxVerdicts)
		}
		var prev netip.Addr
		for off := 0; off < len(raw); off += f.size {
			a, _ := netip.AddrFromSlice(raw[off : off+f.size])
			if err := checkAddr(a); err != nil {
				return bad("list %s: %v", f.key, err)
			}
			if prev.IsValid() && prev.Compare(a) >= 0 {
				return bad("list %s: %s after %s: not sorted or repeated", f.key, a, prev)
			}
			prev = a
			if f.up {
				r.Up = append(r.Up, a)
			} else {
				r.Down = append(r.Down, a)
			}
		}
	}
	// Up lists come before down lists of the same family, so each list is sorted; across
	// families IPv4 sorts before IPv6, so r.Up and r.Down are sorted too.
	for _, a := range r.Down {
		if _, both := slices.BinarySearchFunc(r.Up, a, netip.Addr.Compare); both {
			return bad("target %s is both up and down", a)
		}
	}
	if known != nil {
		keep := func(a netip.Addr) bool { return !known[a] }
		r.Up = slices.DeleteFunc(r.Up, keep)
		r.Down = slices.DeleteFunc(r.Down, keep)
	}
	return r, nil
}

// number parses tok as prefix followed by 1 to maxDigits decimal digits without a leading zero.
func number(tok, prefix string, maxDigits int) (int64, bool) {
	s, ok := strings.CutPrefix(tok, prefix)
	if !ok || s == "" || len(s) > maxDigits || (s[0] == '0' && len(s) > 1) {
		return 0, false
	}
	for _, c := range []byte(s) {
		if c < '0' || c > '9' {
			return 0, false
		}
	}
	n, err := strconv.ParseInt(s, 10, 64)
	return n, err == nil
}

func checkGeoTag(g string) error {
	if g == "" || len(g) > MaxGeoTagLen {
		return fmt.Errorf("verdict record: geo tag %.80q: want 1 to %d bytes", g, MaxGeoTagLen)
	}
	for _, c := range []byte(g) {
		if c <= ' ' || c > '~' || c == '=' {
			return fmt.Errorf("verdict record: geo tag %q: only printable ASCII without space or '='", g)
		}
	}
	return nil
}

func checkAddr(a netip.Addr) error {
	switch {
	case !a.IsValid():
		return errors.New("invalid address")
	case a.IsUnspecified():
		return fmt.Errorf("unspecified address %s", a)
	case a.Is4In6():
		return fmt.Errorf("IPv4-mapped IPv6 address %s", a)
	case a.Zone() != "":
		return fmt.Errorf("address %s with a zone", a)
	}
	return nil
}

// sortAddrs returns a sorted, deduplicated copy of as.
func sortAddrs(as []netip.Addr) []netip.Addr {
	out := slices.Clone(as)
	slices.SortFunc(out, netip.Addr.Compare)
	return slices.Compact(out)
}

// Validity returns the ValidFor a writer grants its records: three times the longer of the
// probe interval (healthCheck.intervalSeconds) and the reconcile interval (--gslb-interval),
// truncated to whole seconds, within 1 s and MaxValidFor. Three periods let one lost write or
// one lost query pass without the record going stale.
func Validity(probeInterval, reconcileInterval time.Duration) time.Duration {
	v := (3 * max(probeInterval, reconcileInterval)).Truncate(time.Second)
	return min(max(v, time.Second), MaxValidFor)
}

// Republish reports whether next should replace the published record at now: the verdicts or
// the geo tag differ, or a third of the published record's validity has passed (so that readers
// always hold a record with two thirds of its validity left, give or take one period).
func Republish(published, next Record, now time.Time) bool {
	if published.GeoTag != next.GeoTag || !slices.Equal(sortAddrs(published.Up), sortAddrs(next.Up)) ||
		!slices.Equal(sortAddrs(published.Down), sortAddrs(next.Down)) {
		return true
	}
	return now.Sub(published.IssuedAt) >= published.ValidFor/3
}

// Fresh is the outcome of Freshness.
type Fresh struct {
	// Sighting is the reader's tracking of the record after this sight (for Memory.Seen).
	Sighting Sighting
	// Err is nil when the record counts, else why not (wrapping ErrStale or ErrFromFuture).
	Err error
	// Offset is the record's time minus the reader's clock when the record's time was first
	// seen: an estimate of the writer's clock offset (plus the exchange's delay), 0 when the
	// record's time is in the past and never seen to advance (a stale record, not a clock).
	Offset time.Duration
}

// Freshness judges one member's record r at now by the reader's clock, given prev, the
// reader's tracking of that member (had: there is one). The validity is v = min(r.ValidFor,
// validityCap) (validityCap <= 0: MaxValidFor). The reader tracks two times: the highest record
// time it has seen (Sighting.At) and the highest of the times below it seen since (Below).
//
// A record counts only when:
//
//   - its time advances a track (past the highest time, or past the lower track's time while
//     below the highest): fresh; tracked from now (by advance). An advance of the highest
//     time starts the lower track over;
//   - its time equals a tracked time (the lower track starts at the first time seen below the
//     highest): fresh while now - that time's first sight <= v, and, when that time was never
//     reached by an advance, under the wall-clock rule at - skew <= now <= at + v + skew too.
//     A dead member's frozen record stops counting one validity after it stopped advancing,
//     whatever the two clocks say;
//   - it is the first sight ever of the member (no tracking, after a (re)start): the
//     wall-clock rule.
//
// Reading the highest time again keeps the lower track, and a time below both tracked times
// never counts (the tracking unchanged): old records read again (servers of a dead member's
// zone that serve different versions, a replay) never get a new first sight, so they stop
// counting one validity after they were first seen. A writer whose clock stepped back
// advances on the lower track and counts again from its second record.
//
// A member whose clock is off by more than skew is counted once its time advances; its offset
// is reported either way.
func Freshness(r Record, prev Sighting, had bool, now time.Time, skew, validityCap time.Duration) Fresh {
	if validityCap <= 0 {
		validityCap = MaxValidFor
	}
	j := markJudge{now: now, skew: skew, v: min(r.ValidFor, validityCap)}
	at := r.IssuedAt
	top := mark{At: prev.At, FirstSeen: prev.FirstSeen, Advanced: prev.Advanced}
	below := mark{At: prev.Below, FirstSeen: prev.BelowSeen, Advanced: prev.BelowAdvanced}
	switch {
	case !had || at.After(prev.At): // first sight, or an advance: the lower track starts over
		top, f := j.judge(at, top, had)
		return f.with(top, mark{})
	case at.Equal(prev.At): // the highest time again: the lower track is kept
		top, f := j.judge(at, top, true)
		return f.with(top, below)
	case prev.Below.IsZero() || !at.Before(prev.Below):
		below, f := j.judge(at, below, !prev.Below.IsZero())
		return f.with(top, below)
	default: // below both tracked times: never counts, the tracking unchanged
		f := Fresh{Err: fmt.Errorf("record time %s below both tracked times (%s, %s): an old record read again: %w",
			at.UTC().Format(time.RFC3339), prev.Below.UTC().Format(time.RFC3339), prev.At.UTC().Format(time.RFC3339), ErrStale)}
		return f.with(top, below)
	}
}

// mark is one tracked record time and when the reader first saw it.
type mark struct {
	At, FirstSeen time.Time
	Advanced      bool
}

// markJudge judges record times against one mark at now with the validity v.
type markJudge struct {
	now     time.Time
	skew, v time.Duration
}

// judge judges the record time at against m (had: m is set) and returns the mark after it.
func (j markJudge) judge(at time.Time, m mark, had bool) (mark, Fresh) {
	now, v := j.now, j.v
	switch {
	case had && at.After(m.At):
		return mark{At: at, FirstSeen: now, Advanced: true}, Fresh{Offset: at.Sub(now)}
	case had && at.Equal(m.At) && m.Advanced:
		f := Fresh{Offset: at.Sub(m.FirstSeen)}
		if age := now.Sub(m.FirstSeen); age > v {
			f.Err = fmt.Errorf("record time %s not advanced for %s, valid for %s: %w", at.UTC().Format(time.RFC3339), age.Round(time.Second), v, ErrStale)
		}
		return m, f
	}
	s := mark{At: at, FirstSeen: now}
	if had && at.Equal(m.At) {
		s = m
	}
	var f Fresh
	if d := at.Sub(now); d > 0 {
		f.Offset = at.Sub(s.FirstSeen)
	}
	switch {
	case at.Sub(now) > j.skew:
		f.Err = fmt.Errorf("issued %s in the future, more than the %s clock skew allowed (counted once its time advances): %w",
			at.Sub(now).Round(time.Second), j.skew, ErrFromFuture)
	case now.Sub(at) > v+j.skew:
		f.Err = fmt.Errorf("issued %s ago, valid for %s (+%s skew): %w", now.Sub(at).Round(time.Second), v, j.skew, ErrStale)
	case now.Sub(s.FirstSeen) > v:
		f.Err = fmt.Errorf("record time %s first seen %s ago, valid for %s: %w", at.UTC().Format(time.RFC3339), now.Sub(s.FirstSeen).Round(time.Second), v, ErrStale)
	}
	return s, f
}

// with sets f's Sighting from the two tracked marks.
func (f Fresh) with(top, below mark) Fresh {
	f.Sighting = Sighting{At: top.At, FirstSeen: top.FirstSeen, Advanced: top.Advanced,
		Below: below.At, BelowSeen: below.FirstSeen, BelowAdvanced: below.Advanced}
	return f
}
