package app_test

import (
	"context"
	"fmt"
	"maps"
	"net"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/miekg/dns"
	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dnsplane/dnsplane/internal/app"
	"github.com/dnsplane/dnsplane/internal/testing/answerloop"
	"github.com/dnsplane/dnsplane/internal/testing/dnstest"
	"github.com/dnsplane/dnsplane/internal/testing/envtest"
	"github.com/dnsplane/dnsplane/internal/testing/testrun"
	"github.com/dnsplane/dnsplane/pkg/provider"
	"github.com/dnsplane/dnsplane/pkg/zonedb"
)

const replicasNS = "dnsplane-system"

// replica is one manager with leader election and the zone store in ConfigMaps, as a pod of
// config/default runs it, on its own loopback address.
type replica struct {
	a    *app.App
	addr string
	stop func()
}

// replicaConfig is the Config of one replica on loopback address host: leader election and the
// zone store in replicasNS, the dns Service "dns", the DNS server on any port of host. The
// replicas of TestReplicas_LeaderKilled run it in a separate process too.
func replicaConfig(cfg *rest.Config, host string) app.Config {
	return app.Config{Rest: cfg, LeaderElect: true, LeaderElectionNamespace: replicasNS, ZoneStoreNamespace: replicasNS,
		DNSService: "dns", DNSAddr: host + ":0", OwnerID: "replicas", MetricsAddr: "0", ProbeAddr: "0",
		SOAPollInterval: 200 * time.Millisecond, ZoneResync: time.Hour, ScrapeInterval: time.Hour,
		HeartbeatInterval: 30 * time.Second, HeartbeatThreshold: 5 * time.Minute,
		GslbInterval: 30 * time.Second, GslbPeerTimeout: 2 * time.Second, GslbPeerPort: 53,
		Registerer: prometheus.NewRegistry(), SkipNameValidation: true}
}

// startReplica starts a replica of replicaConfig, changed by each of mods, and waits until its
// zone store has loaded.
func startReplica(t *testing.T, cfg *rest.Config, host string, mods ...func(*app.Config)) *replica {
	t.Helper()
	c := replicaConfig(cfg, host)
	for _, mod := range mods {
		mod(&c)
	}
	ctx, cancel := context.WithCancel(context.Background())
	a, err := app.New(ctx, c)
	if err != nil {
		cancel()
		t.Fatalf("app.New on %s: %v", host, err)
	}
	done := make(chan error, 1)
	go func() { done <- a.Run(ctx) }()
	r := &replica{a: a, addr: a.Server.Addr()}
	var once sync.Once
	r.stop = func() {
		once.Do(func() {
			cancel()
			select {
			case err := <-done:
				if err != nil {
					t.Errorf("manager on %s: %v", host, err)
				}
			case <-time.After(time.Minute):
				t.Errorf("the manager on %s did not stop", host)
			}
		})
	}
	t.Cleanup(r.stop)
	testrun.Eventually(t, time.Minute, "replica "+host+" ready", func() error { return a.ZoneSync.Ready(nil) })
	return r
}

func (r *replica) leads() bool {
	select {
	case <-r.a.Manager.Elected():
		return true
	default:
		return false
	}
}

// leaderOf waits for one of rs to lead and returns it and the others.
func leaderOf(t *testing.T, rs ...*replica) (*replica, []*replica) {
	t.Helper()
	var leader *replica
	testrun.Eventually(t, 2*time.Minute, "a leader", func() error {
		for _, r := range rs {
			if r.leads() {
				leader = r
				return nil
			}
		}
		return fmt.Errorf("none of %d leads", len(rs))
	})
	var others []*replica
	for _, r := range rs {
		if r != leader {
			others = append(others, r)
		}
	}
	return leader, others
}

// answered reports whether addr answers name A with target.
func answered(addr, name, target string) error {
	resp, err := dnstest.Exchange(addr, name, dns.TypeA)
	if err != nil {
		return err
	}
	if resp.Rcode != dns.RcodeSuccess || len(resp.Answer) != 1 || resp.Answer[0].(*dns.A).A.String() != target {
		return fmt.Errorf("%s A at %s: %s %v", name, addr, dns.RcodeToString[resp.Rcode], resp.Answer)
	}
	return nil
}

// waitAnswered polls addr every 2 ms until it answers name with ip, and returns the time since
// start; it fails the test only after testrun.HangTimeout.
func waitAnswered(t *testing.T, addr, name, ip string, start time.Time) time.Duration {
	t.Helper()
	for {
		err := answered(addr, name, ip)
		if err == nil {
			return time.Since(start)
		}
		if time.Since(start) > testrun.HangTimeout {
			t.Fatalf("%s not answered by %s within %s: %v", name, addr, testrun.HangTimeout, err)
		}
		time.Sleep(2 * time.Millisecond)
	}
}

func axfr(t *testing.T, addr, zone string) []string {
	t.Helper()
	m := new(dns.Msg)
	m.SetAxfr(dns.Fqdn(zone))
	ch, err := (&dns.Transfer{}).In(m, addr)
	if err != nil {
		t.Fatalf("AXFR %s from %s: %v", zone, addr, err)
	}
	var out []string
	for env := range ch {
		if env.Error != nil {
			t.Fatalf("AXFR %s from %s: %v", zone, addr, env.Error)
		}
		for _, rr := range env.RR {
			out = append(out, rr.String())
		}
	}
	return out
}

func aSet(name, ip string) provider.Change {
	return provider.Change{Action: provider.ActionCreate, After: &provider.RecordSet{Name: name, Type: "A", TTL: 60, Targets: []string{ip}}}
}

func publish(t *testing.T, r *replica, zoneID string, changes ...provider.Change) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := r.a.Local.ApplyChanges(ctx, zoneID, changes); err != nil {
		t.Fatalf("publish through %s: %v", r.addr, err)
	}
}

// followerLoop asks addr for every name in names, A with its one address and the AA bit, in
// rounds back to back until the test stops it.
func followerLoop(t *testing.T, addr string, names map[string]string) *answerloop.Loop {
	t.Helper()
	var qs []answerloop.Query
	for _, name := range slices.Sorted(maps.Keys(names)) {
		qs = append(qs, answerloop.Query{Name: name, Type: dns.TypeA, Allowed: []string{names[name]}})
	}
	return answerloop.Start(t, addr, qs, answerloop.Options{Authoritative: true})
}

// checkLoop fails t unless loop asked and every answer was right.
func checkLoop(t *testing.T, loop *answerloop.Loop) {
	t.Helper()
	if loop.Failures.Load() != 0 || loop.Queries.Load() == 0 {
		t.Errorf("answers %v, want only NOERROR with the published address (no REFUSED, SERVFAIL, timeout, error or wrong answer): %v",
			loop.Counts(), loop.Examples())
	}
}

// TestReplicas_EveryReplicaServesTheCurrentZones: every replica serves every published change,
// with two managers with leader election on one API server, each on its own loopback address
// (127.0.0.31 and .32), outside a cluster (--leader-election-namespace):
//   - the zone's NS glue is the dns Service's address, not a replica's;
//   - a record published through the leader is answered by the follower (p99 over 100 changes
//     measured and logged; asserted only under a generous 10 s);
//   - the leader stopped hard during a query loop against the follower: every answer is
//     NOERROR with the right address, no REFUSED or SERVFAIL; the follower leads and publishes;
//   - every replica stopped and started again: the AXFR after equals the AXFR before (no
//     record lost, the serial kept), and the next change has a higher serial.
func TestReplicas_EveryReplicaServesTheCurrentZones(t *testing.T) {
	usableLoopback(t, "127.0.0.31", "127.0.0.32")
	cfg := envtest.Start(t, "../..")
	svc := dnsService(t, cfg)
	leader, others := leaderOf(t, startReplica(t, cfg, "127.0.0.31"), startReplica(t, cfg, "127.0.0.32"))
	follower := others[0]
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	zone, err := leader.a.Local.EnsureZone(ctx, provider.ZoneSpec{Name: "replicas.test", CallerReference: "ref"})
	if err != nil {
		t.Fatal(err)
	}
	// The glue is the dns Service's address, not the creating replica's.
	testrun.Eventually(t, time.Minute, "the follower serves the zone, glue and all", func() error {
		return answered(follower.addr, "ns1.replicas.test", svc.Spec.ClusterIP)
	})
	names := publishToFollower(t, leader, follower, zone.ID)
	leaderStops(t, leader, follower, zone.ID, names)
	restartAll(t, cfg, follower, zone.ID)
}

// usableLoopback fails the test when a UDP socket cannot be bound on one of hosts: every
// address of 127.0.0.0/8 is usable on Linux, so a failure is a broken machine, not a reason to
// skip.
func usableLoopback(t *testing.T, hosts ...string) {
	t.Helper()
	for _, host := range hosts {
		l, err := net.ListenPacket("udp", host+":0")
		if err != nil {
			t.Fatalf("loopback address %s unusable (127.0.0.0/8 always is on Linux): %v", host, err)
		}
		_ = l.Close()
	}
}

// dnsService creates the manager's namespace and its dns Service (a cluster IP), as
// config/default does.
func dnsService(t *testing.T, cfg *rest.Config) *corev1.Service {
	t.Helper()
	admin, err := client.New(cfg, client.Options{Scheme: app.NewScheme()})
	if err != nil {
		t.Fatal(err)
	}
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: replicasNS, Name: "dns"},
		Spec: corev1.ServiceSpec{Selector: map[string]string{"control-plane": "controller-manager"},
			Ports: []corev1.ServicePort{{Name: "dns-udp", Port: 53, Protocol: corev1.ProtocolUDP}}}}
	for _, o := range []client.Object{&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: replicasNS}}, svc} {
		if err := admin.Create(context.Background(), o); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := netip.ParseAddr(svc.Spec.ClusterIP); err != nil {
		t.Fatalf("the dns Service has no cluster IP: %v", err)
	}
	return svc
}

// publishToFollower publishes 100 records one by one through the leader, measures each until
// the follower answers it, logs p50/p99/max (each only under a hang deadline), and returns the
// names and addresses.
func publishToFollower(t *testing.T, leader, follower *replica, zoneID string) map[string]string {
	t.Helper()
	names := map[string]string{}
	var lat []time.Duration
	for i := range 100 {
		name, ip := fmt.Sprintf("r%d.replicas.test", i), fmt.Sprintf("192.0.2.%d", i+1)
		start := time.Now()
		publish(t, leader, zoneID, aSet(name, ip))
		lat = append(lat, waitAnswered(t, follower.addr, name, ip, start))
		names[name] = ip
	}
	slices.Sort(lat)
	t.Logf("publish through the leader -> answered by the follower, 100 changes: p50 %s, p99 %s, max %s",
		lat[49].Round(time.Millisecond), lat[98].Round(time.Millisecond), lat[99].Round(time.Millisecond))
	return names
}

// leaderStops stops the leader hard while the follower is queried for every name: every answer
// is NOERROR with the name's address; the follower then leads and publishes.
func leaderStops(t *testing.T, leader, follower *replica, zoneID string, names map[string]string) {
	t.Helper()
	loop := followerLoop(t, follower.addr, names)
	time.Sleep(500 * time.Millisecond) // some answers before the stop, for the record
	leader.stop()
	testrun.Eventually(t, 2*time.Minute, "the follower leads", func() error {
		if !follower.leads() {
			return fmt.Errorf("not yet")
		}
		return nil
	})
	publish(t, follower, zoneID, aSet("after.replicas.test", "198.51.100.1"))
	testrun.Eventually(t, 10*time.Second, "the new leader answers its new record", func() error {
		return answered(follower.addr, "after.replicas.test", "198.51.100.1")
	})
	loop.Stop()
	t.Logf("answers of the follower through the leader's stop and its takeover: %s", loop)
	checkLoop(t, loop)
}

// restartAll stops the last replica, starts two again, and checks that both serve the AXFR of
// before (no record lost, the serial kept) and that the next change has a newer serial.
func restartAll(t *testing.T, cfg *rest.Config, last *replica, zoneID string) {
	t.Helper()
	before := axfr(t, last.addr, "replicas.test")
	last.stop()
	a, others := leaderOf(t, startReplica(t, cfg, "127.0.0.31"), startReplica(t, cfg, "127.0.0.32"))
	for _, r := range []*replica{a, others[0]} {
		if after := axfr(t, r.addr, "replicas.test"); !slices.Equal(after, before) {
			t.Errorf("AXFR from %s after the restart:\n%s\nwant the one from before:\n%s", r.addr, strings.Join(after, "\n"), strings.Join(before, "\n"))
		}
	}
	serial := func(r *replica) uint32 {
		zi, err := r.a.Store.Zone("replicas.test")
		if err != nil {
			t.Fatal(err)
		}
		return zi.Serial
	}
	s0 := serial(a)
	publish(t, a, zoneID, aSet("later.replicas.test", "198.51.100.2"))
	testrun.Eventually(t, 10*time.Second, "the other replica serves the next serial", func() error {
		if s := serial(others[0]); !zonedb.SerialNewer(s, s0) {
			return fmt.Errorf("serial %d, want newer than %d", s, s0)
		}
		return nil
	})
}
