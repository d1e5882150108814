package main

import (
	"fmt"
	"math"
	"strconv"
	"strings"
)

// markdown renders the report as tables: the machine, the summary (a column per tool and size,
// and the ratio per size), and every run.
func (r *report) markdown() string {
	var b strings.Builder
	m := r.Machine
	fmt.Fprintf(&b, "# dnsplane vs external-dns %s\n\n", m.ExternalDNS)
	fmt.Fprintf(&b, "Started %s on %d cores, %.0f MiB, Linux %s, %s; dnsplane %s; %s. Load average at start: %s. %s\n\n",
		m.StartedAt, m.Cores, m.MemoryMiB, m.Kernel, m.GoVersion, m.DNSPlane, m.PowerDNS, m.LoadAvgAtStart, buildNote(m.BuildSeconds))
	fmt.Fprintf(&b, "Input: DNSEndpoints of %d A endpoints each over %d zones; runs alternate between the tools. "+
		"A cell is the median of the runs, with their range in brackets; the ratio is dnsplane / external-dns of the medians. "+
		"Steady-state window %.0f s. docs/bench.md says how each figure is measured.\n\n", zones, zones, r.Config.SteadySeconds)
	b.WriteString(summaryTable(r.Summary, r.Config.Sizes))
	b.WriteString("\n## Runs\n\n")
	b.WriteString("| tool | endpoints | scenario | run | load before | first sync (s) | after last create (s) | provider calls (5xx) | kube requests | peak RSS (MiB) | steady calls | 1% change (s / calls; the patches' own s) | TXT per endpoint | error |\n")
	b.WriteString("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	for _, run := range r.Runs {
		b.WriteString(runRow(run))
	}
	return b.String()
}

// summaryTable is one row per figure; per size, a column per tool and the ratio.
func summaryTable(lines []summaryLine, sizes []int) string {
	var b strings.Builder
	b.WriteString("| figure |")
	sep := "|---|"
	for _, s := range sizes {
		fmt.Fprintf(&b, " external-dns %s | dnsplane %s | ratio %s | target %s |", sizeLabel(s), sizeLabel(s), sizeLabel(s), sizeLabel(s))
		sep += "---|---|---|---|"
	}
	b.WriteString("\n" + sep + "\n")
	var order []string
	cells := map[string]map[int]summaryLine{}
	for _, l := range lines {
		if cells[l.Figure] == nil {
			order = append(order, l.Figure)
			cells[l.Figure] = map[int]summaryLine{}
		}
		cells[l.Figure][l.Size] = l
	}
	for _, f := range order {
		b.WriteString("| " + f + " |")
		for _, s := range sizes {
			l, ok := cells[f][s]
			ratio := "–"
			if ok && l.Ratio != nil {
				ratio = formatNum(*l.Ratio)
			}
			fmt.Fprintf(&b, " %s | %s | %s | %s |", statCell(l.Tools, toolExternalDNS), statCell(l.Tools, toolDNSPlane), ratio, targetCell(l))
		}
		b.WriteString("\n")
	}
	return b.String()
}

// statCell is "median (min–max) [detail]", or "–".
func statCell(tools map[string]stat, tool string) string {
	s, ok := tools[tool]
	if !ok {
		return "–"
	}
	out := formatNum(s.Median)
	if s.Min != s.Max {
		out += " (" + formatNum(s.Min) + "–" + formatNum(s.Max) + ")"
	}
	if s.Detail != "" {
		out += " [" + s.Detail + "]"
	}
	return out
}

func runRow(r runResult) string {
	change, steady, txt := "–", "–", "–"
	if e := r.Extras; e != nil {
		change = fmt.Sprintf("%s / %d (%s)", formatNum(e.ChangeSeconds), e.ChangeCalls.Total, formatNum(e.ChangePatchSeconds))
		steady = strconv.Itoa(e.SteadyCalls.Total)
		txt = formatNum(e.RegistryPerEndpoint)
	}
	after := "–"
	if r.AfterLastCreateSeconds != 0 {
		after = formatNum(r.AfterLastCreateSeconds)
	}
	return fmt.Sprintf("| %s | %d | %s | %d | %s | %s | %s | %d (%d) | %d | %s | %s | %s | %s | %s |\n",
		r.Tool, r.Size, r.Scenario, r.Run, r.LoadAvg, formatNum(r.FirstSyncSeconds), after,
		r.ProviderCalls.Total, r.ProviderCalls.Errors, r.KubeRequests.Total, formatNum(r.PeakRSSMiB),
		steady, change, txt, strings.ReplaceAll(r.Error, "|", "/"))
}

// sizeLabel is 1000 → "1k", 50000 → "50k", 150 → "150".
func sizeLabel(n int) string {
	if n >= 1000 && n%1000 == 0 {
		return strconv.Itoa(n/1000) + "k"
	}
	return strconv.Itoa(n)
}

// formatNum prints integers as such, others with 0 decimals from 100, 1 from 1 and 2 below.
func formatNum(v float64) string {
	switch a := math.Abs(v); {
	case v == math.Trunc(v) && a < 1e15:
		return strconv.FormatInt(int64(v), 10)
	case a >= 100:
		return strconv.FormatFloat(v, 'f', 0, 64)
	case a >= 1:
		return strconv.FormatFloat(v, 'f', 1, 64)
	default:
		return strconv.FormatFloat(v, 'f', 2, 64)
	}
}

// buildNote says how long `make bench` spent building, when it said (BENCH_BUILD_SECONDS).
func buildNote(seconds float64) string {
	if seconds <= 0 {
		return "Build time not recorded (run through `make bench`)."
	}
	return fmt.Sprintf("Building took %.0f s.", seconds)
}

// targetCell is the figure's target and whether it is met ("≤ 1× external-dns: met"), "–"
// where it has none.
func targetCell(l summaryLine) string {
	switch {
	case l.Target == "":
		return "–"
	case l.Met == nil:
		return l.Target + ": not judged"
	case *l.Met:
		return l.Target + ": met"
	default:
		return l.Target + ": **missed**"
	}
}
