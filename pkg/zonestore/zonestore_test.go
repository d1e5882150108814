package zonestore

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"maps"
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/dnsplane/dnsplane/internal/testing/envtest"
	"github.com/dnsplane/dnsplane/internal/testing/testrun"
	"github.com/dnsplane/dnsplane/pkg/zonedb"
)

const ns = "dnsplane-system"

// env is one API server with the zone objects' namespace.
type env struct {
	t  *testing.T
	cs kubernetes.Interface
}

func newEnv(t *testing.T) *env {
	t.Helper()
	cfg := envtest.Start(t, "../..")
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	return &env{t: t, cs: cs}
}

// replica is one process's zone store over the objects: a writer (the leader's) or a reader.
type replica struct {
	objs    *Objects
	store   *zonedb.Store
	syncer  *Syncer
	metrics *Metrics
	stop    context.CancelFunc
}

// replica starts a store over the objects with its Syncer running, and waits until it is ready.
func (e *env) replica(maxShard int) *replica {
	e.t.Helper()
	m, err := NewMetrics(prometheus.NewRegistry())
	if err != nil {
		e.t.Fatal(err)
	}
	objs := New(Options{Client: e.cs, Namespace: ns, MaxShardBytes: maxShard, Metrics: m})
	store := zonedb.NewStore(zonedb.StoreOptions{Backend: objs, NameServerAddrs: []netip.Addr{netip.MustParseAddr("192.0.2.53")}})
	r := &replica{objs: objs, store: store, syncer: objs.Syncer(store), metrics: m}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- r.syncer.Start(ctx) }()
	r.stop = func() {
		cancel()
		if err := <-done; err != nil {
			e.t.Errorf("syncer: %v", err)
		}
	}
	e.t.Cleanup(func() {
		if r.stop != nil {
			r.stop()
		}
	})
	testrun.Eventually(e.t, time.Minute, "replica ready", func() error { return r.syncer.Ready(nil) })
	return r
}

func (r *replica) halt() { r.stop(); r.stop = nil }

// text renders every set of the zone, with set-level data, or the error.
func text(s *zonedb.Store, origin string) string {
	sets, err := s.RRSets(origin)
	if err != nil {
		return err.Error()
	}
	var b strings.Builder
	for _, rs := range sets {
		w := "-"
		if rs.Weight != nil {
			w = fmt.Sprint(*rs.Weight)
		}
		fmt.Fprintf(&b, "%s %d w=%s labels=%v", rs.Key(), rs.TTL, w, rs.Labels)
		for _, rr := range rs.RRs {
			b.WriteString(" " + rr.String())
		}
		b.WriteByte('\n')
	}
	return b.String()
}

func put(tx *zonedb.Tx, line string) error {
	rr, err := dns.NewRR(line)
	if err != nil {
		return err
	}
	h := rr.Header()
	return tx.Put(zonedb.RRSet{Name: h.Name, Type: h.Rrtype, TTL: h.Ttl, RRs: []dns.RR{rr}})
}

func add(t *testing.T, s *zonedb.Store, origin string, lines ...string) {
	t.Helper()
	if err := s.Update(origin, func(tx *zonedb.Tx) error {
		for _, l := range lines {
			if err := put(tx, l); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
}

// same waits until b serves what a serves for origin.
func same(t *testing.T, a, b *zonedb.Store, origin string) {
	t.Helper()
	testrun.Eventually(t, time.Minute, "the follower serves the leader's version", func() error {
		if x, y := text(a, origin), text(b, origin); x != y {
			return fmt.Errorf("leader:\n%s\nfollower:\n%s", x, y)
		}
		return nil
	})
}

// TestReplicas_FollowerServesEveryVersionAndANewReplicaLoadsThemAll: a follower installs each
// of the leader's flushes (identical record sets, set identifiers, weights and labels, serial);
// a replica started afterwards is ready only with every zone loaded; a deleted zone is gone from
// every replica.
func TestReplicas_FollowerServesEveryVersionAndANewReplicaLoadsThemAll(t *testing.T) {
	e := newEnv(t)
	leader, follower := e.replica(0), e.replica(0)
	for _, z := range []string{"a.test", "b_x.test"} {
		if _, err := leader.store.CreateZone(z, zonedb.ZoneMeta{ID: z, CallerReference: "ref", Tags: map[string]string{"k": "v"}}); err != nil {
			t.Fatal(err)
		}
	}
	w := int64(30)
	if err := leader.store.Update("a.test.", func(tx *zonedb.Tx) error {
		rr, _ := dns.NewRR("w.a.test. 60 IN A 192.0.2.7")
		if err := tx.Put(zonedb.RRSet{Name: "w.a.test.", Type: dns.TypeA, TTL: 60, SetIdentifier: "eu", Weight: &w, Labels: map[string]string{"l": "1"}, RRs: []dns.RR{rr}}); err != nil {
			return err
		}
		return put(tx, "www.a.test. 300 IN A 192.0.2.1")
	}); err != nil {
		t.Fatal(err)
	}
	for i := range 20 {
		add(t, leader.store, "a.test.", fmt.Sprintf("r%d.a.test. 300 IN TXT \"%d\"", i, i))
		same(t, leader.store, follower.store, "a.test.")
	}
	same(t, leader.store, follower.store, "b_x.test.")
	zi, _ := follower.store.Zone("a.test")
	if lz, _ := leader.store.Zone("a.test"); zi.Serial != lz.Serial || zi.Meta.CallerReference != "ref" || zi.Meta.Tags["k"] != "v" {
		t.Errorf("follower's zone info %+v, want the leader's serial %d and the metadata", zi, lz.Serial)
	}
	late := e.replica(0) // ready means loaded: no waiting here
	for _, z := range []string{"a.test.", "b_x.test."} {
		if x, y := text(leader.store, z), text(late.store, z); x != y {
			t.Errorf("a replica started later serves %s:\n%s\nwant:\n%s", z, y, x)
		}
	}
	deleted, _ := leader.store.Zone("b_x.test")
	if err := leader.store.DeleteZone("b_x.test"); err != nil {
		t.Fatal(err)
	}
	for _, r := range []*replica{follower, late} {
		testrun.Eventually(t, time.Minute, "the deleted zone is gone", func() error {
			if _, err := r.store.Zone("b_x.test"); !errors.Is(err, zonedb.ErrZoneNotFound) {
				return fmt.Errorf("still served: %v", err)
			}
			return nil
		})
	}
	// Re-created under the same name: every replica serves the new zone, at a serial newer than
	// the deleted one's (dnsserver's nextSerial).
	if _, err := leader.store.CreateZone("b_x.test", zonedb.ZoneMeta{ID: "b_x.test", CallerReference: "ref-2"}); err != nil {
		t.Fatal(err)
	}
	testrun.Eventually(t, time.Minute, "the re-created zone is served", func() error {
		zi, err := late.store.Zone("b_x.test")
		if err != nil || zi.Meta.CallerReference != "ref-2" || !zonedb.SerialNewer(zi.Serial, deleted.Serial) {
			return fmt.Errorf("%+v %v; want ref-2 at a serial newer than the deleted zone's %d", zi, err, deleted.Serial)
		}
		return nil
	})
}

// TestObjects_WritesPerFlush measures the API server's cost of the objects mode: objects and
// bytes written when a zone of n records is created in one flush, and then for a flush that
// changes one record, with the default shard bound and with a small one (many shards). A
// one-record flush writes its shard and the head, never more.
func TestObjects_WritesPerFlush(t *testing.T) {
	e := newEnv(t)
	for _, c := range []struct {
		records, maxShard int
	}{{100, 0}, {1000, 0}, {10000, 0}, {10000, 16 << 10}, {50000, 0}, {50000, 128 << 10}} {
		leader := e.replica(c.maxShard)
		origin := fmt.Sprintf("z%d-%d.test.", c.records, c.maxShard)
		if _, err := leader.store.CreateZone(origin, zonedb.ZoneMeta{}); err != nil {
			t.Fatal(err)
		}
		writes := func() float64 {
			return testutil.ToFloat64(leader.metrics.Writes.WithLabelValues("create", "ok")) + testutil.ToFloat64(leader.metrics.Writes.WithLabelValues("update", "ok"))
		}
		w0, b0 := writes(), testutil.ToFloat64(leader.metrics.Bytes)
		if err := leader.store.Update(origin, func(tx *zonedb.Tx) error {
			for i := range c.records {
				if err := put(tx, fmt.Sprintf("host-%d.%s 300 IN A 10.%d.%d.%d", i, origin, i>>16&255, i>>8&255, i&255)); err != nil {
					return err
				}
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		w1, b1 := writes(), testutil.ToFloat64(leader.metrics.Bytes)
		add(t, leader.store, origin, "one-more."+origin+" 300 IN A 192.0.2.1")
		w2, b2 := writes(), testutil.ToFloat64(leader.metrics.Bytes)
		head := leader.objs.get(HeadName(ZoneKey(origin)))
		t.Logf("%6d records, shard bound %7d B: %s shards; bulk flush %2.0f objects %8.0f B; one-record flush %2.0f objects %8.0f B",
			c.records, cmp.Or(c.maxShard, DefaultMaxShardBytes), head.Labels[LabelShards], w1-w0, b1-b0, w2-w1, b2-b1)
		if w2-w1 > 2 {
			t.Errorf("a one-record flush wrote %.0f objects, want at most 2 (its shard and the head)", w2-w1)
		}
		if c.records >= 50000 && c.maxShard == 0 && (b2-b1)*8 > b1-b0 {
			t.Errorf("a one-record flush wrote %.0f B, want under an eighth of the whole zone's %.0f B (the default shard bound)", b2-b1, b1-b0)
		}
		leader.objs.mu.Lock()
		known := maps.Clone(leader.objs.known)
		leader.objs.mu.Unlock()
		for _, cm := range known {
			size := 0
			for _, b := range cm.BinaryData {
				size += len(b)
			}
			if size > 1<<20-64<<10 {
				t.Errorf("%s holds %d bytes, too near the 1 MiB object limit", cm.Name, size)
			}
		}
		leader.halt()
	}
}

// TestSyncer_ObjectsFromDifferentWrites: a writer that stopped between a shard and the head
// leaves objects whose head does not match a shard. A running replica keeps serving its
// version; a replica starting then is ready and serves the objects as found; the next flush
// of the leader rewrites the shard, and every replica serves the same version again.
func TestSyncer_ObjectsFromDifferentWrites(t *testing.T) {
	e := newEnv(t)
	const origin = "split.test."
	leader := e.replica(256) // tiny shards: several of them
	if _, err := leader.store.CreateZone(origin, zonedb.ZoneMeta{}); err != nil {
		t.Fatal(err)
	}
	var lines []string
	for i := range 40 {
		lines = append(lines, fmt.Sprintf("h%d.%s 300 IN A 192.0.2.%d", i, origin, i))
	}
	add(t, leader.store, origin, lines...)
	follower := e.replica(256)
	same(t, leader.store, follower.store, origin)
	k := ZoneKey(origin)
	n := leader.objs.get(HeadName(k)).Labels[LabelShards]
	if n == "1" {
		t.Fatalf("want several shards, got %s", n)
	}
	// A version the leader never committed: one more name, in a shard other than 0, written to
	// that shard alone.
	scratch := zonedb.NewStore(zonedb.StoreOptions{})
	scratch.Install(mustVersion(t, leader.store, origin))
	extra := ""
	for i := 0; extra == ""; i++ {
		if name := fmt.Sprintf("ghost%d.%s", i, origin); zonedb.ShardOf(name, atoi(n)) != 0 {
			extra = name
		}
	}
	if err := scratch.Update(origin, func(tx *zonedb.Tx) error { return put(tx, extra+" 300 IN A 198.51.100.1") }); err != nil {
		t.Fatal(err)
	}
	_, shards, _ := zonedb.EncodeShards(mustVersion(t, scratch, origin), atoi(n))
	i := zonedb.ShardOf(extra, atoi(n))
	cm := leader.objs.get(ShardName(k, i)).DeepCopy()
	cm.BinaryData[keyShard] = gz(shards[i])
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := e.cs.CoreV1().ConfigMaps(ns).Update(ctx, cm, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	fresh := e.replica(256)
	if _, err := fresh.store.RRSets(origin); err != nil {
		t.Fatalf("a replica started on objects from different writes does not serve the zone: %v", err)
	}
	if !strings.Contains(text(fresh.store, origin), extra) {
		t.Errorf("the fresh replica does not serve the objects as found (no %s)", extra)
	}
	testrun.Eventually(t, time.Minute, "the leader's watch saw the shard", func() error {
		if got := leader.objs.get(ShardName(k, i)); got.ResourceVersion == cm.ResourceVersion || string(got.BinaryData[keyShard]) != string(cm.BinaryData[keyShard]) {
			return errors.New("not yet")
		}
		return nil
	})
	if strings.Contains(text(follower.store, origin), extra) {
		t.Errorf("the running follower installed a shard without its head")
	}
	add(t, leader.store, origin, "after."+origin+" 300 IN A 192.0.2.200")
	for _, r := range []*replica{follower, fresh} {
		same(t, leader.store, r.store, origin)
	}
	if strings.Contains(text(fresh.store, origin), extra) {
		t.Errorf("the uncommitted %s survived the leader's next flush", extra)
	}
}

// TestObjects_AStaleWriterConflicts: a writer whose view is behind the objects (an old leader,
// or a new one whose watch has not caught up) fails with a Conflict, serves what it served, and
// leaves the objects, serial included, as the current writer wrote them.
func TestObjects_AStaleWriterConflicts(t *testing.T) {
	e := newEnv(t)
	const origin = "c.test."
	a, b := e.replica(0), e.replica(0)
	if _, err := a.store.CreateZone(origin, zonedb.ZoneMeta{}); err != nil {
		t.Fatal(err)
	}
	add(t, a.store, origin, "x.c.test. 60 IN A 192.0.2.1")
	same(t, a.store, b.store, origin)
	b.halt() // b's view stops here
	seen, _ := b.store.Zone(origin)
	add(t, a.store, origin, "y.c.test. 60 IN A 192.0.2.2")
	current, _ := a.store.Zone(origin)
	err := b.store.Update(origin, func(tx *zonedb.Tx) error { return put(tx, "z.c.test. 60 IN A 192.0.2.3") })
	if !apierrors.IsConflict(err) {
		t.Fatalf("stale write: %v, want a Conflict", err)
	}
	if zi, _ := b.store.Zone(origin); zi.Serial != seen.Serial {
		t.Errorf("the stale writer serves serial %d, want the %d it saw", zi.Serial, seen.Serial)
	}
	c := e.replica(0)
	if zi, _ := c.store.Zone(origin); zi.Serial != current.Serial || strings.Contains(text(c.store, origin), "z.c.test") {
		t.Errorf("objects hold serial %d:\n%s\nwant the current writer's serial %d", zi.Serial, text(c.store, origin), current.Serial)
	}
	if got := testutil.ToFloat64(b.metrics.Writes.WithLabelValues("update", "conflict")); got != 1 {
		t.Errorf("conflicts counted %v, want 1", got)
	}
}

func atoi(s string) int {
	var n int
	_, _ = fmt.Sscan(s, &n)
	return n
}

func mustVersion(t *testing.T, s *zonedb.Store, origin string) zonedb.ZoneVersion {
	t.Helper()
	v, err := s.Version(origin)
	if err != nil {
		t.Fatal(err)
	}
	return v
}
