package main

import (
	"bufio"
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

func TestParseSizes(t *testing.T) {
	for _, tc := range []struct {
		in      string
		with50k bool
		want    []int
		wantErr bool
	}{
		{in: "", want: []int{1000, 10000}},
		{in: "", with50k: true, want: []int{1000, 10000, 50000}},
		{in: "100, 1000", want: []int{100, 1000}},
		{in: "50000", with50k: true, want: []int{50000}},
		{in: "15", wantErr: true},
		{in: "0", wantErr: true},
		{in: "1k", wantErr: true},
	} {
		got, err := parseSizes(tc.in, tc.with50k)
		if (err != nil) != tc.wantErr || (!tc.wantErr && !reflect.DeepEqual(got, tc.want)) {
			t.Errorf("parseSizes(%q, %v) = %v, %v; want %v (error %v)", tc.in, tc.with50k, got, err, tc.want, tc.wantErr)
		}
	}
}

func TestConfigFromEnv_Errors(t *testing.T) {
	env := map[string]string{"RUNS": "0", "SCENARIOS": "present/nope", "TOOLS": "bind", "STEADY": "-1s"}
	_, err := configFromEnv(func(k string) string { return env[k] })
	if err == nil {
		t.Fatal("no error")
	}
	for _, name := range []string{"RUNS", "SCENARIOS", "TOOLS", "STEADY"} {
		if !strings.Contains(err.Error(), name) {
			t.Errorf("error %q does not name %s", err, name)
		}
	}
}

// The plan alternates the tools (A B A B) within each scenario, and the first run of each tool
// and size with objects present at the start carries the extras.
func TestPlan_AlternatesAndPlacesExtras(t *testing.T) {
	c := config{sizes: []int{100, 50000}, runs: 2, scenarios: allScenarios, tools: []string{toolExternalDNS, toolDNSPlane}}
	var got []string
	for _, p := range c.plan() {
		s := p.Tool + " " + sizeLabel(p.Size) + " " + p.Scenario.Name
		if p.Extras {
			s += " +extras"
		}
		got = append(got, s)
	}
	if len(got) != 2*2*4+2*2*2 {
		t.Fatalf("%d runs, want 24 (4 scenarios at 100, the 2 qps1000 ones at 50k): %v", len(got), got)
	}
	wantPrefix := []string{
		"external-dns 100 present/default +extras", "dnsplane 100 present/default +extras",
		"external-dns 100 present/default", "dnsplane 100 present/default",
		"external-dns 100 present/qps1000", "dnsplane 100 present/qps1000",
	}
	if !reflect.DeepEqual(got[:len(wantPrefix)], wantPrefix) {
		t.Errorf("plan starts %v, want %v", got[:len(wantPrefix)], wantPrefix)
	}
	wantAt50k := []string{"external-dns 50k present/qps1000 +extras", "dnsplane 50k present/qps1000 +extras"}
	if !reflect.DeepEqual(got[16:18], wantAt50k) {
		t.Errorf("50k starts %v, want %v", got[16:18], wantAt50k)
	}
	for _, s := range got[16:] {
		if strings.Contains(s, "default") {
			t.Errorf("50k runs a default-flags scenario: %s", s)
		}
	}
}

func TestCallsBetween(t *testing.T) {
	before := map[string]int{"GET 200": 3, "PATCH 204": 1}
	after := map[string]int{"GET 200": 13, "PATCH 204": 11, "PATCH 500": 2, "PUT 200": 0}
	got := callsBetween(before, after)
	want := calls{Total: 22, Errors: 2, ByMethod: map[string]int{"GET": 10, "PATCH": 12},
		ByStatus: map[string]int{"GET 200": 10, "PATCH 204": 10, "PATCH 500": 2}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("callsBetween = %+v, want %+v", got, want)
	}
}

// The proxy forwards to the real handler and counts by method and status.
func TestCountingProxy(t *testing.T) {
	backend := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPatch {
			http.Error(w, "database is locked", http.StatusInternalServerError)
			return
		}
		_, _ = io.WriteString(w, "{}")
	})
	p := newCountingProxy(backend, nil)
	srv := httptest.NewServer(p)
	defer srv.Close()
	for _, m := range []string{http.MethodGet, http.MethodGet, http.MethodPatch} {
		req, _ := http.NewRequest(m, srv.URL+"/api/v1/servers/localhost/zones", nil)
		resp, err := srv.Client().Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_ = resp.Body.Close()
	}
	if got, want := p.snapshot(), map[string]int{"GET 200": 2, "PATCH 500": 1}; !reflect.DeepEqual(got, want) {
		t.Errorf("counts %v, want %v", got, want)
	}
}

func TestParseRequestTotals(t *testing.T) {
	text := `# HELP apiserver_request_total [STABLE] Counter of apiserver requests
# TYPE apiserver_request_total counter
apiserver_request_total{code="200",component="apiserver",dry_run="",group="dnsplane.io",resource="dnsendpoints",scope="resource",subresource="status",verb="PATCH",version="v1alpha1"} 100
apiserver_request_total{code="409",component="apiserver",dry_run="",group="dnsplane.io",resource="dnsendpoints",scope="resource",subresource="status",verb="PATCH",version="v1alpha1"} 2
apiserver_request_total{code="201",component="apiserver",dry_run="",group="",resource="events",scope="resource",subresource="",verb="POST",version="v1"} 7
apiserver_request_total{code="200",component="apiserver",dry_run="",group="coordination.k8s.io",resource="leases",scope="resource",subresource="",verb="PUT",version="v1"} 5
apiserver_request_duration_seconds_count{verb="GET"} 9
`
	got, err := parseRequestTotals(text)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]int{"PATCH dnsendpoints/status": 102, "POST events": 7, "PUT leases": 5}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("parseRequestTotals = %v, want %v", got, want)
	}
	if _, err := parseRequestTotals(`apiserver_request_total{verb="GET"} x`); err == nil {
		t.Error("a malformed value parsed")
	}
}

// requestsBetween leaves out leases and the driver's own creates.
func TestRequestsBetween(t *testing.T) {
	before := map[string]int{"PUT leases": 5, "POST dnsendpoints": 0}
	after := map[string]int{"PUT leases": 9, "POST dnsendpoints": 100, "PATCH dnsendpoints/status": 100, "POST events": 100}
	got := requestsBetween(before, after, 100, 100)
	if got.Total != 200 || got.PerObject != 2 {
		t.Errorf("total %d, per object %v; want 200 and 2 (%v)", got.Total, got.PerObject, got.ByVerbResource)
	}
	if _, ok := got.ByVerbResource["POST dnsendpoints"]; ok {
		t.Errorf("the driver's creates are counted: %v", got.ByVerbResource)
	}
}

func TestParseProcStatus(t *testing.T) {
	status := "Name:\tmanager\nVmPeak:\t 2000000 kB\nVmHWM:\t  204800 kB\nVmRSS:\t  102400 kB\nThreads:\t9\n"
	rss, hwm, err := parseProcStatus(bufio.NewScanner(strings.NewReader(status)))
	if err != nil || rss != 100 || hwm != 200 {
		t.Errorf("parseProcStatus = %v, %v, %v; want 100, 200, nil", rss, hwm, err)
	}
	if _, _, err := parseProcStatus(bufio.NewScanner(strings.NewReader("Name:\tx\n"))); err == nil {
		t.Error("missing fields parsed")
	}
}

func TestMedianAndFormat(t *testing.T) {
	for _, tc := range []struct {
		in   []float64
		want float64
	}{{[]float64{3}, 3}, {[]float64{4, 1, 2}, 2}, {[]float64{4, 1, 2, 3}, 2.5}, {nil, 0}} {
		if got := median(tc.in); got != tc.want {
			t.Errorf("median(%v) = %v, want %v", tc.in, got, tc.want)
		}
	}
	for v, want := range map[float64]string{30: "30", 199.84: "200", 6.44: "6.4", 0.034: "0.03"} {
		if got := formatNum(v); got != want {
			t.Errorf("formatNum(%v) = %q, want %q", v, got, want)
		}
	}
	for n, want := range map[int]string{1000: "1k", 50000: "50k", 150: "150"} {
		if got := sizeLabel(n); got != want {
			t.Errorf("sizeLabel(%d) = %q, want %q", n, got, want)
		}
	}
}

// summarize takes the medians of the successful runs and the ratio dnsplane / external-dns.
func TestSummarize(t *testing.T) {
	run := func(tool string, secs float64, get, patch int, errText string) runResult {
		return runResult{Tool: tool, Size: 1000, Scenario: "present/qps1000", FirstSyncSeconds: secs, Error: errText,
			ProviderCalls: calls{Total: get + patch, ByMethod: map[string]int{"GET": get, "PATCH": patch}}}
	}
	runs := []runResult{
		run(toolExternalDNS, 1, 13, 10, ""), run(toolDNSPlane, 3, 20, 10, ""),
		run(toolExternalDNS, 2, 25, 10, ""), run(toolDNSPlane, 4, 20, 10, ""),
		run(toolDNSPlane, 99, 0, 0, "first sync: timeout"),
	}
	lines := summarize(runs, []int{1000})
	byFigure := map[string]summaryLine{}
	for _, l := range lines {
		byFigure[l.Figure] = l
	}
	first := byFigure["first sync (s), present/qps1000"]
	if d := first.Tools[toolDNSPlane]; d.N != 2 || d.Median != 3.5 || d.Min != 3 || d.Max != 4 {
		t.Errorf("dnsplane first sync %+v, want the 2 successful runs, median 3.5", d)
	}
	if first.Ratio == nil || *first.Ratio != 3.5/1.5 {
		t.Errorf("ratio %v, want %v", first.Ratio, 3.5/1.5)
	}
	c := byFigure["provider calls in the first sync, present/qps1000"].Tools[toolExternalDNS]
	if c.Median != 29 || c.Detail != "19 GET, 10 PATCH" {
		t.Errorf("external-dns calls %+v, want median 29 [19 GET, 10 PATCH]", c)
	}
	if _, ok := byFigure["1% change: time to served (s)"]; ok {
		t.Error("an extras figure without extras")
	}
}

func TestWant(t *testing.T) {
	w := want(0, 2, 1)
	if len(w) != zones {
		t.Fatalf("%d zones, want %d", len(w), zones)
	}
	if got := w["z3.bench.test."]["h1.z3.bench.test."]; got != "10.0.1.104" {
		t.Errorf("h1 in z3 at generation 1 = %q, want 10.0.1.104", got)
	}
	if got := target(300, 9, 0); got != "10.1.44.10" {
		t.Errorf("target(300, 9, 0) = %q", got)
	}
	obj := endpointObject(toolExternalDNS, 7)
	if obj.GetAPIVersion() != "externaldns.k8s.io/v1alpha1" || endpointObject(toolDNSPlane, 7).GetAPIVersion() != "dnsplane.io/v1alpha1" {
		t.Errorf("apiVersions %s, %s", obj.GetAPIVersion(), endpointObject(toolDNSPlane, 7).GetAPIVersion())
	}
}

// plotReport writes a PNG from runs of both tools at two sizes.
func TestPlotReport(t *testing.T) {
	var runs []runResult
	for _, size := range []int{1000, 10000} {
		for i, tool := range []string{toolExternalDNS, toolDNSPlane} {
			runs = append(runs, runResult{Tool: tool, Size: size, Scenario: "present/qps1000",
				FirstSyncSeconds: float64(size) / 1000 * float64(i+1), ProviderCalls: calls{Total: 23 + 7*i}})
		}
	}
	path := t.TempDir() + "/bench.png"
	if os.Getenv("BENCH_PLOT_OUT") != "" {
		path = os.Getenv("BENCH_PLOT_OUT")
	}
	if err := plotReport(runs, path); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil || !strings.HasPrefix(string(b), "\x89PNG") {
		t.Errorf("bench.png is not a PNG: %v", err)
	}
}

// A failed extras run hands its extras to the next present run of the same tool and size.
func TestMoveExtras(t *testing.T) {
	c := config{sizes: []int{1000}, runs: 2, scenarios: allScenarios[:2], tools: []string{toolExternalDNS, toolDNSPlane}}
	plan := c.plan()
	moveExtras(plan[2:], plan[1]) // dnsplane's present/default run 1 failed
	if !plan[3].Extras || plan[3].Tool != toolDNSPlane || plan[2].Extras {
		t.Errorf("extras went to %+v / %+v, want dnsplane's run 2 only", plan[2], plan[3])
	}
}

// dropCached leaves none of a file's pages in the page cache, written or read just before.
func TestDropCached(t *testing.T) {
	path := filepath.Join(t.TempDir(), "tool")
	if err := os.WriteFile(path, bytes.Repeat([]byte("dnsplane"), 1<<17), 0o755); err != nil { // 1 MiB
		t.Fatal(err)
	}
	if _, err := os.ReadFile(path); err != nil {
		t.Fatal(err)
	}
	if n := residentPages(t, path); n == 0 {
		t.Fatal("no page of a file just written and read is in the page cache: the check below would prove nothing")
	}
	if err := dropCached(path); err != nil {
		t.Fatal(err)
	}
	if n := residentPages(t, path); n != 0 {
		t.Errorf("%d pages of the file still in the page cache", n)
	}
	if err := dropCached(filepath.Join(t.TempDir(), "missing")); err == nil {
		t.Error("dropCached of a missing file: no error")
	}
}

// residentPages counts the pages of path in the page cache (mincore(2) of a mapping, which
// faults nothing in).
func residentPages(t *testing.T, path string) int {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = f.Close() }()
	st, err := f.Stat()
	if err != nil {
		t.Fatal(err)
	}
	m, err := unix.Mmap(int(f.Fd()), 0, int(st.Size()), unix.PROT_READ, unix.MAP_SHARED)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = unix.Munmap(m) }()
	vec := make([]byte, (len(m)+os.Getpagesize()-1)/os.Getpagesize())
	if _, _, e := unix.Syscall(unix.SYS_MINCORE, uintptr(unsafe.Pointer(&m[0])), uintptr(len(m)), uintptr(unsafe.Pointer(&vec[0]))); e != 0 {
		t.Fatal(e)
	}
	n := 0
	for _, v := range vec {
		n += int(v & 1)
	}
	return n
}
