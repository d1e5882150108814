package warmup

import (
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"
)

func key(n string) types.NamespacedName { return types.NamespacedName{Namespace: "ns", Name: n} }

func TestTracker(t *testing.T) {
	const stall, max = 5 * time.Second, time.Minute
	type step struct {
		advance time.Duration
		expect  []string // non-nil: Expect these
		planned []string
		warming bool
	}
	cases := []struct {
		name  string
		steps []step
	}{
		{"before the cache synced it warms, whatever the time short of max", []step{
			{warming: true}, {advance: 30 * time.Second, warming: true},
		}},
		{"max ends it before the cache synced", []step{{advance: max, warming: false}}},
		{"an empty cache ends it at once", []step{{expect: []string{}, warming: false}}},
		{"it ends when every expected object is planned", []step{
			{expect: []string{"a", "b"}, warming: true},
			{planned: []string{"a"}, warming: true},
			{planned: []string{"a"}, warming: true}, // a second plan of a is no progress
			{planned: []string{"b"}, warming: false},
		}},
		{"objects planned before the listing are not expected", []step{
			{planned: []string{"a"}, warming: true},
			{expect: []string{"a", "b"}, warming: true},
			{planned: []string{"b"}, warming: false},
		}},
		{"objects not expected are no progress", []step{
			{expect: []string{"a"}, warming: true},
			{advance: 4 * time.Second, planned: []string{"new"}, warming: true},
			{advance: time.Second, warming: false},
		}},
		{"a stall ends it", []step{
			{expect: []string{"a", "b"}, warming: true},
			{advance: 4 * time.Second, planned: []string{"a"}, warming: true},
			{advance: 4 * time.Second, warming: true}, // 4 s since a: still within the stall
			{advance: time.Second, warming: false},
		}},
		{"max ends it even with progress", []step{
			{expect: []string{"a", "b", "c", "d", "e", "f", "g", "h", "i", "j", "k", "l", "m", "n"}, warming: true},
			{advance: 50 * time.Second, planned: []string{"a"}, warming: true},
			{advance: 4 * time.Second, planned: []string{"b"}, warming: true},
			{advance: 4 * time.Second, planned: []string{"c"}, warming: true},
			{advance: 2 * time.Second, planned: []string{"d"}, warming: false},
		}},
		{"once ended it never warms again", []step{
			{expect: []string{"a"}, warming: true},
			{advance: stall, warming: false},
			{expect: []string{"b"}, warming: false},
			{advance: -stall, warming: false},
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			clk := clocktesting.NewFakePassiveClock(time.Unix(1_000_000, 0))
			tr := New(clk, stall, max)
			for i, s := range c.steps {
				clk.SetTime(clk.Now().Add(s.advance))
				if s.expect != nil {
					keys := make([]types.NamespacedName, 0, len(s.expect))
					for _, n := range s.expect {
						keys = append(keys, key(n))
					}
					tr.Expect(keys)
				}
				for _, n := range s.planned {
					tr.Planned(key(n))
				}
				if got := tr.Warming(); got != s.warming {
					t.Fatalf("step %d: Warming() = %v, want %v (remaining %d)", i, got, s.warming, tr.Remaining())
				}
				select {
				case <-tr.Done():
					if s.warming {
						t.Fatalf("step %d: Done closed while warming", i)
					}
				default:
					if !s.warming {
						t.Fatalf("step %d: Done open after the pass ended", i)
					}
				}
			}
		})
	}
}

func TestTracker_EndedSaysWhyAndWhatWasLeft(t *testing.T) {
	clk := clocktesting.NewFakePassiveClock(time.Unix(1_000_000, 0))
	tr := New(clk, time.Second, time.Minute)
	tr.Expect([]types.NamespacedName{key("a"), key("b"), key("c")})
	tr.Planned(key("a"))
	clk.SetTime(clk.Now().Add(time.Second))
	if tr.Warming() {
		t.Fatal("warming after the stall")
	}
	if reason, left := tr.Ended(); reason != EndStalled || left != 2 {
		t.Fatalf("Ended() = %q, %d; want %q, 2", reason, left, EndStalled)
	}
	done := New(clk, time.Second, time.Minute)
	done.Expect([]types.NamespacedName{key("a")})
	done.Planned(key("a"))
	if reason, left := done.Ended(); reason != EndPlanned || left != 0 {
		t.Fatalf("Ended() = %q, %d; want %q, 0", reason, left, EndPlanned)
	}
}

func TestTracker_NilIsNotWarming(t *testing.T) {
	var tr *Tracker
	if tr.Warming() {
		t.Fatal("a nil Tracker warms")
	}
}

func TestNew_Defaults(t *testing.T) {
	tr := New(nil, 0, 0)
	if tr.stall != DefaultStall || tr.max != DefaultMax {
		t.Fatalf("stall %s, max %s", tr.stall, tr.max)
	}
}
