package dnszone

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/miekg/dns"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/log"

	dnsv1 "github.com/dnsplane/dnsplane/apis/v1alpha1"
	"github.com/dnsplane/dnsplane/pkg/dnswire"
	"github.com/dnsplane/dnsplane/pkg/scraper"
)

// LabelParentLink marks parent-link DNSEndpoints with the DNSZone they delegate.
const LabelParentLink = "dnsplane.io/parent-link-of"

// linkTTL is the TTL of the delegation NS set and its glue in the parent, in seconds.
const linkTTL = 3600

// reconcileParentLink keeps the <name>-parent-link DNSEndpoint and reports whether the parent
// serves exactly this zone's NS set and its glue. A lame delegation (checkDelegation) is not
// published, and an existing link is left as it is.
func (r *Reconciler) reconcileParentLink(ctx context.Context, z *dnsv1.DNSZone) (ctrl.Result, error) {
	if !z.Spec.LinkToParentDomain {
		r.setLink(z, true, dnsv1.ReasonLinkDisabled, "linkToParentDomain is false")
		_, err := r.deleteParentLink(ctx, z)
		return ctrl.Result{}, err
	}
	parent, reason, msg, err := r.findParent(ctx, z)
	if err != nil {
		return ctrl.Result{}, err
	}
	if parent == nil {
		r.setLink(z, false, reason, msg)
		// A parent that appears or allows us later is watched (childrenOf).
		_, err := r.deleteParentLink(ctx, z)
		return ctrl.Result{}, err
	}
	d, err := r.checkDelegation(ctx, z, parent)
	if err != nil {
		return ctrl.Result{}, err
	}
	if d.lame {
		logger := log.FromContext(ctx)
		if c := meta.FindStatusCondition(z.Status.Conditions, dnsv1.ConditionParentLinkCreated); c != nil && c.Reason == dnsv1.ReasonLameDelegation {
			logger = logger.V(1) // said once, when it became lame
		}
		logger.Info("lame delegation: not linked", "zone", z.Spec.Zone, "nameServers", d.missing)
		// Re-checked every poll: the address record may be published at any time.
		r.setLink(z, false, dnsv1.ReasonLameDelegation, lameMessage(z, d))
		return ctrl.Result{RequeueAfter: r.SOAPollInterval}, nil
	}
	link, err := r.ensureLinkEndpoint(ctx, z, parent, d.glue)
	if err != nil {
		return ctrl.Result{}, err
	}
	if ok, reason, msg := linkPublished(parent, link); !ok {
		r.setLink(z, false, reason, msg)
		return ctrl.Result{RequeueAfter: r.SOAPollInterval}, nil
	}
	return r.confirmLink(ctx, z, parent, link, d)
}

// confirmLink registers the published link with the scraper and sets ParentLinkCreated from what
// the last scrape of the parent saw.
func (r *Reconciler) confirmLink(ctx context.Context, z, parent *dnsv1.DNSZone, link *dnsv1.DNSEndpoint, d delegation) (ctrl.Result, error) {
	parentRes, err := r.Providers.Resolve(ctx, parent.Namespace, parent.Spec.ProviderRef.Name)
	if err != nil {
		r.setLink(z, false, dnsv1.ReasonAwaitingParent, fmt.Sprintf("parent DNSZone %s/%s: %v", parent.Namespace, parent.Name, err))
		return ctrl.Result{RequeueAfter: r.SOAPollInterval}, nil
	}
	childKey := client.ObjectKeyFromObject(z)
	r.Scraper.Register(
		scraper.Parent{Key: client.ObjectKeyFromObject(parent), Zone: parent.Spec.Zone,
			Lister: r.Writers.For(writerKey(parentRes.Account, parent.Status.ZoneID), parentRes.Provider)},
		scraper.Child{Key: childKey, Zone: z.Spec.Zone, Want: z.Status.NameServers, Glue: glueSets(d.glue), Link: client.ObjectKeyFromObject(link)})
	linked, _, scraped := r.Scraper.Linked(childKey)
	if !scraped && meta.IsStatusConditionTrue(z.Status.Conditions, dnsv1.ConditionParentLinkCreated) {
		// A restarted manager has not scraped yet: keep the confirmed link rather than flap;
		// the first scrape (queued by Register) re-checks it.
		return ctrl.Result{}, nil
	}
	if !linked {
		// The link is published; have the parent scraped now instead of at the next interval.
		// The scraper notifies this controller when it sees the delegation.
		r.Scraper.Rescrape(childKey)
		r.setLink(z, false, dnsv1.ReasonAwaitingScrape, scrapeMessage(z, parent, d, scraped))
		return ctrl.Result{}, nil
	}
	r.setLink(z, true, dnsv1.ReasonParentLinked, linkedMessage(z, parent, d))
	return ctrl.Result{}, nil
}

// linkPublished decides, once the link DNSEndpoint is written, whether it is published: the
// parent must be available (else AwaitingParent) and the link Ready at its generation (else
// AwaitingScrape, with the link's own reason when it failed). Pure.
func linkPublished(parent *dnsv1.DNSZone, link *dnsv1.DNSEndpoint) (bool, string, string) {
	if parent.Status.ZoneID == "" || !meta.IsStatusConditionTrue(parent.Status.Conditions, dnsv1.ConditionZoneAvailable) {
		return false, dnsv1.ReasonAwaitingParent, fmt.Sprintf("parent DNSZone %s/%s (%s) is not available yet", parent.Namespace, parent.Name, parent.Spec.Zone)
	}
	ready := meta.FindStatusCondition(link.Status.Conditions, dnsv1.ConditionReady)
	if ready == nil || link.Status.ObservedGeneration != link.Generation || ready.Status != metav1.ConditionTrue {
		why := "the link is not published yet"
		if ready != nil && ready.Status != metav1.ConditionTrue {
			why = fmt.Sprintf("the link is not published: %s: %s", ready.Reason, ready.Message)
		}
		return false, dnsv1.ReasonAwaitingScrape, fmt.Sprintf("DNSEndpoint %s: %s", link.Name, why)
	}
	return true, "", ""
}

// scrapeMessage is the AwaitingScrape message of a published link the scraper has not seen
// served: not scraped yet, or scraped without exactly the NS set. Pure.
func scrapeMessage(z, parent *dnsv1.DNSZone, d delegation, scraped bool) string {
	if scraped {
		return fmt.Sprintf("the last scrape of parent zone %s did not find exactly the NS set %s%s; re-publishing", parent.Spec.Zone, strings.Join(z.Status.NameServers, ", "), glueNote(d))
	}
	return fmt.Sprintf("waiting for the scraper to see parent zone %s serve the NS set %s%s", parent.Spec.Zone, strings.Join(z.Status.NameServers, ", "), glueNote(d))
}

// linkedMessage is the ParentLinked message, naming name servers without an address. Pure.
func linkedMessage(z, parent *dnsv1.DNSZone, d delegation) string {
	msg := fmt.Sprintf("parent zone %s delegates %s to %s%s", parent.Spec.Zone, z.Spec.Zone, strings.Join(z.Status.NameServers, ", "), glueNote(d))
	if len(d.missing) > 0 {
		msg += fmt.Sprintf("; no address for %s", strings.Join(d.missing, ", "))
	}
	return msg
}

// glueNote names the glue the parent must serve, with its addresses, for condition messages:
// " with glue ns1.<zone> A 10.96.0.10".
func glueNote(d delegation) string {
	if len(d.glue) == 0 {
		return ""
	}
	var names []string
	for _, g := range d.glue {
		names = append(names, strings.Join(append([]string{g.DNSName, g.RecordType}, g.Targets...), " "))
	}
	return " with glue " + strings.Join(names, ", ")
}

// findParent returns the parent DNSZone, or nil with a reason: parentRef, else the DNSZone in any
// namespace whose zone is the longest proper suffix (chooseParent). A parent in another namespace
// must list this namespace in delegation.allowedNamespaces (parentAllowed). Errors are API read
// errors other than NotFound.
func (r *Reconciler) findParent(ctx context.Context, z *dnsv1.DNSZone) (*dnsv1.DNSZone, string, string, error) {
	var parent *dnsv1.DNSZone
	if ref := z.Spec.ParentRef; ref != nil {
		key := ref.NamespacedName(z.Namespace)
		p := &dnsv1.DNSZone{}
		if err := r.Client.Get(ctx, key, p); err != nil {
			if apierrors.IsNotFound(err) {
				return nil, dnsv1.ReasonParentNotFound, fmt.Sprintf("parentRef %s/%s does not exist", key.Namespace, ref.Name), nil
			}
			return nil, "", "", err
		}
		if !dnswire.IsStrictSubdomain(z.Spec.Zone, p.Spec.Zone) {
			return nil, dnsv1.ReasonParentNotFound, fmt.Sprintf("parentRef %s/%s is zone %s, which is not a parent of %s", key.Namespace, ref.Name, p.Spec.Zone, z.Spec.Zone), nil
		}
		parent = p
	} else {
		var all dnsv1.DNSZoneList
		if err := r.Client.List(ctx, &all); err != nil {
			return nil, "", "", err
		}
		if parent = chooseParent(z, all.Items); parent == nil {
			return nil, dnsv1.ReasonParentNotFound, fmt.Sprintf("no DNSZone's zone is a parent of %s", z.Spec.Zone), nil
		}
	}
	if reason, msg := parentAllowed(z, parent); reason != "" {
		return nil, reason, msg, nil
	}
	return parent, "", "", nil
}

// chooseParent returns the zone among all (not being deleted) whose zone is the longest proper
// suffix of z's, this namespace winning a tie; nil when none. Pure.
func chooseParent(z *dnsv1.DNSZone, all []dnsv1.DNSZone) *dnsv1.DNSZone {
	var parent *dnsv1.DNSZone
	for i := range all {
		c := &all[i]
		if !c.DeletionTimestamp.IsZero() || !dnswire.IsStrictSubdomain(z.Spec.Zone, c.Spec.Zone) {
			continue
		}
		if parent == nil || len(c.Spec.Zone) > len(parent.Spec.Zone) ||
			(len(c.Spec.Zone) == len(parent.Spec.Zone) && c.Namespace == z.Namespace) {
			parent = c
		}
	}
	return parent
}

// parentAllowed returns DelegationNotAllowed and why when parent is another namespace's zone that
// does not list z's namespace in delegation.allowedNamespaces, else "". Pure.
func parentAllowed(z, parent *dnsv1.DNSZone) (string, string) {
	if parent.Namespace != z.Namespace && (parent.Spec.Delegation == nil || !slices.Contains(parent.Spec.Delegation.AllowedNamespaces, z.Namespace)) {
		return dnsv1.ReasonDelegationNotAllowed, notAllowedMessage(z, parent)
	}
	return "", ""
}

// notAllowedMessage is the DelegationNotAllowed message of z under parent. Pure.
func notAllowedMessage(z, parent *dnsv1.DNSZone) string {
	return fmt.Sprintf("parent DNSZone %s/%s (%s) does not list namespace %s in delegation.allowedNamespaces", parent.Namespace, parent.Name, parent.Spec.Zone, z.Namespace)
}

// desiredLink returns the parent-link DNSEndpoint's endpoints (the NS set with TTL linkTTL, the
// DS set of a signed zone, status.dnssec.ds, with its TTL dsTTL, then glue) and zoneRef
// (namespace only when the parent's differs). Pure.
func desiredLink(z, parent *dnsv1.DNSZone, glue []dnsv1.Endpoint) ([]dnsv1.Endpoint, *dnsv1.ZoneReference) {
	endpoints := []dnsv1.Endpoint{{DNSName: z.Spec.Zone, RecordType: "NS", RecordTTL: linkTTL, Targets: slices.Clone(z.Status.NameServers)}}
	if ds, ttl := dsTargets(z); len(ds) > 0 {
		endpoints = append(endpoints, dnsv1.Endpoint{DNSName: z.Spec.Zone, RecordType: "DS", RecordTTL: dnsv1.TTL(ttl), Targets: ds})
	}
	endpoints = append(endpoints, glue...)
	ref := &dnsv1.ZoneReference{Name: parent.Name}
	if parent.Namespace != z.Namespace {
		ref.Namespace = parent.Namespace
	}
	return endpoints, ref
}

// ensureLinkEndpoint creates or updates the parent-link DNSEndpoint: the NS set, plus the glue
// of the name servers inside the zone (checkDelegation).
func (r *Reconciler) ensureLinkEndpoint(ctx context.Context, z, parent *dnsv1.DNSZone, glue []dnsv1.Endpoint) (*dnsv1.DNSEndpoint, error) {
	endpoints, ref := desiredLink(z, parent, glue)
	link := &dnsv1.DNSEndpoint{ObjectMeta: metav1.ObjectMeta{Namespace: z.Namespace, Name: z.Name + ParentLinkSuffix}}
	_, err := controllerutil.CreateOrUpdate(ctx, r.Client, link, func() error {
		if link.Labels == nil {
			link.Labels = map[string]string{}
		}
		link.Labels[LabelParentLink] = z.Name
		if link.CreationTimestamp.IsZero() {
			// Created with the records finalizer, the one kind of DNSEndpoint that has it: the
			// zone's deletion waits for the link to be gone, which then means its NS set is
			// released (the DNSEndpoint controller adds no finalizer of its own).
			controllerutil.AddFinalizer(link, dnsv1.FinalizerRecords)
		}
		link.Spec.Endpoints = endpoints
		link.Spec.ZoneRef = ref
		link.Spec.Strategy = dnsv1.StrategyFullSync
		return controllerutil.SetControllerReference(z, link, r.Client.Scheme())
	})
	if err != nil {
		return nil, fmt.Errorf("ensure parent link %s: %w", link.Name, err)
	}
	return link, nil
}

// glue returns A/AAAA endpoints (sorted by name and type) for the zone's in-bailiwick name
// servers inside (RFC 1034 §4.2.1), read from the zone's own records through its writer.
func (r *Reconciler) glue(ctx context.Context, z *dnsv1.DNSZone, inside map[string]bool) ([]dnsv1.Endpoint, error) {
	resolved, err := r.Providers.Resolve(ctx, z.Namespace, z.Spec.ProviderRef.Name)
	if err != nil {
		return nil, err
	}
	sets, err := r.Writers.For(writerKey(resolved.Account, z.Status.ZoneID), resolved.Provider).RecordSets(ctx)
	if err != nil {
		return nil, fmt.Errorf("read glue of %s: %w", z.Spec.Zone, err)
	}
	var out []dnsv1.Endpoint
	for _, rs := range sets {
		if (rs.Type == "A" || rs.Type == "AAAA") && inside[rs.Name] && len(rs.Targets) > 0 {
			out = append(out, dnsv1.Endpoint{DNSName: rs.Name, RecordType: rs.Type, RecordTTL: linkTTL, Targets: slices.Clone(rs.Targets)})
		}
	}
	slices.SortFunc(out, func(a, b dnsv1.Endpoint) int {
		return strings.Compare(a.DNSName+"/"+a.RecordType, b.DNSName+"/"+b.RecordType)
	})
	return out, nil
}

// dsTargets is the rdata of each DS record of status.dnssec.ds ("<tag> <alg> <digest type>
// <digest>"), in its order, and their TTL (the machine's ParentDSTTL); none without DNSSEC
// status. Pure.
func dsTargets(z *dnsv1.DNSZone) (dnsv1.Targets, uint32) {
	if z.Status.DNSSEC == nil {
		return nil, 0
	}
	var out dnsv1.Targets
	var ttl uint32
	for _, s := range z.Status.DNSSEC.DS {
		rr, err := dns.NewRR(s)
		if err != nil || rr == nil {
			continue
		}
		if ds, ok := rr.(*dns.DS); ok {
			out = append(out, fmt.Sprintf("%d %d %d %s", ds.KeyTag, ds.Algorithm, ds.DigestType, strings.ToUpper(ds.Digest)))
			ttl = ds.Hdr.Ttl
		}
	}
	return out, ttl
}
