package main

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
)

const (
	benchNamespace = "default"
	pdnsSecret     = "pdns"
	// createWorkers is how many objects the driver creates at once.
	createWorkers = 16
)

// endpointsGVR is the DNSEndpoint resource of tool: dnsplane.io or externaldns.k8s.io, both
// v1alpha1 with the same spec.endpoints.
func endpointsGVR(tool string) schema.GroupVersionResource {
	if tool == toolDNSPlane {
		return schema.GroupVersionResource{Group: "dnsplane.io", Version: "v1alpha1", Resource: "dnsendpoints"}
	}
	return schema.GroupVersionResource{Group: "externaldns.k8s.io", Version: "v1alpha1", Resource: "dnsendpoints"}
}

// hostName is endpoint j of object i: h<i>.z<j>.bench.test, in zone j.
func hostName(i, j int) string { return fmt.Sprintf("h%d.%s", i, zoneName(j)) }

// target is endpoint j's address of object i at generation gen (0 first, 1 after the change).
// Objects number at most 65,536 (655,360 endpoints).
func target(i, j, gen int) string {
	return fmt.Sprintf("10.%d.%d.%d", (i>>8)&255, i&255, 1+j+100*gen)
}

// endpointsSpec is object i's spec.endpoints at generation gen: one A endpoint in each zone.
func endpointsSpec(i, gen int) []any {
	eps := make([]any, zones)
	for j := range zones {
		eps[j] = map[string]any{"dnsName": hostName(i, j), "recordType": "A", "targets": []any{target(i, j, gen)}, "recordTTL": int64(300)}
	}
	return eps
}

// endpointObject is DNSEndpoint i of tool, named app<i>.
func endpointObject(tool string, i int) *unstructured.Unstructured {
	gvr := endpointsGVR(tool)
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": gvr.GroupVersion().String(), "kind": "DNSEndpoint",
		"metadata": map[string]any{"name": fmt.Sprintf("app%d", i), "namespace": benchNamespace},
		"spec":     map[string]any{"endpoints": endpointsSpec(i, 0)},
	}}
	return u
}

// want returns what the served check waits for: zone → owner name (FQDN) → A target, for
// objects [from, to) at generation gen.
func want(from, to, gen int) map[string]map[string]string {
	out := make(map[string]map[string]string, zones)
	for j := range zones {
		m := make(map[string]string, to-from)
		for i := from; i < to; i++ {
			m[hostName(i, j)+"."] = target(i, j, gen)
		}
		out[zoneName(j)+"."] = m
	}
	return out
}

// wantChanged is want for objects [0, objects) whose first changed objects are at generation 1
// (changeObjects) and the others at generation 0.
func wantChanged(objects, changed int) map[string]map[string]string {
	out := want(changed, objects, 0)
	for zone, m := range want(0, changed, 1) {
		maps.Copy(out[zone], m)
	}
	return out
}

// createObjects creates the n DNSEndpoints of tool with createWorkers at once and returns when
// the last create has answered.
func (w *world) createObjects(ctx context.Context, tool string, n int) error {
	res := w.dyn.Resource(endpointsGVR(tool)).Namespace(benchNamespace)
	next := make(chan int)
	errs := make([]error, createWorkers)
	var wg sync.WaitGroup
	for k := range createWorkers {
		wg.Go(func() {
			for i := range next {
				if errs[k] != nil {
					continue
				}
				if _, err := res.Create(ctx, endpointObject(tool, i), metav1.CreateOptions{}); err != nil {
					errs[k] = fmt.Errorf("create DNSEndpoint app%d: %w", i, err)
				}
			}
		})
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
	return errors.Join(errs...)
}

// changeObjects gives objects [0, n) their generation-1 targets, one merge patch after another,
// as a rollout would.
func (w *world) changeObjects(ctx context.Context, tool string, n int) error {
	res := w.dyn.Resource(endpointsGVR(tool)).Namespace(benchNamespace)
	for i := range n {
		patch, _ := json.Marshal(map[string]any{"spec": map[string]any{"endpoints": endpointsSpec(i, 1)}})
		if _, err := res.Patch(ctx, fmt.Sprintf("app%d", i), types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
			return fmt.Errorf("patch DNSEndpoint app%d: %w", i, err)
		}
	}
	return nil
}

// setupDNSPlane creates dnsplane's provider Secret (PowerDNS through the proxy; SOA checks
// straight at PowerDNS's DNS port) and 10 DNSZones adopting the existing zones by spec.zoneID.
// With BENCH_DNSPLANE_PROVIDER=webhook the Secret names external-dns's webhook server instead
// (startWebhook), which writes to the same PowerDNS through the same proxy.
func (w *world) setupDNSPlane(ctx context.Context) error {
	cs, err := kubernetes.NewForConfig(w.rest)
	if err != nil {
		return fmt.Errorf("clientset: %w", err)
	}
	sec := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: pdnsSecret, Namespace: benchNamespace}, Type: "dnsplane.io/pdns",
		StringData: map[string]string{"PDNS_API_URL": cmp.Or(w.secretAPIURL, w.proxyURL), "PDNS_API_KEY": w.pdns.key, "DNS_ADDRESS": w.pdns.dnsAddr}}
	zoneID := func(j int) string { return zoneName(j) + "." }
	if w.provider == providerWebhook {
		hook, err := w.startWebhook(ctx, w.root)
		if err != nil {
			return err
		}
		sec.Type = "dnsplane.io/webhook"
		sec.StringData = map[string]string{"WEBHOOK_URL": hook, "DNS_ADDRESS": w.pdns.dnsAddr}
		zoneID = zoneName // a webhook zone's ID is its name
	}
	if _, err := cs.CoreV1().Secrets(benchNamespace).Create(ctx, sec, metav1.CreateOptions{}); err != nil {
		return fmt.Errorf("create Secret %s: %w", pdnsSecret, err)
	}
	gvr := schema.GroupVersionResource{Group: "dnsplane.io", Version: "v1alpha1", Resource: "dnszones"}
	for j := range zones {
		z := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "dnsplane.io/v1alpha1", "kind": "DNSZone",
			"metadata": map[string]any{"name": fmt.Sprintf("z%d", j), "namespace": benchNamespace},
			"spec":     map[string]any{"zone": zoneName(j), "providerRef": map[string]any{"name": pdnsSecret}, "zoneID": zoneID(j)},
		}}
		if _, err := w.dyn.Resource(gvr).Namespace(benchNamespace).Create(ctx, z, metav1.CreateOptions{}); err != nil {
			return fmt.Errorf("create DNSZone z%d: %w", j, err)
		}
	}
	return nil
}

// waitZonesReady waits until every DNSZone has Ready=True (dnsplane), polling each second.
func (w *world) waitZonesReady(ctx context.Context, timeout time.Duration) error {
	gvr := schema.GroupVersionResource{Group: "dnsplane.io", Version: "v1alpha1", Resource: "dnszones"}
	deadline := time.Now().Add(timeout)
	for {
		list, err := w.dyn.Resource(gvr).Namespace(benchNamespace).List(ctx, metav1.ListOptions{})
		if err == nil && countReady(list.Items) == zones {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("DNSZones not Ready within %s", timeout)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(time.Second):
		}
	}
}

// waitObjectsCurrent waits until DNSEndpoints app0 to app<changed-1> have Ready=True written
// for their current generation, listing them every 500 ms.
func (w *world) waitObjectsCurrent(ctx context.Context, changed int) error {
	res := w.dyn.Resource(endpointsGVR(toolDNSPlane)).Namespace(benchNamespace)
	for {
		list, err := res.List(ctx, metav1.ListOptions{})
		current := 0
		if err == nil {
			for _, it := range list.Items {
				var i int
				if _, serr := fmt.Sscanf(it.GetName(), "app%d", &i); serr != nil || i >= changed {
					continue
				}
				status, _, ok := readyOf(it)
				gen, _, _ := unstructured.NestedInt64(it.Object, "status", "observedGeneration")
				if ok && status == "True" && gen == it.GetGeneration() {
					current++
				}
			}
		}
		if current == changed {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("changed DNSEndpoints: %d of %d Ready for their generation: %w", current, changed, ctx.Err())
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// countReady counts the objects whose status.conditions hold Ready=True.
func countReady(items []unstructured.Unstructured) int {
	n := 0
	for _, it := range items {
		if status, _, ok := readyOf(it); ok && status == "True" {
			n++
		}
	}
	return n
}

// readyOf returns the status ("True", "False", "Unknown") and reason of an object's Ready
// condition, ok false when it has none.
func readyOf(u unstructured.Unstructured) (status, reason string, ok bool) {
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conds {
		m, _ := c.(map[string]any)
		if m["type"] == "Ready" {
			status, _ = m["status"].(string)
			reason, _ = m["reason"].(string)
			return status, reason, true
		}
	}
	return "", "", false
}

// waitObjectsReady waits until all n dnsplane DNSEndpoints have Ready=True, listing them every
// 500 ms, and returns when it saw them so.
func (w *world) waitObjectsReady(ctx context.Context, n int) (time.Time, error) {
	res := w.dyn.Resource(endpointsGVR(toolDNSPlane)).Namespace(benchNamespace)
	for {
		list, err := res.List(ctx, metav1.ListOptions{})
		if err == nil && countReady(list.Items) == n {
			return time.Now(), nil
		}
		select {
		case <-ctx.Done():
			return time.Time{}, fmt.Errorf("DNSEndpoints not all Ready: %w", ctx.Err())
		case <-time.After(500 * time.Millisecond):
		}
	}
}
