package xfr

import (
	"cmp"
	"context"
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/go-logr/logr"
	"github.com/miekg/dns"
	"k8s.io/client-go/util/workqueue"

	"github.com/dnsplane/dnsplane/pkg/dnswire"
	"github.com/dnsplane/dnsplane/pkg/zonedb"
)

// Notifier defaults (NotifierOptions).
const (
	DefaultNotifyTimeout   = 2 * time.Second
	DefaultNotifyAttempts  = 5
	DefaultNotifyRetryBase = time.Second
	// notifyRetryMax caps the wait between two attempts.
	notifyRetryMax = 30 * time.Second
	// notifyWorkers bounds the NOTIFY messages in flight.
	notifyWorkers = 4
)

// NotifierOptions configures a Notifier.
type NotifierOptions struct {
	// Targets are the secondaries told of every zone change, host:port each
	// (--local-notify).
	Targets []string
	// Timeout bounds the wait for each answer; default DefaultNotifyTimeout.
	Timeout time.Duration
	// Attempts is how many times one NOTIFY is sent without an answer before it is given up;
	// default DefaultNotifyAttempts (RFC 1996 §3.6 asks for a bounded retransmission).
	Attempts int
	// RetryBase is the wait before the second attempt, doubled for each next one up to 30 s;
	// default DefaultNotifyRetryBase.
	RetryBase time.Duration
	// Metrics counts the messages (dnsplane_dnsserver_notifies_total) and sets the journal
	// gauge; nil = not counted.
	Metrics *Metrics
	// Logger reports NOTIFY messages given up or rejected.
	Logger logr.Logger
	// TSIG, when set, signs every NOTIFY (RFC 8945) and verifies the answers.
	TSIG *dnswire.TSIGKey
}

// notifyItem is one zone to announce to one target.
type notifyItem struct{ zone, target string }

// Notifier sends NOTIFY (RFC 1996) to its targets after each zone change of a zonedb.Store: one
// message per target per installed version (Store.OnChange), with the zone's new SOA in the
// answer section (§3.7). Changes that arrive while a message for the same zone and target
// waits in the queue are announced by that one message (it carries the SOA current when
// sent). A message without an answer within Timeout is sent again after an exponential
// back-off (client-go's workqueue), up to Attempts times; any answer ends the retransmission
// (§3.6), a rcode other than NOERROR is logged. It implements manager.Runnable and runs on
// every replica.
type Notifier struct {
	store *zonedb.Store
	opts  NotifierOptions
	queue workqueue.TypedRateLimitingInterface[notifyItem]
}

// NewNotifier returns a notifier for store's changes, registered with store.OnChange. It sends
// nothing until Start.
func NewNotifier(store *zonedb.Store, opts NotifierOptions) *Notifier {
	opts.Timeout = cmp.Or(opts.Timeout, DefaultNotifyTimeout)
	opts.Attempts = cmp.Or(opts.Attempts, DefaultNotifyAttempts)
	opts.RetryBase = cmp.Or(opts.RetryBase, DefaultNotifyRetryBase)
	if opts.Logger.GetSink() == nil {
		opts.Logger = logr.Discard()
	}
	limiter := workqueue.NewTypedItemExponentialFailureRateLimiter[notifyItem](opts.RetryBase, notifyRetryMax)
	n := &Notifier{store: store, opts: opts, queue: workqueue.NewTypedRateLimitingQueue(limiter)}
	store.OnChange(n.changed)
	return n
}

// changed is the store hook: it sets the journal gauge and queues the zone for every target.
// It never blocks.
func (n *Notifier) changed(c zonedb.Change) {
	n.opts.Metrics.journal(c)
	if c.Deleted {
		return
	}
	for _, t := range n.opts.Targets {
		n.queue.Add(notifyItem{zone: c.Zone, target: t})
	}
}

// NeedLeaderElection: every replica serves the zones, so every replica announces its changes.
func (n *Notifier) NeedLeaderElection() bool { return false }

// Start sends queued NOTIFY messages until ctx ends, then drops what is left and returns nil.
func (n *Notifier) Start(ctx context.Context) error {
	var wg sync.WaitGroup
	for range notifyWorkers {
		wg.Go(func() {
			for n.next(ctx) {
			}
		})
	}
	<-ctx.Done()
	n.queue.ShutDown()
	wg.Wait()
	return nil
}

// next sends one queued message; false once the queue is shut down.
func (n *Notifier) next(ctx context.Context) bool {
	item, shutdown := n.queue.Get()
	if shutdown {
		return false
	}
	defer n.queue.Done(item)
	rcode, err := n.send(ctx, item)
	switch {
	case err == nil:
		n.queue.Forget(item)
		if rcode == dns.RcodeSuccess {
			n.opts.Metrics.notified("acked")
			return true
		}
		n.opts.Metrics.notified("rejected")
		n.opts.Logger.Info("a secondary rejected NOTIFY: check that it serves the zone as a secondary of this server",
			"zone", item.zone, "target", item.target, "rcode", dns.RcodeToString[rcode])
	case ctx.Err() != nil:
		n.queue.Forget(item)
	case n.queue.NumRequeues(item)+1 < n.opts.Attempts:
		n.queue.AddRateLimited(item)
	default:
		n.queue.Forget(item)
		n.opts.Metrics.notified("failed")
		n.opts.Logger.Info("NOTIFY not answered; giving up (the secondary catches up at its SOA refresh)",
			"zone", item.zone, "target", item.target, "attempts", n.opts.Attempts, "error", err.Error())
	}
	return true
}

// send sends one NOTIFY over UDP and returns the answer's rcode. A zone no longer served is
// not announced (rcode NOERROR, no error).
func (n *Notifier) send(ctx context.Context, item notifyItem) (int, error) {
	z, ok := n.store.Snapshot().Zone(item.zone)
	if !ok {
		return dns.RcodeSuccess, nil
	}
	m := new(dns.Msg)
	m.SetNotify(z.Origin())
	m.Answer = []dns.RR{dns.Copy(z.SOA())}
	if k := n.opts.TSIG; k != nil {
		m.SetTsig(k.Name, k.Algorithm, dnswire.TSIGFudge, time.Now().Unix())
	}
	ctx, cancel := context.WithTimeout(ctx, n.opts.Timeout)
	defer cancel()
	c := &dns.Client{Net: "udp", Timeout: n.opts.Timeout, TsigSecret: n.opts.TSIG.Secrets()}
	resp, _, err := c.ExchangeContext(ctx, m, item.target)
	if err != nil {
		return 0, fmt.Errorf("notify %s for %s: %w", item.target, z.Origin(), err)
	}
	if resp.Opcode != dns.OpcodeNotify {
		return 0, fmt.Errorf("notify %s for %s: answer with opcode %s", item.target, z.Origin(), dns.OpcodeToString[resp.Opcode])
	}
	return resp.Rcode, nil
}

// ServeNotify answers req, an incoming NOTIFY (RFC 1996 §3.7, §4.7) as a primary does: it has no
// master to refresh from, so it acknowledges a NOTIFY for a zone it serves (NOERROR, AA set,
// the question echoed) and answers NOTAUTH for any other name (RFC 1996 §3.10: a NOTIFY from
// a host that is not a master of the zone is not acted upon). Only a NOTIFY with the SOA
// question type is acknowledged (§3.7); others get FORMERR.
func (h *Handler) ServeNotify(w dns.ResponseWriter, req, resp *dns.Msg) *dns.Msg {
	q := req.Question[0]
	if q.Qtype != dns.TypeSOA {
		resp.Rcode = dns.RcodeFormatError
		return resp
	}
	if _, ok := h.store.Snapshot().Zone(dnswire.Fqdn(q.Name)); !ok {
		resp.Rcode = dns.RcodeNotAuth
		return resp
	}
	resp.Authoritative = true
	h.opts.Logger.V(1).Info("NOTIFY received; this server is the primary, nothing to refresh", "zone", q.Name, "client", clientString(w.RemoteAddr()))
	return resp
}

func clientString(a net.Addr) string {
	if a == nil {
		return ""
	}
	return a.String()
}
