package health

import (
	"errors"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	testclock "k8s.io/utils/clock/testing"

	"github.com/dnsplane/dnsplane/pkg/gslb"
)

// The clusters of these tests and their targets: eu is the failover primary.
var (
	eu4, eu6 = netip.MustParseAddr("192.0.2.1"), netip.MustParseAddr("2001:db8::1")
	us4, us6 = netip.MustParseAddr("198.51.100.1"), netip.MustParseAddr("2001:db8:1::1")
	ap4      = netip.MustParseAddr("203.0.113.1")
)

func cands3() map[string][]netip.Addr {
	return map[string][]netip.Addr{"eu": {eu4}, "us": {us4}, "ap": {ap4}}
}

// rec is a fresh record of geo (issued now, valid 90 s) with these up and down targets.
func rec(geo string, up, down []netip.Addr) *Record {
	return &Record{GeoTag: geo, IssuedAt: t0, ValidFor: 90 * time.Second, Up: sortAddrs(up), Down: sortAddrs(down)}
}

func as(a ...netip.Addr) []netip.Addr { return a }

// euVote is g's record at now, valid for validFor, calling eu's target v and us's and ap's Up.
func euVote(g string, now time.Time, validFor time.Duration, v Verdict) *Record {
	out := &Record{GeoTag: g, IssuedAt: now, ValidFor: validFor, Up: as(us4, ap4)}
	if v == Down {
		out.Down = as(eu4)
	} else {
		out.Up = as(eu4, us4, ap4)
	}
	return out
}

var errTimeout = errors.New("query verdicts-app.gslb.test TXT at gslb peer 127.0.0.11:5353: gslb peer timed out")

func judge() (Judge, *testclock.FakePassiveClock) {
	c := testclock.NewFakePassiveClock(t0)
	return Judge{Clock: c}, c
}

// decision returns the decision on a in res.
func decision(t *testing.T, res Result, a netip.Addr) TargetDecision {
	t.Helper()
	i := slices.IndexFunc(res.Targets, func(d TargetDecision) bool { return d.Target == a })
	if i < 0 {
		t.Fatalf("no decision on %s in %+v", a, res.Targets)
	}
	return res.Targets[i]
}

func strs(as ...netip.Addr) []string {
	var out []string
	for _, a := range as {
		out = append(out, a.String())
	}
	return out
}

func TestDecide_Rules(t *testing.T) {
	type want struct {
		a, aaaa  []string
		down     []netip.Addr // decided Down
		reasons  map[netip.Addr]string
		isolated bool
		noneUp   bool
		known    int
		fresh    int
	}
	for _, tc := range []struct {
		name string
		in   Input
		want want
	}{{
		name: "no verdict anywhere: every candidate is served, NotProbed",
		in:   Input{Self: "us", Strategy: gslb.RoundRobin, Candidates: cands3(), Members: []Member{{GeoTag: "eu", Record: rec("eu", nil, nil)}, {GeoTag: "ap", Record: rec("ap", nil, nil)}}},
		want: want{a: strs(eu4, us4, ap4), reasons: map[netip.Addr]string{eu4: ReasonNotProbed}, known: 3, fresh: 3},
	}, {
		name: "a quorum of three calls eu's target down: it is out of the answer",
		in: Input{Self: "us", Strategy: gslb.RoundRobin, Candidates: cands3(), Own: map[netip.Addr]Verdict{eu4: Down, us4: Up, ap4: Up},
			Members: []Member{{GeoTag: "eu", Record: rec("eu", as(eu4, us4, ap4), nil)}, {GeoTag: "ap", Record: rec("ap", as(us4, ap4), as(eu4))}}},
		want: want{a: strs(us4, ap4), down: as(eu4), reasons: map[netip.Addr]string{eu4: ReasonQuorumDown, us4: ReasonHealthy}, known: 3, fresh: 3},
	}, {
		name: "only this cluster calls eu's target down (its link): a minority, eu stays primary",
		in: Input{Self: "us", Strategy: gslb.Failover, PrimaryGeoTag: "eu", Candidates: cands3(), Own: map[netip.Addr]Verdict{eu4: Down, us4: Up, ap4: Up},
			Members: []Member{{GeoTag: "eu", Record: rec("eu", as(eu4, us4, ap4), nil)}, {GeoTag: "ap", Record: rec("ap", as(eu4, us4, ap4), nil)}}},
		want: want{a: strs(eu4), reasons: map[netip.Addr]string{eu4: ReasonHealthy}, known: 3, fresh: 3},
	}, {
		name: "this cluster lost its link to eu (eu silent, its targets as last read): ap still sees eu up, no failover",
		in: Input{Self: "us", Strategy: gslb.Failover, PrimaryGeoTag: "eu", Candidates: cands3(), Own: map[netip.Addr]Verdict{eu4: Down, us4: Up, ap4: Up},
			Members: []Member{{GeoTag: "eu", Err: errTimeout}, {GeoTag: "ap", Record: rec("ap", as(eu4, us4, ap4), nil)}}},
		want: want{a: strs(eu4), reasons: map[netip.Addr]string{eu4: ReasonHealthy}, known: 3, fresh: 2},
	}, {
		name: "eu is silent for us and down for ap too: two of two fresh verdicts, failover",
		in: Input{Self: "us", Strategy: gslb.Failover, PrimaryGeoTag: "eu", Candidates: cands3(), Own: map[netip.Addr]Verdict{eu4: Down, us4: Up, ap4: Up},
			Members: []Member{{GeoTag: "eu", Err: errTimeout}, {GeoTag: "ap", Record: rec("ap", as(us4, ap4), as(eu4))}}},
		want: want{a: strs(us4, ap4), down: as(eu4), reasons: map[netip.Addr]string{eu4: ReasonQuorumDown}, known: 3, fresh: 2},
	}, {
		name: "two clusters: one down verdict of two is no majority",
		in: Input{Self: "us", Strategy: gslb.Failover, PrimaryGeoTag: "eu", Candidates: map[string][]netip.Addr{"eu": {eu4}, "us": {us4}},
			Own: map[netip.Addr]Verdict{eu4: Down, us4: Up}, Members: []Member{{GeoTag: "eu", Record: rec("eu", as(eu4, us4), nil)}}},
		want: want{a: strs(eu4), reasons: map[netip.Addr]string{eu4: ReasonHealthy}, known: 2, fresh: 2},
	}, {
		name: "two clusters: the owner's own Down does not count, so one Down of two members is no quorum",
		in: Input{Self: "us", Strategy: gslb.Failover, PrimaryGeoTag: "eu", Candidates: map[string][]netip.Addr{"eu": {eu4}, "us": {us4}},
			Own: map[netip.Addr]Verdict{eu4: Down, us4: Up}, Members: []Member{{GeoTag: "eu", Record: rec("eu", as(us4), as(eu4))}}},
		want: want{a: strs(eu4), reasons: map[netip.Addr]string{eu4: ReasonHealthy}, known: 2, fresh: 2},
	}, {
		name: "two clusters and a witness: the other cluster and the witness take the owner's target out",
		in: Input{Self: "us", Strategy: gslb.Failover, PrimaryGeoTag: "eu", Candidates: map[string][]netip.Addr{"eu": {eu4}, "us": {us4}},
			Own: map[netip.Addr]Verdict{eu4: Down, us4: Up}, Members: []Member{{GeoTag: "eu", Record: rec("eu", as(eu4, us4), nil)},
				{GeoTag: "wit", Witness: true, Record: rec("wit", as(us4), as(eu4))}}},
		want: want{a: strs(us4), down: as(eu4), reasons: map[netip.Addr]string{eu4: ReasonQuorumDown}, known: 3, fresh: 3},
	}, {
		name: "every target down by quorum: all are served, NoHealthyTargets",
		in: Input{Self: "us", Strategy: gslb.RoundRobin, Candidates: cands3(), Own: map[netip.Addr]Verdict{eu4: Down, us4: Down, ap4: Down},
			Members: []Member{{GeoTag: "eu", Record: rec("eu", nil, as(eu4, us4, ap4))}, {GeoTag: "ap", Record: rec("ap", nil, as(eu4, us4, ap4))}}},
		want: want{a: strs(eu4, us4, ap4), down: as(eu4, us4, ap4), reasons: map[netip.Addr]string{eu4: ReasonQuorumDown}, noneUp: true, known: 3, fresh: 3},
	}, {
		name: "every target down under failover: the primary's are served, as if all were up",
		in: Input{Self: "us", Strategy: gslb.Failover, PrimaryGeoTag: "eu", Candidates: cands3(), Own: map[netip.Addr]Verdict{eu4: Down, us4: Down, ap4: Down},
			Members: []Member{{GeoTag: "eu", Record: rec("eu", nil, as(eu4, us4, ap4))}, {GeoTag: "ap", Record: rec("ap", nil, as(eu4, us4, ap4))}}},
		want: want{a: strs(eu4), down: as(eu4, us4, ap4), noneUp: true, known: 3, fresh: 3},
	}, {
		name: "eu's IPv6 target down while its IPv4 twin is up: A keeps eu's, AAAA fails over to us's",
		in: Input{Self: "us", Strategy: gslb.Failover, PrimaryGeoTag: "eu",
			Candidates: map[string][]netip.Addr{"eu": {eu4, eu6}, "us": {us4, us6}, "ap": {ap4}},
			Own:        map[netip.Addr]Verdict{eu4: Up, eu6: Down, us4: Up, us6: Up, ap4: Up},
			Members: []Member{{GeoTag: "eu", Record: rec("eu", as(eu4, us4, us6, ap4), as(eu6))},
				{GeoTag: "ap", Record: rec("ap", as(eu4, us4, us6, ap4), as(eu6))}}},
		want: want{a: strs(eu4), aaaa: strs(us6), down: as(eu6), reasons: map[netip.Addr]string{eu4: ReasonHealthy, eu6: ReasonQuorumDown}, known: 3, fresh: 3},
	}, {
		name: "stale and future records are ignored: ap's down verdicts do not count, and us alone is no majority of three",
		in: Input{Self: "us", Strategy: gslb.RoundRobin, Candidates: cands3(), Own: map[netip.Addr]Verdict{eu4: Down},
			Members: []Member{
				{GeoTag: "eu", Record: &Record{GeoTag: "eu", IssuedAt: t0.Add(-121 * time.Second), ValidFor: 90 * time.Second, Down: as(eu4)}},
				{GeoTag: "ap", Record: &Record{GeoTag: "ap", IssuedAt: t0.Add(31 * time.Second), ValidFor: 90 * time.Second, Down: as(eu4)}},
			}},
		// us is isolated (1 heard of 3) with nothing agreed yet: every target is Up, unprobed.
		want: want{a: strs(eu4, us4, ap4), reasons: map[netip.Addr]string{eu4: ReasonNotProbed, us4: ReasonNotProbed}, isolated: true, known: 3, fresh: 1},
	}, {
		name: "a member without a verdict record (no healthCheck there) abstains: it still counts in the membership",
		in: Input{Self: "us", Strategy: gslb.RoundRobin, Candidates: map[string][]netip.Addr{"eu": {eu4}, "us": {us4}},
			Own: map[netip.Addr]Verdict{eu4: Down, us4: Up}, Members: []Member{{GeoTag: "eu", Err: errors.New("no verdict record")}}},
		want: want{a: strs(eu4, us4), reasons: map[netip.Addr]string{eu4: ReasonNotProbed}, isolated: true, known: 2, fresh: 1},
	}, {
		name: "weighted: a geo tag whose targets are all down leaves the sets",
		in: Input{Self: "us", Strategy: gslb.Weighted, Weights: map[string]int32{"eu": 70, "us": 30}, Candidates: map[string][]netip.Addr{"eu": {eu4}, "us": {us4}},
			Own: map[netip.Addr]Verdict{eu4: Down, us4: Up}, Members: []Member{{GeoTag: "eu", Record: rec("eu", as(us4), as(eu4))},
				{GeoTag: "wit", Witness: true, Record: rec("wit", as(us4), as(eu4))}}},
		want: want{a: strs(us4), down: as(eu4), known: 3, fresh: 3},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			j, _ := judge()
			res, err := j.Decide(tc.in)
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(res.ServedA, tc.want.a) || !slices.Equal(res.ServedAAAA, tc.want.aaaa) {
				t.Errorf("served A %v AAAA %v, want A %v AAAA %v", res.ServedA, res.ServedAAAA, tc.want.a, tc.want.aaaa)
			}
			var down []netip.Addr
			for _, d := range res.Targets {
				if d.Decision == Down {
					down = append(down, d.Target)
				}
				if d.Decision == Unknown {
					t.Errorf("%s decided Unknown", d.Target)
				}
			}
			if !slices.Equal(down, tc.want.down) {
				t.Errorf("down %v, want %v", down, tc.want.down)
			}
			for a, r := range tc.want.reasons {
				if got := decision(t, res, a).Reason; got != r {
					t.Errorf("%s: reason %s, want %s", a, got, r)
				}
			}
			if res.Isolated != tc.want.isolated || res.NoHealthyTargets() != tc.want.noneUp || res.Known != tc.want.known || res.Heard != tc.want.fresh {
				t.Errorf("isolated %v, no healthy %v, known %d, fresh %d; want %v, %v, %d, %d", res.Isolated, res.NoHealthyTargets(), res.Known, res.Heard,
					tc.want.isolated, tc.want.noneUp, tc.want.known, tc.want.fresh)
			}
			if len(res.ServedA)+len(res.ServedAAAA) == 0 {
				t.Error("empty answer")
			}
		})
	}
}

// TestDecide_IsolatedFailsStaticThenOwnProbes: us loses both peers. For Hold it keeps the last
// agreed answer (eu primary, though its own probe now says eu is down), then (AfterHold
// OwnProbes) its own probes decide alone and it fails over; when the peers come back the
// quorum decides again.
func TestDecide_IsolatedFailsStaticThenOwnProbes(t *testing.T) {
	j, clk := judge()
	hold := 300 * time.Second
	in := Input{Self: "us", Strategy: gslb.Failover, PrimaryGeoTag: "eu", Candidates: cands3(), Hold: hold, AfterHold: AfterHoldOwnProbes,
		Own:     map[netip.Addr]Verdict{eu4: Up, us4: Up, ap4: Up},
		Members: []Member{{GeoTag: "eu", Record: rec("eu", as(eu4, us4, ap4), nil)}, {GeoTag: "ap", Record: rec("ap", as(eu4, us4, ap4), nil)}}}
	step := func(what string, wantA []netip.Addr, isolated, ownOnly bool, reason string) Result {
		t.Helper()
		res, err := j.Decide(in)
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(res.ServedA, strs(wantA...)) || res.Isolated != isolated || res.OwnProbesOnly != ownOnly {
			t.Fatalf("%s: A %v isolated %v own-only %v; want %v %v %v", what, res.ServedA, res.Isolated, res.OwnProbesOnly, strs(wantA...), isolated, ownOnly)
		}
		if got := decision(t, res, eu4).Reason; got != reason {
			t.Fatalf("%s: eu's reason %s, want %s", what, got, reason)
		}
		in.Memory = res.Memory
		return res
	}
	step("agreed", as(eu4), false, false, ReasonHealthy)

	// The partition: both peers time out; their last records go stale 120 s later.
	in.Members = []Member{{GeoTag: "eu", Record: in.Members[0].Record, Err: errTimeout}, {GeoTag: "ap", Record: in.Members[1].Record, Err: errTimeout}}
	in.Own = map[netip.Addr]Verdict{eu4: Down, us4: Up, ap4: Up}
	clk.SetTime(t0.Add(60 * time.Second))
	step("peers silent, their records still fresh: a minority, no failover", as(eu4), false, false, ReasonHealthy)
	isolatedAt := t0.Add(121 * time.Second)
	clk.SetTime(isolatedAt)
	res := step("records stale: isolated, fail static", as(eu4), true, false, ReasonHeldWhileIsolated)
	if !res.Memory.IsolatedSince.Equal(isolatedAt) || !errors.Is(res.MemberErrs["eu"], ErrStale) || !strings.Contains(res.MemberErrs["eu"].Error(), "timed out") {
		t.Fatalf("isolated since %v, eu's error %v", res.Memory.IsolatedSince, res.MemberErrs["eu"])
	}
	clk.SetTime(isolatedAt.Add(hold - time.Second))
	step("just inside the hold", as(eu4), true, false, ReasonHeldWhileIsolated)
	clk.SetTime(isolatedAt.Add(hold))
	res = step("hold over: own probes alone, failover", as(us4, ap4), true, true, ReasonOwnProbesOnly)
	if res.Memory.Agreed[eu4] != Up {
		t.Fatalf("the agreed answer was overwritten while isolated: %v", res.Memory.Agreed)
	}

	// Every own probe down while isolated: never an empty answer.
	in.Own = map[netip.Addr]Verdict{eu4: Down, us4: Down, ap4: Down}
	res = step("all down by own probes", as(eu4), true, true, ReasonOwnProbesOnly)
	if !res.NoHealthyTargets() {
		t.Fatal("NoHealthyTargets not set")
	}

	// The partition heals: fresh records again, the quorum decides.
	clk.SetTime(isolatedAt.Add(hold + time.Minute))
	now := clk.Now()
	in.Own = map[netip.Addr]Verdict{eu4: Down, us4: Up, ap4: Up}
	in.Members = []Member{
		{GeoTag: "eu", Record: &Record{GeoTag: "eu", IssuedAt: now, ValidFor: time.Minute, Up: as(eu4, us4, ap4)}},
		{GeoTag: "ap", Record: &Record{GeoTag: "ap", IssuedAt: now, ValidFor: time.Minute, Up: as(eu4, us4, ap4)}},
	}
	res = step("healed", as(eu4), false, false, ReasonHealthy)
	if !res.Memory.IsolatedSince.IsZero() {
		t.Fatal("still isolated since", res.Memory.IsolatedSince)
	}
}

// TestDecide_IsolatedHoldsAgreedDownAndJudgesNewTargets: fail static also keeps a target the
// majority took out, a target that appeared during the isolation is served (Up, NotProbed:
// one member alone never takes a target out), and the agreed memory forgets targets that are
// no longer candidates.
func TestDecide_IsolatedHoldsAgreedDownAndJudgesNewTargets(t *testing.T) {
	j, _ := judge()
	in := Input{Self: "us", Strategy: gslb.RoundRobin, Candidates: map[string][]netip.Addr{"eu": {eu4, eu6}, "us": {us4}, "ap": {ap4}}, Hold: time.Hour,
		Own:     map[netip.Addr]Verdict{eu4: Down, eu6: Up, us4: Up, ap4: Up},
		Members: []Member{{GeoTag: "eu", Record: rec("eu", as(eu6, us4, ap4), as(eu4))}, {GeoTag: "ap", Record: rec("ap", as(eu6, us4, ap4), as(eu4))}}}
	res, err := j.Decide(in)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Memory.Agreed) != 4 || res.Memory.Agreed[eu4] != Down {
		t.Fatalf("agreed %v", res.Memory.Agreed)
	}
	in.Memory = res.Memory
	in.Members = []Member{{GeoTag: "eu", Err: errTimeout}, {GeoTag: "ap", Err: errTimeout}}
	newUp, newDown, newUnknown := netip.MustParseAddr("198.51.100.2"), netip.MustParseAddr("198.51.100.3"), netip.MustParseAddr("198.51.100.4")
	in.Candidates["us"] = as(us4, newUp, newDown, newUnknown)
	in.Own = map[netip.Addr]Verdict{eu4: Up, eu6: Up, us4: Up, ap4: Up, newUp: Up, newDown: Down}
	res, err = j.Decide(in)
	if err != nil {
		t.Fatal(err)
	}
	for a, want := range map[netip.Addr][2]string{
		eu4: {"Down", ReasonHeldWhileIsolated}, us4: {"Up", ReasonHeldWhileIsolated},
		newUp: {"Up", ReasonNotProbed}, newDown: {"Up", ReasonNotProbed}, newUnknown: {"Up", ReasonNotProbed},
	} {
		if d := decision(t, res, a); d.Decision.String() != want[0] || d.Reason != want[1] {
			t.Errorf("%s: %v %s, want %v", a, d.Decision, d.Reason, want)
		}
	}
	// Back to a majority, with eu6 gone from the candidates: the memory forgets it.
	in.Memory = res.Memory
	in.Members = []Member{{GeoTag: "eu", Record: rec("eu", as(us4), nil)}, {GeoTag: "ap", Record: rec("ap", as(us4), nil)}}
	in.Candidates["eu"] = as(eu4)
	res, err = j.Decide(in)
	if err != nil {
		t.Fatal(err)
	}
	if _, kept := res.Memory.Agreed[eu6]; kept || len(res.Memory.Agreed) != 6 {
		t.Fatalf("agreed after healing: %v", res.Memory.Agreed)
	}
}

func TestDecide_VotesAndPeerVerdictsAreReported(t *testing.T) {
	j, _ := judge()
	res, err := j.Decide(Input{Self: "us", Strategy: gslb.RoundRobin, Candidates: map[string][]netip.Addr{"eu": {eu4}, "us": {us4}},
		Own:     map[netip.Addr]Verdict{eu4: Down},
		Members: []Member{{GeoTag: "eu", Record: rec("eu", as(eu4), nil)}, {GeoTag: "ap", Record: rec("ap", nil, as(eu4))}, {GeoTag: "us", Record: rec("us", nil, nil)}}})
	if err != nil {
		t.Fatal(err)
	}
	d := decision(t, res, eu4)
	want := []PeerVerdict{{"ap", Down, false}, {"eu", Up, true}}
	if d.GeoTag != "eu" || d.Own != Down || d.Voters != 2 || d.Downs != 2 || d.Needed != 2 || !slices.Equal(d.Peers, want) || d.Decision != Down || d.Served {
		t.Fatalf("decision %+v", d)
	}
	if res.Known != 3 {
		t.Fatalf("a peer entry for Self counted: known %d", res.Known)
	}
}

func TestDecide_InvalidStrategyIsAnError(t *testing.T) {
	j, _ := judge()
	if _, err := j.Decide(Input{Self: "us", Strategy: gslb.Failover, Candidates: cands3()}); err == nil {
		t.Fatal("failover without a primary geo tag decided")
	}
}

func TestDecide_NoCandidatesNoAnswer(t *testing.T) {
	j, _ := judge()
	res, err := j.Decide(Input{Self: "us", Strategy: gslb.RoundRobin})
	if err != nil || res.NoHealthyTargets() || len(res.ServedA)+len(res.ServedAAAA) != 0 || len(res.Targets) != 0 {
		t.Fatalf("no candidates: %+v, %v", res, err)
	}
}

// TestDecide_GeoFallsBackByQuorum: under geo, a tag whose targets the quorum calls
// down gets the default's targets in its set, every target served is marked Served, and when
// every target is down every set is served as if all were up (never an empty answer).
func TestDecide_GeoFallsBackByQuorum(t *testing.T) {
	j, _ := judge()
	in := Input{Self: "eu", Strategy: gslb.Geo, GeoRegions: map[string]string{"DE": "eu", "continent:NA": "us", "JP": "ap"}, DefaultGeoTag: "eu",
		Candidates: cands3(), Own: map[netip.Addr]Verdict{us4: Down},
		Members: []Member{{GeoTag: "us", Record: rec("us", nil, as(us4))}, {GeoTag: "ap", Record: rec("ap", as(ap4), as(us4))}}}
	res, err := j.Decide(in)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string][]string{}
	for _, s := range res.Answer().Geo {
		got[s.GeoTag] = s.Targets
	}
	if !slices.Equal(got["us"], strs(eu4)) || !slices.Equal(got["eu"], strs(eu4)) || !slices.Equal(got["ap"], strs(ap4)) {
		t.Fatalf("geo sets %v; want us falling back to eu's target", got)
	}
	if decision(t, res, us4).Served || !decision(t, res, eu4).Served || !decision(t, res, ap4).Served || !slices.Equal(res.ServedA, strs(eu4, ap4)) {
		t.Fatalf("served: %+v, A %v", res.Targets, res.ServedA)
	}

	in.Own = map[netip.Addr]Verdict{eu4: Down, us4: Down, ap4: Down}
	in.Members = []Member{{GeoTag: "us", Record: rec("us", nil, as(eu4, us4, ap4))}, {GeoTag: "ap", Record: rec("ap", nil, as(eu4, us4, ap4))}}
	res, err = j.Decide(in)
	if err != nil {
		t.Fatal(err)
	}
	got = map[string][]string{}
	for _, s := range res.Answer().Geo {
		got[s.GeoTag] = s.Targets
	}
	if !res.NoHealthyTargets() || !slices.Equal(got["us"], strs(us4)) || !slices.Equal(got["eu"], strs(eu4)) || !slices.Equal(got["ap"], strs(ap4)) {
		t.Fatalf("every target down: NoHealthyTargets %v, sets %v; want each tag its own", res.NoHealthyTargets(), got)
	}
}
