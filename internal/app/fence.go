package app

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/client-go/kubernetes"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/client-go/tools/record"
)

// The leader election timings, controller-runtime's defaults, set explicitly so that the write
// fence (leaseFence) and the elector agree: a follower takes the Lease leaseDuration after it
// last saw it renewed; the leader gives it up when it could not renew for renewDeadline.
const (
	leaderElectionID = "manager.dnsplane.io"
	leaseDuration    = 15 * time.Second
	renewDeadline    = 10 * time.Second
	retryPeriod      = 2 * time.Second
)

// ErrLeaseNotHeld: this replica has not renewed its leader election Lease within the renew
// deadline, so another may lead by now; a fenced write is not sent.
var ErrLeaseNotHeld = errors.New("this replica has not renewed its leader election Lease within the renew deadline; it may no longer lead, so nothing is written")

// leaseFence is the manager's leader election lock (a Lease, as controller-runtime makes it)
// that remembers when this replica last renewed it, so that provider writes can be fenced
// (Check, zonewriter.Options.Fence). Without it, a leader stalled longer than the Lease (a
// paused node or VM, a frozen container) wakes with its work queue and zone views as they were,
// and may write for a moment before its elector notices that another replica leads: stale
// writes over the new leader's. With it, such a replica writes nothing from the moment its last
// renewal is renewDeadline old, that is before any follower can have taken the Lease
// (leaseDuration after it last saw it renewed). A write already in flight at that moment is not
// recalled: the fence bounds when writes start, not when they land.
type leaseFence struct {
	resourcelock.Interface
	within time.Duration

	mu      sync.Mutex
	renewed time.Time // the start of this replica's last successful Create or Update; zero: never
}

// Create and Update record a successful write of a record that names this replica as holder.
func (f *leaseFence) Create(ctx context.Context, ler resourcelock.LeaderElectionRecord) error {
	start := time.Now()
	err := f.Interface.Create(ctx, ler)
	f.record(start, ler, err)
	return err
}

func (f *leaseFence) Update(ctx context.Context, ler resourcelock.LeaderElectionRecord) error {
	start := time.Now()
	err := f.Interface.Update(ctx, ler)
	f.record(start, ler, err)
	return err
}

func (f *leaseFence) record(start time.Time, ler resourcelock.LeaderElectionRecord, err error) {
	if err != nil || ler.HolderIdentity != f.Identity() {
		return
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.renewed = start
}

// Check returns nil while this replica's last renewal of the Lease started less than the renew
// deadline ago (time.Now's monotonic clock, which a frozen process sees jump), else an error
// wrapping ErrLeaseNotHeld that says how long ago.
func (f *leaseFence) Check() error {
	f.mu.Lock()
	renewed := f.renewed
	f.mu.Unlock()
	if renewed.IsZero() {
		return fmt.Errorf("%w (never renewed)", ErrLeaseNotHeld)
	}
	if age := time.Since(renewed); age >= f.within {
		return fmt.Errorf("%w (last renewed %s ago, renew deadline %s)", ErrLeaseNotHeld, age.Round(time.Millisecond), f.within)
	}
	return nil
}

// inClusterNamespace is where a pod's service account namespace is mounted.
const inClusterNamespace = "/var/run/secrets/kubernetes.io/serviceaccount/namespace"

// newLeaseFence builds the Lease lock controller-runtime would build (leaderelection.
// NewResourceLock: the identity <hostname>_<uuid>, a client whose requests time out at half the
// renew deadline, LeaderElection Events) in namespace, or in the pod's own namespace when it is
// empty, and wraps it. Its Events go out through a broadcaster of its own, stopped with ctx.
func newLeaseFence(ctx context.Context, cfg *rest.Config, scheme *runtime.Scheme, namespace string) (*leaseFence, error) {
	if namespace == "" {
		b, err := os.ReadFile(inClusterNamespace)
		if err != nil {
			return nil, fmt.Errorf("leader election: no --leader-election-namespace and not in a pod: %w", err)
		}
		namespace = strings.TrimSpace(string(b))
	}
	host, err := os.Hostname()
	if err != nil {
		return nil, fmt.Errorf("leader election identity: %w", err)
	}
	id := host + "_" + string(uuid.NewUUID())
	lc := rest.AddUserAgent(rest.CopyConfig(cfg), "leader-election")
	lc.Timeout = max(renewDeadline/2, time.Second)
	cs, err := kubernetes.NewForConfig(lc)
	if err != nil {
		return nil, fmt.Errorf("leader election client: %w", err)
	}
	events := record.NewBroadcaster(record.WithContext(ctx))
	events.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: cs.CoreV1().Events("")})
	go func() { <-ctx.Done(); events.Shutdown() }()
	lock, err := resourcelock.New(resourcelock.LeasesResourceLock, namespace, leaderElectionID, cs.CoreV1(), cs.CoordinationV1(),
		resourcelock.ResourceLockConfig{Identity: id, EventRecorder: events.NewRecorder(scheme, corev1.EventSource{Component: id})})
	if err != nil {
		return nil, fmt.Errorf("leader election lock: %w", err)
	}
	return &leaseFence{Interface: lock, within: renewDeadline}, nil
}
