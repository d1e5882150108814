package main

import (
	"cmp"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"
)

const (
	toolExternalDNS = "external-dns"
	toolDNSPlane    = "dnsplane"

	// BENCH_DNSPLANE_PROVIDER's values.
	providerPDNS    = "pdns"
	providerWebhook = "webhook"
	// externalDNSVersion is the version hack/bench/build-external-dns.sh builds.
	externalDNSVersion = "v0.22.0"
	// zones is how many zones the input spans; every object has one endpoint in each.
	zones = 10
)

// scenario is one way to run a first sync.
type scenario struct {
	Name string `json:"name"`
	// Created: the objects are created while the controller runs, after it is ready; otherwise
	// they exist before it starts.
	Created bool `json:"created"`
	// EqualLimits: both tools get --kube-api-qps=1000 --kube-api-burst=1000; otherwise each runs
	// at its default client limits (dnsplane 500/1000, external-dns 5/10).
	EqualLimits bool `json:"equalLimits"`
}

var allScenarios = []scenario{
	{Name: "present/default"},
	{Name: "present/qps1000", EqualLimits: true},
	{Name: "created/default", Created: true},
	{Name: "created/qps1000", Created: true, EqualLimits: true},
}

// config is the bench's configuration, from the environment (main's doc comment lists it).
type config struct {
	root, bin, out string
	sizes          []int
	runs           int
	scenarios      []scenario
	scenariosSet   bool // SCENARIOS was given: it applies to every size
	tools          []string
	steady, settle time.Duration
	maxRSSMiB      float64
	keep           bool
	buildSeconds   float64
	dnsplaneArgs   []string // BENCH_DNSPLANE_ARGS: extra manager flags, space-separated (profiling)
	dnsplaneEnv    []string // BENCH_DNSPLANE_ENV: extra manager environment, NAME=value space-separated (GOGC=35)
	// dnsplaneProvider is BENCH_DNSPLANE_PROVIDER: "pdns" (default), dnsplane's PowerDNS
	// provider straight to the API, or "webhook", dnsplane's webhook provider through
	// external-dns v0.22.0's own webhook server with its PowerDNS provider
	// (hack/webhook-server), in front of the same PowerDNS and counting proxy.
	dnsplaneProvider string
}

// runPlan is one run of the matrix. Extras: this run also measures the steady state, the 1%
// change and the registry records (once per tool and size).
type runPlan struct {
	Tool     string
	Size     int
	Scenario scenario
	Run      int
	Extras   bool
}

// configFromEnv reads the configuration through getenv. Errors name the variable.
func configFromEnv(getenv func(string) string) (config, error) {
	root, err := repoRoot()
	if err != nil {
		return config{}, err
	}
	c := config{root: root, bin: filepath.Join(root, "bin"), out: filepath.Join(root, "hack", "bench", "out"),
		runs: 2, scenarios: allScenarios, tools: []string{toolExternalDNS, toolDNSPlane},
		steady: 60 * time.Second, settle: 10 * time.Second, maxRSSMiB: 8192}
	var errs []error
	c.sizes, err = parseSizes(getenv("SIZES"), getenv("BENCH_50K") == "1")
	errs = append(errs, err)
	if v := getenv("RUNS"); v != "" {
		if c.runs, err = strconv.Atoi(v); err != nil || c.runs < 1 {
			errs = append(errs, fmt.Errorf("RUNS %q: want a positive integer", v))
		}
	}
	if v := getenv("SCENARIOS"); v != "" {
		c.scenariosSet = true
		c.scenarios, err = parseScenarios(v)
		errs = append(errs, err)
	}
	if v := getenv("TOOLS"); v != "" {
		c.tools, err = parseTools(v)
		errs = append(errs, err)
	}
	if v := getenv("STEADY"); v != "" {
		if c.steady, err = time.ParseDuration(v); err != nil || c.steady <= 0 {
			errs = append(errs, fmt.Errorf("STEADY %q: want a positive duration such as 60s", v))
		}
	}
	if v := getenv("BENCH_MAX_RSS_MIB"); v != "" {
		if c.maxRSSMiB, err = strconv.ParseFloat(v, 64); err != nil || c.maxRSSMiB <= 0 {
			errs = append(errs, fmt.Errorf("BENCH_MAX_RSS_MIB %q: want a positive number", v))
		}
	}
	if v := getenv("BENCH_BUILD_SECONDS"); v != "" {
		c.buildSeconds, _ = strconv.ParseFloat(v, 64)
	}
	c.keep = getenv("BENCH_KEEP") == "1"
	c.dnsplaneArgs = strings.Fields(getenv("BENCH_DNSPLANE_ARGS"))
	c.dnsplaneEnv = strings.Fields(getenv("BENCH_DNSPLANE_ENV"))
	for _, kv := range c.dnsplaneEnv {
		if k, _, ok := strings.Cut(kv, "="); !ok || k == "" {
			return config{}, fmt.Errorf("BENCH_DNSPLANE_ENV: %q is not NAME=value", kv)
		}
	}
	switch c.dnsplaneProvider = cmp.Or(getenv("BENCH_DNSPLANE_PROVIDER"), providerPDNS); c.dnsplaneProvider {
	case providerPDNS, providerWebhook:
	default:
		errs = append(errs, fmt.Errorf("BENCH_DNSPLANE_PROVIDER %q: want %s or %s", c.dnsplaneProvider, providerPDNS, providerWebhook))
	}
	return c, errors.Join(errs...)
}

// parseSizes parses SIZES (default 1000,10000) and adds 50000 when with50k. Each size is a
// positive multiple of 10: one object holds one endpoint per zone.
func parseSizes(v string, with50k bool) ([]int, error) {
	if v == "" {
		v = "1000,10000"
	}
	var sizes []int
	for f := range strings.SplitSeq(v, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n < zones || n%zones != 0 {
			return nil, fmt.Errorf("SIZES %q: %q is not a positive multiple of %d", v, f, zones)
		}
		sizes = append(sizes, n)
	}
	if with50k && !slices.Contains(sizes, 50000) {
		sizes = append(sizes, 50000)
	}
	return sizes, nil
}

func parseScenarios(v string) ([]scenario, error) {
	var out []scenario
	for f := range strings.SplitSeq(v, ",") {
		i := slices.IndexFunc(allScenarios, func(s scenario) bool { return s.Name == strings.TrimSpace(f) })
		if i < 0 {
			return nil, fmt.Errorf("SCENARIOS %q: unknown scenario %q", v, f)
		}
		out = append(out, allScenarios[i])
	}
	return out, nil
}

func parseTools(v string) ([]string, error) {
	var out []string
	for f := range strings.SplitSeq(v, ",") {
		f = strings.TrimSpace(f)
		if f != toolExternalDNS && f != toolDNSPlane {
			return nil, fmt.Errorf("TOOLS %q: unknown tool %q", v, f)
		}
		out = append(out, f)
	}
	return out, nil
}

// scenariosFor returns the scenarios run at size: at 50k endpoints and more only those at equal
// client limits (external-dns at its default 5 requests per second would take about 1,000 s),
// unless SCENARIOS was given.
func (c config) scenariosFor(size int) []scenario {
	if size < 50000 || c.scenariosSet {
		return c.scenarios
	}
	return slices.DeleteFunc(slices.Clone(c.scenarios), func(s scenario) bool { return !s.EqualLimits })
}

// plan returns the runs in order: per size, per scenario, per run, every tool in turn (A B A B).
// The first run of each tool and size also measures the extras.
func (c config) plan() []runPlan {
	var out []runPlan
	for _, size := range c.sizes {
		extras := map[string]bool{}
		for _, sc := range c.scenariosFor(size) {
			for r := 1; r <= c.runs; r++ {
				for _, t := range c.tools {
					p := runPlan{Tool: t, Size: size, Scenario: sc, Run: r}
					if !extras[t] && !sc.Created {
						p.Extras, extras[t] = true, true
					}
					out = append(out, p)
				}
			}
		}
	}
	return out
}

// check fails when a binary the plan needs is missing, naming the make target that builds it.
func (c config) check() error {
	need := map[string]string{"manager": "make build", "etcd": "make envtest-bins", "kube-apiserver": "make envtest-bins"}
	if slices.Contains(c.tools, toolExternalDNS) {
		need["external-dns"] = "hack/bench/build-external-dns.sh"
		need["external-dns-crd.yaml"] = "hack/bench/build-external-dns.sh"
	}
	var errs []error
	for name, how := range need {
		if _, err := os.Stat(filepath.Join(c.bin, name)); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w (%s builds it; `make bench` does all)", name, err, how))
		}
	}
	return errors.Join(errs...)
}

// repoRoot is dnsplane's checkout: the first directory at or above the working directory that
// holds hack/bench/main.go.
func repoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("working directory: %w", err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "hack", "bench", "main.go")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("run from dnsplane's checkout (no hack/bench/main.go above the working directory)")
		}
		dir = parent
	}
}

// machine are the facts of the machine the bench ran on.
type machine struct {
	Cores          int     `json:"cores"`
	MemoryMiB      float64 `json:"memoryMiB"`
	Kernel         string  `json:"kernel"`
	GoVersion      string  `json:"goVersion"`
	DNSPlane       string  `json:"dnsplaneVersion"`
	ExternalDNS    string  `json:"externalDNSVersion"`
	PowerDNS       string  `json:"powerDNSVersion"`
	BuildSeconds   float64 `json:"buildSeconds"`
	StartedAt      string  `json:"startedAt"`
	LoadAvgAtStart string  `json:"loadAvgAtStart"`
}
