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
// once each is Ready at its generation or gone; as soon as one is judged otherwise, that
// judgement's rcode (verdict: REFUSED when another owner holds a name) with judged true; SERVFAIL
// when ctx ends first, with the last status seen.
func (a *Applier) waitAll(ctx context.Context, waits []wait) (rcode int, judged bool, err error) {
	for _, w := range waits {
		if rcode, judged, err := a.waitJudged(ctx, w); rcode != dns.RcodeSuccess {
			return rcode, judged, err
		}
	}
	return dns.RcodeSuccess, false, nil
}

// waitOne is waitJudged without telling a judgement from a timeout.
func (a *Applier) waitOne(ctx context.Context, w wait) (int, error) {
	rcode, _, err := a.waitJudged(ctx, w)
	return rcode, err
}

// waitJudged waits for one DNSEndpoint's outcome, reading it from the cache whenever the
// informer says it changed. judged is true when the outcome is the DNSEndpoint controller's
// verdict, false when ctx ended first.
func (a *Applier) waitJudged(ctx context.Context, w wait) (rcode int, judged bool, err error) {
	ch, stop := a.watch(w.key)
	defer stop()
	for {
		done, rcode, why, last := a.check(ctx, w)
		if done {
			return rcode, true, why
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return dns.RcodeServerFailure, false, fmt.Errorf("DNSEndpoint %s not written in time (%s): %w", w.key, last, ctx.Err())
		}
	}
}

// check reads w's DNSEndpoint from the cache once: done with NOERROR once it is gone (for any
// wait: a DNSEndpoint a later UPDATE deleted holds none of this one's records any more, which
// is then its outcome), or with the verdict of its Ready condition at w's generation; else not
// done, with what it is waiting for (last). A DNSEndpoint that is not in the cache, or is there
// with another UID, is gone when the API server says so too (the cache may not have it yet);
// one being deleted is waited for until it is gone.
func (a *Applier) check(ctx context.Context, w wait) (done bool, rcode int, why error, last string) {
	var ep dnsv1.DNSEndpoint
	err := a.Client.Get(ctx, w.key, &ep)
	switch {
	case apierrors.IsNotFound(err) || (err == nil && ep.UID != w.uid):
		if a.goneFromAPI(ctx, w) {
			return true, dns.RcodeSuccess, nil, ""
		}
		return false, 0, nil, "not in the cache yet"
	case err != nil:
		return false, 0, nil, err.Error()
	case !ep.DeletionTimestamp.IsZero():
		return false, 0, nil, "being deleted: " + describe(&ep)
	case w.gone:
		return false, 0, nil, "its deletion not in the cache yet"
	}
	done, rcode, why = verdict(&ep, w.generation)
	return done, rcode, why, describe(&ep)
}

// goneFromAPI reports whether the API server holds no DNSEndpoint of w's name and UID.
func (a *Applier) goneFromAPI(ctx context.Context, w wait) bool {
	var ep dnsv1.DNSEndpoint
	err := a.APIReader.Get(ctx, w.key, &ep)
	return apierrors.IsNotFound(err) || (err == nil && ep.UID != w.uid)
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
