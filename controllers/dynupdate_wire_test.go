package controllers_test

import (
	"context"
	"fmt"
	"net"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/miekg/dns"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	dnsv1 "github.com/dnsplane/dnsplane/apis/v1alpha1"
	"github.com/dnsplane/dnsplane/internal/testing/hackrun"
	dnsprovider "github.com/dnsplane/dnsplane/pkg/provider"
)

// nsupdateTo runs BIND's nsupdate against the manager's embedded server with the HMAC-SHA256
// key keyName and secret, sending commands in one UPDATE, and returns the rcode it reports:
// "NOERROR" on success, else the word after "update failed: " (the whole output when there is
// none).
func nsupdateTo(t *testing.T, keyName, secret string, commands ...string) string {
	t.Helper()
	hackrun.Need(t, "bind9-dnsutils", "nsupdate")
	host, port, _ := net.SplitHostPort(dnsAddr)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "nsupdate", "-t", "15", "-y", "hmac-sha256:"+keyName+":"+secret)
	cmd.Stdin = strings.NewReader(fmt.Sprintf("server %s %s\n%s\nsend\n", host, port, strings.Join(commands, "\n")))
	out, err := cmd.CombinedOutput()
	if err == nil {
		return "NOERROR"
	}
	_, after, ok := strings.Cut(string(out), "update failed: ")
	if !ok {
		return fmt.Sprintf("%v: %s", err, out)
	}
	return strings.TrimSpace(after)
}

// txtStrings returns the raw character-strings of each TXT record the server answers for name.
func txtStrings(t *testing.T, name string) [][]string {
	t.Helper()
	m := new(dns.Msg)
	m.SetQuestion(dns.Fqdn(name), dns.TypeTXT)
	r, _, err := (&dns.Client{Net: "tcp", Timeout: 2 * time.Second}).Exchange(m, dnsAddr)
	if err != nil {
		t.Fatalf("%s TXT: %v", name, err)
	}
	var out [][]string
	for _, rr := range r.Answer {
		if txt, ok := rr.(*dns.TXT); ok {
			var raw []string
			for _, s := range txt.Txt {
				raw = append(raw, dnsprovider.TXTValue([]string{s}))
			}
			out = append(out, raw)
		}
	}
	return out
}

// TestDynamicUpdates_NsupdateTXTServedAsSent: TXT values sent with BIND's nsupdate are served
// with the same character-strings, byte for byte: a quote and a backslash once, not escaped
// again; a 300-byte value as the 255 + 45 bytes it was sent as. The DNSEndpoint's target is
// the raw value. A TXT of strings split elsewhere ("ab" "cd") is FORMERR and written nowhere.
func TestDynamicUpdates_NsupdateTXTServedAsSent(t *testing.T) {
	ns := namespace(t, "dynupdate-txt")
	z := zoneObj(ns, "zone", "txt.test", func(z *dnsv1.DNSZone) {
		z.Spec.DynamicUpdates = []dnsv1.DynamicUpdate{{KeySecretRef: dnsv1.SecretReference{Name: "txt-key"}}}
	})
	create(t, tsigSecret(ns, "txt-key", "txt-key", "hmac-sha256", acmeSecret), z)
	waitCondition(t, z, dnsv1.ConditionReady, metav1.ConditionTrue, dnsv1.ReasonReady)
	waitCondition(t, z, dnsv1.ConditionDynamicUpdatesReady, metav1.ConditionTrue, dnsv1.ReasonKeysResolved)

	long := strings.Repeat("0123456789", 30)
	for _, tc := range []struct {
		name, rdata string
		want        []string
	}{
		{"_acme-challenge.txt.test.", `"a\"b\\c"`, []string{`a"b\c`}},
		{"_acme-challenge.long.txt.test.", `"` + long[:255] + `" "` + long[255:] + `"`, []string{long[:255], long[255:]}},
	} {
		if rc := nsupdateTo(t, "txt-key", acmeSecret, "zone txt.test", "update add "+tc.name+" 60 TXT "+tc.rdata); rc != "NOERROR" {
			t.Fatalf("add %s TXT %s: %s", tc.name, tc.rdata, rc)
		}
		if got := txtStrings(t, tc.name); len(got) != 1 || !slices.Equal(got[0], tc.want) {
			t.Errorf("%s TXT served as %q, sent %q", tc.name, got, tc.want)
		}
	}
	var targets []string
	for _, ep := range dynamicUpdateEndpoints(t, ns) {
		for _, e := range ep.Spec.Endpoints {
			targets = append(targets, e.Targets...)
		}
	}
	slices.Sort(targets)
	if want := []string{long, `a"b\c`}; !slices.Equal(targets, want) {
		t.Errorf("the DNSEndpoints' targets %q, want the raw values %q", targets, want)
	}
	if rc := nsupdateTo(t, "txt-key", acmeSecret, "zone txt.test", `update add _acme-challenge.split.txt.test. 60 TXT "ab" "cd"`); rc != "FORMERR" {
		t.Errorf(`TXT "ab" "cd": %s, want FORMERR`, rc)
	}
	if got := txtStrings(t, "_acme-challenge.split.txt.test."); len(got) != 0 {
		t.Errorf(`TXT "ab" "cd" was written: %q`, got)
	}
}

// TestDynamicUpdates_NsupdatePrerequisites: each kind of prerequisite (RFC 2136 §2.4), sent with
// BIND's nsupdate, passes and fails as §3.2 says on names the key may change, judged against
// what the zone holds there; one on a name the key may not change (www, whose A record a
// DNSEndpoint publishes) is REFUSED, never judged against the dynamic-update records alone,
// and nothing of its UPDATE is written.
func TestDynamicUpdates_NsupdatePrerequisites(t *testing.T) {
	ns := namespace(t, "dynupdate-prereq")
	z := zoneObj(ns, "zone", "prereq.test", func(z *dnsv1.DNSZone) {
		z.Spec.DynamicUpdates = []dnsv1.DynamicUpdate{{KeySecretRef: dnsv1.SecretReference{Name: "pre-key"}}}
	})
	www := endpointObj(ns, "www", dnsv1.Endpoint{DNSName: "www.prereq.test", RecordType: "A", Targets: dnsv1.Targets{"192.0.2.1"}})
	create(t, tsigSecret(ns, "pre-key", "pre-key", "hmac-sha256", acmeSecret), z, www)
	waitCondition(t, z, dnsv1.ConditionReady, metav1.ConditionTrue, dnsv1.ReasonReady)
	waitCondition(t, z, dnsv1.ConditionDynamicUpdatesReady, metav1.ConditionTrue, dnsv1.ReasonKeysResolved)
	waitCondition(t, www, dnsv1.ConditionReady, metav1.ConditionTrue, dnsv1.ReasonPublished)

	const (
		set  = "_acme-challenge.prereq.test."
		none = "_acme-challenge.none.prereq.test."
		add  = "update add _acme-challenge.added.prereq.test. 60 TXT \"added\""
	)
	send := func(lines ...string) string {
		return nsupdateTo(t, "pre-key", acmeSecret, append([]string{"zone prereq.test"}, lines...)...)
	}
	if rc := send(`update add `+set+` 60 TXT "one"`, `update add `+set+` 60 TXT "two"`); rc != "NOERROR" {
		t.Fatalf("add the RRset: %s", rc)
	}
	for _, tc := range []struct{ prereq, want string }{
		{"prereq yxdomain " + set, "NOERROR"},
		{"prereq yxdomain " + none, "NXDOMAIN"},
		{"prereq nxdomain " + none, "NOERROR"},
		{"prereq nxdomain " + set, "YXDOMAIN"},
		{"prereq yxrrset " + set + " TXT", "NOERROR"},
		{"prereq yxrrset " + none + " TXT", "NXRRSET"},
		{"prereq yxrrset " + set + ` TXT "one"` + "\nprereq yxrrset " + set + ` TXT "two"`, "NOERROR"},
		{"prereq yxrrset " + set + ` TXT "one"`, "NXRRSET"},
		{"prereq nxrrset " + none + " TXT", "NOERROR"},
		{"prereq nxrrset " + set + " TXT", "YXRRSET"},
		{"prereq nxdomain www.prereq.test.", "REFUSED"},
		{"prereq yxrrset www.prereq.test. A", "REFUSED"},
	} {
		rc := send(tc.prereq, add)
		if rc != tc.want {
			t.Errorf("%q: %s, want %s", tc.prereq, rc, tc.want)
		}
		added := len(txtStrings(t, "_acme-challenge.added.prereq.test.")) > 0
		if added != (tc.want == "NOERROR") {
			t.Errorf("%q: the update section written %v, want %v", tc.prereq, added, tc.want == "NOERROR")
		}
		if added && send("update delete _acme-challenge.added.prereq.test. TXT") != "NOERROR" {
			t.Fatalf("delete the added TXT")
		}
	}
}
