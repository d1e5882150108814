package health

import (
	"net/netip"
	"time"

	testclock "k8s.io/utils/clock/testing"

	"github.com/dnsplane/dnsplane/pkg/gslb"
)

// newModelJudge is the model check's mJudge over Judge.Decide (failover, primary member 0,
// afterIsolationHold as the configuration says, the other policies by default).
func newModelJudge(now time.Time, v mView, mem any) (mOutcome, any) {
	in := Input{Self: v.Self, Strategy: gslb.Failover, PrimaryGeoTag: "c0", Candidates: v.Candidates, Own: v.Own, Hold: v.Hold}
	if v.OwnProbes {
		in.AfterHold = AfterHoldOwnProbes
	}
	for _, m := range v.Members {
		in.Members = append(in.Members, Member{GeoTag: m.GeoTag, Witness: m.Witness, Record: m.Record, Err: m.Err})
	}
	if mem != nil {
		in.Memory = mem.(Memory)
	}
	res, err := Judge{Clock: testclock.NewFakePassiveClock(now)}.Decide(in)
	if err != nil {
		return mOutcome{FailedWithError: err}, mem
	}
	out := mOutcome{Decision: map[netip.Addr]Verdict{}, ServedA: res.ServedA, ServedAAAA: res.ServedAAAA,
		NoneA: res.NoHealthyTargetsA, NoneAAAA: res.NoHealthyTargetsAAAA, Isolated: res.Isolated}
	for _, d := range res.Targets {
		out.Decision[d.Target] = d.Decision
	}
	return out, res.Memory
}
