package dynupdate

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/miekg/dns"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	dnsv1 "github.com/dnsplane/dnsplane/apis/v1alpha1"
)

// wake tells the UPDATEs waiting on key that it changed.
func (a *Applier) wake(key types.NamespacedName) {
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, ch := range a.waiters[key] {
		select {
		case ch <- struct{}{}:
		default:
		}
	}
}

// watch registers a wake-up channel for key; stop unregisters it.
func (a *Applier) watch(key types.NamespacedName) (ch chan struct{}, stop func()) {
	ch = make(chan struct{}, 1)
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.waiters == nil {
		a.waiters = map[types.NamespacedName][]chan struct{}{}
	}
	a.waiters[key] = append(a.waiters[key], ch)
	return ch, func() {
		a.mu.Lock()
		defer a.mu.Unlock()
		ws := a.waiters[key]
		for i, c := range ws {
			if c == ch {
				a.waiters[key] = append(ws[:i], ws[i+1:]...)
				break
			}
		}
		if len(a.waiters[key]) == 0 {
			delete(a.waiters, key)
		}
	}
}

// waitAll waits for every written DNSEndpoint's outcome and returns the UPDATE's rcode: NOERROR
// once each is Ready at its generation or gone; REFUSED as soon as one is refused (another
// owner holds a name); SERVFAIL as soon as one cannot be written, or when ctx ends first, with
// the last status seen.
func (a *Applier) waitAll(ctx context.Context, waits []wait, names []string) (int, []string, error) {
	for _, w := range waits {
		if rcode, err := a.waitOne(ctx, w); rcode != dns.RcodeSuccess {
			return rcode, names, err
		}
	}
	return dns.RcodeSuccess, names, nil
}

// waitOne waits for one DNSEndpoint's outcome, reading it from the cache whenever the informer
// says it changed.
func (a *Applier) waitOne(ctx context.Context, w wait) (int, error) {
	ch, stop := a.watch(w.key)
	defer stop()
	last := "not in the cache yet"
	for {
		var ep dnsv1.DNSEndpoint
		err := a.Client.Get(ctx, w.key, &ep)
		switch {
		case apierrors.IsNotFound(err) && w.gone:
			return dns.RcodeSuccess, nil
		case err != nil && !apierrors.IsNotFound(err):
			last = err.Error()
		case err == nil && !w.gone:
			done, rcode, why := verdict(&ep, w.generation)
			if done {
				return rcode, why
			}
			last = describe(&ep)
		case err == nil:
			last = "being deleted: " + describe(&ep)
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return dns.RcodeServerFailure, fmt.Errorf("DNSEndpoint %s not written in time (%s): %w", w.key, last, ctx.Err())
		}
	}
}

// verdict reads ep's Ready condition for generation: NOERROR once True (the provider accepted
// the write); REFUSED when another owner holds a name (OwnershipConflict, DoubleClaim) or the
// provider cannot hold it (NotCapable); SERVFAIL for an endpoint the controller rejects
// (InvalidEndpoint). Other reasons (ProviderError, AwaitingZone, ...) are retried by the
// controller: not done.
func verdict(ep *dnsv1.DNSEndpoint, generation int64) (done bool, rcode int, why error) {
	c := meta.FindStatusCondition(ep.Status.Conditions, dnsv1.ConditionReady)
	if c == nil || c.ObservedGeneration < generation {
		return false, 0, nil
	}
	if c.Status == metav1.ConditionTrue {
		return true, dns.RcodeSuccess, nil
	}
	switch c.Reason {
	case dnsv1.ReasonOwnershipConflict, dnsv1.ReasonDoubleClaim, dnsv1.ReasonNotCapable:
		return true, dns.RcodeRefused, errors.New(c.Reason + ": " + c.Message)
	case dnsv1.ReasonInvalidEndpoint:
		return true, dns.RcodeServerFailure, errors.New(c.Reason + ": " + c.Message)
	}
	return false, 0, nil
}

// describe is ep's Ready condition, for a timeout's message.
func describe(ep *dnsv1.DNSEndpoint) string {
	c := meta.FindStatusCondition(ep.Status.Conditions, dnsv1.ConditionReady)
	if c == nil {
		return "no Ready condition yet"
	}
	return strings.Join([]string{"Ready=" + string(c.Status), c.Reason, c.Message}, " ")
}
