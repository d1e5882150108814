package probe

import (
	"context"
	"fmt"
	"net/http"
	"net/netip"
	"runtime"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/types"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/dnsplane/dnsplane/pkg/gslb/health"
)

// BenchmarkRun_1000Targets measures the probe cost: 1,000 HTTP (or TCP) probes per Run against
// 10 loopback servers (127.0.0.1, each probe its own connection), 32 workers. It reports probes
// per second of wall time; -benchmem gives the allocations per Run (divide by 1,000 per probe).
// Run it alone: go test ./pkg/gslb/probe/ -run '^$' -bench Run_1000 -benchmem -benchtime 5x
func BenchmarkRun_1000Targets(b *testing.B) {
	ok := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {})
	var targets []netip.AddrPort
	for range 10 {
		a, port := serve(b, "127.0.0.1:0", false, ok)
		targets = append(targets, netip.AddrPortFrom(a, uint16(port)))
	}
	for _, proto := range []string{HTTP, TCP} {
		b.Run(proto, func(b *testing.B) {
			jobs := make([]Job, 1000)
			for i := range jobs {
				t := targets[i%len(targets)]
				spec := Spec{Protocol: proto, Port: int(t.Port()), Timeout: 10 * time.Second}
				if proto == HTTP {
					spec.Path, spec.Host = "/healthz", "app.gslb.test"
				}
				jobs[i] = Job{Addr: t.Addr(), Spec: spec}
			}
			p := &Prober{}
			b.ReportAllocs()
			start := time.Now()
			for b.Loop() {
				for i, r := range p.Run(context.Background(), jobs) {
					if !r.OK {
						b.Fatal(fmt.Sprintf("probe %d: %s", i, r.Err))
					}
				}
			}
			b.ReportMetric(float64(b.N*len(jobs))/time.Since(start).Seconds(), "probes/s")
		})
	}
}

// BenchmarkRun_100Gslbs10Targets3Vantages is the probe cost case of docs/design.md, "Health and partitions": 100 Gslbs × 10 targets each,
// probed from 3 vantage points (3 Probers, each with its own 32 workers, running at once, as 3
// clusters would), against 10 loopback HTTP servers on 127.0.0.1 to 127.0.0.10 (the same 10
// addresses serve every Gslb, with its own Host header). One op is one round: 3,000 probes. It
// reports probes per second of wall time, allocations and bytes per probe, and CPU time (user +
// system, of the whole process, so the in-process servers' share included) per probe.
// Run it alone: go test ./pkg/gslb/probe/ -run '^$' -bench 100Gslbs -benchtime 5x
func BenchmarkRun_100Gslbs10Targets3Vantages(b *testing.B) {
	ok := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {})
	var targets []netip.AddrPort
	for i := range 10 {
		a, port := serve(b, fmt.Sprintf("127.0.0.%d:0", i+1), false, ok)
		targets = append(targets, netip.AddrPortFrom(a, uint16(port)))
	}
	const gslbs, vantages = 100, 3
	for _, proto := range []string{HTTP, TCP} {
		b.Run(proto, func(b *testing.B) {
			var jobs []Job
			for g := range gslbs {
				for _, t := range targets {
					spec := Spec{Protocol: proto, Port: int(t.Port()), Timeout: 10 * time.Second}
					if proto == HTTP {
						spec.Path, spec.Host = "/healthz", fmt.Sprintf("app-%d.gslb.test", g)
					}
					jobs = append(jobs, Job{Addr: t.Addr(), Spec: spec})
				}
			}
			probers := make([]*Prober, vantages)
			for i := range probers {
				probers[i] = &Prober{}
			}
			var ms0, ms1 runtime.MemStats
			runtime.ReadMemStats(&ms0)
			cpu0 := cpuTime(b)
			start := time.Now()
			for b.Loop() {
				var wg sync.WaitGroup
				failed := make([]string, vantages)
				for v, p := range probers {
					wg.Add(1)
					go func() {
						defer wg.Done()
						for i, r := range p.Run(context.Background(), jobs) {
							if !r.OK && failed[v] == "" {
								failed[v] = fmt.Sprintf("vantage %d probe %d: %s", v, i, r.Err)
							}
						}
					}()
				}
				wg.Wait()
				for _, f := range failed {
					if f != "" {
						b.Fatal(f)
					}
				}
			}
			wall := time.Since(start)
			cpu := cpuTime(b) - cpu0
			runtime.ReadMemStats(&ms1)
			probes := float64(b.N * vantages * len(jobs))
			b.ReportMetric(probes/wall.Seconds(), "probes/s")
			b.ReportMetric(float64(ms1.Mallocs-ms0.Mallocs)/probes, "allocs/probe")
			b.ReportMetric(float64(ms1.TotalAlloc-ms0.TotalAlloc)/probes, "B/probe")
			b.ReportMetric(float64(cpu.Microseconds())/probes, "cpu-µs/probe")
		})
	}
}

// cpuTime is the process's user plus system CPU time so far.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkScheduler_100Gslbs10Targets3Vantages is the same case through the Scheduler: 3
// Schedulers (vantage points, each on its own fake clock, 32 workers, with Metrics), each with
// 100 Gslbs × 10 HTTP targets declared; one op steps every clock past an interval and waits
// for the 3,000 results. On top of the probes it measures the scheduling: the due scan, the
// state machine, the metrics.
// Run it alone: go test ./pkg/gslb/probe/ -run '^$' -bench Scheduler_100 -benchtime 5x
func BenchmarkScheduler_100Gslbs10Targets3Vantages(b *testing.B) {
	ok := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {})
	var targets []Target
	var port int
	for i := range 10 {
		// One port for all ten addresses: listen on each address until they share one.
		a, p := serve(b, fmt.Sprintf("127.0.0.%d:%d", i+1, port), false, ok)
		port = p
		targets = append(targets, Target{Addr: a, GeoTag: "us"})
	}
	const gslbs, vantages = 100, 3
	results := make(chan struct{}, gslbs*len(targets)*vantages)
	var (
		scheds []*Scheduler
		clocks []*testingclock.FakeClock
	)
	for v := range vantages {
		fc := testingclock.NewFakeClock(time.Unix(1764784800, 0))
		m, err := NewMetrics(prometheus.NewRegistry())
		if err != nil {
			b.Fatal(err)
		}
		s := NewScheduler(SchedulerOptions{Clock: fc, GeoTag: fmt.Sprintf("v%d", v), Metrics: m,
			Observed: func(st TargetState) {
				if st.State.Verdict != health.Up {
					b.Errorf("%+v", st)
				}
				results <- struct{}{}
			}})
		b.Cleanup(s.Stop)
		for g := range gslbs {
			host := fmt.Sprintf("app-%d.gslb.test", g)
			s.Set(HostKey{Gslb: types.NamespacedName{Namespace: "bench", Name: host}, Host: host}, targets,
				Check{Spec: Spec{Protocol: HTTP, Port: port, Path: "/healthz", Host: host, Timeout: 10 * time.Second},
					Interval: 10 * time.Second})
		}
		scheds, clocks = append(scheds, s), append(clocks, fc)
	}
	n := gslbs * len(targets) * vantages
	var ms0, ms1 runtime.MemStats
	runtime.ReadMemStats(&ms0)
	cpu0 := cpuTime(b)
	start := time.Now()
	for b.Loop() {
		for _, fc := range clocks {
			for !fc.HasWaiters() {
				time.Sleep(time.Millisecond)
			}
			fc.Step(11 * time.Second)
		}
		for range n {
			<-results
		}
	}
	wall := time.Since(start)
	cpu := cpuTime(b) - cpu0
	runtime.ReadMemStats(&ms1)
	probes := float64(b.N * n)
	b.ReportMetric(probes/wall.Seconds(), "probes/s")
	b.ReportMetric(float64(ms1.Mallocs-ms0.Mallocs)/probes, "allocs/probe")
	b.ReportMetric(float64(ms1.TotalAlloc-ms0.TotalAlloc)/probes, "B/probe")
	b.ReportMetric(float64(cpu.Microseconds())/probes, "cpu-µs/probe")
}
