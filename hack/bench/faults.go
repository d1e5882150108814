package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/go-logr/logr"

	"github.com/dnsplane/dnsplane/internal/testing/faultproxy"
)

// The fault suite (FAULTS=1, `make faults`): dnsplane alone, in the bench's world, with
// internal/testing/faultproxy between it and the counting proxy in front of PowerDNS:
//
//	manager --(PDNS_API_URL)--> faultproxy --> counting proxy --> PowerDNS
//
// so that faultproxy counts every request dnsplane sent, and the counting proxy every request
// PowerDNS saw, by method and status. Each scenario is one first sync of FAULT_SIZE endpoints
// over the 10 zones, with foreign records seeded in every zone beforehand, the fault on from the
// manager's start until every record is served, then an audit of every zone by AXFR (audit.go).
//
// Environment (all optional):
//
//	FAULT_SIZE     endpoints (default 10000, a multiple of 10)
//	FAULT_RATES    comma list of percents (default 10,30,50)
//	FAULT_KINDS    comma list of faultproxy kinds, or "mixed" (every kind drawn uniformly);
//	               default: every kind, one row each; "none" for no rate rows (events only)
//	FAULT_EVENTS   comma list of events (default all): pdns-restart, sigkill, apiserver-restart,
//	               etcd-restart, apiserver-restart-change, etcd-restart-change; "none" for none
//	FAULT_TIMEOUT  one scenario's bound (default 30m): a hang deadline, not a figure
//	FAULT_REQUEST_TIMEOUT  the manager's --provider-request-timeout (default 5s; the
//	               manager's own default is 30s): what one "hang" costs the client before it
//	               gives up, so the hang rows' time scales with it and nothing else does
//	FAULTS_DOC=0   do not write the table into docs/reliability.md

// faultScenario is one row of the fault table.
type faultScenario struct {
	// Kinds drawn at Rate percent of every request (reads and writes); empty with an Event.
	Kinds []faultproxy.Kind
	Rate  int
	// Event is "pdns-restart" (PowerDNS stopped and started again, on its ports and database,
	// as a PATCH goes to it), "sigkill" (the manager SIGKILLed and started again three times,
	// as PATCHes go out), "apiserver-restart" or "etcd-restart" (kube-apiserver, or etcd under
	// it, stopped and started again as a PATCH goes out), all during the first sync; or
	// "apiserver-restart-change" or "etcd-restart-change", the same during a 1% change after
	// the first sync converged: see fire.
	Event string
}

// policy is the proxy's policy for s: its fault kinds at its rate, or, for an event scenario,
// pw's, which counts the PATCHes an event fires on and faults none.
func (s faultScenario) policy(pw *patchWatch) faultproxy.Policy {
	if len(s.Kinds) > 0 {
		return faultproxy.Rate(float64(s.Rate)/100, uint64(s.Rate)*1000+uint64(len(s.Kinds)), s.Kinds...)
	}
	return pw.policy
}

// Name is the scenario's name in the table, e.g. "http-503 30%" or "sigkill ×3".
func (s faultScenario) Name() string {
	switch s.Event {
	case "pdns-restart":
		return "PowerDNS restarted mid-batch"
	case "sigkill":
		return "manager SIGKILLed ×3 in one sync"
	case "apiserver-restart":
		return "kube-apiserver restarted mid-sync"
	case "etcd-restart":
		return "etcd restarted mid-sync"
	case "apiserver-restart-change":
		return "kube-apiserver restarted during a 1% change"
	case "etcd-restart-change":
		return "etcd restarted during a 1% change"
	}
	kind := "mixed"
	if len(s.Kinds) == 1 {
		kind = s.Kinds[0].String()
	}
	return fmt.Sprintf("%s %d%%", kind, s.Rate)
}

// faultResult is one scenario's figures.
type faultResult struct {
	Scenario string `json:"scenario"`
	Size     int    `json:"endpoints"`
	LoadAvg  string `json:"loadAvgBefore"`
	audit
	// Requests dnsplane sent (faultproxy's count), of which Faulted got a fault; Forwarded
	// reached PowerDNS, whose answers are PowerDNS (by "METHOD STATUS").
	Requests  uint64         `json:"requests"`
	Faulted   uint64         `json:"faulted"`
	ByFault   map[string]int `json:"byFault"`
	Forwarded uint64         `json:"forwarded"`
	PowerDNS  calls          `json:"powerDNS"`
	// Changed is the records a change event changed (0 for a first-sync row).
	Changed int `json:"changed,omitempty"`
	// RequestsPerRecord is Requests over the records wanted, or over Changed for a change
	// event (whose Requests, Faulted, Forwarded and PowerDNS count the change alone).
	RequestsPerRecord float64 `json:"requestsPerRecord"`
	// ConvergeSeconds: the manager's start (or a change event's first patch) to every record
	// served and audited exact (then every object's Ready=True is awaited too, outside this
	// figure).
	ConvergeSeconds float64 `json:"convergeSeconds"`
	// Conditions: the DNSEndpoints' Ready reasons seen while converging (polled every 2 s),
	// with how many objects showed each at least once.
	Conditions map[string]int `json:"conditionsSeen"`
	Error      string         `json:"error,omitempty"`
}

// faultEvents are the events of faultScenario.Event, in the table's order.
var faultEvents = []string{"pdns-restart", "sigkill", "apiserver-restart", "etcd-restart", "apiserver-restart-change", "etcd-restart-change"}

type faultConfig struct {
	size    int
	rates   []int
	kinds   [][]faultproxy.Kind
	events  []string
	timeout time.Duration
	// requestTimeout is the manager's --provider-request-timeout.
	requestTimeout time.Duration
}

func faultConfigFromEnv(getenv func(string) string) (faultConfig, error) {
	fc := faultConfig{size: 10000, rates: []int{10, 30, 50}, events: faultEvents, timeout: 30 * time.Minute, requestTimeout: 5 * time.Second}
	var errs []error
	if v := getenv("FAULT_SIZE"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < zones || n%zones != 0 {
			errs = append(errs, fmt.Errorf("FAULT_SIZE %q: want a positive multiple of %d", v, zones))
		}
		fc.size = n
	}
	if v := getenv("FAULT_RATES"); v != "" {
		fc.rates = nil
		for f := range strings.SplitSeq(v, ",") {
			n, err := strconv.Atoi(strings.TrimSpace(f))
			if err != nil || n < 1 || n > 99 {
				errs = append(errs, fmt.Errorf("FAULT_RATES %q: %q is not a percent from 1 to 99", v, f))
			}
			fc.rates = append(fc.rates, n)
		}
	}
	for _, k := range faultproxy.Faults() {
		fc.kinds = append(fc.kinds, []faultproxy.Kind{k})
	}
	if v := getenv("FAULT_KINDS"); v != "" {
		fc.kinds = nil
		for f := range strings.SplitSeq(v, ",") {
			f = strings.TrimSpace(f)
			if f == "none" {
				continue
			}
			if f == "mixed" {
				fc.kinds = append(fc.kinds, faultproxy.Faults())
				continue
			}
			i := slices.IndexFunc(faultproxy.Faults(), func(k faultproxy.Kind) bool { return k.String() == f })
			if i < 0 {
				errs = append(errs, fmt.Errorf("FAULT_KINDS %q: unknown kind %q (want none, mixed or some of %v)", v, f, faultproxy.Faults()))
				continue
			}
			fc.kinds = append(fc.kinds, []faultproxy.Kind{faultproxy.Faults()[i]})
		}
	}
	if v := getenv("FAULT_EVENTS"); v != "" {
		fc.events = nil
		for f := range strings.SplitSeq(v, ",") {
			switch f = strings.TrimSpace(f); f {
			case "none":
			default:
				if !slices.Contains(faultEvents, f) {
					errs = append(errs, fmt.Errorf("FAULT_EVENTS %q: unknown event %q (want none or some of %s)", v, f, strings.Join(faultEvents, ", ")))
					continue
				}
				fc.events = append(fc.events, f)
			}
		}
	}
	if v := getenv("FAULT_TIMEOUT"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			errs = append(errs, fmt.Errorf("FAULT_TIMEOUT %q: want a positive duration", v))
		}
		fc.timeout = d
	}
	if v := getenv("FAULT_REQUEST_TIMEOUT"); v != "" {
		d, err := time.ParseDuration(v)
		if err != nil || d <= 0 {
			errs = append(errs, fmt.Errorf("FAULT_REQUEST_TIMEOUT %q: want a positive duration", v))
		}
		fc.requestTimeout = d
	}
	return fc, errors.Join(errs...)
}

// scenarios lists the rows: every kind at every rate, then the events.
func (fc faultConfig) scenarios() []faultScenario {
	var out []faultScenario
	for _, ks := range fc.kinds {
		for _, r := range fc.rates {
			out = append(out, faultScenario{Kinds: ks, Rate: r})
		}
	}
	for _, e := range fc.events {
		out = append(out, faultScenario{Event: e})
	}
	return out
}

// faultReport is hack/bench/out/faults.json.
type faultReport struct {
	Machine machine `json:"machine"`
	Size    int     `json:"endpoints"`
	// RequestTimeout is the manager's --provider-request-timeout in every row, e.g. "5s".
	RequestTimeout string        `json:"providerRequestTimeout"`
	Rows           []faultResult `json:"rows"`
}

// runFaults runs the fault suite and writes faults.json and faults.md to c.out after every row.
// It fails when a row's audit is not exact.
func runFaults(ctx context.Context, log logr.Logger, c config) error {
	fc, err := faultConfigFromEnv(os.Getenv)
	if err != nil {
		return err
	}
	rep := &faultReport{Machine: machineFacts(c), Size: fc.size, RequestTimeout: fc.requestTimeout.String()}
	c.dnsplaneArgs = append(slices.Clone(c.dnsplaneArgs), "--provider-request-timeout="+fc.requestTimeout.String())
	var failed []string
	for i, sc := range fc.scenarios() {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		log.Info("fault scenario", "scenario", sc.Name(), "endpoints", fc.size)
		res := runFault(ctx, log.WithValues("scenario", sc.Name()), c, fc, sc, i)
		log.Info("fault result", "scenario", sc.Name(), "present", res.Present, "wanted", res.Wanted,
			"duplicated", res.Duplicated, "orphaned", res.Orphaned, "foreignTouched", res.ForeignTouched,
			"requests", res.Requests, "seconds", res.ConvergeSeconds, "error", res.Error)
		if res.Error != "" || !res.exact() {
			failed = append(failed, sc.Name())
		}
		rep.Rows = append(rep.Rows, res)
		if err := rep.write(c.out); err != nil {
			return err
		}
	}
	if os.Getenv("FAULTS_DOC") != "0" {
		if err := writeFaultDoc(filepath.Join(c.root, "docs", "reliability.md"), rep.markdown()); err != nil {
			return err
		}
		log.Info("fault table written", "doc", "docs/reliability.md")
	}
	if len(failed) > 0 {
		return fmt.Errorf("fault scenarios not exact: %s (see %s)", strings.Join(failed, "; "), filepath.Join(c.out, "faults.md"))
	}
	return nil
}

// runFault runs one scenario in a fresh world.
func runFault(ctx context.Context, log logr.Logger, c config, fc faultConfig, sc faultScenario, i int) faultResult {
	res := faultResult{Scenario: sc.Name(), Size: fc.size, LoadAvg: loadAvg()}
	dir := filepath.Join(c.out, "work", fmt.Sprintf("faults-%02d", i))
	if err := withWorld(ctx, log, c, dir, func(w *world) error { return measureFault(ctx, log, c, fc, sc, w, &res) }); err != nil {
		res.Error = err.Error()
	}
	return res
}

// measureFault runs one scenario in w and fills res.
func measureFault(ctx context.Context, log logr.Logger, c config, fc faultConfig, sc faultScenario, w *world, res *faultResult) (err error) {
	foreign, err := w.seedForeign(ctx)
	if err != nil {
		return err
	}
	fp := faultproxy.New(w.proxyURL, faultproxy.Options{})
	defer fp.Close()
	w.secretAPIURL = fp.URL()
	if err := w.setupDNSPlane(ctx); err != nil {
		return err
	}
	objects := fc.size / zones
	if err := w.createObjects(ctx, toolDNSPlane, objects); err != nil {
		return err
	}
	pw := &patchWatch{waiters: map[int]chan struct{}{}}
	fp.SetPolicy(sc.policy(pw))
	pdnsBefore := w.proxy.snapshot()
	start := time.Now()
	ctl, err := startController(c, w, toolDNSPlane, false)
	if err != nil {
		return err
	}
	defer func() {
		if serr := ctl.stop(30 * time.Second); serr != nil && err == nil {
			err = serr
		}
	}()
	sctx, cancel := context.WithTimeout(ctx, fc.timeout)
	defer cancel()
	seen := newReasonWatch()
	go seen.run(sctx, w)

	change := strings.HasSuffix(sc.Event, "-change")
	if sc.Event != "" && !change {
		if ctl, err = w.fire(sctx, log, c, sc.Event, pw, ctl, 0); err != nil {
			return err
		}
	}
	// Liveness only: the fault may not be judged by the RSS guard of the bench.
	ck := checker{addr: w.pdns.dnsAddr, interval: 100 * time.Millisecond, guard: ctl.alive, queryMax: defaultQueryMax}
	if err := w.converge(sctx, ck, objects, 0, foreign, res); err != nil {
		return err
	}
	res.ConvergeSeconds = time.Since(start).Seconds()
	// The figures end with every object's Ready=True too (after its status write).
	if _, err := w.waitObjectsReady(sctx, objects); err != nil {
		return err
	}
	cntBefore := faultproxy.Counts{ByKind: map[faultproxy.Kind]uint64{}}
	records := res.Wanted
	if change {
		// The 1% change: the first sync is done; the event fires as the change's first PATCH
		// goes out, and the figures count the change alone.
		changed := max(1, objects/100)
		cntBefore, pdnsBefore, start = fp.Counts(), w.proxy.snapshot(), time.Now()
		first := pw.count() + 1
		if err := w.changeObjects(sctx, toolDNSPlane, changed); err != nil {
			return err
		}
		if ctl, err = w.fire(sctx, log, c, strings.TrimSuffix(sc.Event, "-change"), pw, ctl, first); err != nil {
			return err
		}
		ck.guard = ctl.alive
		if err := w.converge(sctx, ck, objects, changed, foreign, res); err != nil {
			return err
		}
		res.ConvergeSeconds = time.Since(start).Seconds()
		res.Changed = changed * zones
		records = res.Changed
		if err := w.waitObjectsCurrent(sctx, changed); err != nil {
			return err
		}
	}
	cancel()
	res.Conditions = seen.wait()
	res.count(cntBefore, fp.Counts(), callsBetween(pdnsBefore, w.proxy.snapshot()), records)
	return nil
}

// count fills the request figures of res: the proxy's counts from before to after, PowerDNS's
// calls and the requests per record of the records the figures are for.
func (res *faultResult) count(before, after faultproxy.Counts, pdns calls, records int) {
	res.Requests, res.Faulted, res.Forwarded = after.Requests-before.Requests, after.Faulted()-before.Faulted(), after.Forwarded-before.Forwarded
	res.ByFault = map[string]int{}
	for k, n := range after.ByKind {
		if d := n - before.ByKind[k]; k != faultproxy.Pass && d > 0 {
			res.ByFault[k.String()] = int(d)
		}
	}
	res.PowerDNS = pdns
	res.RequestsPerRecord = float64(res.Requests) / float64(records)
}

// converge waits until every record of objects (the first changed of them at generation 1) is
// served, then audits every zone until the audit is exact (a write whose reply was lost may
// leave a record without its owner TXT until the writer re-reads), every 2 s, into res.
func (w *world) converge(ctx context.Context, ck checker, objects, changed int, foreign foreignSnapshot, res *faultResult) error {
	if _, missing, err := ck.waitServed(ctx, wantChanged(objects, changed)); err != nil {
		res.Missing = missing
		return fmt.Errorf("not converged: %d of %d records not served: %w", missing, objects*zones, err)
	}
	for {
		a, err := w.audit(ctx, objects, changed, foreign)
		if err == nil {
			res.audit = a
			if a.exact() {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("served, but the audit never came out exact: %+v (%v)", res.audit, ctx.Err())
		case <-time.After(2 * time.Second):
		}
	}
}

// patchWatch counts the PATCHes (record writes) dnsplane sends, through the fault proxy's
// policy, and lets an event wait for the Nth: the event then fires while that write is on its
// way to PowerDNS.
type patchWatch struct {
	mu      sync.Mutex
	n       int
	waiters map[int]chan struct{}
}

// policy counts a PATCH and passes every request.
func (pw *patchWatch) policy(r faultproxy.Request) faultproxy.Kind {
	if r.HTTP.Method != http.MethodPatch {
		return faultproxy.Pass
	}
	pw.mu.Lock()
	defer pw.mu.Unlock()
	pw.n++
	if ch, ok := pw.waiters[pw.n]; ok {
		close(ch)
		delete(pw.waiters, pw.n)
	}
	return faultproxy.Pass
}

// count is the PATCHes sent so far.
func (pw *patchWatch) count() int {
	pw.mu.Lock()
	defer pw.mu.Unlock()
	return pw.n
}

// wait waits until the nth PATCH (from 1) was sent, or fallback passed (a sync that needs
// fewer writes), or ctx ended. It reports whether the PATCH came.
func (pw *patchWatch) wait(ctx context.Context, n int, fallback time.Duration) (bool, error) {
	pw.mu.Lock()
	if pw.n >= n {
		pw.mu.Unlock()
		return true, nil
	}
	ch, ok := pw.waiters[n]
	if !ok {
		ch = make(chan struct{})
		pw.waiters[n] = ch
	}
	pw.mu.Unlock()
	select {
	case <-ch:
		return true, nil
	case <-time.After(fallback):
		return false, nil
	case <-ctx.Done():
		return false, ctx.Err()
	}
}

// fire runs an event while a sync goes on, keyed on the PATCHes dnsplane sends (pw), and
// returns the manager that runs after it. first is the PATCH a single event fires at: 0 means
// the first sync's 3rd.
//   - pdns-restart: PowerDNS is restarted as that PATCH goes to it;
//   - apiserver-restart, etcd-restart: kube-apiserver, or etcd under it, is stopped as that
//     PATCH goes out and started again (internal/testing's envtest keeps its ports, data and
//     certificates: restartAPIServer, restartEtcd);
//   - sigkill: the manager is SIGKILLed as the 2nd, 4th and 6th PATCH go out, and started again
//     each time.
//
// An event whose PATCH does not come within a minute (the sync needed fewer writes) fires then,
// and the log says so.
func (w *world) fire(ctx context.Context, log logr.Logger, c config, event string, pw *patchWatch, ctl *controller, first int) (*controller, error) {
	if first == 0 {
		first = 3
	}
	at := func(n int) error {
		came, err := pw.wait(ctx, n, time.Minute)
		if err != nil {
			return fmt.Errorf("waiting for PATCH %d: %w", n, err)
		}
		if !came {
			log.Info("the PATCH an event waited for never came within a minute: firing anyway", "patch", n)
		}
		return nil
	}
	restart := map[string]func() error{
		"pdns-restart":      func() error { return w.pdnsProc.Restart(ctx) },
		"apiserver-restart": w.restartAPIServer,
		"etcd-restart":      w.restartEtcd,
	}
	switch event {
	case "sigkill":
		for _, n := range []int{2, 4, 6} {
			if err := at(n); err != nil {
				return ctl, err
			}
			log.Info("SIGKILL", "patch", n)
			if err := ctl.proc.Kill(30 * time.Second); err != nil {
				return ctl, err
			}
			next, err := startController(c, w, toolDNSPlane, false)
			if err != nil {
				return ctl, err
			}
			ctl = next
		}
	default:
		fn, ok := restart[event]
		if !ok {
			return ctl, fmt.Errorf("unknown event %q", event)
		}
		if err := at(first); err != nil {
			return ctl, err
		}
		began := time.Now()
		if err := fn(); err != nil {
			return ctl, err
		}
		log.Info("restarted mid-batch", "event", event, "patch", first, "down", time.Since(began).Round(time.Millisecond))
	}
	return ctl, nil
}

// faultDocBegin and faultDocEnd enclose the fault table in docs/reliability.md.
const (
	faultDocBegin = "<!-- faults:begin (make faults writes this table) -->"
	faultDocEnd   = "<!-- faults:end -->"
)

// writeFaultDoc replaces what lies between faultDocBegin and faultDocEnd in the file at path
// with table. It fails when either marker is missing.
func writeFaultDoc(path, table string) error {
	b, err := os.ReadFile(path)
	if err != nil {
		return fmt.Errorf("read %s: %w", path, err)
	}
	s := string(b)
	i, j := strings.Index(s, faultDocBegin), strings.Index(s, faultDocEnd)
	if i < 0 || j < i {
		return fmt.Errorf("%s: the markers %q and %q are missing", path, faultDocBegin, faultDocEnd)
	}
	s = s[:i+len(faultDocBegin)] + "\n" + table + s[j:]
	return os.WriteFile(path, []byte(s), 0o644)
}

// write writes faults.json and faults.md (the table docs/reliability.md holds) to dir.
func (r *faultReport) write(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("create %s: %w", dir, err)
	}
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return fmt.Errorf("encode the fault report: %w", err)
	}
	if err := os.WriteFile(filepath.Join(dir, "faults.json"), append(b, '\n'), 0o644); err != nil {
		return fmt.Errorf("write faults.json: %w", err)
	}
	return os.WriteFile(filepath.Join(dir, "faults.md"), []byte(r.markdown()), 0o644)
}

// markdown is the fault table: one row per scenario.
func (r *faultReport) markdown() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%d endpoints over %d zones, on %d cores (load before each row in the last column); dnsplane %s, %s; "+
		"--provider-request-timeout=%s (a hang costs one).\n\n",
		r.Size, zones, r.Machine.Cores, r.Machine.DNSPlane, r.Machine.PowerDNS, r.RequestTimeout)
	b.WriteString("| fault | wanted | present | duplicated | orphaned | foreign touched | requests (faulted) | PowerDNS saw | requests per record | converged | conditions seen | load |\n")
	b.WriteString("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---|\n")
	for _, row := range r.Rows {
		conv := fmt.Sprintf("%.0f s", row.ConvergeSeconds)
		if row.Error != "" {
			conv = "**failed**: " + strings.ReplaceAll(row.Error, "|", "/")
		}
		fmt.Fprintf(&b, "| %s | %d | %d | %d | %d | %d | %d (%d) | %d | %.2f | %s | %s | %s |\n",
			row.Scenario, row.Wanted, row.Present, row.Duplicated, row.Orphaned, row.ForeignTouched,
			row.Requests, row.Faulted, row.PowerDNS.Total, row.RequestsPerRecord, conv, reasons(row.Conditions), row.LoadAvg)
	}
	return b.String()
}

// reasons prints "Published 1000, ProviderError 12", the most seen first.
func reasons(m map[string]int) string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b string) int {
		if m[a] != m[b] {
			return m[b] - m[a]
		}
		return strings.Compare(a, b)
	})
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = fmt.Sprintf("%s %d", k, m[k])
	}
	return strings.Join(parts, ", ")
}
