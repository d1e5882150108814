package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strconv"
	"syscall"
	"time"

	"github.com/go-logr/logr"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
)

// Values the grace window depends on that the manager fixes: the clock skew a reader tolerates
// (pkg/gslb/health.DefaultMaxSkew) and a record's validity in probe or reconcile periods
// (pkg/gslb/health.Validity).
const (
	maxSkew         = 30 * time.Second
	validityPeriods = 3
)

// options are the command line's.
type options struct {
	seed     int64
	duration time.Duration
	members  int
	root     string
	repo     string
	manager  string
	timing   timing
	query    time.Duration
	check    string
	plan     bool
	flap     [2]time.Duration // the decision's flap window and dwell
}

// grace is the window after a change of the ground truth in which the invariants whose premise
// it made true are not checked yet: the longer of a probe verdict's detection (failureThreshold
// probes, each up to interval plus 10% jitter, the last one up to its timeout) and a silent
// member's record going stale (its validity, 3 periods, plus the clock skew tolerated), plus
// two exchanges (the verdict published at the next reconcile, read by peers at theirs, each a
// reconcile interval plus a peer query's timeout) and 2 s for the zone write.
func (o options) grace() time.Duration {
	t := o.timing
	detect := time.Duration(float64(t.Failure)*1.1*float64(t.Interval)) + t.Timeout
	stale := validityPeriods*max(t.Interval, t.Reconcile) + maxSkew
	return max(detect, stale) + 2*(t.Reconcile+t.PeerTimeout) + 2*time.Second
}

func parseFlags() (options, error) {
	var o options
	flag.Int64Var(&o.seed, "seed", 0, "seed of the schedule (0: one from the clock, printed)")
	flag.DurationVar(&o.duration, "duration", 10*time.Minute, "how long the schedule runs, after the members are up")
	flag.IntVar(&o.members, "members", 5, "members (3 to 9)")
	flag.StringVar(&o.root, "dir", "", "the run's directory: logs, answers, schedule (default /tmp/dnsplane-chaos-<seed>)")
	flag.StringVar(&o.repo, "repo", ".", "the repository: bin/ holds the control-plane binaries (make envtest-bins)")
	flag.StringVar(&o.manager, "manager", "bin/manager", "the manager binary (make build)")
	flag.DurationVar(&o.timing.Interval, "interval", time.Second, "healthCheck intervalSeconds (whole seconds)")
	flag.DurationVar(&o.timing.Timeout, "timeout", time.Second, "healthCheck timeoutSeconds (whole seconds)")
	flag.IntVar(&o.timing.Failure, "failure-threshold", 2, "healthCheck failureThreshold")
	flag.DurationVar(&o.timing.Reconcile, "gslb-interval", time.Second, "the managers' --gslb-interval")
	flag.DurationVar(&o.timing.PeerTimeout, "gslb-peer-timeout", 500*time.Millisecond, "the managers' --gslb-peer-timeout")
	flag.DurationVar(&o.query, "query-interval", 500*time.Millisecond, "pause between two query rounds")
	flag.StringVar(&o.check, "check", "", "check the logs of a finished run in this directory, and do nothing else")
	flag.DurationVar(&o.flap[0], "flap-window", 10*time.Minute, "the decision's flap damping window (pkg/gslb/health Judge.FlapWindow); 0 with -flap-dwell 0: no damping")
	flag.DurationVar(&o.flap[1], "flap-dwell", 2*time.Minute, "the decision's flap damping dwell (Judge.FlapDwell)")
	flag.BoolVar(&o.plan, "plan", false, "print the seed's schedule and do nothing else")
	flag.Parse()
	if o.seed == 0 {
		o.seed = time.Now().UnixNano() % 1_000_000
	}
	if o.root == "" {
		o.root = filepath.Join(os.TempDir(), "dnsplane-chaos-"+strconv.FormatInt(o.seed, 10))
	}
	var err error
	if o.repo, err = filepath.Abs(o.repo); err == nil {
		o.manager, err = filepath.Abs(o.manager)
	}
	if o.members < 3 || o.members > maxMembers {
		err = errors.Join(err, fmt.Errorf("-members %d: want 3 to %d", o.members, maxMembers))
	}
	return o, err
}

func main() { os.Exit(run()) }

func run() int {
	o, err := parseFlags()
	if err != nil {
		fmt.Fprintf(os.Stderr, "chaos: %v\n", err)
		return 2
	}
	if o.check != "" {
		return checkDir(o.check)
	}
	if o.plan {
		printPlan(o)
		return 0
	}
	if os.Geteuid() != 0 {
		fmt.Fprintln(os.Stderr, "chaos: needs root (useradd, iptables, ip addr)")
		return 2
	}
	ctrllog.SetLogger(logr.Discard()) // the Kubernetes clients' logs; errors are returned
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	unlock, err := lockHost()
	if err != nil {
		fmt.Fprintf(os.Stderr, "chaos: %v\n", err)
		return 2
	}
	defer unlock()
	if done := cleanupHost(false); done != "" {
		fmt.Printf("chaos: removed what an earlier run left: %s\n", done)
	}
	skew := supportsClockOffset(o.manager)
	if !skew {
		fmt.Printf("chaos: %s has no --gslb-clock-offset: each clock skew of the schedule is a plain restart\n", o.manager)
	}
	fmt.Printf("chaos: seed %d, %d members, schedule %s, grace window %s, run directory %s\n", o.seed, o.members, o.duration, o.grace(), o.root)
	b, err := setup(ctx, o)
	defer b.teardown()
	if err != nil {
		fmt.Fprintf(os.Stderr, "chaos: setup: %v (manager logs in %s)\n", err, o.root)
		return 2
	}
	if err := b.soak(ctx, o, skew); err != nil {
		fmt.Fprintf(os.Stderr, "chaos: %v (seed %d)\n", err, o.seed)
		return 2
	}
	return printReport(b.w, Check(b.w, b.changes, b.answers), os.Stdout)
}

// soak runs the query loop and the seeded schedule for the run's duration.
func (b *bed) soak(ctx context.Context, o options, skew bool) error {
	names := make([]string, len(b.w.Members))
	for m, mem := range b.w.Members {
		names[m] = mem.Name
	}
	steps := Plan(o.seed, names, b.w.Primary, o.duration, b.w.Grace, skew)
	b.mu.Lock()
	b.record("start")
	start := b.changes[0].At
	b.mu.Unlock()
	qctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); b.queryLoop(qctx, o.query) }()
	err := b.execute(ctx, steps, start)
	if err == nil {
		select {
		case <-ctx.Done():
			err = ctx.Err()
		case <-time.After(time.Until(start.Add(o.duration))):
		}
	}
	cancel()
	<-done
	b.wg.Wait()
	return err
}

// printPlan prints the steps of the seed's schedule (with clock skews when the manager takes
// --gslb-clock-offset).
func printPlan(o options) {
	names := make([]string, o.members)
	for m := range names {
		names[m] = "g" + strconv.Itoa(m+1)
	}
	for _, st := range Plan(o.seed, names, 0, o.duration, o.grace(), supportsClockOffset(o.manager)) {
		fmt.Printf("%8s %s\n", st.At, st.What)
	}
}

// lockHost takes the machine's chaos lock (one run at a time: runs share the users, the
// addresses and the rules' comment, and each one's start removes what it finds).
func lockHost() (func(), error) {
	path := filepath.Join(os.TempDir(), "dnsplane-chaos.lock")
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		_ = f.Close()
		return nil, fmt.Errorf("another chaos run holds %s: %w", path, err)
	}
	return func() { _ = f.Close() }, nil
}

// supportsClockOffset reports whether the manager takes --gslb-clock-offset.
func supportsClockOffset(manager string) bool {
	return exec.Command(manager, "--gslb-clock-offset=0s", "--version").Run() == nil
}

// checkDir checks a finished run's logs again.
func checkDir(dir string) int {
	var w World
	b, err := os.ReadFile(filepath.Join(dir, "world.json"))
	if err == nil {
		err = json.Unmarshal(b, &w)
	}
	var changes []Change
	var answers []Answer
	if err == nil {
		changes, err = readLines[Change](filepath.Join(dir, "changes.jsonl"))
	}
	if err == nil {
		answers, err = readLines[Answer](filepath.Join(dir, "answers.jsonl"))
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "chaos: %v\n", err)
		return 2
	}
	return printReport(w, Check(w, changes, answers), os.Stdout)
}

// readLines decodes a JSON-lines file.
func readLines[T any](path string) ([]T, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }()
	var out []T
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var v T
		if err := json.Unmarshal(sc.Bytes(), &v); err != nil {
			return nil, fmt.Errorf("%s: %w", path, err)
		}
		out = append(out, v)
	}
	return out, sc.Err()
}

// printReport prints the run's figures and violations, and returns the exit code: 1 when an
// invariant was violated.
func printReport(w World, rep Report, out *os.File) int {
	fmt.Fprintf(out, "chaos: seed %d: %d faults injected, %d answers checked (%d queries unanswered: member down or starting)\n",
		w.Seed, rep.Faults, rep.Answers, rep.Unanswered)
	fmt.Fprintf(out, "chaos: failover times: %s; heal times: %s (grace window %s)\n", stats(rep.Failovers), stats(rep.Heals), w.Grace)
	for _, v := range rep.Violations {
		fmt.Fprintf(out, "VIOLATION %s at %s (seed %d): %s [state: %s; %d answers until %s]\n",
			v.Invariant, clock(v.First), w.Seed, v.Detail, v.Fault, v.Count, clock(v.Last))
	}
	if len(rep.Violations) > 0 {
		fmt.Fprintf(out, "chaos: seed %d: %d violations\n", w.Seed, len(rep.Violations))
		return 1
	}
	fmt.Fprintf(out, "chaos: seed %d: no violation\n", w.Seed)
	return 0
}

// stats is "n, median m, max x" of ds.
func stats(ds []time.Duration) string {
	if len(ds) == 0 {
		return "none measured"
	}
	s := slices.Sorted(slices.Values(ds))
	return fmt.Sprintf("%d, median %s, max %s", len(s), s[len(s)/2].Round(10*time.Millisecond), s[len(s)-1].Round(10*time.Millisecond))
}
