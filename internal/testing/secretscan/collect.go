package secretscan

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/expfmt"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
)

// Watch starts watching the API server of cfg until ctx ends: every Secret it holds or gets
// teaches s its needles (AddSecret); every Event, and the status of every object of the kinds
// of statusOf (typed objects of scheme, such as &dnsv1.DNSZone{}), is checked as it is added or
// changed. It returns once the watches have listed what exists, or an error when they cannot.
func Watch(ctx context.Context, cfg *rest.Config, scheme *runtime.Scheme, s *Scanner, statusOf ...client.Object) error {
	c, err := cache.New(cfg, cache.Options{Scheme: scheme})
	if err != nil {
		return fmt.Errorf("secret scan: cache: %w", err)
	}
	handle := func(obj client.Object, on func(any)) error {
		inf, err := c.GetInformer(ctx, obj)
		if err != nil {
			return fmt.Errorf("secret scan: informer for %T: %w", obj, err)
		}
		_, err = inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
			AddFunc:    on,
			UpdateFunc: func(_, o any) { on(o) },
		})
		return err
	}
	if err := handle(&corev1.Secret{}, func(o any) {
		if sec, ok := o.(*corev1.Secret); ok {
			s.AddSecret(sec)
		}
	}); err != nil {
		return err
	}
	if err := handle(&corev1.Event{}, func(o any) {
		if ev, ok := o.(*corev1.Event); ok {
			s.CheckEvent(ev)
		}
	}); err != nil {
		return err
	}
	for _, kind := range statusOf {
		if err := handle(kind, func(o any) {
			if obj, ok := o.(client.Object); ok {
				s.CheckStatus(scheme, obj)
			}
		}); err != nil {
			return err
		}
	}
	go func() { _ = c.Start(ctx) }()
	if !c.WaitForCacheSync(ctx) {
		return fmt.Errorf("secret scan: the watches did not sync")
	}
	return nil
}

// CheckEvent checks e's reason, action, message and note.
func (s *Scanner) CheckEvent(e *corev1.Event) {
	s.Check("Event "+e.Namespace+"/"+e.Name+" ("+e.Reason+" on "+e.InvolvedObject.Kind+" "+e.InvolvedObject.Name+")",
		e.Reason+"\n"+e.Action+"\n"+e.Message)
}

// CheckStatus checks the status of obj as JSON; scheme names its kind.
func (s *Scanner) CheckStatus(scheme *runtime.Scheme, obj client.Object) {
	kind := fmt.Sprintf("%T", obj)
	if gvk, err := apiutil.GVKForObject(obj, scheme); err == nil {
		kind = gvk.Kind
	}
	u, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		return
	}
	b, err := json.Marshal(u["status"])
	if err != nil {
		return
	}
	s.Check("status of "+kind+" "+obj.GetNamespace()+"/"+obj.GetName(), string(b))
}

// Sweep reads what the API server of c holds now: every Secret (AddSecret), then every Event
// and the status of every object of the lists (typed lists, such as &dnsv1.DNSZoneList{}),
// checked against every needle. A test suite calls it once at its end, to catch what a watch
// delivered before it knew a Secret.
func Sweep(ctx context.Context, c client.Client, s *Scanner, lists ...client.ObjectList) error {
	var secrets corev1.SecretList
	if err := c.List(ctx, &secrets); err != nil {
		return fmt.Errorf("secret scan: list Secrets: %w", err)
	}
	for i := range secrets.Items {
		s.AddSecret(&secrets.Items[i])
	}
	var events corev1.EventList
	if err := c.List(ctx, &events); err != nil {
		return fmt.Errorf("secret scan: list Events: %w", err)
	}
	for i := range events.Items {
		s.CheckEvent(&events.Items[i])
	}
	scheme := c.Scheme()
	for _, l := range lists {
		if err := c.List(ctx, l); err != nil {
			return fmt.Errorf("secret scan: list %T: %w", l, err)
		}
		items, err := meta.ExtractList(l)
		if err != nil {
			return fmt.Errorf("secret scan: items of %T: %w", l, err)
		}
		for _, it := range items {
			if obj, ok := it.(client.Object); ok {
				s.CheckStatus(scheme, obj)
			}
		}
	}
	return nil
}

// CheckMetrics gathers every metric of gs and checks them in the Prometheus text format, as a
// scrape of /metrics shows them.
func (s *Scanner) CheckMetrics(gs ...prometheus.Gatherer) error {
	var buf bytes.Buffer
	for _, g := range gs {
		mfs, err := g.Gather()
		if err != nil {
			return fmt.Errorf("secret scan: gather metrics: %w", err)
		}
		for _, mf := range mfs {
			if _, err := expfmt.MetricFamilyToText(&buf, mf); err != nil {
				return fmt.Errorf("secret scan: encode metric %s: %w", mf.GetName(), err)
			}
		}
	}
	s.Check("metrics", buf.String())
	return nil
}
