package main

import (
	"bufio"
	"context"
	"fmt"
	"strconv"
	"strings"
	"time"

	"k8s.io/client-go/kubernetes"
)

// kubeRequests are Kubernetes API requests counted between two scrapes of the kube-apiserver's
// apiserver_request_total.
type kubeRequests struct {
	// Total counts every request but the ones on leases (the API server's own identity leases)
	// and the driver's own creates of the DNSEndpoints.
	Total int `json:"total"`
	// PerObject is Total over the number of DNSEndpoints.
	PerObject float64 `json:"perObject"`
	// ByVerbResource counts requests by "VERB resource[/subresource]", e.g. "PATCH
	// dnsendpoints/status"; the driver's creates are subtracted here too.
	ByVerbResource map[string]int `json:"byVerbResource"`
}

// scrapeRequests returns apiserver_request_total summed by "VERB resource[/subresource]".
func (w *world) scrapeRequests(ctx context.Context) (map[string]int, error) {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	cs, err := kubernetes.NewForConfig(w.rest)
	if err != nil {
		return nil, fmt.Errorf("clientset: %w", err)
	}
	raw, err := cs.RESTClient().Get().AbsPath("/metrics").DoRaw(ctx)
	if err != nil {
		return nil, fmt.Errorf("kube-apiserver /metrics: %w", err)
	}
	return parseRequestTotals(string(raw))
}

// parseRequestTotals sums the samples of apiserver_request_total in a Prometheus text
// exposition by "VERB resource[/subresource]". Malformed sample values are errors.
func parseRequestTotals(text string) (map[string]int, error) {
	out := map[string]int{}
	s := bufio.NewScanner(strings.NewReader(text))
	s.Buffer(make([]byte, 1<<20), 1<<20)
	for s.Scan() {
		line := s.Text()
		rest, ok := strings.CutPrefix(line, "apiserver_request_total{")
		if !ok {
			continue
		}
		labels, value, ok := strings.Cut(rest, "} ")
		if !ok {
			return nil, fmt.Errorf("apiserver_request_total: malformed line %q", line)
		}
		v, err := strconv.ParseFloat(strings.Fields(value)[0], 64)
		if err != nil {
			return nil, fmt.Errorf("apiserver_request_total: value of %q: %w", line, err)
		}
		l := parseLabels(labels)
		key := l["verb"] + " " + l["resource"]
		if l["subresource"] != "" {
			key += "/" + l["subresource"]
		}
		out[key] += int(v)
	}
	return out, s.Err()
}

// parseLabels parses `a="x",b="y"` (label values here never hold quotes or commas).
func parseLabels(s string) map[string]string {
	out := map[string]string{}
	for kv := range strings.SplitSeq(s, ",") {
		k, v, ok := strings.Cut(kv, "=")
		if ok {
			out[k] = strings.Trim(v, `"`)
		}
	}
	return out
}

// requestsBetween returns the requests of after not in before, without leases and without the
// driver's own creates (created POSTs on dnsendpoints), per object over objects.
func requestsBetween(before, after map[string]int, created, objects int) kubeRequests {
	r := kubeRequests{ByVerbResource: map[string]int{}}
	for k, n := range after {
		d := n - before[k]
		if k == "POST dnsendpoints" {
			d -= created
		}
		if d <= 0 {
			continue
		}
		r.ByVerbResource[k] = d
		if _, res, _ := strings.Cut(k, " "); !strings.HasPrefix(res, "leases") {
			r.Total += d
		}
	}
	if objects > 0 {
		r.PerObject = float64(r.Total) / float64(objects)
	}
	return r
}
