package zonestore

import (
	"bytes"
	"compress/gzip"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"sync"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/dnsplane/dnsplane/pkg/zonedb"
)

// Labels, annotation and keys of the zone ConfigMaps.
const (
	// LabelStore marks every zone ConfigMap, with the value StoreVersion; the Syncer watches
	// only those.
	LabelStore   = "dnsplane.io/zone-store"
	StoreVersion = "v1"
	// LabelZone is the zone's key (ZoneKey) on its head and shards.
	LabelZone = "dnsplane.io/zone"
	// LabelShard is the shard index: "0" on the head.
	LabelShard = "dnsplane.io/zone-shard"
	// LabelShards, on the head, is the zone's shard count.
	LabelShards = "dnsplane.io/zone-shards"
	// AnnotationOrigin, on the head, is the zone's origin, for people.
	AnnotationOrigin = "dnsplane.io/zone-origin"

	keyHead   = "head.json.gz"  // head: zonedb.EncodeShards' head, gzipped
	keyShard  = "shard.json.gz" // head and shards: one shard, gzipped
	keyHashes = "shards"        // head: JSON list of the SHA-256 (hex) of shards 1..n-1's keyShard bytes

	// DefaultMaxShardBytes is the default bound of a shard's gzipped bytes, 16 KiB: a flush
	// rewrites the changed record's shard and the head (which holds shard 0), so the bound is
	// about what a one-record flush writes (about 20 KB at 50,000 records, against 281 KB with
	// one 512 KiB shard), while a shard stays far under the API server's 1 MiB object limit.
	// At maxShards that bounds a zone at 64 MiB gzipped.
	DefaultMaxShardBytes = 16 << 10
	// DefaultTimeout bounds each API call.
	DefaultTimeout = 10 * time.Second
	maxShards      = 1 << 12
)

// ErrNotLoaded: the zone's objects exist but this replica has not installed them yet; the
// write is refused so that it cannot overwrite a version it has not seen. It wraps
// zonedb.ErrStaleVersion. Retry.
var ErrNotLoaded = fmt.Errorf("zone objects exist but are not loaded yet: %w", zonedb.ErrStaleVersion)

// Options configures Objects.
type Options struct {
	// Client writes and watches ConfigMaps in Namespace.
	Client kubernetes.Interface
	// Namespace holds the zone ConfigMaps: the manager's (the leader election Lease's).
	Namespace string
	// Timeout bounds each API call, a time.Duration; default DefaultTimeout.
	Timeout time.Duration
	// MaxShardBytes bounds a shard's gzipped size, in bytes; over it, the zone's shard count
	// doubles. Default DefaultMaxShardBytes.
	MaxShardBytes int
	// Metrics counts writes and loads; nil counts nothing.
	Metrics *Metrics
	// Log receives writes that failed and loads of inconsistent objects.
	Log logr.Logger
}

// Objects is the zonedb.Backend of the zone ConfigMaps. It remembers the newest version it
// has seen of each object (its own writes and the Syncer's watch), to write with that
// resourceVersion and to skip unchanged shards. Safe for concurrent use.
type Objects struct {
	opts Options

	mu    sync.Mutex
	known map[string]*corev1.ConfigMap // by name
}

var _ zonedb.Backend = (*Objects)(nil)

// New returns the Backend over opts.
func New(opts Options) *Objects {
	if opts.Timeout <= 0 {
		opts.Timeout = DefaultTimeout
	}
	if opts.MaxShardBytes <= 0 {
		opts.MaxShardBytes = DefaultMaxShardBytes
	}
	if opts.Log.GetSink() == nil {
		opts.Log = logr.Discard()
	}
	return &Objects{opts: opts, known: map[string]*corev1.ConfigMap{}}
}

// ZoneKey is the key of origin (lower-case FQDN) in object names and LabelZone: the first 20
// hex digits of its SHA-256 (zone names may hold '_', which object names may not).
func ZoneKey(origin string) string {
	sum := sha256.Sum256([]byte(origin))
	return hex.EncodeToString(sum[:10])
}

// HeadName is the name of the head ConfigMap of the zone with key k; ShardName that of shard
// i >= 1.
func HeadName(k string) string         { return "dnsplane-zone-" + k }
func ShardName(k string, i int) string { return HeadName(k) + "-" + strconv.Itoa(i) }

func (o *Objects) get(name string) *corev1.ConfigMap {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.known[name]
}

// remember records cm as the newest version of its object seen, unless a newer one is known
// (resourceVersions compared as etcd's integers; one that does not parse replaces).
func (o *Objects) remember(cm *corev1.ConfigMap) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if old := o.known[cm.Name]; old != nil {
		a, errA := strconv.ParseUint(old.ResourceVersion, 10, 64)
		b, errB := strconv.ParseUint(cm.ResourceVersion, 10, 64)
		if errA == nil && errB == nil && a > b {
			return
		}
	}
	o.known[cm.Name] = cm
}

func (o *Objects) forget(name string) {
	o.mu.Lock()
	defer o.mu.Unlock()
	delete(o.known, name)
}

// encoded is a zone version as ConfigMap payloads.
type encoded struct {
	head   []byte   // gzipped head
	shards [][]byte // gzipped shards
	hashes []string // SHA-256 of shards[1:]
}

// encode encodes v in at least n shards, doubling n until every gzipped shard fits
// MaxShardBytes (or maxShards is reached).
func (o *Objects) encode(v zonedb.ZoneVersion, n int) (encoded, error) {
	for {
		head, shards, err := zonedb.EncodeShards(v, n)
		if err != nil {
			return encoded{}, err
		}
		e := encoded{head: gz(head), shards: make([][]byte, len(shards))}
		fits := true
		for i, s := range shards {
			e.shards[i] = gz(s)
			fits = fits && len(e.shards[i]) <= o.opts.MaxShardBytes
			if i > 0 {
				e.hashes = append(e.hashes, hash(e.shards[i]))
			}
		}
		if fits || n >= maxShards {
			return e, nil
		}
		n *= 2
	}
}

// WriteZone writes v: every shard whose bytes differ from the stored object's, then the head
// (the commit point: the Syncer installs a version only once the head's shard hashes match the
// shards). Each write is conditional on the resourceVersion last seen. A new zone whose head
// exists, or an object changed since it was last seen, fail with zonedb.ErrStaleVersion
// (ErrNotLoaded, or wrapping the API's Conflict or AlreadyExists): the caller retries once the
// watch caught up.
func (o *Objects) WriteZone(v zonedb.ZoneVersion, create bool) error {
	ctx := context.Background() // put bounds each API call with Timeout; encoding a big zone is not one
	k := ZoneKey(v.Origin())
	old := o.get(HeadName(k))
	if create && old != nil {
		return fmt.Errorf("write zone %s: %w", v.Origin(), ErrNotLoaded)
	}
	n := 1
	if old != nil {
		n, _ = strconv.Atoi(old.Labels[LabelShards])
	}
	e, err := o.encode(v, max(n, 1))
	if err != nil {
		return fmt.Errorf("write zone %s: %w", v.Origin(), err)
	}
	writes := 0
	for i := 1; i < len(e.shards); i++ {
		cur := o.get(ShardName(k, i))
		if cur != nil && bytes.Equal(cur.BinaryData[keyShard], e.shards[i]) {
			continue
		}
		cm := o.object(ShardName(k, i), k, i, nil, nil)
		cm.BinaryData = map[string][]byte{keyShard: e.shards[i]}
		if err := o.put(ctx, cm, cur); err != nil {
			return fmt.Errorf("write zone %s shard %d: %w", v.Origin(), i, err)
		}
		writes++
	}
	hashes, _ := json.Marshal(e.hashes)
	head := o.object(HeadName(k), k, 0, map[string]string{LabelShards: strconv.Itoa(len(e.shards))}, map[string]string{AnnotationOrigin: v.Origin()})
	head.BinaryData = map[string][]byte{keyHead: e.head, keyShard: e.shards[0]}
	head.Data = map[string]string{keyHashes: string(hashes)}
	if err := o.put(ctx, head, old); err != nil {
		return fmt.Errorf("write zone %s: %w", v.Origin(), err)
	}
	o.opts.Metrics.flushed(writes + 1)
	return nil
}

// object returns a zone ConfigMap's skeleton.
func (o *Objects) object(name, k string, shard int, labels, annotations map[string]string) *corev1.ConfigMap {
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: o.opts.Namespace, Annotations: annotations,
		Labels: map[string]string{LabelStore: StoreVersion, LabelZone: k, LabelShard: strconv.Itoa(shard)}}}
	for key, val := range labels {
		cm.Labels[key] = val
	}
	return cm
}

// put creates cm when cur is nil, else updates it conditionally on cur's resourceVersion; a
// create that finds the object (a shard left by an interrupted deletion) updates it instead.
func (o *Objects) put(ctx context.Context, cm, cur *corev1.ConfigMap) error {
	ctx, cancel := context.WithTimeout(ctx, o.opts.Timeout)
	defer cancel()
	api := o.opts.Client.CoreV1().ConfigMaps(o.opts.Namespace)
	var out *corev1.ConfigMap
	var err error
	if cur == nil {
		out, err = api.Create(ctx, cm, metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) && cm.Labels[LabelShard] != "0" {
			if cur, err = api.Get(ctx, cm.Name, metav1.GetOptions{}); err == nil {
				return o.put(ctx, cm, cur)
			}
		}
	} else {
		cm.ResourceVersion = cur.ResourceVersion
		out, err = api.Update(ctx, cm, metav1.UpdateOptions{})
	}
	o.opts.Metrics.wrote(cm, err)
	if apierrors.IsConflict(err) || apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("%w: %w", zonedb.ErrStaleVersion, err)
	}
	if err != nil {
		return err
	}
	o.remember(out)
	return nil
}

// DeleteZone deletes the zone's head (conditional on the resourceVersion last seen: the commit
// point, replicas stop serving the zone), then its shards. A zone whose objects are already
// gone is not an error.
func (o *Objects) DeleteZone(origin string) error {
	ctx, cancel := context.WithTimeout(context.Background(), o.opts.Timeout)
	defer cancel()
	k := ZoneKey(origin)
	api := o.opts.Client.CoreV1().ConfigMaps(o.opts.Namespace)
	head := o.get(HeadName(k))
	n := 1
	if head != nil {
		n, _ = strconv.Atoi(head.Labels[LabelShards])
		var pre metav1.DeleteOptions
		pre.Preconditions = &metav1.Preconditions{ResourceVersion: &head.ResourceVersion}
		err := api.Delete(ctx, head.Name, pre)
		o.opts.Metrics.deleted(err)
		if err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("delete zone %s: %w", origin, err)
		}
	}
	o.forget(HeadName(k))
	for i := 1; i < n; i++ {
		err := api.Delete(ctx, ShardName(k, i), metav1.DeleteOptions{})
		o.opts.Metrics.deleted(err)
		if err != nil && !apierrors.IsNotFound(err) {
			// The zone is gone already (no head); a later creation overwrites the shard.
			o.opts.Log.Error(err, "delete a zone shard", "zone", origin, "shard", i)
		}
		o.forget(ShardName(k, i))
	}
	return nil
}

// gz gzips b deterministically (no name, no time in the header).
func gz(b []byte) []byte {
	var buf bytes.Buffer
	w, _ := gzip.NewWriterLevel(&buf, gzip.BestSpeed)
	_, _ = w.Write(b)
	_ = w.Close()
	return buf.Bytes()
}

// gunzip reverses gz; nil stays nil.
func gunzip(b []byte) ([]byte, error) {
	if b == nil {
		return nil, nil
	}
	r, err := gzip.NewReader(bytes.NewReader(b))
	if err != nil {
		return nil, fmt.Errorf("gunzip: %w", err)
	}
	out, err := io.ReadAll(io.LimitReader(r, 64<<20))
	if err != nil {
		return nil, fmt.Errorf("gunzip: %w", err)
	}
	return out, nil
}

func hash(b []byte) string {
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:])
}
