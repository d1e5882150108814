package gslb

import (
	"errors"
	"net/netip"
	"reflect"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	dnsv1 "github.com/dnsplane/dnsplane/apis/v1alpha1"
	"github.com/dnsplane/dnsplane/pkg/gslb"
	"github.com/dnsplane/dnsplane/pkg/gslb/health"
)

func addrs(ss ...string) []netip.Addr {
	out := make([]netip.Addr, len(ss))
	for i, s := range ss {
		out[i] = netip.MustParseAddr(s)
	}
	return out
}

// TestHealthReasons_EqualTheAPIs: the reasons the pure core writes into status.targets are the
// API's documented constants.
func TestHealthReasons_EqualTheAPIs(t *testing.T) {
	pairs := map[string]string{
		health.ReasonHealthy:           dnsv1.TargetReasonHealthy,
		health.ReasonNotProbed:         dnsv1.TargetReasonNotProbed,
		health.ReasonQuorumDown:        dnsv1.TargetReasonQuorumDown,
		health.ReasonHeldWhileIsolated: dnsv1.TargetReasonHeldWhileIsolated,
		health.ReasonOwnProbesOnly:     dnsv1.TargetReasonOwnProbesOnly,
		health.ReasonFlapDamped:        dnsv1.TargetReasonFlapDamped,
	}
	if len(pairs) != 6 {
		t.Fatalf("two health reasons are equal: %v", pairs)
	}
	for h, api := range pairs {
		if h != api {
			t.Errorf("health reason %q, API reason %q", h, api)
		}
	}
	for v, api := range map[health.Verdict]dnsv1.TargetVerdict{health.Up: dnsv1.VerdictUp, health.Down: dnsv1.VerdictDown, health.Unknown: dnsv1.VerdictUnknown} {
		if v.String() != string(api) {
			t.Errorf("verdict %q, API %q", v, api)
		}
	}
}

func TestCandidates_SilentPeersKeepTheirLastTargets(t *testing.T) {
	peers := []gslb.Peer{{GeoTag: "us", Addr: "127.0.0.12:53"}, {GeoTag: "ap", Addr: "127.0.0.13:53"}}
	timeout := errors.New("timeout")
	tests := []struct {
		name  string
		in    candidateInput
		cands map[string][]netip.Addr
		mem   map[string]peerMemory
	}{
		{
			name: "every peer answers",
			in: candidateInput{Self: "eu", Own: []string{"192.0.2.1", "2001:db8::1"}, Peers: peers,
				Reads: map[string]peerRead{"us": {Targets: []string{"192.0.2.2"}}, "ap": {Targets: nil}}},
			cands: map[string][]netip.Addr{"eu": addrs("192.0.2.1", "2001:db8::1"), "us": addrs("192.0.2.2"), "ap": {}},
			mem:   map[string]peerMemory{"us": {targets: addrs("192.0.2.2"), seen: true}, "ap": {targets: []netip.Addr{}, seen: true}},
		},
		{
			name: "a silent peer keeps its last answer",
			in: candidateInput{Self: "eu", Own: []string{"192.0.2.1"}, Peers: peers,
				Reads:  map[string]peerRead{"us": {TargetsErr: timeout}, "ap": {Targets: []string{"192.0.2.3"}}},
				Memory: map[string]peerMemory{"us": {targets: addrs("192.0.2.2"), seen: true}}},
			cands: map[string][]netip.Addr{"eu": addrs("192.0.2.1"), "us": addrs("192.0.2.2"), "ap": addrs("192.0.2.3")},
			mem:   map[string]peerMemory{"us": {targets: addrs("192.0.2.2"), seen: true}, "ap": {targets: addrs("192.0.2.3"), seen: true}},
		},
		{
			name: "a peer never heard from has no targets",
			in: candidateInput{Self: "eu", Own: nil, Peers: peers,
				Reads: map[string]peerRead{"us": {TargetsErr: timeout}, "ap": {TargetsErr: timeout}}},
			cands: map[string][]netip.Addr{"eu": {}},
			mem:   map[string]peerMemory{"us": {}, "ap": {}},
		},
		{
			name: "a peer that left the list is forgotten; invalid targets are skipped",
			in: candidateInput{Self: "eu", Own: []string{"192.0.2.1", "not-an-ip"}, Peers: peers[:1],
				Reads:  map[string]peerRead{"us": {Targets: []string{"192.0.2.2"}}},
				Memory: map[string]peerMemory{"ap": {targets: addrs("192.0.2.3"), seen: true}}},
			cands: map[string][]netip.Addr{"eu": addrs("192.0.2.1"), "us": addrs("192.0.2.2")},
			mem:   map[string]peerMemory{"us": {targets: addrs("192.0.2.2"), seen: true}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cands, mem := candidates(tt.in)
			if !reflect.DeepEqual(cands, tt.cands) {
				t.Errorf("candidates %v, want %v", cands, tt.cands)
			}
			if !reflect.DeepEqual(mem, tt.mem) {
				t.Errorf("memory %+v, want %+v", mem, tt.mem)
			}
		})
	}
}

func TestPeerVerdicts_RecordsKeptOnErrorsAndAbsenceIsNotVoting(t *testing.T) {
	now := time.Unix(1764784800, 0)
	rec := health.Record{GeoTag: "us", IssuedAt: now, ValidFor: 30 * time.Second, Up: addrs("192.0.2.1"), Down: addrs("192.0.2.2")}
	value, err := health.Encode(rec)
	if err != nil {
		t.Fatal(err)
	}
	peers := []gslb.Peer{{GeoTag: "us"}}
	known := map[netip.Addr]bool{netip.MustParseAddr("192.0.2.1"): true, netip.MustParseAddr("192.0.2.2"): true}
	last := &health.Record{GeoTag: "us", IssuedAt: now.Add(-time.Minute), ValidFor: 30 * time.Second}
	tests := []struct {
		name      string
		read      peerRead
		mem       map[string]peerMemory
		wantRec   *health.Record
		notVoting bool
		errHas    string
	}{
		{name: "a record is decoded and kept", read: peerRead{Verdicts: [][]string{{value}}}, wantRec: &rec},
		{name: "a failed query keeps the last record", read: peerRead{VerdictsErr: errors.New("timed out")},
			mem: map[string]peerMemory{"us": {record: last}}, wantRec: last, errHas: "timed out"},
		{name: "a refused record keeps the last one", read: peerRead{Verdicts: [][]string{{"dpv1 geo=us at=1 for=0"}}},
			mem: map[string]peerMemory{"us": {record: last}}, wantRec: last, errHas: "bad gslb verdict record"},
		{name: "no record: not voting, the last one dropped", read: peerRead{Verdicts: nil},
			mem: map[string]peerMemory{"us": {record: last}}, notVoting: true, errHas: "without a verdict record"},
		{name: "another geo tag's record is refused", read: peerRead{Verdicts: [][]string{{strings.Replace(value, "geo=us", "geo=ap", 1)}}},
			errHas: "bad gslb verdict record"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			mem := tt.mem
			if mem == nil {
				mem = map[string]peerMemory{}
			}
			got, mem := peerVerdicts("eu", peers, map[string]peerRead{"us": tt.read}, known, mem)
			if len(got) != 1 {
				t.Fatalf("peers %+v", got)
			}
			p := got[0]
			if p.GeoTag != "us" || (p.Record == nil) != (tt.wantRec == nil) || !sameRecord(p.Record, tt.wantRec) {
				t.Errorf("peer %+v (record %+v), want record %+v, notVoting %t", p, p.Record, tt.wantRec, tt.notVoting)
			}
			if (tt.errHas == "") != (p.Err == nil) || (p.Err != nil && !strings.Contains(p.Err.Error(), tt.errHas)) {
				t.Errorf("err %v, want one holding %q", p.Err, tt.errHas)
			}
			if !tt.notVoting && !sameRecord(mem["us"].record, tt.wantRec) {
				t.Errorf("memory record %+v, want %+v", mem["us"].record, tt.wantRec)
			}
		})
	}
}

// sameRecord compares two records by their encoding (times in any location).
func sameRecord(a, b *health.Record) bool {
	if a == nil || b == nil {
		return a == b
	}
	ea, errA := health.Encode(*a)
	eb, errB := health.Encode(*b)
	return errA == nil && errB == nil && ea == eb
}

func TestOwnRecord_OnlyOwnVerdictsRoundTripThroughTheDNSEndpoint(t *testing.T) {
	now := time.Unix(1764784805, 700_000_000)
	own := map[netip.Addr]health.Verdict{
		netip.MustParseAddr("192.0.2.2"): health.Down, netip.MustParseAddr("192.0.2.1"): health.Up,
		netip.MustParseAddr("2001:db8::1"): health.Up, netip.MustParseAddr("192.0.2.9"): health.Unknown,
	}
	// The record's time is the oldest probe time among its verdicts, not now.
	local := map[netip.Addr]health.ProbeState{
		netip.MustParseAddr("192.0.2.2"): {LastProbe: time.Unix(1764784803, 0)}, netip.MustParseAddr("192.0.2.1"): {LastProbe: time.Unix(1764784800, 700_000_000)},
		netip.MustParseAddr("2001:db8::1"): {LastProbe: time.Unix(1764784804, 0)},
	}
	r := nextRecord(recordInput{GeoTag: "eu", Own: own, Local: local, Now: now, ValidFor: 90 * time.Second})
	want := health.Record{GeoTag: "eu", IssuedAt: time.Unix(1764784800, 0), ValidFor: 90 * time.Second,
		Up: addrs("192.0.2.1", "2001:db8::1"), Down: addrs("192.0.2.2")}
	if !reflect.DeepEqual(r, want) {
		t.Fatalf("record %+v, want %+v", r, want)
	}
	value, err := health.Encode(r)
	if err != nil {
		t.Fatal(err)
	}
	eps := []dnsv1.Endpoint{
		{DNSName: "localtargets-app.gslb.test", RecordType: "A", Targets: dnsv1.Targets{"192.0.2.1"}},
		{DNSName: "verdicts-app.gslb.test", RecordType: "TXT", Targets: dnsv1.Targets{value}},
		{DNSName: "verdicts-other.gslb.test", RecordType: "TXT", Targets: dnsv1.Targets{"garbage"}},
	}
	got := publishedRecords(eps, "eu", []string{"App.Gslb.Test.", "other.gslb.test", "none.gslb.test"})
	if len(got) != 1 || !reflect.DeepEqual(got["App.Gslb.Test."].Up, want.Up) || !got["App.Gslb.Test."].IssuedAt.Equal(want.IssuedAt) {
		t.Fatalf("published %+v, want app's record only (other's does not decode)", got)
	}
	if pub := publishedRecords(eps, "us", []string{"app.gslb.test"}); len(pub) != 0 {
		t.Fatalf("a record under another geo tag counted as ours: %+v", pub)
	}
}

// TestNextRecord_NeverEmptyOverAPublishedRecord: with no verdict of its own yet (a restart, a
// leader change, a healthCheck change), the published record stays; a verdict of its own
// replaces its target's, the others are carried with the published time until the published
// record's validity ends.
func TestNextRecord_NeverEmptyOverAPublishedRecord(t *testing.T) {
	a, b, c := netip.MustParseAddr("192.0.2.1"), netip.MustParseAddr("192.0.2.2"), netip.MustParseAddr("192.0.2.3")
	at := time.Unix(1764784800, 0)
	pub := health.Record{GeoTag: "eu", IssuedAt: at, ValidFor: 30 * time.Second, Up: []netip.Addr{a}, Down: []netip.Addr{b}}
	known := map[netip.Addr]bool{a: true, b: true, c: true}
	in := recordInput{GeoTag: "eu", Published: &pub, Known: known, Now: at.Add(20 * time.Second), ValidFor: 30 * time.Second}
	if got := nextRecord(in); !sameRecord(&got, &pub) {
		t.Fatalf("no verdict yet: %+v, want the published record", got)
	}
	in.Own = map[netip.Addr]health.Verdict{a: health.Down}
	in.Local = map[netip.Addr]health.ProbeState{a: {LastProbe: at.Add(19 * time.Second)}}
	want := health.Record{GeoTag: "eu", IssuedAt: at, ValidFor: 30 * time.Second, Down: []netip.Addr{a, b}}
	if got := nextRecord(in); !sameRecord(&got, &want) {
		t.Fatalf("one verdict of its own: %+v, want %+v (b carried at the published time)", got, want)
	}
	in.Now = at.Add(31 * time.Second)
	want = health.Record{GeoTag: "eu", IssuedAt: at.Add(19 * time.Second), ValidFor: 30 * time.Second, Down: []netip.Addr{a}}
	if got := nextRecord(in); !sameRecord(&got, &want) {
		t.Fatalf("published record expired: %+v, want %+v", got, want)
	}
	in = recordInput{GeoTag: "eu", Now: at, ValidFor: 30 * time.Second}
	if got := nextRecord(in); got.IssuedAt != at || len(got.Up)+len(got.Down) != 0 {
		t.Fatalf("nothing published, no verdict: %+v, want an empty record at now", got)
	}
}

func TestMemoryFromStatus_OnlyAgreedDecisionsSeedTheMemory(t *testing.T) {
	st := []dnsv1.GslbTargetStatus{
		{Host: "app.gslb.test", Target: "192.0.2.1", Decision: dnsv1.VerdictUp, Reason: dnsv1.TargetReasonHealthy},
		{Host: "app.gslb.test", Target: "192.0.2.2", Decision: dnsv1.VerdictDown, Reason: dnsv1.TargetReasonQuorumDown},
		{Host: "app.gslb.test", Target: "192.0.2.3", Decision: dnsv1.VerdictDown, Reason: dnsv1.TargetReasonOwnProbesOnly},
		{Host: "app.gslb.test", Target: "192.0.2.4", Decision: dnsv1.VerdictUp, Reason: dnsv1.TargetReasonHeldWhileIsolated},
		{Host: "app.gslb.test", Target: "bad", Decision: dnsv1.VerdictUp, Reason: dnsv1.TargetReasonHealthy},
		{Host: "other.gslb.test", Target: "192.0.2.5", Decision: dnsv1.VerdictUp, Reason: dnsv1.TargetReasonHealthy},
		{Host: "app.gslb.test", Target: "192.0.2.6", Decision: dnsv1.VerdictDown, Agreed: dnsv1.VerdictUp, Reason: dnsv1.TargetReasonOwnProbesOnly},
	}
	got := memoryFromStatus(st, "app.gslb.test", time.Now()).Agreed
	// Held decisions are the last agreed ones; own-probe decisions are not, but their agreed
	// field is.
	want := map[netip.Addr]health.Verdict{netip.MustParseAddr("192.0.2.1"): health.Up, netip.MustParseAddr("192.0.2.2"): health.Down,
		netip.MustParseAddr("192.0.2.4"): health.Up, netip.MustParseAddr("192.0.2.6"): health.Up}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("agreed %v, want %v", got, want)
	}
}

func TestTargetEvents_OnlyChangesWithTheVotes(t *testing.T) {
	a, b, c := netip.MustParseAddr("192.0.2.1"), netip.MustParseAddr("192.0.2.2"), netip.MustParseAddr("2001:db8::3")
	res := health.Result{Known: 3, Targets: []health.TargetDecision{
		{Target: a, GeoTag: "eu", Own: health.Down, Peers: []health.PeerVerdict{{GeoTag: "us", Verdict: health.Down}, {GeoTag: "eu", Verdict: health.Up, Owner: true}}, Voters: 2, Downs: 2, Needed: 2, Decision: health.Down, Reason: health.ReasonQuorumDown},
		{Target: b, GeoTag: "us", Own: health.Up, Voters: 1, Decision: health.Up, Reason: health.ReasonHealthy},
		{Target: c, GeoTag: "ap", Decision: health.Up, Reason: health.ReasonNotProbed},
	}}
	last := map[netip.Addr]health.Verdict{a: health.Up, b: health.Down}
	got := targetEvents("app.gslb.test", last, res, map[netip.Addr]health.ProbeState{a: {LastError: "HTTP 503"}})
	if len(got) != 2 {
		t.Fatalf("events %+v, want TargetDown for %s and TargetUp for %s, none for the new %s", got, a, b, c)
	}
	if got[0].Type != "Warning" || got[0].Reason != dnsv1.ReasonTargetDown ||
		got[0].Message != "app.gslb.test: target 192.0.2.1 (eu, IPv4) is Down: QuorumDown, 2 of the 3 members call it down, 2 needed [here Down (HTTP 503), us Down, eu Up (owner, not counted)]" {
		t.Errorf("down event %+v", got[0])
	}
	if got[1].Type != "Normal" || got[1].Reason != dnsv1.ReasonTargetUp || !strings.Contains(got[1].Message, "192.0.2.2 (us, IPv4) is Up: Healthy") {
		t.Errorf("up event %+v", got[1])
	}
	if again := targetEvents("app.gslb.test", map[netip.Addr]health.Verdict{a: health.Down, b: health.Up}, res, nil); len(again) != 0 {
		t.Errorf("unchanged decisions emitted %+v", again)
	}
}

func TestPlanRecords_HealthDecidedHostPublishesItsAnswerAndVerdicts(t *testing.T) {
	in := planInput{GeoTag: "eu", Spec: dnsv1.GslbSpec{Strategy: dnsv1.GslbStrategy{Type: dnsv1.GslbRoundRobin}}, Capable: true,
		Local:       healthyLocal([]string{"192.0.2.1"}, "app.example.com"),
		PeerTargets: map[string]map[string][]string{"app.example.com": {"us": {"192.0.2.2"}}},
		Decided:     map[string]decidedHost{"app.example.com": {Answer: gslb.Answer{Targets: []string{"192.0.2.2"}}, VerdictTXT: "dpv1 geo=eu at=1 for=90"}},
	}
	p := planRecords(in)
	want := []dnsv1.Endpoint{
		{DNSName: "localtargets-app.example.com", RecordType: "A", RecordTTL: 30, Targets: dnsv1.Targets{"192.0.2.1"}},
		{DNSName: "verdicts-app.example.com", RecordType: "TXT", RecordTTL: 30, Targets: dnsv1.Targets{"dpv1 geo=eu at=1 for=90"}},
		{DNSName: "app.example.com", RecordType: "A", RecordTTL: 30, Targets: dnsv1.Targets{"192.0.2.2"}},
	}
	if !reflect.DeepEqual(p.Endpoints, want) {
		t.Fatalf("endpoints %+v, want %+v (the decided answer, not the strategy over both)", p.Endpoints, want)
	}
	if !reflect.DeepEqual(p.HealthyRecords["app.example.com"], []string{"192.0.2.2"}) || p.Served["app.example.com"] != 1 {
		t.Fatalf("healthyRecords %v served %v", p.HealthyRecords, p.Served)
	}
}

func TestReadyCondition_HealthReasons(t *testing.T) {
	base := readyInput{Capable: true, AnyTargets: true, Hosts: 1, HealthChecked: true}
	tests := []struct {
		name   string
		mut    func(*readyInput)
		ok     bool
		reason string
		msg    string
	}{
		{"all down beats isolation", func(in *readyInput) { in.AllDown, in.Isolated = []string{"h: all down"}, []string{"h: isolated"} }, false, dnsv1.ReasonNoHealthyTargets, "h: all down"},
		{"isolated is True and beats peer errors", func(in *readyInput) { in.Isolated, in.PeerErrors = []string{"h: 1 of 3"}, []string{"us: timeout"} }, true, dnsv1.ReasonIsolated, "isolated: h: 1 of 3"},
		{"peer errors with health checks keep the targets", func(in *readyInput) { in.PeerErrors = []string{"us: timeout"} }, false, dnsv1.ReasonPeerErrors, "peers did not answer; their targets as last read stay candidates, judged by the health checks: us: timeout"},
		{"notes in Published", func(in *readyInput) { in.Notes = []string{"h: 3 targets not health-checked"} }, true, dnsv1.ReasonPublished, "1 hosts published; h: 3 targets not health-checked"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := base
			tt.mut(&in)
			ok, reason, msg := readyCondition(in)
			if ok != tt.ok || reason != tt.reason || msg != tt.msg {
				t.Fatalf("got %t %s %q, want %t %s %q", ok, reason, msg, tt.ok, tt.reason, tt.msg)
			}
		})
	}
}

// TestMemoryFromStatus_ClampsFutureTimesToNow: a status written by a manager whose clock ran an
// hour ahead restores no time later than the restoring manager's now.
func TestMemoryFromStatus_ClampsFutureTimesToNow(t *testing.T) {
	now := time.Date(2026, 12, 3, 18, 0, 0, 0, time.UTC)
	ahead := metav1.NewTime(now.Add(time.Hour))
	past := metav1.NewTime(now.Add(-time.Minute))
	st := []dnsv1.GslbTargetStatus{{Host: "app.gslb.test", Target: "192.0.2.1", Decision: dnsv1.VerdictDown, IsolatedSince: &ahead,
		Flap: &dnsv1.TargetFlapStatus{Downs: []metav1.Time{past, ahead}, UpSince: &ahead}}}
	mem := memoryFromStatus(st, "app.gslb.test", now)
	f := mem.Flaps[netip.MustParseAddr("192.0.2.1")]
	if !mem.IsolatedSince.Equal(now) || !f.UpSince.Equal(now) || !f.Downs[0].Equal(past.Time) || !f.Downs[1].Equal(now) {
		t.Fatalf("restored isolatedSince %s, flap %+v; want nothing after %s", mem.IsolatedSince, f, now)
	}
}

func TestValidityEvents_OncePerMemberWhileItLasts(t *testing.T) {
	long := map[string]time.Duration{"eu": 3 * time.Minute}
	ev, seen := validityEvents("app.gslb.test", 90*time.Second, long, nil)
	if len(ev) != 1 || ev[0].Reason != dnsv1.ReasonValidityMismatch || !strings.Contains(ev[0].Message, "member eu") || !strings.Contains(ev[0].Message, "3m0s") {
		t.Fatalf("first sight: %+v", ev)
	}
	if ev, _ = validityEvents("app.gslb.test", 90*time.Second, long, seen); len(ev) != 0 {
		t.Fatalf("reported again while it lasts: %+v", ev)
	}
	_, seen = validityEvents("app.gslb.test", 90*time.Second, nil, seen)
	if ev, _ = validityEvents("app.gslb.test", 90*time.Second, long, seen); len(ev) != 1 {
		t.Fatalf("not reported again after it ended and came back: %+v", ev)
	}
}
