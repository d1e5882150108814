package main

import "testing"

func TestGoalJudge(t *testing.T) {
	ratio := func(v float64) *float64 { return &v }
	line := func(size int, r *float64, dnsplane float64) summaryLine {
		return summaryLine{Size: size, Ratio: r, Tools: map[string]stat{toolDNSPlane: {N: 1, Median: dnsplane}}}
	}
	for _, tc := range []struct {
		name string
		goal goal
		line summaryLine
		desc string
		met  *bool
	}{
		{"no goal", goal{}, line(1000, ratio(2), 5), "", nil},
		{"ratio met", atMostExternalDNS, line(1000, ratio(0.9), 5), "≤ 1× external-dns", new(true)},
		{"ratio equal is met", atMostExternalDNS, line(1000, ratio(1), 5), "≤ 1× external-dns", new(true)},
		{"ratio missed", atMostExternalDNS, line(1000, ratio(1.2), 5), "≤ 1× external-dns", new(false)},
		{"ratio without external-dns", atMostExternalDNS, line(1000, nil, 5), "≤ 1× external-dns", nil},
		{"rss below 50k: ratio only", peakRSSTarget, line(10000, ratio(0.9), 500), "≤ 1× external-dns", new(true)},
		{"rss at 50k over 400", peakRSSTarget, line(50000, ratio(0.9), 690), "≤ 1× external-dns, ≤ 400 MiB", new(false)},
		{"rss at 50k, dnsplane alone", peakRSSTarget, line(50000, nil, 390), "≤ 1× external-dns, ≤ 400 MiB", new(true)},
		{"change time at 1k: none", changeTimeTarget, line(1000, nil, 0.5), "", nil},
		{"change time at 10k missed", changeTimeTarget, line(10000, nil, 0.5), "≤ 0.30 s", new(false)},
		{"change calls met", changeCallsTarget, line(1000, nil, 10), "≤ 10", new(true)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			desc, met := tc.goal.judge(tc.line)
			if desc != tc.desc || (met == nil) != (tc.met == nil) || (met != nil && *met != *tc.met) {
				t.Errorf("judge = %q, %v; want %q, %v", desc, deref(met), tc.desc, deref(tc.met))
			}
		})
	}
}

func deref(b *bool) any {
	if b == nil {
		return nil
	}
	return *b
}
