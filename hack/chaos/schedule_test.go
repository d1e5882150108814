package main

import (
	"reflect"
	"testing"
	"time"
)

// TestPlan_IsSeededAndUndoesEveryFault: the same seed gives the same schedule; another seed
// another; every fault is undone by the end (cuts, kills, targets, skews), and no step leaves
// more than one manager down.
func TestPlan_IsSeededAndUndoesEveryFault(t *testing.T) {
	names := []string{"g1", "g2", "g3", "g4", "g5"}
	grace := 38 * time.Second
	a := Plan(7, names, 0, 10*time.Minute, grace, true)
	if !reflect.DeepEqual(a, Plan(7, names, 0, 10*time.Minute, grace, true)) {
		t.Fatal("seed 7 gave two schedules")
	}
	if reflect.DeepEqual(a, Plan(8, names, 0, 10*time.Minute, grace, true)) {
		t.Fatal("seeds 7 and 8 gave the same schedule")
	}
	for seed := range int64(50) {
		steps := Plan(seed, names, 0, 10*time.Minute, grace, seed%2 == 0)
		if len(steps) < 4 {
			t.Fatalf("seed %d: %d steps in 10 minutes", seed, len(steps))
		}
		cuts := map[[2]int]int{}
		down, skewed := map[[2]int]bool{}, map[int]bool{}
		killed := 0
		for _, st := range steps {
			if st.At > 10*time.Minute {
				t.Fatalf("seed %d: step %q at %s, past the duration", seed, st.What, st.At)
			}
			for _, op := range st.Ops {
				switch op.Kind {
				case OpCut:
					cuts[[2]int{op.A, op.B}]++
				case OpUncut:
					cuts[[2]int{op.A, op.B}]--
				case OpKill:
					killed++
				case OpStart:
					killed--
					skewed[op.A] = op.Skew != 0
				case OpTargetDown, OpTargetUp:
					down[[2]int{op.A, op.Fam}] = op.Kind == OpTargetDown
				}
				if op.Kind == OpStart && op.Skew != 0 && seed%2 == 1 {
					t.Fatalf("seed %d: a skew without clock offset support", seed)
				}
			}
			if killed > 1 {
				t.Fatalf("seed %d: %d managers down at %q", seed, killed, st.What)
			}
		}
		for k, n := range cuts {
			if n != 0 {
				t.Errorf("seed %d: link %v left cut %d times", seed, k, n)
			}
		}
		for k, d := range down {
			if d {
				t.Errorf("seed %d: target %v left down", seed, k)
			}
		}
		for m, s := range skewed {
			if s {
				t.Errorf("seed %d: member %d left skewed", seed, m)
			}
		}
		if killed != 0 {
			t.Errorf("seed %d: %d managers left down", seed, killed)
		}
	}
}

// TestPlan_WithoutClockOffsetsIsTheSameScheduleWithPlainRestarts: a binary without
// --gslb-clock-offset gets the seed's schedule with each skewed restart a plain one.
func TestPlan_WithoutClockOffsetsIsTheSameScheduleWithPlainRestarts(t *testing.T) {
	names := []string{"g1", "g2", "g3"}
	skews := 0
	for seed := range int64(30) {
		with := Plan(seed, names, 0, 10*time.Minute, 38*time.Second, true)
		without := Plan(seed, names, 0, 10*time.Minute, 38*time.Second, false)
		if len(with) != len(without) {
			t.Fatalf("seed %d: %d steps with clock offsets, %d without", seed, len(with), len(without))
		}
		for i := range with {
			a, b := with[i], without[i]
			if a.At != b.At || len(a.Ops) != len(b.Ops) {
				t.Fatalf("seed %d step %d: %+v with clock offsets, %+v without", seed, i, a, b)
			}
			for k := range a.Ops {
				if a.Ops[k].Skew != 0 {
					skews++
				}
				if b.Ops[k].Skew != 0 || a.Ops[k].Kind != b.Ops[k].Kind || a.Ops[k].A != b.Ops[k].A {
					t.Fatalf("seed %d step %d: op %+v with clock offsets, %+v without", seed, i, a.Ops[k], b.Ops[k])
				}
			}
		}
	}
	if skews == 0 {
		t.Fatal("no skew in 30 seeds")
	}
}
