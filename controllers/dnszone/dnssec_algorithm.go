package dnszone

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/miekg/dns"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	dnsv1 "github.com/dnsplane/dnsplane/apis/v1alpha1"
	"github.com/dnsplane/dnsplane/controllers/internal/status"
	"github.com/dnsplane/dnsplane/pkg/dnssec"
)

// An algorithm rollover (RFC 6781 §4.1.4) is not done: a zone's keys keep the algorithm of its
// first keys (dnssec.KeyPolicy.Algorithm: a rollover makes the new key in the algorithm of the
// key it replaces). A spec.dnssec.algorithm that differs from the active keys' is reported on
// the Secure condition (noteAlgorithmChange), and takes effect only where no validator may hold
// the old keys: once a turn-off is done (freshAlgorithm).

// freshAlgorithm drops the keys of a zone that is served unsigned when they are not of the
// policy's algorithm, so that the machine makes the zone's first keys in it: the key set
// records its turn-off done (the DS left the parent and its TTL and the DNSKEY TTL have
// passed), or the zone reports the Secure reason Unsigned (a provider whose turn-off records
// nothing in the key Secret). Any other key set is returned as it is: a lost status keeps it.
func freshAlgorithm(ks dnssec.KeySet, pol dnssec.KeyPolicy, z *dnsv1.DNSZone) dnssec.KeySet {
	c := meta.FindStatusCondition(z.Status.Conditions, dnsv1.ConditionSecure)
	done := ks.Unsigning != nil && ks.Unsigning.Done || c != nil && c.Reason == dnsv1.ReasonUnsigned
	if !done || len(ks.Keys) == 0 {
		return ks
	}
	if !slices.ContainsFunc(ks.Keys, func(k dnssec.Key) bool { return k.DNSKEY.Algorithm != pol.Algorithm }) {
		return ks
	}
	return dnssec.KeySet{Zone: ks.Zone}
}

// keyAlgorithms names the algorithms of the key set's Active keys that are not want, "" when
// there are none.
func keyAlgorithms(ks dnssec.KeySet, want string) string {
	var out []string
	for _, k := range ks.Keys {
		a := dns.AlgorithmToString[k.DNSKEY.Algorithm]
		if k.State == dnssec.Active && a != want && !slices.Contains(out, a) {
			out = append(out, a)
		}
	}
	return strings.Join(out, ", ")
}

// noteAlgorithmChange gives the Secure condition of a signed zone whose active keys are not of
// spec.dnssec.algorithm the reason AlgorithmChangeNotSupported, with the steps that change the
// algorithm, when the keys' own reason is Secure, RolloverInProgress or DSPending; its status
// (whether the chain verifies) and its message stay. The zone stays signed with its keys.
func (r *Reconciler) noteAlgorithmChange(z *dnsv1.DNSZone, ks dnssec.KeySet) {
	d := z.Spec.DNSSEC
	if d == nil {
		return
	}
	want := string(cmp.Or(d.Algorithm, dnsv1.AlgorithmECDSAP256SHA256))
	have := keyAlgorithms(ks, want)
	c := meta.FindStatusCondition(z.Status.Conditions, dnsv1.ConditionSecure)
	if have == "" || c == nil {
		return
	}
	switch c.Reason {
	case dnsv1.ReasonSecure, dnsv1.ReasonRolloverInProgress, dnsv1.ReasonDSPending:
	default:
		return
	}
	msg := fmt.Sprintf("spec.dnssec.algorithm is %s but the zone's keys are %s: the zone stays signed with them (an algorithm "+
		"rollover is not done). To change the algorithm: set spec.dnssec.enabled to false, wait for the Secure reason Unsigned, "+
		"set the algorithm, set enabled to true (docs/dnssec.md, \"Changing the algorithm\"). %s", want, have, c.Message)
	status.Set(&z.Status.Conditions, z.Generation, dnsv1.ConditionSecure, c.Status == metav1.ConditionTrue,
		dnsv1.ReasonAlgorithmChangeNotSupported, msg)
}
