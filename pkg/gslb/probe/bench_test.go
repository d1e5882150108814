package probe

import (
	"context"
	"fmt"
	"net/http"
	"net/netip"
	"testing"
	"time"
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
