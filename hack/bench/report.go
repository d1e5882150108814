package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"
)

// report is hack/bench/out/report.json.
type report struct {
	Machine machine       `json:"machine"`
	Config  reportConfig  `json:"config"`
	Runs    []runResult   `json:"runs"`
	Summary []summaryLine `json:"summary"`
}

type reportConfig struct {
	Sizes          []int      `json:"sizes"`
	Runs           int        `json:"runs"`
	Scenarios      []scenario `json:"scenarios"`
	Tools          []string   `json:"tools"`
	SteadySeconds  float64    `json:"steadySeconds"`
	SettleSeconds  float64    `json:"settleSeconds"`
	MaxRSSMiB      float64    `json:"maxRSSMiB"`
	Zones          int        `json:"zones"`
	EndpointsPerOb int        `json:"endpointsPerObject"`
}

// stat is one figure of one tool at one size over its successful runs.
type stat struct {
	N      int     `json:"n"`
	Median float64 `json:"median"`
	Min    float64 `json:"min"`
	Max    float64 `json:"max"`
	// Detail, for call counts, is the median by method, e.g. "20 GET, 10 PATCH".
	Detail string `json:"detail,omitempty"`
}

// summaryLine is one figure at one size for both tools, and dnsplane's median over
// external-dns'.
type summaryLine struct {
	Figure string          `json:"figure"`
	Size   int             `json:"endpoints"`
	Tools  map[string]stat `json:"tools"`
	// Ratio is dnsplane / external-dns of the medians; absent where either is missing or
	// external-dns' is 0.
	Ratio *float64 `json:"ratioDNSPlaneOverExternalDNS,omitempty"`
	// Target is the bench's bar for the figure at this size ("" = none), and Met whether
	// dnsplane's median meets it (absent where a figure it needs is missing).
	Target string `json:"target,omitempty"`
	Met    *bool  `json:"met,omitempty"`
}

func newReport(c config) *report {
	return &report{Machine: machineFacts(c), Config: reportConfig{
		Sizes: c.sizes, Runs: c.runs, Scenarios: c.scenarios, Tools: c.tools,
		SteadySeconds: c.steady.Seconds(), SettleSeconds: c.settle.Seconds(), MaxRSSMiB: c.maxRSSMiB,
		Zones: zones, EndpointsPerOb: zones,
	}}
}

// machineFacts collects the machine and the versions; a fact it cannot read is left empty.
func machineFacts(c config) machine {
	m := machine{Cores: runtime.NumCPU(), GoVersion: runtime.Version(), BuildSeconds: c.buildSeconds,
		StartedAt: time.Now().UTC().Format(time.RFC3339), LoadAvgAtStart: loadAvg(), ExternalDNS: externalDNSVersion}
	if b, err := os.ReadFile("/proc/sys/kernel/osrelease"); err == nil {
		m.Kernel = strings.TrimSpace(string(b))
	}
	if b, err := os.ReadFile("/proc/meminfo"); err == nil {
		var kb float64
		if _, err := fmt.Sscanf(string(b), "MemTotal: %f kB", &kb); err == nil {
			m.MemoryMiB = kb / 1024
		}
	}
	m.DNSPlane = commandLine(c.root, "git", "describe", "--always", "--dirty", "--tags")
	m.PowerDNS = powerDNSVersion(commandLine(c.root, "/usr/sbin/pdns_server", "--version"))
	return m
}

// powerDNSVersion trims pdns_server --version's line ("Dec 01 12:29:32 PowerDNS Authoritative
// Server 4.7.3 (C) ...") to "PowerDNS Authoritative Server 4.7.3".
func powerDNSVersion(line string) string {
	if i := strings.Index(line, "PowerDNS"); i >= 0 {
		line = line[i:]
	}
	line, _, _ = strings.Cut(line, " (C)")
	return line
}

// commandLine returns the first line of a command's output, or "" when it fails.
func commandLine(dir, name string, args ...string) string {
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	out, _ := cmd.CombinedOutput()
	for l := range strings.SplitSeq(string(out), "\n") {
		if l = strings.TrimSpace(l); l != "" {
			return l
		}
	}
	return ""
}

// write writes report.json, report.md and bench.png to dir, the summary recomputed.
func (r *report) write(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("create %s: %w", dir, err)
	}
	r.Summary = summarize(r.Runs, r.Config.Sizes)
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return fmt.Errorf("encode report: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "report.json"), append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("write report.json: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "report.md"), []byte(r.markdown()), 0o644); err != nil {
		return fmt.Errorf("write report.md: %w", err)
	}
	return plotReport(r.Runs, filepath.Join(dir, "bench.png"))
}

// figure extracts one number of a run; ok false where the run has none.
type figure struct {
	name     string
	scenario string // "" = any scenario (the extras)
	value    func(runResult) (float64, bool)
	byMethod func(runResult) map[string]int // call counts: the detail by method
	target   goal
}

// goal is the bench's bar for a figure, printed beside it: dnsplane's median at most maxRatio
// times external-dns' (0: no ratio bar), and at most the value maxAt gives for the size (ok
// false: no bar at that size).
type goal struct {
	maxRatio float64
	maxAt    func(size int) (limit float64, ok bool)
	unit     string
}

// any reports whether t sets a bar at size.
func (t goal) any(size int) bool {
	if t.maxRatio > 0 {
		return true
	}
	if t.maxAt != nil {
		_, ok := t.maxAt(size)
		return ok
	}
	return false
}

// judge describes t at size and whether line meets it ("≤ 1.0× external-dns, ≤ 400 MiB: met").
// A bar whose figure is missing (no external-dns run for a ratio) is not judged: met is nil.
func (t goal) judge(line summaryLine) (desc string, met *bool) {
	if !t.any(line.Size) {
		return "", nil
	}
	var parts []string
	ok, judged := true, false
	if t.maxRatio > 0 {
		parts = append(parts, fmt.Sprintf("≤ %s× external-dns", formatNum(t.maxRatio)))
		if line.Ratio != nil {
			judged = true
			ok = ok && *line.Ratio <= t.maxRatio
		}
	}
	if t.maxAt != nil {
		if limit, has := t.maxAt(line.Size); has {
			parts = append(parts, fmt.Sprintf("≤ %s%s", formatNum(limit), t.unit))
			if d, have := line.Tools[toolDNSPlane]; have {
				judged = true
				ok = ok && d.Median <= limit
			}
		}
	}
	if !judged {
		return strings.Join(parts, ", "), nil
	}
	return strings.Join(parts, ", "), &ok
}

// The bench's targets (docs/bench.md).
var (
	atMostExternalDNS = goal{maxRatio: 1.0}
	peakRSSTarget     = goal{maxRatio: 1.0, unit: " MiB", maxAt: func(size int) (float64, bool) { return 400, size >= 50000 }}
	changeTimeTarget  = goal{unit: " s", maxAt: func(size int) (float64, bool) { return 0.3, size == 10000 }}
	// One write per touched zone (the change touches every one of the bench's zones), no reads.
	changeCallsTarget = goal{maxAt: func(size int) (float64, bool) { return float64(zones), true }}
)

// figures lists the summary's figures, in the order of the tables.
func figures(scenarios []scenario) []figure {
	var fs []figure
	for _, sc := range scenarios {
		name := sc.Name
		fs = append(fs,
			figure{name: "first sync (s), " + name, scenario: name, value: func(r runResult) (float64, bool) { return r.FirstSyncSeconds, true },
				target: equalLimits(sc, atMostExternalDNS)})
		fs = append(fs, figure{name: "every object Ready (s; dnsplane only), " + name, scenario: name,
			value: func(r runResult) (float64, bool) { return r.ReadySeconds, r.ReadySeconds > 0 }})
		if sc.Created {
			fs = append(fs, figure{name: "last record served after the last create (s), " + name, scenario: name,
				value: func(r runResult) (float64, bool) { return r.AfterLastCreateSeconds, true }})
		}
		fs = append(fs,
			figure{name: "provider calls in the first sync, " + name, scenario: name,
				value:    func(r runResult) (float64, bool) { return float64(r.ProviderCalls.Total), true },
				byMethod: func(r runResult) map[string]int { return r.ProviderCalls.ByMethod }, target: atMostExternalDNS},
			figure{name: "provider 5xx answers in the first sync, " + name, scenario: name,
				value: func(r runResult) (float64, bool) { return float64(r.ProviderCalls.Errors), true }},
			figure{name: "Kubernetes API requests per object in the first sync, " + name, scenario: name,
				value: func(r runResult) (float64, bool) { return r.KubeRequests.PerObject, true }},
			figure{name: "peak RSS (MiB), " + name, scenario: name, value: func(r runResult) (float64, bool) { return r.PeakRSSMiB, true },
				target: peakRSSTarget})
	}
	ex := func(f func(*extras) float64) func(runResult) (float64, bool) {
		return func(r runResult) (float64, bool) {
			if r.Extras == nil {
				return 0, false
			}
			return f(r.Extras), true
		}
	}
	return append(fs,
		figure{name: "provider calls in the steady-state window", value: ex(func(e *extras) float64 { return float64(e.SteadyCalls.Total) }),
			byMethod: func(r runResult) map[string]int { return r.Extras.SteadyCalls.ByMethod }},
		figure{name: "1% change: time to served (s)", value: ex(func(e *extras) float64 { return e.ChangeSeconds }), target: changeTimeTarget},
		figure{name: "1% change: provider calls", value: ex(func(e *extras) float64 { return float64(e.ChangeCalls.Total) }),
			byMethod: func(r runResult) map[string]int { return r.Extras.ChangeCalls.ByMethod }, target: changeCallsTarget},
		figure{name: "registry TXT records per endpoint", value: ex(func(e *extras) float64 { return e.RegistryPerEndpoint })},
	)
}

// summarize computes every figure's stat per tool and size from the successful runs.
func summarize(runs []runResult, sizes []int) []summaryLine {
	var scs []scenario
	for _, sc := range allScenarios {
		if slices.ContainsFunc(runs, func(r runResult) bool { return r.Scenario == sc.Name }) {
			scs = append(scs, sc)
		}
	}
	var out []summaryLine
	for _, f := range figures(scs) {
		for _, size := range sizes {
			line := summaryLine{Figure: f.name, Size: size, Tools: map[string]stat{}}
			for _, tool := range []string{toolExternalDNS, toolDNSPlane} {
				if s, ok := f.stat(runs, tool, size); ok {
					line.Tools[tool] = s
				}
			}
			if len(line.Tools) == 0 {
				continue
			}
			a, okA := line.Tools[toolDNSPlane]
			b, okB := line.Tools[toolExternalDNS]
			if okA && okB && b.Median != 0 {
				ratio := a.Median / b.Median
				line.Ratio = &ratio
			}
			line.Target, line.Met = f.target.judge(line)
			out = append(out, line)
		}
	}
	return out
}

// equalLimits returns t for a scenario at equal client limits (qps1000) and no target for the
// others: the first-sync target compares the tools at equal limits.
func equalLimits(sc scenario, t goal) goal {
	if strings.HasSuffix(sc.Name, "/qps1000") {
		return t
	}
	return goal{}
}

// stat returns f over the successful runs of tool at size.
func (f figure) stat(runs []runResult, tool string, size int) (stat, bool) {
	var vals []float64
	byMethod := map[string][]float64{}
	for _, r := range runs {
		if r.Tool != tool || r.Size != size || r.Error != "" || (f.scenario != "" && r.Scenario != f.scenario) {
			continue
		}
		v, ok := f.value(r)
		if !ok {
			continue
		}
		vals = append(vals, v)
		if f.byMethod != nil {
			for m, n := range f.byMethod(r) {
				byMethod[m] = append(byMethod[m], float64(n))
			}
		}
	}
	if len(vals) == 0 {
		return stat{}, false
	}
	s := stat{N: len(vals), Median: median(vals), Min: slices.Min(vals), Max: slices.Max(vals)}
	methods := make([]string, 0, len(byMethod))
	for m := range byMethod {
		methods = append(methods, m)
	}
	slices.Sort(methods)
	var parts []string
	for _, m := range methods {
		// A run without a method counts 0 of it.
		v := append(byMethod[m], make([]float64, len(vals)-len(byMethod[m]))...)
		parts = append(parts, fmt.Sprintf("%s %s", formatNum(median(v)), m))
	}
	s.Detail = strings.Join(parts, ", ")
	return s, true
}

// median of vals (the mean of the middle two for an even count); vals is not modified.
func median(vals []float64) float64 {
	v := slices.Clone(vals)
	slices.Sort(v)
	n := len(v)
	if n == 0 {
		return 0
	}
	if n%2 == 1 {
		return v[n/2]
	}
	return (v[n/2-1] + v[n/2]) / 2
}
