// Package metrictest reads Prometheus metrics in tests, from a registry (a prometheus.Gatherer)
// as /metrics serves it: the sum of a family's series whose labels include given ones. It is
// imported by tests only; it asserts nothing.
package metrictest

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// Sum gathers g and returns the sum of the values (counter, gauge or untyped) of the series of
// family name whose labels include every one of want (name to value; nil matches every series),
// and how many series matched. Its error is Gather's.
func Sum(g prometheus.Gatherer, name string, want map[string]string) (float64, int, error) {
	fams, err := g.Gather()
	if err != nil {
		return 0, 0, err
	}
	var sum float64
	n := 0
	for _, f := range fams {
		if f.GetName() != name {
			continue
		}
		for _, m := range f.GetMetric() {
			if hasLabels(m, want) {
				sum += m.GetCounter().GetValue() + m.GetGauge().GetValue() + m.GetUntyped().GetValue()
				n++
			}
		}
	}
	return sum, n, nil
}

// Value is Sum's sum (0 when no series matches); it fails the test when g cannot be gathered.
func Value(t testing.TB, g prometheus.Gatherer, name string, want map[string]string) float64 {
	t.Helper()
	v, _, err := Sum(g, name, want)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func hasLabels(m *dto.Metric, want map[string]string) bool {
	n := 0
	for _, l := range m.GetLabel() {
		if v, ok := want[l.GetName()]; ok && v == l.GetValue() {
			n++
		}
	}
	return n == len(want)
}
