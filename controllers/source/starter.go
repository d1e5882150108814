package source

import (
	"context"
	"fmt"
	"time"

	"github.com/go-logr/logr"
	"github.com/prometheus/client_golang/prometheus"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/discovery"

	"github.com/dnsplane/dnsplane/pkg/promreg"
)

// Metrics are the sources' metrics.
type Metrics struct {
	// Ready is dnsplane_source_ready{source}: 1 once the source's controller runs, 0 while its
	// kind (or a kind it needs) is not served by the API server.
	Ready *prometheus.GaugeVec
}

// NewMetrics builds the sources' metrics and registers them with reg (nil: unregistered).
// Errors: a registration failed (pkg/promreg), wrapped.
func NewMetrics(reg prometheus.Registerer) (*Metrics, error) {
	m := &Metrics{Ready: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "dnsplane_source_ready",
		Help: "1 when the --source's controller runs, 0 while its CRD is not installed (polled until it is)."}, []string{"source"})}
	return promreg.Registered(reg, "source", m, m.Ready)
}

// DefaultInterval is how often Starter asks discovery for a source's kinds.
const DefaultInterval = 5 * time.Second

// Starter starts the source controllers whose kinds may not be installed: it asks discovery
// for each pending source's kinds every Interval and calls Start for a source once all are
// served. It is a manager Runnable in every replica (not only the leader: the controllers it
// adds wait for leadership themselves) and returns when every source started or ctx ends.
type Starter struct {
	Discovery discovery.DiscoveryInterface
	// Interval bounds how long a source waits after its CRD is installed; DefaultInterval if 0.
	Interval time.Duration
	Metrics  *Metrics
	Log      logr.Logger
	// Pending are the sources to start, by name: their required kinds, and how to start them.
	Pending []Pending
}

// Pending is one source that waits for its kinds.
type Pending struct {
	Name     string
	Requires []schema.GroupVersionKind
	Start    func() error
}

// NeedLeaderElection is false: see Starter.
func (s *Starter) NeedLeaderElection() bool { return false }

// Start polls until every pending source started. Errors: a controller could not be added.
func (s *Starter) Start(ctx context.Context) error {
	pending := s.Pending
	for _, p := range pending {
		s.Metrics.Ready.WithLabelValues(p.Name).Set(0)
	}
	interval := s.Interval
	if interval <= 0 {
		interval = DefaultInterval
	}
	logged := map[string]bool{}
	var startErr error
	_ = wait.PollUntilContextCancel(ctx, interval, true, func(context.Context) (bool, error) {
		var left []Pending
		for _, p := range pending {
			missing := s.missing(p.Requires)
			if missing != "" {
				if !logged[p.Name] {
					s.Log.Info("source waits for its kind to be installed; it starts within the poll interval once the CRD is served, no restart needed", "source", p.Name, "missing", missing, "interval", interval.String())
					logged[p.Name] = true
				}
				left = append(left, p)
				continue
			}
			if err := p.Start(); err != nil {
				startErr = fmt.Errorf("start source %s: %w", p.Name, err)
				return false, startErr
			}
			s.Log.Info("source started", "source", p.Name)
			s.Metrics.Ready.WithLabelValues(p.Name).Set(1)
		}
		pending = left
		return len(pending) == 0, nil
	})
	return startErr
}

// missing returns the first of kinds that discovery does not serve, as group/version/kind, or "".
func (s *Starter) missing(kinds []schema.GroupVersionKind) string {
	for _, k := range kinds {
		if !s.served(k) {
			return k.String()
		}
	}
	return ""
}

func (s *Starter) served(k schema.GroupVersionKind) bool {
	list, err := s.Discovery.ServerResourcesForGroupVersion(k.GroupVersion().String())
	if err != nil {
		if !apierrors.IsNotFound(err) {
			s.Log.V(1).Info("discovery failed; asking again", "groupVersion", k.GroupVersion().String(), "error", err.Error())
		}
		return false
	}
	for _, r := range list.APIResources {
		if r.Kind == k.Kind {
			return true
		}
	}
	return false
}
